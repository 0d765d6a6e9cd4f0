//! # Ring windows: the local rules of an `N`-ring checked on a few devices
//!
//! Exhaustive exploration of an `N`-ring grows exponentially with `N`. For ring kernels
//! this module, with the one-run check of the global rules (`semcheck_checker::
//! single_run`), decides every rule at a size `N` from
//!
//! 1. a **window**: the devices within ring distance `K` of one device (the *center*),
//!    run exactly, with every other device replaced by *environment tokens* taken from
//!    its compiled program; explored exhaustively for the **local rules** at the center;
//! 2. **one maximal run** of the whole ring, for the **global rules**, which by the
//!    confluence theorem below is as good as all runs once the local rules hold.
//!
//! Everything here is about one compiled [`Program`] (one `N`, one repeat count). What
//! follows is the soundness argument, precise enough to check; `tests/window.rs` tests
//! each step of it against exact exploration.
//!
//! ## Assumptions (checked on the compiled program, never assumed)
//!
//! * **A1. Ring.** The mesh has one axis; devices are `0..N`, ring distance
//!   `dist(a, b) = min(|a-b|, N-|a-b|)`.
//! * **A2. No shared memory.** Every cell belongs to one device ([`check_conditions`]).
//!   Compilation then guarantees that an operation of device `d` reads and writes only
//!   `d`'s cells, except that a remote copy writes its target's cells; and a wait is on
//!   the waiter's own semaphore.
//! * **A3. Default hardware assumptions** ([`crate::Semantics`]): DMAs complete in any
//!   order, whole. The argument below uses exactly the step function of
//!   [`crate::step`] under them. Windows are built for these only ([`check_conditions`]);
//!   other options are covered by Theorem S below when they allow no new execution, and
//!   otherwise a multi-size check decides the size by exact exploration only (within its
//!   budget; beyond it the size is *not proved*, and says why).
//! * **A4. Radius.** Every operation that targets the center (a signal, a remote copy) is
//!   issued by a device of the window, and every target of the center's operations is in
//!   the window: `K` is at least the kernel's communication radius ([`Window::new`]
//!   checks exactly this).
//! * **A5. Identical windows** ([`window_classes`]), only to explore fewer windows: the
//!   theorems need a window around *every* device; two windows whose *shapes* are equal
//!   (the window written down relative to its center: devices as offsets, semaphores
//!   and cells renamed, token classes sorted) are isomorphic, so one is explored for
//!   both. A rotation-symmetric kernel has one class; a kernel that special-cases `d0`
//!   has a few more (the windows that contain `d0`). Nothing about symmetry is assumed.
//! * **A0. The model.** Everything is about the step function of [`crate::step`] (SPEC
//!   semantics) on the compiled program: programs are straight-line (control flow was
//!   resolved at compile time), and cell values are symbolic and interned, so two
//!   states are equal exactly when their contents are.
//!
//! ## Definitions
//!
//! **Local and global rules.** A violation of race, outside-kernel or semaphore-leak *at
//! exit* is *local*, and has a *location*: for a race, the owner of the cell accessed in
//! conflict (the race check runs when an operation starts, against every DMA in flight;
//! two DMAs writing one cell are caught when the second starts); for outside-kernel, the
//! device signalled or landed in; for a leak at exit, the device exiting. An event
//! *breaks a rule at* `v` when one of its checks fails on `v`'s cell, semaphore or
//! lifecycle (an event can break rules at several devices at once; the model reports one
//! of them, the argument counts each). Wrong-result, deadlock and the final
//! barrier-semaphore check are *global* ([`LOCAL_RULES`]).
//!
//! **States reachable ignoring global checks.** `Reach(P)` is the set of states reached
//! by executions in which no event breaks a local rule (an event that only breaks a
//! global check is applied anyway). A kernel *satisfies the local rules* when no state of
//! `Reach(P)` enables an event that breaks a local rule.
//!
//! **The window `W = W_K(c)`.** Tracked devices `T = { d : dist(d, c) <= K }`. A window
//! state holds the pcs and semaphores of the tracked devices, the in-flight DMAs they
//! issued (key and `sent`/`received` flags, no payload), and one counter per token class.
//! No cell values: control flow never depends on them (programs are straight-line).
//! Events and their semantics are the model's, restricted to tracked devices, except:
//!
//! * an untracked device's increment of a tracked semaphore (a signal; the receipt of a
//!   remote copy, by its byte count) becomes an **environment token** `Token(class)`. A
//!   class is (target semaphore, increment, invocation), where the invocation is the one
//!   of the untracked operation, and is left out for the barrier semaphore. Its **budget**
//!   is the number of such operations in the untracked devices' programs. A token of a
//!   class may fire only while budget is left, its target is blocked at a wait on that
//!   semaphore holding less than the wait needs, and (unless it is a barrier token) that
//!   wait belongs to the token's invocation: tokens are **lazy**;
//! * a remote copy from a tracked device to an untracked one has no *received* event (its
//!   `received` flag is set when it starts): its landing is outside the window;
//! * the implicit entry barrier treats untracked devices as entered;
//! * rules are checked at the center only: race on the center's cells, outside-kernel on
//!   the center, semaphore-leak at the center's exit (its DMAs, its non-barrier
//!   semaphores). Elsewhere nothing is checked and execution goes on.
//!
//! ## Theorem W (window soundness)
//!
//! *Under A0-A4: if no reachable window state enables an event that breaks a rule at the
//! center `c`, then no execution of the `N`-ring whose first local violation is located
//! at `c` exists. If that holds for the window around every device (with A5: around one
//! device of every class), the kernel satisfies the local rules.*
//!
//! *Proof.* Take an execution `e1 ... em` of the ring in which `e1 ... e(m-1)` break no
//! local rule anywhere (global checks ignored) and `em` breaks one located at `c`. Build a
//! window execution event by event, keeping the relation `R` between the ring's state `s`
//! and the window's state `w`:
//!
//! * (R1) every tracked device has the same pc in `s` and `w`;
//! * (R2) `w`'s in-flight DMAs are `s`'s in-flight DMAs issued by tracked devices, with
//!   the same flags, except that `received` is set on those into untracked devices;
//! * (R3) for every semaphore `x` of a tracked device `d`: `w(x) + pending(x) = s(x)`,
//!   where `pending(x)` is the untracked devices' increments of `x` made since the later
//!   of the start and `d`'s last `Enter` (for a non-barrier `x`; since the start for the
//!   barrier semaphore), not yet fired as tokens. For the center `pending = 0` by A4, so
//!   its semaphores are equal;
//! * (R4) the tokens fired of each class are at most the untracked operations of that
//!   class executed so far (so within budget).
//!
//! Each ring event `e` is matched as follows (the initial states are in `R`):
//!
//! * a step of a tracked device `d`: when it is a wait on `x` for `a`, first fire the
//!   pending increments of `x` one by one while `w(x) < a`. This stops with `w(x) >= a`,
//!   because `s(x) >= a` and R3. Each firing is enabled: `d` is at the wait with
//!   `w(x) < a`; budget by R4; and the token's invocation is `d`'s current one, because a
//!   non-barrier increment into `d` made while `d` is not in the increment's invocation
//!   is an outside-kernel violation at `d` (a local violation before `em`, excluded),
//!   and the increments pending since `d`'s last `Enter` were made while `d` ran the
//!   current invocation. Then the step itself: a wait is enabled (`w(x) >= a`); the
//!   entry barrier is enabled in `w` whenever it is in `s` (tracked devices' lifecycles
//!   are equal by R1, untracked ones are taken as entered); every other operation is
//!   always enabled. Its effect keeps R1-R4 (an `Enter` resets the non-barrier semaphores
//!   in both, and `pending` of those restarts at 0; a signal or DMA start of a tracked
//!   device acts on tracked state identically, an increment of an untracked semaphore is
//!   dropped in `w` and irrelevant to R);
//! * a step of an untracked device: a signal of a tracked semaphore adds to `pending`;
//!   anything else changes no tracked state. No window event;
//! * *sent*, *received*, *done* of a DMA issued by a tracked device: the same window
//!   event (enabled by R2), except *received* into an untracked device (none in `w`, its
//!   flag is already set);
//! * *received* of a DMA issued by an untracked device: if its target is tracked, the
//!   increment adds to `pending`; it writes only the target's cells, which `w` does not
//!   hold. No window event.
//!
//! The center's checks in `w` read exactly what they read in `s`: a race on a center cell
//! reads the DMAs in flight that touch the center's cells, all issued by tracked devices
//! by A4 and with equal flags by R2 (the forced `received` flags are on DMAs into
//! untracked devices, whose destinations are not the center's and whose sources are not
//! the center's either, since the center's targets are tracked); outside-kernel reads the
//! center's pc (R1); the leak check reads the center's semaphores (equal, R3) and DMAs
//! (R2). So the window events matched to `e1 ... e(m-1)` break no rule at the center, and
//! the one matched to `em` breaks the same rule at `c`: the window reaches a violation at
//! its center, against the hypothesis.
//!
//! For the second sentence: a kernel that breaks a local rule has an execution with a
//! first local violation, located at some `v`. By the first sentence the window around
//! `v` reaches a violation at its center; with A5 so does the window explored for `v`'s
//! class, which is isomorphic to it (the isomorphism maps `v` to that window's center,
//! and every check at the center to the same check). ∎
//!
//! The converse does not hold: tokens are timing-free, so a window violation may be
//! *spurious*. A window violation is therefore never reported as a bug; it is retried
//! with a wider window, then searched for on the real ring (`semcheck_checker::focused`),
//! and otherwise reported as "not proved, possibly spurious".
//!
//! ## Theorem C (confluence)
//!
//! *Under A0, A2, A3: if the kernel satisfies the local rules, then all maximal executions
//! consist of the same events (as a set of event identities: a device's operation at a
//! pc, or one DMA's sent/received/done) in different orders, end in the same state, and
//! every event's global checks (wrong-result at an exit, the final barrier semaphore)
//! have the same outcome in every execution. So one maximal run decides deadlock
//! (whether it ends with every device finished), wrong-result and the final barrier
//! check.*
//!
//! *Proof.* The state graph restricted to `Reach(P)` is finite and acyclic (every event
//! increases a pc or sets a DMA flag). It is:
//!
//! * **deterministic**: an event's next state is a function of the state;
//! * **persistent**: an enabled event stays enabled until it occurs. A wait is on the
//!   waiter's own semaphore, which only the waiter decrements or resets; the entry
//!   barrier tests "every device entered this invocation or went past it", which only
//!   becomes more true; `Enter`, `Exit`, signals, DMA starts and computations are always
//!   enabled; a DMA's pending events stay enabled until they occur (a DMA is started once:
//!   its key is its issuer and pc).
//! * **locally confluent with equal checks**: if `e != f` are both enabled in `s` in
//!   `Reach(P)`, then `f` is enabled after `e` and `e` after `f`, both orders reach the
//!   same state, and each event's global check has the same outcome in both orders.
//!   Semaphore increments commute with each other and with waits. Two events touch the
//!   same state otherwise only in these cases, each of which lets one order break a local
//!   rule, impossible in `Reach(P)` (after the first event the second is still enabled, by
//!   persistence, and the resulting state is in `Reach(P)`):
//!   - an `Enter` or `Exit` of `d` against a non-barrier signal to `d` or a landing in
//!     `d`: signalling or landing before `Enter` or after `Exit` is outside-kernel;
//!   - an `Enter` of `d` against the *sent* or *done* of `d`'s own DMA of an earlier
//!     invocation: `d`'s `Exit` with that DMA unsent (not done) was a leak;
//!   - an operation reading or writing a cell against a DMA event that ends a conflicting
//!     read or write interval on it, or against a DMA start on it: the order in which the
//!     access comes second is a race; two landings on one cell need both DMAs in flight,
//!     which the later start reports as a race;
//!   - an `Exit` of `d` (whose checks read `d`'s output cells, semaphores and DMAs)
//!     against a landing in `d` or an increment of `d`'s semaphores: after the `Exit`, the
//!     landing or non-barrier signal is outside-kernel; after the `Exit`, the *sent* (or
//!     *done*) of `d`'s own DMA means it exited with that DMA unsent, a leak (its
//!     *received* elsewhere commutes with the `Exit`); barrier signals do not touch what `Exit` checks, except the final
//!     barrier check of the very last `Exit`, which no other event can be enabled with
//!     (every other device has finished, and a landing into a finished device is
//!     outside-kernel).
//!
//! Then every maximal execution from a state `s` is a permutation of any other, with
//! equal check outcomes, by induction on the length of the longest path from `s`: for
//! maximal `e.ρ` and `f.σ` with `e != f`, `e` occurs in `f.σ` (by persistence it stays
//! enabled until it occurs, and `f.σ` ends with nothing enabled); moving it to the front
//! by the diamonds above keeps every state after it, and every check outcome; apply the
//! induction hypothesis from `e(s)`. ∎
//!
//! Together: with A0-A5, a window proof for the local rules and one maximal run that ends
//! with every device finished and breaks no rule prove the kernel at that `N` for every
//! rule; a run that breaks a global rule is itself a concrete counterexample.
//!
//! ## Theorem S (stronger assumptions)
//!
//! *Let `P'` be the program `P` under `--dma-order pair-fifo`, or under `--dma-landing
//! cells` when every copy of `P` is one cell ([`defaults_cover`]). Every execution of
//! `P'` is an execution of `P` with the same states and the same rule checks, and a
//! state is terminal in `P'` exactly when it is in `P`. So if `P` breaks no rule (and
//! has no deadlock), neither does `P'`.*
//!
//! *Proof.* Under `cells`, a copy of one cell lands by `received`/`done` as under
//! `whole` ([`crate::Event::CellLanded`] is only for copies of several cells): the step
//! functions are the same. Under `pair-fifo` the step function is the same and only
//! landings are disabled, those that would overtake an earlier unlanded DMA of their
//! queue ([`crate::Program::overtaken`]); so `P'`'s executions are `P`'s. A state with a
//! DMA in flight enables, in `P'` as in `P`, its `sent` if pending, and the landing of
//! the earliest unlanded DMA of every queue; device steps are enabled alike. So terminal
//! states, hence deadlocks, agree. ∎
//!
//! A violation of `P` is one of `P'` only if its schedule is one of `P'` (the caller
//! replays it under `P'`'s assumptions; otherwise that size is not decided).
//!
//! ## Where the original proposal needed fixing
//!
//! The proposal this follows (a research note of the project) argued both theorems
//! informally. Checking them showed:
//!
//! * **The lock-step run is not a maximal execution.** The seed's lock-step schedule
//!   stops when a device cannot finish a grid index before the others start the next one;
//!   a kernel whose device waits at index 0 for a neighbour's signal of index 1 is stuck
//!   in lock step and correct (`tests/window.rs`,
//!   `the_lock_step_run_is_not_a_maximal_run`). Theorem C needs *some* maximal run:
//!   `single_run` runs every device as far as it can, then every DMA event, until nothing
//!   is enabled.
//! * **Terminal-state uniqueness is not enough for wrong-result.** Outputs are checked at
//!   every invocation's exit, so with `repeat > 1` the earlier invocations' outputs are
//!   not in the final state; Theorem C states and proves equal check outcomes per event.
//! * **Boundary devices need no special semantics, and the window works at every `N`.**
//!   Every tracked device runs exactly; only untracked devices become tokens. A window
//!   that covers the ring (`N <= 2K+1`) is the exact system without values, checked at
//!   its center.
//! * **Tokens with one budget for the whole run are too coarse**, and the argument must
//!   take the *first* violation anywhere, not only at the center: that is what makes
//!   invocation-tagged tokens sound (R3's invocation argument) and removes the false
//!   alarms they would cause.
//! * **Global rotation symmetry is more than needed**, and the `my_id == 0` kernels need
//!   no special treatment: Theorem W wants a window around every device, and windows of
//!   equal shape are explored once (A5), so a symmetric kernel costs one window per
//!   radius, an asymmetric one a window per class. The proposal's side condition
//!   `N >= 2K+3` is not needed either: a window that covers the ring is exact.
//! * **Radius 1 (three devices) is not precise enough** for barrier kernels invoked
//!   repeatedly: barrier tokens carry no invocation (the barrier semaphore may be
//!   signalled at any time), so a neighbour of the center can pass its barrier on two
//!   tokens that stand for two invocations of a device outside the window. `psum
//!   --mutant single-barrier` and the double-barrier `guarded_shift` are false alarms at
//!   radius 1 and proved at radius 2 (five devices), the proposal's own "k = 1".
//! * **Partial-order reduction**: the proposal suggested exploring windows without it;
//!   that is too slow past `N = 16`. The window has its own stubborn sets (see
//!   `reduction.rs` in this module: the exact reduction's units, dependence and progress
//!   bounds, with environment tokens as units), compared with the full window graph in
//!   the tests; a correct kernel's window is then a single path.
//!
//! Not covered: the hardware-assumption options other than the defaults, meshes of
//! several axes, shared buffers, and sizes not asked for; the argument is per `N` and
//! per repeat count.

