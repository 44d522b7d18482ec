//! Object and dataset-region references as stored (H5R_OBJECT1, H5R_DATASET_REGION1).
//!
//! An object reference is the address of an object header (offset-size bytes). A
//! region reference is a global heap id (collection address + object index); the heap
//! object holds the dataset's object header address followed by a serialized
//! dataspace selection (H5S "select serialize": none, all, points or hyperslabs).
//! HDF5 1.12+ "revised" references (H5R_OBJECT2 / H5R_DATASET_REGION2 / H5R_ATTR) are
//! a different encoding that h5py cannot read either; they stay unsupported.

use super::context::FormatContext;
use super::global_heap::GlobalHeapCache;
use super::reader::{is_undefined, le_uint, ByteReader};
use crate::error::{Error, Result};

/// The address an object reference (its stored bytes, offset-size long) points to;
/// `None` for a null reference (libhdf5 writes zeros; the undefined address too).
pub fn object_address(raw: &[u8]) -> Result<Option<u64>> {
    if raw.is_empty() || raw.len() > 8 {
        return Err(Error::format(format!("object reference of {} bytes", raw.len())));
    }
    let address = le_uint(raw);
    Ok(if address == 0 || is_undefined(address, raw.len()) { None } else { Some(address) })
}

/// A stored region reference (collection address, offset-size bytes, then a 4-byte
/// object index): where its heap object is; `None` for a null reference.
pub fn region_heap_id(raw: &[u8]) -> Result<Option<(u64, u32)>> {
    let split = raw.len().checked_sub(4).filter(|&n| (1..=8).contains(&n));
    let Some(split) = split else {
        return Err(Error::format(format!("region reference of {} bytes", raw.len())));
    };
    let collection = le_uint(&raw[..split]);
    let index = le_uint(&raw[split..]) as u32;
    Ok(if collection == 0 || is_undefined(collection, split) { None } else { Some((collection, index)) })
}

/// A dataspace selection as serialized in a region reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    None,
    All,
    /// Points in stored order, each `rank` coordinates.
    Points { rank: usize, coords: Vec<u64> },
    /// Blocks `start..=end` per axis, `rank` values each (irregular hyperslabs).
    Blocks { rank: usize, starts: Vec<u64>, ends: Vec<u64> },
    /// A regular hyperslab: per axis start, stride, count, block.
    Regular { start: Vec<u64>, stride: Vec<u64>, count: Vec<u64>, block: Vec<u64> },
}

/// What a region reference names: a dataset (object header address) and a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub object: u64,
    pub selection: Selection,
}

/// Read the heap object of a region reference and parse it.
pub fn read_region(ctx: &FormatContext, heap: &GlobalHeapCache, collection: u64, index: u32) -> Result<Region> {
    let object = heap.get(ctx, collection, index)?;
    parse_region(ctx, &object, object.address())
}

/// Selection types of the serialization (H5S_sel_type).
const SEL_NONE: u32 = 0;
const SEL_POINTS: u32 = 1;
const SEL_HYPERSLABS: u32 = 2;
const SEL_ALL: u32 = 3;
/// Hyperslab flag: the selection is stored as one regular pattern.
const HYPER_REGULAR: u8 = 0x01;
/// libhdf5's limit on dataspace rank.
const MAX_RANK: u32 = 32;

pub fn parse_region(ctx: &FormatContext, bytes: &[u8], at: u64) -> Result<Region> {
    let mut r = ByteReader::new(bytes, at, ctx.sizes());
    let object = r.required_address("region reference dataset")?;
    let selection = parse_selection(&mut r)?;
    Ok(Region { object, selection })
}

/// A serialized dataspace selection (libhdf5's H5S_SELECT_SERIALIZE bytes), as region
/// references and virtual dataset mappings store them.
pub fn parse_selection(r: &mut ByteReader) -> Result<Selection> {
    parse(r, Unlimited::Refused)
}

/// A virtual dataset mapping's selection, where a regular hyperslab's count or block
/// may be unlimited (`UNLIMITED`): the mapping grows with its source. Listed, not read.
pub fn parse_virtual_selection(r: &mut ByteReader) -> Result<Selection> {
    parse(r, Unlimited::Allowed)
}

/// A regular hyperslab count or block that is unlimited, as `Selection::Regular` holds it.
pub const UNLIMITED: u64 = u64::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unlimited {
    Refused,
    Allowed,
}

fn parse(r: &mut ByteReader, unlimited: Unlimited) -> Result<Selection> {
    let kind = r.u32()?;
    let version = r.u32()?;
    let selection = match kind {
        SEL_NONE | SEL_ALL => {
            if version != 1 {
                return Err(r.error(format!("selection version {} (only 1 exists)", version)));
            }
            r.skip(8)?; // reserved and length fields (zero)
            if kind == SEL_NONE { Selection::None } else { Selection::All }
        }
        SEL_POINTS => points(r, version)?,
        SEL_HYPERSLABS => hyperslabs(r, version, unlimited)?,
        k => return Err(r.error(format!("unknown selection type {}", k))),
    };
    Ok(selection)
}

