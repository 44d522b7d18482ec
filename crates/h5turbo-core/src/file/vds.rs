//! Reading virtual datasets (VDS): for each mapping, the source elements that the
//! request covers are read from their dataset (in this file or another, in parallel
//! as any read) and put in place. Elements that no mapping covers, and those of a
//! source file or dataset that does not exist, are the fill value, as libhdf5 reads
//! them.
//!
//! Supported mappings: hyperslab (regular, or a single block) and "all" selections on
//! both sides whose non-unit extents agree axis by axis (what h5py's VirtualLayout
//! writes: `layout[i, :] = VirtualSource(...)`, strided and offset slices). Point
//! selections, unions of several blocks, unlimited and printf-named mappings, and
//! sources of another datatype are reported as unsupported.
//!
//! Types with variable-length parts (strings, sequences) and references are read
//! value by value (`read_vlen`): a stored heap id names a heap of the source's file,
//! so each mapping's values are resolved in their source, then put in place.

use super::dataset::Dataset;
use super::lookup::{find_named_file, NamedFile};
use super::File;
use crate::buffer::zeroed_elements;
use crate::engine::AxisSelection;
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::convert::numpy_dtype::has_objects;
use crate::convert::values::{resolve_vlen_elements, VlenValue};
use crate::format::reference::{Selection, UNLIMITED};
use crate::format::vds::{parse_mappings, Mapping, SourceFile};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::path::{Path, PathBuf};

/// Virtual datasets whose sources are virtual datasets, this deep at most (each level
/// takes some stack; libhdf5 sets no bound). A cycle is found sooner: see `Nesting`.
const MAX_DEPTH: usize = 64;

/// A virtual dataset being read: its file and where its mappings are stored.
type Reading = (PathBuf, Option<u64>, u32);

thread_local! {
    static READING: RefCell<Vec<Reading>> = const { RefCell::new(Vec::new()) };
}

/// Read `sel` of the virtual dataset `ds` (shape `dims`) as raw element bytes.
pub(super) fn read(
    ds: &Dataset,
    file: &File,
    (heap_address, heap_index): (Option<u64>, u32),
    dims: &[u64],
    sel: &[AxisSelection],
    out: &mut [u8],
    threads: usize,
) -> Result<()> {
    let _nesting = Nesting::enter(file, heap_address, heap_index)?;
    if has_objects(&ds.datatype) {
        // Heap ids and region references name the source's file: resolved per mapping.
        return Err(Error::invalid_argument(
            "raw bytes of a virtual dataset of variable-length or region reference types (read it with read_vlen)",
        ));
    }
    for (axis, (s, &len)) in sel.iter().zip(dims).enumerate() {
        s.validate(len, axis)?;
    }
    let element = ds.element_size();
    let wanted = sel.iter().try_fold(element as u64, |acc, s| acc.checked_mul(s.count()));
    if element == 0 || wanted != Some(out.len() as u64) {
        return Err(Error::invalid_argument(format!(
            "output of {} bytes for a selection of {:?} elements of {} bytes",
            out.len(),
            sel.iter().map(AxisSelection::count).collect::<Vec<_>>(),
            element
        )));
    }
    let sources = ds.virtual_sources(|| VirtualSources::read(file, heap_address, heap_index))?;
    for piece in out.chunks_exact_mut(element) {
        piece.copy_from_slice(&ds.fill);
    }
    let request = Request::new(sel);
    for mapping in sources.meeting(&request) {
        let what = || format!("virtual dataset mapping from '{}'", mapping.dataset);
        let Some(piece) = plan(ds, file, mapping, dims, &request, &sources).in_object(&what())? else { continue };
        let mut values = zeroed_elements(piece.count(), element, "a virtual mapping's values").in_object(&mapping.dataset)?;
        piece.source.read_raw(&piece.file, &piece.selection, &mut values, threads).in_object(&mapping.dataset).in_file(piece.file.path())?;
        scatter(&values, &piece.landing, piece.base, element, out);
    }
    Ok(())
}

