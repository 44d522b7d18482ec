//! Version-1 B-tree chunk index (layout versions 1 to 3). Each leaf entry's left key
//! holds the chunk's stored size, filter mask and element offsets (one per dataset
//! dimension plus a trailing 0 for the element-size dimension).

use super::super::btree_v1::{self, Node, NODE_TYPE_CHUNK};
use super::super::context::FormatContext;
use super::super::recent::Recent;
use super::{ChunkLocation, ChunkSink, IndexShape};
use crate::error::{Error, Result};
use std::cmp::Ordering;

pub(super) fn collect(ctx: &FormatContext, shape: &IndexShape, address: u64, sink: &mut ChunkSink) -> Result<()> {
    let mut scaled = vec![0u64; shape.rank()];
    btree_v1::for_each_leaf_entry(ctx, address, NODE_TYPE_CHUNK, key_size(shape), &mut |node, i| {
        let (size, filter_mask) = read_key(ctx, shape, node, i, address, &mut scaled)?;
        sink.add(&scaled, ChunkLocation { address: node.children[i], size, filter_mask })
    })
}

fn key_size(shape: &IndexShape) -> usize {
    8 + 8 * (shape.rank() + 1)
}

/// Key `i` of `node`: its chunk's scaled coordinates into `scaled`; returns the
/// chunk's stored size and filter mask (meaningful in leaves only).
fn read_key(
    ctx: &FormatContext,
    shape: &IndexShape,
    node: &Node,
    i: usize,
    address: u64,
    scaled: &mut [u64],
) -> Result<(u64, u32)> {
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
    Ok((size, filter_mask))
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

/// Finds one chunk by descending from the root, as libhdf5 does: child i of a node
/// holds the chunks from key i up to key i + 1 (row-major order of coordinates).
pub(super) struct Lookup {
    root: u64,
    nodes: Recent<Node>,
}

impl Lookup {
    pub(super) fn new(root: u64) -> Self {
        Lookup { root, nodes: Recent::new() }
    }

    pub(super) fn find(&self, ctx: &FormatContext, shape: &IndexShape, coords: &[u64]) -> Result<Option<ChunkLocation>> {
        let mut scaled = vec![0u64; shape.rank()];
        let read = |address| self.nodes.get_or_read(address, || btree_v1::read_node(ctx, address, NODE_TYPE_CHUNK, key_size(shape)));
        // At each node, the last entry whose key is at or before `coords`.
        let choose = |node: &Node, address| last_key_at_or_before(ctx, shape, node, address, coords, &mut scaled);
        let Some(reached) = btree_v1::descend(self.root, read, choose)? else { return Ok(None) };
        let (leaf, i) = (&reached.leaf, reached.entry);
        let (size, filter_mask) = read_key(ctx, shape, leaf, i, reached.address, &mut scaled)?;
        let location = ChunkLocation { address: leaf.children[i], size, filter_mask };
        Ok((scaled == coords).then_some(location))
    }
}

/// Binary search over the entries' left keys (sorted in a valid tree).
fn last_key_at_or_before(
    ctx: &FormatContext,
    shape: &IndexShape,
    node: &Node,
    address: u64,
    coords: &[u64],
    scaled: &mut [u64],
) -> Result<Option<usize>> {
    let (mut lo, mut hi) = (0usize, node.children.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        read_key(ctx, shape, node, mid, address, scaled)?;
        match (*scaled).cmp(coords) {
            Ordering::Greater => hi = mid,
            Ordering::Less | Ordering::Equal => lo = mid + 1,
        }
    }
    Ok(lo.checked_sub(1))
}