mod build;
mod classes;
mod reduction;
mod step;

pub use build::{check_conditions, communication_radius, defaults_cover, ring_distance, Inapplicable, Incoming};
pub use classes::{window_classes, WindowClass};
pub use reduction::WindowScratch;
pub use step::WindowEvent;

use crate::mesh::DeviceId;
use crate::program::{Program, SemSlot};
use crate::violation::Rule;

/// The rules a window decides: the *local* rules, each about one device's cells,
/// semaphores and lifecycle.
pub const LOCAL_RULES: [Rule; 3] = [Rule::Race, Rule::OutsideKernel, Rule::SemaphoreLeak];

/// A class of environment tokens: increments that devices outside the window make to
/// one semaphore of a tracked device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The tracked device whose semaphore is incremented.
    pub target: DeviceId,
    /// The semaphore.
    pub sem: SemSlot,
    /// The increment of one token (a signal's `inc`, a copy's byte count).
    pub inc: u32,
    /// The invocation the increments belong to (they can only arrive while the target
    /// runs it), or `None` for the barrier semaphore (no such constraint).
    pub invocation: Option<u32>,
    /// How many such increments the untracked devices' programs make: the most tokens of
    /// this class a window execution may use.
    pub budget: u32,
    /// The untracked devices that make them.
    pub sources: Vec<DeviceId>,
}

