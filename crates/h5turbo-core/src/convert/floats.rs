//! Floating-point layouts numpy lacks, widened to the numpy float h5py picks.
//!
//! h5py maps any float layout to the first numpy float with enough exponent range and
//! mantissa bits (see `numpy_dtype`), and libhdf5 converts on read. Because the target
//! always has at least the source's range and precision, the conversion is exact: take
//! the value apart (sign, significand, binary exponent) and re-encode it.

use crate::format::datatype::{decode_int, ByteOrder, FloatLayout};
use crate::error::{Error, Result};

/// An IEEE-style target layout (numpy's f2, f4, f8, or x87 long double in 16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetFloat {
    size: usize,
    exp_size: u32,
    mant_size: u32,
    bias: i64,
    /// The leading significand bit is implied (IEEE) rather than stored (x87).
    implied: bool,
}

impl TargetFloat {
    pub fn size(&self) -> usize {
        self.size
    }

    /// The target for a numpy float of `itemsize` bytes on this platform.
    pub fn for_numpy(itemsize: usize) -> Result<TargetFloat> {
        let t = |size, exp_size, mant_size, bias, implied| TargetFloat { size, exp_size, mant_size, bias, implied };
        match itemsize {
            2 => Ok(t(2, 5, 10, 15, true)),
            4 => Ok(t(4, 8, 23, 127, true)),
            8 => Ok(t(8, 11, 52, 1023, true)),
            16 if cfg!(any(target_arch = "x86_64", target_arch = "x86")) => Ok(t(16, 15, 64, 16383, false)),
            _ => Err(Error::unsupported(format!("conversion to a {}-byte numpy float", itemsize))),
        }
    }
}

/// Check once, when planning, that `layout` can be decoded: fields inside the element.
pub fn check_source(layout: &FloatLayout, size: usize) -> Result<()> {
    let bits = size * 8;
    let fits = |pos: usize, len: usize| len <= 64 && pos + len <= bits;
    let ok = size <= 16
        && layout.order != ByteOrder::Vax
        && (layout.sign_location as usize) < bits
        && fits(layout.exponent_location as usize, layout.exponent_size as usize)
        && fits(layout.mantissa_location as usize, layout.mantissa_size as usize)
        && (1..=32).contains(&layout.exponent_size);
    if ok {
        Ok(())
    } else {
        Err(Error::unsupported(format!("floating-point layout {:?} in {} bytes", layout, size)))
    }
}

enum Value {
    Zero,
    Infinite,
    NaN,
    /// significand x 2^exponent, significand > 0.
    Finite {
        significand: u128,
        exponent: i64,
    },
}

fn field(bits: u128, pos: u8, len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        (bits >> pos) & ((1u128 << len) - 1)
    }
}

fn decode(layout: &FloatLayout, src: &[u8]) -> (bool, Value) {
    let bits = decode_int(src, layout.order, false) as u128;
    let sign = (bits >> layout.sign_location) & 1 == 1;
    let exp = field(bits, layout.exponent_location, layout.exponent_size) as i64;
    let mant = field(bits, layout.mantissa_location, layout.mantissa_size);
    let all_ones = (1i64 << layout.exponent_size) - 1;
    let (bias, msize) = (layout.exponent_bias as i64, layout.mantissa_size as i64);
    if exp == all_ones {
        // For explicit-bit layouts (x87) the integer bit is set on infinities too.
        let fraction = if layout.normalization == 2 { mant } else { mant & !(1u128 << (msize - 1).max(0)) };
        return (sign, if fraction == 0 { Value::Infinite } else { Value::NaN });
    }
    let value = match (layout.normalization, exp) {
        (_, 0) if mant == 0 => Value::Zero,
        // Implied leading bit: denormals have exponent 1 - bias and no implied bit.
        (2, 0) => Value::Finite { significand: mant, exponent: 1 - bias - msize },
        (2, _) => Value::Finite { significand: mant | (1u128 << msize), exponent: exp - bias - msize },
        // Stored leading bit (MSB set, or no normalisation): the mantissa is 1.xxx or 0.xxx.
        (_, 0) => Value::Finite { significand: mant, exponent: 1 - bias - (msize - 1) },
        _ if mant == 0 => Value::Zero,
        _ => Value::Finite { significand: mant, exponent: exp - bias - (msize - 1) },
    };
    (sign, value)
}

