//! Object headers (versions 1 and 2) with their continuation blocks: the list of
//! messages that describe a group, dataset or committed datatype.

use super::checksum::verify_trailing;
use super::context::FormatContext;
use super::reader::ByteReader;
use super::shared::{parse_shared_message, SharedMessage, MESSAGE_FLAG_SHARED};
use crate::error::{Error, Result};
use std::collections::HashSet;

/// Message type ids used by the object model.
pub mod msg {
    pub const NIL: u16 = 0x0000;
    pub const DATASPACE: u16 = 0x0001;
    pub const LINK_INFO: u16 = 0x0002;
    pub const DATATYPE: u16 = 0x0003;
    pub const FILL_VALUE_OLD: u16 = 0x0004;
    pub const FILL_VALUE: u16 = 0x0005;
    pub const LINK: u16 = 0x0006;
    pub const EXTERNAL_FILES: u16 = 0x0007;
    pub const LAYOUT: u16 = 0x0008;
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    pub const GROUP_INFO: u16 = 0x000A;
    pub const FILTER_PIPELINE: u16 = 0x000B;
    pub const ATTRIBUTE: u16 = 0x000C;
    pub const SHARED_MESSAGE_TABLE: u16 = 0x000F;
    pub const CONTINUATION: u16 = 0x0010;
    pub const SYMBOL_TABLE: u16 = 0x0011;
    pub const ATTRIBUTE_INFO: u16 = 0x0015;
    pub const METADATA_CACHE_IMAGE: u16 = 0x0018;
}

/// Header message flag: the message body is a reference to a shared message.
pub const FLAG_SHARED: u8 = 0x02;

/// More continuation blocks than this in one header means a loop or garbage.
const MAX_BLOCKS: usize = 4096;
/// Messages in one object header (HDF5 caps v1 at 65535).
const MAX_MESSAGES: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct HeaderMessage {
    pub type_id: u16,
    pub flags: u8,
    /// Creation index of the message (version-2 headers that track it): libhdf5 lists
    /// compact attributes in this order, which need not be their order in the header.
    pub creation_order: Option<u16>,
    pub data: Vec<u8>,
    /// File address of the message body, for error messages.
    pub address: u64,
}

impl HeaderMessage {
    pub fn is_shared(&self) -> bool {
        self.flags & FLAG_SHARED != 0
    }
    pub fn reader<'a>(&'a self, ctx: &FormatContext) -> ByteReader<'a> {
        ctx.reader(&self.data, self.address)
    }
}

#[derive(Debug, Clone)]
pub struct ObjectHeader {
    pub address: u64,
    pub version: u8,
    /// Version-2 header flags (0 for version 1); bit 2: attribute creation order tracked.
    pub flags: u8,
    pub messages: Vec<HeaderMessage>,
    /// A version-1 header's reference count (version 2 keeps it in a message).
    v1_reference_count: u32,
}

impl ObjectHeader {
    pub fn read(ctx: &FormatContext, address: u64) -> Result<ObjectHeader> {
        let prefix = ctx.read_up_to(address, 16, "object header prefix")?;
        let header = if prefix.starts_with(b"OHDR") {
            read_v2(ctx, address)?
        } else if prefix.first() == Some(&1) {
            read_v1(ctx, address, prefix)?
        } else {
            return Err(Error::format("not an object header (neither version 1 nor 'OHDR')").at(address));
        };
        resolve_shared_heap_messages(ctx, header)
    }

