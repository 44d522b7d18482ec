//! Byte sources read with positional reads only.
//!
//! There is no shared cursor: `read_exact_at` takes the offset with every call, so one
//! open file serves any number of threads; readers never wait for each other (they
//! share a read lock that only closing the file takes exclusively).

use crate::error::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

mod file_hints;
mod open_files;
pub use file_hints::FileHints;

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
    /// The bytes at `offset..offset + len` where the source holds them in memory (read
    /// in place, not copied out); None otherwise, or where they are not all there.
    fn bytes_at(&self, _offset: u64, _len: u64) -> Option<&[u8]> {
        None
    }
    /// Give back what the source holds (a file descriptor); later reads fail.
    fn close(&self) {}
    /// A hint that `offset..offset + len` will be read soon: a file asks the system to
    /// start reading it in the background (see `read_ahead`). Never fails; a no-op
    /// where there is nothing to gain.
    fn prefetch(&self, _offset: u64, _len: u64) {}
    /// The same source with its size taken again (a file that grows while it is open,
    /// as a SWMR writer's does), reading through what this one reads from: closing
    /// either closes both. None where the size cannot change (bytes in memory).
    fn refreshed(&self) -> Result<Option<Arc<dyn ReadAt>>> {
        Ok(None)
    }
    /// Which file this reads, as it was when opened; None for bytes in memory.
    fn version(&self) -> Option<FileVersion> {
        None
    }
}

/// A file as it was when opened: which file (device and inode) and its size and
/// modification and change times. A file replaced since (renamed over) is another
/// inode; one rewritten in place differs in its size or times (the change time moves
/// even where a writer set the modification time back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion {
    pub device: u64,
    pub inode: u64,
    pub len: u64,
    /// (seconds, nanoseconds) since the epoch.
    pub modified: (i64, i64),
    pub changed: (i64, i64),
}

impl FileVersion {
    pub fn of(meta: &std::fs::Metadata) -> FileVersion {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            FileVersion {
                device: meta.dev(),
                inode: meta.ino(),
                len: meta.len(),
                modified: (meta.mtime(), meta.mtime_nsec()),
                changed: (meta.ctime(), meta.ctime_nsec()),
            }
        }
        #[cfg(not(unix))]
        {
            let since_epoch = |t: std::io::Result<std::time::SystemTime>| {
                t.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or((0, 0), |d| (d.as_secs() as i64, d.subsec_nanos() as i64))
            };
            FileVersion { device: 0, inode: 0, len: meta.len(), modified: since_epoch(meta.modified()), changed: (0, 0) }
        }
    }
}

/// A file on disk, read with `pread` (Unix) / `seek_read` (Windows).
pub struct FileSource {
    /// `None` once closed: `File::close` lets go of the descriptor at once, even while
    /// Python still holds objects of the file (reads then fail with a Closed error); it
    /// goes back to the system then, unless the source of another open of the same file
    /// shares it (open_files.rs). Readers share the lock; only closing takes it
    /// exclusively, so a read in flight finishes first. Shared with the sources
    /// `refreshed` makes, so that closing one closes all.
    file: Arc<RwLock<Option<Arc<File>>>>,
    len: u64,
    version: FileVersion,
    path: PathBuf,
}

