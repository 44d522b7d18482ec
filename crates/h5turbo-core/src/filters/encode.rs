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

use super::bitshuffle::transpose8x8;
use super::{fletcher32, FILTER_BITSHUFFLE, FILTER_BLOSC, FILTER_DEFLATE, FILTER_FLETCHER32, FILTER_LZ4};
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
    Blosc(BloscParams),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BitshuffleCodec {
    None,
    Lz4,
    Zstd,
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
    zstd: Option<::zstd::zstd_safe::CCtx<'static>>,
    lzf_table: Vec<u32>,
    work: Vec<u8>,
}

impl EncodeScratch {
    fn deflater(&mut self, level: i32) -> Result<&mut libdeflater::Compressor> {
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
            FILTER_BLOSC => Stage::Blosc(BloscParams::parse(cd, element_size)?),
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
            Stage::Deflate { level } => deflate(src, dst, scratch.deflater(level)?),
            Stage::Shuffle { element_size } => {
                dst.resize(src.len(), 0);
                shuffle_into(src, dst, element_size);
                Ok(())
            }
            Stage::Fletcher32 => {
                dst.extend_from_slice(src);
                dst.extend_from_slice(&fletcher32::checksum(src).to_le_bytes());
                Ok(())
            }
            Stage::Lzf { .. } => {
                lzf(src, dst, &mut scratch.lzf_table);
                Ok(())
            }
            Stage::Zstd { level } => zstd(src, dst, level, &mut scratch.zstd),
            Stage::Lz4 { block_size } => lz4_framed(src, dst, block_size),
            Stage::Bitshuffle { element_size, block, codec, level } => {
                bitshuffle(src, dst, element_size, block, codec, level, scratch)
            }
            Stage::Blosc(p) => blosc(src, dst, &p, scratch),
        }
    }
}

fn deflate(src: &[u8], dst: &mut Vec<u8>, c: &mut libdeflater::Compressor) -> Result<()> {
    dst.resize(c.zlib_compress_bound(src.len()), 0);
    let n = c.zlib_compress(src, dst).map_err(|e| crate::format_err!("deflate: cannot compress: {}", e))?;
    dst.truncate(n);
    Ok(())
}

fn zstd(src: &[u8], dst: &mut Vec<u8>, level: i32, ctx: &mut Option<::zstd::zstd_safe::CCtx<'static>>) -> Result<()> {
    let ctx = ctx.get_or_insert_with(::zstd::zstd_safe::CCtx::create);
    let start = dst.len();
    // Compress into the spare capacity: zero-filling a bound-sized output first costs
    // about 3% of a 1 MiB chunk's level-3 compression.
    dst.reserve(::zstd::zstd_safe::compress_bound(src.len()));
    let mut cursor = std::io::Cursor::new(std::mem::take(dst));
    cursor.set_position(start as u64);
    // compressCCtx records the content size in the frame header, which hdf5plugin's
    // decoder needs to size its output.
    let result = ctx.compress(&mut cursor, src, level);
    *dst = cursor.into_inner();
    result.map_err(|c| crate::format_err!("zstd: cannot compress: {}", ::zstd::zstd_safe::get_error_name(c)))?;
    Ok(())
}

/// One raw LZ4 block (liblz4's LZ4_compress_default) appended to `dst`; returns its
/// length, or None when liblz4 refuses (input over 2 GiB).
fn lz4_block(src: &[u8], dst: &mut Vec<u8>) -> Option<usize> {
    let src_len = i32::try_from(src.len()).ok()?;
    // SAFETY: LZ4_compressBound is a pure function of the length.
    let bound = unsafe { lz4_sys::LZ4_compressBound(src_len) };
    let start = dst.len();
    // Written into the spare capacity, not a zero-filled tail (see zstd above).
    dst.reserve(usize::try_from(bound).ok()?);
    let spare = dst.spare_capacity_mut();
    // SAFETY: src is valid for src_len bytes and `spare` for at least `bound` bytes, the
    // most LZ4_compress_default writes; it only writes there, never reads.
    let n = unsafe { lz4_sys::LZ4_compress_default(src.as_ptr().cast(), spare.as_mut_ptr().cast(), src_len, bound) };
    let n = usize::try_from(n).ok().filter(|&n| n > 0 || src.is_empty())?;
    // SAFETY: LZ4_compress_default initialised the first n (<= bound) spare bytes.
    unsafe { dst.set_len(start + n) };
    Some(n)
}

