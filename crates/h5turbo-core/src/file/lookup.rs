//! Where libhdf5 looks for a file named inside another one (VDS sources, external raw
//! data): the folders of a prefix variable first.

use std::path::{Path, PathBuf};

/// `name` under each folder of the ':'-separated environment variable `var`, where
/// `${ORIGIN}` stands for `origin` (the naming file's folder); nothing for an absolute
/// name.
pub(super) fn under_prefixes(var: &str, origin: &Path, name: &Path) -> Vec<PathBuf> {
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

/// The folder of the naming file (for `${ORIGIN}` and relative names).
pub(super) fn origin_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}
