"""The `h5turbo` command (ls, info, cat): output checked against h5py on generated files
and on the corpus; errors are one line and a non-zero status."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from support.common import REPO_ROOT, corpus_dir
from h5turbo import cli

CORPUS = corpus_dir()
CORPUS_FILES = sorted(p for p in CORPUS.glob("*/*") if p.is_file() and p.suffix != ".md")


def run(*argv) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main([str(a) for a in argv], out=out)
    return status, out.getvalue()


def run_json(*argv):
    status, text = run(*argv, "--json")
    assert status == 0, text
    return json.loads(text)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "sample.h5"
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "sample"
        f.attrs["version"] = np.int32(3)
        g = f.create_group("grid")
        g.attrs["scale"] = np.array([0.5, 2.0])
        g.create_dataset("temp", data=rng.integers(0, 50, (120, 90), dtype=np.int32),
                         chunks=(32, 30), compression="gzip", compression_opts=4, shuffle=True)
        g.create_dataset("flat", data=np.arange(10.0))
        f.create_dataset("records", data=np.array([(1, 2.5), (3, 4.5)],
                                                  dtype=[("a", "i4"), ("b", "f8")]))
        f.create_dataset("names", data=np.array([b"ab", b"cde"]))
        f["alias"] = h5py.SoftLink("/grid/temp")
        f["grid/again"] = g["temp"]  # second hard link to the same dataset
    return path


def _h5py_summary(ds: h5py.Dataset) -> dict:
    dcpl = ds.id.get_create_plist()
    chunked = ds.chunks is not None
    return {
        "shape": None if ds.shape is None else list(ds.shape),
        "chunks": list(ds.chunks) if chunked else None,
        "storage_size": ds.id.get_storage_size(),
        "chunk_count": ds.id.get_num_chunks() if chunked else None,
        "filter_ids": [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())],
    }


def _check_dataset_row(row: dict, ds: h5py.Dataset) -> None:
    exp = _h5py_summary(ds)
    for key in ("shape", "chunks", "storage_size", "chunk_count"):
        assert row[key] == exp[key], (ds.name, key, row[key], exp[key])
    assert len(row["filters"]) == len(exp["filter_ids"]), ds.name
    if not ds.dtype.hasobject and row["storage_size"]:
        assert row["compression_ratio"] == round(ds.nbytes / exp["storage_size"], 3)


def _followed(rows: dict, path: str) -> dict:
    """The row describing the object at path (a repeated hard link points at the first)."""
    row = rows[path]
    return rows[row["target"]] if row["kind"] == "hard_link" else row


def test_ls_matches_h5py(sample):
    rows = {r["path"]: r for r in run_json("ls", sample)}
    with h5py.File(sample) as ref:
        assert rows["/grid"]["kind"] == "group" and rows["/grid"]["members"] == 3
        for path in ("/grid/temp", "/grid/flat", "/records", "/names"):
            _check_dataset_row(_followed(rows, path), ref[path])
    assert _followed(rows, "/grid/temp")["filters"] == ["shuffle", "deflate"]
    assert _followed(rows, "/grid/temp")["layout"] == "chunked"
    assert rows["/alias"] == {"path": "/alias", "kind": "soft_link", "target": "/grid/temp"}
    # the second hard link is shown as a link to the first, not listed twice
    linked = [rows[p]["kind"] for p in ("/grid/again", "/grid/temp")]
    assert sorted(linked) == ["dataset", "hard_link"]


def test_ls_text_tree(sample):
    status, text = run("ls", sample)
    assert status == 0
    lines = text.splitlines()
    assert lines[0].startswith("/  (")
    # name order: 'again' is met first and described, 'temp' then points at it
    temp = next(line for line in lines if line.strip().startswith("again"))
    assert "temp -> /grid/again  (hard link)" in text
    assert temp.startswith("    again  (120, 90)  int32  chunked  chunks 32x30  12 stored")
    assert "[shuffle, deflate]" in temp and "ratio" in temp
    status, text = run("ls", sample, "/grid", "--no-recursive")
    assert status == 0 and "records" not in text and "flat" in text


def test_info_matches_h5py(sample):
    info = run_json("info", sample, "/grid/temp")
    with h5py.File(sample) as ref:
        ds = ref["/grid/temp"]
        _check_dataset_row(info, ds)
        assert info["maxshape"] == list(ds.maxshape)
        assert info["chunk_index"] == "btree_v1"  # h5py's default (earliest) format
        assert [f["id"] for f in info["filters"]] == [2, 1]
        assert info["filters"][1]["client_data"] == [4]
        root = run_json("info", sample, "/")
        assert root["attrs"] == {"title": "sample", "version": 3}
        assert root["members"] == list(ref.keys())
    assert run_json("info", sample, "/grid")["attrs"] == {"scale": [0.5, 2.0]}


@pytest.mark.parametrize("selection", [None, "5:40:3, ::7", "-1", "[3, 1, 3], 2:4", "..., 0"])
def test_cat_matches_h5py(sample, selection):
    args = ["cat", sample, "/grid/temp"] + ([] if selection is None else ["--slice", selection])
    got = run_json(*args)
    with h5py.File(sample) as ref:
        index = () if selection is None else cli.parse_slice(selection)
        expected = ref["/grid/temp"][...][index]
    assert got["shape"] == list(np.shape(expected))
    np.testing.assert_array_equal(np.array(got["data"]), expected)


def test_cat_compound_and_strings(sample):
    assert run_json("cat", sample, "/records")["data"] == [{"a": 1, "b": 2.5}, {"a": 3, "b": 4.5}]
    assert run_json("cat", sample, "/records", "--slice", "'b'")["data"] == [2.5, 4.5]
    assert run_json("cat", sample, "/names")["data"] == ["ab", "cde"]
    status, text = run("cat", sample, "/grid/flat", "--slice", "2:5")
    assert status == 0 and text.strip() == "[2. 3. 4.]"


def test_parse_slice_is_numpy_and_safe():
    assert cli.parse_slice("0:10, ::2") == (slice(0, 10), slice(None, None, 2))
    assert cli.parse_slice("...,None,-3") == (Ellipsis, None, -3)
    (arr, whole) = cli.parse_slice("[True, False], :")
    assert arr.dtype == bool and whole == slice(None)
    for bad in ("__import__('os').system('true')", "1:2:3:4", "[1, 'x']", "a"):
        with pytest.raises(cli.CLIError):
            cli.parse_slice(bad)


@pytest.mark.parametrize("argv, message", [
    (["ls", "/no/such/file.h5"], "no such file"),
    (["info", "{sample}", "/nope"], "no object '/nope'"),
    (["cat", "{sample}", "/grid"], "is a group, not a dataset"),
    (["cat", "{sample}", "/grid/temp", "--slice", "500"], "bad selection"),
    (["ls", "{readme}"], "not a readable HDF5 file"),
    (["info", "{folder}", "/"], "is a directory"),
])
def test_errors_are_one_line(sample, capsys, argv, message):
    argv = [a.format(sample=sample, readme=REPO_ROOT / "README.md", folder=sample.parent)
            for a in argv]
    status, out = run(*argv)
    err = capsys.readouterr().err
    assert status == 1 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv, message", [
    (["bench", "--shape", "100x10", "--dtype", "foo"], "bad --dtype"),
    (["bench", "--shape", "100x10", "--threads", "0"], "bad --threads"),
    (["bench", "--shape", "100x10", "--threads", "-2"], "bad --threads"),
    (["repack", "{readme}", "{out}"], "README.md: cannot be opened as HDF5"),
    (["repack", "{folder}", "{out}"], "is a directory"),
    (["repack", "{sample}", "{out}", "--level", "9"], "needs a compression"),
])
def test_bad_arguments_are_one_line_errors(sample, tmp_path, capsys, argv, message):
    argv = [a.format(sample=sample, readme=REPO_ROOT / "README.md", folder=sample.parent, out=tmp_path / "o.h5")
            for a in argv]
    status, _out = run(*argv)
    err = capsys.readouterr().err
    assert status == 1, err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o.h5").exists()


def test_sigterm_interrupts_a_command_like_ctrl_c(monkeypatch, capsys):
    """A job scheduler's SIGTERM ends a command the way Ctrl-C does (writers remove their
    temporary files on the way out), with one line and status 130, not a traceback."""
    import signal

    def killed(_args, _out):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt")
    monkeypatch.setattr(cli, "cmd_repack", killed)
    previous = signal.getsignal(signal.SIGTERM)
    assert cli.main(["repack", "x.h5", "y.h5"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) == previous


def test_sigterm_ends_a_reading_command_blocked_in_native_code(tmp_path):
    """`ls` of a FIFO waits in the native open; SIGTERM (timeout, kill) still ends it, as
    it ends h5py: a command that writes nothing keeps SIGTERM's default action (a
    Python handler would wait for the native call to return)."""
    import signal
    import time
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.Popen([sys.executable, "-m", "h5turbo", "ls", str(fifo)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)  # importing, then blocked opening the FIFO
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()


def test_write_errors_name_the_destination_not_the_temporary_file(tmp_path):
    """str() of an OSError comes from strerror and filename (libhdf5's full-disk error
    names the file there), which are renamed too."""
    from h5turbo.writing.atomic import _name_destination
    tmp, dst = tmp_path / ".dst.h5.x.h5turbo-tmp", tmp_path / "dst.h5"
    error = OSError(28, f"file write failed: filename = '{tmp}'", str(tmp))
    _name_destination(error, tmp, dst)
    assert str(tmp) not in str(error) and str(dst) in str(error) and error.filename == str(dst)


def test_help_everywhere(capsys):
    for argv in ([], ["ls"], ["info"], ["cat"]):
        assert cli.main(argv + ["--help"]) == 0
        assert "usage: h5turbo" in capsys.readouterr().out
    assert cli.main([]) == 2  # no subcommand: usage error


def test_console_entry_in_subprocess(sample):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    done = subprocess.run([sys.executable, "-m", "h5turbo", "cat", str(sample), "/grid/flat",
                           "--slice", "::4", "--json"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"] == [0.0, 4.0, 8.0]
    done = subprocess.run([sys.executable, "-m", "h5turbo", "ls", "/no/such.h5"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ls_corpus_against_h5py(path):
    """Every dataset h5py lists is listed with h5py's shape, chunks, storage and chunk
    count; one h5turbo cannot describe yet is listed with its typed error."""
    rows = {r["path"]: r for r in run_json("ls", path)}
    try:
        ref = h5py.File(path, "r")
    except OSError:  # a file h5py refuses (a jhdf file flagged open for write)
        assert rows, path
        return
    with ref:
        datasets = []
        ref.visititems(lambda name, obj: datasets.append(obj)
                       if isinstance(obj, h5py.Dataset) else None)
        for ds in datasets:
            row = rows.get(ds.name) or next(
                (r for r in rows.values() if r.get("target") == ds.name), None)
            assert row is not None, ds.name
            if row["kind"] == "hard_link":
                row = rows[row["target"]]
            if row["kind"] == "error":
                assert "UnsupportedError" in row["error"], row
                continue
            _check_dataset_row(row, ds)


def test_info_text_tells_a_nan_from_the_string_nan(tmp_path, capsys):
    """JSON writes NaN as the string "NaN"; the text shows the float, so an attribute
    holding NaN and one holding the word read differently, as Python shows them."""
    path = tmp_path / "nan.h5"
    with h5py.File(path, "w") as f:
        f.attrs["x"], f.attrs["word"], f.attrs["pair"] = np.nan, "NaN", [np.inf, 1.5]
    status, text = run("info", path, "/")
    assert status == 0
    lines = {line.split(" = ")[0].strip(): line.split(" = ")[1] for line in text.splitlines() if " = " in line}
    assert lines == {"pair": "[inf, 1.5]", "word": "'NaN'", "x": "nan"}, lines
    assert run_json("info", path, "/")["attrs"] == {"pair": ["Infinity", 1.5], "word": "NaN", "x": "NaN"}


def test_info_chunk_index_types(tmp_path):
    """The chunk index type HDF5 picks for each maxshape (file format 1.10+)."""
    path = tmp_path / "indexes.h5"
    expected = {"single": ("single_chunk", dict(chunks=(10, 10), maxshape=(10, 10))),
                "fixed": ("fixed_array", dict(chunks=(2, 5), maxshape=(10, 10))),
                "extensible": ("extensible_array", dict(chunks=(2, 5), maxshape=(None, 10))),
                "btree2": ("btree_v2", dict(chunks=(2, 5), maxshape=(None, None)))}
    with h5py.File(path, "w", libver="latest") as f:
        for name, (_index, kwargs) in expected.items():
            f.create_dataset(name, data=np.arange(100).reshape(10, 10), **kwargs)
    for name, (index, _kwargs) in expected.items():
        info = run_json("info", path, name)
        assert info["chunk_index"] == index, name
        with h5py.File(path) as ref:
            _check_dataset_row(info, ref[name])


def test_ls_shows_sparse_matrix_groups(tmp_path):
    import anndata
    import scipy.sparse

    rng = np.random.default_rng(3)
    x = scipy.sparse.random(40, 25, density=0.1, format="csr", dtype=np.float32, random_state=rng)
    layer = scipy.sparse.csc_matrix(x)
    path = tmp_path / "sparse.h5ad"
    anndata.AnnData(X=x, layers={"counts": layer}).write_h5ad(path)
    rows = {r["path"]: r for r in run_json("ls", path)}
    assert rows["/X"]["sparse"] == {"format": "csr", "shape": [40, 25], "dtype": "float32",
                                    "nnz": x.nnz}
    assert rows["/layers/counts"]["sparse"]["format"] == "csc"
    assert "sparse" not in rows["/obs"]
    assert "/X/indptr" in rows  # members are still listed
    status, text = run("ls", path)
    assert status == 0
    assert f"X/  (3 members)  csr matrix 40 x 25 float32, {x.nnz} stored values" in text


def test_demo_runs_and_checks_results(tmp_path, capsys):
    from h5turbo import demo

    status = demo.main(["--rows", "700", "--cols", "600", "--chunk", "128", "--dir", str(tmp_path), "--repeats", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "results identical: yes" in out and "speed-up:" in out
    assert out.count("(runs: ") == 2  # both readers, each with its runs listed


def test_demo_creates_a_missing_dir_with_its_parents(tmp_path, capsys):
    from h5turbo import demo

    folder = tmp_path / "new" / "deeper"
    status = demo.main(["--rows", "64", "--cols", "48", "--chunk", "32", "--dir", str(folder), "--repeats", "1"])
    assert status == 0, capsys.readouterr().out
    assert len(list(folder.glob("demo-*.h5"))) == 1
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as stop:  # a folder that cannot be made: one line, status 1
        demo.main(["--rows", "64", "--dir", str(blocker / "sub")])
    err = capsys.readouterr().err
    assert stop.value.code == 1 and "cannot create it" in err and err.count("\n") == 1


# ---------------------------------------------------------------------- names that are not UTF-8


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory) -> Path:
    """Names h5py gives as bytes (not valid UTF-8) among str names, and an attribute
    whose name holds a newline and whose value holds bytes that are not UTF-8."""
    path = tmp_path_factory.mktemp("names") / "odd.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("sub")
        h5py.h5d.create(g.id, b"x\xff", h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((2,)))
        h5py.h5g.create(g.id, b"g\xfe")
        for name in ("a", "z", "é", "fine"):
            g[name] = 1
        g[b"g\xfe"]["d"] = np.arange(3)
        scalar = h5py.h5s.create(h5py.h5s.SCALAR)
        h5py.h5a.create(f.id, b"attr\xfe", h5py.h5t.NATIVE_INT32, scalar).write(np.array(5, "i4"))
        f.attrs["new\nline"] = np.bytes_(b"\xff\x00ab")
        f.attrs["list"] = np.array([b"\xfe", b"ok"])
        f.attrs["plain"] = "text"
    return path


def test_ls_lists_names_that_are_not_utf8_in_h5py_order(odd_names):
    status, text = run("ls", odd_names, "/sub")
    assert status == 0, text
    names = [line.split()[0].rstrip("/") for line in text.splitlines()[1:] if not line.startswith("    ")]
    with h5py.File(odd_names) as f:  # HDF5 orders names by their bytes: h5py's order
        want = [n.decode("utf-8", "backslashreplace") if isinstance(n, bytes) else n for n in f["sub"]]
    assert names == want == ["a", "fine", "g\\xfe", "x\\xff", "z", "é"]
    assert "\n    d  (3)  int64" in text  # the group named by bytes is listed too
    rows = run_json("ls", odd_names)
    assert [r["path"] for r in rows if r["path"].startswith("/sub/")] == [
        "/sub/a", "/sub/fine", "/sub/g\\xfe", "/sub/g\\xfe/d", "/sub/x\\xff", "/sub/z", "/sub/é"]


def test_info_json_of_names_that_are_not_utf8(odd_names):
    root = run_json("info", odd_names, "/")
    assert root["attrs"]["attr\\xfe"] == 5
    assert root["attrs"]["new\nline"] == "\\xff\u0000ab" and root["attrs"]["list"] == ["\\xfe", "ok"]
    assert run_json("info", odd_names, "sub")["members"] == ["a", "fine", "g\\xfe", "x\\xff", "z", "é"]
    assert run_json("info", odd_names, os.fsdecode(b"sub/g\xfe"))["path"] == "/sub/g\\xfe"


def test_cat_and_ls_take_a_path_that_is_not_utf8(odd_names):
    """argv reaches Python with surrogate escapes ('x\\udcff'): looked up by its bytes."""
    path = os.fsdecode(b"sub/x\xff")
    assert run_json("cat", odd_names, path)["path"] == "/sub/x\\xff"
    status, text = run("cat", odd_names, path)
    assert status == 0 and text == "[0 0]\n"
    assert run_json("cat", odd_names, os.fsdecode(b"sub/g\xfe/d"))["data"] == [0, 1, 2]
    status, text = run("ls", odd_names, os.fsdecode(b"sub/g\xfe"))
    assert status == 0 and text.startswith("/sub/g\\xfe  (1 members)")


def test_a_missing_path_that_is_not_utf8_is_one_line(odd_names, capsys):
    status, _ = run("cat", odd_names, os.fsdecode(b"sub/y\xff"))
    err = capsys.readouterr().err
    assert status == 1 and err == f"h5turbo cat: {odd_names}: no object 'sub/y\\xff'\n"


def test_info_text_keeps_each_attribute_on_one_line_with_one_escape_style(odd_names):
    status, text = run("info", odd_names, "/")
    assert status == 0
    lines = text.splitlines()
    assert "  new\\nline = '\\xff\\x00ab'" in lines  # not '\\\\xff\x00ab' split over two lines
    assert "  attr\\xfe = 5" in lines and "  list = ['\\xfe', 'ok']" in lines
    assert "  plain = 'text'" in lines
    assert len(lines) == lines.index("attributes:        4") + 5  # one line per attribute
    status, text = run("info", odd_names, "sub")
    assert "members:           ['a', 'fine', 'g\\xfe', 'x\\xff', 'z', 'é']" in text
