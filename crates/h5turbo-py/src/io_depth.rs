//! The read-ahead window (`io_depth`) of the calling thread: `h5turbo.io_depth(...)`
//! and the `io_depth=` arguments set it around a read (python/h5turbo/readahead.py).

use h5turbo_core::prelude::read_ahead;
use pyo3::prelude::*;

/// Set this thread's read-ahead window in bytes (None: `H5TURBO_IO_DEPTH` or the
/// default; 0: no read-ahead) and return the previous setting.
#[pyfunction]
#[pyo3(signature = (bytes))]
pub fn swap_io_depth(bytes: Option<u64>) -> Option<u64> {
    read_ahead::swap_window(bytes)
}

/// The window a read started now on this thread would use, in bytes.
#[pyfunction]
pub fn io_depth() -> u64 {
    read_ahead::window()
}
