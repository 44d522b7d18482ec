//! Global heap collections ("GCOL"): where variable-length data (vlen strings and
//! sequences, region references) keep their bytes. A vlen element in a dataset is a
//! small reference (length, collection address, object index) into one of them.

use super::context::FormatContext;
use super::reader::{ByteReader, Located};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, RwLock};

/// One parsed collection: its bytes and where each object lies in them.
#[derive(Debug)]
pub(crate) struct Collection {
    /// The whole collection, at its address.
    data: Located<Vec<u8>>,
    /// (object index, its bytes in `data`), sorted by index.
    objects: Vec<(u16, Range<usize>)>,
}

impl Collection {
    /// The bytes of object `index`.
    pub(crate) fn object(&self, index: u32) -> Result<&[u8]> {
        self.located_object(index).map(Located::into_bytes)
    }

    /// The bytes of object `index` at their address (parse them there, so that their
    /// errors name the object's place in the file).
    pub(crate) fn located_object(&self, index: u32) -> Result<Located<&[u8]>> {
        let range = u16::try_from(index).ok().and_then(|i| self.range_of(i));
        range
            .and_then(|r| self.data.slice(r.clone()))
            .ok_or_else(|| Error::format(format!("global heap collection has no object {}", index)))
    }

    fn range_of(&self, index: u16) -> Option<&Range<usize>> {
        // objects are numbered 1, 2, 3 ... as they are written: usually found in place
        match self.objects.get(usize::from(index).wrapping_sub(1)) {
            Some((i, range)) if *i == index => Some(range),
            _ => self.objects.binary_search_by_key(&index, |(i, _)| *i).ok().map(|at| &self.objects[at].1),
        }
    }
}

/// Parsed collections by address, shared by all readers of one file. Vlen reads are
/// rare next to chunk reads, so one lock is enough.
#[derive(Debug, Default)]
pub struct GlobalHeapCache {
    collections: RwLock<HashMap<u64, Arc<Collection>>>,
}

/// A vlen element as stored in a dataset or attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlenRef {
    /// Number of base elements (bytes for strings).
    pub length: u32,
    /// `None` (undefined address) for an empty element.
    pub collection: Option<u64>,
    pub index: u32,
}

impl VlenRef {
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// Bytes in a stored vlen element: 4 (length) + offset size + 4 (index).
    pub fn encoded_size(ctx: &FormatContext) -> usize {
        8 + ctx.sizes().offset as usize
    }

    pub fn parse(ctx: &FormatContext, raw: &[u8]) -> Result<VlenRef> {
        let mut r = ByteReader::new(raw, 0, ctx.sizes());
        let length = r.u32()?;
        let collection = r.address_field()?;
        let index = r.u32()?;
        Ok(VlenRef { length, collection, index })
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0 || self.collection.is_none()
    }
}

