//! Single-chunk index (layout v4+): the dataset is exactly one chunk, stored at the
//! index address; a filtered chunk's size and mask live in the layout message.

use super::{ChunkLocation, ChunkSink, IndexShape};
use crate::error::Result;

pub(super) fn collect(
    shape: &IndexShape,
    address: u64,
    filtered_size: Option<u64>,
    filter_mask: u32,
    sink: &mut ChunkSink,
) -> Result<()> {
    let size = filtered_size.unwrap_or(shape.chunk_bytes);
    sink.add(&vec![0; shape.rank()], ChunkLocation { address, size, filter_mask })
}
