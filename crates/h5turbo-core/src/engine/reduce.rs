//! Reductions (sum, min, max, non-zero count, mean/variance moments) over a
//! selection, chunk by chunk, without materialising the array.
//!
//! The plan is the read plan (same batches, same decode). A chunk is first reduced
//! into a small chunk-local array (one cell per output position the chunk feeds),
//! then merged: float sums become two-level (better rounding than one running sum) and
//! variances are combined from per-chunk (count, mean, M2) with Chan et al.'s formula.
//! Where the order of merges cannot change the result (integer sums, counts, integer
//! minima and maxima) each thread merges into a partial of its own, and the partials
//! are merged at the end. Float results are merged in the plan's chunk order instead
//! (`OrderedMerge`), so they are the same bits on every run and thread count.
//! Memory: per thread, the batch read buffer, one decoded chunk and the chunk-local
//! cells; one partial per thread, or the output plus at most `MAX_WAITING_BYTES` of
//! chunk cells waiting their turn; whatever the dataset size.

use super::execute::{advance, Scratch};
use super::plan::{make_plan, strides, ChunkTask, Geometry};
use super::selection::{AxisPiece, InChunk};
use super::{pool, ArraySource, AxisSelection};
use crate::error::{Error, Result};
use super::ahead::Handout;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// What the stored elements are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementKind {
    pub class: NumberClass,
    /// Bytes per element: 1, 2, 4 or 8 (floats: 4 or 8).
    pub size: usize,
    pub big_endian: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberClass {
    Signed,
    Unsigned,
    Float,
}

/// The reduction to compute per output cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// Wrapping 64-bit integer sum (numpy's integer sum; floats truncated first).
    SumInt,
    /// Exact integer sum in 128 bits (no 64-bit element sum can overflow it before
    /// 2^63 elements): for callers that give the total as a double, and a mean exact
    /// to its rounding whatever the thread count.
    SumExact,
    /// Sum accumulated in f64.
    SumFloat,
    Min,
    Max,
    CountNonzero,
    /// Count, mean and sum of squared deviations (variance = m2 / (count - ddof)).
    Moments,
}

/// Per output cell (row-major over the selection's shape with reduced axes of length 1).
#[derive(Debug, Clone, PartialEq)]
pub enum Reduced {
    Int(Vec<i64>),
    Exact(Vec<i128>),
    Float(Vec<f64>),
    /// Min/max in the element type, native byte order.
    Native(Vec<u8>),
    Count(Vec<u64>),
    Moments { count: Vec<u64>, mean: Vec<f64>, m2: Vec<f64> },
}

/// Reduce the selection `sel` of `src` along the axes where `reduce_axis` is true.
pub fn reduce_selection(
    src: &ArraySource,
    kind: ElementKind,
    sel: &[AxisSelection],
    reduce_axis: &[bool],
    op: ReduceOp,
    threads: usize,
) -> Result<Reduced> {
    reduce_with_limits(src, kind, sel, reduce_axis, op, threads, Limits::default())
}

/// Turns `n` stored elements (`src`, n x the stored element size) into `n` elements of
/// the reduction's `ElementKind` (`dst`, n x its size): for stored types that read as
/// another number type (integers using fewer bits than their size, float layouts
/// widened to a standard float).
pub type Convert<'a> = &'a (dyn Fn(&[u8], &mut [u8], usize) -> Result<()> + Sync);

/// `reduce_selection` of elements converted by `convert` to `kind` before they are
/// reduced (reads convert them the same way).
pub fn reduce_converted(
    src: &ArraySource,
    kind: ElementKind,
    convert: Convert,
    sel: &[AxisSelection],
    reduce_axis: &[bool],
    op: ReduceOp,
    threads: usize,
) -> Result<Reduced> {
    reduce_inner(src, kind, Some(convert), sel, reduce_axis, op, threads, Limits::default())
}

/// The bounds of a fixed-order merge (see `OrderedMerge`); tests take them to extremes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Chunk results that may wait for their turn.
    pub max_waiting_bytes: usize,
    /// Output cells per shard, at least.
    pub min_shard_cells: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_waiting_bytes: MAX_WAITING_BYTES, min_shard_cells: MIN_SHARD_CELLS }
    }
}

/// `reduce_selection` with chosen merge limits.
pub(super) fn reduce_with_limits(
    src: &ArraySource,
    kind: ElementKind,
    sel: &[AxisSelection],
    reduce_axis: &[bool],
    op: ReduceOp,
    threads: usize,
    limits: Limits,
) -> Result<Reduced> {
    reduce_inner(src, kind, None, sel, reduce_axis, op, threads, limits)
}