    /// How many hard links lead to the object (its reference count): libhdf5's
    /// visits (H5Ovisit) remember objects by address only when there are several.
    pub fn hard_links(&self) -> u32 {
        if self.version == 1 {
            return self.v1_reference_count;
        }
        // the reference count message (0x16): version, then the count; absent: one
        self.find(0x16).and_then(|m| m.data.get(1..5)).map_or(1, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The first message of a type.
    pub fn find(&self, type_id: u16) -> Option<&HeaderMessage> {
        self.messages.iter().find(|m| m.type_id == type_id)
    }

    /// All messages of a type, in header order.
    pub fn all(&self, type_id: u16) -> impl Iterator<Item = &HeaderMessage> {
        self.messages.iter().filter(move |m| m.type_id == type_id)
    }

    pub fn has(&self, type_id: u16) -> bool {
        self.find(type_id).is_some()
    }

    pub fn tracks_attribute_order(&self) -> bool {
        self.flags & 0x04 != 0
    }
}

/// Messages kept in the shared message heap (SOHM) replaced by their bodies, so that
/// every reader of a header sees plain messages; committed (object header) shared
/// messages stay as they are. A replaced message's address is its body's in the heap,
/// where its bytes were read and its errors lie.
fn resolve_shared_heap_messages(ctx: &FormatContext, mut header: ObjectHeader) -> Result<ObjectHeader> {
    for m in header.messages.iter_mut().filter(|m| m.is_shared()) {
        if let SharedMessage::SharedHeap(id) = parse_shared_message(&m.data, m.address, ctx.sizes())? {
            let body = ctx.shared_message(m.type_id, &id).map_err(|e| e.at(m.address))?;
            m.address = body.address();
            m.data = body.into_bytes();
            m.flags &= !MESSAGE_FLAG_SHARED;
        }
    }
    Ok(header)
}

/// A continuation message: where the next block of messages is, and its length.
fn continuation(ctx: &FormatContext, body: &[u8], address: u64) -> Result<(u64, u64)> {
    let mut r = ctx.reader(body, address);
    let addr = r.required_address("object header continuation")?;
    let len = r.length()?;
    Ok((addr, len))
}

/// Collects messages block by block, following continuations, refusing loops.
struct Walker<'a> {
    ctx: &'a FormatContext,
    seen: HashSet<u64>,
    pending: Vec<(u64, u64)>,
    messages: Vec<HeaderMessage>,
}

impl<'a> Walker<'a> {
    fn new(ctx: &'a FormatContext) -> Self {
        Walker { ctx, seen: HashSet::new(), pending: Vec::new(), messages: Vec::new() }
    }

