//! A cache of decoded chunks, one per open file, for reads that touch few chunks again
//! and again (element, row and column loops; a small dataset read whole, repeatedly),
//! as libhdf5's chunk cache serves them. Large reads bypass it: they would only evict
//! each other's chunks. One budget for the whole file, not one per dataset, so that
//! reading thousands of datasets keeps at most that much.
//!
//! Unfiltered data is read only over the span a selection covers; such a chunk is read
//! whole and kept once the small reads of it have cost about what reading it whole
//! would (see `CacheSlot::worth_keeping`): a loop over its elements or rows then comes
//! from memory, while reads scattered over a large dataset keep reading only their
//! bytes and pay at most twice what they would have.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Decoded chunks kept per open file, at most. libhdf5 keeps a cache per open dataset
/// (8 MiB by default in 2.0, 1 MiB before), dropped when the dataset is closed; here a
/// file's datasets stay parsed while it is open, so the budget is the file's. 64 MiB:
/// a read of up to libhdf5's 8 MiB goes through it (`read_limit`: 32 MiB sent a row
/// loop over 6 MB gzip chunks to decode its chunk again for every row, 40-65x h5py's
/// time), and a loop cycling over 40 columns of 1 MiB chunks each (a table stored a
/// dataset a column) stays in it (32 MiB: 27x h5py's time, every read a miss).
pub const FILE_CACHE_BYTES: usize = 64 << 20;

/// Decoded chunks (and spare buffers) kept by all the files of the process together,
/// at most: past it, the caches of the files read least recently are emptied. Each
/// file's own budget alone let a dask worker holding 64 files open keep 64 MiB of
/// chunks each, read once and never again: workers with a memory limit paused for good
/// (48 files: 3.3 GB, where h5py held 70 MB).
pub const PROCESS_CACHE_BYTES: usize = 256 << 20;

/// Bytes held by every cache of the process (`Inner::held` of each, summed).
static HELD_IN_PROCESS: AtomicUsize = AtomicUsize::new(0);

/// The use stamps of caches: which was read least recently.
static USE_CLOCK: AtomicU64 = AtomicU64::new(0);

/// Every cache that has kept a chunk, weakly (a file dropped drops its cache).
fn every_cache() -> std::sync::MutexGuard<'static, Vec<Weak<Shared>>> {
    static EVERY_CACHE: OnceLock<Mutex<Vec<Weak<Shared>>>> = OnceLock::new();
    EVERY_CACHE.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner())
}

struct Entry {
    data: Arc<Vec<u8>>,
    last_used: u64,
}

/// One dataset's chunks, by chunk coordinates.
type Chunks = HashMap<Vec<u64>, Entry>;

/// What one read of part of an unfiltered chunk counts for, besides its bytes: a system
/// call (about 0.8 us on the development machine, measured as ds[i] from the file
/// against from the cache) costs about as much as copying 8 KiB.
const PARTIAL_READ_COST_BYTES: u64 = 8 << 10;

/// Buffers of evicted chunks kept for reuse, at most (each at most the read limit).
const MAX_SPARE_BUFFERS: usize = 4;

/// Partial reads in a row of a dataset's same chunk after which it is read whole and
/// kept: a loop over its elements or rows (reads at random over many chunks rarely
/// meet the same chunk three times in a row).
const READS_IN_A_ROW: u32 = 3;

/// What reading a chunk whole and keeping it costs, in its bytes: a buffer to take
/// (fresh memory, the first time, is faulted in and zeroed), the bytes copied in, and
/// one more chunk pushed out of the cache (random elements of 64 MB of contiguous
/// f8: benchmarks/results/small_reads.md).
const WHOLE_READ_COST: u64 = 2;

/// Chunks whose partial reads are tallied, at most; past it the tallies start again
/// (a bound on memory, whatever the pattern of reads).
const MAX_TALLIES: usize = 4096;

