//! The codec-only limit of a chunked dataset (or of every nanopore signal in fast5
//! files): every stored chunk is read into memory first, then all of them are decoded
//! in parallel (the reader's own decoders, on the reader's thread pools) into a
//! pre-faulted buffer, one chunk-sized region per chunk. No file I/O and no scatter
//! into an array while timed: what the decoders alone do on this machine, the
//! reference row of every benchmark of warm reads.

use crate::error::{Error, Result, ResultExt};
use crate::file::{Dataset, File};
use crate::filters::{decode_chunk, DecodeScratch};
use crate::formats::fast5::{open_file, Fast5Index};
use crate::io::{FileSource, ReadAt};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Median seconds, over `repeats` timed passes after one warm-up pass, to decode every
/// stored chunk of `dataset` in `path` on `threads` threads (0: the default count).
pub fn codec_limit(path: &Path, dataset: &str, threads: usize, repeats: usize) -> Result<f64> {
    let file = File::open(path)?;
    let ds = file.get(dataset)?.dataset()?;
    if ds.chunk_dims().is_none() {
        return Err(Error::unsupported(format!("{}: {}: not chunked", path.display(), dataset)));
    }
    let mut stored = StoredChunks::default();
    stored.add_dataset(&file, &ds, path, dataset)?;
    stored.median_decode_seconds(threads, repeats)
}

/// As `codec_limit`, for the raw signal (`Raw/Signal`) of every read in these fast5
/// files (single- or multi-read), decoded all together.
pub fn fast5_limit(paths: &[PathBuf], threads: usize, repeats: usize) -> Result<f64> {
    let mut stored = StoredChunks::default();
    for path in paths {
        add_fast5_signals(&mut stored, path).in_file(path)?;
    }
    stored.median_decode_seconds(threads, repeats)
}

fn add_fast5_signals(stored: &mut StoredChunks, path: &Path) -> Result<()> {
    let file = open_file(path)?;
    let index = Fast5Index::open(&file)?;
    for i in 0..index.len() {
        let read = index.read_groups(i)?;
        let signal = read.raw?.child("Signal")?.dataset()?;
        stored.add_dataset(&file, &signal, path, &format!("the Signal of read {}", read.name))?;
    }
    Ok(())
}

/// Stored chunks held in memory, each with the dataset whose pipeline decodes it.
#[derive(Default)]
struct StoredChunks {
    chunks: Vec<Stored>,
    decoded_bytes: usize,
}

struct Stored {
    dataset: Arc<Dataset>,
    bytes: Vec<u8>,
    filter_mask: u32,
    decoded_len: usize,
}

impl StoredChunks {
    /// Every stored chunk of `ds`, in index order. Each chunk must lie inside the file,
    /// so no allocation is larger than the file.
    fn add_dataset(&mut self, file: &File, ds: &Arc<Dataset>, path: &Path, name: &str) -> Result<()> {
        let where_ = || format!("{}: {}", path.display(), name);
        let decoded_len = chunk_bytes(ds).ok_or_else(|| Error::unsupported(format!("{}: not chunked", where_())))?;
        ds.decoder()?; // a filter h5turbo does not decode is an error before anything is read
        let Some(index) = ds.chunk_index(file)? else { return Ok(()) };
        let base = file.superblock().base_address;
        let source = FileSource::open(path)?;
        for (_, loc) in index.iter() {
            let start = loc.address.checked_add(base);
            let inside = start.and_then(|s| s.checked_add(loc.size)).is_some_and(|end| end <= source.len());
            let (Some(start), true) = (start, inside) else {
                return Err(Error::format(format!(
                    "{}: a chunk of {} bytes at {} lies beyond the end of the file",
                    where_(),
                    loc.size,
                    loc.address
                )));
            };
            let mut bytes = vec![0u8; loc.size as usize];
            source.read_exact_at(&mut bytes, start)?;
            self.decoded_bytes = self
                .decoded_bytes
                .checked_add(decoded_len)
                .ok_or_else(|| Error::unsupported(format!("{}: decoded size overflows", where_())))?;
            self.chunks.push(Stored { dataset: ds.clone(), bytes, filter_mask: loc.filter_mask, decoded_len });
        }
        Ok(())
    }

