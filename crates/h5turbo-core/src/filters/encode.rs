//! Chunk encoders: the inverse of the decoders, producing exactly the byte streams the
//! reference HDF5 filters (libhdf5's deflate/shuffle/fletcher32, h5py's LZF,
//! hdf5plugin's zstd, LZ4, bitshuffle and blosc) write, so libhdf5 with those plugins
//! reads the chunks back. Filters are applied in pipeline order.
//!
//! Encoded: deflate (1), shuffle (2), fletcher32 (3), LZF (32000), Blosc (32001, inner
//! LZ4/LZ4HC/zlib/zstd/snappy), LZ4 (32004), bitshuffle (32008, none/LZ4/zstd), zstd
//! (32015). The client data are those libhdf5 stored when the dataset was created (its
//! `set_local` callbacks fill in element and chunk sizes), parsed here as the
//! reference filters parse them. LZF and the blosc frame are our own code; the inner
//! block codecs are libdeflate, libzstd, liblz4 and snap.

use super::bitshuffle::BitshuffleCodec;
use super::{bitshuffle, blosc, deflate, fletcher32, lz4, lzf, shuffle, zstd};
use super::{FILTER_BITSHUFFLE, FILTER_BLOSC, FILTER_DEFLATE, FILTER_FLETCHER32, FILTER_LZ4};
use super::{FILTER_LZF, FILTER_SHUFFLE, FILTER_ZSTD};
use crate::error::{Error, Result};

/// One filter of a dataset's pipeline as stored: id, flags (bit 0: optional) and
/// client data.
#[derive(Debug, Clone)]
pub struct FilterSpec {
    pub id: u16,
    pub flags: u32,
    pub client_data: Vec<u32>,
}

const FLAG_OPTIONAL: u32 = 1;

/// One encoding step with its parameters.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Deflate { level: i32 },
    Shuffle { element_size: usize },
    Fletcher32,
    /// h5py's LZF is optional: a chunk it cannot shrink is stored unfiltered.
    Lzf { optional: bool },
    Zstd { level: i32 },
    Lz4 { block_size: usize },
    Bitshuffle { element_size: usize, block: usize, codec: BitshuffleCodec, level: i32 },
    Blosc(blosc::BloscParams),
}


/// The filters of a dataset, parsed once, applied to every chunk.
#[derive(Debug, Clone)]
pub struct EncodePipeline {
    stages: Vec<Stage>,
}

/// Per-thread reusable state: two stage buffers and codec contexts.
#[derive(Default)]
pub struct EncodeScratch {
    stage: [Vec<u8>; 2],
    deflaters: Vec<(i32, libdeflater::Compressor)>,
    pub(super) zstd: Option<::zstd::zstd_safe::CCtx<'static>>,
    pub(super) lzf_table: Vec<u32>,
    pub(super) work: Vec<u8>,
}

impl EncodeScratch {
    pub(super) fn deflater(&mut self, level: i32) -> Result<&mut libdeflater::Compressor> {
        let at = match self.deflaters.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                let lvl = libdeflater::CompressionLvl::new(level)
                    .map_err(|_| Error::invalid_argument(format!("deflate level {} (0-12)", level)))?;
                self.deflaters.push((level, libdeflater::Compressor::new(lvl)));
                self.deflaters.len() - 1
            }
        };
        Ok(&mut self.deflaters[at].1)
    }
}

/// The bitshuffle filter's default block: about 8 KiB, a multiple of 8 elements, at
/// least 128 (bshuf_default_block_size).
fn bitshuffle_default_block(element_size: usize) -> usize {
    (8192 / element_size / 8 * 8).max(128)
}

/// The LZ4 plugin's block size when client data gives none: 1 GiB.
const LZ4_DEFAULT_BLOCK: usize = 1 << 30;

impl EncodePipeline {
    /// Parse the stored pipeline; `element_size` is the dataset's element size.
    /// A filter we cannot encode is `Unsupported`, naming it.
    pub fn new(filters: &[FilterSpec], element_size: usize) -> Result<EncodePipeline> {
        if element_size == 0 {
            return Err(Error::invalid_argument("element size 0"));
        }
        let stages = filters.iter().map(|f| Stage::parse(f, element_size)).collect::<Result<Vec<_>>>()?;
        Ok(EncodePipeline { stages })
    }

