//! What the caller of an exploration controls while it runs: stopping it early (Ctrl-C)
//! and watching its progress.

use std::sync::atomic::AtomicBool;

/// How far an exploration has got.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Distinct states stored.
    pub states: u64,
    /// Events applied.
    pub transitions: u64,
    /// The breadth-first level (or depth-first depth) being expanded.
    pub depth: u64,
    /// Seconds since the exploration started.
    pub seconds: f64,
    /// Bytes of the explorer's tables.
    pub memory_bytes: u64,
}

/// Hooks into a running exploration. The default has none.
#[derive(Clone, Copy, Default)]
pub struct Control<'a> {
    /// When this becomes `true`, the exploration stops with verdict `incomplete`
    /// (reason `interrupted`) and the counts it reached.
    pub interrupt: Option<&'a AtomicBool>,
    /// Called from time to time (about four times a second) with the progress so far.
    pub progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
}

impl std::fmt::Debug for Control<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("interrupt", &self.interrupt)
            .field("progress", &self.progress.map(|_| "fn"))
            .finish()
    }
}
