//! Selection -> plan: which chunks, in which batches of neighbouring bytes, and
//! where each chunk's selected elements land in the output.

use super::selection::{axis_pieces, AxisPiece, AxisSelection};
use super::{ChunkStore, StoredChunk};
use crate::error::{Error, Result};

/// Gaps up to this many bytes between two stored chunks are read through rather than
/// splitting the read: one larger pread beats two syscalls for small gaps.
const MAX_COALESCE_GAP: u64 = 4096;
/// Upper bound on one coalesced read. Cold, a batch is read before any of it is
/// decoded: 4 MiB batches keep several in the read-ahead window (see `ahead`) and the
/// threads out of step with each other; warm, a read per 4 MiB costs nothing.
const MAX_BATCH_BYTES: u64 = 4 << 20;

/// The geometry of a read: dataset shape, chunk shape, element size and the
/// per-axis pieces of the selection.
pub struct Geometry {
    pub chunk_dims: Vec<u64>,
    pub element_size: usize,
    /// Per axis, the chunks it touches and the positions selected in each.
    pub pieces: Vec<Vec<AxisPiece>>,
    /// Output extent per axis.
    pub out_dims: Vec<u64>,
    /// Output strides per axis, in elements.
    pub out_strides: Vec<u64>,
    /// Chunk strides per axis, in elements.
    pub chunk_strides: Vec<u64>,
    pub chunk_bytes: usize,
}

impl Geometry {
    pub fn new(dims: &[u64], chunk_dims: &[u64], element_size: usize, sel: &[AxisSelection]) -> Result<Geometry> {
        if dims.len() != chunk_dims.len() || dims.len() != sel.len() {
            return Err(Error::invalid_argument(format!(
                "selection has {} axes, dataset has {}",
                sel.len(),
                dims.len()
            )));
        }
        if chunk_dims.contains(&0) {
            return Err(Error::format("chunk dimension of zero"));
        }
        for (axis, (s, &len)) in sel.iter().zip(dims).enumerate() {
            s.validate(len, axis)?;
        }
        let out_dims: Vec<u64> = sel.iter().map(|s| s.count()).collect();
        let chunk_elems = checked_product(chunk_dims).ok_or_else(|| Error::format("chunk size overflows"))?;
        let chunk_bytes = chunk_elems
            .checked_mul(element_size as u64)
            .filter(|&b| b <= isize::MAX as u64)
            .ok_or_else(|| Error::format("chunk size overflows"))? as usize;
        // An empty selection touches no chunk; cutting its other axes into pieces would
        // cost memory in proportion to their (file-given, possibly huge) extents.
        let empty = out_dims.contains(&0);
        let pieces = sel
            .iter()
            .zip(chunk_dims)
            .map(|(s, &c)| if empty { Ok(Vec::new()) } else { axis_pieces(s, c) })
            .collect::<Result<_>>()?;
        Ok(Geometry {
            pieces,
            out_strides: strides(&out_dims),
            chunk_strides: strides(chunk_dims),
            out_dims,
            chunk_dims: chunk_dims.to_vec(),
            element_size,
            chunk_bytes,
        })
    }

    pub fn rank(&self) -> usize {
        self.chunk_dims.len()
    }

    /// Bytes the output must have.
    pub fn out_bytes(&self) -> Option<u64> {
        checked_product(&self.out_dims)?.checked_mul(self.element_size as u64)
    }

    /// True when the chunk `task` is wholly selected and lands in one contiguous run
    /// of the output, so it can be decoded straight into place.
    pub fn is_direct(&self, task: &ChunkTask) -> bool {
        (0..self.rank()).all(|d| {
            let piece = &self.pieces[d][task.pieces[d] as usize];
            piece.is_whole(self.chunk_dims[d]) && (d == 0 || self.out_dims[d] == self.chunk_dims[d])
        })
    }

    /// Byte offset in the output of the first element fed by `task`.
    pub fn out_offset(&self, task: &ChunkTask) -> u64 {
        (0..self.rank())
            .map(|d| self.pieces[d][task.pieces[d] as usize].out_start * self.out_strides[d])
            .sum::<u64>()
            * self.element_size as u64
    }

    /// Chunk coordinates (in chunk units) of `task`.
    pub fn chunk_coords(&self, task: &ChunkTask) -> Vec<u64> {
        (0..self.rank()).map(|d| self.pieces[d][task.pieces[d] as usize].chunk).collect()
    }
}

