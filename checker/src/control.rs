//! What the caller of an exploration controls while it runs: stopping it early (Ctrl-C, a
//! budget the caller watches itself), the clock its time budget counts from, and watching
//! its progress.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use crate::outcome::StopReason;

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

/// A request to stop, with its reason, that any thread may make and an exploration polls.
/// The first reason requested is kept until [`Stop::clear`].
#[derive(Debug, Default)]
pub struct Stop(AtomicU8);

/// The reasons a [`Stop`] carries, by code (0: none).
const REASONS: [StopReason; 6] = [
    StopReason::States,
    StopReason::Time,
    StopReason::Memory,
    StopReason::Interrupted,
    StopReason::Sampled,
    StopReason::Bounded,
];

impl Stop {
    /// No stop requested.
    pub const fn new() -> Stop {
        Stop(AtomicU8::new(0))
    }

    /// Asks the exploration to stop for `reason` (a later request keeps the first reason).
    pub fn request(&self, reason: StopReason) {
        let code = REASONS.iter().position(|&r| r == reason).expect("every reason has a code") as u8 + 1;
        let _ = self.0.compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The reason a stop was requested for, if one was.
    pub fn requested(&self) -> Option<StopReason> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            code => Some(REASONS[code as usize - 1]),
        }
    }

    /// Withdraws the request (before the next exploration).
    pub fn clear(&self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Hooks into a running exploration. The default has none.
#[derive(Clone, Copy, Default)]
pub struct Control<'a> {
    /// When a stop is requested, the exploration stops with verdict `incomplete`, the
    /// requested reason and the counts it reached.
    pub stop: Option<&'a Stop>,
    /// Called from time to time (about four times a second) with the progress so far.
    pub progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    /// The instant the time budget counts from (the command's start, so that compiling
    /// counts); the exploration's own start when `None`.
    pub since: Option<Instant>,
}

impl std::fmt::Debug for Control<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("stop", &self.stop)
            .field("progress", &self.progress.map(|_| "fn"))
            .field("since", &self.since)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_requested_is_kept_until_cleared() {
        let stop = Stop::new();
        assert_eq!(stop.requested(), None);
        stop.request(StopReason::Memory);
        stop.request(StopReason::Interrupted);
        assert_eq!(stop.requested(), Some(StopReason::Memory));
        stop.clear();
        assert_eq!(stop.requested(), None);
        for r in REASONS {
            stop.request(r);
            assert_eq!(stop.requested(), Some(r));
            stop.clear();
        }
    }
}
