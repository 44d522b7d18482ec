"""Every configuration knob of h5turbo, in every front end, against its documentation
and against h5py / numpy / rhdf5 where they take the same argument.

Knobs: h5turbo.File's keyword arguments (h5py's), `threads=` and `io_depth=` of the
read paths, `with h5turbo.io_depth(...)`, the environment variables H5TURBO_THREADS,
H5TURBO_IO_DEPTH, H5TURBO_DASK_THREADS and H5TURBO_SYSTEM_MALLOC, the CLI's
numeric flags, GenotypeArray's block_variants, the C API's threads / op / axis / ddof /
max_reads and the R package's threads / recursive / drop.

Environment variables are read once per process, so those checks run in subprocesses.
The C checks compile a small program against build/c (skipped without it), the R checks
run one Rscript (skipped without R or the installed package).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo import _native

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus"
FAST5 = CORPUS / "fast5" / "multi_read_batch_0.fast5"
LOOM = CORPUS / "loom" / "test.loom"
TENX = CORPUS / "10x" / "10x_data_3.0.0_filtered_feature_bc_matrix.h5"
H5AD = CORPUS / "h5ad" / "anndata_v0.11.4.h5ad"
C_BUILD = ROOT / "build" / "c"
DEFAULT_IO_DEPTH = 32 << 20


# ----------------------------------------------------------------------------- files

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A chunked gzip matrix (big enough that a read with threads=None uses the pool),
    an AnnData CSR group and a genotype array."""
    import scipy.sparse as sp
    folder = tmp_path_factory.mktemp("config")
    path = folder / "m.h5"
    rng = np.random.default_rng(7)
    m = sp.random(60, 40, density=0.2, format="csr", random_state=1, dtype=np.float64)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=rng.random((512, 512)), chunks=(32, 32), compression="gzip")
        f.create_dataset("small", data=np.arange(30.0).reshape(5, 6), chunks=(2, 3))
        g = f.create_group("s")
        g.attrs["encoding-type"] = "csr_matrix"
        g.attrs["encoding-version"] = "0.1.0"
        g.attrs["shape"] = m.shape
        g["data"], g["indices"], g["indptr"] = m.data, m.indices, m.indptr
        f.create_dataset("calldata/GT", data=rng.integers(-1, 3, (50, 4, 2)).astype("i1"), chunks=(8, 4, 2))
    return {"path": path, "sparse": m}


