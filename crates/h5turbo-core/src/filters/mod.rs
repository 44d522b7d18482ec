//! Chunk decoders: one module per HDF5 filter, each a stateless `decode(src, dst)` into
//! a caller-owned buffer, plus the pipeline that undoes a chunk's filters in reverse
//! order with per-thread reusable scratch.
//!
//! Decoded: deflate (1), shuffle (2), fletcher32 (3), szip (4), n-bit (5), scale-offset
//! (6), bzip2 (307), LZF (32000), Blosc (32001), LZ4 (32004), bitshuffle (32008), zstd
//! (32015), vbz (32020), Blosc2 (32026, plain and n-dimensional). Anything else is
//! reported as unsupported by [`check_pipeline`].
//!
//! Every decoder treats its input as hostile: sizes claimed by headers are checked
//! against the buffers before anything is written, and a decoded size that does not
//! match what the next stage (or the output) needs is a format error naming the filter.

mod bits;
mod bitshuffle;
mod blosc;
mod blosc2;
mod blosclz;
mod bzip2;
mod deflate;
pub mod encode;
mod fletcher32;
mod lz4;
mod lzf;
mod nbit;
pub mod registry;
mod scaleoffset;
mod shuffle;
mod szip;
mod vbz;
mod zstd;

use crate::error::{Error, ErrorKind, Result};
use crate::format::filter_pipeline::{FilterInfo, FilterPipeline};

pub use registry::*;

/// Per-thread reusable buffers and codec contexts for multi-stage pipelines
/// (e.g. inflate into scratch, then unshuffle into out). Buffers only grow, so a
/// thread decoding many chunks of one dataset allocates (and zero-fills) once.
#[derive(Default)]
pub struct DecodeScratch {
    /// Ping-pong buffers for the outputs of intermediate stages.
    stage: [Vec<u8>; 2],
    codecs: Contexts,
}

impl DecodeScratch {
    /// Bytes held by the buffers (the codec contexts' own memory not counted).
    pub fn capacity(&self) -> usize {
        let Contexts { work, samples, tiles, .. } = &self.codecs;
        self.stage.iter().map(Vec::capacity).sum::<usize>() + work.capacity() + samples.capacity() * 4 + tiles.capacity()
    }
}

/// Codec state one stage may use, kept apart from the stage buffers so a stage can
/// read one scratch buffer while the codec uses its own memory.
#[derive(Default)]
pub(crate) struct Contexts {
    /// Working memory a single codec needs inside one stage (blocks being unshuffled).
    pub(crate) work: Vec<u8>,
    pub(crate) inflater: Option<libdeflater::Decompressor>,
    pub(crate) zstd: Option<::zstd::zstd_safe::DCtx<'static>>,
    /// Decoded samples of one szip reference interval.
    pub(crate) samples: Vec<u32>,
    /// A Blosc2 n-dimensional chunk in its block-tiled order.
    pub(crate) tiles: Vec<u8>,
}

impl Contexts {
    pub(crate) fn inflater(&mut self) -> &mut libdeflater::Decompressor {
        self.inflater.get_or_insert_with(libdeflater::Decompressor::new)
    }
    pub(crate) fn zstd(&mut self) -> &mut ::zstd::zstd_safe::DCtx<'static> {
        self.zstd.get_or_insert_with(::zstd::zstd_safe::DCtx::create)
    }
    /// Two working buffers of `len` bytes each (contents unspecified) and the zstd
    /// context: a bitshuffle block's decompressed bit rows and its byte planes.
    pub(crate) fn bitshuffle_work(
        &mut self,
        len: usize,
    ) -> (&mut [u8], &mut [u8], &mut ::zstd::zstd_safe::DCtx<'static>) {
        let both = sized(&mut self.work, 2 * len);
        let (rows, planes) = both.split_at_mut(len);
        (rows, planes, self.zstd.get_or_insert_with(::zstd::zstd_safe::DCtx::create))
    }
}

/// A buffer of `len` bytes whose contents are unspecified; grows (and zero-fills) only
/// the first time a size is needed, so steady-state decoding does no filling.
fn sized(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len {
        buf.resize(len, 0);
    }
    &mut buf[..len]
}

