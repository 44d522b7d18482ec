//! Shared object header messages (SOHM): files written with H5Pset_shared_mesg_* (or
//! `h5repack -s`) store each distinct dataspace, datatype, fill value, filter pipeline
//! or attribute once, in a fractal heap per index, and object headers refer to it by
//! heap id. The superblock extension's Shared Message Table message points to the
//! table ("SMTB") of indexes; index i holds the message types whose bit (1 << type)
//! is set in its flags.

use super::checksum::verify_trailing;
use super::fractal_heap::FractalHeap;
use super::reader::{ByteReader, Located};
use super::FormatContext;
use crate::error::{Error, Result};
use std::sync::OnceLock;

/// libhdf5 allows at most this many indexes (H5O_SHMESG_MAX_NINDEXES).
const MAX_INDEXES: u8 = 8;
/// Bytes per index in the table: version, type, flags, minimum size, list and B-tree
/// cutoffs, message count, index address, heap address (8-byte addresses).
const INDEX_FIXED: usize = 1 + 1 + 2 + 4 + 2 + 2 + 2;

struct Index {
    types: u16,
    heap_address: Option<u64>,
    heap: OnceLock<FractalHeap>,
}

/// The file's SOHM indexes, their heaps opened on first use.
pub struct SharedMessages {
    indexes: Vec<Index>,
}

impl SharedMessages {
    /// Parse the superblock extension's Shared Message Table message and the table.
    pub fn read(ctx: &FormatContext, message: &[u8], at: u64) -> Result<SharedMessages> {
        let mut r = ByteReader::new(message, at, ctx.sizes());
        let version = r.u8()?;
        if version != 0 {
            return Err(r.error(format!("shared message table message version {} (0 is known)", version)));
        }
        let table = r.required_address("shared message table")?;
        let count = r.u8()?;
        if count > MAX_INDEXES {
            return Err(r.error(format!("{} shared message indexes (at most {})", count, MAX_INDEXES)));
        }
        let offset = usize::from(ctx.sizes().offset);
        let len = 4 + usize::from(count) * (INDEX_FIXED + 2 * offset) + 4;
        let bytes = ctx.read(table, len as u64, "shared message table")?;
        verify_trailing(&bytes, "shared message table", table)?;
        let mut r = ctx.reader(&bytes[..len - 4], table);
        r.signature(b"SMTB", "shared message table")?;
        let indexes = (0..count).map(|_| index(&mut r)).collect::<Result<_>>()?;
        Ok(SharedMessages { indexes })
    }

    /// The body of a message of type `type_id` stored under `heap_id`, with its place
    /// in the heap (where its errors lie).
    pub fn message(&self, ctx: &FormatContext, type_id: u16, heap_id: &[u8; 8]) -> Result<Located<Vec<u8>>> {
        // the old fill value message (0x0004) shares the new one's index (0x0005)
        let keyed = if type_id == 0x0004 { 0x0005 } else { type_id };
        let bit = 1u32.checked_shl(u32::from(keyed)).unwrap_or(0);
        let index = self
            .indexes
            .iter()
            .find(|i| u32::from(i.types) & bit != 0)
            .ok_or_else(|| Error::format(format!("no shared message index holds messages of type {:#06x}", type_id)))?;
        let address = index
            .heap_address
            .ok_or_else(|| Error::format(format!("shared message index for type {:#06x} has no heap", type_id)))?;
        let heap = match index.heap.get() {
            Some(heap) => heap,
            None => {
                let opened = FractalHeap::open(ctx, address)?;
                index.heap.get_or_init(|| opened)
            }
        };
        heap.get(ctx, heap_id)
    }
}

fn index(r: &mut ByteReader) -> Result<Index> {
    let version = r.u8()?;
    if version != 0 {
        return Err(r.error(format!("shared message index version {} (0 is known)", version)));
    }
    let _kind = r.u8()?; // list or v2 B-tree: only lookups by heap id are needed
    let types = r.u16()?;
    r.skip(4 + 2 + 2 + 2)?; // minimum size, cutoffs, message count
    let _index_address = r.address_field()?;
    let heap_address = r.address_field()?;
    Ok(Index { types, heap_address, heap: OnceLock::new() })
}