/// Points: v1 {reserved, length, rank, count} in 4-byte fields; v2 {encode size,
/// rank, count} with counts and coordinates of that size.
fn points(r: &mut ByteReader, version: u32) -> Result<Selection> {
    let (rank, size) = match version {
        1 => {
            r.skip(8)?; // reserved, length
            (rank(r)?, 4)
        }
        2 => {
            let size = encode_size(r)?;
            (rank(r)?, size)
        }
        v => return Err(r.error(format!("point selection version {} is not supported", v))),
    };
    let n = counted(r, size, rank)?;
    let coords = (0..n * rank).map(|_| r.uint(size)).collect::<Result<_>>()?;
    Ok(Selection::Points { rank, coords })
}

/// Hyperslabs: v1 irregular blocks in 4-byte fields; v2 regular only, 8-byte fields;
/// v3 regular or irregular with an encode size.
fn hyperslabs(r: &mut ByteReader, version: u32, unlimited: Unlimited) -> Result<Selection> {
    match version {
        1 => {
            r.skip(8)?; // reserved, length
            let rank = rank(r)?;
            blocks(r, rank, 4)
        }
        2 => {
            let flags = r.u8()?;
            r.skip(4)?; // length
            let rank = rank(r)?;
            if flags & HYPER_REGULAR == 0 {
                return Err(r.error("version 2 hyperslab selection that is not regular"));
            }
            regular(r, rank, 8, unlimited)
        }
        3 => {
            let flags = r.u8()?;
            let size = encode_size(r)?;
            let rank = rank(r)?;
            if flags & HYPER_REGULAR != 0 { regular(r, rank, size, unlimited) } else { blocks(r, rank, size) }
        }
        v => Err(r.error(format!("hyperslab selection version {} is not supported", v))),
    }
}

fn blocks(r: &mut ByteReader, rank: usize, size: usize) -> Result<Selection> {
    let n = counted(r, size, 2 * rank)?;
    let (mut starts, mut ends) = (Vec::with_capacity(n * rank), Vec::with_capacity(n * rank));
    for _ in 0..n {
        for _ in 0..rank {
            starts.push(r.uint(size)?);
        }
        for _ in 0..rank {
            ends.push(r.uint(size)?);
        }
    }
    if starts.iter().zip(&ends).any(|(s, e)| s > e) {
        return Err(r.error("hyperslab block that ends before it starts"));
    }
    Ok(Selection::Blocks { rank, starts, ends })
}

fn regular(r: &mut ByteReader, rank: usize, size: usize, unlimited: Unlimited) -> Result<Selection> {
    let (mut start, mut stride, mut count, mut block) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rank {
        start.push(r.uint(size)?);
        stride.push(r.uint(size)?);
        count.push(r.uint(size)?);
        block.push(r.uint(size)?);
    }
    if count.iter().chain(&block).any(|&v| is_undefined(v, size)) {
        if unlimited == Unlimited::Refused {
            return Err(Error::unsupported("a selection with an unlimited hyperslab count or block"));
        }
        for v in count.iter_mut().chain(block.iter_mut()).filter(|v| is_undefined(**v, size)) {
            *v = UNLIMITED;
        }
    }
    Ok(Selection::Regular { start, stride, count, block })
}

fn rank(r: &mut ByteReader) -> Result<usize> {
    let rank = r.u32()?;
    if rank == 0 || rank > MAX_RANK {
        return Err(r.error(format!("selection rank {} (1 to {} allowed)", rank, MAX_RANK)));
    }
    Ok(rank as usize)
}

fn encode_size(r: &mut ByteReader) -> Result<usize> {
    match r.u8()? {
        s @ (2 | 4 | 8) => Ok(s as usize),
        s => Err(r.error(format!("selection encode size {} (2, 4 or 8 allowed)", s))),
    }
}

/// A count of items of `per_item` values of `size` bytes, checked against the bytes left.
fn counted(r: &mut ByteReader, size: usize, per_item: usize) -> Result<usize> {
    let n = r.uint(size)?;
    let fits = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(per_item)?.checked_mul(size))
        .is_some_and(|bytes| bytes <= r.remaining());
    if !fits {
        return Err(r.error(format!("selection of {} items does not fit in its {} bytes", n, r.remaining())));
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_support::{ctx, u32s};

    #[test]
    fn parses_v1_points_and_blocks() {
        let mut b = 800u64.to_le_bytes().to_vec();
        b.extend(u32s(&[SEL_POINTS, 1, 0, 0, 2, 2, 1, 2, 3, 4]));
        let region = parse_region(&ctx(), &b, 0).unwrap();
        assert_eq!(region, Region { object: 800, selection: Selection::Points { rank: 2, coords: vec![1, 2, 3, 4] } });
        let mut b = 800u64.to_le_bytes().to_vec();
        b.extend(u32s(&[SEL_HYPERSLABS, 1, 0, 0, 1, 1, 3, 5]));
        let region = parse_region(&ctx(), &b, 0).unwrap();
        assert_eq!(region.selection, Selection::Blocks { rank: 1, starts: vec![3], ends: vec![5] });
    }

    #[test]
    fn rejects_counts_beyond_the_bytes() {
        let mut b = 800u64.to_le_bytes().to_vec();
        b.extend(u32s(&[SEL_POINTS, 1, 0, 0, 2, u32::MAX]));
        assert!(parse_region(&ctx(), &b, 0).is_err());
        let mut b = 800u64.to_le_bytes().to_vec();
        b.extend(u32s(&[9, 1]));
        assert!(parse_region(&ctx(), &b, 0).is_err());
        assert!(parse_region(&ctx(), &b[..5], 0).is_err());
    }
}
