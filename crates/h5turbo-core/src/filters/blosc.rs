//! Blosc (filter 32001): one c-blosc buffer per chunk.
//!
//! A 16-byte header (format version 2, codec version, flags, type size, then
//! little-endian decoded size, block size and total compressed size). Flags: bit 0
//! byte shuffle, bit 1 stored uncompressed after the header, bit 2 bit shuffle, bit 4
//! blocks not split, bits 5-7 the codec (0 BloscLZ, 1 LZ4/LZ4HC, 2 Snappy, 3 zlib,
//! 4 zstd). Then one little-endian 32-bit offset per block; at each offset, one stream
//! per split (the type size when splitting, else one): a 32-bit compressed size and
//! the data, stored raw when that size equals the stream's decoded size. Shuffles
//! apply per block, after decompression.

use super::{bitshuffle, blosclz, shuffle, Contexts};
use crate::error::Result;

const HEADER_LEN: usize = 16;
const FORMAT_VERSION: u8 = 2;
const FLAG_SHUFFLE: u8 = 0x01;
const FLAG_MEMCPYED: u8 = 0x02;
const FLAG_BITSHUFFLE: u8 = 0x04;
const FLAG_FUTURE: u8 = 0x08;
const FLAG_DONT_SPLIT: u8 = 0x10;
/// Blocks split into one stream per byte of the type only for small types and
/// blocks of at least this many elements (c-blosc's rule, which readers must follow).
const MAX_SPLITS: usize = 16;
const MIN_SPLIT_ELEMENTS: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Codec {
    BloscLz,
    Lz4,
    Snappy,
    Zlib,
    Zstd,
}

struct Header {
    flags: u8,
    type_size: usize,
    block_size: usize,
    codec: Codec,
}

fn le32(b: &[u8], at: usize) -> Option<usize> {
    let w = b.get(at..at + 4)?;
    Some(u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize)
}

/// Parse and validate the header against the destination; returns it and the
/// compressed buffer (the chunk up to the header's total size).
fn parse_header(src: &[u8], dst_len: usize) -> Result<(Header, &[u8])> {
    if src.len() < HEADER_LEN {
        return Err(crate::format_err!("blosc: {} bytes cannot hold the 16-byte header", src.len()));
    }
    if src[0] != FORMAT_VERSION {
        return Err(crate::unsupported!("blosc: format version {} (only {} is defined)", src[0], FORMAT_VERSION));
    }
    let flags = src[2];
    if flags & FLAG_FUTURE != 0 {
        return Err(crate::unsupported!("blosc: header flags {:#04x} from a newer format", flags));
    }
    let (nbytes, block_size, cbytes) = (le32(src, 4), le32(src, 8), le32(src, 12));
    let (Some(nbytes), Some(block_size), Some(cbytes)) = (nbytes, block_size, cbytes) else {
        return Err(crate::format_err!("blosc: short header"));
    };
    if nbytes != dst_len {
        return Err(crate::format_err!("blosc: header announces {} bytes, expected {}", nbytes, dst_len));
    }
    if cbytes < HEADER_LEN || cbytes > src.len() {
        return Err(crate::format_err!("blosc: header claims {} compressed bytes, chunk holds {}", cbytes, src.len()));
    }
    let type_size = usize::from(src[3]);
    if type_size == 0 || (nbytes > 0 && (block_size == 0 || block_size > nbytes)) {
        return Err(crate::format_err!("blosc: invalid type size {} or block size {}", type_size, block_size));
    }
    let codec = match flags >> 5 {
        0 => Codec::BloscLz,
        1 => Codec::Lz4,
        2 => Codec::Snappy,
        3 => Codec::Zlib,
        4 => Codec::Zstd,
        c => return Err(crate::unsupported!("blosc: compressor code {}", c)),
    };
    Ok((Header { flags, type_size, block_size, codec }, &src[..cbytes]))
}

pub fn announced_size(src: &[u8]) -> Option<usize> {
    le32(src, 4)
}

pub fn decode(src: &[u8], dst: &mut [u8], ctx: &mut Contexts) -> Result<()> {
    let (h, buf) = parse_header(src, dst.len())?;
    if dst.is_empty() {
        return Ok(());
    }
    if h.flags & FLAG_MEMCPYED != 0 {
        if buf.len() != HEADER_LEN + dst.len() {
            return Err(crate::format_err!(
                "blosc: uncompressed buffer of {} bytes for {} bytes of data",
                buf.len(),
                dst.len()
            ));
        }
        dst.copy_from_slice(&buf[HEADER_LEN..]);
        return Ok(());
    }
    let nblocks = dst.len().div_ceil(h.block_size);
    if nblocks > (buf.len() - HEADER_LEN) / 4 {
        return Err(crate::format_err!("blosc: {} block offsets do not fit in {} bytes", nblocks, buf.len()));
    }
    let leftover = dst.len() % h.block_size != 0;
    for (j, out) in dst.chunks_mut(h.block_size).enumerate() {
        let start = le32(buf, HEADER_LEN + 4 * j).unwrap_or(usize::MAX);
        let is_leftover = leftover && j == nblocks - 1;
        decode_block(buf, start, out, &h, is_leftover, ctx)?;
    }
    Ok(())
}

