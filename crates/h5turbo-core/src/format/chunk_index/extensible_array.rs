//! Extensible array chunk index (layout v4+, exactly one unlimited dimension).
//!
//! Structures (H5EAcache.c): header "EAHD"; index block "EAIB" holding the first
//! elements directly, then the addresses of the data blocks of the first super
//! blocks, then the addresses of the remaining super blocks "EASB", each listing
//! its data blocks "EADB". Data blocks bigger than a page are split into pages
//! with their own checksums; the super block holds one "page written" bit per page.
//!
//! Element numbering (H5Dearray.c): the unlimited dimension is moved to the front
//! ("swizzled") and the element index is the row-major index of the scaled chunk
//! coordinates in that order, over the grid of the *maximum* dims of the other
//! dimensions. So index / (product of the others) is the unlimited coordinate.

use super::super::checksum::verify_trailing;
use super::super::context::FormatContext;
use super::super::reader::ByteReader;
use super::fixed_array::{bit_is_set, check_owner, check_version, checked_bytes, element_layout, for_each_element};
use super::grid::Grid;
use super::super::recent::Recent;
use super::{read_element, ChunkLocation, ChunkSink, ElementSink, IndexShape};
use crate::error::{Error, Result};

struct Header {
    address: u64,
    client: u8,
    element_size: usize,
    size_bytes: usize,
    index_block_elements: u64,
    page_nelmts: u64,
    /// Width of the "block offset" field of super and data blocks.
    offset_field_bytes: usize,
    /// One past the highest element index ever set.
    max_index_set: u64,
    /// Super blocks the array can have (sets the index block's length).
    super_block_count: usize,
    /// Geometry of the super blocks whose elements can be numbered in 64 bits.
    super_blocks: Vec<SuperBlockInfo>,
    /// Super blocks whose data blocks are listed directly in the index block.
    index_block_super_blocks: usize,
    index_block_data_block_addrs: usize,
    index_block: Option<u64>,
}

/// Geometry of super block number `u` (H5EA__hdr_init).
#[derive(Clone, Copy)]
struct SuperBlockInfo {
    data_blocks: u64,
    data_block_elements: u64,
    /// Index of its first element, counted after the index block's own elements.
    start_index: u64,
}

pub(super) fn collect(ctx: &FormatContext, shape: &IndexShape, address: u64, sink: &mut ChunkSink) -> Result<()> {
    let header = read_header(ctx, shape, address)?;
    let Some(index_block) = header.index_block else { return Ok(()) };
    let unswizzle = Unswizzle::new(shape)?;
    let mut coords = vec![0u64; shape.rank()];
    let mut emit = |index: u64, bytes: &[u8], at: u64| -> Result<()> {
        if index >= header.max_index_set {
            return Ok(());
        }
        let mut r = ctx.reader(bytes, at);
        if let Some(location) = read_element(&mut r, header.size_bytes, shape.chunk_bytes)? {
            if !unswizzle.coords_into(index, &mut coords) {
                return Err(Error::format(format!("extensible array index {} has no chunk", index)).at(at));
            }
            sink.add(&coords, location)?;
        }
        Ok(())
    };
    read_index_block(ctx, &header, index_block, &mut emit)
}

