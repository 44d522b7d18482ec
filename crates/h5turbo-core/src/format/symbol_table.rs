//! Old-style groups: a version-1 B-tree (node type 0) whose leaves point at symbol
//! table nodes ("SNOD"), each holding entries whose names live in a local heap.

use super::btree_v1::{self, NODE_TYPE_GROUP};
use super::context::FormatContext;
use super::links::{Link, LinkTarget};
use super::local_heap::LocalHeap;
use super::names::{sort_by_stored_name, stored_bytes};
use super::reader::ByteReader;
use crate::error::{Error, Result};
use std::collections::HashSet;

/// Symbol table entry cache type: the scratch pad holds a soft link's value offset.
const CACHE_SOFT_LINK: u32 = 2;

/// All links of the old-style group whose B-tree and local heap are given, in name order.
pub fn symbol_table_links(ctx: &FormatContext, btree_address: u64, heap_address: u64) -> Result<Vec<Link>> {
    let heap = LocalHeap::read(ctx, heap_address)?;
    let key_size = ctx.sizes().length as usize;
    let mut snod_addresses = Vec::new();
    btree_v1::for_each_leaf_entry(ctx, btree_address, NODE_TYPE_GROUP, key_size, &mut |node, i| {
        snod_addresses.push(node.children[i]);
        Ok(())
    })?;
    let mut seen_nodes = HashSet::new();
    let mut links = Vec::new();
    for address in snod_addresses {
        if !seen_nodes.insert(address) {
            return Err(Error::format("symbol table node listed twice in the group B-tree").at(address));
        }
        read_symbol_node(ctx, address, &heap, &mut links)?;
    }
    // B-tree order is name order already; sorting makes a damaged tree harmless.
    sort_by_stored_name(&mut links, |l| &l.name);
    if let Some(w) = links.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(Error::format(format!("group lists the name {:?} twice", w[0].name)).at(btree_address));
    }
    Ok(links)
}

/// Whether the group's B-tree is a single node (at most a few hundred names, in a few
/// symbol table nodes): then listing the group costs about what one lookup costs.
pub fn symbol_table_is_one_node(ctx: &FormatContext, btree_address: u64) -> Result<bool> {
    let key_size = ctx.sizes().length as usize;
    Ok(btree_v1::read_node(ctx, btree_address, NODE_TYPE_GROUP, key_size)?.level == 0)
}

/// The link named `name`, found as libhdf5 finds it (H5G__stab_lookup): down the
/// B-tree to the one symbol table node whose range holds the name, the other nodes
/// left unread. Child i of a node holds the names after key i up to key i + 1.
pub fn symbol_table_link(ctx: &FormatContext, btree_address: u64, heap: &LocalHeap, name: &str) -> Result<Option<Link>> {
    let key_size = ctx.sizes().length as usize;
    let stored_name = stored_bytes(name);
    let key_name = |node: &btree_v1::Node, i: usize, at: u64| -> Result<&[u8]> {
        let key = node.key(i).ok_or_else(|| Error::format("group B-tree key missing").at(at))?;
        heap.bytes_at(ctx.reader(key, at).uint(key_size)?)
    };
    let read = |address| btree_v1::read_node(ctx, address, NODE_TYPE_GROUP, key_size).map(Box::new);
    // At each node, the first child whose right key is at or after the name.
    let choose = |node: &btree_v1::Node, address| -> Result<Option<usize>> {
        let (mut lo, mut hi) = (0usize, node.children.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key_name(node, mid + 1, address)? < stored_name.as_ref() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok((lo < node.children.len()).then_some(lo))
    };
    match btree_v1::descend(btree_address, read, choose)? {
        Some(reached) => find_in_symbol_node(ctx, reached.leaf.children[reached.entry], heap, name),
        None => Ok(None),
    }
}

fn find_in_symbol_node(ctx: &FormatContext, address: u64, heap: &LocalHeap, name: &str) -> Result<Option<Link>> {
    let mut links = Vec::new();
    read_symbol_node(ctx, address, heap, &mut links)?;
    Ok(links.into_iter().find(|link| link.name == name))
}

/// Bytes of one symbol table entry.
fn entry_size(ctx: &FormatContext) -> usize {
    2 * ctx.sizes().offset as usize + 4 + 4 + 16
}

fn read_symbol_node(ctx: &FormatContext, address: u64, heap: &LocalHeap, links: &mut Vec<Link>) -> Result<()> {
    let header = ctx.read(address, 8, "symbol table node")?;
    let mut r = ctx.reader(&header, address);
    r.signature(b"SNOD", "symbol table node")?;
    let version = r.u8()?;
    if version != 1 {
        return Err(Error::format(format!("symbol table node version {} is not 1", version)).at(address));
    }
    r.skip(1)?;
    let count = r.u16()? as u64;
    let body_len = count * entry_size(ctx) as u64;
    let body = ctx.read(address + 8, body_len, "symbol table node entries")?;
    let mut r = ctx.reader(&body, address + 8);
    for _ in 0..count {
        links.push(read_entry(&mut r, heap)?);
    }
    Ok(())
}

fn read_entry(r: &mut ByteReader, heap: &LocalHeap) -> Result<Link> {
    let at = r.address();
    let name_offset = r.uint(r.sizes().offset as usize)?;
    let header_address = r.address_field()?;
    let cache_type = r.u32()?;
    r.skip(4)?;
    let scratch = r.bytes(16)?;
    let name = heap.name_at(name_offset).map_err(|e| e.at(at))?;
    let target = if cache_type == CACHE_SOFT_LINK {
        let value_offset = u32::from_le_bytes([scratch[0], scratch[1], scratch[2], scratch[3]]);
        // a path of names: bytes that are not UTF-8 kept as names keep them (see names)
        LinkTarget::Soft(heap.name_at(value_offset as u64).map_err(|e| e.at(at))?)
    } else {
        let address = header_address
            .ok_or_else(|| Error::format(format!("link {:?} has no object header address", name)).at(at))?;
        LinkTarget::Hard(address)
    };
    Ok(Link { name, target, creation_order: None })
}
