//! Parallel execution of a plan: positional reads, decode, scatter into the output.
//!
//! Each batch is handled by one thread: one pread for the batch, then each chunk is
//! decoded either straight into its place in the output (when it is wholly selected
//! and contiguous there) or into the thread's scratch buffer and scattered. Chunks
//! are disjoint, so threads write disjoint bytes of the output.

use super::ahead;
use super::plan::{Batch, ChunkTask, Geometry, Plan};
use super::selection::{AxisPiece, InChunk};
use super::cache::CacheSlot;
use super::ArraySource;
use crate::error::{Error, Result};
use crate::filters::{decode_chunk, DecodeScratch};
use rayon::prelude::*;

/// The caller's output buffer, shared by the worker threads. Every task writes only
/// the bytes its chunk maps to, and those sets are disjoint across tasks.
#[derive(Clone, Copy)]
struct SharedOut {
    ptr: *mut u8,
    len: usize,
}
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// A mutable view of `offset..offset+len`; callers guarantee no other task
    /// touches those bytes.
    #[allow(clippy::mut_from_ref)]
    fn region(&self, offset: usize, len: usize) -> Result<&mut [u8]> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) }),
            _ => Err(Error::invalid_argument("internal: chunk region outside the output buffer")),
        }
    }
}

/// Per-thread buffers reused across batches.
#[derive(Default)]
pub(super) struct Scratch {
    read: Vec<u8>,
    chunk: Vec<u8>,
    decode: DecodeScratch,
}

impl Scratch {
    /// Bytes held by the buffers (the codec contexts' own memory not counted).
    fn capacity(&self) -> usize {
        self.read.capacity() + self.chunk.capacity() + self.decode.capacity()
    }

    /// Read `batch` with one pread and hand every chunk's decoded bytes (row-major,
    /// `geom.chunk_bytes` long) to `f`. Used by readers that consume chunks rather
    /// than scatter them (the reductions).
    pub(super) fn for_each_decoded(
        &mut self,
        src: &ArraySource,
        geom: &Geometry,
        batch: &Batch,
        mut f: impl FnMut(&ChunkTask, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let span = read_batch(src, geom, batch, &mut self.read)?;
        for task in &batch.tasks {
            let (encoded, address) = task_bytes(span, batch, task)?;
            let mask = task.stored.map(|s| s.filter_mask).unwrap_or(0);
            let decoded = decoded_chunk(src, geom, mask, encoded, &mut self.chunk, &mut self.decode)
                .map_err(|e| chunk_error(e, geom, task, address))?;
            f(task, decoded).map_err(|e| chunk_error(e, geom, task, address))?;
        }
        Ok(())
    }
}

/// One positional read of a whole batch into `buf`.
fn read_batch<'b, 's: 'b>(src: &ArraySource<'s>, geom: &Geometry, batch: &Batch, buf: &'b mut Vec<u8>) -> Result<&'b [u8]> {
    // bytes in memory (a small file read whole: fast5 single-read files) are decoded
    // where they lie, not copied out first
    if let Some(span) = src.source.bytes_at(batch.start, batch.len) {
        return Ok(span);
    }
    let len = usize::try_from(batch.len).map_err(|_| Error::format("chunk batch too large"))?;
    grow(buf, len)?;
    let span = &mut buf[..len];
    src.read_at(span, batch.start).map_err(|e| chunk_error(e, geom, &batch.tasks[0], batch.start))?;
    Ok(span)
}

/// The encoded bytes of `task` inside its batch's span, and their file address.
fn task_bytes<'a>(span: &'a [u8], batch: &Batch, task: &ChunkTask) -> Result<(&'a [u8], u64)> {
    let stored = task.stored.ok_or_else(|| Error::invalid_argument("internal: batch task without storage"))?;
    let from = (stored.address - batch.start) as usize;
    let bytes = span
        .get(from..from + stored.size as usize)
        .ok_or_else(|| Error::invalid_argument("internal: chunk outside its batch"))?;
    Ok((bytes, stored.address))
}

/// Grow a scratch buffer to `len` bytes. Sizes come from the file (chunk and batch
/// sizes), so a failed allocation is an error for this read, not an abort. Its old
/// bytes are not kept (scratch): a fresh zeroed allocation leaves the pages unbacked
/// until written, so a chunk that claims gigabytes and fails to decode costs no
/// gigabytes of zeroing (resizing wrote every byte).
fn grow(buf: &mut Vec<u8>, len: usize) -> Result<()> {
    if buf.len() < len {
        *buf = Vec::new();
        *buf = crate::buffer::zeroed(len, "a chunk buffer")?;
    }
    Ok(())
}

