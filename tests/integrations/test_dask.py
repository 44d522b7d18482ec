"""Dataset.to_dask: chunk-aligned blocks, no lock, a small picklable graph, and a real
dask.distributed cluster of worker processes giving h5py's values."""

from __future__ import annotations

import pickle

import h5py
import numpy as np
import pytest

import h5turbo
import h5turbo.compute.dask
from support.common import corpus_dir

import dask.array as da  # noqa: E402
import distributed  # noqa: E402

SHAPE, CHUNKS = (403, 301), (64, 50)
CORPUS_10X = corpus_dir() / "10x" / "10x_data_3.0.0_filtered_feature_bc_matrix.h5"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "blocks.h5"
    rng = np.random.default_rng(11)
    with h5py.File(path, "w") as f:
        f.create_dataset("grid/values", data=rng.integers(-1000, 1000, SHAPE, dtype=np.int32),
                         chunks=CHUNKS, compression="gzip", shuffle=True)
        f.create_dataset("flat", data=rng.random((1000, 7)))
        f.create_dataset("scalar", data=3.5)
    return path


def _reference(path, name):
    with h5py.File(path) as f:
        return f[name][()]


def test_blocks_follow_hdf5_chunks(sample):
    with h5turbo.File(sample) as f:
        ds = f["grid/values"]
        arr = ds.to_dask()
        assert arr.chunks == ((64,) * 6 + (19,), (50,) * 6 + (1,))
        assert arr.dtype == ds.dtype
        # a bigger request is rounded up to whole chunks; -1 is the whole axis
        assert ds.to_dask((100, -1)).chunks == ((128, 128, 128, 19), (301,))
        assert ds.to_dask(130).chunks[1] == (150, 150, 1)
        for request in ("auto", "4KiB", "100KiB"):  # dask's choice, rounded to whole chunks
            for axis_blocks, chunk in zip(ds.to_dask(request).chunks, CHUNKS):
                assert all(b % chunk == 0 for b in axis_blocks[:-1]), request
        with pytest.raises(ValueError):
            ds.to_dask((10, 10, 10))
        with pytest.raises(ValueError):
            ds.to_dask((0, 5))


def test_values_with_threads(sample):
    with h5turbo.File(sample) as f:
        got = f["grid/values"].to_dask((128, 100))[7:300:3, 20:].compute(scheduler="threads")
        np.testing.assert_array_equal(got, _reference(sample, "grid/values")[7:300:3, 20:])
        np.testing.assert_array_equal(f["flat"].to_dask().compute(), _reference(sample, "flat"))
        assert f["scalar"].to_dask().compute() == 3.5


def test_graph_is_small_and_lock_free(sample):
    with h5turbo.File(sample) as f:
        arr = f["grid/values"].to_dask()
    graph = dict(arr.__dask_graph__())
    blob = pickle.dumps(graph)
    assert len(graph) == arr.npartitions + 1  # the blocks and the one shared source
    # path, name and slices only: far below the data (363 KiB here)
    assert len(blob) < 250 * arr.npartitions, len(blob)
    assert b"Lock" not in blob  # no SerializableLock or threading lock anywhere
    tasks = [v for k, v in graph.items() if isinstance(k, tuple)]
    assert len(tasks) == arr.npartitions
    assert all(not getattr(t, "kwargs", {}).get("lock") for t in tasks)
    # the source pickles as its path and name, never an open file
    source = next(v for v in graph.values() if isinstance(v, h5turbo.compute.dask.DatasetSource))
    assert len(pickle.dumps(source)) < 400
    # a block computed from the unpickled graph, with the file closed in this process
    restored = pickle.loads(blob)
    h5turbo.compute.dask._OPEN_FILES.clear()
    from dask.threaded import get
    block = get(restored, (arr.name, 2, 3))
    np.testing.assert_array_equal(block, _reference(sample, "grid/values")[128:192, 150:200])


def _scipy_reference(path, name):
    """The sparse matrix built from h5py's reads of data, indices and indptr."""
    import scipy.sparse
    with h5py.File(path) as f:
        g = f[name]
        kind, shape = h5turbo.compute.dask.sparse_layout(h5turbo.File(path)[name])
        parts = (g["data"][()], g["indices"][()], g["indptr"][()])
    matrix = scipy.sparse.csr_matrix if kind == "csr" else scipy.sparse.csc_matrix
    return matrix(parts, shape=shape)


