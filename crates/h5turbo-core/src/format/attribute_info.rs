//! Attribute info message (type 0x0015) and dense attribute storage: attribute
//! messages kept in a fractal heap, indexed by name (v2 B-tree type 8) and optionally
//! by creation order (type 9). Decoding the attribute messages themselves is
//! `attribute.rs`'s job; this module hands out their raw bytes.

pub use super::dense_info::AttributeInfo;
use super::btree_v2::BTreeV2;
use super::checksum::lookup3;
use super::context::FormatContext;
use super::fractal_heap::{BlockCache, FractalHeap};
use super::reader::{ByteReader, Located, Sizes};
use crate::error::{Error, Result};

/// v2 B-tree record types of the two attribute indexes.
const NAME_INDEX: u8 = 8;
const CREATION_ORDER_INDEX: u8 = 9;
/// Heap IDs in attribute indexes are always 8 bytes.
const ATTRIBUTE_HEAP_ID_LEN: usize = 8;
/// Object header message flag: the message is shared (stored elsewhere).
const MESSAGE_SHARED: u8 = 0x02;

/// One entry of an attribute index.
struct IndexEntry {
    /// The heap ID, at its place in the index record.
    heap_id: Located<Vec<u8>>,
    creation_order: u32,
    /// Name hash (type 8 records only).
    hash: Option<u32>,
}

/// Raw attribute messages of an object with dense attribute storage, sorted by name
/// (byte order), each with its address in the heap (to parse it at, so that its
/// errors name its place in the file). Empty when compact.
pub fn dense_attribute_messages(ctx: &FormatContext, info: &AttributeInfo) -> Result<Vec<(Vec<u8>, u64)>> {
    let Some(heap_address) = info.heap_address else { return Ok(Vec::new()) };
    let index_address = info
        .name_index_address
        .ok_or_else(|| Error::format("dense attribute storage has a heap but no name index").at(heap_address))?;
    let entries = read_index(ctx, index_address, NAME_INDEX)?;
    let mut named = fetch_messages(ctx, heap_address, &entries)?;
    named.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(named.into_iter().map(|(_, message)| placed(message)).collect())
}

/// The raw message of the attribute named `name` in dense storage, found as libhdf5
/// finds it (H5A__dense_open): the name index is ordered by name hash, then by name,
/// so one descent reads the few messages on its way and no others (an object with
/// 10,000 attributes: one lookup was every message parsed). None when absent.
pub fn dense_attribute_message(ctx: &FormatContext, info: &AttributeInfo, name: &[u8]) -> Result<Option<(Vec<u8>, u64)>> {
    let Some(heap_address) = info.heap_address else { return Ok(None) };
    let index_address = info
        .name_index_address
        .ok_or_else(|| Error::format("dense attribute storage has a heap but no name index").at(heap_address))?;
    let index = open_index(ctx, index_address, NAME_INDEX)?;
    let heap = FractalHeap::open(ctx, heap_address)?;
    let hash = lookup3(name, 0);
    let mut cache = BlockCache::new();
    let mut found = None;
    index.find_record(ctx, &mut |record| {
        // heap ID (8), message flags (1), creation order (4), name hash (4)
        let at = record.address();
        let bytes = record.into_bytes();
        let stored = u32::from_le_bytes([bytes[13], bytes[14], bytes[15], bytes[16]]);
        if stored != hash {
            return Ok(stored.cmp(&hash));
        }
        if bytes[8] & MESSAGE_SHARED != 0 {
            return Err(crate::unsupported!("shared attribute messages in dense storage").at(at + 8));
        }
        let message = heap.get_cached(ctx, Located::at(at, &bytes[..ATTRIBUTE_HEAP_ID_LEN]), &mut cache)?;
        let order = attribute_message_name(&message, message.address(), ctx.sizes())?.cmp(name);
        if order == std::cmp::Ordering::Equal {
            found = Some(placed(message));
        }
        Ok(order)
    })?;
    Ok(found)
}

/// The attribute index at `address`, checked to hold records of `record_type` (and
/// of their size at least: the fields read from them are there).
fn open_index(ctx: &FormatContext, address: u64, record_type: u8) -> Result<BTreeV2> {
    let index = BTreeV2::open(ctx, address)?;
    let min_size = if record_type == NAME_INDEX { 17 } else { 13 };
    if index.record_type() != record_type || index.record_size() < min_size {
        return Err(crate::format_err!(
            "attribute index has record type {} of {} bytes, expected type {} of {} bytes",
            index.record_type(),
            index.record_size(),
            record_type,
            min_size
        )
        .at(address));
    }
    Ok(index)
}

/// A message's bytes and address, as the callers take them.
fn placed(message: Located<Vec<u8>>) -> (Vec<u8>, u64) {
    let address = message.address();
    (message.into_bytes(), address)
}

