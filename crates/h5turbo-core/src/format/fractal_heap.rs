//! Fractal heaps: the variable-size object store behind dense link and attribute
//! storage. A header (`FRHP`) describes a doubling table of direct blocks (`FHDB`,
//! holding objects) reached through indirect blocks (`FHIB`); heap IDs locate an
//! object as "managed" (an offset in the heap's address space), "tiny" (the bytes sit
//! in the ID itself) or "huge" (stored on its own, found through a v2 B-tree).
//!
//! `open` reads the header and every indirect block once and keeps a sorted map of
//! direct blocks, so `get` is a binary search and one read. Nothing mutable is cached
//! inside the heap (it is `Sync`); callers fetching many objects pass a [`BlockCache`].

use super::btree_v2::BTreeV2;
use super::checksum::{metadata_checksum, verify_trailing};
use super::context::FormatContext;
use super::reader::{bytes_needed, le_uint, ByteReader, Located, Sizes};
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};

/// Heap ID type values (bits 4-5 of the first byte).
const ID_MANAGED: u8 = 0;
const ID_HUGE: u8 = 1;
const ID_TINY: u8 = 2;
/// Largest tiny object whose length fits in the first ID byte.
const TINY_LEN_SHORT: usize = 16;
/// Header flag bits.
const FLAG_DIRECT_BLOCKS_CHECKSUMMED: u8 = 0x02;
/// v2 B-tree record type for indirectly accessed, unfiltered huge objects.
const HUGE_RECORD_UNFILTERED: u8 = 1;

/// Row geometry of the doubling table: row 0 and 1 hold blocks of the starting size,
/// each later row doubles it; every row has `width` blocks.
#[derive(Debug, Clone)]
struct DoublingTable {
    width: u64,
    /// log2(starting block size * width): the heap span of row 0.
    first_row_bits: u32,
    /// Rows (from the top of any indirect block) whose blocks are direct blocks.
    max_direct_rows: usize,
    row_block_size: Vec<u64>,
    /// Heap offset of each row's first block, relative to its indirect block.
    row_offset: Vec<u64>,
}

impl DoublingTable {
    fn new(width: u16, start_block: u64, max_direct: u64, max_heap_bits: u16) -> Result<Self> {
        let is_pow2 = |v: u64| v != 0 && v.is_power_of_two();
        if !is_pow2(width as u64) || !is_pow2(start_block) || !is_pow2(max_direct) || max_direct < start_block {
            return Err(crate::format_err!(
                "fractal heap doubling table is malformed (width {}, starting block {}, largest direct block {})",
                width,
                start_block,
                max_direct
            ));
        }
        let first_row_bits = start_block.trailing_zeros() + (width as u64).trailing_zeros();
        if max_heap_bits == 0 || max_heap_bits > 64 || (max_heap_bits as u32) < first_row_bits {
            return Err(crate::format_err!(
                "fractal heap maximum size of 2^{} bytes does not fit its doubling table",
                max_heap_bits
            ));
        }
        let rows = (max_heap_bits as u32 - first_row_bits + 1) as usize;
        let max_direct_rows = (max_direct.trailing_zeros() - start_block.trailing_zeros() + 2) as usize;
        let mut row_block_size = Vec::with_capacity(rows);
        let mut row_offset = Vec::with_capacity(rows);
        let (mut size, mut offset) = (start_block, 0u64);
        for row in 0..rows {
            row_block_size.push(size);
            row_offset.push(offset);
            offset = offset.saturating_add(size.saturating_mul(width as u64));
            if row > 0 {
                size = size.saturating_mul(2);
            }
        }
        Ok(DoublingTable { width: width as u64, first_row_bits, max_direct_rows, row_block_size, row_offset })
    }

    fn rows(&self) -> usize {
        self.row_block_size.len()
    }

    /// Rows of an indirect block that spans `block_size` bytes of heap space (None if
    /// the block is too small to be an indirect block).
    fn rows_for_indirect(&self, block_size: u64) -> Option<usize> {
        let bits = block_size.trailing_zeros().checked_sub(self.first_row_bits)?;
        Some(bits as usize + 1)
    }
}

