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
        4 => unshuffle_fixed::<4>(&src[..whole], &mut dst[..whole]),
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
#[cfg(test)]
pub fn encode(src: &[u8], element_size: usize) -> Vec<u8> {
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
                let enc = encode(&data, element_size);
                let mut out = vec![0xCD; len];
                decode(&enc, &mut out, element_size).unwrap();
                assert_eq!(out, data, "element size {} len {}", element_size, len);
            }
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
