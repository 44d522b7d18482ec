//! Where a dataset's chunks lie in the file, as libhdf5 reports them
//! (H5Dget_chunk_info, H5Dchunk_iter, H5Dread_chunk; h5py's `get_chunk_info`,
//! `chunk_iter`, `read_direct_chunk`). Tools that index HDF5 files for other readers
//! (kerchunk, VirtualiZarr) ask exactly this, and read the stored bytes themselves.

use super::{Dataset, File, Object};
use crate::error::{Error, Result};
use crate::format::chunk_index::ChunkLocation;
use crate::format::layout::{ChunkIndexKind, Layout};
use std::cmp::Ordering;

/// One allocated chunk: its first element, the filters it skipped and where its
/// stored (filtered) bytes lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Coordinates of the chunk's first element, per dimension.
    pub offset: Vec<u64>,
    /// Bit i set: filter i of the pipeline was not applied to this chunk.
    pub filter_mask: u32,
    /// Byte position in the file (absolute: a user block before the HDF5 data counted).
    pub file_offset: u64,
    /// Bytes stored.
    pub size: u64,
}

impl Dataset {
    /// Every allocated chunk, in the order libhdf5 visits its index: coordinate order,
    /// except that an extensible array (one unlimited dimension) is ordered by that
    /// dimension first, as it stores its chunks.
    pub fn chunk_infos(&self, file: &File) -> Result<Vec<ChunkInfo>> {
        let chunk_dims = self.chunked_dims()?;
        let Some(index) = self.chunk_index(file)? else { return Ok(Vec::new()) };
        let base = file.ctx().base();
        let mut infos: Vec<ChunkInfo> = index
            .iter()
            .map(|(scaled, location)| chunk_info(&scaled, chunk_dims, self.stored_location(&scaled, location), base))
            .collect();
        if let Some(unlimited) = self.extensible_array_axis() {
            infos.sort_by(|a, b| compare_axis_first(&a.offset, &b.offset, unlimited));
        }
        Ok(infos)
    }

    /// The allocated chunk holding element `element` (any element of the chunk, as
    /// libhdf5 takes it, also one past the extent in an edge chunk); `None` when that
    /// chunk was never written or lies outside the chunk grid.
    pub fn chunk_info_at(&self, file: &File, element: &[u64]) -> Result<Option<ChunkInfo>> {
        let chunk_dims = self.chunked_dims()?;
        let found = self.chunk_location(file, element)?;
        Ok(found.map(|(scaled, location)| chunk_info(&scaled, chunk_dims, self.stored_location(&scaled, location), file.ctx().base())))
    }

    /// The stored bytes of the chunk starting at element `offset`, as written
    /// (filtered: compressed or not), with its filter mask; `None` when that chunk was
    /// never written.
    pub fn read_stored_chunk(&self, file: &File, offset: &[u64]) -> Result<Option<(u32, Vec<u8>)>> {
        let chunk_dims = self.chunked_dims()?;
        self.check_rank(offset)?;
        if offset.iter().zip(chunk_dims).any(|(&e, &c)| c == 0 || e % c != 0) {
            return Err(Error::invalid_argument(format!(
                "offset {:?} does not fall on a chunk boundary (chunks {:?})",
                offset, chunk_dims
            )));
        }
        let Some((scaled, location)) = self.chunk_location(file, offset)? else { return Ok(None) };
        let location = self.stored_location(&scaled, location);
        // the size comes from the file: read() checks it against the file's length first
        let bytes = file.ctx().read(location.address, location.size, "a chunk")?;
        Ok(Some((location.filter_mask, bytes)))
    }

    /// The scaled coordinates and index entry of the chunk holding `element`.
    fn chunk_location(&self, file: &File, element: &[u64]) -> Result<Option<(Vec<u64>, ChunkLocation)>> {
        let chunk_dims = self.chunked_dims()?;
        self.check_rank(element)?;
        let scaled: Vec<u64> = element.iter().zip(chunk_dims).map(|(&e, &c)| e / c.max(1)).collect();
        let Some(index) = self.chunk_index(file)? else { return Ok(None) };
        Ok(index.get(&scaled).map(|location| (scaled, location)))
    }

