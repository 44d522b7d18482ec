//! From raw element bytes (file layout) to the bytes and objects h5py returns.
//!
//! h5py reads with a memory type built from the dtype it reports (see
//! [`super::numpy_dtype`]), so libhdf5 converts only where that memory type differs
//! from the file type. For the common types it does not: integers, IEEE floats,
//! bitfields, opaque data and null-padded strings keep the file's byte order and
//! bytes, and compounds keep HDF5's member offsets and total size. Then the raw bytes
//! ARE the numpy bytes and [`is_identity`] says so. The exceptions, handled here:
//! - null-terminated and space-padded strings (h5py's memory type is null-padded:
//!   bytes after the first NUL, or trailing spaces, become NULs);
//! - integers and bitfields using fewer bits than their size (bits are extracted and
//!   sign-extended);
//! - h5py's boolean enum over any base but int8 (converted by member name; numpy
//!   bool is one byte);
//! - {r, i} compounds whose layout is not the packed numpy complex layout;
//! - float layouts numpy lacks (widened exactly to the float h5py picks).
//!
//! Variable-length data ([`resolve_vlen_elements`]) is returned as a small tree of
//! byte buffers so that the Python bindings only wrap bytes into Python objects.

use crate::format::context::FormatContext;
use crate::format::datatype::{ByteOrder, Datatype, DatatypeClass, FloatLayout, StringPadding, VlenKind};
use super::floats::{self as float_convert, TargetFloat};
use crate::format::global_heap::{Collection, GlobalHeapCache, VlenRef};
use std::sync::Arc;
use crate::engine::pool;
use rayon::prelude::*;
use super::numpy_dtype::NumpyDtype;
use super::numpy_dtype::{has_objects, is_bool_enum, memory_layout};
use crate::buffer::vec_with_capacity;
use crate::error::{Error, Result};

/// True if the raw file bytes of elements of `dt` are exactly the numpy bytes h5py
/// returns (so a reader can decode chunks straight into the output array).
pub fn is_identity(dt: &Datatype) -> bool {
    match &dt.class {
        DatatypeClass::FixedPoint { bit_offset, precision, .. }
        | DatatypeClass::Bitfield { bit_offset, precision, .. } => full_width(dt.size, *bit_offset, *precision),
        DatatypeClass::FloatingPoint(layout) => numpy_float_layout(layout, dt.size),
        DatatypeClass::String { padding, .. } => *padding == StringPadding::NullPad,
        DatatypeClass::Opaque { .. } => true,
        DatatypeClass::Enum { base, .. } if is_bool_enum(dt) => is_h5py_bool_base(base),
        DatatypeClass::Enum { base, .. } => is_identity(base),
        DatatypeClass::Compound { members } => match complex_parts(dt) {
            Some(part) => {
                (members[0].offset, members[1].offset) == (0, part as u64)
                    && dt.size == 2 * part
                    && is_identity(&members[0].datatype)
            }
            None => members.iter().all(|m| is_identity(&m.datatype)),
        },
        DatatypeClass::Array { base, .. } => is_identity(base),
        DatatypeClass::Complex { base } => is_identity(base),
        DatatypeClass::Time { .. } | DatatypeClass::Reference { .. } | DatatypeClass::VarLen { .. } => false,
    }
}

/// h5py's bool is an enum {FALSE: 0, TRUE: 1} over native int8. A file enum over the
/// same base is read without conversion (raw bytes kept); over any other base libhdf5
/// converts by member name, and values that are neither member become 0xff.
fn is_h5py_bool_base(base: &Datatype) -> bool {
    matches!(
        base.class,
        DatatypeClass::FixedPoint { order: ByteOrder::Little, signed: true, bit_offset: 0, precision: 8 }
    ) && base.size == 1
}

fn full_width(size: usize, bit_offset: u16, precision: u16) -> bool {
    bit_offset == 0 && precision as usize == size * 8
}