/// A direct block: where it lives and which heap offsets it covers.
#[derive(Debug, Clone, Copy)]
struct DirectBlock {
    heap_offset: u64,
    size: u64,
    address: u64,
}

/// Verified direct blocks kept by the caller across several `get_cached` calls.
#[derive(Default)]
pub struct BlockCache {
    blocks: HashMap<u64, Vec<u8>>,
}

impl BlockCache {
    pub fn new() -> Self {
        Self::default()
    }
}

/// How huge objects are found from their IDs.
#[derive(Debug, Clone)]
enum HugeAccess {
    /// Address and length sit in the ID.
    Direct,
    /// The ID holds a key of this many bytes into the huge-object B-tree.
    Indirect { key_width: usize, btree: Option<BTreeV2> },
}

#[derive(Debug, Clone)]
pub struct FractalHeap {
    address: u64,
    sizes: Sizes,
    id_len: usize,
    checksummed_blocks: bool,
    filtered: bool,
    table: DoublingTable,
    /// Bytes of block offsets in block headers and of offsets in managed heap IDs.
    heap_offset_width: usize,
    /// Bytes of lengths in managed heap IDs.
    heap_length_width: usize,
    huge: HugeAccess,
    /// Sorted by heap offset.
    direct_blocks: Vec<DirectBlock>,
}

/// Header fields `open` needs after parsing.
struct Header {
    id_len: usize,
    filter_len: usize,
    flags: u8,
    max_managed_size: u32,
    huge_btree: Option<u64>,
    table: DoublingTable,
    max_heap_bits: u16,
    max_direct_size: u64,
    start_block_size: u64,
    root: Option<u64>,
    root_rows: usize,
}

impl FractalHeap {
    /// Read and verify the header and all indirect blocks of the heap at `address`.
    pub fn open(ctx: &FormatContext, address: u64) -> Result<FractalHeap> {
        let header = read_header(ctx, address)?;
        let heap_offset_width = (header.max_heap_bits as usize).div_ceil(8);
        let heap_length_width = direct_block_offset_width(header.max_direct_size)
            .min(bytes_needed(header.max_managed_size as u64));
        let mut heap = FractalHeap {
            address,
            sizes: ctx.sizes(),
            id_len: header.id_len,
            checksummed_blocks: header.flags & FLAG_DIRECT_BLOCKS_CHECKSUMMED != 0,
            filtered: header.filter_len > 0,
            heap_offset_width,
            heap_length_width,
            huge: huge_access(ctx, &header)?,
            table: header.table.clone(),
            direct_blocks: Vec::new(),
        };
        heap.direct_blocks = heap.collect_direct_blocks(ctx, &header)?;
        Ok(heap)
    }

    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    pub fn address(&self) -> u64 {
        self.address
    }
    /// Length in bytes of this heap's object IDs.
    pub fn id_len(&self) -> usize {
        self.id_len
    }

    /// The object named by `heap_id`, an ID whose own place in the file is not known
    /// (a shared message's): errors in the ID name the heap, and a tiny object, kept
    /// inside its ID, is placed at the heap.
    pub fn get(&self, ctx: &FormatContext, heap_id: &[u8]) -> Result<Located<Vec<u8>>> {
        self.fetch(ctx, Located::at(self.address, heap_id), false, &mut BlockCache::new())
    }

    /// The object named by the ID `heap_id` (as found in a B-tree record, with its
    /// address), keeping verified direct blocks in `cache` so that many objects from
    /// the same blocks cost one read and one checksum per block.
    pub fn get_cached(&self, ctx: &FormatContext, heap_id: Located<&[u8]>, cache: &mut BlockCache) -> Result<Located<Vec<u8>>> {
        self.fetch(ctx, heap_id, true, cache)
    }

