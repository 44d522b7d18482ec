//! The engine: selection -> plan -> parallel execution.
//!
//! It knows nothing of HDF5 structures: a dataset is a grid of chunks that a
//! [`ChunkStore`] locates in a byte source, a filter pipeline to undo, and a fill value.
//! Contiguous and compact datasets are presented to it as chunked ones by the
//! object model.

mod ahead;
pub mod cache;
mod execute;
pub mod limit;
pub mod plan;
pub mod pool;
pub mod reduce;
pub mod selection;
pub mod write;

pub use selection::AxisSelection;

use crate::error::{Error, Result};
use crate::filters::DecodePipeline;
use crate::io::ReadAt;
use plan::{make_plan, Geometry};

/// Where one chunk's encoded bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredChunk {
    /// Absolute position in the byte source.
    pub address: u64,
    pub size: u64,
    /// Bit i set: filter i of the pipeline was skipped for this chunk.
    pub filter_mask: u32,
}

/// Finds stored chunks by their coordinates in chunk units.
pub trait ChunkStore: Sync {
    /// `None`: never written, reads as the fill value.
    fn locate(&self, chunk: &[u64]) -> Option<StoredChunk>;
}

/// A chunked array in a byte source, as the engine sees it.
pub struct ArraySource<'a> {
    pub source: &'a dyn ReadAt,
    pub dims: &'a [u64],
    pub chunk_dims: &'a [u64],
    pub element_size: usize,
    pub pipeline: &'a DecodePipeline,
    pub store: &'a dyn ChunkStore,
    /// One element: what unwritten chunks read as.
    pub fill: &'a [u8],
    /// Unfiltered chunks may be stored short (virtual chunks at the end of contiguous
    /// data); the missing tail is never selected. Otherwise a short chunk is an error.
    pub allow_short_chunks: bool,
    /// Decoded chunks kept between reads (used by reads that touch few chunks).
    pub cache: Option<cache::CacheSlot<'a>>,
}

impl ArraySource<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.source.read_exact_at(buf, offset)
    }
}

/// Decoded bytes up to which a read with the default thread count runs on the calling
/// thread: 10 gzip chunks of 80 bytes took 33 us through the pool, 7 us without it.
const INLINE_BYTES: u64 = 64 << 10;

/// Whether a plan of `chunks` chunks to decode, `work_bytes` to decode or copy in all,
/// runs on the calling thread rather than the pool: one thread, one chunk, or (with the
/// default thread count, not one the caller asked for) at most INLINE_BYTES of work,
/// where waking the pool (about 25 us) would cost more.
pub(crate) fn on_calling_thread(requested_threads: usize, threads: pool::Threads, chunks: usize, work_bytes: u64) -> bool {
    let small = requested_threads == 0 && work_bytes <= INLINE_BYTES;
    threads.get() == 1 || chunks <= 1 || small
}

/// Read the orthogonal selection `sel` of `src` into `out` (row-major, C order) using
/// `threads` threads.
pub fn read_selection(src: &ArraySource, sel: &[AxisSelection], out: &mut [u8], threads: usize) -> Result<()> {
    if src.dims.is_empty() {
        return Err(Error::invalid_argument("internal: the engine reads arrays of rank >= 1"));
    }
    if src.fill.len() != src.element_size || src.element_size == 0 {
        return Err(Error::invalid_argument("internal: fill value size differs from element size"));
    }
    let geom = Geometry::new(src.dims, src.chunk_dims, src.element_size, sel)?;
    let expected = geom.out_bytes().ok_or_else(|| Error::invalid_argument("selection size overflows"))?;
    if expected != out.len() as u64 {
        return Err(Error::invalid_argument(format!(
            "output buffer holds {} bytes, the selection needs {}",
            out.len(),
            expected
        )));
    }
    if expected == 0 {
        return Ok(());
    }
    let requested_threads = threads;
    let threads = pool::Threads::resolve(threads);
    let unfiltered = src.pipeline.is_empty();
    let plan = make_plan(&geom, src.store, threads.get(), unfiltered)?;
    let cache = src.cache.filter(|c| fits_in_cache(&plan, geom.chunk_bytes, c));
    let Some(slot) = cache.filter(|_| unfiltered) else {
        return execute_plan(src, &geom, &plan, out, cache, requested_threads, threads);
    };
    if !whole_chunks_pay(&plan, &geom, slot) {
        return execute_plan(src, &geom, &plan, out, None, requested_threads, threads); // only the selected spans
    }
    // The read's chunks read whole and kept (or taken from the cache). Should that fail
    // (an external file missing, a truncated file) the selected spans alone may still
    // be readable, as they were before: read them so.
    let whole = make_plan(&geom, src.store, threads.get(), false)?;
    execute_plan(src, &geom, &whole, out, cache, requested_threads, threads)
        .or_else(|_| execute_plan(src, &geom, &plan, out, None, requested_threads, threads))
}