/// The window of a compiled ring program around one device (the *center*): the devices
/// within a ring distance `radius` of it run their programs exactly; the others are
/// dropped and replaced by environment [`Token`]s; cell values are dropped; the local
/// rules are checked at the center only.
#[derive(Clone, Debug)]
pub struct Window<'p> {
    program: &'p Program,
    center: DeviceId,
    radius: usize,
    /// The tracked devices, in id order.
    tracked: Vec<DeviceId>,
    /// Per device of the ring: its position in `tracked`, or `u32::MAX`.
    position: Vec<u32>,
    tokens: Vec<Token>,
    /// Per tracked device and local semaphore index: the token classes into it.
    tokens_of: Vec<Vec<u32>>,
    /// Static indexes for the reduction.
    indexes: reduction::Indexes,
}

impl<'p> Window<'p> {
    /// The program of the whole ring.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// The device whose rules are checked.
    pub fn center(&self) -> DeviceId {
        self.center
    }

    /// The window radius: devices within this ring distance of the center are tracked.
    pub fn radius(&self) -> usize {
        self.radius
    }

    /// The tracked devices, in id order.
    pub fn tracked(&self) -> &[DeviceId] {
        &self.tracked
    }

    /// Whether a device is tracked.
    pub fn is_tracked(&self, d: DeviceId) -> bool {
        self.position.get(d.index()).is_some_and(|&p| p != u32::MAX)
    }

    /// Whether the window tracks every device of the ring (no environment left: the
    /// window is then the exact system without values, checked at the center).
    pub fn covers_ring(&self) -> bool {
        self.tracked.len() == self.program.num_devices()
    }

    /// The environment token classes.
    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }
}