fn decode_block(
    buf: &[u8],
    mut pos: usize,
    out: &mut [u8],
    h: &Header,
    is_leftover: bool,
    ctx: &mut Contexts,
) -> Result<()> {
    let ts = h.type_size;
    let bsize = out.len();
    let byte_shuffle = h.flags & FLAG_SHUFFLE != 0 && ts > 1;
    let bit_shuffle = h.flags & FLAG_BITSHUFFLE != 0 && bsize >= ts;
    let split = h.flags & FLAG_DONT_SPLIT == 0 && ts <= MAX_SPLITS && bsize / ts >= MIN_SPLIT_ELEMENTS && !is_leftover;
    let streams = if split { ts } else { 1 };
    if bsize % streams != 0 {
        return Err(crate::format_err!("blosc: block of {} bytes does not split into {} streams", bsize, streams));
    }
    let Contexts { work, inflater, zstd, .. } = ctx;
    let work = super::sized(work, 2 * bsize);
    let (tmp, planes) = work.split_at_mut(bsize);
    let target: &mut [u8] = if byte_shuffle || bit_shuffle { tmp } else { out };
    for stream in target.chunks_mut(bsize / streams) {
        let cbytes =
            le32(buf, pos).ok_or_else(|| crate::format_err!("blosc: block offset {} outside the buffer", pos))?;
        pos += 4;
        let Some(data) = buf.get(pos..).and_then(|rest| rest.get(..cbytes)) else {
            return Err(crate::format_err!("blosc: stream of {} bytes at {} runs past the buffer", cbytes, pos));
        };
        pos += cbytes;
        if cbytes == stream.len() {
            stream.copy_from_slice(data);
            continue;
        }
        let n = decompress(h.codec, data, stream, inflater, zstd)?;
        if n != stream.len() {
            return Err(crate::format_err!("blosc: stream decoded {} bytes, expected {}", n, stream.len()));
        }
    }
    if byte_shuffle {
        shuffle::decode(tmp, out, ts)
    } else if bit_shuffle {
        bit_unshuffle_block(tmp, planes, out, ts)
    } else {
        Ok(())
    }
}

/// Blosc bit-shuffles a whole block as one bitshuffle block when its element count is a
/// multiple of 8 (bytes after the last element stay in place); otherwise the block was
/// stored as is.
fn bit_unshuffle_block(tmp: &[u8], planes: &mut [u8], out: &mut [u8], ts: usize) -> Result<()> {
    let count = out.len() / ts;
    if count % 8 != 0 {
        out.copy_from_slice(tmp);
        return Ok(());
    }
    let body = count * ts;
    if ts == 1 {
        bitshuffle::untranspose_bits(&tmp[..body], &mut out[..body], count);
    } else {
        bitshuffle::untranspose_bits(&tmp[..body], &mut planes[..body], count);
        shuffle::decode(&planes[..body], &mut out[..body], ts)?;
    }
    out[body..].copy_from_slice(&tmp[body..]);
    Ok(())
}

pub(super) fn decompress(
    codec: Codec,
    data: &[u8],
    out: &mut [u8],
    inflater: &mut Option<libdeflater::Decompressor>,
    zstd: &mut Option<zstd::zstd_safe::DCtx<'static>>,
) -> Result<usize> {
    let corrupt = |name: &str, why: String| crate::format_err!("blosc: corrupt {} stream: {}", name, why);
    match codec {
        Codec::BloscLz => blosclz::decode(data, out),
        Codec::Lz4 => super::lz4::decompress_block(data, out).ok_or_else(|| corrupt("lz4", "bad block".into())),
        Codec::Snappy => snap::raw::Decoder::new().decompress(data, out).map_err(|e| corrupt("snappy", e.to_string())),
        Codec::Zlib => inflater
            .get_or_insert_with(libdeflater::Decompressor::new)
            .zlib_decompress(data, out)
            .map_err(|e| corrupt("zlib", e.to_string())),
        Codec::Zstd => zstd
            .get_or_insert_with(zstd::zstd_safe::DCtx::create)
            .decompress(out, data)
            .map_err(|c| corrupt("zstd", zstd::zstd_safe::get_error_name(c).to_string())),
    }
}

// Encoding (the writer), the inverse of the decoder above.

/// Blosc filter parameters from hdf5plugin's client data: [filter revision, blosc
/// format, type size, chunk bytes, level, shuffle (0 none, 1 byte, 2 bit), compressor
/// (0 blosclz, 1 lz4, 2 lz4hc, 3 snappy, 4 zlib, 5 zstd)].
#[derive(Debug, Clone, Copy)]
pub(crate) struct BloscParams {
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
    pub(crate) fn parse(cd: &[u32], element_size: usize) -> Result<BloscParams> {
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
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>, p: &BloscParams, scratch: &mut super::encode::EncodeScratch) -> Result<()> {
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
            super::shuffle::encode(block, tmp, ts);
            tmp
        }
        BLOSC_FLAG_BITSHUFFLE if (block.len() / ts) % 8 == 0 && block.len() >= ts => {
            let body = block.len() / ts * ts;
            super::bitshuffle::encode_block(&block[..body], &mut tmp[..body], &mut planes[..body], ts);
            tmp[body..].copy_from_slice(&block[body..]);
            tmp
        }
        _ => block,
    }
}

/// One stream: 4-byte little-endian size and the compressed data, raw when not smaller.
fn blosc_stream(data: &[u8], dst: &mut Vec<u8>, p: &BloscParams, scratch: &mut super::encode::EncodeScratch) -> Result<()> {
    let at = dst.len();
    dst.extend_from_slice(&[0; 4]);
    match p.compressor {
        BloscCompressor::BloscLz => super::blosclz::encode(data, dst, &mut scratch.lzf_table),
        BloscCompressor::Lz4 => {
            super::lz4::encode_block(data, dst).ok_or_else(|| crate::format_err!("blosc: lz4 cannot compress a block"))?;
        }
        BloscCompressor::Zstd => super::zstd::encode(data, dst, p.level.max(1), &mut scratch.zstd)?,
        BloscCompressor::Zlib => {
            let mut out = Vec::new();
            super::deflate::encode(data, &mut out, scratch.deflater(p.level)?)?;
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