/// One decoding step, with its client data parsed and validated.
#[derive(Debug, Clone)]
enum Codec {
    Deflate,
    Shuffle {
        element_size: usize,
    },
    Fletcher32,
    Lzf,
    Zstd,
    Lz4,
    Bitshuffle(bitshuffle::Params),
    Bzip2,
    Blosc,
    Blosc2,
    Vbz(vbz::Params),
    Szip(szip::Params),
    /// Client data as stored: the type description is walked per element.
    Nbit(Box<[u32]>),
    ScaleOffset(scaleoffset::Params),
    /// An optional filter that cannot be applied here (its parameters are refused, or it
    /// is unknown). libhdf5 skips optional filters that refuse a dataset (bitshuffle on
    /// variable-length strings) and marks the chunks: those decode; any other chunk fails
    /// with this error.
    Refused { id: u16, kind: ErrorKind, message: Box<str> },
}

/// How a stage's input size relates to its output size.
enum SizeRule {
    /// Output has the input's size (shuffle, plain bitshuffle).
    Same,
    /// Output is the input minus a trailer (fletcher32's 4 bytes).
    Shrinks(usize),
    /// Compression: the input size says nothing about the output size.
    Unrelated,
}

impl Codec {
    fn parse(info: &FilterInfo, element_size: usize) -> Result<Codec> {
        let cd = &info.client_data;
        Ok(match info.id {
            FILTER_DEFLATE => Codec::Deflate,
            FILTER_SHUFFLE => Codec::Shuffle { element_size: shuffle::element_size(cd, element_size)? },
            FILTER_FLETCHER32 => Codec::Fletcher32,
            FILTER_LZF => Codec::Lzf,
            FILTER_ZSTD => Codec::Zstd,
            FILTER_LZ4 => Codec::Lz4,
            FILTER_BITSHUFFLE => Codec::Bitshuffle(bitshuffle::Params::parse(cd, element_size)?),
            FILTER_BZIP2 => Codec::Bzip2,
            FILTER_BLOSC => Codec::Blosc,
            FILTER_BLOSC2 => Codec::Blosc2,
            FILTER_VBZ => Codec::Vbz(vbz::Params::parse(cd)?),
            FILTER_SZIP => Codec::Szip(szip::Params::parse(cd)?),
            FILTER_NBIT => {
                nbit::check(cd)?;
                Codec::Nbit(cd.clone().into_boxed_slice())
            }
            FILTER_SCALEOFFSET => Codec::ScaleOffset(scaleoffset::Params::parse(cd)?),
            id => return Err(unsupported_filter(id, info.name.as_deref())),
        })
    }

    /// `parse`, except that an optional filter we cannot apply fails only the chunks
    /// that did not skip it.
    fn parse_or_defer(info: &FilterInfo, element_size: usize) -> Result<Codec> {
        match Codec::parse(info, element_size) {
            Err(e) if info.optional => {
                Ok(Codec::Refused { id: info.id, kind: e.kind(), message: e.message().into() })
            }
            parsed => parsed,
        }
    }

    fn id(&self) -> u16 {
        match self {
            Codec::Deflate => FILTER_DEFLATE,
            Codec::Shuffle { .. } => FILTER_SHUFFLE,
            Codec::Fletcher32 => FILTER_FLETCHER32,
            Codec::Lzf => FILTER_LZF,
            Codec::Zstd => FILTER_ZSTD,
            Codec::Lz4 => FILTER_LZ4,
            Codec::Bitshuffle(_) => FILTER_BITSHUFFLE,
            Codec::Bzip2 => FILTER_BZIP2,
            Codec::Blosc => FILTER_BLOSC,
            Codec::Blosc2 => FILTER_BLOSC2,
            Codec::Vbz(_) => FILTER_VBZ,
            Codec::Szip(_) => FILTER_SZIP,
            Codec::Nbit(_) => FILTER_NBIT,
            Codec::ScaleOffset(_) => FILTER_SCALEOFFSET,
            Codec::Refused { id, .. } => *id,
        }
    }

