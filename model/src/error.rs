//! Errors for malformed meshes, kernels and protocols.
//!
//! A property violation is never an error: it is a result of checking. These errors are
//! for input that cannot be checked at all, and each names the kernel, the operation and
//! the problem.

use std::fmt;

/// What kind of problem a [`ModelError`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The mesh is malformed (empty, zero-sized axis, too many devices).
    Mesh,
    /// A semaphore id does not exist in the kernel.
    UnknownSemaphore,
    /// A semaphore is used where another kind is required.
    WrongSemaphoreKind,
    /// A buffer id does not exist in the kernel.
    UnknownBuffer,
    /// An index or slice falls outside a buffer or semaphore array.
    OutOfRange,
    /// The source and destination of a copy differ in size.
    SizeMismatch,
    /// A device id is off the mesh, or names an axis the mesh lacks.
    DeviceOffMesh,
    /// JAX refuses to build the kernel: its `collective_id` rules (a custom barrier
    /// without a `collective_id`, or a `collective_id` without a custom barrier), or a
    /// load or store of a buffer outside VMEM and SMEM.
    JaxRefuses,
    /// An index expression cannot be evaluated (unknown axis, division by zero, ...).
    BadExpression,
    /// A protocol, mutant or parameter name is not known.
    UnknownName,
    /// The kernel is too large for the packed state (too many operations or cells).
    TooLarge,
    /// A malformed declaration (zero-sized shape, bad grid, ...).
    BadDeclaration,
    /// A construct semcheck does not model (named, with its source line when known).
    Unsupported,
    /// A tool semcheck needs is missing or broken (the Python front end's environment).
    Environment,
    /// The work was stopped by a budget or an interruption before it ended: nothing is
    /// wrong with the input, and nothing was decided.
    Stopped,
}

/// An error in a mesh, kernel or protocol, with a message a user can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    kind: ErrorKind,
    message: String,
}

impl ModelError {
    /// A new error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ModelError {
        ModelError { kind, message: message.into() }
    }

    pub(crate) fn mesh(message: impl Into<String>) -> ModelError {
        ModelError::new(ErrorKind::Mesh, message)
    }

    /// The kind of problem.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The message without the kind prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with a context prefix (e.g. the kernel and operation).
    pub fn context(self, prefix: impl fmt::Display) -> ModelError {
        ModelError { kind: self.kind, message: format!("{prefix}: {}", self.message) }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ModelError {}
