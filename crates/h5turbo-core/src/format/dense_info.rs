//! Link info (message 0x0002) and attribute info (message 0x0015): the same layout,
//! saying whether a group's links or an object's attributes live in dense storage (a
//! fractal heap indexed by v2 B-trees) and whether creation order is tracked. The two
//! differ only in the width of the largest creation index.

use super::reader::{ByteReader, Sizes};
use crate::error::Result;
use std::marker::PhantomData;

/// What a dense-storage info message describes.
pub trait InfoKind {
    /// Message name, for errors.
    const WHAT: &'static str;
    /// Bytes of the "maximum creation index" field.
    const MAX_INDEX_BYTES: usize;
}

/// A group's links (link info message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Links;
impl InfoKind for Links {
    const WHAT: &'static str = "link info";
    const MAX_INDEX_BYTES: usize = 8;
}

/// An object's attributes (attribute info message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attributes;
impl InfoKind for Attributes {
    const WHAT: &'static str = "attribute info";
    const MAX_INDEX_BYTES: usize = 2;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseStorageInfo<K> {
    pub creation_order_tracked: bool,
    pub creation_order_indexed: bool,
    /// Largest creation order handed out so far (when tracked).
    pub max_creation_index: Option<u64>,
    /// Fractal heap of the messages; None while they are stored compactly.
    pub heap_address: Option<u64>,
    /// v2 B-tree indexing the messages by name hash (type 5 links, type 8 attributes).
    pub name_index_address: Option<u64>,
    /// v2 B-tree indexing them by creation order, when indexed (type 6 / type 9).
    pub creation_order_index_address: Option<u64>,
    kind: PhantomData<K>,
}

pub type LinkInfo = DenseStorageInfo<Links>;
pub type AttributeInfo = DenseStorageInfo<Attributes>;

impl<K: InfoKind> DenseStorageInfo<K> {
    pub fn parse(data: &[u8], address: u64, sizes: Sizes) -> Result<Self> {
        let mut r = ByteReader::new(data, address, sizes);
        let version = r.u8()?;
        if version != 0 {
            return Err(crate::format_err!("{} message version {} is not 0", K::WHAT, version).at(address));
        }
        let flags = r.u8()?;
        let tracked = flags & 0x01 != 0;
        let indexed = flags & 0x02 != 0;
        let max_creation_index = if tracked { Some(r.uint(K::MAX_INDEX_BYTES)?) } else { None };
        let heap_address = r.address_field()?;
        let name_index_address = r.address_field()?;
        let creation_order_index_address = if indexed { r.address_field()? } else { None };
        Ok(DenseStorageInfo {
            creation_order_tracked: tracked,
            creation_order_indexed: indexed,
            max_creation_index,
            heap_address,
            name_index_address,
            creation_order_index_address,
            kind: PhantomData,
        })
    }

    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// True if the messages live in a fractal heap rather than in the object header.
    pub fn is_dense(&self) -> bool {
        self.heap_address.is_some()
    }
}
