//! Why a named event of a trace cannot happen where the trace puts it: the words of
//! "no longer reproduces: event 7 is not possible any more, because ...".

use semcheck_model::program::Op;
use semcheck_model::{DeviceId, Program};

use super::names::Namer;

/// The suffixes that end the operation inside a DMA event's name (`dma [OP] sent: ...`).
const DMA_SUFFIXES: [&str; 4] = ["] sent: ", "] received on ", "] done: ", "] cell "];

/// Why the event named `wanted` is not enabled in `state`, in words: the device's next
/// operation now, what it waits for, or that the DMA is not in flight.
pub fn why_not(namer: &Namer<'_>, state: &[u32], wanted: &str) -> String {
    let program = namer.program();
    if let Some(rest) = wanted.strip_prefix("dma [") {
        let end = DMA_SUFFIXES.iter().filter_map(|s| rest.rfind(s)).max().unwrap_or(rest.len());
        let op = &rest[..end];
        let in_flight = program.dmas(state).any(|r| namer.op(r.key.issuer, r.key.pc) == op);
        return if in_flight {
            format!("the DMA `{op}` is in flight but this event of it cannot happen there")
        } else {
            format!("no DMA `{op}` is in flight there (not started, already landed, or no longer in the kernel)")
        };
    }
    let Some(d) = device_of_name(program, wanted) else {
        return "it names no device of this mesh".to_string();
    };
    let dp = &program.devices[d.index()];
    let pc = program.pc(state, d);
    if pc as usize >= dp.len() {
        return format!("{d} has already finished");
    }
    let next = namer.op(d, pc);
    if next == wanted {
        return match dp.ops[pc as usize] {
            Op::Wait { sem, amount } => format!(
                "{d} is at that operation but cannot run it: it waits for {} >= {amount}, which is {}",
                program.sem_full_name(sem),
                program.sem_value(state, sem)
            ),
            Op::EntryBarrier => format!("{d} waits at the entry barrier for a device that has not entered"),
            _ => format!("{d} is at that operation but cannot run it there"),
        };
    }
    let elsewhere = (0..dp.len() as u32).find(|&q| namer.op(d, q) == wanted);
    match elsewhere {
        Some(q) if q > pc => format!("{d}'s next operation there is `{next}`; the one named comes later"),
        Some(_) => format!("{d}'s next operation there is `{next}`; the one named came earlier"),
        None => format!("{d}'s next operation there is `{next}`, and {d} has no operation so named any more"),
    }
}

/// The device a step's name starts with (`d3 (0) wait ...`).
fn device_of_name(program: &Program, name: &str) -> Option<DeviceId> {
    let digits: String = name.strip_prefix('d')?.chars().take_while(char::is_ascii_digit).collect();
    let n: usize = digits.parse().ok()?;
    (n < program.num_devices()).then_some(DeviceId(n as u16))
}