    /// Encode one full-size chunk; returns the stored bytes and the filter mask (bit i
    /// set when filter i was skipped, as libhdf5 records an optional filter that failed).
    pub fn encode(&self, chunk: &[u8], scratch: &mut EncodeScratch) -> Result<(Vec<u8>, u32)> {
        self.encode_with(chunk, scratch, |bytes, mask| (bytes.to_vec(), mask))
    }

    /// Encode one chunk and hand the stored bytes (borrowed from the scratch, so no
    /// allocation per chunk) and the filter mask to `sink`.
    pub fn encode_with<R>(
        &self,
        chunk: &[u8],
        scratch: &mut EncodeScratch,
        sink: impl FnOnce(&[u8], u32) -> R,
    ) -> Result<R> {
        let mut mask = 0u32;
        let mut bufs = std::mem::take(&mut scratch.stage);
        let mut current: Option<usize> = None; // None: the input chunk
        for (i, stage) in self.stages.iter().enumerate() {
            let target = current.map_or(0, |c| 1 - c);
            let (a, b) = bufs.split_at_mut(1);
            let (src, dst): (&[u8], &mut Vec<u8>) = match current {
                None => (chunk, &mut a[0]),
                Some(0) => (&a[0], &mut b[0]),
                Some(_) => (&b[0], &mut a[0]),
            };
            dst.clear();
            if let Err(e) = stage.encode(src, dst, scratch) {
                scratch.stage = bufs;
                return Err(e);
            }
            if let Stage::Lzf { optional: true } = stage {
                if dst.len() >= src.len() {
                    mask |= 1 << i;
                    continue;
                }
            }
            current = Some(target);
        }
        let result = match current {
            None => sink(chunk, mask),
            Some(i) => sink(&bufs[i], mask),
        };
        scratch.stage = bufs;
        Ok(result)
    }
}

impl Stage {
    fn parse(f: &FilterSpec, element_size: usize) -> Result<Stage> {
        let cd = &f.client_data;
        let at = |i: usize| cd.get(i).copied();
        Ok(match f.id {
            FILTER_DEFLATE => Stage::Deflate { level: at(0).unwrap_or(6).min(12) as i32 },
            FILTER_SHUFFLE => Stage::Shuffle { element_size: at(0).map_or(element_size, |n| n as usize).max(1) },
            FILTER_FLETCHER32 => Stage::Fletcher32,
            FILTER_LZF => Stage::Lzf { optional: f.flags & FLAG_OPTIONAL != 0 },
            FILTER_ZSTD => Stage::Zstd { level: at(0).map_or(3, |l| l as i32) },
            FILTER_LZ4 => Stage::Lz4 { block_size: at(0).filter(|&b| b > 0).map_or(LZ4_DEFAULT_BLOCK, |b| b as usize) },
            FILTER_BITSHUFFLE => {
                let es = at(2).map_or(element_size, |n| n as usize);
                if es == 0 {
                    return Err(crate::format_err!("bitshuffle: element size 0"));
                }
                let block = match at(3) {
                    Some(b) if b > 0 => b as usize,
                    _ => bitshuffle_default_block(es),
                };
                if block % 8 != 0 {
                    return Err(Error::invalid_argument(format!("bitshuffle block size {} is not a multiple of 8", block)));
                }
                let codec = match at(4) {
                    Some(2) => BitshuffleCodec::Lz4,
                    Some(3) => BitshuffleCodec::Zstd,
                    _ => BitshuffleCodec::None,
                };
                Stage::Bitshuffle { element_size: es, block, codec, level: at(5).map_or(3, |l| l as i32) }
            }
            FILTER_BLOSC => Stage::Blosc(blosc::BloscParams::parse(cd, element_size)?),
            id => {
                return Err(crate::unsupported!(
                    "filter {} ({}) cannot be written by h5turbo",
                    id,
                    super::filter_name(id)
                ))
            }
        })
    }

