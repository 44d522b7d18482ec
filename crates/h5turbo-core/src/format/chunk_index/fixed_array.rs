//! Fixed array chunk index (layout v4+, all max dims fixed): header "FAHD" and one
//! data block "FADB" holding one element per chunk of the *max-dims* grid, in
//! row-major order of that grid (H5Dfarray.c). Data blocks with more elements than
//! a page are split into pages, each with its own checksum; a bitmap in the data
//! block prefix says which pages were ever written (H5FAcache.c, H5FAdblkpage.c).

use super::super::checksum::verify_trailing;
use super::super::context::FormatContext;
use super::grid::Grid;
use super::super::recent::Recent;
use super::{filtered_size_bytes, read_element, ChunkLocation, ChunkSink, ElementSink, IndexShape};
use crate::error::{Error, Result};

const CLIENT_UNFILTERED: u8 = 0;
const CLIENT_FILTERED: u8 = 1;

struct Header {
    address: u64,
    client: u8,
    element_size: usize,
    /// Bytes of a filtered element's size field (0 when unfiltered).
    size_bytes: usize,
    page_bits: u8,
    nelmts: u64,
    data_block: Option<u64>,
}

pub(super) fn collect(ctx: &FormatContext, shape: &IndexShape, address: u64, sink: &mut ChunkSink) -> Result<()> {
    let header = read_header(ctx, shape, address)?;
    let Some(data_block) = header.data_block else { return Ok(()) };
    let max_grid = checked_max_grid(shape, &header)?;
    let mut coords = vec![0u64; shape.rank()];
    let mut emit = |index: u64, bytes: &[u8], at: u64| -> Result<()> {
        let mut r = ctx.reader(bytes, at);
        if let Some(location) = read_element(&mut r, header.size_bytes, shape.chunk_bytes)? {
            // index < nelmts <= cells of the max grid, so coords exist.
            if !max_grid.coords_into(index, &mut coords) {
                return Err(Error::format("fixed array index out of grid").at(at));
            }
            sink.add(&coords, location)?;
        }
        Ok(())
    };
    read_data_block(ctx, &header, data_block, &mut emit)
}

/// The chunk grid of the maximum extent, which must number every element.
fn checked_max_grid(shape: &IndexShape, header: &Header) -> Result<Grid> {
    let max_grid = shape.max_grid("fixed array")?;
    if max_grid.cells().map_or(true, |cells| header.nelmts > cells) {
        return Err(Error::format(format!(
            "fixed array holds {} elements, more than the {:?} chunk grid of the maximum extent",
            header.nelmts,
            max_grid.dims()
        ))
        .at(header.address));
    }
    Ok(max_grid)
}

fn read_header(ctx: &FormatContext, shape: &IndexShape, address: u64) -> Result<Header> {
    let sizes = ctx.sizes();
    let len = 4 + 4 + sizes.length as u64 + sizes.offset as u64 + 4;
    let bytes = ctx.read(address, len, "fixed array header")?;
    verify_trailing(&bytes, "fixed array header", address)?;
    let mut r = ctx.reader(&bytes, address);
    r.signature(b"FAHD", "fixed array header")?;
    check_version(r.u8()?, "fixed array header", address)?;
    let client = r.u8()?;
    let element_size = r.u8()? as usize;
    let page_bits = r.u8()?;
    let nelmts = r.length()?;
    let data_block = r.address_field()?;
    let size_bytes = element_layout(client, shape.filtered, element_size, sizes.offset as usize, 0)
        .map_err(|e| e.at(address))?;
    if page_bits >= 64 {
        return Err(Error::format(format!("fixed array page size of 2^{} elements", page_bits)).at(address));
    }
    Ok(Header { address, client, element_size, size_bytes, page_bits, nelmts, data_block })
}

pub(super) fn check_version(version: u8, what: &str, address: u64) -> Result<()> {
    if version != 0 {
        return Err(Error::unsupported(format!("{} version {} (only 0 is defined)", what, version)).at(address));
    }
    Ok(())
}

