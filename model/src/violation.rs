//! The rules (see the crate docs) and the violations that break them.

use std::fmt;

use serde::Serialize;

use crate::event::DmaKey;
use crate::mesh::DeviceId;

/// A correctness rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A cell read while a write to it is in flight, or written while a read or write is.
    Race,
    /// A device exits with an output cell that differs from the specification.
    WrongResult,
    /// No event is enabled and some device has not finished.
    Deadlock,
    /// A semaphore is non-zero, or a DMA is outstanding, when a device exits.
    SemaphoreLeak,
    /// A DMA lands in, or a semaphore is signalled on, a device outside this invocation.
    OutsideKernel,
}

impl Rule {
    /// The rule's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Race => "race",
            Rule::WrongResult => "wrong-result",
            Rule::Deadlock => "deadlock",
            Rule::SemaphoreLeak => "semaphore-leak",
            Rule::OutsideKernel => "outside-kernel",
        }
    }

    /// What the rule forbids, in one sentence.
    pub fn description(self) -> &'static str {
        match self {
            Rule::Race => "A cell is read while a write to it is in flight, or written while a read or write of it is.",
            Rule::WrongResult => "A device exits with an output cell that differs from the specification.",
            Rule::Deadlock => "No event can happen and some device has not finished: every device left is blocked.",
            Rule::SemaphoreLeak => "A semaphore is non-zero, or a DMA is outstanding, when a device exits the kernel.",
            Rule::OutsideKernel => {
                "A DMA lands in, or a semaphore is signalled on, a device outside this invocation of the kernel."
            }
        }
    }

    /// Every rule.
    pub const ALL: [Rule; 5] =
        [Rule::Race, Rule::WrongResult, Rule::Deadlock, Rule::SemaphoreLeak, Rule::OutsideKernel];

    /// The rule with this name.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A broken rule: which, who, and a message that names the cells and semaphores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// The devices involved.
    pub devices: Vec<DeviceId>,
    /// A human-readable explanation.
    pub message: String,
    /// The DMA involved, when there is one: the in-flight DMA of a race, the DMA that
    /// lands outside the kernel, the DMA outstanding at exit. Lets a counterexample point
    /// at the event that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dma: Option<DmaKey>,
}

impl Violation {
    /// A violation that involves no particular DMA.
    pub fn new(rule: Rule, devices: Vec<DeviceId>, message: impl Into<String>) -> Violation {
        Violation { rule, devices, message: message.into(), dma: None }
    }

    /// The same violation, naming the DMA involved.
    pub fn with_dma(mut self, key: DmaKey) -> Violation {
        self.dma = Some(key);
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.message)
    }
}