#[allow(clippy::too_many_arguments)]
fn reduce_inner(
    src: &ArraySource,
    kind: ElementKind,
    convert: Option<Convert>,
    sel: &[AxisSelection],
    reduce_axis: &[bool],
    op: ReduceOp,
    threads: usize,
    limits: Limits,
) -> Result<Reduced> {
    // Converted elements have the kind's size, whatever the stored size.
    check_kind(kind, if convert.is_some() { kind.size } else { src.element_size })?;
    if reduce_axis.len() != sel.len() {
        return Err(Error::invalid_argument("reduce_axis needs one flag per axis"));
    }
    let geom = Geometry::new(src.dims, src.chunk_dims, src.element_size, sel)?;
    let mut job = Job::new(src, kind, &geom, reduce_axis, limits)?;
    job.convert = convert;
    match (kind.class, kind.size) {
        (NumberClass::Signed, 1) => by_op::<i8>(&job, op, threads),
        (NumberClass::Signed, 2) => by_op::<i16>(&job, op, threads),
        (NumberClass::Signed, 4) => by_op::<i32>(&job, op, threads),
        (NumberClass::Signed, 8) => by_op::<i64>(&job, op, threads),
        (NumberClass::Unsigned, 1) => by_op::<u8>(&job, op, threads),
        (NumberClass::Unsigned, 2) => by_op::<u16>(&job, op, threads),
        (NumberClass::Unsigned, 4) => by_op::<u32>(&job, op, threads),
        (NumberClass::Unsigned, 8) => by_op::<u64>(&job, op, threads),
        (NumberClass::Float, 2) => by_op::<Half>(&job, op, threads),
        (NumberClass::Float, 4) => by_op::<f32>(&job, op, threads),
        (NumberClass::Float, 8) => by_op::<f64>(&job, op, threads),
        _ => Err(Error::unsupported(format!("reductions of {:?} elements of {} bytes", kind.class, kind.size))),
    }
}

fn check_kind(kind: ElementKind, element_size: usize) -> Result<()> {
    let sizes: &[usize] = if kind.class == NumberClass::Float { &[2, 4, 8] } else { &[1, 2, 4, 8] };
    if kind.size != element_size || !sizes.contains(&kind.size) {
        return Err(Error::unsupported(format!(
            "reductions of {:?} elements of {} bytes (stored elements have {})",
            kind.class, kind.size, element_size
        )));
    }
    Ok(())
}

fn by_op<T: Element>(job: &Job, op: ReduceOp, threads: usize) -> Result<Reduced> {
    Ok(match op {
        ReduceOp::SumInt => Reduced::Int(run::<T, SumInt>(job, threads)?.into_iter().map(|a| a.0).collect()),
        ReduceOp::SumExact => Reduced::Exact(run::<T, SumExact>(job, threads)?.into_iter().map(|a| a.0).collect()),
        ReduceOp::SumFloat => Reduced::Float(run::<T, SumFloat>(job, threads)?.into_iter().map(|a| a.0).collect()),
        ReduceOp::Min => Reduced::Native(native_bytes(run::<T, Min<T>>(job, threads)?.into_iter().map(|a| a.0))),
        ReduceOp::Max => Reduced::Native(native_bytes(run::<T, Max<T>>(job, threads)?.into_iter().map(|a| a.0))),
        ReduceOp::CountNonzero => Reduced::Count(run::<T, Count>(job, threads)?.into_iter().map(|a| a.0).collect()),
        ReduceOp::Moments => {
            let cells = run::<T, Moments>(job, threads)?;
            Reduced::Moments {
                count: cells.iter().map(|m| m.count).collect(),
                mean: cells.iter().map(|m| m.mean).collect(),
                m2: cells.iter().map(|m| m.m2).collect(),
            }
        }
    })
}

fn native_bytes<T: Element>(values: impl Iterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::new();
    values.for_each(|v| v.store(&mut out));
    out
}

// ------------------------------------------------------------------ element types

/// A stored number, loaded from native-order bytes.
trait Element: Copy + Send + Sync + PartialOrd + 'static {
    const SIZE: usize;
    /// Loads from exactly SIZE bytes.
    fn load(bytes: &[u8]) -> Self;
    fn store(self, out: &mut Vec<u8>);
    fn to_f64(self) -> f64;
    /// Integers: two's-complement bits (unsigned 64-bit wraps, as numpy's uint64
    /// sum does modulo 2^64); floats: truncated toward zero, saturating.
    fn to_i64(self) -> i64;
    /// Integers: the value; floats: truncated toward zero, saturating.
    fn to_i128(self) -> i128;
    fn is_nonzero(self) -> bool;
    fn is_nan(self) -> bool;
    const IS_FLOAT: bool;
    /// Identities of min and max.
    const HIGHEST: Self;
    const LOWEST: Self;
}

/// `Element` for a numeric type: min/max identities, its zero, and whether it has NaNs
/// (NaN != 0 counts as non-zero, as in numpy).
macro_rules! element {
    ($t:ty, $highest:expr, $lowest:expr, $zero:expr, $nan:expr, $float:expr) => {
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const IS_FLOAT: bool = $float;
            const HIGHEST: Self = $highest;
            const LOWEST: Self = $lowest;
            #[inline(always)]
            fn load(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_ne_bytes(a)
            }
            fn store(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes())
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != $zero
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                let has_nan: fn($t) -> bool = $nan;
                has_nan(self)
            }
        }
    };
}

macro_rules! int_elements {
    ($($t:ty),*) => {$( element!($t, <$t>::MAX, <$t>::MIN, 0, |_| false, false); )*};
}
int_elements!(i8, i16, i32, i64, u8, u16, u32, u64);
element!(f32, f32::INFINITY, f32::NEG_INFINITY, 0.0, f32::is_nan, true);
element!(f64, f64::INFINITY, f64::NEG_INFINITY, 0.0, f64::is_nan, true);

/// An IEEE half-precision float (numpy's float16), reduced through its f32 value.
#[derive(Clone, Copy, Debug)]
struct Half(u16);

impl Half {
    fn to_f32(self) -> f32 {
        half_to_f32(self.0)
    }
}

