//! Blosc2 (filter 32026): every HDF5 chunk is one Blosc2 contiguous frame ("cframe")
//! holding one super-chunk, as the HDF5-Blosc2 filter (PyTables, shipped by hdf5plugin)
//! writes it.
//!
//! - The frame: a msgpack header at fixed offsets ("b2frame" magic, header length,
//!   uncompressed and compressed data sizes, type size, chunk size, metalayers), the
//!   data chunks, then an index chunk (itself a Blosc2 chunk) of 64-bit offsets
//!   relative to the end of the header, then a trailer. An offset with its top bit set
//!   stands for a chunk that is not stored: all zeros, all NaN or uninitialised.
//! - A chunk: a 32-byte extended header (16 Blosc1-style bytes, then six filter ids and
//!   their metadata, codec metadata and Blosc2 flags), one 32-bit start per block, and
//!   per block one stream per byte of the type (split) or one stream, each a 32-bit
//!   size and the compressed bytes (size 0: zeros; negative: a run of one byte; equal
//!   to the stream's size: stored raw). Chunks can also be memcpy'd or "special"
//!   (zeros, NaN, one repeated value, uninitialised) with no blocks at all.
//! - After decompression each block goes back through the filter pipeline in reverse
//!   slot order: byte shuffle, bit shuffle, delta (XOR against the chunk's first
//!   block), truncated precision (nothing to undo).
//! - Datasets of rank > 1 are written in B2ND mode: the frame carries a "b2nd"
//!   metalayer (shape, chunk shape, block shape) and the chunk's blocks are
//!   n-dimensional tiles of the chunk shape rounded up to whole blocks, each in C order;
//!   they are put back into the HDF5 chunk's C order here.

use super::{bitshuffle, blosc, shuffle, Contexts};
use crate::error::Result;

const MIN_HEADER_LEN: usize = 16;
const EXTENDED_HEADER_LEN: usize = 32;
const FLAG_SHUFFLE: u8 = 0x01;
const FLAG_MEMCPYED: u8 = 0x02;
const FLAG_BITSHUFFLE: u8 = 0x04;
const FLAG_DELTA: u8 = 0x08;
const FLAG_DONT_SPLIT: u8 = 0x10;
const B2_FLAG_DICT: u8 = 0x01;
const B2_FLAG_LAZY: u8 = 0x08;
const B2_FLAG2_VL_BLOCKS: u8 = 0x01;
/// Chunk formats before this one bit-shuffle only blocks whose element count is a
/// multiple of 8 (else store them as is); later ones shuffle the largest such prefix.
const BITSHUFFLE_PREFIX_VERSION: u8 = 3;

const FILTER_NONE: u8 = 0;
const FILTER_SHUFFLE: u8 = 1;
const FILTER_BITSHUFFLE: u8 = 2;
const FILTER_DELTA: u8 = 3;
const FILTER_TRUNC_PREC: u8 = 4;
/// Byte delta (c-blosc2's bytedelta plugin): each byte stream of a shuffled block
/// delta-coded. 34 is its first version, whose SIMD builds restart the running sum for
/// the bytes after a stream's last whole 16; builds without SIMD (hdf5plugin's, which
/// h5py reads with) do not, and neither does this reader, so that it reads as h5py.
const FILTER_BYTEDELTA_FIRST: u8 = 34;
const FILTER_BYTEDELTA: u8 = 35;

/// Frame header fields at fixed offsets (README_CFRAME_FORMAT in c-blosc2).
const FRAME_MAGIC: &[u8] = b"b2frame\0";
const FRAME_MAGIC_AT: usize = 2;
const FRAME_HEADER_LEN_AT: usize = 0x0B;
const FRAME_LEN_AT: usize = 0x10;
const FRAME_FLAGS_AT: usize = 0x19;
const FRAME_CBYTES_AT: usize = 0x27;
const FRAME_METALAYERS_AT: usize = 0x57;
const FRAME_MIN_HEADER: usize = FRAME_METALAYERS_AT;
/// Top bit of a chunk offset: the chunk is special, not stored.
const SPECIAL_OFFSET: u64 = 1 << 63;

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn be_uint(b: &[u8], at: usize, len: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(len)?)?;
    Some(bytes.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
}

// ------------------------------------------------------------------------- frame

/// The b2nd metalayer: how the chunk's blocks tile it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NdLayout {
    chunk_shape: Vec<usize>,
    block_shape: Vec<usize>,
}

struct Frame<'a> {
    /// The header and the data chunks (up to the index chunk).
    bytes: &'a [u8],
    header_len: usize,
    data_len: usize,
    nd: Option<NdLayout>,
}

