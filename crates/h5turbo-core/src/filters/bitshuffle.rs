//! Bitshuffle (filter 32008): elements are processed in blocks (a multiple of 8
//! elements); inside a block, bit k of byte j of every element is gathered into bit
//! row j*8+k (element i at bit i%8 of byte i/8 of the row). Elements after the last
//! multiple of 8 are stored unchanged at the end.
//!
//! Client data: [major, minor, element size, block size (elements, 0 = default),
//! compression (2 = LZ4, 3 = zstd, else none), level]. Compressed chunks start with a
//! 12-byte header (8-byte big-endian decoded size, 4-byte big-endian block size in
//! bytes) and each block is a 4-byte big-endian compressed size and the data.

use super::{shuffle, Contexts};
use crate::error::Result;

/// Blocks hold a multiple of this many elements.
const BLOCK_MULTIPLE: usize = 8;
/// The writer's default block: about 8 KiB, a multiple of 8 elements, at least 128.
const TARGET_BLOCK_BYTES: usize = 8192;
const MIN_DEFAULT_BLOCK: usize = 128;
const HEADER_LEN: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

#[derive(Debug, Clone, Copy)]
pub struct Params {
    element_size: usize,
    /// In elements; 0 means the writer's default.
    block_size: usize,
    compression: Compression,
}

impl Params {
    pub fn parse(cd: &[u32], _dataset_element_size: usize) -> Result<Params> {
        // Like the reference filter, trust the element size stored at creation only.
        let Some(&element_size) = cd.get(2) else {
            return Err(crate::format_err!("bitshuffle: {} client data values, need at least 3", cd.len()));
        };
        if element_size == 0 {
            return Err(crate::format_err!("bitshuffle: element size 0"));
        }
        let compression = match cd.get(4) {
            Some(2) => Compression::Lz4,
            Some(3) => Compression::Zstd,
            _ => Compression::None,
        };
        Ok(Params {
            element_size: element_size as usize,
            block_size: cd.get(3).copied().unwrap_or(0) as usize,
            compression,
        })
    }

    pub fn is_compressed(&self) -> bool {
        self.compression != Compression::None
    }
}

pub fn announced_size(src: &[u8]) -> Option<usize> {
    super::lz4::announced_size(src)
}

fn default_block_size(element_size: usize) -> usize {
    let elements = TARGET_BLOCK_BYTES / element_size / BLOCK_MULTIPLE * BLOCK_MULTIPLE;
    elements.max(MIN_DEFAULT_BLOCK)
}

pub fn decode(src: &[u8], dst: &mut [u8], p: &Params, ctx: &mut Contexts) -> Result<()> {
    let es = p.element_size;
    if dst.len() % es != 0 {
        return Err(crate::format_err!(
            "bitshuffle: {} bytes is not a whole number of {}-byte elements",
            dst.len(),
            es
        ));
    }
    if p.compression == Compression::None {
        if src.len() != dst.len() {
            return Err(super::size_mismatch("bitshuffle", src.len(), dst.len()));
        }
        let block = if p.block_size == 0 { default_block_size(es) } else { p.block_size };
        return decode_blocks(src, dst, es, block, ctx, BlockSource::Raw);
    }
    let Some(header) = src.get(..HEADER_LEN) else {
        return Err(crate::format_err!("bitshuffle: {} bytes cannot hold the 12-byte header", src.len()));
    };
    let total = announced_size(header).unwrap_or(usize::MAX);
    if total != dst.len() {
        return Err(crate::format_err!("bitshuffle: header announces {} bytes, expected {}", total, dst.len()));
    }
    let block = u32::from_be_bytes([header[8], header[9], header[10], header[11]]) as usize / es;
    decode_blocks(&src[HEADER_LEN..], dst, es, block, ctx, BlockSource::Compressed(p.compression))
}

#[derive(Clone, Copy)]
enum BlockSource {
    Raw,
    Compressed(Compression),
}