/// Run `f` over `items` with per-thread state: on the pool when `parallel`, else on
/// the calling thread (waking a pool thread costs more than a one-chunk read).
fn for_each<T: Sync, S>(
    items: &[T],
    parallel: bool,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &T) -> Result<()> + Sync + Send,
) -> Result<()> {
    if parallel {
        items.par_iter().try_for_each_init(init, f)
    } else {
        let mut state = init();
        items.iter().try_for_each(|item| f(&mut state, item))
    }
}

/// Scratch buffers above this many bytes are dropped after a read rather than kept
/// for the thread's next one: a large read should not pin its memory.
const KEPT_SCRATCH_BYTES: usize = 16 << 20;

thread_local! {
    /// Each thread's scratch between reads: a loop of small reads (the signals of many
    /// fast5 files, one chunk each) then allocates its buffers and creates its zstd or
    /// inflate context once per thread, not once per read.
    static KEPT_SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// A thread's kept scratch, taken for one read (or one pool job) and given back when
/// dropped, on whichever thread drops it; a re-entrant read just starts empty.
struct KeptScratch(Scratch);

impl KeptScratch {
    fn take() -> KeptScratch {
        KeptScratch(KEPT_SCRATCH.try_with(|kept| kept.take()).unwrap_or_default())
    }
}

impl Drop for KeptScratch {
    fn drop(&mut self) {
        let scratch = std::mem::take(&mut self.0);
        if scratch.capacity() <= KEPT_SCRATCH_BYTES {
            // fails only while the thread is exiting: then the buffers just go
            let _ = KEPT_SCRATCH.try_with(|kept| kept.replace(scratch));
        }
    }
}

/// Execute `plan`, reading `window` bytes ahead of the decoding threads (see `ahead`).
pub fn run(
    src: &ArraySource,
    geom: &Geometry,
    plan: &Plan,
    out: &mut [u8],
    cache: Option<CacheSlot>,
    parallel: bool,
    window: u64,
) -> Result<()> {
    let shared = SharedOut { ptr: out.as_mut_ptr(), len: out.len() };
    for_each(&plan.fills, parallel, || (), |_, task| fill_task(src, geom, task, shared))?;
    if let Some(cache) = cache {
        let tasks: Vec<&ChunkTask> = plan.batches.iter().flat_map(|b| &b.tasks).collect();
        return for_each(&tasks, parallel, KeptScratch::take, |scratch, task| {
            cached_task(src, geom, task, shared, cache, &mut scratch.0.decode)
        });
    }
    let handout = if parallel { ahead::Handout::Pool } else { ahead::Handout::Serial };
    ahead::for_each_batch(src.source, &plan.batches, window, handout, KeptScratch::take, |scratch, _, batch| {
        run_batch(src, geom, batch, shared, &mut scratch.0)
    })
}

/// One chunk of a small read: from the cache, or read, decoded and kept there.
fn cached_task(
    src: &ArraySource,
    geom: &Geometry,
    task: &ChunkTask,
    out: SharedOut,
    cache: CacheSlot,
    scratch: &mut DecodeScratch,
) -> Result<()> {
    let coords = geom.chunk_coords(task);
    if let Some(decoded) = cache.get(&coords) {
        return scatter(geom, task, out, Elements::Chunk { data: &decoded, skip: 0 });
    }
    let stored = task.stored.ok_or_else(|| Error::invalid_argument("internal: cached task without storage"))?;
    // A buffer the cache can keep: an evicted chunk's, or a fresh one.
    let mut decoded = match cache.spare_buffer(geom.chunk_bytes) {
        Some(spare) => spare,
        None => {
            let mut fresh = crate::buffer::zeroed(geom.chunk_bytes, "a chunk buffer")?;
            crate::buffer::advise_small_pages(&mut fresh);
            fresh
        }
    };
    if src.pipeline.is_empty() {
        read_unfiltered_chunk(src, stored.size, stored.address, &mut decoded).map_err(|e| chunk_error(e, geom, task, stored.address))?;
    } else {
        let mut encoded = Vec::new();
        grow(&mut encoded, stored.size as usize)?;
        src.read_at(&mut encoded, stored.address).map_err(|e| chunk_error(e, geom, task, stored.address))?;
        decode_into(src, stored.filter_mask, &encoded, &mut decoded, scratch)
            .map_err(|e| chunk_error(e, geom, task, stored.address))?;
    }
    scatter(geom, task, out, Elements::Chunk { data: &decoded, skip: 0 })?;
    // Kept even when this read took it whole: a small dataset read again and again
    // comes from memory, as from libhdf5's chunk cache. Larger reads do not come here,
    // and the file's one budget bounds what many datasets read once each keep.
    cache.insert(coords, decoded);
    Ok(())
}

/// An unfiltered chunk read whole into `chunk` (its decoded size): the last virtual
/// chunk of contiguous data may be stored short, its tail past the data never selected.
fn read_unfiltered_chunk(src: &ArraySource, stored_size: u64, address: u64, chunk: &mut [u8]) -> Result<()> {
    let size = usize::try_from(stored_size).unwrap_or(usize::MAX);
    if size > chunk.len() || (size < chunk.len() && !src.allow_short_chunks) {
        check_unfiltered_size(size, chunk.len())?;
    }
    src.read_at(&mut chunk[..size], address)
}

fn fill_task(src: &ArraySource, geom: &Geometry, task: &ChunkTask, out: SharedOut) -> Result<()> {
    scatter(geom, task, out, Elements::Fill(src.fill))
}

fn run_batch(src: &ArraySource, geom: &Geometry, batch: &Batch, out: SharedOut, scratch: &mut Scratch) -> Result<()> {
    if src.pipeline.is_empty() && batch.tasks.iter().all(|t| geom.is_direct(t)) {
        // Unfiltered and in place: read the file straight into the output, no copy.
        for task in &batch.tasks {
            let address = task.stored.map(|s| s.address).unwrap_or(batch.start);
            let dst = out.region(geom.out_offset(task) as usize, geom.chunk_bytes)?;
            read_stored(src, geom, task, address, dst)?;
        }
        return Ok(());
    }
    let span = read_batch(src, geom, batch, &mut scratch.read)?;
    for task in &batch.tasks {
        let (encoded, address) = task_bytes(span, batch, task)?;
        decode_task(src, geom, task, encoded, out, &mut scratch.chunk, &mut scratch.decode)
            .map_err(|e| chunk_error(e, geom, task, address))?;
    }
    Ok(())
}

fn read_stored(src: &ArraySource, geom: &Geometry, task: &ChunkTask, address: u64, dst: &mut [u8]) -> Result<()> {
    let stored_size = task.stored.map(|s| s.size).unwrap_or(0);
    if stored_size != dst.len() as u64 {
        return Err(chunk_error(
            Error::format(format!("unfiltered chunk holds {} bytes, expected {}", stored_size, dst.len())),
            geom,
            task,
            address,
        ));
    }
    src.read_at(dst, address).map_err(|e| chunk_error(e, geom, task, address))
}

fn decode_task(
    src: &ArraySource,
    geom: &Geometry,
    task: &ChunkTask,
    encoded: &[u8],
    out: SharedOut,
    chunk_buf: &mut Vec<u8>,
    decode_scratch: &mut DecodeScratch,
) -> Result<()> {
    let mask = task.stored.map(|s| s.filter_mask).unwrap_or(0);
    if geom.is_direct(task) {
        let dst = out.region(geom.out_offset(task) as usize, geom.chunk_bytes)?;
        return decode_into(src, mask, encoded, dst, decode_scratch);
    }
    if src.pipeline.is_empty() {
        // The read was narrowed to the selected span (plan::narrow_to_selection),
        // which lies inside the chunk's stored bytes; check it really covers it.
        check_span(encoded.len(), task, geom)?;
        return scatter(geom, task, out, Elements::Chunk { data: encoded, skip: task.skip as usize });
    }
    let decoded = decoded_chunk(src, geom, mask, encoded, chunk_buf, decode_scratch)?;
    scatter(geom, task, out, Elements::Chunk { data: decoded, skip: 0 })
}

/// The decoded bytes of one whole chunk, `geom.chunk_bytes` long: the stored bytes
/// themselves when unfiltered (and not narrowed), else decoded into `chunk_buf`.
fn decoded_chunk<'a>(
    src: &ArraySource,
    geom: &Geometry,
    mask: u32,
    encoded: &'a [u8],
    chunk_buf: &'a mut Vec<u8>,
    decode_scratch: &mut DecodeScratch,
) -> Result<&'a [u8]> {
    if src.pipeline.is_empty() {
        if src.allow_short_chunks && encoded.len() < geom.chunk_bytes {
            // Only the selected prefix is ever read from a short chunk.
            grow(chunk_buf, geom.chunk_bytes)?;
            chunk_buf[..encoded.len()].copy_from_slice(encoded);
            return Ok(&chunk_buf[..geom.chunk_bytes]);
        }
        check_unfiltered_size(encoded.len(), geom.chunk_bytes)?;
        return Ok(encoded);
    }
    grow(chunk_buf, geom.chunk_bytes)?;
    decode_into(src, mask, encoded, &mut chunk_buf[..geom.chunk_bytes], decode_scratch)?;
    Ok(&chunk_buf[..geom.chunk_bytes])
}

