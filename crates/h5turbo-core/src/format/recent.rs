//! A small cache of the metadata pieces read most recently (index nodes, pages),
//! decoded, for lookups that come back to them: the few chunks of a small read.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Pieces kept per cache (nodes or pages of a few KiB each).
const RECENT_MAX: usize = 512;

/// The index pieces read most recently, decoded, by address (or page number). Full,
/// it starts again empty: a lookup re-reads at most the few pieces on its way.
pub(crate) struct Recent<T> {
    pieces: Mutex<HashMap<u64, Arc<T>>>,
}

impl<T> Recent<T> {
    pub(crate) fn new() -> Self {
        Recent { pieces: Mutex::new(HashMap::new()) }
    }

    pub(crate) fn get_or_read(&self, key: u64, read: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        let piece = self.get_or_read_optional(key, || read().map(Some))?;
        piece.ok_or_else(|| Error::format("chunk index piece vanished while read"))
    }

    /// As `get_or_read`, for pieces that may not exist (`None` is not kept).
    pub(crate) fn get_or_read_optional(&self, key: u64, read: impl FnOnce() -> Result<Option<T>>) -> Result<Option<Arc<T>>> {
        if let Some(piece) = self.lock().get(&key) {
            return Ok(Some(piece.clone()));
        }
        // Read without holding the lock: another thread may read the same piece too.
        let Some(piece) = read()?.map(Arc::new) else { return Ok(None) };
        let mut pieces = self.lock();
        if pieces.len() >= RECENT_MAX {
            pieces.clear();
        }
        pieces.insert(key, piece.clone());
        Ok(Some(piece))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<T>>> {
        self.pieces.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
