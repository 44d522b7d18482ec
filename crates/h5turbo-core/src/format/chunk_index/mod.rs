//! The chunk index of a chunked dataset: where each chunk's bytes are stored.
//!
//! [`read_chunk_index`] reads the whole index once (one read per node or block, no
//! per-chunk I/O) into an immutable [`ChunkIndex`] that many threads can query.
//! [`ChunkLookup`] finds a few chunks without it, for small selections.
//! Chunks are addressed by *scaled* coordinates (chunk units); chunks outside the
//! current dataset extent are dropped, unallocated chunks are absent (fill value).

mod btree1;
mod btree2;
mod extensible_array;
mod fixed_array;
mod grid;
mod implicit;
mod lookup;
mod single;

#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // for tests and fuzz targets
pub use btree2::{
    chunk_index_from_records, decode_chunk_record, ChunkRecordSource, RECORD_TYPE_FILTERED, RECORD_TYPE_UNFILTERED,
};

use super::context::FormatContext;
use super::layout::{ChunkIndexKind, ChunkedLayout};
use crate::error::{Error, Result};
use grid::Grid;
pub use lookup::{ChunkLookup, FoundChunks};

/// Where one chunk is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLocation {
    /// File address (relative to the HDF5 base address, like every other address).
    pub address: u64,
    /// Bytes stored in the file (after filtering).
    pub size: u64,
    /// Bit i set: filter i of the pipeline was skipped for this chunk.
    pub filter_mask: u32,
}

/// Marks an empty cell of the dense store (no real chunk can start at u64::MAX).
const EMPTY: ChunkLocation = ChunkLocation { address: u64::MAX, size: 0, filter_mask: 0 };

/// Largest current grid stored densely (cells x 24 bytes: 96 MiB at most).
const DENSE_MAX_CELLS: u64 = 4 << 20;

/// The chunks of one dataset. Immutable after construction, hence Send + Sync.
#[derive(Debug, Clone)]
pub struct ChunkIndex {
    grid: Grid,
    store: Store,
    len: usize,
    stored_bytes: u64,
}

#[derive(Debug, Clone)]
enum Store {
    /// One cell per chunk of the current grid, in row-major order.
    Dense(Vec<ChunkLocation>),
    /// Allocated chunks only, sorted by coordinates (row-major grid order).
    Sparse { coords: Vec<u64>, locations: Vec<ChunkLocation> },
    /// Implicit index: every chunk of the max-dims grid lies at a computed address.
    Implicit { address: u64, chunk_bytes: u64, max_grid: Grid },
}

impl ChunkIndex {
    /// Location of the chunk at `chunk_coords` (chunk units); `None` if it was never
    /// written, or the coordinates lie outside the current extent.
    pub fn get(&self, chunk_coords: &[u64]) -> Option<ChunkLocation> {
        if !self.grid.contains(chunk_coords) {
            return None;
        }
        match &self.store {
            Store::Dense(cells) => {
                let linear = self.grid.linear(chunk_coords)?;
                cells.get(usize::try_from(linear).ok()?).copied().filter(|c| *c != EMPTY)
            }
            Store::Sparse { coords, locations } => {
                let rank = self.grid.rank();
                let i = binary_search_coords(coords, rank, chunk_coords)?;
                locations.get(i).copied()
            }
            Store::Implicit { address, chunk_bytes, max_grid } => {
                let offset = max_grid.linear(chunk_coords)?.checked_mul(*chunk_bytes)?;
                Some(ChunkLocation { address: address.checked_add(offset)?, size: *chunk_bytes, filter_mask: 0 })
            }
        }
    }

    /// Number of allocated chunks inside the current extent.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Chunks per dimension of the current extent.
    pub fn grid_dims(&self) -> &[u64] {
        self.grid.dims()
    }

    /// Total bytes of all allocated chunks as stored.
    pub fn stored_bytes(&self) -> u64 {
        self.stored_bytes
    }

