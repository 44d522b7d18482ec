//! VBZ (filter 32020, Oxford Nanopore): a 4-byte little-endian decoded size, then
//! optionally zstd, over StreamVByte-coded integers, optionally delta + zig-zag coded.
//!
//! Client data: [version (0 or 1), integer size (0 = no StreamVByte, 1, 2, 4),
//! delta + zig-zag (nonzero = yes), zstd level (0 = no zstd; absent means 1)].
//! StreamVByte: one 2-bit code per value (first value in the low bits of the first key
//! byte), all keys first, then the data. Version 0 (and every integer size but 1) codes
//! 1-4 little-endian bytes; version 1 with 1-byte integers codes 0, 1, 2 or 4 nibbles,
//! low nibble first. Values are 32-bit and truncated to the integer size.

use super::Contexts;
use crate::error::Result;

const HEADER_LEN: usize = 4;

#[derive(Debug, Clone, Copy)]
pub struct Params {
    integer_size: usize,
    zigzag: bool,
    zstd: bool,
    /// Nibble-coded values (version 1, 1-byte integers).
    nibbles: bool,
}

impl Params {
    pub fn parse(cd: &[u32]) -> Result<Params> {
        if cd.len() < 3 {
            return Err(crate::format_err!("vbz: {} client data values, need at least 3", cd.len()));
        }
        let version = cd[0];
        if version > 1 {
            return Err(crate::unsupported!("vbz version {}", version));
        }
        let integer_size = cd[1] as usize;
        if ![0, 1, 2, 4].contains(&integer_size) {
            return Err(crate::format_err!("vbz: integer size {} is not 0, 1, 2 or 4", integer_size));
        }
        Ok(Params {
            integer_size,
            zigzag: cd[2] != 0,
            zstd: cd.get(3).map_or(true, |&level| level != 0),
            nibbles: version == 1 && integer_size == 1,
        })
    }
}

pub fn announced_size(src: &[u8]) -> Option<usize> {
    let b = src.get(..HEADER_LEN)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

pub fn decode(src: &[u8], dst: &mut [u8], p: &Params, ctx: &mut Contexts) -> Result<()> {
    let original =
        announced_size(src).ok_or_else(|| crate::format_err!("vbz: chunk shorter than its 4-byte header"))?;
    if original != dst.len() {
        return Err(crate::format_err!("vbz: header announces {} bytes, expected {}", original, dst.len()));
    }
    let body = &src[HEADER_LEN..];
    match (p.zstd, p.integer_size) {
        (false, 0) => copy_exact(body, dst),
        (true, 0) => super::zstd::decode(body, dst, ctx.zstd()),
        (false, _) => decode_integers(body, dst, p),
        (true, _) => {
            let coded_len = coded_size(body, dst.len(), p)?;
            let Contexts { work, zstd, .. } = ctx;
            let coded = super::sized(work, coded_len);
            let z = zstd.get_or_insert_with(::zstd::zstd_safe::DCtx::create);
            super::zstd::decode(body, coded, z)?;
            decode_integers(coded, dst, p)
        }
    }
}

/// The size of the StreamVByte stream inside the zstd frame, from the frame header,
/// bounded by what `dst_len` bytes of integers can possibly need.
fn coded_size(body: &[u8], dst_len: usize, p: &Params) -> Result<usize> {
    let count = dst_len / p.integer_size;
    let most = count.div_ceil(4) + count * 4;
    match super::zstd::announced_size(body) {
        Some(n) if n <= most => Ok(n),
        Some(n) => {
            Err(crate::format_err!("vbz: zstd frame announces {} bytes, more than {} values can need", n, count))
        }
        None => Err(crate::format_err!("vbz: zstd frame does not announce its size")),
    }
}

fn copy_exact(body: &[u8], dst: &mut [u8]) -> Result<()> {
    if body.len() != dst.len() {
        return Err(super::size_mismatch("vbz", body.len(), dst.len()));
    }
    dst.copy_from_slice(body);
    Ok(())
}

fn decode_integers(coded: &[u8], dst: &mut [u8], p: &Params) -> Result<()> {
    if dst.len() % p.integer_size != 0 {
        return Err(crate::format_err!(
            "vbz: {} bytes is not a whole number of {}-byte integers",
            dst.len(),
            p.integer_size
        ));
    }
    let count = dst.len() / p.integer_size;
    let keys_len = count.div_ceil(4);
    let Some((keys, data)) = coded.split_at_checked(keys_len) else {
        return Err(crate::format_err!("vbz: {} bytes cannot hold the keys of {} values", coded.len(), count));
    };
    let mut out = IntegerWriter { dst, size: p.integer_size, pos: 0, previous: 0, zigzag: p.zigzag };
    let used = if p.nibbles {
        read_nibble_values(keys, data, count, &mut out)?
    } else {
        read_byte_values(keys, data, count, &mut out)?
    };
    if used != data.len() {
        return Err(crate::format_err!("vbz: {} data bytes after the last value", data.len() - used));
    }
    Ok(())
}

/// Undoes delta + zig-zag if asked and stores each value truncated to the integer size.
struct IntegerWriter<'a> {
    dst: &'a mut [u8],
    size: usize,
    pos: usize,
    previous: i32,
    zigzag: bool,
}

