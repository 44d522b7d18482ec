//! Parallel chunk encoding for writers: a C-contiguous array is cut into chunks (edge
//! chunks padded to the full chunk shape with the fill value, as HDF5 stores them) and
//! each chunk is encoded through the pipeline on the pool. Writing the encoded chunks
//! into a file is the caller's business (h5py's direct chunk write).

use super::pool;
use crate::error::{Error, Result};
use crate::filters::encode::{EncodePipeline, EncodeScratch};
use rayon::prelude::*;

/// One encoded chunk: its offset in elements (a multiple of the chunk shape), the
/// stored bytes and the filter mask to store with them.
pub struct EncodedChunk {
    pub offset: Vec<u64>,
    pub data: Vec<u8>,
    pub filter_mask: u32,
}

/// An array in memory and how to cut it.
pub struct ChunkedArray<'a> {
    pub data: &'a [u8],
    pub shape: &'a [usize],
    pub chunk: &'a [usize],
    pub element_size: usize,
    /// One element's bytes, used to pad edge chunks; empty means zeros.
    pub fill: &'a [u8],
}

impl ChunkedArray<'_> {
    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid_argument(m));
        if self.shape.is_empty() || self.shape.len() != self.chunk.len() {
            return bad(format!("chunk shape {:?} does not fit array shape {:?}", self.chunk, self.shape));
        }
        if self.chunk.contains(&0) {
            return bad(format!("chunk shape {:?} has a zero dimension", self.chunk));
        }
        let elements = self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if elements.and_then(|n| n.checked_mul(self.element_size)) != Some(self.data.len()) {
            return bad(format!(
                "{} bytes do not hold shape {:?} of {}-byte elements",
                self.data.len(),
                self.shape,
                self.element_size
            ));
        }
        if !self.fill.is_empty() && self.fill.len() != self.element_size {
            return bad(format!("fill value of {} bytes for {}-byte elements", self.fill.len(), self.element_size));
        }
        if self.chunk_bytes().is_none() {
            return bad(format!("chunk shape {:?} is too large", self.chunk));
        }
        Ok(())
    }

    fn chunk_bytes(&self) -> Option<usize> {
        self.chunk.iter().try_fold(self.element_size, |n, &d| n.checked_mul(d))
    }

    /// Chunks along each axis (edge chunks included).
    pub fn grid(&self) -> Vec<usize> {
        self.shape.iter().zip(self.chunk).map(|(&s, &c)| s.div_ceil(c)).collect()
    }

    /// Total chunks in the grid.
    pub fn chunk_count(&self) -> usize {
        self.grid().iter().product()
    }

    /// The element offset of chunk number `index` (C order over the grid).
    fn chunk_start(&self, grid: &[usize], mut index: usize) -> Vec<usize> {
        let mut start = vec![0; grid.len()];
        for d in (0..grid.len()).rev() {
            start[d] = (index % grid[d]) * self.chunk[d];
            index /= grid[d];
        }
        start
    }

    /// Copy the chunk at `start` into `out` (the full chunk size); cells outside the
    /// array get the fill value.
    fn gather(&self, start: &[usize], out: &mut [u8]) {
        let es = self.element_size;
        let n = self.shape.len();
        let extent: Vec<usize> = (0..n).map(|d| self.chunk[d].min(self.shape[d] - start[d])).collect();
        if extent.as_slice() != self.chunk {
            pad(out, self.fill, es);
        }
        let mut src_stride = vec![es; n];
        let mut dst_stride = vec![es; n];
        for d in (0..n - 1).rev() {
            src_stride[d] = src_stride[d + 1] * self.shape[d + 1];
            dst_stride[d] = dst_stride[d + 1] * self.chunk[d + 1];
        }
        let row = extent[n - 1] * es;
        // Walk every row (all axes but the last) inside the array.
        let mut at = vec![0usize; n - 1];
        loop {
            let src: usize = (0..n).map(|d| (start[d] + at.get(d).copied().unwrap_or(0)) * src_stride[d]).sum();
            let dst: usize = (0..n - 1).map(|d| at[d] * dst_stride[d]).sum();
            out[dst..dst + row].copy_from_slice(&self.data[src..src + row]);
            let Some(d) = (0..n - 1).rev().find(|&d| at[d] + 1 < extent[d]) else { break };
            at[d] += 1;
            at[d + 1..].iter_mut().for_each(|a| *a = 0);
        }
    }
}

fn check_range(array: &ChunkedArray<'_>, first: usize, count: usize) -> Result<()> {
    let total = array.chunk_count();
    if first.checked_add(count).map_or(true, |end| end > total) {
        return Err(Error::invalid_argument(format!("chunks {}..{}+{} outside the {} chunks", first, first, count, total)));
    }
    Ok(())
}