def _run_py(code: str, env_extra: dict, timeout: int = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("H5TURBO_THREADS", "H5TURBO_IO_DEPTH", "H5TURBO_DASK_THREADS")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------- File keyword arguments

H5PY_ACCEPTS = [
    {"rdcc_nbytes": 0}, {"rdcc_nbytes": 1 << 20}, {"rdcc_nslots": 0}, {"rdcc_nslots": 521},
    {"rdcc_w0": 0.0}, {"rdcc_w0": 1.0}, {"rdcc_w0": 0.75}, {"page_buf_size": 0}, {"page_buf_size": None},
    {"alignment_threshold": 1, "alignment_interval": 4096}, {"min_meta_keep": 0, "min_raw_keep": 0},
    {"locking": True}, {"locking": False}, {"locking": "true"}, {"locking": "false"},
    {"locking": "best-effort"}, {"locking": None}, {"libver": "v108"}, {"libver": ("v108", "v200")},
    {"libver": "latest"}, {"libver": ("earliest", "latest")}, {"meta_block_size": 4096},
    {"meta_block_size": 1.5}, {"swmr": True}, {"track_order": True}, {"track_times": False},
    {"driver": "core"}, {"driver": "core", "backing_store": False, "block_size": 65536},
    {"driver": "sec2"}, {"driver": "stdio"}, {"fs_persist": False}, {"fs_threshold": 1},
]


@pytest.mark.parametrize("kwargs", H5PY_ACCEPTS, ids=repr)
def test_file_kwargs_h5py_accepts_are_accepted_and_read_alike(files, kwargs):
    with h5py.File(files["path"], "r", **kwargs) as ref, h5turbo.File(files["path"], "r", **kwargs) as f:
        np.testing.assert_array_equal(f["small"][()], ref["small"][()])
        assert f.driver == ref.driver
        assert f.libver == ref.libver


H5PY_REFUSES_AND_SO_DO_WE = [
    {"locking": "maybe"}, {"locking": 2}, {"locking": "True"}, {"meta_block_size": -1},
    {"meta_block_size": 2**64}, {"meta_block_size": "abc"}, {"libver": ("latest", "earliest")},
    {"driver": "nope"}, {"driver": "stdio", "foo": 1}, {"userblock_size": 512}, {"fs_strategy": "page"},
    {"mode": "q"},
]


@pytest.mark.parametrize("kwargs", H5PY_REFUSES_AND_SO_DO_WE, ids=repr)
def test_file_kwargs_h5py_refuses_are_refused_with_its_exception_type(files, kwargs):
    kwargs = {"mode": "r", **kwargs}
    with pytest.raises(Exception) as ref:
        h5py.File(files["path"], **kwargs)
    with pytest.raises(type(ref.value)):
        h5turbo.File(files["path"], **kwargs)


def test_file_unknown_libver_is_value_error_as_documented(files):
    # docs/h5py-compat.md: ValueError (h5py: KeyError)
    with pytest.raises(KeyError):
        h5py.File(files["path"], "r", libver="v999")
    with pytest.raises(ValueError, match="v999"):
        h5turbo.File(files["path"], "r", libver="v999")


# h5py validates these on the file access property list even in mode 'r'; h5turbo,
# which has no use for them, checks them as h5py does (objects/access_args.py), so a
# typo'd or impossible value does not pass silently. Each is refused by h5py 3.16.
H5PY_REFUSES_ACCESS_ARGS = [
    {"rdcc_nbytes": -1}, {"rdcc_nbytes": "64M"}, {"rdcc_nbytes": 2**64}, {"rdcc_nbytes": float("nan")},
    {"rdcc_nslots": "521"}, {"rdcc_nslots": 2**64},
    {"rdcc_w0": 1.5}, {"rdcc_w0": -1}, {"rdcc_w0": "0.75"},
    {"page_buf_size": -1}, {"page_buf_size": "abc"},
    {"alignment_interval": 0}, {"alignment_threshold": -1}, {"alignment_threshold": None},
    {"track_times": 1.5}, {"track_times": "yes"},
    {"driver": "core", "block_size": "x"}, {"driver": "core", "block_size": -1},
    {"driver": "core", "backing_store": None},
]


@pytest.mark.parametrize("kwargs", H5PY_REFUSES_ACCESS_ARGS, ids=repr)
def test_file_kwargs_h5py_refuses_are_refused_too(files, kwargs):
    with pytest.raises(Exception) as ref:
        h5py.File(files["path"], "r", **kwargs)
    with pytest.raises(type(ref.value)):
        h5turbo.File(files["path"], "r", **kwargs).close()


# --------------------------------------------------------------------- threads= (Python)

def _sparse(f):
    return h5turbo.SparseDataset(f["s"])


READERS = {
    "read": lambda f, t: f["x"].read(threads=t),
    "getitem_slice": lambda f, t: f["x"].read(np.s_[3:300:7, ::5], threads=t),
    "sum_axis0": lambda f, t: f["x"].sum(axis=0, threads=t),
    "var_ddof1": lambda f, t: f["x"].var(ddof=1, threads=t),
    "max": lambda f, t: f["x"].max(threads=t),
    "sparse_to_scipy": lambda f, t: _sparse(f).to_scipy(threads=t).toarray(),
    "sparse_sum_axis1": lambda f, t: np.ravel(_sparse(f).sum(axis=1, threads=t)),
}


def _reference(name, path, sparse):
    with h5py.File(path, "r") as g:
        x = g["x"][()]
    return {
        "read": x, "getitem_slice": x[3:300:7, ::5], "sum_axis0": x.sum(axis=0),
        "var_ddof1": x.var(ddof=1), "max": x.max(), "sparse_to_scipy": sparse.toarray(),
        "sparse_sum_axis1": np.ravel(sparse.sum(axis=1)),
    }[name]


@pytest.mark.parametrize("name", READERS)
def test_threads_values_give_identical_results(files, name):
    ref = _reference(name, files["path"], files["sparse"])
    with h5turbo.File(files["path"]) as f:
        results = [READERS[name](f, t) for t in (None, 1, 2, 3, np.int64(2), 64)]
    exact = name in ("read", "getitem_slice", "max", "sparse_to_scipy")
    for got in results:
        if exact:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-12)
        # the same bits on every thread count (docs/reductions-and-sparse.md)
        np.testing.assert_array_equal(got, results[0])


BAD_THREADS = [-1, 1.5, "2", True, False, np.float64(2.0), [2]]


@pytest.mark.parametrize("value", BAD_THREADS, ids=repr)
@pytest.mark.parametrize("name", ["read", "sum_axis0", "sparse_to_scipy", "sparse_sum_axis1"])
def test_bad_threads_are_a_value_error_naming_threads(files, name, value):
    with h5turbo.File(files["path"]) as f:
        with pytest.raises(ValueError, match="threads"):
            READERS[name](f, value)


