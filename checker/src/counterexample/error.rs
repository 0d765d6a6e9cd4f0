//! The error of reading, loading or replaying a trace file.

use std::fmt;

/// What went wrong with a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// A line is not valid trace syntax (bad header, unknown key, wrong order, bad number).
    Syntax,
    /// The header names a protocol, mutant or mesh the catalogue does not have.
    Model,
    /// An event is not enabled when it is applied: the model or the protocol changed.
    NotEnabled,
    /// The events replay but break a different rule, break it too early, or none at all.
    Rule,
}

/// An error naming the line of the trace file it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    kind: TraceErrorKind,
    line: Option<usize>,
    message: String,
}

impl TraceError {
    /// An error of `kind` about 1-based `line` (if any; line 0, the line of a trace built
    /// in memory rather than parsed, counts as none).
    pub fn new(kind: TraceErrorKind, line: Option<usize>, message: impl Into<String>) -> TraceError {
        TraceError { kind, line: line.filter(|&l| l > 0), message: message.into() }
    }

    /// What went wrong.
    pub fn kind(&self) -> TraceErrorKind {
        self.kind
    }

    /// The 1-based line of the file, when the error is about one line.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The explanation, without the line number.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TraceError {}