/// Like [`dense_attribute_messages`], in creation order: from the creation-order index
/// when there is one, else from the creation orders kept in the name index.
pub fn dense_attribute_messages_by_creation_order(
    ctx: &FormatContext,
    info: &AttributeInfo,
) -> Result<Vec<(Vec<u8>, u64)>> {
    let Some(heap_address) = info.heap_address else { return Ok(Vec::new()) };
    if !info.creation_order_tracked {
        return Err(Error::invalid_argument("attribute creation order is not tracked for this object"));
    }
    let entries = match (info.creation_order_index_address, info.name_index_address) {
        (Some(address), _) => read_index(ctx, address, CREATION_ORDER_INDEX)?,
        (None, Some(address)) => {
            let mut entries = read_index(ctx, address, NAME_INDEX)?;
            entries.sort_by_key(|e| e.creation_order);
            entries
        }
        (None, None) => {
            return Err(Error::format("dense attribute storage has a heap but no index").at(heap_address))
        }
    };
    let named = fetch_messages(ctx, heap_address, &entries)?;
    Ok(named.into_iter().map(|(_, message)| placed(message)).collect())
}

/// Every entry of the attribute index at `address`, in index order.
fn read_index(ctx: &FormatContext, address: u64, record_type: u8) -> Result<Vec<IndexEntry>> {
    let index = open_index(ctx, address, record_type)?;
    let mut entries = Vec::new();
    index.for_each_located_record(ctx, &mut |rec| {
        let mut r = rec.reader(ctx.sizes());
        let heap_id = Located::at(r.address(), r.bytes(ATTRIBUTE_HEAP_ID_LEN)?.to_vec());
        let flags_at = r.address();
        if r.u8()? & MESSAGE_SHARED != 0 {
            return Err(crate::unsupported!("shared attribute messages in dense storage").at(flags_at));
        }
        let creation_order = r.u32()?;
        let hash = if record_type == NAME_INDEX { Some(r.u32()?) } else { None };
        entries.push(IndexEntry { heap_id, creation_order, hash });
        Ok(())
    })?;
    Ok(entries)
}

/// An attribute's name and its message, where the message lies in the file.
type NamedMessage = (Vec<u8>, Located<Vec<u8>>);

/// The messages of `entries` with their names, checked against the indexed hashes.
fn fetch_messages(ctx: &FormatContext, heap_address: u64, entries: &[IndexEntry]) -> Result<Vec<NamedMessage>> {
    let heap = FractalHeap::open(ctx, heap_address)?;
    let mut cache = BlockCache::new();
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let message = heap.get_cached(ctx, entry.heap_id.view(), &mut cache)?;
        let name = attribute_message_name(&message, message.address(), ctx.sizes())?.to_vec();
        if entry.hash.is_some_and(|h| h != lookup3(&name, 0)) {
            return Err(crate::format_err!(
                "attribute {:?} does not match its name-index hash",
                String::from_utf8_lossy(&name)
            )
            .at(message.address()));
        }
        out.push((name, message));
    }
    Ok(out)
}

/// The name of an attribute message (without its NUL), for sorting and hash checks.
/// Versions 1-3 all keep the name length at byte 2 and the name after a fixed prefix.
pub fn attribute_message_name(message: &[u8], address: u64, sizes: Sizes) -> Result<&[u8]> {
    let mut r = ByteReader::new(message, address, sizes);
    let version = r.u8()?;
    r.skip(1)?;
    let name_len = r.u16()? as usize;
    r.skip(4)?; // datatype and dataspace sizes
    match version {
        1 | 2 => {}
        3 => r.skip(1)?, // name character set
        v => return Err(crate::format_err!("attribute message version {} is not 1, 2 or 3", v).at(address)),
    }
    let raw = r.bytes(name_len)?;
    // The stored length counts the terminating NUL.
    Ok(raw.split(|&b| b == 0).next().unwrap_or(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_info_fields() {
        let mut m = vec![0, 3, 5, 0];
        m.extend_from_slice(&100u64.to_le_bytes());
        m.extend_from_slice(&200u64.to_le_bytes());
        m.extend_from_slice(&300u64.to_le_bytes());
        let info = AttributeInfo::parse(&m, 0, Sizes::DEFAULT).unwrap();
        assert_eq!(info.max_creation_index, Some(5));
        assert_eq!(info.heap_address, Some(100));
        assert_eq!(info.creation_order_index_address, Some(300));
        assert!(AttributeInfo::parse(&m[..m.len() - 1], 0, Sizes::DEFAULT).is_err());
        assert!(AttributeInfo::parse(&[1, 0], 0, Sizes::DEFAULT).is_err());
    }

    #[test]
    fn attribute_names_by_version() {
        let v3 = [3u8, 0, 3, 0, 8, 0, 8, 0, 0, b'a', b'b', 0, 0xff];
        assert_eq!(attribute_message_name(&v3, 0, Sizes::DEFAULT).unwrap(), b"ab");
        let v1 = [1u8, 0, 2, 0, 8, 0, 8, 0, b'x', 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(attribute_message_name(&v1, 0, Sizes::DEFAULT).unwrap(), b"x");
        assert!(attribute_message_name(&v3[..10], 0, Sizes::DEFAULT).is_err());
        assert!(attribute_message_name(&[4u8, 0, 0, 0, 0, 0, 0, 0], 0, Sizes::DEFAULT).is_err());
    }
}