/// Walk the blocks: whole blocks, then one block of the remaining multiple of 8
/// elements, then the last few elements copied as stored.
fn decode_blocks(
    src: &[u8],
    dst: &mut [u8],
    es: usize,
    block: usize,
    ctx: &mut Contexts,
    how: BlockSource,
) -> Result<()> {
    if block == 0 || block % BLOCK_MULTIPLE != 0 {
        return Err(crate::format_err!("bitshuffle: block size {} is not a positive multiple of 8 elements", block));
    }
    let elements = dst.len() / es;
    let shuffled_elements = elements - elements % BLOCK_MULTIPLE;
    let (body, tail) = dst.split_at_mut(shuffled_elements * es);
    let mut pos = 0;
    for out_block in body.chunks_mut(block * es) {
        pos += decode_block(&src[pos.min(src.len())..], out_block, es, ctx, how)?;
    }
    let rest = src.get(pos..).unwrap_or(&[]);
    if rest.len() != tail.len() {
        return Err(crate::format_err!(
            "bitshuffle: {} bytes left for the {} unshuffled tail bytes",
            rest.len(),
            tail.len()
        ));
    }
    tail.copy_from_slice(rest);
    Ok(())
}

/// Decode one block into `out`; returns the number of source bytes it took.
fn decode_block(src: &[u8], out: &mut [u8], es: usize, ctx: &mut Contexts, how: BlockSource) -> Result<usize> {
    let len = out.len();
    let (shuffled, planes, zstd) = ctx.bitshuffle_work(len);
    let used = match how {
        BlockSource::Raw => {
            let Some(data) = src.get(..len) else {
                return Err(crate::format_err!("bitshuffle: data ends inside a block"));
            };
            shuffled.copy_from_slice(data);
            len
        }
        BlockSource::Compressed(codec) => {
            let Some(size) = src.get(..4) else {
                return Err(crate::format_err!("bitshuffle: data ends before a block header"));
            };
            let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
            let Some(data) = src.get(4..).and_then(|rest| rest.get(..size)) else {
                return Err(crate::format_err!("bitshuffle: block of {} bytes runs past the end of the chunk", size));
            };
            decompress_block(data, shuffled, codec, zstd)?;
            4 + size
        }
    };
    if es == 1 {
        untranspose_bits(shuffled, out, len);
    } else {
        untranspose_bits(shuffled, planes, len / es);
        shuffle::decode(planes, out, es)?;
    }
    Ok(used)
}

fn decompress_block(
    data: &[u8],
    block: &mut [u8],
    codec: Compression,
    zstd: &mut zstd::zstd_safe::DCtx<'static>,
) -> Result<()> {
    let n = match codec {
        Compression::Lz4 => super::lz4::decompress_block(data, block)
            .ok_or_else(|| crate::format_err!("bitshuffle: corrupt LZ4 block of {} bytes", data.len()))?,
        Compression::Zstd => zstd.decompress(block, data).map_err(|c| {
            crate::format_err!("bitshuffle: corrupt zstd block: {}", zstd::zstd_safe::get_error_name(c))
        })?,
        Compression::None => unreachable_none(data, block)?,
    };
    if n != block.len() {
        return Err(super::size_mismatch("bitshuffle block", n, block.len()));
    }
    Ok(())
}

/// `Compression::None` blocks never reach the decompressor; kept total without a panic.
fn unreachable_none(data: &[u8], block: &mut [u8]) -> Result<usize> {
    let n = data.len().min(block.len());
    block[..n].copy_from_slice(&data[..n]);
    Ok(n)
}

/// Bit rows back to byte planes: plane j, element i = bits of row j*8+k at element i.
/// `count` (elements in the block) is a multiple of 8; each 8 elements x 8 rows is one
/// 8x8 bit-matrix transpose. On x86-64 the transposes run 4 (AVX2, detected at run
/// time) or 2 (SSE2) at a time; the scalar loop does the rest and other targets. All
/// paths give identical bytes (tested against each other).
pub(crate) fn untranspose_bits(rows: &[u8], planes: &mut [u8], count: usize) {
    untranspose_bits_with(rows, planes, count, Kernel::best())
}

