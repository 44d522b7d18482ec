//! Implicit index (layout v4+, early allocation, no filters): every chunk of the
//! max-dims grid is allocated back to back from the index address, in row-major
//! order of that grid (H5Dnone.c: address = base + linear(max grid) * chunk bytes).
//! Nothing is read; the index is computed on lookup.

use super::{ChunkIndex, IndexShape, Store};
use super::super::context::FormatContext;
use crate::error::{Error, Result};

pub(super) fn index(ctx: &FormatContext, shape: &IndexShape, address: u64) -> Result<ChunkIndex> {
    let max_grid = shape.max_grid("implicit")?;
    if shape.grid.dims().iter().zip(max_grid.dims()).any(|(cur, max)| cur > max) {
        return Err(Error::format(format!(
            "current chunk grid {:?} exceeds the maximum grid {:?}",
            shape.grid.dims(),
            max_grid.dims()
        ))
        .at(address));
    }
    let total = max_grid
        .cells()
        .and_then(|cells| cells.checked_mul(shape.chunk_bytes))
        .ok_or_else(|| Error::format("implicit chunk storage size overflows 64 bits").at(address))?;
    if ctx.available_from(address) < total {
        return Err(Error::format(format!(
            "implicit chunk storage of {} bytes at address {} extends past the end of the file",
            total, address
        ))
        .at(address));
    }
    // Bounded by the max grid, whose storage fits in the file.
    let len = shape.grid.cells().unwrap_or(0);
    Ok(ChunkIndex {
        grid: shape.grid.clone(),
        store: Store::Implicit { address, chunk_bytes: shape.chunk_bytes, max_grid },
        len: len as usize,
        stored_bytes: len * shape.chunk_bytes,
    })
}
