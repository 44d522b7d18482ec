//! What every parser needs to read metadata: the byte source, the field widths from
//! the superblock and the base address that file addresses are relative to.

use super::reader::{ByteReader, Sizes};
use crate::error::{Error, Result};
use crate::io::ReadAt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Shared, immutable view of an open HDF5 file for the format parsers.
#[derive(Clone)]
pub struct FormatContext {
    source: Arc<dyn ReadAt>,
    path: Arc<PathBuf>,
    sizes: Sizes,
    /// Absolute file position that HDF5 address 0 refers to (non-zero after a userblock).
    base: u64,
}

impl FormatContext {
    pub fn new(source: Arc<dyn ReadAt>, path: &Path, sizes: Sizes, base: u64) -> Self {
        FormatContext { source, path: Arc::new(path.to_path_buf()), sizes, base }
    }

    pub fn sizes(&self) -> Sizes {
        self.sizes
    }
    pub fn base(&self) -> u64 {
        self.base
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.source
    }

    /// Bytes available from HDF5 address `addr` to the end of the file.
    pub fn available_from(&self, addr: u64) -> u64 {
        match addr.checked_add(self.base) {
            Some(abs) => self.source.len().saturating_sub(abs),
            None => 0,
        }
    }

    /// Absolute file position of HDF5 address `addr`, checked against the file size.
    pub fn absolute(&self, addr: u64, len: u64, what: &str) -> Result<u64> {
        let abs = addr.checked_add(self.base);
        match abs.and_then(|a| a.checked_add(len)) {
            Some(end) if end <= self.source.len() => Ok(abs.unwrap_or(0)),
            _ => Err(Error::format(format!(
                "{} of {} bytes at address {} lies beyond the end of the file ({} bytes)",
                what,
                len,
                addr,
                self.source.len()
            ))
            .at(addr)),
        }
    }

    /// Read `len` bytes of metadata at HDF5 address `addr`. The length is checked
    /// against the file size before anything is allocated.
    pub fn read(&self, addr: u64, len: u64, what: &str) -> Result<Vec<u8>> {
        let abs = self.absolute(addr, len, what)?;
        let mut buf = vec![0u8; len as usize];
        self.source.read_exact_at(&mut buf, abs).map_err(|e| e.at(addr))?;
        Ok(buf)
    }

    /// Read up to `max_len` bytes at `addr` (fewer if the file ends first): for
    /// structures whose length is only known after parsing their prefix.
    pub fn read_up_to(&self, addr: u64, max_len: u64, what: &str) -> Result<Vec<u8>> {
        let len = max_len.min(self.available_from(addr));
        if len == 0 {
            return Err(Error::format(format!("{} at address {} is past the end of the file", what, addr)).at(addr));
        }
        self.read(addr, len, what)
    }

    /// A cursor over `data`, which was read from HDF5 address `addr`.
    pub fn reader<'a>(&self, data: &'a [u8], addr: u64) -> ByteReader<'a> {
        ByteReader::new(data, addr, self.sizes)
    }
}
