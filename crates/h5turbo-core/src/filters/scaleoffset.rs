//! Scale-offset (filter 6): integers stored as offsets from the chunk minimum in
//! `minbits` bits each; floats (decimal scaling) multiplied by 10^D, rounded, then
//! stored the same way. Lossy for floats by design; decoding reproduces libhdf5's
//! arithmetic exactly (single precision for 4-byte floats).
//!
//! Client data (20 values, set by libhdf5): [scale type (0 float D-scale, 1 float
//! E-scale, 2 integer), scale factor, elements, class (0 integer, 1 float), size,
//! sign (0 unsigned), byte order (0 LE, 1 BE), fill value defined, fill value bytes
//! from cd[8] on, little-endian]. The chunk starts with a 21-byte header: minbits
//! (4 bytes LE), the size of minval, minval (little-endian), padding. Then each value's
//! low `minbits` bits, most significant first, with no padding between values. With a
//! fill value defined, the all-ones code stands for the fill value.

use super::bits::BitReader;
use crate::error::Result;

const PARAMS: usize = 20;
const HEADER_LEN: usize = 21;
const SCALE_FLOAT_D: u32 = 0;
const SCALE_FLOAT_E: u32 = 1;
const CLASS_INTEGER: u32 = 0;
const CLASS_FLOAT: u32 = 1;
const ORDER_BE: u32 = 1;
const FILL_VALUE_AT: usize = 8;

#[derive(Debug, Clone, Copy)]
pub struct Params {
    count: usize,
    size: usize,
    kind: Kind,
    big_endian: bool,
    fill: Option<u64>,
    /// Decimal scale factor D of floats.
    decimal_scale: i32,
    /// Integers whose requested bits are the full width are stored as is.
    stored_as_is: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unsigned,
    Signed,
    Float,
}

impl Params {
    pub fn parse(cd: &[u32]) -> Result<Params> {
        if cd.len() != PARAMS {
            return Err(crate::format_err!("scaleoffset: {} client data values, expected {}", cd.len(), PARAMS));
        }
        let (scale_type, factor, size) = (cd[0], cd[1] as i32, cd[4] as usize);
        let kind = match (cd[3], cd[5]) {
            (CLASS_FLOAT, _) if size == 4 || size == 8 => Kind::Float,
            (CLASS_INTEGER, 0) if [1, 2, 4, 8].contains(&size) => Kind::Unsigned,
            (CLASS_INTEGER, _) if [1, 2, 4, 8].contains(&size) => Kind::Signed,
            (class, _) => {
                return Err(crate::format_err!("scaleoffset: unsupported datatype (class {}, size {})", class, size))
            }
        };
        let bits = size as i32 * 8;
        let stored_as_is = match kind {
            Kind::Float if scale_type == SCALE_FLOAT_E => {
                return Err(crate::unsupported!("scaleoffset E-scaling (libhdf5 does not implement it either)"))
            }
            Kind::Float if scale_type != SCALE_FLOAT_D => {
                return Err(crate::format_err!("scaleoffset: scale type {} for a float", scale_type))
            }
            Kind::Float => false,
            _ if scale_type == SCALE_FLOAT_D || scale_type == SCALE_FLOAT_E => {
                return Err(crate::format_err!("scaleoffset: float scale type {} for an integer", scale_type))
            }
            _ if factor > bits => {
                return Err(crate::format_err!("scaleoffset: {} bits requested for {}-bit integers", factor, bits))
            }
            _ => factor == bits,
        };
        let fill = (cd[7] != 0).then(|| fill_value(&cd[FILL_VALUE_AT..], size));
        Ok(Params {
            count: cd[2] as usize,
            size,
            kind,
            big_endian: cd[6] == ORDER_BE,
            fill,
            decimal_scale: factor,
            stored_as_is,
        })
    }
}

/// The fill value's bytes, least significant first, four to a client data value.
fn fill_value(cd: &[u32], size: usize) -> u64 {
    let bytes: Vec<u8> = cd.iter().flat_map(|v| v.to_le_bytes()).take(size).collect();
    let mut le = [0u8; 8];
    le[..bytes.len()].copy_from_slice(&bytes);
    u64::from_le_bytes(le)
}

