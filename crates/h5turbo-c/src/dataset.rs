//! Datasets: shape, chunks, filters, hyperslab reads, strings and reductions.

use crate::datatype::h5turbo_datatype;
use crate::errors::*;
use crate::handles::{guard_put_in, out_strings};
use crate::native::to_native;
use crate::objects::h5turbo_object;
use crate::strings::{give_optional_strings, give_strings};
use h5turbo_core::prelude::{
    vec_with_capacity,
    filter_registry, half_to_f32, reference, AxisSelection, Dataset, Dataspace, DataspaceKind, DatatypeClass, ElementKind, Error, NumberClass, Object, ReduceOp,
    Reduced, ReferenceKind, ResultExt, VlenKind, VlenValue, zeroed_elements,
};
use h5turbo_core::prelude::fast5::Scalar;
use std::ffi::{c_char, c_int};
use std::ffi::CString;
use std::sync::{Arc, OnceLock};

/// Errors of an object's operations name its file and path.
pub(crate) fn in_object<T>(obj: &Object, r: Result<T, Error>) -> Result<T, Error> {
    r.in_object(obj.name()).in_file(obj.file().path())
}

/// The object and dataset behind a handle (the borrow lasts the entry point's call).
unsafe fn dataset_of<'a>(ds: *const h5turbo_object) -> Result<(&'a Object, Arc<Dataset>), Error> {
    let obj = &deref(ds, "ds")?.object;
    let dataset = in_object(obj, obj.dataset())?;
    Ok((obj, dataset))
}

/// The rank of a dataspace: -1 null, 0 scalar, else its number of dimensions.
pub(crate) fn rank_of(space: &Dataspace) -> Result<c_int, Error> {
    match space.kind {
        DataspaceKind::Null => Ok(-1),
        DataspaceKind::Scalar => Ok(0),
        DataspaceKind::Simple => c_int::try_from(space.dims.len()).map_err(|_| Error::format("rank too large")),
    }
}

/// Check that the caller's `dims` (room for `max_rank`) holds all of `shape`: the
/// functions without a count output (shapes) fail when it does not, writing nothing.
pub(crate) fn check_dims(shape: &[u64], dims: *mut u64, max_rank: c_int) -> Result<(), Error> {
    if shape.is_empty() {
        return Ok(());
    }
    let room = usize::try_from(max_rank).unwrap_or(0);
    if room < shape.len() {
        return Err(invalid(format!("max_rank is {}, the rank is {}", max_rank, shape.len())));
    }
    out_ptr(dims, "dims")?;
    Ok(())
}

/// Copy `shape` into the caller's `dims` (checked by check_dims).
pub(crate) unsafe fn write_dims(shape: &[u64], dims: *mut u64) {
    if !shape.is_empty() {
        std::ptr::copy_nonoverlapping(shape.as_ptr(), dims, shape.len());
    }
}

/// Copy `shape` into the caller's `dims` (room for `max_rank`, checked first).
pub(crate) unsafe fn copy_dims(shape: &[u64], dims: *mut u64, max_rank: c_int) -> Result<(), Error> {
    check_dims(shape, dims, max_rank)?;
    write_dims(shape, dims);
    Ok(())
}

/// The "buffer + capacity + count" outputs (filter ids, an array type's dimensions),
/// as snprintf: the first `capacity` values go to `out` (NULL only when capacity is
/// 0), and the full count is returned for the caller's `*count`; a buffer too small
/// is no error, the count tells what it needs. Checked here before anything is
/// written, so a failure writes nothing.
pub(crate) fn check_capacity<T>(out: *mut T, what: &str, capacity: usize) -> Result<(), Error> {
    if capacity > 0 {
        out_ptr(out, what)?;
    }
    Ok(())
}

