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

    /// Rule 5's test for what lives on from invocation `from` to invocation `to` (`from`
    /// itself, unless a kernel of a program hands a semaphore on): `Ok` if `target`, at
    /// `pc`, has entered `from` and not yet left `to`, else why not (`has not entered
    /// invocation 1 (it is still in invocation 0)`, ...).
    pub fn inside_kernels_at(&self, pc: u32, target: DeviceId, from: u32, to: u32) -> Result<(), String> {
        let name = |k: u32| self.invocation_name(k);
        match self.lifecycle(target, pc) {
            Some((inv, running)) if (from < inv && inv <= to) || (inv == from && running) => Ok(()),
            Some((inv, false)) if inv == from => Err(format!("has not entered {}", name(from))),
            Some((inv, _)) if inv < from => {
                Err(format!("has not entered {} (it is still in {})", name(from), name(inv)))
            }
            _ => Err(format!("has already left {}", name(to))),
        }
    }

    /// How messages name invocation `k`: `invocation 2`, or in a program of several
    /// kernels the kernel, and the run when there are several (`recv_done_kernel`,
    /// `start_kernel of run 1`).
    pub fn invocation_name(&self, k: u32) -> String {
        if !self.has_several_kernels() {
            return format!("invocation {k}");
        }
        let kernel = &self.kernels[self.kernel_of(k) as usize];
        match self.repeat > 1 {
            true => format!("{kernel} of run {}", self.run_of(k)),
            false => kernel.clone(),
        }
    }

    /// Rule 4: semaphore `slot` is `value` when the operation at `pc` of `d` (its exit) runs.
    pub fn semaphore_leak(&self, d: DeviceId, pc: u32, slot: SemSlot, value: u32) -> Violation {
        Violation::new(
            Rule::SemaphoreLeak,
            vec![d],
            format!(
                "`{}`: {}{} is {value} at exit, not 0",
                self.describe_op(d, pc),
                self.sem_full_name(slot),
                self.handed_out_note(slot)
            ),
        )
    }

    /// ` (send_sem is handed out by start_kernel, and no later kernel takes it)` for a semaphore of a
    /// program of several kernels that the last kernel taking it hands out (a
    /// `pltpu.SEMAPHORE`-space output no later kernel takes: it is checked at the program's
    /// end); empty otherwise.
    fn handed_out_note(&self, slot: SemSlot) -> String {
        let launches = self.ir.launches();
        let id = self.sem_decl_of(slot);
        match launches.iter().rposition(|l| l.semaphores.contains(&id)) {
            Some(at) if launches[at].hands_out.contains(&id) => {
                format!(
                    " ({} is handed out by {}, and no later kernel takes it)",
                    self.sem_name(slot),
                    launches[at].name
                )
            }
            _ => String::new(),
        }
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
                "{d} exits ({}) with {} = {got} but the specification says {want}{}",
                self.invocation_name(inv),
                self.cell_full_name(cell),
                if wrong > 1 { format!(" ({wrong} wrong cells in all)") } else { String::new() }
            ),
        )
    }

    /// Rule 4: `d` exits invocation `inv` while its DMA `key` is `pending` (`not done`,
    /// `not yet sent`).
    pub fn dma_outstanding_at_exit(&self, d: DeviceId, inv: u32, key: DmaKey, pending: &str) -> Violation {
        let note = self.issuer_sem(key).map(|s| self.handed_out_note(s)).unwrap_or_default();
        Violation::new(
            Rule::SemaphoreLeak,
            vec![d],
            format!(
                "{d} exits ({}) while its DMA `{}` is {pending}{note}",
                self.invocation_name(inv),
                self.describe_op(d, key.pc)
            ),
        )
        .with_dma(key)
    }
}
