//! Small random kernels for differential tests (`tests/model/reduction_random.rs`,
//! `tests/engines/assumptions.rs`): signals, waits, local and remote copies of whole two-cell
//! buffers or of single cells, waits with a smaller descriptor than the copy, computations,
//! branches on the device id, and small protocols whose verdict depends on the hardware
//! assumptions (two DMAs of one pair in flight on one receive semaphore, a half wait); with
//! outputs, per device and shared, to be checked against what they compute in lock step.
//! Some signals name an element of a two-dimensional semaphore array by an index computed
//! from the device id, checked per dimension: out of range on some device, the kernel does
//! not compile (never a neighbouring semaphore, never a proof).

use proptest::prelude::*;
use semcheck::frontend::spec::lockstep_spec;
use semcheck::model::dsl::{trace, KernelBuilder, Ref, Sem};
use semcheck::model::expr::Expr;
use semcheck::model::ir::{BufferRole, Kernel, MemorySpace};
use semcheck::model::{DmaLanding, DmaOrder, Mesh, Notation, Semantics, Spec};

#[derive(Clone, Debug)]
pub enum Dir {
    Left,
    Right,
    Own,
}

/// A view of one of the two buffers (each of two cells): all of it, or one cell.
#[derive(Clone, Copy, Debug)]
pub enum View {
    Whole(usize),
    Cell(usize, usize),
}

#[derive(Clone, Debug)]
pub enum S {
    Signal {
        sem: usize,
        dir: Dir,
        inc: i64,
    },
    Wait {
        sem: usize,
        n: i64,
    },
    RemoteStart {
        src: View,
        dst: View,
        dir: Dir,
    },
    RemoteWaitSend {
        src: View,
        dst: View,
        dir: Dir,
    },
    RemoteWaitRecv {
        src: View,
        dst: View,
        dir: Dir,
    },
    LocalCopy {
        src: View,
        dst: View,
        wait: bool,
    },
    LocalWait {
        src: View,
        dst: View,
    },
    Add {
        dst: View,
        src: View,
    },
    Zero {
        dst: View,
    },
    OnlyOnDevice0(Box<S>),
    /// A signal of a device's own `grid.at[0, (k * me) % m]` and a wait for it, `grid` a
    /// 2 x 2 semaphore array laid out row-major in 4 semaphores, the column index checked
    /// against its dimension; `m` is 2 (always in range) or N when `ring` (out of range on
    /// every device whose `(k * me) % N` is 2 or more).
    IndexedSignal {
        k: i64,
        ring: bool,
    },
    /// `start(); wait()` of one remote copy: a ppermute round.
    Round {
        src: View,
        dst: View,
        dir: Dir,
    },
    /// Two single-cell copies to one neighbour in flight on one receive semaphore; the first
    /// `wait_recv` is followed by a read of the first copy's cell (safe only if the pair's
    /// DMAs land in start order).
    TwoInFlight {
        dir: Dir,
    },
    /// A two-cell copy whose receiver waits for one cell's bytes and reads that cell (safe
    /// only if the copy lands whole).
    HalfRead {
        dir: Dir,
    },
}

fn dir() -> impl Strategy<Value = Dir> {
    prop_oneof![Just(Dir::Left), Just(Dir::Right), Just(Dir::Own)]
}

fn view() -> impl Strategy<Value = View> {
    prop_oneof![(0..2usize).prop_map(View::Whole), (0..2usize, 0..2usize).prop_map(|(b, i)| View::Cell(b, i))]
}

/// Two views of the same size: both whole buffers, or two single cells.
fn pair() -> impl Strategy<Value = (View, View)> {
    prop_oneof![
        (0..2usize, 0..2usize).prop_map(|(a, b)| (View::Whole(a), View::Whole(b))),
        (0..2usize, 0..2usize, 0..2usize, 0..2usize).prop_map(|(a, i, b, j)| (View::Cell(a, i), View::Cell(b, j))),
    ]
}