/// Read `sel` of the virtual dataset `ds` (shape `dims`) of a type with
/// variable-length parts or references, as libhdf5 reads it: each mapping's elements
/// resolved in its source dataset (their heap objects live in the source's file), the
/// fill value elsewhere (empty strings and sequences unless the dataset sets one).
pub(super) fn read_vlen(
    ds: &Dataset,
    file: &File,
    (heap_address, heap_index): (Option<u64>, u32),
    dims: &[u64],
    sel: &[AxisSelection],
    threads: usize,
) -> Result<Vec<VlenValue>> {
    let _nesting = Nesting::enter(file, heap_address, heap_index)?;
    for (axis, (s, &len)) in sel.iter().zip(dims).enumerate() {
        s.validate(len, axis)?;
    }
    let n = sel.iter().try_fold(1u64, |acc, s| acc.checked_mul(s.count())).and_then(|n| usize::try_from(n).ok());
    let n = n.ok_or_else(|| Error::invalid_argument("selection too large"))?;
    let sources = ds.virtual_sources(|| VirtualSources::read(file, heap_address, heap_index))?;
    let fill = resolve_vlen_elements(file.ctx(), file.global_heap(), &ds.datatype, &ds.fill, 1)
        .in_object("the virtual dataset's fill value")?
        .pop()
        .ok_or_else(|| Error::format("virtual dataset fill value without an element"))?;
    let mut out = crate::buffer::vec_with_capacity(n, "the virtual dataset's elements")?;
    out.resize(n, fill);
    let request = Request::new(sel);
    for mapping in sources.meeting(&request) {
        let what = || format!("virtual dataset mapping from '{}'", mapping.dataset);
        let Some(piece) = plan(ds, file, mapping, dims, &request, &sources).in_object(&what())? else { continue };
        let values = piece.source.read_vlen(&piece.file, &piece.selection, threads).in_object(&mapping.dataset).in_file(piece.file.path())?;
        for (value, at) in values.into_iter().zip(landing_offsets(&piece.landing, piece.base)) {
            out[at] = value;
        }
    }
    Ok(out)
}

/// The virtual datasets being read on this thread, each reading the next through a
/// mapping: a dataset met again is a cycle of mappings (libhdf5 would recurse until it
/// crashes), and the chain is bounded. Restored however the read ends (a panic is
/// caught at the bindings).
struct Nesting;

impl Nesting {
    fn enter(file: &File, heap_address: Option<u64>, heap_index: u32) -> Result<Nesting> {
        let this: Reading = (file.path().to_path_buf(), heap_address, heap_index);
        READING.with(|reading| {
            let mut reading = reading.borrow_mut();
            if reading.contains(&this) {
                return Err(Error::format("virtual dataset mappings form a cycle: the dataset is its own source"));
            }
            if reading.len() >= MAX_DEPTH {
                return Err(Error::unsupported(format!("virtual datasets nested more than {} deep", MAX_DEPTH)));
            }
            reading.push(this);
            Ok(Nesting)
        })
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        READING.with(|reading| reading.borrow_mut().pop());
    }
}

/// The requested indices along each axis, and where each element goes in the output.
struct Request {
    indices: Vec<Vec<u64>>,
    /// Output elements between consecutive indices of each axis (row-major).
    strides: Vec<usize>,
}

impl Request {
    /// The first and last index asked for on each axis; None when an axis asks for none.
    fn bounds(&self) -> Option<Vec<(u64, u64)>> {
        self.indices.iter().map(|axis| Some((*axis.iter().min()?, *axis.iter().max()?))).collect()
    }

    fn new(sel: &[AxisSelection]) -> Request {
        let indices: Vec<Vec<u64>> = sel
            .iter()
            .map(|s| match s {
                AxisSelection::Range { start, count, step } => (0..*count).map(|i| start + i * step).collect(),
                AxisSelection::Points(p) => p.clone(),
            })
            .collect();
        let mut strides = vec![1usize; indices.len()];
        for d in (0..indices.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * indices[d + 1].len();
        }
        Request { indices, strides }
    }
}

