//! Orthogonal selections and how they cut across the chunk grid.
//!
//! A selection picks, independently on each axis, either a strided range or a sorted
//! list of indices. Along each axis we precompute which chunks it touches and, for
//! each such chunk, which positions inside the chunk go to which output positions.

use crate::error::{Error, Result};

/// The selection along one axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AxisSelection {
    /// `start, start+step, ...` (`count` indices), step >= 1.
    Range { start: u64, count: u64, step: u64 },
    /// Strictly increasing indices.
    Points(Vec<u64>),
}

impl AxisSelection {
    pub fn all(len: u64) -> Self {
        AxisSelection::Range { start: 0, count: len, step: 1 }
    }

    pub fn count(&self) -> u64 {
        match self {
            AxisSelection::Range { count, .. } => *count,
            AxisSelection::Points(p) => p.len() as u64,
        }
    }

    /// An upper bound on the chunks of length `chunk_len` (>= 1) the selection touches.
    pub fn chunks_touched_at_most(&self, chunk_len: u64) -> u64 {
        let (first, last) = match self {
            AxisSelection::Range { count: 0, .. } => return 0,
            AxisSelection::Range { start, count, step } => {
                (*start, (count - 1).checked_mul(*step).and_then(|n| n.checked_add(*start)).unwrap_or(u64::MAX))
            }
            AxisSelection::Points(p) => match (p.first(), p.last()) {
                (Some(&first), Some(&last)) => (first, last),
                _ => return 0,
            },
        };
        let span = (last / chunk_len.max(1)).saturating_sub(first / chunk_len.max(1)).saturating_add(1);
        span.min(self.count())
    }

