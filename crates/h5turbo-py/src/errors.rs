//! h5turbo errors as Python exceptions; panics caught before they reach Python.

use h5turbo_core::prelude::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyKeyError, PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};

// An OSError, as h5py's errors for files it cannot open or data it cannot read are, so
// that `except OSError` written for h5py catches them.
create_exception!(_native, H5TurboError, PyOSError, "Base of every h5turbo error (an OSError, as h5py's file and read errors).");
create_exception!(_native, FormatError, H5TurboError, "The file is broken or malformed where we looked.");
create_exception!(_native, UnsupportedError, H5TurboError, "Valid HDF5 that h5turbo does not read yet.");
create_exception!(
    _native,
    FileObjectError,
    H5TurboError,
    "A file-like object failed: it raised (the exception is the __cause__), returned fewer bytes than it holds, or returned something other than bytes."
);

/// What a file-like object did wrong, carried through the core as the source of an
/// Io error and raised as FileObjectError (with the Python exception as its cause).
#[derive(Debug)]
pub struct FileObjectFailure {
    pub message: String,
    pub cause: Option<PyErr>,
    /// read() returned something other than bytes (str, None): raised as NotBytesError,
    /// also the TypeError h5py raises for it
    pub not_bytes: bool,
}

impl std::fmt::Display for FileObjectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FileObjectFailure {}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // Named where pickle finds them (h5turbo._native.FormatError ...): an error raised in
    // a worker process then reaches the parent as itself ("_native" is no importable
    // module: the parent got a PicklingError and the message was lost).
    for class in [py.get_type::<H5TurboError>(), py.get_type::<FormatError>(), py.get_type::<UnsupportedError>(), py.get_type::<FileObjectError>()] {
        class.setattr("__module__", "h5turbo._native")?;
    }
    m.add("H5TurboError", py.get_type::<H5TurboError>())?; // its class name, for pickle
    m.add("Error", py.get_type::<H5TurboError>())?;
    m.add("FormatError", py.get_type::<FormatError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("ClosedError", closed_error_type(py)?)?;
    m.add("FileObjectError", py.get_type::<FileObjectError>())?;
    m.add("NotBytesError", not_bytes_type(py)?)?;
    m.add("TooManyLinksError", too_many_links_type(py)?)?;
    m.add("OutOfMemoryError", out_of_memory_type(py)?)?;
    Ok(())
}

pub fn to_py_err(e: Error) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Format => FormatError::new_err(msg),
        ErrorKind::Unsupported => UnsupportedError::new_err(msg),
        ErrorKind::Closed => new_err_of(closed_error_type, msg),
        ErrorKind::TooManyLinks => new_err_of(too_many_links_type, msg),
        ErrorKind::OutOfMemory => new_err_of(out_of_memory_type, msg),
        ErrorKind::NotFound => PyKeyError::new_err(msg),
        ErrorKind::InvalidArgument => PyValueError::new_err(msg),
        ErrorKind::Io if interrupted(&e).is_some() => interrupted(&e).unwrap_or_else(|| PyOSError::new_err(msg)),
        ErrorKind::Io if file_object_failure(&e).is_some_and(|f| f.not_bytes) => new_err_of(not_bytes_type, msg),
        ErrorKind::Io if file_object_failure(&e).is_some() => {
            let err = FileObjectError::new_err(msg);
            if let Some(cause) = file_object_failure(&e).and_then(|f| f.cause.as_ref()) {
                Python::with_gil(|py| err.set_cause(py, Some(cause.clone_ref(py))));
            }
            err
        }
        // OSError(errno, message): Python picks the subclass as for its own I/O
        // (FileNotFoundError, IsADirectoryError, PermissionError ...), errno set, as h5py
        ErrorKind::Io => match e.io_error() {
            Some(io) if io.raw_os_error().is_some() => PyOSError::new_err((io.raw_os_error(), msg)),
            Some(io) if io.kind() == std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
    }
}

/// An error of one of the classes below (made at first use); the error of making the
/// class if that failed.
fn new_err_of(class: for<'py> fn(Python<'py>) -> PyResult<Bound<'py, PyType>>, msg: String) -> PyErr {
    Python::with_gil(|py| match class(py) {
        Ok(made) => PyErr::from_type(made, msg),
        Err(e) => e,
    })
}