fn read_header(ctx: &FormatContext, shape: &IndexShape, address: u64) -> Result<Header> {
    let sizes = ctx.sizes();
    let len = 4 + 1 + 1 + 6 + 6 * sizes.length as u64 + sizes.offset as u64 + 4;
    let bytes = ctx.read(address, len, "extensible array header")?;
    verify_trailing(&bytes, "extensible array header", address)?;
    let mut r = ctx.reader(&bytes, address);
    r.signature(b"EAHD", "extensible array header")?;
    check_version(r.u8()?, "extensible array header", address)?;
    let client = r.u8()?;
    let element_size = r.u8()? as usize;
    // Field order as in H5EAcache.c: index block elements, data block minimum
    // elements, then super block minimum data block pointers.
    let [max_bits, index_block_elements, min_elements, min_pointers, page_bits] = r.array::<5>()?;
    let _super_blocks_created = r.length()?;
    let _super_blocks_size = r.length()?;
    let _data_blocks_created = r.length()?;
    let _data_blocks_size = r.length()?;
    let max_index_set = r.length()?;
    let _elements_realized = r.length()?;
    let index_block = r.address_field()?;
    let size_bytes = element_layout(client, shape.filtered, element_size, sizes.offset as usize, 0)
        .map_err(|e| e.at(address))?;
    let bad = |m: String| Error::format(format!("extensible array header: {}", m)).at(address);
    if !(1..=64).contains(&max_bits) || page_bits >= 64 {
        return Err(bad(format!("{} index bits, pages of 2^{} elements", max_bits, page_bits)));
    }
    if !min_elements.is_power_of_two() || !min_pointers.is_power_of_two() || min_pointers < 2 {
        return Err(bad(format!("block minimums {} / {} are not powers of two", min_elements, min_pointers)));
    }
    let min_elements_bits = min_elements.trailing_zeros() as u8;
    if min_elements_bits > max_bits {
        return Err(bad(format!("data blocks of {} elements exceed 2^{} elements", min_elements, max_bits)));
    }
    let super_block_count = 1 + (max_bits - min_elements_bits) as usize;
    let super_blocks = super_block_table(super_block_count, min_elements as u64);
    let index_block_super_blocks = 2 * min_pointers.trailing_zeros() as usize;
    if index_block_super_blocks > super_block_count {
        return Err(bad(format!(
            "{} super blocks, fewer than the index block's {}",
            super_block_count, index_block_super_blocks
        )));
    }
    Ok(Header {
        address,
        client,
        element_size,
        size_bytes,
        index_block_elements: index_block_elements as u64,
        page_nelmts: 1u64 << page_bits,
        offset_field_bytes: (max_bits as usize).div_ceil(8),
        max_index_set,
        super_block_count,
        super_blocks,
        index_block_super_blocks,
        index_block_data_block_addrs: 2 * (min_pointers as usize - 1),
        index_block,
    })
}

/// Super block `u` has 2^(u/2) data blocks of 2^((u+1)/2) * min_elements elements.
/// Super blocks whose start index no longer fits in 64 bits can hold nothing.
fn super_block_table(count: usize, min_elements: u64) -> Vec<SuperBlockInfo> {
    let mut table = Vec::with_capacity(count);
    let mut start_index = 0u64;
    for u in 0..count as u32 {
        let data_blocks = 1u64.checked_shl(u / 2);
        let elements = 1u64.checked_shl(u.div_ceil(2)).and_then(|n| n.checked_mul(min_elements));
        let (Some(data_blocks), Some(data_block_elements)) = (data_blocks, elements) else { break };
        table.push(SuperBlockInfo { data_blocks, data_block_elements, start_index });
        match data_blocks.checked_mul(data_block_elements).and_then(|n| n.checked_add(start_index)) {
            Some(next) => start_index = next,
            None => break,
        }
    }
    table
}

/// The index block as read once: its own elements, then block addresses.
struct IndexBlock {
    elements: Vec<u8>,
    elements_address: u64,
    /// Data blocks of the first super blocks, in order.
    direct: Vec<Option<u64>>,
    /// The remaining super blocks, from number `index_block_super_blocks` on.
    supers: Vec<Option<u64>>,
}

fn open_index_block(ctx: &FormatContext, header: &Header, address: u64) -> Result<IndexBlock> {
    let offset_size = ctx.sizes().offset as u64;
    let elements_len = checked_bytes(header.index_block_elements, header.element_size as u64, address)?;
    let direct_blocks = header.index_block_data_block_addrs as u64;
    let super_block_addrs = (header.super_block_count - header.index_block_super_blocks) as u64;
    let prefix_len = 4 + 1 + 1 + offset_size;
    let len = prefix_len + elements_len + (direct_blocks + super_block_addrs) * offset_size + 4;
    let block = ctx.read(address, len, "extensible array index block")?;
    verify_trailing(&block, "extensible array index block", address)?;
    let mut r = ctx.reader(&block, address);
    r.signature(b"EAIB", "extensible array index block")?;
    check_version(r.u8()?, "extensible array index block", address)?;
    check_owner(r.u8()?, header.client, r.address_field()?, header.address, address)?;
    let elements = r.bytes(elements_len as usize)?.to_vec();
    let direct = read_addresses(&mut r, header.index_block_data_block_addrs)?;
    let supers = read_addresses(&mut r, super_block_addrs as usize)?;
    Ok(IndexBlock { elements, elements_address: address + prefix_len, direct, supers })
}

