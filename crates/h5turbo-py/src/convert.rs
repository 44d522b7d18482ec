//! Values to Python: numpy dtypes, attribute values, fill values, and the objects of
//! variable-length data, shaped as h5py returns them.

use crate::fork_gate::without_gil;
use crate::pyfile::interruptible;
use crate::errors::{guard, to_py_err};

use h5turbo_core::prelude::{AttributeValue, AxisSelection, CharSet, Column, CompoundMember, Dataset, Dataspace, DataspaceKind, Datatype, DatatypeClass, DtypeMetadata, NumpyDtype, Object as CoreObject, ReferenceKind, VlenKind, VlenValue, has_objects, memory_layout, reference, vlen_element_dtype, ResultExt};
use numpy::npyffi::{npy_intp, NpyTypes, PyArrayObject, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

fn numpy(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("numpy")
}

/// The Python package, whose public Reference and RegionReference classes wrap references.
/// h5turbo.Reference and h5turbo.RegionReference, looked up once (an array of
/// references builds one object per element).
fn reference_classes(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    static CLASSES: GILOnceCell<(Py<PyAny>, Py<PyAny>)> = GILOnceCell::new();
    CLASSES.get_or_try_init(py, || {
        let module = py.import("h5turbo")?;
        Ok((module.getattr("Reference")?.unbind(), module.getattr("RegionReference")?.unbind()))
    })
}

/// A stored reference as h5turbo.Reference(address) or
/// h5turbo.RegionReference(collection, index); null references hold zeros.
fn reference_to_py(py: Python<'_>, kind: ReferenceKind, raw: &[u8]) -> PyResult<PyObject> {
    let (object_ref, region_ref) = reference_classes(py)?;
    match kind {
        ReferenceKind::Object => {
            let address = guard(|| reference::object_address(raw)).map_err(to_py_err)?.unwrap_or(0);
            Ok(object_ref.call1(py, (address,))?)
        }
        ReferenceKind::DatasetRegion => {
            let (collection, index) = guard(|| reference::region_heap_id(raw)).map_err(to_py_err)?.unwrap_or((0, 0));
            Ok(region_ref.call1(py, (collection, index))?)
        }
        ReferenceKind::Other(k) => Err(to_py_err(h5turbo_core::prelude::Error::unsupported(format!(
            "reference type {} (HDF5 1.12+ references)",
            k
        )))),
    }
}

/// The numpy dtype h5py gives `dt`, with h5py's metadata: `h5py_encoding` on fixed
/// strings, `enum` on enums, `vlen` on variable-length types. Compounds holding
/// object fields use numpy's packed layout, as h5py does; others keep HDF5 offsets.
pub fn dtype_of(py: Python<'_>, dt: &Datatype) -> PyResult<PyObject> {
    let descr = guard(|| dt.numpy_dtype()).map_err(to_py_err)?;
    match (&dt.class, &descr) {
        (DatatypeClass::String { charset, .. }, NumpyDtype::Simple(typestr)) => {
            let base = numpy(py)?.getattr("dtype")?.call1((typestr.as_str(),))?;
            let encoding = if *charset == CharSet::Utf8 { "utf-8" } else { "ascii" };
            with_metadata(py, &base, "h5py_encoding", encoding.into_pyobject(py)?.into_any())
        }
        (DatatypeClass::Enum { .. }, NumpyDtype::Simple(typestr)) if typestr != "|b1" => {
            let mapping = PyDict::new(py);
            for (name, value) in dt.enum_members().unwrap_or_default() {
                mapping.set_item(name, value)?;
            }
            let base = build_dtype(py, &descr)?;
            with_metadata(py, base.bind(py), "enum", mapping.into_any())
        }
        (DatatypeClass::Compound { members }, NumpyDtype::Structured { fields, itemsize }) => {
            compound_dtype(py, members, fields, *itemsize)
        }
        (DatatypeClass::Array { dims, base }, NumpyDtype::SubArray { .. }) => {
            // an array of arrays nests as in h5py: dtype((dtype(('>u2', (2,))), (3,)))
            let base = dtype_of(py, base)?;
            Ok(numpy(py)?.getattr("dtype")?.call1(((base, PyTuple::new(py, dims.iter())?),))?.unbind())
        }
        (DatatypeClass::Opaque { .. }, NumpyDtype::Simple(_))
            if matches!(dt.h5py_metadata(), Some(DtypeMetadata::NumpyOpaque)) =>
        {
            let base = build_dtype(py, &descr)?;
            with_metadata(py, base.bind(py), "h5py_opaque", true.into_pyobject(py)?.to_owned().into_any())
        }
        (DatatypeClass::VarLen { kind: VlenKind::Sequence, base }, _) => {
            let base = dtype_of(py, base)?;
            with_metadata(py, &numpy(py)?.getattr("dtype")?.call1(("O",))?, "vlen", base.into_bound(py))
        }
        _ => build_dtype(py, &descr),
    }
}

/// A structured dtype with h5py's field offsets (`fields`, from the numpy mapping) and
/// each member's own dtype, metadata included.
fn compound_dtype(py: Python<'_>, members: &[CompoundMember], fields: &[(String, NumpyDtype, u64)], itemsize: u64) -> PyResult<PyObject> {
    let spec = PyDict::new(py);
    let mut formats = Vec::with_capacity(fields.len());
    for (name, descr, _) in fields {
        match members.iter().find(|m| &m.name == name) {
            Some(m) => formats.push(dtype_of(py, &m.datatype)?),
            None => formats.push(build_dtype(py, descr)?),
        }
    }
    spec.set_item("names", PyList::new(py, fields.iter().map(|f| f.0.as_str()))?)?;
    spec.set_item("formats", formats)?;
    spec.set_item("offsets", PyList::new(py, fields.iter().map(|f| f.2))?)?;
    spec.set_item("itemsize", itemsize)?;
    Ok(numpy(py)?.getattr("dtype")?.call1((spec,))?.unbind())
}

/// The element type under (possibly nested) array types.
fn with_metadata(py: Python<'_>, dtype: &Bound<'_, PyAny>, key: &str, value: Bound<'_, PyAny>) -> PyResult<PyObject> {
    let metadata = PyDict::new(py);
    metadata.set_item(key, value)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("metadata", metadata)?;
    Ok(numpy(py)?.getattr("dtype")?.call((dtype,), Some(&kwargs))?.unbind())
}

fn build_dtype(py: Python<'_>, descr: &NumpyDtype) -> PyResult<PyObject> {
    let np = numpy(py)?;
    let dtype = np.getattr("dtype")?;
    match descr {
        NumpyDtype::Simple(typestr) => Ok(dtype.call1((typestr.as_str(),))?.unbind()),
        NumpyDtype::Structured { fields, itemsize } => {
            let spec = PyDict::new(py);
            let names = PyList::new(py, fields.iter().map(|f| f.0.as_str()))?;
            let formats = fields.iter().map(|f| build_dtype(py, &f.1)).collect::<PyResult<Vec<_>>>()?;
            let offsets = PyList::new(py, fields.iter().map(|f| f.2))?;
            spec.set_item("names", names)?;
            spec.set_item("formats", formats)?;
            spec.set_item("offsets", offsets)?;
            spec.set_item("itemsize", itemsize)?;
            Ok(dtype.call1((spec,))?.unbind())
        }
        NumpyDtype::SubArray { base, shape } => {
            let base = build_dtype(py, base)?;
            Ok(dtype.call1(((base, PyTuple::new(py, shape.iter())?),))?.unbind())
        }
        NumpyDtype::VlenString { utf8 } => {
            let kind = if *utf8 { py.get_type::<pyo3::types::PyString>() } else { py.get_type::<PyBytes>() };
            with_metadata(py, &dtype.call1(("O",))?, "vlen", kind.into_any())
        }
        NumpyDtype::VlenSequence(base) => {
            let base = build_dtype(py, base)?;
            with_metadata(py, &dtype.call1(("O",))?, "vlen", base.into_bound(py))
        }
        NumpyDtype::Reference { region } => {
            let (object_ref, region_ref) = reference_classes(py)?;
            let class = if *region { region_ref } else { object_ref };
            with_metadata(py, &dtype.call1(("O",))?, "ref", class.bind(py).clone())
        }
    }
}

/// An attribute's value as h5py returns it.
pub fn attribute_to_py(py: Python<'_>, obj: &CoreObject, value: &AttributeValue) -> PyResult<PyObject> {
    let dtype = dtype_of(py, &value.datatype)?;
    if value.dataspace.kind == DataspaceKind::Null {
        return Ok(("empty", dtype).into_pyobject(py)?.into_any().unbind());
    }
    let scalar = value.dataspace.kind == DataspaceKind::Scalar;
    let shape: Vec<u64> = if scalar { vec![] } else { value.dataspace.dims.clone() };
    if has_objects(&value.datatype) {
        // The values live in global heaps elsewhere in the file: say whose they are.
        let whose = format!("{} (attribute '{}')", obj.name(), value.name);
        let values = without_gil(py, || guard(|| value.vlen_values(obj.file()).in_object(&whose).in_file(obj.file().path())))
            .map_err(to_py_err)?;
        // an array type's items are trailing axes, as numpy expands sub-array dtypes
        let (item_type, items) = array_items(&value.datatype, values)?;
        let objects = items.iter().map(|v| vlen_to_py(py, item_type, v, true)).collect::<PyResult<Vec<_>>>()?;
        if scalar && !matches!(value.datatype.class, DatatypeClass::Array { .. }) {
            return objects.into_iter().next().ok_or_else(|| PyValueError::new_err("empty scalar attribute"));
        }
        let full: Vec<u64> = shape.iter().copied().chain(array_dims(&value.datatype)).collect();
        return object_array(py, objects, &full, Some(&dtype_of(py, item_type)?));
    }
    let bytes = guard(|| value.numpy_bytes()).map_err(to_py_err)?;
    let array = array_from_bytes(py, &bytes, &dtype, &shape)?;
    if scalar {
        return Ok(array.call_method1("__getitem__", (PyTuple::empty(py),))?.unbind());
    }
    Ok(array.unbind())
}

/// A variable-length fill value the file defines, from the global heap it lives in:
/// bytes for a string (h5py's fillvalue is b'abc', not str), an array for a sequence.
fn vlen_fill_value(py: Python<'_>, obj: &CoreObject, ds: &Dataset) -> PyResult<PyObject> {
    let value = AttributeValue {
        name: "fill value".to_string(),
        datatype: ds.datatype.clone(),
        dataspace: Dataspace::scalar(),
        raw: ds.fill.clone(),
    };
    let whose = format!("{} (its fill value)", obj.name());
    let values = without_gil(py, || guard(|| value.vlen_values(obj.file()).in_object(&whose).in_file(obj.file().path())))
        .map_err(to_py_err)?;
    let first = values.first().ok_or_else(|| PyValueError::new_err(format!("{}: no value", whose)))?;
    vlen_to_py(py, &ds.datatype, first, false)
}

/// A new numpy array of `dtype` and `shape` holding a copy of `bytes`.
fn array_from_bytes<'py>(py: Python<'py>, bytes: &[u8], dtype: &PyObject, shape: &[u64]) -> PyResult<Bound<'py, PyAny>> {
    let np = numpy(py)?;
    let flat = np.call_method1("frombuffer", (PyBytes::new(py, bytes), dtype))?;
    // A sub-array dtype expands into trailing axes, as numpy does for arrays of it.
    let sub_shape: Vec<u64> = dtype.bind(py).getattr("shape")?.extract()?;
    let full: Vec<u64> = shape.iter().chain(&sub_shape).copied().collect();
    flat.call_method1("reshape", (PyTuple::new(py, full)?,))?.call_method0("copy")
}

