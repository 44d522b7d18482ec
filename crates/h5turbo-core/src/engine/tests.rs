//! Engine tests on synthetic chunked arrays in memory, checked against a direct
//! element-by-element reference.

use super::*;
use super::reduce;
use crate::format::filter_pipeline::{FilterInfo, FilterPipeline};
use crate::io::MemSource;
use std::collections::HashMap;

/// A 2-D u32 array whose element (i, j) is i * 1000 + j, stored in chunks laid out
/// in reverse order in memory (so coalescing sees gaps and order changes), with
/// some chunks missing (fill value 7).
struct Fixture {
    source: MemSource,
    dims: Vec<u64>,
    chunk_dims: Vec<u64>,
    chunks: HashMap<Vec<u64>, StoredChunk>,
    pipeline: crate::filters::DecodePipeline,
}

impl ChunkStore for Fixture {
    fn locate(&self, chunk: &[u64]) -> Option<StoredChunk> {
        self.chunks.get(chunk).copied()
    }
}

fn value(i: u64, j: u64) -> u32 {
    (i * 1000 + j) as u32
}

fn missing(ci: u64, cj: u64) -> bool {
    (ci + cj) % 3 == 1
}

fn fixture(dims: [u64; 2], chunk: [u64; 2], deflate: bool) -> Fixture {
    let grid = [dims[0].div_ceil(chunk[0]), dims[1].div_ceil(chunk[1])];
    let mut bytes = Vec::new();
    let mut chunks = HashMap::new();
    let mut compressor = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
    for ci in (0..grid[0]).rev() {
        for cj in (0..grid[1]).rev() {
            if missing(ci, cj) {
                continue;
            }
            let mut raw = Vec::new();
            for a in 0..chunk[0] {
                for b in 0..chunk[1] {
                    // Edge chunks hold garbage past the dataset edge, as HDF5 allows.
                    let (i, j) = (ci * chunk[0] + a, cj * chunk[1] + b);
                    let v = if i < dims[0] && j < dims[1] { value(i, j) } else { 0xdead };
                    raw.extend_from_slice(&v.to_le_bytes());
                }
            }
            let stored = if deflate {
                let mut out = vec![0u8; compressor.zlib_compress_bound(raw.len())];
                let n = compressor.zlib_compress(&raw, &mut out).unwrap();
                out.truncate(n);
                out
            } else {
                raw
            };
            chunks.insert(vec![ci, cj], StoredChunk { address: bytes.len() as u64, size: stored.len() as u64, filter_mask: 0 });
            bytes.extend_from_slice(&stored);
            bytes.extend_from_slice(&[0u8; 16]); // a small gap between chunks
        }
    }
    let pipeline = if deflate {
        FilterPipeline { filters: vec![FilterInfo { id: 1, name: None, optional: false, client_data: vec![6] }] }
    } else {
        FilterPipeline::default()
    };
    Fixture { source: MemSource::new(bytes), dims: dims.to_vec(), chunk_dims: chunk.to_vec(), chunks, pipeline: crate::filters::DecodePipeline::new(&pipeline, 4).unwrap() }
}

/// What unwritten chunks of the fixtures read as.
const FILL: [u8; 4] = 7u32.to_le_bytes();

/// The fixture as the engine sees it (fill value 7), read through `source`.
fn source_of<'a>(f: &'a Fixture, source: &'a dyn crate::io::ReadAt, cache: Option<cache::CacheSlot<'a>>) -> ArraySource<'a> {
    ArraySource {
        source,
        dims: &f.dims,
        chunk_dims: &f.chunk_dims,
        element_size: 4,
        pipeline: &f.pipeline,
        store: f,
        fill: &FILL,
        allow_short_chunks: false,
        cache,
    }
}

fn indices(sel: &AxisSelection) -> Vec<u64> {
    match sel {
        AxisSelection::Range { start, count, step } => (0..*count).map(|i| start + i * step).collect(),
        AxisSelection::Points(p) => p.clone(),
    }
}

