//! Links: the named edges from a group to its members, whatever storage holds them
//! (symbol table, compact link messages, or dense fractal-heap storage).

/// Where a link points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// Address of the target's object header.
    Hard(u64),
    /// A path in this file, resolved when followed.
    Soft(String),
    /// An object in another file.
    External { file: String, path: String },
    /// A link that cannot be followed: a user-defined class, or an external link
    /// whose value cannot be read (libhdf5 writes values past 64 KiB with their
    /// length wrapped). It breaks itself only, as in libhdf5: its group still lists it.
    Unreadable { class: u8, problem: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub target: LinkTarget,
    /// Creation order, when the group tracks it.
    pub creation_order: Option<u64>,
}

pub use super::dense_info::LinkInfo;
use super::btree_v2::{BTreeV2, Record};
use super::checksum::lookup3;
use super::context::FormatContext;
use super::fractal_heap::{BlockCache, FractalHeap};
use super::names::{name_from_bytes, stored_bytes};
use super::reader::{ByteReader, Located, Sizes};
use crate::error::{Error, Result};

/// Link message flag bits.
const LINK_NAME_WIDTH_MASK: u8 = 0x03;
const LINK_HAS_CREATION_ORDER: u8 = 0x04;
const LINK_HAS_TYPE: u8 = 0x08;
const LINK_HAS_CHARSET: u8 = 0x10;
/// Link types.
const LINK_HARD: u8 = 0;
const LINK_SOFT: u8 = 1;
const LINK_EXTERNAL: u8 = 64;
/// v2 B-tree record type of the dense link name index.
const LINK_NAME_INDEX: u8 = 5;

/// Parse a link message (type 0x0006) read from `address`.
pub fn parse_link_message(data: &[u8], address: u64, sizes: Sizes) -> Result<Link> {
    let mut r = ByteReader::new(data, address, sizes);
    let version = r.u8()?;
    if version != 1 {
        return Err(crate::format_err!("link message version {} is not 1", version).at(address));
    }
    let flags = r.u8()?;
    let link_type = if flags & LINK_HAS_TYPE != 0 { r.u8()? } else { LINK_HARD };
    let creation_order = if flags & LINK_HAS_CREATION_ORDER != 0 { Some(r.u64()?) } else { None };
    let charset = if flags & LINK_HAS_CHARSET != 0 { r.u8()? } else { 0 };
    if charset > 1 {
        return Err(crate::format_err!("link name character set {} is neither ASCII nor UTF-8", charset).at(address));
    }
    let name_len = r.uint(1 << (flags & LINK_NAME_WIDTH_MASK))?;
    if name_len == 0 || name_len > r.remaining() as u64 {
        return Err(crate::format_err!("link name length {} does not fit the message", name_len).at(address));
    }
    let name = text(r.bytes(name_len as usize)?);
    let target = parse_link_target(&mut r, link_type)?;
    Ok(Link { name, target, creation_order })
}

fn parse_link_target(r: &mut ByteReader, link_type: u8) -> Result<LinkTarget> {
    match link_type {
        LINK_HARD => Ok(LinkTarget::Hard(r.required_address("hard link target")?)),
        LINK_SOFT => {
            let len = r.u16()? as usize;
            Ok(LinkTarget::Soft(text(r.bytes(len)?)))
        }
        LINK_EXTERNAL => {
            let len = r.u16()? as usize;
            let at = r.address();
            let value = ByteReader::new(r.bytes(len)?, at, r.sizes());
            Ok(parse_external_value(value).unwrap_or_else(|e| LinkTarget::Unreadable {
                class: LINK_EXTERNAL,
                problem: format!("its external link value cannot be read: {}", e.message()),
            }))
        }
        t if t > LINK_EXTERNAL => {
            let len = r.u16()? as usize; // user-defined values are length-prefixed, as external ones
            r.bytes(len)?;
            Ok(LinkTarget::Unreadable { class: t, problem: format!("it is a user-defined link (class {})", t) })
        }
        t => Err(crate::format_err!("link type {} is reserved", t).at(r.address())),
    }
}

/// External link value: a version/flags byte, then the file name and the object path,
/// both NUL-terminated.
fn parse_external_value(mut r: ByteReader) -> Result<LinkTarget> {
    let version_flags = r.u8()?;
    if version_flags >> 4 != 0 {
        return Err(r.error(format!("external link version {} is not 0", version_flags >> 4)));
    }
    let file = text(r.cstring()?);
    let path = text(r.cstring()?);
    Ok(LinkTarget::External { file, path })
}

