//! Deflate (filter 1): a zlib stream (header, deflate data, Adler-32), inflated by
//! libdeflate straight into the destination.

use super::size_mismatch;
use crate::error::Result;
use libdeflater::{DecompressionError, Decompressor};

pub fn decode(src: &[u8], dst: &mut [u8], inflater: &mut Decompressor) -> Result<()> {
    let n = decode_up_to(src, dst, inflater)?;
    if n != dst.len() {
        return Err(size_mismatch("deflate", n, dst.len()));
    }
    Ok(())
}

/// Inflate into the front of `dst`; returns the bytes produced.
pub fn decode_up_to(src: &[u8], dst: &mut [u8], inflater: &mut Decompressor) -> Result<usize> {
    match inflater.zlib_decompress(src, dst) {
        Ok(n) => Ok(n),
        Err(DecompressionError::InsufficientSpace) => {
            Err(crate::format_err!("deflate: chunk decodes to more than the expected {} bytes", dst.len()))
        }
        Err(DecompressionError::BadData) => {
            Err(crate::format_err!("deflate: corrupt zlib stream ({} bytes)", src.len()))
        }
    }
}

// Encoding (the writer), the inverse of the decoder above.

pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>, c: &mut libdeflater::Compressor) -> Result<()> {
    dst.resize(c.zlib_compress_bound(src.len()), 0);
    let n = c.zlib_compress(src, dst).map_err(|e| crate::format_err!("deflate: cannot compress: {}", e))?;
    dst.truncate(n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use libdeflater::{CompressionLvl, Compressor};

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut c = Compressor::new(CompressionLvl::new(4).unwrap());
        let mut out = vec![0; c.zlib_compress_bound(data.len())];
        let n = c.zlib_compress(data, &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn round_trip_into_garbage_buffer() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        let enc = zlib(&data);
        let mut out = vec![0xAB; data.len()];
        decode(&enc, &mut out, &mut Decompressor::new()).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn bytes_after_the_stream_are_ignored_like_zlib_does() {
        let data = vec![3u8; 5000];
        let mut enc = zlib(&data);
        enc.extend_from_slice(&[0xAB; 7]);
        let mut out = vec![0; data.len()];
        decode(&enc, &mut out, &mut Decompressor::new()).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn wrong_size_truncation_and_corruption_are_errors() {
        let data = vec![7u8; 1000];
        let enc = zlib(&data);
        let mut d = Decompressor::new();
        assert!(decode(&enc, &mut vec![0; 999], &mut d).is_err());
        assert!(decode(&enc, &mut vec![0; 1001], &mut d).is_err());
        for cut in 0..enc.len() {
            assert!(decode(&enc[..cut], &mut vec![0; 1000], &mut d).is_err());
        }
        let mut bad = enc.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1; // Adler-32
        assert!(decode(&bad, &mut vec![0; 1000], &mut d).is_err());
    }
}
