//! Byte sources read with positional reads only.
//!
//! There is no shared cursor: `read_exact_at` takes the offset with every call, so one
//! open file serves any number of threads; readers never wait for each other (they
//! share a read lock that only closing the file takes exclusively).

use crate::error::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// Something bytes can be read from at any offset, from many threads at once.
pub trait ReadAt: Send + Sync {
    /// Fill `buf` with the bytes at `offset..offset + buf.len()`; short reads are errors.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// The size of the source in bytes, as known when it was opened.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether reads are plain memory copies (nothing to gain from batching them).
    fn in_memory(&self) -> bool {
        false
    }
    /// Give back what the source holds (a file descriptor); later reads fail.
    fn close(&self) {}
}

/// A file on disk, read with `pread` (Unix) / `seek_read` (Windows).
pub struct FileSource {
    /// `None` once closed: `File::close` gives the descriptor back to the system at
    /// once, even while Python still holds objects of the file (reads then fail with a
    /// Closed error). Readers share the lock; only closing takes it exclusively, so a
    /// read in flight finishes before the descriptor goes.
    file: RwLock<Option<File>>,
    len: u64,
    path: PathBuf,
}

impl FileSource {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(e, "cannot open file").in_file(path))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(e, "cannot stat file").in_file(path))?
            .len();
        Ok(FileSource { file: RwLock::new(Some(file)), len, path: path.to_path_buf() })
    }

    /// An already open file (a descriptor a binding was handed), named `path` in
    /// messages; its size is taken now.
    pub fn from_file(file: File, path: &Path) -> Result<Self> {
        let len = file.metadata().map_err(|e| Error::io(e, "cannot stat file").in_file(path))?.len();
        Ok(FileSource { file: RwLock::new(Some(file)), len, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ReadAt for FileSource {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        check_range(offset, buf.len() as u64, self.len)?;
        // A poisoned lock only means a reader panicked; the descriptor is still sound.
        let guard = self.file.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let file = guard.as_ref().ok_or_else(|| Error::closed().in_file(&self.path))?;
        read_exact_at_os(file, buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::format(format!(
                    "file ended while reading {} bytes at offset {} (was it truncated while open?)",
                    buf.len(),
                    offset
                ))
            } else {
                Error::io(e, format!("read of {} bytes at offset {} failed", buf.len(), offset))
            }
            .in_file(&self.path)
        })
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&self) {
        let mut guard = self.file.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.take();
    }
}

#[cfg(unix)]
fn read_exact_at_os(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_exact_at_os(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// Bytes held in memory (tests, fuzzing, files already loaded).
pub struct MemSource {
    data: Vec<u8>,
}

impl MemSource {
    pub fn new(data: Vec<u8>) -> Self {
        MemSource { data }
    }
}

impl ReadAt for MemSource {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        check_range(offset, buf.len() as u64, self.data.len() as u64)?;
        let start = offset as usize;
        buf.copy_from_slice(&self.data[start..start + buf.len()]);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn in_memory(&self) -> bool {
        true
    }
}

/// `offset..offset+len` must lie inside a source of `size` bytes.
pub fn check_range(offset: u64, len: u64, size: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::format(format!(
            "read of {} bytes at offset {} goes past the end of the file ({} bytes)",
            len, offset, size
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_source_reads_and_bounds() {
        let src = MemSource::new((0u8..10).collect());
        let mut buf = [0u8; 3];
        src.read_exact_at(&mut buf, 7).unwrap();
        assert_eq!(buf, [7, 8, 9]);
        assert!(src.read_exact_at(&mut buf, 8).is_err());
        assert!(src.read_exact_at(&mut buf, u64::MAX).is_err());
    }

    #[test]
    fn file_source_positional_reads() {
        let dir = std::env::temp_dir().join(format!("h5turbo-io-{}", std::process::id()));
        std::fs::write(&dir, b"hello world").unwrap();
        let src = FileSource::open(&dir).unwrap();
        let mut buf = [0u8; 5];
        src.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        let err = src.read_exact_at(&mut buf, 7).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Format);
        std::fs::remove_file(&dir).unwrap();
    }
}