#[derive(Default)]
struct Inner {
    /// Chunks by owner (a dataset's object header address), then coordinates.
    owners: HashMap<u64, Chunks>,
    /// Use stamp -> (owner, coordinates): the least recently used first.
    order: BTreeMap<u64, (u64, Vec<u64>)>,
    bytes: usize,
    clock: u64,
    /// (owner, coordinates) -> what the partial reads of that unfiltered chunk have
    /// cost so far, in bytes (see PARTIAL_READ_COST_BYTES).
    partial_reads: HashMap<(u64, Vec<u64>), u64>,
    /// Buffers of evicted chunks, for the next chunks read (see `CacheSlot::spare_buffer`).
    spare: Vec<Vec<u8>>,
    /// owner -> the first chunk its last partial read took parts of, and how many
    /// partial reads in a row took parts of it.
    streaks: HashMap<u64, (Vec<u64>, u32)>,
}

impl Inner {
    /// Bytes this cache holds: its chunks and its spare buffers.
    fn held(&self) -> usize {
        self.bytes + self.spare.iter().map(|b| b.len()).sum::<usize>()
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn remove(&mut self, owner: u64, coords: &[u64]) {
        if let Some(last_used) = self.take(owner, coords) {
            self.order.remove(&last_used);
        }
    }

    fn evict_oldest(&mut self) -> bool {
        let Some((_, (owner, coords))) = self.order.pop_first() else { return false };
        self.take(owner, &coords);
        true
    }

    /// A chunk taken out of the cache (its owner too, once it holds none), its bytes
    /// released and its buffer kept spare; its place in `order` is the caller's to
    /// drop. Gives that place (the chunk's last use), None when it was not held.
    fn take(&mut self, owner: u64, coords: &[u64]) -> Option<u64> {
        let chunks = self.owners.get_mut(&owner)?;
        let removed = chunks.remove(coords);
        if chunks.is_empty() {
            self.owners.remove(&owner);
        }
        let old = removed?;
        self.bytes -= old.data.len();
        self.keep_spare(old.data);
        Some(old.last_used)
    }

    /// Keep an evicted chunk's buffer for the next chunk read, unless a read still
    /// holds it: a loop that evicts a chunk per read then reuses the same memory,
    /// where fresh buffers of a MiB each cost page faults (and, with transparent huge
    /// pages, now and then milliseconds of compaction). Past MAX_SPARE_BUFFERS the
    /// oldest spare goes, so that the spares follow the chunk sizes read now.
    fn keep_spare(&mut self, data: Arc<Vec<u8>>) {
        if let Ok(buffer) = Arc::try_unwrap(data) {
            if self.spare.len() == MAX_SPARE_BUFFERS {
                self.spare.remove(0);
            }
            self.spare.push(buffer);
        }
    }
}

/// Decoded chunks of many datasets within one byte budget, least recently used evicted
/// first; and, with the other caches of the process, within PROCESS_CACHE_BYTES.
pub struct ChunkCache {
    capacity: usize,
    shared: Arc<Shared>,
    /// Set once the cache is in `every_cache` (on its first chunk kept).
    listed: OnceLock<()>,
}

/// What the process-wide budget sees of a cache.
#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    /// `Inner::held`, as of the last change.
    held: AtomicUsize,
    /// USE_CLOCK when a chunk was last kept or found here.
    last_used: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        HELD_IN_PROCESS.fetch_sub(*self.held.get_mut(), Ordering::Relaxed);
    }
}

impl ChunkCache {
    pub fn new(capacity: usize) -> Self {
        ChunkCache { capacity, shared: Arc::default(), listed: OnceLock::new() }
    }

    /// `change` applied to the cache, its bytes counted in the process's.
    fn changing<R>(&self, change: impl FnOnce(&mut Inner) -> R) -> R {
        let mut inner = self.lock();
        let result = change(&mut inner);
        let held = inner.held();
        let before = self.shared.held.swap(held, Ordering::Relaxed);
        drop(inner);
        if held >= before {
            HELD_IN_PROCESS.fetch_add(held - before, Ordering::Relaxed);
        } else {
            HELD_IN_PROCESS.fetch_sub(before - held, Ordering::Relaxed);
        }
        result
    }