fn decode_into(
    src: &ArraySource,
    mask: u32,
    encoded: &[u8],
    dst: &mut [u8],
    scratch: &mut DecodeScratch,
) -> Result<()> {
    if src.pipeline.is_empty() {
        check_unfiltered_size(encoded.len(), dst.len())?;
        dst.copy_from_slice(encoded);
        return Ok(());
    }
    decode_chunk(src.pipeline, mask, encoded, dst, scratch)
}

/// The bytes read for an unfiltered, non-direct chunk (narrowed or whole) must reach
/// its last selected element: a stored chunk shorter than that is corrupt.
fn check_span(len: usize, task: &ChunkTask, geom: &Geometry) -> Result<()> {
    let needed = narrowed_end(task, geom);
    if task.skip + (len as u64) < needed {
        return Err(Error::format(format!(
            "unfiltered chunk holds {} bytes, its selection reaches byte {}",
            task.skip + len as u64,
            needed
        )));
    }
    Ok(())
}

/// One past the byte of the last selected element of `task`, from the chunk start.
fn narrowed_end(task: &ChunkTask, geom: &Geometry) -> u64 {
    let last: u64 = (0..geom.rank())
        .map(|d| {
            let inner = &geom.pieces[d][task.pieces[d] as usize].in_chunk;
            inner.get(inner.len().saturating_sub(1)) * geom.chunk_strides[d]
        })
        .sum();
    (last + 1) * geom.element_size as u64
}