fn read_index_block(ctx: &FormatContext, header: &Header, address: u64, emit: &mut ElementSink) -> Result<()> {
    let index_block = open_index_block(ctx, header, address)?;
    for_each_element(&index_block.elements, header.element_size, 0, index_block.elements_address, emit)?;
    let mut direct = index_block.direct.iter();
    for (u, info) in header.super_blocks.iter().enumerate() {
        if u < header.index_block_super_blocks {
            for d in 0..info.data_blocks {
                if let Some(Some(data_block)) = direct.next() {
                    let block_offset = info.start_index + d * info.data_block_elements;
                    read_direct_data_block(ctx, header, *data_block, block_offset, info, emit)?;
                }
            }
        } else if let Some(Some(super_block)) = index_block.supers.get(u - header.index_block_super_blocks) {
            if first_index(header, info.start_index) < header.max_index_set {
                read_super_block(ctx, header, *super_block, info, emit)?;
            }
        }
    }
    Ok(())
}

fn checked_sum(a: u64, b: u64, address: u64) -> Result<u64> {
    a.checked_add(b).ok_or_else(|| Error::format("extensible array block size overflows").at(address))
}

fn read_addresses(r: &mut ByteReader, count: usize) -> Result<Vec<Option<u64>>> {
    (0..count).map(|_| r.address_field()).collect()
}

/// Global element index of block offset `block_offset` (offsets skip the index block's elements).
fn first_index(header: &Header, block_offset: u64) -> u64 {
    header.index_block_elements.saturating_add(block_offset)
}

/// HDF5 lists the data blocks of the first super blocks in the index block and never
/// pages them.
fn check_direct_unpaged(header: &Header, info: &SuperBlockInfo, address: u64) -> Result<()> {
    if info.data_block_elements > header.page_nelmts {
        return Err(Error::unsupported("paged extensible array data block referenced by the index block").at(address));
    }
    Ok(())
}

/// A data block listed in the index block.
fn read_direct_data_block(
    ctx: &FormatContext,
    header: &Header,
    address: u64,
    block_offset: u64,
    info: &SuperBlockInfo,
    emit: &mut ElementSink,
) -> Result<()> {
    check_direct_unpaged(header, info, address)?;
    read_data_block(ctx, header, address, block_offset, info.data_block_elements, emit)
}

fn data_block_prefix(ctx: &FormatContext, header: &Header) -> u64 {
    4 + 1 + 1 + ctx.sizes().offset as u64 + header.offset_field_bytes as u64
}

/// Signature, version and owner of a super or data block, and skip its block offset:
/// HDF5 stores, but never checks, that offset, and for data blocks listed in the index
/// block it computes it from the block's position in the whole address list
/// (H5EA__lookup_elmt), so it is not the block's first element and cannot be checked.
fn check_block_prefix(r: &mut ByteReader, header: &Header, signature: &[u8; 4], what: &str, address: u64) -> Result<()> {
    r.signature(signature, what)?;
    check_version(r.u8()?, what, address)?;
    check_owner(r.u8()?, header.client, r.address_field()?, header.address, address)?;
    r.skip(header.offset_field_bytes)
}

/// An unpaged data block's elements (checksum checked) and the address of the first.
fn open_data_block(ctx: &FormatContext, header: &Header, address: u64, nelmts: u64) -> Result<(Vec<u8>, u64)> {
    let prefix_len = data_block_prefix(ctx, header);
    let elements_len = checked_bytes(nelmts, header.element_size as u64, address)?;
    let len = checked_sum(elements_len, prefix_len + 4, address)?;
    let block = ctx.read(address, len, "extensible array data block")?;
    verify_trailing(&block, "extensible array data block", address)?;
    let mut r = ctx.reader(&block, address);
    check_block_prefix(&mut r, header, b"EADB", "extensible array data block", address)?;
    Ok((r.bytes(elements_len as usize)?.to_vec(), address + prefix_len))
}