/// Write the values `check_capacity` allowed: at most `capacity` of them.
pub(crate) unsafe fn write_capacity<T: Copy>(values: &[T], out: *mut T, capacity: usize) {
    let n = values.len().min(capacity);
    if n > 0 {
        std::ptr::copy_nonoverlapping(values.as_ptr(), out, n);
    }
}

/// The rank of a dataset: 0 for a scalar, -1 for a null dataspace. A null dataspace
/// holds no data (not even an empty array): every read of it fails with
/// H5TURBO_E_INVALID, so a program walking all datasets checks the rank first.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_rank(ds: *const h5turbo_object, rank: *mut c_int) -> c_int {
    guard_put_in(ds, rank, "rank", || rank_of(&dataset_of(ds)?.1.dataspace))
}

/// The dimensions of a dataset into `dims` (room for max_rank; nothing for a scalar).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_shape(ds: *const h5turbo_object, dims: *mut u64, max_rank: c_int) -> c_int {
    guard_in(ds, || copy_dims(dataset_of(ds)?.1.shape(), dims, max_rank))
}

/// The chunk dimensions of a chunked dataset into `dims` (room for max_rank, the
/// dataset's rank: too small is H5TURBO_E_INVALID); `*chunked` is 0 (and `dims`
/// untouched) for other layouts. Nothing is written when the call fails.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_chunk_shape(
    ds: *const h5turbo_object,
    dims: *mut u64,
    max_rank: c_int,
    chunked: *mut c_int,
) -> c_int {
    guard_in(ds, || {
        let chunked = out_ptr(chunked, "chunked")?;
        let (_, dataset) = dataset_of(ds)?;
        match dataset.chunk_dims() {
            Some(chunk) => {
                // HDF5 stores the element size as a last chunk dimension in old layouts:
                // report one per dataset axis.
                let chunk = &chunk[..dataset.shape().len().min(chunk.len())];
                check_dims(chunk, dims, max_rank)?;
                write_dims(chunk, dims);
                *chunked = 1;
            }
            None => *chunked = 0,
        }
        Ok(())
    })
}

/// The filter ids of a dataset's pipeline, in order (1 deflate, 2 shuffle, 3
/// fletcher32, 4 szip, 32020 vbz ...): the first `max` of them into `ids` (may be
/// NULL when max is 0); `*count` is the pipeline's length, also when `max` is
/// smaller (then `ids` holds the first `max`: call again with room for `*count`).
/// Nothing is written when the call fails.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_filters(
    ds: *const h5turbo_object,
    ids: *mut u32,
    max: usize,
    count: *mut usize,
) -> c_int {
    guard_in(ds, || {
        let count = out_ptr(count, "count")?;
        check_capacity(ids, "ids", max)?;
        let (_, dataset) = dataset_of(ds)?;
        let filters: Vec<u32> = dataset.pipeline.filters.iter().map(|f| u32::from(f.id)).collect();
        write_capacity(&filters, ids, max);
        *count = filters.len();
        Ok(())
    })
}

/// The name of an HDF5 filter id ("deflate", "vbz" ...; the core's filter registry),
/// a static string; NULL when h5turbo does not know it.
#[no_mangle]
pub extern "C" fn h5turbo_filter_name(id: u32) -> *const c_char {
    static NAMES: OnceLock<Vec<(u16, CString)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        filter_registry::FILTERS.iter().map(|f| (f.id, c_string_lossy(f.name.as_bytes()))).collect()
    });
    let found = u16::try_from(id).ok().and_then(|id| names.iter().find(|(i, _)| *i == id));
    found.map_or(std::ptr::null(), |(_, name)| name.as_ptr())
}

