//! `fast5_reads`: many fast5 files walked and their signals decoded with the GIL
//! released; the Python reader (python/h5turbo/formats/fast5.py) builds the reads.

use crate::convert::attribute_to_py;
use crate::errors::guard;
use h5turbo_core::prelude::read_ahead;
use h5turbo_core::prelude::fast5::{read_signal, Fast5Index, OpenAhead};
use h5turbo_core::file::{AttributeValue, Object as CoreObject};
use h5turbo_core::format::dataspace::DataspaceKind;
use h5turbo_core::format::datatype::{ByteOrder, DatatypeClass, FloatLayout, StringPadding};
use h5turbo_core::Result;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
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
/// error message or None, read_id str or None, done). Raw-group attribute values are
/// what h5py gives; channel values are plain Python (int, float, str) as ont_fast5_api
/// gives them. `done` is false when some value took the general path (an array, a
/// null dataspace, bytes that are not UTF-8 ...): the Python side finishes those.
/// `io_depth`: bytes of the next files hinted to the system while the current ones
/// decode (None: `H5TURBO_IO_DEPTH` or the default; 0: none).
#[pyfunction]
#[pyo3(signature = (jobs, io_depth=None))]
pub fn fast5_reads<'py>(
    py: Python<'py>,
    jobs: Vec<(PathBuf, usize, usize)>,
    io_depth: Option<u64>,
) -> PyResult<Bound<'py, PyList>> {
    let gathered: Vec<Result<JobOut>> = py.allow_threads(|| {
        read_ahead::with_window(io_depth, || {
            let files = OpenAhead::new(jobs.iter().map(|(path, _, _)| path.clone()), read_ahead::window());
            files.zip(&jobs).map(|((_, file), (_, first, limit))| guard(|| gather(file?, *first, *limit))).collect()
        })
    });
    let types = ScalarTypes::new(py)?;
    let items = gathered
        .into_iter()
        .map(|job| match job {
            Ok(job) => {
                let reads = job.reads.into_iter().map(|r| read_to_py(py, &types, r)).collect::<PyResult<Vec<_>>>()?;
                (job.total, py.None(), PyList::new(py, reads)?).into_pyobject(py).map(|t| t.into_any())
            }
            Err(e) => (py.None(), e.to_string(), PyList::empty(py)).into_pyobject(py).map(|t| t.into_any()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn gather(file: h5turbo_core::file::File, first: usize, limit: usize) -> Result<JobOut> {
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
    let values = obj.all_attributes()?;
    Ok((obj, values))
}

fn read_to_py<'py>(py: Python<'py>, types: &ScalarTypes<'py>, read: ReadOut) -> PyResult<Bound<'py, PyTuple>> {
    let (signal, error) = match read.signal {
        Ok(values) => (values.into_pyarray(py).into_any(), py.None().into_bound(py)),
        Err(e) => (py.None().into_bound(py), e.to_string().into_pyobject(py)?.into_any()),
    };
    let read_id = read.attrs.as_ref().and_then(|(_, values)| text_read_id(values));
    let mut done = true;
    let attrs = attrs_to_py(py, read.attrs, &mut done, |value| types.scalar(value))?;
    let channel = attrs_to_py(py, read.channel, &mut done, |value| plain_scalar(py, value))?;
    PyTuple::new(py, [
        read.name.into_pyobject(py)?.into_any(),
        signal,
        attrs,
        channel,
        error,
        read_id.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, done).to_owned().into_any(),
    ])
}

/// A dict of an object's attributes: each value from `fast` where it has one, else
/// from the general path (and then `done` is cleared: the caller finishes it).
fn attrs_to_py<'py>(
    py: Python<'py>,
    attrs: Option<(CoreObject, Vec<AttributeValue>)>,
    done: &mut bool,
    fast: impl Fn(&AttributeValue) -> PyResult<Option<Bound<'py, PyAny>>>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some((obj, values)) = attrs else {
        return Ok(py.None().into_bound(py));
    };
    let dict = PyDict::new(py);
    for value in &values {
        match fast(value)? {
            Some(scalar) => dict.set_item(&value.name, scalar)?,
            None => {
                *done = false;
                dict.set_item(&value.name, attribute_to_py(py, &obj, value)?)?
            }
        }
    }
    Ok(dict.into_any())
}

/// The `read_id` attribute as text, when it is a NUL-padded string of UTF-8.
fn text_read_id(values: &[AttributeValue]) -> Option<String> {
    let value = values.iter().find(|v| v.name == "read_id")?;
    match scalar_of(value)? {
        Scalar::Text(bytes) => String::from_utf8(bytes).ok(),
        _ => None,
    }
}

/// A channel value as ont_fast5_api's get_channel_info gives it: a Python int, float
/// or str; None for anything else (the general path).
fn plain_scalar<'py>(py: Python<'py>, value: &AttributeValue) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(match scalar_of(value) {
        Some(Scalar::Signed(v, _)) => Some(v.into_pyobject(py)?.into_any()),
        Some(Scalar::Unsigned(v, _)) => Some(v.into_pyobject(py)?.into_any()),
        Some(Scalar::F32(v)) => Some(f64::from(v).into_pyobject(py)?.into_any()),
        Some(Scalar::F64(v)) => Some(v.into_pyobject(py)?.into_any()),
        Some(Scalar::Text(bytes)) => match String::from_utf8(bytes) {
            Ok(text) => Some(text.into_pyobject(py)?.into_any()),
            Err(_) => None,
        },
        None => None,
    })
}

