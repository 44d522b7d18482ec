"""Sparse matrices stored as CSR/CSC groups: AnnData's ``csr_matrix`` / ``csc_matrix``
encodings (``encoding-type`` with a ``shape`` attribute; the older ``h5sparse_format``
/ ``h5sparse_shape`` of anndata < 0.7) and 10x Genomics ``matrix`` groups (CSC of
features x barcodes, with a ``shape`` dataset).

Such a group opens as a SparseDataset (``f["X"]``): a Group (string keys, ``.attrs``,
``.keys()`` work as on any group) that is also a matrix with ``.shape``, ``.format``,
``.nnz``, ``.dtype``. ``SparseDataset(group)`` wraps a group explicitly. It reads
nothing but the attributes until asked:

- ``to_scipy()``: data, indices and indptr read concurrently (each read itself is
  chunk-parallel), as a ``scipy.sparse.csr_matrix`` / ``csc_matrix`` like anndata's;
- ``sp[rows]`` on CSR (``sp[:, cols]`` on CSC): only the stored ranges of the
  selected rows (columns) are read, in one parallel read per array;
- ``sum``, ``mean``, ``var``, ``std``, ``min``, ``max``, ``count_nonzero`` along
  ``axis=None|0|1``, with the implicit zeros counted as numpy would on the dense
  matrix, processed in blocks of the major axis (memory: one block, not the matrix).
  Results are numpy arrays (1-D for an axis), not ``np.matrix``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import numpy as np

from ..objects.group import Group, has_member
from ..objects.values import text
from .moments import float_result_dtype, merge_moments, sum_dtype
from .._native import Error, FormatError

__all__ = ["SparseDataset", "is_sparse_group"]

# Stored entries per block in the reductions: bounds their memory.
_BLOCK_NNZ = 1 << 23


def _layout(group: Any) -> Optional[tuple[str, tuple[int, ...]]]:
    """('csr'|'csc', shape) of a sparse group, or None."""
    # indptr first: the rarest member name, so most groups are ruled out by one lookup
    if not all(has_member(group, k) for k in ("indptr", "indices", "data")):
        return None
    attrs = group.attrs
    if "encoding-type" in attrs:
        kind = text(attrs["encoding-type"])
        if kind in ("csr_matrix", "csc_matrix") and "shape" in attrs:
            return kind[:3], _sizes(group, attrs["shape"])
    if "h5sparse_format" in attrs and "h5sparse_shape" in attrs:
        kind = text(attrs["h5sparse_format"])
        if kind in ("csr", "csc"):
            return kind, _sizes(group, attrs["h5sparse_shape"])
    if has_member(group, "shape") and has_member(group, "barcodes"):  # 10x: features x barcodes, CSC
        return "csc", _sizes(group, group["shape"][()])
    return None


def _sizes(group: Any, value: Any) -> tuple[int, ...]:
    """A stored shape as ints; FormatError naming the group when it is not integers."""
    array = np.ravel(np.asarray(value))
    if array.dtype.kind not in "iu":
        raise FormatError(f"{group.file.filename}: {group.name}: sparse matrix shape must be integers, "
                          f"not {value!r}")
    return tuple(int(n) for n in array)


def is_sparse_group(group: Any) -> bool:
    """True for a group that SparseDataset opens."""
    return _layout(group) is not None


def open_group(group: Group) -> Group:
    """What a group opens as: a SparseDataset for a well-formed sparse group, else the
    group itself (a broken sparse encoding stays browsable as a plain group)."""
    try:
        return SparseDataset(group)
    except (TypeError, Error):  # not sparse, or a broken/unreadable encoding
        return group


class SparseDataset(Group):
    """A CSR or CSC matrix stored as a group of data/indices/indptr datasets.

    Also the group itself: ``sp["data"]``, ``sp.attrs``, ``sp.keys()`` and ``len(sp)``
    (the number of members) behave as on a Group; any other index selects rows (CSR)
    or columns (CSC)."""

    def __init__(self, group: Group):
        layout = _layout(group) if isinstance(group, Group) else None
        if layout is None:
            raise TypeError(f"{getattr(group, 'name', group)!r} is not a csr_matrix/csc_matrix or 10x matrix group")
        super().__init__(group.id, group.file, group.name)
        self.format, self.shape = layout
        if len(self.shape) != 2 or min(self.shape) < 0:
            raise FormatError(f"{self.file.filename}: {self.name}: sparse matrix shape must be "
                              f"2 non-negative sizes, not {self.shape}")
        self._indptr: Optional[np.ndarray] = None
        self._stored_indptr: Optional[np.ndarray] = None

    @property
    def group(self) -> Group:
        """The plain group (members data, indices, indptr)."""
        return Group(self.id, self.file, self.name)

    def __repr__(self) -> str:
        if not self:
            return "<Closed SparseDataset>"
        return f"<SparseDataset {self.name!r}: {self.format} {self.shape}, {self.dtype}, nnz {self.nnz}>"

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype:
        return self._member("data").dtype

    @property
    def nnz(self) -> int:
        return int(self._member("data").shape[0])

    def _member(self, name: str):
        return Group.__getitem__(self, name)

    @property
    def _major(self) -> int:
        """Axis the index pointers run along: rows for CSR, columns for CSC."""
        return 0 if self.format == "csr" else 1

    def indptr(self, threads: Optional[int] = None) -> np.ndarray:
        """The index pointers (read once, checked, kept), as int64."""
        if self._indptr is None:
            stored = self._member("indptr").read(threads=threads)
            ptr = check_indptr(stored, self.shape[self._major], self.nnz, f"{self.file.filename}: {self.name}")
            self._indptr, self._stored_indptr = ptr, stored
        return self._indptr

    def _matrix(self, data, indices, indptr, shape):
        """The scipy matrix with these arrays as they are (no index dtype unification,
        as anndata's to_memory: indices keep their stored width)."""
        import scipy.sparse

        cls = scipy.sparse.csr_matrix if self.format == "csr" else scipy.sparse.csc_matrix
        if data.ndim != 1 or indices.ndim != 1 or len(data) != len(indices):
            raise FormatError(f"{self.file.filename}: {self.name}: data (shape {data.shape}) and indices "
                              f"(shape {indices.shape}) must be 1-D of one length")
        check_indices(indices, shape[1 - self._major], f"{self.file.filename}: {self.name}")
        # scipy.sparse takes native byte order only (">f8" is its bare ValueError)
        data, indices, indptr = (_native_order(a) for a in (data, indices, indptr))
        matrix = cls(shape, dtype=data.dtype)
        matrix.data, matrix.indices, matrix.indptr = data, indices, indptr
        return matrix

    def to_scipy(self, threads: Optional[int] = None):
        """The whole matrix, data, indices and indptr read concurrently; indptr and
        indices keep the integer types they are stored with."""
        with ThreadPoolExecutor(3) as pool:
            data = pool.submit(self._member("data").read, threads=threads)
            indices = pool.submit(self._member("indices").read, threads=threads)
            indptr = pool.submit(self.indptr, threads)
            indptr.result()
            return self._matrix(data.result(), indices.result(), self._stored_indptr, self.shape)

    # ------------------------------------------------------------------ selection

    def __getitem__(self, index: Any):
        """A member by name (str/bytes, as a Group); else rows of a CSR matrix
        (``sp[rows]``, ``sp[rows, :]``) or columns of a CSC one (``sp[:, cols]``): an
        int, slice, integer list/array or boolean mask."""
        if isinstance(index, (str, bytes)):
            return Group.__getitem__(self, index)
        return self.read_major(self._major_index(index))

    def _major_index(self, index: Any) -> Any:
        entries = index if isinstance(index, tuple) else (index,)
        n_minor = self.shape[1 - self._major]

        def full(entry: Any) -> bool:  # a slice over the whole minor axis (not an array: no ==)
            return isinstance(entry, slice) and range(*entry.indices(n_minor)) == range(n_minor)

        if self._major == 0 and len(entries) <= 2 and (len(entries) == 1 or full(entries[1])):
            return entries[0]
        if self._major == 1 and len(entries) == 2 and full(entries[0]):
            return entries[1]
        axis = "rows (sp[rows] or sp[rows, :])" if self._major == 0 else "columns (sp[:, cols])"
        raise IndexError(f"a {self.format} SparseDataset is indexed by {axis} only")

    def read_major(self, index: Any, threads: Optional[int] = None):
        """The matrix restricted to the selected rows (CSR) or columns (CSC), in the
        order given; only their stored ranges are read."""
        n_major = self.shape[self._major]
        ptr = self.indptr(threads)  # checked against the shape before arange(n_major) is made
        picked = np.arange(n_major)[index]
        picked = np.atleast_1d(picked).astype(np.int64)
        starts, ends = ptr[picked], ptr[picked + 1]
        lengths = ends - starts
        new_ptr = np.concatenate(([0], np.cumsum(lengths)))
        shape = list(self.shape)
        shape[self._major] = len(picked)
        if len(picked) and (np.diff(picked) == 1).all():
            sel = np.s_[int(starts[0]):int(ends[-1])]  # a run of majors: one range
            data, indices = self._read_pair(sel, threads)
            return self._matrix(data, indices, new_ptr, tuple(shape))
        unique = np.unique(picked)
        positions = _ranges(ptr[unique], ptr[unique + 1])
        data, indices = self._read_pair(np.s_[positions], threads)
        uniq_ptr = np.concatenate(([0], np.cumsum(ptr[unique + 1] - ptr[unique])))
        # Stored entries of each picked major, in the requested order (repeats allowed).
        where = np.searchsorted(unique, picked)
        order = _ranges(uniq_ptr[where], uniq_ptr[where + 1])
        return self._matrix(data[order], indices[order], new_ptr, tuple(shape))

    def _read_pair(self, sel: Any, threads: Optional[int]) -> tuple[np.ndarray, np.ndarray]:
        with ThreadPoolExecutor(2) as pool:
            data = pool.submit(self._member("data").read, sel, threads=threads)
            indices = pool.submit(self._member("indices").read, sel, threads=threads)
            return data.result(), indices.result()

    # ------------------------------------------------------------------ reductions

    def sum(self, axis=None, dtype=None, threads: Optional[int] = None) -> Any:
        acc = np.dtype(dtype) if dtype is not None else sum_dtype(self.dtype)
        return self._reduce_sums(axis, threads, lambda d: d.astype(acc), acc)

    def count_nonzero(self, axis=None, threads: Optional[int] = None) -> Any:
        # a cell stored twice counts once (its entries summed first), as on the dense matrix
        result = self._reduce_sums(axis, threads, lambda d: (d != 0).astype(np.intp), np.dtype(np.intp),
                                   one_entry_per_cell=True)
        return int(result) if axis is None else result

    def mean(self, axis=None, dtype=None, threads: Optional[int] = None) -> Any:
        out = np.dtype(dtype) if dtype is not None else float_result_dtype(self.dtype)
        sums = self._reduce_sums(axis, threads, lambda d: d.astype(np.float64), np.dtype(np.float64))
        count = self._count(axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (sums / count).astype(out)[()]

    def var(self, axis=None, dtype=None, ddof: float = 0, threads: Optional[int] = None) -> Any:
        out = np.dtype(dtype) if dtype is not None else float_result_dtype(self.dtype)
        _n, _mean, m2 = self._moments(axis, threads)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (m2 / max(self._count(axis) - ddof, 0)).astype(out)[()]

    def std(self, axis=None, dtype=None, ddof: float = 0, threads: Optional[int] = None) -> Any:
        var = self.var(axis, np.float64, ddof, threads)
        out = np.dtype(dtype) if dtype is not None else float_result_dtype(self.dtype)
        return np.sqrt(var).astype(out)[()]

    def min(self, axis=None, threads: Optional[int] = None) -> Any:
        return self._extreme(np.minimum, axis, threads)

    def max(self, axis=None, threads: Optional[int] = None) -> Any:
        return self._extreme(np.maximum, axis, threads)

    # internals: "within" reduces each major's own entries (CSR axis 1, CSC axis 0),
    # "across" reduces over the majors (CSR axis 0, CSC axis 1), None both.

    def _count(self, axis) -> int:
        if axis is None:
            return self.shape[0] * self.shape[1]
        return self.shape[_axis(axis)]

    def _mode(self, axis) -> str:
        if axis is None:
            return "all"
        return "within" if _axis(axis) != self._major else "across"

    def _blocks(self, threads, one_entry_per_cell: bool = True):
        """(first major, major ids of the entries, data, minor indices) per block; the
        indices checked (a negative one would otherwise wrap to the last cell), and,
        with one_entry_per_cell, entries stored more than once in one cell summed into
        one, as scipy and the dense matrix count them (sums need not: they add alike)."""
        ptr = self.indptr(threads)
        n_major = len(ptr) - 1
        n_minor = self.shape[1 - self._major]
        where = f"{self.file.filename}: {self.name}"
        start = 0
        while start < n_major:
            stop = int(np.searchsorted(ptr, ptr[start] + _BLOCK_NNZ, side="right")) - 1
            stop = min(max(stop, start + 1), n_major)
            data, indices = self._read_pair(np.s_[int(ptr[start]):int(ptr[stop])], threads)
            if data.ndim != 1 or indices.shape != data.shape:
                raise FormatError(f"{where}: data (shape {data.shape}) and indices (shape {indices.shape}) "
                                  "must be 1-D of one length")
            check_indices(indices, n_minor, where)
            majors = np.repeat(np.arange(stop - start), np.diff(ptr[start:stop + 1]))
            firsts = ptr[start + 1:stop] - ptr[start]  # where each major after the first begins
            if not one_entry_per_cell or _canonical(indices, firsts):
                yield start, stop, majors, data, indices.astype(np.int64)
            else:
                yield start, stop, *_sum_duplicates(majors, data, indices.astype(np.int64), n_minor)
            start = stop

    def _reduce_sums(self, axis, threads, convert, acc: np.dtype, one_entry_per_cell: bool = False) -> Any:
        mode = self._mode(axis)
        self.indptr(threads)  # checked against the shape before an output of that size is made
        n_minor = self.shape[1 - self._major]
        out = np.zeros(self.shape[self._major] if mode == "within" else n_minor, dtype=acc)
        total = np.zeros((), dtype=acc)
        for start, stop, majors, data, indices in self._blocks(threads, one_entry_per_cell):
            values = convert(data)
            if mode == "within":
                np.add.at(out[start:stop], majors, values)
            elif mode == "across":
                np.add.at(out, indices, values)
            else:
                total = total + values.sum(dtype=acc)
        return total[()] if mode == "all" else out

    def _extreme(self, ufunc, axis, threads) -> Any:
        mode = self._mode(axis)
        n_minor = self.shape[1 - self._major]
        # as numpy: an error only when the axis reduced over is empty (a (0, n) matrix
        # gives an empty result along axis 1, and an error along axis 0 or None)
        reduced = {"within": n_minor, "across": self.shape[self._major], "all": self.shape[0] * self.shape[1]}[mode]
        if reduced == 0:
            raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which has no identity")
        self.indptr(threads)  # checked against the shape before an output of that size is made
        size = self.shape[self._major] if mode == "within" else (n_minor if mode == "across" else 1)
        out = np.full(size, _identity(ufunc, self.dtype), dtype=self.dtype.newbyteorder("="))
        stored = np.zeros(size, dtype=np.int64)  # stored entries per cell: the rest are zeros
        for start, stop, majors, data, indices in self._blocks(threads):
            cells = {"within": majors + start, "across": indices, "all": np.zeros(len(data), np.int64)}[mode]
            ufunc.at(out, cells, data)
            stored += np.bincount(cells, minlength=size)
        span = {"within": n_minor, "across": self.shape[self._major], "all": self.shape[0] * self.shape[1]}[mode]
        implicit = stored < span
        out[implicit] = ufunc(out[implicit], np.zeros(1, dtype=out.dtype))
        return out[0] if mode == "all" else out

    def _moments(self, axis, threads):
        """(count, mean, M2) per output cell, implicit zeros included: exact two-pass
        per block, blocks combined with Chan et al.'s formula."""
        mode = self._mode(axis)
        n_minor = self.shape[1 - self._major]
        self.indptr(threads)  # checked against the shape before an output of that size is made
        if mode == "within":  # every major lies in one block: two passes per block
            out_m2 = np.zeros(self.shape[self._major])
            out_mean = np.zeros(self.shape[self._major])
            for start, stop, majors, data, _ in self._blocks(threads):
                m, m2 = _block_moments(majors, data.astype(np.float64), stop - start, n_minor)
                out_mean[start:stop], out_m2[start:stop] = m, m2
            return n_minor, out_mean, out_m2
        size = n_minor if mode == "across" else 1
        n, mean, m2 = 0, np.zeros(size), np.zeros(size)
        for start, stop, majors, data, indices in self._blocks(threads):
            cells = indices if mode == "across" else np.zeros(len(data), np.int64)
            rows = (stop - start) * (1 if mode == "across" else n_minor)
            bmean, bm2 = _block_moments(cells, data.astype(np.float64), size, rows)
            if rows:  # an empty block changes nothing
                n, mean, m2 = merge_moments((n, mean, m2), (rows, bmean, bm2))
        return n, (mean if mode == "across" else mean[0]), (m2 if mode == "across" else m2[0])


def check_indptr(stored: np.ndarray, n_major: int, nnz: int, where: str) -> np.ndarray:
    """The index pointers as int64, checked: n_major + 1 of them, from 0, never
    decreasing, at most nnz (scipy's kernels trust them)."""
    _check_integers(stored, "indptr", where)
    ptr = np.asarray(stored, dtype=np.int64)
    if ptr.shape != (n_major + 1,) or ptr[0] != 0 or (np.diff(ptr) < 0).any() or ptr[-1] > nnz:
        raise FormatError(f"{where}: indptr (shape {np.shape(stored)}) does not fit {n_major} "
                          f"rows/columns and {nnz} stored values")
    return ptr


def check_indices(indices: np.ndarray, n_minor: int, where: str) -> None:
    """Minor indices must lie in [0, n_minor): scipy's kernels index with them unchecked,
    so a broken file would otherwise write out of bounds later (one min/max pass)."""
    _check_integers(indices, "indices", where)
    if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= n_minor):
        raise FormatError(f"{where}: indices range from {int(indices.min())} to {int(indices.max())}, "
                          f"outside 0..{n_minor - 1}")


def _check_integers(values: np.ndarray, name: str, where: str) -> None:
    """Index arrays must be stored as integers scipy indexes with (floats, strings and
    64-bit unsigned ones make a matrix that fails on first use)."""
    dtype = np.asarray(values).dtype
    if dtype.kind not in "iu" or (dtype.kind == "u" and dtype.itemsize == 8):
        raise FormatError(f"{where}: {name} are stored as {dtype}, not as signed or 8-32 bit unsigned integers")


def _canonical(indices: np.ndarray, firsts: np.ndarray) -> bool:
    """Whether every major's minor indices strictly increase (canonical CSR/CSC, the
    usual case: then no cell is stored twice). firsts: where each major but the first
    begins in indices."""
    if len(indices) < 2:
        return True
    increasing = indices[1:] > indices[:-1]
    firsts = firsts[(firsts > 0) & (firsts < len(indices))]
    increasing[firsts - 1] = True  # a new major may start at any index
    return bool(increasing.all())


def _sum_duplicates(majors: np.ndarray, data: np.ndarray, indices: np.ndarray, n_minor: int):
    """(majors, data, indices) with the entries of one cell summed (in the data's type,
    as scipy's sum_duplicates); unchanged when no cell is stored twice."""
    keys = majors * n_minor + indices
    if len(np.unique(keys)) == len(keys):  # unsorted, but no cell twice: keep the order
        return majors, data, indices
    unique, inverse = np.unique(keys, return_inverse=True)
    summed = np.zeros(len(unique), dtype=data.dtype)
    np.add.at(summed, inverse, data)
    return unique // n_minor, summed, unique % n_minor


def _block_moments(cells, values, size, count):
    """Per cell, the mean and M2 of `count` values: the stored ones plus zeros."""
    sums = np.bincount(cells, weights=values, minlength=size)
    stored = np.bincount(cells, minlength=size)
    mean = sums / count if count else np.zeros(size)
    dev = values - mean[cells]
    m2 = np.bincount(cells, weights=dev * dev, minlength=size) + (count - stored) * mean * mean
    return mean, m2


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenation of arange(s, e) for each pair, vectorised."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(total, dtype=np.int64) + offsets


def _axis(axis) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -2 <= axis < 2:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 2")
    return int(axis) % 2


def _identity(ufunc, dtype: np.dtype):
    if dtype.kind == "f":
        return np.inf if ufunc is np.minimum else -np.inf
    if dtype.kind == "b":
        return ufunc is np.minimum
    info = np.iinfo(dtype)
    return info.max if ufunc is np.minimum else info.min


def _native_order(array: np.ndarray) -> np.ndarray:
    """The array in native byte order (itself when it is already)."""
    if array.dtype.isnative:
        return array
    return array.astype(array.dtype.newbyteorder("="))
