//! Version-2 B-trees: a header (`BTHD`) pointing at a root node, internal nodes
//! (`BTIN`) and leaves (`BTLF`), every one checksummed.
//!
//! This module knows the tree shape only; records are handed to callers as raw bytes
//! (`record_size()` each) and decoded by whoever knows the record type: links (5, 6),
//! attributes (8, 9), huge heap objects (1-4), chunks (10, 11).

use super::checksum::verify_trailing;
use super::context::FormatContext;
use super::reader::{bytes_needed, ByteReader, Located};
use crate::error::{Error, Result};
use std::cmp::Ordering;
use super::recent::Recent;
use std::collections::HashSet;
use std::sync::Arc;

/// A record's bytes at their place in the file (inside the node that holds it).
pub type Record<'a> = Located<&'a [u8]>;

/// Signature, version and type before the records of every node.
const NODE_PREFIX: usize = 6;
/// Node prefix plus the trailing checksum.
const NODE_OVERHEAD: u64 = NODE_PREFIX as u64 + 4;
/// Deeper than any tree a u64 record count can describe with fan-out >= 2.
const MAX_DEPTH: u16 = 64;

/// Limits that hold for the nodes at one depth (0 = leaves).
#[derive(Debug, Clone, Copy)]
struct Level {
    /// Most records one node at this depth can hold.
    max_records: u64,
    /// Most records a subtree rooted at this depth can hold.
    max_subtree_records: u64,
    /// Bytes of the "total records" field that describes a subtree rooted here.
    subtree_count_width: usize,
    /// Bytes of each child pointer stored in a node at this depth (0 for leaves).
    pointer_size: usize,
}

/// Where a child node is and how many records it claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NodePointer {
    address: u64,
    records: u64,
    /// Records in the whole subtree (equal to `records` for leaves).
    subtree_records: u64,
}

#[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
/// An opened version-2 B-tree (the header only; nodes are read on traversal).
#[derive(Debug, Clone)]
pub struct BTreeV2 {
    address: u64,
    record_type: u8,
    node_size: u64,
    record_size: usize,
    depth: u16,
    root: Option<NodePointer>,
    total_records: u64,
    levels: Vec<Level>,
    /// Bytes of every "number of records in child node" field.
    child_count_width: usize,
}

impl BTreeV2 {
    /// Read and verify the header at `address`.
    pub fn open(ctx: &FormatContext, address: u64) -> Result<BTreeV2> {
        let sizes = ctx.sizes();
        let header_len = 16 + sizes.offset as u64 + 2 + sizes.length as u64 + 4;
        let data = ctx.read(address, header_len, "v2 B-tree header")?;
        verify_trailing(&data, "v2 B-tree header", address)?;
        let mut r = ctx.reader(&data, address);
        r.signature(b"BTHD", "v2 B-tree header")?;
        let version = r.u8()?;
        if version != 0 {
            return Err(crate::format_err!("v2 B-tree header version {} is not 0", version).at(address));
        }
        let record_type = r.u8()?;
        let node_size = r.u32()? as u64;
        let record_size = r.u16()? as usize;
        let depth = r.u16()?;
        r.skip(2)?; // split and merge percentages only matter to writers
        let root_address = r.address_field()?;
        let root_records = r.u16()? as u64;
        let total_records = r.length()?;

        let levels = compute_levels(node_size, record_size, depth, sizes.offset as usize)
            .map_err(|e| e.at(address))?;
        let child_count_width = bytes_needed(levels[0].max_records);
        let root = match root_address {
            Some(a) => Some(NodePointer { address: a, records: root_records, subtree_records: total_records }),
            None if total_records == 0 => None,
            None => {
                return Err(crate::format_err!(
                    "v2 B-tree has no root node but claims {} records",
                    total_records
                )
                .at(address))
            }
        };
        Ok(BTreeV2 {
            address,
            record_type,
            node_size,
            record_size,
            depth,
            root,
            total_records,
            levels,
            child_count_width,
        })
    }

