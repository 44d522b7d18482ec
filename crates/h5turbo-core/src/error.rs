//! One error type for the whole crate.
//!
//! Every error carries a kind (which Python exception it becomes), a message, and as
//! much context as the layers above could add: the file, the object path inside it,
//! and the byte offset of the structure that was wrong. Lower layers create errors
//! with the message and offset; the object model adds file and object on the way up.

use crate::format::names::shown;
use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, coarsely: decides the Python exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The operating system refused a read (or the file is gone).
    Io,
    /// The file is not valid HDF5 where we looked: bad signature, checksum mismatch,
    /// an offset or length that points outside the file, an impossible value.
    Format,
    /// Valid HDF5 that h5turbo does not read (yet); the message names the feature.
    Unsupported,
    /// A path inside the file names no object (Python: KeyError).
    NotFound,
    /// The caller asked for something impossible (bad selection, wrong buffer size).
    InvalidArgument,
    /// The file was closed while the operation needed it.
    Closed,
    /// A path followed more soft links than libhdf5 allows (a cycle): a malformed
    /// file, but h5py raises RuntimeError for it, not the error of a broken structure.
    TooManyLinks,
    /// Memory the values need cannot be had: more than the machine has, or the
    /// allocator (a memory limit) refused it. Not the file's fault: the same read of
    /// less at a time, or on a larger machine, works.
    OutOfMemory,
}

#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    file: Option<PathBuf>,
    object: Option<String>,
    offset: Option<u64>,
    io: Option<std::io::Error>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Names in the message and the object path show bytes that are not UTF-8 as \xNN.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: shown(message.into()), file: None, object: None, offset: None, io: None }
    }

    /// A malformed file: the message says what structure and what was wrong.
    pub fn format(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Format, message)
    }

    /// A valid feature that is not implemented; the message names it.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// Memory that cannot be had; the message says for what and how much.
    pub fn out_of_memory(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfMemory, message)
    }

    pub fn closed() -> Self {
        Self::new(ErrorKind::Closed, "the file is closed")
    }

    pub fn io(err: std::io::Error, what: impl Into<String>) -> Self {
        let mut e = Self::new(ErrorKind::Io, format!("{}: {}", what.into(), err));
        e.io = Some(err);
        e
    }

    /// Attach the file offset of the structure being parsed (kept if already set:
    /// the innermost offset is the most precise).
    pub fn at(mut self, offset: u64) -> Self {
        self.offset.get_or_insert(offset);
        self
    }

    /// The same error with `context` before its message; kind, offset, file, object
    /// and the operating system's (or a binding's) cause are kept.
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = shown(format!("{}: {}", context, self.message));
        self
    }

    /// Attach the object path (kept if already set by a deeper layer).
    pub fn in_object(mut self, object: impl Into<String>) -> Self {
        if self.object.is_none() {
            self.object = Some(shown(object.into()));
        }
        self
    }

    /// Attach the file path (kept if already set).
    pub fn in_file(mut self, file: &Path) -> Self {
        if self.file.is_none() {
            self.file = Some(file.to_path_buf());
        }
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }
    pub fn object(&self) -> Option<&str> {
        self.object.as_deref()
    }
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.io.as_ref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(object) = &self.object {
            write!(f, "{}: ", object)?;
        }
        f.write_str(&self.message)?;
        if let Some(offset) = self.offset {
            write!(f, " (at byte offset {})", offset)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref().map(|e| e as _)
    }
}

/// `bail!(Format, "...")`-style early return with a formatted message.
#[macro_export]
macro_rules! format_err {
    ($($arg:tt)*) => { $crate::error::Error::format(format!($($arg)*)) };
}

#[macro_export]
macro_rules! unsupported {
    ($($arg:tt)*) => { $crate::error::Error::unsupported(format!($($arg)*)) };
}

/// Adds context to any `Result<T, Error>` on the way up.
pub trait ResultExt<T> {
    fn at(self, offset: u64) -> Result<T>;
    fn in_object(self, object: &str) -> Result<T>;
    fn in_file(self, file: &Path) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn at(self, offset: u64) -> Result<T> {
        self.map_err(|e| e.at(offset))
    }
    fn in_object(self, object: &str) -> Result<T> {
        self.map_err(|e| e.in_object(object))
    }
    fn in_file(self, file: &Path) -> Result<T> {
        self.map_err(|e| e.in_file(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_object_and_offset() {
        let e = format_err!("bad signature").at(96).in_object("/a/b").in_file(Path::new("x.h5"));
        assert_eq!(e.to_string(), "x.h5: /a/b: bad signature (at byte offset 96)");
        assert_eq!(e.kind(), ErrorKind::Format);
    }

    #[test]
    fn innermost_context_wins() {
        let e = format_err!("x").at(1).at(2).in_object("/inner").in_object("/outer");
        assert_eq!(e.offset(), Some(1));
        assert_eq!(e.object(), Some("/inner"));
    }
}
