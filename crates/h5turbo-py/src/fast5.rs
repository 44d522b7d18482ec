//! `fast5_reads`: many fast5 files walked and their signals decoded with the GIL
//! released; the Python reader (python/h5turbo/formats/fast5.py) builds the reads.

use crate::convert::attribute_to_py;
use crate::errors::guard;
use h5turbo_core::fast5::{read_signal, Fast5Index};
use h5turbo_core::file::{AttributeValue, File as CoreFile, Object as CoreObject};
use h5turbo_core::Result;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::PathBuf;

/// One read as gathered without the GIL.
struct ReadOut {
    name: String,
    signal: Result<Vec<i16>>,
    attrs: Option<(CoreObject, Vec<AttributeValue>)>,
    channel: Option<(CoreObject, Vec<AttributeValue>)>,
}

/// One job: reads `first..first + limit` of a file, and how many reads it has.
struct JobOut {
    total: usize,
    reads: Vec<ReadOut>,
}

/// For each job (path, first read, read limit): (reads in the file, None, reads) or
/// (None, error message, []) when the file cannot be read. A read is (group path,
/// int16 signal or None, raw-group attrs dict or None, channel_id attrs dict or None,
/// error message or None). Attribute values are what h5py gives.
#[pyfunction]
pub fn fast5_reads<'py>(py: Python<'py>, jobs: Vec<(PathBuf, usize, usize)>) -> PyResult<Bound<'py, PyList>> {
    let gathered: Vec<Result<JobOut>> =
        py.allow_threads(|| jobs.iter().map(|(path, first, limit)| guard(|| gather(path, *first, *limit))).collect());
    let items = gathered
        .into_iter()
        .map(|job| match job {
            Ok(job) => {
                let reads = job.reads.into_iter().map(|r| read_to_py(py, r)).collect::<PyResult<Vec<_>>>()?;
                (job.total, py.None(), PyList::new(py, reads)?).into_pyobject(py).map(|t| t.into_any())
            }
            Err(e) => (py.None(), e.to_string(), PyList::empty(py)).into_pyobject(py).map(|t| t.into_any()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn gather(path: &std::path::Path, first: usize, limit: usize) -> Result<JobOut> {
    let file = CoreFile::open(path)?;
    let index = Fast5Index::open(&file)?;
    let stop = first.saturating_add(limit).min(index.len());
    let reads = (first.min(stop)..stop).map(|i| gather_read(&index, i)).collect();
    Ok(JobOut { total: index.len(), reads })
}

/// A read that cannot be gathered (a broken group header, a bad attribute) is an
/// error in its place; the file's other reads are still read.
fn gather_read(index: &Fast5Index, i: usize) -> ReadOut {
    guard(|| try_gather_read(index, i)).unwrap_or_else(|e| ReadOut {
        name: index.names.get(i).cloned().unwrap_or_default(),
        signal: Err(e),
        attrs: None,
        channel: None,
    })
}

fn try_gather_read(index: &Fast5Index, i: usize) -> Result<ReadOut> {
    let groups = index.read_groups(i)?;
    let channel = match groups.channel {
        Some(obj) => Some(attributes(obj)?),
        None => None,
    };
    let raw = groups.raw?;
    Ok(ReadOut { name: groups.name, signal: read_signal(&raw), attrs: Some(attributes(raw)?), channel })
}

fn attributes(obj: CoreObject) -> Result<(CoreObject, Vec<AttributeValue>)> {
    let values = obj.attribute_names()?.iter().map(|n| obj.attribute(n)).collect::<Result<Vec<_>>>()?;
    Ok((obj, values))
}

fn read_to_py(py: Python<'_>, read: ReadOut) -> PyResult<Bound<'_, PyTuple>> {
    let (signal, error) = match read.signal {
        Ok(values) => (values.into_pyarray(py).into_any(), py.None().into_bound(py)),
        Err(e) => (py.None().into_bound(py), e.to_string().into_pyobject(py)?.into_any()),
    };
    let attrs = attrs_to_py(py, read.attrs)?;
    let channel = attrs_to_py(py, read.channel)?;
    PyTuple::new(py, [read.name.into_pyobject(py)?.into_any(), signal, attrs, channel, error])
}

fn attrs_to_py(py: Python<'_>, attrs: Option<(CoreObject, Vec<AttributeValue>)>) -> PyResult<Bound<'_, PyAny>> {
    let Some((obj, values)) = attrs else {
        return Ok(py.None().into_bound(py));
    };
    let dict = PyDict::new(py);
    for value in &values {
        dict.set_item(&value.name, attribute_to_py(py, &obj, value)?)?;
    }
    Ok(dict.into_any())
}
