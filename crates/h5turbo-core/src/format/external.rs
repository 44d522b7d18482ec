//! External File List message (0x0007): a contiguous dataset whose raw data lives in
//! other files, as a list of (file name, offset in that file, bytes) segments; the
//! names are strings in a local heap.

use super::local_heap::LocalHeap;
use super::reader::ByteReader;
use super::FormatContext;
use crate::error::Result;

/// The size libhdf5 stores for "to the end of the file, however long" (H5F_UNLIMITED).
pub const UNLIMITED: u64 = u64::MAX;

/// One segment of the dataset's bytes: `size` bytes at `offset` in the file `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

/// Parse the message and read the file names from its local heap.
pub fn parse_external_files(ctx: &FormatContext, data: &[u8], at: u64) -> Result<Vec<Segment>> {
    let mut r = ByteReader::new(data, at, ctx.sizes());
    let version = r.u8()?;
    if version != 1 {
        return Err(r.error(format!("external file list version {} (1 is known)", version)));
    }
    r.skip(3)?; // reserved
    let _allocated = r.u16()?;
    let used = usize::from(r.u16()?);
    let heap_address = r.required_address("external file name heap")?;
    let per_slot = 3 * ctx.sizes().length as usize;
    if used > r.remaining() / per_slot.max(1) {
        return Err(r.error(format!("{} external file slots do not fit in the message", used)));
    }
    let heap = LocalHeap::read(ctx, heap_address)?;
    (0..used)
        .map(|_| {
            let name_offset = r.length()?;
            let offset = r.length()?;
            let size = r.length()?;
            // a file name: its bytes kept (file::lookup opens it by them)
            Ok(Segment { name: heap.name_at(name_offset)?, offset, size })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::reader::Sizes;
    use std::path::Path;
    use std::sync::Arc;

    /// A file holding only a local heap at 0 whose data segment is "\0ext.bin\0".
    fn ctx_with_heap() -> FormatContext {
        let data = b"\0ext.bin\0";
        let mut file = b"HEAP\0\0\0\0".to_vec();
        file.extend((data.len() as u64).to_le_bytes()); // data size
        file.extend(u64::MAX.to_le_bytes()); // no free list
        file.extend(32u64.to_le_bytes()); // data address
        file.extend(data);
        let source: Arc<dyn crate::io::ReadAt> = Arc::new(crate::io::MemSource::new(file));
        FormatContext::new(source, Path::new("mem"), Sizes::DEFAULT, 0)
    }

    fn message(version: u8, used: u16, slots: &[[u64; 3]]) -> Vec<u8> {
        let mut m = vec![version, 0, 0, 0];
        m.extend(used.to_le_bytes()); // allocated
        m.extend(used.to_le_bytes());
        m.extend(0u64.to_le_bytes()); // heap address
        for slot in slots {
            slot.iter().for_each(|v| m.extend(v.to_le_bytes()));
        }
        m
    }

    #[test]
    fn segments_with_names_from_the_heap() {
        let ctx = ctx_with_heap();
        let segments = parse_external_files(&ctx, &message(1, 2, &[[1, 8, 100], [1, 0, UNLIMITED]]), 0).unwrap();
        assert_eq!(segments[0], Segment { name: "ext.bin".into(), offset: 8, size: 100 });
        assert_eq!(segments[1].size, UNLIMITED);
    }

    #[test]
    fn hostile_messages_are_errors() {
        let ctx = ctx_with_heap();
        // more slots claimed than the message holds: an error, not an allocation
        assert!(parse_external_files(&ctx, &message(1, u16::MAX, &[[1, 0, 4]]), 0).is_err());
        // a name outside the heap's data segment
        assert!(parse_external_files(&ctx, &message(1, 1, &[[500, 0, 4]]), 0).is_err());
        // an unknown version; a message cut short
        assert!(parse_external_files(&ctx, &message(2, 1, &[[1, 0, 4]]), 0).is_err());
        let good = message(1, 1, &[[1, 0, 4]]);
        for cut in 0..good.len() {
            assert!(parse_external_files(&ctx, &good[..cut], 0).is_err(), "cut at {}", cut);
        }
    }
}