/// IEEE half, single and double in their own size: what numpy stores for f2, f4, f8
/// (and the platform's long double for f16). The normalization counts: the same
/// fields with the leading bit stored rather than implied hold other numbers.
fn numpy_float_layout(l: &FloatLayout, size: usize) -> bool {
    const IMPLIED: u8 = 2; // the file format's normalization field
    const STORED: u8 = 0;
    let (precision, sign, exp_loc, exp_size, mant_size, bias, normalization) = match size {
        2 => (16, 15, 10, 5, 10, 15, IMPLIED),
        4 => (32, 31, 23, 8, 23, 127, IMPLIED),
        8 => (64, 63, 52, 11, 52, 1023, IMPLIED),
        // x87 extended precision in 16 bytes: numpy's long double on x86 (h5py '<f16').
        16 if cfg!(any(target_arch = "x86_64", target_arch = "x86")) => (80, 79, 64, 15, 64, 16383, STORED),
        _ => return false,
    };
    l.order != ByteOrder::Vax
        && l.normalization == normalization
        && l.bit_offset == 0
        && l.precision == precision
        && (l.sign_location, l.exponent_location, l.exponent_size) == (sign, exp_loc, exp_size)
        && (l.mantissa_location, l.mantissa_size, l.exponent_bias) == (0, mant_size, bias)
}

/// For an {r, i} compound that h5py reads as complex: the size of one part.
fn complex_parts(dt: &Datatype) -> Option<usize> {
    match dt.numpy_dtype() {
        Ok(NumpyDtype::Simple(s)) if s.as_bytes().get(1) == Some(&b'c') => {
            let DatatypeClass::Compound { members } = &dt.class else { return None };
            Some(members[0].datatype.size)
        }
        _ => None,
    }
}

/// Bytes per element in the numpy array h5py returns (object dtypes excluded).
pub fn numpy_itemsize(dt: &Datatype) -> Result<usize> {
    if has_objects(dt) {
        return Err(Error::invalid_argument("object dtypes have no fixed numpy layout"));
    }
    usize::try_from(dt.numpy_dtype()?.itemsize())
        .map_err(|_| Error::unsupported("numpy itemsize does not fit in memory"))
}

/// Convert `n` elements of `dt` from file layout (`src`, n x dt.size bytes) to numpy
/// layout (`dst`, n x numpy itemsize bytes, zero-initialised by the caller).
pub fn convert_elements(dt: &Datatype, src: &[u8], dst: &mut [u8], n: usize) -> Result<()> {
    ElementConverter::new(dt)?.convert(src, dst, n)
}

/// Convenience: `n` elements to a new numpy-layout buffer.
pub fn to_numpy_bytes(dt: &Datatype, src: &[u8], n: usize) -> Result<Vec<u8>> {
    let itemsize = numpy_itemsize(dt)?;
    // Check the source before sizing the output from a count the caller derived from the file.
    if n.checked_mul(dt.size).map_or(true, |len| len > src.len()) {
        return Err(Error::invalid_argument(format!(
            "{} elements of {} bytes exceed the {} given",
            n,
            dt.size,
            src.len()
        )));
    }
    if is_identity(dt) && itemsize == dt.size {
        return Ok(src[..n * dt.size].to_vec());
    }
    let mut out = vec![0u8; n * itemsize];
    convert_elements(dt, src, &mut out, n)?;
    Ok(out)
}

/// One conversion step inside an element: source offset, destination offset, and what to do.
#[derive(Debug, Clone)]
enum Step {
    Copy { src: usize, dst: usize, len: usize },
    String { src: usize, dst: usize, len: usize, padding: StringPadding },
    Bits { src: usize, dst: usize, len: usize, order: ByteOrder, signed: bool, bit_offset: u16, precision: u16 },
    Bool { src: usize, dst: usize, base: Datatype },
    Float { src: usize, dst: usize, len: usize, layout: FloatLayout, target: TargetFloat },
}

/// A datatype's conversion to numpy layout, planned once and applied to many elements
/// (chunks are converted element by element with no per-element type inspection).
#[derive(Debug, Clone)]
pub struct ElementConverter {
    src_size: usize,
    dst_size: usize,
    steps: Vec<Step>,
}

