//! A sequential visited-state store for the searches that run on one thread over states
//! of their own layout (the window method, the focused confirmation search): every
//! distinct state once, in discovery order, with the event that first reached it. (The
//! explorer's store, sharded and collapse-compressed for the program's layout, is
//! [`crate::store`]; both encode states the same way.)
//!
//! States are stored compressed: each word is XORed with the same word of the initial
//! state (so unchanged inputs, idle semaphores and pcs near the start become 0), runs of
//! zeros become a `0x00` byte and a run length, and other words are LEB128 varints (whose
//! first byte is never `0x00`). The encoding is canonical, so equal states have equal
//! bytes, which are what is hashed and compared. Bytes live in fixed-size chunks, so the
//! store grows without the copy spikes of one doubling buffer.

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;

use crate::store::{decode, encode};
use rustc_hash::FxBuildHasher;

/// Bytes per arena chunk.
const CHUNK: usize = 16 << 20;

/// Distinct states, compressed, with parent links.
pub(crate) struct Store {
    template: Vec<u32>,
    chunks: Vec<Vec<u8>>,
    /// Per state: `chunk << 32 | offset`.
    locs: Vec<u64>,
    lens: Vec<u32>,
    parents: Vec<u32>,
    events: Vec<u32>,
    hashes: Vec<u64>,
    table: HashTable<u32>,
    scratch: Vec<u8>,
}

/// The id of the parent of the initial state.
pub(crate) const NO_PARENT: u32 = u32::MAX;

fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write(bytes);
    h.finish()
}

impl Store {
    /// A store whose states are encoded against `template` (the initial state).
    pub(crate) fn new(template: &[u32]) -> Store {
        Store {
            template: template.to_vec(),
            chunks: Vec::new(),
            locs: Vec::new(),
            lens: Vec::new(),
            parents: Vec::new(),
            events: Vec::new(),
            hashes: Vec::new(),
            table: HashTable::new(),
            scratch: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.locs.len()
    }

    fn bytes(&self, id: u32) -> &[u8] {
        let loc = self.locs[id as usize];
        let (chunk, off) = ((loc >> 32) as usize, (loc & 0xffff_ffff) as usize);
        &self.chunks[chunk][off..off + self.lens[id as usize] as usize]
    }

    /// Decodes state `id` into `out`.
    pub(crate) fn get(&self, id: u32, out: &mut Vec<u32>) {
        out.clear();
        decode(self.bytes(id), &self.template, out);
    }

    /// The encoded events of the path that first reached `id`, from the initial state.
    pub(crate) fn path_to(&self, id: u32) -> Vec<u32> {
        let mut events = Vec::new();
        let mut cur = id;
        while self.parents[cur as usize] != NO_PARENT {
            events.push(self.events[cur as usize]);
            cur = self.parents[cur as usize];
        }
        events.reverse();
        events
    }

    /// Inserts `state` if it is new; returns its id when it was.
    pub(crate) fn insert(&mut self, state: &[u32], parent: u32, event: u32) -> Option<u32> {
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        encode(state, &self.template, &mut bytes);
        let h = hash(&bytes);
        let found = self.table.find(h, |&id| self.bytes(id) == bytes.as_slice()).is_some();
        let result = if found {
            None
        } else {
            let id = self.locs.len() as u32;
            if self.chunks.last().is_none_or(|c| c.len() + bytes.len() > c.capacity()) {
                self.chunks.push(Vec::with_capacity(CHUNK.max(bytes.len())));
            }
            let chunk = self.chunks.len() - 1;
            let off = self.chunks[chunk].len();
            self.chunks[chunk].extend_from_slice(&bytes);
            self.locs.push(((chunk as u64) << 32) | off as u64);
            self.lens.push(bytes.len() as u32);
            self.parents.push(parent);
            self.events.push(event);
            self.hashes.push(h);
            let Store { hashes, table, .. } = self;
            table.insert_unique(h, id, |&other| hashes[other as usize]);
            Some(id)
        };
        self.scratch = bytes;
        result
    }

    /// Bytes held by the store's tables (chunk bytes as written: a chunk's unused
    /// capacity is never touched, so it takes no memory).
    pub(crate) fn memory_bytes(&self) -> u64 {
        // What the vectors hold (their unused capacity is never touched); the hash table's
        // whole capacity.
        let per_state = self.locs.len() * 8
            + self.lens.len() * 4
            + self.parents.len() * 4
            + self.events.len() * 4
            + self.hashes.len() * 8
            + self.table.capacity() * (4 + 1);
        (self.chunks.iter().map(Vec::len).sum::<usize>() + per_state) as u64
    }
}
