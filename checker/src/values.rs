//! One value table for every worker thread of the explorer.
//!
//! Value ids are part of the packed state, so every thread must give a value the same id.
//! The step function and the canonicaliser take a `&mut ValueTable` and intern values as
//! they go, and new values are rare once exploration is under way (every value a kernel
//! computes is a partial sum of its inputs). So each worker runs on its own replica of the
//! shared table, and only a call that interned something takes the shared table's lock:
//! if no other worker added values meanwhile, the new values join the shared table with
//! the ids the replica gave them; otherwise the replica forgets them, catches up with the
//! shared table and runs the call again (the calls are pure apart from interning).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use semcheck_model::ValueTable;

/// The table every worker's replica follows.
pub(crate) struct SharedValues {
    table: Mutex<ValueTable>,
    /// The table's length, readable without the lock.
    len: AtomicUsize,
}

/// One worker's replica.
pub(crate) struct LocalValues<'s> {
    shared: &'s SharedValues,
    table: ValueTable,
}

impl SharedValues {
    /// A shared table starting from `table`.
    pub(crate) fn new(table: ValueTable) -> SharedValues {
        SharedValues { len: AtomicUsize::new(table.len()), table: Mutex::new(table) }
    }

    /// A replica for one worker.
    pub(crate) fn replica(&self) -> LocalValues<'_> {
        LocalValues { shared: self, table: self.table.lock().expect("a worker panicked").clone() }
    }
}

impl LocalValues<'_> {
    /// Runs `f`, which must be pure apart from interning values, with a table whose ids
    /// agree with every other worker's.
    pub(crate) fn with<R>(&mut self, mut f: impl FnMut(&mut ValueTable) -> R) -> R {
        let before = self.table.len();
        let r = f(&mut self.table);
        if self.table.len() == before {
            return r;
        }
        let mut shared = self.shared.table.lock().expect("a worker panicked");
        if shared.len() == before {
            shared.catch_up(&self.table);
            self.shared.len.store(shared.len(), Ordering::Release);
            return r;
        }
        self.table.truncate(before);
        self.table.catch_up(&shared);
        let r = f(&mut self.table);
        shared.catch_up(&self.table);
        self.shared.len.store(shared.len(), Ordering::Release);
        r
    }

    /// Catches up with the values other workers added: a state stored by another worker
    /// may hold them. Call it before expanding states stored since the last call.
    pub(crate) fn refresh(&mut self) {
        if self.shared.len.load(Ordering::Acquire) > self.table.len() {
            self.table.catch_up(&self.shared.table.lock().expect("a worker panicked"));
        }
    }
}
