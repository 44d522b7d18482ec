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
- ``sp[rows]`` on CSR (``sp[:, cols]`` on CSC; ``...`` for the whole other axis):
  the index forms scipy.sparse takes along that axis, and IndexErrors naming the
  file and group for the rest; only the stored ranges of the selected rows
  (columns) are read, in one parallel read per array;
- ``sum``, ``mean``, ``var``, ``std``, ``min``, ``max``, ``count_nonzero`` along
  ``axis=None|0|1|-1|-2``: numpy's answer on the dense matrix scipy's toarray()
  makes (implicit zeros counted, a cell stored twice summed first in the data's
  type), processed in blocks of the major axis (memory: one block, not the matrix).
  Results are numpy arrays (1-D for an axis), not ``np.matrix``.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any, Optional

import numpy as np

from ..objects.dataset import Dataset
from ..objects.group import Group, has_member
from ..objects.references import Reference
from ..objects.values import text
from .moments import count_total, float_result_dtype, merge_moments, sum_dtype
from .._native import Error, FormatError
from .._optional import require
from ..readahead import reading_pool

# Below this many stored bytes, a matrix's three arrays are read one after another: a
# file with hundreds of small matrices (in uns) spent most of its time starting threads.
_CONCURRENT_READ_BYTES = 4 << 20

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
    # scipy.sparse keeps sizes as int64: a larger one (a uint64 shape) could not be a matrix
    if array.dtype.kind not in "iu" or any(int(n) >= 2 ** 63 for n in array):
        raise FormatError(f"{group.file.filename}: {group.name}: sparse matrix shape must be integers "
                          f"below 2**63, not {value!r}")
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
        self._check_members()
        self._indptr: Optional[np.ndarray] = None
        self._stored_indptr: Optional[np.ndarray] = None

    def _check_members(self) -> None:
        """data, indices and indptr must be 1-D datasets, data numbers as long as indices
        (scipy refuses anything else): metadata only, so a broken group is told at once,
        typed, rather than by a numpy error on a later read."""
        members = {name: self._member(name) for name in ("data", "indices", "indptr")}
        for name, member in members.items():
            if not isinstance(member, Dataset) or member.shape is None or len(member.shape) != 1:
                shape = getattr(member, "shape", None)
                raise FormatError(f"{self._where}: {name} must be a 1-D dataset, not "
                                  f"{type(member).__name__} {'' if shape is None else shape}")
        data, indices = members["data"], members["indices"]
        if data.shape != indices.shape:
            raise FormatError(f"{self._where}: data (shape {data.shape}) and indices (shape "
                              f"{indices.shape}) must be 1-D of one length")
        if data.dtype.kind not in "biufc":
            raise FormatError(f"{self._where}: data are stored as {data.dtype}, not as numbers")

    @property
    def _where(self) -> str:
        """File and group, for error messages (ClosedError once the file is closed)."""
        return f"{self.file.filename}: {self.name}"

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
        self._check_open()  # as Dataset.ndim (and h5py's) on a closed file
        return 2

    @property
    def dtype(self) -> np.dtype:
        return self._member("data").dtype

    @property
    def nnz(self) -> int:
        return int(self._member("data").shape[0])

    def _member(self, name: str):
        self._check_open()  # ClosedError, not the KeyError a closed group's lookup gives
        return Group.__getitem__(self, name)

    @property
    def _major(self) -> int:
        """Axis the index pointers run along: rows for CSR, columns for CSC."""
        return 0 if self.format == "csr" else 1

    def indptr(self, threads: Optional[int] = None) -> np.ndarray:
        """The index pointers (read once, checked, kept), as int64."""
        self._check_open()
        if self._indptr is None:
            stored = self._member("indptr").read(threads=threads)
            ptr = check_indptr(stored, self.shape[self._major], self.nnz, self._where)
            self._indptr, self._stored_indptr = ptr, stored
        return self._indptr

    def _matrix(self, data, indices, indptr, shape):
        """The scipy matrix with these arrays as they are (no index dtype unification,
        as anndata's to_memory: indices keep their stored width)."""
        sparse = require("scipy.sparse", "reading a sparse matrix", "sparse")

        cls = sparse.csr_matrix if self.format == "csr" else sparse.csc_matrix
        if data.ndim != 1 or indices.ndim != 1 or len(data) != len(indices):
            raise FormatError(f"{self._where}: data (shape {data.shape}) and indices "
                              f"(shape {indices.shape}) must be 1-D of one length")
        check_indices(indices, shape[1 - self._major], self._where)
        # scipy.sparse takes native byte order only (">f8" is its bare ValueError)
        data, indices, indptr = (_native_order(a) for a in (data, indices, indptr))
        try:
            matrix = cls(shape, dtype=data.dtype)
        except ValueError as error:  # a type scipy.sparse has no matrix of (float16): its words, and where
            raise ValueError(f"{self._where}: {error}") from None
        matrix.data, matrix.indices, matrix.indptr = data, indices, indptr
        return matrix

    def to_scipy(self, threads: Optional[int] = None):
        """The whole matrix, data, indices and indptr read concurrently (one after
        another when small: starting threads would cost more than the reads); indptr
        and indices keep the integer types they are stored with."""
        members = [self._member(name) for name in ("data", "indices", "indptr")]
        if sum(m.nbytes for m in members) < _CONCURRENT_READ_BYTES:
            data, indices = members[0].read(threads=threads), members[1].read(threads=threads)
            self.indptr(threads)
            return self._matrix(data, indices, self._stored_indptr, self.shape)
        with reading_pool(3) as pool:
            data = pool.submit(self._member("data").read, threads=threads)
            indices = pool.submit(self._member("indices").read, threads=threads)
            indptr = pool.submit(self.indptr, threads)
            indptr.result()
            return self._matrix(data.result(), indices.result(), self._stored_indptr, self.shape)

    # ------------------------------------------------------------------ selection

    def __getitem__(self, index: Any):
        """A member by name (str/bytes) or object reference, as a Group; else rows of a CSR matrix
        (``sp[rows]``, ``sp[rows, :]``, ``sp[rows, ...]``) or columns of a CSC one
        (``sp[:, cols]``, ``sp[..., cols]``): an int, slice, integer list/array or
        boolean mask, as scipy.sparse takes them."""
        if isinstance(index, (str, bytes, Reference)):
            return Group.__getitem__(self, index)
        self._check_open()
        return self.read_major(self._major_index(index))

    def _major_index(self, index: Any) -> Any:
        """The major-axis part of a 2-D index whose minor part is the whole axis
        (Ellipsis and a missing trailing index are whole axes, as in numpy)."""
        entries = list(index) if isinstance(index, tuple) else [index]
        ellipses = [i for i, entry in enumerate(entries) if entry is Ellipsis]
        if len(ellipses) > 1:
            raise IndexError(f"{self._where}: an index can only have a single ellipsis ('...')")
        if ellipses:  # it stands for as many whole axes as the other entries leave (maybe none)
            entries[ellipses[0]:ellipses[0] + 1] = [slice(None)] * max(0, 3 - len(entries))
        if len(entries) > 2:
            raise IndexError(f"{self._where}: too many indices ({len(entries)}) for a 2-D sparse matrix")
        entries += [slice(None)] * (2 - len(entries))
        major, minor = entries[self._major], entries[1 - self._major]
        n_minor = self.shape[1 - self._major]
        if not (isinstance(minor, slice) and range(*minor.indices(n_minor)) == range(n_minor)):
            axis = "rows (sp[rows] or sp[rows, :])" if self._major == 0 else "columns (sp[:, cols])"
            raise IndexError(f"{self._where}: a {self.format} SparseDataset is indexed by {axis} only")
        return major

    def _picked(self, index: Any) -> np.ndarray:
        """The major positions an index selects, in order, as int64 (scipy's rules: an
        int, a slice, a 1-D integer sequence, or a boolean mask as long as the axis)."""
        n = self.shape[self._major]
        axis = "row" if self._major == 0 else "column"
        if isinstance(index, slice):
            return np.arange(*index.indices(n), dtype=np.int64)
        if isinstance(index, (bool, np.bool_)):  # numpy would add an axis; scipy refuses np.bool_
            raise IndexError(f"{self._where}: a boolean ({index}) is not a {axis} index: "
                             f"use an integer or a mask of {n}")
        if isinstance(index, tuple):  # inside an index numpy reads a tuple as a sequence
            index = list(index)
        try:
            array = np.asarray(index)
        except ValueError:  # a ragged list
            array = np.asarray(None)
        if array.ndim > 1 or (array.ndim == 0 and array.dtype.kind not in "iu"):
            raise IndexError(f"{self._where}: {axis}s are selected by an int, a slice, a 1-D integer "
                             f"array or a boolean mask, not {index!r:.80}")
        if array.dtype.kind == "b":
            if array.shape != (n,):
                raise IndexError(f"{self._where}: a boolean {axis} mask must have {n} entries, not {len(array)}")
            return np.flatnonzero(array).astype(np.int64)
        if array.size == 0:
            return np.zeros(0, dtype=np.int64)
        if array.dtype.kind not in "iu":
            raise IndexError(f"{self._where}: {axis} indices must be integers, not {array.dtype}")
        outside = (array >= n) | (array < -n) if array.dtype.kind == "i" else array >= n
        if outside.any():
            raise IndexError(f"{self._where}: {axis} index {np.ravel(array[outside])[0]} is out of range "
                             f"for {n} {axis}s")
        array = np.atleast_1d(array).astype(np.int64)
        return np.where(array < 0, array + n, array)

    def read_major(self, index: Any, threads: Optional[int] = None):
        """The matrix restricted to the selected rows (CSR) or columns (CSC), in the
        order given; only their stored ranges are read."""
        ptr = self.indptr(threads)  # checked against the shape before positions are made
        picked = self._picked(index)
        starts, ends = ptr[picked], ptr[picked + 1]
        lengths = ends - starts
        new_ptr = self._selected_indptr(np.concatenate(([0], np.cumsum(lengths))))
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

    def _selected_indptr(self, new_ptr: np.ndarray) -> np.ndarray:
        """A selection's index pointers in the stored type, as scipy's and anndata's
        selections keep it (an int64 indptr beside int32 indices is a matrix scipy's
        tocoo refuses); int64 where repeated majors hold more entries than it counts."""
        stored = self._stored_indptr.dtype
        if new_ptr[-1] <= np.iinfo(stored).max:
            return new_ptr.astype(stored, copy=False)
        return new_ptr

    def _read_pair(self, sel: Any, threads: Optional[int], pool: Optional[Executor] = None
                   ) -> tuple[np.ndarray, np.ndarray]:
        """data[sel] and indices[sel], read concurrently (in `pool` when given: the
        blocks of a reduction share one rather than start two threads each)."""
        if pool is None:
            with reading_pool(2) as own:
                return self._read_pair(sel, threads, own)
        data = pool.submit(self._member("data").read, sel, threads=threads)
        indices = pool.submit(self._member("indices").read, sel, threads=threads)
        return data.result(), indices.result()

    # ------------------------------------------------------------------ reductions

    # Every reduction sees one value per cell: entries stored twice in a cell are first
    # summed in the data's type, as scipy's toarray()/sum_duplicates make the dense
    # matrix (bools or'ed, small integers wrapping), so results are numpy's on it.

    def sum(self, axis=None, dtype=None, threads: Optional[int] = None) -> Any:
        """The sum, as scipy's ``matrix.sum(axis, dtype)`` on the matrix read whole (axis
        None, 0 or 1; a 1-d array, not scipy's np.matrix), from the stored entries only.
        Unlike ``Dataset.sum``, no ``out`` or ``keepdims``."""
        out = np.dtype(dtype) if dtype is not None else sum_dtype(self.dtype)
        acc = _accumulator(out)
        sums = self._reduce_sums(axis, threads, acc)
        return sums if acc == out else sums.astype(out)[()]

    def count_nonzero(self, axis=None, threads: Optional[int] = None) -> Any:
        """The number of non-zero cells, as scipy's ``count_nonzero(axis)``: stored zeros
        are not counted."""
        result = self._reduce_sums(axis, threads, np.dtype(np.intp), nonzero=True)
        return count_total(result) if axis is None else result

    def mean(self, axis=None, dtype=None, threads: Optional[int] = None) -> Any:
        """The mean over all cells (implicit zeros included), as scipy's ``mean(axis,
        dtype)``; ``dtype`` a float (or complex) type."""
        out = self._float_dtype("mean", dtype, "fc") if dtype is not None else _mean_dtype(self.dtype)
        # complex data keep their imaginary part (numpy's mean of them is complex)
        acc = np.dtype(np.complex128 if "c" in (self.dtype.kind, out.kind) else np.float64)
        sums = self._reduce_sums(axis, threads, acc)
        # a float count: the cells of a (6, 2**62) matrix are past int64, and numpy 1
        # divides by such a Python int into a Python float
        count = np.float64(self._count(axis))
        with np.errstate(invalid="ignore", divide="ignore"):
            return (sums / count).astype(out)[()]

    def var(self, axis=None, dtype=None, ddof: float = 0, threads: Optional[int] = None) -> Any:
        """The variance over all cells (implicit zeros included), as numpy's ``var`` of the
        dense matrix (divided by ``n - ddof``)."""
        out = self._float_dtype("var", dtype, "f") if dtype is not None else _var_dtype(self.dtype)
        if self.dtype.kind == "c":  # numpy: the mean of |x - mean|^2, the real and imaginary parts' sum
            m2 = self._moments(axis, threads, np.real)[2] + self._moments(axis, threads, np.imag)[2]
        else:
            m2 = self._moments(axis, threads)[2]
        with np.errstate(invalid="ignore", divide="ignore"):
            return (m2 / np.float64(max(self._count(axis) - ddof, 0))).astype(out)[()]

    def std(self, axis=None, dtype=None, ddof: float = 0, threads: Optional[int] = None) -> Any:
        """The standard deviation over all cells, as numpy's ``std`` of the dense
        matrix."""
        out = self._float_dtype("std", dtype, "f") if dtype is not None else _var_dtype(self.dtype)
        var = self.var(axis, np.float64, ddof, threads)
        return np.sqrt(var).astype(out)[()]

    def _float_dtype(self, name: str, dtype: Any, kinds: str) -> np.dtype:
        """A dtype= of mean/var/std: numpy's integer or bool ones accumulate in that type
        (a wrapped, truncated answer), so only float (mean: complex too) ones are taken."""
        dtype = np.dtype(dtype)
        if dtype.kind not in kinds:
            raise TypeError(f"{self._where}: {name}(dtype={dtype}) is not supported: give a float"
                            f"{' or complex' if 'c' in kinds else ''} type")
        return dtype

    def min(self, axis=None, threads: Optional[int] = None) -> Any:
        """The smallest cell (an implicit zero counts), as scipy's ``min(axis)``."""
        return self._extreme(np.minimum, axis, threads)

    def max(self, axis=None, threads: Optional[int] = None) -> Any:
        """The largest cell (an implicit zero counts), as scipy's ``max(axis)``."""
        return self._extreme(np.maximum, axis, threads)

    # internals: "within" reduces each major's own entries (CSR axis 1, CSC axis 0),
    # "across" reduces over the majors (CSR axis 0, CSC axis 1), None both.

    def _reduced_axis(self, axis) -> Optional[int]:
        """None (both axes) or 0/1: numpy's axis forms, tuples of axes included."""
        if not isinstance(axis, tuple):
            return None if axis is None else _axis(axis)
        axes = {_axis(a) for a in axis}
        if len(axes) < len(axis):
            raise ValueError("duplicate value in 'axis'")  # numpy's words
        if not axes:  # numpy gives the dense matrix itself: use to_scipy().toarray()
            raise TypeError(f"{self._where}: axis=() reduces nothing; give None, 0, 1 or a tuple of them")
        return None if len(axes) == 2 else axes.pop()

    def _count(self, axis) -> int:
        axis = self._reduced_axis(axis)
        if axis is None:
            return self.shape[0] * self.shape[1]
        return self.shape[_axis(axis)]

    def _mode(self, axis) -> str:
        axis = self._reduced_axis(axis)
        if axis is None:
            return "all"
        return "within" if _axis(axis) != self._major else "across"

    def _blocks(self, threads):
        """(first major, major ids of the entries, data, minor indices) per block; the
        indices checked (a negative one would otherwise wrap to the last cell), and
        entries stored more than once in one cell summed into one, in the data's type,
        as scipy's toarray() makes the dense matrix."""
        ptr = self.indptr(threads)
        n_major = len(ptr) - 1
        n_minor = self.shape[1 - self._major]
        where = self._where
        start = 0
        with reading_pool(2) as pool:  # one for all blocks: reads, not thread starts, per block
            while start < n_major:
                stop = int(np.searchsorted(ptr, ptr[start] + _BLOCK_NNZ, side="right")) - 1
                stop = min(max(stop, start + 1), n_major)
                data, indices = self._read_pair(np.s_[int(ptr[start]):int(ptr[stop])], threads, pool)
                if data.ndim != 1 or indices.shape != data.shape:
                    raise FormatError(f"{where}: data (shape {data.shape}) and indices (shape {indices.shape}) "
                                      "must be 1-D of one length")
                check_indices(indices, n_minor, where)
                majors = np.repeat(np.arange(stop - start), np.diff(ptr[start:stop + 1]))
                firsts = ptr[start + 1:stop] - ptr[start]  # where each major after the first begins
                if _canonical(indices, firsts):
                    yield start, stop, majors, data, indices.astype(np.int64)
                else:
                    yield start, stop, *_sum_duplicates(majors, data, indices.astype(np.int64), n_minor)
                start = stop

    def _reduce_sums(self, axis, threads, acc: np.dtype, nonzero: bool = False) -> Any:
        """Sums in `acc` of the values (of `data != 0` with nonzero) along axis."""
        mode = self._mode(axis)
        self.indptr(threads)  # checked against the shape before an output of that size is made
        n_minor = self.shape[1 - self._major]
        size = {"within": self.shape[self._major], "across": n_minor, "all": 0}[mode]
        out = np.zeros(size, dtype=acc)
        total = np.zeros((), dtype=acc)
        for start, stop, majors, data, indices in self._blocks(threads):
            values = data != 0 if nonzero else data
            if mode == "within":
                _add_at(out[start:stop], majors, values)
            elif mode == "across":
                _add_at(out, indices, values)
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

    def _moments(self, axis, threads, part=None):
        """(count, mean, M2) per output cell, implicit zeros included: exact two-pass
        per block, blocks combined with Chan et al.'s formula; of part(data) (the real or
        imaginary part of complex data) when given."""
        values = (lambda d: part(d).astype(np.float64)) if part else (lambda d: d.astype(np.float64))
        mode = self._mode(axis)
        n_minor = self.shape[1 - self._major]
        self.indptr(threads)  # checked against the shape before an output of that size is made
        if mode == "within":  # every major lies in one block: two passes per block
            out_m2 = np.zeros(self.shape[self._major])
            out_mean = np.zeros(self.shape[self._major])
            for start, stop, majors, data, _ in self._blocks(threads):
                m, m2 = _block_moments(majors, values(data), stop - start, n_minor)
                out_mean[start:stop], out_m2[start:stop] = m, m2
            return n_minor, out_mean, out_m2
        size = n_minor if mode == "across" else 1
        n, mean, m2 = 0, np.zeros(size), np.zeros(size)
        for start, stop, majors, data, indices in self._blocks(threads):
            cells = indices if mode == "across" else np.zeros(len(data), np.int64)
            rows = (stop - start) * (1 if mode == "across" else n_minor)
            bmean, bm2 = _block_moments(cells, values(data), size, rows)
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
    count = float(count)  # a block of a very wide matrix may hold more cells than int64 counts
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