/// Run `plan` on the calling thread or the pool (see `on_calling_thread`), through the
/// cache when given one.
fn execute_plan(
    src: &ArraySource,
    geom: &Geometry,
    plan: &plan::Plan,
    out: &mut [u8],
    cache: Option<cache::CacheSlot>,
    requested_threads: usize,
    threads: pool::Threads,
) -> Result<()> {
    let unfiltered = src.pipeline.is_empty();
    // Taken here, on the caller's thread: a per-call window is set there.
    let window = crate::io::read_ahead::window();
    let chunks = chunks_to_decode(plan, geom, cache);
    let work = if unfiltered && cache.is_none() {
        plan.stored_bytes() // only the narrowed bytes are read and copied
    } else {
        (chunks as u64).saturating_mul(geom.chunk_bytes as u64)
    };
    if on_calling_thread(requested_threads, threads, chunks, work) {
        return execute::run(src, geom, plan, out, cache, false, window);
    }
    pool::get(threads)?.install(|| execute::run(src, geom, plan, out, cache, true, window))
}

/// The plan's chunks less those the cache holds decoded: a row loop over cached chunks
/// only copies, which the calling thread does faster than it could wake the pool.
fn chunks_to_decode(plan: &plan::Plan, geom: &Geometry, cache: Option<cache::CacheSlot>) -> usize {
    let Some(cache) = cache else { return plan.chunk_count() };
    let stored = plan.batches.iter().flat_map(|b| &b.tasks);
    plan.chunk_count() - cache.count_kept(stored.map(|task| geom.chunk_coords(task)))
}

/// Whether an unfiltered plan that reads parts of chunks (a plan reading whole chunks
/// straight into the output has nothing to gain from a cache, which would only
/// duplicate them) should read them whole and keep them: see `CacheSlot::worth_keeping`.
/// A read whose spans cover at least half of each chunk (a column of row-major chunks)
/// pays at once (h5py's chunk cache keeps them too); a row or element loop after a
/// few reads.
fn whole_chunks_pay(plan: &plan::Plan, geom: &Geometry, slot: cache::CacheSlot) -> bool {
    let partial: Vec<(Vec<u64>, u64)> = plan
        .batches
        .iter()
        .flat_map(|b| &b.tasks)
        .filter(|t| !geom.is_direct(t))
        .filter_map(|t| t.stored.map(|s| (geom.chunk_coords(t), s.size)))
        .collect();
    if partial.is_empty() {
        return false;
    }
    let spanned: u64 = partial.iter().map(|(_, bytes)| bytes).sum();
    let most = spanned.saturating_mul(2) >= (partial.len() as u64).saturating_mul(geom.chunk_bytes as u64);
    most || slot.worth_keeping(&partial, geom.chunk_bytes)
}

/// A read whose stored chunks take at most the cache's read limit goes through it:
/// small, repeated reads hit; large reads would only evict each other. So do reads of
/// many tiny chunks: through the cache each is looked up, read and kept alone (a
/// (1000, 1000) f8 dataset in 1 x 1 chunks read whole took 1.36 s through it, 0.2 s
/// without), and no loop of small reads meets that many chunks at once.
fn fits_in_cache(plan: &plan::Plan, chunk_bytes: usize, cache: &cache::CacheSlot) -> bool {
    let chunks = plan.stored_count();
    chunks <= CACHED_READ_CHUNKS && chunks.saturating_mul(chunk_bytes) <= cache.read_limit()
}

/// Chunks a read may touch, at most, to go through the cache (see `fits_in_cache`).
const CACHED_READ_CHUNKS: usize = 1024;

#[cfg(test)]
mod tests;