fn leaf() -> impl Strategy<Value = S> {
    prop_oneof![
        (0..2usize, dir(), 1..3i64).prop_map(|(sem, dir, inc)| S::Signal { sem, dir, inc }),
        (0..2usize, 1..3i64).prop_map(|(sem, n)| S::Wait { sem, n }),
        (pair(), dir()).prop_map(|((src, dst), dir)| S::RemoteStart { src, dst, dir }),
        (pair(), dir()).prop_map(|((src, dst), dir)| S::RemoteWaitSend { src, dst, dir }),
        (pair(), dir()).prop_map(|((src, dst), dir)| S::RemoteWaitRecv { src, dst, dir }),
        (pair(), any::<bool>()).prop_map(|((src, dst), wait)| S::LocalCopy { src, dst, wait }),
        pair().prop_map(|(src, dst)| S::LocalWait { src, dst }),
        pair().prop_map(|(dst, src)| S::Add { dst, src }),
        view().prop_map(|dst| S::Zero { dst }),
        (1..4i64, prop::bool::weighted(0.3)).prop_map(|(k, ring)| S::IndexedSignal { k, ring }),
    ]
}

/// Small correct-looking protocols whose verdict depends on the assumptions.
fn protocol() -> impl Strategy<Value = S> {
    prop_oneof![
        (pair(), dir()).prop_map(|((src, dst), dir)| S::Round { src, dst, dir }),
        dir().prop_map(|dir| S::TwoInFlight { dir }),
        dir().prop_map(|dir| S::HalfRead { dir }),
    ]
}

/// A split-phase round as three statements, for a program to cut between: a remote copy
/// started, then waited for on both of its semaphores; one time in four, a small protocol
/// of its own comes first.
pub fn split_round() -> impl Strategy<Value = Vec<S>> {
    (pair(), dir(), prop::option::weighted(0.25, protocol())).prop_map(|((src, dst), dir, before)| {
        let mut round = Vec::from_iter(before);
        round.push(S::RemoteStart { src, dst, dir: dir.clone() });
        round.push(S::RemoteWaitSend { src, dst, dir: dir.clone() });
        round.push(S::RemoteWaitRecv { src, dst, dir });
        round
    })
}

pub fn stmt() -> impl Strategy<Value = S> {
    prop_oneof![
        4 => leaf(),
        1 => leaf().prop_map(|s| S::OnlyOnDevice0(Box::new(s))),
        3 => protocol(),
    ]
}

struct Env<'k> {
    n: usize,
    bufs: Vec<Ref<'k>>,
    sems: Vec<Sem<'k>>,
    grid: Sem<'k>,
    send: Sem<'k>,
    recv: Sem<'k>,
    local: Sem<'k>,
}

impl<'k> Env<'k> {
    fn view(&self, v: View) -> Ref<'k> {
        match v {
            View::Whole(b) => self.bufs[b].clone(),
            View::Cell(b, i) => self.bufs[b].at(i),
        }
    }
}

fn target(k: &KernelBuilder, n: usize, d: &Dir) -> Option<Expr> {
    let me = k.axis_index("x");
    match d {
        Dir::Left => Some((me - 1 + n as i64) % n),
        Dir::Right => Some((me + 1) % n),
        Dir::Own => None,
    }
}

/// The flat index of `grid.at[0, (times * me) % m]` in a 2 x 2 array, each dimension's
/// index checked against that dimension (as the front end exports a multi-dimensional
/// semaphore index).
pub fn grid_index(k: &KernelBuilder, m: usize, times: i64) -> Expr {
    let row = Expr::InRange(Box::new(Expr::Const(0)), 2, 0);
    let column = Expr::InRange(Box::new((k.axis_index("x") * times) % m), 2, 1);
    row * 2 + column
}