    /// Median seconds of `repeats` timed passes (after a warm-up) decoding every chunk
    /// into its own region of one pre-faulted buffer, on `threads` threads.
    fn median_decode_seconds(&self, threads: usize, repeats: usize) -> Result<f64> {
        let mut out = prefaulted(self.decoded_bytes).map_err(Error::unsupported)?;
        let pool = super::pool::get(super::pool::Threads::resolve(threads))?;
        let mut times = Vec::with_capacity(repeats.max(1));
        for pass in 0..=repeats.max(1) {
            let start = Instant::now();
            pool.install(|| self.decode_all(&mut out))?;
            if pass > 0 {
                times.push(start.elapsed().as_secs_f64()); // pass 0 is the warm-up
            }
        }
        times.sort_by(|a, b| a.total_cmp(b));
        Ok(times[times.len() / 2])
    }

    fn decode_all(&self, out: &mut [u8]) -> Result<()> {
        let mut regions = Vec::with_capacity(self.chunks.len());
        let mut rest = out;
        for chunk in &self.chunks {
            let (region, tail) = std::mem::take(&mut rest).split_at_mut(chunk.decoded_len);
            regions.push(region);
            rest = tail;
        }
        regions.into_par_iter().zip(self.chunks.par_iter()).try_for_each_init(DecodeScratch::default, |scratch, (dst, c)| {
            decode_chunk(c.dataset.decoder()?, c.filter_mask, &c.bytes, dst, scratch)
        })
    }
}

/// Decoded bytes of one chunk; None for datasets without chunks.
fn chunk_bytes(ds: &Dataset) -> Option<usize> {
    let elements = ds.chunk_dims()?.iter().try_fold(1u64, |n, &d| n.checked_mul(d))?;
    usize::try_from(elements).ok()?.checked_mul(ds.element_size())
}

/// A buffer of `len` bytes on 2 MiB boundaries with transparent huge pages requested,
/// as numpy does for large arrays (the fair comparison for reads into numpy arrays),
/// every byte written once so the timed passes never fault. A failed allocation is an
/// error, not an abort.
fn prefaulted(len: usize) -> std::result::Result<HugeBuffer, String> {
    let mut out = HugeBuffer::new(len)?;
    out.fill(1);
    Ok(out)
}

struct HugeBuffer {
    ptr: *mut u8,
    len: usize,
    layout: std::alloc::Layout,
}

const HUGE_PAGE: usize = 2 << 20;

extern "C" {
    fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
}

impl HugeBuffer {
    fn new(len: usize) -> std::result::Result<Self, String> {
        let too_big = || format!("cannot allocate {} bytes for the decoded chunks", len);
        let size = len.max(1).checked_next_multiple_of(HUGE_PAGE).ok_or_else(too_big)?;
        let layout = std::alloc::Layout::from_size_align(size, HUGE_PAGE).map_err(|_| too_big())?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(too_big());
        }
        // MADV_HUGEPAGE (14): advisory; without it the limit is only measured lower.
        // SAFETY: ptr..ptr + size is the allocation just made.
        unsafe { madvise(ptr.cast(), layout.size(), 14) };
        // SAFETY: the memory is ours; written in full before any read.
        unsafe { std::ptr::write_bytes(ptr, 0, layout.size()) };
        Ok(HugeBuffer { ptr, len, layout })
    }
}

// SAFETY: the buffer is uniquely owned; access goes through &self / &mut self.
unsafe impl Send for HugeBuffer {}
unsafe impl Sync for HugeBuffer {}

impl std::ops::Deref for HugeBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of at least len initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for HugeBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes the view unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HugeBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}