/// Append `block` as LZ4, or raw when LZ4 does not shrink it, after a 4-byte
/// big-endian size (the HDF5 LZ4 plugin's and bitshuffle's block framing).
fn lz4_sized_block(block: &[u8], dst: &mut Vec<u8>, raw_if_larger: bool) -> Result<()> {
    let at = dst.len();
    dst.extend_from_slice(&[0; 4]);
    let n = lz4_block(block, dst).ok_or_else(|| crate::format_err!("lz4: cannot compress a {}-byte block", block.len()))?;
    let n = if raw_if_larger && n >= block.len() {
        dst.truncate(at + 4);
        dst.extend_from_slice(block);
        block.len()
    } else {
        n
    };
    dst[at..at + 4].copy_from_slice(&(n as u32).to_be_bytes());
    Ok(())
}

/// The HDF5 LZ4 filter (32004): 8-byte big-endian total size, 4-byte big-endian block
/// size (at most the total), then the blocks.
fn lz4_framed(src: &[u8], dst: &mut Vec<u8>, block_size: usize) -> Result<()> {
    let block_size = block_size.min(src.len());
    dst.extend_from_slice(&(src.len() as u64).to_be_bytes());
    dst.extend_from_slice(&(block_size as u32).to_be_bytes());
    for block in src.chunks(block_size.max(1)) {
        lz4_sized_block(block, dst, true)?;
    }
    Ok(())
}

/// Byte shuffle into `dst` (same length): plane j holds byte j of every element; bytes
/// after the last whole element stay in place.
pub fn shuffle_into(src: &[u8], dst: &mut [u8], element_size: usize) {
    let count = src.len() / element_size;
    let whole = count * element_size;
    match element_size {
        _ if count <= 1 => dst[..whole].copy_from_slice(&src[..whole]),
        2 => shuffle_fixed::<2>(&src[..whole], &mut dst[..whole]),
        4 => shuffle_fixed::<4>(&src[..whole], &mut dst[..whole]),
        8 => shuffle_fixed::<8>(&src[..whole], &mut dst[..whole]),
        _ => {
            for (j, plane) in dst[..whole].chunks_exact_mut(count).enumerate() {
                for (b, element) in plane.iter_mut().zip(src.chunks_exact(element_size)) {
                    *b = element[j];
                }
            }
        }
    }
    dst[whole..].copy_from_slice(&src[whole..]);
}

/// Fixed element size: 8 elements per step into each plane, so the writes are 8-byte
/// runs and the loop unrolls.
fn shuffle_fixed<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let count = src.len() / N;
    let mut planes: Vec<&mut [u8]> = dst.chunks_exact_mut(count).collect();
    let groups = count / 8;
    for g in 0..groups {
        let block = &src[g * 8 * N..(g + 1) * 8 * N];
        for (j, plane) in planes.iter_mut().enumerate() {
            let out: [u8; 8] = std::array::from_fn(|i| block[i * N + j]);
            plane[g * 8..g * 8 + 8].copy_from_slice(&out);
        }
    }
    for i in groups * 8..count {
        for (j, plane) in planes.iter_mut().enumerate() {
            plane[i] = src[i * N + j];
        }
    }
}

/// Byte planes to bit rows (the inverse of bitshuffle's `untranspose_bits`): for plane
/// j, row j*8+k holds bit k of every element, element i at bit i%8 of byte i/8.
fn transpose_bits(planes: &[u8], rows: &mut [u8], count: usize) {
    let row_len = count / 8;
    for (plane, group) in planes.chunks_exact(count).zip(rows.chunks_exact_mut(8 * row_len)) {
        for g in 0..row_len {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&plane[g * 8..g * 8 + 8]);
            let t = transpose8x8(u64::from_le_bytes(bytes)).to_le_bytes();
            for (k, byte) in t.iter().enumerate() {
                group[k * row_len + g] = *byte;
            }
        }
    }
}