    fn used_now(&self) {
        self.shared.last_used.store(USE_CLOCK.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Empty the caches of the files read least recently (never this one) until the
    /// process holds at most PROCESS_CACHE_BYTES. No cache's lock is held meanwhile
    /// but the one being emptied.
    fn keep_the_process_within_budget(&self) {
        self.listed.get_or_init(|| {
            let mut every = every_cache();
            every.retain(|cache| cache.strong_count() > 0);
            every.push(Arc::downgrade(&self.shared));
        });
        while HELD_IN_PROCESS.load(Ordering::Relaxed) > PROCESS_CACHE_BYTES {
            let oldest = every_cache()
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|other| !Arc::ptr_eq(other, &self.shared) && other.held.load(Ordering::Relaxed) > 0)
                .min_by_key(|other| other.last_used.load(Ordering::Relaxed));
            let Some(oldest) = oldest else { break };
            let emptied = ChunkCache { capacity: 0, shared: oldest, listed: OnceLock::new() };
            emptied.clear();
        }
    }

    /// The part of the cache that holds the chunks of `owner` (a dataset's object
    /// header address: unique within its file).
    pub fn slot(&self, owner: u64) -> CacheSlot<'_> {
        CacheSlot { cache: self, owner }
    }

    /// Forget every chunk (the file is closed).
    pub fn clear(&self) {
        self.changing(|inner| *inner = Inner::default());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One dataset's view of its file's chunk cache: what the engine reads through.
#[derive(Clone, Copy)]
pub struct CacheSlot<'a> {
    cache: &'a ChunkCache,
    owner: u64,
}

impl CacheSlot<'_> {
    /// Decoded bytes a read may take in all to go through the cache, 8 MiB of the
    /// default budget (as libhdf5 2.0 keeps per open dataset): small reads repeated
    /// come from memory; larger ones would only evict each other's chunks.
    pub fn read_limit(&self) -> usize {
        self.cache.capacity / 8
    }

    /// How many of these chunks are kept now (their places in the eviction order unchanged).
    pub fn count_kept(&self, coords: impl Iterator<Item = Vec<u64>>) -> usize {
        let inner = self.cache.lock();
        let Some(chunks) = inner.owners.get(&self.owner) else { return 0 };
        coords.filter(|c| chunks.contains_key(c)).count()
    }

    /// Whether the unfiltered chunks a read takes parts of (coordinates, bytes read)
    /// should rather be read whole and kept: when all of them are kept already; when
    /// this is the READS_IN_A_ROW-th read in a row of the dataset to take parts of the
    /// same first chunk (a loop over its elements or rows); or when their partial
    /// reads, this one counted, have cost as much as reading them whole and keeping
    /// them (WHOLE_READ_COST times `chunk_bytes` each): a rent-or-buy rule for reads
    /// that come back to chunks between others, which keeps reads spread over more
    /// chunks than the cache holds at about twice the cost of their partial reads.
    pub fn worth_keeping(&self, partial: &[(Vec<u64>, u64)], chunk_bytes: usize) -> bool {
        let mut inner = self.cache.lock();
        let owner = self.owner;
        if inner.owners.get(&owner).is_some_and(|chunks| partial.iter().all(|(c, _)| chunks.contains_key(c))) {
            return true;
        }
        if inner.partial_reads.len() + partial.len() > MAX_TALLIES {
            inner.partial_reads.clear();
        }
        if inner.streaks.len() >= MAX_TALLIES {
            inner.streaks.clear();
        }
        let Some((first, _)) = partial.first() else { return false };
        let streak = match inner.streaks.get_mut(&owner) {
            Some((chunk, count)) if chunk == first => {
                *count += 1;
                *count
            }
            _ => {
                inner.streaks.insert(owner, (first.clone(), 1));
                1
            }
        };
        let mut spent = 0u64;
        for (coords, bytes) in partial {
            let tally = inner.partial_reads.entry((owner, coords.clone())).or_default();
            *tally = tally.saturating_add(bytes.saturating_add(PARTIAL_READ_COST_BYTES));
            spent = spent.saturating_add(*tally);
        }
        let whole = (partial.len() as u64).saturating_mul(chunk_bytes as u64).saturating_mul(WHOLE_READ_COST);
        if spent < whole && streak < READS_IN_A_ROW {
            return false;
        }
        for (coords, _) in partial {
            inner.partial_reads.remove(&(owner, coords.clone()));
        }
        true
    }

    /// A buffer of `len` bytes (its contents stale) left by an evicted chunk, if one
    /// of that size is spare: to read the next chunk into.
    pub fn spare_buffer(&self, len: usize) -> Option<Vec<u8>> {
        self.cache.changing(|inner| {
            let found = inner.spare.iter().position(|b| b.len() == len)?;
            Some(inner.spare.swap_remove(found))
        })
    }

