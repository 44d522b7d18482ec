//! Row-major grids of chunks: scaled coordinates <-> linear indexes.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grid {
    dims: Vec<u64>,
}

impl Grid {
    pub fn new(dims: Vec<u64>) -> Self {
        Grid { dims }
    }

    /// The grid of chunks covering an extent of `dims` elements (partial edge chunks count).
    pub fn covering(dims: &[u64], chunk_dims: &[u64]) -> Self {
        Grid::new(dims.iter().zip(chunk_dims).map(|(&d, &c)| d.div_ceil(c.max(1))).collect())
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Number of cells; `None` if it does not fit in 64 bits.
    pub fn cells(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    pub fn contains(&self, coords: &[u64]) -> bool {
        coords.len() == self.dims.len() && coords.iter().zip(&self.dims).all(|(c, d)| c < d)
    }

    /// Row-major linear index of `coords`; `None` outside the grid or on overflow.
    pub fn linear(&self, coords: &[u64]) -> Option<u64> {
        if !self.contains(coords) {
            return None;
        }
        coords.iter().zip(&self.dims).try_fold(0u64, |acc, (&c, &d)| acc.checked_mul(d)?.checked_add(c))
    }

    /// Coordinates of linear index `linear`; `None` if it lies outside the grid.
    pub fn coords(&self, linear: u64) -> Option<Vec<u64>> {
        let mut out = vec![0u64; self.dims.len()];
        self.coords_into(linear, &mut out).then_some(out)
    }

    /// Like [`Grid::coords`] into a caller's buffer of `rank()` values (no allocation);
    /// false if `linear` lies outside the grid.
    pub fn coords_into(&self, mut linear: u64, out: &mut [u64]) -> bool {
        if out.len() != self.dims.len() {
            return false;
        }
        for (slot, &d) in out.iter_mut().zip(&self.dims).rev() {
            if d == 0 {
                return false;
            }
            *slot = linear % d;
            linear /= d;
        }
        linear == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let g = Grid::covering(&[10, 7], &[3, 4]);
        assert_eq!(g.dims(), &[4, 2]);
        assert_eq!(g.cells(), Some(8));
        assert_eq!(g.linear(&[2, 1]), Some(5));
        assert_eq!(g.coords(5), Some(vec![2, 1]));
        assert_eq!(g.coords(8), None);
        assert_eq!(g.linear(&[4, 0]), None);
        assert_eq!(g.linear(&[1]), None);
        assert_eq!(Grid::new(vec![u64::MAX, 3]).cells(), None);
        assert_eq!(Grid::new(vec![0, 3]).coords(0), None);
    }
}
