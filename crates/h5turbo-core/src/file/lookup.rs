//! The one place that finds files named inside a file, as libhdf5 finds them:
//! external links, virtual dataset sources and external raw data.

use crate::format::names::stored_bytes;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What names another file; each is looked up in libhdf5's own order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedFile {
    /// An external link's target file (prefix variable HDF5_EXT_PREFIX).
    ExternalLink,
    /// A virtual dataset's source file (HDF5_VDS_PREFIX).
    VirtualSource,
    /// A contiguous dataset's external raw data file (HDF5_EXTFILE_PREFIX).
    ExternalRawData,
}

impl NamedFile {
    fn prefix_variable(self) -> &'static str {
        match self {
            NamedFile::ExternalLink => "HDF5_EXT_PREFIX",
            NamedFile::VirtualSource => "HDF5_VDS_PREFIX",
            NamedFile::ExternalRawData => "HDF5_EXTFILE_PREFIX",
        }
    }
}

/// The first existing file among the places libhdf5 looks for `name`, named inside the
/// file at `naming_file`:
/// - an absolute name: itself; where it does not exist (a file moved since), its last
///   component as a relative name, as libhdf5's H5F_prefix_open_file (raw data files:
///   the absolute name, then next to the naming file);
/// - a relative name: under each folder of the prefix variable (`${ORIGIN}` is the
///   naming file's folder), then next to the naming file and from the working folder
///   (raw data files: the working folder first, as libhdf5; next to the naming file
///   last, where libhdf5 does not look but where the file usually is).
pub fn find_named_file(kind: NamedFile, naming_file: &Path, name: &str) -> Option<PathBuf> {
    let stored = stored_bytes(name);
    let named = path_of(&stored, name);
    let origin = origin_of(naming_file);
    let candidates: Vec<PathBuf> = match kind {
        NamedFile::ExternalRawData => {
            let local = [named.to_path_buf(), origin.join(named)];
            under_prefixes(kind.prefix_variable(), origin, named).into_iter().chain(local).collect()
        }
        _ if named.is_absolute() => {
            let moved = named.file_name().map(Path::new);
            let by_last_component = moved.into_iter().flat_map(|last| relative_candidates(kind, origin, last));
            std::iter::once(named.to_path_buf()).chain(by_last_component).collect()
        }
        _ => relative_candidates(kind, origin, named),
    };
    candidates.into_iter().find(|p| p.is_file())
}

/// The path a stored file name names: its bytes as they are on Unix, where a Latin-1
/// name is a valid file name; elsewhere its text.
#[cfg(unix)]
fn path_of<'a>(stored: &'a [u8], _text: &'a str) -> &'a Path {
    Path::new(std::ffi::OsStr::from_bytes(stored))
}

#[cfg(not(unix))]
fn path_of<'a>(_stored: &'a [u8], text: &'a str) -> &'a Path {
    Path::new(text)
}

/// Where a relative name of a link or a virtual source is looked for, in libhdf5's order.
fn relative_candidates(kind: NamedFile, origin: &Path, named: &Path) -> Vec<PathBuf> {
    let local = [origin.join(named), named.to_path_buf()];
    under_prefixes(kind.prefix_variable(), origin, named).into_iter().chain(local).collect()
}

/// `name` under each folder of the ':'-separated environment variable `var`, where
/// `${ORIGIN}` stands for `origin` (the naming file's folder); nothing for an absolute
/// name.
fn under_prefixes(var: &str, origin: &Path, name: &Path) -> Vec<PathBuf> {
    if name.is_absolute() {
        return Vec::new();
    }
    let prefixes = std::env::var(var).unwrap_or_default();
    prefixes
        .split(':')
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(p.replace("${ORIGIN}", &origin.to_string_lossy())).join(name))
        .collect()
}

/// The folder of the naming file (for `${ORIGIN}` and relative names); "." for a file
/// named without a folder (whose parent is the empty path).
fn origin_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_to_the_naming_file_and_absolute_names() {
        let dir = std::env::temp_dir().join(format!("h5turbo-lookup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target.h5");
        std::fs::write(&target, b"x").unwrap();
        let naming = dir.join("naming.h5");
        for kind in [NamedFile::ExternalLink, NamedFile::VirtualSource, NamedFile::ExternalRawData] {
            assert_eq!(find_named_file(kind, &naming, "target.h5"), Some(dir.join("target.h5")));
            assert_eq!(find_named_file(kind, &naming, target.to_str().unwrap()), Some(target.clone()));
            assert_eq!(find_named_file(kind, &naming, "missing.h5"), None);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_moved_absolute_name_is_found_by_its_last_component() {
        let dir = std::env::temp_dir().join(format!("h5turbo-lookup-moved-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("source.h5"), b"x").unwrap();
        let naming = dir.join("naming.h5");
        let moved = "/no/such/folder/source.h5";
        for kind in [NamedFile::ExternalLink, NamedFile::VirtualSource] {
            assert_eq!(find_named_file(kind, &naming, moved), Some(dir.join("source.h5")));
        }
        assert_eq!(find_named_file(NamedFile::ExternalRawData, &naming, moved), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_naming_file_without_a_folder_has_origin_dot() {
        assert_eq!(origin_of(Path::new("o.h5")), Path::new("."));
        assert_eq!(origin_of(Path::new("/d/o.h5")), Path::new("/d"));
    }
}
