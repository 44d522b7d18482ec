//! A cache of decoded chunks, one per open file, for reads that touch few chunks again
//! and again (element, row and column loops; a small dataset read whole, repeatedly),
//! as libhdf5's chunk cache serves them. Large reads bypass it: they would only evict
//! each other's chunks. One budget for the whole file, not one per dataset, so that
//! reading thousands of datasets keeps at most that much.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Decoded chunks kept per open file, at most. libhdf5 keeps a cache per open dataset
/// (8 MiB by default in 2.0, 1 MiB before), dropped when the dataset is closed; here a
/// file's datasets stay parsed while it is open, so the budget is the file's.
pub const FILE_CACHE_BYTES: usize = 32 << 20;

struct Entry {
    data: Arc<Vec<u8>>,
    last_used: u64,
}

/// One dataset's chunks, by chunk coordinates.
type Chunks = HashMap<Vec<u64>, Entry>;

#[derive(Default)]
struct Inner {
    /// Chunks by owner (a dataset's object header address), then coordinates.
    owners: HashMap<u64, Chunks>,
    /// Use stamp -> (owner, coordinates): the least recently used first.
    order: BTreeMap<u64, (u64, Vec<u64>)>,
    bytes: usize,
    clock: u64,
}

impl Inner {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn remove(&mut self, owner: u64, coords: &[u64]) {
        let Some(chunks) = self.owners.get_mut(&owner) else { return };
        if let Some(old) = chunks.remove(coords) {
            self.bytes -= old.data.len();
            self.order.remove(&old.last_used);
        }
        if chunks.is_empty() {
            self.owners.remove(&owner);
        }
    }

    fn evict_oldest(&mut self) -> bool {
        let Some((_, (owner, coords))) = self.order.pop_first() else { return false };
        if let Some(chunks) = self.owners.get_mut(&owner) {
            if let Some(old) = chunks.remove(&coords) {
                self.bytes -= old.data.len();
            }
            if chunks.is_empty() {
                self.owners.remove(&owner);
            }
        }
        true
    }
}

/// Decoded chunks of many datasets within one byte budget, least recently used evicted
/// first.
pub struct ChunkCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl ChunkCache {
    pub fn new(capacity: usize) -> Self {
        ChunkCache { capacity, inner: Mutex::new(Inner::default()) }
    }

    /// The part of the cache that holds the chunks of `owner` (a dataset's object
    /// header address: unique within its file).
    pub fn slot(&self, owner: u64) -> CacheSlot<'_> {
        CacheSlot { cache: self, owner }
    }

    /// Forget every chunk (the file is closed).
    pub fn clear(&self) {
        *self.lock() = Inner::default();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One dataset's view of its file's chunk cache: what the engine reads through.
#[derive(Clone, Copy)]
pub struct CacheSlot<'a> {
    cache: &'a ChunkCache,
    owner: u64,
}

impl CacheSlot<'_> {
    /// Decoded bytes a read may take in all to go through the cache, 4 MiB of the
    /// default budget (libhdf5 2.0 keeps up to 8 MiB per open dataset): small reads
    /// repeated come from memory; larger ones would only evict each other's chunks.
    pub fn read_limit(&self) -> usize {
        self.cache.capacity / 8
    }

    /// How many of these chunks are kept now (their places in the eviction order unchanged).
    pub fn count_kept(&self, coords: impl Iterator<Item = Vec<u64>>) -> usize {
        let inner = self.cache.lock();
        let Some(chunks) = inner.owners.get(&self.owner) else { return 0 };
        coords.filter(|c| chunks.contains_key(c)).count()
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
        Some(data)
    }

    /// Keep a decoded chunk, evicting the least recently used ones (of any dataset of
    /// the file) to make room; a chunk larger than the whole cache is not kept.
    pub fn insert(&self, coords: Vec<u64>, data: Vec<u8>) {
        if data.len() > self.cache.capacity {
            return;
        }
        let mut inner = self.cache.lock();
        inner.remove(self.owner, &coords);
        while inner.bytes + data.len() > self.cache.capacity && inner.evict_oldest() {}
        let now = inner.tick();
        inner.bytes += data.len();
        inner.order.insert(now, (self.owner, coords.clone()));
        inner.owners.entry(self.owner).or_default().insert(coords, Entry { data: Arc::new(data), last_used: now });
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