    /// Allocated chunks with their scaled coordinates, in row-major grid order.
    pub fn iter(&self) -> impl Iterator<Item = (Vec<u64>, ChunkLocation)> + Send + '_ {
        let iter: Box<dyn Iterator<Item = (Vec<u64>, ChunkLocation)> + Send + '_> = match &self.store {
            Store::Dense(cells) => Box::new(
                cells
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c != EMPTY)
                    .filter_map(move |(i, c)| Some((self.grid.coords(i as u64)?, *c))),
            ),
            Store::Sparse { coords, locations } => {
                let rank = self.grid.rank();
                Box::new(coords.chunks_exact(rank).map(<[u64]>::to_vec).zip(locations.iter().copied()))
            }
            Store::Implicit { .. } => Box::new(
                (0..self.grid.cells().unwrap_or(0))
                    .filter_map(move |i| self.grid.coords(i))
                    .filter_map(move |c| self.get(&c).map(|l| (c, l))),
            ),
        };
        iter
    }
}

fn binary_search_coords(coords: &[u64], rank: usize, key: &[u64]) -> Option<usize> {
    let n = coords.len() / rank;
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match coords[mid * rank..(mid + 1) * rank].cmp(key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// Read the chunk index of a chunked dataset.
///
/// `dims`: current dataset dims; `max_dims`: maximum dims (`u64::MAX` = unlimited);
/// `filtered`: the dataset has a filter pipeline (index entries then carry sizes and masks).
pub fn read_chunk_index(
    ctx: &FormatContext,
    layout: &ChunkedLayout,
    dims: &[u64],
    max_dims: &[u64],
    filtered: bool,
) -> Result<ChunkIndex> {
    let shape = IndexShape::new(layout, dims, max_dims, filtered)?;
    let mut sink = ChunkSink::new(ctx, shape.grid.clone()).with_edges(shape.unfiltered_edges.clone());
    let at = layout.index.address();
    let collected = match (&layout.index, at) {
        (_, None) => Ok(()),
        (ChunkIndexKind::Implicit { .. }, Some(address)) => return implicit::index(ctx, &shape, address),
        (ChunkIndexKind::BTreeV1 { .. }, Some(address)) => btree1::collect(ctx, &shape, address, &mut sink),
        (ChunkIndexKind::SingleChunk { filtered_size, filter_mask, .. }, Some(address)) => {
            single::collect(&shape, address, *filtered_size, *filter_mask, &mut sink)
        }
        (ChunkIndexKind::FixedArray { .. }, Some(address)) => fixed_array::collect(ctx, &shape, address, &mut sink),
        (ChunkIndexKind::ExtensibleArray { .. }, Some(address)) => {
            extensible_array::collect(ctx, &shape, address, &mut sink)
        }
        (ChunkIndexKind::BTreeV2 { .. }, Some(address)) => btree2::collect(ctx, &shape, address, &mut sink),
    };
    collected.and_then(|()| sink.finish()).map_err(|e| match at {
        Some(a) => e.at(a),
        None => e,
    })
}

/// What every index reader needs to know about the dataset.
pub(crate) struct IndexShape {
    pub chunk_dims: Vec<u64>,
    /// Chunks per dimension of the current extent.
    pub grid: Grid,
    pub max_dims: Vec<u64>,
    /// Bytes of an unfiltered chunk.
    pub chunk_bytes: u64,
    pub filtered: bool,
    /// Set when partial edge chunks are stored without the filter pipeline.
    pub unfiltered_edges: Option<UnfilteredEdges>,
}

/// Layout flag DONT_FILTER_PARTIAL_BOUND_CHUNKS (H5Pset_chunk_opts): chunks that
/// extend past the dataset's current extent in any dimension were written without
/// the filter pipeline. libhdf5 decides this from the geometry (the stored filter
/// mask says nothing), so the index marks such chunks as skipping every filter; every
/// read path (engine, reductions, decode benchmarks) then decodes them as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnfilteredEdges {
    dims: Vec<u64>,
    chunk_dims: Vec<u64>,
}

impl UnfilteredEdges {
    /// The rule for a dataset (`None` without the flag or without filters).
    fn new(layout: &ChunkedLayout, dims: &[u64], filtered: bool) -> Option<Self> {
        (filtered && layout.dont_filter_partial_edge_chunks)
            .then(|| UnfilteredEdges { dims: dims.to_vec(), chunk_dims: layout.chunk_dims.clone() })
    }

    /// Whether the chunk at scaled `coords` extends past the current extent
    /// (libhdf5's H5D__chunk_is_partial_edge_chunk).
    pub(crate) fn is_partial(&self, coords: &[u64]) -> bool {
        coords.iter().zip(&self.chunk_dims).zip(&self.dims).any(|((&c, &chunk), &dim)| {
            match c.checked_add(1).and_then(|n| n.checked_mul(chunk)) {
                Some(end) => end > dim,
                None => true,
            }
        })
    }

    /// `location` as the decoder must see it: every filter skipped for a partial chunk.
    pub(crate) fn apply(&self, coords: &[u64], location: ChunkLocation) -> ChunkLocation {
        if self.is_partial(coords) {
            ChunkLocation { filter_mask: u32::MAX, ..location }
        } else {
            location
        }
    }
}

impl IndexShape {
    pub(crate) fn new(layout: &ChunkedLayout, dims: &[u64], max_dims: &[u64], filtered: bool) -> Result<Self> {
        let rank = layout.chunk_dims.len();
        if dims.len() != rank || max_dims.len() != rank {
            return Err(Error::format(format!(
                "chunk rank {} does not match dataspace rank {} (max dims rank {})",
                rank,
                dims.len(),
                max_dims.len()
            )));
        }
        Ok(IndexShape {
            chunk_dims: layout.chunk_dims.clone(),
            grid: Grid::covering(dims, &layout.chunk_dims),
            max_dims: max_dims.to_vec(),
            chunk_bytes: layout.chunk_bytes()?,
            filtered,
            unfiltered_edges: UnfilteredEdges::new(layout, dims, filtered),
        })
    }

    pub fn rank(&self) -> usize {
        self.chunk_dims.len()
    }

    /// Chunks per dimension of the maximum extent; error if a dimension is unlimited.
    pub fn max_grid(&self, what: &str) -> Result<Grid> {
        if self.max_dims.contains(&u64::MAX) {
            return Err(Error::format(format!("{} index on a dataset with unlimited dimensions", what)));
        }
        Ok(Grid::covering(&self.max_dims, &self.chunk_dims))
    }
}

/// Collects chunk locations from an index reader, drops the ones outside the
/// current extent and builds the final store.
pub(crate) struct ChunkSink<'a> {
    ctx: &'a FormatContext,
    grid: Grid,
    coords: Vec<u64>,
    locations: Vec<ChunkLocation>,
    edges: Option<UnfilteredEdges>,
}

