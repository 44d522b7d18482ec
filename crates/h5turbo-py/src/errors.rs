//! h5turbo errors as Python exceptions; panics caught before they reach Python.

use h5turbo_core::prelude::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;

// An OSError, as h5py's errors for files it cannot open or data it cannot read are, so
// that `except OSError` written for h5py catches them.
create_exception!(_native, H5TurboError, PyOSError, "Base of every h5turbo error (an OSError, as h5py's file and read errors).");
create_exception!(_native, FormatError, H5TurboError, "The file is broken or malformed where we looked.");
create_exception!(_native, UnsupportedError, H5TurboError, "Valid HDF5 that h5turbo does not read yet.");
create_exception!(_native, ClosedError, H5TurboError, "The file was closed.");
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
}

impl std::fmt::Display for FileObjectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FileObjectFailure {}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<H5TurboError>())?;
    m.add("FormatError", py.get_type::<FormatError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("FileObjectError", py.get_type::<FileObjectError>())?;
    Ok(())
}

pub fn to_py_err(e: Error) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Format => FormatError::new_err(msg),
        ErrorKind::Unsupported => UnsupportedError::new_err(msg),
        ErrorKind::Closed => ClosedError::new_err(msg),
        ErrorKind::NotFound => PyKeyError::new_err(msg),
        ErrorKind::InvalidArgument => PyValueError::new_err(msg),
        ErrorKind::Io if file_object_failure(&e).is_some() => {
            let err = FileObjectError::new_err(msg);
            if let Some(cause) = file_object_failure(&e).and_then(|f| f.cause.as_ref()) {
                Python::with_gil(|py| err.set_cause(py, Some(cause.clone_ref(py))));
            }
            err
        }
        ErrorKind::Io => match e.io_error().map(|io| io.kind()) {
            Some(std::io::ErrorKind::NotFound) => PyFileNotFoundError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
    }
}

fn file_object_failure(e: &Error) -> Option<&FileObjectFailure> {
    e.io_error()?.get_ref()?.downcast_ref::<FileObjectFailure>()
}

/// Run `f`, turning a panic into an h5turbo error instead of unwinding into Python.
pub fn guard<T>(f: impl FnOnce() -> h5turbo_core::prelude::Result<T>) -> h5turbo_core::prelude::Result<T> {
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
