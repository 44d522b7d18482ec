"""`h5turbo bench`: page-cache eviction (works or says it failed), verification that
catches a wrong result, the CSV schema, the plots, the parts (layouts, sources,
patterns, process splitting), bad arguments, and the quick preset end to end on a
reduced matrix."""

from __future__ import annotations

import csv
import io
import json
import mmap
import os
import sys
from dataclasses import replace

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo import cli
from h5turbo.bench import measure, report
from h5turbo.bench import strategies as strat
from h5turbo.bench.patterns import Read, Sums, pattern, verify
from h5turbo.bench.presets import Config, preset
from h5turbo.bench.run import COLUMNS, Runner
from h5turbo.bench.source import Source
from h5turbo.bench.strategies import Layout, parse_layout

REQUIRED = ["strategy", "layout", "pattern", "threads", "cache", "rep", "wall_s", "cpu_s", "peak_rss_mb",
            "bytes", "gbps", "verified"]


def run_cli(*argv) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main([str(a) for a in argv], out=out), out.getvalue()


def tiny(tmp_path, **kw) -> Config:
    cfg = Config("tiny", Source(120, 30, "int32"), [Layout((16, 16), "gzip", 1)], ["read_all", "colsums"],
                 strategies=["h5turbo", "numpy-memmap"], threads=[1], repeats=2, limits=False)
    return replace(cfg, **kw)


# ---------------------------------------------------------------------- eviction


def test_eviction_drops_a_file_from_the_page_cache(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(4 << 20))
    measure.warm(path)
    assert measure.resident_bytes(path)[0] > 0
    ev = measure.evict(path)
    assert ev.ok, ev.note()
    assert ev.total == 4 << 20 and ev.resident <= ev.total // 100
    assert measure.resident_bytes(path)[0] <= ev.total // 100


def test_eviction_failure_is_reported_not_hidden(tmp_path):
    """Pages of a file mapped by a process stay in the cache: the note says so."""
    path = tmp_path / "mapped.bin"
    path.write_bytes(os.urandom(1 << 20))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sum(mm[i] for i in range(0, len(mm), mmap.PAGESIZE))  # touch every page
        ev = measure.evict(path)
    assert not ev.ok
    assert "eviction failed" in ev.note() and "resident" in ev.note()
    missing = measure.evict(tmp_path / "no-such-file.bin")
    assert not missing.ok or missing.total == 0


def test_eviction_error_is_a_note(tmp_path):
    ev = measure.Eviction(0, 0, "posix_fadvise not available")
    assert not ev.ok and ev.note() == "eviction failed: posix_fadvise not available"


def test_measure_records_wall_cpu_and_peak_memory():
    sample = measure.measure(lambda: np.ones(40 << 20, dtype=np.uint8).sum())
    assert sample.wall_s > 0 and sample.cpu_s >= 0
    assert sample.peak_rss_mb > 40  # the 40 MiB array was resident during the call
    assert sample.result == 40 << 20


# ---------------------------------------------------------------------- verification


def test_verify_catches_wrong_values_shape_and_dtype():
    exp = np.arange(12, dtype=np.int32).reshape(3, 4)
    op = Read(slice(0, 3), slice(0, 4))
    assert verify(exp.copy(), exp, op) == (True, "")
    wrong = exp.copy()
    wrong[1, 2] += 1
    assert verify(wrong, exp, op) == (False, "1 of 12 values differ")
    assert not verify(exp.astype(np.int64), exp, op)[0]
    assert not verify(exp.ravel(), exp, op)[0]
    sums = np.array([1.0, 2.0])
    assert verify(sums * (1 + 1e-12), sums, Sums(0, ()))[0]
    assert not verify(sums * (1 + 1e-6), sums, Sums(0, ()))[0]


class _OffByOneReader(strat.MemmapReader):
    def read(self, rows, cols):
        out = super().read(rows, cols)
        out.flat[0] += 1
        return out


class _Broken(strat.Memmap):
    name = "broken-memmap"

    def open(self, path, source, layout, threads):
        return _OffByOneReader(path, source, layout, threads)


