//! numpy arrays in: output buffers and selections.

use h5turbo_core::prelude::AxisSelection;
use numpy::{PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods, PyArrayDescrMethods};
use pyo3::exceptions::{PyImportError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Load numpy's C API now, when the module is imported. The numpy crate loads it on
/// first use, running Python code (numpy's version check), and panics if that raises:
/// a Ctrl-C landing there, in the first read or reduction of a session, came out as a
/// PanicException with a Rust backtrace instead of a KeyboardInterrupt.
pub(crate) fn load_numpy_api(py: Python<'_>) -> PyResult<()> {
    py.import("numpy")?; // a missing or broken numpy: its own ImportError
    let load = std::panic::AssertUnwindSafe(|| unsafe { numpy::PY_ARRAY_API.PyArray_GetNDArrayCVersion(py) });
    std::panic::catch_unwind(load)
        .map(|_| ())
        .map_err(|_| PyImportError::new_err("h5turbo: numpy's C API (numpy.core.multiarray._ARRAY_API) could not be loaded"))
}

/// Address and length of the bytes of a C-contiguous, writeable numpy array.
pub(crate) fn writable_buffer(out: &Bound<'_, PyUntypedArray>) -> PyResult<(usize, usize)> {
    if !out.is_c_contiguous() {
        return Err(PyValueError::new_err("out must be C-contiguous"));
    }
    let array = out.as_array_ptr();
    // SAFETY: `array` is the live PyArrayObject behind `out`.
    let (flags, data) = unsafe { ((*array).flags, (*array).data) };
    if flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(PyValueError::new_err("out must be writeable"));
    }
    Ok((data as usize, out.len() * out.dtype().itemsize()))
}

pub(crate) fn parse_selection(selection: &Bound<'_, PyList>) -> PyResult<Vec<AxisSelection>> {
    selection
        .iter()
        .map(|axis| {
            if let Ok((start, count, step)) = axis.extract::<(u64, u64, u64)>() {
                return Ok(AxisSelection::Range { start, count, step });
            }
            // The Python layer passes index lists as uint64 arrays: copy them in one go.
            if let Ok(array) = axis.downcast::<numpy::PyArray1<u64>>() {
                let readonly = array.readonly();
                if let Ok(points) = readonly.as_slice() {
                    return Ok(AxisSelection::Points(points.to_vec()));
                }
            }
            let points: Vec<u64> = axis
                .extract()
                .map_err(|_| PyValueError::new_err("each axis is (start, count, step) or a uint64 array"))?;
            Ok(AxisSelection::Points(points))
        })
        .collect()
}