/// The selection of a hyperslab: start and count per axis (NULL start: 0; NULL count:
/// to the end), stride (NULL: 1). Scalars take an empty selection.
unsafe fn hyperslab(
    space: &Dataspace,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
) -> Result<Vec<AxisSelection>, Error> {
    match space.kind {
        DataspaceKind::Null => return Err(invalid("the dataset has a null dataspace and holds no data")),
        DataspaceKind::Scalar => return Ok(Vec::new()),
        DataspaceKind::Simple => {}
    }
    let rank = space.dims.len();
    let axis = |p: *const u64, i: usize| if p.is_null() { None } else { Some(*p.add(i)) };
    let mut sel = Vec::with_capacity(rank);
    for (i, &len) in space.dims.iter().enumerate() {
        let first = axis(start, i).unwrap_or(0);
        let step = axis(stride, i).unwrap_or(1);
        if step == 0 {
            return Err(invalid(format!("axis {}: stride 0", i)));
        }
        let n = match axis(count, i) {
            Some(n) => n,
            None => len.saturating_sub(first).div_ceil(step),
        };
        let selection = AxisSelection::Range { start: first, count: n, step };
        selection.validate(len, i)?;
        sel.push(selection);
    }
    Ok(sel)
}

/// What every hyperslab read starts from: the dataset behind `ds`, the checked
/// selection and its number of elements, and the thread count.
pub(crate) struct Selected<'a> {
    pub obj: &'a Object,
    pub dataset: Arc<Dataset>,
    pub sel: Vec<AxisSelection>,
    pub n: usize,
    pub threads: usize,
}

pub(crate) unsafe fn selected<'a>(
    ds: *const h5turbo_object,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    threads: c_int,
) -> Result<Selected<'a>, Error> {
    let threads = threads_arg(threads)?;
    let (obj, dataset) = dataset_of(ds)?;
    let sel = in_object(obj, hyperslab(&dataset.dataspace, start, count, stride))?;
    let n = in_object(obj, selection_len(&sel))?;
    Ok(Selected { obj, dataset, sel, n, threads })
}

fn selection_len(sel: &[AxisSelection]) -> Result<usize, Error> {
    sel.iter()
        .try_fold(1usize, |acc, s| acc.checked_mul(usize::try_from(s.count()).ok()?))
        .ok_or_else(|| invalid("selection too large"))
}

/// Read a hyperslab of a dataset into `buf` (buf_size bytes, checked), row-major, in
/// native byte order: numbers, booleans and enums (their base integer), bitfields,
/// opaque data, compounds of those (members at the offsets of
/// h5turbo_datatype_member), fixed-length strings (size bytes each, NUL-padded: the
/// trailing spaces of a space-padded string become NULs, as libhdf5 converts them).
/// start/count/stride: one value per axis; start NULL = 0, count NULL = to the end,
/// stride NULL = 1 (scalars: ignored). threads 0 = H5TURBO_THREADS or every core.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read(
    ds: *const h5turbo_object,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    buf: *mut std::ffi::c_void,
    buf_size: usize,
    threads: c_int,
) -> c_int {
    guard_in(ds, || {
        let Selected { obj, dataset, sel, n, threads } = selected(ds, start, count, stride, threads)?;
        let dtype = h5turbo_datatype::new(dataset.datatype.clone());
        let (numpy, itemsize) = in_object(obj, dtype.plain_layout())?;
        let need = in_object(obj, n.checked_mul(itemsize).ok_or_else(|| invalid("selection too large")))?;
        if need == 0 {
            return Ok(());
        }
        if buf_size < need {
            return Err(invalid(format!("buf_size is {} bytes, the selection needs {}", buf_size, need))
                .in_object(obj.name())
                .in_file(obj.file().path()));
        }
        let buf = out_ptr(buf.cast::<u8>(), "buf")?;
        let out = std::slice::from_raw_parts_mut(buf, need);
        obj.read_numpy(&sel, out, threads)?;
        in_object(obj, to_native(numpy, out, n))
    })
}