/// One chunk to process: its piece index on every axis and where it is stored.
#[derive(Debug, Clone)]
pub struct ChunkTask {
    pub pieces: Vec<u32>,
    pub stored: Option<StoredChunk>,
    /// Bytes of the chunk before `stored.address`: an unfiltered chunk is read only
    /// over the span its selection covers.
    pub skip: u64,
}

/// Neighbouring stored chunks read with one positional read.
#[derive(Debug)]
pub struct Batch {
    pub start: u64,
    pub len: u64,
    pub tasks: Vec<ChunkTask>,
}

/// Everything to do for one read.
pub struct Plan {
    pub fills: Vec<ChunkTask>,
    pub batches: Vec<Batch>,
}

impl Plan {
    /// Stored chunks to read.
    pub fn stored_count(&self) -> usize {
        self.batches.iter().map(|b| b.tasks.len()).sum()
    }

    /// Bytes to read: the stored chunks' (narrowed) extents.
    pub fn stored_bytes(&self) -> u64 {
        self.batches.iter().flat_map(|b| &b.tasks).filter_map(|t| t.stored).map(|s| s.size).sum()
    }

    /// Chunks to process, stored or filled.
    pub fn chunk_count(&self) -> usize {
        self.fills.len() + self.stored_count()
    }
}

pub fn make_plan(geom: &Geometry, store: &dyn ChunkStore, threads: usize, unfiltered: bool) -> Result<Plan> {
    let mut fills = Vec::new();
    let mut stored = Vec::new();
    reserve_tasks(geom, &mut fills)?;
    let mut coords = vec![0u64; geom.rank()];
    for_each_combination(&geom.pieces, |idx| {
        for d in 0..idx.len() {
            coords[d] = geom.pieces[d][idx[d] as usize].chunk;
        }
        let mut task = ChunkTask { pieces: idx.to_vec(), stored: store.locate(&coords), skip: 0 };
        if unfiltered && !geom.is_direct(&task) {
            narrow_to_selection(geom, &mut task);
        }
        if task.stored.is_some() {
            stored.push(task);
        } else {
            fills.push(task);
        }
    });
    let batches = coalesce(stored, threads);
    Ok(Plan { fills, batches })
}

/// Chunks one selection may touch in all: 2^26, as along one axis (see
/// selection.rs: 256 GiB in 4 KiB chunks). Past it the plan's memory, not the data's,
/// would exhaust the machine.
const MAX_PLANNED_CHUNKS: usize = 1 << 26;

/// Room for a task per chunk the selection touches, at most `MAX_PLANNED_CHUNKS` and
/// taken fallibly: a selection over a huge, mostly unwritten extent (2^31 x 2^31 in
/// chunks of 4096 x 4096, say, which a reduction's small output does not refuse)
/// would otherwise grow the plan until the system kills the host program (an
/// allocator that grants any reservation lazily, mimalloc's, leaves the cap the only
/// guard).
fn reserve_tasks(geom: &Geometry, tasks: &mut Vec<ChunkTask>) -> Result<()> {
    let chunks = geom.pieces.iter().try_fold(1usize, |n, pieces| n.checked_mul(pieces.len()));
    let too_many = |n: String| {
        Error::invalid_argument(format!(
            "the selection spans {} chunks: too many to plan in memory; select less at a time",
            n
        ))
    };
    let chunks = chunks.ok_or_else(|| too_many("more than 2^64".to_string()))?;
    if chunks > MAX_PLANNED_CHUNKS {
        return Err(too_many(chunks.to_string()));
    }
    tasks.try_reserve_exact(chunks).map_err(|_| too_many(chunks.to_string()))
}

/// Shrink an unfiltered chunk's read to the bytes between its first and last
/// selected elements (row-major, so everything selected lies in between).
fn narrow_to_selection(geom: &Geometry, task: &mut ChunkTask) {
    let Some(stored) = task.stored.as_mut() else { return };
    let (mut first, mut last) = (0u64, 0u64);
    for d in 0..geom.rank() {
        let inner = &geom.pieces[d][task.pieces[d] as usize].in_chunk;
        if inner.is_empty() {
            return;
        }
        first += inner.get(0) * geom.chunk_strides[d];
        last += inner.get(inner.len() - 1) * geom.chunk_strides[d];
    }
    let elem = geom.element_size as u64;
    let (lo, hi) = (first * elem, (last + 1) * elem);
    if hi <= stored.size {
        // A stored chunk too short for the selection keeps its full extent, and
        // fails later with a clear size error.
        stored.address += lo;
        stored.size = hi - lo;
        task.skip = lo;
    }
}

