//! BloscLZ, Blosc's own LZ77 codec (compressor code 0 inside a Blosc buffer).
//!
//! The first byte is a literal run whose top 3 bits are ignored. Then each control
//! byte is a literal run (below 32: that many plus one bytes follow) or a match:
//! length - 2 in the top 3 bits (7 means "plus following bytes while they are 255"),
//! the high distance bits in the low 5 bits, then the low distance byte. A match with
//! high bits 31 and low byte 255 takes a 16-bit big-endian distance plus 8191 instead.
//! As in the reference decoder, a match that ends the stream is not copied (the
//! encoder always ends with a literal run).

use crate::error::{Error, Result};

/// Distances up to this fit the short form.
const MAX_DISTANCE: usize = 8191;

/// Decode into `dst`; returns the number of bytes produced.
pub fn decode(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    let Some(&first) = src.first() else {
        return Ok(0);
    };
    let mut ip = 1;
    let mut op = 0;
    let mut ctrl = usize::from(first & 31);
    loop {
        if ctrl >= 32 {
            let m = read_match(src, &mut ip, ctrl, op)?;
            if m.length > dst.len() - op {
                return Err(truncated("match runs past the end of the output"));
            }
            let Some(&next) = src.get(ip) else { break };
            ip += 1;
            copy_match(dst, op, m.distance, m.length);
            op += m.length;
            ctrl = usize::from(next);
        } else {
            let len = ctrl + 1;
            let (Some(from), Some(to)) = (src.get(ip..ip + len), dst.get_mut(op..op + len)) else {
                return Err(truncated("literal run past the end of the input or output"));
            };
            to.copy_from_slice(from);
            ip += len;
            op += len;
            let Some(&next) = src.get(ip) else { break };
            ip += 1;
            ctrl = usize::from(next);
        }
    }
    Ok(op)
}

struct Match {
    length: usize,
    distance: usize,
}

fn read_match(src: &[u8], ip: &mut usize, ctrl: usize, op: usize) -> Result<Match> {
    let mut length = (ctrl >> 5) - 1;
    let high = (ctrl & 31) << 8;
    // Every match needs at least the distance byte and the next control byte after it.
    let next = |ip: &mut usize| -> Result<usize> {
        if *ip + 1 >= src.len() {
            return Err(truncated("match header"));
        }
        let b = usize::from(src[*ip]);
        *ip += 1;
        Ok(b)
    };
    if length == 6 {
        loop {
            let code = next(ip)?;
            length += code;
            if code != 255 {
                break;
            }
        }
    }
    let low = next(ip)?;
    length += 3;
    let mut distance = high + low + 1;
    if low == 255 && high == 31 << 8 {
        let hi = next(ip)?;
        let lo = next(ip)?;
        distance = (hi << 8) + lo + MAX_DISTANCE + 1;
    }
    if distance > op {
        return Err(crate::format_err!("blosclz: match reaches {} bytes before the start of the block", distance - op));
    }
    Ok(Match { length, distance })
}

/// Overlapping copies repeat the last `distance` bytes, so copy in steps that never
/// read bytes not yet written.
fn copy_match(dst: &mut [u8], op: usize, distance: usize, length: usize) {
    let start = op - distance;
    if distance >= length {
        dst.copy_within(start..start + length, op);
    } else if distance == 1 {
        let byte = dst[start];
        dst[op..op + length].fill(byte);
    } else {
        for i in 0..length {
            dst[op + i] = dst[start + i];
        }
    }
}

fn truncated(what: &str) -> Error {
    crate::format_err!("blosclz: corrupt stream ({})", what)
}

// Encoding (the writer), the inverse of the decoder above.

/// BloscLZ (Blosc's compressor code 0; the format is described in blosclz.rs): greedy
/// LZ77 like `lzf`, literal runs as LZF's. Distances stay within the short form (at
/// most 8191: the code for 8192 announces a far match), and the stream starts (the
/// first byte has no earlier match) and ends with a literal run, as decoders require
/// (a final match is not copied).
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>, table: &mut Vec<u32>) {
    let shape = super::lzf::LzShape { max_distance: 8191, max_len: usize::MAX, tail: 1 };
    super::lzf::greedy_lz(src, table, shape, |literals, m| {
        super::lzf::encode_literals(literals, dst);
        if let Some((len, distance)) = m {
            blosclz_match(len, distance, dst);
        }
    });
}

/// A match: length - 2 in the top 3 bits (7: then 255s and a last byte add to 9), the
/// distance - 1 in the low 5 bits and the next byte.
fn blosclz_match(len: usize, distance: usize, dst: &mut Vec<u8>) {
    let d = distance - 1;
    if len - 2 < 7 {
        dst.push((((len - 2) << 5) | (d >> 8)) as u8);
    } else {
        dst.push(((7 << 5) | (d >> 8)) as u8);
        let mut rest = len - 9;
        while rest >= 255 {
            dst.push(255);
            rest -= 255;
        }
        dst.push(rest as u8);
    }
    dst.push((d & 0xff) as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_runs_and_long_matches() {
        // Literal "ab", match len 3+0.. : ctrl (1<<5)|0 -> length 3, low byte 1 -> distance 2.
        let src = [1, b'a', b'b', 1 << 5, 1, 0, b'z'];
        let mut out = [0u8; 6];
        assert_eq!(decode(&src, &mut out).unwrap(), 6);
        assert_eq!(&out, b"ababaz");
        // Extended length: 7<<5, then 255, 10 -> 6+255+10+3 = 274, distance 1.
        let src = [0, b'x', 7 << 5, 255, 10, 0, 0, b'y'];
        let mut out = [0u8; 276];
        assert_eq!(decode(&src, &mut out).unwrap(), 276);
        assert!(out[..275].iter().all(|&b| b == b'x'));
        assert_eq!(out[275], b'y');
    }

    #[test]
    fn bad_streams_are_errors() {
        let mut out = [0u8; 16];
        assert!(decode(&[1, b'a'], &mut out).is_err());
        assert!(decode(&[0, b'a', 1 << 5, 5, 0, b'z'], &mut out).is_err()); // before start
        assert!(decode(&[0, b'a', 7 << 5, 255], &mut out).is_err());
        assert!(decode(&[0, b'a', 7 << 5, 100, 0, 0, b'z'], &mut out).is_err());
        // too long
    }
}