    pub fn address(&self) -> u64 {
        self.address
    }
    pub fn record_type(&self) -> u8 {
        self.record_type
    }
    pub fn record_size(&self) -> usize {
        self.record_size
    }
    pub fn total_records(&self) -> u64 {
        self.total_records
    }
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    pub fn depth(&self) -> u16 {
        self.depth
    }
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    pub fn node_size(&self) -> u64 {
        self.node_size
    }

    /// Call `f` with the raw bytes of every record, in key order (in-order traversal).
    /// Every node's checksum is verified and every record count cross-checked.
    pub fn for_each_record(&self, ctx: &FormatContext, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.for_each_located_record(ctx, &mut |record| f(record.bytes()))
    }

    /// As `for_each_record`, each record with its file address, for decoders whose
    /// errors must name where the record lies.
    pub fn for_each_located_record(
        &self,
        ctx: &FormatContext,
        f: &mut dyn FnMut(Record<'_>) -> Result<()>,
    ) -> Result<()> {
        let Some(root) = self.root else { return Ok(()) };
        let mut visited = HashSet::new();
        self.visit(ctx, root, self.depth, &mut visited, f)
    }

    /// Find the record for which `compare` returns `Equal`. `compare(record)` orders the
    /// record against the key sought (`Less`: the record sorts before the key).
    pub fn find_record(
        &self,
        ctx: &FormatContext,
        compare: &mut dyn FnMut(Record<'_>) -> Result<Ordering>,
    ) -> Result<Option<Located<Vec<u8>>>> {
        self.find_record_in(ctx, compare, None)
    }

    /// As `find_record`, keeping the nodes read in `nodes` for the next lookups.
    pub(crate) fn find_record_cached(
        &self,
        ctx: &FormatContext,
        compare: &mut dyn FnMut(Record<'_>) -> Result<Ordering>,
        nodes: &NodeCache,
    ) -> Result<Option<Located<Vec<u8>>>> {
        self.find_record_in(ctx, compare, Some(nodes))
    }

    fn find_record_in(
        &self,
        ctx: &FormatContext,
        compare: &mut dyn FnMut(Record<'_>) -> Result<Ordering>,
        nodes: Option<&NodeCache>,
    ) -> Result<Option<Located<Vec<u8>>>> {
        let Some(mut pointer) = self.root else { return Ok(None) };
        let mut depth = self.depth;
        loop {
            // The depth falls by one per step, so a descent cannot loop.
            let read = || self.read_node(ctx, pointer, depth, &mut HashSet::new());
            let read_node = match nodes {
                Some(cache) => cache.get_or_read(pointer, depth, read)?,
                None => Arc::new(ReadNode { pointer, depth, node: read()? }),
            };
            let node = &read_node.node;
            // Records are sorted: the first one after the key, or the key itself.
            let (mut lo, mut hi) = (0, node.record_count());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                match compare(node.record(mid))? {
                    Ordering::Less => lo = mid + 1,
                    Ordering::Equal => return Ok(Some(node.record(mid).copied())),
                    Ordering::Greater => hi = mid,
                }
            }
            if depth == 0 {
                return Ok(None);
            }
            pointer = node.children[lo];
            depth -= 1;
        }
    }

    /// In-order visit of the subtree at `pointer`; checks its record total.
    fn visit(
        &self,
        ctx: &FormatContext,
        pointer: NodePointer,
        depth: u16,
        visited: &mut HashSet<u64>,
        f: &mut dyn FnMut(Record<'_>) -> Result<()>,
    ) -> Result<()> {
        let node = self.read_node(ctx, pointer, depth, visited)?;
        for i in 0..node.record_count() {
            if let Some(&child) = node.children.get(i) {
                self.visit(ctx, child, depth - 1, visited, f)?;
            }
            f(node.record(i))?;
        }
        if let Some(&last) = node.children.last() {
            self.visit(ctx, last, depth - 1, visited, f)?;
        }
        Ok(())
    }

    /// Read, verify and split the node at `pointer`, which sits at `depth`.
    fn read_node(
        &self,
        ctx: &FormatContext,
        pointer: NodePointer,
        depth: u16,
        visited: &mut HashSet<u64>,
    ) -> Result<Node> {
        let address = pointer.address;
        let what = if depth == 0 { "v2 B-tree leaf node" } else { "v2 B-tree internal node" };
        if !visited.insert(address) {
            return Err(crate::format_err!("{} is reached twice (cycle in the tree)", what).at(address));
        }
        let level = self.levels[depth as usize];
        if pointer.records > level.max_records {
            return Err(crate::format_err!(
                "{} claims {} records, more than the {} that fit",
                what,
                pointer.records,
                level.max_records
            )
            .at(address));
        }
        let records = pointer.records as usize;
        let used = self.node_used_size(records, depth);
        let data = ctx.read(address, used as u64, what)?;
        verify_trailing(&data, what, address)?;
        let mut r = ctx.reader(&data, address);
        r.signature(if depth == 0 { b"BTLF" } else { b"BTIN" }, what)?;
        let version = r.u8()?;
        let node_type = r.u8()?;
        if version != 0 || node_type != self.record_type {
            return Err(crate::format_err!(
                "{} has version {} type {}, expected version 0 type {}",
                what,
                version,
                node_type,
                self.record_type
            )
            .at(address));
        }
        r.skip(records * self.record_size)?;
        let children = if depth == 0 { Vec::new() } else { self.read_children(&mut r, records + 1, depth)? };
        check_subtree_total(pointer, &children, what)?;
        Ok(Node { data: Located::at(address, data), record_size: self.record_size, records, children })
    }

    /// Bytes of a node at `depth` holding `records` records, checksum included.
    fn node_used_size(&self, records: usize, depth: u16) -> usize {
        let mut size = NODE_PREFIX + records * self.record_size + 4;
        if depth > 0 {
            size += (records + 1) * self.levels[depth as usize].pointer_size;
        }
        size
    }

    fn read_children(&self, r: &mut ByteReader, count: usize, depth: u16) -> Result<Vec<NodePointer>> {
        let child_level = depth - 1;
        let mut children = Vec::with_capacity(count);
        for _ in 0..count {
            let at = r.address();
            let address = r.required_address("v2 B-tree child node")?;
            let records = r.uint(self.child_count_width)?;
            let subtree_records = if child_level > 0 {
                r.uint(self.levels[child_level as usize].subtree_count_width)?
            } else {
                records
            };
            if subtree_records < records {
                return Err(crate::format_err!(
                    "v2 B-tree child pointer claims {} records in its subtree but {} in the node",
                    subtree_records,
                    records
                )
                .at(at));
            }
            children.push(NodePointer { address, records, subtree_records });
        }
        Ok(children)
    }
}

/// Nodes of one tree kept between lookups (`find_record_cached`).
pub(crate) struct NodeCache(Recent<ReadNode>);

/// A node with the pointer and depth it was reached by.
struct ReadNode {
    pointer: NodePointer,
    depth: u16,
    node: Node,
}

impl NodeCache {
    pub(crate) fn new() -> Self {
        NodeCache(Recent::new())
    }

    /// In a sound tree a node is always reached with the same record counts and at
    /// the same depth; a damaged one is an error, not a node used as what it is not.
    fn get_or_read(&self, pointer: NodePointer, depth: u16, read: impl FnOnce() -> Result<Node>) -> Result<Arc<ReadNode>> {
        let cached = self.0.get_or_read(pointer.address, || read().map(|node| ReadNode { pointer, depth, node }))?;
        if cached.pointer != pointer || cached.depth != depth {
            return Err(crate::format_err!(
                "v2 B-tree node reached at depth {} with {} records, and before at depth {} with {}",
                depth,
                pointer.records,
                cached.depth,
                cached.pointer.records
            )
            .at(pointer.address));
        }
        Ok(cached)
    }
}

/// A node's bytes with the records located.
struct Node {
    data: Located<Vec<u8>>,
    record_size: usize,
    records: usize,
    children: Vec<NodePointer>,
}

impl Node {
    fn record_count(&self) -> usize {
        self.records
    }
    /// Record `i` (< record_count(); the node was sized to hold them all when read).
    fn record(&self, i: usize) -> Record<'_> {
        let start = NODE_PREFIX + i * self.record_size;
        let bytes = &self.data.bytes()[start..start + self.record_size];
        Located::at(self.data.address() + start as u64, bytes)
    }
}

/// The records of a subtree are its own plus its children's: anything else means a
/// corrupt count (or a child shared between parents).
fn check_subtree_total(pointer: NodePointer, children: &[NodePointer], what: &str) -> Result<()> {
    let below = children.iter().try_fold(0u64, |acc, c| acc.checked_add(c.subtree_records));
    match below.and_then(|b| b.checked_add(pointer.records)) {
        Some(total) if total == pointer.subtree_records => Ok(()),
        _ => Err(crate::format_err!(
            "{} holds {} records but its parent counts {} in its subtree",
            what,
            below.map_or("too many".to_string(), |b| (b + pointer.records).to_string()),
            pointer.subtree_records
        )
        .at(pointer.address)),
    }
}

/// Node capacities per depth, computed as the spec (and libhdf5) do: leaves hold
/// `(node_size - overhead) / record_size` records; an internal node also stores one
/// more child pointer than records, and pointer fields are as wide as the largest
/// count they can hold.
fn compute_levels(node_size: u64, record_size: usize, depth: u16, address_width: usize) -> Result<Vec<Level>> {
    if record_size == 0 {
        return Err(Error::format("v2 B-tree record size is 0"));
    }
    if depth > MAX_DEPTH {
        return Err(crate::format_err!("v2 B-tree depth {} exceeds {}", depth, MAX_DEPTH));
    }
    let leaf_max = node_size.saturating_sub(NODE_OVERHEAD) / record_size as u64;
    if leaf_max == 0 {
        return Err(crate::format_err!(
            "v2 B-tree node size {} cannot hold one {}-byte record",
            node_size,
            record_size
        ));
    }
    let child_count_width = bytes_needed(leaf_max);
    let mut levels = vec![Level {
        max_records: leaf_max,
        max_subtree_records: leaf_max,
        subtree_count_width: bytes_needed(leaf_max),
        pointer_size: 0,
    }];
    for d in 1..=depth as usize {
        let below = levels[d - 1];
        let pointer_size = address_width + child_count_width + if d > 1 { below.subtree_count_width } else { 0 };
        let room = node_size.saturating_sub(NODE_OVERHEAD + pointer_size as u64);
        let max_records = room / (record_size + pointer_size) as u64;
        if max_records == 0 {
            return Err(crate::format_err!(
                "v2 B-tree node size {} cannot hold an internal node at depth {}",
                node_size,
                d
            ));
        }
        let max_subtree_records = (max_records + 1)
            .checked_mul(below.max_subtree_records)
            .and_then(|n| n.checked_add(max_records))
            .ok_or_else(|| crate::format_err!("v2 B-tree of depth {} is too deep for its node size", depth))?;
        levels.push(Level {
            max_records,
            max_subtree_records,
            subtree_count_width: bytes_needed(max_subtree_records),
            pointer_size,
        });
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_widths_follow_the_spec() {
        // Link-name index defaults: 512-byte nodes, 11-byte records, 8-byte addresses.
        let levels = compute_levels(512, 11, 2, 8).unwrap();
        assert_eq!(levels[0].max_records, 45);
        assert_eq!(levels[1].pointer_size, 9);
        assert_eq!(levels[1].max_records, (512 - 10 - 9) / (11 + 9));
        let sub1 = (levels[1].max_records + 1) * 45 + levels[1].max_records;
        assert_eq!(levels[1].max_subtree_records, sub1);
        assert_eq!(levels[2].pointer_size, 8 + 1 + bytes_needed(sub1));
    }

    #[test]
    fn impossible_shapes_are_rejected() {
        assert!(compute_levels(512, 0, 0, 8).is_err());
        assert!(compute_levels(8, 11, 0, 8).is_err());
        assert!(compute_levels(30, 11, 1, 8).is_err());
        assert!(compute_levels(512, 11, MAX_DEPTH + 1, 8).is_err());
        assert!(compute_levels(4096, 1, 60, 8).is_err());
    }
}
