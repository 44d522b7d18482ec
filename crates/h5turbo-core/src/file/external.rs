//! Raw data in external files (`create_dataset(..., external=[...])`): the dataset's
//! bytes are the concatenation of segments of other files. Read as libhdf5 reads them:
//! bytes past the end of an external file are zeros; a missing file is an error.

use crate::error::{Error, Result};
use crate::format::external::{Segment, UNLIMITED};
use super::lookup::{find_named_file, NamedFile};
use crate::io::{FileSource, ReadAt};
use std::path::Path;

/// The segments as one byte source: logical offset 0 is the dataset's first byte.
pub struct ExternalSource {
    parts: Vec<Part>,
    len: u64,
}

struct Part {
    /// Logical offset of the segment's first byte.
    start: u64,
    size: u64,
    file: FileSource,
    offset: u64,
}

impl ExternalSource {
    /// Open the segments' files (see `find_external`) for a dataset of `needed` bytes.
    pub fn open(segments: &[Segment], hdf5_path: &Path, needed: u64) -> Result<ExternalSource> {
        let mut parts = Vec::with_capacity(segments.len());
        let mut start = 0u64;
        for segment in segments {
            if start >= needed {
                break;
            }
            let size = if segment.size == UNLIMITED { needed - start } else { segment.size };
            let path = find_named_file(NamedFile::ExternalRawData, hdf5_path, &segment.name).ok_or_else(|| {
                let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
                Error::io(missing, format!("external raw data file '{}'", segment.name))
            })?;
            let file = FileSource::open(&path)?;
            parts.push(Part { start, size, file, offset: segment.offset });
            start = start.checked_add(size).ok_or_else(|| Error::format("external segments overflow 64 bits"))?;
        }
        if start < needed {
            return Err(Error::format(format!("external files hold {} bytes, the dataset needs {}", start, needed)));
        }
        Ok(ExternalSource { parts, len: needed })
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
            let in_file = part.offset + (at - part.start);
            // past the external file's end: zeros, as libhdf5 reads them
            let present = part.file.len().saturating_sub(in_file).min(piece.len() as u64) as usize;
            part.file.read_exact_at(&mut piece[..present], in_file)?;
            piece[present..].fill(0);
            at = upto;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&self) {
        self.parts.iter().for_each(|p| p.file.close());
    }
}