    /// The object and its file address. `placed`: `heap_id`'s address is the ID's
    /// own (else the heap's, standing in for it).
    fn fetch(&self, ctx: &FormatContext, heap_id: Located<&[u8]>, placed: bool, cache: &mut BlockCache) -> Result<Located<Vec<u8>>> {
        let at = heap_id.address();
        let first = *heap_id.first().ok_or_else(|| Error::format("empty fractal heap ID").at(at))?;
        if first >> 6 != 0 {
            return Err(crate::format_err!("fractal heap ID version {} is not 0", first >> 6).at(at));
        }
        match (first >> 4) & 0x3 {
            ID_MANAGED => self.get_managed(ctx, heap_id, cache),
            ID_HUGE => self.get_huge(ctx, heap_id),
            ID_TINY => self.get_tiny(heap_id, placed),
            t => Err(crate::format_err!("fractal heap ID has unknown type {}", t).at(at)),
        }
    }

    /// A tiny object: its bytes follow the ID's length field.
    fn get_tiny(&self, heap_id: Located<&[u8]>, placed: bool) -> Result<Located<Vec<u8>>> {
        let extended = self.id_len.saturating_sub(1) > TINY_LEN_SHORT + 1;
        let (len, start) = if extended {
            let low = *heap_id.get(1).ok_or_else(|| self.id_error("tiny", &heap_id))?;
            (((heap_id[0] as usize & 0x0f) << 8 | low as usize) + 1, 2)
        } else {
            ((heap_id[0] as usize & 0x0f) + 1, 1)
        };
        let object = heap_id.slice(start..start + len).ok_or_else(|| self.id_error("tiny", &heap_id))?;
        Ok(if placed { object.copied() } else { Located::at(heap_id.address(), object.to_vec()) })
    }

    fn get_managed(&self, ctx: &FormatContext, heap_id: Located<&[u8]>, cache: &mut BlockCache) -> Result<Located<Vec<u8>>> {
        if self.filtered {
            return Err(self.filtered_error());
        }
        let mut r = heap_id.reader(self.sizes);
        r.skip(1)?;
        let offset = r.uint(self.heap_offset_width).map_err(|_| self.id_error("managed", &heap_id))?;
        let length = r.uint(self.heap_length_width).map_err(|_| self.id_error("managed", &heap_id))?;
        let block = self.block_containing(offset)?;
        let start = offset - block.heap_offset;
        let end = start.checked_add(length).filter(|&e| e <= block.size && start >= self.direct_header_size());
        let Some(end) = end else {
            return Err(crate::format_err!(
                "fractal heap object of {} bytes at heap offset {} does not fit its direct block",
                length,
                offset
            )
            .at(block.address));
        };
        let data = self.direct_block(ctx, block, cache)?;
        data.get(start as usize..end as usize)
            .map(|bytes| Located::at(block.address + start, bytes.to_vec()))
            .ok_or_else(|| Error::format("fractal heap direct block shorter than its size").at(block.address))
    }

    fn get_huge(&self, ctx: &FormatContext, heap_id: Located<&[u8]>) -> Result<Located<Vec<u8>>> {
        if self.filtered {
            return Err(self.filtered_error());
        }
        let mut r = heap_id.reader(self.sizes);
        r.skip(1)?;
        let (address, length) = match &self.huge {
            HugeAccess::Direct => {
                let address = r.address_field()?.ok_or_else(|| self.id_error("huge", &heap_id))?;
                (address, r.length()?)
            }
            HugeAccess::Indirect { key_width, btree } => {
                let key = r.uint(*key_width)?;
                let btree = btree
                    .as_ref()
                    .ok_or_else(|| Error::format("fractal heap has a huge object ID but no huge-object B-tree"))
                    .map_err(|e| e.at(self.address))?;
                self.find_huge(ctx, btree, key)?
            }
        };
        Ok(Located::at(address, ctx.read(address, length, "huge fractal heap object")?))
    }

    /// Address and length of huge object `key`, from the huge-object B-tree.
    fn find_huge(&self, ctx: &FormatContext, btree: &BTreeV2, key: u64) -> Result<(u64, u64)> {
        let (o, l) = (self.sizes.offset as usize, self.sizes.length as usize);
        let field = |rec: Located<&[u8]>, start: usize, len: usize| {
            rec.get(start..start + len)
                .map(le_uint)
                .ok_or_else(|| Error::format("huge-object B-tree record too short").at(rec.address()))
        };
        let record = btree.find_record(ctx, &mut |rec| Ok(field(rec, o + l, l)?.cmp(&key)))?;
        let record = record.ok_or_else(|| {
            crate::format_err!("huge fractal heap object {} is not in its B-tree", key).at(btree.address())
        })?;
        Ok((field(record.view(), 0, o)?, field(record.view(), o, l)?))
    }