fn expected(f: &Fixture, sel: &[AxisSelection]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in indices(&sel[0]) {
        for j in indices(&sel[1]) {
            let v = if missing(i / f.chunk_dims[0], j / f.chunk_dims[1]) { 7 } else { value(i, j) };
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

fn read(f: &Fixture, sel: &[AxisSelection], threads: usize) -> Result<Vec<u8>> {
    let n: u64 = sel.iter().map(|s| s.count()).product();
    let mut out = vec![0xffu8; n as usize * 4];
    let src = source_of(f, &f.source, None);
    read_selection(&src, sel, &mut out, threads)?;
    Ok(out)
}

fn selections() -> Vec<[AxisSelection; 2]> {
    use AxisSelection::*;
    vec![
        [AxisSelection::all(37), AxisSelection::all(23)],
        [Range { start: 5, count: 10, step: 3 }, Range { start: 0, count: 23, step: 1 }],
        [Points(vec![0, 1, 9, 10, 36]), Range { start: 22, count: 1, step: 1 }],
        [Range { start: 8, count: 8, step: 1 }, Points(vec![2, 3, 4, 19, 20])],
        [Range { start: 0, count: 0, step: 1 }, AxisSelection::all(23)],
    ]
}

#[test]
fn reads_match_reference_unfiltered_and_deflate() {
    for deflate in [false, true] {
        for chunk in [[8, 5], [37, 23], [1, 23], [40, 30]] {
            let f = fixture([37, 23], chunk, deflate);
            for sel in selections() {
                for threads in [1, 3] {
                    let got = read(&f, &sel, threads).unwrap();
                    assert_eq!(got, expected(&f, &sel), "chunk {:?} deflate {} sel {:?}", chunk, deflate, sel);
                }
            }
        }
    }
}

#[test]
fn rejects_bad_selection_and_wrong_buffer() {
    let f = fixture([37, 23], [8, 5], false);
    let sel = [AxisSelection::all(38), AxisSelection::all(23)];
    assert!(read(&f, &sel, 1).is_err());
    let src = ArraySource {
        source: &f.source,
        dims: &f.dims,
        chunk_dims: &f.chunk_dims,
        element_size: 4,
        pipeline: &f.pipeline,
        store: &f,
        fill: &[0; 4],
        allow_short_chunks: false,
        cache: None,
    };
    let mut small = vec![0u8; 8];
    let sel = [AxisSelection::all(37), AxisSelection::all(23)];
    assert!(read_selection(&src, &sel, &mut small, 1).is_err());
}

#[test]
fn corrupt_chunk_is_an_error_naming_the_chunk() {
    let mut f = fixture([37, 23], [8, 5], true);
    let loc = f.chunks[&vec![0, 0]];
    let mut bytes = vec![0u8; f.source.len() as usize];
    f.source.read_exact_at(&mut bytes, 0).unwrap();
    for b in &mut bytes[loc.address as usize..(loc.address + loc.size) as usize] {
        *b ^= 0x5a;
    }
    f.source = MemSource::new(bytes);
    let err = read(&f, &[AxisSelection::all(37), AxisSelection::all(23)], 2).unwrap_err();
    assert!(err.to_string().contains("chunk at [0, 0]"), "{}", err);
}

#[test]
fn reads_through_the_chunk_cache_match_reference() {
    let f = fixture([37, 23], [8, 5], true);
    let file_cache = cache::ChunkCache::new(1 << 20);
    let cache = file_cache.slot(0);
    let src = source_of(&f, &f.source, Some(cache));
    for sel in selections() {
        for pass in 0..2 {
            let n: u64 = sel.iter().map(|s| s.count()).product();
            let mut out = vec![0xffu8; n as usize * 4];
            read_selection(&src, &sel, &mut out, 2).unwrap();
            assert_eq!(out, expected(&f, &sel), "pass {} sel {:?}", pass, sel);
        }
    }
    // Chunk (0, 0) is stored and was read: it is now served from the cache.
    assert!(cache.get(&[0, 0]).is_some());
}

/// Counts the bytes read through it.
struct Counting<'a> {
    inner: &'a MemSource,
    bytes: std::sync::atomic::AtomicU64,
}

impl crate::io::ReadAt for Counting<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.bytes.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(buf, offset)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

#[test]
fn unfiltered_reads_only_the_selected_span() {
    let f = fixture([37, 23], [8, 5], false);
    let counting = Counting { inner: &f.source, bytes: Default::default() };
    let src = source_of(&f, &counting, None);
    // Element (3, 2) sits in chunk (0, 0), a stored one: 4 bytes, not the 160 of the chunk.
    let sel = [AxisSelection::Points(vec![3]), AxisSelection::Points(vec![2])];
    let mut out = vec![0u8; 4];
    read_selection(&src, &sel, &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &sel));
    assert_eq!(counting.bytes.load(std::sync::atomic::Ordering::Relaxed), 4);
    // Rows 1..3, columns 1..4 of chunk (0, 0): from element 1*5+1 to 2*5+3, 8 elements.
    counting.bytes.store(0, std::sync::atomic::Ordering::Relaxed);
    let sel = [AxisSelection::Range { start: 1, count: 2, step: 1 }, AxisSelection::Range { start: 1, count: 3, step: 1 }];
    let mut out = vec![0u8; 24];
    read_selection(&src, &sel, &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &sel));
    assert_eq!(counting.bytes.load(std::sync::atomic::Ordering::Relaxed), 8 * 4);
}

