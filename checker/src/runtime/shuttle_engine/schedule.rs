//! Shuttle's scheduling decisions: recording them ([`Recorder`], "replay is just another
//! scheduler"), their text form ([`RecordedSchedule`], the `engine-schedule` line of a
//! trace file) and replaying them, checked step by step ([`Replayer`]).

use std::sync::{Arc, Mutex};

use shuttle::scheduler::{ReplayScheduler, Schedule, Scheduler, Task, TaskId};

use crate::runtime::checks::Sink;

/// A recorded schedule: the seed of shuttle's data source for the execution, and every
/// choice the scheduler made (`Some(task)` a scheduling decision, `None` a random number).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordedSchedule {
    /// The seed of shuttle's data source for the execution.
    pub seed: u64,
    /// The choices, in order.
    pub steps: Vec<Option<usize>>,
}

impl RecordedSchedule {
    /// `execution-seed=6198063878555692194 steps=0 0 1 r 2`: task ids, `r` for a random
    /// number.
    pub fn to_text(&self) -> String {
        let words: Vec<String> = self.steps.iter().map(|s| s.map_or("r".to_string(), |t| t.to_string())).collect();
        format!("execution-seed={} steps={}", self.seed, words.join(" "))
    }

    /// Parses the text of [`RecordedSchedule::to_text`].
    pub fn parse(text: &str) -> Result<RecordedSchedule, String> {
        let rest = text.trim().strip_prefix("execution-seed=").ok_or_else(|| {
            "a shuttle schedule reads `execution-seed=N steps=T T r T ...`; it does not start with `execution-seed=`"
                .to_string()
        })?;
        let (seed, steps) = rest.split_once(' ').unwrap_or((rest, ""));
        let seed = seed.parse().map_err(|_| format!("`{seed}` is not an execution seed (u64)"))?;
        let steps = steps
            .trim_start()
            .strip_prefix("steps=")
            .ok_or_else(|| "the shuttle schedule has no `steps=` after its seed".to_string())?;
        let steps = steps
            .split_whitespace()
            .enumerate()
            .map(|(i, w)| match w {
                "r" => Ok(None),
                _ => w.parse().map(Some).map_err(|_| format!("step {} `{w}` is neither a task id nor `r`", i + 1)),
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(RecordedSchedule { seed, steps })
    }

    fn to_shuttle(&self) -> Schedule {
        let mut s = Schedule::new(self.seed);
        for step in &self.steps {
            match step {
                Some(t) => s.push_task(TaskId::from(*t)),
                None => s.push_random(),
            }
        }
        s
    }
}

/// A scheduler that records the choices of the scheduler it wraps, and ends the execution
/// (and the campaign) at the first scheduling point after the run's [`Sink`] records a
/// violation: that is how a violation stops shuttle without a panic.
pub(super) struct Recorder<S: Scheduler> {
    inner: S,
    sink: Arc<Sink>,
    current: Arc<Mutex<RecordedSchedule>>,
}

impl<S: Scheduler> Recorder<S> {
    /// Wraps `inner`; `current` receives the schedule of the execution under way.
    pub(super) fn new(inner: S, sink: Arc<Sink>, current: Arc<Mutex<RecordedSchedule>>) -> Recorder<S> {
        Recorder { inner, sink, current }
    }

    fn current(&self) -> std::sync::MutexGuard<'_, RecordedSchedule> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: Scheduler> Scheduler for Recorder<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        if self.sink.aborted() {
            return None;
        }
        let s = self.inner.new_execution()?;
        *self.current() = RecordedSchedule { seed: s.seed, steps: Vec::new() };
        Some(s)
    }

    fn next_task(&mut self, runnable: &[&Task], current: Option<TaskId>, is_yielding: bool) -> Option<TaskId> {
        if self.sink.aborted() {
            return None;
        }
        let t = self.inner.next_task(runnable, current, is_yielding)?;
        self.current().steps.push(Some(usize::from(t)));
        Some(t)
    }

    fn next_u64(&mut self) -> u64 {
        self.current().steps.push(None);
        self.inner.next_u64()
    }
}

impl<S: Scheduler> Drop for Recorder<S> {
    /// Lets the wrapped scheduler see the campaign to its end: shuttle's random scheduler
    /// prints "failing seed" on stderr when it is dropped after an execution that it did not
    /// see finish (the one a violation or the time budget ended). semcheck reports the
    /// schedule itself.
    fn drop(&mut self) {
        while self.inner.new_execution().is_some() {}
    }
}

/// Why a recorded schedule could not be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diverged {
    /// The 1-based step of the schedule that could not be taken.
    pub step: usize,
    /// What happened instead.
    pub message: String,
}

/// Replays a [`RecordedSchedule`] with shuttle's `ReplayScheduler`, checking every step
/// first: a step that is not possible ends the execution and is reported as [`Diverged`],
/// rather than as the replay scheduler's panic.
pub(super) struct Replayer {
    steps: Vec<Option<usize>>,
    next: usize,
    inner: ReplayScheduler,
    diverged: Arc<Mutex<Option<Diverged>>>,
}

impl Replayer {
    /// A replayer of `schedule`; a divergence is reported into `diverged`.
    pub(super) fn new(schedule: &RecordedSchedule, diverged: Arc<Mutex<Option<Diverged>>>) -> Replayer {
        let mut inner = ReplayScheduler::new_from_schedule(schedule.to_shuttle());
        inner.set_allow_incomplete();
        Replayer { steps: schedule.steps.clone(), next: 0, inner, diverged }
    }

    fn diverge(&mut self, message: String) {
        let mut d = self.diverged.lock().unwrap_or_else(|e| e.into_inner());
        d.get_or_insert(Diverged { step: self.next + 1, message });
    }
}

impl Scheduler for Replayer {
    fn new_execution(&mut self) -> Option<Schedule> {
        self.inner.new_execution()
    }

    fn next_task(&mut self, runnable: &[&Task], current: Option<TaskId>, is_yielding: bool) -> Option<TaskId> {
        match self.steps.get(self.next).copied() {
            None => {
                self.diverge("the schedule ends while the execution goes on".to_string());
                None
            }
            Some(None) => {
                self.diverge("the schedule has a random number where the execution makes a scheduling decision".into());
                None
            }
            Some(Some(t)) if !runnable.iter().any(|r| usize::from(r.id()) == t) => {
                let ids: Vec<String> = runnable.iter().map(|r| usize::from(r.id()).to_string()).collect();
                self.diverge(format!("task {t} is not runnable there (runnable: {})", ids.join(", ")));
                None
            }
            Some(Some(_)) => {
                self.next += 1;
                self.inner.next_task(runnable, current, is_yielding)
            }
        }
    }

    fn next_u64(&mut self) -> u64 {
        if self.steps.get(self.next).copied() == Some(None) {
            self.next += 1;
            self.inner.next_u64()
        } else {
            self.diverge("the execution asks for a random number where the schedule has none".into());
            0
        }
    }
}
