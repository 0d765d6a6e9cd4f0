//! The catalogue: every protocol, its mutants, and how to build them for a mesh.

use semcheck_model::ir::Kernel;
use semcheck_model::{compile, ErrorKind, Mesh, ModelError, Program, Rule, Spec};

/// The mesh a protocol runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshKind {
    /// A 1-D ring of `N >= 2` devices on axis `x`.
    Ring,
    /// The two TensorCores of one chip, on axis `tc`.
    TensorCores,
}

/// The one-idea changes the catalogue's kernels implement. A kernel matches on the change
/// it is given and refuses one it does not implement, so a misspelt or misplaced mutant
/// can never silently build the correct kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// Drop the capacity semaphores' signals and waits.
    NoCapacity,
    /// One receive semaphore for every step instead of one per step.
    SharedRecvSem,
    /// Drop the barrier (and the `collective_id`, and skip JAX's implicit barrier).
    NoBarrier,
    /// Drop the final capacity drain.
    NoFinalDrain,
    /// `neighbor_barrier(double_barrier=False)`.
    SingleBarrier,
    /// Drop the producer's signal and the consumer's wait.
    NoSignal,
    /// Drop the kernel that waits for a split-phase copy's send semaphore.
    NoSendDone,
    /// Hand the kernel that waits for the received data the send semaphore.
    WrongSemaphore,
    /// Read the received block before the kernel that waits for it.
    EarlyRead,
}

impl Change {
    /// Every change, so that tests can ask each kernel about each.
    pub const ALL: [Change; 9] = [
        Change::NoCapacity,
        Change::SharedRecvSem,
        Change::NoBarrier,
        Change::NoFinalDrain,
        Change::SingleBarrier,
        Change::NoSignal,
        Change::NoSendDone,
        Change::WrongSemaphore,
        Change::EarlyRead,
    ];
}

/// A named one-idea change to a protocol.
///
/// Several expected rules mean one mechanism that shows up as either, depending on the
/// schedule: a slot read while a DMA still writes it is a `race`, the same slot read after
/// the wrong DMA landed is a `wrong-result`.
#[derive(Clone, Copy, Debug)]
pub struct Mutant {
    /// The name on the command line (`no-capacity`).
    pub name: &'static str,
    /// The change the kernel makes for it.
    pub change: Change,
    /// What the change is, in one line.
    pub description: &'static str,
    /// The rules it is expected to break (any one of them counts); empty when the sources
    /// leaves the question open and the checker's finding is the answer.
    pub expected: &'static [Rule],
    /// The repeat count it needs to manifest (`single-barrier` needs repeated invocations).
    pub repeat: u32,
    /// The smallest mesh size at which it breaks a rule, as the checker found it (a
    /// 2-ring has one all_gather step, so one receive semaphore cannot be confused there;
    /// guarded_shift's single barrier needs five distinct devices).
    /// `None` for an open question the checker answered "proved".
    pub manifests_from: Option<usize>,
}

/// A collective: its kernel (for a mesh and an optional mutant) and its specification.
pub struct Protocol {
    /// The name on the command line.
    pub name: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// Where the kernel comes from in the seeds.
    pub source: &'static str,
    /// The mesh it runs on.
    pub mesh_kind: MeshKind,
    /// Its mutants.
    pub mutants: &'static [Mutant],
    kernel: fn(n: usize, change: Option<Change>) -> Result<Kernel, ModelError>,
    spec: fn(n: usize) -> Spec,
}