    /// Checks the selection lies inside an axis of length `len`.
    pub fn validate(&self, len: u64, axis: usize) -> Result<()> {
        let bad = |msg: String| Err(Error::invalid_argument(format!("axis {}: {}", axis, msg)));
        match self {
            AxisSelection::Range { start, count, step } => {
                if *step == 0 {
                    return bad("step must be at least 1".into());
                }
                if *count == 0 {
                    return Ok(());
                }
                let last = (count - 1).checked_mul(*step).and_then(|d| d.checked_add(*start));
                match last {
                    Some(last) if last < len => Ok(()),
                    _ => bad(format!("range start {} count {} step {} exceeds length {}", start, count, step, len)),
                }
            }
            AxisSelection::Points(points) => {
                if points.windows(2).any(|w| w[0] >= w[1]) {
                    return bad("point indices must be strictly increasing".into());
                }
                match points.last() {
                    Some(&last) if last >= len => bad(format!("index {} out of range for length {}", last, len)),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// Positions inside one chunk along one axis, increasing; one per output position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InChunk {
    Strided { start: u64, step: u64, len: u64 },
    List(Vec<u64>),
}

impl InChunk {
    pub fn len(&self) -> u64 {
        match self {
            InChunk::Strided { len, .. } => *len,
            InChunk::List(v) => v.len() as u64,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The i-th position (i < len).
    pub fn get(&self, i: u64) -> u64 {
        match self {
            InChunk::Strided { start, step, .. } => start + i * step,
            InChunk::List(v) => v[i as usize],
        }
    }
}

/// The part of one chunk selected along one axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisPiece {
    /// Chunk number along the axis.
    pub chunk: u64,
    /// First output position fed by this chunk (outputs are consecutive).
    pub out_start: u64,
    pub in_chunk: InChunk,
}

impl AxisPiece {
    /// True when the piece covers `0..chunk_len` in order.
    pub fn is_whole(&self, chunk_len: u64) -> bool {
        match &self.in_chunk {
            InChunk::Strided { start, step, len } => *start == 0 && *len == chunk_len && (*step == 1 || *len == 1),
            InChunk::List(v) => v.len() as u64 == chunk_len && v.first() == Some(&0) && v.last() == Some(&(chunk_len - 1)),
        }
    }
}

/// Cut one axis selection into per-chunk pieces (chunk length `chunk_len` >= 1).
pub fn axis_pieces(sel: &AxisSelection, chunk_len: u64) -> Result<Vec<AxisPiece>> {
    match sel {
        AxisSelection::Range { start, count, step } => range_pieces(*start, *count, *step, chunk_len),
        AxisSelection::Points(points) => Ok(point_pieces(points, chunk_len)),
    }
}

/// Chunks one axis of a selection may touch: 2^26 (a 1-D 256 GiB dataset in 4 KiB
/// chunks), whose pieces take 2.5 GiB. Beyond it the plan's memory, not the data's,
/// would exhaust the machine (the pages of a reservation the system granted are
/// filled as pieces are added, until the system kills the process).
const MAX_PIECES_PER_AXIS: u64 = 1 << 26;

/// A range's pieces, one per chunk it touches. Their room is taken fallibly: a range
/// over a huge extent in small chunks (2^40 elements in chunks of 1024, which a
/// reduction's small output does not refuse) would otherwise make the allocator abort
/// the host program.
fn range_pieces(start: u64, count: u64, step: u64, chunk_len: u64) -> Result<Vec<AxisPiece>> {
    let mut pieces = Vec::new();
    if count > 0 {
        let last = start.saturating_add((count - 1).saturating_mul(step));
        let chunks = (last / chunk_len - start / chunk_len).saturating_add(1).min(count);
        if chunks > MAX_PIECES_PER_AXIS {
            return Err(too_many_chunks(chunks));
        }
        pieces.try_reserve_exact(chunks as usize).map_err(|_| too_many_chunks(chunks))?;
    }
    let mut i = 0u64;
    while i < count {
        let index = start + i * step;
        let chunk = index / chunk_len;
        let within = index % chunk_len;
        // Indices index, index+step, ... that stay inside this chunk.
        let fit = (chunk_len - 1 - within) / step + 1;
        let len = fit.min(count - i);
        pieces.push(AxisPiece { chunk, out_start: i, in_chunk: InChunk::Strided { start: within, step, len } });
        i += len;
    }
    Ok(pieces)
}

fn too_many_chunks(chunks: u64) -> Error {
    Error::invalid_argument(format!(
        "the selection spans {} chunks along one axis: too many to plan in memory; select less at a time",
        chunks
    ))
}

fn point_pieces(points: &[u64], chunk_len: u64) -> Vec<AxisPiece> {
    let mut pieces: Vec<AxisPiece> = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        let chunk = p / chunk_len;
        let within = p % chunk_len;
        match pieces.last_mut() {
            Some(AxisPiece { chunk: c, in_chunk: InChunk::List(v), .. }) if *c == chunk => v.push(within),
            _ => pieces.push(AxisPiece { chunk, out_start: i as u64, in_chunk: InChunk::List(vec![within]) }),
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_cut_into_chunks() {
        let sel = AxisSelection::Range { start: 3, count: 5, step: 2 }; // 3 5 7 9 11
        let pieces = axis_pieces(&sel, 4).unwrap();
        assert_eq!(pieces.len(), 3);
        let strided = |start, len| InChunk::Strided { start, step: 2, len };
        assert_eq!(pieces[0], AxisPiece { chunk: 0, out_start: 0, in_chunk: strided(3, 1) });
        assert_eq!(pieces[1], AxisPiece { chunk: 1, out_start: 1, in_chunk: strided(1, 2) });
        assert_eq!(pieces[2], AxisPiece { chunk: 2, out_start: 3, in_chunk: strided(1, 2) });
    }

    #[test]
    fn points_grouped_by_chunk() {
        let pieces = axis_pieces(&AxisSelection::Points(vec![0, 3, 4, 9]), 4).unwrap();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0].in_chunk, InChunk::List(vec![0, 3]));
        assert_eq!(pieces[1], AxisPiece { chunk: 1, out_start: 2, in_chunk: InChunk::List(vec![0]) });
        assert_eq!(pieces[2].in_chunk.get(0), 1);
    }

    #[test]
    fn whole_chunk_detection() {
        let pieces = axis_pieces(&AxisSelection::all(10), 4).unwrap();
        assert!(pieces[0].is_whole(4));
        assert!(pieces[1].is_whole(4));
        assert!(!pieces[2].is_whole(4)); // edge chunk: 2 of 4
    }

    #[test]
    fn validation() {
        assert!(AxisSelection::Range { start: 0, count: 3, step: 4 }.validate(9, 0).is_ok());
        assert!(AxisSelection::Range { start: 0, count: 3, step: 4 }.validate(8, 0).is_err());
        assert!(AxisSelection::Range { start: 0, count: 1, step: 0 }.validate(8, 0).is_err());
        assert!(AxisSelection::Points(vec![1, 1]).validate(8, 0).is_err());
        assert!(AxisSelection::Points(vec![1, 8]).validate(8, 0).is_err());
        assert!(AxisSelection::Range { start: u64::MAX, count: 2, step: 2 }.validate(8, 0).is_err());
    }
}