    fn encode(&self, src: &[u8], dst: &mut Vec<u8>, scratch: &mut EncodeScratch) -> Result<()> {
        match *self {
            Stage::Deflate { level } => deflate::encode(src, dst, scratch.deflater(level)?),
            Stage::Shuffle { element_size } => {
                dst.resize(src.len(), 0);
                shuffle::encode(src, dst, element_size);
                Ok(())
            }
            Stage::Fletcher32 => {
                dst.extend_from_slice(src);
                dst.extend_from_slice(&fletcher32::checksum(src).to_le_bytes());
                Ok(())
            }
            Stage::Lzf { .. } => {
                lzf::encode(src, dst, &mut scratch.lzf_table);
                Ok(())
            }
            Stage::Zstd { level } => zstd::encode(src, dst, level, &mut scratch.zstd),
            Stage::Lz4 { block_size } => lz4::encode(src, dst, block_size),
            Stage::Bitshuffle { element_size, block, codec, level } => {
                bitshuffle::encode(src, dst, element_size, block, codec, level, scratch)
            }
            Stage::Blosc(p) => blosc::encode(src, dst, &p, scratch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{decode_chunk, DecodeScratch};
    use super::*;
    use crate::format::filter_pipeline::{FilterInfo, FilterPipeline};

    fn spec(id: u16, cd: &[u32]) -> FilterSpec {
        FilterSpec { id, flags: 0, client_data: cd.to_vec() }
    }

    fn as_pipeline(specs: &[FilterSpec]) -> FilterPipeline {
        let filters = specs
            .iter()
            .map(|s| FilterInfo { id: s.id, name: None, optional: s.flags & 1 != 0, client_data: s.client_data.clone() })
            .collect();
        FilterPipeline { filters }
    }

    /// Small integers (like the reference matrix) with an incompressible stretch.
    fn sample(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_add(12345);
        (0..len)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if (len / 3..len / 2).contains(&i) {
                    (x >> 24) as u8
                } else if i % 4 == 0 {
                    (x >> 27) as u8
                } else {
                    0
                }
            })
            .collect()
    }

    fn round_trip(specs: &[FilterSpec], es: usize, len: usize) {
        let p = EncodePipeline::new(specs, es).unwrap();
        let data = sample(len, len as u32);
        let mut scratch = EncodeScratch::default();
        let (enc, mask) = p.encode(&data, &mut scratch).unwrap();
        let mut out = vec![0xEE; len];
        decode_chunk(&super::super::DecodePipeline::new(&as_pipeline(specs), es).unwrap(), mask, &enc, &mut out, &mut DecodeScratch::default())
            .unwrap_or_else(|e| panic!("{:?} es {} len {}: {}", specs, es, len, e));
        assert_eq!(out, data, "{:?} es {} len {}", specs, es, len);
    }

    const LENS: [usize; 9] = [0, 1, 7, 8, 64, 1000, 4099, 70_000, 600_000];

    #[test]
    fn every_codec_round_trips_through_our_decoders() {
        for es in [1usize, 2, 4, 8, 3] {
            let cases: Vec<Vec<FilterSpec>> = vec![
                vec![spec(FILTER_DEFLATE, &[3])],
                vec![spec(FILTER_SHUFFLE, &[es as u32]), spec(FILTER_DEFLATE, &[1])],
                vec![spec(FILTER_LZF, &[4, 4, 0])],
                vec![spec(FILTER_SHUFFLE, &[es as u32]), spec(FILTER_ZSTD, &[3])],
                vec![spec(FILTER_LZ4, &[0])],
                vec![spec(FILTER_LZ4, &[1000])],
                vec![spec(FILTER_BITSHUFFLE, &[0, 0, es as u32, 0, 2])],
                vec![spec(FILTER_BITSHUFFLE, &[0, 0, es as u32, 64, 3, 5])],
                vec![spec(FILTER_BITSHUFFLE, &[0, 0, es as u32, 0, 0])],
                vec![spec(FILTER_FLETCHER32, &[]), spec(FILTER_DEFLATE, &[6])],
            ];
            for case in &cases {
                for len in LENS {
                    round_trip(case, es, len / es * es);
                }
            }
        }
    }

    #[test]
    fn blosc_frames_round_trip_every_inner_codec_and_shuffle() {
        for es in [1u32, 2, 4, 8] {
            for compressor in [0, 1, 2, 3, 4, 5] {
                for shuffle in [0, 1, 2] {
                    let cd = [2, 2, es, 0, 5, shuffle, compressor];
                    for len in LENS {
                        round_trip(&[spec(FILTER_BLOSC, &cd)], es as usize, len / es as usize * es as usize);
                    }
                }
            }
        }
        let e = EncodePipeline::new(&[spec(FILTER_BLOSC, &[2, 2, 4, 0, 5, 1, 6])], 4).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
    }

    #[test]
    fn lzf_skipped_when_it_cannot_shrink_if_optional() {
        let p = EncodePipeline::new(&[FilterSpec { id: FILTER_LZF, flags: 1, client_data: vec![4, 4, 0] }], 1).unwrap();
        let mut x = 88_172_645_463_325_252u64;
        let noise: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let (enc, mask) = p.encode(&noise, &mut EncodeScratch::default()).unwrap();
        assert_eq!((enc, mask), (noise, 1));
    }

    #[test]
    fn lzf_matches_long_runs_and_far_references() {
        let mut data = vec![7u8; 10_000];
        data.extend((0..9000u32).map(|i| (i % 251) as u8));
        data.extend((0..9000u32).map(|i| (i % 251) as u8));
        let mut enc = Vec::new();
        super::lzf::encode(&data, &mut enc, &mut Vec::new());
        assert!(enc.len() < data.len() / 10, "{}", enc.len());
        let mut out = vec![0; data.len()];
        super::super::lzf::decode(&enc, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn blosclz_round_trips_through_our_decoder() {
        let mut cases: Vec<Vec<u8>> = (0..40).map(|n| sample(n, 7)).collect();
        cases.push(vec![9; 100_000]); // one long run: chained 255 length bytes
        let mut repeats: Vec<u8> = sample(8191, 3); // matches at the largest short distance
        repeats.extend_from_within(..);
        repeats.extend_from_slice(&sample(5000, 5));
        cases.push(repeats);
        cases.push((0..70_000u32).map(|i| (i % 251) as u8 ^ (i / 997) as u8).collect());
        for data in cases {
            let mut enc = Vec::new();
            super::super::blosclz::encode(&data, &mut enc, &mut Vec::new());
            let mut out = vec![0; data.len()];
            assert_eq!(super::super::blosclz::decode(&enc, &mut out).unwrap(), data.len());
            assert_eq!(out, data, "{} bytes", data.len());
        }
        let mut enc = Vec::new();
        super::super::blosclz::encode(&vec![9; 100_000], &mut enc, &mut Vec::new());
        assert!(enc.len() < 1000, "{}", enc.len());
    }

    #[test]
    fn shuffle_matches_the_definition() {
        for es in 1..=9 {
            let data = sample(1003, es as u32);
            let mut fast = vec![0; data.len()];
            super::shuffle::encode(&data, &mut fast, es);
            assert_eq!(fast, super::super::shuffle::reference_encode(&data, es), "es {}", es);
        }
    }

    #[test]
    fn bitshuffle_matches_the_reference_encoder() {
        use super::super::bitshuffle::reference;
        for es in [1usize, 2, 4, 8] {
            let data = sample(5000 / es * es, 9);
            let p = EncodePipeline::new(&[spec(FILTER_BITSHUFFLE, &[0, 0, es as u32, 0, 0])], es).unwrap();
            let (enc, _) = p.encode(&data, &mut EncodeScratch::default()).unwrap();
            assert_eq!(enc, reference::encode(&data, es, 0, super::super::bitshuffle::Compression::None));
        }
    }

    #[test]
    fn unknown_filters_and_bad_parameters_are_errors() {
        let e = EncodePipeline::new(&[spec(4, &[])], 4).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
        assert!(e.message().contains("szip"), "{}", e);
        assert!(EncodePipeline::new(&[spec(FILTER_BITSHUFFLE, &[0, 0, 4, 12, 2])], 4).is_err());
        assert!(EncodePipeline::new(&[], 0).is_err());
        let p = EncodePipeline::new(&[spec(FILTER_DEFLATE, &[99])], 4).unwrap();
        // level clamped to libdeflate's 12
        assert!(p.encode(&[1, 2, 3, 4], &mut EncodeScratch::default()).is_ok());
    }
}
