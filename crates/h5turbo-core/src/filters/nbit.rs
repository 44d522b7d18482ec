//! N-bit (filter 5): only the significant bits of each value are stored, packed into
//! one MSB-first bit stream with no padding between values.
//!
//! Client data (set by libhdf5): [number of values, "stored as is" flag, elements in
//! the chunk, datatype class, datatype size, class parameters...]. An atomic type
//! (class 1) has [size, byte order (0 LE, 1 BE), precision, bit offset]; an array
//! (class 2) has [size, its base type's class and parameters]; a compound (class 3)
//! has [size, member count, then per member its byte offset, class and parameters];
//! a no-op type (class 4) has [size] and is stored whole. Padding bits decode as zero.
//!
//! For an atomic value the stored bits are the value's bits offset..offset+precision,
//! most significant first, walked a byte of the value at a time as libhdf5 does.

use super::bits::BitReader;
use crate::error::{Error, Result};

const ATOMIC: u32 = 1;
const ARRAY: u32 = 2;
const COMPOUND: u32 = 3;
const NO_OP: u32 = 4;
const ORDER_LE: u32 = 0;
const ORDER_BE: u32 = 1;
/// Compounds nested deeper than this are refused (bounds recursion on bad input).
const MAX_DEPTH: usize = 16;

pub fn check(cd: &[u32]) -> Result<()> {
    // [count of values, "stored as is" flag, elements, ...]: libhdf5 writes only the
    // first three for types it does not pack (enums, strings, references)
    if cd.len() < 3 || cd[0] as usize != cd.len() {
        return Err(crate::format_err!("nbit: {} client data values, where the first says {:?}", cd.len(), cd.first()));
    }
    if cd[1] != 0 {
        return Ok(());
    }
    if cd.len() < 5 {
        return Err(crate::format_err!("nbit: {} client data values describe no datatype", cd.len()));
    }
    if cd[4] == 0 {
        return Err(crate::format_err!("nbit: datatype size 0"));
    }
    // Walk the type description once without data so bad parameters fail up front.
    let mut probe = [0u8; 0];
    let mut walker = Walker { cd, index: 3, out: &mut probe, bits: BitReader::new(&[], "nbit"), dry: true };
    walker.value(0, 0)
}

pub fn decode(src: &[u8], dst: &mut [u8], cd: &[u32]) -> Result<()> {
    check(cd)?;
    if cd[1] != 0 {
        if src.len() != dst.len() {
            return Err(super::size_mismatch("nbit", src.len(), dst.len()));
        }
        dst.copy_from_slice(src);
        return Ok(());
    }
    let (count, size) = (cd[2] as usize, cd[4] as usize);
    if count.checked_mul(size) != Some(dst.len()) {
        return Err(crate::format_err!(
            "nbit: {} elements of {} bytes do not make the {}-byte chunk",
            count,
            size,
            dst.len()
        ));
    }
    // Bits outside the stored fields are zero.
    dst.fill(0);
    let mut walker = Walker { cd, index: 3, out: dst, bits: BitReader::new(src, "nbit"), dry: false };
    for i in 0..count {
        walker.index = 3;
        walker.value(i * size, 0)?;
    }
    Ok(())
}

/// Walks the type parameters, decoding one element's bits into `out`.
struct Walker<'a, 'o> {
    cd: &'a [u32],
    index: usize,
    out: &'o mut [u8],
    bits: BitReader<'a>,
    /// Only validate the parameters (no data).
    dry: bool,
}

struct Atomic {
    size: usize,
    order: u32,
    precision: usize,
    offset: usize,
}

impl Walker<'_, '_> {
    fn next(&mut self) -> Result<u32> {
        let v = *self
            .cd
            .get(self.index)
            .ok_or_else(|| crate::format_err!("nbit: parameter list ends inside the datatype"))?;
        self.index += 1;
        Ok(v)
    }