/// Check the element size against the client (filtered or not) and return the width
/// of the size field of filtered elements (0 for unfiltered ones). `extra` counts
/// bytes that follow the address/size/mask prefix (v2 B-tree scaled offsets).
pub(super) fn element_layout(
    client: u8,
    filtered: bool,
    element_size: usize,
    offset_size: usize,
    extra: usize,
) -> Result<usize> {
    match client {
        CLIENT_UNFILTERED if element_size == offset_size + extra => Ok(0),
        CLIENT_FILTERED => filtered_size_bytes(element_size, offset_size, extra),
        CLIENT_UNFILTERED => Err(Error::format(format!(
            "unfiltered chunk entry of {} bytes, expected {}",
            element_size,
            offset_size + extra
        ))),
        c => Err(Error::format(format!("unknown chunk index client id {}", c))),
    }
    .and_then(|size_bytes| {
        if (size_bytes > 0) != filtered {
            // Chunk entries with sizes exist exactly when the dataset has filters.
            Err(Error::format(format!(
                "chunk index entries are {}filtered but the dataset {} a filter pipeline",
                if size_bytes > 0 { "" } else { "un" },
                if filtered { "has" } else { "has no" }
            )))
        } else {
            Ok(size_bytes)
        }
    })
}

/// The data block as read once: its elements (a block of one page or less) or the
/// bitmap of its pages (each page is read, and checked, on its own).
enum DataBlock {
    Whole { elements: Vec<u8>, first_address: u64 },
    Paged { bitmap: Vec<u8>, pages_start: u64, page_stride: u64, npages: u64 },
}

fn open_data_block(ctx: &FormatContext, header: &Header, address: u64) -> Result<DataBlock> {
    let offset_size = ctx.sizes().offset as u64;
    let page_nelmts = 1u64 << header.page_bits;
    let element_size = header.element_size as u64;
    let paged = header.nelmts > page_nelmts;
    let npages = if paged { header.nelmts.div_ceil(page_nelmts) } else { 0 };
    let bitmap_len = npages.div_ceil(8);
    let elements_len = if paged { 0 } else { checked_bytes(header.nelmts, element_size, address)? };
    let prefix_len = 4 + 1 + 1 + offset_size + bitmap_len;
    let block_len = elements_len.checked_add(prefix_len + 4);
    let block_len = block_len.filter(|&n| n <= ctx.available_from(address)).ok_or_else(|| {
        Error::format("fixed array data block extends past the end of the file").at(address)
    })?;
    let block = ctx.read(address, block_len, "fixed array data block")?;
    verify_trailing(&block, "fixed array data block", address)?;
    let mut r = ctx.reader(&block, address);
    r.signature(b"FADB", "fixed array data block")?;
    check_version(r.u8()?, "fixed array data block", address)?;
    check_owner(r.u8()?, header.client, r.address_field()?, header.address, address)?;
    if !paged {
        let elements = r.bytes(elements_len as usize)?.to_vec();
        return Ok(DataBlock::Whole { elements, first_address: address + prefix_len });
    }
    let bitmap = r.bytes(bitmap_len as usize)?.to_vec();
    let page_stride = checked_bytes(page_nelmts, element_size, address)?
        .checked_add(4)
        .ok_or_else(|| Error::format("fixed array page size overflows").at(address))?;
    Ok(DataBlock::Paged { bitmap, pages_start: address + prefix_len + 4, page_stride, npages })
}

/// A page of a paged data block: its elements (checksum checked) and its address;
/// `None` for a page never written (every chunk in it is unallocated).
fn read_page(ctx: &FormatContext, header: &Header, block: &DataBlock, page: u64) -> Result<Option<(Vec<u8>, u64)>> {
    let DataBlock::Paged { bitmap, pages_start, page_stride, npages } = block else { return Ok(None) };
    if page >= *npages || !bit_is_set(bitmap, page) {
        return Ok(None);
    }
    let page_nelmts = 1u64 << header.page_bits;
    let count = page_nelmts.min(header.nelmts - page * page_nelmts);
    let page_address = page
        .checked_mul(*page_stride)
        .and_then(|o| pages_start.checked_add(o))
        .ok_or_else(|| Error::format("fixed array page address overflows").at(*pages_start))?;
    // count <= page_nelmts, so this is at most page_stride.
    let mut bytes = ctx.read(page_address, count * header.element_size as u64 + 4, "fixed array data block page")?;
    verify_trailing(&bytes, "fixed array data block page", page_address)?;
    bytes.truncate(bytes.len() - 4);
    Ok(Some((bytes, page_address)))
}

