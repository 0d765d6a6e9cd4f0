//! The one line of the barriers and handshakes that only order the rest.

use std::collections::BTreeSet;

use semcheck_model::program::Op;
use semcheck_model::DeviceId;

use super::slice::{Core, Slicer};
use super::{Point, Role};

impl Slicer<'_> {
    /// The one line of the barriers and handshakes summarised: every entry barrier of the
    /// run (when one was summarised), and every handshake wait on a semaphore of the
    /// handshakes summarised or passed before them.
    pub(super) fn summary(&self, core: &Core) -> Option<Point> {
        let &last = core.summarised.iter().next_back()?;
        let end = self.breaking().unwrap_or(self.run.events.len());
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut entry = false;
        for i in 0..=last {
            match self.op_at(i) {
                Some((_, _, Op::Wait { sem, .. })) if core.summarised.contains(&i) || self.handshake(i) => {
                    names.insert(self.program.sem_name(sem));
                }
                Some((_, _, Op::EntryBarrier)) if core.summarised.contains(&i) => entry = true,
                _ => {}
            }
        }
        let mut covered: Vec<usize> = Vec::new();
        let mut devices: BTreeSet<DeviceId> = BTreeSet::new();
        for i in (0..end).filter(|i| !core.points.contains_key(i)) {
            match self.op_at(i) {
                Some((d, _, Op::EntryBarrier)) if entry => {
                    devices.insert(d);
                    covered.push(i);
                }
                Some((d, _, Op::Wait { sem, .. }))
                    if names.contains(&self.program.sem_name(sem)) && self.handshake(i) =>
                {
                    devices.insert(d);
                    covered.push(i);
                    covered.extend(self.satisfiers(i));
                }
                _ => {}
            }
        }
        // A summarised wait shown as the breaking event's gate is passed too.
        for &w in &core.summarised {
            if let Some((d, _, Op::Wait { .. } | Op::EntryBarrier)) = self.op_at(w) {
                devices.insert(d);
            }
        }
        covered.sort_unstable();
        covered.dedup();
        let (&first, &last) = (covered.first()?, covered.last()?);
        let names: Vec<String> = names.into_iter().collect();
        let all = devices.len() == self.program.num_devices();
        let who = if all {
            "every device".to_string()
        } else {
            devices.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        };
        let its = if all || devices.len() == 1 { "its" } else { "their" };
        let what = match (entry, names.is_empty()) {
            (true, true) => "the entry barrier".to_string(),
            (false, _) => format!("{its} waits on {}", names.join(", ")),
            (true, false) => format!("the entry barrier and {its} waits on {}", names.join(", ")),
        };
        let events =
            if first == last { format!("event {}", last + 1) } else { format!("events {}-{}", first + 1, last + 1) };
        Some(Point {
            index: Some(last),
            device: None,
            role: Role::Summary,
            text: format!("{who} passed {what} ({events})"),
            note: Some(format!("{} events that only order the rest", covered.len())),
            wrong: false,
            loc: None,
        })
    }
}
