//! LZ4 (filter 32004, the HDF5 LZ4 plugin): an 8-byte big-endian decoded size, a
//! 4-byte big-endian block size, then per block a 4-byte big-endian compressed size
//! and the block. Every block decodes to the block size except the last, which holds
//! the rest; a block whose compressed size equals its decoded size is stored raw.
//!
//! Blocks are decoded by the reference C library (liblz4, `LZ4_decompress_safe`):
//! lz4_flex copies overlapping matches one byte at a time, so runs of equal bytes
//! (the zero byte planes of shuffled small integers) decoded at a tenth of liblz4's speed.

use crate::error::Result;

const HEADER_LEN: usize = 12;

pub fn announced_size(src: &[u8]) -> Option<usize> {
    let bytes: [u8; 8] = src.get(..8)?.try_into().ok()?;
    usize::try_from(u64::from_be_bytes(bytes)).ok()
}

pub fn decode(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let Some(header) = src.get(..HEADER_LEN) else {
        return Err(crate::format_err!("lz4: {} bytes cannot hold the 12-byte header", src.len()));
    };
    let total = announced_size(header).unwrap_or(usize::MAX);
    if total != dst.len() {
        return Err(crate::format_err!("lz4: header announces {} bytes, expected {}", total, dst.len()));
    }
    let mut block_size = be32(&header[8..12]);
    if block_size == 0 {
        // libhdf5's plugin never writes 0; treat it like one block, not an endless loop.
        // (at least 1: chunks_mut(0) panics, and an empty output has no blocks anyway).
        block_size = dst.len().max(1);
    }
    let mut pos = HEADER_LEN;
    for block in dst.chunks_mut(block_size) {
        let Some(size_bytes) = src.get(pos..pos + 4) else {
            return Err(crate::format_err!("lz4: stream ends before a block header at byte {}", pos));
        };
        let compressed = be32(size_bytes);
        pos += 4;
        let Some(data) = src.get(pos..).and_then(|rest| rest.get(..compressed)) else {
            return Err(crate::format_err!(
                "lz4: block of {} bytes at byte {} runs past the end of the chunk",
                compressed,
                pos
            ));
        };
        decode_block(data, block)?;
        pos += compressed;
    }
    Ok(())
}

fn decode_block(data: &[u8], block: &mut [u8]) -> Result<()> {
    if data.len() == block.len() {
        block.copy_from_slice(data);
        return Ok(());
    }
    match decompress_block(data, block) {
        Some(n) if n == block.len() => Ok(()),
        Some(n) => Err(super::size_mismatch("lz4 block", n, block.len())),
        None => Err(crate::format_err!("lz4: corrupt block of {} bytes", data.len())),
    }
}

/// Decode one raw LZ4 block into the front of `out`; the bytes produced, or None for a
/// corrupt block (one that would read or write out of bounds included: the safe
/// decoder checks every offset and length).
pub(crate) fn decompress_block(data: &[u8], out: &mut [u8]) -> Option<usize> {
    let (Ok(src_len), Ok(dst_len)) = (i32::try_from(data.len()), i32::try_from(out.len())) else {
        return None;
    };
    // SAFETY: both pointers are valid for the lengths passed; LZ4_decompress_safe never
    // reads past src_len bytes of the source nor writes past dst_len bytes of the output.
    let n = unsafe { lz4_sys::LZ4_decompress_safe(data.as_ptr().cast(), out.as_mut_ptr().cast(), src_len, dst_len) };
    usize::try_from(n).ok()
}

fn be32(b: &[u8]) -> usize {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize
}

// Encoding (the writer), the inverse of the decoder above.

pub(crate) fn encode_block(src: &[u8], dst: &mut Vec<u8>) -> Option<usize> {
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
pub(crate) fn encode_sized_block(block: &[u8], dst: &mut Vec<u8>, raw_if_larger: bool) -> Result<()> {
    let at = dst.len();
    dst.extend_from_slice(&[0; 4]);
    let n = encode_block(block, dst).ok_or_else(|| crate::format_err!("lz4: cannot compress a {}-byte block", block.len()))?;
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
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>, block_size: usize) -> Result<()> {
    let block_size = block_size.min(src.len());
    dst.extend_from_slice(&(src.len() as u64).to_be_bytes());
    dst.extend_from_slice(&(block_size as u32).to_be_bytes());
    for block in src.chunks(block_size.max(1)) {
        encode_sized_block(block, dst, true)?;
    }
    Ok(())
}

#[cfg(test)]
pub fn reference_encode(data: &[u8], block_size: usize) -> Vec<u8> {
    let mut out = (data.len() as u64).to_be_bytes().to_vec();
    out.extend_from_slice(&(block_size as u32).to_be_bytes());
    for block in data.chunks(block_size) {
        let c = lz4_flex::block::compress(block);
        let stored = if c.len() >= block.len() { block.to_vec() } else { c };
        out.extend_from_slice(&(stored.len() as u32).to_be_bytes());
        out.extend_from_slice(&stored);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_block_size_into_empty_output_is_no_panic() {
        // Found by fuzzing (decode_lz4): block size 0 and an empty chunk.
        let src = [0u8; HEADER_LEN];
        assert!(decode(&src, &mut []).is_ok());
    }

    #[test]
    fn round_trips_with_raw_and_partial_blocks() {
        let mut data: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        // An incompressible stretch makes a raw block.
        let mut x = 12345u32;
        for b in &mut data[3000..4100] {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *b = (x >> 24) as u8;
        }
        for block_size in [1000, 1024, 4096, 10_000, 1 << 20] {
            let enc = reference_encode(&data, block_size);
            let mut out = vec![0xEE; data.len()];
            decode(&enc, &mut out).unwrap();
            assert_eq!(out, data);
        }
    }

    #[test]
    fn long_runs_and_short_offsets_decode() {
        // Overlapping matches at offsets 1..8 (runs), the case liblz4 was chosen for.
        let mut data = vec![0u8; 200_000];
        for (i, b) in data.iter_mut().enumerate().skip(100_000) {
            *b = [1u8, 2, 3][i % 3];
        }
        let c = lz4_flex::block::compress(&data);
        let mut out = vec![0xEE; data.len()];
        assert_eq!(decompress_block(&c, &mut out), Some(data.len()));
        assert_eq!(out, data);
        assert_eq!(decompress_block(&c, &mut out[..1000]), None, "output too small");
        // A cut at a sequence boundary is a shorter valid block: callers check the size.
        assert_ne!(decompress_block(&c[..c.len() / 2], &mut out), Some(data.len()), "truncated");
    }

    #[test]
    fn truncated_and_corrupt_are_errors() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 13) as u8).collect();
        let enc = reference_encode(&data, 1024);
        let mut out = vec![0; data.len()];
        for cut in 0..enc.len() {
            assert!(decode(&enc[..cut], &mut out).is_err(), "cut {}", cut);
        }
        assert!(decode(&enc, &mut vec![0; 4999]).is_err());
        for i in (12..enc.len()).step_by(7) {
            let mut bad = enc.clone();
            bad[i] ^= 0xA5;
            let _ = decode(&bad, &mut out); // must not panic
        }
        let mut bad = enc.clone();
        bad[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&bad, &mut out).is_err());
    }
}