/// The file was closed: an h5turbo error, and the ValueError or RuntimeError h5py raises
/// for objects of a closed file (invalid identifiers), so handlers written for h5py work.
fn closed_error_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    static CLOSED: GILOnceCell<Py<PyType>> = GILOnceCell::new();
    let bases = [py.get_type::<H5TurboError>(), py.get_type::<PyValueError>(), py.get_type::<PyRuntimeError>()];
    made_once(py, &CLOSED, "ClosedError", bases, "The file was closed (also a ValueError and a RuntimeError, as h5py raises).")
}

/// A file object's read() gave something other than bytes: a FileObjectError, and the
/// TypeError h5py raises for it ('expected bytes, str found').
fn not_bytes_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    static NOT_BYTES: GILOnceCell<Py<PyType>> = GILOnceCell::new();
    let bases = [py.get_type::<FileObjectError>(), py.get_type::<PyTypeError>()];
    made_once(py, &NOT_BYTES, "NotBytesError", bases, "A file-like object's read() returned something other than bytes (also a TypeError, as h5py raises).")
}

/// A cycle of soft links: a FormatError, and the RuntimeError h5py raises for it.
fn too_many_links_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    static TOO_MANY_LINKS: GILOnceCell<Py<PyType>> = GILOnceCell::new();
    let bases = [py.get_type::<FormatError>(), py.get_type::<PyRuntimeError>()];
    made_once(py, &TOO_MANY_LINKS, "TooManyLinksError", bases, "A path followed too many soft links, a cycle (also a RuntimeError, as h5py raises).")
}

/// Memory the values need cannot be had: an h5turbo error, and the MemoryError numpy
/// raises when h5py's output array cannot be allocated.
fn out_of_memory_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    static OUT_OF_MEMORY: GILOnceCell<Py<PyType>> = GILOnceCell::new();
    let bases = [py.get_type::<H5TurboError>(), py.get_type::<PyMemoryError>()];
    made_once(py, &OUT_OF_MEMORY, "OutOfMemoryError", bases, "The memory the values need cannot be had: read less at a time (also a MemoryError, as numpy raises).")
}

/// The class kept in `cell`, made by `exception_type` the first time.
fn made_once<'py, const N: usize>(
    py: Python<'py>,
    cell: &'static GILOnceCell<Py<PyType>>,
    name: &str,
    bases: [Bound<'py, PyType>; N],
    doc: &str,
) -> PyResult<Bound<'py, PyType>> {
    Ok(cell.get_or_try_init(py, || exception_type(py, name, bases, doc))?.bind(py).clone())
}

/// An exception class of several bases (pyo3's `create_exception!` takes one).
fn exception_type<const N: usize>(py: Python<'_>, name: &str, bases: [Bound<'_, PyType>; N], doc: &str) -> PyResult<Py<PyType>> {
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "h5turbo._native")?;
    namespace.set_item("__doc__", doc)?;
    let made = py.get_type::<PyType>().call1((name, PyTuple::new(py, bases)?, namespace))?;
    Ok(made.downcast_into::<PyType>()?.unbind())
}

/// A file-like object's read interrupted by Ctrl-C (or another BaseException that is
/// not an Exception, such as SystemExit): it goes on as itself, never as an h5turbo
/// error that `except OSError` would swallow.
fn interrupted(e: &Error) -> Option<PyErr> {
    let cause = file_object_failure(e)?.cause.as_ref()?;
    Python::with_gil(|py| (!cause.is_instance_of::<PyException>(py)).then(|| cause.clone_ref(py)))
}

fn file_object_failure(e: &Error) -> Option<&FileObjectFailure> {
    e.io_error()?.get_ref()?.downcast_ref::<FileObjectFailure>()
}

/// Run `f`, turning a panic into an h5turbo error instead of unwinding into Python.
/// The call passes the fork gate (fork_gate.rs) while it runs.
pub fn guard<T>(f: impl FnOnce() -> h5turbo_core::prelude::Result<T>) -> h5turbo_core::prelude::Result<T> {
    let _pass = crate::fork_gate::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::new(ErrorKind::Format, format!("internal error (please report): {}", what)))
        }
    }
}