/// Which implementation of the 8x8 transposes to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))] // x86-64 always has SSE2
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Sse2,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
            Kernel::Sse2 // part of x86-64
        }
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Scalar
    }
}

fn untranspose_bits_with(rows: &[u8], planes: &mut [u8], count: usize, kernel: Kernel) {
    let row_len = count / BLOCK_MULTIPLE;
    for (group, plane) in rows.chunks_exact(8 * row_len).zip(planes.chunks_exact_mut(count)) {
        // The 8 bit rows of this byte plane, as equal-length slices so the inner loop
        // needs no bounds checks.
        let r: [&[u8]; 8] = std::array::from_fn(|k| &group[k * row_len..(k + 1) * row_len]);
        let done = match kernel {
            Kernel::Scalar => 0,
            #[cfg(target_arch = "x86_64")]
            Kernel::Sse2 => simd::untranspose_sse2(&r, plane),
            // SAFETY: Kernel::Avx2 is chosen only where the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { simd::untranspose_avx2(&r, plane) },
        };
        untranspose_scalar(&r, plane, done);
    }
}

/// Groups `from..` of one plane (group g: 8 output bytes from byte g of the 8 rows).
fn untranspose_scalar(r: &[&[u8]; 8], plane: &mut [u8], from: usize) {
    let row_len = r[0].len();
    for (g, out) in plane.chunks_exact_mut(8).enumerate().take(row_len).skip(from) {
        let m = u64::from_le_bytes([r[0][g], r[1][g], r[2][g], r[3][g], r[4][g], r[5][g], r[6][g], r[7][g]]);
        out.copy_from_slice(&transpose8x8(m).to_le_bytes());
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    //! The scalar transpose8x8 on 64-bit lanes. Byte interleaves gather, per group g,
    //! the bytes r[0][g]..r[7][g] into one lane (the scalar loop's `m`): 16 groups
    //! from 8 loads of 16 bytes give 8 vectors of 2 lanes (groups 2i, 2i+1), whose
    //! 16 transposed bytes are the plane's bytes 16i.. 16i+16. AVX2 does the same in
    //! each 128-bit half (groups g.. and g+16..).
    use std::arch::x86_64::*;

    /// Groups done (a multiple of 16); the caller finishes the rest.
    pub(super) fn untranspose_sse2(r: &[&[u8]; 8], plane: &mut [u8]) -> usize {
        let row_len = r[0].len();
        let done = row_len / 16 * 16;
        assert!(plane.len() >= 8 * row_len); // checked once: the loop's stores rely on it
        let out = plane.as_mut_ptr();
        for g in (0..done).step_by(16) {
            // SAFETY: SSE2 is part of x86-64; loads read r[k][g..g+16] with g+16 <= row_len,
            // stores write plane[8g .. 8g+128] with 8(g+16) <= 8 row_len <= plane.len().
            unsafe {
                let v: [__m128i; 8] = std::array::from_fn(|k| _mm_loadu_si128(r[k].as_ptr().add(g).cast()));
                for (i, lanes) in gather_sse2(v).into_iter().enumerate() {
                    _mm_storeu_si128(out.add(8 * g + 16 * i).cast(), transpose_sse2(lanes));
                }
            }
        }
        done
    }

    /// 8 rows of 16 bytes to 8 vectors holding groups (0,1), (2,3), ... (14,15).
    #[inline(always)]
    unsafe fn gather_sse2(v: [__m128i; 8]) -> [__m128i; 8] {
        let a = |x, y| (_mm_unpacklo_epi8(x, y), _mm_unpackhi_epi8(x, y));
        let ((a01l, a01h), (a23l, a23h)) = (a(v[0], v[1]), a(v[2], v[3]));
        let ((a45l, a45h), (a67l, a67h)) = (a(v[4], v[5]), a(v[6], v[7]));
        let b = |x, y| (_mm_unpacklo_epi16(x, y), _mm_unpackhi_epi16(x, y));
        let ((b03_0, b03_1), (b03_2, b03_3)) = (b(a01l, a23l), b(a01h, a23h));
        let ((b47_0, b47_1), (b47_2, b47_3)) = (b(a45l, a67l), b(a45h, a67h));
        let c = |x, y| (_mm_unpacklo_epi32(x, y), _mm_unpackhi_epi32(x, y));
        let (c0, c1) = c(b03_0, b47_0);
        let (c2, c3) = c(b03_1, b47_1);
        let (c4, c5) = c(b03_2, b47_2);
        let (c6, c7) = c(b03_3, b47_3);
        [c0, c1, c2, c3, c4, c5, c6, c7]
    }

    #[inline(always)]
    unsafe fn transpose_sse2(x: __m128i) -> __m128i {
        macro_rules! step {
            ($x:expr, $mask:expr, $shift:expr) => {{
                let x = $x;
                let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<$shift>(x)), _mm_set1_epi64x($mask));
                _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<$shift>(t)))
            }};
        }
        let x = step!(x, 0x00AA_00AA_00AA_00AA, 7);
        let x = step!(x, 0x0000_CCCC_0000_CCCC, 14);
        step!(x, 0x0000_0000_F0F0_F0F0, 28)
    }

    /// Groups done (a multiple of 32); the caller finishes the rest.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn untranspose_avx2(r: &[&[u8]; 8], plane: &mut [u8]) -> usize {
        let row_len = r[0].len();
        let done = row_len / 32 * 32;
        assert!(plane.len() >= 8 * row_len);
        let out = plane.as_mut_ptr();
        for g in (0..done).step_by(32) {
            // Loads read r[k][g..g+32] (g+32 <= row_len); stores write plane[8g .. 8g+256].
            let v: [__m256i; 8] = std::array::from_fn(|k| _mm256_loadu_si256(r[k].as_ptr().add(g).cast()));
            for (i, lanes) in gather_avx2(v).into_iter().enumerate() {
                let t = transpose_avx2(lanes);
                // low half: groups g+2i, g+2i+1; high half: groups g+16+2i, g+16+2i+1
                _mm_storeu_si128(out.add(8 * g + 16 * i).cast(), _mm256_castsi256_si128(t));
                _mm_storeu_si128(out.add(8 * (g + 16) + 16 * i).cast(), _mm256_extracti128_si256::<1>(t));
            }
        }
        done
    }

    // The AVX2 helpers use macros, not closures: a closure would not inherit the
    // target feature, and its intrinsics would become calls.
    macro_rules! unpack {
        ($lo:ident, $hi:ident, $x:expr, $y:expr) => {
            ($lo($x, $y), $hi($x, $y))
        };
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn gather_avx2(v: [__m256i; 8]) -> [__m256i; 8] {
        use {_mm256_unpackhi_epi16 as hi16, _mm256_unpackhi_epi32 as hi32, _mm256_unpackhi_epi8 as hi8};
        use {_mm256_unpacklo_epi16 as lo16, _mm256_unpacklo_epi32 as lo32, _mm256_unpacklo_epi8 as lo8};
        let ((a01l, a01h), (a23l, a23h)) = (unpack!(lo8, hi8, v[0], v[1]), unpack!(lo8, hi8, v[2], v[3]));
        let ((a45l, a45h), (a67l, a67h)) = (unpack!(lo8, hi8, v[4], v[5]), unpack!(lo8, hi8, v[6], v[7]));
        let ((b03_0, b03_1), (b03_2, b03_3)) = (unpack!(lo16, hi16, a01l, a23l), unpack!(lo16, hi16, a01h, a23h));
        let ((b47_0, b47_1), (b47_2, b47_3)) = (unpack!(lo16, hi16, a45l, a67l), unpack!(lo16, hi16, a45h, a67h));
        let (c0, c1) = unpack!(lo32, hi32, b03_0, b47_0);
        let (c2, c3) = unpack!(lo32, hi32, b03_1, b47_1);
        let (c4, c5) = unpack!(lo32, hi32, b03_2, b47_2);
        let (c6, c7) = unpack!(lo32, hi32, b03_3, b47_3);
        [c0, c1, c2, c3, c4, c5, c6, c7]
    }

    macro_rules! transpose_step {
        ($x:expr, $mask:expr, $shift:expr) => {{
            let x = $x;
            let t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<$shift>(x)), _mm256_set1_epi64x($mask));
            _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<$shift>(t)))
        }};
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn transpose_avx2(x: __m256i) -> __m256i {
        let x = transpose_step!(x, 0x00AA_00AA_00AA_00AA, 7);
        let x = transpose_step!(x, 0x0000_CCCC_0000_CCCC, 14);
        transpose_step!(x, 0x0000_0000_F0F0_F0F0, 28)
    }
}