fn reduce(f: &Fixture, sel: &[AxisSelection], axes: &[bool], op: reduce::ReduceOp, threads: usize) -> reduce::Reduced {
    let src = source_of(f, &f.source, None);
    let kind = reduce::ElementKind { class: reduce::NumberClass::Unsigned, size: 4, big_endian: false };
    reduce::reduce_selection(&src, kind, sel, axes, op, threads).unwrap()
}

/// Per output cell (reduced axes collapsed), the selected values, from the reference read.
fn cells(f: &Fixture, sel: &[AxisSelection], axes: &[bool]) -> Vec<Vec<f64>> {
    let (rows, cols) = (sel[0].count() as usize, sel[1].count() as usize);
    let values: Vec<f64> =
        expected(f, sel).chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64).collect();
    let out_cols = if axes[1] { 1 } else { cols };
    let out_rows = if axes[0] { 1 } else { rows };
    let mut cells = vec![Vec::new(); out_rows * out_cols];
    for i in 0..rows {
        for j in 0..cols {
            let at = (if axes[0] { 0 } else { i }) * out_cols + if axes[1] { 0 } else { j };
            cells[at].push(values[i * cols + j]);
        }
    }
    cells
}

#[test]
fn reductions_match_reference_on_every_axis_set() {
    use reduce::{ReduceOp, Reduced};
    for deflate in [false, true] {
        let f = fixture([37, 23], [8, 5], deflate);
        for sel in selections().into_iter().take(4) {
            for axes in [[true, true], [true, false], [false, true], [false, false]] {
                let want = cells(&f, &sel, &axes);
                for threads in [1, 3] {
                    let Reduced::Int(sums) = reduce(&f, &sel, &axes, ReduceOp::SumInt, threads) else { panic!() };
                    let want_sums: Vec<i64> = want.iter().map(|c| c.iter().sum::<f64>() as i64).collect();
                    assert_eq!(sums, want_sums, "{:?} {:?}", sel, axes);
                    let Reduced::Native(max) = reduce(&f, &sel, &axes, ReduceOp::Max, threads) else { panic!() };
                    let max: Vec<f64> = max.chunks_exact(4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as f64).collect();
                    assert_eq!(max, want.iter().map(|c| c.iter().cloned().fold(f64::MIN, f64::max)).collect::<Vec<_>>());
                    let Reduced::Moments { count, mean, m2 } = reduce(&f, &sel, &axes, ReduceOp::Moments, threads) else { panic!() };
                    for (k, c) in want.iter().enumerate() {
                        let mu = c.iter().sum::<f64>() / c.len() as f64;
                        let ss: f64 = c.iter().map(|x| (x - mu) * (x - mu)).sum();
                        assert_eq!(count[k], c.len() as u64);
                        assert!((mean[k] - mu).abs() <= 1e-9 * mu.abs().max(1.0));
                        assert!((m2[k] - ss).abs() <= 1e-9 * ss.max(1.0), "{} vs {}", m2[k], ss);
                    }
                }
            }
        }
    }
}

