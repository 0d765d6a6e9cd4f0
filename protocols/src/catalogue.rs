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

/// A named one-idea change to a protocol.
///
/// Several expected rules mean one mechanism that shows up as either, depending on the
/// schedule: a slot read while a DMA still writes it is a `race`, the same slot read after
/// the wrong DMA landed is a `wrong-result`.
#[derive(Clone, Copy, Debug)]
pub struct Mutant {
    /// The name on the command line (`no-capacity`).
    pub name: &'static str,
    /// What the change is, in one line.
    pub description: &'static str,
    /// The rules it is expected to break (any one of them counts); empty when SPEC §6
    /// leaves the question open and the checker's finding is the answer.
    pub expected: &'static [Rule],
    /// The repeat count it needs to manifest (`single-barrier` needs repeated invocations).
    pub repeat: u32,
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
    kernel: fn(n: usize, mutant: Option<&str>) -> Result<Kernel, ModelError>,
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
        kernel: fn(usize, Option<&str>) -> Result<Kernel, ModelError>,
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

    /// The repeat count to run with: `requested` if given, else what the mutant needs to
    /// manifest (`single-barrier` needs two invocations), else 1.
    pub fn repeat_for(&self, mutant: Option<&str>, requested: Option<u32>) -> Result<u32, ModelError> {
        match (requested, mutant) {
            (Some(r), _) => Ok(r),
            (None, Some(m)) => Ok(self.mutant(m)?.repeat),
            (None, None) => Ok(1),
        }
    }

    /// The mesh for `devices` devices, or an error if this protocol cannot run on it.
    pub fn mesh(&self, devices: usize) -> Result<Mesh, ModelError> {
        match self.mesh_kind {
            MeshKind::Ring if devices >= 2 => Mesh::ring(devices),
            MeshKind::Ring => Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!("{} runs on a ring of at least 2 devices, not {devices}", self.name),
            )),
            MeshKind::TensorCores if devices == 2 => Ok(Mesh::tensor_cores()),
            MeshKind::TensorCores => Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!("{} runs on the 2 TensorCores of one chip, not on {devices} devices", self.name),
            )),
        }
    }

    /// The traced kernel for `devices` devices, with an optional mutant.
    pub fn kernel(&self, devices: usize, mutant: Option<&str>) -> Result<Kernel, ModelError> {
        if let Some(m) = mutant {
            self.mutant(m)?;
        }
        self.mesh(devices)?;
        (self.kernel)(devices, mutant)
    }

    /// The specification for `devices` devices.
    pub fn spec(&self, devices: usize) -> Spec {
        (self.spec)(devices)
    }

    /// The compiled program: the kernel for the mesh, repeated `repeat` times.
    pub fn program(&self, devices: usize, mutant: Option<&str>, repeat: u32) -> Result<Program, ModelError> {
        let mesh = self.mesh(devices)?;
        let kernel = self.kernel(devices, mutant)?;
        compile(&kernel, &mesh, &self.spec(devices), repeat)
    }
}

/// Every protocol, in the order of the seeds.
pub fn catalogue() -> &'static [Protocol] {
    static ALL: [Protocol; 6] = [
        crate::ppermute::PROTOCOL,
        crate::all_gather::PROTOCOL,
        crate::psum::PROTOCOL,
        crate::psum_scatter::PROTOCOL,
        crate::tc_exchange::PROTOCOL,
        crate::producer_consumer::PROTOCOL,
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
