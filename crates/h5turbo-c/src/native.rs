//! From the numpy layout the core reads into (the file's byte order kept, as h5py
//! does) to the caller's native byte order, element by element.

use h5turbo_core::prelude::{Error, NumpyDtype};

/// True when elements of `dtype` have a fixed layout a C buffer can hold (no
/// variable-length parts, no references).
pub(crate) fn is_plain(dtype: &NumpyDtype) -> bool {
    match dtype {
        NumpyDtype::Simple(_) => true,
        NumpyDtype::Structured { fields, .. } => fields.iter().all(|(_, d, _)| is_plain(d)),
        NumpyDtype::SubArray { base, .. } => is_plain(base),
        NumpyDtype::VlenString { .. } | NumpyDtype::VlenSequence(_) | NumpyDtype::Reference { .. } => false,
    }
}

/// How one simple typestr ('<i4', '>c16', '|S5') is swapped: the width of each
/// number to reverse (0: never swapped) and whether the stored order is the native one.
fn swap_unit(typestr: &str) -> (usize, bool) {
    let bytes = typestr.as_bytes();
    let (Some(&order), Some(&kind)) = (bytes.first(), bytes.get(1)) else { return (0, true) };
    let size: usize = typestr.get(2..).and_then(|s| s.parse().ok()).unwrap_or(0);
    let native = match order {
        b'<' => cfg!(target_endian = "little"),
        b'>' => cfg!(target_endian = "big"),
        _ => true,
    };
    let unit = match kind {
        b'i' | b'u' | b'f' | b'M' | b'm' => size,
        b'c' => size / 2,
        _ => 0,
    };
    (if unit > 1 { unit } else { 0 }, native)
}

/// Swap `n` elements of `dtype` in `buf` (n x itemsize bytes) to native byte order.
pub(crate) fn to_native(dtype: &NumpyDtype, buf: &mut [u8], n: usize) -> Result<(), Error> {
    let itemsize = usize::try_from(dtype.itemsize()).map_err(|_| Error::unsupported("element too large"))?;
    if itemsize == 0 || n == 0 {
        return Ok(());
    }
    let len = n.checked_mul(itemsize).filter(|&l| l <= buf.len()).ok_or_else(|| Error::invalid_argument("buffer too small"))?;
    match dtype {
        NumpyDtype::Simple(s) => {
            let (unit, native) = swap_unit(s);
            if unit > 0 && !native {
                buf[..len].chunks_exact_mut(unit).for_each(|c| c.reverse());
            }
        }
        NumpyDtype::SubArray { base, shape } => {
            let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
            let count = count.ok_or_else(|| Error::unsupported("array type too large"))?;
            to_native(base, &mut buf[..len], n.checked_mul(count).ok_or_else(|| Error::unsupported("too large"))?)?;
        }
        NumpyDtype::Structured { fields, .. } => {
            if !fields.iter().any(|(_, d, _)| needs_swap(d)) {
                return Ok(());
            }
            for element in buf[..len].chunks_exact_mut(itemsize) {
                for (_, field, offset) in fields {
                    let start = usize::try_from(*offset).ok().filter(|&o| o <= itemsize);
                    let start = start.ok_or_else(|| Error::format("compound member offset outside the element"))?;
                    to_native(field, &mut element[start..], 1)?;
                }
            }
        }
        _ => return Err(Error::unsupported("variable-length or reference elements have no fixed C layout")),
    }
    Ok(())
}

fn needs_swap(dtype: &NumpyDtype) -> bool {
    match dtype {
        NumpyDtype::Simple(s) => {
            let (unit, native) = swap_unit(s);
            unit > 0 && !native
        }
        NumpyDtype::SubArray { base, .. } => needs_swap(base),
        NumpyDtype::Structured { fields, .. } => fields.iter().any(|(_, d, _)| needs_swap(d)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_numbers_are_swapped_and_little_endian_kept() {
        let mut be = vec![0, 0, 1, 2];
        to_native(&NumpyDtype::Simple(">i4".into()), &mut be, 1).unwrap();
        assert_eq!(i32::from_ne_bytes(be.try_into().unwrap()), 258);
        let mut le = 258i32.to_le_bytes().to_vec();
        to_native(&NumpyDtype::Simple("<i4".into()), &mut le, 1).unwrap();
        assert_eq!(i32::from_ne_bytes(le.try_into().unwrap()), 258);
    }

    #[test]
    fn compound_members_are_swapped_in_place() {
        let dtype = NumpyDtype::Structured {
            fields: vec![("a".into(), NumpyDtype::Simple(">u2".into()), 0), ("b".into(), NumpyDtype::Simple("|S2".into()), 2)],
            itemsize: 4,
        };
        let mut buf = vec![1, 2, b'x', b'y', 3, 4, b'z', b'w'];
        to_native(&dtype, &mut buf, 2).unwrap();
        assert_eq!(u16::from_ne_bytes([buf[0], buf[1]]), 0x0102);
        assert_eq!(&buf[2..4], b"xy");
        assert_eq!(u16::from_ne_bytes([buf[4], buf[5]]), 0x0304);
    }
}