impl FileSource {
    /// The file at `path`, read through a descriptor this process already holds on the
    /// same version of it where there is one (open_files.rs).
    pub fn open(path: &Path) -> Result<Self> {
        match File::open(path) {
            Ok(file) => {
                let version = version_now(&file, path)?;
                Ok(Self::with(open_files::shared(file, version), version, path))
            }
            // no descriptor left: one already open on the file serves as well
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                match open_files::already_open(path) {
                    Some((file, version)) => Ok(Self::with(file, version, path)),
                    None => Err(Error::io(e, "cannot open file").in_file(path)),
                }
            }
            Err(e) => Err(Error::io(e, "cannot open file").in_file(path)),
        }
    }

    /// An already open file (a descriptor a binding was handed), named `path` in
    /// messages; its size is taken now.
    pub fn from_file(file: File, path: &Path) -> Result<Self> {
        let version = version_now(&file, path)?;
        Ok(Self::with(Arc::new(file), version, path))
    }

    fn with(file: Arc<File>, version: FileVersion, path: &Path) -> Self {
        FileSource { file: Arc::new(RwLock::new(Some(file))), len: version.len, version, path: path.to_path_buf() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file (its size when opened) in memory. The bytes are read straight
    /// into fresh memory, not zeroed first: for the small files read whole (fast5
    /// single-read files, about 30 KB) zeroing cost as much as a third of the read.
    pub fn read_whole(&self) -> Result<Vec<u8>> {
        let mut bytes = crate::buffer::vec_with_capacity::<u8>(self.len as usize, "a file's bytes")?;
        let guard = self.file.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let file = guard.as_ref().ok_or_else(|| Error::closed().in_file(&self.path))?;
        read_into_spare(file, &mut bytes, self.len as usize).map_err(|e| self.read_error(e, self.len, 0))?;
        Ok(bytes)
    }

    fn read_error(&self, e: std::io::Error, len: u64, offset: u64) -> Error {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::format(format!(
                "file ended while reading {} bytes at offset {} (was it truncated while open?)",
                len, offset
            ))
        } else {
            Error::io(e, format!("read of {} bytes at offset {} failed", len, offset))
        }
        .in_file(&self.path)
    }
}