impl IntegerWriter<'_> {
    fn push(&mut self, coded: u32) {
        let value = if self.zigzag {
            let delta = ((coded >> 1) as i32) ^ -((coded & 1) as i32);
            self.previous = self.previous.wrapping_add(delta);
            self.previous as u32
        } else {
            coded
        };
        let bytes = value.to_le_bytes();
        // one branch per size so each copy is a fixed-width store
        match self.size {
            1 => self.dst[self.pos] = bytes[0],
            2 => self.dst[self.pos..self.pos + 2].copy_from_slice(&bytes[..2]),
            _ => self.dst[self.pos..self.pos + 4].copy_from_slice(&bytes[..4]),
        }
        self.pos += self.size;
    }
}

fn code_of(keys: &[u8], i: usize) -> usize {
    usize::from((keys[i / 4] >> (2 * (i % 4))) & 3)
}

/// Version 0: code c means c + 1 little-endian bytes. Returns the data bytes read.
fn read_byte_values(keys: &[u8], data: &[u8], count: usize, out: &mut IntegerWriter) -> Result<usize> {
    let (mut pos, mut first) = read_byte_quads(keys, data, count, out);
    while first < count {
        let len = code_of(keys, first) + 1;
        let Some(bytes) = data.get(pos..pos + len) else {
            return Err(crate::format_err!("vbz: data ends at value {} of {}", first, count));
        };
        let mut le = [0u8; 4];
        le[..len].copy_from_slice(bytes);
        out.push(u32::from_le_bytes(le));
        pos += len;
        first += 1;
    }
    Ok(pos)
}

/// The hot loop of `read_byte_values`: one key byte (four values) at a time while 16
/// data bytes remain, so every value is a masked 4-byte load from one checked window.
/// Returns (data bytes read, values decoded); the caller decodes the rest one by one.
fn read_byte_quads(keys: &[u8], data: &[u8], count: usize, out: &mut IntegerWriter) -> (usize, usize) {
    // one copy of the loop per (integer size, zig-zag): no per-value branching on them
    match (out.size, out.zigzag) {
        (1, true) => quads::<1, true>(keys, data, count, out),
        (1, false) => quads::<1, false>(keys, data, count, out),
        (2, true) => quads::<2, true>(keys, data, count, out),
        (2, false) => quads::<2, false>(keys, data, count, out),
        (_, true) => quads::<4, true>(keys, data, count, out),
        (_, false) => quads::<4, false>(keys, data, count, out),
    }
}

/// The SIMD decoder where the CPU has it, else the scalar one; both stop at the same
/// place (the first key whose values may reach past 16 bytes before the data's end).
fn quads<const SIZE: usize, const ZIGZAG: bool>(
    keys: &[u8],
    data: &[u8],
    count: usize,
    out: &mut IntegerWriter,
) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { simd::quads_avx2::<SIZE, ZIGZAG>(keys, data, count, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: the CPU has SSSE3 (checked just above).
        return unsafe { simd::quads_ssse3::<SIZE, ZIGZAG>(keys, data, count, out) };
    }
    scalar_quads::<SIZE, ZIGZAG>(keys, data, count, out)
}

