//! The visited-state store: every distinct state once, with the state it was first
//! reached from, shared by the explorer's worker threads.
//!
//! **Compression.** A state is mostly its devices' local parts: device `d`'s pc, its
//! semaphores and its cells. Those parts are interned once in a shared table
//! ([`Components`], "collapse compression" as in SPIN), so a stored state is the list of
//! its devices' component ids (varints) followed by the rest (shared cells and in-flight
//! DMAs), XORed with the initial state, zero runs as a `0x00` byte and a run length, other
//! words as LEB128 varints. The encoding is canonical, so equal states have equal bytes,
//! which are what is hashed and compared. Per state the store keeps the bytes (with a
//! one-byte length), their offset (4 bytes), the parent (4 bytes) and a slot of the hash
//! table (about 6 bytes); the event that led to a state is recomputed from the parent
//! when a counterexample needs it.
//!
//! **Concurrency.** States are spread over [`SHARDS`] shards by hash, each behind its own
//! lock (lock striping), and so are components. A state's id (its *slot*) names its shard
//! and its index there.
//!
//! **Breadth-first order.** During a BFS level, every state first reached in that level
//! carries the smallest key `(position of the parent in the level, event index)` it was
//! reached with, and that parent; [`Store::end_level`] returns the level's new states
//! sorted by key. That is exactly the order one thread expanding the level in order would
//! have discovered them, so every thread count gives the same ids to the same parents, the
//! same next level and the same counterexample.

use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use semcheck_model::Program;

/// Number of shards (lock stripes) of the state table.
pub(crate) const SHARDS: usize = 64;
const SHARD_BITS: u32 = SHARDS.trailing_zeros();
/// Number of shards of the component table.
const COMPONENT_SHARDS: usize = 16;
const COMPONENT_BITS: u32 = COMPONENT_SHARDS.trailing_zeros();
/// Bytes per arena chunk.
const CHUNK: usize = 8 << 20;

/// The parent of the initial state.
pub(crate) const NO_PARENT: u32 = u32::MAX;

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write(bytes);
    h.finish()
}

fn hash_words(words: &[u32]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    for &w in words {
        h.write_u32(w);
    }
    h.finish()
}