fn read_data_block(
    ctx: &FormatContext,
    header: &Header,
    address: u64,
    block_offset: u64,
    nelmts: u64,
    emit: &mut ElementSink,
) -> Result<()> {
    let (elements, first_address) = open_data_block(ctx, header, address, nelmts)?;
    for_each_element(&elements, header.element_size, first_index(header, block_offset), first_address, emit)
}

/// A super block as read once: the page bitmap of its data blocks and their addresses.
struct SuperBlock {
    bitmap: Vec<u8>,
    data_blocks: Vec<Option<u64>>,
    /// Pages per data block (0: its data blocks are not paged).
    pages: u64,
}

fn open_super_block(ctx: &FormatContext, header: &Header, address: u64, info: &SuperBlockInfo) -> Result<SuperBlock> {
    let offset_size = ctx.sizes().offset as u64;
    let paged = info.data_block_elements > header.page_nelmts;
    // Both powers of two: pages divide the data block exactly.
    let pages = if paged { info.data_block_elements / header.page_nelmts } else { 0 };
    let bitmap_len = checked_bytes(info.data_blocks, pages.div_ceil(8), address)?;
    let prefix_len = data_block_prefix(ctx, header);
    let len = checked_bytes(info.data_blocks, offset_size, address)?
        .checked_add(bitmap_len)
        .and_then(|n| n.checked_add(prefix_len + 4))
        .ok_or_else(|| Error::format("extensible array super block size overflows").at(address))?;
    // The read below checks `len` against the file, which also bounds the page loops.
    let block = ctx.read(address, len, "extensible array super block")?;
    verify_trailing(&block, "extensible array super block", address)?;
    let mut r = ctx.reader(&block, address);
    check_block_prefix(&mut r, header, b"EASB", "extensible array super block", address)?;
    let bitmap = r.bytes(bitmap_len as usize)?.to_vec();
    let data_blocks = read_addresses(&mut r, info.data_blocks as usize)?;
    Ok(SuperBlock { bitmap, data_blocks, pages })
}

fn read_super_block(
    ctx: &FormatContext,
    header: &Header,
    address: u64,
    info: &SuperBlockInfo,
    emit: &mut ElementSink,
) -> Result<()> {
    let super_block = open_super_block(ctx, header, address, info)?;
    for (d, data_block) in super_block.data_blocks.iter().enumerate() {
        let Some(data_block) = *data_block else { continue };
        let d = d as u64;
        let block_offset = info.start_index + d * info.data_block_elements;
        if first_index(header, block_offset) >= header.max_index_set {
            continue;
        }
        if super_block.pages > 0 {
            let first_page_bit = d * super_block.pages;
            let pages = PagedBlock { address: data_block, block_offset, pages: super_block.pages, first_page_bit };
            read_paged_data_block(ctx, header, &pages, &super_block.bitmap, emit)?;
        } else {
            read_data_block(ctx, header, data_block, block_offset, info.data_block_elements, emit)?;
        }
    }
    Ok(())
}

struct PagedBlock {
    address: u64,
    block_offset: u64,
    pages: u64,
    /// Bit of the super block's bitmap that belongs to this block's first page.
    first_page_bit: u64,
}

/// Checks a paged data block's prefix; returns the address of its first page.
fn open_paged_data_block(ctx: &FormatContext, header: &Header, address: u64) -> Result<u64> {
    let prefix_len = data_block_prefix(ctx, header) + 4;
    let prefix = ctx.read(address, prefix_len, "extensible array data block")?;
    verify_trailing(&prefix, "extensible array data block", address)?;
    let mut r = ctx.reader(&prefix, address);
    check_block_prefix(&mut r, header, b"EADB", "extensible array data block", address)?;
    Ok(address + prefix_len)
}

/// Address of page `page` of a paged data block whose pages start at `pages_start`.
fn page_address(header: &Header, pages_start: u64, page: u64) -> Result<u64> {
    page_len(header, pages_start)?
        .checked_mul(page)
        .and_then(|o| o.checked_add(pages_start))
        .ok_or_else(|| Error::format("extensible array page address overflows").at(pages_start))
}