/// An object array of `shape` holding `objects` in C order (`dtype`: an object dtype,
/// usually carrying h5py's vlen metadata; None for a plain one).
fn object_array(py: Python<'_>, objects: Vec<PyObject>, shape: &[u64], dtype: Option<&PyObject>) -> PyResult<PyObject> {
    let np = numpy(py)?;
    let flat = match dtype {
        Some(dtype) => np.call_method1("empty", (objects.len(), dtype))?,
        None => np.call_method1("empty", (objects.len(), "O"))?,
    };
    for (i, o) in objects.into_iter().enumerate() {
        flat.set_item(i, o)?;
    }
    Ok(flat.call_method1("reshape", (PyTuple::new(py, shape.iter())?,))?.unbind())
}

/// A stored string as str, as h5py decodes attributes: UTF-8 with "surrogateescape", so
/// bytes that are no UTF-8 come back as lone surrogates (`s.encode("utf-8",
/// "surrogateescape")` gives the stored bytes), not as U+FFFD, which loses them.
fn decoded_text(py: Python<'_>, bytes: &[u8]) -> PyResult<PyObject> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(PyString::new(py, text).into_any().unbind()),
        Err(_) => Ok(PyString::from_object(&PyBytes::new(py, bytes), "utf-8", "surrogateescape")?.into_any().unbind()),
    }
}

