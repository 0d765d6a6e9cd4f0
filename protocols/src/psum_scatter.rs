//! `lax.psum_scatter` (seed 000 §4): bidirectional reduce-scatter; top halves travel
//! left, bottom halves right, partial sums accumulate on the way.
//!
//! **What the checker finds.** The official kernel is proved for every N `check all` tries
//! (2..8; `semcheck bench` goes further). For the mutants:
//!
//! * `no-capacity` (open question): proved at every size reached (N = 2..8). Every phase
//!   ends with `send_*.wait()`, whose `wait_recv` waits for the data the neighbour it writes
//!   to sends in the *same* phase, after finishing the phase that reads the slot being
//!   overwritten next. The receive semaphores already give the back-pressure that the
//!   capacity semaphores were added for; they are redundant in this kernel (they would not
//!   be in a one-directional one: see psum's `no-capacity`).
//! * `no-final-drain` (N = 2): without the last `semaphore_wait(left_capacity_sem, 1)` the
//!   neighbour's final capacity signal is never consumed. The shortest schedule has it
//!   arrive after the device left the kernel (`outside-kernel`); arriving earlier, it is a
//!   `semaphore-leak` at exit. Both are the one mechanism.
//! * `no-barrier` (N = 2): `init_left` lands in a device that has not entered.

use semcheck_model::dsl::{ds, trace, zeros_like, KernelBuilder, Sem};
use semcheck_model::ir::{Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Notation, Rule, Spec};

use crate::barrier::{neighbor_barrier, Barrier, NO_BARRIER};
use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "psum_scatter",
    "bidirectional ring reduce-scatter: each device ends with its own block summed over all devices",
    "seed 000 §4 reduce_scatter_kernel with neighbor_barrier(double_barrier=True)",
    MeshKind::Ring,
    &[
        Mutant {
            name: "no-capacity",
            change: Change::NoCapacity,
            description:
                "drop both capacity semaphores and the final drains (an open question: the checker answers it)",
            expected: &[],
            repeat: 1,
            manifests_from: None,
        },
        NO_BARRIER,
        Mutant {
            name: "no-final-drain",
            change: Change::NoFinalDrain,
            description: "drop the last semaphore_wait(left_capacity_sem, 1): a semaphore is left non-zero at exit",
            expected: &[Rule::SemaphoreLeak, Rule::OutsideKernel],
            repeat: 1,
            manifests_from: Some(2),
        },
    ],
    kernel,
    spec,
);

const LEFT: i64 = 0;
const RIGHT: i64 = 1;

struct Variant {
    capacity: bool,
    barrier: Barrier,
    final_drain: bool,
}

fn signal(k: &KernelBuilder, num_devices: usize, direction: i64, sem: &Sem<'_>) {
    let my_id = k.axis_index("x");
    let target = if direction == LEFT {
        (my_id - 1 + num_devices as i64) % num_devices
    } else {
        (my_id + 1 + num_devices as i64) % num_devices
    };
    k.semaphore_signal(sem, 1, target);
}