def test_a_wrong_result_is_marked_unverified(tmp_path, monkeypatch):
    monkeypatch.setitem(strat.BY_NAME, "broken-memmap", _Broken())
    cfg = tiny(tmp_path, strategies=["broken-memmap", "numpy-memmap"], patterns=["read_all"], caches=("warm",))
    rows = Runner(cfg, tmp_path / "out", progress=False).run().rows
    broken = [r for r in rows if r.strategy == "broken-memmap"]
    good = [r for r in rows if r.strategy == "numpy-memmap"]
    assert broken and all(r.status == "unverified" and not r.verified for r in broken)
    assert "1 of 3600 values differ" in broken[0].note
    assert good and all(r.status == "ok" and r.verified for r in good)
    report.write_markdown(Runner(cfg, tmp_path).run(), cfg, tmp_path / "r.md", "cmd", "machine", "v")


# ---------------------------------------------------------------------- outputs


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    cfg = tiny(tmp, patterns=["write", "read_all", "random_rows", "colsums"], strategies=["h5turbo", "h5py",
                                                                                           "numpy-memmap"],
               threads=[1, 2])
    outcome = Runner(cfg, tmp / "out", progress=False, workdir=tmp / "stores").run()
    report.write_csv(outcome.rows, tmp / "results.csv")
    report.write_markdown(outcome, cfg, tmp / "report.md", "h5turbo bench ...", measure.machine(), "versions")
    plots = report.plot_all(outcome.rows, tmp)
    return tmp, outcome, plots