/// One resolved variable-length value as a Python object; `strings_as_str` decodes
/// vlen strings (h5py does for attributes, not for dataset reads).
fn vlen_to_py(py: Python<'_>, dt: &Datatype, value: &VlenValue, strings_as_str: bool) -> PyResult<PyObject> {
    match (value, &dt.class) {
        (VlenValue::String(bytes), _) => {
            if strings_as_str {
                decoded_text(py, bytes)
            } else {
                Ok(PyBytes::new(py, bytes).into_any().unbind())
            }
        }
        (VlenValue::Fixed(bytes), DatatypeClass::Reference { kind }) => reference_to_py(py, *kind, bytes),
        (VlenValue::Fixed(bytes), _) => {
            let dtype = dtype_of(py, dt)?;
            let array = array_from_bytes(py, bytes, &dtype, &[])?;
            Ok(array.call_method1("__getitem__", (PyTuple::empty(py),))?.unbind())
        }
        (VlenValue::Sequence { count, bytes }, DatatypeClass::VarLen { base, .. }) => {
            // h5py labels the elements of big-endian sequences as native order.
            let descr = guard(|| base.numpy_dtype()).map_err(to_py_err)?;
            let dtype = build_dtype(py, &vlen_element_dtype(&descr))?;
            Ok(array_from_bytes(py, bytes, &dtype, &[*count as u64])?.unbind())
        }
        (VlenValue::NestedSequence(items), DatatypeClass::VarLen { base, .. }) => {
            let objects = items.iter().map(|v| vlen_to_py(py, base, v, strings_as_str)).collect::<PyResult<Vec<_>>>()?;
            let n = objects.len() as u64;
            if matches!(base.class, DatatypeClass::Compound { .. }) {
                // records with object members (strings, references, sequences): an
                // array of their compound type, as h5py gives
                let records = numpy(py)?.call_method1("zeros", (n, dtype_of(py, base)?))?;
                for (i, record) in objects.into_iter().enumerate() {
                    records.set_item(i, record)?;
                }
                return Ok(records.unbind());
            }
            // a plain object array, as h5py gives a sequence of sequences
            object_array(py, objects, &[n], None)
        }
        (VlenValue::Compound(fields), DatatypeClass::Compound { members }) => {
            let dtype = dtype_of(py, dt)?;
            // Fields are set through a 1-element array: assigning an array to an object
            // field of a 0-d record would make numpy broadcast it.
            let record = numpy(py)?.call_method1("zeros", (1, &dtype))?;
            // the values follow the memory layout's order of the members, not HDF5's
            let layout = memory_layout(dt).ok_or_else(|| PyValueError::new_err("a compound without its layout"))?;
            for (&(index, _), field) in layout.fields.iter().zip(fields) {
                let member = members.get(index).ok_or_else(|| PyValueError::new_err("a compound field without its member"))?;
                // h5py decodes an attribute's strings at the top only: in a record they stay bytes
                let v = vlen_to_py(py, &member.datatype, field, false)?;
                record.get_item(member.name.as_str())?.set_item(0, v)?;
            }
            Ok(record.get_item(0)?.unbind())
        }
        (VlenValue::Array(items), DatatypeClass::Array { base, dims }) => {
            let objects = items.iter().map(|v| vlen_to_py(py, base, v, strings_as_str)).collect::<PyResult<Vec<_>>>()?;
            object_array(py, objects, dims, Some(&dtype_of(py, base)?))
        }
        _ => Err(PyValueError::new_err("variable-length value does not match its datatype")),
    }
}