SPARSE_CORPUS = [("h5ad/anndata_v0.7.0.h5ad", "X", "csr"),
                 ("h5ad/anndata_v0.5.0.h5ad", "raw.X", "csr"),
                 ("h5ad/anndata_v0.5.0.h5ad", "uns/neighbors/connectivities", "csr"),
                 ("10x/10x_data_3.0.0_filtered_feature_bc_matrix.h5", "matrix", "csc"),
                 ("10x/10x_data_1.2.0_multiple_genomes.h5", "hg19_chr21", "csc")]


@pytest.mark.parametrize("relpath, name, kind", SPARSE_CORPUS)
def test_sparse_groups_to_dask(relpath, name, kind):
    import scipy.sparse
    path = corpus_dir() / relpath
    expected = _scipy_reference(path, name)
    with h5turbo.File(path) as f:
        if name not in f:
            pytest.fail(f"{relpath} has no group {name}")
        arr = f[name].to_dask(chunks=5)
        whole = f[name].to_dask()
    assert arr.shape == expected.shape
    major = 0 if kind == "csr" else 1
    assert all(n == 5 for n in arr.chunks[major][:-1])
    assert whole.npartitions == 1  # small matrices: one block by default
    got = arr.compute(scheduler="threads")
    assert scipy.sparse.issparse(got) and got.format == kind
    assert (got != expected).nnz == 0
    with pytest.raises(TypeError):
        h5turbo.File(path)["/"].to_dask()


def test_sparse_default_blocks_follow_nnz(tmp_path, monkeypatch):
    import scipy.sparse
    path = tmp_path / "csr.h5"
    matrix = scipy.sparse.random(300, 50, density=0.2, format="csr", random_state=5,
                                 dtype=np.float32)
    with h5py.File(path, "w") as f:
        g = f.create_group("m")
        g.attrs.update({"encoding-type": "csr_matrix", "shape": matrix.shape})
        g.create_dataset("data", data=matrix.data, chunks=(100,))
        g.create_dataset("indices", data=matrix.indices, chunks=(100,))
        g.create_dataset("indptr", data=matrix.indptr)
    monkeypatch.setattr(h5turbo.compute.dask, "_SPARSE_BLOCK_NNZ", 250)  # -> 300 values a block
    with h5turbo.File(path) as f:
        arr = f["m"].to_dask()
    nnz = [matrix[a:a + n].nnz for a, n in zip(np.cumsum((0,) + arr.chunks[0][:-1]),
                                                 arr.chunks[0])]
    assert len(nnz) > 5 and all(n <= 300 for n in nnz) and sum(nnz) == matrix.nnz
    assert (arr.compute() != matrix).nnz == 0


@pytest.mark.timeout(300)
def test_distributed_cluster_of_processes(sample):
    expected = _reference(sample, "grid/values")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with h5turbo.File(sample) as f:
            arr = f["grid/values"].to_dask()
        total = client.compute(arr.astype(np.int64).sum(axis=0))
        np.testing.assert_array_equal(total.result(), expected.astype(np.int64).sum(axis=0))
        np.testing.assert_array_equal(client.compute(arr).result(), expected)
        # every worker that read opened the file once and kept it
        # sparse groups too: scipy.sparse blocks built on the workers
        sparse_path = str(CORPUS_10X)
        with h5turbo.File(sparse_path) as f:
            sparse = f["matrix"].to_dask(chunks=100)
        got = client.compute(sparse).result()
        assert (got != _scipy_reference(sparse_path, "matrix")).nnz == 0
        per_worker = client.run(lambda: __import__("h5turbo.compute.dask").compute.
                                dask._OPEN_FILES.keys().__len__())
        assert len(per_worker) == 2 and all(n <= 2 for n in per_worker.values())
        assert sum(per_worker.values()) >= 1


def test_a_small_selection_of_a_big_block_reads_only_itself(tmp_path, monkeypatch):
    """dask pushes a selection into the read: one element of a 400 x 400 block reads one
    element, not the block (with fancy indexing off it read all 160000)."""
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(800 * 800, dtype="f8").reshape(800, 800), chunks=(100, 100))
    read_sizes = []
    original = h5turbo.compute.dask.DatasetSource.__getitem__

    def recording(self, index):
        block = original(self, index)
        read_sizes.append(block.size)
        return block
    monkeypatch.setattr(h5turbo.compute.dask.DatasetSource, "__getitem__", recording)
    with h5turbo.File(path) as f:
        a = f["x"].to_dask((400, 400))
        assert float(a[123, 456].compute(scheduler="sync")) == 123 * 800 + 456
        assert float(a[::10, 3].sum().compute(scheduler="sync")) == sum(i * 800 + 3 for i in range(0, 800, 10))
    assert max(read_sizes) <= 40