/// Text of string elements: fixed-length ones (cut at the first NUL) or vlen ones.
pub(crate) fn string_elements(
    class: &DatatypeClass,
    itemsize: usize,
    fixed: impl FnOnce() -> Result<Vec<u8>, Error>,
    vlen: impl FnOnce() -> Result<Vec<VlenValue>, Error>,
) -> Result<Vec<Vec<u8>>, Error> {
    match class {
        DatatypeClass::String { .. } => {
            let bytes = fixed()?;
            let mut texts = vec_with_capacity(bytes.len() / itemsize.max(1), "the selected strings")?;
            texts.extend(bytes.chunks(itemsize.max(1)).map(<[u8]>::to_vec));
            Ok(texts)
        }
        DatatypeClass::VarLen { kind: VlenKind::String { .. }, .. } => {
            let values = vlen()?;
            let mut texts = vec_with_capacity(values.len(), "the selected strings")?;
            for value in values {
                let VlenValue::String(bytes) = value else {
                    return Err(Error::format("a variable-length string element holds no string"));
                };
                texts.push(bytes);
            }
            Ok(texts)
        }
        _ => Err(invalid("not a string type")),
    }
}

/// The strings (fixed or variable length) of a hyperslab as NUL-terminated C strings,
/// row-major; free with h5turbo_strings_free(*strings, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read_strings(
    ds: *const h5turbo_object,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    strings: *mut *mut *mut c_char,
    n: *mut usize,
    threads: c_int,
) -> c_int {
    guard_in(ds, || {
        let (strings, n) = out_strings(strings, "strings", n, "n")?;
        let Selected { obj, dataset, sel, n: len, threads } = selected(ds, start, count, stride, threads)?;
        let itemsize = dataset.datatype.size;
        let values = in_object(
            obj,
            string_elements(
                &dataset.datatype.class,
                itemsize,
                || {
                    let mut bytes = zeroed_elements(len, itemsize, "the selected strings")?;
                    obj.read_numpy(&sel, &mut bytes, threads)?;
                    Ok(bytes)
                },
                || obj.read_vlen(&sel, threads),
            ),
        )?;
        give_strings(values, strings, n)?;
        Ok(())
    })
}

/// The objects an object-reference dataset's hyperslab points to, as paths (the name
/// libhdf5 gives a dereferenced object, H5Iget_name after H5Rdereference: the first
/// path met walking the file depth first), row-major; NULL for a null reference or an
/// object no hard link reaches. Free with h5turbo_strings_free(*paths, *n). Region
/// references and HDF5 1.12+ references are H5TURBO_E_UNSUPPORTED; a reference to an
/// address that holds no object, H5TURBO_E_FORMAT.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read_references(
    ds: *const h5turbo_object,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    paths: *mut *mut *mut c_char,
    n: *mut usize,
    threads: c_int,
) -> c_int {
    guard_in(ds, || {
        let (paths, n) = out_strings(paths, "paths", n, "n")?;
        let Selected { obj, dataset, sel, threads, .. } = selected(ds, start, count, stride, threads)?;
        let found = in_object(obj, referenced_paths(obj, &dataset, &sel, threads))?;
        give_optional_strings(found, paths, n)?;
        Ok(())
    })
}

fn referenced_paths(obj: &Object, dataset: &Dataset, sel: &[AxisSelection], threads: usize) -> Result<Vec<Option<String>>, Error> {
    match dataset.datatype.class {
        DatatypeClass::Reference { kind: ReferenceKind::Object } => {}
        DatatypeClass::Reference { .. } => {
            return Err(Error::unsupported("region and HDF5 1.12+ references (object references are read)"))
        }
        _ => return Err(invalid("not a reference type")),
    }
    let values = obj.read_vlen(sel, threads)?;
    let mut paths = vec_with_capacity(values.len(), "the referenced paths")?;
    for (i, value) in values.into_iter().enumerate() {
        let VlenValue::Fixed(raw) = value else { return Err(Error::format("a reference element holds no reference")) };
        let Some(address) = reference::object_address(&raw)? else {
            paths.push(None);
            continue;
        };
        // The dataset named with the element: the error of the object alone names
        // only the address.
        let followed = obj.file().dereference(address).map_err(|e| {
            Error::new(e.kind(), format!("selected element {} refers to address {}: {}", i, address, e.message()))
        });
        paths.push(followed?.1);
    }
    Ok(paths)
}