/// Convert one element from `layout` (src, its size) to `target` (dst, target.size).
pub fn convert(layout: &FloatLayout, target: &TargetFloat, src: &[u8], dst: &mut [u8]) {
    let (sign, value) = decode(layout, src);
    let t = target;
    let exp_max = (1u128 << t.exp_size) - 1;
    let explicit_bit = if t.implied { 0 } else { 1u128 << (t.mant_size - 1) };
    let (exp, mant) = match value {
        Value::Zero => (0, 0),
        Value::Infinite => (exp_max, explicit_bit),
        Value::NaN => (exp_max, explicit_bit | 1u128 << (t.mant_size - 1 - (!t.implied) as u32)),
        Value::Finite { significand, exponent } => encode_finite(t, significand, exponent),
    };
    let total_bits = if t.implied { t.size * 8 } else { 80 };
    let bits = (sign as u128) << (total_bits - 1) | exp << t.mant_size | mant;
    let le = bits.to_le_bytes();
    for (i, out) in dst.iter_mut().enumerate() {
        *out = match layout.order {
            ByteOrder::Big => le[t.size - 1 - i],
            _ => le[i],
        };
    }
}

/// (biased exponent, stored mantissa) of significand x 2^exponent in the target.
fn encode_finite(t: &TargetFloat, significand: u128, exponent: i64) -> (u128, u128) {
    let top = 127 - significand.leading_zeros() as i64; // position of the leading 1
                                                        // Stored mantissa bits below the leading bit.
    let fraction_bits = if t.implied { t.mant_size as i64 } else { t.mant_size as i64 - 1 };
    let biased = top + exponent + t.bias;
    let exp_max = (1i64 << t.exp_size) - 1;
    if biased >= exp_max {
        // Out of range (h5py's choice of target rules this out for valid layouts).
        return (exp_max as u128, if t.implied { 0 } else { 1u128 << (t.mant_size - 1) });
    }
    if biased <= 0 {
        // Below the normal range: a denormal with exponent 1 - bias.
        let shift = exponent - (1 - t.bias - fraction_bits);
        return (0, shift_left(significand, shift));
    }
    let aligned = shift_left(significand, fraction_bits - top);
    let mant = if t.implied { aligned & ((1u128 << t.mant_size) - 1) } else { aligned };
    (biased as u128, mant)
}

fn shift_left(v: u128, by: i64) -> u128 {
    match by {
        b if b >= 128 => 0,
        b if b >= 0 => v << b,
        b if b > -128 => v >> -b,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ieee(size: usize) -> FloatLayout {
        let (sign, eloc, esize, msize, bias) = match size {
            2 => (15, 10, 5, 10, 15),
            4 => (31, 23, 8, 23, 127),
            _ => (63, 52, 11, 52, 1023),
        };
        FloatLayout {
            order: ByteOrder::Little,
            bit_offset: 0,
            precision: size as u16 * 8,
            sign_location: sign,
            exponent_location: eloc,
            exponent_size: esize,
            mantissa_location: 0,
            mantissa_size: msize,
            exponent_bias: bias,
            normalization: 2,
        }
    }

    fn widen(layout: &FloatLayout, src: &[u8], to: usize) -> Vec<u8> {
        let mut out = vec![0u8; to];
        convert(layout, &TargetFloat::for_numpy(to).unwrap(), src, &mut out);
        out
    }

    #[test]
    fn widening_is_exact() {
        for v in [0.0f32, -0.0, 1.5, -2.25, 1e-40, f32::MIN_POSITIVE, f32::MAX, f32::INFINITY, f32::NEG_INFINITY] {
            let out = widen(&ieee(4), &v.to_le_bytes(), 8);
            assert_eq!(f64::from_le_bytes(out.try_into().unwrap()), v as f64, "{}", v);
        }
        let nan = widen(&ieee(4), &f32::NAN.to_le_bytes(), 8);
        assert!(f64::from_le_bytes(nan.try_into().unwrap()).is_nan());
        // Half to single: 1.0, a denormal (2^-24), and -65504.
        for (h, f) in [(0x3c00u16, 1.0f32), (0x0001, 5.960_464_5e-8), (0xfbff, -65504.0)] {
            let out = widen(&ieee(2), &h.to_le_bytes(), 4);
            assert_eq!(f32::from_le_bytes(out.try_into().unwrap()), f, "{:#x}", h);
        }
    }

    #[test]
    fn big_endian_and_x87_targets() {
        let mut be = ieee(4);
        be.order = ByteOrder::Big;
        let out = widen(&be, &(-3.0f32).to_be_bytes(), 8);
        assert_eq!(f64::from_be_bytes(out.try_into().unwrap()), -3.0);
        if cfg!(target_arch = "x86_64") {
            // 1.5 as x87: exponent 16383, mantissa 0xC000...
            let out = widen(&ieee(8), &1.5f64.to_le_bytes(), 16);
            assert_eq!(&out[..10], &[0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x3f]);
        }
    }
}
