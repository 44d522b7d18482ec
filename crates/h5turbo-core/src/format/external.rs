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
            Ok(Segment { name: heap.string_at(name_offset)?, offset, size })
        })
        .collect()
}
