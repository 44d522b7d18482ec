//! The read-ahead window (`io_depth`) of the calling thread: `h5turbo.io_depth(...)`
//! and the `io_depth=` arguments set it around a read (python/h5turbo/readahead.py).

use crate::fork_gate::without_gil;
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

/// Files hinted to the system in reading order by a thread of their own, `window` bytes
/// (None: this thread's window) beyond the farthest reader; with a window of 0 it does
/// nothing. `read_fast5` pushes its large files and reports where its tasks start.
#[pyclass(module = "h5turbo._native")]
pub struct FileHints {
    hints: std::sync::Mutex<Option<h5turbo_core::prelude::FileHints>>,
}

#[pymethods]
impl FileHints {
    #[new]
    #[pyo3(signature = (window=None))]
    fn new(window: Option<u64>) -> Self {
        let started = h5turbo_core::prelude::FileHints::start(window.unwrap_or_else(read_ahead::window));
        FileHints { hints: std::sync::Mutex::new(started) }
    }

    /// The next file to be read; returns its number (from 0, in the order pushed).
    fn push(&self, path: std::path::PathBuf) -> u64 {
        match self.lock().as_ref() {
            Some(hints) => hints.push(path),
            None => 0,
        }
    }

    /// A reader has reached file number `file`, `done / of` of the way into it.
    fn reached(&self, file: u64, done: u64, of: u64) {
        if let Some(hints) = self.lock().as_ref() {
            hints.reached(file, done, of);
        }
    }

    /// Stop the thread (it waits for the hint in progress), with the GIL released.
    fn close(&self, py: Python<'_>) {
        let hints = self.lock().take();
        without_gil(py, move || drop(hints));
    }
}

impl FileHints {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<h5turbo_core::prelude::FileHints>> {
        self.hints.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