impl ElementConverter {
    pub fn new(dt: &Datatype) -> Result<ElementConverter> {
        let dst_size = numpy_itemsize(dt)?;
        let mut steps = Vec::new();
        plan(dt, 0, 0, &mut steps)?;
        let conv = ElementConverter { src_size: dt.size, dst_size, steps };
        conv.check_bounds()?;
        Ok(conv)
    }

    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// Bytes per element in the file and in numpy.
    pub fn sizes(&self) -> (usize, usize) {
        (self.src_size, self.dst_size)
    }

    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// True if conversion is a plain copy of each element.
    pub fn is_copy(&self) -> bool {
        matches!(self.steps.as_slice(), [Step::Copy { src: 0, dst: 0, len }] if *len == self.src_size && *len == self.dst_size)
    }

    /// Every step stays inside its element on both sides, so `apply` cannot index out of range.
    fn check_bounds(&self) -> Result<()> {
        for step in &self.steps {
            let (s, d, len) = match step {
                Step::Copy { src, dst, len }
                | Step::String { src, dst, len, .. }
                | Step::Bits { src, dst, len, .. } => (*src, *dst, *len),
                Step::Bool { src, dst, base } => (*src, *dst, base.size.max(1)),
                Step::Float { src, dst, len, .. } => (*src, *dst, *len),
            };
            let dst_len = match step {
                Step::Bool { .. } => 1,
                Step::Float { target, .. } => target.size(),
                _ => len,
            };
            if s + len > self.src_size || d + dst_len > self.dst_size {
                return Err(Error::unsupported("a converted member does not fit its numpy record"));
            }
        }
        Ok(())
    }

    pub fn convert(&self, src: &[u8], dst: &mut [u8], n: usize) -> Result<()> {
        let need_src = n.checked_mul(self.src_size);
        let need_dst = n.checked_mul(self.dst_size);
        if need_src.map_or(true, |s| s > src.len()) || need_dst.map_or(true, |d| d > dst.len()) {
            return Err(Error::invalid_argument(format!(
                "{} elements need {}x{} source and {}x{} destination bytes; got {} and {}",
                n,
                n,
                self.src_size,
                n,
                self.dst_size,
                src.len(),
                dst.len()
            )));
        }
        if self.src_size == 0 || self.dst_size == 0 {
            return Ok(());
        }
        let pairs = src.chunks_exact(self.src_size).zip(dst.chunks_exact_mut(self.dst_size)).take(n);
        for (s, d) in pairs {
            for step in &self.steps {
                apply(step, s, d);
            }
        }
        Ok(())
    }
}

fn apply(step: &Step, s: &[u8], d: &mut [u8]) {
    match step {
        Step::Copy { src, dst, len } => d[*dst..*dst + len].copy_from_slice(&s[*src..*src + len]),
        Step::String { src, dst, len, padding } => {
            normalize_string(&s[*src..*src + len], &mut d[*dst..*dst + len], *padding)
        }
        Step::Bits { src, dst, len, order, signed, bit_offset, precision } => {
            extract_bits(&s[*src..*src + len], &mut d[*dst..*dst + len], *order, *signed, *bit_offset, *precision)
        }
        Step::Bool { src, dst, base } => d[*dst] = bool_byte(base.decode_integer(&s[*src..*src + base.size])),
        Step::Float { src, dst, len, layout, target } => {
            float_convert::convert(layout, target, &s[*src..*src + len], &mut d[*dst..*dst + target.size()])
        }
    }
}

/// Bounds the plan of one element (array types can claim billions of members).
const MAX_STEPS: usize = 1 << 20;

fn push_shifted(steps: &mut Vec<Step>, step: &Step, by_src: usize, by_dst: usize) {
    let mut step = step.clone();
    match &mut step {
        Step::Copy { src, dst, len } => return push_copy(steps, *src + by_src, *dst + by_dst, *len),
        Step::String { src, dst, .. }
        | Step::Bits { src, dst, .. }
        | Step::Bool { src, dst, .. }
        | Step::Float { src, dst, .. } => {
            *src += by_src;
            *dst += by_dst;
        }
    }
    steps.push(step);
}