/// Append the first `len` bytes of `file` to `bytes` (which has room for them) without
/// initialising the memory first: the system writes it.
#[cfg(unix)]
fn read_into_spare(file: &File, bytes: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    assert!(bytes.capacity() - bytes.len() >= len);
    let start = bytes.len();
    let mut done = 0;
    while done < len {
        let want = (len - done).min(isize::MAX as usize);
        // SAFETY: the destination is spare capacity of `bytes` (asserted above); the
        // system writes at most `want` bytes there and we only count what it wrote.
        let got = unsafe {
            libc::pread(file.as_raw_fd(), bytes.as_mut_ptr().add(start + done).cast(), want, done as libc::off_t)
        };
        match got {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n if n > 0 => {
                done += n as usize;
                // SAFETY: the first start + done bytes are now written.
                unsafe { bytes.set_len(start + done) };
            }
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn read_into_spare(file: &File, bytes: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
    let start = bytes.len();
    bytes.resize(start + len, 0);
    read_exact_at_os(file, &mut bytes[start..], 0)
}

impl ReadAt for FileSource {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        check_range(offset, buf.len() as u64, self.len)?;
        // A poisoned lock only means a reader panicked; the descriptor is still sound.
        let guard = self.file.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let file = guard.as_ref().ok_or_else(|| Error::closed().in_file(&self.path))?;
        read_exact_at_os(file, buf, offset).map_err(|e| self.read_error(e, buf.len() as u64, offset))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&self) {
        let mut guard = self.file.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.take();
    }

    fn prefetch(&self, offset: u64, len: u64) {
        let guard = self.file.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(file) = guard.as_ref() {
            let end = offset.saturating_add(len).min(self.len);
            read_ahead::hint(file, offset, end.saturating_sub(offset));
        }
    }

    fn refreshed(&self) -> Result<Option<Arc<dyn ReadAt>>> {
        let guard = self.file.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let file = guard.as_ref().ok_or_else(|| Error::closed().in_file(&self.path))?;
        let version = version_now(file, &self.path)?;
        Ok(Some(Arc::new(FileSource { file: self.file.clone(), len: version.len, version, path: self.path.clone() })))
    }

    fn version(&self) -> Option<FileVersion> {
        Some(self.version)
    }
}

/// An open file as the system sees it now (its size among the rest).
fn version_now(file: &File, path: &Path) -> Result<FileVersion> {
    Ok(FileVersion::of(&file.metadata().map_err(|e| Error::io(e, "cannot stat file").in_file(path))?))
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

    fn bytes_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        self.data.get(start..start.checked_add(usize::try_from(len).ok()?)?)
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

/// Reading ahead of the decoders: how many bytes, and the hint to the system.
///
/// The engine asks the system to read the next bytes of a read (the next batches of
/// chunks, the next files) while the threads decode the current ones, so the disk is
/// kept busy: `posix_fadvise(POSIX_FADV_WILLNEED)` starts the reads into the page
/// cache and returns at once; the positional read that follows finds the bytes there
/// or already on their way. (Measured against a pool of reader threads and io_uring:
/// benchmarks/results/cold.md.) The window bounds the bytes hinted and not yet
/// consumed, so memory (page cache, which the system can always reclaim) stays bounded.
pub mod read_ahead {
    use std::cell::Cell;
    use std::sync::OnceLock;

    /// Default window: 32 MiB keeps a local SSD (2 GB/s, about 100 us per request)
    /// streaming and is modest for a network file system, whose client turns the hint
    /// into read-ahead requests of its own.
    pub const DEFAULT_BYTES: u64 = 32 << 20;
    /// Hints are issued in pieces of this size: Linux caps one hint at the device's
    /// read-ahead size (128 KiB by default), so a longer one would be cut short.
    const PIECE_BYTES: u64 = 128 << 10;

    thread_local! {
        /// A per-call window (the `io_depth` argument), for reads started on this thread.
        static OVERRIDE: Cell<Option<u64>> = const { Cell::new(None) };
    }

    /// The window for a read started on this thread: the `io_depth` of the call if
    /// one is in force (see `with_window`), else `H5TURBO_IO_DEPTH`, else the default.
    /// 0 turns reading ahead off.
    pub fn window() -> u64 {
        OVERRIDE.with(|o| o.get()).unwrap_or_else(env_window)
    }

    /// Run `f` with reads started on this thread using `bytes` of read-ahead window
    /// (None: the default).
    pub fn with_window<R>(bytes: Option<u64>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<u64>);
        impl Drop for Restore {
            fn drop(&mut self) {
                OVERRIDE.with(|o| o.set(self.0));
            }
        }
        let _restore = Restore(OVERRIDE.with(|o| o.replace(bytes.or(o.get()))));
        f()
    }

    /// Set the window of reads started on this thread from now on (None: the
    /// default), returning the one it replaces: for bindings whose calls cannot run
    /// inside `with_window` (a Python context manager).
    pub fn swap_window(bytes: Option<u64>) -> Option<u64> {
        OVERRIDE.with(|o| o.replace(bytes))
    }

    /// `H5TURBO_IO_DEPTH` (bytes, with an optional K, M or G suffix), read once.
    fn env_window() -> u64 {
        static WINDOW: OnceLock<u64> = OnceLock::new();
        *WINDOW.get_or_init(|| {
            let Some(value) = crate::settings::env_setting("H5TURBO_IO_DEPTH") else { return DEFAULT_BYTES };
            parse_bytes(&value).unwrap_or_else(|| {
                let expected = "a byte count (such as 33554432 or 32M)";
                crate::settings::warn_unreadable("H5TURBO_IO_DEPTH", &value, expected, "the default, 32M");
                DEFAULT_BYTES
            })
        })
    }

    /// "4096", "7B", "64K", "32M", "1G" (binary units, case-insensitive, "iB"/"B"
    /// allowed after a unit).
    pub fn parse_bytes(text: &str) -> Option<u64> {
        // the grammar of Python's parse_io_depth, exactly: ASCII digits (no sign), then
        // B, K, M or G, the last three with an optional B or iB ("64iB" was 64 bytes)
        let t = text.trim().to_ascii_uppercase();
        let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, unit) = t.split_at(digits_end);
        let shift = match unit.trim_start() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            _ => return None,
        };
        if digits.is_empty() {
            return None;
        }
        digits.parse::<u64>().ok()?.checked_mul(1 << shift)
    }

    /// Ask the system to start reading `offset..offset + len` of `file`.
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    pub(super) fn hint(file: &std::fs::File, offset: u64, len: u64) {
        use std::os::unix::io::AsRawFd;
        let mut at = offset;
        let end = offset.saturating_add(len);
        while at < end {
            let piece = PIECE_BYTES.min(end - at);
            // SAFETY: a plain system call on a descriptor the caller keeps open; the
            // result is only a hint, so its error is of no consequence.
            unsafe {
                libc::posix_fadvise(file.as_raw_fd(), at as libc::off_t, piece as libc::off_t, libc::POSIX_FADV_WILLNEED);
            }
            at += piece;
        }
    }

    /// Elsewhere no hint: reads still work, without overlap.
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    pub(super) fn hint(_file: &std::fs::File, _offset: u64, _len: u64) {}

    #[cfg(test)]
    mod tests {
        #[test]
        fn byte_sizes_parse() {
            assert_eq!(super::parse_bytes("0"), Some(0));
            assert_eq!(super::parse_bytes("4096"), Some(4096));
            assert_eq!(super::parse_bytes("64k"), Some(64 << 10));
            assert_eq!(super::parse_bytes(" 32MiB "), Some(32 << 20));
            assert_eq!(super::parse_bytes("1G"), Some(1 << 30));
            assert_eq!(super::parse_bytes("lots"), None);
            assert_eq!(super::parse_bytes(""), None);
            // the grammar of Python's parse_io_depth: no sign, ASCII digits, a unit before B/iB
            for refused in ["+64", "-1", "\u{663}", "64iB", "64X", "M", "1.5M", "64 K B"] {
                assert_eq!(super::parse_bytes(refused), None, "{}", refused);
            }
            assert_eq!(super::parse_bytes("64 kb"), Some(64 << 10));
            assert_eq!(super::parse_bytes("7B"), Some(7));
        }

        #[test]
        fn a_call_window_wins_and_is_restored() {
            let outer = super::window();
            super::with_window(Some(7), || {
                assert_eq!(super::window(), 7);
                super::with_window(None, || assert_eq!(super::window(), 7));
            });
            assert_eq!(super::window(), outer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

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

    #[test]
    fn a_file_read_whole_is_its_bytes_and_a_shrunk_one_is_a_format_error() {
        let path = std::env::temp_dir().join(format!("h5turbo-io-whole-{}", std::process::id()));
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let src = FileSource::open(&path).unwrap();
        assert_eq!(src.read_whole().unwrap(), bytes);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(10).unwrap();
        let err = src.read_whole().unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Format);
        assert!(err.to_string().contains("truncated"), "{err}");
        src.close();
        assert_eq!(src.read_whole().unwrap_err().kind(), crate::error::ErrorKind::Closed);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_refreshed_file_source_sees_the_file_grow_and_closes_with_the_first() {
        let path = std::env::temp_dir().join(format!("h5turbo-io-grow-{}", std::process::id()));
        std::fs::write(&path, b"hello").unwrap();
        let src = FileSource::open(&path).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b" world").unwrap();
        let mut buf = [0u8; 5];
        assert!(src.read_exact_at(&mut buf, 6).is_err(), "the size seen at open bounds reads");
        let fresh = src.refreshed().unwrap().expect("a file can grow");
        assert_eq!(fresh.len(), 11);
        fresh.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        src.close();
        assert_eq!(fresh.read_exact_at(&mut buf, 0).unwrap_err().kind(), crate::error::ErrorKind::Closed);
        assert!(MemSource::new(vec![1, 2]).refreshed().unwrap().is_none(), "bytes in memory do not change");
        std::fs::remove_file(&path).unwrap();
    }
}