/// Names and paths are ASCII or UTF-8; anything else is kept byte for byte (see
/// `names`), so a link to a Latin-1 name still leads there.
fn text(bytes: &[u8]) -> String {
    name_from_bytes(bytes)
}

/// All links of a group with dense link storage, in name-index (hash) order.
/// Creation orders are filled in when the group tracks them. Empty for compact groups.
pub fn dense_links(ctx: &FormatContext, info: &LinkInfo) -> Result<Vec<Link>> {
    let Some((heap, index)) = open_dense_storage(ctx, info)? else { return Ok(Vec::new()) };
    let mut records = Vec::new();
    index.for_each_located_record(ctx, &mut |rec| {
        records.push((name_hash(&rec), rec.address(), heap_id(rec, heap.id_len())?.copied()));
        Ok(())
    })?;
    let mut cache = BlockCache::new();
    let mut links = Vec::with_capacity(records.len());
    for (hash, record_address, id) in records {
        let message = heap.get_cached(ctx, id.view(), &mut cache)?;
        let link = parse_link_message(&message, message.address(), ctx.sizes())?;
        if lookup3(&stored_bytes(&link.name), 0) != hash {
            return Err(crate::format_err!("link {:?} does not match its name-index hash", link.name).at(record_address));
        }
        links.push(link);
    }
    // Name-index (hash) order, libhdf5's "native" order; callers sort as they need.
    Ok(links)
}

/// The name hash that begins a name-index record (its size was checked on opening).
fn name_hash(record: &Record<'_>) -> u32 {
    u32::from_le_bytes([record[0], record[1], record[2], record[3]])
}

/// The heap ID that follows the hash in a name-index record, at its place.
fn heap_id<'a>(record: Record<'a>, id_len: usize) -> Result<Located<&'a [u8]>> {
    let at = record.address();
    let bytes = record.into_bytes();
    bytes
        .get(4..4 + id_len)
        .map(|id| Located::at(at + 4, id))
        .ok_or_else(|| Error::format("link name index record is too short for its heap ID").at(at))
}

/// The heap and the name index of a group's dense link storage; `None` when empty.
fn open_dense_storage(ctx: &FormatContext, info: &LinkInfo) -> Result<Option<(FractalHeap, BTreeV2)>> {
    let Some(heap_address) = info.heap_address else { return Ok(None) };
    let index_address = info
        .name_index_address
        .ok_or_else(|| Error::format("dense link storage has a heap but no name index").at(heap_address))?;
    let heap = FractalHeap::open(ctx, heap_address)?;
    let index = BTreeV2::open(ctx, index_address)?;
    if index.record_type() != LINK_NAME_INDEX || index.record_size() < 4 + heap.id_len() {
        return Err(crate::format_err!(
            "link name index has record type {} of {} bytes, expected type 5 of {} bytes",
            index.record_type(),
            index.record_size(),
            4 + heap.id_len()
        )
        .at(index_address));
    }
    Ok(Some((heap, index)))
}

/// How many links a group's dense storage holds (its name index's record count).
pub fn dense_link_count(ctx: &FormatContext, info: &LinkInfo) -> Result<u64> {
    match info.name_index_address {
        Some(address) if info.heap_address.is_some() => Ok(BTreeV2::open(ctx, address)?.total_records()),
        _ => Ok(0),
    }
}

