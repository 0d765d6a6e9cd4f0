//! The visited-state store: every distinct state once, in discovery order, with the event
//! that first reached it.
//!
//! States are stored compressed: each word is XORed with the same word of the initial
//! state (so unchanged inputs, idle semaphores and pcs near the start become 0), runs of
//! zeros become a `0x00` byte and a run length, and other words are LEB128 varints (whose
//! first byte is never `0x00`). The encoding is canonical, so equal states have equal
//! bytes, which are what is hashed and compared. Bytes live in fixed-size chunks, so the
//! store grows without the copy spikes of one doubling buffer.

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
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

fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_varint(bytes: &[u8], i: &mut usize) -> u32 {
    let mut v = 0u32;
    let mut shift = 0;
    loop {
        let b = bytes[*i];
        *i += 1;
        v |= ((b & 0x7f) as u32) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// Encodes `state` against `template`.
pub(crate) fn encode(state: &[u32], template: &[u32], out: &mut Vec<u8>) {
    out.clear();
    let word = |i: usize| state[i] ^ template.get(i).copied().unwrap_or(0);
    let mut i = 0;
    while i < state.len() {
        let w = word(i);
        if w == 0 {
            let start = i;
            while i < state.len() && word(i) == 0 {
                i += 1;
            }
            out.push(0);
            push_varint(out, (i - start - 1) as u32);
        } else {
            push_varint(out, w);
            i += 1;
        }
    }
}

/// Decodes bytes made by [`encode`] into `out`.
pub(crate) fn decode(bytes: &[u8], template: &[u32], out: &mut Vec<u32>) {
    out.clear();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0 {
            i += 1;
            let run = read_varint(bytes, &mut i) as usize + 1;
            out.extend(std::iter::repeat_n(0, run));
        } else {
            out.push(read_varint(bytes, &mut i));
        }
    }
    for (w, t) in out.iter_mut().zip(template) {
        *w ^= t;
    }
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
        decode(self.bytes(id), &self.template, out);
    }

    /// The parent id and the encoded event that first reached `id`.
    pub(crate) fn parent(&self, id: u32) -> (u32, u32) {
        (self.parents[id as usize], self.events[id as usize])
    }

    /// Inserts `state` if it is new; returns its id when it was.
    pub(crate) fn insert(&mut self, state: &[u32], parent: u32, event: u32) -> Option<u32> {
        let mut bytes = std::mem::take(&mut self.scratch);
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
        let per_state = self.locs.capacity() * 8
            + self.lens.capacity() * 4
            + self.parents.capacity() * 4
            + self.events.capacity() * 4
            + self.hashes.capacity() * 8
            + self.table.capacity() * (4 + 1);
        (self.chunks.iter().map(Vec::len).sum::<usize>() + per_state) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_is_canonical() {
        let template = [3, 0, 0, 7, 9];
        for state in [
            vec![3, 0, 0, 7, 9],
            vec![4, 0, 1, 7, 9, 0x0010_0004, 5],
            vec![u32::MAX, 128, 0, 0, 0, 0, 0, 16384],
            vec![],
            vec![0; 300],
        ] {
            let mut bytes = Vec::new();
            encode(&state, &template, &mut bytes);
            let mut back = Vec::new();
            decode(&bytes, &template, &mut back);
            assert_eq!(back, state);
        }
        let mut a = Vec::new();
        encode(&[3, 0, 0, 7, 9], &template, &mut a);
        assert_eq!(a, vec![0, 4], "an unchanged state is one zero run");
    }

    #[test]
    fn store_deduplicates() {
        let mut s = Store::new(&[1, 2, 3]);
        assert_eq!(s.insert(&[1, 2, 3], NO_PARENT, 0), Some(0));
        assert_eq!(s.insert(&[1, 2, 4], 0, 5), Some(1));
        assert_eq!(s.insert(&[1, 2, 3], 1, 6), None);
        let mut out = Vec::new();
        s.get(1, &mut out);
        assert_eq!(out, vec![1, 2, 4]);
        assert_eq!(s.parent(1), (0, 5));
    }
}