impl<'a> ChunkSink<'a> {
    pub(crate) fn new(ctx: &'a FormatContext, grid: Grid) -> Self {
        ChunkSink { ctx, grid, coords: Vec::new(), locations: Vec::new(), edges: None }
    }

    /// Mark partial edge chunks as unfiltered (see [`UnfilteredEdges`]).
    pub(crate) fn with_edges(self, edges: Option<UnfilteredEdges>) -> Self {
        ChunkSink { edges, ..self }
    }

    /// Record the chunk at scaled `coords`; the caller has checked `coords.len()`.
    pub fn add(&mut self, coords: &[u64], location: ChunkLocation) -> Result<()> {
        if !self.grid.contains(coords) {
            return Ok(()); // outside the current extent: not part of the dataset now
        }
        check_location(self.ctx, coords, location)?;
        let location = match &self.edges {
            Some(edges) => edges.apply(coords, location),
            None => location,
        };
        self.coords.extend_from_slice(coords);
        self.locations.push(location);
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<ChunkIndex> {
        let len = self.locations.len();
        let stored_bytes = self.locations.iter().try_fold(0u64, |acc, l| acc.checked_add(l.size));
        let stored_bytes = stored_bytes.ok_or_else(|| Error::format("total chunk bytes overflow 64 bits"))?;
        let dense_cells = self.grid.cells().filter(|&n| n <= DENSE_MAX_CELLS && n <= 8 * len as u64 + 4096);
        let store = match dense_cells {
            Some(cells) => self.into_dense(cells as usize)?,
            None => self.into_sparse()?,
        };
        let ChunkSinkResult { grid, store } = store;
        Ok(ChunkIndex { grid, store, len, stored_bytes })
    }

    fn duplicate(coords: &[u64]) -> Error {
        Error::format(format!("chunk index lists chunk {:?} twice", coords))
    }

    fn into_dense(self, cells: usize) -> Result<ChunkSinkResult> {
        let rank = self.grid.rank();
        let mut dense = vec![EMPTY; cells];
        for (coords, location) in self.coords.chunks_exact(rank).zip(&self.locations) {
            // add() accepted only coordinates inside the grid, so the slot exists.
            let slot = self.grid.linear(coords).and_then(|l| dense.get_mut(l as usize));
            let slot = slot.ok_or_else(|| Error::format(format!("chunk {:?} outside the grid", coords)))?;
            if *slot != EMPTY {
                return Err(Self::duplicate(coords));
            }
            *slot = *location;
        }
        Ok(ChunkSinkResult { grid: self.grid, store: Store::Dense(dense) })
    }

    fn into_sparse(self) -> Result<ChunkSinkResult> {
        let rank = self.grid.rank();
        let key = |i: usize| &self.coords[i * rank..(i + 1) * rank];
        let n = self.locations.len();
        // Most indexes already deliver chunks in grid order: then no sort is needed.
        if (1..n).all(|i| key(i - 1) < key(i)) {
            return Ok(ChunkSinkResult {
                grid: self.grid,
                store: Store::Sparse { coords: self.coords, locations: self.locations },
            });
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
        if let Some(w) = order.windows(2).find(|w| key(w[0]) == key(w[1])) {
            return Err(Self::duplicate(key(w[0])));
        }
        let coords = order.iter().flat_map(|&i| key(i).iter().copied()).collect();
        let locations = order.iter().map(|&i| self.locations[i]).collect();
        Ok(ChunkSinkResult { grid: self.grid, store: Store::Sparse { coords, locations } })
    }
}

/// A chunk must have stored bytes, all inside the file.
pub(crate) fn check_location(ctx: &FormatContext, coords: &[u64], location: ChunkLocation) -> Result<()> {
    if location.size == 0 {
        return Err(Error::format(format!("chunk {:?} has a stored size of 0", coords)).at(location.address));
    }
    if ctx.available_from(location.address) < location.size {
        return Err(Error::format(format!(
            "chunk {:?} of {} bytes at address {} extends past the end of the file",
            coords, location.size, location.address
        ))
        .at(location.address));
    }
    Ok(())
}

struct ChunkSinkResult {
    grid: Grid,
    store: Store,
}

/// Receives (element index, element bytes, element file address) from array readers.
pub(crate) type ElementSink<'a> = dyn FnMut(u64, &[u8], u64) -> Result<()> + 'a;

/// Address, size and filter mask of one index element (fixed/extensible array
/// element, v2 B-tree record prefix). `size_bytes` is 0 for unfiltered elements.
pub(crate) fn read_element(
    r: &mut super::reader::ByteReader,
    size_bytes: usize,
    chunk_bytes: u64,
) -> Result<Option<ChunkLocation>> {
    let address = r.address_field()?;
    let (size, filter_mask) = if size_bytes > 0 { (r.uint(size_bytes)?, r.u32()?) } else { (chunk_bytes, 0) };
    Ok(address.map(|address| ChunkLocation { address, size, filter_mask }))
}

/// Bytes of the chunk-size field of a filtered element of `element_size` bytes
/// (address + size + 4-byte mask). Taken from the structure itself: HDF5 1.10
/// sizes it from the chunk byte count, layout version 5 (HDF5 2.0) may widen it.
pub(crate) fn filtered_size_bytes(element_size: usize, offset_size: usize, extra: usize) -> Result<usize> {
    element_size
        .checked_sub(offset_size + 4 + extra)
        .filter(|n| (1..=8).contains(n))
        .ok_or_else(|| {
            Error::format(format!(
                "filtered chunk entry of {} bytes cannot hold an address, a size and a mask",
                element_size
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<ChunkIndex>();
    }

    fn sink_ctx() -> FormatContext {
        let source = crate::io::MemSource::new(vec![0u8; 10_000]);
        FormatContext::new(std::sync::Arc::new(source), std::path::Path::new("mem"), super::super::Sizes::DEFAULT, 0)
    }

    fn loc(address: u64) -> ChunkLocation {
        ChunkLocation { address, size: 10, filter_mask: 0 }
    }

    fn collect(grid: Vec<u64>, chunks: &[(&[u64], ChunkLocation)]) -> Result<ChunkIndex> {
        let ctx = sink_ctx();
        let mut sink = ChunkSink::new(&ctx, Grid::new(grid));
        for (coords, location) in chunks {
            sink.add(coords, *location)?;
        }
        sink.finish()
    }

    #[test]
    fn sparse_store_sorts_and_finds() {
        let chunks: [(&[u64], ChunkLocation); 4] =
            [(&[900, 3], loc(100)), (&[2, 999], loc(200)), (&[2, 5], loc(300)), (&[1000, 0], loc(400))];
        let index = collect(vec![1000, 1000], &chunks).unwrap();
        assert!(matches!(index.store, Store::Sparse { .. }));
        assert_eq!(index.len(), 3, "the chunk outside the extent is dropped");
        assert_eq!(index.stored_bytes(), 30);
        let order: Vec<Vec<u64>> = index.iter().map(|(c, _)| c).collect();
        assert_eq!(order, vec![vec![2, 5], vec![2, 999], vec![900, 3]]);
        assert_eq!(index.get(&[2, 999]), Some(loc(200)));
        assert_eq!(index.get(&[2, 998]), None);
        assert_eq!(index.get(&[1000, 0]), None);
    }

    #[test]
    fn dense_store_and_bad_chunks() {
        let chunks: [(&[u64], ChunkLocation); 2] = [(&[1, 1], loc(100)), (&[0, 2], loc(200))];
        let index = collect(vec![2, 3], &chunks).unwrap();
        assert!(matches!(index.store, Store::Dense(_)));
        assert_eq!(index.iter().map(|(c, _)| c).collect::<Vec<_>>(), vec![vec![0, 2], vec![1, 1]]);
        assert_eq!(index.get(&[0, 0]), None);
        let twice: [(&[u64], ChunkLocation); 2] = [(&[1, 1], loc(100)), (&[1, 1], loc(200))];
        assert!(collect(vec![2, 3], &twice).is_err());
        assert!(collect(vec![5000, 5000], &twice).is_err());
        let past_end = ChunkLocation { address: 9995, size: 10, filter_mask: 0 };
        assert!(collect(vec![2, 3], &[(&[0, 0], past_end)]).is_err());
        let empty = ChunkLocation { address: 5, size: 0, filter_mask: 0 };
        assert!(collect(vec![2, 3], &[(&[0, 0], empty)]).is_err());
    }

    #[test]
    fn binary_search_finds_rows() {
        let coords = [0, 1, 0, 5, 2, 0, 3, 3];
        assert_eq!(binary_search_coords(&coords, 2, &[2, 0]), Some(2));
        assert_eq!(binary_search_coords(&coords, 2, &[3, 3]), Some(3));
        assert_eq!(binary_search_coords(&coords, 2, &[1, 0]), None);
    }
}