/// The dataset's fill value as a numpy scalar of its dtype.
pub fn fill_value_to_py(py: Python<'_>, obj: &CoreObject, ds: &Dataset) -> PyResult<PyObject> {
    let dtype = dtype_of(py, &ds.datatype)?;
    if ds.fill_defined && matches!(ds.datatype.class, DatatypeClass::VarLen { .. }) {
        return vlen_fill_value(py, obj, ds);
    }
    if let (true, DatatypeClass::Reference { kind }) = (ds.fill_defined, &ds.datatype.class) {
        // a reference a writer chose as fill (MATLAB: its canonical empty, /#refs#/a)
        return reference_to_py(py, *kind, &ds.fill);
    }
    match guard(|| ds.fill_numpy().in_object(obj.name()).in_file(obj.file().path())).map_err(to_py_err)? {
        Some(bytes) => {
            let array = array_from_bytes(py, &bytes, &dtype, &[])?;
            Ok(array.call_method1("__getitem__", (PyTuple::empty(py),))?.unbind())
        }
        // h5py reports b'' for variable-length strings, the object zero otherwise.
        None if matches!(ds.datatype.class, DatatypeClass::VarLen { kind: VlenKind::String { .. }, .. }) => {
            Ok(PyBytes::new(py, b"").into_any().unbind())
        }
        // h5py gives None for vlen sequences and references.
        None if matches!(ds.datatype.class, DatatypeClass::VarLen { .. } | DatatypeClass::Reference { .. }) => {
            Ok(py.None())
        }
        None => {
            // h5py gives zeros, with None in object (vlen, reference) fields of compounds.
            let record = numpy(py)?.call_method1("zeros", (PyTuple::empty(py), &dtype))?;
            match &ds.datatype.class {
                DatatypeClass::Compound { members } => {
                    for m in members.iter().filter(|m| has_objects(&m.datatype)) {
                        record.set_item(m.name.as_str(), py.None())?;
                    }
                }
                // and b'' in each cell of an array of variable-length strings
                DatatypeClass::Array { base, .. }
                    if matches!(base.class, DatatypeClass::VarLen { kind: VlenKind::String { .. }, .. }) =>
                {
                    record.call_method1("fill", (PyBytes::new(py, b""),))?;
                }
                _ => {}
            }
            Ok(record.call_method1("__getitem__", (PyTuple::empty(py),))?.unbind())
        }
    }
}

