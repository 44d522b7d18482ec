//! Reductions: the operation names of the Python layer and the results as numpy arrays.

use h5turbo_core::prelude::{ReduceOp, Reduced};
use numpy::IntoPyArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pub(crate) fn parse_op(op: &str) -> PyResult<ReduceOp> {
    Ok(match op {
        "sum_int" => ReduceOp::SumInt,
        "sum_float" => ReduceOp::SumFloat,
        "min" => ReduceOp::Min,
        "max" => ReduceOp::Max,
        "count_nonzero" => ReduceOp::CountNonzero,
        "moments" => ReduceOp::Moments,
        _ => return Err(PyValueError::new_err(format!("unknown reduction {:?}", op))),
    })
}

/// int64 / float64 / uint64 arrays; min and max as bytes of the element type in
/// native order; moments as a (count, mean, m2) tuple of arrays.
pub(crate) fn to_py(py: Python<'_>, reduced: Reduced) -> PyResult<PyObject> {
    Ok(match reduced {
        Reduced::Int(v) => v.into_pyarray(py).into_any().unbind(),
        // exact integer sums (not asked for by the Python layer, whose sums follow
        // numpy's wrapping int64): their nearest doubles
        Reduced::Exact(v) => v.into_iter().map(|x| x as f64).collect::<Vec<_>>().into_pyarray(py).into_any().unbind(),
        Reduced::Float(v) => v.into_pyarray(py).into_any().unbind(),
        Reduced::Count(v) => v.into_pyarray(py).into_any().unbind(),
        Reduced::Native(v) => PyBytes::new(py, &v).into_any().unbind(),
        Reduced::Moments { count, mean, m2 } => {
            let parts = (count.into_pyarray(py), mean.into_pyarray(py), m2.into_pyarray(py));
            parts.into_pyobject(py)?.into_any().unbind()
        }
    })
}