/// The link named `name` in dense storage, found as libhdf5 finds it
/// (H5G__dense_lookup): the name index is ordered by name hash, then by name, so one
/// descent reads the few records' links on its way and no others.
pub fn dense_link(ctx: &FormatContext, info: &LinkInfo, name: &str) -> Result<Option<Link>> {
    let Some((heap, index)) = open_dense_storage(ctx, info)? else { return Ok(None) };
    let name = stored_bytes(name);
    let hash = lookup3(&name, 0);
    let mut found = None;
    let mut cache = BlockCache::new();
    index.find_record(ctx, &mut |record| {
        let stored = name_hash(&record);
        if stored != hash {
            return Ok(stored.cmp(&hash));
        }
        let message = heap.get_cached(ctx, heap_id(record, heap.id_len())?, &mut cache)?;
        let link = parse_link_message(&message, message.address(), ctx.sizes())?;
        let order = stored_bytes(&link.name).as_ref().cmp(name.as_ref());
        if order == std::cmp::Ordering::Equal {
            found = Some(link);
        }
        Ok(order)
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(flags: u8, extra: &[u8], name: &[u8], target: &[u8]) -> Vec<u8> {
        let mut m = vec![1, flags];
        m.extend_from_slice(extra);
        m.push(name.len() as u8);
        m.extend_from_slice(name);
        m.extend_from_slice(target);
        m
    }

    #[test]
    fn hard_link_with_creation_order() {
        let mut extra = 7u64.to_le_bytes().to_vec();
        extra.push(1); // UTF-8
        let m = message(LINK_HAS_CREATION_ORDER | LINK_HAS_CHARSET, &extra, "λ".as_bytes(), &1234u64.to_le_bytes());
        let link = parse_link_message(&m, 0, Sizes::DEFAULT).unwrap();
        assert_eq!(link.name, "λ");
        assert_eq!(link.target, LinkTarget::Hard(1234));
        assert_eq!(link.creation_order, Some(7));
    }

    #[test]
    fn soft_and_external_links() {
        let m = message(LINK_HAS_TYPE, &[LINK_SOFT], b"s", &[4, 0, b'/', b'a', b'/', b'b']);
        assert_eq!(parse_link_message(&m, 0, Sizes::DEFAULT).unwrap().target, LinkTarget::Soft("/a/b".into()));
        let value = b"\0f.h5\0/x\0";
        let mut target = (value.len() as u16).to_le_bytes().to_vec();
        target.extend_from_slice(value);
        let m = message(LINK_HAS_TYPE, &[LINK_EXTERNAL], b"e", &target);
        assert_eq!(
            parse_link_message(&m, 0, Sizes::DEFAULT).unwrap().target,
            LinkTarget::External { file: "f.h5".into(), path: "/x".into() }
        );
    }

    #[test]
    fn malformed_links_are_errors() {
        let good = message(LINK_HAS_TYPE, &[LINK_SOFT], b"s", &[4, 0, b'/', b'a', b'/', b'b']);
        for cut in 0..good.len() {
            assert!(parse_link_message(&good[..cut], 0, Sizes::DEFAULT).is_err(), "cut at {}", cut);
        }
        let reserved = message(LINK_HAS_TYPE, &[5], b"s", &[0, 0]);
        assert_eq!(parse_link_message(&reserved, 0, Sizes::DEFAULT).unwrap_err().kind(), crate::ErrorKind::Format);
        let empty_name = message(0, &[], b"", &1u64.to_le_bytes());
        assert!(parse_link_message(&empty_name, 0, Sizes::DEFAULT).is_err());
        // a value longer than the message is the message's damage
        let overrun = message(LINK_HAS_TYPE, &[LINK_EXTERNAL], b"e", &[9, 0, 0, b'f', 0]);
        assert!(parse_link_message(&overrun, 0, Sizes::DEFAULT).is_err());
    }

    #[test]
    fn links_that_cannot_be_followed_still_parse() {
        // a user-defined class, and an external value without its path (libhdf5 wraps
        // the length of values past 64 KiB): the link is listed, and broken alone
        let user = message(LINK_HAS_TYPE, &[65], b"s", &[2, 0, 7, 7]);
        let target = parse_link_message(&user, 0, Sizes::DEFAULT).unwrap().target;
        assert!(matches!(target, LinkTarget::Unreadable { class: 65, .. }), "{:?}", target);
        let bad_external = message(LINK_HAS_TYPE, &[LINK_EXTERNAL], b"e", &[3, 0, 0, b'f', 0]);
        let target = parse_link_message(&bad_external, 0, Sizes::DEFAULT).unwrap().target;
        assert!(matches!(target, LinkTarget::Unreadable { class: LINK_EXTERNAL, .. }), "{:?}", target);
    }

    #[test]
    fn link_info_fields() {
        let mut m = vec![0, 3];
        m.extend_from_slice(&9u64.to_le_bytes());
        m.extend_from_slice(&100u64.to_le_bytes());
        m.extend_from_slice(&200u64.to_le_bytes());
        m.extend_from_slice(&u64::MAX.to_le_bytes());
        let info = LinkInfo::parse(&m, 0, Sizes::DEFAULT).unwrap();
        assert_eq!(info.max_creation_index, Some(9));
        assert_eq!(info.heap_address, Some(100));
        assert_eq!(info.name_index_address, Some(200));
        assert_eq!(info.creation_order_index_address, None);
        assert!(LinkInfo::parse(&m[..20], 0, Sizes::DEFAULT).is_err());
    }
}
