//! Local heaps ("HEAP"): the name store of an old-style group (link names and soft
//! link values), read whole because a group's names are all needed together.

use super::context::FormatContext;
use super::reader::Located;
use crate::error::{Error, Result};

pub struct LocalHeap {
    /// The data segment, at its own address (where a broken string lies).
    data: Located<Vec<u8>>,
    /// The heap header's address (errors about the heap as a whole name it).
    address: u64,
}

impl LocalHeap {
    /// Read the heap header at `address` and its data segment.
    pub fn read(ctx: &FormatContext, address: u64) -> Result<LocalHeap> {
        let sizes = ctx.sizes();
        let header_len = 8 + 2 * sizes.length as u64 + sizes.offset as u64;
        let header = ctx.read(address, header_len, "local heap header")?;
        let mut r = ctx.reader(&header, address);
        r.signature(b"HEAP", "local heap")?;
        let version = r.u8()?;
        if version != 0 {
            return Err(Error::format(format!("local heap version {} is not 0", version)).at(address));
        }
        r.skip(3)?;
        let data_size = r.length()?;
        let _free_list_head = r.length()?;
        let data_address = r.required_address("local heap data segment")?;
        // ctx.read checks the size against the file before allocating.
        let data = ctx.read(data_address, data_size, "local heap data segment")?;
        Ok(LocalHeap { data: Located::at(data_address, data), address })
    }

    /// The NUL-terminated name at `offset` (a link name, a soft link's path, an external
    /// file's name), which libhdf5 takes as bytes: one that is not UTF-8 (Latin-1) is
    /// kept byte for byte (see `names`), not refused.
    pub fn name_at(&self, offset: u64) -> Result<String> {
        Ok(super::names::name_from_bytes(self.bytes_at(offset)?))
    }

    /// The bytes of the NUL-terminated string at `offset` (without the NUL).
    pub fn bytes_at(&self, offset: u64) -> Result<&[u8]> {
        let start = usize::try_from(offset).ok().filter(|&s| s < self.data.len()).ok_or_else(|| {
            Error::format(format!(
                "local heap offset {} is outside the {}-byte data segment",
                offset,
                self.data.len()
            ))
            .at(self.address)
        })?;
        let rest = &self.data[start..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| Error::format("local heap string is not NUL-terminated").at(self.data.address() + offset))?;
        Ok(&rest[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Sizes;
    use crate::io::MemSource;
    use std::path::Path;
    use std::sync::Arc;

    fn heap_file(data: &[u8]) -> Vec<u8> {
        let mut b = b"HEAP\0\0\0\0".to_vec();
        b.extend_from_slice(&(data.len() as u64).to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&32u64.to_le_bytes());
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn strings_and_bounds() {
        let bytes = heap_file(b"\0abc\0de");
        let ctx = FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("m"), Sizes::DEFAULT, 0);
        let heap = LocalHeap::read(&ctx, 0).unwrap();
        assert_eq!(heap.name_at(0).unwrap(), "");
        assert_eq!(heap.name_at(1).unwrap(), "abc");
        // unterminated: named where the string starts in the data segment (at 32)
        assert_eq!(heap.name_at(5).unwrap_err().offset(), Some(37));
        assert!(heap.name_at(70).is_err(), "out of range");
        assert!(heap.name_at(u64::MAX).is_err());
    }

    #[test]
    fn oversized_segment_is_an_error() {
        let mut bytes = heap_file(b"abc\0");
        bytes[8..16].copy_from_slice(&(1u64 << 60).to_le_bytes());
        let ctx = FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("m"), Sizes::DEFAULT, 0);
        assert!(LocalHeap::read(&ctx, 0).is_err());
    }
}
