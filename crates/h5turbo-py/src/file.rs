//! `_native.File`: an open file, paths to objects, references.

use crate::fork_gate::without_gil;
use crate::errors::{guard, to_py_err};
use crate::object::Object;
use h5turbo_core::prelude::{File as CoreFile, RegionSelection};
use numpy::{IntoPyArray, PyArrayMethods};
use pyo3::prelude::*;
use std::path::PathBuf;

#[pyclass(module = "h5turbo._native", frozen)]
pub struct File {
    inner: CoreFile,
}

#[pymethods]
impl File {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<File> {
        let inner = without_gil(py, || guard(|| CoreFile::open(&path))).map_err(to_py_err)?;
        Ok(File { inner })
    }

    /// Open a Python file-like object (read/readinto and seek; see _native.pyi);
    /// `name` stands for the file in messages.
    #[staticmethod]
    fn from_fileobj(py: Python<'_>, obj: Bound<'_, PyAny>, name: PathBuf) -> PyResult<File> {
        let source = crate::pyfile::source_for(obj, &name)?;
        let inner = without_gil(py, || guard(|| CoreFile::from_source(source, &name))).map_err(to_py_err)?;
        Ok(File { inner })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    #[getter]
    fn userblock_size(&self) -> u64 {
        self.inner.userblock_size()
    }

    /// Where the target file of an external link named `name` in this file is, found
    /// as libhdf5 finds it (NotFoundError when it is nowhere).
    fn external_link_file(&self, name: &str) -> PyResult<PathBuf> {
        guard(|| self.inner.external_link_file(name)).map_err(to_py_err)
    }

    fn close(&self) {
        self.inner.close();
    }

    fn get(&self, py: Python<'_>, path: &str) -> PyResult<Object> {
        let inner = without_gil(py, || guard(|| self.inner.get(path))).map_err(to_py_err)?;
        Ok(Object::new(inner))
    }

    /// The object at an object reference's address and a path to it (None if no link
    /// reaches it); see _native.pyi.
    fn dereference(&self, py: Python<'_>, address: u64) -> PyResult<(Object, Option<String>)> {
        let (inner, path) = without_gil(py, || guard(|| self.inner.dereference(address))).map_err(to_py_err)?;
        Ok((Object::new(inner), path))
    }

    /// A region reference's dataset address and selection: (address, kind, data) with
    /// kind "none", "all" (data None), "points" (n x rank coordinates), "blocks"
    /// ((starts, ends), n x rank each, ends inclusive) or "regular" ((start, stride,
    /// count, block) per axis).
    fn region<'py>(&self, py: Python<'py>, collection: u64, index: u32) -> PyResult<(u64, &'static str, PyObject)> {
        let region = without_gil(py, || guard(|| self.inner.region(collection, index))).map_err(to_py_err)?;
        let (kind, data) = selection_to_py(py, region.selection)?;
        Ok((region.object, kind, data))
    }
}

/// A stored selection (region references, VDS mappings) as (kind, data); see `region`.
pub(crate) fn selection_to_py(py: Python<'_>, selection: RegionSelection) -> PyResult<(&'static str, PyObject)> {
    let rows = |v: Vec<u64>, rank: usize| -> PyResult<PyObject> {
        let n = v.len() / rank.max(1);
        Ok(v.into_pyarray(py).reshape([n, rank])?.into_any().unbind())
    };
    Ok(match selection {
        RegionSelection::None => ("none", py.None()),
        RegionSelection::All => ("all", py.None()),
        RegionSelection::Points { rank, coords } => ("points", rows(coords, rank)?),
        RegionSelection::Blocks { rank, starts, ends } => {
            ("blocks", (rows(starts, rank)?, rows(ends, rank)?).into_pyobject(py)?.into_any().unbind())
        }
        RegionSelection::Regular { start, stride, count, block } => {
            ("regular", (start, stride, count, block).into_pyobject(py)?.into_any().unbind())
        }
    })
}