fn push_copy(steps: &mut Vec<Step>, src: usize, dst: usize, len: usize) {
    if let Some(Step::Copy { src: ps, dst: pd, len: pl }) = steps.last_mut() {
        if *ps + *pl == src && *pd + *pl == dst {
            *pl += len;
            return;
        }
    }
    steps.push(Step::Copy { src, dst, len });
}

/// Append the steps converting one element of `dt` at `src` (file) to `dst` (numpy).
fn plan(dt: &Datatype, src: usize, dst: usize, steps: &mut Vec<Step>) -> Result<()> {
    if is_identity(dt) && numpy_itemsize(dt)? == dt.size {
        push_copy(steps, src, dst, dt.size);
        return Ok(());
    }
    let len = dt.size;
    match &dt.class {
        DatatypeClass::FixedPoint { order, bit_offset, precision, .. }
        | DatatypeClass::Bitfield { order, bit_offset, precision } => {
            check_bits(len, *bit_offset, *precision)?;
            let signed = matches!(dt.class, DatatypeClass::FixedPoint { signed: true, .. });
            steps.push(Step::Bits { src, dst, len, order: *order, signed, bit_offset: *bit_offset, precision: *precision });
        }
        DatatypeClass::String { padding, .. } => steps.push(Step::String { src, dst, len, padding: *padding }),
        DatatypeClass::FloatingPoint(layout) => {
            float_convert::check_source(layout, len)?;
            let target = TargetFloat::for_numpy(numpy_itemsize(dt)?)?;
            steps.push(Step::Float { src, dst, len, layout: *layout, target });
        }
        DatatypeClass::Enum { base, .. } if is_bool_enum(dt) => {
            steps.push(Step::Bool { src, dst, base: (**base).clone() })
        }
        DatatypeClass::Enum { base, .. } => plan(base, src, dst, steps)?,
        DatatypeClass::Compound { members } => match complex_parts(dt) {
            // numpy complex: real part then imaginary part, packed.
            Some(_) => {
                let part = numpy_itemsize(&members[0].datatype)?;
                for (k, m) in members.iter().enumerate() {
                    plan(&m.datatype, src + m.offset as usize, dst + k * part, steps)?;
                }
            }
            // Structured: same offsets and itemsize as HDF5, fields converted in place.
            None => {
                for m in members {
                    plan(&m.datatype, src + m.offset as usize, dst + m.offset as usize, steps)?;
                }
            }
        },
        DatatypeClass::Array { base, .. } | DatatypeClass::Complex { base } => {
            // Plan one element of the base and repeat it.
            let out = numpy_itemsize(base)?;
            let mut one = Vec::new();
            plan(base, 0, 0, &mut one)?;
            for i in 0..dt.size / base.size.max(1) {
                if steps.len() + one.len() > MAX_STEPS {
                    return Err(Error::unsupported(format!("converting {}-byte array elements", dt.size)));
                }
                one.iter().for_each(|step| push_shifted(steps, step, src + i * base.size, dst + i * out));
            }
        }
        _ => return Err(Error::unsupported(format!("reading {:?} elements", ClassName(dt)))),
    }
    Ok(())
}

fn check_bits(len: usize, bit_offset: u16, precision: u16) -> Result<()> {
    if len > 8 || precision == 0 || bit_offset as usize + precision as usize > len * 8 {
        return Err(Error::unsupported(format!("{}-bit integer at bit {} in {} bytes", precision, bit_offset, len)));
    }
    Ok(())
}

/// libhdf5 converts enum to enum by member name; values outside the enum become all ones.
fn bool_byte(value: i128) -> u8 {
    match value {
        0 => 0,
        1 => 1,
        _ => 0xff,
    }
}

/// Like libhdf5's string conversion to a null-padded type: copy up to the first NUL
/// (null-terminated / null-padded source) or without trailing spaces (space-padded),
/// then fill with NULs.
fn normalize_string(src: &[u8], dst: &mut [u8], padding: StringPadding) {
    let len = match padding {
        StringPadding::SpacePad => src.len() - src.iter().rev().take_while(|&&b| b == b' ').count(),
        _ => src.iter().position(|&b| b == 0).unwrap_or(src.len()),
    };
    dst[..len].copy_from_slice(&src[..len]);
    dst[len..].fill(0);
}

