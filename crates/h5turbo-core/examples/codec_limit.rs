//! The codec-only limit of a chunked dataset: every stored chunk is read into memory
//! first, then decoded in parallel (rayon, the same decoders as the reader) into a
//! pre-faulted buffer, one chunk-sized region per chunk. No file I/O, no scatter into
//! an array: what the decoders alone can do on this machine.
//!
//!     cargo run --release --example codec_limit -- FILE DATASET [THREADS] [REPEATS]
//!
//! Prints one line per repeat and a final `median_s=...` line.

use h5turbo_core::file::File;
use h5turbo_core::filters::{decode_chunk, DecodeScratch};
use h5turbo_core::io::{FileSource, ReadAt};
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("codec_limit: {}", e);
        std::process::exit(1);
    }
}

/// A zeroed buffer on 2 MiB boundaries with transparent huge pages requested, as numpy
/// does for large arrays: the fair comparison for reads into numpy arrays.
struct HugeBuffer {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

const HUGE_PAGE: usize = 2 << 20;

extern "C" {
    fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
}

impl HugeBuffer {
    fn new(len: usize) -> Result<Self, Box<dyn std::error::Error>> {
        let layout = std::alloc::Layout::from_size_align(len.max(1).next_multiple_of(HUGE_PAGE), HUGE_PAGE)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err("out of memory".into());
        }
        // MADV_HUGEPAGE (14): advisory; without it the limit is only measured lower.
        unsafe { madvise(ptr.cast(), layout.size(), 14) };
        Ok(HugeBuffer { ptr, layout })
    }
}

// SAFETY: the buffer is uniquely owned; access goes through &self / &mut self.
unsafe impl Send for HugeBuffer {}
unsafe impl Sync for HugeBuffer {}

impl std::ops::Deref for HugeBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of layout.size() initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl std::ops::DerefMut for HugeBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes the view unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for HugeBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: codec_limit FILE DATASET [THREADS] [REPEATS]".into());
    }
    let path = Path::new(&args[1]);
    let threads: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0);
    let repeats: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let file = File::open(path)?;
    let ds = file.get(&args[2])?.dataset()?;
    let index = ds.chunk_index(&file)?.ok_or("the dataset is not chunked")?;
    let chunk_bytes: usize = ds.chunk_dims().ok_or("no chunk shape")?.iter().product::<u64>() as usize * ds.element_size();
    let base = file.superblock().base_address;
    let source = FileSource::open(path)?;
    let mut stored = Vec::new();
    for (_, loc) in index.iter() {
        let mut bytes = vec![0u8; loc.size as usize];
        source.read_exact_at(&mut bytes, loc.address + base)?;
        stored.push((bytes, loc.filter_mask));
    }
    let mut out = HugeBuffer::new(stored.len() * chunk_bytes)?;
    out.fill(1); // written once: pre-faulted
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(if threads == 0 { h5turbo_core::engine::pool::default_threads() } else { threads })
        .build()?;
    let decoder = ds.decoder()?;
    let mut times = Vec::new();
    for rep in 0..repeats + 1 {
        let start = Instant::now();
        pool.install(|| {
            let out: &mut [u8] = &mut out;
            out.par_chunks_mut(chunk_bytes).zip(stored.par_iter()).try_for_each_init(
                DecodeScratch::default,
                |scratch, (dst, (src, mask))| decode_chunk(decoder, *mask, src, dst, scratch),
            )
        })?;
        let secs = start.elapsed().as_secs_f64();
        if rep > 0 {
            // the first pass is a warm-up
            println!("repeat {}: {:.3} s ({:.0} MB/s decoded)", rep, secs, (stored.len() * chunk_bytes) as f64 / secs / 1e6);
            times.push(secs);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    println!("chunks={} threads={} median_s={:.4}", stored.len(), pool.current_num_threads(), times[times.len() / 2]);
    Ok(())
}
