"""Dataset.to_dask: chunk-aligned blocks, no lock, a small picklable graph, and a real
dask.distributed cluster of worker processes giving h5py's values."""

from __future__ import annotations

import pickle

import h5py
import numpy as np
import pytest

import h5turbo

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

SHAPE, CHUNKS = (403, 301), (64, 50)


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
        for axis_blocks, chunk in zip(ds.to_dask("auto").chunks, CHUNKS):
            assert all(b % chunk == 0 for b in axis_blocks[:-1])
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
    source = next(v for v in graph.values() if isinstance(v, h5turbo._dask.DatasetSource))
    assert len(pickle.dumps(source)) < 400
    # a block computed from the unpickled graph, with the file closed in this process
    restored = pickle.loads(blob)
    h5turbo._dask._OPEN_FILES.clear()
    from dask.threaded import get
    block = get(restored, (arr.name, 2, 3))
    np.testing.assert_array_equal(block, _reference(sample, "grid/values")[128:192, 150:200])


def _cached_paths():
    import h5turbo._dask
    return sorted(h5turbo._dask._OPEN_FILES)


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
        per_worker = client.run(lambda: __import__("h5turbo._dask").
                                _dask._OPEN_FILES.keys().__len__())
        assert len(per_worker) == 2 and all(n <= 1 for n in per_worker.values())
        assert sum(per_worker.values()) >= 1
