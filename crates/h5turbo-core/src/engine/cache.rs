//! A small cache of decoded chunks, for reads that touch few chunks again and again
//! (element or row loops, as h5py's chunk cache serves them). Large reads bypass it:
//! they would only evict each other's chunks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Decoded chunks kept per dataset, at most (h5py's default is 1 MiB).
pub const DEFAULT_CACHE_BYTES: usize = 8 << 20;

struct Entry {
    data: Arc<Vec<u8>>,
    last_used: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Vec<u64>, Entry>,
    bytes: usize,
    clock: u64,
}

/// Decoded chunks by chunk coordinates, least recently used evicted first.
pub struct ChunkCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl ChunkCache {
    pub fn new(capacity: usize) -> Self {
        ChunkCache { capacity, inner: Mutex::new(Inner::default()) }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many of these chunks are kept now (their places in the eviction order unchanged).
    pub fn count_kept(&self, coords: impl Iterator<Item = Vec<u64>>) -> usize {
        let inner = self.lock();
        coords.filter(|c| inner.entries.contains_key(c)).count()
    }

    pub fn get(&self, coords: &[u64]) -> Option<Arc<Vec<u8>>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.entries.get_mut(coords)?;
        entry.last_used = now;
        Some(entry.data.clone())
    }

    /// Keep a decoded chunk, evicting the least recently used ones to make room.
    pub fn insert(&self, coords: Vec<u64>, data: Vec<u8>) {
        if data.len() > self.capacity {
            return;
        }
        let mut inner = self.lock();
        while inner.bytes + data.len() > self.capacity {
            let oldest = inner.entries.iter().min_by_key(|(_, e)| e.last_used).map(|(k, _)| k.clone());
            let Some(key) = oldest else { break };
            if let Some(e) = inner.entries.remove(&key) {
                inner.bytes -= e.data.len();
            }
        }
        inner.clock += 1;
        let last_used = inner.clock;
        inner.bytes += data.len();
        if let Some(old) = inner.entries.insert(coords, Entry { data: Arc::new(data), last_used }) {
            inner.bytes -= old.data.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_within_capacity() {
        let cache = ChunkCache::new(30);
        cache.insert(vec![0], vec![0; 10]);
        cache.insert(vec![1], vec![1; 10]);
        cache.insert(vec![2], vec![2; 10]);
        assert!(cache.get(&[0]).is_some()); // 0 is now the most recent
        cache.insert(vec![3], vec![3; 10]); // evicts 1
        assert!(cache.get(&[1]).is_none());
        assert_eq!(cache.get(&[0]).unwrap()[0], 0);
        assert_eq!(cache.get(&[3]).unwrap()[0], 3);
        cache.insert(vec![4], vec![4; 31]); // larger than the cache: not kept
        assert!(cache.get(&[4]).is_none());
        assert_eq!(cache.lock().bytes, 30);
    }

    #[test]
    fn counting_kept_chunks_leaves_the_eviction_order() {
        let cache = ChunkCache::new(20);
        cache.insert(vec![0, 0], vec![0; 10]);
        cache.insert(vec![0, 1], vec![1; 10]);
        assert_eq!(cache.count_kept([vec![0, 0], vec![0, 1], vec![1, 0]].into_iter()), 2);
        cache.insert(vec![1, 0], vec![2; 10]); // still evicts [0, 0], the least recently used
        assert!(cache.get(&[0, 0]).is_none());
        assert_eq!(cache.count_kept([vec![0, 0], vec![0, 1], vec![1, 0]].into_iter()), 2);
    }
}
