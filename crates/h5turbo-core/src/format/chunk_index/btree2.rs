//! Version-2 B-tree chunk index (layout v4+, several unlimited dimensions): records
//! of type 10 (unfiltered: address, scaled offsets) and 11 (filtered: address,
//! stored size, filter mask, scaled offsets), per H5Dbtree2.c. Scaled offsets are
//! 8 bytes per dataset dimension.
//!
//! The tree walk itself belongs to `format::btree_v2`; this module only decodes
//! records, through [`ChunkRecordSource`] so that it does not depend on how the
//! tree is traversed.

use super::super::btree_v2::{BTreeV2, NodeCache, Record};
use super::super::context::FormatContext;
use super::super::reader::{Located, Sizes};
use super::fixed_array::element_layout;
use super::{read_element, ChunkIndex, ChunkLocation, ChunkSink, IndexShape};
use crate::error::{Error, Result};

pub const RECORD_TYPE_UNFILTERED: u8 = 10;
pub const RECORD_TYPE_FILTERED: u8 = 11;

/// Raw records of a v2 B-tree in key order (what `format::btree_v2::BTreeV2` offers).
pub trait ChunkRecordSource {
    fn record_type(&self) -> u8;
    fn record_size(&self) -> usize;
    fn for_each_record(&self, ctx: &FormatContext, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()>;

    /// As `for_each_record`, each record with its file address (errors name it). A
    /// source that does not know where its records lie (a test's own tree walker)
    /// places them at address 0.
    fn for_each_located_record(&self, ctx: &FormatContext, f: &mut dyn FnMut(Record<'_>) -> Result<()>) -> Result<()> {
        self.for_each_record(ctx, &mut |bytes| f(Located::at(0, bytes)))
    }
}

impl ChunkRecordSource for BTreeV2 {
    fn record_type(&self) -> u8 {
        BTreeV2::record_type(self)
    }
    fn record_size(&self) -> usize {
        BTreeV2::record_size(self)
    }
    fn for_each_record(&self, ctx: &FormatContext, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        BTreeV2::for_each_record(self, ctx, f)
    }
    fn for_each_located_record(&self, ctx: &FormatContext, f: &mut dyn FnMut(Record<'_>) -> Result<()>) -> Result<()> {
        BTreeV2::for_each_located_record(self, ctx, f)
    }
}

fn open_tree(ctx: &FormatContext, address: u64) -> Result<Box<dyn ChunkRecordSource>> {
    Ok(Box::new(BTreeV2::open(ctx, address)?))
}

pub(super) fn collect(ctx: &FormatContext, shape: &IndexShape, address: u64, sink: &mut ChunkSink) -> Result<()> {
    let tree = open_tree(ctx, address)?;
    collect_records(ctx, shape, tree.as_ref(), sink)
}

fn collect_records(
    ctx: &FormatContext,
    shape: &IndexShape,
    tree: &dyn ChunkRecordSource,
    sink: &mut ChunkSink,
) -> Result<()> {
    let decoder = RecordDecoder::new(ctx.sizes(), tree.record_type(), tree.record_size(), shape)?;
    tree.for_each_located_record(ctx, &mut |record| {
        let (coords, location) = decoder.decode(record)?;
        sink.add(&coords, location).map_err(|e| e.at(record.address()))
    })
}

#[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
/// Build a chunk index from the records of an opened v2 B-tree.
pub fn chunk_index_from_records(
    ctx: &FormatContext,
    layout: &super::super::layout::ChunkedLayout,
    dims: &[u64],
    max_dims: &[u64],
    filtered: bool,
    tree: &dyn ChunkRecordSource,
) -> Result<ChunkIndex> {
    let shape = IndexShape::new(layout, dims, max_dims, filtered)?;
    let mut sink = ChunkSink::new(ctx, shape.grid.clone()).with_edges(shape.unfiltered_edges.clone());
    collect_records(ctx, &shape, tree, &mut sink)?;
    sink.finish()
}

#[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
/// Decode one type-10/11 record of a dataset of rank `rank` (`chunk_bytes`: size of
/// an unfiltered chunk). `None` location: the record names no allocated chunk.
pub fn decode_chunk_record(
    record: &[u8],
    record_type: u8,
    sizes: Sizes,
    rank: usize,
    chunk_bytes: u64,
) -> Result<(Vec<u64>, Option<ChunkLocation>)> {
    decode_located_chunk_record(Located::at(0, record), record_type, sizes, rank, chunk_bytes)
}

/// As `decode_chunk_record`, errors naming the record's place in the file.
fn decode_located_chunk_record(
    record: Record<'_>,
    record_type: u8,
    sizes: Sizes,
    rank: usize,
    chunk_bytes: u64,
) -> Result<(Vec<u64>, Option<ChunkLocation>)> {
    let size_bytes = record_size_bytes(record_type, record.len(), sizes, rank).map_err(|e| e.at(record.address()))?;
    let mut r = record.reader(sizes);
    let location = read_element(&mut r, size_bytes, chunk_bytes)?;
    let coords = (0..rank).map(|_| r.u64()).collect::<Result<Vec<u64>>>()?;
    Ok((coords, location))
}

fn record_size_bytes(record_type: u8, record_size: usize, sizes: Sizes, rank: usize) -> Result<usize> {
    let client = match record_type {
        RECORD_TYPE_UNFILTERED => 0,
        RECORD_TYPE_FILTERED => 1,
        t => return Err(Error::format(format!("v2 B-tree record type {} is not a chunk record (10 or 11)", t))),
    };
    let filtered = record_type == RECORD_TYPE_FILTERED;
    element_layout(client, filtered, record_size, sizes.offset as usize, 8 * rank)
}

struct RecordDecoder {
    sizes: Sizes,
    record_type: u8,
    rank: usize,
    chunk_bytes: u64,
}

impl RecordDecoder {
    fn new(sizes: Sizes, record_type: u8, record_size: usize, shape: &IndexShape) -> Result<Self> {
        let size_bytes = record_size_bytes(record_type, record_size, sizes, shape.rank())?;
        if (size_bytes > 0) != shape.filtered {
            return Err(Error::format(format!(
                "v2 B-tree chunk records of type {} do not match the dataset's filter pipeline",
                record_type
            )));
        }
        Ok(RecordDecoder { sizes, record_type, rank: shape.rank(), chunk_bytes: shape.chunk_bytes })
    }

    fn decode(&self, record: Record<'_>) -> Result<(Vec<u64>, ChunkLocation)> {
        let at = record.address();
        let (coords, location) =
            decode_located_chunk_record(record, self.record_type, self.sizes, self.rank, self.chunk_bytes)?;
        let location =
            location.ok_or_else(|| Error::format("v2 B-tree chunk record has an undefined address").at(at))?;
        Ok((coords, location))
    }
}

/// Finds one chunk by the tree's own descent: records are ordered by their scaled
/// coordinates (H5Dbtree2.c compares them row-major).
pub(super) struct Lookup {
    tree: BTreeV2,
    decoder: RecordDecoder,
    nodes: NodeCache,
}

impl Lookup {
    pub(super) fn new(ctx: &FormatContext, shape: &IndexShape, address: u64) -> Result<Self> {
        let tree = BTreeV2::open(ctx, address)?;
        let decoder = RecordDecoder::new(ctx.sizes(), tree.record_type(), tree.record_size(), shape)?;
        Ok(Lookup { tree, decoder, nodes: NodeCache::new() })
    }

    pub(super) fn find(&self, ctx: &FormatContext, coords: &[u64]) -> Result<Option<ChunkLocation>> {
        let rank = self.decoder.rank;
        let mut compare = |record: Record<'_>| {
            // The scaled coordinates end the record (its size was checked on opening).
            let tail = record.len().checked_sub(8 * rank).and_then(|start| record.get(start..));
            let tail = tail.ok_or_else(|| Error::format("v2 B-tree chunk record too short").at(record.address()))?;
            let scaled = tail.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
            Ok(scaled.cmp(coords.iter().copied()))
        };
        let record = self.tree.find_record_cached(ctx, &mut compare, &self.nodes)?;
        record.map(|record| self.decoder.decode(record.view()).map(|(_, location)| location)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filtered_record_round_trip() {
        let mut rec = 4096u64.to_le_bytes().to_vec();
        rec.extend_from_slice(&[0x34, 0x12]); // 2-byte size
        rec.extend_from_slice(&5u32.to_le_bytes());
        rec.extend_from_slice(&3u64.to_le_bytes());
        rec.extend_from_slice(&7u64.to_le_bytes());
        let (coords, loc) = decode_chunk_record(&rec, RECORD_TYPE_FILTERED, Sizes::DEFAULT, 2, 48).unwrap();
        assert_eq!(coords, vec![3, 7]);
        assert_eq!(loc, Some(ChunkLocation { address: 4096, size: 0x1234, filter_mask: 5 }));
        // Type 10 of the same length does not fit an address plus two offsets.
        assert!(decode_chunk_record(&rec, RECORD_TYPE_UNFILTERED, Sizes::DEFAULT, 2, 48).is_err());
        assert!(decode_chunk_record(&rec, 3, Sizes::DEFAULT, 2, 48).is_err());
        assert!(decode_chunk_record(&rec[..20], RECORD_TYPE_FILTERED, Sizes::DEFAULT, 2, 48).is_err());
    }
}