/// An integer stored in `precision` bits at `bit_offset` (checked by `check_bits`):
/// shifted down, masked and sign-extended to the full width, in the same byte order.
fn extract_bits(src: &[u8], dst: &mut [u8], order: ByteOrder, signed: bool, bit_offset: u16, precision: u16) {
    let raw = crate::format::datatype::decode_int(src, order, false) as u64;
    let mut v = (raw >> bit_offset) & (u64::MAX >> (64 - precision as u32));
    if signed && precision < 64 && (v >> (precision - 1)) & 1 == 1 {
        v |= u64::MAX << precision;
    }
    let bytes = v.to_le_bytes();
    for (i, out) in dst.iter_mut().enumerate() {
        *out = match order {
            ByteOrder::Big => bytes[src.len() - 1 - i],
            _ => bytes[i],
        };
    }
}

/// Debug name of a type's class, for messages.
struct ClassName<'a>(&'a Datatype);

impl std::fmt::Debug for ClassName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.0.class {
            DatatypeClass::Time { .. } => "time",
            DatatypeClass::Reference { .. } => "reference",
            DatatypeClass::VarLen { .. } => "variable-length",
            DatatypeClass::FloatingPoint(_) => "non-IEEE floating-point",
            DatatypeClass::Opaque { .. } => "opaque (NUMPY-tagged, size-mismatched)",
            _ => "these",
        };
        f.write_str(name)
    }
}

// ---------------------------------------------------------------------------
// Variable-length data
// ---------------------------------------------------------------------------

/// One element of a type with variable-length parts, as byte buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VlenValue {
    /// A part without vlen data, in numpy layout (its numpy itemsize); object and
    /// region references are their raw stored bytes.
    Fixed(Vec<u8>),
    /// A vlen string's bytes up to the first NUL (h5py builds them from a C string);
    /// the bindings decode UTF-8 where the dtype says `vlen=str`.
    String(Vec<u8>),
    /// A vlen sequence of `count` elements without vlen parts, in numpy layout of the
    /// base dtype: the bindings make a 1-d numpy array of
    /// `numpy_dtype::vlen_element_dtype(base)` from it (h5py's labelling, see there).
    Sequence { count: usize, bytes: Vec<u8> },
    /// A vlen sequence whose elements have vlen parts: one value per element.
    NestedSequence(Vec<VlenValue>),
    /// A compound with vlen or reference fields: one value per field, in the order of
    /// the fields of its `NumpyDtype::Structured` (h5py's order).
    Compound(Vec<VlenValue>),
    /// An array type with vlen parts: one value per array element, C order.
    Array(Vec<VlenValue>),
}

/// Resolve `n` stored elements of `dtype` (raw file layout in `raw`) that contain
/// vlen parts, reading their heap objects through `heap`.
pub fn resolve_vlen_elements(
    ctx: &FormatContext,
    heap: &GlobalHeapCache,
    dtype: &Datatype,
    raw: &[u8],
    n: usize,
) -> Result<Vec<VlenValue>> {
    resolve_vlen_elements_on(ctx, heap, dtype, raw, n, 1)
}

/// Elements resolved by one thread at a time when a read is shared out.
const RESOLVE_BLOCK: usize = 16384;

/// resolve_vlen_elements on `threads` threads of the engine's pool (blocks of elements
/// in parallel, each with a resolver of its own; the heap cache is shared).
pub fn resolve_vlen_elements_on(
    ctx: &FormatContext,
    heap: &GlobalHeapCache,
    dtype: &Datatype,
    raw: &[u8],
    n: usize,
    threads: usize,
) -> Result<Vec<VlenValue>> {
    check_elements(dtype, raw, n)?;
    let plan = Plan::new(dtype, 0)?;
    // One vector for all the values, had (or refused) before any is made, and filled in
    // place block by block: no second copy, and no memory limit met half way, where
    // another thread's small allocation would abort the program.
    let mut values = vec_with_capacity(n, "the selected values")?;
    values.resize_with(n, || VlenValue::Fixed(Vec::new()));
    let resolve = |first: usize, out: &mut [VlenValue]| -> Result<()> {
        let mut resolver = Resolver::new(ctx, heap);
        for (i, slot) in (first..).zip(out.iter_mut()) {
            *slot = resolver.element(&plan, &raw[i * dtype.size..(i + 1) * dtype.size])?;
        }
        Ok(())
    };
    match block_pool(n, threads)? {
        None => resolve(0, &mut values)?,
        Some(pool) => pool.install(|| {
            values.par_chunks_mut(RESOLVE_BLOCK).enumerate().try_for_each(|(b, out)| resolve(b * RESOLVE_BLOCK, out))
        })?,
    }
    Ok(values)
}