fn scalar_quads<const SIZE: usize, const ZIGZAG: bool>(
    keys: &[u8],
    data: &[u8],
    count: usize,
    out: &mut IntegerWriter,
) -> (usize, usize) {
    const MASKS: [u32; 4] = [0xff, 0xffff, 0xff_ffff, 0xffff_ffff];
    let quads = count / 4;
    let mut pos = 0;
    let mut previous = out.previous;
    let start = out.pos;
    let Some(dst) = out.dst.get_mut(start..start + quads * 4 * SIZE) else {
        return (0, 0);
    };
    for (quad, (&key, dst)) in keys.iter().zip(dst.chunks_exact_mut(4 * SIZE)).enumerate() {
        let Some(window) = data.get(pos..pos + 16) else {
            out.previous = previous;
            out.pos = start + quad * 4 * SIZE;
            return (pos, quad * 4);
        };
        let mut at = 0;
        for (k, slot) in dst.chunks_exact_mut(SIZE).enumerate() {
            let code = usize::from((key >> (2 * k)) & 3);
            let mut value = u32::from_le_bytes([window[at], window[at + 1], window[at + 2], window[at + 3]]) & MASKS[code];
            if ZIGZAG {
                previous = previous.wrapping_add(((value >> 1) as i32) ^ -((value & 1) as i32));
                value = previous as u32;
            }
            slot.copy_from_slice(&value.to_le_bytes()[..SIZE]);
            at += code + 1;
        }
        pos += at;
    }
    out.previous = previous;
    out.pos = start + quads * 4 * SIZE;
    (pos, quads * 4)
}