    /// The direct block whose heap span holds `offset`.
    fn block_containing(&self, offset: u64) -> Result<DirectBlock> {
        let index = self.direct_blocks.partition_point(|b| b.heap_offset <= offset);
        index
            .checked_sub(1)
            .map(|i| self.direct_blocks[i])
            .filter(|b| offset - b.heap_offset < b.size)
            .ok_or_else(|| {
                crate::format_err!("fractal heap offset {} lies in no allocated direct block", offset).at(self.address)
            })
    }

    /// Size of a direct block's header (signature .. checksum).
    fn direct_header_size(&self) -> u64 {
        let checksum = if self.checksummed_blocks { 4 } else { 0 };
        (5 + self.sizes.offset as usize + self.heap_offset_width + checksum) as u64
    }

    /// The bytes of `block`, read, checked and verified once per cache.
    fn direct_block<'c>(&self, ctx: &FormatContext, block: DirectBlock, cache: &'c mut BlockCache) -> Result<&'c [u8]> {
        let data = match cache.blocks.entry(block.address) {
            std::collections::hash_map::Entry::Occupied(slot) => slot.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => slot.insert(self.read_direct_block(ctx, block)?),
        };
        Ok(data.as_slice())
    }

    fn read_direct_block(&self, ctx: &FormatContext, block: DirectBlock) -> Result<Vec<u8>> {
        const WHAT: &str = "fractal heap direct block";
        let data = ctx.read(block.address, block.size, WHAT)?;
        let mut r = ctx.reader(&data, block.address);
        r.signature(b"FHDB", WHAT)?;
        if self.checksummed_blocks {
            // The checksum follows signature, version, heap address and block offset;
            // verified first so that damage is reported as such.
            let checksum_at = 5 + self.sizes.offset as usize + self.heap_offset_width;
            verify_with_zeroed_checksum(&data, checksum_at, block.address)?;
        }
        self.check_block_prefix(&mut r, block.heap_offset, WHAT)?;
        Ok(data)
    }

    /// Version, owning heap and heap offset at the start of every heap block.
    fn check_block_prefix(&self, r: &mut ByteReader, heap_offset: u64, what: &str) -> Result<()> {
        let at = r.address();
        let version = r.u8()?;
        let owner = r.address_field()?;
        let offset = r.uint(self.heap_offset_width)?;
        if version != 0 || owner != Some(self.address) || offset != heap_offset {
            return Err(crate::format_err!(
                "{} (version {}, heap {:?}, heap offset {}) does not belong at heap offset {} of the heap at {}",
                what,
                version,
                owner,
                offset,
                heap_offset,
                self.address
            )
            .at(at));
        }
        Ok(())
    }

    /// Walk the root block (and indirect blocks below it) into a sorted block map.
    fn collect_direct_blocks(&self, ctx: &FormatContext, header: &Header) -> Result<Vec<DirectBlock>> {
        let mut blocks = Vec::new();
        let Some(root) = header.root else { return Ok(blocks) };
        if header.root_rows == 0 {
            blocks.push(DirectBlock { heap_offset: 0, size: header.start_block_size, address: root });
        } else {
            let mut visited = HashSet::new();
            self.collect_indirect(ctx, root, 0, header.root_rows, &mut visited, &mut blocks)?;
        }
        blocks.sort_by_key(|b| b.heap_offset);
        Ok(blocks)
    }

    fn collect_indirect(
        &self,
        ctx: &FormatContext,
        address: u64,
        heap_offset: u64,
        rows: usize,
        visited: &mut HashSet<u64>,
        blocks: &mut Vec<DirectBlock>,
    ) -> Result<()> {
        const WHAT: &str = "fractal heap indirect block";
        if !visited.insert(address) {
            return Err(crate::format_err!("{} is reached twice (cycle in the heap)", WHAT).at(address));
        }
        let width = self.table.width as usize;
        let direct_rows = rows.min(self.table.max_direct_rows);
        let direct_entry = self.sizes.offset as u64 + if self.filtered { self.sizes.length as u64 + 4 } else { 0 };
        let entries_len = (direct_rows * width) as u64 * direct_entry
            + ((rows - direct_rows) * width) as u64 * self.sizes.offset as u64;
        let len = 5 + self.sizes.offset as u64 + self.heap_offset_width as u64 + entries_len + 4;
        let data = ctx.read(address, len, WHAT)?;
        verify_trailing(&data, WHAT, address)?;
        let mut r = ctx.reader(&data, address);
        r.signature(b"FHIB", WHAT)?;
        self.check_block_prefix(&mut r, heap_offset, WHAT)?;
        for entry in 0..rows * width {
            let (row, column) = (entry / width, (entry % width) as u64);
            let child = r.address_field()?;
            if row < direct_rows {
                r.skip((direct_entry - self.sizes.offset as u64) as usize)?;
            }
            let Some(child) = child else { continue };
            let size = self.table.row_block_size[row];
            let child_offset = column
                .checked_mul(size)
                .and_then(|c| c.checked_add(self.table.row_offset[row]))
                .and_then(|c| c.checked_add(heap_offset))
                .ok_or_else(|| crate::format_err!("{} child lies beyond the heap's address space", WHAT).at(address))?;
            if row < direct_rows {
                blocks.push(DirectBlock { heap_offset: child_offset, size, address: child });
            } else {
                // Child rows shrink strictly, which also bounds the recursion depth.
                let child_rows = self.table.rows_for_indirect(size).filter(|&n| n < rows).ok_or_else(|| {
                    crate::format_err!("{} in row {} cannot hold a child indirect block", WHAT, row).at(address)
                })?;
                self.collect_indirect(ctx, child, child_offset, child_rows, visited, blocks)?;
            }
        }
        Ok(())
    }

    fn id_error(&self, kind: &str, heap_id: &Located<&[u8]>) -> Error {
        crate::format_err!("{} fractal heap ID of {} bytes is too short for its contents", kind, heap_id.len())
            .at(heap_id.address())
    }

    fn filtered_error(&self) -> Error {
        crate::unsupported!("fractal heap with I/O filters (compressed dense storage) is not supported")
            .at(self.address)
    }
}

