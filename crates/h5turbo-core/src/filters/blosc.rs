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
