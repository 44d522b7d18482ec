//! Raw data in external files (`create_dataset(..., external=[...])`): the dataset's
//! bytes are the concatenation of segments of other files. Read as libhdf5 reads them:
//! bytes past the end of an external file are zeros; a missing file is an error for
//! the reads that need it (each file is opened when a read first touches it, so one
//! missing file leaves the other segments readable, as in libhdf5).

use crate::error::{Error, Result};
use crate::format::external::{Segment, UNLIMITED};
use super::lookup::{find_named_file, NamedFile};
use crate::io::{FileSource, ReadAt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The segments as one byte source: logical offset 0 is the dataset's first byte.
pub struct ExternalSource {
    parts: Vec<Part>,
    len: u64,
    /// The HDF5 file naming the segments' files (their names are relative to it).
    hdf5_path: PathBuf,
}

struct Part {
    /// Logical offset of the segment's first byte.
    start: u64,
    size: u64,
    name: String,
    file: OnceLock<FileSource>,
    offset: u64,
}

impl ExternalSource {
    /// The segments (their files found when first read, see `find_named_file`) of a
    /// dataset of `needed` bytes.
    pub fn open(segments: &[Segment], hdf5_path: &Path, needed: u64) -> Result<ExternalSource> {
        let mut parts = Vec::with_capacity(segments.len());
        let mut start = 0u64;
        for segment in segments {
            if start >= needed {
                break;
            }
            let size = if segment.size == UNLIMITED { needed - start } else { segment.size };
            let name = segment.name.clone();
            parts.push(Part { start, size, name, file: OnceLock::new(), offset: segment.offset });
            start = start.checked_add(size).ok_or_else(|| Error::format("external segments overflow 64 bits"))?;
        }
        if start < needed {
            return Err(Error::format(format!("external files hold {} bytes, the dataset needs {}", start, needed)));
        }
        Ok(ExternalSource { parts, len: needed, hdf5_path: hdf5_path.to_path_buf() })
    }

    /// The part's file, opened on first use (a missing file: an I/O error naming it).
    fn file_of<'a>(&self, part: &'a Part) -> Result<&'a FileSource> {
        if let Some(file) = part.file.get() {
            return Ok(file);
        }
        let path = find_named_file(NamedFile::ExternalRawData, &self.hdf5_path, &part.name).ok_or_else(|| {
            // the system's own words (errno ENOENT), not Rust's "entity not found"
            let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
            let folder = self.hdf5_path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Error::io(
                missing,
                format!(
                    "external raw data file '{}' (looked under HDF5_EXTFILE_PREFIX, in the working folder and in {})",
                    part.name,
                    folder.display()
                ),
            )
        })?;
        let opened = FileSource::open(&path)?;
        Ok(part.file.get_or_init(|| opened))
    }
}

impl ReadAt for ExternalSource {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.len).ok_or_else(|| {
            Error::format(format!("read of {} bytes at {} past the external data's {} bytes", buf.len(), offset, self.len))
        })?;
        let first = self.parts.partition_point(|p| p.start + p.size <= offset);
        let mut at = offset;
        for part in &self.parts[first..] {
            if at >= end {
                break;
            }
            let upto = end.min(part.start + part.size);
            let piece = &mut buf[(at - offset) as usize..(upto - offset) as usize];
            let file = self.file_of(part)?;
            let in_file = part.offset.saturating_add(at - part.start);
            // past the external file's end: zeros, as libhdf5 reads them
            let present = file.len().saturating_sub(in_file).min(piece.len() as u64) as usize;
            if present > 0 {
                file.read_exact_at(&mut piece[..present], in_file)?;
            }
            piece[present..].fill(0);
            at = upto;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&self) {
        self.parts.iter().filter_map(|p| p.file.get()).for_each(FileSource::close);
    }
}