/// A 2-D f64 array whose values span twelve orders of magnitude (so the order in which
/// partial sums meet changes their last bits), stored chunk by chunk in a shuffled
/// order with every fifth chunk missing (fill value 0.25).
fn float_fixture(dims: [u64; 2], chunk: [u64; 2]) -> Fixture {
    let grid = [dims[0].div_ceil(chunk[0]), dims[1].div_ceil(chunk[1])];
    let mut order: Vec<[u64; 2]> = (0..grid[0]).flat_map(|ci| (0..grid[1]).map(move |cj| [ci, cj])).collect();
    order.sort_by_key(|&[ci, cj]| (ci * 7919 + cj * 104729) % 1009);
    let (mut bytes, mut chunks) = (Vec::new(), HashMap::new());
    for (n, [ci, cj]) in order.into_iter().enumerate() {
        if n % 5 == 4 {
            continue;
        }
        chunks.insert(vec![ci, cj], StoredChunk { address: bytes.len() as u64, size: chunk[0] * chunk[1] * 8, filter_mask: 0 });
        for a in 0..chunk[0] {
            for b in 0..chunk[1] {
                let (i, j) = (ci * chunk[0] + a, cj * chunk[1] + b);
                let v = ((i * 31 + j * 17) % 1000) as f64 * 1e-3 + if (i + j) % 7 == 0 { 1e9 } else { 0.0 };
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let pipeline = crate::filters::DecodePipeline::new(&FilterPipeline::default(), 8).unwrap();
    Fixture { source: MemSource::new(bytes), dims: dims.to_vec(), chunk_dims: chunk.to_vec(), chunks, pipeline }
}

fn reduce_f64(f: &Fixture, axes: &[bool], op: reduce::ReduceOp, threads: usize, limits: reduce::Limits) -> reduce::Reduced {
    let fill = 0.25f64.to_le_bytes();
    let src = ArraySource {
        source: &f.source,
        dims: &f.dims,
        chunk_dims: &f.chunk_dims,
        element_size: 8,
        pipeline: &f.pipeline,
        store: f,
        fill: &fill,
        allow_short_chunks: false,
        cache: None,
    };
    let kind = reduce::ElementKind { class: reduce::NumberClass::Float, size: 8, big_endian: false };
    let sel: Vec<AxisSelection> = f.dims.iter().map(|&n| AxisSelection::all(n)).collect();
    reduce::reduce_with_limits(&src, kind, &sel, axes, op, threads, limits).unwrap()
}

/// The bits of every float in a result, to compare results exactly.
fn float_bits(r: &reduce::Reduced) -> Vec<u64> {
    match r {
        reduce::Reduced::Float(v) => v.iter().map(|x| x.to_bits()).collect(),
        reduce::Reduced::Moments { count, mean, m2 } => {
            count.iter().copied().chain(mean.iter().chain(m2).map(|x| x.to_bits())).collect()
        }
        other => panic!("not a float result: {other:?}"),
    }
}

#[test]
fn float_sums_and_moments_are_the_same_bits_on_every_thread_count_and_run() {
    use reduce::{ReduceOp, Reduced};
    let f = float_fixture([203, 61], [4, 3]);
    for axes in [[true, true], [true, false], [false, true]] {
        for op in [ReduceOp::SumFloat, ReduceOp::Moments] {
            let serial = reduce_f64(&f, &axes, op, 1, reduce::Limits::default());
            for threads in [2, 3, 8] {
                // max_waiting_bytes 0: every thread whose results wait for their turn
                // pauses (and must not stall the read); shards of 1 to 7 cells: chunks
                // merge into many shards at once.
                let extremes = [(0, 1), (0, 7), (64 << 20, 7), (64 << 20, 4096)];
                for (max_waiting_bytes, min_shard_cells) in extremes {
                    for _ in 0..3 {
                        let limits = reduce::Limits { max_waiting_bytes, min_shard_cells };
                        let got = reduce_f64(&f, &axes, op, threads, limits);
                        assert_eq!(float_bits(&got), float_bits(&serial), "{op:?} {axes:?} on {threads} threads");
                    }
                }
            }
        }
        // and the fixed order still sums correctly
        let limits = reduce::Limits { max_waiting_bytes: 0, min_shard_cells: 5 };
        let Reduced::Float(sums) = reduce_f64(&f, &axes, ReduceOp::SumFloat, 3, limits) else { panic!() };
        let total: f64 = sums.iter().sum();
        let want: f64 = (0..203u64)
            .flat_map(|i| (0..61u64).map(move |j| (i, j)))
            .map(|(i, j)| {
                let [ci, cj] = [i / 4, j / 3];
                if f.chunks.contains_key(&vec![ci, cj]) {
                    ((i * 31 + j * 17) % 1000) as f64 * 1e-3 + if (i + j) % 7 == 0 { 1e9 } else { 0.0 }
                } else {
                    0.25
                }
            })
            .sum();
        assert!((total - want).abs() <= 1e-12 * want, "{total} vs {want}");
    }
}

#[test]
fn unfiltered_columns_are_kept_whole_rows_after_a_few_narrowed_reads() {
    // a row's narrowed read takes 16 bytes of each chunk (of 32 KiB); the third read in
    // a row of the same chunks reads them whole
    let f = fixture([4096, 12], [2048, 4], false);
    let file_cache = cache::ChunkCache::new(1 << 20);
    let cache = file_cache.slot(0);
    let counting = Counting { inner: &f.source, bytes: Default::default() };
    let src = source_of(&f, &counting, Some(cache));
    let bytes = || counting.bytes.swap(0, std::sync::atomic::Ordering::Relaxed);
    let row = |i: u64| [AxisSelection::Points(vec![i]), AxisSelection::all(12)];
    let mut out = vec![0u8; 12 * 4];
    for i in 3..5 {
        // narrowed reads, 4 bytes per column, nothing kept
        read_selection(&src, &row(i), &mut out, 1).unwrap();
        assert_eq!(out, expected(&f, &row(i)));
        assert!(bytes() <= 12 * 4 && cache.get(&[0, 0]).is_none());
    }
    // the third row of those chunks reads them whole and keeps them ...
    read_selection(&src, &row(10), &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &row(10)));
    assert!(bytes() >= 2 * 2048 * 4 * 4 && cache.get(&[0, 0]).is_some()); // (chunk [0, 1] is unwritten)
    // ... so the next rows come from memory; rows of other chunks start narrowed again
    read_selection(&src, &row(11), &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &row(11)));
    assert_eq!(bytes(), 0);
    read_selection(&src, &row(3000), &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &row(3000)));
    assert!(bytes() <= 12 * 4 && cache.get(&[1, 1]).is_none());
    // A column spans (nearly) its chunks: they are read whole and kept at once ...
    let column = |j: u64| [AxisSelection::all(4096), AxisSelection::Points(vec![j])];
    let mut out = vec![0u8; 4096 * 4];
    read_selection(&src, &column(9), &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &column(9)));
    assert!(bytes() > 0 && cache.get(&[1, 2]).is_some());
    // ... so the next column of those chunks reads nothing more.
    read_selection(&src, &column(10), &mut out, 2).unwrap();
    assert_eq!(out, expected(&f, &column(10)));
    assert_eq!(bytes(), 0);
    // A whole chunk read straight into the output is not kept (a copy for nothing).
    let whole = [AxisSelection::Range { start: 2048, count: 2048, step: 1 }, AxisSelection::Range { start: 4, count: 4, step: 1 }];
    let mut out = vec![0u8; 2048 * 4 * 4];
    read_selection(&src, &whole, &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &whole));
    assert!(bytes() == 2048 * 4 * 4 && cache.get(&[1, 1]).is_none());
}