    /// Keep a message (its body copied), follow a continuation, skip NIL padding
    /// (often most of a version-1 block: not copied).
    fn push_message(&mut self, head: MessageHead, body: &[u8]) -> Result<()> {
        if self.messages.len() >= MAX_MESSAGES {
            return Err(Error::format("object header has too many messages").at(head.address));
        }
        let unknown = head.type_id > LAST_KNOWN_MESSAGE || head.type_id == BOGUS_MESSAGE;
        if unknown && head.flags & FAIL_IF_UNKNOWN_ALWAYS != 0 {
            // the writer asked readers that do not know the message to refuse the object
            return Err(crate::format_err!(
                "object header holds message type {}, unknown, which its writer marked as one a reader must understand",
                head.type_id
            )
            .at(head.address));
        }
        match head.type_id {
            msg::NIL => {}
            msg::CONTINUATION => {
                let (addr, len) = continuation(self.ctx, body, head.address)?;
                if !self.seen.insert(addr) || self.seen.len() > MAX_BLOCKS {
                    return Err(Error::format("object header continuation loop").at(head.address));
                }
                self.pending.push((addr, len));
            }
            _ => self.messages.push(HeaderMessage {
                type_id: head.type_id,
                flags: head.flags,
                creation_order: head.creation_order,
                data: body.to_vec(),
                address: head.address,
            }),
        }
        Ok(())
    }
}

/// The last message type libhdf5 defines (the metadata cache image).
const LAST_KNOWN_MESSAGE: u16 = msg::METADATA_CACHE_IMAGE;
/// The "bogus" test message, known only to libhdf5's debug builds (tbogus.h5).
const BOGUS_MESSAGE: u16 = 0x0009;
/// Message flag: "fail to open the object if the message type is unknown, always".
const FAIL_IF_UNKNOWN_ALWAYS: u8 = 0x80;

/// A message's fields before its body (`address` is the body's).
struct MessageHead {
    type_id: u16,
    flags: u8,
    creation_order: Option<u16>,
    address: u64,
}

/// A version-1 header whose first bytes (up to 16, fewer where the file ends) are `prefix`.
fn read_v1(ctx: &FormatContext, address: u64, prefix: Vec<u8>) -> Result<ObjectHeader> {
    let prefix = if prefix.len() < 16 { ctx.read(address, 16, "object header")? } else { prefix };
    let mut r = ctx.reader(&prefix, address);
    r.skip(2)?; // version, reserved
    let declared_messages = r.u16()? as usize;
    let v1_reference_count = r.u32()?;
    let size = r.u32()? as u64;
    let mut w = Walker::new(ctx);
    // Messages start at the next 8-byte boundary after the 12-byte prefix.
    w.pending.push((address + 16, size));
    while let Some((addr, len)) = w.pending.pop() {
        let block = ctx.read(addr, len, "object header block")?;
        parse_v1_messages(&mut w, &block, addr)?;
    }
    // The declared count includes NIL and continuation messages; only sanity-check it.
    if w.messages.len() > declared_messages.max(1) * 2 + 64 {
        return Err(Error::format("object header holds more messages than it declares").at(address));
    }
    Ok(ObjectHeader { address, version: 1, flags: 0, messages: w.messages, v1_reference_count })
}

fn parse_v1_messages(w: &mut Walker, block: &[u8], addr: u64) -> Result<()> {
    let mut r = w.ctx.reader(block, addr);
    while r.remaining() >= 8 {
        let type_id = r.u16()?;
        let size = r.u16()? as usize;
        let flags = r.u8()?;
        r.skip(3)?;
        let address = r.address();
        w.push_message(MessageHead { type_id, flags, creation_order: None, address }, r.bytes(size)?)?;
    }
    Ok(())
}

fn read_v2(ctx: &FormatContext, address: u64) -> Result<ObjectHeader> {
    let prefix = ctx.read_up_to(address, 4 + 2 + 16 + 4 + 8, "object header")?;
    let mut r = ctx.reader(&prefix, address);
    r.signature(b"OHDR", "object header")?;
    let version = r.u8()?;
    if version != 2 {
        return Err(Error::format(format!("object header version {} after 'OHDR'", version)).at(address));
    }
    let flags = r.u8()?;
    if flags & 0x20 != 0 {
        r.skip(16)?; // access, modification, change, birth times
    }
    if flags & 0x10 != 0 {
        r.skip(4)?; // attribute phase change values
    }
    let size_width = 1usize << (flags & 0x03);
    let chunk0_size = r.uint(size_width)?;
    let prefix_len = r.position() as u64;
    let track_order = flags & 0x04 != 0;
    let mut w = Walker::new(ctx);
    // Chunk 0 is checksummed together with its prefix.
    let block = ctx.read(address, prefix_len + chunk0_size + 4, "object header")?;
    verify_trailing(&block, "object header", address)?;
    let body = &block[prefix_len as usize..block.len() - 4];
    parse_v2_messages(&mut w, body, address + prefix_len, track_order)?;
    while let Some((addr, len)) = w.pending.pop() {
        let block = ctx.read(addr, len, "object header continuation block")?;
        verify_trailing(&block, "object header continuation block", addr)?;
        let mut r = ctx.reader(&block, addr);
        r.signature(b"OCHK", "object header continuation block")?;
        let body = block.get(4..block.len() - 4).unwrap_or(&[]);
        parse_v2_messages(&mut w, body, addr + 4, track_order)?;
    }
    Ok(ObjectHeader { address, version: 2, flags, messages: w.messages, v1_reference_count: 0 })
}

fn parse_v2_messages(w: &mut Walker, body: &[u8], addr: u64, track_order: bool) -> Result<()> {
    let header_len = if track_order { 6 } else { 4 };
    let mut r = w.ctx.reader(body, addr);
    // What is left after the last message is a gap smaller than a message header.
    while r.remaining() >= header_len {
        let type_id = r.u8()? as u16;
        let size = r.u16()? as usize;
        let flags = r.u8()?;
        let creation_order = if track_order { Some(r.u16()?) } else { None };
        let address = r.address();
        w.push_message(MessageHead { type_id, flags, creation_order, address }, r.bytes(size)?)?;
    }
    Ok(())
}