impl<'a> Frame<'a> {
    fn parse(src: &'a [u8]) -> Result<Frame<'a>> {
        if src.len() < FRAME_MIN_HEADER || src.get(FRAME_MAGIC_AT..FRAME_MAGIC_AT + FRAME_MAGIC.len()) != Some(FRAME_MAGIC) {
            return Err(crate::format_err!("blosc2: chunk is not a Blosc2 frame (no \"b2frame\" header)"));
        }
        let field = |at, len| be_uint(src, at, len).unwrap_or(u64::MAX);
        let (header_len, frame_len) = (field(FRAME_HEADER_LEN_AT, 4), field(FRAME_LEN_AT, 8));
        let data_len = field(FRAME_CBYTES_AT, 8);
        if frame_len > src.len() as u64 || header_len < FRAME_MIN_HEADER as u64 || header_len > frame_len {
            return Err(crate::format_err!(
                "blosc2: frame claims {} bytes with a {}-byte header, chunk holds {}",
                frame_len,
                header_len,
                src.len()
            ));
        }
        if data_len > frame_len - header_len {
            return Err(crate::format_err!("blosc2: frame claims {} bytes of chunks in {} bytes", data_len, frame_len));
        }
        let frame_type = src[FRAME_FLAGS_AT + 1] & 0x0F;
        if frame_type != 0 {
            return Err(crate::unsupported!("blosc2: frame type {} (only contiguous frames are read)", frame_type));
        }
        let (header_len, data_len) = (header_len as usize, data_len as usize);
        let header = &src[..header_len];
        let nd = match metalayer(header, "b2nd")? {
            Some(content) => Some(parse_b2nd(content)?),
            None => None,
        };
        Ok(Frame { bytes: &src[..frame_len as usize], header_len, data_len, nd })
    }

    /// The index chunk right after the data chunks, decoded: one offset per chunk.
    fn chunk_offsets(&self, ctx: &mut Contexts) -> Result<Vec<u64>> {
        let at = self.header_len + self.data_len;
        let index = &self.bytes[at..];
        let h = ChunkHeader::parse(index)?;
        if h.nbytes % 8 != 0 || h.nbytes / 8 > index.len() {
            return Err(crate::format_err!("blosc2: chunk index of {} bytes in a {}-byte frame", h.nbytes, self.bytes.len()));
        }
        let mut raw = vec![0u8; h.nbytes];
        decode_chunk(index, &mut raw, ctx)?;
        Ok(raw.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect())
    }
}

/// The content of the named metalayer of a frame header, if present: a msgpack map of
/// name -> int32 offset (into the header) of a bin32 holding the content.
fn metalayer<'a>(header: &'a [u8], name: &str) -> Result<Option<&'a [u8]>> {
    let bad = || crate::format_err!("blosc2: malformed metalayer section in the frame header");
    let mut r = MsgPack::at(header, FRAME_METALAYERS_AT);
    if r.array_len().ok_or_else(bad)? != 3 {
        return Err(bad());
    }
    r.uint().ok_or_else(bad)?; // size of the metalayer section
    let count = r.map_len().ok_or_else(bad)?;
    for _ in 0..count {
        let key = r.str().ok_or_else(bad)?;
        let offset = r.int().ok_or_else(bad)?;
        if key != name.as_bytes() {
            continue;
        }
        let offset = usize::try_from(offset).map_err(|_| bad())?;
        let mut content = MsgPack::at(header, offset);
        return content.bin().map(Some).ok_or_else(bad);
    }
    Ok(None)
}

/// The b2nd metalayer: [version, ndim, shape, chunkshape, blockshape, dtype format, dtype].
fn parse_b2nd(content: &[u8]) -> Result<NdLayout> {
    let bad = |what: &str| crate::format_err!("blosc2: malformed b2nd metalayer ({})", what);
    let mut r = MsgPack::at(content, 0);
    if r.array_len().ok_or_else(|| bad("not an array"))? < 5 {
        return Err(bad("too few fields"));
    }
    r.int().ok_or_else(|| bad("version"))?;
    // c-blosc2 writes b2nd frames up to its limit of 16 dimensions (plain frames above)
    let ndim = r.int().filter(|n| (1..=16).contains(n)).ok_or_else(|| bad("rank"))? as usize;
    let mut dims = |what: &str| -> Result<Vec<usize>> {
        // c-blosc2 marks each list as a msgpack fixarray, 0x90 + rank, also where that
        // overflows into another tag (rank 16: 0xa0); its reader skips the byte
        if r.byte() != Some(0x90u8.wrapping_add(ndim as u8)) {
            return Err(bad(what));
        }
        (0..ndim)
            .map(|_| r.int().filter(|&d| d >= 0).and_then(|d| usize::try_from(d).ok()).ok_or_else(|| bad(what)))
            .collect()
    };
    let _shape = dims("shape")?;
    let chunk_shape = dims("chunk shape")?;
    let block_shape = dims("block shape")?;
    if block_shape.contains(&0) || chunk_shape.contains(&0) {
        return Err(bad("zero-sized chunk or block"));
    }
    // Blocks lie inside chunks (c-blosc2 never writes otherwise); the block-padded chunk
    // we decode into is then less than 2^rank times the real one, and is allocated only
    // once the chunk's own header has said that size (decode).
    if block_shape.iter().zip(&chunk_shape).any(|(b, c)| b > c) {
        return Err(bad("block larger than the chunk"));
    }
    Ok(NdLayout { chunk_shape, block_shape })
}

