//! Status codes, the thread-local last error, the version, and the guard every entry
//! point runs its body in.

use h5turbo_core::prelude::{name_from_bytes, Error, ErrorKind};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success.
pub const H5TURBO_OK: c_int = 0;
/// The file is not valid HDF5 (or fast5) where it was read.
pub const H5TURBO_E_FORMAT: c_int = 1;
/// Valid HDF5 that h5turbo does not read (the message names the feature).
pub const H5TURBO_E_UNSUPPORTED: c_int = 2;
/// No such object, attribute or read (a path whose soft or external links go round a
/// cycle, or more than 16 deep, names none either: libhdf5's "too many links").
pub const H5TURBO_E_NOT_FOUND: c_int = 3;
/// The operating system refused a read, or the file is missing.
pub const H5TURBO_E_IO: c_int = 4;
/// A bad argument: a NULL pointer, a selection outside the dataset, a buffer too small.
pub const H5TURBO_E_INVALID: c_int = 5;
/// The file was closed.
pub const H5TURBO_E_CLOSED: c_int = 6;
/// A bug in h5turbo (a panic caught at the boundary); please report it.
pub const H5TURBO_E_INTERNAL: c_int = 7;
/// The memory the values need cannot be had (more than the machine has, or a memory
/// limit refused it): read less at a time.
pub const H5TURBO_E_NOMEM: c_int = 8;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The library's version, e.g. "0.1.0" (a static string).
#[no_mangle]
pub extern "C" fn h5turbo_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast::<c_char>()
}

/// The message of the last failed h5turbo call on this thread ("" if none): the file,
/// the object and the problem. Valid until the next h5turbo call on this thread.
#[no_mangle]
pub extern "C" fn h5turbo_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The status code of an error kind.
pub(crate) fn code_of(kind: ErrorKind) -> c_int {
    match kind {
        ErrorKind::Format => H5TURBO_E_FORMAT,
        ErrorKind::Unsupported => H5TURBO_E_UNSUPPORTED,
        // a link cycle is valid HDF5 (H5Lcreate_soft makes one): the path names nothing
        ErrorKind::NotFound | ErrorKind::TooManyLinks => H5TURBO_E_NOT_FOUND,
        ErrorKind::Io => H5TURBO_E_IO,
        ErrorKind::InvalidArgument => H5TURBO_E_INVALID,
        ErrorKind::Closed => H5TURBO_E_CLOSED,
        ErrorKind::OutOfMemory => H5TURBO_E_NOMEM,
    }
}

pub(crate) fn set_last_error(message: &str) {
    let text = c_string_lossy(message.as_bytes());
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// A C string of `bytes` up to the first NUL (C strings cannot hold one).
pub(crate) fn c_string_lossy(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap_or_default()
}

/// The text of a caught panic.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The message of an error as the caller sees it: the file, the object, the problem
/// and the byte offset of the structure that was wrong (the core's Display), except
/// that an empty file path marks a message that names its file itself (a fast5 read's
/// error, kept as it was made, without the stream's paths before it).
pub(crate) fn message_of(e: &Error) -> String {
    match e.file() {
        Some(file) if file.as_os_str().is_empty() => {
            let mut text = String::new();
            if let Some(object) = e.object() {
                text.push_str(&format!("{}: ", object));
            }
            text.push_str(e.message());
            if let Some(offset) = e.offset() {
                text.push_str(&format!(" (at byte offset {})", offset));
            }
            text
        }
        _ => e.to_string(),
    }
}

/// Run `body`, a panic inside it becoming an error (for work done per file or per
/// read, so one bad entry fails alone instead of the whole call).
pub(crate) fn caught<T>(body: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        Err(Error::format(format!("internal error in h5turbo (please report): {}", panic_text(panic.as_ref()))))
    })
}