/// The value of an IEEE half-precision float (its bits).
pub fn half_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f32::from(bits & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1024.0 + mantissa) * 2f32.powi(e - 25),
    }
}

impl PartialEq for Half {
    fn eq(&self, other: &Self) -> bool {
        self.to_f32() == other.to_f32()
    }
}

impl PartialOrd for Half {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.to_f32().partial_cmp(&other.to_f32())
    }
}

impl Element for Half {
    const SIZE: usize = 2;
    const IS_FLOAT: bool = true;
    const HIGHEST: Self = Half(0x7c00); // +inf
    const LOWEST: Self = Half(0xfc00); // -inf
    fn load(bytes: &[u8]) -> Self {
        Half(u16::from_ne_bytes([bytes[0], bytes[1]]))
    }
    fn store(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_ne_bytes())
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
    fn to_i64(self) -> i64 {
        self.to_f32() as i64
    }
    fn to_i128(self) -> i128 {
        self.to_f32() as i128
    }
    fn is_nonzero(self) -> bool {
        self.to_f32() != 0.0
    }
    fn is_nan(self) -> bool {
        self.to_f32().is_nan()
    }
}

// ------------------------------------------------------------------ accumulators

/// One output cell's running state.
trait Cell: Copy + Send + Sync + 'static {
    fn identity() -> Self;
    fn merge(&mut self, other: &Self);
}

/// A cell that takes elements of type `T`.
trait Acc<T>: Cell {
    /// Whether the result depends on the order in which partial results meet (float
    /// addition is not associative; the sign of a zero minimum is the first one seen).
    const ORDER_MATTERS: bool;
    fn add(&mut self, x: T);
    /// `n` elements of value `x` (the fill value of an unwritten chunk), computed
    /// rather than added one by one.
    fn add_repeated(&mut self, x: T, n: u64);
}

#[derive(Clone, Copy)]
struct SumInt(i64);
impl Cell for SumInt {
    fn identity() -> Self {
        SumInt(0)
    }
    fn merge(&mut self, o: &Self) {
        self.0 = self.0.wrapping_add(o.0);
    }
}
impl<T: Element> Acc<T> for SumInt {
    const ORDER_MATTERS: bool = false;
    #[inline(always)]
    fn add(&mut self, x: T) {
        self.0 = self.0.wrapping_add(x.to_i64());
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        // Modulo 2^64, as n wrapping additions.
        self.0 = self.0.wrapping_add(x.to_i64().wrapping_mul(n as i64));
    }
}

#[derive(Clone, Copy)]
struct SumExact(i128);
impl Cell for SumExact {
    fn identity() -> Self {
        SumExact(0)
    }
    fn merge(&mut self, o: &Self) {
        self.0 = self.0.wrapping_add(o.0);
    }
}
impl<T: Element> Acc<T> for SumExact {
    const ORDER_MATTERS: bool = false;
    #[inline(always)]
    fn add(&mut self, x: T) {
        self.0 = self.0.wrapping_add(x.to_i128());
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        self.0 = self.0.wrapping_add(x.to_i128().wrapping_mul(i128::from(n)));
    }
}

#[derive(Clone, Copy)]
struct SumFloat(f64);
impl Cell for SumFloat {
    fn identity() -> Self {
        SumFloat(0.0)
    }
    fn merge(&mut self, o: &Self) {
        self.0 += o.0;
    }
}
impl<T: Element> Acc<T> for SumFloat {
    const ORDER_MATTERS: bool = true;
    #[inline(always)]
    fn add(&mut self, x: T) {
        self.0 += x.to_f64();
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        if n > 0 {
            self.0 += x.to_f64() * n as f64;
        }
    }
}

/// NaN wins, as in numpy's minimum/maximum.
#[derive(Clone, Copy)]
struct Min<T>(T);
impl<T: Element> Cell for Min<T> {
    fn identity() -> Self {
        Min(T::HIGHEST)
    }
    fn merge(&mut self, o: &Self) {
        Acc::<T>::add(self, o.0)
    }
}
impl<T: Element> Acc<T> for Min<T> {
    const ORDER_MATTERS: bool = T::IS_FLOAT;
    #[inline(always)]
    fn add(&mut self, x: T) {
        if (x < self.0 || x.is_nan()) && !self.0.is_nan() {
            self.0 = x;
        }
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        if n > 0 {
            Acc::<T>::add(self, x);
        }
    }
}

#[derive(Clone, Copy)]
struct Max<T>(T);
impl<T: Element> Cell for Max<T> {
    fn identity() -> Self {
        Max(T::LOWEST)
    }
    fn merge(&mut self, o: &Self) {
        Acc::<T>::add(self, o.0)
    }
}
impl<T: Element> Acc<T> for Max<T> {
    const ORDER_MATTERS: bool = T::IS_FLOAT;
    #[inline(always)]
    fn add(&mut self, x: T) {
        if (x > self.0 || x.is_nan()) && !self.0.is_nan() {
            self.0 = x;
        }
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        if n > 0 {
            Acc::<T>::add(self, x);
        }
    }
}

#[derive(Clone, Copy)]
struct Count(u64);
impl Cell for Count {
    fn identity() -> Self {
        Count(0)
    }
    fn merge(&mut self, o: &Self) {
        self.0 += o.0;
    }
}
impl<T: Element> Acc<T> for Count {
    const ORDER_MATTERS: bool = false;
    #[inline(always)]
    fn add(&mut self, x: T) {
        self.0 += x.is_nonzero() as u64;
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        if x.is_nonzero() {
            self.0 += n;
        }
    }
}

