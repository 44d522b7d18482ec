//! Version-1 B-tree chunk index (layout versions 1 to 3). Each leaf entry's left key
//! holds the chunk's stored size, filter mask and element offsets (one per dataset
//! dimension plus a trailing 0 for the element-size dimension).

use super::super::btree_v1::{self, NODE_TYPE_CHUNK};
use super::super::context::FormatContext;
use super::{ChunkLocation, ChunkSink, IndexShape};
use crate::error::{Error, Result};

pub(super) fn collect(ctx: &FormatContext, shape: &IndexShape, address: u64, sink: &mut ChunkSink) -> Result<()> {
    let rank = shape.rank();
    let key_size = 8 + 8 * (rank + 1);
    let mut scaled = vec![0u64; rank];
    btree_v1::for_each_leaf_entry(ctx, address, NODE_TYPE_CHUNK, key_size, &mut |node, i| {
        let key = node.key(i).ok_or_else(|| Error::format("v1 B-tree chunk key missing").at(address))?;
        let mut r = ctx.reader(key, address);
        let size = r.u32()? as u64;
        let filter_mask = r.u32()?;
        for (d, slot) in scaled.iter_mut().enumerate() {
            *slot = scale(r.u64()?, shape.chunk_dims[d])?;
        }
        let element_offset = r.u64()?;
        if element_offset != 0 {
            return Err(Error::format(format!("chunk key has element offset {} (must be 0)", element_offset)));
        }
        sink.add(&scaled, ChunkLocation { address: node.children[i], size, filter_mask })
    })
}

/// Element offset -> chunk coordinate; the offset must sit on a chunk boundary.
fn scale(offset: u64, chunk_dim: u64) -> Result<u64> {
    if offset % chunk_dim != 0 {
        return Err(Error::format(format!(
            "chunk offset {} is not a multiple of the chunk dimension {}",
            offset, chunk_dim
        )));
    }
    Ok(offset / chunk_dim)
}