/// Just enough msgpack to read the frame's metalayers.
struct MsgPack<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> MsgPack<'a> {
    fn at(b: &'a [u8], pos: usize) -> Self {
        MsgPack { b, pos }
    }
    fn byte(&mut self) -> Option<u8> {
        let x = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(x)
    }
    fn be(&mut self, len: usize) -> Option<u64> {
        let v = be_uint(self.b, self.pos, len)?;
        self.pos += len;
        Some(v)
    }
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len;
        Some(s)
    }
    fn array_len(&mut self) -> Option<usize> {
        match self.byte()? {
            t @ 0x90..=0x9f => Some(usize::from(t & 0x0f)),
            0xdc => self.be(2).map(|n| n as usize),
            0xdd => self.be(4).map(|n| n as usize),
            _ => None,
        }
    }
    fn map_len(&mut self) -> Option<usize> {
        match self.byte()? {
            t @ 0x80..=0x8f => Some(usize::from(t & 0x0f)),
            0xde => self.be(2).map(|n| n as usize),
            0xdf => self.be(4).map(|n| n as usize),
            _ => None,
        }
    }
    fn uint(&mut self) -> Option<u64> {
        self.int().and_then(|v| u64::try_from(v).ok())
    }
    fn int(&mut self) -> Option<i64> {
        let t = self.byte()?;
        let signed = |v: u64, bits: u32| ((v << (64 - bits)) as i64) >> (64 - bits);
        match t {
            0x00..=0x7f => Some(i64::from(t)),
            0xe0..=0xff => Some(i64::from(t as i8)),
            0xcc => self.be(1).map(|v| v as i64),
            0xcd => self.be(2).map(|v| v as i64),
            0xce => self.be(4).map(|v| v as i64),
            0xcf => self.be(8).and_then(|v| i64::try_from(v).ok()),
            0xd0 => self.be(1).map(|v| signed(v, 8)),
            0xd1 => self.be(2).map(|v| signed(v, 16)),
            0xd2 => self.be(4).map(|v| signed(v, 32)),
            0xd3 => self.be(8).map(|v| v as i64),
            _ => None,
        }
    }
    fn str(&mut self) -> Option<&'a [u8]> {
        let len = match self.byte()? {
            t @ 0xa0..=0xbf => usize::from(t & 0x1f),
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => return None,
        };
        self.take(len)
    }
    fn bin(&mut self) -> Option<&'a [u8]> {
        let len = match self.byte()? {
            0xc4 => self.be(1)? as usize,
            0xc5 => self.be(2)? as usize,
            0xc6 => self.be(4)? as usize,
            _ => return None,
        };
        self.take(len)
    }
}

// ------------------------------------------------------------------------- chunks

#[derive(Debug)]
struct ChunkHeader {
    version: u8,
    flags: u8,
    type_size: usize,
    nbytes: usize,
    block_size: usize,
    cbytes: usize,
    header_len: usize,
    filters: [u8; 6],
    filters_meta: [u8; 6],
    blosc2_flags: u8,
    codec: blosc::Codec,
}

impl ChunkHeader {
    fn parse(src: &[u8]) -> Result<ChunkHeader> {
        if src.len() < MIN_HEADER_LEN {
            return Err(crate::format_err!("blosc2: {} bytes cannot hold a chunk header", src.len()));
        }
        let field = |at| le32(src, at).map_or(usize::MAX, |v| v as usize);
        let (flags, type_size) = (src[2], usize::from(src[3]));
        let (nbytes, block_size, cbytes) = (field(4), field(8), field(12));
        let extended = flags & FLAG_SHUFFLE != 0 && flags & FLAG_BITSHUFFLE != 0;
        let header_len = if extended { EXTENDED_HEADER_LEN } else { MIN_HEADER_LEN };
        if cbytes < header_len || cbytes > src.len() || nbytes > i32::MAX as usize {
            return Err(crate::format_err!(
                "blosc2: chunk header claims {} compressed bytes, {} available",
                cbytes,
                src.len()
            ));
        }
        if type_size == 0 || block_size == 0 {
            return Err(crate::format_err!("blosc2: chunk with type size {} and block size {}", type_size, block_size));
        }
        let mut h = ChunkHeader {
            version: src[0],
            flags,
            type_size,
            nbytes,
            block_size: block_size.min(nbytes.max(1)),
            cbytes,
            header_len,
            filters: [FILTER_NONE; 6],
            filters_meta: [0; 6],
            blosc2_flags: 0,
            codec: codec_of(flags >> 5)?,
        };
        if extended {
            h.filters.copy_from_slice(&src[16..22]);
            h.filters_meta.copy_from_slice(&src[24..30]);
            h.blosc2_flags = src[31];
            if src[30] & B2_FLAG2_VL_BLOCKS != 0 {
                return Err(crate::unsupported!("blosc2: chunks with variable-length blocks"));
            }
        } else {
            // A Blosc1-style header: the filters are flag bits.
            h.filters[4] = if flags & FLAG_DELTA != 0 { FILTER_DELTA } else { FILTER_NONE };
            h.filters[5] = match (flags & FLAG_SHUFFLE != 0, flags & FLAG_BITSHUFFLE != 0) {
                (true, _) => FILTER_SHUFFLE,
                (_, true) => FILTER_BITSHUFFLE,
                _ => FILTER_NONE,
            };
        }
        Ok(h)
    }