/// `raw` holds `n` stored elements of `dtype`.
pub(crate) fn check_elements(dtype: &Datatype, raw: &[u8], n: usize) -> Result<()> {
    if n.checked_mul(dtype.size).map_or(true, |b| b > raw.len()) {
        return Err(Error::invalid_argument(format!("{} elements of {} bytes exceed the {} given", n, dtype.size, raw.len())));
    }
    Ok(())
}

/// `resolve(first, count)` over `n` elements: in one piece, or, when there are enough,
/// in blocks of RESOLVE_BLOCK on `threads` threads of the engine's pool. The pieces
/// come back in order.
pub(crate) fn in_blocks<T: Send>(n: usize, threads: usize, resolve: impl Fn(usize, usize) -> Result<T> + Sync) -> Result<Vec<T>> {
    let Some(pool) = block_pool(n, threads)? else { return Ok(vec![resolve(0, n)?]) };
    pool.install(|| {
        (0..n.div_ceil(RESOLVE_BLOCK))
            .into_par_iter()
            .map(|b| resolve(b * RESOLVE_BLOCK, RESOLVE_BLOCK.min(n - b * RESOLVE_BLOCK)))
            .collect()
    })
}

/// The engine's pool to resolve `n` elements on in blocks of RESOLVE_BLOCK, or None
/// when one piece on the calling thread is better (one thread, or too few blocks).
fn block_pool(n: usize, threads: usize) -> Result<Option<std::sync::Arc<rayon::ThreadPool>>> {
    let pool_threads = pool::Threads::resolve(threads);
    if pool_threads.get() < 2 || n < 2 * RESOLVE_BLOCK {
        return Ok(None);
    }
    pool::get(pool_threads).map(Some)
}

/// Types nest vlen data inside vlen data (a sequence of sequences); bound the depth.
const MAX_VLEN_DEPTH: usize = 32;

/// How the elements of one type are resolved, worked out once per read: no type is
/// inspected and no conversion planned element by element.
pub(crate) enum Plan {
    String,
    /// A sequence whose base has no vlen parts: its bytes converted to numpy layout.
    Sequence { base_size: usize, convert: ElementConverter },
    /// A sequence whose base has vlen parts: each base element resolved.
    NestedSequence { base_size: usize, base: Box<Plan> },
    /// Fields in h5py's order (see numpy_dtype::memory_layout): offset, size, plan.
    Compound(Vec<(usize, usize, Plan)>),
    /// An array type with vlen parts: items of `size` bytes, as many as the element holds.
    Array { size: usize, item: Box<Plan> },
    /// References: their stored bytes.
    Stored,
    /// No vlen parts: converted to numpy layout.
    Fixed(ElementConverter),
}

