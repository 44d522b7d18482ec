//! Byte shuffle (filter 2): the encoder stores byte 0 of every element, then byte 1 of
//! every element, and so on. Bytes after the last whole element are stored unchanged,
//! as libhdf5 does.

use crate::error::Result;

/// The element size from client data (libhdf5 stores it there at dataset creation),
/// falling back to the dataset's element size.
pub fn element_size(cd: &[u32], dataset_element_size: usize) -> Result<usize> {
    let size = match cd.first() {
        Some(&n) => n as usize,
        None => dataset_element_size,
    };
    if size == 0 {
        return Err(crate::format_err!("shuffle: element size 0"));
    }
    Ok(size)
}

pub fn decode(src: &[u8], dst: &mut [u8], element_size: usize) -> Result<()> {
    if src.len() != dst.len() {
        return Err(super::size_mismatch("shuffle", src.len(), dst.len()));
    }
    let count = src.len() / element_size;
    let whole = count * element_size;
    match element_size {
        _ if count <= 1 => dst[..whole].copy_from_slice(&src[..whole]),
        2 => unshuffle_fixed::<2>(&src[..whole], &mut dst[..whole]),
        4 => unshuffle4(&src[..whole], &mut dst[..whole]),
        8 => unshuffle_fixed::<8>(&src[..whole], &mut dst[..whole]),
        _ => unshuffle_generic(&src[..whole], &mut dst[..whole], element_size),
    }
    dst[whole..].copy_from_slice(&src[whole..]);
    Ok(())
}

/// Element size known at compile time: one pass over the output, gathering byte j of
/// each element from plane j; the fixed-size inner loop unrolls and vectorizes.
fn unshuffle_fixed<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let count = src.len() / N;
    let planes: [&[u8]; N] = std::array::from_fn(|j| &src[j * count..(j + 1) * count]);
    for (i, element) in dst.chunks_exact_mut(N).enumerate() {
        for j in 0..N {
            element[j] = planes[j][i];
        }
    }
}

/// 4-byte elements, the common case (int32, float32, blosc and bitshuffle blocks):
/// SSE2 byte and word interleaves, 16 elements per step, then the scalar loop for the
/// rest. The plain loop does not vectorize and was a quarter of blosc's decode time.
#[cfg(target_arch = "x86_64")]
fn unshuffle4(src: &[u8], dst: &mut [u8]) {
    use std::arch::x86_64::*;
    let count = src.len() / 4;
    let simd = count / 16 * 16;
    let p = src.as_ptr();
    let d = dst.as_mut_ptr();
    // SAFETY: SSE2 is part of x86-64. For i < simd, plane j's loads read
    // src[j*count + i .. +16] within plane j, and the stores write dst[4*i .. 4*i + 64],
    // inside dst (dst.len() == src.len() == 4 * count); loads and stores are unaligned.
    unsafe {
        for i in (0..simd).step_by(16) {
            let a = _mm_loadu_si128(p.add(i).cast());
            let b = _mm_loadu_si128(p.add(count + i).cast());
            let c = _mm_loadu_si128(p.add(2 * count + i).cast());
            let e = _mm_loadu_si128(p.add(3 * count + i).cast());
            let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
            let (ce_lo, ce_hi) = (_mm_unpacklo_epi8(c, e), _mm_unpackhi_epi8(c, e));
            let out = d.add(4 * i).cast::<__m128i>();
            _mm_storeu_si128(out, _mm_unpacklo_epi16(ab_lo, ce_lo));
            _mm_storeu_si128(out.add(1), _mm_unpackhi_epi16(ab_lo, ce_lo));
            _mm_storeu_si128(out.add(2), _mm_unpacklo_epi16(ab_hi, ce_hi));
            _mm_storeu_si128(out.add(3), _mm_unpackhi_epi16(ab_hi, ce_hi));
        }
    }
    for i in simd..count {
        for j in 0..4 {
            dst[4 * i + j] = src[j * count + i];
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn unshuffle4(src: &[u8], dst: &mut [u8]) {
    unshuffle_fixed::<4>(src, dst)
}

/// Any element size: scatter one plane at a time (each read is sequential).
fn unshuffle_generic(src: &[u8], dst: &mut [u8], element_size: usize) {
    let count = src.len() / element_size;
    for (j, plane) in src.chunks_exact(count).enumerate() {
        for (byte, element) in plane.iter().zip(dst[j..].iter_mut().step_by(element_size)) {
            *element = *byte;
        }
    }
}

/// The encoder, for tests of this and other filters.
// Encoding (the writer), the inverse of the decoder above.

/// Byte shuffle into `dst` (same length): plane j holds byte j of every element; bytes
/// after the last whole element stay in place.
pub(crate) fn encode(src: &[u8], dst: &mut [u8], element_size: usize) {
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

#[cfg(test)]
pub fn reference_encode(src: &[u8], element_size: usize) -> Vec<u8> {
    let count = src.len() / element_size;
    let mut out = Vec::with_capacity(src.len());
    for j in 0..element_size {
        out.extend((0..count).map(|i| src[i * element_size + j]));
    }
    out.extend_from_slice(&src[count * element_size..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_element_size_with_tails() {
        for element_size in 1..=17 {
            for len in [0, 1, 5, 16, 17, 64, 1000, 1003] {
                let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
                let enc = reference_encode(&data, element_size);
                let mut out = vec![0xCD; len];
                decode(&enc, &mut out, element_size).unwrap();
                assert_eq!(out, data, "element size {} len {}", element_size, len);
            }
        }
    }

    #[test]
    fn four_byte_fast_path_matches_the_definition() {
        // Lengths around the 16-element (64-byte) steps, with tails.
        for count in [15, 16, 17, 31, 32, 33, 100, 4099] {
            let data: Vec<u8> = (0..count * 4).map(|i| (i * 131 % 251) as u8).collect();
            let enc = reference_encode(&data, 4);
            let mut out = vec![0xCD; data.len()];
            unshuffle4(&enc, &mut out);
            assert_eq!(out, data, "count {}", count);
        }
    }

    #[test]
    fn known_layout_and_size_errors() {
        // Two u16 elements 0x0201, 0x0403 little-endian, shuffled: low bytes then high bytes.
        let mut out = [0u8; 4];
        decode(&[1, 3, 2, 4], &mut out, 2).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(decode(&[1, 2, 3], &mut out, 2).is_err());
        assert!(element_size(&[0], 4).is_err());
        assert_eq!(element_size(&[], 4).unwrap(), 4);
    }
}