fn check_unfiltered_size(stored: usize, expected: usize) -> Result<()> {
    if stored != expected {
        return Err(Error::format(format!("unfiltered chunk holds {} bytes, expected {}", stored, expected)));
    }
    Ok(())
}

fn chunk_error(e: Error, geom: &Geometry, task: &ChunkTask, address: u64) -> Error {
    let coords = geom.chunk_coords(task);
    let origin: Vec<u64> = coords.iter().zip(&geom.chunk_dims).map(|(c, d)| c * d).collect();
    // the source's cause kept: a binding maps it (a file-like object's exception)
    e.context(format_args!("chunk at {:?} (file address {})", origin, address))
}

/// Where scattered elements come from.
#[derive(Clone, Copy)]
enum Elements<'a> {
    /// A decoded chunk, row-major, missing its first `skip` bytes (never selected).
    Chunk { data: &'a [u8], skip: usize },
    /// One element repeated (the fill value).
    Fill(&'a [u8]),
}

/// Outputs larger than this are written with non-temporal stores where rows allow:
/// they will not fit in cache anyway, and streaming stores skip reading each
/// destination line before overwriting it.
const STREAMING_OUTPUT_BYTES: usize = 64 << 20;

/// Copy the selected elements of one chunk into the output.
fn scatter(geom: &Geometry, task: &ChunkTask, out: SharedOut, from: Elements) -> Result<()> {
    let streaming = out.len >= STREAMING_OUTPUT_BYTES;
    let all: Vec<_> = (0..geom.rank()).map(|d| &geom.pieces[d][task.pieces[d] as usize]).collect();
    // Trailing axes taken whole are copied as one wide element (`fold` elements).
    let (rank, fold) = folded_tail(geom, &all);
    let pieces = &all[..rank];
    let elem = geom.element_size * fold as usize;
    let last = rank - 1;
    if let (Elements::Chunk { data, skip }, false, 1) = (from, streaming, fold) {
        if rank >= 2 && pieces[last].in_chunk.len() == 1 && geom.out_strides[last - 1] == 1 {
            return gather_column(geom, pieces, out, data, skip);
        }
    }
    // Iterate over all outer positions; copy a run along the last axis each time.
    let mut idx = vec![0u64; rank];
    let outer_total: u64 = pieces[..last].iter().map(|p| p.in_chunk.len()).product();
    let inner = &pieces[last].in_chunk;
    for _ in 0..outer_total {
        let mut chunk_base = 0u64;
        let mut out_base = pieces[last].out_start * geom.out_strides[last];
        for d in 0..last {
            chunk_base += pieces[d].in_chunk.get(idx[d]) * geom.chunk_strides[d];
            out_base += (pieces[d].out_start + idx[d]) * geom.out_strides[d];
        }
        // in wide elements: every stride of the axes left is a multiple of `fold`
        let (chunk_base, out_base) = (chunk_base / fold, out_base / fold);
        let dst = out.region(out_base as usize * elem, inner.len() as usize * elem)?;
        copy_run(inner, chunk_base, dst, elem, from, streaming);
        advance(&mut idx[..last], |d| pieces[d].in_chunk.len());
    }
    if streaming {
        stream::fence();
    }
    Ok(())
}

/// How many leading axes `scatter` walks, and how many elements each of its runs'
/// elements holds: trailing axes a task takes whole, in its chunk and in the output
/// alike, lie in one stretch of bytes in both, so they are one wide element. A
/// genotype matrix (variants, samples, ploidy 2) was copied two bytes at a time, with
/// the bookkeeping of a run each time: 12x h5py's time for a whole read.
fn folded_tail(geom: &Geometry, pieces: &[&AxisPiece]) -> (usize, u64) {
    let (mut rank, mut fold) = (pieces.len(), 1u64);
    while rank >= 2 {
        let a = rank - 1;
        let InChunk::Strided { start: 0, step: 1, len } = pieces[a].in_chunk else { break };
        let whole_in_both = geom.chunk_strides[a] == fold
            && geom.out_strides[a] == fold
            && geom.chunk_strides[a - 1] == len * fold
            && geom.out_strides[a - 1] == len * fold;
        if !whole_in_both {
            break;
        }
        fold *= len;
        rank -= 1;
    }
    (rank, fold)
}

/// `scatter` of a task that takes one element of each chunk row (a column) into
/// consecutive output elements: a tight loop down the axis before the last, where the
/// general loop spent about 10 ns an element on its bookkeeping (a column loop's
/// 2000 elements took 21 us). The output run of each outer position holds only this
/// task's elements (`out_strides` of that axis is 1), so it is one region.
fn gather_column(geom: &Geometry, pieces: &[&AxisPiece], out: SharedOut, data: &[u8], skip: usize) -> Result<()> {
    let elem = geom.element_size;
    let last = pieces.len() - 1;
    let down = last - 1;
    let (rows, row_stride) = (&pieces[down].in_chunk, geom.chunk_strides[down]);
    let column = pieces[last].in_chunk.get(0);
    let outer_total: u64 = pieces[..down].iter().map(|p| p.in_chunk.len()).product();
    let mut idx = vec![0u64; down];
    for _ in 0..outer_total {
        let mut chunk_base = column;
        let mut out_base = pieces[last].out_start * geom.out_strides[last] + pieces[down].out_start;
        for d in 0..down {
            chunk_base += pieces[d].in_chunk.get(idx[d]) * geom.chunk_strides[d];
            out_base += (pieces[d].out_start + idx[d]) * geom.out_strides[d];
        }
        let dst = out.region(out_base as usize * elem, rows.len() as usize * elem)?;
        for (i, d) in dst.chunks_exact_mut(elem).enumerate() {
            let at = (chunk_base + rows.get(i as u64) * row_stride) as usize * elem - skip;
            copy_element(d, &data[at..at + elem]);
        }
        advance(&mut idx, |d| pieces[d].in_chunk.len());
    }
    Ok(())
}

/// One element's bytes: fixed-size copies for the common sizes (a call to memcpy per
/// element costs more than the copy).
fn copy_element(dst: &mut [u8], src: &[u8]) {
    match dst.len() {
        4 => dst.copy_from_slice(&src[..4]),
        8 => dst.copy_from_slice(&src[..8]),
        2 => dst.copy_from_slice(&src[..2]),
        1 => dst[0] = src[0],
        _ => dst.copy_from_slice(src),
    }
}

/// Fill `dst` with the elements `inner` picks from the chunk row at `chunk_base`.
fn copy_run(inner: &InChunk, chunk_base: u64, dst: &mut [u8], elem: usize, from: Elements, streaming: bool) {
    match (from, inner) {
        (Elements::Fill(value), _) => fill_with(dst, value),
        (Elements::Chunk { data, skip }, InChunk::Strided { start, step: 1, .. }) => {
            let first = (chunk_base + start) as usize * elem - skip;
            let src = &data[first..first + dst.len()];
            if streaming {
                stream::copy(dst, src);
            } else {
                dst.copy_from_slice(src);
            }
        }
        (Elements::Chunk { data, skip }, _) => {
            for (i, d) in dst.chunks_exact_mut(elem).enumerate() {
                let at = (chunk_base + inner.get(i as u64)) as usize * elem - skip;
                d.copy_from_slice(&data[at..at + elem]);
            }
        }
    }
}

/// Fill `dst` (a whole number of elements) with copies of the element `value`: one
/// `memset` when its bytes are all alike (zeros, any 1-byte value), else by doubling
/// the part already filled (an element-by-element copy costs a call per element: 1.4 s
/// for 400 MB of unwritten int8).
fn fill_with(dst: &mut [u8], value: &[u8]) {
    if value.iter().all(|&b| b == value[0]) {
        dst.fill(value.first().copied().unwrap_or(0));
        return;
    }
    let first = value.len().min(dst.len());
    dst[..first].copy_from_slice(&value[..first]);
    let mut filled = first;
    while filled < dst.len() {
        let n = filled.min(dst.len() - filled);
        let (done, rest) = dst.split_at_mut(filled);
        rest[..n].copy_from_slice(&done[..n]);
        filled += n;
    }
}

/// Row-major increment of a multi-index with per-axis lengths.
pub(super) fn advance(idx: &mut [u64], len: impl Fn(usize) -> u64) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < len(d) {
            return;
        }
        idx[d] = 0;
    }
}