fn pad(out: &mut [u8], fill: &[u8], es: usize) {
    if fill.is_empty() || fill.iter().all(|&b| b == 0) {
        out.fill(0);
    } else {
        for element in out.chunks_exact_mut(es) {
            element.copy_from_slice(fill);
        }
    }
}

/// Encode chunks `first .. first + count` (C order over the chunk grid) of `array` on
/// `threads` threads (0: the default); results in chunk order.
pub fn encode_chunks(
    array: &ChunkedArray<'_>,
    pipeline: &EncodePipeline,
    first: usize,
    count: usize,
    threads: usize,
) -> Result<Vec<EncodedChunk>> {
    array.check()?;
    check_range(array, first, count)?;
    let grid = array.grid();
    let chunk_bytes = array.chunk_bytes().unwrap_or(0);
    let encode_one = |state: &mut (Vec<u8>, EncodeScratch), index: usize| -> Result<EncodedChunk> {
        let (buf, scratch) = state;
        buf.resize(chunk_bytes, 0);
        let start = array.chunk_start(&grid, index);
        array.gather(&start, buf);
        let (data, filter_mask) = pipeline.encode(buf, scratch)?;
        Ok(EncodedChunk { offset: start.iter().map(|&s| s as u64).collect(), data, filter_mask })
    };
    encode_each(first..first + count, count.saturating_mul(chunk_bytes), threads, encode_one)
}

/// Where one encoded chunk landed in the caller's output buffer.
pub struct PlacedChunk {
    pub offset: Vec<u64>,
    pub start: usize,
    pub len: usize,
    pub filter_mask: u32,
}

/// The caller's output buffer, shared by the workers: each reserves a disjoint range
/// with the atomic cursor before copying into it.
struct SharedOut {
    ptr: *mut u8,
    len: usize,
    cursor: std::sync::atomic::AtomicUsize,
}

// SAFETY: workers write only into ranges reserved through the atomic cursor, which
// never overlap; the buffer outlives the parallel section (borrowed by the caller).
unsafe impl Sync for SharedOut {}

impl SharedOut {
    fn put(&self, bytes: &[u8]) -> Result<usize> {
        let start = self.cursor.fetch_add(bytes.len(), std::sync::atomic::Ordering::Relaxed);
        if start.checked_add(bytes.len()).map_or(true, |end| end > self.len) {
            return Err(Error::invalid_argument(format!(
                "output buffer of {} bytes is too small for the encoded chunks",
                self.len
            )));
        }
        // SAFETY: [start, start + len) is inside the buffer and reserved by this call only.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(start), bytes.len()) };
        Ok(start)
    }
}

/// Like [`encode_chunks`], but the stored bytes are packed one after another into
/// `out` (in completion order) instead of one allocation per chunk: no page faults
/// on fresh memory per chunk when `out` is reused. Results in chunk order.
pub fn encode_chunks_into(
    array: &ChunkedArray<'_>,
    pipeline: &EncodePipeline,
    first: usize,
    count: usize,
    threads: usize,
    out: &mut [u8],
) -> Result<Vec<PlacedChunk>> {
    array.check()?;
    check_range(array, first, count)?;
    let grid = array.grid();
    let chunk_bytes = array.chunk_bytes().unwrap_or(0);
    let shared = SharedOut { ptr: out.as_mut_ptr(), len: out.len(), cursor: Default::default() };
    let encode_one = |state: &mut (Vec<u8>, EncodeScratch), index: usize| -> Result<PlacedChunk> {
        let (buf, scratch) = state;
        buf.resize(chunk_bytes, 0);
        let start = array.chunk_start(&grid, index);
        array.gather(&start, buf);
        let (placed, len, filter_mask) =
            pipeline.encode_with(buf, scratch, |bytes, mask| (shared.put(bytes), bytes.len(), mask))?;
        Ok(PlacedChunk { offset: start.iter().map(|&s| s as u64).collect(), start: placed?, len, filter_mask })
    };
    encode_each(first..first + count, count.saturating_mul(chunk_bytes), threads, encode_one)
}

/// Raw bytes up to which chunks are encoded on the calling thread: handing so little
/// to the pool (waking its threads, each making its codec's context) cost more than
/// encoding it, 3 ms a call on a loaded host for a 400-byte dataset (repacking a file
/// of many small datasets).
const INLINE_BYTES: usize = 256 << 10;