/// The shard of a hash: bits that neither hashbrown's bucket index (low bits) nor its
/// control byte (top 7 bits) uses.
fn shard_of(h: u64, bits: u32) -> usize {
    ((h >> 40) & ((1 << bits) - 1)) as usize
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

/// Appends `words` encoded against `template` (XOR, zero runs, varints) to `out`.
pub(crate) fn encode(words: &[u32], template: &[u32], out: &mut Vec<u8>) {
    let word = |i: usize| words[i] ^ template.get(i).copied().unwrap_or(0);
    let mut i = 0;
    while i < words.len() {
        let w = word(i);
        if w == 0 {
            let start = i;
            while i < words.len() && word(i) == 0 {
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

/// Appends the words of bytes made by [`encode`] to `out`.
pub(crate) fn decode(bytes: &[u8], template: &[u32], out: &mut Vec<u32>) {
    let first = out.len();
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
    for (w, t) in out[first..].iter_mut().zip(template) {
        *w ^= t;
    }
}

/// How a packed state splits into per-device components and the rest.
#[derive(Clone, Debug)]
struct Layout {
    devices: usize,
    sem_offset: usize,
    sems_per_device: usize,
    cell_offset: usize,
    /// Cells per device; device `d` owns cells `d * cells_per_device ..`. Zero when the
    /// program's cells are not laid out that way (then nothing is collapsed).
    cells_per_device: usize,
    /// Where the rest starts: the shared cells, then the in-flight DMAs.
    rest: usize,
    collapse: bool,
}

impl Layout {
    fn of(p: &Program) -> Layout {
        let n = p.num_devices();
        let owned = p.cells.iter().filter(|c| c.owner.is_some()).count();
        let cpd = owned / n.max(1);
        let contiguous = owned == cpd * n
            && p.cells.iter().enumerate().all(|(i, c)| match c.owner {
                Some(d) => i / cpd.max(1) == d.index() && i < owned,
                None => i >= owned,
            });
        Layout {
            devices: n,
            sem_offset: p.sem_offset(),
            sems_per_device: p.sems_per_device,
            cell_offset: p.cell_offset(),
            cells_per_device: cpd,
            rest: p.cell_offset() + owned,
            collapse: contiguous && n > 0,
        }
    }

    fn width(&self) -> usize {
        1 + self.sems_per_device + self.cells_per_device
    }

    /// Writes device `d`'s component of `state` to `out`.
    fn component(&self, state: &[u32], d: usize, out: &mut Vec<u32>) {
        out.clear();
        out.push(state[d]);
        let s = self.sem_offset + d * self.sems_per_device;
        out.extend_from_slice(&state[s..s + self.sems_per_device]);
        let c = self.cell_offset + d * self.cells_per_device;
        out.extend_from_slice(&state[c..c + self.cells_per_device]);
    }

    /// Writes a component back into a state of the right length.
    fn put(&self, state: &mut [u32], d: usize, words: &[u32]) {
        state[d] = words[0];
        let (sems, cells) = words[1..].split_at(self.sems_per_device);
        let s = self.sem_offset + d * self.sems_per_device;
        state[s..s + self.sems_per_device].copy_from_slice(sems);
        let c = self.cell_offset + d * self.cells_per_device;
        state[c..c + self.cells_per_device].copy_from_slice(cells);
    }
}

/// The interned device components, shared by every thread.
struct Components {
    width: usize,
    shards: Box<[Mutex<ComponentShard>]>,
}

#[derive(Default)]
struct ComponentShard {
    words: Vec<u32>,
    table: HashTable<u32>,
}

impl Components {
    fn new(width: usize) -> Components {
        Components { width, shards: (0..COMPONENT_SHARDS).map(|_| Mutex::default()).collect() }
    }

    fn intern(&self, words: &[u32]) -> u32 {
        let h = hash_words(words);
        let shard = shard_of(h, COMPONENT_BITS);
        let w = self.width;
        let mut guard = self.shards[shard].lock().expect("a worker panicked");
        let ComponentShard { words: store, table } = &mut *guard;
        let at = |local: u32| &store[local as usize * w..(local as usize + 1) * w];
        if let Some(&local) = table.find(h, |&l| at(l) == words) {
            return (local << COMPONENT_BITS) | shard as u32;
        }
        let local = (store.len() / w.max(1)) as u32;
        store.extend_from_slice(words);
        table.insert_unique(h, local, |&l| hash_words(&store[l as usize * w..(l as usize + 1) * w]));
        (local << COMPONENT_BITS) | shard as u32
    }

    fn get(&self, id: u32, out: &mut Vec<u32>) {
        let shard = &self.shards[(id as usize) & (COMPONENT_SHARDS - 1)].lock().expect("a worker panicked");
        let local = (id >> COMPONENT_BITS) as usize;
        out.clear();
        out.extend_from_slice(&shard.words[local * self.width..(local + 1) * self.width]);
    }

    fn memory_bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().expect("a worker panicked");
                (s.words.len() * 4 + s.table.capacity() * 5) as u64
            })
            .sum()
    }
}

/// One lock stripe of the state table.
#[derive(Default)]
struct Shard {
    table: HashTable<u32>,
    chunks: Vec<Vec<u8>>,
    /// The local index of the first state of each chunk.
    chunk_first: Vec<u32>,
    /// Per state: offset of its record (a length byte or varint, then the bytes) in its chunk.
    offsets: Vec<u32>,
    parents: Vec<u32>,
    /// The first local index of the BFS level being discovered.
    level_from: u32,
    /// Per state of that level (from `level_from`): its smallest key so far.
    level_keys: Vec<u64>,
}

impl Shard {
    fn record(&self, local: u32) -> &[u8] {
        let c = self.chunk_first.partition_point(|&f| f <= local) - 1;
        let chunk = &self.chunks[c];
        let mut i = self.offsets[local as usize] as usize;
        let len = read_varint(chunk, &mut i) as usize;
        &chunk[i..i + len]
    }
}

/// What [`Store::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inserted {
    /// A new state, with its slot.
    New(u32),
    /// Already stored.
    Seen,
}

/// Distinct states, compressed, with parent links; shared by the worker threads.
pub(crate) struct Store {
    layout: Layout,
    template: Vec<u32>,
    components: Components,
    shards: Box<[Mutex<Shard>]>,
}

/// Reusable buffers of one thread for encoding and decoding.
#[derive(Default)]
pub(crate) struct Codec {
    component: Vec<u32>,
    pub(crate) bytes: Vec<u8>,
}

impl Store {
    /// An empty store for the states of `program`.
    pub(crate) fn new(program: &Program) -> Store {
        let layout = Layout::of(program);
        let initial = program.initial_state();
        let template = if layout.collapse { initial[layout.rest..].to_vec() } else { initial };
        Store {
            components: Components::new(layout.width()),
            layout,
            template,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    /// Encodes `state` into `codec.bytes` (interning its components).
    pub(crate) fn encode(&self, state: &[u32], codec: &mut Codec) {
        codec.bytes.clear();
        let l = &self.layout;
        if l.collapse {
            for d in 0..l.devices {
                l.component(state, d, &mut codec.component);
                push_varint(&mut codec.bytes, self.components.intern(&codec.component));
            }
            encode(&state[l.rest..], &self.template, &mut codec.bytes);
        } else {
            encode(state, &self.template, &mut codec.bytes);
        }
    }

    fn decode(&self, bytes: &[u8], codec: &mut Codec, out: &mut Vec<u32>) {
        out.clear();
        let l = &self.layout;
        if !l.collapse {
            return decode(bytes, &self.template, out);
        }
        out.resize(l.rest, 0);
        let mut i = 0;
        for d in 0..l.devices {
            let id = read_varint(bytes, &mut i);
            self.components.get(id, &mut codec.component);
            l.put(out, d, &codec.component);
        }
        decode(&bytes[i..], &self.template, out);
    }

    /// Decodes the state in `slot` into `out`.
    pub(crate) fn get(&self, slot: u32, codec: &mut Codec, out: &mut Vec<u32>) {
        let mut bytes = std::mem::take(&mut codec.bytes);
        bytes.clear();
        bytes.extend_from_slice(self.shard(slot).record(slot >> SHARD_BITS));
        self.decode(&bytes, codec, out);
        codec.bytes = bytes;
    }

    /// Whether the state in `slot` is the one encoded in `bytes`.
    pub(crate) fn holds(&self, slot: u32, bytes: &[u8]) -> bool {
        self.shard(slot).record(slot >> SHARD_BITS) == bytes
    }

    fn shard(&self, slot: u32) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[slot as usize & (SHARDS - 1)].lock().expect("a worker panicked")
    }

    /// The state `slot` was first reached from ([`NO_PARENT`] for the initial state).
    pub(crate) fn parent(&self, slot: u32) -> u32 {
        self.shard(slot).parents[(slot >> SHARD_BITS) as usize]
    }

    /// Inserts the state encoded in `bytes` if it is new. With a `key` (breadth-first),
    /// a state already reached in the current level takes `parent` if `key` is smaller
    /// than the key it was reached with.
    pub(crate) fn insert(&self, bytes: &[u8], parent: u32, key: Option<u64>) -> Inserted {
        let h = hash_bytes(bytes);
        let shard_index = shard_of(h, SHARD_BITS);
        let mut guard = self.shards[shard_index].lock().expect("a worker panicked");
        let shard = &mut *guard;
        if let Some(&local) = shard.table.find(h, |&l| shard.record(l) == bytes) {
            if let (Some(key), true) = (key, local >= shard.level_from) {
                let at = (local - shard.level_from) as usize;
                if key < shard.level_keys[at] {
                    shard.level_keys[at] = key;
                    shard.parents[local as usize] = parent;
                }
            }
            return Inserted::Seen;
        }
        let local = shard.parents.len() as u32;
        assert!(local < 1 << (32 - SHARD_BITS), "more states than the store can number");
        let need = bytes.len() + 5;
        if shard.chunks.last().is_none_or(|c| c.len() + need > c.capacity()) {
            shard.chunks.push(Vec::with_capacity(CHUNK.max(need)));
            shard.chunk_first.push(local);
        }
        let chunk = shard.chunks.last_mut().expect("a chunk was just pushed");
        shard.offsets.push(chunk.len() as u32);
        push_varint(chunk, bytes.len() as u32);
        chunk.extend_from_slice(bytes);
        shard.parents.push(parent);
        if let Some(key) = key {
            shard.level_keys.push(key);
        }
        let Shard { table, chunks, chunk_first, offsets, .. } = shard;
        table.insert_unique(h, local, |&l| {
            let c = chunk_first.partition_point(|&f| f <= l) - 1;
            let mut i = offsets[l as usize] as usize;
            let len = read_varint(&chunks[c], &mut i) as usize;
            hash_bytes(&chunks[c][i..i + len])
        });
        Inserted::New((local << SHARD_BITS) | shard_index as u32)
    }

    /// Ends a breadth-first level: appends `(key, slot)` of every state first reached in
    /// it to `out`, sorted by key, and starts the next level.
    pub(crate) fn end_level(&self, out: &mut Vec<(u64, u32)>) {
        let first = out.len();
        for (i, shard) in self.shards.iter().enumerate() {
            let mut s = shard.lock().expect("a worker panicked");
            let from = s.level_from;
            out.extend(
                s.level_keys.iter().enumerate().map(|(j, &k)| (k, ((from + j as u32) << SHARD_BITS) | i as u32)),
            );
            s.level_keys.clear();
            s.level_keys.shrink_to(1 << 16);
            s.level_from = s.parents.len() as u32;
        }
        out[first..].sort_unstable();
    }

    /// Bytes held by the store's tables: what the vectors hold (their unused capacity is
    /// never touched, so it takes no memory; counting it made a doubling look like a
    /// budget overrun), and the hash tables' whole capacity (initialised).
    pub(crate) fn memory_bytes(&self) -> u64 {
        let states: u64 = self
            .shards
            .iter()
            .map(|s| {
                let s = s.lock().expect("a worker panicked");
                (s.chunks.iter().map(Vec::len).sum::<usize>()
                    + s.offsets.len() * 4
                    + s.parents.len() * 4
                    + s.level_keys.len() * 8
                    + s.table.capacity() * 5) as u64
            })
            .sum();
        states + self.components.memory_bytes()
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
}