fn kernel(num_devices: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    if let Some(c) = change.filter(|c| !matches!(c, Change::NoCapacity | Change::NoBarrier | Change::NoFinalDrain)) {
        return Err(unsupported("psum_scatter", c));
    }
    let v = Variant {
        capacity: change != Some(Change::NoCapacity),
        barrier: Barrier::for_change(change),
        final_drain: !matches!(change, Some(Change::NoFinalDrain | Change::NoCapacity)),
    };
    let n = num_devices as i64;
    let modn = move |x: semcheck_model::expr::Expr| (x + n) % n;
    trace("psum_scatter", |k| {
        k.grid(&[num_devices, 2]);
        v.barrier.compiler_params(k, 0);
        let x_ref = k.input("x_ref", MemorySpace::Vmem, &[num_devices, 2]);
        let o_ref = k.output("o_ref", MemorySpace::Vmem, &[2]);
        let hbm_buf = k.output("hbm_buf", MemorySpace::Hbm, &[2, 2]);
        let local_copy_sem = k.dma_semaphore("local_copy_sem");
        let left_recv_sem = k.dma_semaphore("left_recv_sem");
        let left_send_sem = k.dma_semaphore("left_send_sem");
        let right_recv_sem = k.dma_semaphore("right_recv_sem");
        let right_send_sem = k.dma_semaphore("right_send_sem");
        let left_capacity_sem = k.regular_semaphore("left_capacity_sem");
        let right_capacity_sem = k.regular_semaphore("right_capacity_sem");
        let mut accum = k.scratch("accum", MemorySpace::Vmem, &[]);

        let step = k.program_id(0);
        let phase = k.program_id(1);

        let is_first = step.clone().equals(0).and(phase.clone().equals(LEFT));
        let is_last_step = step.clone().equals(k.num_programs(0) - 1);

        let working = step.clone() % 2;
        let receiving = 1 - &working;

        let my_id = k.axis_index("x");
        let right = modn(&my_id + 1);
        let left = modn(&my_id - 1);

        let left_block = modn(&my_id + &step + 1);
        let right_block = modn(&my_id - &step - 1);

        // Cells are half blocks: `top`/`bottom` are one cell of the row dimension.
        let top = || ds(0, 1);
        let bottom = || ds(1, 1);
        let current_half = || ds(phase.clone(), 1);

        let init_left = k.make_async_remote_copy(
            &x_ref.at((&my_id, top())),
            &hbm_buf.at((&working, top())),
            &left_send_sem,
            &left_recv_sem,
            &left,
        );
        let init_right = k.make_async_remote_copy(
            &x_ref.at((&my_id, bottom())),
            &hbm_buf.at((&working, bottom())),
            &right_send_sem,
            &right_recv_sem,
            &right,
        );
        let send_left = k.make_async_remote_copy(
            &hbm_buf.at((&working, top())),
            &hbm_buf.at((&receiving, top())),
            &left_send_sem,
            &left_recv_sem,
            &left,
        );
        let send_right = k.make_async_remote_copy(
            &hbm_buf.at((&receiving, bottom())),
            &hbm_buf.at((&working, bottom())),
            &right_send_sem,
            &right_recv_sem,
            &right,
        );

        k.when(is_first.clone(), |k| {
            neighbor_barrier(k, &left, &right, v.barrier);
            o_ref.assign(zeros_like(&o_ref));
            accum.assign(zeros_like(&accum));

            init_left.start();
            init_left.wait();
            init_right.start();

            if v.capacity {
                signal(k, num_devices, LEFT, &right_capacity_sem);
                signal(k, num_devices, RIGHT, &left_capacity_sem);
            }
        });

        k.when(!&is_first, |k| {
            k.when(phase.clone().equals(LEFT), |k| {
                if v.capacity {
                    k.semaphore_wait(&right_capacity_sem, 1);
                }
                send_right.start();
            });
            k.when(phase.clone().equals(RIGHT), |k| {
                if v.capacity {
                    k.semaphore_wait(&left_capacity_sem, 1);
                }
                send_left.start();
            });
        });

        let local = k.make_async_copy(&hbm_buf.at((&working, current_half())), &accum, &local_copy_sem);
        local.start();
        local.wait();

        k.when(!&is_last_step, |k| {
            k.when(phase.clone().equals(LEFT), |_| {
                accum += x_ref.at((&left_block, top()));
            });
            k.when(phase.clone().equals(RIGHT), |_| {
                accum += x_ref.at((&right_block, bottom()));
            });
        });

        let local = k.make_async_copy(&accum, &hbm_buf.at((&working, current_half())), &local_copy_sem);
        local.start();
        local.wait();

        k.when(is_first.clone(), |_| {
            init_right.wait();
        });

        k.when(!&is_first, |k| {
            k.when(phase.clone().equals(LEFT), |k| {
                send_right.wait();
                if v.capacity {
                    signal(k, num_devices, LEFT, &right_capacity_sem);
                }
            });
            k.when(phase.clone().equals(RIGHT), |k| {
                send_left.wait();
                if v.capacity {
                    signal(k, num_devices, RIGHT, &left_capacity_sem);
                }
            });
        });

        k.when(is_last_step.clone(), |k| {
            k.when(phase.clone().equals(LEFT), |k| {
                o_ref.at(top()).assign(&accum);
                if v.capacity {
                    k.semaphore_wait(&right_capacity_sem, 1);
                }
            });
            k.when(phase.clone().equals(RIGHT), |k| {
                o_ref.at(bottom()).assign(&accum);
                if v.final_drain {
                    k.semaphore_wait(&left_capacity_sem, 1);
                }
            });
        });
    })
}

fn spec(n: usize) -> Spec {
    let mut outputs = Vec::new();
    for d in 0..n {
        for half in 0..2 {
            let contributions = (0..n).map(|e| atom(e, d, half)).collect();
            outputs.push(expect(d, "o_ref", &[half], Expected::Sum(contributions)));
        }
    }
    Spec { notation: Notation::BlockHalves { devices: n as u16 }, outputs }
}