/// Bytes of an offset inside the largest direct block (libhdf5's "max_dir_blk_off_size").
fn direct_block_offset_width(max_direct_size: u64) -> usize {
    (max_direct_size.trailing_zeros() as usize).div_ceil(8)
}

fn read_header(ctx: &FormatContext, address: u64) -> Result<Header> {
    const WHAT: &str = "fractal heap header";
    let (o, l) = (ctx.sizes().offset as u64, ctx.sizes().length as u64);
    // Everything but the optional filter information.
    let fixed_len = 22 + 12 * l + 3 * o + 4;
    let prefix = ctx.read(address, fixed_len, WHAT)?;
    let filter_len = u16::from_le_bytes([prefix[7], prefix[8]]) as u64;
    let data = if filter_len > 0 { ctx.read(address, fixed_len + l + 4 + filter_len, WHAT)? } else { prefix };
    verify_trailing(&data, WHAT, address)?;
    parse_header(&mut ctx.reader(&data, address), address)
}

fn parse_header(r: &mut ByteReader, address: u64) -> Result<Header> {
    r.signature(b"FRHP", "fractal heap header")?;
    let version = r.u8()?;
    if version != 0 {
        return Err(crate::format_err!("fractal heap header version {} is not 0", version).at(address));
    }
    let id_len = r.u16()? as usize;
    let filter_len = r.u16()? as usize;
    let flags = r.u8()?;
    let max_managed_size = r.u32()?;
    r.length()?; // next huge object ID: only writers need it
    let huge_btree = r.address_field()?;
    r.length()?; // free space in managed blocks
    r.address_field()?; // free-space manager
    r.skip(8 * r.sizes().length as usize)?; // space and object statistics
    let table_width = r.u16()?;
    let start_block_size = r.length()?;
    let max_direct_size = r.length()?;
    let max_heap_bits = r.u16()?;
    r.u16()?; // starting rows of the root indirect block: a creation parameter
    let root = r.address_field()?;
    let root_rows = r.u16()? as usize;
    if id_len == 0 {
        return Err(Error::format("fractal heap ID length is 0").at(address));
    }
    let table = DoublingTable::new(table_width, start_block_size, max_direct_size, max_heap_bits)
        .map_err(|e| e.at(address))?;
    if root_rows > table.rows() {
        return Err(crate::format_err!(
            "fractal heap root indirect block has {} rows, more than the {} its table allows",
            root_rows,
            table.rows()
        )
        .at(address));
    }
    Ok(Header {
        id_len,
        filter_len,
        flags,
        max_managed_size,
        huge_btree,
        table,
        max_heap_bits,
        max_direct_size,
        start_block_size,
        root,
        root_rows,
    })
}