fn page_len(header: &Header, at: u64) -> Result<u64> {
    let page_bytes = checked_bytes(header.page_nelmts, header.element_size as u64, at)?;
    checked_sum(page_bytes, 4, at)
}

/// The elements of the page at `address` (checksum checked) and that address.
fn read_page(ctx: &FormatContext, header: &Header, address: u64) -> Result<(Vec<u8>, u64)> {
    let mut bytes = ctx.read(address, page_len(header, address)?, "extensible array data block page")?;
    verify_trailing(&bytes, "extensible array data block page", address)?;
    bytes.truncate(bytes.len() - 4);
    Ok((bytes, address))
}

fn read_paged_data_block(
    ctx: &FormatContext,
    header: &Header,
    block: &PagedBlock,
    bitmap: &[u8],
    emit: &mut ElementSink,
) -> Result<()> {
    let pages_start = open_paged_data_block(ctx, header, block.address)?;
    let first = first_index(header, block.block_offset);
    for page in 0..block.pages {
        let page_first = first.saturating_add(page * header.page_nelmts);
        if page_first >= header.max_index_set {
            break; // pages past the highest element ever set hold nothing
        }
        if !bit_is_set(bitmap, block.first_page_bit + page) {
            continue;
        }
        let (elements, page_address) = read_page(ctx, header, page_address(header, pages_start, page)?)?;
        for_each_element(&elements, header.element_size, page_first, page_address, emit)?;
    }
    Ok(())
}

/// Finds one chunk: from its element index, the index block's own elements, or the
/// one data block (and page) that holds it, reached through its super block.
pub(super) struct Lookup {
    header: Header,
    swizzle: Unswizzle,
    index_block: Option<IndexBlock>,
    super_blocks: Recent<SuperBlock>,
    /// Unpaged data blocks by address, pages by address; paged data blocks (their
    /// prefix checked) by address, holding the address of their first page.
    elements: Recent<(Vec<u8>, u64)>,
    paged_blocks: Recent<u64>,
}

impl Lookup {
    pub(super) fn new(ctx: &FormatContext, shape: &IndexShape, address: u64) -> Result<Self> {
        let header = read_header(ctx, shape, address)?;
        let swizzle = Unswizzle::new(shape)?;
        let index_block = header.index_block.map(|at| open_index_block(ctx, &header, at)).transpose()?;
        let (super_blocks, elements, paged_blocks) = (Recent::new(), Recent::new(), Recent::new());
        Ok(Lookup { header, swizzle, index_block, super_blocks, elements, paged_blocks })
    }

    pub(super) fn find(&self, ctx: &FormatContext, shape: &IndexShape, coords: &[u64]) -> Result<Option<ChunkLocation>> {
        let (Some(index_block), Some(index)) = (&self.index_block, self.swizzle.index_of(coords)) else {
            return Ok(None);
        };
        let header = &self.header;
        if index >= header.max_index_set {
            return Ok(None);
        }
        let element = |elements: &[u8], i: u64, first_address: u64| -> Result<Option<ChunkLocation>> {
            let from = i as usize * header.element_size;
            let bytes = elements.get(from..from + header.element_size);
            let bytes = bytes.ok_or_else(|| Error::format("extensible array element missing").at(first_address))?;
            read_element(&mut ctx.reader(bytes, first_address + from as u64), header.size_bytes, shape.chunk_bytes)
        };
        if index < header.index_block_elements {
            return element(&index_block.elements, index, index_block.elements_address);
        }
        let offset = index - header.index_block_elements;
        let Some((u, info)) = header.super_blocks.iter().enumerate().find(|(_, info)| {
            offset >= info.start_index && offset - info.start_index < info.data_blocks * info.data_block_elements
        }) else {
            return Ok(None);
        };
        let within = offset - info.start_index;
        let (d, e) = (within / info.data_block_elements, within % info.data_block_elements);
        if u < header.index_block_super_blocks {
            let before: u64 = header.super_blocks[..u].iter().map(|s| s.data_blocks).sum();
            let Some(Some(address)) = index_block.direct.get((before + d) as usize).copied() else { return Ok(None) };
            check_direct_unpaged(header, info, address)?;
            let block = self.elements.get_or_read(address, || open_data_block(ctx, header, address, info.data_block_elements))?;
            return element(&block.0, e, block.1);
        }
        let Some(Some(sb_address)) = index_block.supers.get(u - header.index_block_super_blocks).copied() else {
            return Ok(None);
        };
        let super_block = self.super_blocks.get_or_read(sb_address, || open_super_block(ctx, header, sb_address, info))?;
        let Some(Some(address)) = super_block.data_blocks.get(d as usize).copied() else { return Ok(None) };
        if super_block.pages == 0 {
            let block = self.elements.get_or_read(address, || open_data_block(ctx, header, address, info.data_block_elements))?;
            return element(&block.0, e, block.1);
        }
        let page = e / header.page_nelmts;
        if !bit_is_set(&super_block.bitmap, d * super_block.pages + page) {
            return Ok(None);
        }
        let pages_start = *self.paged_blocks.get_or_read(address, || open_paged_data_block(ctx, header, address))?;
        let page_address = page_address(header, pages_start, page)?;
        let found = self.elements.get_or_read(page_address, || read_page(ctx, header, page_address))?;
        element(&found.0, e % header.page_nelmts, found.1)
    }
}

