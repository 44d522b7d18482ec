//! The codec-only limit of reading fast5 signals: every read's stored `Signal` chunks
//! from the given files are loaded into memory first, then decoded in parallel (rayon,
//! the reader's own decoders: vbz or gzip) into one pre-faulted buffer. No file
//! opening, no metadata, no Python: what decoding alone costs for the same reads.
//!
//!     cargo run --release --example fast5_limit -- [--threads N] [--repeats N] FILE...
//!
//! Prints one line per repeat and a final `reads=... samples=... median_s=...` line.

use h5turbo_core::prelude::fast5::{open_file, Fast5Index};
use h5turbo_core::file::Dataset;
use h5turbo_core::filters::{decode_chunk, DecodeScratch};
use h5turbo_core::io::{FileSource, ReadAt};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// One stored chunk of one read's signal and its decoded size (the chunks' decoded
/// bytes lie one after another in the output buffer).
struct Stored {
    dataset: Arc<Dataset>,
    bytes: Vec<u8>,
    filter_mask: u32,
    out_len: usize,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("fast5_limit: {}", e);
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let threads = take_option(&mut args, "--threads")?.unwrap_or(0);
    let repeats = take_option(&mut args, "--repeats")?.unwrap_or(5).max(1);
    if args.is_empty() {
        return Err("usage: fast5_limit [--threads N] [--repeats N] FILE...".into());
    }
    let (mut stored, mut total, mut reads) = (Vec::new(), 0usize, 0usize);
    for path in &args {
        reads += load_signals(Path::new(path), &mut stored, &mut total)?;
    }
    let mut out = vec![1u8; total]; // written once: pre-faulted
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(if threads == 0 { h5turbo_core::engine::pool::default_threads() } else { threads })
        .build()?;
    let mut times = Vec::new();
    for rep in 0..=repeats {
        let start = Instant::now();
        pool.install(|| decode_all(&stored, &mut out))?;
        let secs = start.elapsed().as_secs_f64();
        if rep > 0 {
            println!("repeat {}: {:.3} s ({:.0} MB/s decoded)", rep, secs, total as f64 / secs / 1e6);
            times.push(secs);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "reads={} samples={} chunks={} threads={} median_s={:.4}",
        reads,
        total / 2,
        stored.len(),
        pool.current_num_threads(),
        times[times.len() / 2]
    );
    Ok(())
}

fn take_option(args: &mut Vec<String>, name: &str) -> Result<Option<usize>, Box<dyn std::error::Error>> {
    let Some(at) = args.iter().position(|a| a == name) else { return Ok(None) };
    let value = args.get(at + 1).ok_or(format!("{} needs a value", name))?.parse()?;
    args.drain(at..at + 2);
    Ok(Some(value))
}

/// Every stored Signal chunk of the file's reads, appended to `stored`; returns the
/// number of reads.
fn load_signals(path: &Path, stored: &mut Vec<Stored>, total: &mut usize) -> Result<usize, Box<dyn std::error::Error>> {
    let file = open_file(path)?;
    let index = Fast5Index::open(&file)?;
    let source = FileSource::open(path)?;
    let base = file.superblock().base_address;
    for i in 0..index.len() {
        let raw = index.read_groups(i)?.raw?;
        let dataset = raw.child("Signal")?.dataset()?;
        let chunk_bytes = dataset.chunk_dims().ok_or("Signal is not chunked")?.iter().product::<u64>() as usize
            * dataset.element_size();
        let chunks = dataset.chunk_index(&file)?.ok_or("Signal has no chunk index")?;
        for (_, loc) in chunks.iter() {
            let mut bytes = vec![0u8; loc.size as usize];
            source.read_exact_at(&mut bytes, loc.address + base)?;
            stored.push(Stored { dataset: dataset.clone(), bytes, filter_mask: loc.filter_mask, out_len: chunk_bytes });
            *total += chunk_bytes;
        }
    }
    Ok(index.len())
}

fn decode_all(stored: &[Stored], out: &mut [u8]) -> h5turbo_core::Result<()> {
    let mut regions = Vec::with_capacity(stored.len());
    let mut rest = out;
    for s in stored {
        let (region, tail) = std::mem::take(&mut rest).split_at_mut(s.out_len);
        regions.push(region);
        rest = tail;
    }
    regions.into_par_iter().zip(stored.par_iter()).try_for_each_init(DecodeScratch::default, |scratch, (dst, s)| {
        decode_chunk(s.dataset.decoder()?, s.filter_mask, &s.bytes, dst, scratch)
    })
}