@pytest.mark.parametrize("value", [-1, 1.5, "2", True], ids=repr)
@pytest.mark.parametrize("reader", ["read_h5ad", "read_loom", "read_10x_h5", "read_fast5", "Fast5Index",
                                    "GenotypeArray"])
def test_format_readers_refuse_bad_threads_at_the_call(files, reader, value):
    calls = {
        "read_h5ad": lambda: h5turbo.read_h5ad(H5AD, threads=value),
        "read_loom": lambda: h5turbo.read_loom(LOOM, threads=value),
        "read_10x_h5": lambda: h5turbo.read_10x_h5(TENX, threads=value),
        "read_fast5": lambda: h5turbo.read_fast5(FAST5, threads=value),  # a generator: raises at the call
        "Fast5Index": lambda: h5turbo.Fast5Index(FAST5, threads=value),
        "GenotypeArray": lambda: h5turbo.formats.GenotypeArray(
            h5turbo.File(files["path"])["calldata/GT"], threads=value),
    }
    with pytest.raises(ValueError, match="threads"):
        calls[reader]()


def test_read_fast5_threads_and_io_depth_do_not_change_the_reads():
    ref = [(r.read_id, r.signal.tobytes()) for r in h5turbo.read_fast5(FAST5, threads=1, io_depth=0)]
    assert ref
    for threads in (None, 0, 2, 5):
        for depth in (None, 0, "1K", "64M", 2**63):
            got = [(r.read_id, r.signal.tobytes()) for r in h5turbo.read_fast5(FAST5, threads=threads,
                                                                             io_depth=depth)]
            assert got == ref


def test_genotype_threads_and_block_variants_do_not_change_counts(files):
    from h5turbo.formats import GenotypeArray
    with h5turbo.File(files["path"]) as f, h5py.File(files["path"]) as g:
        gt = g["calldata/GT"][()]
        expected = np.stack([(gt == a).sum(axis=(1, 2)) for a in range(3)], axis=1)
        for threads, block in [(1, 1), (2, 8), (3, 7), (None, None), (0, 1000), (4, np.int64(3))]:
            counts = GenotypeArray(f["calldata/GT"], threads=threads, block_variants=block).count_alleles()
            np.testing.assert_array_equal(np.asarray(counts)[:, :3], expected)


@pytest.mark.parametrize("value", [0, -1])
def test_genotype_block_variants_below_one_is_a_value_error(files, value):
    from h5turbo.formats import GenotypeArray
    with h5turbo.File(files["path"]) as f:
        with pytest.raises(ValueError, match="block_variants"):
            GenotypeArray(f["calldata/GT"], block_variants=value)


@pytest.mark.parametrize("value", [1.5, "4", True], ids=repr)
def test_genotype_block_variants_of_the_wrong_type_name_the_argument(files, value):
    from h5turbo.formats import GenotypeArray
    with h5turbo.File(files["path"]) as f:
        with pytest.raises((TypeError, ValueError), match="block_variants"):
            GenotypeArray(f["calldata/GT"], block_variants=value).count_alleles()


# ------------------------------------------------------------------------ io_depth=

GOOD_IO_DEPTHS = [(0, 0), (1, 1), ("0", 0), ("4096", 4096), ("64k", 64 << 10), ("64K", 64 << 10),
                  (" 32MiB ", 32 << 20), ("64M", 64 << 20), ("64MB", 64 << 20), ("64 M", 64 << 20),
                  ("1G", 1 << 30), (2**63, 2**63), (2**64 - 1, 2**64 - 1)]


@pytest.mark.parametrize("value,expected", GOOD_IO_DEPTHS, ids=repr)
def test_io_depth_values_accepted_and_reads_identical(files, value, expected):
    with h5py.File(files["path"]) as g:
        ref = g["x"][:100]
    with h5turbo.File(files["path"]) as f:
        with h5turbo.io_depth(value) as window:
            assert window == expected == _native.io_depth()
            np.testing.assert_array_equal(f["x"][:100], ref)
        np.testing.assert_array_equal(f["x"].read(np.s_[:100], io_depth=value), ref)


BAD_IO_DEPTHS = ["64X", "1T", "-1", "", " ", "1e6", "0x10", "lots", -1, 1.5, True, False, 1.0, [1]]


@pytest.mark.parametrize("value", BAD_IO_DEPTHS, ids=repr)
def test_bad_io_depth_is_a_value_error_naming_it_everywhere(files, value):
    with h5turbo.File(files["path"]) as f:
        with pytest.raises(ValueError, match="io_depth"):
            f["small"].read(io_depth=value)
        with pytest.raises(ValueError, match="io_depth"):
            with h5turbo.io_depth(value):
                pass
    with pytest.raises(ValueError, match="io_depth"):
        h5turbo.read_fast5(FAST5, io_depth=value)  # "Bad arguments ... raise at the call" (formats.md)
    with pytest.raises(ValueError, match="io_depth"):
        h5turbo.Fast5Index(FAST5, io_depth=value)
    assert _native.io_depth() == _native.io_depth()  # nothing left set