impl std::fmt::Debug for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Protocol").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Protocol {
    pub(crate) const fn new(
        name: &'static str,
        description: &'static str,
        source: &'static str,
        mesh_kind: MeshKind,
        mutants: &'static [Mutant],
        kernel: fn(usize, Option<Change>) -> Result<Kernel, ModelError>,
        spec: fn(usize) -> Spec,
    ) -> Protocol {
        Protocol { name, description, source, mesh_kind, mutants, kernel, spec }
    }

    /// The mutant with this name.
    pub fn mutant(&self, name: &str) -> Result<&'static Mutant, ModelError> {
        self.mutants.iter().find(|m| m.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.mutants.iter().map(|m| m.name).collect();
            ModelError::new(
                ErrorKind::UnknownName,
                if names.is_empty() {
                    format!("protocol {} has no mutant `{name}` (it has no mutants)", self.name)
                } else {
                    format!("protocol {} has no mutant `{name}`; its mutants are: {}", self.name, names.join(", "))
                },
            )
        })
    }

    /// The mutant named `name`, or `None` for the correct kernel: the one place a mutant
    /// name is looked up.
    pub fn variant(&self, name: Option<&str>) -> Result<Option<&'static Mutant>, ModelError> {
        name.map(|n| self.mutant(n)).transpose()
    }

    /// The repeat count a variant runs with by default: what the mutant needs to manifest
    /// (`single-barrier` needs two invocations), else 1.
    pub fn default_repeat(mutant: Option<&Mutant>) -> u32 {
        mutant.map_or(1, |m| m.repeat)
    }

    /// The mesh for `devices` devices, or an error if this protocol cannot run on it.
    pub fn mesh(&self, devices: usize) -> Result<Mesh, ModelError> {
        match self.mesh_kind {
            MeshKind::Ring if devices >= 2 => Mesh::ring(devices),
            MeshKind::Ring => Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!("{} runs on a ring of at least 2 devices, not on {devices}", self.name),
            )),
            MeshKind::TensorCores if devices == 2 => Ok(Mesh::tensor_cores()),
            MeshKind::TensorCores => Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!(
                    "{} runs on the 2 TensorCores of one chip (--devices 2), not on {devices} device{}",
                    self.name,
                    if devices == 1 { "" } else { "s" }
                ),
            )),
        }
    }

    /// The traced kernel for `devices` devices, with an optional mutant of this protocol.
    pub fn kernel(&self, devices: usize, mutant: Option<&Mutant>) -> Result<Kernel, ModelError> {
        self.mesh(devices)?;
        (self.kernel)(devices, mutant.map(|m| m.change))
    }

    /// The specification for `devices` devices.
    pub fn spec(&self, devices: usize) -> Spec {
        (self.spec)(devices)
    }

    /// The compiled program: the kernel for the mesh, repeated `repeat` times.
    pub fn program(&self, devices: usize, mutant: Option<&Mutant>, repeat: u32) -> Result<Program, ModelError> {
        let mesh = self.mesh(devices)?;
        let kernel = self.kernel(devices, mutant)?;
        compile(&kernel, &mesh, &self.spec(devices), repeat)
    }
}

/// The error of a kernel asked for a change it does not implement (a catalogue bug).
pub(crate) fn unsupported(protocol: &str, change: Change) -> ModelError {
    ModelError::new(ErrorKind::UnknownName, format!("protocol {protocol} does not implement the change {change:?}"))
}

/// Every protocol, in the order of the seeds.
pub fn catalogue() -> &'static [Protocol] {
    static ALL: [Protocol; 8] = [
        crate::ppermute::PROTOCOL,
        crate::all_gather::PROTOCOL,
        crate::psum::PROTOCOL,
        crate::psum_scatter::PROTOCOL,
        crate::tc_exchange::PROTOCOL,
        crate::producer_consumer::PROTOCOL,
        crate::guarded_shift::PROTOCOL,
        crate::split_ppermute::PROTOCOL,
    ];
    &ALL
}

/// The protocol with this name.
pub fn find(name: &str) -> Result<&'static Protocol, ModelError> {
    catalogue().iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = catalogue().iter().map(|p| p.name).collect();
        ModelError::new(
            ErrorKind::UnknownName,
            format!("unknown protocol `{name}`; the protocols are: {}", names.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(p: &Protocol) -> usize {
        match p.mesh_kind {
            MeshKind::Ring => 4,
            MeshKind::TensorCores => 2,
        }
    }

    #[test]
    fn every_mutant_changes_its_kernel() {
        for p in catalogue() {
            let n = size(p);
            let ops = |m: Option<&Mutant>| -> Vec<Vec<semcheck_model::program::Op>> {
                let program = p.program(n, m, 1).unwrap_or_else(|e| panic!("{} {:?}: {e}", p.name, m.map(|m| m.name)));
                program.devices.iter().map(|d| d.ops.clone()).collect()
            };
            let correct = ops(None);
            for m in p.mutants {
                assert_ne!(ops(Some(m)), correct, "{} --mutant {} compiles to the correct kernel", p.name, m.name);
            }
        }
    }

    #[test]
    fn a_kernel_refuses_a_change_it_does_not_implement() {
        for p in catalogue() {
            for c in Change::ALL {
                if p.mutants.iter().any(|m| m.change == c) {
                    continue;
                }
                let err = (p.kernel)(size(p), Some(c)).expect_err("a change the protocol lacks");
                assert_eq!(err.kind(), &ErrorKind::UnknownName, "{}: {err}", p.name);
            }
        }
    }

    #[test]
    fn mutant_names_are_looked_up_once_and_unknown_ones_refused() {
        let psum = find("psum").unwrap();
        assert_eq!(psum.variant(Some("no-capacity")).unwrap().map(|m| m.change), Some(Change::NoCapacity));
        assert!(psum.variant(None).unwrap().is_none());
        let err = psum.variant(Some("no-capcity")).unwrap_err();
        assert!(err.message().contains("no-capacity"), "{err}");
    }
}