    /// Where contiguous data starts in the file (absolute), as H5Dget_offset: `None`
    /// for other layouts, for storage never allocated and for data in external files.
    pub fn contiguous_offset(&self, file: &File) -> Option<u64> {
        match self.layout {
            Layout::Contiguous { address: Some(address), .. } if self.external.is_none() => {
                address.checked_add(file.ctx().base())
            }
            _ => None,
        }
    }

    fn chunked_dims(&self) -> Result<&[u64]> {
        match &self.layout {
            Layout::Chunked(chunked) => Ok(&chunked.chunk_dims),
            _ => Err(Error::invalid_argument(format!("not a chunked dataset (layout: {})", self.layout_kind().name()))),
        }
    }

    fn check_rank(&self, coords: &[u64]) -> Result<()> {
        if coords.len() != self.shape().len() {
            return Err(Error::invalid_argument(format!(
                "{} coordinates for a dataset of rank {}",
                coords.len(),
                self.shape().len()
            )));
        }
        Ok(())
    }

    /// `location` with the filter mask the file stores: the index marks a partial edge
    /// chunk written unfiltered (DONT_FILTER_PARTIAL_BOUND_CHUNKS) as skipping every
    /// filter for the decoder, where libhdf5 stored (and reports) a mask of 0.
    fn stored_location(&self, scaled: &[u64], location: ChunkLocation) -> ChunkLocation {
        let Layout::Chunked(chunked) = &self.layout else { return location };
        let unfiltered_edge = chunked.dont_filter_partial_edge_chunks
            && !self.pipeline.is_empty()
            && location.filter_mask == u32::MAX
            && scaled.iter().zip(&chunked.chunk_dims).zip(&self.dataspace.dims).any(|((&s, &c), &dim)| {
                s.checked_add(1).and_then(|n| n.checked_mul(c)).is_none_or(|end| end > dim)
            });
        if unfiltered_edge {
            ChunkLocation { filter_mask: 0, ..location }
        } else {
            location
        }
    }

    /// The unlimited dimension an extensible-array index orders its chunks by, when it
    /// is not the first (the first gives coordinate order anyway).
    fn extensible_array_axis(&self) -> Option<usize> {
        let Layout::Chunked(chunked) = &self.layout else { return None };
        if !matches!(chunked.index, ChunkIndexKind::ExtensibleArray { .. }) {
            return None;
        }
        self.dataspace.max_dims.iter().position(|&m| m == u64::MAX).filter(|&axis| axis > 0)
    }
}

fn chunk_info(scaled: &[u64], chunk_dims: &[u64], location: ChunkLocation, base: u64) -> ChunkInfo {
    ChunkInfo {
        offset: scaled.iter().zip(chunk_dims).map(|(&s, &c)| s.saturating_mul(c)).collect(),
        filter_mask: location.filter_mask,
        file_offset: location.address.saturating_add(base),
        size: location.size,
    }
}

fn compare_axis_first(a: &[u64], b: &[u64], axis: usize) -> Ordering {
    a[axis].cmp(&b[axis]).then_with(|| a.cmp(b))
}

impl Object {
    /// [`Dataset::chunk_infos`], errors naming the file and the dataset.
    pub fn chunk_infos(&self) -> Result<Vec<ChunkInfo>> {
        let ds = self.dataset()?;
        self.in_context(ds.chunk_infos(self.file()))
    }

    /// [`Dataset::chunk_info_at`], errors naming the file and the dataset.
    pub fn chunk_info_at(&self, element: &[u64]) -> Result<Option<ChunkInfo>> {
        let ds = self.dataset()?;
        self.in_context(ds.chunk_info_at(self.file(), element))
    }

    /// [`Dataset::read_stored_chunk`], errors naming the file and the dataset.
    pub fn read_stored_chunk(&self, offset: &[u64]) -> Result<Option<(u32, Vec<u8>)>> {
        let ds = self.dataset()?;
        self.in_context(ds.read_stored_chunk(self.file(), offset))
    }

    fn in_context<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| e.in_object(self.name()).in_file(self.file().path()))
    }
}
