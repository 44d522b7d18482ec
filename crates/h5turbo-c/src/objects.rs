//! Files, objects and group members.

use crate::errors::*;
use crate::handles::{close_handle, give_handle, guard_put_in, out_handle, out_strings};
use crate::strings::give_strings;
use h5turbo_core::prelude::{name_from_bytes, stored_bytes, Error, ErrorKind, File, LinkTarget, Object, ObjectKind, ResultExt};
use std::ffi::{c_char, c_int, CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An open HDF5 file (read-only). May be used from many threads at once.
pub struct h5turbo_file {
    pub(crate) file: File,
}

/// Closing the handle closes the file (for every object still open on it).
impl Drop for h5turbo_file {
    fn drop(&mut self) {
        self.file.close();
    }
}

/// A group, dataset or committed datatype of an open file.
pub struct h5turbo_object {
    pub(crate) object: Object,
    /// The object's path, for h5turbo_object_path.
    path: CString,
    /// The path of the file it lies in, for h5turbo_object_filename (made when asked).
    file_name: std::sync::OnceLock<CString>,
}

impl h5turbo_object {
    /// `object`, reached by `path` in `file`: from the root, or, for a relative path,
    /// from the group `base` whose own path is `base_path`. Its path is the one
    /// libhdf5's H5Iget_name gives: the path as typed (not the target of a soft link it
    /// went through), but an external link starts it again at the link's target, the
    /// object's path in the other file.
    pub(crate) fn opened(object: Object, file: &File, base: Option<(&Object, &str)>, path: &str) -> Result<h5turbo_object, Error> {
        let typed = |from: &str, parts: &[&str]| {
            let joined: String = from.split('/').chain(parts.iter().copied()).filter(|p| !p.is_empty()).flat_map(|p| ["/", p]).collect();
            if joined.is_empty() { "/".to_string() } else { joined }
        };
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        let base = base.filter(|_| !path.starts_with('/'));
        let start_path = base.map_or("", |(_, p)| p);
        let name = if object.file().same_file(file) {
            typed(start_path, &parts)
        } else {
            // an external link on the way (the only way into another file): walk again
            // to find the last one, and name the rest from its target
            let mut at = match base {
                Some((group, _)) => group.clone(),
                None => file.root()?,
            };
            let mut name = typed(start_path, &[]);
            for part in parts {
                let external = matches!(at.link(part)?.target, LinkTarget::External { .. });
                at = at.child_following_external(part)?;
                name = if external { at.name().to_string() } else { typed(&name, &[part]) };
            }
            name
        };
        Ok(h5turbo_object { object, path: c_string_lossy(&stored_bytes(&name)), file_name: Default::default() })
    }
}

/// An empty path names nothing (libhdf5 refuses it too); "." is the base itself.
fn non_empty(path: &str) -> Result<&str, Error> {
    if path.is_empty() {
        return Err(Error::invalid_argument("the path is empty (\"/\" is the root group, \".\" the group itself)"));
    }
    Ok(path)
}

/// A group.
pub const H5TURBO_GROUP: c_int = 0;
/// A dataset.
pub const H5TURBO_DATASET: c_int = 1;
/// A committed (named) datatype.
pub const H5TURBO_NAMED_DATATYPE: c_int = 2;

/// A hard link (to an object of the file).
pub const H5TURBO_LINK_HARD: c_int = 0;
/// A soft link (a path in the same file).
pub const H5TURBO_LINK_SOFT: c_int = 1;
/// An external link (a path in another file).
pub const H5TURBO_LINK_EXTERNAL: c_int = 2;

/// A file path argument (any bytes: Unix paths need not be UTF-8).
pub(crate) unsafe fn path_arg<'a>(ptr: *const c_char, what: &str) -> Result<&'a Path, Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{} is NULL", what)));
    }
    Ok(Path::new(OsStr::from_bytes(CStr::from_ptr(ptr).to_bytes())))
}

/// Open the HDF5 file at `path`; `*file` receives the handle (close it with
/// h5turbo_file_close).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_file_open(path: *const c_char, file: *mut *mut h5turbo_file) -> c_int {
    let named = if path.is_null() { None } else { path_arg(path, "path").ok() };
    guard_named(named, None, || {
        let out = out_handle(file, "file")?;
        let path = path_arg(path, "path")?;
        if path.is_dir() {
            // (the read of its signature would fail "at offset 0", which means nothing here)
            return Err(Error::new(ErrorKind::Io, "is a folder, not a file"));
        }
        let opened = File::open(path).in_file(path)?;
        give_handle(out, h5turbo_file { file: opened });
        Ok(())
    })
}

/// Close a file (NULL is fine): its descriptor is given back at once. Objects and
/// attributes still open on it then fail with H5TURBO_E_CLOSED wherever they would
/// read the file (data, datatypes, shapes, attribute lists); what they already hold
/// (an object's kind, path and address, an open attribute's value) stays readable.
/// Close them too. No other thread may be using `file` itself.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_file_close(file: *mut h5turbo_file) {
    close_handle(file, "file");
}

/// Open the object at `path` ("/", "/group/dataset"; soft and external links followed,
/// as H5Oopen: an external link's file is found as libhdf5 finds it (HDF5_EXT_PREFIX,
/// next to this file, the working folder) and held open by the object, whose path is
/// then its path in that file; each target is opened once per file and kept, the 64
/// most recent, and opened again when it changed on disk).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_open(
    file: *const h5turbo_file,
    path: *const c_char,
    obj: *mut *mut h5turbo_object,
) -> c_int {
    let named_file = crate::handles::live(file).map(|f| f.file.path());
    let named_object = label(path);
    guard_named(named_file, named_object.as_deref(), || {
        let out = out_handle(obj, "obj")?;
        let file = deref(file, "file")?;
        let path = hdf5_name(path, "path")?;
        let path = non_empty(&path)?;
        let object = file.file.get_following_external(path).in_object(path).in_file(file.file.path())?;
        give_handle(out, h5turbo_object::opened(object, &file.file, None, path).in_object(path).in_file(file.file.path())?);
        Ok(())
    })
}