    fn special(&self) -> u8 {
        (self.blosc2_flags >> 4) & 0x07
    }
}

fn codec_of(code: u8) -> Result<blosc::Codec> {
    Ok(match code {
        0 => blosc::Codec::BloscLz,
        1 => blosc::Codec::Lz4,
        3 => blosc::Codec::Zlib,
        4 => blosc::Codec::Zstd,
        6 => return Err(crate::unsupported!("blosc2: user-defined codecs (codec slot 6)")),
        c => return Err(crate::unsupported!("blosc2: compressor code {}", c)),
    })
}

/// Decode one Blosc2 chunk (at the start of `src`) into `dst`, which must be exactly
/// the chunk's decoded size.
fn decode_chunk(src: &[u8], dst: &mut [u8], ctx: &mut Contexts) -> Result<()> {
    let h = ChunkHeader::parse(src)?;
    if h.nbytes != dst.len() {
        return Err(crate::format_err!("blosc2: chunk holds {} bytes, expected {}", h.nbytes, dst.len()));
    }
    let buf = &src[..h.cbytes];
    if h.special() != 0 {
        return fill_special(h.special(), &buf[h.header_len..], h.type_size, dst);
    }
    if h.flags & FLAG_MEMCPYED != 0 {
        let data = &buf[h.header_len..];
        if data.len() != dst.len() {
            return Err(crate::format_err!("blosc2: stored chunk of {} bytes for {} bytes of data", data.len(), dst.len()));
        }
        dst.copy_from_slice(data);
        return Ok(());
    }
    if h.blosc2_flags & B2_FLAG_DICT != 0 {
        return Err(crate::unsupported!("blosc2: chunks compressed with a dictionary"));
    }
    if h.blosc2_flags & B2_FLAG_LAZY != 0 {
        return Err(crate::format_err!("blosc2: lazy chunk stored in a frame"));
    }
    let nblocks = dst.len().div_ceil(h.block_size);
    if nblocks > (buf.len() - h.header_len) / 4 {
        return Err(crate::format_err!("blosc2: {} block starts do not fit in {} bytes", nblocks, buf.len()));
    }
    let leftover = dst.len() % h.block_size != 0;
    for j in 0..nblocks {
        let start = le32(buf, h.header_len + 4 * j).map_or(usize::MAX, |v| v as usize);
        let is_leftover = leftover && j == nblocks - 1;
        let at = j * h.block_size;
        let len = h.block_size.min(dst.len() - at);
        decode_block(buf, start, dst, at, len, &h, is_leftover, ctx)?;
    }
    Ok(())
}

/// A chunk with no blocks: every element is zero, NaN, one repeated value (stored after
/// the header) or uninitialised (read as zeros).
fn fill_special(kind: u8, rest: &[u8], type_size: usize, dst: &mut [u8]) -> Result<()> {
    match kind {
        1 | 4 => dst.fill(0),
        2 => {
            let nan: &[u8] = match type_size {
                4 => &f32::NAN.to_le_bytes(),
                8 => &f64::NAN.to_le_bytes(),
                n => return Err(crate::format_err!("blosc2: NaN chunk of {}-byte elements", n)),
            };
            repeat_into(nan, dst)?;
        }
        3 => {
            // The value's size is what follows the header (c-blosc2's rule).
            if rest.is_empty() {
                return Err(crate::format_err!("blosc2: repeated-value chunk without its value"));
            }
            repeat_into(rest, dst)?;
        }
        k => return Err(crate::format_err!("blosc2: unknown special chunk kind {}", k)),
    }
    Ok(())
}