/// Transpose an 8x8 bit matrix held as byte r = row r, bit c = column c.
pub(crate) fn transpose8x8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

// Encoding (the writer), the inverse of the decoder above.

/// What compresses the bit-transposed blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitshuffleCodec {
    None,
    Lz4,
    Zstd,
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
pub(crate) fn encode_block(block: &[u8], rows: &mut [u8], planes: &mut [u8], es: usize) {
    let count = block.len() / es;
    if es == 1 {
        transpose_bits(block, rows, count);
    } else {
        super::shuffle::encode(block, planes, es);
        transpose_bits(planes, rows, count);
    }
}

/// The bitshuffle filter (32008): blocks of `block` elements bit-transposed, then
/// optionally compressed with a 12-byte header and 4-byte block sizes; the last
/// elements beyond a multiple of 8 are stored unchanged.
pub(crate) fn encode(
    src: &[u8],
    dst: &mut Vec<u8>,
    es: usize,
    block: usize,
    codec: BitshuffleCodec,
    level: i32,
    scratch: &mut super::encode::EncodeScratch,
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
            encode_block(b, rows, planes, es);
            match codec {
                BitshuffleCodec::None => dst.extend_from_slice(rows),
                BitshuffleCodec::Lz4 => super::lz4::encode_sized_block(rows, dst, false)?,
                BitshuffleCodec::Zstd => {
                    let at = dst.len();
                    dst.extend_from_slice(&[0; 4]);
                    super::zstd::encode(rows, dst, level, &mut scratch.zstd)?;
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

#[cfg(test)]
pub mod reference {
    //! A naive encoder following the definition, for tests.
    use super::*;

    fn bitshuffle_block(block: &[u8], es: usize) -> Vec<u8> {
        let n = block.len() / es;
        let mut rows = vec![0u8; block.len()];
        for i in 0..n {
            for j in 0..es {
                for k in 0..8 {
                    let bit = (block[i * es + j] >> k) & 1;
                    rows[(j * 8 + k) * (n / 8) + i / 8] |= bit << (i % 8);
                }
            }
        }
        rows
    }

    pub fn encode(data: &[u8], es: usize, block: usize, codec: Compression) -> Vec<u8> {
        let block = if block == 0 { default_block_size(es) } else { block };
        let n = data.len() / es;
        let body = (n - n % 8) * es;
        let mut out = Vec::new();
        if codec != Compression::None {
            out.extend_from_slice(&(data.len() as u64).to_be_bytes());
            out.extend_from_slice(&((block * es) as u32).to_be_bytes());
        }
        for b in data[..body].chunks(block * es) {
            let rows = bitshuffle_block(b, es);
            let c = match codec {
                Compression::None => {
                    out.extend_from_slice(&rows);
                    continue;
                }
                Compression::Lz4 => lz4_flex::block::compress(&rows),
                Compression::Zstd => zstd::bulk::compress(&rows, 1).unwrap(),
            };
            out.extend_from_slice(&(c.len() as u32).to_be_bytes());
            out.extend_from_slice(&c);
        }
        out.extend_from_slice(&data[body..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::reference::encode;
    use super::*;

    fn params(es: usize, block: usize, compression: Compression) -> Params {
        Params { element_size: es, block_size: block, compression }
    }

    /// Every kernel the CPU has gives the scalar loop's bytes: element sizes 1 to 16
    /// (byte planes), element counts around the 16- and 32-group SIMD steps.
    #[test]
    fn simd_untranspose_is_bit_exact_with_scalar() {
        let mut kernels = vec![Kernel::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            kernels.push(Kernel::Sse2);
            if std::is_x86_feature_detected!("avx2") {
                kernels.push(Kernel::Avx2);
            }
        }
        assert!(kernels.contains(&Kernel::best()));
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for es in 1..=16 {
            for count in [8, 16, 120, 128, 136, 248, 256, 264, 512, 1000, 2048, 4096 + 8 * 37] {
                let rows: Vec<u8> = (0..count * es)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                let mut expected = vec![0u8; rows.len()];
                untranspose_bits_with(&rows, &mut expected, count, Kernel::Scalar);
                for &k in &kernels {
                    let mut got = vec![0xA5u8; rows.len()];
                    untranspose_bits_with(&rows, &mut got, count, k);
                    assert_eq!(got, expected, "kernel {:?}, element size {}, count {}", k, es, count);
                }
            }
        }
    }

    #[test]
    fn transpose_matches_definition() {
        let mut x = 0x0123_4567_89AB_CDEFu64;
        for _ in 0..100 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let t = transpose8x8(x);
            for r in 0..8 {
                for c in 0..8 {
                    assert_eq!((x >> (8 * r + c)) & 1, (t >> (8 * c + r)) & 1);
                }
            }
        }
    }

    #[test]
    fn round_trips_all_modes_sizes_and_tails() {
        let mut ctx = Contexts::default();
        for es in [1, 2, 3, 4, 8, 16] {
            for n in [0, 5, 8, 100, 1000, 2053] {
                let data: Vec<u8> = (0..n * es).map(|i| ((i * 37) ^ (i >> 3)) as u8).collect();
                for block in [0, 8, 64] {
                    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
                        let enc = encode(&data, es, block, codec);
                        let mut out = vec![0x77; data.len()];
                        decode(&enc, &mut out, &params(es, block, codec), &mut ctx).unwrap();
                        assert_eq!(out, data, "es {} n {} block {} {:?}", es, n, block, codec);
                    }
                }
            }
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut ctx = Contexts::default();
        let data: Vec<u8> = (0..4000).map(|i| (i % 17) as u8).collect();
        for codec in [Compression::Lz4, Compression::Zstd] {
            let enc = encode(&data, 4, 0, codec);
            let p = params(4, 0, codec);
            for cut in (0..enc.len()).step_by(3) {
                assert!(decode(&enc[..cut], &mut vec![0; 4000], &p, &mut ctx).is_err());
            }
            for i in 0..enc.len() {
                let mut bad = enc.clone();
                bad[i] ^= 0x5A;
                let _ = decode(&bad, &mut vec![0; 4000], &p, &mut ctx);
            }
            assert!(decode(&enc, &mut vec![0; 3996], &p, &mut ctx).is_err());
        }
        let p = params(4, 12, Compression::None);
        assert!(decode(&data, &mut vec![0; 4000], &p, &mut ctx).is_err());
        assert!(decode(&data[..3999], &mut vec![0; 3999], &params(4, 0, Compression::None), &mut ctx).is_err());
        assert!(Params::parse(&[0, 0], 4).is_err());
        assert!(Params::parse(&[0, 0, 0], 4).is_err());
    }
}