/// StreamVByte decoding with SSSE3, as in Lemire, Kurz and Rupp, "Stream VByte:
/// faster byte-oriented integer compression" (2018): one key byte selects a 16-byte
/// shuffle that spreads its four values' 1-4 bytes into four 32-bit lanes; zig-zag
/// and the running sum of the deltas are done on the four lanes at once. With AVX2,
/// two quads share each 256-bit instruction (one per 128-bit half).
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::IntegerWriter;
    use std::arch::x86_64::*;

    /// For every key byte: the shuffle mask (0x80 zeroes a byte) and its data length.
    struct Tables {
        shuffle: [[u8; 16]; 256],
        length: [u8; 256],
    }

    static TABLES: Tables = tables();

    const fn tables() -> Tables {
        let mut t = Tables { shuffle: [[0x80; 16]; 256], length: [0; 256] };
        let mut key = 0;
        while key < 256 {
            let mut at = 0u8;
            let mut lane = 0;
            while lane < 4 {
                let len = ((key >> (2 * lane)) & 3) as u8 + 1;
                let mut j = 0;
                while j < len {
                    t.shuffle[key][4 * lane + j as usize] = at + j;
                    j += 1;
                }
                at += len;
                lane += 1;
            }
            t.length[key] = at;
            key += 1;
        }
        t
    }

    fn length(key: usize) -> usize {
        usize::from(TABLES.length[key])
    }

    /// Where the quads of one call read and write: the data, the output of whole
    /// quads, and the running position in each.
    struct Cursor<'a> {
        data: &'a [u8],
        dst: &'a mut [u8],
        pos: usize,
        quad: usize,
    }

    /// Four quads decoded together: their keys and the offsets of their data.
    struct Step {
        keys: [usize; 4],
        pos: [usize; 4],
    }

    impl<'a> Cursor<'a> {
        /// The cursor over `count` values' whole quads, written from `start` in `dst`
        /// (None when `dst` is too short), and the keys of those quads.
        fn over<'k>(
            keys: &'k [u8],
            data: &'a [u8],
            dst: &'a mut [u8],
            start: usize,
            count: usize,
            size: usize,
        ) -> Option<(Cursor<'a>, &'k [u8])> {
            let quads = count / 4;
            let dst = dst.get_mut(start..start + quads * 4 * size)?;
            Some((Cursor { data, dst, pos: 0, quad: 0 }, &keys[..quads.min(keys.len())]))
        }

        /// The next four quads, when all their 16-byte windows lie inside the data.
        /// Their offsets come from four independent table loads, so the loads of one
        /// step do not wait on each other (one quad at a time, each load waited for the
        /// previous quad's length: ~2x slower).
        #[inline(always)]
        fn step(&self, keys: &[u8]) -> Option<Step> {
            let k = keys.get(self.quad..self.quad + 4)?;
            let keys = [k[0], k[1], k[2], k[3]].map(usize::from);
            let p1 = self.pos + length(keys[0]);
            let p2 = p1 + length(keys[1]);
            let p3 = p2 + length(keys[2]);
            (p3 + 16 <= self.data.len()).then_some(Step { keys, pos: [self.pos, p1, p2, p3] })
        }

        #[inline(always)]
        fn advance(&mut self, step: &Step) {
            self.pos = step.pos[3] + length(step.keys[3]);
            self.quad += 4;
        }
    }

    /// `scalar_quads` with SSSE3: same arguments, same result, same stopping point.
    ///
    /// # Safety
    /// The CPU must support SSSE3.
    #[target_feature(enable = "ssse3")]
    pub(super) unsafe fn quads_ssse3<const SIZE: usize, const ZIGZAG: bool>(
        keys: &[u8],
        data: &[u8],
        count: usize,
        out: &mut IntegerWriter,
    ) -> (usize, usize) {
        let start = out.pos;
        let Some((mut at, keys)) = Cursor::over(keys, data, out.dst, start, count, SIZE) else {
            return (0, 0);
        };
        let mut previous = _mm_set1_epi32(out.previous);
        while let Some(step) = at.step(keys) {
            let quad = at.quad;
            for i in 0..4 {
                quad_ssse3::<SIZE, ZIGZAG>(&mut at, step.pos[i], step.keys[i], quad + i, &mut previous);
            }
            at.advance(&step);
        }
        single_quads_ssse3::<SIZE, ZIGZAG>(keys, &mut at, &mut previous);
        out.previous = _mm_cvtsi128_si32(previous);
        out.pos = start + at.quad * 4 * SIZE;
        (at.pos, at.quad * 4)
    }

    /// The quads left one at a time, while each has 16 data bytes to load.
    #[target_feature(enable = "ssse3")]
    #[inline]
    unsafe fn single_quads_ssse3<const SIZE: usize, const ZIGZAG: bool>(
        keys: &[u8],
        at: &mut Cursor,
        previous: &mut __m128i,
    ) {
        while at.quad < keys.len() && at.pos + 16 <= at.data.len() {
            let (pos, quad, key) = (at.pos, at.quad, usize::from(keys[at.quad]));
            quad_ssse3::<SIZE, ZIGZAG>(at, pos, key, quad, previous);
            at.pos += length(key);
            at.quad += 1;
        }
    }

    /// One quad: its 16-byte window at `pos`, shuffled by its key, zig-zag and delta
    /// undone against `previous`, stored as quad `quad` (truncated to SIZE bytes a lane).
    ///
    /// # Safety
    /// SSSE3; pos + 16 <= at.data.len() and quad is a whole quad of at.dst.
    #[target_feature(enable = "ssse3")]
    #[inline]
    unsafe fn quad_ssse3<const SIZE: usize, const ZIGZAG: bool>(
        at: &mut Cursor,
        pos: usize,
        key: usize,
        quad: usize,
        previous: &mut __m128i,
    ) {
        let packed = _mm_loadu_si128(at.data.as_ptr().add(pos).cast());
        let mask = _mm_loadu_si128(TABLES.shuffle[key].as_ptr().cast());
        let mut values = _mm_shuffle_epi8(packed, mask);
        if ZIGZAG {
            let sign = _mm_srai_epi32(_mm_slli_epi32(values, 31), 31);
            values = _mm_xor_si128(_mm_srli_epi32(values, 1), sign);
            values = _mm_add_epi32(values, _mm_slli_si128(values, 4));
            values = _mm_add_epi32(values, _mm_slli_si128(values, 8));
            // the quad's own total is broadcast off the carried chain, so from quad
            // to quad only one add waits on the one before
            let total = _mm_shuffle_epi32(values, 0xff);
            values = _mm_add_epi32(values, *previous);
            *previous = _mm_add_epi32(*previous, total);
        }
        let out_at = at.dst.as_mut_ptr().add(quad * 4 * SIZE);
        match SIZE {
            4 => _mm_storeu_si128(out_at.cast(), values),
            // the low 2 bytes or the low byte of each lane, packed (truncation)
            2 => {
                let low16 = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
                _mm_storel_epi64(out_at.cast(), _mm_shuffle_epi8(values, low16))
            }
            _ => {
                let low8 = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
                out_at.cast::<i32>().write_unaligned(_mm_cvtsi128_si32(_mm_shuffle_epi8(values, low8)))
            }
        }
    }

    /// `quads_ssse3` with AVX2: two quads per instruction. Same result, same stopping
    /// point (the quads left after the last whole step go through `single_quads_ssse3`).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quads_avx2<const SIZE: usize, const ZIGZAG: bool>(
        keys: &[u8],
        data: &[u8],
        count: usize,
        out: &mut IntegerWriter,
    ) -> (usize, usize) {
        let start = out.pos;
        let Some((mut at, keys)) = Cursor::over(keys, data, out.dst, start, count, SIZE) else {
            return (0, 0);
        };
        let mut previous = _mm256_set1_epi32(out.previous);
        while let Some(step) = at.step(keys) {
            let quad = at.quad;
            quad_pair_avx2::<SIZE, ZIGZAG>(&mut at, [step.pos[0], step.pos[1]], [step.keys[0], step.keys[1]], quad, &mut previous);
            quad_pair_avx2::<SIZE, ZIGZAG>(&mut at, [step.pos[2], step.pos[3]], [step.keys[2], step.keys[3]], quad + 2, &mut previous);
            at.advance(&step);
        }
        let mut previous = _mm256_castsi256_si128(previous);
        single_quads_ssse3::<SIZE, ZIGZAG>(keys, &mut at, &mut previous);
        out.previous = _mm_cvtsi128_si32(previous);
        out.pos = start + at.quad * 4 * SIZE;
        (at.pos, at.quad * 4)
    }

    /// Quads `quad` and `quad + 1` (windows at `pos`, keys `key`), one per 128-bit half.
    ///
    /// # Safety
    /// AVX2; both windows inside at.data and both quads whole quads of at.dst.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn quad_pair_avx2<const SIZE: usize, const ZIGZAG: bool>(
        at: &mut Cursor,
        pos: [usize; 2],
        key: [usize; 2],
        quad: usize,
        previous: &mut __m256i,
    ) {
        let window = |pos: usize| _mm_loadu_si128(at.data.as_ptr().add(pos).cast());
        let mask = |key: usize| _mm_loadu_si128(TABLES.shuffle[key].as_ptr().cast());
        let packed = _mm256_set_m128i(window(pos[1]), window(pos[0]));
        let mut values = _mm256_shuffle_epi8(packed, _mm256_set_m128i(mask(key[1]), mask(key[0])));
        if ZIGZAG {
            let sign = _mm256_srai_epi32(_mm256_slli_epi32(values, 31), 31);
            values = _mm256_xor_si256(_mm256_srli_epi32(values, 1), sign);
            // running sums inside each half, then the first half's total into the second
            values = _mm256_add_epi32(values, _mm256_slli_si256(values, 4));
            values = _mm256_add_epi32(values, _mm256_slli_si256(values, 8));
            let half_totals = _mm256_shuffle_epi32(values, 0xff);
            values = _mm256_add_epi32(values, _mm256_permute2x128_si256(half_totals, half_totals, 0x08));
            let total = _mm256_permutevar8x32_epi32(values, _mm256_set1_epi32(7));
            values = _mm256_add_epi32(values, *previous);
            *previous = _mm256_add_epi32(*previous, total);
        }
        let out_at = at.dst.as_mut_ptr().add(quad * 4 * SIZE);
        match SIZE {
            4 => _mm256_storeu_si256(out_at.cast(), values),
            2 => {
                // each half's low 2 bytes a lane into its low 8 bytes, then the two joined
                let low16 = _mm256_setr_epi8(
                    0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, //
                    0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                );
                let packed = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(values, low16), 0x08);
                _mm_storeu_si128(out_at.cast(), _mm256_castsi256_si128(packed))
            }
            _ => {
                let low8 = _mm256_setr_epi8(
                    0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
                    0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                );
                let packed =
                    _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(values, low8), _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
                _mm_storel_epi64(out_at.cast(), _mm256_castsi256_si128(packed))
            }
        }
    }
}