    pub fn get(&self, coords: &[u64]) -> Option<Arc<Vec<u8>>> {
        let mut inner = self.cache.lock();
        let now = inner.tick();
        let entry = inner.owners.get_mut(&self.owner)?.get_mut(coords)?;
        let before = std::mem::replace(&mut entry.last_used, now);
        let data = entry.data.clone();
        if let Some(key) = inner.order.remove(&before) {
            inner.order.insert(now, key);
        }
        drop(inner);
        self.cache.used_now();
        Some(data)
    }

    /// Keep a decoded chunk, evicting the least recently used ones (of any dataset of
    /// the file) to make room; a chunk larger than the whole cache is not kept.
    pub fn insert(&self, coords: Vec<u64>, data: Vec<u8>) {
        if data.len() > self.cache.capacity {
            return;
        }
        let capacity = self.cache.capacity;
        self.cache.changing(|inner| {
            inner.remove(self.owner, &coords);
            while inner.bytes + data.len() > capacity && inner.evict_oldest() {}
            let now = inner.tick();
            inner.bytes += data.len();
            inner.order.insert(now, (self.owner, coords.clone()));
            inner.owners.entry(self.owner).or_default().insert(coords, Entry { data: Arc::new(data), last_used: now });
        });
        self.cache.used_now();
        self.cache.keep_the_process_within_budget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(cache: &ChunkCache) -> usize {
        cache.lock().bytes
    }

    #[test]
    fn evicts_least_recently_used_within_capacity() {
        let cache = ChunkCache::new(30);
        let slot = cache.slot(7);
        slot.insert(vec![0], vec![0; 10]);
        slot.insert(vec![1], vec![1; 10]);
        slot.insert(vec![2], vec![2; 10]);
        assert!(slot.get(&[0]).is_some()); // 0 is now the most recent
        slot.insert(vec![3], vec![3; 10]); // evicts 1
        assert!(slot.get(&[1]).is_none());
        assert_eq!(slot.get(&[0]).unwrap()[0], 0);
        assert_eq!(slot.get(&[3]).unwrap()[0], 3);
        slot.insert(vec![4], vec![4; 31]); // larger than the cache: not kept
        assert!(slot.get(&[4]).is_none());
        assert_eq!(bytes(&cache), 30);
    }

    #[test]
    fn counting_kept_chunks_leaves_the_eviction_order() {
        let cache = ChunkCache::new(20);
        let slot = cache.slot(1);
        slot.insert(vec![0, 0], vec![0; 10]);
        slot.insert(vec![0, 1], vec![1; 10]);
        assert_eq!(slot.count_kept([vec![0, 0], vec![0, 1], vec![1, 0]].into_iter()), 2);
        slot.insert(vec![1, 0], vec![2; 10]); // still evicts [0, 0], the least recently used
        assert!(slot.get(&[0, 0]).is_none());
        assert_eq!(slot.count_kept([vec![0, 0], vec![0, 1], vec![1, 0]].into_iter()), 2);
    }

    #[test]
    fn datasets_share_one_budget_and_never_see_each_others_chunks() {
        let cache = ChunkCache::new(30);
        let (a, b) = (cache.slot(100), cache.slot(200));
        a.insert(vec![0], vec![1; 10]);
        b.insert(vec![0], vec![2; 10]);
        assert_eq!(b.get(&[0]).unwrap()[0], 2);
        assert_eq!(a.get(&[0]).unwrap()[0], 1);
        assert_eq!(cache.slot(300).count_kept([vec![0]].into_iter()), 0);
        // b's chunk is now the older: two more of a's evict it, not a's own first
        a.insert(vec![1], vec![1; 10]);
        a.insert(vec![2], vec![1; 10]);
        assert!(b.get(&[0]).is_none());
        assert_eq!(a.count_kept([vec![0], vec![1], vec![2]].into_iter()), 3);
        assert_eq!(bytes(&cache), 30);
    }

    #[test]
    fn partial_reads_switch_to_whole_chunks_once_they_cost_as_much() {
        let cache = ChunkCache::new(1 << 20);
        let slot = cache.slot(1);
        let chunk_bytes = 4 * PARTIAL_READ_COST_BYTES as usize / WHOLE_READ_COST as usize;
        let read = |chunk: u64| [(vec![0, chunk], 8)];
        // reads alternating between two chunks (never READS_IN_A_ROW of one): each
        // 8-byte read counts for PARTIAL_READ_COST_BYTES + 8, so the fourth of a chunk pays
        for _ in 0..3 {
            assert!(!slot.worth_keeping(&read(0), chunk_bytes));
            assert!(!slot.worth_keeping(&read(1), chunk_bytes));
        }
        assert!(slot.worth_keeping(&read(0), chunk_bytes));
        assert_eq!(cache.lock().partial_reads.len(), 1); // chunk 0's tally ends there
        // another dataset's chunk of the same coordinates has its own tally
        assert!(!cache.slot(2).worth_keeping(&read(1), chunk_bytes));
    }

    #[test]
    fn reads_in_a_row_of_one_chunk_keep_it() {
        let cache = ChunkCache::new(1 << 20);
        let (a, b) = (cache.slot(1), cache.slot(2));
        let read = |chunk: u64| [(vec![chunk], 8)];
        for _ in 1..READS_IN_A_ROW {
            assert!(!a.worth_keeping(&read(5), 1 << 30));
            assert!(!b.worth_keeping(&read(6), 1 << 30)); // another dataset's loop between
        }
        assert!(a.worth_keeping(&read(5), 1 << 30));
        assert!(!a.worth_keeping(&read(6), 1 << 30)); // a new chunk starts a new count
        assert!(!a.worth_keeping(&[], 1 << 30));
    }

    #[test]
    fn kept_chunks_are_read_from_the_cache_and_tallies_stay_bounded() {
        let cache = ChunkCache::new(1 << 20);
        let slot = cache.slot(1);
        slot.insert(vec![3], vec![0; 64]);
        assert!(slot.worth_keeping(&[(vec![3], 8)], 1 << 20));
        assert!(!slot.worth_keeping(&[(vec![3], 8), (vec![4], 8)], 1 << 20));
        for i in 10..3 * MAX_TALLIES as u64 {
            assert!(!slot.worth_keeping(&[(vec![i], 8)], 1 << 20));
        }
        assert!(cache.lock().partial_reads.len() <= MAX_TALLIES);
    }

    #[test]
    fn evicted_buffers_are_reused_unless_a_reader_holds_them() {
        let cache = ChunkCache::new(20);
        let slot = cache.slot(1);
        slot.insert(vec![0], vec![7; 10]);
        slot.insert(vec![1], vec![8; 10]);
        let held = slot.get(&[1]).unwrap();
        slot.insert(vec![2], vec![9; 10]); // evicts [0]: spare
        slot.insert(vec![3], vec![9; 10]); // evicts [1], still held: dropped later
        assert!(slot.spare_buffer(11).is_none());
        assert_eq!(slot.spare_buffer(10).unwrap(), vec![7; 10]);
        assert!(slot.spare_buffer(10).is_none());
        assert_eq!(held[0], 8);
        assert_eq!(bytes(&cache), 20);
        // many evictions later, the spares are the latest ones, at most MAX_SPARE_BUFFERS
        slot.insert(vec![4], vec![1; 20]);
        for i in 5..20 {
            slot.insert(vec![i], vec![i as u8; 5]);
        }
        let inner = cache.lock();
        assert_eq!(inner.spare.len(), MAX_SPARE_BUFFERS);
        assert!(inner.spare.iter().all(|b| b.len() == 5));
    }

    #[test]
    fn replacing_a_chunk_keeps_the_byte_count_right() {
        let cache = ChunkCache::new(30);
        let slot = cache.slot(1);
        slot.insert(vec![0], vec![0; 10]);
        slot.insert(vec![0], vec![9; 20]);
        assert_eq!(bytes(&cache), 20);
        assert_eq!(slot.get(&[0]).unwrap().len(), 20);
        assert_eq!(cache.lock().order.len(), 1);
        slot.insert(vec![1], vec![1; 10]);
        slot.insert(vec![2], vec![2; 10]); // evicts [0] (20 bytes) alone
        assert!(slot.get(&[0]).is_none());
        assert_eq!(bytes(&cache), 20);
        assert!(cache.lock().owners.values().all(|c| !c.is_empty()));
    }
}