    fn name(&self) -> &'static str {
        filter_name(self.id())
    }

    fn size_rule(&self) -> SizeRule {
        match self {
            Codec::Shuffle { .. } => SizeRule::Same,
            Codec::Bitshuffle(p) if !p.is_compressed() => SizeRule::Same,
            Codec::Fletcher32 => SizeRule::Shrinks(fletcher32::CHECKSUM_LEN),
            // "stored as is" (a type n-bit does not pack): the bytes pass through
            Codec::Nbit(cd) if cd.get(1).is_some_and(|&as_is| as_is != 0) => SizeRule::Same,
            _ => SizeRule::Unrelated,
        }
    }

    /// The decoded size announced by the encoded data itself, for codecs with a header.
    /// Needed only when a compressor's output feeds another compressor.
    fn announced_size(&self, src: &[u8]) -> Option<usize> {
        match self {
            Codec::Lz4 => lz4::announced_size(src),
            Codec::Bitshuffle(p) if p.is_compressed() => bitshuffle::announced_size(src),
            Codec::Zstd => zstd::announced_size(src),
            Codec::Blosc => blosc::announced_size(src),
            Codec::Blosc2 => blosc2::announced_size(src),
            Codec::Vbz(_) => vbz::announced_size(src),
            Codec::Szip(_) => szip::announced_size(src),
            _ => None,
        }
    }

    /// Codecs that can decode without knowing their output size in advance.
    fn can_decode_up_to(&self) -> bool {
        matches!(self, Codec::Deflate | Codec::Zstd | Codec::Lzf | Codec::Bzip2)
    }

    /// Decode all of `src` into the front of `dst`; returns the bytes produced.
    fn decode_up_to(&self, src: &[u8], dst: &mut [u8], ctx: &mut Contexts) -> Result<usize> {
        match self {
            Codec::Deflate => deflate::decode_up_to(src, dst, ctx.inflater()),
            Codec::Zstd => zstd::decode_up_to(src, dst, ctx.zstd()),
            Codec::Lzf => lzf::decode_up_to(src, dst),
            Codec::Bzip2 => bzip2::decode_up_to(src, dst),
            _ => Err(crate::unsupported!("filter {} before a filter of unknown input size", self.name())),
        }
    }

    /// Decode `src` into `dst`, which must come out exactly full.
    fn decode(&self, src: &[u8], dst: &mut [u8], ctx: &mut Contexts) -> Result<()> {
        match self {
            Codec::Deflate => deflate::decode(src, dst, ctx.inflater()),
            Codec::Shuffle { element_size } => shuffle::decode(src, dst, *element_size),
            Codec::Fletcher32 => fletcher32::decode(src, dst),
            Codec::Lzf => lzf::decode(src, dst),
            Codec::Zstd => zstd::decode(src, dst, ctx.zstd()),
            Codec::Lz4 => lz4::decode(src, dst),
            Codec::Bitshuffle(p) => bitshuffle::decode(src, dst, p, ctx),
            Codec::Bzip2 => bzip2::decode(src, dst),
            Codec::Blosc => blosc::decode(src, dst, ctx),
            Codec::Blosc2 => blosc2::decode(src, dst, ctx),
            Codec::Vbz(p) => vbz::decode(src, dst, p, ctx),
            Codec::Szip(p) => szip::decode(src, dst, p, ctx),
            Codec::Nbit(cd) => nbit::decode(src, dst, cd),
            Codec::ScaleOffset(p) => scaleoffset::decode(src, dst, p),
            Codec::Refused { kind, message, .. } => Err(Error::new(*kind, message.to_string())),
        }
    }
}

fn unsupported_filter(id: u16, stored_name: Option<&str>) -> Error {
    let name = match stored_name {
        Some(n) if !n.is_empty() && lookup(id).is_none() => n,
        _ => filter_name(id),
    };
    crate::unsupported!("filter {} ({}) is not supported", id, name)
}

/// A dataset's filter pipeline parsed and validated once (not per chunk): one decoding
/// stage per filter, in the pipeline's (write) order.
#[derive(Debug, Clone, Default)]
pub struct DecodePipeline {
    stages: Vec<Codec>,
}

/// Largest pipeline HDF5 allows; keeps the per-chunk stage list on the stack.
const MAX_STAGES: usize = 32;