fn repeat_into(value: &[u8], dst: &mut [u8]) -> Result<()> {
    if dst.len() % value.len() != 0 {
        return Err(crate::format_err!("blosc2: {} bytes are not whole {}-byte values", dst.len(), value.len()));
    }
    for slot in dst.chunks_exact_mut(value.len()) {
        slot.copy_from_slice(value);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn decode_block(
    buf: &[u8],
    pos: usize,
    dst: &mut [u8],
    at: usize,
    len: usize,
    h: &ChunkHeader,
    is_leftover: bool,
    ctx: &mut Contexts,
) -> Result<()> {
    let Contexts { work, inflater, zstd, .. } = ctx;
    // Filters to undo, in reverse slot order (truncated precision has nothing to undo).
    let undo = (0..6).rev().filter(|&i| !matches!(h.filters[i], FILTER_NONE | FILTER_TRUNC_PREC));
    let count = undo.clone().count();
    if count == 0 {
        return decode_streams(buf, pos, &mut dst[at..at + len], h, is_leftover, inflater, zstd);
    }
    let work = super::sized(work, 2 * len);
    let (mut cur, mut spare) = work.split_at_mut(len);
    decode_streams(buf, pos, cur, h, is_leftover, inflater, zstd)?;
    for (k, i) in undo.enumerate() {
        let last = k + 1 == count;
        match h.filters[i] {
            FILTER_SHUFFLE => {
                let group = if h.filters_meta[i] == 0 { h.type_size } else { usize::from(h.filters_meta[i]) };
                if last {
                    // Straight into place: the common pipeline (one shuffle) copies nothing.
                    return shuffle::decode(cur, &mut dst[at..at + len], group);
                }
                shuffle::decode(cur, spare, group)?;
                std::mem::swap(&mut cur, &mut spare);
            }
            FILTER_BITSHUFFLE => bit_unshuffle(cur, spare, h.type_size, h.version)?,
            FILTER_DELTA => {
                // The reference is the chunk's first block as finally decoded; block 0
                // itself is its own running reference.
                let reference = if at == 0 { None } else { Some(&dst[..at]) };
                undo_delta(cur, reference, h.type_size);
            }
            FILTER_BYTEDELTA_FIRST | FILTER_BYTEDELTA => {
                let streams = if h.filters_meta[i] == 0 { h.type_size } else { usize::from(h.filters_meta[i]) };
                undo_bytedelta(cur, streams);
            }
            f => return Err(crate::unsupported!("blosc2: filter {} in the chunk's pipeline", f)),
        }
    }
    dst[at..at + len].copy_from_slice(cur);
    Ok(())
}

/// Undo byte delta in place: `streams` equal byte streams (bytes past the last whole
/// stream are left as they are), each the running sum of its bytes.
fn undo_bytedelta(block: &mut [u8], streams: usize) {
    let stream_len = block.len() / streams.max(1);
    if stream_len == 0 {
        return;
    }
    for stream in block.chunks_exact_mut(stream_len).take(streams) {
        let mut sum = 0u8;
        for b in stream.iter_mut() {
            sum = sum.wrapping_add(*b);
            *b = sum;
        }
    }
}

fn decode_streams(
    buf: &[u8],
    mut pos: usize,
    out: &mut [u8],
    h: &ChunkHeader,
    is_leftover: bool,
    inflater: &mut Option<libdeflater::Decompressor>,
    zstd: &mut Option<::zstd::zstd_safe::DCtx<'static>>,
) -> Result<()> {
    let split = h.flags & FLAG_DONT_SPLIT == 0 && !is_leftover;
    let streams = if split { h.type_size } else { 1 };
    if out.len() % streams != 0 {
        return Err(crate::format_err!("blosc2: block of {} bytes does not split into {} streams", out.len(), streams));
    }
    if pos < h.header_len || pos >= buf.len() {
        return Err(crate::format_err!("blosc2: block start {} outside the chunk", pos));
    }
    for stream in out.chunks_mut(out.len() / streams) {
        let size = le32(buf, pos).ok_or_else(|| crate::format_err!("blosc2: stream size at {} past the chunk", pos))?;
        pos += 4;
        let size = size as i32;
        if size == 0 {
            stream.fill(0);
            continue;
        }
        if size < 0 {
            let token = *buf.get(pos).ok_or_else(|| crate::format_err!("blosc2: stream token past the chunk"))?;
            pos += 1;
            if token & 1 == 0 || size < -255 {
                return Err(crate::unsupported!("blosc2: stream token {:#04x} with size {}", token, size));
            }
            stream.fill((-size) as u8);
            continue;
        }
        let size = size as usize;
        let Some(data) = buf.get(pos..).and_then(|rest| rest.get(..size)) else {
            return Err(crate::format_err!("blosc2: stream of {} bytes at {} runs past the chunk", size, pos));
        };
        pos += size;
        if size == stream.len() {
            stream.copy_from_slice(data);
            continue;
        }
        let n = blosc::decompress(h.codec, data, stream, inflater, zstd)?;
        if n != stream.len() {
            return Err(crate::format_err!("blosc2: stream decoded {} bytes, expected {}", n, stream.len()));
        }
    }
    Ok(())
}

/// Undo the bit shuffle of one block in place (`spare` is scratch of the same size).
fn bit_unshuffle(cur: &mut [u8], spare: &mut [u8], ts: usize, version: u8) -> Result<()> {
    let count = cur.len() / ts;
    let shuffled = if version < BITSHUFFLE_PREFIX_VERSION {
        if count % 8 != 0 {
            return Ok(());
        }
        count
    } else {
        count - count % 8
    };
    let body = shuffled * ts;
    if body == 0 {
        return Ok(());
    }
    // bit rows -> byte planes (in spare) -> elements (back in cur); the tail after the
    // last whole group of 8 elements was stored as is.
    bitshuffle::untranspose_bits(&cur[..body], &mut spare[..body], shuffled);
    if ts == 1 {
        cur[..body].copy_from_slice(&spare[..body]);
        Ok(())
    } else {
        shuffle::decode(&spare[..body], &mut cur[..body], ts)
    }
}

/// c-blosc2's delta filter, undone: elements of 1, 2, 4 or 8 bytes (other sizes as 8
/// when a multiple of 8, else as bytes) XORed with the reference block's element at
/// the same index, or, in the first block, with the previous element.
fn undo_delta(block: &mut [u8], reference: Option<&[u8]>, type_size: usize) {
    let width = match type_size {
        1 | 2 | 4 | 8 => type_size,
        n if n % 8 == 0 => 8,
        _ => 1,
    };
    match width {
        1 => delta_words::<1>(block, reference),
        2 => delta_words::<2>(block, reference),
        4 => delta_words::<4>(block, reference),
        _ => delta_words::<8>(block, reference),
    }
}

fn delta_words<const W: usize>(block: &mut [u8], reference: Option<&[u8]>) {
    let word = |b: &[u8]| -> u64 { b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)) };
    let put = |b: &mut [u8], v: u64| b.copy_from_slice(&v.to_le_bytes()[..W]);
    let count = block.len() / W;
    match reference {
        None => {
            for i in 1..count {
                let prev = word(&block[(i - 1) * W..i * W]);
                let cur = word(&block[i * W..(i + 1) * W]);
                put(&mut block[i * W..(i + 1) * W], cur ^ prev);
            }
        }
        Some(reference) => {
            let count = count.min(reference.len() / W);
            for i in 0..count {
                let r = word(&reference[i * W..(i + 1) * W]);
                let cur = word(&block[i * W..(i + 1) * W]);
                put(&mut block[i * W..(i + 1) * W], cur ^ r);
            }
        }
    }
}