    /// Decode one value whose class starts at the current parameter; `at` is its byte
    /// offset in the output.
    fn value(&mut self, at: usize, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(crate::format_err!("nbit: datatype nested too deeply"));
        }
        match self.next()? {
            ATOMIC => {
                let size = self.next()? as usize;
                let a = self.atomic_params(size)?;
                self.atomic(at, &a)
            }
            ARRAY => self.array(at, depth),
            COMPOUND => self.compound(at, depth),
            NO_OP => {
                let size = self.next()? as usize;
                self.no_op(at, size)
            }
            class => Err(crate::format_err!("nbit: unknown datatype class {}", class)),
        }
    }

    fn atomic_params(&mut self, size: usize) -> Result<Atomic> {
        let a = Atomic { size, order: self.next()?, precision: self.next()? as usize, offset: self.next()? as usize };
        if a.size == 0 || a.precision == 0 || a.precision + a.offset > a.size * 8 || a.order > ORDER_BE {
            return Err(crate::format_err!(
                "nbit: invalid atomic type (size {}, order {}, precision {}, offset {})",
                a.size,
                a.order,
                a.precision,
                a.offset
            ));
        }
        Ok(a)
    }

    fn array(&mut self, at: usize, depth: usize) -> Result<()> {
        let total = self.next()? as usize;
        let base_start = self.index;
        // The base type's size follows its class.
        let base_size =
            *self.cd.get(base_start + 1).ok_or_else(|| crate::format_err!("nbit: array without base type"))? as usize;
        if base_size == 0 || base_size > total {
            return Err(crate::format_err!("nbit: array of {} bytes with {}-byte base type", total, base_size));
        }
        let n = if self.dry { 1 } else { total / base_size };
        for i in 0..n {
            self.index = base_start;
            self.value(at + i * base_size, depth + 1)?;
        }
        Ok(())
    }

    fn compound(&mut self, at: usize, depth: usize) -> Result<()> {
        let size = self.next()? as usize;
        let members = self.next()?;
        let mut used = 0usize;
        for _ in 0..members {
            let offset = self.next()? as usize;
            let member_size =
                *self.cd.get(self.index + 1).ok_or_else(|| crate::format_err!("nbit: compound member without size"))?
                    as usize;
            used += member_size;
            if member_size == 0 || used > size || offset + member_size > size {
                return Err(crate::format_err!(
                    "nbit: compound member ({} bytes at {}) outside the {}-byte compound",
                    member_size,
                    offset,
                    size
                ));
            }
            self.value(at + offset, depth + 1)?;
        }
        Ok(())
    }

    fn no_op(&mut self, at: usize, size: usize) -> Result<()> {
        if self.dry {
            return Ok(());
        }
        for k in 0..size {
            let byte = self.bits.get(8)? as u8;
            *self.slot(at + k)? = byte;
        }
        Ok(())
    }

    /// The value's bytes from the most significant stored byte to the least, each
    /// holding a run of the field's bits.
    fn atomic(&mut self, at: usize, a: &Atomic) -> Result<()> {
        if self.dry {
            return Ok(());
        }
        let type_bits = a.size * 8;
        let top = a.precision + a.offset; // one past the field's highest bit
        let bytes: Box<dyn Iterator<Item = usize>> = if a.order == ORDER_LE {
            Box::new((a.offset / 8..=(top - 1) / 8).rev())
        } else {
            Box::new((type_bits - top) / 8..=(type_bits - a.offset - 1) / 8)
        };
        let (first, last) = if a.order == ORDER_LE {
            ((top - 1) / 8, a.offset / 8)
        } else {
            ((type_bits - top) / 8, (type_bits - a.offset - 1) / 8)
        };
        for k in bytes {
            let (len, shift) = if first == last {
                (a.precision, a.offset % 8)
            } else if k == first {
                (8 - (type_bits - top) % 8, 0)
            } else if k == last {
                (8 - a.offset % 8, a.offset % 8)
            } else {
                (8, 0)
            };
            let bits = self.bits.get(len)? as u8;
            *self.slot(at + k)? = bits << shift;
        }
        Ok(())
    }

    fn slot(&mut self, i: usize) -> Result<&mut u8> {
        self.out.get_mut(i).ok_or_else(|| overflow(i))
    }
}

fn overflow(i: usize) -> Error {
    crate::format_err!("nbit: datatype parameters place byte {} outside the element", i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_little_and_big_endian() {
        // 2 x u16 LE, precision 12, offset 2: values 0x3ffc and 0x0004 (fields 0xfff, 0x001).
        let cd = [8, 0, 2, ATOMIC, 2, ORDER_LE, 12, 2];
        let src = [0xff, 0xf0, 0x01]; // 1111_1111 1111 | 0000 0000_0001
        let mut out = [0xAA; 4];
        decode(&src, &mut out, &cd).unwrap();
        assert_eq!(out, [0xfc, 0x3f, 0x04, 0x00]);
        let cd = [8, 0, 2, ATOMIC, 2, ORDER_BE, 12, 2];
        decode(&src, &mut out, &cd).unwrap();
        assert_eq!(out, [0x3f, 0xfc, 0x00, 0x04]);
        // One field inside one byte: precision 3, offset 4 in a u8.
        let cd = [8, 0, 2, ATOMIC, 1, ORDER_LE, 3, 4];
        let mut out = [0; 2];
        decode(&[0b1010_1100], &mut out, &cd).unwrap(); // fields 101, 011, then padding
        assert_eq!(out, [0b101 << 4, 0b011 << 4]);
    }

    #[test]
    fn bad_parameters_and_short_data() {
        let mut out = [0; 4];
        assert!(decode(&[0xff], &mut out, &[8, 0, 2, ATOMIC, 2, ORDER_LE, 12, 2]).is_err());
        assert!(check(&[8, 0, 2, ATOMIC, 2, ORDER_LE, 17, 0]).is_err());
        assert!(check(&[7, 0, 2, ATOMIC, 2, ORDER_LE, 12, 2]).is_err());
        assert!(check(&[6, 0, 2, 9, 2, 0]).is_err());
        assert!(check(&[8, 0, 2, COMPOUND, 4, 1, 2, ATOMIC]).is_err());
        assert!(decode(&[0; 4], &mut out, &[8, 0, 3, ATOMIC, 2, ORDER_LE, 12, 2]).is_err());
        // "Stored as is", with the type described or (enums, strings: libhdf5 writes
        // three values) not
        decode(&[1, 2, 3, 4], &mut out, &[5, 1, 2, ATOMIC, 2]).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        decode(&[5, 6, 7, 8], &mut out, &[3, 1, 2]).unwrap();
        assert_eq!(out, [5, 6, 7, 8]);
        assert!(check(&[3, 0, 2]).is_err() && check(&[2, 1]).is_err());
    }
}