/// Element index -> scaled chunk coordinates (inverse of H5Dearray.c's swizzling).
struct Unswizzle {
    unlimited_dim: usize,
    /// Max-dims chunk grid of the other dimensions, in their order.
    others: Grid,
    others_cells: u64,
}

impl Unswizzle {
    fn new(shape: &IndexShape) -> Result<Self> {
        let unlimited: Vec<usize> = (0..shape.rank()).filter(|&d| shape.max_dims[d] == u64::MAX).collect();
        let [unlimited_dim] = unlimited[..] else {
            return Err(Error::format(format!(
                "extensible array index needs exactly one unlimited dimension, found {}",
                unlimited.len()
            )));
        };
        let others = Grid::covering(
            &remove(&shape.max_dims, unlimited_dim),
            &remove(&shape.chunk_dims, unlimited_dim),
        );
        let others_cells = others
            .cells()
            .ok_or_else(|| Error::format("chunk grid of the fixed dimensions overflows 64 bits"))?;
        Ok(Unswizzle { unlimited_dim, others, others_cells })
    }

    /// Scaled coordinates of element `index` into `out` (dataset rank long).
    fn coords_into(&self, index: u64, out: &mut [u64]) -> bool {
        if self.others_cells == 0 || out.len() != self.others.rank() + 1 {
            return false;
        }
        // Fill the other dimensions in the tail, then rotate the unlimited one into place.
        let (head, tail) = out.split_at_mut(1);
        if !self.others.coords_into(index % self.others_cells, tail) {
            return false;
        }
        head[0] = index / self.others_cells;
        out[..=self.unlimited_dim].rotate_left(1);
        true
    }
}

impl Unswizzle {
    /// Element index of the chunk at scaled `coords` (inverse of `coords_into`).
    fn index_of(&self, coords: &[u64]) -> Option<u64> {
        if coords.len() != self.others.rank() + 1 {
            return None;
        }
        let others = self.others.linear(&remove(coords, self.unlimited_dim))?;
        coords[self.unlimited_dim].checked_mul(self.others_cells)?.checked_add(others)
    }
}

fn remove(values: &[u64], dim: usize) -> Vec<u64> {
    values.iter().enumerate().filter(|&(d, _)| d != dim).map(|(_, &v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn super_block_geometry_matches_hdf5_defaults() {
        // Defaults for chunk indexes: 16 elements per smallest data block.
        let t = super_block_table(29, 16);
        let geometry: Vec<(u64, u64, u64)> =
            t.iter().take(6).map(|s| (s.data_blocks, s.data_block_elements, s.start_index)).collect();
        assert_eq!(geometry, vec![(1, 16, 0), (1, 32, 16), (2, 32, 48), (2, 64, 112), (4, 64, 240), (4, 128, 496)]);
        assert_eq!(t[13].start_index, 131056);
        // 2^64 elements cannot all be numbered: the table stops before overflowing.
        assert!(super_block_table(200, 1).len() < 200);
    }
}