/// Welford within a chunk, Chan et al.'s pairwise combination across chunks.
#[derive(Clone, Copy, Debug)]
struct Moments {
    count: u64,
    mean: f64,
    m2: f64,
}
impl Cell for Moments {
    fn identity() -> Self {
        Moments { count: 0, mean: 0.0, m2: 0.0 }
    }
    fn merge(&mut self, o: &Self) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        let n = (self.count + o.count) as f64;
        let (na, nb) = (self.count as f64, o.count as f64);
        let delta = o.mean - self.mean;
        self.mean += delta * nb / n;
        self.m2 += o.m2 + delta * delta * na * nb / n;
        self.count += o.count;
    }
}
impl<T: Element> Acc<T> for Moments {
    const ORDER_MATTERS: bool = true;
    #[inline(always)]
    fn add(&mut self, x: T) {
        let x = x.to_f64();
        self.count += 1;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }
    fn add_repeated(&mut self, x: T, n: u64) {
        if n == 0 {
            return;
        }
        let x = x.to_f64();
        // n equal values: their mean, no spread (NaN once infinite or NaN, as Welford gives).
        let m2 = if x.is_finite() { 0.0 } else { f64::NAN };
        self.merge(&Moments { count: n, mean: x, m2 });
    }
}

// ------------------------------------------------------------------ the job

/// The geometry of one reduction.
struct Job<'a> {
    src: &'a ArraySource<'a>,
    geom: &'a Geometry,
    big_endian: bool,
    reduce_axis: Vec<bool>,
    /// Output strides (elements) per axis; 0 on reduced axes.
    out_strides: Vec<u64>,
    out_len: usize,
    /// Bounds of a fixed-order merge.
    limits: Limits,
    /// Stored elements to the kind's (None: they already are).
    convert: Option<Convert<'a>>,
}

impl<'a> Job<'a> {
    fn new(
        src: &'a ArraySource<'a>,
        kind: ElementKind,
        geom: &'a Geometry,
        reduce_axis: &[bool],
        limits: Limits,
    ) -> Result<Job<'a>> {
        if src.fill.len() != src.element_size {
            return Err(Error::invalid_argument("internal: fill value size differs from element size"));
        }
        let dims: Vec<u64> = geom.out_dims.iter().zip(reduce_axis).map(|(&n, &r)| if r { 1 } else { n }).collect();
        let mut out_strides = strides(&dims);
        for (s, &r) in out_strides.iter_mut().zip(reduce_axis) {
            if r {
                *s = 0;
            }
        }
        let out_len = super::plan::checked_product(&dims)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= isize::MAX as usize / 64)
            .ok_or_else(|| Error::invalid_argument("reduction output too large"))?;
        Ok(Job {
            src,
            geom,
            big_endian: kind.big_endian != cfg!(target_endian = "big"),
            reduce_axis: reduce_axis.to_vec(),
            out_strides,
            out_len,
            limits,
            convert: None,
        })
    }
}

fn run<T: Element, A: Acc<T>>(job: &Job, requested_threads: usize) -> Result<Vec<A>> {
    let pool_threads = pool::Threads::resolve(requested_threads);
    let mut threads = pool_threads.get();
    // Reductions consume whole decoded chunks: no narrowing of unfiltered reads.
    let plan = make_plan(job.geom, job.src.store, threads, false)?;
    // As for reads; the results do not depend on it.
    let work = (plan.chunk_count() as u64).saturating_mul(job.geom.chunk_bytes as u64);
    let inline = super::on_calling_thread(requested_threads, pool_threads, plan.chunk_count(), work);
    if inline {
        threads = 1;
    }
    // What unallocated chunks hold: their elements are counted, not materialised (a
    // chunk's size comes from the file and may be huge; a sparse dataset may have
    // millions of unwritten chunks).
    let mut fill_native = Vec::new();
    let fill = T::load(&numeric::<T>(job, job.src.fill, &mut fill_native)?[..T::SIZE]);
    let run = Run { job, plan: &plan, fill, threads };
    // Taken on the caller's thread, where a per-call window is set.
    let window = crate::io::read_ahead::window();
    let reduce = || match A::ORDER_MATTERS {
        true => run.in_fixed_order::<A>(window),
        false => run.per_thread::<A>(window),
    };
    if inline {
        return reduce();
    }
    pool::get(pool_threads)?.install(reduce)
}

/// One reduction's plan and what its chunks are read with.
struct Run<'a, T> {
    job: &'a Job<'a>,
    plan: &'a super::plan::Plan,
    /// The fill value, in native order.
    fill: T,
    threads: usize,
}

/// One thread's buffers.
struct ChunkBuffers<A> {
    local: Vec<A>,
    scratch: Scratch,
    swapped: Vec<u8>,
}

impl<A> Default for ChunkBuffers<A> {
    fn default() -> Self {
        ChunkBuffers { local: Vec::new(), scratch: Scratch::default(), swapped: Vec::new() }
    }
}