/// Non-temporal copies (x86-64: SSE2 streaming stores, part of the base ISA); a plain
/// copy elsewhere.
mod stream {
    /// Rows shorter than this are copied normally: the setup is not worth it.
    const MIN_STREAM_BYTES: usize = 256;

    #[cfg(target_arch = "x86_64")]
    pub fn copy(dst: &mut [u8], src: &[u8]) {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        assert_eq!(dst.len(), src.len());
        let n = dst.len();
        if n < MIN_STREAM_BYTES {
            dst.copy_from_slice(src);
            return;
        }
        let head = dst.as_ptr().align_offset(16).min(n);
        dst[..head].copy_from_slice(&src[..head]);
        let body = (n - head) / 64 * 64;
        // SAFETY: `head..head + body` lies inside both slices (body <= n - head), the
        // destination pointer is 16-byte aligned as _mm_stream_si128 requires, and
        // loads are unaligned loads.
        unsafe {
            let mut d = dst.as_mut_ptr().add(head) as *mut __m128i;
            let mut s = src.as_ptr().add(head) as *const __m128i;
            for _ in 0..body / 64 {
                let (a, b) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
                let (c, e) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
                _mm_stream_si128(d, a);
                _mm_stream_si128(d.add(1), b);
                _mm_stream_si128(d.add(2), c);
                _mm_stream_si128(d.add(3), e);
                d = d.add(4);
                s = s.add(4);
            }
        }
        let done = head + body;
        dst[done..].copy_from_slice(&src[done..]);
    }