@pytest.mark.parametrize("value", [2**64, 2**70, "99999999999G"], ids=repr)
def test_io_depth_too_large_is_refused_at_the_call_naming_it(files, value):
    with h5turbo.File(files["path"]) as f:
        with pytest.raises((ValueError, OverflowError), match="io_depth"):
            f["small"].read(io_depth=value)
    with pytest.raises((ValueError, OverflowError), match="io_depth"):
        h5turbo.read_fast5(FAST5, io_depth=value)


def test_io_depth_takes_numpy_integers_as_threads_does(files):
    with h5turbo.File(files["path"]) as f:
        np.testing.assert_array_equal(f["small"].read(io_depth=np.int64(4096)), f["small"][()])
        with h5turbo.io_depth(np.uint32(4096)) as window:
            assert window == 4096


def _record_windows(monkeypatch):
    """(dataset name, read-ahead window of the thread) at each native data read."""
    from h5turbo.objects import dataset as dataset_module
    seen = []
    lock = threading.Lock()
    for attr in ("_read_plan", "_fill"):
        original = getattr(dataset_module.Dataset, attr)

        def wrapper(self, *args, _original=original, **kwargs):
            with lock:
                seen.append((self.name, _native.io_depth()))
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(dataset_module.Dataset, attr, wrapper)
    return seen


def test_io_depth_precedence_argument_over_block(files, monkeypatch):
    seen = _record_windows(monkeypatch)
    outside = _native.io_depth()
    with h5turbo.File(files["path"]) as f:
        with h5turbo.io_depth(12345):
            f["small"].read(io_depth="2K")
            assert {w for _, w in seen} == {2048}
            seen.clear()
            f["small"].read(io_depth=None)
            f["small"][()]
            assert {w for _, w in seen} == {12345}
            assert _native.io_depth() == 12345
        assert _native.io_depth() == outside
        with pytest.raises(KeyError):
            with h5turbo.io_depth("1M"):
                f["nope"]
        assert _native.io_depth() == outside


@pytest.mark.parametrize("call", ["to_scipy", "sum"])
def test_io_depth_block_applies_to_sparse_reads(files, monkeypatch, call):
    seen = _record_windows(monkeypatch)
    with h5turbo.File(files["path"]) as f:
        s = _sparse(f)
        with h5turbo.io_depth(12345):
            s.to_scipy() if call == "to_scipy" else s.sum(axis=0)
    assert seen
    assert {w for _, w in seen} == {12345}, seen


# --------------------------------------------------------- H5TURBO_IO_DEPTH (environment)

_IO_DEPTH_PROBE = """
    import json, sys, h5turbo
    from h5turbo import _native
    f = h5turbo.File(sys.argv[-1] if len(sys.argv) > 1 else {path!r})
    f["small"][()]
    out = {{"default": _native.io_depth()}}
    with h5turbo.io_depth("1M") as w:
        out["block"] = w
        with h5turbo.io_depth(None) as inner:
            out["inner_none"] = inner
    out["after"] = _native.io_depth()
    print(json.dumps(out))
"""


@pytest.mark.parametrize("env,expected", [("64M", 64 << 20), ("0", 0), (" 1 G ", 1 << 30), ("512KiB", 512 << 10),
                                          ("18446744073709551615", 2**64 - 1)], ids=repr)
def test_env_io_depth_valid_values_and_precedence(files, env, expected):
    proc = _run_py(_IO_DEPTH_PROBE.format(path=str(files["path"])), {"H5TURBO_IO_DEPTH": env})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # the block wins over the variable; None inside a block is the default (the variable)
    assert out == {"default": expected, "block": 1 << 20, "inner_none": expected, "after": expected}


@pytest.mark.parametrize("env", ["64X", "1T", "-1", "1e6", "18446744073709551616"])
def test_env_io_depth_bad_value_is_reported(files, env):
    proc = _run_py(_IO_DEPTH_PROBE.format(path=str(files["path"])), {"H5TURBO_IO_DEPTH": env})
    # either an error naming the variable, or a warning naming it (a documented fallback)
    assert "H5TURBO_IO_DEPTH" in proc.stderr, (proc.returncode, proc.stdout, proc.stderr)


# ---------------------------------------------------------- H5TURBO_THREADS (environment)

