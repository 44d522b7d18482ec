//! External link targets: the files a File's external links lead into, opened once.
//!
//! Following an external link used to open its target file (a descriptor, the
//! superblock, the root group) for every object opened through it; a C or R user
//! opening 10,000 datasets linked into a few per-sample files paid 10,000 file opens
//! and, holding the objects, 10,000 descriptors. As libhdf5's external file cache
//! (H5Fefc.c), each File now keeps the targets it opened, most recently used first.
//!
//! Held strongly, not weakly: C and R close each object after reading it, which would
//! drop a weakly held target at once and bring back the open per object. The number
//! kept is bounded (LINK_TARGETS_KEPT), so are the descriptors. No reference cycle can
//! form: a target is always a File opened here, fresh, and kept only by the File that
//! opened it (a link into the file itself gives that file, not a cached copy), so the
//! files kept form a tree under the one the user opened; a link loop builds a chain of
//! at most MAX_SOFT_LINK_HOPS files before it fails, and its later tries reuse it.
//!
//! Descriptors are the system's, not one File's: when an open fails for want of them,
//! the targets kept by every File of the process are let go (those no object holds
//! close at once) and the open is tried again. Letting go of the failing File's own
//! only left a program holding four files of 64 links unable to follow any link of
//! the fourth, under a limit of 40 descriptors.

use super::File;
use crate::error::Result;
use std::collections::VecDeque;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::SystemTime;

/// External link target files one File keeps open, at most: the least recently used
/// is let go beyond it (its objects still open keep it open until they are closed).
/// Each File keeps its own (and its targets theirs): 64 a file ran a program holding 16
/// files of 64 links out of descriptors (ulimit 1024), where libhdf5 keeps none.
const LINK_TARGETS_KEPT: usize = 16;

/// Which file a path names: two names of one file (a symbolic or hard link, "./x"
/// and "x") are one target.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileIdentity {
    #[cfg(unix)]
    Inode { device: u64, inode: u64 },
    #[cfg_attr(unix, allow(dead_code))]
    Path(PathBuf),
}

impl FileIdentity {
    fn of(path: &Path, meta: &Metadata) -> FileIdentity {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = path;
            FileIdentity::Inode { device: meta.dev(), inode: meta.ino() }
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            FileIdentity::Path(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
        }
    }
}

/// What a file looked like when it was opened: a file rewritten in place since then
/// differs in its size or its modification or change time (one renamed over it has
/// another identity too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Status change time (Unix): moves on writes even where the mtime was set back.
    changed: (i64, i64),
}