/// One axis of a mapping's selection: `count` blocks of `block` indices, `stride`
/// apart, from `start`.
#[derive(Debug, Clone, Copy)]
struct AxisRun {
    start: u64,
    stride: u64,
    count: u64,
    block: u64,
}

impl AxisRun {
    fn len(&self) -> u64 {
        self.count * self.block
    }

    /// The k-th index (k < len).
    fn at(&self, k: u64) -> u64 {
        self.start + (k / self.block) * self.stride + k % self.block
    }

    /// The position of index `x` in the run, if it is one of its indices.
    fn position(&self, x: u64) -> Option<u64> {
        let offset = x.checked_sub(self.start)?;
        let (q, r) = (offset / self.stride, offset % self.stride);
        (q < self.count && r < self.block).then_some(q * self.block + r)
    }
}

/// One axis of a mapping's selection: a regular run, or sorted disjoint intervals of
/// different sizes or spacing (kept as intervals: memory follows the stored blocks,
/// not the axis length a file claims).
#[derive(Debug, Clone)]
enum Axis {
    Run(AxisRun),
    Intervals(Intervals),
}

#[derive(Debug, Clone)]
struct Intervals {
    starts: Vec<u64>,
    ends: Vec<u64>,
    /// Indices of the selection before each interval.
    before: Vec<u64>,
}

impl Intervals {
    fn new(v: &[(u64, u64)]) -> Intervals {
        let mut before = Vec::with_capacity(v.len());
        let mut total = 0u64;
        for &(a, b) in v {
            before.push(total);
            total += b - a + 1; // disjoint intervals inside the axis: no overflow
        }
        Intervals { starts: v.iter().map(|p| p.0).collect(), ends: v.iter().map(|p| p.1).collect(), before }
    }
}

impl Axis {
    fn len(&self) -> u64 {
        match self {
            Axis::Run(run) => run.len(),
            Axis::Intervals(iv) => iv.before.last().map_or(0, |&b| b + iv.ends[iv.ends.len() - 1] - iv.starts[iv.starts.len() - 1] + 1),
        }
    }

    fn at(&self, k: u64) -> u64 {
        match self {
            Axis::Run(run) => run.at(k),
            Axis::Intervals(iv) => {
                let i = iv.before.partition_point(|&b| b <= k) - 1;
                iv.starts[i] + (k - iv.before[i])
            }
        }
    }

    fn position(&self, x: u64) -> Option<u64> {
        match self {
            Axis::Run(run) => run.position(x),
            Axis::Intervals(iv) => {
                let i = iv.starts.partition_point(|&a| a <= x).checked_sub(1)?;
                (x <= iv.ends[i]).then(|| iv.before[i] + (x - iv.starts[i]))
            }
        }
    }
}