def test_csv_schema(tiny_run):
    tmp, outcome, _ = tiny_run
    with open(tmp / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert set(REQUIRED) <= set(reader.fieldnames)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    measured = [r for r in rows if r["status"] == "ok"]
    assert len(measured) == len([r for r in outcome.rows if r.status == "ok"]) > 0
    for r in measured:
        assert float(r["wall_s"]) > 0 and float(r["cpu_s"]) >= 0 and float(r["peak_rss_mb"]) > 0
        assert int(r["bytes"]) > 0 and float(r["gbps"]) > 0
        assert r["verified"] == "True" and r["cache"] in ("cold", "warm", "-")
        assert int(r["threads"]) >= 1 and int(r["rep"]) in (0, 1)
    # one row per (strategy, layout, pattern, threads, cache, rep)
    keys = [tuple(r[k] for k in ("strategy", "layout", "pattern", "threads", "cache", "rep")) for r in measured]
    assert len(keys) == len(set(keys))
    # h5turbo's write: skipped with a note until h5turbo.write exists, then measured and verified
    writes = [r for r in rows if r["strategy"] == "h5turbo" and r["pattern"] == "write"]
    if hasattr(h5turbo, "write"):
        assert writes and all(r["status"] == "ok" and r["verified"] == "True" for r in writes)
    else:
        assert writes and writes[0]["status"] == "skipped" and "h5turbo.write" in writes[0]["note"]
    # h5py on 2 "threads" runs 2 processes, verified like the rest
    assert any(r["strategy"] == "h5py" and r["threads"] == "2" and "processes" in r["note"] for r in measured)


def test_report_has_summary_tables(tiny_run):
    tmp, _, _ = tiny_run
    text = (tmp / "report.md").read_text()
    for needle in ("## Fastest configuration", "## All measurements", "| h5turbo |", "median s", "min-max s",
                   "machine:", "load average", "colsums"):
        assert needle in text


def test_plots_are_written(tiny_run):
    tmp, _, plots = tiny_run
    assert sorted(p.name for p in plots) == ["ratio_vs_speed.png", "speedup_threads.png", "time_by_pattern.png"]
    for p in plots:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000


def test_cold_rows_are_evicted_each_run(tiny_run):
    _, outcome, _ = tiny_run
    cold = [r for r in outcome.rows if r.cache == "cold" and r.status == "ok"]
    assert cold and not any("eviction failed" in r.note for r in cold if r.strategy != "h5py")


# ---------------------------------------------------------------------- parts


def test_parse_layout():
    assert parse_layout("100x100:gzip3") == Layout((100, 100), "gzip", 3)
    assert parse_layout("1x500:lzf:shuffle") == Layout((1, 500), "lzf", None, True)
    assert parse_layout("64x64") == Layout((64, 64))
    assert parse_layout("8x8:blosc-zstd5").blosc_cname == "zstd"
    assert parse_layout("10x10:gzip3:shuffle").name == "c10x10-gzip3-shuffle"
    for bad in ("100", "0x5:gzip", "10x10:gzip12", "10x10:snappy", "10x10:gzip:sideways", "axb"):
        with pytest.raises(ValueError):
            parse_layout(bad)


def test_source_regenerates_any_rows_identically():
    src = Source(3000, 7, "int16", "normal")
    whole = src.array()
    rows = np.array([0, 1023, 1024, 2999])
    assert np.array_equal(src.take_rows(rows), whole[rows])
    assert np.array_equal(src.row_range(1000, 2100), whole[1000:2100])
    assert np.array_equal(np.concatenate([b for _, b in src.blocks(700)]), whole)
    assert np.array_equal(src.sums(0), whole.sum(axis=0)) and np.array_equal(src.sums(1), whole.sum(axis=1))
    with pytest.raises(ValueError):
        Source(0, 5, "int32")


def test_patterns_are_chunk_aligned_and_repeatable():
    ops = pattern("colsums").ops((1000, 700), (100, 30))
    (op,) = ops
    assert op.blocks[0][0] == 0 and op.blocks[-1][1] == 700
    assert all(a % 30 == 0 for a, _ in op.blocks)
    a = pattern("random_rows").ops((1000, 10), (10, 10))[0].rows
    b = pattern("random_rows").ops((1000, 10), (50, 10))[0].rows
    assert np.array_equal(a, b) and np.all(np.diff(a) > 0)
    oom = pattern("row_block", slice(4000, 5000)).ops((5000, 100), (500, 100))[0]
    assert oom.rows == slice(4000, 5000)


def test_split_for_processes_covers_every_part():
    ops = [Read(slice(0, 10), slice(0, 5))]
    items = strat.split_ops(ops, 3)
    assert [it[2].rows for it in items] == [slice(0, 3), slice(3, 6), slice(6, 10)]
    many = [Read(slice(i, i + 1), slice(0, 5)) for i in range(5)]
    assert len(strat.split_ops(many, 2)) == 5


# ---------------------------------------------------------------------- command line


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    not_hdf5 = tmp_path / "text.h5"
    not_hdf5.write_text("not HDF5 at all\n")
    one_d = tmp_path / "vector.h5"
    with h5py.File(one_d, "w") as f:
        f["v"] = np.arange(10)
    cases = [
        (["bench"], "give --preset"),
        (["bench", "--preset", "nope"], "unknown preset"),
        (["bench", "--preset", "quick", "--layouts", "10x10:snappy"], "codec one of"),
        (["bench", "--preset", "quick", "--strategies", "hdf6"], "unknown strategy"),
        (["bench", "--shape", "10by10"], "bad --shape"),
        (["bench", "--file", str(tmp_path / "missing.h5"), "--dataset", "x"], "no such file"),
        (["bench", "--file", str(not_hdf5), "--dataset", "x"], "not a readable HDF5 file"),
        (["bench", "--file", str(one_d), "--dataset", "v"], "needs a 2-D numeric dataset"),
        (["bench", "--file", str(one_d), "--dataset", "nope"], "no dataset 'nope'"),
        (["bench", "--file", str(one_d)], "--file needs --dataset"),
    ]
    for argv, message in cases:
        status, _ = run_cli(*argv, "-o", tmp_path / "o")
        err = capsys.readouterr().err
        assert status == 1 and message in err, (argv, err)
        assert err.count("\n") == 1


def test_users_own_file(tmp_path):
    path = tmp_path / "mine.h5"
    data = np.random.default_rng(3).integers(0, 1000, size=(320, 40)).astype(np.int64)  # whole chunks: hidefix reads it
    with h5py.File(path, "w") as f:
        f.create_dataset("g/x", data=data, chunks=(32, 8), compression="gzip", shuffle=True)
    status, text = run_cli("bench", "--file", path, "--dataset", "g/x", "--strategies", "h5turbo,h5py,hidefix",
                           "--patterns", "read_all,random_cols,rowsums", "--cache", "warm", "--threads", "1",
                           "--repeats", "1", "--no-limits", "--no-plots", "--no-progress", "-o", tmp_path / "o")
    assert status == 0, text
    rows = report.read_csv(tmp_path / "o" / "results.csv")
    done = [r for r in rows if r["status"] == "ok"]
    assert {r["strategy"] for r in done} == {"h5turbo", "h5py", "hidefix"}
    assert all(r["verified"] == "True" for r in done)
    assert not [r for r in rows if r["status"] in ("unverified", "failed")]


def test_json_output_has_the_csv_rows(tmp_path, capsys):
    path = tmp_path / "mine.h5"
    data = np.arange(64 * 16, dtype=np.int32).reshape(64, 16)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(16, 16), compression="gzip")
    capsys.readouterr()
    status, text = run_cli("bench", "--file", path, "--dataset", "x", "--strategies", "h5turbo",
                           "--patterns", "read_all", "--cache", "warm", "--threads", "1", "--repeats", "2",
                           "--no-limits", "--no-plots", "--no-progress", "--json", "-o", tmp_path / "o")
    assert status == 0, text
    records = json.loads(text)
    measured = [r for r in records if r["status"] == "ok"]
    assert [r["rep"] for r in measured] == [0, 1] and all(r["verified"] is True for r in measured)
    assert set(records[0]) == set(COLUMNS)
    assert len(records) == len(report.read_csv(tmp_path / "o" / "results.csv"))