impl Plan {
    pub(crate) fn new(dt: &Datatype, depth: usize) -> Result<Plan> {
        if depth >= MAX_VLEN_DEPTH {
            return Err(Error::format(format!("vlen data nested deeper than {} levels", MAX_VLEN_DEPTH)));
        }
        Ok(match &dt.class {
            DatatypeClass::VarLen { kind: VlenKind::String { .. }, .. } => Plan::String,
            DatatypeClass::VarLen { kind: VlenKind::Sequence, base } if has_objects(base) => {
                Plan::NestedSequence { base_size: base.size, base: Box::new(Plan::new(base, depth + 1)?) }
            }
            DatatypeClass::VarLen { kind: VlenKind::Sequence, base } => {
                Plan::Sequence { base_size: base.size, convert: ElementConverter::new(base)? }
            }
            DatatypeClass::Compound { members } if has_objects(dt) => {
                let layout = memory_layout(dt).map(|l| l.fields).unwrap_or_default();
                let fields = layout.iter().map(|&(index, _)| {
                    let m = &members[index];
                    Ok((m.offset as usize, m.datatype.size, Plan::new(&m.datatype, depth + 1)?))
                });
                Plan::Compound(fields.collect::<Result<_>>()?)
            }
            DatatypeClass::Array { base, .. } if has_objects(dt) => {
                Plan::Array { size: base.size, item: Box::new(Plan::new(base, depth + 1)?) }
            }
            DatatypeClass::Reference { .. } => Plan::Stored,
            _ => Plan::Fixed(ElementConverter::new(dt)?),
        })
    }
}

/// `n` elements of `src` converted to numpy layout (checked to be there).
fn converted(convert: &ElementConverter, src: &[u8], n: usize) -> Result<Vec<u8>> {
    let (src_size, dst_size) = (convert.src_size, convert.dst_size);
    let need = n.checked_mul(src_size).filter(|&b| b <= src.len()).ok_or_else(|| {
        Error::format(format!("{} elements of {} bytes, but only {} bytes hold them", n, src_size, src.len()))
    })?;
    if convert.is_copy() {
        return Ok(src[..need].to_vec());
    }
    let mut out = vec![0u8; n * dst_size];
    convert.convert(src, &mut out, n)?;
    Ok(out)
}

/// Collections a resolver keeps at hand.
const RECENT: usize = 8;

