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

fn quads<const SIZE: usize, const ZIGZAG: bool>(
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
