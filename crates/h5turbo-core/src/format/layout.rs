//! Data layout message (type 0x0008): where a dataset's raw data lives.
//!
//! Versions 1 and 2 (HDF5 1.4 and older) store a common header for all classes;
//! version 3 adds class-specific bodies; version 4 (HDF5 1.10) adds the new chunk
//! indexes and virtual datasets; version 5 (HDF5 2.0) has the same bytes as
//! version 4 — it only widens the filtered-chunk size fields *inside* the chunk
//! index structures, which the index readers take from those structures' own
//! element/record sizes, so it needs no special case here.

use super::reader::{ByteReader, Sizes};
use crate::error::{Error, Result};

/// Largest chunk rank HDF5 allows (H5O_LAYOUT_NDIMS = 32 dataset dims + 1 element dim).
const MAX_LAYOUT_DIMS: usize = 33;

const CLASS_COMPACT: u8 = 0;
const CLASS_CONTIGUOUS: u8 = 1;
const CLASS_CHUNKED: u8 = 2;
const CLASS_VIRTUAL: u8 = 3;

/// Version-4 chunked layout flag: partial edge chunks are stored unfiltered.
const FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS: u8 = 0x01;
/// Version-4 chunked layout flag: the single-chunk index records a filtered size and mask.
const FLAG_SINGLE_INDEX_WITH_FILTER: u8 = 0x02;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Raw data stored inside the object header.
    Compact { data: Vec<u8> },
    /// One block of raw data; `address` is `None` when storage was never allocated.
    /// For message versions 1 and 2 `size` is the product of the stored dimensions
    /// (which HDF5 stored as 32-bit values): callers should prefer dataspace x element size.
    Contiguous { address: Option<u64>, size: u64 },
    Chunked(ChunkedLayout),
    /// A virtual dataset: its mappings are the global heap object named here (see
    /// `format::vds`); no address when it has no mappings (an empty VirtualLayout:
    /// every element is the fill value).
    Virtual { heap_address: Option<u64>, heap_index: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedLayout {
    /// Chunk extent in elements per dataset dimension (without the element-size dimension).
    pub chunk_dims: Vec<u64>,
    /// Size in bytes of one dataset element, as recorded in the layout.
    pub element_size: u64,
    pub index: ChunkIndexKind,
    /// Version-4 flag: the single-chunk index stores a filtered size and filter mask.
    pub single_index_with_filter: bool,
    /// Version-4 flag: partial edge chunks were written without the filter pipeline.
    pub dont_filter_partial_edge_chunks: bool,
    /// Layout message version (1 to 5).
    pub version: u8,
}

impl ChunkedLayout {
    /// Bytes of one unfiltered chunk (product of chunk dims and element size).
    pub fn chunk_bytes(&self) -> Result<u64> {
        self.chunk_dims
            .iter()
            .try_fold(self.element_size, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| Error::format("chunk byte size overflows 64 bits"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkIndexKind {
    /// Version-1 B-tree of chunks (layout versions 1 to 3).
    BTreeV1 { address: Option<u64> },
    /// Exactly one chunk covering the whole dataset.
    SingleChunk { address: Option<u64>, filtered_size: Option<u64>, filter_mask: u32 },
    /// No index: chunks lie back to back from `address`, in max-dims grid order.
    Implicit { address: Option<u64> },
    FixedArray { address: Option<u64>, page_bits: u8 },
    ExtensibleArray {
        address: Option<u64>,
        max_bits: u8,
        index_elements: u8,
        min_pointers: u8,
        min_elements: u8,
        page_bits: u8,
    },
    BTreeV2 { address: Option<u64>, node_size: u32, split_percent: u8, merge_percent: u8 },
}

impl ChunkIndexKind {
    /// Address of the index structure (or of the data, for single/implicit).
    pub fn address(&self) -> Option<u64> {
        match *self {
            ChunkIndexKind::BTreeV1 { address }
            | ChunkIndexKind::SingleChunk { address, .. }
            | ChunkIndexKind::Implicit { address }
            | ChunkIndexKind::FixedArray { address, .. }
            | ChunkIndexKind::ExtensibleArray { address, .. }
            | ChunkIndexKind::BTreeV2 { address, .. } => address,
        }
    }
}

impl Layout {
    /// Parse a layout message body that was read from file address `address`.
    pub fn parse(data: &[u8], address: u64, sizes: Sizes) -> Result<Layout> {
        let mut r = ByteReader::new(data, address, sizes);
        let version = r.u8()?;
        match version {
            1 | 2 => parse_v1_v2(&mut r, version),
            3..=5 => parse_v3_to_v5(&mut r, version),
            v => Err(Error::unsupported(format!("data layout message version {} (known: 1 to 5)", v)).at(address)),
        }
    }
}

fn parse_v1_v2(r: &mut ByteReader, version: u8) -> Result<Layout> {
    let ndims = r.u8()? as usize;
    if ndims == 0 || ndims > MAX_LAYOUT_DIMS {
        return Err(r.error(format!("data layout has {} dimensions (1 to {} allowed)", ndims, MAX_LAYOUT_DIMS)));
    }
    let class = r.u8()?;
    r.skip(5)?;
    let address = match class {
        CLASS_CONTIGUOUS | CLASS_CHUNKED => r.address_field()?,
        _ => None,
    };
    let dims = (0..ndims).map(|_| r.u32().map(u64::from)).collect::<Result<Vec<u64>>>()?;
    match class {
        CLASS_COMPACT => {
            let size = r.u32()? as usize;
            Ok(Layout::Compact { data: r.bytes(size)?.to_vec() })
        }
        CLASS_CONTIGUOUS => {
            let size = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
            let size = size.ok_or_else(|| r.error("contiguous data size overflows 64 bits"))?;
            Ok(Layout::Contiguous { address, size })
        }
        CLASS_CHUNKED => {
            chunked_from_dims(r, dims, ChunkIndexKind::BTreeV1 { address }, 0, version)
        }
        c => Err(r.error(format!("data layout class {} is not valid in message version {}", c, version))),
    }
}

fn parse_v3_to_v5(r: &mut ByteReader, version: u8) -> Result<Layout> {
    let class = r.u8()?;
    match class {
        CLASS_COMPACT => {
            let size = r.u16()? as usize;
            Ok(Layout::Compact { data: r.bytes(size)?.to_vec() })
        }
        CLASS_CONTIGUOUS => {
            let address = r.address_field()?;
            let size = r.length()?;
            Ok(Layout::Contiguous { address, size })
        }
        CLASS_CHUNKED if version == 3 => parse_chunked_v3(r),
        CLASS_CHUNKED => parse_chunked_v4(r, version),
        CLASS_VIRTUAL if version >= 4 => {
            let heap_address = r.address_field()?;
            let heap_index = r.u32()?;
            Ok(Layout::Virtual { heap_address, heap_index })
        }
        c => Err(r.error(format!("data layout class {} is not valid in message version {}", c, version))),
    }
}

fn read_ndims(r: &mut ByteReader) -> Result<usize> {
    let ndims = r.u8()? as usize;
    // At least one dataset dimension plus the element-size dimension.
    if !(2..=MAX_LAYOUT_DIMS).contains(&ndims) {
        return Err(r.error(format!("chunked layout has {} dimensions (2 to {} allowed)", ndims, MAX_LAYOUT_DIMS)));
    }
    Ok(ndims)
}

fn parse_chunked_v3(r: &mut ByteReader) -> Result<Layout> {
    let ndims = read_ndims(r)?;
    let address = r.address_field()?;
    let dims = (0..ndims).map(|_| r.u32().map(u64::from)).collect::<Result<Vec<u64>>>()?;
    chunked_from_dims(r, dims, ChunkIndexKind::BTreeV1 { address }, 0, 3)
}

fn parse_chunked_v4(r: &mut ByteReader, version: u8) -> Result<Layout> {
    let flags = r.u8()?;
    if flags & !(FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS | FLAG_SINGLE_INDEX_WITH_FILTER) != 0 {
        return Err(r.error(format!("unknown chunked layout flags {:#04x}", flags)));
    }
    let ndims = read_ndims(r)?;
    let dim_bytes = r.u8()? as usize;
    if !(1..=8).contains(&dim_bytes) {
        return Err(r.error(format!("chunk dimensions encoded in {} bytes (1 to 8 allowed)", dim_bytes)));
    }
    let dims = (0..ndims).map(|_| r.uint(dim_bytes)).collect::<Result<Vec<u64>>>()?;
    let index = parse_index_kind(r, flags)?;
    chunked_from_dims(r, dims, index, flags, version)
}

fn parse_index_kind(r: &mut ByteReader, flags: u8) -> Result<ChunkIndexKind> {
    let at = r.address();
    let index_type = r.u8()?;
    let kind = match index_type {
        1 => {
            let (filtered_size, filter_mask) = if flags & FLAG_SINGLE_INDEX_WITH_FILTER != 0 {
                (Some(r.length()?), r.u32()?)
            } else {
                (None, 0)
            };
            ChunkIndexKind::SingleChunk { address: r.address_field()?, filtered_size, filter_mask }
        }
        2 => ChunkIndexKind::Implicit { address: r.address_field()? },
        3 => {
            let page_bits = r.u8()?;
            ChunkIndexKind::FixedArray { page_bits, address: r.address_field()? }
        }
        4 => {
            let [max_bits, index_elements, min_pointers, min_elements, page_bits] = r.array::<5>()?;
            ChunkIndexKind::ExtensibleArray {
                max_bits,
                index_elements,
                min_pointers,
                min_elements,
                page_bits,
                address: r.address_field()?,
            }
        }
        5 => {
            let node_size = r.u32()?;
            let split_percent = r.u8()?;
            let merge_percent = r.u8()?;
            ChunkIndexKind::BTreeV2 { node_size, split_percent, merge_percent, address: r.address_field()? }
        }
        t => return Err(Error::format(format!("unknown chunk index type {}", t)).at(at)),
    };
    Ok(kind)
}

/// Largest chunk read: HDF5 before 2.0 writes no larger one (its chunk sizes were
/// 32-bit); HDF5 2.0 does, and h5turbo does not read those yet.
const MAX_CHUNK_BYTES: u64 = u32::MAX as u64;

fn chunked_from_dims(
    r: &ByteReader,
    mut dims: Vec<u64>,
    index: ChunkIndexKind,
    flags: u8,
    version: u8,
) -> Result<Layout> {
    // The last layout dimension is the element size, not a dataset dimension.
    let element_size = dims.pop().unwrap_or(0);
    if element_size == 0 || dims.is_empty() || dims.contains(&0) {
        return Err(r.error(format!(
            "chunked layout has a zero extent (chunk dims {:?}, element size {})",
            dims, element_size
        )));
    }
    let layout = ChunkedLayout {
        chunk_dims: dims,
        element_size,
        index,
        single_index_with_filter: flags & FLAG_SINGLE_INDEX_WITH_FILTER != 0,
        dont_filter_partial_edge_chunks: flags & FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS != 0,
        version,
    };
    let bytes = layout.chunk_bytes().map_err(|e| e.at(r.address()))?;
    // A larger chunk would size every decode buffer of the read: valid from HDF5 2.0
    // on, but not read (a message damaged into one says the same, naming its size).
    if bytes > MAX_CHUNK_BYTES {
        return Err(Error::unsupported(format!(
            "chunks of {} bytes (dims {:?}, element size {}): chunks over 4 GiB (written by HDF5 2.0 and later) are not read",
            bytes, layout.chunk_dims, layout.element_size
        ))
        .at(r.address()));
    }
    Ok(Layout::Chunked(layout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s() -> Sizes {
        Sizes::DEFAULT
    }

    #[test]
    fn contiguous_v3() {
        let mut m = vec![3u8, 1];
        m.extend_from_slice(&4096u64.to_le_bytes());
        m.extend_from_slice(&48u64.to_le_bytes());
        assert_eq!(Layout::parse(&m, 0, s()).unwrap(), Layout::Contiguous { address: Some(4096), size: 48 });
        m[2..10].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Layout::parse(&m, 0, s()).unwrap(), Layout::Contiguous { address: None, size: 48 });
    }

    #[test]
    fn compact_v3_checks_size() {
        let m = vec![3u8, 0, 3, 0, 1, 2, 3];
        assert_eq!(Layout::parse(&m, 0, s()).unwrap(), Layout::Compact { data: vec![1, 2, 3] });
        assert!(Layout::parse(&m[..6], 0, s()).is_err());
    }

    #[test]
    fn chunked_v4_extensible_array() {
        // flags 0, 3 dims in 2 bytes each, EA params, address.
        let mut m = vec![4u8, 2, 0, 3, 2, 10, 0, 4, 0, 4, 0, 4, 32, 4, 4, 16, 10];
        m.extend_from_slice(&777u64.to_le_bytes());
        let Layout::Chunked(c) = Layout::parse(&m, 0, s()).unwrap() else { panic!("not chunked") };
        assert_eq!(c.chunk_dims, vec![10, 4]);
        assert_eq!(c.element_size, 4);
        assert_eq!(
            c.index,
            ChunkIndexKind::ExtensibleArray {
                address: Some(777),
                max_bits: 32,
                index_elements: 4,
                min_pointers: 4,
                min_elements: 16,
                page_bits: 10
            }
        );
    }

    #[test]
    fn chunked_rejects_zero_dims_and_bad_index() {
        let mut m = vec![4u8, 2, 0, 2, 1, 0, 4, 2];
        m.extend_from_slice(&777u64.to_le_bytes());
        assert!(Layout::parse(&m, 0, s()).is_err());
        m[5] = 5;
        assert!(Layout::parse(&m, 0, s()).is_ok());
        m[7] = 9;
        assert!(Layout::parse(&m, 0, s()).is_err());
        assert_eq!(Layout::parse(&[6u8, 1], 0, s()).unwrap_err().kind(), crate::ErrorKind::Unsupported);
    }

    #[test]
    fn chunked_rejects_chunks_over_4_gib() {
        // v4, 3 dims in 4 bytes: 65536 x 65536 chunks of 4-byte elements (16 GiB).
        let mut m = vec![4u8, 2, 0, 3, 4];
        for d in [65536u32, 65536, 4] {
            m.extend_from_slice(&d.to_le_bytes());
        }
        m.push(2); // implicit index
        m.extend_from_slice(&777u64.to_le_bytes());
        let e = Layout::parse(&m, 0, s()).unwrap_err();
        assert!(e.to_string().contains("over 4 GiB"), "{}", e);
        // valid from HDF5 2.0 on: not read, not called a broken file
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
        m[9..13].copy_from_slice(&1u32.to_le_bytes());
        assert!(Layout::parse(&m, 0, s()).is_ok());
    }
}