impl<'a, T: Element> Run<'a, T> {
    /// Each thread folds its chunks into a partial of its own; the partials are merged
    /// at the end. For operations whose result does not depend on the order.
    fn per_thread<A: Acc<T>>(&self, window: u64) -> Result<Vec<A>> {
        let job = self.job;
        let partials: Vec<Mutex<Option<Vec<A>>>> = (0..self.threads).map(|_| Mutex::new(None)).collect();
        let fold_into_partial = |task: &ChunkTask, local: &[A]| {
            let slot = rayon::current_thread_index().unwrap_or(0) % partials.len();
            let mut partial = lock(&partials[slot]);
            if partial.is_none() {
                *partial = Some(identity_cells(job.out_len)?);
            }
            if let Some(partial) = partial.as_mut() {
                merge_local(job, task, local, partial, 0);
            }
            Ok::<_, Error>(())
        };
        let parallel = self.threads > 1;
        let fold_fill = |buffers: &mut ChunkBuffers<A>, task: &ChunkTask| {
            self.fold_fill::<A>(task, buffers)?;
            fold_into_partial(task, &buffers.local)?;
            Ok::<_, Error>(())
        };
        if parallel {
            self.plan.fills.par_iter().try_for_each_init(ChunkBuffers::default, fold_fill)?;
        } else {
            // Off the pool (a small reduction runs on the caller's thread): no rayon.
            let mut buffers = ChunkBuffers::default();
            self.plan.fills.iter().try_for_each(|task| fold_fill(&mut buffers, task))?;
        }
        let handout = if parallel { Handout::Pool } else { Handout::Serial };
        super::ahead::for_each_batch(job.src.source, &self.plan.batches, window, handout, ChunkBuffers::default, |buffers, _, batch| {
            let ChunkBuffers { local, scratch, swapped } = buffers;
            scratch.for_each_decoded(job.src, job.geom, batch, |task, decoded| {
                fold_chunk::<T, A>(job, task, numeric::<T>(job, decoded, swapped)?, local)?;
                fold_into_partial(task, local)?;
                Ok(())
            })
        })?;
        combine(partials, job.out_len)
    }

    /// Every chunk's cells are merged into the result in the plan's order (unallocated
    /// chunks in grid order, then stored chunks in address order), whatever the thread
    /// count and timing: float sums and moments depend on the order their partials
    /// meet, and must come out the same on every run.
    fn in_fixed_order<A: Acc<T>>(&self, window: u64) -> Result<Vec<A>> {
        let job = self.job;
        let in_order = self.plan.fills.iter().chain(self.plan.batches.iter().flat_map(|b| &b.tasks)).collect();
        let merge = OrderedMerge::new(job, in_order, self.threads)?;
        let parallel = self.threads > 1;
        let first_of_batch: Vec<usize> = self
            .plan
            .batches
            .iter()
            .scan(self.plan.fills.len(), |next, b| {
                let first = *next;
                *next += b.tasks.len();
                Some(first)
            })
            .collect();
        super::ahead::for_each_in_order(&self.plan.fills, parallel, ChunkBuffers::default, |buffers, i, task| {
            merge.on_failure(|| {
                self.fold_fill::<A>(task, buffers)?;
                merge.deposit(i, &mut buffers.local);
                merge.wait_for_room();
                Ok(())
            })
        })?;
        let handout = if parallel { Handout::PoolInOrder } else { Handout::Serial };
        super::ahead::for_each_batch(job.src.source, &self.plan.batches, window, handout, ChunkBuffers::default, |buffers, b, batch| {
            let ChunkBuffers { local, scratch, swapped } = buffers;
            merge.on_failure(|| {
                let mut ordinal = first_of_batch[b];
                scratch.for_each_decoded(job.src, job.geom, batch, |task, decoded| {
                    fold_chunk::<T, A>(job, task, numeric::<T>(job, decoded, swapped)?, local)?;
                    merge.deposit(ordinal, local);
                    ordinal += 1;
                    Ok(())
                })?;
                merge.wait_for_room();
                Ok(())
            })
        })?;
        merge.into_result()
    }

    /// Fold an unallocated chunk (all fill value) into `buffers.local`.
    /// Every cell gets the fill value once per selected element of the chunk that feeds it
    /// (the product of the selected lengths on the reduced axes), computed, not folded.
    fn fold_fill<A: Acc<T>>(&self, task: &ChunkTask, buffers: &mut ChunkBuffers<A>) -> Result<()> {
        let job = self.job;
        let pieces = &job.geom.pieces;
        let cells = local_dims(job, task).iter().product::<u64>() as usize;
        let per_cell: u64 = (0..job.geom.rank())
            .filter(|&d| job.reduce_axis[d])
            .map(|d| pieces[d][task.pieces[d] as usize].in_chunk.len())
            .product();
        let local = &mut buffers.local;
        local.clear();
        reserve_cells(local, cells)?;
        local.resize(cells, A::identity());
        local.iter_mut().for_each(|cell| cell.add_repeated(self.fill, per_cell));
        Ok(())
    }
}

/// Merge the threads' partials into one result.
fn combine<A: Cell>(partials: Vec<Mutex<Option<Vec<A>>>>, out_len: usize) -> Result<Vec<A>> {
    let mut result: Option<Vec<A>> = None;
    for p in partials {
        let Some(partial) = p.into_inner().unwrap_or_else(|p| p.into_inner()) else { continue };
        match result.as_mut() {
            None => result = Some(partial),
            Some(r) => r.iter_mut().zip(&partial).for_each(|(a, b)| a.merge(b)),
        }
    }
    match result {
        Some(r) => Ok(r),
        None => identity_cells(out_len),
    }
}

