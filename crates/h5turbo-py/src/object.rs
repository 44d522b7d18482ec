//! `_native.Object`: a group, dataset or committed datatype; metadata, attributes,
//! reads into numpy arrays and reductions.

use crate::fork_gate::without_gil;
use crate::arrays::{parse_selection, writable_buffer};
use crate::convert;
use crate::errors::{guard, to_py_err};
use crate::reduce;
use crate::threads_arg;
use h5turbo_core::prelude::{
    has_objects, Dataset, DataspaceKind, Datatype, ErrorKind, Link, LinkTarget, Object as CoreObject, ObjectKind, ResultExt,
    VirtualSourceFile,
};
use numpy::{IntoPyArray, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use std::sync::{Arc, OnceLock};

#[pyclass(module = "h5turbo._native", frozen)]
pub struct Object {
    pub(crate) inner: CoreObject,
    /// The numpy dtype reads are checked against, built on the first read.
    read_dtype: OnceLock<(PyObject, PyObject)>,
}

impl Object {
    pub(crate) fn new(inner: CoreObject) -> Self {
        Object { inner, read_dtype: OnceLock::new() }
    }

    /// The dataset's numpy dtype and its base (what a sub-array dtype expands to).
    fn read_dtype<'py>(&self, py: Python<'py>, ds: &Dataset) -> PyResult<&(PyObject, PyObject)> {
        if let Some(dtypes) = self.read_dtype.get() {
            return Ok(dtypes);
        }
        let expected = convert::dtype_of(py, &ds.datatype)?;
        // the innermost element type: an array of arrays nests its dtypes
        let mut base = expected.bind(py).clone();
        while !base.getattr("subdtype")?.is_none() {
            base = base.getattr("base")?;
        }
        let base = base.unbind();
        Ok(self.read_dtype.get_or_init(|| (expected, base)))
    }

    /// An error naming the object and the file when `dt` has no numpy dtype (an
    /// HDF5 1.12+ reference type, say).
    fn check_numpy_dtype(&self, dt: &Datatype, what: &str) -> PyResult<()> {
        guard(|| dt.numpy_dtype().map(|_| ()).in_object(what).in_file(self.inner.file().path())).map_err(to_py_err)
    }

    fn dataset(&self) -> PyResult<Arc<Dataset>> {
        guard(|| self.inner.dataset()).map_err(to_py_err)
    }
}