#[test]
fn reads_past_the_read_limit_keep_nothing() {
    // A large read would only push out the chunks that loops over parts of chunks
    // come back to: it bypasses the cache.
    let f = fixture([37, 23], [8, 5], true);
    let file_cache = cache::ChunkCache::new(16 << 10); // reads of 2 KiB at most go through it
    let cache = file_cache.slot(0);
    let src = source_of(&f, &f.source, Some(cache));
    let all = [AxisSelection::all(37), AxisSelection::all(23)]; // 25 chunks of 160 bytes
    let mut out = vec![0u8; 37 * 23 * 4];
    read_selection(&src, &all, &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &all));
    assert!(cache.get(&[0, 0]).is_none() && cache.get(&[1, 1]).is_none());
    let row = [AxisSelection::Points(vec![3]), AxisSelection::all(23)];
    let mut out = vec![0u8; 23 * 4];
    read_selection(&src, &row, &mut out, 1).unwrap();
    assert_eq!(out, expected(&f, &row));
    assert!(cache.get(&[0, 0]).is_some());
}

#[test]
fn a_small_dataset_read_whole_again_comes_from_the_cache() {
    let f = fixture([37, 23], [8, 5], true);
    let file_cache = cache::ChunkCache::new(1 << 20); // reads of 128 KiB at most go through it
    let counting = Counting { inner: &f.source, bytes: Default::default() };
    let src = source_of(&f, &counting, Some(file_cache.slot(0)));
    let all = [AxisSelection::all(37), AxisSelection::all(23)];
    for (pass, threads) in [(0, 1), (1, 2), (2, 1)] {
        let mut out = vec![0xffu8; 37 * 23 * 4];
        read_selection(&src, &all, &mut out, threads).unwrap();
        assert_eq!(out, expected(&f, &all), "pass {pass}");
        let read = counting.bytes.swap(0, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(read == 0, pass > 0, "pass {pass} read {read} bytes");
    }
    // another dataset of the same file sees none of these chunks
    assert!(file_cache.slot(1).get(&[0, 0]).is_none());
}
