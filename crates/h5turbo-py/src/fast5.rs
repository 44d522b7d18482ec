//! `fast5_reads`: many fast5 files walked and their signals decoded with the GIL
//! released; the Python reader (python/h5turbo/formats/fast5.py) builds the reads.

use crate::fork_gate::without_gil;
use crate::convert::attribute_to_py;
use crate::errors::{guard, to_py_err, H5TurboError};
use h5turbo_core::prelude::fast5::{file_read_ids, read_record, scalar, Fast5Index, Layout, OpenAhead, ReadLocations, ReadRecord, Scalar};
use h5turbo_core::prelude::{on_threads, read_ahead, AttributeValue, File as CoreFile, FileVersion, Object as CoreObject};
use h5turbo_core::prelude::{Error, Result};
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rayon::prelude::*;
use std::path::PathBuf;

/// One job: reads `first..first + limit` of a file, how many reads it has, and the
/// file as it was opened.
struct JobOut {
    total: usize,
    reads: Vec<ReadRecord>,
    version: Option<FileVersion>,
}

/// A `FileVersion` as Python holds it between tasks: (device, inode, size, mtime s,
/// mtime ns, ctime s, ctime ns).
type VersionTuple = (u64, u64, u64, i64, i64, i64, i64);

fn version_tuple(v: FileVersion) -> VersionTuple {
    (v.device, v.inode, v.len, v.modified.0, v.modified.1, v.changed.0, v.changed.1)
}

fn version_from(t: VersionTuple) -> FileVersion {
    FileVersion { device: t.0, inode: t.1, len: t.2, modified: (t.3, t.4), changed: (t.5, t.6) }
}

/// For each job (path, first read, read limit, the file as an earlier job opened it
/// or None): (reads in the file, None, reads, the file as opened) or (None, error
/// message, [], None) when the file cannot be read (a file that is no longer the one
/// an earlier job read, replaced or rewritten since, among the reasons). A read is (group path,
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
    jobs: Vec<(PathBuf, usize, usize, Option<VersionTuple>)>,
    io_depth: Option<u64>,
) -> PyResult<Bound<'py, PyList>> {
    let paths = jobs.iter().map(|(path, _, _, _)| path.clone());
    let gathered = gather_jobs(py, paths, io_depth, |k, file| {
        let (_, first, limit, seen) = jobs[k];
        still_the_file_read(&file, seen.map(version_from), first)?;
        gather(file, first, limit)
    });
    jobs_to_py(py, gathered)
}

/// A file's reads asked by id: (path, multi-read file, [(read id, number in the file)]).
type FetchJob = (PathBuf, bool, Vec<(String, usize)>);

/// Reads fetched by id, from files indexed by a `Fast5ReadIndex`: for each job (path,
/// multi-read, [(read id, number in the file)]) the reads in the order asked, in
/// `fast5_reads`' form (the job's total is the number of reads asked). A multi-read
/// file's read groups are looked up by name, the file not listed again.
#[pyfunction]
#[pyo3(signature = (jobs, io_depth=None))]
pub fn fast5_fetch<'py>(
    py: Python<'py>,
    jobs: Vec<FetchJob>,
    io_depth: Option<u64>,
) -> PyResult<Bound<'py, PyList>> {
    let paths = jobs.iter().map(|(path, _, _)| path.clone());
    let gathered = gather_jobs(py, paths, io_depth, |k, file| gather_asked(file, jobs[k].1, &jobs[k].2));
    jobs_to_py(py, gathered)
}

/// `gather` over the files of the jobs (job k's file is `paths`' k-th), opened ahead and
/// hinted, the GIL released.
fn gather_jobs(
    py: Python<'_>,
    paths: impl Iterator<Item = PathBuf> + Send,
    io_depth: Option<u64>,
    gather: impl Fn(usize, CoreFile) -> Result<JobOut> + Send + Sync,
) -> Vec<Result<JobOut>> {
    without_gil(py, || {
        read_ahead::with_window(io_depth, || {
            let files = OpenAhead::new(paths, read_ahead::window());
            files.enumerate().map(|(k, (_, file))| guard(|| gather(k, file?))).collect()
        })
    })
}