fn emit<'k>(k: &'k KernelBuilder, e: &Env<'k>, s: &S) {
    let remote = |src: View, dst: View, dir: &Dir| {
        let t = target(k, e.n, dir).unwrap_or_else(|| k.axis_index("x"));
        k.make_async_remote_copy(&e.view(src), &e.view(dst), &e.send, &e.recv, t)
    };
    match s {
        S::Signal { sem, dir, inc } => k.semaphore_signal(&e.sems[*sem], *inc, target(k, e.n, dir)),
        S::Wait { sem, n } => k.semaphore_wait(&e.sems[*sem], *n),
        S::RemoteStart { src, dst, dir } => remote(*src, *dst, dir).start(),
        S::RemoteWaitSend { src, dst, dir } => remote(*src, *dst, dir).wait_send(),
        S::RemoteWaitRecv { src, dst, dir } => remote(*src, *dst, dir).wait_recv(),
        S::LocalCopy { src, dst, wait } => {
            let dma = k.make_async_copy(&e.view(*src), &e.view(*dst), &e.local);
            dma.start();
            if *wait {
                dma.wait();
            }
        }
        S::LocalWait { src, dst } => k.make_async_copy(&e.view(*src), &e.view(*dst), &e.local).wait(),
        S::Add { dst, src } => {
            let mut d = e.view(*dst);
            d += &e.view(*src);
        }
        S::Zero { dst } => e.view(*dst).assign(semcheck::model::ir::Rhs::Zeros),
        S::OnlyOnDevice0(inner) => k.when(k.axis_index("x").equals(0), |k| emit(k, e, inner)),
        S::IndexedSignal { k: times, ring } => {
            let element = e.grid.at(grid_index(k, if *ring { e.n } else { 2 }, *times));
            k.semaphore_signal(&element, 1, None::<Expr>);
            k.semaphore_wait(&element, 1);
        }
        S::Round { src, dst, dir } => {
            let dma = remote(*src, *dst, dir);
            dma.start();
            dma.wait();
        }
        S::TwoInFlight { dir } => {
            let first = remote(View::Cell(0, 0), View::Cell(1, 0), dir);
            let second = remote(View::Cell(0, 1), View::Cell(1, 1), dir);
            first.start();
            second.start();
            first.wait_send();
            second.wait_send();
            first.wait_recv();
            let mut mine = e.view(View::Cell(0, 0));
            mine += &e.view(View::Cell(1, 0));
            second.wait_recv();
        }
        S::HalfRead { dir } => {
            let whole = remote(View::Whole(0), View::Whole(1), dir);
            whole.start();
            whole.wait_send();
            remote(View::Cell(0, 0), View::Cell(1, 0), dir).wait_recv();
            let mut mine = e.view(View::Cell(0, 0));
            mine += &e.view(View::Cell(1, 0));
            remote(View::Cell(0, 1), View::Cell(1, 1), dir).wait_recv();
        }
    }
}

/// Every combination of the assumptions, the default first.
pub const SEMANTICS: [Semantics; 4] = [
    Semantics { dma_order: DmaOrder::Any, dma_landing: DmaLanding::Whole },
    Semantics { dma_order: DmaOrder::PairFifo, dma_landing: DmaLanding::Whole },
    Semantics { dma_order: DmaOrder::Any, dma_landing: DmaLanding::Cells },
    Semantics { dma_order: DmaOrder::PairFifo, dma_landing: DmaLanding::Cells },
];

/// The kernel of `body` on a ring of `n` (with a collective id if `collective`), or `None`
/// when the DSL refuses it.
pub fn kernel(n: usize, collective: bool, body: &[S]) -> Option<Kernel> {
    build(n, collective, body, false)
}

/// What a random kernel's outputs are checked against.
#[derive(Clone, Copy, Debug)]
pub enum Outputs {
    /// No outputs, no specification.
    None,
    /// What the kernel computes in lock step (`semcheck::frontend::spec::lockstep_spec`).
    /// A kernel without a race computes one final state in every schedule (confluence), and
    /// no kernel may store into memory devices share, so such a kernel breaks
    /// `wrong-result` only where a race makes its outputs depend on the schedule.
    Lockstep,
    /// The lock-step specification with two different expected values exchanged (where it
    /// has two): every
    /// schedule that reaches the last exit without breaking another rule breaks
    /// `wrong-result` (on a device's own outputs or on the shared ones), so that the
    /// engines are compared on wrong results too.
    Exchanged,
}

/// Any of [`Outputs`], with outputs two times in three.
pub fn outputs() -> impl Strategy<Value = Outputs> {
    prop_oneof![Just(Outputs::None), Just(Outputs::Lockstep), Just(Outputs::Exchanged)]
}

/// The kernel of `body` on a ring of `n` with its specification for `outputs`, or `None`
/// when the DSL refuses it or it has no lock-step run to take a specification from.
pub fn checked(n: usize, collective: bool, repeat: u32, body: &[S], outputs: Outputs) -> Option<(Kernel, Spec)> {
    specified(n, repeat, outputs, |with_outputs| build(n, collective, body, with_outputs))
}

/// The kernel (or program) `make` builds, with outputs when asked, and its specification
/// for `outputs`, as [`checked`] says.
pub fn specified(
    n: usize,
    repeat: u32,
    outputs: Outputs,
    make: impl Fn(bool) -> Option<Kernel>,
) -> Option<(Kernel, Spec)> {
    let none = Spec { notation: Notation::Plain, outputs: vec![] };
    if let Outputs::None = outputs {
        return Some((make(false)?, none));
    }
    let kernel = make(true)?;
    let (mut spec, _) = lockstep_spec(&kernel, &Mesh::ring(n).ok()?, repeat).ok()?;
    let differing = spec.outputs.iter().position(|e| e.value != spec.outputs[0].value);
    if let (Outputs::Exchanged, Some(other)) = (outputs, differing) {
        let first = spec.outputs[0].value.clone();
        spec.outputs[0].value = spec.outputs[other].value.clone();
        spec.outputs[other].value = first;
    }
    Some((kernel, spec))
}