/// Room for `n` more cells in `cells`, or an error: the number of output cells (and of a
/// chunk's cells) comes from the file's extents, and may be more than memory holds.
fn reserve_cells<A>(cells: &mut Vec<A>, n: usize) -> Result<()> {
    let refused = || {
        Error::out_of_memory(format!(
            "cannot allocate the reduction's {} cells ({} bytes each): reduce more axes or select less at a time",
            n,
            std::mem::size_of::<A>()
        ))
    };
    if !cells.len().checked_add(n).is_some_and(crate::buffer::fits_in_memory::<A>) {
        return Err(refused());
    }
    cells.try_reserve_exact(n).map_err(|_| refused())
}

/// `n` cells holding the identity, allocated fallibly.
fn identity_cells<A: Cell>(n: usize) -> Result<Vec<A>> {
    let mut cells = Vec::new();
    reserve_cells(&mut cells, n)?;
    cells.resize(n, A::identity());
    Ok(cells)
}

/// Waiting chunk results beyond which threads that finish a batch pause: the memory
/// the fixed order may hold, whatever the dataset size.
const MAX_WAITING_BYTES: usize = 64 << 20;

/// Output cells per shard of a fixed-order merge, at least: fewer would make every
/// chunk visit many shards for little work in each.
const MIN_SHARD_CELLS: usize = 4096;

/// Chunk results combined in their plan order, cell by cell. The output is cut into
/// shards, each with its own lock and its own place in the order, so while one thread
/// merges chunk k into shard 1 another merges chunk k + 1 into shard 0: a layout whose
/// chunks reduce to many cells (chunks of one row summed down the rows) merges on
/// several threads at once. Results that arrive before their turn wait in the shards;
/// a thread that finds more than the job's `max_waiting_bytes` waiting pauses before
/// taking more work. That cannot stall the read: work is handed out in plan order, so
/// the earliest chunk not yet handed over belongs to a batch some thread has taken and
/// not finished, and that thread is not paused.
struct OrderedMerge<'p, A> {
    job: &'p Job<'p>,
    /// The chunks in their order.
    tasks: Vec<&'p ChunkTask>,
    shards: Vec<Mutex<Shard<A>>>,
    /// Output cells per shard (the last may hold fewer).
    shard_len: usize,
    /// Bytes of chunk cells some shard has not merged yet.
    waiting_bytes: AtomicUsize,
    /// Emptied cell buffers, for reuse.
    spare: Mutex<Vec<Vec<A>>>,
    /// Set when a thread failed: nobody pauses any more.
    abandoned: Mutex<bool>,
    room: Condvar,
    /// Threads pausing for room: only then does a release wake anyone (a wake-up is a
    /// system call, too dear to make per chunk for nobody).
    pausing: AtomicUsize,
}

struct Shard<A> {
    cells: Vec<A>,
    /// The ordinal of the chunk whose turn it is in this shard.
    next: usize,
    /// Cells of chunks whose turn has not come, by ordinal.
    waiting: BTreeMap<usize, Arc<Vec<A>>>,
}

impl<'p, A: Cell> OrderedMerge<'p, A> {
    fn new(job: &'p Job<'p>, tasks: Vec<&'p ChunkTask>, threads: usize) -> Result<Self> {
        // Shards only pay when several threads merge: four per thread keeps them busy.
        let shards_wanted = if threads > 1 { 4 * threads } else { 1 };
        let shard_len = job.out_len.div_ceil(shards_wanted).max(job.limits.min_shard_cells).clamp(1, job.out_len.max(1));
        let shards = (0..job.out_len.div_ceil(shard_len).max(1))
            .map(|s| {
                let len = shard_len.min(job.out_len.saturating_sub(s * shard_len));
                Ok(Mutex::new(Shard { cells: identity_cells(len)?, next: 0, waiting: BTreeMap::new() }))
            })
            .collect::<Result<_>>()?;
        Ok(OrderedMerge {
            job,
            tasks,
            shards,
            shard_len,
            waiting_bytes: AtomicUsize::new(0),
            spare: Mutex::new(Vec::new()),
            abandoned: Mutex::new(false),
            room: Condvar::new(),
            pausing: AtomicUsize::new(0),
        })
    }

    /// Hand over the cells of chunk `ordinal` (`local`, which gets an empty buffer
    /// back): merged into every shard whose turn it is, left waiting in the others.
    fn deposit(&self, ordinal: usize, local: &mut Vec<A>) {
        let empty = lock(&self.spare).pop().unwrap_or_default();
        let cells = Arc::new(std::mem::replace(local, empty));
        self.waiting_bytes.fetch_add(cells.len() * std::mem::size_of::<A>(), Ordering::SeqCst);
        for (s, shard) in self.shards.iter().enumerate() {
            let mut shard = lock(shard);
            if shard.next != ordinal {
                shard.waiting.insert(ordinal, Arc::clone(&cells));
                continue;
            }
            self.merge_into(s, &mut shard.cells, ordinal, &cells);
            shard.next += 1;
            loop {
                let turn = shard.next;
                let Some(later) = shard.waiting.remove(&turn) else { break };
                self.merge_into(s, &mut shard.cells, turn, &later);
                shard.next += 1;
                self.release(later);
            }
        }
        self.release(cells);
    }

