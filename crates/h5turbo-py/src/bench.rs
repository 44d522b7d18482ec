//! Measurements the benchmark library (`h5turbo.bench`) needs from the native side, so
//! an installed package (no source tree, no cargo) produces every reference row.

use crate::fork_gate::without_gil;
use crate::errors::{guard, to_py_err};
use crate::threads_arg;
use h5turbo_core::prelude::{codec_limit as core_codec_limit, fast5_limit as core_fast5_limit};
use pyo3::prelude::*;
use std::path::PathBuf;

/// Median seconds to decode every stored chunk of `dataset` from memory into a
/// pre-faulted buffer on `threads` threads (0: the default), over `repeats` timed
/// passes after one warm-up: the codec-only limit of a warm read.
#[pyfunction]
#[pyo3(signature = (path, dataset, threads=0, repeats=5))]
fn codec_limit(py: Python<'_>, path: PathBuf, dataset: &str, threads: i64, repeats: usize) -> PyResult<f64> {
    let threads = threads_arg(threads);
    without_gil(py, || guard(|| core_codec_limit(&path, dataset, threads, repeats))).map_err(to_py_err)
}

/// As `codec_limit`, for the raw signal of every read in these fast5 files, decoded
/// all together: the floor under any fast5 reader built on these decoders.
#[pyfunction]
#[pyo3(signature = (paths, threads=0, repeats=5))]
fn fast5_limit(py: Python<'_>, paths: Vec<PathBuf>, threads: i64, repeats: usize) -> PyResult<f64> {
    let threads = threads_arg(threads);
    without_gil(py, || guard(|| core_fast5_limit(&paths, threads, repeats))).map_err(to_py_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(codec_limit, m)?)?;
    m.add_function(wrap_pyfunction!(fast5_limit, m)?)
}