#[pymethods]
impl Object {
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner.kind() {
            ObjectKind::Group => "group",
            ObjectKind::Dataset => "dataset",
            ObjectKind::Datatype => "datatype",
        }
    }

    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    #[getter]
    fn address(&self) -> u64 {
        self.inner.address()
    }

    /// How many hard links lead to the object (its header's reference count).
    #[getter]
    fn hard_links(&self) -> u32 {
        self.inner.header().hard_links()
    }

    /// False once the file is closed (h5py's `obj.id.valid`).
    #[getter]
    fn valid(&self) -> bool {
        !self.inner.file().is_closed()
    }

    fn links<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let links = without_gil(py, || guard(|| self.inner.links())).map_err(to_py_err)?;
        let items = links.into_iter().map(|l| link_tuple(py, l)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// How many links the group has, without listing them where the storage counts them.
    fn link_count(&self, py: Python<'_>) -> PyResult<usize> {
        without_gil(py, || guard(|| self.inner.link_count())).map_err(to_py_err)
    }

    /// The link `name` of this group as (name, kind, target), None when there is none:
    /// one lookup, whatever the size of the group.
    fn link<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Option<Bound<'py, PyTuple>>> {
        match without_gil(py, || guard(|| self.inner.link(name))) {
            Ok(link) => link_tuple(py, link).map(Some),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// This object as the file holds it now (a SWMR writer may have appended since):
    /// a new object over a new view of the file, sharing its descriptor.
    fn refreshed(&self, py: Python<'_>) -> PyResult<Object> {
        let inner = without_gil(py, || guard(|| self.inner.refreshed())).map_err(to_py_err)?;
        Ok(Object::new(inner))
    }

    /// The root group of the file this object was read from (for a refreshed object,
    /// that view of the file).
    fn root(&self, py: Python<'_>) -> PyResult<Object> {
        let inner = without_gil(py, || guard(|| self.inner.file().root())).map_err(to_py_err)?;
        Ok(Object::new(inner))
    }

    /// The path of the file this object was read from.
    #[getter]
    fn file_path(&self) -> std::path::PathBuf {
        self.inner.file().path().to_path_buf()
    }

    fn child(&self, py: Python<'_>, name: &str) -> PyResult<Object> {
        let inner = without_gil(py, || guard(|| self.inner.child(name))).map_err(to_py_err)?;
        Ok(Object::new(inner))
    }

    fn attr_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        without_gil(py, || guard(|| self.inner.attribute_names())).map_err(to_py_err)
    }

    fn attr_count(&self, py: Python<'_>) -> PyResult<usize> {
        without_gil(py, || guard(|| self.inner.attribute_count())).map_err(to_py_err)
    }

    fn has_attr(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        without_gil(py, || guard(|| self.inner.has_attribute(name))).map_err(to_py_err)
    }

    fn attr(&self, py: Python<'_>, name: &str) -> PyResult<PyObject> {
        let value = without_gil(py, || guard(|| self.inner.attribute(name))).map_err(to_py_err)?;
        self.check_numpy_dtype(&value.datatype, &format!("{} (attribute '{}')", self.inner.name(), name))?;
        convert::attribute_to_py(py, &self.inner, &value)
    }

    /// What h5py's `attrs.get_id(name)` answers without reading the value into Python:
    /// the attribute's dtype, its shape (None for a null dataspace) and the bytes its
    /// value takes in the file (libhdf5's H5Aget_storage_size: elements x stored type size).
    #[allow(clippy::type_complexity)]
    fn attr_info<'py>(&self, py: Python<'py>, name: &str) -> PyResult<(PyObject, Option<Bound<'py, PyTuple>>, u64)> {
        let value = without_gil(py, || guard(|| self.inner.attribute(name))).map_err(to_py_err)?;
        self.check_numpy_dtype(&value.datatype, &format!("{} (attribute '{}')", self.inner.name(), name))?;
        let shape = match value.dataspace.kind {
            DataspaceKind::Null => None,
            _ => Some(PyTuple::new(py, value.dataspace.dims.iter())?),
        };
        let elements = guard(|| value.len()).map_err(to_py_err)? as u64;
        // saturating: a damaged dataspace may claim more elements than bytes can count
        let stored = elements.saturating_mul(value.datatype.size() as u64);
        Ok((convert::dtype_of(py, &value.datatype)?, shape, stored))
    }

    /// H5DSis_scale (h5py's `Dataset.is_scale`).
    fn is_dimension_scale(&self, py: Python<'_>) -> PyResult<bool> {
        without_gil(py, || guard(|| self.inner.is_dimension_scale())).map_err(to_py_err)
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let ds = self.dataset()?;
        if ds.dataspace.kind == DataspaceKind::Null {
            return Ok(None);
        }
        Ok(Some(PyTuple::new(py, ds.dataspace.dims.iter())?))
    }

    #[getter]
    fn maxshape<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let ds = self.dataset()?;
        if ds.dataspace.kind == DataspaceKind::Null {
            return Ok(None);
        }
        let dims = ds.dataspace.max_dims.iter().map(|&d| if d == u64::MAX { None } else { Some(d) });
        Ok(Some(PyTuple::new(py, dims)?))
    }

    /// The dataset's dtype, or the type a committed datatype object stores.
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<PyObject> {
        if self.inner.kind() == ObjectKind::Datatype {
            let dt = guard(|| self.inner.stored_datatype()).map_err(to_py_err)?;
            return convert::dtype_of(py, &dt);
        }
        let ds = self.dataset()?;
        self.check_numpy_dtype(&ds.datatype, self.inner.name())?;
        convert::dtype_of(py, &ds.datatype)
    }

    #[getter]
    fn layout(&self) -> PyResult<&'static str> {
        Ok(self.dataset()?.layout_kind().name())
    }

    /// h5py's `external`: [(file name, offset, size)] of raw data in other files, or None.
    #[getter]
    fn external(&self) -> PyResult<Option<Vec<(String, u64, u64)>>> {
        let ds = self.dataset()?;
        Ok(ds.external_files().map(|segments| segments.iter().map(|s| (s.name.clone(), s.offset, s.size)).collect()))
    }

    /// A virtual dataset's mappings (h5py's `virtual_sources()`): per mapping
    /// (virtual selection kind, data, source file name as stored, "." for this file,
    /// source dataset name, source selection kind, data), selections as `File.region`
    /// gives them; None for other layouts.
    #[allow(clippy::type_complexity)]
    fn virtual_sources(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<Vec<(&'static str, PyObject, String, String, &'static str, PyObject)>>> {
        let ds = self.dataset()?;
        let file = self.inner.file().clone();
        let mappings = without_gil(py, || guard(|| ds.virtual_mappings(&file))).map_err(to_py_err)?;
        let Some(mappings) = mappings else { return Ok(None) };
        let mut out = Vec::with_capacity(mappings.len());
        for m in mappings {
            let (vkind, vdata) = crate::file::selection_to_py(py, m.virtual_selection)?;
            let (skind, sdata) = crate::file::selection_to_py(py, m.source_selection)?;
            let source = match m.file {
                VirtualSourceFile::Same => ".".to_string(),
                VirtualSourceFile::Named(name) => name,
            };
            out.push((vkind, vdata, source, m.dataset, skind, sdata));
        }
        Ok(Some(out))
    }

    #[getter]
    fn chunks<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let ds = self.dataset()?;
        ds.chunk_dims().map(|c| PyTuple::new(py, c.iter())).transpose()
    }

    /// How a fixed-length string dataset's values end ('nullterm', 'nullpad',
    /// 'spacepad'); None for other types. Conversions to another length follow it.
    #[getter]
    fn string_padding(&self) -> PyResult<Option<&'static str>> {
        use h5turbo_core::prelude::{DatatypeClass, StringPadding};
        Ok(match &self.dataset()?.datatype.class {
            DatatypeClass::String { padding, .. } => Some(match padding {
                StringPadding::NullTerminate => "nullterm",
                StringPadding::NullPad => "nullpad",
                StringPadding::SpacePad => "spacepad",
            }),
            _ => None,
        })
    }

    /// Whether the elements are HDF5 2.0's complex numbers (not h5py's {r, i}
    /// compounds), alone or as an array type's: libhdf5 converts those to real
    /// numbers (the real part), as h5py's astype then does.
    #[getter]
    fn native_complex(&self) -> PyResult<bool> {
        use h5turbo_core::prelude::DatatypeClass;
        let mut class = &self.dataset()?.datatype.class;
        while let DatatypeClass::Array { base, .. } = class {
            class = &base.class;
        }
        Ok(matches!(class, DatatypeClass::Complex { .. }))
    }

    #[getter]
    fn chunk_index(&self) -> PyResult<Option<&'static str>> {
        Ok(self.dataset()?.chunk_index_type())
    }

    #[getter]
    fn filters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ds = self.dataset()?;
        let items = ds
            .pipeline
            .filters
            .iter()
            .map(|f| {
                let name = f.name.clone().unwrap_or_default();
                (f.id, name, PyTuple::new(py, f.client_data.iter())?).into_pyobject(py)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    #[getter]
    fn fillvalue(&self, py: Python<'_>) -> PyResult<PyObject> {
        let ds = self.dataset()?;
        self.check_numpy_dtype(&ds.datatype, self.inner.name())?;
        convert::fill_value_to_py(py, &self.inner, &ds)
    }

    /// Whether the file defines a fill value (h5py: fill_value_defined() is
    /// H5D_FILL_VALUE_USER_DEFINED); when not, `fillvalue` is the library's zero.
    #[getter]
    fn fillvalue_defined(&self) -> PyResult<bool> {
        Ok(self.dataset()?.fill_defined)
    }

    fn chunk_count(&self, py: Python<'_>) -> PyResult<u64> {
        let ds = self.dataset()?;
        without_gil(py, || guard(|| ds.storage(self.inner.file()).map(|s| s.chunks))).map_err(to_py_err)
    }

    fn storage_size(&self, py: Python<'_>) -> PyResult<u64> {
        let ds = self.dataset()?;
        without_gil(py, || guard(|| ds.storage(self.inner.file()).map(|s| s.bytes))).map_err(to_py_err)
    }

    /// Every allocated chunk in the order libhdf5 visits them, as four arrays:
    /// first-element offsets (n x rank), filter masks, absolute file offsets and
    /// stored sizes (h5py's get_chunk_info / chunk_iter, without a tuple per chunk).
    fn chunk_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rank = self.dataset()?.shape().len();
        let infos = without_gil(py, || guard(|| self.inner.chunk_infos())).map_err(to_py_err)?;
        let n = infos.len();
        let offsets: Vec<u64> = infos.iter().flat_map(|c| c.offset.iter().copied()).collect();
        let masks: Vec<u32> = infos.iter().map(|c| c.filter_mask).collect();
        let file_offsets: Vec<u64> = infos.iter().map(|c| c.file_offset).collect();
        let sizes: Vec<u64> = infos.iter().map(|c| c.size).collect();
        let columns = [
            offsets.into_pyarray(py).reshape([n, rank])?.into_any(),
            masks.into_pyarray(py).into_any(),
            file_offsets.into_pyarray(py).into_any(),
            sizes.into_pyarray(py).into_any(),
        ];
        PyTuple::new(py, columns)
    }

    /// (filter mask, absolute file offset, size) of the allocated chunk holding
    /// `element`; None when it was never written or lies outside the chunk grid.
    fn chunk_info_at(&self, py: Python<'_>, element: Vec<u64>) -> PyResult<Option<(u32, u64, u64)>> {
        let info = without_gil(py, || guard(|| self.inner.chunk_info_at(&element))).map_err(to_py_err)?;
        Ok(info.map(|c| (c.filter_mask, c.file_offset, c.size)))
    }

    /// (filter mask, stored bytes) of the chunk starting at element `offset`; None
    /// when it was never written.
    fn read_stored_chunk<'py>(&self, py: Python<'py>, offset: Vec<u64>) -> PyResult<Option<(u32, Bound<'py, PyBytes>)>> {
        let stored = without_gil(py, || guard(|| self.inner.read_stored_chunk(&offset))).map_err(to_py_err)?;
        Ok(stored.map(|(mask, bytes)| (mask, PyBytes::new(py, &bytes))))
    }

    /// Where contiguous data starts in the file (absolute); None for other layouts,
    /// storage never allocated and external files (h5py's get_offset).
    #[getter]
    fn contiguous_offset(&self) -> PyResult<Option<u64>> {
        Ok(self.dataset()?.contiguous_offset(self.inner.file()))
    }

    #[pyo3(signature = (selection, out, threads=0))]
    fn read(&self, py: Python<'_>, selection: &Bound<'_, PyList>, out: &Bound<'_, PyUntypedArray>, threads: i64) -> PyResult<()> {
        let ds = self.dataset()?;
        let sel = parse_selection(selection)?;
        let threads = threads_arg(threads);
        if has_objects(&ds.datatype) {
            return convert::read_vlen(py, &self.inner, &ds, &sel, out, threads);
        }
        // numpy expands a sub-array dtype into trailing axes of its base type.
        let (expected, expected_base) = self.read_dtype(py, &ds)?;
        let matches = out.dtype().is_equiv_to(expected.downcast_bound(py)?)
            || out.dtype().is_equiv_to(expected_base.downcast_bound::<numpy::PyArrayDescr>(py)?);
        if !matches {
            return Err(PyValueError::new_err(format!("out has dtype {}, the dataset {}", out.dtype(), expected)));
        }
        let (address, len) = writable_buffer(out)?;
        // a read through a Python file object stops at Ctrl-C (pyfile::interruptible)
        crate::pyfile::interruptible(py, self.inner.file().path(), || {
            // SAFETY: `out` stays borrowed (so alive) for this call, and is a writeable
            // C-contiguous buffer of `len` bytes; as with any numpy extension that
            // releases the GIL, Python code must not resize it meanwhile.
            let buf: &mut [u8] = if len == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(address as *mut u8, len) } };
            guard(|| self.inner.read_numpy(&sel, buf, threads))
        })
        .map_err(to_py_err)
    }

    /// Reduce an orthogonal selection along the flagged axes; see _native.pyi.
    #[pyo3(signature = (selection, op, reduce_axis, threads=0))]
    fn reduce(
        &self,
        py: Python<'_>,
        selection: &Bound<'_, PyList>,
        op: &str,
        reduce_axis: Vec<bool>,
        threads: i64,
    ) -> PyResult<PyObject> {
        let ds = self.dataset()?;
        let sel = parse_selection(selection)?;
        let op = reduce::parse_op(op)?;
        let threads = threads_arg(threads);
        let file = self.inner.file().clone();
        // a reduction through a Python file object stops at Ctrl-C, as a read does
        let name = self.inner.name();
        let reduced = crate::pyfile::interruptible(py, file.path(), || {
            guard(|| ds.reduce(&file, &sel, &reduce_axis, op, threads).in_object(name).in_file(file.path()))
        })
        .map_err(to_py_err)?;
        reduce::to_py(py, reduced)
    }
}

/// A link as Python sees it: (name, "hard" | "soft" | "external" | "unreadable", address
/// | path | (file, path) | what is wrong with it).
fn link_tuple(py: Python<'_>, link: Link) -> PyResult<Bound<'_, PyTuple>> {
    let (kind, target) = match link.target {
        LinkTarget::Hard(a) => ("hard", a.into_pyobject(py)?.into_any()),
        LinkTarget::Soft(p) => ("soft", p.into_pyobject(py)?.into_any()),
        LinkTarget::External { file, path } => ("external", (file, path).into_pyobject(py)?.into_any()),
        LinkTarget::Unreadable { problem, .. } => ("unreadable", problem.into_pyobject(py)?.into_any()),
    };
    PyTuple::new(py, [link.name.into_pyobject(py)?.into_any(), kind.into_pyobject(py)?.into_any(), target])
}
