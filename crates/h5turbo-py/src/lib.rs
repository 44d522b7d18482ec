//! `h5turbo._native`: the thin PyO3 layer over h5turbo-core's public API
//! (`h5turbo_core::prelude`).
//!
//! numpy buffers in and out, errors mapped to Python exceptions, the GIL released
//! for every read, panics caught at the boundary. The contract is
//! python/h5turbo/_native.pyi. One module per thing exposed: files, objects,
//! reductions, encoding, fast5, conversion to numpy/Python values, errors.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod arrays;
mod bench;
mod convert;
mod encode;
mod errors;
mod fast5;
mod file;
mod fork_gate;
mod io_depth;
mod object;
mod pyfile;
mod reduce;
mod shutdown;

use h5turbo_core::prelude::{default_threads as core_default_threads, filter_registry};
use pyo3::prelude::*;

/// The native `threads` argument, resolved once: 0 or less asks for the default
/// (H5TURBO_THREADS or all cores; the Python layer has already checked the value).
pub(crate) fn threads_arg(threads: i64) -> usize {
    usize::try_from(threads).unwrap_or(0)
}

#[pyfunction]
fn default_threads() -> usize {
    core_default_threads()
}

/// Every filter the core knows: [(id, name, decodes, encodes)], sorted by id.
#[pyfunction]
fn filters() -> Vec<(u16, &'static str, bool, bool)> {
    filter_registry::FILTERS.iter().map(|k| (k.id, k.name, k.decodes, k.encodes)).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    arrays::load_numpy_api(m.py())?;
    pyfile::note_main_thread(m.py());
    errors::register(m)?;
    m.add_class::<file::File>()?;
    m.add_class::<object::Object>()?;
    m.add_function(wrap_pyfunction!(default_threads, m)?)?;
    m.add_function(wrap_pyfunction!(fork_gate::fork_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(fork_gate::fork_parent, m)?)?;
    m.add_function(wrap_pyfunction!(fork_gate::fork_child, m)?)?;
    m.add_function(wrap_pyfunction!(shutdown::prepare_exit, m)?)?;
    m.add_function(wrap_pyfunction!(filters, m)?)?;
    m.add_function(wrap_pyfunction!(fast5::fast5_reads, m)?)?;
    m.add_function(wrap_pyfunction!(fast5::fast5_fetch, m)?)?;
    m.add_class::<fast5::Fast5ReadIndex>()?;
    m.add_function(wrap_pyfunction!(io_depth::swap_io_depth, m)?)?;
    m.add_function(wrap_pyfunction!(io_depth::io_depth, m)?)?;
    m.add_class::<io_depth::FileHints>()?;
    m.add_function(wrap_pyfunction!(encode::encode_chunks_into, m)?)?;
    bench::register(m)?;
    Ok(())
}