/// Huge-object ID layout, decided from the ID length as libhdf5 does when it creates
/// the heap: address and length go in the ID whenever they fit.
fn huge_access(ctx: &FormatContext, header: &Header) -> Result<HugeAccess> {
    let (o, l) = (ctx.sizes().offset as usize, ctx.sizes().length as usize);
    let room = header.id_len - 1;
    let direct_room = if header.filter_len > 0 { o + 3 * l + 4 } else { o + l };
    if room >= direct_room {
        return Ok(HugeAccess::Direct);
    }
    let btree = match header.huge_btree {
        Some(a) => {
            let tree = BTreeV2::open(ctx, a)?;
            if header.filter_len == 0 && (tree.record_type() != HUGE_RECORD_UNFILTERED || tree.record_size() < o + 2 * l)
            {
                return Err(crate::format_err!(
                    "huge-object B-tree has record type {} size {}, expected type 1 of {} bytes",
                    tree.record_type(),
                    tree.record_size(),
                    o + 2 * l
                )
                .at(a));
            }
            Some(tree)
        }
        None => None,
    };
    Ok(HugeAccess::Indirect { key_width: room.min(8), btree })
}

/// Direct-block checksums cover the whole block with the checksum field zeroed.
fn verify_with_zeroed_checksum(data: &[u8], checksum_at: usize, address: u64) -> Result<()> {
    let mut copy = data.to_vec();
    let field = copy
        .get_mut(checksum_at..checksum_at + 4)
        .ok_or_else(|| Error::format("fractal heap direct block too short for its checksum").at(address))?;
    let stored = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
    field.fill(0);
    let computed = metadata_checksum(&copy);
    if stored != computed {
        return Err(crate::format_err!(
            "fractal heap direct block checksum mismatch: stored {:#010x}, computed {:#010x}",
            stored,
            computed
        )
        .at(address));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_table_rows() {
        // libhdf5's defaults for dense links: width 4, 512-byte start, 64 KiB direct, 2^32 heap.
        let t = DoublingTable::new(4, 512, 65536, 32).unwrap();
        assert_eq!(t.first_row_bits, 11);
        assert_eq!(t.max_direct_rows, 9);
        assert_eq!(&t.row_block_size[..4], &[512, 512, 1024, 2048]);
        assert_eq!(&t.row_offset[..4], &[0, 2048, 4096, 8192]);
        assert_eq!(t.rows(), 22);
        // Row 9 blocks are 128 KiB: an indirect block with 7 rows of width 4 (2^17 bytes).
        assert_eq!(t.rows_for_indirect(t.row_block_size[9]), Some(7));
        assert_eq!(t.rows_for_indirect(512), None);
    }

    #[test]
    fn malformed_tables_are_rejected() {
        assert!(DoublingTable::new(3, 512, 65536, 32).is_err());
        assert!(DoublingTable::new(4, 0, 65536, 32).is_err());
        assert!(DoublingTable::new(4, 1024, 512, 32).is_err());
        assert!(DoublingTable::new(4, 512, 65536, 65).is_err());
        assert!(DoublingTable::new(4, 512, 65536, 8).is_err());
    }

    #[test]
    fn id_field_widths() {
        assert_eq!(direct_block_offset_width(65536), 2);
        assert_eq!(direct_block_offset_width(1 << 17), 3);
    }
}