impl DecodePipeline {
    /// No filters: chunks are stored as they are.
    pub fn unfiltered() -> &'static DecodePipeline {
        static UNFILTERED: DecodePipeline = DecodePipeline { stages: Vec::new() };
        &UNFILTERED
    }

    /// Every filter must be one we decode, else `ErrorKind::Unsupported` naming id and
    /// name, e.g. "filter 32017 (SZ) is not supported"; client data is validated too,
    /// so a dataset whose parameters we cannot honour fails here, before any read.
    /// Except optional filters: those fail only the chunks that did not skip them.
    pub fn new(pipeline: &FilterPipeline, element_size: usize) -> Result<DecodePipeline> {
        if pipeline.filters.len() > MAX_STAGES {
            return Err(crate::format_err!(
                "filter pipeline has {} filters (at most {})",
                pipeline.filters.len(),
                MAX_STAGES
            ));
        }
        let stages = pipeline.filters.iter().map(|info| Codec::parse_or_defer(info, element_size)).collect::<Result<_>>()?;
        Ok(DecodePipeline { stages })
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

/// Decode one stored chunk into `out`. `out.len()` is the chunk's decoded size in bytes;
/// the decoded data must fill it exactly, a mismatch is a Format error naming the filter.
/// Filters are undone in reverse pipeline order; if bit i of `filter_mask` is set, filter
/// i was skipped when writing and is skipped here. The last stage writes straight into
/// `out`. `out` may hold garbage on entry. Callable from many threads at once, each with
/// its own scratch.
pub fn decode_chunk(
    pipeline: &DecodePipeline,
    filter_mask: u32,
    encoded: &[u8],
    out: &mut [u8],
    scratch: &mut DecodeScratch,
) -> Result<()> {
    let unmasked = |i: &usize| filter_mask & (1u32 << i) == 0;
    let mut stages: [Option<&Codec>; MAX_STAGES] = [None; MAX_STAGES];
    let mut count = 0;
    for i in (0..pipeline.stages.len()).rev().filter(unmasked) {
        stages[count] = Some(&pipeline.stages[i]);
        count += 1;
    }
    run_stages(&stages[..count], encoded, out, scratch)
}

/// Where the current stage reads from: a prefix of the encoded chunk or of a stage buffer.
#[derive(Clone, Copy)]
enum Input {
    Encoded { len: usize },
    Stage { index: usize, len: usize },
}

impl Input {
    fn with_len(self, len: usize) -> Input {
        match self {
            Input::Encoded { .. } => Input::Encoded { len },
            Input::Stage { index, .. } => Input::Stage { index, len },
        }
    }
}

fn run_stages(stages: &[Option<&Codec>], encoded: &[u8], out: &mut [u8], scratch: &mut DecodeScratch) -> Result<()> {
    let Some(last) = stages.len().checked_sub(1) else {
        return copy_exact(encoded, out, "unfiltered chunk");
    };
    let DecodeScratch { stage, codecs } = scratch;
    let mut input = Input::Encoded { len: encoded.len() };
    for (k, codec) in stages.iter().flatten().enumerate() {
        if k == last {
            let src = input_slice(input, encoded, stage);
            return codec.decode(src, out, codecs).map_err(|e| name_error(e, codec));
        }
        // A checksum before the last stage only verifies and shortens its input in
        // place: no copy.
        if let Codec::Fletcher32 = codec {
            let len = fletcher32::verify(input_slice(input, encoded, stage)).map_err(|e| name_error(e, codec))?;
            input = input.with_len(len);
            continue;
        }
        let target = match input_size(&stages[k + 1..], out.len()) {
            Some(len) => Target::Exact(len),
            None => intermediate_target(codec, input_slice(input, encoded, stage), out.len())?,
        };
        let dst_index = match input {
            Input::Stage { index, .. } => 1 - index,
            Input::Encoded { .. } => 0,
        };
        let (first, second) = stage.split_at_mut(1);
        let (src_buf, dst_buf) = if dst_index == 0 { (&second[0], &mut first[0]) } else { (&first[0], &mut second[0]) };
        let src = match input {
            Input::Encoded { len } => &encoded[..len],
            Input::Stage { len, .. } => &src_buf[..len],
        };
        let len = match target {
            Target::Exact(len) => codec.decode(src, sized(dst_buf, len), codecs).map(|_| len),
            Target::AtMost(len) => codec.decode_up_to(src, sized(dst_buf, len), codecs),
        }
        .map_err(|e| name_error(e, codec))?;
        input = Input::Stage { index: dst_index, len };
    }
    Ok(())
}

/// How much an intermediate stage must produce.
enum Target {
    Exact(usize),
    /// The next stage's input size is unknown: decode everything, up to this bound.
    AtMost(usize),
}

/// The output of a stage whose next stage cannot say how much input it needs (a
/// compressor, n-bit or scale-offset): the input's size for size-preserving stages
/// (shuffle), else the size the stage announces in its header, or everything it decodes. Either way at most the chunk's size plus a compressor's
/// worst-case expansion; a larger claim is an error, not an allocation.
fn intermediate_target(codec: &Codec, src: &[u8], out_len: usize) -> Result<Target> {
    let most = out_len.saturating_mul(2).saturating_add(MAX_EXPANSION_SLACK);
    if let SizeRule::Same = codec.size_rule() {
        return Ok(Target::Exact(src.len()));
    }
    match codec.announced_size(src) {
        Some(len) if len > most => Err(crate::format_err!(
            "{} announces {} bytes for data that decodes to {} bytes",
            codec.name(),
            len,
            out_len
        )),
        Some(len) => Ok(Target::Exact(len)),
        None if codec.can_decode_up_to() => Ok(Target::AtMost(most)),
        None => Err(crate::unsupported!("filter {} before a filter of unknown input size", codec.name())),
    }
}

/// Headers and block overheads a compressor may add to incompressible data.
const MAX_EXPANSION_SLACK: usize = 1 << 16;

fn input_slice<'a>(input: Input, encoded: &'a [u8], stage: &'a [Vec<u8>; 2]) -> &'a [u8] {
    match input {
        Input::Encoded { len } => &encoded[..len],
        Input::Stage { index, len } => &stage[index][..len],
    }
}

/// The input size the given remaining stages need to produce `out_len` bytes, or None
/// when a compressor among them makes it unknowable in advance.
fn input_size(remaining: &[Option<&Codec>], out_len: usize) -> Option<usize> {
    remaining.iter().flatten().rev().try_fold(out_len, |len, codec| match codec.size_rule() {
        SizeRule::Same => Some(len),
        SizeRule::Shrinks(n) => len.checked_add(n),
        SizeRule::Unrelated => None,
    })
}

fn copy_exact(src: &[u8], dst: &mut [u8], what: &str) -> Result<()> {
    if src.len() != dst.len() {
        return Err(crate::format_err!("{} holds {} bytes, expected {}", what, src.len(), dst.len()));
    }
    dst.copy_from_slice(src);
    Ok(())
}

/// Prefix a decoder's message with the filter's name unless it already starts with it.
fn name_error(e: Error, codec: &Codec) -> Error {
    if e.message().starts_with(codec.name()) {
        return e;
    }
    Error::new(e.kind(), format!("{}: {}", codec.name(), e.message()))
}

/// The decoded size did not come out as expected.
pub(crate) fn size_mismatch(filter: &str, got: usize, expected: usize) -> Error {
    crate::format_err!("{} decoded {} bytes, expected {}", filter, got, expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn filter(id: u16, cd: &[u32]) -> FilterInfo {
        FilterInfo { id, name: None, optional: false, client_data: cd.to_vec() }
    }

    fn pipeline(filters: &[FilterInfo]) -> FilterPipeline {
        FilterPipeline { filters: filters.to_vec() }
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let mut out = vec![0; c.zlib_compress_bound(data.len())];
        let n = c.zlib_compress(data, &mut out).unwrap();
        out.truncate(n);
        out
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| ((i / 4) as u32 % 300).to_le_bytes()[i % 4]).collect()
    }

    #[test]
    fn fletcher_shuffle_deflate_pipeline_reuses_scratch() {
        let p = pipeline(&[filter(FILTER_FLETCHER32, &[]), filter(FILTER_SHUFFLE, &[4]), filter(FILTER_DEFLATE, &[4])]);
        DecodePipeline::new(&p, 1).map(|_| ()).unwrap();
        let mut scratch = DecodeScratch::default();
        for len in [4000, 400, 4002] {
            let data = sample(len);
            let enc = zlib(&shuffle::reference_encode(&fletcher32::encode(&data), 4));
            let mut out = vec![0xFF; len];
            decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &enc, &mut out, &mut scratch).unwrap();
            assert_eq!(out, data);
            let mut bad = shuffle::reference_encode(&fletcher32::encode(&data), 4);
            bad[7] ^= 1;
            let e = decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &zlib(&bad), &mut out, &mut scratch).unwrap_err();
            assert!(e.message().contains("fletcher32 checksum mismatch"), "{}", e);
        }
    }

    #[test]
    fn checksum_first_in_decode_order_is_verified_in_place() {
        // [deflate, fletcher32]: the checksum covers the compressed bytes.
        let p = pipeline(&[filter(FILTER_DEFLATE, &[1]), filter(FILTER_FLETCHER32, &[])]);
        let data = sample(1000);
        let enc = fletcher32::encode(&zlib(&data));
        let mut out = vec![0; 1000];
        decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &enc, &mut out, &mut DecodeScratch::default()).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn filter_mask_skips_filters_and_empty_pipeline_copies() {
        let p = pipeline(&[filter(FILTER_SHUFFLE, &[2]), filter(FILTER_DEFLATE, &[4])]);
        let data = sample(600);
        let mut out = vec![0; 600];
        let mut scratch = DecodeScratch::default();
        // Deflate skipped (bit 1): the chunk is shuffled only.
        decode_chunk(&DecodePipeline::new(&p, 2).unwrap(), 0b10, &shuffle::reference_encode(&data, 2), &mut out, &mut scratch).unwrap();
        assert_eq!(out, data);
        decode_chunk(&DecodePipeline::new(&p, 2).unwrap(), 0b11, &data, &mut out, &mut scratch).unwrap();
        assert_eq!(out, data);
        assert!(decode_chunk(&DecodePipeline::new(&p, 2).unwrap(), 0b11, &data[1..], &mut out, &mut scratch).is_err());
        decode_chunk(DecodePipeline::unfiltered(), 0, &data, &mut out, &mut scratch).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn wrong_decoded_size_names_the_filter() {
        let p = pipeline(&[filter(FILTER_SHUFFLE, &[4]), filter(FILTER_DEFLATE, &[4])]);
        let enc = zlib(&shuffle::reference_encode(&sample(400), 4));
        let e = decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &enc, &mut vec![0; 404], &mut DecodeScratch::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(e.message().starts_with("deflate"), "{}", e);
    }

    #[test]
    fn unsupported_filters_are_named() {
        let e = DecodePipeline::new(&pipeline(&[filter(FILTER_SZ, &[])]), 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert_eq!(e.message(), "filter 32017 (SZ) is not supported");
        let mut custom = filter(40000, &[]);
        custom.name = Some("mine".into());
        let e = DecodePipeline::new(&pipeline(&[custom]), 1).unwrap_err();
        assert_eq!(e.message(), "filter 40000 (mine) is not supported");
    }

    #[test]
    fn compressor_feeding_compressor_uses_announced_size() {
        // [lz4, zstd] on write: zstd announces the lz4 stream's size in its frame header.
        let p = pipeline(&[filter(FILTER_LZ4, &[]), filter(FILTER_ZSTD, &[])]);
        let data = sample(5000);
        let enc = ::zstd::bulk::compress(&lz4::reference_encode(&data, 1024), 3).unwrap();
        let mut out = vec![0; 5000];
        decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &enc, &mut out, &mut DecodeScratch::default()).unwrap();
        assert_eq!(out, data);
        // A zstd frame claiming a huge size is refused before anything is allocated.
        let mut huge = ::zstd::bulk::compress(&lz4::reference_encode(&data, 1024), 3).unwrap();
        huge.truncate(4); // keep the magic number
                          // Frame header descriptor 0xE0: single segment, 8-byte content size.
        huge.extend_from_slice(&[0xE0]);
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        huge.extend_from_slice(&[0; 8]);
        let p2 = pipeline(&[filter(FILTER_LZ4, &[]), filter(FILTER_ZSTD, &[])]);
        let e = decode_chunk(&DecodePipeline::new(&p2, 4).unwrap(), 0, &huge, &mut out, &mut DecodeScratch::default()).unwrap_err();
        assert!(e.message().contains("announces"), "{}", e);
        // [lz4, deflate]: deflate announces nothing, so it decodes up to a bound.
        let p = pipeline(&[filter(FILTER_LZ4, &[]), filter(FILTER_DEFLATE, &[])]);
        decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &zlib(&lz4::reference_encode(&data, 1024)), &mut out, &mut DecodeScratch::default()).unwrap();
        assert_eq!(out, data);
        // [lz4, lz4]: the outer stream announces the inner stream's size.
        let p = pipeline(&[filter(FILTER_LZ4, &[]), filter(FILTER_LZ4, &[])]);
        let twice = lz4::reference_encode(&lz4::reference_encode(&data, 1024), 4096);
        decode_chunk(&DecodePipeline::new(&p, 4).unwrap(), 0, &twice, &mut out, &mut DecodeScratch::default()).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn scratch_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<DecodeScratch>();
    }
}
