//! Chunk encoding for the writer: numpy arrays cut into chunks and encoded on every
//! core, handed back to Python (which gives them to libhdf5).

use crate::fork_gate::without_gil;
use crate::arrays::writable_buffer;
use crate::errors::{guard, to_py_err};
use crate::threads_arg;
use h5turbo_core::prelude::{ChunkedArray, EncodePipeline, FilterSpec};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// What the chunk encoder takes from its arguments: the source array's
/// buffer (checked C-contiguous), its shape and element size, the filter pipeline and
/// the thread count (0: the default pool).
struct EncodeInput {
    address: usize,
    len: usize,
    shape: Vec<usize>,
    element_size: usize,
    pipeline: EncodePipeline,
    threads: usize,
}

impl EncodeInput {
    fn new(array: &Bound<'_, PyUntypedArray>, filters: Vec<(u16, u32, Vec<u32>)>, threads: i64) -> PyResult<Self> {
        if !array.is_c_contiguous() {
            return Err(PyValueError::new_err("array must be C-contiguous"));
        }
        let element_size = array.dtype().itemsize();
        let specs: Vec<FilterSpec> =
            filters.into_iter().map(|(id, flags, client_data)| FilterSpec { id, flags, client_data }).collect();
        let pipeline = EncodePipeline::new(&specs, element_size).map_err(to_py_err)?;
        Ok(EncodeInput {
            // SAFETY: `array` is the live PyArrayObject behind the borrowed `array`.
            address: unsafe { (*array.as_array_ptr()).data } as usize,
            len: array.len() * element_size,
            shape: array.shape().to_vec(),
            element_size,
            pipeline,
            threads: threads_arg(threads),
        })
    }

    /// The array's bytes.
    ///
    /// # Safety
    /// The array this was built from must still be alive and unresized.
    unsafe fn data(&self) -> &[u8] {
        if self.len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(self.address as *const u8, self.len)
        }
    }
}

/// Encode chunks `first .. first + count` (C order over the chunk grid) of a
/// C-contiguous array through a filter pipeline [(id, flags, client data)], in parallel
/// with the GIL released, the stored bytes packed into `out` (a writeable C-contiguous
/// uint8 array, reused between calls); returns [(chunk offset, start, length, filter
/// mask)]. See _native.pyi.
#[pyfunction]
#[pyo3(signature = (array, chunk, filters, fill, first, count, out, threads=0))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_chunks_into<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyUntypedArray>,
    chunk: Vec<usize>,
    filters: Vec<(u16, u32, Vec<u32>)>,
    fill: Vec<u8>,
    first: usize,
    count: usize,
    out: &Bound<'py, PyUntypedArray>,
    threads: i64,
) -> PyResult<Bound<'py, PyList>> {
    use h5turbo_core::prelude::encode_chunks_into as encode;
    let input = EncodeInput::new(array, filters, threads)?;
    let (out_address, out_len) = writable_buffer(out)?;
    let placed = without_gil(py, || {
            // SAFETY: both arrays stay borrowed (so alive) for this call; `array` is
            // only read; `out` is a writeable C-contiguous buffer of `out_len` bytes.
            // Python code must not resize them meanwhile (as with any numpy extension
            // that releases the GIL).
            let data = unsafe { input.data() };
            let out: &mut [u8] =
                if out_len == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(out_address as *mut u8, out_len) } };
            let a = ChunkedArray { data, shape: &input.shape, chunk: &chunk, element_size: input.element_size, fill: &fill };
            guard(|| encode(&a, &input.pipeline, first, count, input.threads, out))
        })
        .map_err(to_py_err)?;
    let items = placed
        .into_iter()
        .map(|c| (PyTuple::new(py, c.offset)?, c.start, c.len, c.filter_mask).into_pyobject(py))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