/// Run an entry point's body: its error becomes the status code and the thread's last
/// error; a panic becomes H5TURBO_E_INTERNAL.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Error>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => H5TURBO_OK,
        Ok(Err(e)) => {
            set_last_error(&message_of(&e));
            code_of(e.kind())
        }
        Err(panic) => {
            set_last_error(&format!("internal error in h5turbo (please report): {}", panic_text(panic.as_ref())));
            H5TURBO_E_INTERNAL
        }
    }
}

/// `guard` for an entry point that knows the file (and maybe the object) before it
/// has a handle to them: a failure that names neither (a bad argument, say) is told
/// with them.
pub(crate) fn guard_named(file: Option<&std::path::Path>, object: Option<&str>, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    guard(|| {
        body().map_err(|e| {
            let e = match object {
                Some(o) => e.in_object(o),
                None => e,
            };
            match file {
                Some(f) => e.in_file(f),
                None => e,
            }
        })
    })
}

/// A C string argument as text for a message (invalid UTF-8 replaced), None if NULL
/// or empty.
pub(crate) unsafe fn label(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() || *ptr == 0 {
        return None;
    }
    Some(CStr::from_ptr(ptr).to_string_lossy().into_owned())
}

/// `guard` for an entry point given an object handle: a failure that names no file or
/// object (a bad argument, say) is told with the handle's file and object path.
pub(crate) unsafe fn guard_in(obj: *const crate::objects::h5turbo_object, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    let object = crate::handles::live(obj).map(|h| &h.object);
    guard(|| body().map_err(|e| match object {
        Some(o) => e.in_object(o.name()).in_file(o.file().path()),
        None => e,
    }))
}

/// `guard` for an entry point given an attribute handle: a failure is told with the
/// file, the object and the attribute's name.
pub(crate) unsafe fn guard_attr(attr: *const crate::attribute::h5turbo_attribute, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    let handle = crate::handles::live(attr);
    guard(|| body().map_err(|e| match handle {
        Some(a) => e
            .in_object(format!("{} (attribute '{}')", a.object().name(), a.value().name))
            .in_file(a.object().file().path()),
        None => e,
    }))
}

/// For functions without a status (the closers): run, swallowing a panic.
pub(crate) fn guard_void(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_argument(message)
}

/// The handle behind a pointer the caller passed, or an invalid-argument error naming
/// it: NULL, or not an open handle (closed already).
pub(crate) unsafe fn deref<'a, T: 'static>(ptr: *const T, what: &str) -> Result<&'a T, Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{} is NULL", what)));
    }
    match crate::handles::lookup(ptr) {
        // SAFETY: an open handle of this kind points at the value give_handle boxed.
        Ok(()) => Ok(&*ptr),
        Err(of_another_kind) => Err(invalid(crate::handles::not_open(of_another_kind, what))),
    }
}

/// Check an output pointer.
pub(crate) fn out_ptr<T>(ptr: *mut T, what: &str) -> Result<*mut T, Error> {
    if ptr.is_null() {
        Err(invalid(format!("{} is NULL", what)))
    } else {
        Ok(ptr)
    }
}

/// A C string argument as UTF-8 text.
pub(crate) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{} is NULL", what)));
    }
    CStr::from_ptr(ptr).to_str().map_err(|_| invalid(format!("{} is not UTF-8", what)))
}

/// A path or name inside an HDF5 file (object path, link or attribute name): bytes, as
/// libhdf5 takes them; UTF-8 almost always, and a name that is not (Latin-1) is found
/// by its bytes (file paths, which are bytes too, go through path_arg).
pub(crate) unsafe fn hdf5_name<'a>(ptr: *const c_char, what: &str) -> Result<Cow<'a, str>, Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{} is NULL", what)));
    }
    let bytes = CStr::from_ptr(ptr).to_bytes();
    Ok(match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(name_from_bytes(bytes)),
    })
}

/// A thread count argument: 0 is the default (H5TURBO_THREADS, else every core).
pub(crate) fn threads_arg(threads: c_int) -> Result<usize, Error> {
    let requested = usize::try_from(threads).map_err(|_| invalid(format!("threads is negative ({})", threads)))?;
    Ok(h5turbo_core::prelude::resolve_threads(requested))
}