/// Read a selection of a dataset with variable-length parts into `out` (an array of
/// h5py's dtype for it). Compounds come field by field from the core and are filled a
/// field at a time, never record by record through Python.
pub fn read_vlen(
    py: Python<'_>,
    obj: &CoreObject,
    ds: &Dataset,
    sel: &[AxisSelection],
    out: &Bound<'_, PyUntypedArray>,
    threads: usize,
) -> PyResult<()> {
    let n = out.len();
    let flat = out.call_method1("reshape", (-1,))?;
    if matches!(ds.datatype.class, DatatypeClass::Compound { .. }) {
        let columns = interruptible(py, obj.file().path(), || guard(|| obj.read_vlen_columns(sel, threads))).map_err(to_py_err)?;
        return fill_fields(py, &ds.datatype, columns, &flat, n);
    }
    // stops at Ctrl-C through a Python file object, as a read of fixed-size data does
    let values = interruptible(py, obj.file().path(), || guard(|| obj.read_vlen(sel, threads))).map_err(to_py_err)?;
    // an array type's items are trailing axes of `out` (numpy expands sub-array dtypes)
    let (dt, values) = array_items(&ds.datatype, values)?;
    if values.len() != n {
        return Err(PyValueError::new_err(format!("out holds {} elements, the selection {}", n, values.len())));
    }
    fill_objects(py, dt, &values, &flat)
}

/// The dimensions of an array type (of arrays of arrays, all of them); none for others.
fn array_dims(dt: &Datatype) -> Vec<u64> {
    match &dt.class {
        DatatypeClass::Array { base, dims } => dims.iter().map(|&d| d as u64).chain(array_dims(base)).collect(),
        _ => Vec::new(),
    }
}

/// The items of array-typed values (arrays of arrays too), in C order, with their type.
fn array_items(dt: &Datatype, values: Vec<VlenValue>) -> PyResult<(&Datatype, Vec<VlenValue>)> {
    let DatatypeClass::Array { base, .. } = &dt.class else { return Ok((dt, values)) };
    let mut items = Vec::with_capacity(values.len());
    for value in values {
        match value {
            VlenValue::Array(parts) => items.extend(parts),
            _ => return Err(PyValueError::new_err("variable-length value does not match its datatype")),
        }
    }
    array_items(base, items)
}

/// Fill the fields of `target` (n records of `dt`, a compound with variable-length
/// parts) from the core's columns, which follow the memory layout's order of the
/// members (not always HDF5's).
fn fill_fields(py: Python<'_>, dt: &Datatype, columns: Vec<Column>, target: &Bound<'_, PyAny>, n: usize) -> PyResult<()> {
    let (DatatypeClass::Compound { members }, Some(layout)) = (&dt.class, memory_layout(dt)) else {
        return Err(PyValueError::new_err("fields read from a type that is not a compound"));
    };
    for (&(index, _), column) in layout.fields.iter().zip(columns) {
        let member = members.get(index).ok_or_else(|| PyValueError::new_err("a compound field without its member"))?;
        let field = target.get_item(member.name.as_str())?;
        match column {
            Column::Fixed { bytes, .. } => field.set_item(py.Ellipsis(), array_from_bytes(py, &bytes, &dtype_of(py, &member.datatype)?, &[n as u64])?)?,
            Column::Strings(texts) if texts.len() == n => {
                let objects = texts.iter().map(|t| PyBytes::new(py, t).into_any().unbind()).collect();
                field.set_item(py.Ellipsis(), object_column(py, objects, &field)?)?
            }
            Column::Compound(fields) => fill_fields(py, &member.datatype, fields, &field, n)?,
            Column::Values(values) if values.len() == n => fill_objects(py, &member.datatype, &values, &field)?,
            _ => return Err(PyValueError::new_err(format!("field {:?} read with the wrong number of values", member.name))),
        }
    }
    Ok(())
}