/// Bit-transpose one block of `count` elements (a multiple of 8) into `rows`, through
/// `planes` (the byte shuffle) for multi-byte elements.
fn bitshuffle_block(block: &[u8], rows: &mut [u8], planes: &mut [u8], es: usize) {
    let count = block.len() / es;
    if es == 1 {
        transpose_bits(block, rows, count);
    } else {
        shuffle_into(block, planes, es);
        transpose_bits(planes, rows, count);
    }
}

/// The bitshuffle filter (32008): blocks of `block` elements bit-transposed, then
/// optionally compressed with a 12-byte header and 4-byte block sizes; the last
/// elements beyond a multiple of 8 are stored unchanged.
fn bitshuffle(
    src: &[u8],
    dst: &mut Vec<u8>,
    es: usize,
    block: usize,
    codec: BitshuffleCodec,
    level: i32,
    scratch: &mut EncodeScratch,
) -> Result<()> {
    let elements = src.len() / es;
    let body = (elements - elements % 8) * es;
    if codec != BitshuffleCodec::None {
        dst.extend_from_slice(&(src.len() as u64).to_be_bytes());
        dst.extend_from_slice(&((block * es) as u32).to_be_bytes());
    }
    let mut work = std::mem::take(&mut scratch.work);
    let block_bytes = block * es;
    if work.len() < 2 * block_bytes.min(body.max(1)) {
        work.resize(2 * block_bytes.min(body.max(1)), 0);
    }
    let result = (|| {
        for b in src[..body].chunks(block_bytes) {
            let half = work.len() / 2;
            let (rows, planes) = work.split_at_mut(half);
            let (rows, planes) = (&mut rows[..b.len()], &mut planes[..b.len()]);
            bitshuffle_block(b, rows, planes, es);
            match codec {
                BitshuffleCodec::None => dst.extend_from_slice(rows),
                BitshuffleCodec::Lz4 => lz4_sized_block(rows, dst, false)?,
                BitshuffleCodec::Zstd => {
                    let at = dst.len();
                    dst.extend_from_slice(&[0; 4]);
                    zstd(rows, dst, level, &mut scratch.zstd)?;
                    let n = (dst.len() - at - 4) as u32;
                    dst[at..at + 4].copy_from_slice(&n.to_be_bytes());
                }
            }
        }
        Ok(())
    })();
    scratch.work = work;
    result?;
    dst.extend_from_slice(&src[body..]);
    Ok(())
}

/// LZF (32000, h5py's liblzf format): literal runs of 1..32 bytes and back-references
/// of 3..264 bytes up to 8192 bytes back, found through a hash of the next 3 bytes.
pub fn lzf(src: &[u8], dst: &mut Vec<u8>, table: &mut Vec<u32>) {
    let shape = LzShape { max_distance: 8192, max_len: 264, tail: 0 };
    greedy_lz(src, table, shape, |literals, m| {
        lzf_literals(literals, dst);
        if let Some((len, distance)) = m {
            lzf_match(len, distance, dst);
        }
    });
}

/// The limits of an LZ77 format for `greedy_lz`.
#[derive(Clone, Copy)]
struct LzShape {
    max_distance: usize,
    max_len: usize,
    /// Bytes at the end that are always literals (a format that must end with them).
    tail: usize,
}