def _add_at(out: np.ndarray, positions: np.ndarray, values: np.ndarray) -> None:
    """out[positions] += values (cast to out's type as astype casts), repeated positions
    adding up. np.bincount does it in one pass, converting as it goes, where its
    arithmetic is out's: float64 sums of real values (it weighs in double) and integer
    sums of booleans (it counts); the rest through np.add.at in out's type."""
    if values.dtype == np.bool_ and out.dtype.kind in "iu":
        out += np.bincount(positions[values], minlength=len(out)).astype(out.dtype, copy=False)
    elif out.dtype == np.float64 and values.dtype.kind in "fiub" and values.dtype.itemsize <= 8:
        out += np.bincount(positions, weights=values, minlength=len(out))
    else:
        np.add.at(out, positions, values.astype(out.dtype, copy=False))


def _accumulator(dtype: np.dtype) -> np.dtype:
    """What a sum into `dtype` adds in: float16/32 (complex64) added one entry at a time
    drift (1e-5 relative over 1e5 entries, where numpy's pairwise sum stays near 1e-7),
    so they add in double width and are cast back; other types add as they are."""
    if dtype.kind == "f" and dtype.itemsize < 8:
        return np.dtype(np.float64)
    if dtype.kind == "c" and dtype.itemsize < 16:
        return np.dtype(np.complex128)
    return dtype


def _mean_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's mean dtype: float64 for integers and bools, floats and complex as they are."""
    return dtype.newbyteorder("=") if dtype.kind in "fc" else np.dtype(np.float64)


def _var_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's var/std dtype: as the mean's, but real (complex64 gives float32)."""
    if dtype.kind == "c":
        return np.dtype(np.finfo(dtype).dtype)
    return float_result_dtype(dtype)


def _identity(ufunc, dtype: np.dtype):
    if dtype.kind == "f":
        return np.inf if ufunc is np.minimum else -np.inf
    if dtype.kind == "c":  # numpy orders complex numbers by real, then imaginary part
        return complex(np.inf, np.inf) if ufunc is np.minimum else complex(-np.inf, -np.inf)
    if dtype.kind == "b":
        return ufunc is np.minimum
    info = np.iinfo(dtype)
    return info.max if ufunc is np.minimum else info.min


def _native_order(array: np.ndarray) -> np.ndarray:
    """The array in native byte order (itself when it is already)."""
    if array.dtype.isnative:
        return array
    return array.astype(array.dtype.newbyteorder("="))
