//! Version-1 B-trees ("TREE"): the index of old-style groups (node type 0, keys are
//! local-heap name offsets, leaves point at symbol table nodes) and of chunked
//! datasets with layout versions 1 to 3 (node type 1, keys describe chunks).
//!
//! Nodes carry no checksum, so the walk defends itself: every node is read with its
//! exact size checked against the file, levels must decrease by one per step, the
//! depth is bounded, and a node reached twice is a cycle.

use super::context::FormatContext;
use crate::error::{Error, Result};
use std::collections::HashSet;

pub const NODE_TYPE_GROUP: u8 = 0;
pub const NODE_TYPE_CHUNK: u8 = 1;

/// Far deeper than any real tree (2^64 entries fit in fewer levels with K >= 2).
const MAX_DEPTH: u8 = 64;

/// One decoded node: `entries` children and `entries + 1` keys (raw bytes).
pub struct Node {
    pub level: u8,
    keys: Vec<u8>,
    key_size: usize,
    pub children: Vec<u64>,
}

impl Node {
    /// Key `i` (0..=children.len()): key i is the left bound of child i.
    pub fn key(&self, i: usize) -> Option<&[u8]> {
        self.keys.get(i * self.key_size..(i + 1) * self.key_size)
    }
}

/// Bytes read speculatively per node: a default-K chunk node of rank <= 3 or a group
/// node fits, so most nodes cost one read instead of header + body.
const SPECULATIVE_NODE_READ: u64 = 4096;

/// Read the node at `address`, expecting `node_type`; keys are `key_size` bytes.
pub fn read_node(ctx: &FormatContext, address: u64, node_type: u8, key_size: usize) -> Result<Node> {
    let offset_size = ctx.sizes().offset as usize;
    let header_len = 8 + 2 * offset_size;
    let mut bytes = ctx.read_speculative(address, header_len as u64, SPECULATIVE_NODE_READ, "v1 B-tree node")?;
    let mut r = ctx.reader(&bytes, address);
    r.signature(b"TREE", "v1 B-tree node")?;
    let found_type = r.u8()?;
    if found_type != node_type {
        return Err(Error::format(format!(
            "v1 B-tree node has type {}, expected {}",
            found_type, node_type
        ))
        .at(address));
    }
    let level = r.u8()?;
    let entries = r.u16()? as usize;
    // Sibling addresses are not needed for a top-down walk.
    let node_len = entries
        .checked_mul(key_size + offset_size)
        .and_then(|n| n.checked_add(key_size + header_len))
        .ok_or_else(|| Error::format("v1 B-tree node size overflows").at(address))?;
    if node_len > bytes.len() {
        bytes = ctx.read(address, node_len as u64, "v1 B-tree node")?;
    }
    let node = bytes.get(..node_len).ok_or_else(|| Error::format("v1 B-tree node truncated").at(address))?;
    let mut r = ctx.reader(node, address);
    r.skip(header_len)?;
    let mut keys = Vec::with_capacity((entries + 1) * key_size);
    let mut children = Vec::with_capacity(entries);
    for _ in 0..entries {
        keys.extend_from_slice(r.bytes(key_size)?);
        children.push(r.required_address("v1 B-tree child")?);
    }
    keys.extend_from_slice(r.bytes(key_size)?);
    Ok(Node { level, keys, key_size, children })
}

/// One leaf entry reached by [`descend`]: the leaf, its address and the entry's index.
pub struct Reached<N> {
    pub leaf: N,
    pub address: u64,
    pub entry: usize,
}

/// Walk down from `root` to one leaf entry: at each node `choose(node, address)` picks
/// the entry to follow (`None`: the key sought lies in no child). `read` gives the node
/// at an address (from a cache, or the file). Levels must fall by one per step, so a
/// damaged tree cannot make the walk loop.
pub fn descend<N: std::ops::Deref<Target = Node>>(
    root: u64,
    read: impl Fn(u64) -> Result<N>,
    mut choose: impl FnMut(&Node, u64) -> Result<Option<usize>>,
) -> Result<Option<Reached<N>>> {
    let (mut address, mut expected_level) = (root, None);
    for _ in 0..=MAX_DEPTH {
        let node = read(address)?;
        if expected_level.is_some_and(|level| level != node.level) {
            return Err(Error::format(format!("v1 B-tree node at level {}, expected {:?}", node.level, expected_level))
                .at(address));
        }
        let Some(entry) = choose(&node, address)? else { return Ok(None) };
        let child = *node.children.get(entry).ok_or_else(|| Error::format("v1 B-tree entry missing").at(address))?;
        if node.level == 0 {
            return Ok(Some(Reached { leaf: node, address, entry }));
        }
        expected_level = Some(node.level - 1);
        address = child;
    }
    Err(Error::format(format!("v1 B-tree deeper than {} levels", MAX_DEPTH)).at(root))
}