pub(crate) struct Resolver<'a> {
    ctx: &'a FormatContext,
    heap: &'a GlobalHeapCache,
    /// The collections the last elements lay in, latest first: neighbours usually
    /// share one, and the fields of a record often lie in as many collections (libhdf5
    /// writes a compound field by field). No lock and no map lookup for them.
    recent: Vec<(u64, Arc<Collection>)>,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(ctx: &'a FormatContext, heap: &'a GlobalHeapCache) -> Self {
        Resolver { ctx, heap, recent: Vec::with_capacity(RECENT) }
    }

    pub(crate) fn element(&mut self, plan: &Plan, raw: &[u8]) -> Result<VlenValue> {
        match plan {
            Plan::String => self.string(raw),
            Plan::Sequence { base_size, convert } => {
                let (count, bytes) = self.sequence_bytes(*base_size, raw)?;
                Ok(VlenValue::Sequence { count, bytes: converted(convert, bytes, count)? })
            }
            Plan::NestedSequence { base_size, base } => {
                let (count, bytes) = self.sequence_bytes(*base_size, raw)?;
                let bytes = bytes.to_vec();
                let items = bytes.chunks_exact((*base_size).max(1)).take(count).map(|item| self.element(base, item));
                Ok(VlenValue::NestedSequence(items.collect::<Result<_>>()?))
            }
            Plan::Compound(fields) => {
                let values = fields.iter().map(|(offset, size, field)| {
                    let part = raw.get(*offset..offset + size).ok_or_else(|| Error::format("a compound member outside its element"))?;
                    self.element(field, part)
                });
                Ok(VlenValue::Compound(values.collect::<Result<_>>()?))
            }
            Plan::Array { size, item } => {
                let items = raw.chunks_exact((*size).max(1)).map(|e| self.element(item, e));
                Ok(VlenValue::Array(items.collect::<Result<_>>()?))
            }
            Plan::Stored => Ok(VlenValue::Fixed(raw.to_vec())),
            Plan::Fixed(convert) => Ok(VlenValue::Fixed(converted(convert, raw, 1)?)),
        }
    }

    fn string(&mut self, raw: &[u8]) -> Result<VlenValue> {
        Ok(VlenValue::String(self.string_bytes(raw)?.to_vec()))
    }

    /// A vlen string's bytes. The stored length counts bytes; h5py then stops at the
    /// first NUL (C string).
    pub(crate) fn string_bytes(&mut self, raw: &[u8]) -> Result<&[u8]> {
        let vref = VlenRef::parse(self.ctx, raw)?;
        if vref.is_empty() {
            return Ok(&[]);
        }
        let length = vref.length as usize;
        let bytes = self.heap_bytes(vref)?;
        if bytes.len() < length {
            return Err(Error::format(format!(
                "vlen string of {} bytes, but its heap object holds {}",
                length,
                bytes.len()
            )));
        }
        let text = &bytes[..length];
        Ok(&text[..text.iter().position(|&b| b == 0).unwrap_or(length)])
    }

    /// The bytes of the heap object a vlen element refers to (empty for none).
    fn heap_bytes(&mut self, vref: VlenRef) -> Result<&[u8]> {
        let Some(address) = vref.collection.filter(|_| vref.length > 0) else { return Ok(&[]) };
        match self.recent.iter().position(|(a, _)| *a == address) {
            Some(0) => {}
            Some(at) => self.recent[..=at].rotate_right(1),
            None => {
                let collection = self.heap.collection(self.ctx, address)?;
                self.recent.truncate(RECENT - 1);
                self.recent.insert(0, (address, collection));
            }
        }
        let (_, collection) = &self.recent[0];
        collection.object(vref.index).map_err(|e| e.at(address))
    }

    /// A sequence's element count and its heap bytes (checked to hold them).
    fn sequence_bytes(&mut self, base_size: usize, raw: &[u8]) -> Result<(usize, &[u8])> {
        let vref = VlenRef::parse(self.ctx, raw)?;
        let count = if vref.is_empty() { 0 } else { vref.length as usize };
        let bytes = self.heap_bytes(vref)?;
        let need = count.checked_mul(base_size).filter(|&b| b <= bytes.len()).ok_or_else(|| {
            Error::format(format!(
                "vlen sequence of {} {}-byte elements, but its heap object holds {} bytes",
                count,
                base_size,
                bytes.len()
            ))
        })?;
        Ok((count, &bytes[..need]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::reader::Sizes;

    fn parse(m: &[u8]) -> Datatype {
        Datatype::parse(m, 0, Sizes::DEFAULT).unwrap()
    }

    /// {s: 4-byte null-terminated string @0, v: <i2 @4}, size 6, version 3 encoding.
    fn record() -> Datatype {
        let mut m = vec![0x36, 2, 0, 0, 6, 0, 0, 0];
        m.extend_from_slice(b"s\0\0");
        m.extend_from_slice(&[0x13, 0, 0, 0, 4, 0, 0, 0]);
        m.extend_from_slice(b"v\0\x04");
        m.extend_from_slice(&[0x10, 0x08, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0]);
        parse(&m)
    }

    #[test]
    fn plans_merge_copies_and_convert_strings_in_records() {
        let dt = record();
        assert!(!is_identity(&dt));
        let conv = ElementConverter::new(&dt).unwrap();
        assert_eq!(conv.sizes(), (6, 6));
        assert!(!conv.is_copy());
        let src = [b'a', 0, b'x', b'y', 5, 0, b'b', b'c', b'd', b'e', 0xff, 0xff];
        let out = to_numpy_bytes(&dt, &src, 2).unwrap();
        assert_eq!(out, [b'a', 0, 0, 0, 5, 0, b'b', b'c', b'd', b'e', 0xff, 0xff]);
        assert!(to_numpy_bytes(&dt, &src, 3).is_err());
        let int = parse(&[0x10, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 32, 0]);
        assert!(ElementConverter::new(&int).unwrap().is_copy());
    }

    #[test]
    fn partial_precision_integers_are_sign_extended() {
        // 4-bit signed integer at bit 2 of a big-endian 16-bit field.
        let dt = parse(&[0x10, 0x09, 0, 0, 2, 0, 0, 0, 2, 0, 4, 0]);
        assert_eq!(to_numpy_bytes(&dt, &[0x00, 0x3c, 0xff, 0x1c], 2).unwrap(), [0xff, 0xff, 0x00, 0x07]);
        let bad = parse(&[0x10, 0x08, 0, 0, 2, 0, 0, 0, 12, 0, 8, 0]);
        assert!(to_numpy_bytes(&bad, &[0, 0], 1).is_err());
    }
}