/// Sum of all values: floats accumulated in float64; integers summed exactly (in 128
/// bits, never wrapping) and given as the nearest double.
pub const H5TURBO_SUM: c_int = 0;
/// Mean: the sum (as H5TURBO_SUM) divided by the count, as numpy's mean. Sums, means
/// and variances are the same bits whatever the thread count: integer sums are exact,
/// and float partials are merged in the file's chunk order.
pub const H5TURBO_MEAN: c_int = 1;
/// Variance with `ddof` delta degrees of freedom (numpy's var).
pub const H5TURBO_VAR: c_int = 2;
pub const H5TURBO_MIN: c_int = 3;
pub const H5TURBO_MAX: c_int = 4;
pub const H5TURBO_COUNT_NONZERO: c_int = 5;

/// Reduce a numeric dataset (integers, floats of 16, 32 or 64 bits, booleans, enums)
/// chunk by chunk in parallel, straight from the file. axis: the axis to reduce
/// (row-major numbering), or -1 for all. out: one double per remaining cell,
/// row-major (out_len checked: 1 for axis -1, else the product of the other
/// dimensions). NaN and inf follow numpy: the mean of no values is NaN; a variance
/// with ddof >= the count is inf (NaN where the values are all equal or none); the
/// minimum or maximum of no values is an error (H5TURBO_E_INVALID), as numpy raises.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_reduce(
    ds: *const h5turbo_object,
    op: c_int,
    axis: c_int,
    ddof: c_int,
    out: *mut f64,
    out_len: usize,
    threads: c_int,
) -> c_int {
    guard_in(ds, || {
        let threads = threads_arg(threads)?;
        let (obj, dataset) = dataset_of(ds)?;
        let shape = dataset.shape().to_vec();
        let reduce_axis = in_object(obj, reduced_axes(&shape, axis))?;
        let cells = shape.iter().zip(&reduce_axis).filter(|(_, &r)| !r).try_fold(1usize, |acc, (&d, _)| {
            acc.checked_mul(usize::try_from(d).ok()?)
        });
        let cells = in_object(obj, cells.ok_or_else(|| invalid("result too large")))?;
        if out_len != cells {
            return in_object(obj, Err(invalid(format!("out_len is {}, the result has {} cells", out_len, cells))));
        }
        let kind = in_object(obj, dataset.element_kind())?;
        let integers = kind.class != NumberClass::Float;
        let per_cell = shape.iter().zip(&reduce_axis).filter(|(_, &r)| r).fold(1u64, |acc, (&d, _)| acc.saturating_mul(d));
        if per_cell == 0 && (op == H5TURBO_MIN || op == H5TURBO_MAX) && cells > 0 {
            let what = if op == H5TURBO_MIN { "minimum" } else { "maximum" };
            return in_object(obj, Err(invalid(format!("the {} of no values (an empty selection) is undefined", what))));
        }
        let core_op = match op {
            H5TURBO_SUM if integers => ReduceOp::SumExact,
            H5TURBO_SUM => ReduceOp::SumFloat,
            H5TURBO_MEAN if integers => ReduceOp::SumExact,
            H5TURBO_MEAN => ReduceOp::SumFloat,
            H5TURBO_VAR => ReduceOp::Moments,
            H5TURBO_MIN => ReduceOp::Min,
            H5TURBO_MAX => ReduceOp::Max,
            H5TURBO_COUNT_NONZERO => ReduceOp::CountNonzero,
            other => return in_object(obj, Err(invalid(format!("unknown reduction {}", other)))),
        };
        let sel: Vec<AxisSelection> = shape.iter().map(|&n| AxisSelection::all(n)).collect();
        let reduced = in_object(obj, dataset.reduce(obj.file(), &sel, &reduce_axis, core_op, threads))?;
        let values = match (op, reduced) {
            (H5TURBO_MEAN, Reduced::Exact(sums)) => sums.into_iter().map(|sum| exact_mean(sum, per_cell)).collect(),
            (H5TURBO_MEAN, Reduced::Float(sums)) => sums.into_iter().map(|sum| sum / per_cell as f64).collect(),
            (_, reduced) => as_doubles(reduced, ddof, kind)?,
        };
        if values.len() != cells {
            return Err(Error::format(format!("reduction gave {} cells, expected {}", values.len(), cells)));
        }
        if cells > 0 {
            let out = out_ptr(out, "out")?;
            std::ptr::copy_nonoverlapping(values.as_ptr(), out, cells);
        }
        Ok(())
    })
}