/// Greedy LZ77 over a hash of the next 3 bytes (LZF and BloscLZ): calls `emit` with
/// each literal run and the (length, distance) match after it; the last call has the
/// final literals and no match.
fn greedy_lz(src: &[u8], table: &mut Vec<u32>, shape: LzShape, mut emit: impl FnMut(&[u8], Option<(usize, usize)>)) {
    const HASH_BITS: u32 = 14;
    table.clear();
    table.resize(1 << HASH_BITS, u32::MAX);
    let hash = |p: usize| -> usize {
        let v = u32::from(src[p]) << 16 | u32::from(src[p + 1]) << 8 | u32::from(src[p + 2]);
        (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
    };
    let n = src.len();
    let (mut ip, mut literal_start) = (0usize, 0usize);
    while ip + 3 + shape.tail <= n {
        let h = hash(ip);
        let candidate = table[h] as usize;
        table[h] = ip as u32;
        let found =
            candidate < ip && ip - candidate <= shape.max_distance && src[candidate..candidate + 3] == src[ip..ip + 3];
        if !found {
            ip += 1;
            continue;
        }
        let max = (n - ip - shape.tail).min(shape.max_len);
        let mut len = 3;
        while len < max && src[candidate + len] == src[ip + len] {
            len += 1;
        }
        emit(&src[literal_start..ip], Some((len, ip - candidate)));
        // Index the match's last positions so runs keep matching (as liblzf does).
        for p in (ip + len).saturating_sub(2)..ip + len {
            if p + 3 <= n {
                table[hash(p)] = p as u32;
            }
        }
        ip += len;
        literal_start = ip;
    }
    emit(&src[literal_start..], None);
}

fn lzf_literals(bytes: &[u8], dst: &mut Vec<u8>) {
    for run in bytes.chunks(32) {
        dst.push((run.len() - 1) as u8);
        dst.extend_from_slice(run);
    }
}

fn lzf_match(len: usize, distance: usize, dst: &mut Vec<u8>) {
    let (l, d) = (len - 2, distance - 1);
    if l < 7 {
        dst.push(((l << 5) | (d >> 8)) as u8);
    } else {
        dst.push(((7 << 5) | (d >> 8)) as u8);
        dst.push((l - 7) as u8);
    }
    dst.push((d & 0xff) as u8);
}

/// BloscLZ (Blosc's compressor code 0; the format is described in blosclz.rs): greedy
/// LZ77 like `lzf`, literal runs as LZF's. Distances stay within the short form (at
/// most 8191: the code for 8192 announces a far match), and the stream starts (the
/// first byte has no earlier match) and ends with a literal run, as decoders require
/// (a final match is not copied).
pub fn blosclz(src: &[u8], dst: &mut Vec<u8>, table: &mut Vec<u32>) {
    let shape = LzShape { max_distance: 8191, max_len: usize::MAX, tail: 1 };
    greedy_lz(src, table, shape, |literals, m| {
        lzf_literals(literals, dst);
        if let Some((len, distance)) = m {
            blosclz_match(len, distance, dst);
        }
    });
}

/// A match: length - 2 in the top 3 bits (7: then 255s and a last byte add to 9), the
/// distance - 1 in the low 5 bits and the next byte.
fn blosclz_match(len: usize, distance: usize, dst: &mut Vec<u8>) {
    let d = distance - 1;
    if len - 2 < 7 {
        dst.push((((len - 2) << 5) | (d >> 8)) as u8);
    } else {
        dst.push(((7 << 5) | (d >> 8)) as u8);
        let mut rest = len - 9;
        while rest >= 255 {
            dst.push(255);
            rest -= 255;
        }
        dst.push(rest as u8);
    }
    dst.push((d & 0xff) as u8);
}

/// Blosc filter parameters from hdf5plugin's client data: [filter revision, blosc
/// format, type size, chunk bytes, level, shuffle (0 none, 1 byte, 2 bit), compressor
/// (0 blosclz, 1 lz4, 2 lz4hc, 3 snappy, 4 zlib, 5 zstd)].
#[derive(Debug, Clone, Copy)]
struct BloscParams {
    type_size: usize,
    level: i32,
    shuffle: u32,
    compressor: BloscCompressor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BloscCompressor {
    BloscLz,
    Lz4,
    Snappy,
    Zlib,
    Zstd,
}

impl BloscCompressor {
    /// The codec's number in the frame's flags (bits 5-7).
    fn format_code(self) -> u8 {
        match self {
            BloscCompressor::BloscLz => 0,
            BloscCompressor::Lz4 => 1,
            BloscCompressor::Snappy => 2,
            BloscCompressor::Zlib => 3,
            BloscCompressor::Zstd => 4,
        }
    }
}

impl BloscParams {
    fn parse(cd: &[u32], element_size: usize) -> Result<BloscParams> {
        let type_size = match cd.get(2).copied() {
            Some(t) if t > 0 && t <= 255 => t as usize,
            Some(t) if t > 255 => 1, // the filter's rule: blosc's type size is one byte
            _ => element_size.clamp(1, 255),
        };
        let compressor = match cd.get(6).copied().unwrap_or(0) {
            1 | 2 => BloscCompressor::Lz4,
            3 => BloscCompressor::Snappy,
            4 => BloscCompressor::Zlib,
            5 => BloscCompressor::Zstd,
            0 => BloscCompressor::BloscLz,
            c => return Err(crate::unsupported!("blosc: compressor code {}", c)),
        };
        Ok(BloscParams {
            type_size,
            level: cd.get(4).map_or(5, |&l| l.min(9) as i32),
            shuffle: cd.get(5).copied().unwrap_or(1),
            compressor,
        })
    }
}

const BLOSC_HEADER: usize = 16;
const BLOSC_FLAG_SHUFFLE: u8 = 0x01;
const BLOSC_FLAG_MEMCPYED: u8 = 0x02;
const BLOSC_FLAG_BITSHUFFLE: u8 = 0x04;
/// Every block is one stream (readers honour this flag instead of splitting by type).
const BLOSC_FLAG_DONT_SPLIT: u8 = 0x10;
const BLOSC_BLOCK_TARGET: usize = 256 * 1024;

/// A blosc1 frame (format version 2): 16-byte header, block offsets, then one stream per
/// block, each a 4-byte little-endian size and the data, raw when compression does not
/// shrink it. Incompressible input is stored whole after the header (memcpyed flag).
fn blosc(src: &[u8], dst: &mut Vec<u8>, p: &BloscParams, scratch: &mut EncodeScratch) -> Result<()> {
    let ts = p.type_size;
    let block_size = if src.len() <= BLOSC_BLOCK_TARGET { src.len() } else { BLOSC_BLOCK_TARGET / ts * ts };
    let shuffle_flag = match p.shuffle {
        1 if ts > 1 => BLOSC_FLAG_SHUFFLE,
        2 => BLOSC_FLAG_BITSHUFFLE,
        _ => 0,
    };
    let flags = shuffle_flag | BLOSC_FLAG_DONT_SPLIT | (p.compressor.format_code() << 5);
    let u32_of = |n: usize| u32::try_from(n).map_err(|_| crate::unsupported!("blosc: chunk of {} bytes (over 4 GiB)", n));
    blosc_header(dst, flags, ts, u32_of(src.len())?, u32_of(block_size)?);
    if src.is_empty() {
        return finish_blosc_header(dst);
    }
    let nblocks = src.len().div_ceil(block_size);
    let offsets_at = dst.len();
    dst.resize(offsets_at + 4 * nblocks, 0);
    let mut work = std::mem::take(&mut scratch.work);
    if work.len() < 2 * block_size {
        work.resize(2 * block_size, 0);
    }
    let mut result = Ok(());
    for (j, block) in src.chunks(block_size).enumerate() {
        let start = dst.len() as u32;
        dst[offsets_at + 4 * j..offsets_at + 4 * j + 4].copy_from_slice(&start.to_le_bytes());
        let (tmp, planes) = work.split_at_mut(block_size);
        let data = blosc_prefilter(block, shuffle_flag, ts, &mut tmp[..block.len()], &mut planes[..block.len()]);
        result = blosc_stream(data, dst, p, scratch);
        if result.is_err() {
            break;
        }
        if dst.len() >= BLOSC_HEADER + src.len() {
            break; // will not shrink: stored whole below
        }
    }
    scratch.work = work;
    result?;
    if dst.len() >= BLOSC_HEADER + src.len() {
        dst.clear();
        blosc_header(dst, BLOSC_FLAG_MEMCPYED | BLOSC_FLAG_DONT_SPLIT | (p.compressor.format_code() << 5), ts, src.len() as u32, block_size as u32);
        dst.extend_from_slice(src);
    }
    finish_blosc_header(dst)
}

fn blosc_header(dst: &mut Vec<u8>, flags: u8, ts: usize, nbytes: u32, block_size: u32) {
    dst.extend_from_slice(&[2, 1, flags, ts as u8]);
    dst.extend_from_slice(&nbytes.to_le_bytes());
    dst.extend_from_slice(&block_size.to_le_bytes());
    dst.extend_from_slice(&[0; 4]); // total size, set when known
}

fn finish_blosc_header(dst: &mut [u8]) -> Result<()> {
    let total = u32::try_from(dst.len()).map_err(|_| crate::unsupported!("blosc: frame over 4 GiB"))?;
    dst[12..16].copy_from_slice(&total.to_le_bytes());
    Ok(())
}

/// The block after blosc's shuffle: byte shuffle of whole elements, or the bit
/// transpose when the element count is a multiple of 8 (else the block as is).
fn blosc_prefilter<'a>(block: &'a [u8], flag: u8, ts: usize, tmp: &'a mut [u8], planes: &mut [u8]) -> &'a [u8] {
    match flag {
        BLOSC_FLAG_SHUFFLE => {
            shuffle_into(block, tmp, ts);
            tmp
        }
        BLOSC_FLAG_BITSHUFFLE if (block.len() / ts) % 8 == 0 && block.len() >= ts => {
            let body = block.len() / ts * ts;
            bitshuffle_block(&block[..body], &mut tmp[..body], &mut planes[..body], ts);
            tmp[body..].copy_from_slice(&block[body..]);
            tmp
        }
        _ => block,
    }
}

/// One stream: 4-byte little-endian size and the compressed data, raw when not smaller.
fn blosc_stream(data: &[u8], dst: &mut Vec<u8>, p: &BloscParams, scratch: &mut EncodeScratch) -> Result<()> {
    let at = dst.len();
    dst.extend_from_slice(&[0; 4]);
    match p.compressor {
        BloscCompressor::BloscLz => blosclz(data, dst, &mut scratch.lzf_table),
        BloscCompressor::Lz4 => {
            lz4_block(data, dst).ok_or_else(|| crate::format_err!("blosc: lz4 cannot compress a block"))?;
        }
        BloscCompressor::Zstd => zstd(data, dst, p.level.max(1), &mut scratch.zstd)?,
        BloscCompressor::Zlib => {
            let mut out = Vec::new();
            deflate(data, &mut out, scratch.deflater(p.level)?)?;
            dst.extend_from_slice(&out);
        }
        BloscCompressor::Snappy => {
            let out = snap::raw::Encoder::new()
                .compress_vec(data)
                .map_err(|e| crate::format_err!("blosc: snappy cannot compress a block: {}", e))?;
            dst.extend_from_slice(&out);
        }
    }
    let mut n = dst.len() - at - 4;
    if n >= data.len() {
        dst.truncate(at + 4);
        dst.extend_from_slice(data);
        n = data.len();
    }
    dst[at..at + 4].copy_from_slice(&(n as u32).to_le_bytes());
    Ok(())
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
        decode_chunk(&as_pipeline(specs), mask, es, &enc, &mut out, &mut DecodeScratch::default())
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
        lzf(&data, &mut enc, &mut Vec::new());
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
            blosclz(&data, &mut enc, &mut Vec::new());
            let mut out = vec![0; data.len()];
            assert_eq!(super::super::blosclz::decode(&enc, &mut out).unwrap(), data.len());
            assert_eq!(out, data, "{} bytes", data.len());
        }
        let mut enc = Vec::new();
        blosclz(&vec![9; 100_000], &mut enc, &mut Vec::new());
        assert!(enc.len() < 1000, "{}", enc.len());
    }

    #[test]
    fn shuffle_matches_the_definition() {
        for es in 1..=9 {
            let data = sample(1003, es as u32);
            let mut fast = vec![0; data.len()];
            shuffle_into(&data, &mut fast, es);
            assert_eq!(fast, super::super::shuffle::encode(&data, es), "es {}", es);
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