/// Walk the tree from `root` and call `visit(node, child_index)` for every entry of
/// every leaf (level 0) node, in key order.
pub fn for_each_leaf_entry(
    ctx: &FormatContext,
    root: u64,
    node_type: u8,
    key_size: usize,
    visit: &mut dyn FnMut(&Node, usize) -> Result<()>,
) -> Result<()> {
    let mut seen = HashSet::new();
    walk(ctx, root, None, node_type, key_size, &mut seen, 0, visit)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    ctx: &FormatContext,
    address: u64,
    expected_level: Option<u8>,
    node_type: u8,
    key_size: usize,
    seen: &mut HashSet<u64>,
    depth: u8,
    visit: &mut dyn FnMut(&Node, usize) -> Result<()>,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(Error::format(format!("v1 B-tree deeper than {} levels", MAX_DEPTH)).at(address));
    }
    if !seen.insert(address) {
        return Err(Error::format("v1 B-tree node reached twice (cycle)").at(address));
    }
    let node = read_node(ctx, address, node_type, key_size)?;
    if let Some(level) = expected_level {
        if node.level != level {
            return Err(Error::format(format!("v1 B-tree node at level {}, expected {}", node.level, level))
                .at(address));
        }
    }
    if node.level == 0 {
        for i in 0..node.children.len() {
            visit(&node, i)?;
        }
        return Ok(());
    }
    for &child in &node.children {
        walk(ctx, child, Some(node.level - 1), node_type, key_size, seen, depth + 1, visit)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Sizes;
    use crate::io::MemSource;
    use std::path::Path;
    use std::sync::Arc;

    /// A leaf of node type 0 with 8-byte keys, at address 0.
    fn leaf(children: &[u64], level: u8) -> Vec<u8> {
        let mut b = b"TREE".to_vec();
        b.extend_from_slice(&[0, level]);
        b.extend_from_slice(&(children.len() as u16).to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        for (i, c) in children.iter().enumerate() {
            b.extend_from_slice(&(i as u64).to_le_bytes());
            b.extend_from_slice(&c.to_le_bytes());
        }
        b.extend_from_slice(&99u64.to_le_bytes());
        b
    }

    fn ctx(bytes: Vec<u8>) -> FormatContext {
        FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("mem"), Sizes::DEFAULT, 0)
    }

    #[test]
    fn leaf_entries_in_order() {
        let c = ctx(leaf(&[100, 200, 300], 0));
        let mut got = vec![];
        for_each_leaf_entry(&c, 0, NODE_TYPE_GROUP, 8, &mut |n, i| {
            got.push((n.children[i], n.key(i).unwrap()[0], n.key(i + 1).unwrap()[0]));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![(100, 0, 1), (200, 1, 2), (300, 2, 99)]);
    }

    #[test]
    fn cycle_and_type_and_truncation_are_errors() {
        // An internal node whose child is itself.
        let c = ctx(leaf(&[0], 1));
        let err = for_each_leaf_entry(&c, 0, NODE_TYPE_GROUP, 8, &mut |_, _| Ok(())).unwrap_err();
        assert!(err.message().contains("cycle"), "{}", err);
        let c = ctx(leaf(&[5], 0));
        assert!(for_each_leaf_entry(&c, 0, NODE_TYPE_CHUNK, 8, &mut |_, _| Ok(())).is_err());
        let mut bytes = leaf(&[5, 6], 0);
        bytes.truncate(bytes.len() - 3);
        assert!(for_each_leaf_entry(&ctx(bytes), 0, NODE_TYPE_GROUP, 8, &mut |_, _| Ok(())).is_err());
    }
}