    /// Order the streaming stores before the task is reported done.
    #[cfg(target_arch = "x86_64")]
    pub fn fence() {
        // SAFETY: sfence has no preconditions.
        unsafe { std::arch::x86_64::_mm_sfence() }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn copy(dst: &mut [u8], src: &[u8]) {
        dst.copy_from_slice(src);
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn fence() {}

    #[cfg(test)]
    mod tests {
        #[test]
        fn streaming_copy_matches_plain_copy_at_every_alignment() {
            let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
            for offset in 0..17 {
                for len in [0, 1, 255, 256, 257, 1000, 4096] {
                    let mut dst = vec![0u8; len + offset];
                    super::copy(&mut dst[offset..], &src[3..3 + len]);
                    super::fence();
                    assert_eq!(&dst[offset..], &src[3..3 + len]);
                }
            }
        }
    }
}

#[cfg(test)]
mod fill_tests {
    use super::fill_with;

    #[test]
    fn fill_with_repeats_any_element_over_any_length() {
        for value in [vec![7u8], vec![0, 0, 0, 0], vec![1, 2, 3], vec![9, 8, 7, 6, 5, 4, 3, 2], vec![5, 5]] {
            for count in [0usize, 1, 2, 3, 5, 64, 1000] {
                let mut dst = vec![0xaau8; count * value.len()];
                fill_with(&mut dst, &value);
                assert_eq!(dst, value.repeat(count), "{value:?} x {count}");
            }
        }
    }
}
