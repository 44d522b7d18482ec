//! Finding a few chunks without reading the whole index. A small selection of a
//! dataset with a large index (one row of a dataset of 200,000 chunks) reads only the
//! index nodes or pages on the way to its chunks, as libhdf5 does; whole reads still
//! load the index once ([`super::read_chunk_index`]), which is then kept.

use super::super::context::FormatContext;
use super::super::layout::{ChunkIndexKind, ChunkedLayout};
use super::{binary_search_coords, btree1, btree2, check_location, extensible_array, fixed_array, ChunkLocation, IndexShape};
use crate::error::Result;

/// Finds chunks one at a time in an index too large to read whole for a few chunks.
pub struct ChunkLookup {
    shape: IndexShape,
    kind: Kind,
}

enum Kind {
    BTreeV1(btree1::Lookup),
    BTreeV2(btree2::Lookup),
    FixedArray(Box<fixed_array::Lookup>),
    ExtensibleArray(Box<extensible_array::Lookup>),
}

impl Kind {
    fn open(ctx: &FormatContext, index: &ChunkIndexKind, shape: &IndexShape, address: u64) -> Result<Option<Kind>> {
        Ok(Some(match index {
            ChunkIndexKind::BTreeV1 { .. } => Kind::BTreeV1(btree1::Lookup::new(address)),
            ChunkIndexKind::BTreeV2 { .. } => Kind::BTreeV2(btree2::Lookup::new(ctx, shape, address)?),
            ChunkIndexKind::FixedArray { .. } => Kind::FixedArray(Box::new(fixed_array::Lookup::new(ctx, shape, address)?)),
            ChunkIndexKind::ExtensibleArray { .. } => {
                Kind::ExtensibleArray(Box::new(extensible_array::Lookup::new(ctx, shape, address)?))
            }
            ChunkIndexKind::SingleChunk { .. } | ChunkIndexKind::Implicit { .. } => return Ok(None),
        }))
    }
}

impl ChunkLookup {
    /// `None` when the index is small by construction (single chunk, implicit) or
    /// holds nothing yet.
    pub fn new(
        ctx: &FormatContext,
        layout: &ChunkedLayout,
        dims: &[u64],
        max_dims: &[u64],
        filtered: bool,
    ) -> Result<Option<Self>> {
        let shape = IndexShape::new(layout, dims, max_dims, filtered)?;
        let Some(address) = layout.index.address() else { return Ok(None) };
        let kind = Kind::open(ctx, &layout.index, &shape, address).map_err(|e| e.at(address))?;
        Ok(kind.map(|kind| ChunkLookup { shape, kind }))
    }

    /// Every chunk of the grid `per_axis` spans (chunk numbers per axis, increasing)
    /// that is stored; absent ones read as the fill value.
    pub fn find_all(&self, ctx: &FormatContext, per_axis: &[Vec<u64>]) -> Result<FoundChunks> {
        let rank = self.shape.rank();
        let mut found = FoundChunks { rank, coords: Vec::new(), locations: Vec::new() };
        if per_axis.len() != rank || per_axis.iter().any(Vec::is_empty) {
            return Ok(found);
        }
        let mut at = vec![0usize; rank];
        let mut coords = vec![0u64; rank];
        loop {
            for d in 0..rank {
                coords[d] = per_axis[d][at[d]];
            }
            if let Some(location) = self.find(ctx, &coords)? {
                check_location(ctx, &coords, location)?;
                found.coords.extend_from_slice(&coords);
                found.locations.push(location);
            }
            // Row-major odometer: the last axis moves fastest, so coordinates stay sorted.
            let Some(d) = (0..rank).rev().find(|&d| at[d] + 1 < per_axis[d].len()) else { break };
            at[d] += 1;
            at[d + 1..].fill(0);
        }
        Ok(found)
    }

    /// The chunk at `coords`; `None` if it was never written.
    pub fn find(&self, ctx: &FormatContext, coords: &[u64]) -> Result<Option<ChunkLocation>> {
        if !self.shape.grid.contains(coords) {
            return Ok(None);
        }
        let found = match &self.kind {
            Kind::BTreeV1(tree) => tree.find(ctx, &self.shape, coords),
            Kind::BTreeV2(tree) => tree.find(ctx, coords),
            Kind::FixedArray(array) => array.find(ctx, &self.shape, coords),
            Kind::ExtensibleArray(array) => array.find(ctx, &self.shape, coords),
        }?;
        // partial edge chunks stored unfiltered: as the whole-index read marks them
        Ok(match (&self.shape.unfiltered_edges, found) {
            (Some(edges), Some(location)) => Some(edges.apply(coords, location)),
            _ => found,
        })
    }
}

/// The stored chunks among those a read asked [`ChunkLookup::find_all`] for, sorted
/// by coordinates. Only the chunks asked for: any other reads as absent.
#[derive(Debug)]
pub struct FoundChunks {
    rank: usize,
    coords: Vec<u64>,
    locations: Vec<ChunkLocation>,
}

impl FoundChunks {
    pub fn get(&self, coords: &[u64]) -> Option<ChunkLocation> {
        if coords.len() != self.rank || self.rank == 0 {
            return None;
        }
        binary_search_coords(&self.coords, self.rank, coords).and_then(|i| self.locations.get(i).copied())
    }
}
