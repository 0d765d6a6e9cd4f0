//! Randomised differential test of the reductions: small random kernels (signals, waits,
//! local and remote copies, computations, branches on the device id, with and without a
//! collective id) are explored in every mode (`modes.rs`: with and without
//! partial-order reduction and rotation symmetry, on one and two threads), and the
//! verdicts, outcomes and counterexamples must agree.

use crate::modes;

use proptest::prelude::*;
use semcheck::checker::Budget;
use semcheck::model::dsl::{trace, KernelBuilder, Ref, Sem};
use semcheck::model::expr::Expr;
use semcheck::model::ir::MemorySpace;
use semcheck::model::{compile, Mesh, Notation, Spec};

#[derive(Clone, Debug)]
enum Dir {
    Left,
    Right,
    Own,
}

#[derive(Clone, Debug)]
enum S {
    Signal { sem: usize, dir: Dir, inc: i64 },
    Wait { sem: usize, n: i64 },
    RemoteStart { src: usize, dst: usize, dir: Dir },
    RemoteWaitSend { src: usize, dst: usize, dir: Dir },
    RemoteWaitRecv { src: usize, dst: usize, dir: Dir },
    LocalCopy { src: usize, dst: usize, wait: bool },
    LocalWait { src: usize, dst: usize },
    Add { dst: usize, src: usize },
    Zero { dst: usize },
    OnlyOnDevice0(Box<S>),
}

fn dir() -> impl Strategy<Value = Dir> {
    prop_oneof![Just(Dir::Left), Just(Dir::Right), Just(Dir::Own)]
}

fn leaf() -> impl Strategy<Value = S> {
    prop_oneof![
        (0..2usize, dir(), 1..3i64).prop_map(|(sem, dir, inc)| S::Signal { sem, dir, inc }),
        (0..2usize, 1..3i64).prop_map(|(sem, n)| S::Wait { sem, n }),
        (0..2usize, 0..2usize, dir()).prop_map(|(src, dst, dir)| S::RemoteStart { src, dst, dir }),
        (0..2usize, 0..2usize, dir()).prop_map(|(src, dst, dir)| S::RemoteWaitSend { src, dst, dir }),
        (0..2usize, 0..2usize, dir()).prop_map(|(src, dst, dir)| S::RemoteWaitRecv { src, dst, dir }),
        (0..2usize, 0..2usize, any::<bool>()).prop_map(|(src, dst, wait)| S::LocalCopy { src, dst, wait }),
        (0..2usize, 0..2usize).prop_map(|(src, dst)| S::LocalWait { src, dst }),
        (0..2usize, 0..2usize).prop_map(|(dst, src)| S::Add { dst, src }),
        (0..2usize).prop_map(|dst| S::Zero { dst }),
    ]
}

fn stmt() -> impl Strategy<Value = S> {
    prop_oneof![4 => leaf(), 1 => leaf().prop_map(|s| S::OnlyOnDevice0(Box::new(s)))]
}

struct Env<'k> {
    n: usize,
    bufs: Vec<Ref<'k>>,
    sems: Vec<Sem<'k>>,
    send: Sem<'k>,
    recv: Sem<'k>,
    local: Sem<'k>,
}

fn target(k: &KernelBuilder, n: usize, d: &Dir) -> Option<Expr> {
    let me = k.axis_index("x");
    match d {
        Dir::Left => Some((me - 1 + n as i64) % n),
        Dir::Right => Some((me + 1) % n),
        Dir::Own => None,
    }
}

fn emit<'k>(k: &'k KernelBuilder, e: &Env<'k>, s: &S) {
    let remote = |src: usize, dst: usize, dir: &Dir| {
        let t = target(k, e.n, dir).unwrap_or_else(|| k.axis_index("x"));
        k.make_async_remote_copy(&e.bufs[src], &e.bufs[dst], &e.send, &e.recv, t)
    };
    match s {
        S::Signal { sem, dir, inc } => k.semaphore_signal(&e.sems[*sem], *inc, target(k, e.n, dir)),
        S::Wait { sem, n } => k.semaphore_wait(&e.sems[*sem], *n),
        S::RemoteStart { src, dst, dir } => remote(*src, *dst, dir).start(),
        S::RemoteWaitSend { src, dst, dir } => remote(*src, *dst, dir).wait_send(),
        S::RemoteWaitRecv { src, dst, dir } => remote(*src, *dst, dir).wait_recv(),
        S::LocalCopy { src, dst, wait } => {
            let dma = k.make_async_copy(&e.bufs[*src], &e.bufs[*dst], &e.local);
            dma.start();
            if *wait {
                dma.wait();
            }
        }
        S::LocalWait { src, dst } => k.make_async_copy(&e.bufs[*src], &e.bufs[*dst], &e.local).wait(),
        S::Add { dst, src } => {
            let mut d = e.bufs[*dst].clone();
            d += &e.bufs[*src];
        }
        S::Zero { dst } => e.bufs[*dst].assign(semcheck::model::ir::Rhs::Zeros),
        S::OnlyOnDevice0(inner) => k.when(k.axis_index("x").equals(0), |k| emit(k, e, inner)),
    }
}

fn agree(n: usize, collective: bool, repeat: u32, body: &[S]) -> Result<(), String> {
    let kernel = trace("random", |k| {
        if collective {
            k.collective_id(0);
        }
        let e = Env {
            n,
            bufs: vec![k.input("a", MemorySpace::Hbm, &[]), k.scratch("b", MemorySpace::Hbm, &[])],
            sems: vec![k.regular_semaphore("s0"), k.regular_semaphore("s1")],
            send: k.dma_semaphore("send"),
            recv: k.dma_semaphore("recv"),
            local: k.dma_semaphore("local"),
        };
        for s in body {
            emit(k, &e, s);
        }
    });
    let Ok(kernel) = kernel else { return Ok(()) };
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let Ok(program) = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, repeat) else { return Ok(()) };
    let budget = Budget { max_states: Some(200_000), ..Budget::default() };
    modes::agree(&program, budget).map(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn reduction_never_changes_a_verdict(
        n in 2..4usize,
        collective in any::<bool>(),
        repeat in 1..3u32,
        body in prop::collection::vec(stmt(), 1..9),
    ) {
        if let Err(e) = agree(n, collective, repeat, &body) {
            prop_assert!(false, "{}", e);
        }
    }
}