pub fn decode(src: &[u8], dst: &mut [u8], p: &Params) -> Result<()> {
    if p.stored_as_is {
        if src.len() != dst.len() {
            return Err(super::size_mismatch("scaleoffset", src.len(), dst.len()));
        }
        dst.copy_from_slice(src);
        return Ok(());
    }
    if p.count.checked_mul(p.size) != Some(dst.len()) {
        return Err(crate::format_err!(
            "scaleoffset: {} elements of {} bytes do not make the {}-byte chunk",
            p.count,
            p.size,
            dst.len()
        ));
    }
    let Some(header) = src.get(..HEADER_LEN) else {
        return Err(crate::format_err!("scaleoffset: chunk shorter than its 21-byte header"));
    };
    let minbits = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let minval_len = usize::from(header[4]).min(8);
    let mut le = [0u8; 8];
    le[..minval_len].copy_from_slice(&header[5..5 + minval_len]);
    let minval = u64::from_le_bytes(le);
    let bits = p.size * 8;
    if minbits > bits {
        return Err(crate::format_err!("scaleoffset: {} bits per value for {}-bit values", minbits, bits));
    }
    let body = &src[HEADER_LEN..];
    if minbits == bits {
        // Stored whole, in little-endian order.
        let Some(data) = body.get(..dst.len()) else {
            return Err(crate::format_err!("scaleoffset: {} bytes for {} bytes of data", body.len(), dst.len()));
        };
        for (out, value) in dst.chunks_exact_mut(p.size).zip(data.chunks_exact(p.size)) {
            let mut le = [0u8; 8];
            le[..p.size].copy_from_slice(value);
            store(out, u64::from_le_bytes(le), p);
        }
        return Ok(());
    }
    let mut reader = BitReader::new(body, "scaleoffset");
    let all_ones = (1u64 << minbits) - 1;
    for out in dst.chunks_exact_mut(p.size) {
        let code = read_bits(&mut reader, minbits)?;
        let value = match p.fill {
            Some(fill) if code == all_ones => fill,
            _ => restore(code, minval, p),
        };
        store(out, value, p);
    }
    Ok(())
}

/// Up to 64 bits, most significant first.
fn read_bits(reader: &mut BitReader, n: usize) -> Result<u64> {
    if n <= 32 {
        return Ok(u64::from(reader.get(n)?));
    }
    let high = u64::from(reader.get(n - 32)?);
    Ok((high << 32) | u64::from(reader.get(32)?))
}

/// The value's bits (in the low `size` bytes) from its code.
fn restore(code: u64, minval: u64, p: &Params) -> u64 {
    match (p.kind, p.size) {
        // Integer wrap-around at the type's width, as libhdf5's C arithmetic does.
        (Kind::Unsigned | Kind::Signed, _) => code.wrapping_add(minval),
        (Kind::Float, 4) => {
            let min = f32::from_bits(minval as u32);
            let scaled = (code as u32 as i32) as f32;
            (scaled / 10f32.powf(p.decimal_scale as f32) + min).to_bits().into()
        }
        _ => {
            let min = f64::from_bits(minval);
            let scaled = (code as i64) as f64;
            (scaled / 10f64.powf(f64::from(p.decimal_scale)) + min).to_bits()
        }
    }
}

/// Store the low `size` bytes of `value` in the dataset's byte order.
fn store(out: &mut [u8], value: u64, p: &Params) {
    let le = value.to_le_bytes();
    if p.big_endian {
        for (o, b) in out.iter_mut().zip(le[..p.size].iter().rev()) {
            *o = *b;
        }
    } else {
        out.copy_from_slice(&le[..p.size]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [scale type, factor, count, class, size, sign, order] and the fill value.
    fn cd(head: [u32; 7], fill: Option<u32>) -> Vec<u32> {
        let mut v = head.to_vec();
        v.push(fill.is_some() as u32);
        v.push(fill.unwrap_or(0));
        v.resize(PARAMS, 0);
        v
    }

    fn chunk(minbits: u32, minval: u64, packed: &[u8]) -> Vec<u8> {
        let mut c = minbits.to_le_bytes().to_vec();
        c.push(8);
        c.extend_from_slice(&minval.to_le_bytes());
        c.extend_from_slice(&[0; 8]);
        c.extend_from_slice(packed);
        c
    }

    #[test]
    fn integers_with_and_without_fill_value() {
        // Three u16 codes of 4 bits: 0x1, 0x2, 0xf, offset by 100.
        let src = chunk(4, 100, &[0x12, 0xf0]);
        let p = Params::parse(&cd([2, 0, 3, 0, 2, 0, 0], None)).unwrap();
        let mut out = [0u8; 6];
        decode(&src, &mut out, &p).unwrap();
        assert_eq!(out, [101, 0, 102, 0, 115, 0]);
        let p = Params::parse(&cd([2, 0, 3, 0, 2, 0, ORDER_BE], Some(7))).unwrap();
        decode(&src, &mut out, &p).unwrap();
        assert_eq!(out, [0, 101, 0, 102, 0, 7]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let p = Params::parse(&cd([2, 0, 3, 0, 2, 0, 0], None)).unwrap();
        let mut out = [0u8; 6];
        assert!(decode(&chunk(4, 100, &[0x12]), &mut out, &p).is_err());
        assert!(decode(&chunk(17, 100, &[0x12, 0, 0, 0, 0, 0, 0]), &mut out, &p).is_err());
        assert!(decode(&[0; 20], &mut out, &p).is_err());
        assert!(decode(&chunk(4, 100, &[0x12, 0xf0]), &mut [0u8; 8], &p).is_err());
        assert!(Params::parse(&cd([1, 0, 3, 1, 4, 0, 0], None)).is_err());
        assert!(Params::parse(&cd([2, 0, 3, 1, 4, 0, 0], None)).is_err());
        assert!(Params::parse(&cd([2, 40, 3, 0, 4, 0, 0], None)).is_err());
        assert!(Params::parse(&cd([2, 0, 3, 0, 3, 0, 0], None)).is_err());
        assert!(Params::parse(&[2, 0, 3]).is_err());
    }
}