/// Sort stored chunks by address and group neighbours, keeping enough batches to
/// give every thread several.
fn coalesce(mut tasks: Vec<ChunkTask>, threads: usize) -> Vec<Batch> {
    tasks.sort_by_key(|t| t.stored.map(|s| s.address).unwrap_or(0));
    let total: u64 = tasks.iter().filter_map(|t| t.stored).map(|s| s.size).sum();
    let per_thread_share = total / (threads.max(1) as u64 * 4).max(1);
    let limit = per_thread_share.clamp(1, MAX_BATCH_BYTES);
    let mut batches: Vec<Batch> = Vec::new();
    for task in tasks {
        let Some(s) = task.stored else { continue };
        match batches.last_mut() {
            Some(b)
                if s.address >= b.start + b.len
                    && s.address - (b.start + b.len) <= MAX_COALESCE_GAP
                    && s.address + s.size - b.start <= limit =>
            {
                b.len = s.address + s.size - b.start;
                b.tasks.push(task);
            }
            _ => batches.push(Batch { start: s.address, len: s.size, tasks: vec![task] }),
        }
    }
    batches
}

/// Calls `f` with every combination of piece indices (row-major order).
fn for_each_combination(pieces: &[Vec<AxisPiece>], mut f: impl FnMut(&[u32])) {
    if pieces.iter().any(|p| p.is_empty()) {
        return;
    }
    let mut idx = vec![0u32; pieces.len()];
    loop {
        f(&idx);
        let mut d = pieces.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if (idx[d] as usize) < pieces[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

pub fn strides(dims: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1].saturating_mul(dims[d + 1]);
    }
    s
}

pub fn checked_product(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_selection_of_a_huge_extent_makes_no_pieces() {
        // Found by fuzzing (open_read): shape (0, 2^40) read whole allocated 6 GiB of pieces.
        let sel = [AxisSelection::all(0), AxisSelection::all(1 << 40)];
        let geom = Geometry::new(&[0, 1 << 40], &[1, 1], 4, &sel).unwrap();
        assert_eq!(geom.out_bytes(), Some(0));
        assert!(geom.pieces.iter().all(|p| p.is_empty()));
    }

    struct Dense;
    impl ChunkStore for Dense {
        fn locate(&self, chunk: &[u64]) -> Option<StoredChunk> {
            // Chunk (i, j) of a 3x3 grid stored back to back, 100 bytes each; (1,1) missing.
            if chunk == [1, 1] {
                return None;
            }
            Some(StoredChunk { address: (chunk[0] * 3 + chunk[1]) * 100, size: 100, filter_mask: 0 })
        }
    }

    #[test]
    fn plan_splits_fills_and_coalesces_neighbours() {
        let sel = [AxisSelection::all(30), AxisSelection::all(30)];
        let geom = Geometry::new(&[30, 30], &[10, 10], 1, &sel).unwrap();
        let plan = make_plan(&geom, &Dense, 1, false).unwrap();
        assert_eq!(plan.fills.len(), 1);
        let stored: usize = plan.batches.iter().map(|b| b.tasks.len()).sum();
        assert_eq!(stored, 8);
        // 800 bytes over 1 thread x 4 -> batches of at most 200 bytes.
        assert!(plan.batches.iter().all(|b| b.len <= 200));
        assert_eq!(plan.batches[0].start, 0);
    }

    #[test]
    fn direct_only_when_output_rows_match_chunk_rows() {
        let sel = [AxisSelection::all(30), AxisSelection::all(10)];
        let geom = Geometry::new(&[30, 10], &[10, 10], 4, &sel).unwrap();
        let task = ChunkTask { pieces: vec![1, 0], stored: None, skip: 0 };
        assert!(geom.is_direct(&task));
        assert_eq!(geom.out_offset(&task), 10 * 10 * 4);
        let sel = [AxisSelection::all(30), AxisSelection::all(20)];
        let geom = Geometry::new(&[30, 20], &[10, 10], 4, &sel).unwrap();
        assert!(!geom.is_direct(&task));
    }

    #[test]
    fn empty_selection_has_no_tasks() {
        let sel = [AxisSelection::Range { start: 0, count: 0, step: 1 }];
        let geom = Geometry::new(&[30], &[10], 1, &sel).unwrap();
        let plan = make_plan(&geom, &Dense, 2, false).unwrap();
        assert!(plan.fills.is_empty() && plan.batches.is_empty());
    }
}