def test_quick_preset_end_to_end(tmp_path):
    """Every strategy, every pattern, both cache states, on a reduced matrix."""
    status, text = run_cli("bench", "--preset", "quick", "--scale", "0.05", "--repeats", "1", "--no-progress",
                           "-o", tmp_path / "o", "--workdir", tmp_path / "stores")
    assert status == 0, text
    rows = report.read_csv(tmp_path / "o" / "results.csv")
    measured = [r for r in rows if r["status"] in ("ok", "unverified")]
    assert not [r for r in rows if r["status"] == "unverified"]
    names = {s.name for s in strat.ALL}
    ran = {r["strategy"] for r in measured}
    skipped = {r["strategy"] for r in rows if r["status"] == "skipped" and r["layout"] == "*"}
    assert ran | skipped == names
    assert {r["pattern"] for r in measured} == set(preset("quick").patterns)
    assert {r["cache"] for r in measured} == {"cold", "warm", "-"}
    assert any(r["strategy"] == "ref:disk" for r in rows)
    assert (tmp_path / "o" / "report.md").is_file()
    assert len(list((tmp_path / "o").glob("*.png"))) == 3


def test_h5ad_preset_sparse_rows(tmp_path):
    """h5turbo's SparseDataset, plain h5py and anndata on a small CSR matrix, checked
    against the generated scipy matrix."""
    status, text = run_cli("bench", "--preset", "h5ad", "--scale", "0.02", "--repeats", "1", "--cache", "warm",
                           "--threads", "1,2", "--no-progress", "--no-plots", "--no-limits",
                           "-o", tmp_path / "o", "--workdir", tmp_path / "stores")
    assert status == 0, text
    rows = report.read_csv(tmp_path / "o" / "results.csv")
    done = [r for r in rows if r["status"] == "ok"]
    assert {r["strategy"] for r in done} == {"h5turbo-sparse", "h5py-sparse", "anndata"}
    assert {r["pattern"] for r in done} == {"read_all", "random_rows"}
    assert not [r for r in rows if r["status"] in ("unverified", "failed")]


def test_sparse_verification_catches_a_wrong_value():
    from h5turbo.bench.sparse import SparseSource, verify_sparse
    src = SparseSource(200, 50, per_row=5)
    m = src.matrix()
    assert m.shape == (200, 50) and m.nnz == src.nnz
    assert verify_sparse(src.matrix(np.array([3, 150])), m[[3, 150]]) == (True, "")
    wrong = m.copy()
    wrong.data[0] += 1
    assert verify_sparse(wrong, m) == (False, "1 values differ")
    assert not verify_sparse(m.toarray(), m)[0]