fn build(n: usize, collective: bool, body: &[S], outputs: bool) -> Option<Kernel> {
    trace("random", |k| {
        if collective {
            k.collective_id(0);
        }
        let bufs = buffers(k, outputs);
        let e = semaphores(k, n, bufs);
        for s in body {
            emit(k, &e, s);
        }
        if outputs {
            copy_out(k, &e);
        }
    })
    .ok()
}

/// The two buffers of a random kernel: `a`, an input, and `b`, an output when `outputs`,
/// else scratch. VMEM, which loads and stores may touch (Mosaic refuses them on HBM refs).
fn buffers(k: &KernelBuilder, outputs: bool) -> Vec<Ref<'_>> {
    let b = if outputs { k.output("b", MemorySpace::Vmem, &[2]) } else { k.scratch("b", MemorySpace::Vmem, &[2]) };
    vec![k.input("a", MemorySpace::Vmem, &[2]), b]
}

/// The semaphores of a random kernel, declared where `k` is (a kernel, a launch).
fn semaphores<'k>(k: &'k KernelBuilder, n: usize, bufs: Vec<Ref<'k>>) -> Env<'k> {
    Env {
        n,
        bufs,
        sems: vec![k.regular_semaphore("s0"), k.regular_semaphore("s1")],
        grid: k.regular_semaphores("grid", 4),
        send: k.dma_semaphore("send"),
        recv: k.dma_semaphore("recv"),
        local: k.dma_semaphore("local"),
    }
}

/// Every device copies its first output cell into cell `d % 2` of memory all devices
/// share: shared HBM is reached by DMAs only, so by a local copy, waited for.
fn copy_out(k: &KernelBuilder, e: &Env<'_>) {
    let shared = k.shared_hbm("o", BufferRole::Output, &[2]);
    let out_sem = k.dma_semaphore("out");
    let dma = k.make_async_copy(&e.bufs[1].at(0), &shared.at(k.axis_index("x").floor_mod(2)), &out_sem);
    dma.start();
    dma.wait();
}

/// How a random program of several kernels shares its semaphores.
#[derive(Clone, Copy, Debug)]
pub enum Sharing {
    /// Declared by the program, outside every kernel: each kernel that uses one takes it.
    Program,
    /// Declared by the first kernel, which hands every one out to the later kernels (a
    /// split-phase collective's `pltpu.SEMAPHORE`-space outputs).
    HandedOut,
}

/// A program of several kernels: `body` cut before each statement index of `cuts`
/// (ascending, each in `1..body.len()`), each piece one `pallas_call` (with a collective
/// id if `collective`); the last one copies the outputs out when `outputs`. `None` when
/// the DSL refuses it.
pub fn program(
    n: usize,
    collective: bool,
    body: &[S],
    cuts: &[usize],
    sharing: Sharing,
    outputs: bool,
) -> Option<Kernel> {
    trace("random_program", |k| {
        let bufs = buffers(k, outputs);
        let mut bounds = vec![0];
        bounds.extend(cuts.iter().copied().filter(|&c| 0 < c && c < body.len()));
        bounds.push(body.len());
        bounds.dedup();
        // The program's semaphores, or (`None`) the first kernel's, made and handed out there.
        let mut env = match sharing {
            Sharing::Program => Some(semaphores(k, n, bufs.clone())),
            Sharing::HandedOut => None,
        };
        let pieces = bounds.len() - 1;
        for (i, w) in bounds.windows(2).enumerate() {
            env = Some(k.launch(&format!("kernel{i}"), |k| {
                if collective {
                    k.collective_id(0);
                }
                let e = env.take().unwrap_or_else(|| {
                    let e = semaphores(k, n, bufs.clone());
                    for sem in e.sems.iter().chain([&e.grid, &e.send, &e.recv, &e.local]) {
                        k.hand_out(sem);
                    }
                    e
                });
                for s in &body[w[0]..w[1]] {
                    emit(k, &e, s);
                }
                if outputs && i + 1 == pieces {
                    copy_out(k, &e);
                }
                e
            }));
        }
    })
    .ok()
}
