//! Dataspace message (type 0x0001): the shape of a dataset or attribute.
//!
//! Version 1 has no explicit type (rank 0 means scalar); version 2 stores the type
//! and adds the null dataspace (no elements at all).

use super::reader::{ByteReader, Sizes};
use crate::error::{Error, Result};

/// HDF5 limits ranks to 32 (H5S_MAX_RANK).
pub const MAX_RANK: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataspaceKind {
    /// One element, no dimensions.
    Scalar,
    /// An n-dimensional array (n >= 1 in practice; rank 0 is read as scalar).
    Simple,
    /// No elements (h5py: `h5py.Empty`).
    Null,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataspace {
    pub kind: DataspaceKind,
    pub dims: Vec<u64>,
    /// `u64::MAX` is "unlimited"; equal to `dims` when the file stores no maxima.
    pub max_dims: Vec<u64>,
}

const FLAG_HAS_MAX: u8 = 0x01;
const FLAG_HAS_PERMUTATION: u8 = 0x02;

impl Dataspace {
    pub fn scalar() -> Self {
        Dataspace { kind: DataspaceKind::Scalar, dims: Vec::new(), max_dims: Vec::new() }
    }

    /// Parse the message body `data`, which starts at file address `address`.
    pub fn parse(data: &[u8], address: u64, sizes: Sizes) -> Result<Dataspace> {
        let mut r = ByteReader::new(data, address, sizes);
        Self::parse_from(&mut r)
    }

    /// Parse from a cursor (attribute messages embed a dataspace).
    pub fn parse_from(r: &mut ByteReader) -> Result<Dataspace> {
        let start = r.address();
        let version = r.u8()?;
        let rank = r.u8()? as usize;
        let flags = r.u8()?;
        if rank > MAX_RANK {
            return Err(Error::format(format!("dataspace rank {} exceeds {}", rank, MAX_RANK)).at(start));
        }
        let kind = match version {
            1 => {
                // Reserved byte and four reserved bytes.
                r.skip(5)?;
                if rank == 0 {
                    DataspaceKind::Scalar
                } else {
                    DataspaceKind::Simple
                }
            }
            2 => match r.u8()? {
                0 => DataspaceKind::Scalar,
                1 => DataspaceKind::Simple,
                2 => DataspaceKind::Null,
                t => return Err(Error::format(format!("unknown dataspace type {}", t)).at(start)),
            },
            v => return Err(Error::format(format!("dataspace message version {} is not 1 or 2", v)).at(start)),
        };
        if kind != DataspaceKind::Simple && rank != 0 {
            return Err(Error::format(format!("{:?} dataspace with rank {}", kind, rank)).at(start));
        }
        let dims = read_lengths(r, rank)?;
        let max_dims = if flags & FLAG_HAS_MAX != 0 { read_max_dims(r, rank)? } else { dims.clone() };
        // libhdf5 refuses such a dataspace too: a size past its maximum is a damaged
        // field, and a reader would allocate for it
        if let Some(axis) = (0..rank).find(|&i| dims[i] > max_dims[i]) {
            return Err(Error::format(format!(
                "dataspace dimension {} of size {} is greater than its maximum {}",
                axis, dims[axis], max_dims[axis]
            ))
            .at(start));
        }
        // a size of 2^63 or more: not an array any program can index (numpy's shapes,
        // hsize_t arithmetic); 2^64 - 1 is the "unlimited" marker, a maximum only
        if let Some(axis) = (0..rank).find(|&i| dims[i] > i64::MAX as u64) {
            return Err(Error::format(format!("dataspace dimension {} of size {} is past 2^63 - 1", axis, dims[axis]))
                .at(start));
        }
        if version == 1 && flags & FLAG_HAS_PERMUTATION != 0 {
            // Never implemented by libhdf5 either; the indices are skipped.
            read_lengths(r, rank)?;
        }
        Ok(Dataspace { kind, dims, max_dims })
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Number of elements: 1 for scalar, 0 for null, product of dims otherwise.
    pub fn num_elements(&self) -> Result<u64> {
        match self.kind {
            DataspaceKind::Null => Ok(0),
            DataspaceKind::Scalar => Ok(1),
            DataspaceKind::Simple => self.dims.iter().try_fold(1u64, |acc, &d| {
                acc.checked_mul(d)
                    .ok_or_else(|| Error::format(format!("dataspace {:?} has more than 2^64 elements", self.dims)))
            }),
        }
    }
}

fn read_lengths(r: &mut ByteReader, rank: usize) -> Result<Vec<u64>> {
    let width = r.sizes().length as usize;
    if rank.saturating_mul(width) > r.remaining() {
        return Err(r.error(format!("dataspace of rank {} does not fit in its message", rank)));
    }
    (0..rank).map(|_| r.length()).collect()
}

/// Maximum dimensions: an all-ones field (of the length width) means unlimited.
fn read_max_dims(r: &mut ByteReader, rank: usize) -> Result<Vec<u64>> {
    let width = r.sizes().length as usize;
    let raw = read_lengths(r, rank)?;
    Ok(raw.into_iter().map(|d| if super::reader::is_undefined(d, width) { u64::MAX } else { d }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_past_its_maximum_is_refused() {
        let err = Dataspace::parse(&v1(1, FLAG_HAS_MAX, &[2_147_483_654, 6]), 0, Sizes::DEFAULT).unwrap_err();
        assert!(err.to_string().contains("greater than its maximum 6"), "{}", err);
        assert!(Dataspace::parse(&v1(1, FLAG_HAS_MAX, &[6, 6]), 0, Sizes::DEFAULT).is_ok());
    }

    fn v1(rank: u8, flags: u8, values: &[u64]) -> Vec<u8> {
        let mut m = vec![1, rank, flags, 0, 0, 0, 0, 0];
        for v in values {
            m.extend_from_slice(&v.to_le_bytes());
        }
        m
    }

    #[test]
    fn v1_simple_with_unlimited_max() {
        let m = v1(2, 1, &[3, 4, 10, u64::MAX]);
        let s = Dataspace::parse(&m, 0, Sizes::DEFAULT).unwrap();
        assert_eq!(s.kind, DataspaceKind::Simple);
        assert_eq!(s.dims, vec![3, 4]);
        assert_eq!(s.max_dims, vec![10, u64::MAX]);
        assert_eq!(s.num_elements().unwrap(), 12);
    }

    #[test]
    fn v1_scalar_and_v2_null() {
        let s = Dataspace::parse(&v1(0, 0, &[]), 0, Sizes::DEFAULT).unwrap();
        assert_eq!((s.kind, s.num_elements().unwrap()), (DataspaceKind::Scalar, 1));
        let s = Dataspace::parse(&[2, 0, 0, 2], 0, Sizes::DEFAULT).unwrap();
        assert_eq!((s.kind, s.num_elements().unwrap()), (DataspaceKind::Null, 0));
    }

    #[test]
    fn v2_with_small_lengths() {
        let sizes = Sizes { offset: 4, length: 4 };
        let m = [2u8, 1, 1, 1, 5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        let s = Dataspace::parse(&m, 0, sizes).unwrap();
        assert_eq!(s.dims, vec![5]);
        assert_eq!(s.max_dims, vec![u64::MAX]);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(Dataspace::parse(&[1, 33, 0, 0, 0, 0, 0, 0], 0, Sizes::DEFAULT).is_err());
        assert!(Dataspace::parse(&[2, 1, 0, 0, 5], 0, Sizes::DEFAULT).is_err());
        assert!(Dataspace::parse(&[3, 0, 0, 0], 0, Sizes::DEFAULT).is_err());
        // a size past 2^63 - 1 (the "unlimited" marker among them) is refused at once
        let m = v1(2, 0, &[u64::MAX, 3]);
        assert!(Dataspace::parse(&m, 0, Sizes::DEFAULT).unwrap_err().to_string().contains("past 2^63 - 1"));
        let m = v1(2, 0, &[1 << 62, 8]);
        assert!(Dataspace::parse(&m, 0, Sizes::DEFAULT).unwrap().num_elements().is_err());
        let full = v1(2, 1, &[3, 4, 10, 10]);
        for n in 0..full.len() {
            assert!(Dataspace::parse(&full[..n], 0, Sizes::DEFAULT).is_err(), "truncated at {}", n);
        }
    }
}
