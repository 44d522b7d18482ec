//! One descriptor for all the sources open on one file, as libhdf5 shares one open file
//! between the H5Fopen calls of a file: a program keeping thousands of Files of one
//! file (or objects that outlive them) needs one descriptor, not one each (3000 kept
//! opens ran out of descriptors at about 1000 under `ulimit -n 1024`, where h5py held 7).
//!
//! Sources are matched by `FileVersion` (device, inode, size and times): a file replaced
//! or rewritten since is opened anew. Each source still closes on its own; the
//! descriptor goes when the last source sharing it is closed or dropped.

use super::FileVersion;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

struct OpenFile {
    version: FileVersion,
    file: Weak<File>,
}

/// The descriptors open, by device and inode (weakly: the sources hold them).
#[derive(Default)]
struct OpenFiles {
    by_inode: HashMap<(u64, u64), OpenFile>,
    /// Entries of descriptors since closed are dropped when the map reaches this size.
    tidy_at: usize,
}

fn open_files() -> MutexGuard<'static, OpenFiles> {
    static OPEN_FILES: OnceLock<Mutex<OpenFiles>> = OnceLock::new();
    OPEN_FILES.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// The descriptor to read `file` (just opened, found at `version`) through: one already
/// open on that version of the file (`file` is then closed), else `file`, recorded for
/// the next open.
pub(super) fn shared(file: File, version: FileVersion) -> Arc<File> {
    if !cfg!(unix) {
        return Arc::new(file); // no inode to tell files apart by
    }
    let key = (version.device, version.inode);
    let mut open = open_files();
    if let Some(already) = open.by_inode.get(&key).filter(|o| o.version == version).and_then(|o| o.file.upgrade()) {
        return already;
    }
    let file = Arc::new(file);
    open.by_inode.insert(key, OpenFile { version, file: Arc::downgrade(&file) });
    if open.by_inode.len() >= open.tidy_at {
        open.by_inode.retain(|_, o| o.file.strong_count() > 0);
        open.tidy_at = 2 * open.by_inode.len() + 64;
    }
    file
}

/// A descriptor already open on the file at `path` as it is now (found by a stat, no
/// open): for when the system has no descriptor left to open it.
pub(super) fn already_open(path: &Path) -> Option<(Arc<File>, FileVersion)> {
    if !cfg!(unix) {
        return None;
    }
    let version = FileVersion::of(&std::fs::metadata(path).ok()?);
    let open = open_files();
    let entry = open.by_inode.get(&(version.device, version.inode)).filter(|o| o.version == version)?;
    entry.file.upgrade().map(|file| (file, version))
}