/// Blocks (`starts`/`ends`, `rank` values each, libhdf5's row-major order) that form a
/// grid: every combination of each axis's distinct intervals, once, in order. Each
/// axis becomes a run when its intervals are alike and evenly spaced.
fn grid_axes(rank: usize, starts: &[u64], ends: &[u64], dims: &[u64], side: &str) -> Result<Vec<Axis>> {
    let n = starts.len() / rank;
    let mut intervals: Vec<Vec<(u64, u64)>> = (0..rank)
        .map(|d| {
            let mut v: Vec<(u64, u64)> = (0..n).map(|b| (starts[b * rank + d], ends[b * rank + d])).collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let not_grid = || Error::unsupported(format!("{} selection made of blocks that are not a grid", side));
    let cells = intervals.iter().try_fold(1usize, |acc, v| acc.checked_mul(v.len()));
    if cells != Some(n) {
        return Err(not_grid());
    }
    let mut counter = vec![0usize; rank];
    for b in 0..n {
        for d in 0..rank {
            if intervals[d][counter[d]] != (starts[b * rank + d], ends[b * rank + d]) {
                return Err(not_grid());
            }
        }
        for d in (0..rank).rev() {
            counter[d] += 1;
            if counter[d] < intervals[d].len() {
                break;
            }
            counter[d] = 0;
        }
    }
    intervals
        .iter_mut()
        .zip(dims)
        .map(|(v, &len)| {
            if v.windows(2).any(|w| w[1].0 <= w[0].1) || v.last().is_some_and(|l| l.1 >= len) {
                return Err(Error::format(format!("{} selection has overlapping blocks or goes past its axis", side)));
            }
            let block = v[0].1 - v[0].0 + 1;
            let stride = if v.len() > 1 { v[1].0 - v[0].0 } else { block };
            let regular = v.iter().enumerate().all(|(i, &(a, b))| {
                b - a + 1 == block && (i as u64).checked_mul(stride).and_then(|o| v[0].0.checked_add(o)) == Some(a)
            });
            Ok(if regular {
                Axis::Run(AxisRun { start: v[0].0, stride, count: v.len() as u64, block })
            } else {
                Axis::Intervals(Intervals::new(v))
            })
        })
        .collect()
}

/// The box a selection lies in: per axis, its first and last index; None where that
/// is not known without the dataspace (all of it) or not cheap (points), or the
/// selection is malformed (checked when it is planned).
fn selection_box(selection: &Selection) -> Option<Vec<(u64, u64)>> {
    match selection {
        Selection::Regular { start, stride, count, block } => {
            if stride.len() != start.len() || count.len() != start.len() || block.len() != start.len() {
                return None;
            }
            (0..start.len())
                .map(|d| {
                    let span = count[d].checked_sub(1)?.checked_mul(stride[d])?.checked_add(block[d].checked_sub(1)?)?;
                    Some((start[d], start[d].checked_add(span)?))
                })
                .collect()
        }
        Selection::Blocks { rank, starts, ends } if *rank > 0 && !starts.is_empty() && starts.len() == ends.len() => {
            (0..*rank)
                .map(|d| {
                    let lo = starts.iter().skip(d).step_by(*rank).min()?;
                    let hi = ends.iter().skip(d).step_by(*rank).max()?;
                    Some((*lo, *hi))
                })
                .collect()
        }
        _ => None,
    }
}

/// A selection as one `Axis` per axis; None for an empty selection.
fn axis_runs(selection: &Selection, dims: &[u64], side: &str) -> Result<Option<Vec<Axis>>> {
    let rank_error = |rank: usize| {
        Error::format(format!("{} selection of rank {} on a dataspace of rank {}", side, rank, dims.len()))
    };
    let runs = match selection {
        Selection::None => return Ok(None),
        Selection::All => dims.iter().map(|&d| AxisRun { start: 0, stride: d.max(1), count: 1, block: d }).collect(),
        Selection::Regular { start, stride, count, block } => {
            if start.len() != dims.len() {
                return Err(rank_error(start.len()));
            }
            if count.iter().chain(block).any(|&v| v == UNLIMITED) {
                return Err(Error::unsupported(format!("an unlimited {} selection (a mapping that grows with its source)", side)));
            }
            // a single block's stride is meaningless (libhdf5 stores 1): its block spans it
            (0..dims.len())
                .map(|d| {
                    let stride = if count[d] == 1 { block[d].max(1) } else { stride[d].max(1) };
                    AxisRun { start: start[d], stride, count: count[d], block: block[d] }
                })
                .collect()
        }
        Selection::Blocks { rank, starts, ends } => {
            if *rank != dims.len() {
                return Err(rank_error(*rank));
            }
            if starts.is_empty() {
                return Ok(None);
            }
            return grid_axes(*rank, starts, ends, dims, side).map(Some);
        }
        Selection::Points { .. } => return Err(Error::unsupported(format!("{} point selection", side))),
    };
    let runs: Vec<AxisRun> = runs;
    if runs.iter().any(|r| r.count == 0 || r.block == 0) {
        return Ok(None);
    }
    for (d, (run, &len)) in runs.iter().zip(dims).enumerate() {
        // checked here, so that len() and at() never overflow later
        let last = run.count.checked_mul(run.block).and_then(|_| {
            (run.count - 1).checked_mul(run.stride)?.checked_add(run.start)?.checked_add(run.block - 1)
        });
        if run.block > run.stride && run.count > 1 || last.map_or(true, |last| last >= len) {
            return Err(Error::format(format!("{} selection goes past axis {} (length {})", side, d, len)));
        }
    }
    Ok(Some(runs.into_iter().map(Axis::Run).collect()))
}

/// Axes whose run has more than one index: the two sides' must agree in order.
fn spread_axes(runs: &[Axis]) -> Vec<usize> {
    (0..runs.len()).filter(|&d| runs[d].len() > 1).collect()
}

/// What one mapping contributes to a request: the source elements to read and where
/// each lands in the output.
struct Piece {
    file: File,
    source: std::sync::Arc<Dataset>,
    /// The source elements to read, axis by axis.
    selection: Vec<AxisSelection>,
    /// Per source axis, the output element offset of each index read.
    landing: Vec<Vec<usize>>,
    /// The output element offset of the axes the mapping holds to one index.
    base: usize,
}

impl Piece {
    fn count(&self) -> usize {
        self.landing.iter().map(Vec::len).product()
    }
}

/// The piece `mapping` contributes to `request`; None when it contributes nothing
/// (not requested, or its source file or dataset does not exist).
fn plan(
    ds: &Dataset,
    file: &File,
    mapping: &Mapping,
    dims: &[u64],
    request: &Request,
    sources: &VirtualSources,
) -> Result<Option<Piece>> {
    let Some(virtual_runs) = axis_runs(&mapping.virtual_selection, dims, "virtual")? else { return Ok(None) };
    // per axis: (output index, position in the mapping) of the requested indices it covers
    let mut covered: Vec<Vec<(u64, u64)>> = Vec::with_capacity(dims.len());
    for (run, wanted) in virtual_runs.iter().zip(&request.indices) {
        let pairs: Vec<(u64, u64)> =
            wanted.iter().enumerate().filter_map(|(i, &x)| run.position(x).map(|k| (i as u64, k))).collect();
        if pairs.is_empty() {
            return Ok(None); // the request does not touch this mapping
        }
        covered.push(pairs);
    }
    let Some((source_file, source)) = sources.dataset(file, mapping)? else { return Ok(None) };
    if source.datatype != ds.datatype {
        return Err(Error::unsupported("a source dataset of another datatype than the virtual dataset's"));
    }
    let Some(source_runs) = axis_runs(&mapping.source_selection, source.shape(), "source")? else { return Ok(None) };
    let (v_axes, s_axes) = (spread_axes(&virtual_runs), spread_axes(&source_runs));
    let v_lens: Vec<u64> = v_axes.iter().map(|&d| virtual_runs[d].len()).collect();
    let s_lens: Vec<u64> = s_axes.iter().map(|&d| source_runs[d].len()).collect();
    if v_lens != s_lens && !pairs_in_order(&virtual_runs, &covered, &v_lens, &s_lens) {
        let (v, s): (u64, u64) = (virtual_runs.iter().map(Axis::len).product(), source_runs.iter().map(Axis::len).product());
        if v != s {
            return Err(Error::format(format!("mapping selects {} virtual and {} source elements", v, s)));
        }
        return Err(Error::unsupported(format!(
            "a mapping whose source extents {:?} and virtual extents {:?} differ axis by axis",
            s_lens, v_lens
        )));
    }
    // the source indices to read, axis by axis, and where each lands in the output
    let mut source_sel = Vec::with_capacity(source_runs.len());
    let mut landing: Vec<Vec<usize>> = Vec::with_capacity(source_runs.len());
    for (j, run) in source_runs.iter().enumerate() {
        match s_axes.iter().position(|&a| a == j) {
            Some(i) => {
                let d = v_axes[i];
                let pairs = &covered[d];
                source_sel.push(indices_selection(pairs.iter().map(|&(_, k)| run.at(k)).collect()));
                landing.push(pairs.iter().map(|&(o, _)| o as usize * request.strides[d]).collect());
            }
            None => {
                source_sel.push(AxisSelection::Range { start: run.at(0), count: 1, step: 1 });
                landing.push(vec![0]);
            }
        }
    }
    // axes of the virtual dataset that the mapping holds to one index
    let base: usize = (0..dims.len())
        .filter(|d| !v_axes.contains(d))
        .map(|d| covered[d][0].0 as usize * request.strides[d])
        .sum();
    Ok(Some(Piece { file: source_file, source, selection: source_sel, landing, base }))
}

/// Whether a mapping whose source selection holds another number of elements than its
/// virtual one (a source dataset of another size than declared, mapped with the 'all'
/// selection) can still serve this request, as libhdf5 serves it: the selections'
/// elements pair in order, so a part of the mapping whose elements all have a partner
/// reads, while a read of the whole mapping fails. Along one spread axis each only:
/// pairing across axes of different lengths would need point selections in the source.
fn pairs_in_order(virtual_runs: &[Axis], covered: &[Vec<(u64, u64)>], v_lens: &[u64], s_lens: &[u64]) -> bool {
    let ([v_len], [s_len]) = (v_lens, s_lens) else { return false };
    let whole = virtual_runs.iter().zip(covered).all(|(run, pairs)| pairs.len() as u64 == run.len());
    let partnered = covered.iter().flatten().all(|&(_, k)| k < *s_len.min(v_len));
    !whole && partnered
}

/// Strictly increasing indices as an engine selection (a range when evenly spaced).
fn indices_selection(indices: Vec<u64>) -> AxisSelection {
    let step = if indices.len() > 1 { indices[1] - indices[0] } else { 1 };
    if indices.windows(2).all(|w| w[1] - w[0] == step) {
        AxisSelection::Range { start: indices[0], count: indices.len() as u64, step }
    } else {
        AxisSelection::Points(indices)
    }
}

/// Put the read values (row-major over `landing`'s axes) at their output elements:
/// element offset `base` plus one landing offset per axis.
fn scatter(values: &[u8], landing: &[Vec<usize>], base: usize, element: usize, out: &mut [u8]) {
    let Some((last, outer)) = landing.split_last() else {
        // a scalar source: its one value lands at `base`
        out[base * element..(base + 1) * element].copy_from_slice(&values[..element]);
        return;
    };
    // the last axis lands on consecutive elements when its offsets step by one
    let contiguous = last.windows(2).all(|w| w[1] == w[0] + 1);
    let row = last.len() * element;
    let mut counter = vec![0usize; outer.len()];
    for chunk in values.chunks_exact(row) {
        let at = base + outer.iter().zip(&counter).map(|(l, &i)| l[i]).sum::<usize>();
        if contiguous {
            let start = (at + last[0]) * element;
            out[start..start + row].copy_from_slice(chunk);
        } else {
            for (value, &offset) in chunk.chunks_exact(element).zip(last) {
                let start = (at + offset) * element;
                out[start..start + element].copy_from_slice(value);
            }
        }
        for axis in (0..counter.len()).rev() {
            counter[axis] += 1;
            if counter[axis] < outer[axis].len() {
                break;
            }
            counter[axis] = 0;
        }
    }
}

/// The output element offsets of the values read, in their (row-major) order: `base`
/// plus one landing offset per axis.
fn landing_offsets(landing: &[Vec<usize>], base: usize) -> Vec<usize> {
    let mut offsets = vec![base];
    for axis in landing {
        offsets = offsets.iter().flat_map(|&o| axis.iter().map(move |&l| o + l)).collect();
    }
    offsets
}

/// A virtual dataset's mappings (parsed once) and the source files opened so far, kept
/// with the dataset: a loop of small reads then costs no heap parse or file open per
/// read. Missing files are looked for again at each read (they may appear), as
/// libhdf5 does. Files of other names only: the dataset's own file is not kept (that
/// would be a reference cycle through the file's dataset cache).
pub struct VirtualSources {
    mappings: Vec<Mapping>,
    /// Per mapping, the box its virtual selection lies in (first and last index per
    /// axis; None: anywhere): a read skips the mappings whose box it misses without
    /// planning them (a loop of element reads over 8000 mappings planned each of them
    /// for every read, 12x h5py's time).
    virtual_boxes: Vec<Option<Vec<(u64, u64)>>>,
    files: Mutex<HashMap<PathBuf, File>>,
}

impl VirtualSources {
    pub(super) fn read(file: &File, heap_address: Option<u64>, heap_index: u32) -> Result<VirtualSources> {
        let mappings = match heap_address {
            Some(address) => {
                let block = file.global_heap().get(file.ctx(), address, heap_index)?;
                parse_mappings(file.ctx(), &block, block.address())?
            }
            None => Vec::new(), // no mappings stored: every element is the fill value
        };
        let virtual_boxes = mappings.iter().map(|m| selection_box(&m.virtual_selection)).collect();
        Ok(VirtualSources { mappings, virtual_boxes, files: Mutex::new(HashMap::new()) })
    }

    /// The mappings a request may touch (its box meets theirs), in stored order.
    fn meeting<'a>(&'a self, request: &'a Request) -> impl Iterator<Item = &'a Mapping> + 'a {
        let wanted = request.bounds();
        self.mappings.iter().zip(&self.virtual_boxes).filter_map(move |(mapping, boxed)| {
            let misses = match (boxed, &wanted) {
                (Some(b), Some(w)) if b.len() == w.len() => b.iter().zip(w).any(|(&(lo, hi), &(a, z))| hi < a || z < lo),
                _ => false,
            };
            (!misses).then_some(mapping)
        })
    }

    /// The mappings, in stored order.
    pub(super) fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The mapping's source dataset and its file; None when the file or the dataset
    /// does not exist (its elements read as the fill value).
    fn dataset(&self, file: &File, mapping: &Mapping) -> Result<Option<(File, std::sync::Arc<Dataset>)>> {
        let source_file = match &mapping.file {
            SourceFile::Same => file.clone(),
            // next to the virtual dataset's file as it was opened, as libhdf5 finds
            // sources (not wherever the program has moved to since)
            SourceFile::Named(name) => match self.open(file.absolute_path(), name)? {
                Some(f) => f,
                None => return Ok(None),
            },
        };
        // a source path that leads to no dataset (a group, a path through a dataset) is
        // a broken mapping: libhdf5 fails the read (h5py: OSError)
        let broken = |why: String| Error::format(format!("source '{}': {}", mapping.dataset, why)).in_file(source_file.path());
        // through external links in the source file too, as libhdf5 follows them
        match source_file.get_following_external(&mapping.dataset) {
            Ok(obj) => match obj.dataset() {
                Ok(source) => Ok(Some((obj.file().clone(), source))),
                Err(e) if e.kind() == ErrorKind::InvalidArgument => Err(broken(e.message().to_string())),
                Err(e) => Err(e),
            },
            // a missing dataset reads as fill, a missing group on its way fails (libhdf5:
            // "component not found")
            Err(e) if e.kind() == ErrorKind::NotFound => match no_group_on_the_way(&source_file, &mapping.dataset) {
                Some(why) => Err(broken(why)),
                None => Ok(None),
            },
            Err(e) if e.kind() == ErrorKind::InvalidArgument => Err(broken(e.message().to_string())),
            Err(e) => Err(e),
        }
    }

    fn open(&self, vds_path: &Path, name: &str) -> Result<Option<File>> {
        let Some(path) = find_named_file(NamedFile::VirtualSource, vds_path, name) else { return Ok(None) };
        let mut files = self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(open) = files.get(&path) {
            return Ok(Some(open.clone()));
        }
        let opened = File::open(&path)?;
        files.insert(path, opened.clone());
        Ok(Some(opened))
    }
}

/// What is wrong with the group path of `dataset` (a path that was not found in
/// `file`) when that group does not exist either, or is no group (a dataset).
fn no_group_on_the_way(file: &File, dataset: &str) -> Option<String> {
    let (group, _) = dataset.trim_end_matches('/').rsplit_once('/')?;
    let group = if group.is_empty() { "/" } else { group };
    match file.get_following_external(group) {
        Err(e) if e.kind() == ErrorKind::NotFound => Some(format!("no group '{}' in the source file", group)),
        Ok(obj) if obj.kind() != super::ObjectKind::Group => Some(format!("'{}' is not a group", group)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regular(start: u64, stride: u64, count: u64, block: u64) -> Selection {
        Selection::Regular { start: vec![start], stride: vec![stride], count: vec![count], block: vec![block] }
    }

    #[test]
    fn runs_and_intervals_agree_on_positions() {
        let run = &axis_runs(&regular(3, 5, 4, 2), &[40], "virtual").unwrap().unwrap()[0];
        let indices: Vec<u64> = (0..run.len()).map(|k| run.at(k)).collect();
        assert_eq!(indices, [3, 4, 8, 9, 13, 14, 18, 19]);
        assert!((0..40).all(|x| run.position(x) == indices.iter().position(|&i| i == x).map(|k| k as u64)));
        // blocks of different sizes: intervals
        let blocks = Selection::Blocks { rank: 1, starts: vec![1, 7, 10], ends: vec![2, 7, 14] };
        let axis = &axis_runs(&blocks, &[20], "source").unwrap().unwrap()[0];
        assert!(matches!(axis, Axis::Intervals(_)));
        let indices: Vec<u64> = (0..axis.len()).map(|k| axis.at(k)).collect();
        assert_eq!(indices, [1, 2, 7, 10, 11, 12, 13, 14]);
        assert!((0..20).all(|x| axis.position(x) == indices.iter().position(|&i| i == x).map(|k| k as u64)));
    }

    #[test]
    fn hostile_selections_are_errors_without_huge_allocations() {
        let huge = u64::MAX / 2;
        // two blocks spanning an axis the file claims is 2^63 long: two intervals, no list
        let blocks = Selection::Blocks { rank: 1, starts: vec![0, huge / 2], ends: vec![10, huge - 1] };
        let axis = &axis_runs(&blocks, &[huge], "virtual").unwrap().unwrap()[0];
        assert_eq!(axis.len(), 11 + (huge - 1 - huge / 2 + 1));
        // counts and blocks whose product or end overflows
        assert!(axis_runs(&regular(0, 2, u64::MAX, 2), &[u64::MAX], "virtual").is_err());
        assert!(axis_runs(&regular(u64::MAX - 1, 1, 1, 4), &[u64::MAX], "virtual").is_err());
        assert!(axis_runs(&regular(0, 1, 2, 3), &[100], "virtual").is_err()); // overlapping blocks
        assert!(axis_runs(&regular(95, 1, 1, 10), &[100], "virtual").is_err()); // past the axis
        let overlap = Selection::Blocks { rank: 1, starts: vec![0, 5], ends: vec![6, 9] };
        assert!(axis_runs(&overlap, &[100], "virtual").is_err());
        let not_grid = Selection::Blocks { rank: 2, starts: vec![0, 0, 5, 5], ends: vec![1, 1, 6, 6] };
        assert!(axis_runs(&not_grid, &[10, 10], "virtual").is_err());
    }
}