    /// Chunk `ordinal`'s cells that fall in shard `s`, merged into its cells.
    fn merge_into(&self, s: usize, shard_cells: &mut [A], ordinal: usize, cells: &[A]) {
        merge_local(self.job, self.tasks[ordinal], cells, shard_cells, s * self.shard_len);
    }

    /// Let go of one shard's hold on a chunk's cells; the last one counts them merged.
    fn release(&self, cells: Arc<Vec<A>>) {
        let Some(mut emptied) = Arc::into_inner(cells) else { return };
        self.waiting_bytes.fetch_sub(emptied.len() * std::mem::size_of::<A>(), Ordering::SeqCst);
        emptied.clear();
        let mut spare = lock(&self.spare);
        if spare.len() < 64 {
            spare.push(emptied);
        }
        drop(spare);
        // A thread that counted itself pausing before we lowered the count either sees
        // the new count or is waiting already (taking the lock orders us after its check).
        if self.pausing.load(Ordering::SeqCst) > 0 {
            drop(lock(&self.abandoned));
            self.room.notify_all();
        }
    }

    /// Pause while too many results wait for their turn.
    fn wait_for_room(&self) {
        let limit = self.job.limits.max_waiting_bytes;
        if self.waiting_bytes.load(Ordering::SeqCst) <= limit {
            return;
        }
        let mut abandoned = lock(&self.abandoned);
        self.pausing.fetch_add(1, Ordering::SeqCst);
        while self.waiting_bytes.load(Ordering::SeqCst) > limit && !*abandoned {
            abandoned = self.room.wait(abandoned).unwrap_or_else(|p| p.into_inner());
        }
        self.pausing.fetch_sub(1, Ordering::SeqCst);
    }

    /// Run `work`; if it fails or panics, release every paused thread (the result
    /// will never be complete).
    fn on_failure<R>(&self, work: impl FnOnce() -> Result<R>) -> Result<R> {
        struct AbandonOnUnwind<'m, 'p, A: Cell>(&'m OrderedMerge<'p, A>);
        impl<A: Cell> Drop for AbandonOnUnwind<'_, '_, A> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.abandon();
                }
            }
        }
        let _guard = AbandonOnUnwind(self);
        let result = work();
        if result.is_err() {
            self.abandon();
        }
        result
    }

    fn abandon(&self) {
        *lock(&self.abandoned) = true;
        self.room.notify_all();
    }

    fn into_result(self) -> Result<Vec<A>> {
        let shards = self.shards;
        // One shard is the result as it is; several are joined.
        if shards.len() == 1 {
            return Ok(shards.into_iter().next().map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()).cells).unwrap_or_default());
        }
        let mut result = Vec::new();
        reserve_cells(&mut result, self.job.out_len)?;
        for shard in shards {
            result.extend(shard.into_inner().unwrap_or_else(|p| p.into_inner()).cells);
        }
        Ok(result)
    }
}

/// A mutex's guard, also when a panicking thread poisoned it (the data is whole: every
/// update under these locks completes or is abandoned with the read).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The chunk's elements as `T` in native byte order (converted and swapped into `buf`
/// if needed).
fn numeric<'b, T: Element>(job: &Job, chunk: &'b [u8], buf: &'b mut Vec<u8>) -> Result<&'b [u8]> {
    let Some(convert) = job.convert else { return Ok(native_order::<T>(job, chunk, buf)) };
    let n = chunk.len() / job.src.element_size.max(1);
    let len = n.checked_mul(T::SIZE).ok_or_else(|| Error::invalid_argument("converted chunk size overflows"))?;
    buf.clear();
    buf.try_reserve_exact(len).map_err(|_| Error::out_of_memory(format!("cannot allocate {} bytes for a converted chunk", len)))?;
    buf.resize(len, 0);
    convert(chunk, buf, n)?;
    if job.big_endian && T::SIZE > 1 {
        buf.chunks_exact_mut(T::SIZE).for_each(|e| e.reverse());
    }
    Ok(buf)
}

/// The chunk with elements in native byte order (swapped into `buf` if needed).
fn native_order<'b, T: Element>(job: &Job, chunk: &'b [u8], buf: &'b mut Vec<u8>) -> &'b [u8] {
    if !job.big_endian || T::SIZE == 1 {
        return chunk;
    }
    buf.clear();
    buf.extend_from_slice(chunk);
    buf.chunks_exact_mut(T::SIZE).for_each(|e| e.reverse());
    buf
}

/// The selected extent of `task`'s chunk on kept axes, 1 on reduced ones: the shape
/// of its chunk-local cells.
fn local_dims(job: &Job, task: &ChunkTask) -> Vec<u64> {
    let pieces = &job.geom.pieces;
    (0..job.geom.rank())
        .map(|d| if job.reduce_axis[d] { 1 } else { pieces[d][task.pieces[d] as usize].in_chunk.len() })
        .collect()
}

