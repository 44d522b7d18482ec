//! Chunks written by libhdf5 with h5py + hdf5plugin (see data/filters/make_fixtures.py)
//! decode to exactly the bytes that were written; damaged copies give errors, never
//! panics.

use h5turbo_core::filters::{decode_chunk, DecodeScratch, DecodePipeline};
use h5turbo_core::format::filter_pipeline::{FilterInfo, FilterPipeline};
use std::path::PathBuf;

struct Case {
    name: String,
    raw: Vec<u8>,
    element_size: usize,
    mask: u32,
    pipeline: FilterPipeline,
    chunk: Vec<u8>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/filters")
}

fn parse_filter(spec: &str) -> FilterInfo {
    let (id, cd) = spec.split_once(':').unwrap();
    let client_data = cd.split(',').filter(|v| !v.is_empty()).map(|v| v.parse().unwrap()).collect();
    FilterInfo { id: id.parse().unwrap(), name: None, optional: false, client_data }
}

/// The large cases' data, regenerated rather than stored: (i % 1000) as little-endian i16.
fn ramp(count: usize) -> Vec<u8> {
    (0..count).flat_map(|i| ((i % 1000) as i16).to_le_bytes()).collect()
}

fn cases() -> Vec<Case> {
    let manifest = std::fs::read_to_string(dir().join("manifest.txt")).unwrap();
    manifest
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let chunk = std::fs::read(dir().join(format!("{}.chunk", f[0]))).unwrap();
            let raw = if let Some(n) = f[1].strip_prefix("ramp_") {
                ramp(n.parse().unwrap())
            } else {
                std::fs::read(dir().join(format!("{}.raw", f[1]))).unwrap()
            };
            Case {
                name: f[0].to_string(),
                raw,
                element_size: f[2].parse().unwrap(),
                mask: f[3].parse().unwrap(),
                pipeline: FilterPipeline { filters: f[4].split(';').map(parse_filter).collect() },
                chunk,
            }
        })
        .collect()
}

#[test]
fn every_fixture_decodes_exactly() {
    let mut scratch = DecodeScratch::default();
    let all = cases();
    assert!(all.len() >= 30);
    for case in &all {
        DecodePipeline::new(&case.pipeline, case.element_size).unwrap_or_else(|e| panic!("{}: {}", case.name, e));
        assert_eq!(case.mask, 0, "{}: fixture stored unfiltered; make its data compressible", case.name);
        let mut out = vec![0xA5; case.raw.len()];
        decode_chunk(&DecodePipeline::new(&case.pipeline, case.element_size).unwrap(), case.mask, &case.chunk, &mut out, &mut scratch)
            .unwrap_or_else(|e| panic!("{}: {}", case.name, e));
        assert!(out == case.raw, "{}: decoded bytes differ", case.name);
    }
}

#[test]
fn fixtures_decode_concurrently_with_one_scratch_per_thread() {
    use rayon::prelude::*;
    let all = cases();
    // Every case several times over, in an order that mixes codecs on each thread.
    let jobs: Vec<usize> = (0..all.len() * 8).map(|i| (i * 7) % all.len()).collect();
    jobs.par_iter().for_each_init(DecodeScratch::default, |scratch, &i| {
        let case = &all[i];
        let mut out = vec![0x5A; case.raw.len()];
        decode_chunk(&DecodePipeline::new(&case.pipeline, case.element_size).unwrap(), case.mask, &case.chunk, &mut out, scratch)
            .unwrap_or_else(|e| panic!("{}: {}", case.name, e));
        assert!(out == case.raw, "{}: decoded bytes differ", case.name);
    });
}

#[test]
fn truncated_fixtures_are_errors() {
    let mut scratch = DecodeScratch::default();
    for case in cases() {
        let mut out = vec![0; case.raw.len()];
        let len = case.chunk.len();
        // libhdf5's n-bit and scale-offset writers add one byte after the packed bits,
        // unused when they end on a byte boundary: cutting it loses nothing.
        let last_byte_is_padding = case.pipeline.filters.iter().any(|f| f.id == 5 || f.id == 6);
        let cuts =
            if last_byte_is_padding { vec![0, 1, len / 3, len / 2] } else { vec![0, 1, len / 3, len / 2, len - 1] };
        for cut in cuts {
            let r =
                decode_chunk(&DecodePipeline::new(&case.pipeline, case.element_size).unwrap(), case.mask, &case.chunk[..cut], &mut out, &mut scratch);
            assert!(r.is_err(), "{}: truncated to {} bytes decoded", case.name, cut);
        }
        let mut short = vec![0; case.raw.len() - 1];
        let r = decode_chunk(&DecodePipeline::new(&case.pipeline, case.element_size).unwrap(), case.mask, &case.chunk, &mut short, &mut scratch);
        assert!(r.is_err(), "{}: decoded into a buffer one byte short", case.name);
    }
}

#[test]
fn corrupted_fixtures_never_panic_and_checksums_catch_them() {
    let mut scratch = DecodeScratch::default();
    for case in cases() {
        let mut out = vec![0; case.raw.len()];
        let checksummed = case.pipeline.filters.iter().any(|f| f.id == 3);
        for i in (0..case.chunk.len()).step_by(case.chunk.len() / 97 + 1) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = case.chunk.clone();
                bad[i] ^= flip;
                let r = decode_chunk(&DecodePipeline::new(&case.pipeline, case.element_size).unwrap(), case.mask, &bad, &mut out, &mut scratch);
                if checksummed {
                    assert!(r.is_err(), "{}: flip at {} passed the checksum", case.name, i);
                }
            }
        }
    }
}
