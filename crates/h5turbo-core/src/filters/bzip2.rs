//! bzip2 (filter 307, PyTables / hdf5plugin): one or more concatenated bzip2 streams.

use crate::error::Result;
use bzip2::{Decompress, Status};

pub fn decode(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let n = decode_up_to(src, dst)?;
    if n != dst.len() {
        return Err(super::size_mismatch("bzip2", n, dst.len()));
    }
    Ok(())
}

/// Decode every stream into the front of `dst`; returns the bytes produced.
pub fn decode_up_to(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    let mut in_pos = 0;
    let mut out_pos = 0;
    // The writer may concatenate streams; each needs a fresh decoder state.
    while in_pos < src.len() {
        if out_pos == dst.len() {
            return Err(crate::format_err!("bzip2: chunk decodes to more than {} bytes", dst.len()));
        }
        let (read, written) = decode_stream(&src[in_pos..], &mut dst[out_pos..])?;
        in_pos += read;
        out_pos += written;
    }
    Ok(out_pos)
}

/// Decode one stream; returns the bytes consumed and produced.
fn decode_stream(src: &[u8], dst: &mut [u8]) -> Result<(usize, usize)> {
    let mut d = Decompress::new(false);
    loop {
        let (read, written) = (d.total_in() as usize, d.total_out() as usize);
        let status = d
            .decompress(&src[read..], &mut dst[written..])
            .map_err(|e| crate::format_err!("bzip2: corrupt stream: {}", e))?;
        let (now_read, now_written) = (d.total_in() as usize, d.total_out() as usize);
        if let Status::StreamEnd = status {
            return Ok((now_read, now_written));
        }
        if now_read == read && now_written == written {
            if now_written == dst.len() {
                return Err(crate::format_err!("bzip2: chunk decodes to more than the expected bytes"));
            }
            return Err(crate::format_err!("bzip2: stream truncated after {} bytes", src.len()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn compress(data: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn round_trip_and_concatenated() {
        let data: Vec<u8> = (0..30_000u32).map(|i| (i * i % 253) as u8).collect();
        let enc = compress(&data);
        let mut out = vec![1; data.len()];
        decode(&enc, &mut out).unwrap();
        assert_eq!(out, data);
        let mut two = compress(&data[..10_000]);
        two.extend(compress(&data[10_000..]));
        let mut out = vec![1; data.len()];
        decode(&two, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn wrong_sizes_truncation_corruption() {
        let data = vec![42u8; 5000];
        let enc = compress(&data);
        assert!(decode(&enc, &mut vec![0; 4999]).is_err());
        assert!(decode(&enc, &mut vec![0; 5001]).is_err());
        for cut in 0..enc.len() {
            assert!(decode(&enc[..cut], &mut vec![0; 5000]).is_err());
        }
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0x40;
            let _ = decode(&bad, &mut vec![0; 5000]);
        }
    }
}