/// `encode_one` of each chunk of `chunks` (`raw_bytes` of them in all), results in
/// chunk order: on the calling thread for one chunk or little work, else on the pool.
fn encode_each<T: Send>(
    chunks: std::ops::Range<usize>,
    raw_bytes: usize,
    threads: usize,
    encode_one: impl Fn(&mut (Vec<u8>, EncodeScratch), usize) -> Result<T> + Send + Sync,
) -> Result<Vec<T>> {
    if chunks.len() <= 1 || raw_bytes <= INLINE_BYTES {
        let mut state = (Vec::new(), EncodeScratch::default());
        return chunks.map(|index| encode_one(&mut state, index)).collect();
    }
    pool::get(pool::Threads::resolve(threads))?
        .install(|| chunks.into_par_iter().map_init(|| (Vec::new(), EncodeScratch::default()), encode_one).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::encode::FilterSpec;

    fn array<'a>(data: &'a [u8], shape: &'a [usize], chunk: &'a [usize], fill: &'a [u8]) -> ChunkedArray<'a> {
        ChunkedArray { data, shape, chunk, element_size: 1, fill }
    }

    #[test]
    fn edge_chunks_are_padded_with_the_fill_value() {
        // 3 x 5 array of bytes 0..15, chunks 2 x 2: a 2 x 3 grid.
        let data: Vec<u8> = (0..15).collect();
        let a = array(&data, &[3, 5], &[2, 2], &[0xFF]);
        let none = EncodePipeline::new(&[], 1).unwrap();
        let chunks = encode_chunks(&a, &none, 0, 6, 2).unwrap();
        assert_eq!(chunks.len(), 6);
        assert_eq!(chunks[0].offset, vec![0, 0]);
        assert_eq!(chunks[0].data, vec![0, 1, 5, 6]);
        assert_eq!(chunks[2].offset, vec![0, 4]);
        assert_eq!(chunks[2].data, vec![4, 0xFF, 9, 0xFF]);
        assert_eq!(chunks[5].offset, vec![2, 4]);
        assert_eq!(chunks[5].data, vec![14, 0xFF, 0xFF, 0xFF]);
        let part = encode_chunks(&a, &none, 4, 2, 1).unwrap();
        assert_eq!(part[0].data, vec![12, 13, 0xFF, 0xFF]);
    }

    #[test]
    fn three_dimensional_chunks_gather_every_row() {
        let data: Vec<u8> = (0..60).collect(); // 3 x 4 x 5
        let a = array(&data, &[3, 4, 5], &[2, 3, 4], &[]);
        let none = EncodePipeline::new(&[], 1).unwrap();
        let chunks = encode_chunks(&a, &none, 0, a.chunk_count(), 0).unwrap();
        for c in &chunks {
            let (o0, o1, o2) = (c.offset[0] as usize, c.offset[1] as usize, c.offset[2] as usize);
            for i in 0..2 {
                for j in 0..3 {
                    for k in 0..4 {
                        let expected = if o0 + i < 3 && o1 + j < 4 && o2 + k < 5 {
                            data[(o0 + i) * 20 + (o1 + j) * 5 + o2 + k]
                        } else {
                            0
                        };
                        assert_eq!(c.data[i * 12 + j * 4 + k], expected);
                    }
                }
            }
        }
    }

    #[test]
    fn packed_output_holds_the_same_chunks() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let a = array(&data, &[50, 100], &[16, 32], &[9]);
        let gz = EncodePipeline::new(&[FilterSpec { id: 1, flags: 0, client_data: vec![3] }], 1).unwrap();
        let separate = encode_chunks(&a, &gz, 2, 10, 2).unwrap();
        let mut out = vec![0u8; 1 << 20];
        let placed = encode_chunks_into(&a, &gz, 2, 10, 2, &mut out).unwrap();
        for (s, p) in separate.iter().zip(&placed) {
            assert_eq!(s.offset, p.offset);
            assert_eq!(s.data, &out[p.start..p.start + p.len]);
        }
        assert!(encode_chunks_into(&a, &gz, 2, 10, 2, &mut [0u8; 100]).is_err());
    }

    #[test]
    fn bad_arguments_are_errors() {
        let data = vec![0u8; 10];
        let none = EncodePipeline::new(&[], 1).unwrap();
        let gz = EncodePipeline::new(&[FilterSpec { id: 1, flags: 0, client_data: vec![3] }], 1).unwrap();
        assert!(encode_chunks(&array(&data, &[10], &[0], &[]), &none, 0, 1, 1).is_err());
        assert!(encode_chunks(&array(&data, &[11], &[4], &[]), &none, 0, 1, 1).is_err());
        assert!(encode_chunks(&array(&data, &[10], &[4, 1], &[]), &none, 0, 1, 1).is_err());
        assert!(encode_chunks(&array(&data, &[10], &[4], &[1, 2]), &none, 0, 1, 1).is_err());
        assert!(encode_chunks(&array(&data, &[10], &[4], &[]), &gz, 2, 2, 1).is_err());
        assert_eq!(encode_chunks(&array(&data, &[10], &[4], &[]), &gz, 1, 2, 1).unwrap().len(), 2);
    }
}