/// Fold the selected elements of one decoded chunk into chunk-local cells (`local`).
fn fold_chunk<T: Element, A: Acc<T>>(job: &Job, task: &ChunkTask, chunk: &[u8], local: &mut Vec<A>) -> Result<()> {
    let geom = job.geom;
    let rank = geom.rank();
    let pieces: Vec<_> = (0..rank).map(|d| &geom.pieces[d][task.pieces[d] as usize]).collect();
    let local_dims = local_dims(job, task);
    let mut local_strides = strides(&local_dims);
    for (s, &r) in local_strides.iter_mut().zip(&job.reduce_axis) {
        if r {
            *s = 0;
        }
    }
    let cells = local_dims.iter().product::<u64>() as usize;
    local.clear();
    reserve_cells(local, cells)?;
    local.resize(cells, A::identity());
    // Elements of T (converted ones may differ in size from the stored ones).
    let needed = geom.chunk_bytes / geom.element_size.max(1) * T::SIZE;
    if chunk.len() < needed {
        return Err(Error::format(format!("decoded chunk holds {} bytes, expected {}", chunk.len(), needed)));
    }
    let (last, folded) = folded_run(job, &pieces, &local_strides);
    let inner = folded.as_ref().unwrap_or(&pieces[last].in_chunk);
    let outer_total: u64 = pieces[..last].iter().map(|p| p.in_chunk.len()).product();
    let mut idx = vec![0u64; rank];
    for _ in 0..outer_total {
        let mut chunk_base = 0u64;
        let mut local_base = 0u64;
        for d in 0..last {
            chunk_base += pieces[d].in_chunk.get(idx[d]) * geom.chunk_strides[d];
            local_base += idx[d] * local_strides[d];
        }
        fold_run::<T, A>(chunk, chunk_base as usize, inner, &mut local[local_base as usize..], local_strides[last] != 0);
        advance(&mut idx[..last], |d| pieces[d].in_chunk.len());
    }
    Ok(())
}

/// The axis whose runs `fold_chunk` folds, and the run on it in elements where it is not
/// that axis's own selection (None: it is): trailing axes
/// taken whole in the chunk, reduced or kept as the axis before them is, lie in one
/// stretch with it, in the chunk and in the cells alike. A genotype matrix (variants,
/// samples, ploidy 2) was folded two elements at a time: sums 4x numpy's time.
fn folded_run(job: &Job, pieces: &[&AxisPiece], local_strides: &[u64]) -> (usize, Option<InChunk>) {
    let geom = job.geom;
    let (mut last, mut fold) = (pieces.len() - 1, 1u64);
    while last >= 1 {
        let (a, before) = (last, last - 1);
        let InChunk::Strided { start: 0, step: 1, len } = pieces[a].in_chunk else { break };
        let InChunk::Strided { step: 1, .. } = pieces[before].in_chunk else { break };
        let whole_in_chunk = geom.chunk_strides[a] == fold && geom.chunk_strides[before] == len * fold;
        let cells_alike = if job.reduce_axis[a] {
            job.reduce_axis[before]
        } else {
            !job.reduce_axis[before] && local_strides[a] == fold && local_strides[before] == len * fold
        };
        if !(whole_in_chunk && cells_alike) {
            break;
        }
        fold *= len;
        last = before;
    }
    let folded = match pieces[last].in_chunk {
        InChunk::Strided { start, step: 1, len } if fold > 1 => Some(InChunk::Strided { start: start * fold, step: 1, len: len * fold }),
        _ => None,
    };
    (last, folded)
}

/// One run along the last axis: into consecutive cells when that axis is kept, into
/// one cell when it is reduced.
#[inline(always)]
fn fold_run<T: Element, A: Acc<T>>(
    chunk: &[u8],
    base: usize,
    inner: &super::selection::InChunk,
    cells: &mut [A],
    kept: bool,
) {
    let s = T::SIZE;
    match inner {
        InChunk::Strided { start, step: 1, len } => {
            let from = (base + *start as usize) * s;
            let row = &chunk[from..from + *len as usize * s];
            if kept {
                for (cell, bytes) in cells.iter_mut().zip(row.chunks_exact(s)) {
                    cell.add(T::load(bytes));
                }
            } else {
                let cell = &mut cells[0];
                row.chunks_exact(s).for_each(|bytes| cell.add(T::load(bytes)));
            }
        }
        _ => {
            for i in 0..inner.len() {
                let at = (base + inner.get(i) as usize) * s;
                let x = T::load(&chunk[at..at + s]);
                cells[if kept { i as usize } else { 0 }].add(x);
            }
        }
    }
}

/// Merge `task`'s chunk-local cells into `partial`, which holds the output cells from
/// position `first` on (those outside it are left out), a run along the last axis at a
/// time (consecutive there when that axis is kept).
fn merge_local<A: Cell>(job: &Job, task: &ChunkTask, local: &[A], partial: &mut [A], first: usize) {
    let local_dims = local_dims(job, task);
    let last = local_dims.len() - 1;
    let run = local_dims[last] as usize;
    if run == 0 {
        return;
    }
    let end = first + partial.len();
    let out_start: Vec<u64> = (0..=last).map(|d| job.geom.pieces[d][task.pieces[d] as usize].out_start).collect();
    let mut idx = vec![0u64; last];
    for cells in local.chunks_exact(run) {
        let at: u64 = (0..=last)
            .filter(|&d| !job.reduce_axis[d])
            .map(|d| (out_start[d] + if d == last { 0 } else { idx[d] }) * job.out_strides[d])
            .sum();
        let (at, stop) = (at as usize, at as usize + run);
        let (from, to) = (at.max(first), stop.min(end));
        if from < to {
            let cells = &cells[from - at..to - at];
            partial[from - first..to - first].iter_mut().zip(cells).for_each(|(out, cell)| out.merge(cell));
        }
        advance(&mut idx, |d| local_dims[d]);
    }
}
