//! LZF (filter 32000, h5py): a bare liblzf stream with no header. Each control byte
//! is either a literal run (values 0..31: that many plus one bytes follow) or a
//! back-reference (top 3 bits: length - 2, with 7 meaning "plus the next byte"; low
//! 5 bits and the following byte: distance - 1).

use crate::error::Result;

pub fn decode(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let n = decode_up_to(src, dst)?;
    if n != dst.len() {
        return Err(super::size_mismatch("lzf", n, dst.len()));
    }
    Ok(())
}

/// Decode the whole stream into the front of `dst`; returns the bytes produced.
pub fn decode_up_to(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    let mut ip = 0;
    let mut op = 0;
    while ip < src.len() {
        let ctrl = usize::from(src[ip]);
        ip += 1;
        if ctrl < 32 {
            let len = ctrl + 1;
            let (Some(from), Some(to)) = (src.get(ip..ip + len), dst.get_mut(op..op + len)) else {
                return Err(overrun(ip, op, dst.len()));
            };
            to.copy_from_slice(from);
            ip += len;
            op += len;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*src.get(ip).ok_or_else(|| overrun(ip, op, dst.len()))?);
                ip += 1;
            }
            len += 2;
            let low = usize::from(*src.get(ip).ok_or_else(|| overrun(ip, op, dst.len()))?);
            ip += 1;
            let distance = ((ctrl & 0x1f) << 8) + low + 1;
            if distance > op {
                return Err(crate::format_err!(
                    "lzf: back-reference {} bytes before the start of the output",
                    distance - op
                ));
            }
            if op + len > dst.len() {
                return Err(overrun(ip, op, dst.len()));
            }
            copy_match(dst, op, distance, len);
            op += len;
        }
    }
    Ok(op)
}

/// Copy `len` bytes from `distance` back; overlapping copies repeat the pattern, so
/// they go in steps no longer than the distance.
fn copy_match(dst: &mut [u8], op: usize, distance: usize, len: usize) {
    let start = op - distance;
    if distance >= len {
        dst.copy_within(start..start + len, op);
        return;
    }
    for i in 0..len {
        dst[op + i] = dst[start + i];
    }
}

fn overrun(ip: usize, op: usize, capacity: usize) -> crate::error::Error {
    crate::format_err!("lzf: stream truncated or decodes past {} bytes (input {}, output {})", capacity, ip, op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_overlapping_matches() {
        // "abc", then a match of length 7 (ctrl len 5) at distance 3 -> "abcabcabca".
        let enc = [2, b'a', b'b', b'c', 5 << 5, 2];
        let mut out = [0u8; 10];
        decode(&enc, &mut out).unwrap();
        assert_eq!(&out, b"abcabcabca");
        // Long match: ctrl len 7 plus extra byte 10 -> 19 bytes, distance 1.
        let enc = [0, b'z', 7 << 5, 10, 0];
        let mut out = [0u8; 20];
        decode(&enc, &mut out).unwrap();
        assert_eq!(out, [b'z'; 20]);
    }

    #[test]
    fn bad_streams_are_errors() {
        let mut out = [0u8; 10];
        assert!(decode(&[2, b'a', b'b'], &mut out).is_err()); // truncated literal
        assert!(decode(&[0, b'a', 5 << 5, 5], &mut out).is_err()); // distance before start
        assert!(decode(&[0, b'a', 7 << 5], &mut out).is_err()); // truncated match
        assert!(decode(&[0, b'a', 7 << 5, 200, 0], &mut out).is_err()); // past the end
        assert!(decode(&[0, b'a'], &mut out).is_err()); // too short
    }
}
