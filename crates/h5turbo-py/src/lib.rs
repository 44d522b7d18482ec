//! `h5turbo._native`: the thin PyO3 layer over h5turbo-core.
//!
//! numpy buffers in and out, errors mapped to Python exceptions, the GIL released
//! for every read, panics caught at the boundary. The contract is
//! python/h5turbo/_native.pyi.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod convert;
mod errors;
mod fast5;
mod io_depth;

use errors::{guard, to_py_err};
use h5turbo_core::engine::reduce::{ReduceOp, Reduced};
use h5turbo_core::engine::{pool, AxisSelection};
use h5turbo_core::file::{File as CoreFile, LayoutKind, Object as CoreObject, ObjectKind};
use h5turbo_core::format::dataspace::DataspaceKind;
use h5turbo_core::format::layout::{ChunkIndexKind, Layout};
use h5turbo_core::format::links::LinkTarget;
use h5turbo_core::format::numpy_dtype::has_objects;
use h5turbo_core::format::reference::Selection;
use numpy::{IntoPyArray, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use std::path::PathBuf;

#[pyclass(module = "h5turbo._native", frozen)]
struct File {
    inner: CoreFile,
}

#[pymethods]
impl File {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<File> {
        let inner = py.allow_threads(|| guard(|| CoreFile::open(&path))).map_err(to_py_err)?;
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

    fn close(&self) {
        self.inner.close();
    }

    fn get(&self, py: Python<'_>, path: &str) -> PyResult<Object> {
        let inner = py.allow_threads(|| guard(|| self.inner.get(path))).map_err(to_py_err)?;
        Ok(Object { inner })
    }

    /// The object at an object reference's address and a path to it (None if no link
    /// reaches it); see _native.pyi.
    fn dereference(&self, py: Python<'_>, address: u64) -> PyResult<(Object, Option<String>)> {
        let (inner, path) = py.allow_threads(|| guard(|| self.inner.dereference(address))).map_err(to_py_err)?;
        Ok((Object { inner }, path))
    }

    /// A region reference's dataset address and selection: (address, kind, data) with
    /// kind "none", "all" (data None), "points" (n x rank coordinates), "blocks"
    /// ((starts, ends), n x rank each, ends inclusive) or "regular" ((start, stride,
    /// count, block) per axis).
    fn region<'py>(&self, py: Python<'py>, collection: u64, index: u32) -> PyResult<(u64, &'static str, PyObject)> {
        let region = py.allow_threads(|| guard(|| self.inner.region(collection, index))).map_err(to_py_err)?;
        let rows = |v: Vec<u64>, rank: usize| -> PyResult<PyObject> {
            let n = v.len() / rank.max(1);
            Ok(v.into_pyarray(py).reshape([n, rank])?.into_any().unbind())
        };
        let (kind, data) = match region.selection {
            Selection::None => ("none", py.None()),
            Selection::All => ("all", py.None()),
            Selection::Points { rank, coords } => ("points", rows(coords, rank)?),
            Selection::Blocks { rank, starts, ends } => {
                ("blocks", (rows(starts, rank)?, rows(ends, rank)?).into_pyobject(py)?.into_any().unbind())
            }
            Selection::Regular { start, stride, count, block } => {
                ("regular", (start, stride, count, block).into_pyobject(py)?.into_any().unbind())
            }
        };
        Ok((region.object, kind, data))
    }
}

#[pyclass(module = "h5turbo._native", frozen)]
struct Object {
    inner: CoreObject,
}

impl Object {
    /// An error naming the object and the file when `dt` has no numpy dtype (an
    /// HDF5 1.12+ reference type, say).
    fn check_numpy_dtype(&self, dt: &h5turbo_core::format::datatype::Datatype, what: &str) -> PyResult<()> {
        use h5turbo_core::error::ResultExt;
        guard(|| dt.numpy_dtype().map(|_| ()).in_object(what).in_file(self.inner.file().path())).map_err(to_py_err)
    }

    fn dataset(&self) -> PyResult<std::sync::Arc<h5turbo_core::file::Dataset>> {
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

    fn links<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let links = py.allow_threads(|| guard(|| self.inner.links())).map_err(to_py_err)?;
        let items = links
            .into_iter()
            .map(|l| {
                let (kind, target) = match l.target {
                    LinkTarget::Hard(a) => ("hard", a.into_pyobject(py)?.into_any()),
                    LinkTarget::Soft(p) => ("soft", p.into_pyobject(py)?.into_any()),
                    LinkTarget::External { file, path } => ("external", (file, path).into_pyobject(py)?.into_any()),
                };
                PyTuple::new(py, [l.name.into_pyobject(py)?.into_any(), kind.into_pyobject(py)?.into_any(), target])
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    fn child(&self, py: Python<'_>, name: &str) -> PyResult<Object> {
        let inner = py.allow_threads(|| guard(|| self.inner.child(name))).map_err(to_py_err)?;
        Ok(Object { inner })
    }

    fn attr_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.allow_threads(|| guard(|| self.inner.attribute_names())).map_err(to_py_err)
    }

    fn attr(&self, py: Python<'_>, name: &str) -> PyResult<PyObject> {
        let value = py.allow_threads(|| guard(|| self.inner.attribute(name))).map_err(to_py_err)?;
        self.check_numpy_dtype(&value.datatype, &format!("{} (attribute '{}')", self.inner.name(), name))?;
        convert::attribute_to_py(py, &self.inner, &value)
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
        Ok(match self.dataset()?.layout_kind() {
            LayoutKind::Compact => "compact",
            LayoutKind::Contiguous => "contiguous",
            LayoutKind::Chunked => "chunked",
            LayoutKind::Virtual => "virtual",
        })
    }

    /// h5py's `external`: [(file name, offset, size)] of raw data in other files, or None.
    #[getter]
    fn external(&self) -> PyResult<Option<Vec<(String, u64, u64)>>> {
        let ds = self.dataset()?;
        Ok(ds.external_files().map(|segments| segments.iter().map(|s| (s.name.clone(), s.offset, s.size)).collect()))
    }

    #[getter]
    fn chunks<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let ds = self.dataset()?;
        ds.chunk_dims().map(|c| PyTuple::new(py, c.iter())).transpose()
    }

    #[getter]
    fn chunk_index(&self) -> PyResult<Option<&'static str>> {
        let ds = self.dataset()?;
        let Layout::Chunked(c) = &ds.layout else { return Ok(None) };
        Ok(Some(match c.index {
            ChunkIndexKind::BTreeV1 { .. } => "btree_v1",
            ChunkIndexKind::SingleChunk { .. } => "single_chunk",
            ChunkIndexKind::Implicit { .. } => "implicit",
            ChunkIndexKind::FixedArray { .. } => "fixed_array",
            ChunkIndexKind::ExtensibleArray { .. } => "extensible_array",
            ChunkIndexKind::BTreeV2 { .. } => "btree_v2",
        }))
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
        convert::fill_value_to_py(py, &self.inner, &ds)
    }

    fn chunk_count(&self, py: Python<'_>) -> PyResult<u64> {
        let ds = self.dataset()?;
        py.allow_threads(|| guard(|| storage_summary(&self.inner, &ds).map(|s| s.0))).map_err(to_py_err)
    }

    fn storage_size(&self, py: Python<'_>) -> PyResult<u64> {
        let ds = self.dataset()?;
        py.allow_threads(|| guard(|| storage_summary(&self.inner, &ds).map(|s| s.1))).map_err(to_py_err)
    }

    #[pyo3(signature = (selection, out, threads=0))]
    fn read(&self, py: Python<'_>, selection: &Bound<'_, PyList>, out: &Bound<'_, PyUntypedArray>, threads: i64) -> PyResult<()> {
        let ds = self.dataset()?;
        let sel = parse_selection(selection)?;
        let threads = if threads <= 0 { 0 } else { threads as usize };
        if has_objects(&ds.datatype) {
            return convert::read_vlen(py, &self.inner, &ds, &sel, out, threads);
        }
        let expected = convert::dtype_of(py, &ds.datatype)?;
        // numpy expands a sub-array dtype into trailing axes of its base type.
        let expected_base = expected.bind(py).getattr("base")?;
        let matches = out.dtype().is_equiv_to(expected.downcast_bound(py)?)
            || out.dtype().is_equiv_to(expected_base.downcast::<numpy::PyArrayDescr>()?);
        if !matches {
            return Err(PyValueError::new_err(format!("out has dtype {}, the dataset {}", out.dtype(), expected)));
        }
        let (address, len) = writable_buffer(out)?;
        py.allow_threads(|| {
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
        let op = parse_reduce_op(op)?;
        let threads = if threads <= 0 { 0 } else { threads as usize };
        let file = self.inner.file().clone();
        let reduced = py
            .allow_threads(|| guard(|| ds.reduce(&file, &sel, &reduce_axis, op, threads)))
            .map_err(to_py_err)?;
        reduced_to_py(py, reduced)
    }
}

fn parse_reduce_op(op: &str) -> PyResult<ReduceOp> {
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
fn reduced_to_py(py: Python<'_>, reduced: Reduced) -> PyResult<PyObject> {
    Ok(match reduced {
        Reduced::Int(v) => v.into_pyarray(py).into_any().unbind(),
        Reduced::Float(v) => v.into_pyarray(py).into_any().unbind(),
        Reduced::Count(v) => v.into_pyarray(py).into_any().unbind(),
        Reduced::Native(v) => PyBytes::new(py, &v).into_any().unbind(),
        Reduced::Moments { count, mean, m2 } => {
            let parts = (count.into_pyarray(py), mean.into_pyarray(py), m2.into_pyarray(py));
            parts.into_pyobject(py)?.into_any().unbind()
        }
    })
}

/// (allocated chunks, stored bytes) of a dataset.
fn storage_summary(obj: &CoreObject, ds: &h5turbo_core::file::Dataset) -> h5turbo_core::Result<(u64, u64)> {
    match &ds.layout {
        Layout::Chunked(_) => {
            let index = ds.chunk_index(obj.file())?;
            Ok(index.map(|i| (i.len() as u64, i.stored_bytes())).unwrap_or((0, 0)))
        }
        Layout::Contiguous { address: Some(_), size } => Ok((1, *size)),
        Layout::Contiguous { address: None, .. } => Ok((0, 0)),
        Layout::Compact { data } => Ok((1, data.len() as u64)),
        Layout::Virtual { .. } => Ok((0, 0)),
    }
}

/// Address and length of the bytes of a C-contiguous, writeable numpy array.
fn writable_buffer(out: &Bound<'_, PyUntypedArray>) -> PyResult<(usize, usize)> {
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

fn parse_selection(selection: &Bound<'_, PyList>) -> PyResult<Vec<AxisSelection>> {
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

/// What both chunk-encoding entry points take from their arguments: the source array's
/// buffer (checked C-contiguous), its shape and element size, the filter pipeline and
/// the thread count (0: the default pool).
struct EncodeInput {
    address: usize,
    len: usize,
    shape: Vec<usize>,
    element_size: usize,
    pipeline: h5turbo_core::filters::encode::EncodePipeline,
    threads: usize,
}

impl EncodeInput {
    fn new(array: &Bound<'_, PyUntypedArray>, filters: Vec<(u16, u32, Vec<u32>)>, threads: i64) -> PyResult<Self> {
        use h5turbo_core::filters::encode::{EncodePipeline, FilterSpec};
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
            threads: if threads <= 0 { 0 } else { threads as usize },
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
/// with the GIL released; returns [(chunk offset, bytes, filter mask)]. See _native.pyi.
#[pyfunction]
#[pyo3(signature = (array, chunk, filters, fill, first, count, threads=0))]
#[allow(clippy::too_many_arguments)]
fn encode_chunks<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyUntypedArray>,
    chunk: Vec<usize>,
    filters: Vec<(u16, u32, Vec<u32>)>,
    fill: Vec<u8>,
    first: usize,
    count: usize,
    threads: i64,
) -> PyResult<Bound<'py, PyList>> {
    use h5turbo_core::engine::write::{encode_chunks as encode, ChunkedArray};
    let input = EncodeInput::new(array, filters, threads)?;
    let encoded = py
        .allow_threads(|| {
            // SAFETY: `array` stays borrowed (so alive) for this call; only read here.
            let data = unsafe { input.data() };
            let a = ChunkedArray { data, shape: &input.shape, chunk: &chunk, element_size: input.element_size, fill: &fill };
            guard(|| encode(&a, &input.pipeline, first, count, input.threads))
        })
        .map_err(to_py_err)?;
    let items = encoded
        .into_iter()
        .map(|c| (PyTuple::new(py, c.offset)?, PyBytes::new(py, &c.data), c.filter_mask).into_pyobject(py))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// Like encode_chunks, but the stored bytes are packed into `out` (a writeable
/// C-contiguous uint8 array, reused between calls); returns [(chunk offset, start,
/// length, filter mask)]. See _native.pyi.
#[pyfunction]
#[pyo3(signature = (array, chunk, filters, fill, first, count, out, threads=0))]
#[allow(clippy::too_many_arguments)]
fn encode_chunks_into<'py>(
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
    use h5turbo_core::engine::write::{encode_chunks_into as encode, ChunkedArray};
    let input = EncodeInput::new(array, filters, threads)?;
    let (out_address, out_len) = writable_buffer(out)?;
    let placed = py
        .allow_threads(|| {
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

#[pyfunction]
fn default_threads() -> usize {
    pool::default_threads()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<File>()?;
    m.add_class::<Object>()?;
    m.add_function(wrap_pyfunction!(default_threads, m)?)?;
    m.add_function(wrap_pyfunction!(fast5::fast5_reads, m)?)?;
    m.add_function(wrap_pyfunction!(io_depth::swap_io_depth, m)?)?;
    m.add_function(wrap_pyfunction!(io_depth::io_depth, m)?)?;
    m.add_function(wrap_pyfunction!(encode_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(encode_chunks_into, m)?)?;
    Ok(())
}