// ------------------------------------------------------------------------- B2ND

/// Put the chunk's blocks (tiles of `ext` = chunk shape rounded up to whole blocks, each
/// in C order, tiles in C order) back into the C order of the chunk shape.
fn untile(tiled: &[u8], nd: &NdLayout, item: usize, dst: &mut [u8]) -> Result<()> {
    let rank = nd.chunk_shape.len();
    let grid: Vec<usize> = nd.chunk_shape.iter().zip(&nd.block_shape).map(|(c, b)| c.div_ceil(*b)).collect();
    let block_items: usize = nd.block_shape.iter().product();
    let row = nd.block_shape[rank - 1] * item;
    let mut tile_index = vec![0usize; rank];
    for tile in 0..grid.iter().product::<usize>() {
        let tile_bytes = tiled
            .get(tile * block_items * item..(tile + 1) * block_items * item)
            .ok_or_else(|| crate::format_err!("blosc2: b2nd chunk shorter than its blocks"))?;
        copy_tile(tile_bytes, &tile_index, nd, item, row, dst);
        // next tile index in C order
        for d in (0..rank).rev() {
            tile_index[d] += 1;
            if tile_index[d] < grid[d] {
                break;
            }
            tile_index[d] = 0;
        }
    }
    Ok(())
}

/// Copy one tile's rows that fall inside the chunk shape into `dst`.
fn copy_tile(tile: &[u8], tile_index: &[usize], nd: &NdLayout, item: usize, row: usize, dst: &mut [u8]) {
    let rank = nd.chunk_shape.len();
    let origin: Vec<usize> = tile_index.iter().zip(&nd.block_shape).map(|(t, b)| t * b).collect();
    let last = rank - 1;
    let width = nd.block_shape[last].min(nd.chunk_shape[last] - origin[last]) * item;
    let rows: usize = nd.block_shape[..last].iter().product();
    let mut inner = vec![0usize; last];
    for r in 0..rows {
        let inside = (0..last).all(|d| origin[d] + inner[d] < nd.chunk_shape[d]);
        if inside {
            let mut offset = 0usize;
            for d in 0..rank {
                let coord = origin[d] + if d < last { inner[d] } else { 0 };
                offset = offset * nd.chunk_shape[d] + coord;
            }
            let at = offset * item;
            dst[at..at + width].copy_from_slice(&tile[r * row..r * row + width]);
        }
        for d in (0..last).rev() {
            inner[d] += 1;
            if inner[d] < nd.block_shape[d] {
                break;
            }
            inner[d] = 0;
        }
    }
}