_THREADS_PROBE = """
    import json, os, sys, h5turbo
    f = h5turbo.File({path!r})
    def tasks():
        return len(os.listdir("/proc/self/task"))
    out = {{"default_threads": h5turbo.default_threads()}}
    for arg in ({arg!r},):
        before = tasks()
        f["x"].read(threads=arg)
        out["new_threads"] = tasks() - before
    print(json.dumps(out))
"""


def _threads_probe(path, env, arg):
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("counts threads in /proc/self/task (Linux)")
    extra = {} if env is None else {"H5TURBO_THREADS": env}
    proc = _run_py(_THREADS_PROBE.format(path=str(path), arg=arg), extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc


@pytest.mark.parametrize("env,expected", [("3", 3), (" 5 ", 5), ("1", 1)], ids=repr)
def test_env_threads_sets_the_default_pool(files, env, expected):
    out, _ = _threads_probe(files["path"], env, None)
    assert out["default_threads"] == expected
    # a pool of that many threads is built for a read without threads= (1: read inline)
    assert out["new_threads"] in ((0, 1) if expected == 1 else (expected, expected + 1))


@pytest.mark.parametrize("arg,expected_new", [(4, 4), (1, 0)])
def test_threads_argument_wins_over_env(files, arg, expected_new):
    out, _ = _threads_probe(files["path"], "3", arg)
    assert out["default_threads"] == 3
    assert out["new_threads"] in (expected_new, expected_new + 1)


@pytest.mark.parametrize("env", ["abc", "-1", "4x", "1.5"])
def test_env_threads_bad_value_is_reported(files, env):
    out, proc = _threads_probe(files["path"], env, None)
    assert "H5TURBO_THREADS" in proc.stderr, (out, proc.stderr)


# ------------------------------------------------------- H5TURBO_DASK_THREADS (environment)

@pytest.mark.parametrize("env", ["0", "1", "2", None])
def test_env_dask_threads_valid_values_compute_alike(files, monkeypatch, env):
    pytest.importorskip("dask.array")
    if env is None:
        monkeypatch.delenv("H5TURBO_DASK_THREADS", raising=False)
    else:
        monkeypatch.setenv("H5TURBO_DASK_THREADS", env)
    with h5py.File(files["path"]) as g:
        ref = g["x"][()]
    with h5turbo.File(files["path"]) as f:
        got = f["x"].to_dask(chunks=(128, 512)).compute(scheduler="sync")
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("env", ["abc", "-1", "", "2.5"], ids=repr)
def test_env_dask_threads_bad_value_is_a_value_error_naming_it(files, monkeypatch, env):
    pytest.importorskip("dask.array")
    monkeypatch.setenv("H5TURBO_DASK_THREADS", env)
    with h5turbo.File(files["path"]) as f:
        arr = f["x"].to_dask(chunks=(128, 512))
        with pytest.raises(ValueError, match="H5TURBO_DASK_THREADS"):
            arr.compute(scheduler="sync")


# ----------------------------------------------------------------------------------- CLI

def _cli(argv):
    from h5turbo.cli import main
    err = io.StringIO()
    old, sys.stderr = sys.stderr, err
    try:
        rc = main(argv, out=io.StringIO())
    finally:
        sys.stderr = old
    return rc, err.getvalue()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_cli_threads_below_one_is_a_usage_error(files, tmp_path, value):
    rc, err = _cli(["repack", str(files["path"]), str(tmp_path / "o.h5"), "-q", "--threads", value])
    assert rc == 1 and "threads" in err and not (tmp_path / "o.h5").exists()
    rc, err = _cli(["advise", str(files["path"]), "x", "--pattern", "rows", "--threads", value])
    assert rc == 1 and "threads" in err
    rc, err = _cli(["bench", "--preset", "quick", "--threads", value, "-o", str(tmp_path / "b")])
    assert rc == 1 and "--threads" in err


@pytest.mark.parametrize("flags,needle", [(["--compression", "gzip", "--level", "10"], "level"),
                                          (["--compression", "zstd", "--level", "50"], "level"),
                                          (["--level", "3"], "level"), (["--chunks", "0,0"], "chunks"),
                                          (["--chunks", "abc"], "chunks")])
def test_cli_repack_bad_values_are_usage_errors(files, tmp_path, flags, needle):
    rc, err = _cli(["repack", str(files["path"]), str(tmp_path / "o.h5"), "-q"] + flags)
    assert rc == 1 and needle in err and not (tmp_path / "o.h5").exists()


def _tiny_bench(tmp_path, extra):
    return _cli(["bench", "--shape", "64x64", "--layouts", "8x8:gzip3", "--strategies", "h5turbo",
                 "--patterns", "read_all", "--cache", "warm", "--threads", "1", "--no-limits", "--no-plots",
                 "--no-progress", "-o", str(tmp_path / "out"), "--workdir", str(tmp_path / "work")] + extra)


def test_cli_bench_repeats_valid(tmp_path):
    rc, err = _tiny_bench(tmp_path, ["--repeats", "2"])
    assert rc == 0, err
    rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # header + the 2 repeats


@pytest.mark.parametrize("value", ["-3", "0"])
def test_cli_bench_repeats_below_one_is_a_usage_error(tmp_path, value):
    rc, err = _tiny_bench(tmp_path, ["--repeats", value])
    assert rc != 0 and "repeats" in err


@pytest.mark.parametrize("value", ["inf", "-1"])
def test_cli_bench_bad_scale_is_a_usage_error(tmp_path, value):
    rc, err = _cli(["bench", "--preset", "quick", "--scale", value, "-o", str(tmp_path / "b"),
                    "--workdir", str(tmp_path / "w"), "--no-progress", "--strategies", "h5turbo",
                    "--patterns", "read_all", "--cache", "warm", "--threads", "1", "--repeats", "1",
                    "--no-limits", "--no-plots"])
    assert rc in (1, 2) and "scale" in err


# --------------------------------------------------------------------------------- C API

C_PROGRAM = r"""
#include <h5turbo.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* knobs FILE DATASET ROWS COLS FAST5 : one JSON object per line */
static void line(const char *what, int value, int rc, int same, double v) {
    const char *err = rc ? h5turbo_last_error() : "";
    printf("{\"what\":\"%s\",\"value\":%d,\"rc\":%d,\"same\":%d,\"v\":\"%.17g\",\"err\":\"", what, value, rc, same, v);
    for (const char *p = err; *p; p++) if (*p != '"' && *p != '\\') putchar(*p);
    printf("\"}\n");
}
int main(int argc, char **argv) {
    h5turbo_file *f = NULL; h5turbo_object *ds = NULL;
    if (h5turbo_file_open(argv[1], &f) || h5turbo_object_open(f, argv[2], &ds)) return 2;
    uint64_t rows = strtoull(argv[3], 0, 10), cols = strtoull(argv[4], 0, 10);
    uint64_t start[2] = {0, 0}, count[2] = {rows, cols};
    size_t n = rows * cols;
    double *ref = calloc(n, 8), *buf = calloc(n, 8), s_ref = 0, s = 0, v = 0;
    if (h5turbo_dataset_read(ds, start, count, NULL, ref, n * 8, 1)) return 3;
    if (h5turbo_dataset_reduce(ds, H5TURBO_SUM, -1, 0, &s_ref, 1, 1)) return 4;
    int threads[] = {0, 2, 3, 64, INT_MAX, -1, INT_MIN};
    for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
        memset(buf, 0, n * 8);
        int rc = h5turbo_dataset_read(ds, start, count, NULL, buf, n * 8, threads[i]);
        line("read_threads", threads[i], rc, rc == 0 && memcmp(buf, ref, n * 8) == 0, 0);
        s = 0;
        rc = h5turbo_dataset_reduce(ds, H5TURBO_SUM, -1, 0, &s, 1, threads[i]);
        line("reduce_threads", threads[i], rc, rc == 0 && s == s_ref, s);
    }
    int ops[] = {99, -1};
    for (int i = 0; i < 2; i++) line("reduce_op", ops[i], h5turbo_dataset_reduce(ds, ops[i], -1, 0, &v, 1, 1), 0, 0);
    int axes[] = {2, 5, -2};
    for (int i = 0; i < 3; i++) line("reduce_axis", axes[i], h5turbo_dataset_reduce(ds, H5TURBO_SUM, axes[i], 0, &v, 1, 1), 0, 0);
    int ddofs[] = {0, 1, -1, (int)rows * (int)cols, (int)rows * (int)cols + 5, INT_MAX};
    for (int i = 0; i < 6; i++) {
        int rc = h5turbo_dataset_reduce(ds, H5TURBO_VAR, -1, ddofs[i], &v, 1, 1);
        line("var_ddof", ddofs[i], rc, 0, v);
    }
    const char *paths[1] = {argv[5]};
    int f5threads[] = {-1, 0, 1, 3};
    for (int i = 0; i < 4; i++) {
        h5turbo_fast5 *f5 = NULL;
        int rc = h5turbo_fast5_open(paths, 1, f5threads[i], 0, &f5);
        size_t total = 0;
        if (rc == 0) for (;;) {
            h5turbo_fast5_batch *b = NULL;
            if (h5turbo_fast5_next_batch(f5, 3, &b)) { total = (size_t)-1; break; }
            size_t got = b->n; total += got; h5turbo_fast5_batch_free(b);
            if (!got) break;
        }
        line("fast5_threads", f5threads[i], rc, 0, (double)total);
        h5turbo_fast5_close(f5);
    }
    h5turbo_fast5 *f5 = NULL;
    h5turbo_fast5_batch *b = NULL;
    if (h5turbo_fast5_open(paths, 1, 1, 0, &f5)) return 5;
    int rc = h5turbo_fast5_next_batch(f5, 0, &b);
    line("fast5_max_reads", 0, rc, 0, 0);
    if (!rc) h5turbo_fast5_batch_free(b);
    h5turbo_fast5_close(f5);
    h5turbo_object_close(ds); h5turbo_file_close(f);
    return 0;
}
"""


@pytest.fixture(scope="module")
def c_program(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    lib = C_BUILD / "lib" / "libh5turbo.so"
    if not cc or not lib.exists():
        pytest.skip("needs a C compiler and build/c (make c)")
    folder = tmp_path_factory.mktemp("cknobs")
    src = folder / "knobs.c"
    src.write_text(C_PROGRAM)
    exe = folder / "knobs"
    subprocess.run([cc, "-O1", "-o", str(exe), str(src), f"-I{C_BUILD / 'include'}", f"-L{C_BUILD / 'lib'}",
                    "-lh5turbo", f"-Wl,-rpath,{C_BUILD / 'lib'}"], check=True, capture_output=True, timeout=120)
    return exe


@pytest.fixture(scope="module")
def c_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cdata") / "k.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(0).random((60, 70)), chunks=(16, 16), compression="gzip")
    return path


def _c_lines(c_program, c_file, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("H5TURBO_THREADS", "H5TURBO_IO_DEPTH")}
    env.update(env_extra or {})
    proc = subprocess.run([str(c_program), str(c_file), "/x", "60", "70", str(FAST5)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def c_results(c_program, c_file):
    return _c_lines(c_program, c_file)


def _pick(results, what):
    return {r["value"]: r for r in results if r["what"] == what}


def test_c_threads_valid_values_identical_negative_refused(c_results):
    for what in ("read_threads", "reduce_threads"):
        lines = _pick(c_results, what)
        for value, r in lines.items():
            if value < 0:
                assert r["rc"] == 5 and "threads" in r["err"], r  # H5TURBO_E_INVALID naming the knob
            else:
                assert r["rc"] == 0 and r["same"] == 1, r


def test_c_reduce_bad_op_and_axis_are_invalid(c_results):
    for r in list(_pick(c_results, "reduce_op").values()) + list(_pick(c_results, "reduce_axis").values()):
        assert r["rc"] == 5 and r["err"], r


def test_c_var_ddof_below_count_agrees_with_numpy(c_results, c_file):
    with h5py.File(c_file) as g:
        x = g["x"][()]
    for ddof, r in _pick(c_results, "var_ddof").items():
        if ddof < x.size:
            assert r["rc"] == 0
            np.testing.assert_allclose(float(r["v"]), np.var(x, ddof=ddof), rtol=1e-12)


def test_c_var_ddof_at_or_past_count_agrees_with_numpy(c_results, c_file):
    with h5py.File(c_file) as g, h5turbo.File(c_file) as f:
        x = g["x"][()]
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            expected = np.var(x, ddof=x.size)
            assert expected == f["x"].var(ddof=x.size)  # the Python front end agrees with numpy
    for ddof, r in _pick(c_results, "var_ddof").items():
        if ddof >= x.size:
            assert r["rc"] == 0 and float(r["v"]) == expected, r


def test_c_fast5_threads_and_max_reads(c_results):
    lines = _pick(c_results, "fast5_threads")
    assert lines[-1]["rc"] == 5 and "threads" in lines[-1]["err"]
    counts = {float(r["v"]) for v, r in lines.items() if v >= 0}
    expected = sum(1 for _ in h5turbo.read_fast5(FAST5))
    assert counts == {float(expected)}
    r = _pick(c_results, "fast5_max_reads")[0]
    assert r["rc"] == 5 and "max_reads" in r["err"]


@pytest.mark.parametrize("env", [{"H5TURBO_SYSTEM_MALLOC": "1"}, {"H5TURBO_SYSTEM_MALLOC": ""},
                                 {"H5TURBO_THREADS": "2", "H5TURBO_IO_DEPTH": "0"}], ids=repr)
def test_c_environment_knobs_change_no_result(c_program, c_file, c_results, env):
    got = _c_lines(c_program, c_file, env)
    strip = [{k: v for k, v in r.items() if k != "err" or not v} for r in c_results]
    assert [{k: v for k, v in r.items() if k != "err" or not v} for r in got] == strip


# -------------------------------------------------------------------------------- R package

R_SCRIPT = r"""
suppressMessages({library(h5turbo); library(rhdf5)})
args <- commandArgs(trailingOnly = TRUE)
f <- args[length(args)]
out <- function(key, value) cat(key, "\t", value, "\n", sep = "")
kind <- function(expr) tryCatch({force(expr); "ok"}, error = function(e)
    paste0(if (inherits(e, "h5turbo_error_invalid")) "invalid" else "other", "|", conditionMessage(e)))
ref <- h5read(f, "small")
for (th in list(NULL, 0, 1, 3, 3L))
    out(paste0("same_threads_", deparse(th)), identical(h5t_read(f, "small", threads = th), ref))
out("colsums_same", isTRUE(all.equal(h5t_colSums(f, "x", threads = 1), h5t_colSums(f, "x", threads = 2), tolerance = 0)))
bad <- list(-1, 1.5, NA, NaN, Inf, "2", TRUE, c(1, 2), 2^40, NA_integer_)
for (th in bad) {
    out(paste0("bad_threads_read_", deparse(th)), kind(h5t_read(f, "small", threads = th)))
    out(paste0("bad_threads_colSums_", deparse(th)), kind(h5t_colSums(f, "x", threads = th)))
}
for (r in list(TRUE, FALSE, 1, 2, Inf))
    out(paste0("ls_", deparse(r)), nrow(h5t_ls(f, recursive = r)) == nrow(h5ls(f, recursive = r)))
for (r in list(0, NA, "yes", NaN))
    out(paste0("ls_bad_", deparse(r)), kind(h5t_ls(f, recursive = r)))
out("drop_yes", kind(h5t_read(f, "small", drop = "yes")))
out("drop_rhdf5_yes", kind(h5read(f, "small", drop = "yes")))
"""


@pytest.fixture(scope="module")
def r_results(files):
    rscript = shutil.which("Rscript")
    if not rscript:
        pytest.skip("needs R")
    check = subprocess.run([rscript, "-e", "library(h5turbo); library(rhdf5)"], capture_output=True, timeout=120)
    if check.returncode:
        pytest.skip("needs the installed h5turbo R package and rhdf5 (make r)")
    env = {k: v for k, v in os.environ.items() if k != "H5TURBO_THREADS"}
    proc = subprocess.run([rscript, "-e", R_SCRIPT, str(files["path"])], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)


def test_r_threads_valid_values_identical_to_rhdf5(r_results):
    same = {k: v for k, v in r_results.items() if k.startswith("same_threads_")}
    assert len(same) == 5 and set(same.values()) == {"TRUE"}, same
    assert r_results["colsums_same"] == "TRUE"


def test_r_bad_threads_are_invalid_errors_naming_threads(r_results):
    bad = {k: v for k, v in r_results.items() if k.startswith("bad_threads_")}
    assert len(bad) == 20
    for key, value in bad.items():
        assert value.startswith("invalid|") and "threads" in value, (key, value)


def test_r_ls_recursive_agrees_with_rhdf5_and_refuses_bad_values(r_results):
    for key in ("ls_TRUE", "ls_FALSE", "ls_1", "ls_2", "ls_Inf"):
        assert r_results[key] == "TRUE", key
    for key in ("ls_bad_0", "ls_bad_NA", 'ls_bad_"yes"'):
        assert r_results[key].startswith("invalid|") and "recursive" in r_results[key], key


def test_r_ls_recursive_nan_is_an_invalid_error(r_results):
    value = r_results["ls_bad_NaN"]
    assert value.startswith("invalid|") and "recursive" in value, value


def test_r_read_drop_not_logical_is_refused_as_rhdf5(r_results):
    assert r_results["drop_rhdf5_yes"] != "ok"
    assert r_results["drop_yes"] != "ok"


def test_the_argument_and_the_environment_variable_read_io_depth_alike():
    """The argument took other scripts' digits ('٣') and refused '+64'; the variable
    the reverse; both took '64iB' as 64 bytes. One grammar now, checked value by value."""
    from h5turbo.readahead import parse_io_depth
    values = ["64", "7B", "64k", "64 KB", "32MiB", " 1G ", "+64", "\u0663", "64iB", "1.5M", "M", "-1", "64 K B"]
    script = "import sys, h5turbo._native as n; print(n.io_depth())"
    for value in values:
        try:
            expected = parse_io_depth(value)
        except ValueError:
            expected = None
        run = subprocess.run([sys.executable, "-c", script], env={**os.environ, "H5TURBO_IO_DEPTH": value},
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        got = int(run.stdout)
        if expected is None:
            assert "H5TURBO_IO_DEPTH" in run.stderr and got == 32 << 20, (value, got, run.stderr)
        else:
            assert got == expected and "H5TURBO_IO_DEPTH" not in run.stderr, (value, got, expected)