/// sum / count as the double nearest to it in all but the rarest cases (the integer
/// quotient and the remainder's fraction rounded once each); NaN for no values.
fn exact_mean(sum: i128, count: u64) -> f64 {
    if count == 0 {
        return f64::NAN;
    }
    let count = i128::from(count);
    let (quotient, remainder) = (sum / count, sum % count);
    quotient as f64 + remainder as f64 / count as f64
}


fn reduced_axes(shape: &[u64], axis: c_int) -> Result<Vec<bool>, Error> {
    if axis == -1 {
        return Ok(vec![true; shape.len()]);
    }
    let a = usize::try_from(axis).ok().filter(|&a| a < shape.len());
    let a = a.ok_or_else(|| invalid(format!("axis {} of a rank-{} dataset", axis, shape.len())))?;
    Ok((0..shape.len()).map(|i| i == a).collect())
}

/// The engine's result as one double per cell.
fn as_doubles(reduced: Reduced, ddof: c_int, kind: ElementKind) -> Result<Vec<f64>, Error> {
    Ok(match reduced {
        // (the C API asks for exact sums, not the engine's wrapping ones)
        Reduced::Int(v) => v.into_iter().map(|x| x as f64).collect(),
        Reduced::Exact(v) => v.into_iter().map(|x| x as f64).collect(),
        Reduced::Float(v) => v,
        Reduced::Count(v) => v.into_iter().map(|x| x as f64).collect(),
        Reduced::Native(bytes) => bytes.chunks_exact(kind.size).map(|b| native_number(b, kind)).collect(),
        Reduced::Moments { count, m2, .. } => count
            .into_iter()
            .zip(m2)
            // numpy divides by max(count - ddof, 0): inf past the count, NaN for 0 / 0
            .map(|(c, m2)| m2 / (c as f64 - f64::from(ddof)).max(0.0))
            .collect(),
    })
}

/// One min/max value in the element type (native byte order) as a double.
fn native_number(b: &[u8], kind: ElementKind) -> f64 {
    let mut le = [0u8; 8];
    let n = b.len().min(8);
    if cfg!(target_endian = "little") {
        le[..n].copy_from_slice(&b[..n]);
    } else {
        for (i, &x) in b[..n].iter().rev().enumerate() {
            le[i] = x;
        }
    }
    let negative = le[n.saturating_sub(1)] & 0x80 != 0;
    let scalar = match kind.class {
        NumberClass::Float if n == 2 => Scalar::F32(half_to_f32(u16::from_le_bytes([le[0], le[1]]))),
        NumberClass::Float if n == 4 => Scalar::F32(f32::from_le_bytes([le[0], le[1], le[2], le[3]])),
        NumberClass::Float => Scalar::F64(f64::from_le_bytes(le)),
        NumberClass::Signed => {
            if negative {
                le[n..].fill(0xff);
            }
            Scalar::Signed(i64::from_le_bytes(le), n)
        }
        NumberClass::Unsigned => Scalar::Unsigned(u64::from_le_bytes(le), n),
    };
    scalar.as_f64().unwrap_or(f64::NAN)
}