fn jobs_to_py(py: Python<'_>, gathered: Vec<Result<JobOut>>) -> PyResult<Bound<'_, PyList>> {
    let types = ScalarTypes::new(py)?;
    let items = gathered
        .into_iter()
        .map(|job| match job {
            Ok(job) => {
                let reads = job.reads.into_iter().map(|r| read_to_py(py, &types, r)).collect::<PyResult<Vec<_>>>()?;
                let version = job.version.map(version_tuple);
                (job.total, py.None(), PyList::new(py, reads)?, version).into_pyobject(py).map(|t| t.into_any())
            }
            Err(e) => (py.None(), e.to_string(), PyList::empty(py), py.None()).into_pyobject(py).map(|t| t.into_any()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn gather(file: CoreFile, first: usize, limit: usize) -> Result<JobOut> {
    let index = Fast5Index::open(&file)?;
    let stop = first.saturating_add(limit).min(index.len());
    // Gathered in the order the reads lie in the file (neighbours share metadata
    // blocks, signals come in file order), returned in the file's listing order.
    let order = index.by_address(first.min(stop)..stop);
    let mut reads: Vec<(usize, ReadRecord)> = order.into_iter().map(|i| (i, gather_read(&index, i))).collect();
    reads.sort_by_key(|&(i, _)| i);
    let reads = reads.into_iter().map(|(_, read)| read).collect();
    Ok(JobOut { total: index.len(), reads, version: file.version() })
}

/// The later reads of a multi-read file are read by later jobs, each opening the file
/// again by its path: one replaced or rewritten in between (another inode, size or
/// time) is an error, not its reads taken as the rest of the first file's.
fn still_the_file_read(file: &CoreFile, seen: Option<FileVersion>, first: usize) -> Result<()> {
    match seen {
        Some(seen) if file.version() != Some(seen) => Err(Error::format(format!(
            "the file changed while it was read (replaced or rewritten after its first {} reads)",
            first
        ))
        .in_file(file.path())),
        _ => Ok(()),
    }
}

/// The reads `asked` of a file indexed before (see `fast5_fetch`), in that order.
fn gather_asked(file: CoreFile, multi_read: bool, asked: &[(String, usize)]) -> Result<JobOut> {
    let layout = if multi_read { Layout::MultiRead } else { Layout::SingleRead };
    let asked: Vec<(&str, usize)> = asked.iter().map(|(id, read)| (id.as_str(), *read)).collect();
    let (index, numbers) = Fast5Index::for_reads(&file, layout, &asked)?;
    let reads = numbers.into_iter().map(|i| gather_read(&index, i)).collect();
    Ok(JobOut { total: asked.len(), reads, version: file.version() })
}

/// Where each read of many fast5 files is, by read id: every file's read ids read
/// once (in parallel, the GIL released), kept here (not as a Python dict: millions of
/// reads). python/h5turbo/formats/fast5.py's `Fast5Index` fetches reads with it.
#[pyclass(frozen, module = "h5turbo._native")]
pub struct Fast5ReadIndex {
    locations: ReadLocations,
}

#[pymethods]
impl Fast5ReadIndex {
    /// Index `paths` (files, in order) on `threads` threads (0: the default).
    #[new]
    #[pyo3(signature = (paths, threads=0))]
    fn new(py: Python<'_>, paths: Vec<PathBuf>, threads: usize) -> PyResult<Self> {
        let per_file = without_gil(py, || on_threads(threads, || paths.par_iter().map(|p| guard(|| file_read_ids(p))).collect()))
            .map_err(to_py_err)?;
        Ok(Fast5ReadIndex { locations: ReadLocations::from_files(per_file) })
    }

    fn __len__(&self) -> usize {
        self.locations.len()
    }

    fn __contains__(&self, read_id: &str) -> bool {
        self.locations.contains(read_id)
    }

    /// (file number, read number in the file, multi-read file) of each id; KeyError
    /// naming the first id not in the files.
    fn find(&self, read_ids: Vec<String>) -> PyResult<Vec<(usize, usize, bool)>> {
        read_ids
            .iter()
            .map(|id| {
                let (file_no, read) = self.locations.find(id).map_err(to_py_err)?;
                Ok((file_no, read, self.locations.layout(file_no) == Some(Layout::MultiRead)))
            })
            .collect()
    }

    /// Every read id, in file order then read order.
    fn read_ids(&self) -> Vec<&str> {
        self.locations.in_file_order().into_iter().map(|(id, _, _)| id).collect()
    }

    /// Files that could not be indexed, and the first one's error.
    fn unindexed(&self) -> (usize, Option<&str>) {
        self.locations.unindexed()
    }

    /// Each file that could not be indexed (its number in file order) and its error.
    fn unindexed_files(&self) -> Vec<(usize, String)> {
        self.locations.unindexed_files().to_vec()
    }
}

/// A read that cannot be gathered (a broken group header, a bad attribute) is an
/// error in its place; the file's other reads are still read.
fn gather_read(index: &Fast5Index, i: usize) -> ReadRecord {
    guard(|| read_record(index, i)).unwrap_or_else(|e| ReadRecord::failed(index, i, e))
}

fn read_to_py<'py>(py: Python<'py>, types: &ScalarTypes<'py>, read: ReadRecord) -> PyResult<Bound<'py, PyTuple>> {
    let read_id = read.read_id();
    let none = || py.None().into_bound(py);
    let (mut signal, mut error) = match read.signal {
        Ok(values) => (values.into_pyarray(py).into_any(), none()),
        Err(e) => (none(), e.to_string().into_pyobject(py)?.into_any()),
    };
    let mut done = true;
    let converted = attrs_to_py(py, read.attrs, &mut done, |value| types.scalar(value))
        .and_then(|attrs| Ok((attrs, attrs_to_py(py, read.channel, &mut done, |value| plain_scalar(py, value))?)));
    let (attrs, channel) = match converted {
        Ok(both) => both,
        // A value Python cannot hold (a float layout numpy lacks ...) fails its read
        // alone, in its place, not the whole call's other reads.
        Err(e) if e.is_instance_of::<H5TurboError>(py) => {
            (signal, error) = (none(), format!("{}: {}", read.name, e.value(py)).into_pyobject(py)?.into_any());
            (none(), none())
        }
        Err(e) => return Err(e),
    };
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

/// A channel value as ont_fast5_api's get_channel_info gives it: a Python int, float
/// or str; None for anything else (the general path).
fn plain_scalar<'py>(py: Python<'py>, value: &AttributeValue) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(match scalar(value) {
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
        match scalar(value) {
            Some(Scalar::Signed(v, size)) => self.ints[slot(size)].call1((v,)).map(Some),
            Some(Scalar::Unsigned(v, size)) => self.ints[4 + slot(size)].call1((v,)).map(Some),
            Some(Scalar::F32(v)) => self.floats[0].call1((v,)).map(Some),
            Some(Scalar::F64(v)) => self.floats[1].call1((v,)).map(Some),
            Some(Scalar::Text(bytes)) => self.bytes.call1((PyBytes::new(py, &bytes),)).map(Some),
            None => Ok(None),
        }
    }
}
