//! Fill value messages: the old one (type 0x0004, value only) and the new one
//! (type 0x0005, versions 1-3, with allocation and fill times).

use super::reader::{ByteReader, Sizes};
use crate::error::{Error, Result};

/// Space allocation time: early (1), late (2), incremental (3).
pub const ALLOC_TIME_LATE: u8 = 2;
/// Fill value write time: on allocation (0), never (1), if set by the user (2).
pub const FILL_TIME_NEVER: u8 = 1;
pub const FILL_TIME_IFSET: u8 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue {
    /// Raw bytes of one element in file layout; `None` = undefined or library default
    /// (read as zeros, as h5py does).
    pub value: Option<Vec<u8>>,
    pub alloc_time: u8,
    pub fill_time: u8,
}

impl FillValue {
    /// Old fill value message (0x0004): a 4-byte size and the value. It has no
    /// times; libhdf5 assumes late allocation and fill-if-set.
    pub fn parse_old(data: &[u8], address: u64, sizes: Sizes) -> Result<FillValue> {
        let mut r = ByteReader::new(data, address, sizes);
        let value = read_sized_value(&mut r)?;
        Ok(FillValue { value, alloc_time: ALLOC_TIME_LATE, fill_time: FILL_TIME_IFSET })
    }

    /// New fill value message (0x0005), versions 1, 2 and 3.
    pub fn parse_new(data: &[u8], address: u64, sizes: Sizes) -> Result<FillValue> {
        let mut r = ByteReader::new(data, address, sizes);
        let version = r.u8()?;
        match version {
            1 | 2 => parse_v1_v2(&mut r),
            3 => parse_v3(&mut r),
            v => Err(Error::format(format!("fill value message version {} is not 1..3", v)).at(address)),
        }
    }

    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// The fill value must be exactly one element of the dataset's datatype.
    pub fn check_size(&self, element_size: usize) -> Result<()> {
        match &self.value {
            Some(v) if v.len() != element_size => {
                Err(Error::format(format!("fill value of {} bytes for a {}-byte datatype", v.len(), element_size)))
            }
            _ => Ok(()),
        }
    }
}

fn parse_v1_v2(r: &mut ByteReader) -> Result<FillValue> {
    let alloc_time = r.u8()?;
    let fill_time = r.u8()?;
    let defined = r.u8()?;
    // libhdf5 reads the size field only when a value is defined, in both versions.
    let value = if defined != 0 { read_sized_value(r)? } else { None };
    Ok(FillValue { value, alloc_time, fill_time })
}

const V3_UNDEFINED: u8 = 0x10;
const V3_DEFINED: u8 = 0x20;

fn parse_v3(r: &mut ByteReader) -> Result<FillValue> {
    let at = r.address();
    let flags = r.u8()?;
    if flags & V3_UNDEFINED != 0 && flags & V3_DEFINED != 0 {
        return Err(Error::format("fill value flagged both undefined and defined").at(at));
    }
    let value = if flags & V3_DEFINED != 0 { read_sized_value(r)? } else { None };
    Ok(FillValue { value, alloc_time: flags & 0x03, fill_time: (flags >> 2) & 0x03 })
}

/// A 4-byte size then that many bytes; size 0 means the library default (zeros).
fn read_sized_value(r: &mut ByteReader) -> Result<Option<Vec<u8>>> {
    let size = r.u32()? as usize;
    if size == 0 {
        return Ok(None);
    }
    Ok(Some(r.bytes(size)?.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_and_new_versions() {
        let old = [4u8, 0, 0, 0, 1, 2, 3, 4];
        assert_eq!(FillValue::parse_old(&old, 0, Sizes::DEFAULT).unwrap().value, Some(vec![1, 2, 3, 4]));
        let v2 = [2u8, 1, 0, 1, 2, 0, 0, 0, 9, 8];
        let f = FillValue::parse_new(&v2, 0, Sizes::DEFAULT).unwrap();
        assert_eq!((f.value, f.alloc_time, f.fill_time), (Some(vec![9, 8]), 1, 0));
        let v2_undefined = [2u8, 2, 2, 0];
        assert_eq!(FillValue::parse_new(&v2_undefined, 0, Sizes::DEFAULT).unwrap().value, None);
        let v3 = [3u8, 0x20 | 0x08 | 0x02, 1, 0, 0, 0, 7];
        let f = FillValue::parse_new(&v3, 0, Sizes::DEFAULT).unwrap();
        assert_eq!((f.value, f.alloc_time, f.fill_time), (Some(vec![7]), 2, 2));
        assert!(f_check(1).is_ok() && f_check(2).is_err());
    }

    fn f_check(size: usize) -> Result<()> {
        FillValue { value: Some(vec![0]), alloc_time: 2, fill_time: 2 }.check_size(size)
    }

    #[test]
    fn corrupt_messages_are_errors() {
        assert!(FillValue::parse_new(&[4, 0, 0, 0], 0, Sizes::DEFAULT).is_err());
        assert!(FillValue::parse_new(&[3, 0x30], 0, Sizes::DEFAULT).is_err());
        let v3 = [3u8, 0x20, 0xff, 0xff, 0xff, 0x7f, 1];
        assert!(FillValue::parse_new(&v3, 0, Sizes::DEFAULT).is_err());
        for n in 0..7 {
            assert!(FillValue::parse_new(&[3u8, 0x20, 2, 0, 0, 0, 1, 2][..n], 0, Sizes::DEFAULT).is_err());
        }
        assert!(FillValue::parse_old(&[8, 0, 0, 0, 1], 0, Sizes::DEFAULT).is_err());
    }
}
