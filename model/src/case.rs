//! A case: which kernel to check, on how many devices, how many times, under which
//! hardware assumptions. The one description of "what is being checked" that the command
//! line, the façade, every engine and every counterexample file share.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::semantics::Semantics;

/// Where a case's kernel comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Source {
    /// A protocol of the catalogue, optionally one of its mutants.
    Catalogue {
        /// The protocol's name (`psum`).
        protocol: String,
        /// The mutant's name (`no-capacity`), or `None` for the correct kernel.
        mutant: Option<String>,
    },
    /// A Pallas kernel in a Python file, read through JAX's tracer.
    Python {
        /// The file.
        path: PathBuf,
        /// The kernel's name when the file has several.
        kernel: Option<String>,
        /// The reference collective its outputs must compute (`--expect psum`); `None`:
        /// what the kernel computes in the lock-step schedule.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<String>,
    },
    /// A kernel written with the Rust DSL in the caller's own code: it cannot be re-made
    /// from this description, so its counterexamples replay only through the caller.
    Dsl {
        /// The kernel's name.
        name: String,
    },
}

impl Source {
    /// A catalogue protocol, optionally a mutant.
    pub fn catalogue(protocol: &str, mutant: Option<&str>) -> Source {
        Source::Catalogue { protocol: protocol.to_string(), mutant: mutant.map(str::to_string) }
    }

    /// The protocol's name for a catalogue source.
    pub fn protocol(&self) -> Option<&str> {
        match self {
            Source::Catalogue { protocol, .. } => Some(protocol),
            _ => None,
        }
    }

    /// The mutant's name for a catalogue source.
    pub fn mutant(&self) -> Option<&str> {
        match self {
            Source::Catalogue { mutant, .. } => mutant.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for Source {
    /// `psum`, `psum/no-capacity`, `kernel.py` or `kernel.py:right_shift`, `dsl:name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Catalogue { protocol, mutant: None } => write!(f, "{protocol}"),
            Source::Catalogue { protocol, mutant: Some(m) } => write!(f, "{protocol}/{m}"),
            Source::Python { path, kernel, expect } => {
                write!(f, "{}", path.display())?;
                if let Some(k) = kernel {
                    write!(f, ":{k}")?;
                }
                if let Some(e) = expect {
                    write!(f, " (expect {e})")?;
                }
                Ok(())
            }
            Source::Dsl { name } => write!(f, "dsl:{name}"),
        }
    }
}

/// What one check is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Case {
    /// The kernel.
    pub source: Source,
    /// The number of devices of the mesh (the ring size; 2 for the TensorCore protocols).
    pub devices: usize,
    /// Back-to-back invocations of the kernel.
    pub repeat: u32,
    /// The hardware assumptions.
    pub semantics: Semantics,
}

impl Case {
    /// A case with one invocation and the default assumptions.
    pub fn new(source: Source, devices: usize) -> Case {
        Case { source, devices, repeat: 1, semantics: Semantics::default() }
    }

    /// The same case with `repeat` invocations.
    pub fn repeat(mut self, repeat: u32) -> Case {
        self.repeat = repeat;
        self
    }

    /// The same case under other assumptions.
    pub fn semantics(mut self, semantics: Semantics) -> Case {
        self.semantics = semantics;
        self
    }
}

impl fmt::Display for Case {
    /// `psum/no-capacity N=4`, with `repeat 2` and non-default assumptions when they apply.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} N={}", self.source, self.devices)?;
        if self.repeat != 1 {
            write!(f, " repeat {}", self.repeat)?;
        }
        if !self.semantics.is_default() {
            write!(f, " ({})", self.semantics)?;
        }
        Ok(())
    }
}