def test_median_time_runs_before_ahead_of_every_run_untimed():
    import time
    events = []

    def before():
        events.append("before")
        time.sleep(0.05)  # untimed: must not show in the runs

    def read():
        events.append("read")
        return 1

    checked = []
    median, runs = measure.median_time(read, 3, checked.append, before=before)
    assert events == ["before", "read"] * 4  # the checked warm-up, then 3 runs
    assert checked == [1] and len(runs) == 3
    assert max(runs) < 0.04 and median == sorted(runs)[1]


def test_interleaved_times_runs_every_reader_once_per_round():
    from h5turbo.bench.measure import interleaved_times, paired_ratio
    calls, checked, warmed = [], [], []

    def reader(name):
        def read():
            calls.append(name)
            return name
        return read
    times = interleaved_times({"a": reader("a"), "b": reader("b")}, 3, checked.append,
                              before=lambda: warmed.append(1))
    assert checked == ["a", "b"]  # each warm-up's result checked
    assert calls == ["a", "b"] + ["a", "b"] * 3  # warm-ups, then round after round
    assert len(warmed) == len(calls)
    assert set(times) == {"a", "b"} and all(len(t) == 3 and min(t) >= 0 for t in times.values())
    # the median of the per-round ratios, not the ratio of the medians
    assert paired_ratio([2.0, 4.0, 9.0], [1.0, 1.0, 1.0]) == 4.0
    assert paired_ratio([2.0, 4.0, 9.0], [2.0, 1.0, 9.0]) == 1.0


# ---------------------------------------------------------------------- optional dependencies, limits


def _small_file(tmp_path):
    path = tmp_path / "mine.h5"
    data = np.arange(256 * 32, dtype=np.int32).reshape(256, 32)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(32, 16), compression="gzip")
    return path


def test_without_matplotlib_the_report_is_written_without_plots(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    status, text = run_cli("bench", "--file", _small_file(tmp_path), "--dataset", "x", "--strategies", "h5turbo",
                           "--patterns", "read_all", "--cache", "warm", "--threads", "1", "--repeats", "1",
                           "--no-limits", "--no-progress", "-o", tmp_path / "o")
    err = capsys.readouterr().err
    assert status == 0, text + err
    assert "matplotlib is not installed: the report is written without plots" in err
    assert "pip install 'h5turbo[bench]'" in err
    assert (tmp_path / "o" / "report.md").is_file() and (tmp_path / "o" / "results.csv").is_file()
    assert not list((tmp_path / "o").glob("*.png"))


def test_without_h5py_the_bench_stops_before_it_starts_and_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    status, _ = run_cli("bench", "--shape", "64x16", "--no-progress", "-o", tmp_path / "o")
    err = capsys.readouterr().err
    assert status == 1 and "needs h5py" in err and "pip install 'h5turbo[bench]'" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_missing_strategy_libraries_are_named_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "hidefix", None)
    status, text = run_cli("bench", "--file", _small_file(tmp_path), "--dataset", "x",
                           "--strategies", "h5turbo,hidefix", "--patterns", "read_all", "--cache", "warm",
                           "--threads", "1", "--repeats", "1", "--no-limits", "--no-plots", "--no-progress",
                           "-o", tmp_path / "o")
    err = capsys.readouterr().err
    assert status == 0, text + err
    assert "not installed: hidefix (pip install 'h5turbo[bench]')" in err


def test_codec_limit_rows_come_from_the_native_module(tmp_path, capsys):
    """The reference rows need no source tree: the limit is measured by h5turbo._native."""
    path = _small_file(tmp_path)
    seconds = h5turbo._native.codec_limit(str(path), "x", 1, 2)
    assert 0 < seconds < 10
    with pytest.raises(h5turbo.UnsupportedError, match="not chunked"):
        with h5py.File(tmp_path / "flat.h5", "w") as f:
            f["y"] = np.zeros((4, 4))
        h5turbo._native.codec_limit(str(tmp_path / "flat.h5"), "y", 1, 1)
    assert measure.codec_limit(path, 1, 2, "x") > 0
    status, text = run_cli("bench", "--file", path, "--dataset", "x", "--strategies", "h5turbo",
                           "--patterns", "read_all", "--cache", "warm", "--threads", "1", "--repeats", "1",
                           "--no-plots", "--no-progress", "-o", tmp_path / "o")
    assert status == 0, text + capsys.readouterr().err
    codec = [r for r in report.read_csv(tmp_path / "o" / "results.csv") if r["strategy"] == "ref:codec"]
    assert codec and all(r["status"] == "reference" and float(r["wall_s"]) > 0 for r in codec)


