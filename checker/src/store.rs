//! The visited-state store: every distinct state once, in discovery order, with the event
//! that first reached it.

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Distinct states, packed end to end in one arena, with parent links.
pub(crate) struct Store {
    words: Vec<u32>,
    ends: Vec<u64>,
    parents: Vec<u32>,
    events: Vec<u32>,
    hashes: Vec<u64>,
    table: HashTable<u32>,
}

/// The id of the parent of the initial state.
pub(crate) const NO_PARENT: u32 = u32::MAX;

fn hash(state: &[u32]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    for w in state {
        h.write_u32(*w);
    }
    h.finish()
}

impl Store {
    pub(crate) fn new() -> Store {
        Store {
            words: Vec::new(),
            ends: Vec::new(),
            parents: Vec::new(),
            events: Vec::new(),
            hashes: Vec::new(),
            table: HashTable::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn get(&self, id: u32) -> &[u32] {
        let end = self.ends[id as usize] as usize;
        let start = if id == 0 { 0 } else { self.ends[id as usize - 1] as usize };
        &self.words[start..end]
    }

    /// The parent id and the encoded event that first reached `id`.
    pub(crate) fn parent(&self, id: u32) -> (u32, u32) {
        (self.parents[id as usize], self.events[id as usize])
    }

    /// Inserts `state` if it is new; returns its id when it was.
    pub(crate) fn insert(&mut self, state: &[u32], parent: u32, event: u32) -> Option<u32> {
        let h = hash(state);
        let Store { words, ends, table, .. } = self;
        let slice = |id: u32| {
            let end = ends[id as usize] as usize;
            let start = if id == 0 { 0 } else { ends[id as usize - 1] as usize };
            &words[start..end]
        };
        if table.find(h, |&id| slice(id) == state).is_some() {
            return None;
        }
        let id = ends.len() as u32;
        words.extend_from_slice(state);
        ends.push(words.len() as u64);
        self.parents.push(parent);
        self.events.push(event);
        self.hashes.push(h);
        let Store { hashes, table, .. } = self;
        table.insert_unique(h, id, |&other| hashes[other as usize]);
        Some(id)
    }

    /// Bytes held by the store's tables.
    pub(crate) fn memory_bytes(&self) -> u64 {
        (self.words.capacity() * 4
            + self.ends.capacity() * 8
            + self.parents.capacity() * 4
            + self.events.capacity() * 4
            + self.hashes.capacity() * 8
            + self.table.capacity() * (4 + 1)) as u64
    }
}
