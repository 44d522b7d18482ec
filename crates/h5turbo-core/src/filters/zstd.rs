//! Zstandard (filter 32015): one or more zstd frames, decoded with a reusable context
//! straight into the destination. Client data (the level) only matters when writing.

use crate::error::Result;
use zstd::zstd_safe::{self, DCtx};

pub fn decode(src: &[u8], dst: &mut [u8], ctx: &mut DCtx<'static>) -> Result<()> {
    let n = decode_up_to(src, dst, ctx)?;
    if n != dst.len() {
        return Err(super::size_mismatch("zstd", n, dst.len()));
    }
    Ok(())
}

/// Decode every frame into the front of `dst`; returns the bytes produced.
pub fn decode_up_to(src: &[u8], dst: &mut [u8], ctx: &mut DCtx<'static>) -> Result<usize> {
    match ctx.decompress(dst, src) {
        Ok(n) => Ok(n),
        Err(code) => Err(crate::format_err!(
            "zstd: cannot decode {} bytes into {}: {}",
            src.len(),
            dst.len(),
            zstd_safe::get_error_name(code)
        )),
    }
}

/// The decoded size stored in the frame header, when the writer recorded it.
pub fn announced_size(src: &[u8]) -> Option<usize> {
    match zstd_safe::get_frame_content_size(src) {
        Ok(Some(n)) => usize::try_from(n).ok(),
        _ => None,
    }
}

// Encoding (the writer), the inverse of the decoder above.

pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>, level: i32, ctx: &mut Option<::zstd::zstd_safe::CCtx<'static>>) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let enc = zstd::bulk::compress(&data, 3).unwrap();
        let mut ctx = DCtx::create();
        let mut out = vec![0x55; data.len()];
        decode(&enc, &mut out, &mut ctx).unwrap();
        assert_eq!(out, data);
        assert_eq!(announced_size(&enc), Some(data.len()));
        assert!(decode(&enc, &mut vec![0; data.len() - 1], &mut ctx).is_err());
        assert!(decode(&enc, &mut vec![0; data.len() + 1], &mut ctx).is_err());
        for cut in [0, 1, 4, enc.len() / 2, enc.len() - 1] {
            assert!(decode(&enc[..cut], &mut out, &mut ctx).is_err());
        }
        let mut bad = enc.clone();
        bad[0] ^= 0xff;
        assert!(decode(&bad, &mut out, &mut ctx).is_err());
        // The context stays usable after errors.
        decode(&enc, &mut out, &mut ctx).unwrap();
        assert_eq!(out, data);
    }
}