/// Version 1, 1-byte integers: codes 0..3 mean 0, 1, 2 or 4 nibbles. Returns the data
/// bytes read (a partly used last byte counts).
fn read_nibble_values(keys: &[u8], data: &[u8], count: usize, out: &mut IntegerWriter) -> Result<usize> {
    let mut nibble = 0usize;
    for i in 0..count {
        let n = [0, 1, 2, 4][code_of(keys, i)];
        if (nibble + n).div_ceil(2) > data.len() {
            return Err(crate::format_err!("vbz: data ends at value {} of {}", i, count));
        }
        let mut value = 0u32;
        for k in 0..n {
            let at = nibble + k;
            value |= u32::from((data[at / 2] >> (4 * (at % 2))) & 0xf) << (4 * k);
        }
        out.push(value);
        nibble += n;
    }
    Ok(nibble.div_ceil(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zigzag_deltas(values: &[i32]) -> Vec<u32> {
        let mut prev = 0i32;
        values
            .iter()
            .map(|&v| {
                let d = v.wrapping_sub(prev);
                prev = v;
                ((d << 1) ^ (d >> 31)) as u32
            })
            .collect()
    }

    /// Reference encoder following the format description (both code tables).
    fn encode(values: &[i32], p: &Params, level: i32) -> Vec<u8> {
        let coded: Vec<u32> = if p.zigzag { zigzag_deltas(values) } else { values.iter().map(|&v| v as u32).collect() };
        let mut keys = vec![0u8; coded.len().div_ceil(4)];
        let mut data = Vec::new();
        let mut nibbles: Vec<u8> = Vec::new();
        for (i, &v) in coded.iter().enumerate() {
            let code = if p.nibbles {
                let (code, n) = match v {
                    0 => (0, 0),
                    1..=15 => (1, 1),
                    16..=255 => (2, 2),
                    _ => (3, 4),
                };
                nibbles.extend((0..n).map(|k| ((v >> (4 * k)) & 0xf) as u8));
                code
            } else {
                let len = (4 - v.leading_zeros() as usize / 8).max(1);
                data.extend_from_slice(&v.to_le_bytes()[..len]);
                len - 1
            };
            keys[i / 4] |= (code as u8) << (2 * (i % 4));
        }
        if p.nibbles {
            data = nibbles.chunks(2).map(|c| c[0] | (c.get(1).copied().unwrap_or(0) << 4)).collect();
        }
        keys.extend(data);
        let body = if p.zstd { zstd::bulk::compress(&keys, level).unwrap() } else { keys };
        let mut out = ((values.len() * p.integer_size) as u32).to_le_bytes().to_vec();
        out.extend(body);
        out
    }

    fn raw(values: &[i32], size: usize) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()[..size].to_vec()).collect()
    }

    #[test]
    fn round_trips_versions_sizes_and_modes() {
        let mut ctx = Contexts::default();
        let signal: Vec<i32> = (0..3001).map(|i| ((i * 37) % 200 - 100) + if i % 97 == 0 { 90 } else { 0 }).collect();
        for version in [0u32, 1] {
            for size in [1usize, 2, 4] {
                for zigzag in [0u32, 1] {
                    for level in [0u32, 1] {
                        let p = Params::parse(&[version, size as u32, zigzag, level]).unwrap();
                        let values: Vec<i32> =
                            signal.iter().map(|&v| if size == 1 { v as i8 as i32 } else { v * 3 }).collect();
                        let enc = encode(&values, &p, 1);
                        let want = raw(&values, size);
                        let mut out = vec![0xEE; want.len()];
                        decode(&enc, &mut out, &p, &mut ctx).unwrap();
                        assert_eq!(out, want, "v{} size {} zigzag {} zstd {}", version, size, zigzag, level);
                    }
                }
            }
        }
    }

    /// Values whose coded forms take 1, 2, 3 and 4 bytes, mixed (a small LCG).
    fn mixed_values(count: usize, seed: u64) -> Vec<i32> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = (state >> 32) as i32;
                match (state >> 20) % 4 {
                    0 => r % 100,
                    1 => r % 30_000,
                    2 => r % 5_000_000,
                    _ => r,
                }
            })
            .collect()
    }

    /// The quad decoders a test can compare on this CPU.
    #[derive(Clone, Copy, Debug)]
    enum Decoder {
        Scalar,
        #[cfg(target_arch = "x86_64")]
        Ssse3,
        #[cfg(target_arch = "x86_64")]
        Avx2,
    }

    fn decoders() -> Vec<Decoder> {
        let mut all = vec![Decoder::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("ssse3") {
                all.push(Decoder::Ssse3);
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                all.push(Decoder::Avx2);
            }
        }
        all
    }

    fn quads_with<const SIZE: usize, const ZIGZAG: bool>(
        decoder: Decoder,
        keys: &[u8],
        data: &[u8],
        count: usize,
        out: &mut IntegerWriter,
    ) -> (usize, usize) {
        match decoder {
            Decoder::Scalar => scalar_quads::<SIZE, ZIGZAG>(keys, data, count, out),
            // SAFETY: `decoders` lists these only where the CPU has the feature.
            #[cfg(target_arch = "x86_64")]
            Decoder::Ssse3 => unsafe { simd::quads_ssse3::<SIZE, ZIGZAG>(keys, data, count, out) },
            #[cfg(target_arch = "x86_64")]
            Decoder::Avx2 => unsafe { simd::quads_avx2::<SIZE, ZIGZAG>(keys, data, count, out) },
        }
    }

    /// One quad decoder over one coded stream: its output, previous value, write
    /// position and (data bytes, values) consumed.
    fn run_quads(body: &[u8], count: usize, size: usize, zigzag: bool, decoder: Decoder) -> (Vec<u8>, i32, usize, (usize, usize)) {
        let (keys, data) = body.split_at(count.div_ceil(4));
        let mut dst = vec![0xEEu8; count * size];
        let mut out = IntegerWriter { dst: &mut dst, size, pos: 0, previous: 7, zigzag };
        let used = match (size, zigzag) {
            (1, true) => quads_with::<1, true>(decoder, keys, data, count, &mut out),
            (1, false) => quads_with::<1, false>(decoder, keys, data, count, &mut out),
            (2, true) => quads_with::<2, true>(decoder, keys, data, count, &mut out),
            (2, false) => quads_with::<2, false>(decoder, keys, data, count, &mut out),
            (_, true) => quads_with::<4, true>(decoder, keys, data, count, &mut out),
            (_, false) => quads_with::<4, false>(decoder, keys, data, count, &mut out),
        };
        let (previous, pos) = (out.previous, out.pos);
        (dst, previous, pos, used)
    }

    #[test]
    fn simd_quads_match_scalar_bit_for_bit() {
        let counts = (0..=130).chain([1021, 4096, 4099, 30001]);
        for count in counts {
            for size in [1usize, 2, 4] {
                for zigzag in [false, true] {
                    let p = Params { integer_size: size, zigzag, zstd: false, nibbles: false };
                    let values = mixed_values(count, count as u64 * 31 + size as u64);
                    let enc = encode(&values, &p, 0);
                    let body = &enc[HEADER_LEN..];
                    let scalar = run_quads(body, count, size, zigzag, Decoder::Scalar);
                    for decoder in decoders() {
                        let got = run_quads(body, count, size, zigzag, decoder);
                        assert_eq!(scalar, got, "{:?}: count {} size {} zigzag {}", decoder, count, size, zigzag);
                    }
                    // and the whole decode (SIMD quads, scalar tail) gives the values
                    let mut out = vec![0u8; count * size];
                    decode(&enc, &mut out, &p, &mut Contexts::default()).unwrap();
                    assert_eq!(out, raw(&values, size), "count {} size {} zigzag {}", count, size, zigzag);
                }
            }
        }
    }

    #[test]
    fn bad_streams_and_params_are_errors() {
        let mut ctx = Contexts::default();
        let values: Vec<i32> = (0..500).map(|i| i * i % 1000).collect();
        for version in [0u32, 1] {
            let p = Params::parse(&[version, 1, 1, 1]).unwrap();
            let p2 = Params::parse(&[version, 2, 1, 0]).unwrap();
            for (p, enc) in [(p, encode(&values, &p, 3)), (p2, encode(&values, &p2, 0))] {
                let len = values.len() * p.integer_size;
                for cut in 0..enc.len() {
                    assert!(decode(&enc[..cut], &mut vec![0; len], &p, &mut ctx).is_err());
                }
                for i in 0..enc.len() {
                    let mut bad = enc.clone();
                    bad[i] ^= 0x21;
                    let _ = decode(&bad, &mut vec![0; len], &p, &mut ctx);
                }
                assert!(decode(&enc, &mut vec![0; len + p.integer_size], &p, &mut ctx).is_err());
            }
        }
        assert!(Params::parse(&[0, 3, 1]).is_err());
        assert!(Params::parse(&[2, 2, 1]).is_err());
        assert!(Params::parse(&[0, 2]).is_err());
    }
}