// ------------------------------------------------------------------------- entry

/// The decoded size the frame announces (its uncompressed size), for pipelines where
/// another filter follows.
pub fn announced_size(src: &[u8]) -> Option<usize> {
    let frame = Frame::parse(src).ok()?;
    match &frame.nd {
        Some(nd) => nd.chunk_shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))?.checked_mul(type_size_of(src)?),
        None => usize::try_from(be_uint(src, 0x1E, 8)?).ok(),
    }
}

fn type_size_of(src: &[u8]) -> Option<usize> {
    usize::try_from(be_uint(src, 0x30, 4)?).ok().filter(|&t| t > 0)
}

pub fn decode(src: &[u8], dst: &mut [u8], ctx: &mut Contexts) -> Result<()> {
    let frame = Frame::parse(src)?;
    let offsets = frame.chunk_offsets(ctx)?;
    let &[offset] = offsets.as_slice() else {
        return Err(crate::unsupported!("blosc2: frame of {} chunks (the HDF5 filter writes one)", offsets.len()));
    };
    let item = type_size_of(src).ok_or_else(|| crate::format_err!("blosc2: frame without a type size"))?;
    let Some(nd) = &frame.nd else {
        return decode_frame_chunk(&frame, offset, item, dst, ctx);
    };
    let wanted = nd.chunk_shape.iter().try_fold(item, |acc, &d| acc.checked_mul(d));
    if wanted != Some(dst.len()) {
        return Err(crate::format_err!(
            "blosc2: b2nd chunk shape {:?} of {}-byte items does not make {} bytes",
            nd.chunk_shape,
            item,
            dst.len()
        ));
    }
    let ext_items = nd
        .chunk_shape
        .iter()
        .zip(&nd.block_shape)
        .try_fold(1usize, |acc, (c, b)| acc.checked_mul(c.div_ceil(*b).checked_mul(*b)?));
    let ext_bytes = ext_items.and_then(|n| n.checked_mul(item)).filter(|&n| n <= i32::MAX as usize);
    let ext_bytes = ext_bytes.ok_or_else(|| crate::format_err!("blosc2: b2nd block shape {:?} too large", nd.block_shape))?;
    if ext_bytes == dst.len() && nd.block_shape.iter().skip(1).eq(nd.chunk_shape.iter().skip(1)) {
        // Blocks are whole slabs of the chunk: the tiled order is already C order.
        return decode_frame_chunk(&frame, offset, item, dst, ctx);
    }
    if let Some(stored) = frame.chunk_nbytes(offset) {
        if stored != ext_bytes {
            return Err(crate::format_err!("blosc2: chunk holds {} bytes, its b2nd blocks {}", stored, ext_bytes));
        }
    }
    let mut tiled = std::mem::take(&mut ctx.tiles);
    tiled.resize(ext_bytes, 0);
    let result = decode_frame_chunk(&frame, offset, item, &mut tiled, ctx).and_then(|()| untile(&tiled, nd, item, dst));
    ctx.tiles = tiled;
    result
}

/// The one chunk of the frame, stored at `offset` after the header or special.
impl Frame<'_> {
    /// The data chunk at `offset` (None for a special offset, which stores none).
    fn chunk_at(&self, offset: u64) -> Result<Option<&[u8]>> {
        if offset & SPECIAL_OFFSET != 0 {
            return Ok(None);
        }
        let at = usize::try_from(offset).ok().and_then(|o| o.checked_add(self.header_len));
        at.filter(|&a| a < self.header_len + self.data_len)
            .and_then(|a| self.bytes.get(a..self.header_len + self.data_len))
            .map(Some)
            .ok_or_else(|| crate::format_err!("blosc2: chunk offset {} outside the frame's data", offset))
    }

    /// The decoded size the chunk at `offset` declares, where its header can be read.
    fn chunk_nbytes(&self, offset: u64) -> Option<usize> {
        ChunkHeader::parse(self.chunk_at(offset).ok()??).ok().map(|h| h.nbytes)
    }
}