/// Fill `target` (n elements of `dt`: a 1-d array, or one field of a structured
/// array) with one object per value.
fn fill_objects(py: Python<'_>, dt: &Datatype, values: &[VlenValue], target: &Bound<'_, PyAny>) -> PyResult<()> {
    let element = ElementConverter::new(py, dt)?;
    let objects = values.iter().map(|v| element.to_py(py, v)).collect::<PyResult<Vec<_>>>()?;
    target.set_item(py.Ellipsis(), object_column(py, objects, target)?)
}

/// `objects` as an object array of the target's shape (an element of an array type
/// with object parts is itself an array, filling one row of it).
fn object_column<'py>(py: Python<'py>, objects: Vec<PyObject>, target: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let column = numpy::PyArray1::from_vec(py, objects).into_any();
    let shape: Vec<usize> = target.getattr("shape")?.extract()?;
    if shape.len() <= 1 {
        return Ok(column);
    }
    // rows of an array type: each object an array of the row's shape
    let rows = numpy(py)?.call_method1("empty", (PyTuple::new(py, &shape)?, "O"))?;
    for (i, row) in column.try_iter()?.enumerate() {
        rows.set_item(i, row?)?;
    }
    Ok(rows)
}

/// One variable-length element type turned into Python objects, its dtypes built once.
struct ElementConverter<'a> {
    dt: &'a Datatype,
    /// The dtype of a sequence's elements (h5py's labelling), for sequences.
    sequence_dtype: Option<Py<PyArrayDescr>>,
}

impl<'a> ElementConverter<'a> {
    fn new(py: Python<'_>, dt: &'a Datatype) -> PyResult<Self> {
        let sequence_dtype = match &dt.class {
            DatatypeClass::VarLen { kind: VlenKind::Sequence, base } => {
                let descr = guard(|| base.numpy_dtype()).map_err(to_py_err)?;
                Some(build_dtype(py, &vlen_element_dtype(&descr))?.downcast_bound::<PyArrayDescr>(py)?.clone().unbind())
            }
            _ => None,
        };
        Ok(ElementConverter { dt, sequence_dtype })
    }

    fn to_py(&self, py: Python<'_>, value: &VlenValue) -> PyResult<PyObject> {
        match (value, &self.sequence_dtype) {
            (VlenValue::Sequence { count, bytes }, Some(dtype)) => sequence_array(py, bytes, dtype.bind(py), *count),
            _ => vlen_to_py(py, self.dt, value, false),
        }
    }
}

/// A sequence's values as a new 1-d array of `dtype` (which owns a copy of `bytes`):
/// one call into numpy's C API per element, where frombuffer, reshape and copy took
/// four Python calls. Sub-array dtypes (which add axes) go the long way.
fn sequence_array(py: Python<'_>, bytes: &[u8], dtype: &Bound<'_, PyArrayDescr>, count: usize) -> PyResult<PyObject> {
    if dtype.has_subarray() || count.checked_mul(dtype.itemsize()) != Some(bytes.len()) {
        return Ok(array_from_bytes(py, bytes, dtype.as_unbound().clone_ref(py).as_any(), &[count as u64])?.unbind());
    }
    let mut dims = [count as npy_intp];
    // SAFETY: numpy allocates an array of `count` elements of `dtype` (the descriptor
    // reference is given to it); its data holds count x itemsize = bytes.len() bytes.
    unsafe {
        let array_type = PY_ARRAY_API.get_type_object(py, NpyTypes::PyArray_Type);
        let descr = dtype.clone().into_dtype_ptr();
        let ptr = PY_ARRAY_API.PyArray_NewFromDescr(py, array_type, descr, 1, dims.as_mut_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), 0, std::ptr::null_mut());
        let array = Bound::from_owned_ptr_or_err(py, ptr)?;
        if !bytes.is_empty() {
            let data = (*ptr.cast::<PyArrayObject>()).data.cast::<u8>();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
        }
        Ok(array.unbind())
    }
}