impl GlobalHeapCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes of object `index` in the collection at `collection_address`, with
    /// their own address (where a structure stored in them lies: parse it there).
    pub fn get(&self, ctx: &FormatContext, collection_address: u64, index: u32) -> Result<Located<Vec<u8>>> {
        let collection = self.collection(ctx, collection_address)?;
        let bytes = collection.located_object(index).map_err(|e| e.at(collection_address))?;
        Ok(bytes.copied())
    }

    /// The heap bytes of one stored vlen element (empty for length 0 or no collection).
    pub fn read_vlen(&self, ctx: &FormatContext, raw_element: &[u8]) -> Result<Vec<u8>> {
        let vref = VlenRef::parse(ctx, raw_element)?;
        match vref.collection {
            Some(addr) if vref.length > 0 => self.get(ctx, addr, vref.index).map(Located::into_bytes),
            _ => Ok(Vec::new()),
        }
    }

    /// Number of collections parsed and kept.
    pub fn len(&self) -> usize {
        self.read_lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drop every cached collection (they are re-read on demand).
    pub fn clear(&self) {
        self.collections.write().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
    }

    /// The collection at `address`, parsed on first use.
    pub(crate) fn collection(&self, ctx: &FormatContext, address: u64) -> Result<Arc<Collection>> {
        if let Some(c) = self.read_lock().get(&address) {
            return Ok(Arc::clone(c));
        }
        let parsed = Arc::new(load_collection(ctx, address)?);
        let mut map = self.collections.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(Arc::clone(map.entry(address).or_insert(parsed)))
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u64, Arc<Collection>>> {
        // A panic elsewhere cannot leave the map half-updated (inserts are atomic).
        self.collections.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn load_collection(ctx: &FormatContext, address: u64) -> Result<Collection> {
    let length_size = ctx.sizes().length as u64;
    let header = ctx.read(address, 8 + length_size, "global heap collection header")?;
    let mut r = ctx.reader(&header, address);
    r.signature(b"GCOL", "global heap collection")?;
    let version = r.u8()?;
    if version != 1 {
        return Err(Error::format(format!("global heap collection version {} is not 1", version)).at(address));
    }
    r.skip(3)?;
    let size = r.length()?;
    if size < aligned_header_size(length_size as u8) as u64 || size > ctx.available_from(address) {
        return Err(Error::format(format!(
            "global heap collection size {} is impossible ({} bytes left in the file)",
            size,
            ctx.available_from(address)
        ))
        .at(address));
    }
    let data = ctx.read(address, size, "global heap collection")?;
    let objects = index_objects(ctx, &data, address)?;
    Ok(Collection { data: Located::at(address, data), objects })
}

/// Bytes of a collection header (before the first object), and of an object header:
/// both are 8 + size of lengths, rounded up to a multiple of 8.
fn aligned_header_size(length_size: u8) -> usize {
    (8 + usize::from(length_size)).next_multiple_of(8)
}

/// Walk the objects of a collection; object index 0 is the free space that ends it.
fn index_objects(ctx: &FormatContext, data: &[u8], address: u64) -> Result<Vec<(u16, Range<usize>)>> {
    let mut r = ctx.reader(data, address);
    // The collection header ("GCOL", version, 3 reserved, collection size) is
    // rounded up to a multiple of 8 (libhdf5's H5HG_SIZEOF_HDR); objects follow it.
    r.skip(aligned_header_size(ctx.sizes().length))?;
    // Object header: index (2), reference count (2), reserved (4), size (size of
    // lengths), also rounded up to a multiple of 8 (H5HG_SIZEOF_OBJHDR); the data
    // follows it and is padded to a multiple of 8.
    let object_header = aligned_header_size(ctx.sizes().length);
    let mut objects = Vec::new();
    while r.remaining() >= object_header {
        let index = r.u16()?;
        if index == 0 {
            break;
        }
        r.skip(2 + 4)?; // reference count, reserved
        let size = r.length()?;
        r.skip(object_header - (8 + ctx.sizes().length as usize))?; // header padding
        let size = usize::try_from(size).ok().filter(|&s| s <= r.remaining()).ok_or_else(|| {
            r.error(format!("global heap object {} of {} bytes overruns its collection", index, size))
        })?;
        let start = r.position();
        r.skip(size)?;
        objects.push((index, start..start + size));
        // Object data is padded to a multiple of 8; the last object may end the collection.
        let pad = (8 - size % 8) % 8;
        r.skip(pad.min(r.remaining()))?;
    }
    // a damaged collection may repeat an index: the last one stands, as it always has
    objects.reverse();
    objects.sort_by_key(|(index, _)| *index);
    objects.dedup_by_key(|(index, _)| *index);
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::reader::Sizes;
    use crate::io::MemSource;
    use std::path::Path;

    fn object(index: u16, bytes: &[u8]) -> Vec<u8> {
        let mut o = index.to_le_bytes().to_vec();
        o.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
        o.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        o.extend_from_slice(bytes);
        o.resize(o.len() + (8 - bytes.len() % 8) % 8, 0);
        o
    }

    fn heap_file() -> Vec<u8> {
        let mut body = object(1, b"hello");
        body.extend(object(2, &[1, 2, 3, 4, 5, 6, 7, 8]));
        body.extend(object(0, &[]));
        let mut file = vec![0u8; 16]; // collection at address 16
        file.extend_from_slice(b"GCOL\x01\0\0\0");
        file.extend_from_slice(&((16 + body.len()) as u64).to_le_bytes());
        file.extend(body);
        file
    }

    fn ctx(bytes: Vec<u8>) -> FormatContext {
        FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("mem"), Sizes::DEFAULT, 0)
    }

    fn vlen(length: u32, addr: u64, index: u32) -> Vec<u8> {
        let mut v = length.to_le_bytes().to_vec();
        v.extend_from_slice(&addr.to_le_bytes());
        v.extend_from_slice(&index.to_le_bytes());
        v
    }

    #[test]
    fn reads_objects_and_vlen() {
        let ctx = ctx(heap_file());
        let cache = GlobalHeapCache::new();
        // each object's data follows the collection's and its own 16-byte headers
        assert_eq!(cache.get(&ctx, 16, 1).unwrap(), Located::at(48, b"hello".to_vec()));
        assert_eq!(cache.get(&ctx, 16, 2).unwrap(), Located::at(72, vec![1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(cache.read_vlen(&ctx, &vlen(5, 16, 1)).unwrap(), b"hello");
        assert!(cache.read_vlen(&ctx, &vlen(0, 16, 1)).unwrap().is_empty());
        assert!(cache.read_vlen(&ctx, &vlen(3, u64::MAX, 0)).unwrap().is_empty());
        assert!(cache.get(&ctx, 16, 3).is_err());
        assert!(cache.get(&ctx, 16, 70000).is_err());
    }

    #[test]
    fn shared_between_threads() {
        fn assert_sync<T: Send + Sync>() {}
        assert_sync::<GlobalHeapCache>();
        let ctx = ctx(heap_file());
        let cache = GlobalHeapCache::new();
        std::thread::scope(|s| {
            for i in 0..4u32 {
                let (ctx, cache) = (&ctx, &cache);
                s.spawn(move || {
                    for _ in 0..100 {
                        let want: &[u8] = if i % 2 == 0 { b"hello" } else { &[1, 2, 3, 4, 5, 6, 7, 8] };
                        assert_eq!(cache.get(ctx, 16, 1 + i % 2).unwrap().bytes(), want);
                    }
                });
            }
        });
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn corrupt_collections_are_errors() {
        let good = heap_file();
        let cache = GlobalHeapCache::new();
        assert!(cache.get(&ctx(good.clone()), 0, 1).is_err(), "no signature at 0");
        let mut bad_size = good.clone();
        bad_size[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(cache.get(&ctx(bad_size), 16, 1).is_err());
        let mut bad_object = good.clone();
        bad_object[40..48].copy_from_slice(&1000u64.to_le_bytes());
        assert!(cache.get(&ctx(bad_object), 16, 1).is_err());
        for n in 0..good.len() {
            let _ = GlobalHeapCache::new().get(&ctx(good[..n].to_vec()), 16, 2);
        }
    }
}
