//! The violations of the rules with the model's wording, built in one place so that every
//! engine (the explorer's step function and the threaded runtime) reports them alike.

use crate::event::DmaKey;
use crate::mesh::DeviceId;
use crate::program::{CellId, Program, SemSlot};
use crate::violation::{Rule, Violation};

impl Program {
    /// Rule 5: the operation at `pc` of `d` signals `sem` on `target`, which `why`
    /// (`has not entered invocation 0`, ...).
    pub fn signal_outside_kernel(&self, d: DeviceId, pc: u32, target: DeviceId, sem: SemSlot, why: &str) -> Violation {
        Violation::new(
            Rule::OutsideKernel,
            vec![d, target],
            format!("`{}` signals {} on {target}, which {why}", self.describe_op(d, pc), self.sem_name(sem)),
        )
    }

    /// Rule 5: the DMA started by `key` lands in `target`, which `why`.
    pub fn landing_outside_kernel(&self, key: DmaKey, target: DeviceId, why: &str) -> Violation {
        Violation::new(
            Rule::OutsideKernel,
            vec![key.issuer, target],
            format!("the DMA `{}` lands in {target}, which {why}", self.describe_op(key.issuer, key.pc)),
        )
        .with_dma(key)
    }

    /// Rule 1: `who` (an operation of `d`) `access`es (`reads`/`writes`) `cell` while the
    /// in-flight DMA started by `other` is still `what` (`read`/`written`) it.
    pub fn race_violation(
        &self,
        cell: CellId,
        d: DeviceId,
        who: &str,
        access: &str,
        what: &str,
        other: DmaKey,
    ) -> Violation {
        let mut devices = vec![d, other.issuer];
        devices.dedup();
        Violation::new(
            Rule::Race,
            devices,
            format!(
                "race on {}: `{who}` {access} it while it is being {what} by the in-flight DMA `{}`",
                self.cell_full_name(cell),
                self.describe_op(other.issuer, other.pc)
            ),
        )
        .with_dma(other)
    }

    /// Rule 5's test: `Ok` if `target`, at `pc`, is running invocation `k`, else why not
    /// (`has not entered invocation 1 (it is still in invocation 0)`, ...).
    pub fn inside_kernel_at(&self, pc: u32, target: DeviceId, k: u32) -> Result<(), String> {
        match self.lifecycle(target, pc) {
            Some((inv, true)) if inv == k => Ok(()),
            Some((inv, false)) if inv == k => Err(format!("has not entered invocation {k}")),
            Some((inv, _)) if inv < k => {
                Err(format!("has not entered invocation {k} (it is still in invocation {inv})"))
            }
            _ => Err(format!("has already left invocation {k}")),
        }
    }

    /// Rule 4: semaphore `slot` is `value` when the operation at `pc` of `d` (its exit) runs.
    pub fn semaphore_leak(&self, d: DeviceId, pc: u32, slot: SemSlot, value: u32) -> Violation {
        Violation::new(
            Rule::SemaphoreLeak,
            vec![d],
            format!("`{}`: {} is {value} at exit, not 0", self.describe_op(d, pc), self.sem_full_name(slot)),
        )
    }

    /// Rule 4: barrier semaphore `slot` is `value` once every device has finished.
    pub fn barrier_leak(&self, slot: SemSlot, value: u32) -> Violation {
        Violation::new(
            Rule::SemaphoreLeak,
            vec![self.sem_device(slot)],
            format!("{} is {value} after the last invocation of every device, not 0", self.sem_full_name(slot)),
        )
    }

    /// Rule 2: `d` exits invocation `inv` with `cell` holding `got` where the specification
    /// says `want` (both already printed), out of `wrong` wrong cells.
    pub fn wrong_result(&self, d: DeviceId, inv: u32, cell: CellId, got: &str, want: &str, wrong: usize) -> Violation {
        Violation::new(
            Rule::WrongResult,
            vec![d],
            format!(
                "{d} exits (invocation {inv}) with {} = {got} but the specification says {want}{}",
                self.cell_full_name(cell),
                if wrong > 1 { format!(" ({wrong} wrong cells in all)") } else { String::new() }
            ),
        )
    }

    /// Rule 4: `d` exits invocation `inv` while its DMA `key` is `pending` (`not done`,
    /// `not yet sent`).
    pub fn dma_outstanding_at_exit(&self, d: DeviceId, inv: u32, key: DmaKey, pending: &str) -> Violation {
        Violation::new(
            Rule::SemaphoreLeak,
            vec![d],
            format!("{d} exits (invocation {inv}) while its DMA `{}` is {pending}", self.describe_op(d, key.pc)),
        )
        .with_dma(key)
    }
}
