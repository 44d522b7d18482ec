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

// Encoding (the writer), the inverse of the decoder above.

/// LZF (32000, h5py's liblzf format): literal runs of 1..32 bytes and back-references
/// of 3..264 bytes up to 8192 bytes back, found through a hash of the next 3 bytes.
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>, table: &mut Vec<u32>) {
    let shape = LzShape { max_distance: 8192, max_len: 264, tail: 0 };
    greedy_lz(src, table, shape, |literals, m| {
        encode_literals(literals, dst);
        if let Some((len, distance)) = m {
            lzf_match(len, distance, dst);
        }
    });
}

/// The limits of an LZ77 format for `greedy_lz`.
#[derive(Clone, Copy)]
pub(crate) struct LzShape {
    pub(crate) max_distance: usize,
    pub(crate) max_len: usize,
    /// Bytes at the end that are always literals (a format that must end with them).
    pub(crate) tail: usize,
}

/// Greedy LZ77 over a hash of the next 3 bytes (LZF and BloscLZ): calls `emit` with
/// each literal run and the (length, distance) match after it; the last call has the
/// final literals and no match.
pub(crate) fn greedy_lz(src: &[u8], table: &mut Vec<u32>, shape: LzShape, mut emit: impl FnMut(&[u8], Option<(usize, usize)>)) {
    const HASH_BITS: u32 = 14;
    table.clear();
    table.resize(1 << HASH_BITS, u32::MAX);
    let hash = |p: usize| -> usize {
        let v = u32::from(src[p]) << 16 | u32::from(src[p + 1]) << 8 | u32::from(src[p + 2]);
        (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
    };
    let n = src.len();
    let (mut ip, mut literal_start) = (0usize, 0usize);
    while ip + 3 + shape.tail <= n {
        let h = hash(ip);
        let candidate = table[h] as usize;
        table[h] = ip as u32;
        let found =
            candidate < ip && ip - candidate <= shape.max_distance && src[candidate..candidate + 3] == src[ip..ip + 3];
        if !found {
            ip += 1;
            continue;
        }
        let max = (n - ip - shape.tail).min(shape.max_len);
        let mut len = 3;
        while len < max && src[candidate + len] == src[ip + len] {
            len += 1;
        }
        emit(&src[literal_start..ip], Some((len, ip - candidate)));
        // Index the match's last positions so runs keep matching (as liblzf does).
        for p in (ip + len).saturating_sub(2)..ip + len {
            if p + 3 <= n {
                table[hash(p)] = p as u32;
            }
        }
        ip += len;
        literal_start = ip;
    }
    emit(&src[literal_start..], None);
}

pub(crate) fn encode_literals(bytes: &[u8], dst: &mut Vec<u8>) {
    for run in bytes.chunks(32) {
        dst.push((run.len() - 1) as u8);
        dst.extend_from_slice(run);
    }
}

fn lzf_match(len: usize, distance: usize, dst: &mut Vec<u8>) {
    let (l, d) = (len - 2, distance - 1);
    if l < 7 {
        dst.push(((l << 5) | (d >> 8)) as u8);
    } else {
        dst.push(((7 << 5) | (d >> 8)) as u8);
        dst.push((l - 7) as u8);
    }
    dst.push((d & 0xff) as u8);
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