/// Reads the data block (and its pages) and calls `emit(index, element bytes, address)`.
fn read_data_block(ctx: &FormatContext, header: &Header, address: u64, emit: &mut ElementSink) -> Result<()> {
    let block = open_data_block(ctx, header, address)?;
    match &block {
        DataBlock::Whole { elements, first_address } => {
            for_each_element(elements, header.element_size, 0, *first_address, emit)
        }
        DataBlock::Paged { npages, .. } => {
            let page_nelmts = 1u64 << header.page_bits;
            for page in 0..*npages {
                if let Some((elements, page_address)) = read_page(ctx, header, &block, page)? {
                    for_each_element(&elements, header.element_size, page * page_nelmts, page_address, emit)?;
                }
            }
            Ok(())
        }
    }
}

/// Finds one chunk: its element is at the chunk's row-major index in the grid of the
/// maximum extent, in the data block or in one page of it.
pub(super) struct Lookup {
    header: Header,
    max_grid: Grid,
    block: Option<DataBlock>,
    /// Pages read, by page number.
    pages: Recent<(Vec<u8>, u64)>,
}

impl Lookup {
    pub(super) fn new(ctx: &FormatContext, shape: &IndexShape, address: u64) -> Result<Self> {
        let header = read_header(ctx, shape, address)?;
        let max_grid = checked_max_grid(shape, &header)?;
        let block = header.data_block.map(|at| open_data_block(ctx, &header, at)).transpose()?;
        Ok(Lookup { header, max_grid, block, pages: Recent::new() })
    }

    pub(super) fn find(&self, ctx: &FormatContext, shape: &IndexShape, coords: &[u64]) -> Result<Option<ChunkLocation>> {
        let (Some(block), Some(index)) = (&self.block, self.max_grid.linear(coords)) else { return Ok(None) };
        if index >= self.header.nelmts {
            return Ok(None);
        }
        let element_size = self.header.element_size;
        let element = |elements: &[u8], i: u64, first_address: u64| -> Result<Option<ChunkLocation>> {
            let from = i as usize * element_size;
            let bytes = elements.get(from..from + element_size);
            let bytes = bytes.ok_or_else(|| Error::format("fixed array element missing").at(first_address))?;
            read_element(&mut ctx.reader(bytes, first_address + from as u64), self.header.size_bytes, shape.chunk_bytes)
        };
        match block {
            DataBlock::Whole { elements, first_address } => element(elements, index, *first_address),
            DataBlock::Paged { .. } => {
                let page = index >> self.header.page_bits;
                let read = || read_page(ctx, &self.header, block, page);
                let Some(found) = self.pages.get_or_read_optional(page, read)? else { return Ok(None) };
                element(&found.0, index & ((1u64 << self.header.page_bits) - 1), found.1)
            }
        }
    }
}

pub(super) fn checked_bytes(count: u64, element_size: u64, address: u64) -> Result<u64> {
    count
        .checked_mul(element_size)
        .ok_or_else(|| Error::format(format!("{} elements of {} bytes overflow 64 bits", count, element_size)).at(address))
}

/// A block must name the client and the header it belongs to.
pub(super) fn check_owner(client: u8, expected_client: u8, owner: Option<u64>, header: u64, at: u64) -> Result<()> {
    if client != expected_client || owner != Some(header) {
        return Err(Error::format(format!(
            "index block belongs to client {} / header {:?}, expected client {} / header {}",
            client, owner, expected_client, header
        ))
        .at(at));
    }
    Ok(())
}

pub(super) fn for_each_element(
    elements: &[u8],
    element_size: usize,
    first_index: u64,
    first_address: u64,
    emit: &mut ElementSink,
) -> Result<()> {
    for (i, bytes) in elements.chunks_exact(element_size).enumerate() {
        let offset = (i * element_size) as u64;
        emit(first_index + i as u64, bytes, first_address + offset)?;
    }
    Ok(())
}

/// HDF5 bitmaps number bits from the most significant bit of each byte (H5VM_bit_get).
pub(super) fn bit_is_set(bitmap: &[u8], bit: u64) -> bool {
    let byte = (bit / 8) as usize;
    bitmap.get(byte).is_some_and(|b| b & (0x80 >> (bit % 8)) != 0)
}