impl FileStamp {
    fn of(meta: &Metadata) -> FileStamp {
        #[cfg(unix)]
        let changed = {
            use std::os::unix::fs::MetadataExt;
            (meta.ctime(), meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let changed = (0, 0);
        FileStamp { len: meta.len(), modified: meta.modified().ok(), changed }
    }
}

struct KeptTarget {
    identity: FileIdentity,
    stamp: FileStamp,
    file: File,
}

/// One File's kept targets, least recently used first.
type KeptList = Mutex<VecDeque<KeptTarget>>;

/// The kept lists of every File that has kept a target, weakly (a File dropped drops
/// its list): what `let_go_of_every_kept_target` empties.
static EVERY_KEPT_LIST: Mutex<Vec<Weak<KeptList>>> = Mutex::new(Vec::new());

/// The target files one File opened through its external links (a field of the File,
/// shared by its clones and threads; the lock is held only to look up or insert).
#[derive(Default)]
pub(crate) struct LinkTargets {
    kept: Arc<KeptList>,
    /// Set when `kept` is first listed in EVERY_KEPT_LIST (Files that never follow an
    /// external link, most of them, are never listed).
    listed: OnceLock<()>,
    /// The identity of the file itself, taken once: a link into it gives it back.
    own: OnceLock<Option<FileIdentity>>,
}

impl LinkTargets {
    /// The kept target with this identity, if it still is the file on disk (same stamp)
    /// and open; it becomes the most recently used.
    fn get(&self, identity: &FileIdentity, stamp: FileStamp) -> Option<File> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.iter().position(|t| t.identity == *identity)?;
        if kept[at].stamp != stamp || kept[at].file.is_closed() {
            kept.remove(at); // changed on disk or closed: opened again by the caller
            return None;
        }
        let target = kept.remove(at)?;
        let file = target.file.clone();
        kept.push_back(target);
        Some(file)
    }

    /// Keep `file`, opened for `identity` as it was at `stamp`, and give back the file to
    /// use: one another thread kept meanwhile for the same stamp wins, so that every
    /// object opened through a link shares one target.
    fn keep(&self, identity: FileIdentity, stamp: FileStamp, file: File) -> File {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = kept.iter().position(|t| t.identity == identity) {
            if kept[at].stamp == stamp && !kept[at].file.is_closed() {
                return kept[at].file.clone();
            }
            kept.remove(at);
        }
        if kept.len() >= LINK_TARGETS_KEPT {
            kept.pop_front();
        }
        kept.push_back(KeptTarget { identity, stamp, file: file.clone() });
        drop(kept);
        self.listed.get_or_init(|| list_kept(&self.kept));
        file
    }

    /// Let go of every kept target (File::close): objects opened through them keep
    /// theirs open until they are closed.
    pub(crate) fn clear(&self) {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Add one File's kept list to EVERY_KEPT_LIST, dropping the lists of Files gone since.
fn list_kept(kept: &Arc<KeptList>) {
    let mut every = EVERY_KEPT_LIST.lock().unwrap_or_else(|p| p.into_inner());
    every.retain(|list| list.strong_count() > 0);
    every.push(Arc::downgrade(kept));
}

/// Let go of the targets every File of the process keeps: those no object holds are
/// closed now. Called when the system has no descriptor left for an open.
pub(crate) fn let_go_of_every_kept_target() {
    let lists: Vec<Arc<KeptList>> = {
        let every = EVERY_KEPT_LIST.lock().unwrap_or_else(|p| p.into_inner());
        every.iter().filter_map(Weak::upgrade).collect()
    };
    // Each list is emptied under its own lock, and its files closed (dropped) after:
    // a target's drop may drop its own kept targets, and no lock is held then.
    for list in lists {
        let let_go: Vec<KeptTarget> = list.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
        drop(let_go);
    }
}

impl File {
    /// The file at `found` (an external link's target, found by `external_link_file`),
    /// open: this file itself when `found` names it, else a target opened before and
    /// unchanged on disk since, else the file opened now (and kept if it opened).
    pub(crate) fn link_target(&self, found: &Path) -> Result<File> {
        let Ok(meta) = std::fs::metadata(found) else {
            return File::open(found); // gone since it was found: File::open says why
        };
        let identity = FileIdentity::of(found, &meta);
        if self.own_identity() == Some(&identity) {
            return Ok(self.clone());
        }
        // The stamp is taken before the open: a file rewritten in between is kept with
        // the older stamp, so the next lookup opens it again rather than read it stale.
        let stamp = FileStamp::of(&meta);
        let targets = &self.inner.link_targets;
        if let Some(file) = targets.get(&identity, stamp) {
            return Ok(file);
        }
        // (File::open lets go of every File's kept targets and tries again when the
        // system has no descriptor left)
        let opened = File::open(found)?;
        Ok(targets.keep(identity, stamp, opened))
    }

    fn own_identity(&self) -> Option<&FileIdentity> {
        let own = self.inner.link_targets.own.get_or_init(|| {
            std::fs::metadata(self.absolute_path()).ok().map(|meta| FileIdentity::of(self.absolute_path(), &meta))
        });
        own.as_ref()
    }
}

/// The system refused a file for want of descriptors (this process's, or the whole
/// system's).
pub(crate) fn out_of_descriptors(error: &crate::error::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(error.io_error().and_then(|e| e.raw_os_error()), Some(libc::EMFILE) | Some(libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/external_links").join(name)
    }

    /// More targets than are kept: the least recently used is let go, the others are
    /// given back as the very same open files.
    #[test]
    fn the_least_recently_used_target_is_let_go_beyond_the_bound() {
        let dir = std::env::temp_dir().join(format!("h5turbo-link-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names: Vec<PathBuf> = (0..LINK_TARGETS_KEPT + 1).map(|k| dir.join(format!("t{}.h5", k))).collect();
        for name in &names {
            std::fs::copy(fixture("target.h5"), name).unwrap();
        }
        let source = File::open(&fixture("links.h5")).unwrap();
        let first: Vec<File> = names.iter().map(|n| source.link_target(n).unwrap()).collect();
        assert_eq!(source.inner.link_targets.len(), LINK_TARGETS_KEPT);
        let same = |k: usize| Arc::ptr_eq(&first[k].inner, &source.link_target(&names[k]).unwrap().inner);
        assert!(same(LINK_TARGETS_KEPT) && same(1), "kept targets are shared");
        assert!(!same(0), "the least recently used one was let go and is opened again");
        assert!(Arc::ptr_eq(&source.link_target(&fixture("links.h5")).unwrap().inner, &source.inner));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
