//! Human-readable descriptions of events, in the kernel's own names.

use crate::event::Event;
use crate::program::{Op, Program};

impl Program {
    /// Describes `event` as it happens in `state`, e.g.
    /// `d1 (0) start remote_copy x_ref -> d2 hbm_buf[0] (remote_send_sem, remote_recv_sem)` or
    /// `dma of d1 (0) start remote_copy ...: received on d2 (remote_recv_sem += 4096)`.
    pub fn describe_event(&self, state: &[u32], event: Event) -> String {
        match event {
            Event::Step(d) => self.describe_op(d, self.pc(state, d)),
            Event::Sent(k) | Event::Received(k) | Event::Done(k) => {
                let what = self.describe_op(k.issuer, k.pc);
                match (event, self.dma_op(k)) {
                    (Event::Sent(_), Op::RemoteDma { send_sem, bytes, .. }) => {
                        format!("dma [{what}] sent: {} += {bytes}", self.sem_full_name(send_sem))
                    }
                    (Event::Received(_), Op::RemoteDma { recv_sem, bytes, target, .. }) => {
                        format!("dma [{what}] received on {target}: {} += {bytes}", self.sem_full_name(recv_sem))
                    }
                    (_, Op::LocalDma { sem, bytes, .. }) => {
                        format!("dma [{what}] done: {} += {bytes}", self.sem_full_name(sem))
                    }
                    _ => format!("dma [{what}] {event}"),
                }
            }
        }
    }
}
