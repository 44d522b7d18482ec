"""The h5ad preset: a sparse CSR matrix (AnnData's X: data, indices, indptr) read
whole and by random rows, with h5turbo's SparseDataset, plain h5py, and anndata's
backed sparse dataset. Values are checked against the generated scipy matrix."""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from .strategies import Layout, Reader, Strategy

GROUP = "X"
ROW_BLOCK = 4096  # rows generated at a time: the values of a block depend only on (seed, block)


@dataclass(frozen=True)
class SparseSource:
    """n_obs x n_vars float32 counts, about `per_row` stored values per row, indices
    sorted within each row (as scanpy writes them)."""
    rows: int
    cols: int
    per_row: int = 1000
    seed: int = 42
    dtype: np.dtype = np.dtype(np.float32)
    generator: str = "sparse-counts"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def counts(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 0xC0])
        return np.clip(rng.poisson(self.per_row, size=self.rows), 0, self.cols).astype(np.int64)

    @property
    def nnz(self) -> int:
        return int(self.counts().sum())

    @property
    def nbytes(self) -> int:
        """Bytes of the stored arrays (data float32 + indices int32 + indptr int64)."""
        return self.nnz * 8 + (self.rows + 1) * 8

    def describe(self) -> str:
        return (f"CSR {self.rows} x {self.cols} float32, about {self.per_row} stored values per row "
                f"(seed {self.seed})")

    def block(self, index: int):
        """Rows [index * ROW_BLOCK, ...) as (data, indices, row lengths)."""
        start = index * ROW_BLOCK
        stop = min(self.rows, start + ROW_BLOCK)
        lengths = self.counts()[start:stop]
        rng = np.random.default_rng([self.seed, index])
        indices = np.concatenate([np.sort(rng.choice(self.cols, size=n, replace=False)) for n in lengths]) \
            if len(lengths) else np.empty(0, np.int64)
        data = rng.integers(1, 50, size=len(indices)).astype(np.float32)
        return data, indices.astype(np.int32), lengths

    def matrix(self, rows=None):
        """The scipy CSR matrix of the selected rows (a slice or a sorted index array)."""
        import scipy.sparse
        picked = np.arange(self.rows)[rows if rows is not None else slice(None)]
        parts = []
        for b in np.unique(picked // ROW_BLOCK):
            data, indices, lengths = self.block(int(b))
            ptr = np.concatenate(([0], np.cumsum(lengths)))
            m = scipy.sparse.csr_matrix((data, indices, ptr), shape=(len(lengths), self.cols))
            parts.append(m[picked[picked // ROW_BLOCK == b] - b * ROW_BLOCK])
        return scipy.sparse.vstack(parts, format="csr") if parts else scipy.sparse.csr_matrix((0, self.cols))

    def select(self, rows, cols):
        return self.matrix(rows)

    def selected_bytes(self, rows) -> int:
        lengths = self.counts()[rows]
        return int(lengths.sum()) * 8


def write_h5ad_matrix(path, source: SparseSource, layout: Layout) -> None:
    """X as AnnData writes a csr_matrix (encoding-type attributes), gzip-compressed
    data and indices, written block by block."""
    import h5py
    nnz = source.nnz
    chunk = layout.chunks[0]
    comp = dict(compression="gzip", compression_opts=layout.level or 4) if layout.codec == "gzip" else {}
    with h5py.File(path, "w") as f:
        f.attrs["encoding-type"], f.attrs["encoding-version"] = "anndata", "0.1.0"
        g = f.create_group(GROUP)
        g.attrs["encoding-type"], g.attrs["encoding-version"] = "csr_matrix", "0.1.0"
        g.attrs["shape"] = np.array(source.shape, dtype=np.int64)
        data = g.create_dataset("data", shape=(nnz,), dtype=np.float32, chunks=(min(chunk, max(1, nnz)),), **comp)
        indices = g.create_dataset("indices", shape=(nnz,), dtype=np.int32, chunks=(min(chunk, max(1, nnz)),), **comp)
        g.create_dataset("indptr", data=np.concatenate(([0], np.cumsum(source.counts()))).astype(np.int64))
        at = 0
        for b in range((source.rows + ROW_BLOCK - 1) // ROW_BLOCK):
            d, i, _ = source.block(b)
            data[at:at + len(d)] = d
            indices[at:at + len(i)] = i
            at += len(d)


class _SparseStrategy(Strategy):
    family, suffix, writes = "h5ad", ".h5ad", False

    def layouts(self, chunked):
        return [lay for lay in chunked if lay.kind == "h5ad-csr"]

    def write(self, path, source, layout):
        write_h5ad_matrix(path, source, layout)


class SparseH5turbo(_SparseStrategy):
    name, modules = "h5turbo-sparse", ("h5turbo", "scipy", "h5py")

    def open(self, path, source, layout, threads):
        return SparseH5turboReader(path, source, layout, threads)


class SparseH5turboReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import h5turbo
        self.file = h5turbo.File(self.path)
        self.x = h5turbo.SparseDataset(self.file[GROUP])

    def read(self, rows, cols):
        if isinstance(rows, slice) and rows == slice(0, self.source.rows):
            return self.x.to_scipy(threads=self.threads)
        return self.x.read_major(rows, threads=self.threads)

    def close(self):
        self.file.close()


class SparseH5py(_SparseStrategy):
    """What h5py users write: indptr first, then data/indices of the wanted rows."""
    name, modules = "h5py-sparse", ("h5py", "scipy")
    thread_mode, fixed_note = "fixed", "h5py: one thread (libhdf5's lock)"
    fixed_threads = 1

    def open(self, path, source, layout, threads):
        return SparseH5pyReader(path, source, layout, threads)


class SparseH5pyReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import h5py
        self.file = h5py.File(self.path, "r")
        self.g = self.file[GROUP]

    def read(self, rows, cols):
        import scipy.sparse
        ptr = self.g["indptr"][...]
        if isinstance(rows, slice):
            a, b = ptr[rows.start], ptr[rows.stop]
            return scipy.sparse.csr_matrix((self.g["data"][a:b], self.g["indices"][a:b], ptr[rows.start:rows.stop + 1] - a),
                                           shape=(rows.stop - rows.start, self.source.cols))
        data, indices, lengths = [], [], []
        for r in rows:  # one range per row
            a, b = ptr[r], ptr[r + 1]
            data.append(self.g["data"][a:b])
            indices.append(self.g["indices"][a:b])
            lengths.append(b - a)
        new_ptr = np.concatenate(([0], np.cumsum(lengths)))
        return scipy.sparse.csr_matrix((np.concatenate(data), np.concatenate(indices), new_ptr),
                                       shape=(len(rows), self.source.cols))

    def close(self):
        self.file.close()


class SparseAnndata(_SparseStrategy):
    """anndata's backed sparse dataset (what `anndata.read_h5ad(backed="r").X[rows]` uses)."""
    name, modules = "anndata", ("anndata", "h5py", "scipy")
    thread_mode, fixed_note = "fixed", "anndata reads through h5py: one thread"
    fixed_threads = 1

    def open(self, path, source, layout, threads):
        return SparseAnndataReader(path, source, layout, threads)


class SparseAnndataReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import anndata.io
        import h5py
        self.file = h5py.File(self.path, "r")
        self.x = anndata.io.sparse_dataset(self.file[GROUP])

    def read(self, rows, cols):
        if isinstance(rows, slice) and rows == slice(0, self.source.rows):
            return self.x.to_memory()
        return self.x[rows]

    def close(self):
        self.file.close()


SPARSE = [SparseH5turbo(), SparseH5py(), SparseAnndata()]


def h5ad_layout() -> Layout:
    return Layout((1 << 16, 0), "gzip", 4, kind="h5ad-csr")


def verify_sparse(result, expected) -> tuple[bool, str]:
    import scipy.sparse
    if not scipy.sparse.issparse(result):
        return False, f"expected a scipy sparse matrix, got {type(result).__name__}"
    if result.shape != expected.shape:
        return False, f"shape {result.shape} != expected {expected.shape}"
    if result.dtype != expected.dtype:
        return False, f"dtype {result.dtype} != expected {expected.dtype}"
    diff = (result.tocsr() != expected).nnz
    return (True, "") if diff == 0 else (False, f"{diff} values differ")