# ---------------------------------------------------------------------- arguments that cannot be honoured


def test_file_refuses_options_of_a_generated_matrix_and_readers_of_other_stores(tmp_path, capsys):
    """--layouts or --shape with --file labelled rows with a layout never read; zarr or
    SQLite strategies on an HDF5 file gave failed rows and status 0."""
    path = _small_file(tmp_path)
    cases = [
        (["--layouts", "10x10:gzip3"], "not with --layouts, which describe a generated matrix"),
        (["--shape", "64x16", "--dtype", "float32"], "not with --shape, --dtype"),
        (["--strategies", "h5turbo,zarr-python,sqlite"],
         "zarr-python, sqlite cannot read an HDF5 file; with --file use h5turbo, h5py, hidefix"),
    ]
    for extra, message in cases:
        status, _ = run_cli("bench", "--file", path, "--dataset", "x", *extra, "--no-progress",
                            "-o", tmp_path / "o")
        err = capsys.readouterr().err
        assert status == 1 and message in err and err.count("\n") == 1, (extra, err)
    assert not (tmp_path / "o").exists()


def test_layouts_larger_than_the_matrix_are_refused_before_anything_is_written(tmp_path, capsys):
    status, _ = run_cli("bench", "--shape", "100x50", "--layouts", "40x40,500x500:gzip3", "--no-progress",
                        "-o", tmp_path / "o", "--workdir", tmp_path / "w")
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1
    assert "layout c500x500-gzip3: chunks 500x500 are larger than the 100x50 matrix" in err
    assert not (tmp_path / "w").exists() and not (tmp_path / "o").exists()


def test_a_smaller_shape_clips_the_presets_own_chunks():
    args = cli.build_parser().parse_args(["bench", "--preset", "colsums", "--shape", "50x80"])
    from h5turbo.bench.cli import config_from
    assert [lay.chunks for lay in config_from(args).layouts] == [(50, 80)]


def test_a_store_whose_writing_fails_is_removed(tmp_path, monkeypatch):
    def half_written(path, source, layout):
        path.write_bytes(b"\0" * 800)  # begun, then the library fails
        raise ValueError("no room")
    monkeypatch.setattr(strat.BY_NAME["h5py"], "write", half_written)
    cfg = tiny(tmp_path, strategies=["h5turbo"], patterns=["read_all"], caches=("warm",), repeats=1)
    outcome = Runner(cfg, tmp_path / "o", progress=False, workdir=tmp_path / "w").run()
    assert [r.status for r in outcome.rows] == ["failed"] and "no room" in outcome.rows[0].note
    assert list((tmp_path / "w").iterdir()) == []


def test_single_threaded_strategies_report_one_thread(tmp_path):
    """numpy-memmap and sqlite run on one thread whatever --threads says (the row said
    the core count); a pool the library sizes itself has every core."""
    cfg = tiny(tmp_path, source=Source(128, 32, "int32"), threads=[2, 3],
               strategies=["numpy-memmap", "sqlite", "hidefix", "h5turbo"],
               patterns=["read_all"], caches=("warm",))
    threads = {}
    for task in Runner(cfg, tmp_path / "o", progress=False).plan():
        threads.setdefault(task.strategy.name, set()).add(task.threads)
    assert threads == {"numpy-memmap": {1}, "sqlite": {1}, "hidefix": {os.cpu_count()}, "h5turbo": {2, 3}}
    from h5turbo.bench.sparse import SPARSE
    assert {s.name: s.fixed_threads for s in SPARSE if s.thread_mode == "fixed"} == {"h5py-sparse": 1, "anndata": 1}