/// Open the object at `path` relative to the group `base` ("member", "a/b"; soft
/// and external links followed; an absolute path starts from the root, as in
/// h5turbo_object_open): walking a deep hierarchy member by member costs one lookup
/// per step instead of a walk from the root.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_open_at(
    base: *const h5turbo_object,
    path: *const c_char,
    obj: *mut *mut h5turbo_object,
) -> c_int {
    guard_in(base, || {
        let out = out_handle(obj, "obj")?;
        let opened_base = deref(base, "base")?;
        let base = &opened_base.object;
        let file = base.file();
        let path = hdf5_name(path, "path")?;
        let path = non_empty(&path)?;
        let object = if path.starts_with('/') {
            file.get_following_external(path)
        } else if base.kind() != ObjectKind::Group {
            Err(Error::invalid_argument(format!("'{}' is not a group, so '{}' cannot be opened from it", base.name(), path)))
        } else {
            path.split('/').filter(|p| !p.is_empty() && *p != ".").try_fold(base.clone(), |object, part| object.child_following_external(part))
        };
        let object = object.in_file(file.path())?;
        let base_path = name_from_bytes(opened_base.path.to_bytes());
        let opened = h5turbo_object::opened(object, file, Some((base, &base_path)), path);
        give_handle(out, opened.in_file(file.path())?);
        Ok(())
    })
}

/// Close an object (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_close(obj: *mut h5turbo_object) {
    close_handle(obj, "obj");
}

/// The kind of an object: H5TURBO_GROUP, H5TURBO_DATASET or H5TURBO_NAMED_DATATYPE.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_kind(obj: *const h5turbo_object, kind: *mut c_int) -> c_int {
    guard_put_in(obj, kind, "kind", || {
        Ok(match deref(obj, "obj")?.object.kind() {
            ObjectKind::Group => H5TURBO_GROUP,
            ObjectKind::Dataset => H5TURBO_DATASET,
            ObjectKind::Datatype => H5TURBO_NAMED_DATATYPE,
        })
    })
}

/// The object's path in the file, as it was opened (a pointer owned by `obj`).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_path(obj: *const h5turbo_object, path: *mut *const c_char) -> c_int {
    guard_put_in(obj, path, "path", || Ok(deref(obj, "obj")?.path.as_ptr()))
}

/// The object's address in its file: two paths of one file reach the same object (hard
/// links) exactly when their addresses are equal. An external link leads into another
/// file, where addresses start again: compare h5turbo_object_filename too.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_address(obj: *const h5turbo_object, address: *mut u64) -> c_int {
    guard_put_in(obj, address, "address", || Ok(deref(obj, "obj")?.object.address()))
}

/// The path of the file the object lies in (a pointer owned by `obj`), as libhdf5's
/// H5Fget_name: the opened file's path as it was given, or, for an object an external
/// link led to, the absolute path its file was found at (links are followed from
/// where the file was opened, even after the program changes folder).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_object_filename(obj: *const h5turbo_object, path: *mut *const c_char) -> c_int {
    guard_put_in(obj, path, "path", || {
        let obj = deref(obj, "obj")?;
        let name = obj.file_name.get_or_init(|| c_string_lossy(obj.object.file().path().as_os_str().as_bytes()));
        Ok(name.as_ptr())
    })
}

/// The member names of a group in h5py's order (creation order where the group tracks
/// it, else by name); soft and external links are listed too. Free with
/// h5turbo_strings_free(names, count).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_group_members(
    group: *const h5turbo_object,
    names: *mut *mut *mut c_char,
    count: *mut usize,
) -> c_int {
    guard_in(group, || {
        let (names, count) = out_strings(names, "names", count, "count")?;
        let group = &deref(group, "group")?.object;
        if group.kind() != ObjectKind::Group {
            return Err(invalid("not a group").in_object(group.name()).in_file(group.file().path()));
        }
        let links = group.links().in_object(group.name()).in_file(group.file().path())?;
        give_strings(links.iter().map(|l| stored_bytes(&l.name)), names, count)?;
        Ok(())
    })
}

/// The kind of the link `name` in a group: H5TURBO_LINK_HARD, _SOFT or _EXTERNAL
/// (walkers that visit each object once, as H5Ovisit, follow hard links only);
/// H5TURBO_E_UNSUPPORTED for a link that cannot be read (a user-defined link, an
/// external link value libhdf5 wrote past 64 KiB), which its group still lists.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_link_kind(group: *const h5turbo_object, name: *const c_char, kind: *mut c_int) -> c_int {
    guard_put_in(group, kind, "kind", || {
        let group = &deref(group, "group")?.object;
        let name = hdf5_name(name, "name")?;
        let link = group.link(&name).in_object(group.name()).in_file(group.file().path())?;
        Ok(match link.target {
            LinkTarget::Hard(_) => H5TURBO_LINK_HARD,
            LinkTarget::Soft(_) => H5TURBO_LINK_SOFT,
            LinkTarget::External { .. } => H5TURBO_LINK_EXTERNAL,
            LinkTarget::Unreadable { problem, .. } => {
                return Err(Error::unsupported(format!("link '{}': {}", name, problem)).in_object(group.name()).in_file(group.file().path()))
            }
        })
    })
}
