//! Helpers for the format parsers' unit tests.

use super::reader::Sizes;
use super::FormatContext;
use std::path::Path;
use std::sync::Arc;

/// A context over an empty in-memory file with 8-byte offsets and lengths.
pub fn ctx() -> FormatContext {
    let source: Arc<dyn crate::io::ReadAt> = Arc::new(crate::io::MemSource::new(Vec::new()));
    FormatContext::new(source, Path::new("mem"), Sizes::DEFAULT, 0)
}

/// Little-endian bytes of 32-bit values.
pub fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