fn decode_frame_chunk(frame: &Frame<'_>, offset: u64, item: usize, dst: &mut [u8], ctx: &mut Contexts) -> Result<()> {
    if offset & SPECIAL_OFFSET != 0 {
        let kind = (offset >> 56) as u8 & 0x7F;
        return match kind {
            1 | 4 => fill_special(1, &[], item, dst),
            2 => fill_special(2, &[], item, dst),
            k => Err(crate::format_err!("blosc2: unknown special chunk offset kind {}", k)),
        };
    }
    let chunk = frame.chunk_at(offset)?.ok_or_else(|| crate::format_err!("blosc2: special chunk offset {}", offset))?;
    decode_chunk(chunk, dst, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytedelta_is_a_running_sum_per_stream() {
        // 3 streams of 21 bytes and 2 bytes past the last stream, left as they are
        let original: Vec<u8> = (0u8..65).map(|x| x.wrapping_mul(91).wrapping_add(7)).collect();
        let mut coded = original.clone();
        for s in 0..3 {
            let stream = &original[s * 21..(s + 1) * 21];
            for k in 1..21 {
                coded[s * 21 + k] = stream[k].wrapping_sub(stream[k - 1]);
            }
        }
        undo_bytedelta(&mut coded, 3);
        assert_eq!(coded, original);
    }

    #[test]
    fn delta_round_trip_matches_the_c_definition() {
        // Encoded as c-blosc2 does: block 0 XOR previous element, later blocks XOR block 0.
        let original: Vec<u8> = (0u8..32).map(|x| x.wrapping_mul(37)).collect();
        let (b0, b1) = original.split_at(16);
        let mut enc0 = b0.to_vec();
        for i in (1..4).rev() {
            for k in 0..4 {
                enc0[i * 4 + k] ^= b0[(i - 1) * 4 + k];
            }
        }
        let mut enc1: Vec<u8> = b1.iter().zip(b0).map(|(a, b)| a ^ b).collect();
        undo_delta(&mut enc0, None, 4);
        assert_eq!(enc0, b0);
        undo_delta(&mut enc1, Some(b0), 4);
        assert_eq!(enc1, b1);
    }

    #[test]
    fn hostile_headers_are_errors_not_allocations() {
        let mut ctx = Contexts::default();
        let mut out = vec![0u8; 64];
        assert!(decode(b"not a frame at all", &mut out, &mut ctx).is_err());
        // A frame header that claims 4 GiB.
        let mut frame = vec![0u8; 0x60];
        frame[0] = 0x9e;
        frame[1] = 0xa8;
        frame[2..10].copy_from_slice(FRAME_MAGIC);
        frame[FRAME_HEADER_LEN_AT..FRAME_HEADER_LEN_AT + 4].copy_from_slice(&0x58u32.to_be_bytes());
        frame[FRAME_LEN_AT..FRAME_LEN_AT + 8].copy_from_slice(&(u32::MAX as u64).to_be_bytes());
        assert!(decode(&frame, &mut out, &mut ctx).is_err());
        // A chunk header whose compressed size is past the buffer.
        let mut chunk = vec![0u8; 32];
        chunk[0] = 5;
        chunk[2] = FLAG_SHUFFLE | FLAG_BITSHUFFLE;
        chunk[3] = 4;
        chunk[4..8].copy_from_slice(&64u32.to_le_bytes());
        chunk[8..12].copy_from_slice(&64u32.to_le_bytes());
        chunk[12..16].copy_from_slice(&1_000_000u32.to_le_bytes());
        assert!(decode_chunk(&chunk, &mut out, &mut ctx).is_err());
    }

    #[test]
    fn msgpack_reads_the_integer_forms() {
        let bytes = [0x05, 0xff, 0xd2, 0xff, 0xff, 0xff, 0xfe, 0xcd, 0x01, 0x00, 0xd3, 0, 0, 0, 0, 0, 0, 0x10, 0];
        let mut r = MsgPack::at(&bytes, 0);
        assert_eq!(r.int(), Some(5));
        assert_eq!(r.int(), Some(-1));
        assert_eq!(r.int(), Some(-2));
        assert_eq!(r.int(), Some(256));
        assert_eq!(r.int(), Some(4096));
        assert_eq!(r.int(), None);
    }

    #[test]
    fn untile_puts_blocks_back_in_c_order() {
        // 3 x 5 chunk of bytes, blocks 2 x 2: ext 4 x 6, 2 x 3 tiles of 4 bytes.
        let nd = NdLayout { chunk_shape: vec![3, 5], block_shape: vec![2, 2] };
        let want: Vec<u8> = (0..15).collect();
        let mut tiled = vec![0xEE; 24];
        for (t, (ti, tj)) in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)].into_iter().enumerate() {
            for r in 0..2 {
                for c in 0..2 {
                    let (i, j) = (ti * 2 + r, tj * 2 + c);
                    if i < 3 && j < 5 {
                        tiled[t * 4 + r * 2 + c] = want[i * 5 + j];
                    }
                }
            }
        }
        let mut out = vec![0u8; 15];
        untile(&tiled, &nd, 1, &mut out).unwrap();
        assert_eq!(out, want);
    }
}