/// A scalar attribute of the kinds fast5 files carry, decoded without Python.
enum Scalar {
    /// value, and the byte size (1, 2, 4 or 8)
    Signed(i64, usize),
    Unsigned(u64, usize),
    F32(f32),
    F64(f64),
    /// a NUL-padded fixed-length string without its trailing NULs, as numpy drops them
    Text(Vec<u8>),
}

/// A scalar little-endian integer, IEEE float or NUL-padded fixed-length string;
/// None for anything else.
fn scalar_of(value: &AttributeValue) -> Option<Scalar> {
    if value.dataspace.kind != DataspaceKind::Scalar {
        return None;
    }
    let size = value.datatype.size;
    let raw = value.raw.get(..size)?;
    match &value.datatype.class {
        DatatypeClass::FixedPoint { order: ByteOrder::Little, signed, bit_offset: 0, precision }
            if usize::from(*precision) == size * 8 && matches!(size, 1 | 2 | 4 | 8) =>
        {
            let mut le = [0u8; 8];
            le[..size].copy_from_slice(raw);
            let fill = if *signed && raw[size - 1] & 0x80 != 0 { 0xff } else { 0 };
            le[size..].fill(fill);
            Some(if *signed {
                Scalar::Signed(i64::from_le_bytes(le), size)
            } else {
                Scalar::Unsigned(u64::from_le_bytes(le), size)
            })
        }
        DatatypeClass::String { padding: StringPadding::NullTerminate | StringPadding::NullPad, .. } => {
            // the bytes the general path would put in a numpy 'S' array
            let mut bytes = value.numpy_bytes().ok()?;
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            bytes.truncate(end);
            Some(Scalar::Text(bytes))
        }
        DatatypeClass::FloatingPoint(layout) if is_ieee(layout, size) => match *raw {
            [a, b, c, d] => Some(Scalar::F32(f32::from_le_bytes([a, b, c, d]))),
            [a, b, c, d, e, f, g, h] => Some(Scalar::F64(f64::from_le_bytes([a, b, c, d, e, f, g, h]))),
            _ => None,
        },
        _ => None,
    }
}

/// numpy's scalar types, looked up once per call: a fast5 read carries a dozen scalar
/// int and float attributes, and building each through a numpy dtype and array (the
/// general path) costs more than decoding a short signal.
pub struct ScalarTypes<'py> {
    ints: [Bound<'py, PyAny>; 8],
    floats: [Bound<'py, PyAny>; 2],
    bytes: Bound<'py, PyAny>,
}

impl<'py> ScalarTypes<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let np = py.import("numpy")?;
        let get = |name: &str| np.getattr(name);
        Ok(ScalarTypes {
            ints: [
                get("int8")?, get("int16")?, get("int32")?, get("int64")?,
                get("uint8")?, get("uint16")?, get("uint32")?, get("uint64")?,
            ],
            floats: [get("float32")?, get("float64")?],
            bytes: get("bytes_")?,
        })
    }

    /// The h5py value of a scalar little-endian integer or IEEE float attribute (a
    /// numpy scalar of the same type) or of a NUL-padded fixed-length string (numpy
    /// bytes); None for anything else (the general path).
    fn scalar(&self, value: &AttributeValue) -> PyResult<Option<Bound<'py, PyAny>>> {
        let slot = |size: usize| match size {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => 3,
        };
        let py = self.bytes.py();
        match scalar_of(value) {
            Some(Scalar::Signed(v, size)) => self.ints[slot(size)].call1((v,)).map(Some),
            Some(Scalar::Unsigned(v, size)) => self.ints[4 + slot(size)].call1((v,)).map(Some),
            Some(Scalar::F32(v)) => self.floats[0].call1((v,)).map(Some),
            Some(Scalar::F64(v)) => self.floats[1].call1((v,)).map(Some),
            Some(Scalar::Text(bytes)) => self.bytes.call1((PyBytes::new(py, &bytes),)).map(Some),
            None => Ok(None),
        }
    }
}

/// Little-endian IEEE binary32 or binary64, laid out as everyone writes them.
fn is_ieee(l: &FloatLayout, size: usize) -> bool {
    let (precision, sign, exponent_size, mantissa_size, bias) = match size {
        4 => (32, 31, 8, 23, 127),
        8 => (64, 63, 11, 52, 1023),
        _ => return false,
    };
    l.order == ByteOrder::Little
        && l.bit_offset == 0
        && l.precision == precision
        && l.sign_location == sign
        && l.exponent_location == mantissa_size
        && l.exponent_size == exponent_size
        && l.mantissa_location == 0
        && l.mantissa_size == mantissa_size
        && l.exponent_bias == bias
        && l.normalization == 2
}
