"""`h5turbo ls/info/cat/advise` against h5py on a file of every dtype: JSON that is strict
JSON and reads back to h5py's values, text that reads back to them, h5py's visit order,
and one-line errors that name the file and the object."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest

import h5turbo

from support.common import REPO_ROOT
from h5turbo import cli

COMPOUND = np.dtype([("a", "<i4"), ("b", ">f8"), ("s", "S4"), ("c", "<c16")])


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_hunt")
    path = folder / "types.h5"
    with h5py.File(folder / "other.h5", "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(path, "w") as f:
        f["f8"] = np.array([1.5, np.nan, np.inf, -np.inf, -0.0, 1e-310, np.finfo("f8").max,
                            0.1, 0.123456789012345, 2 / 3])
        f["f4"] = np.array([0.1, np.nan, np.finfo("f4").max, 1 / 3], dtype="f4")
        f["f2"] = np.array([0.1, 65504, -np.inf], dtype="f2")
        f["u8"] = np.array([0, 2**64 - 1, 2**63], dtype="u8")
        f["i8"] = np.array([-2**63, 2**63 - 1, -1], dtype="i8")
        f["be"] = np.arange(6, dtype=">i4").reshape(2, 3)
        f["bef"] = np.array([[1.25, -2.5], [np.nan, 1e300]], dtype=">f8")
        f.create_dataset("vstr", dtype=h5py.string_dtype(), data=np.array(
            ["a", "ßé€ 漢字", "", "tab\there", 'quote"s', "new\nline", "\\back"], dtype=object))
        f["fstr"] = np.array([b"ab", b"cde", "é".encode()], dtype="S3")
        f.create_dataset("vlen", dtype=h5py.vlen_dtype("i4"), data=np.array(
            [np.arange(i, dtype="i4") for i in range(4)], dtype=object))
        comp = np.zeros(3, COMPOUND)
        comp["a"], comp["b"], comp["s"], comp["c"] = [1, 2, 3], [np.nan, 1, np.inf], b"hi", 1 + 2j
        f["comp"] = comp
        f.create_dataset("enum", data=np.array([0, 1, 2], "u1"),
                         dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="u1"))
        f["bool"] = np.array([True, False])
        f["cplx"] = np.array([1 + 2j, complex(np.nan, 1), complex(0, -np.inf)])
        f["scalar"] = 42
        f["scalar_nan"] = np.float32(np.nan)
        f.create_dataset("empty", data=h5py.Empty("f4"))
        f.create_dataset("zero", shape=(0, 3), dtype="i4")
        f["long"] = np.arange(10_000, dtype="f8") / 7
        f["wide"] = np.arange(3 * 2 * 9_000).reshape(3, 2, 9_000) / 3
        f["big"] = np.arange(600_000, dtype="f8") / 7
        g = f.create_group("g/sub")
        g.attrs.update({"a_str": "ünï", "a_arr": np.arange(3), "a_nan": np.nan,
                        "a_inf": np.array([np.inf, -np.inf]), "a_bytes": np.bytes_(b"xyz")})
        g.create_dataset("chunked", data=np.arange(100.0).reshape(10, 10), chunks=(3, 4),
                         compression="gzip", shuffle=True, fillvalue=np.nan)
        f["soft"] = h5py.SoftLink("/g/sub")
        f["dangling"] = h5py.SoftLink("/nope")
        f["ext"] = h5py.ExternalLink("other.h5", "/x")
        f["ext_missing"] = h5py.ExternalLink("missing.h5", "/x")
        f["hard"] = f["g/sub/chunked"]
        f["dt"] = np.dtype("<i4")
    return path


def run(*argv) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main([str(a) for a in argv], out=out)
    return status, out.getvalue()


def _no_constant(name):
    raise ValueError(f"not JSON: {name}")


def run_json(*argv):
    status, text = run(*argv, "--json")
    assert status == 0, text
    return json.loads(text, parse_constant=_no_constant)  # NaN / Infinity are not JSON


def _h5py(path, name):
    with h5py.File(path) as f:
        return f[name][()]


def _from_json(value, dtype: np.dtype):
    """A JSON value back to numpy with h5py's dtype: rows {field: value} back to tuples,
    [re, im] back to complex, the strings NaN / Infinity back to floats, text back to
    UTF-8 bytes."""
    if isinstance(value, dict):
        return tuple(_from_json(value[n], dtype.fields[n][0]) for n in dtype.names)
    if dtype.kind == "c" and isinstance(value, list) and len(value) == 2 \
            and not isinstance(value[0], list):
        return complex(float(value[0]), float(value[1]))
    if isinstance(value, list):
        return [_from_json(v, dtype) for v in value]
    return _scalar(value, dtype)


def _scalar(value, dtype):
    if dtype.kind == "f":
        return float(value)
    if dtype.kind in "SO" and isinstance(value, str):
        return value.encode()
    if dtype.kind == "O":  # a vlen sequence
        return np.array(value, dtype=h5py.check_vlen_dtype(dtype))
    return value


def _same(got, want, shape=None):
    """got (from JSON, shaped as the JSON "shape" says: [] has no inner axes) equals want."""
    want = np.asarray(want)
    got = np.array(got, dtype=want.dtype)
    if shape is not None:
        got = got.reshape(shape)
    assert got.shape == want.shape
    for field in want.dtype.names or [None]:
        np.testing.assert_array_equal(got if field is None else got[field],
                                      want if field is None else want[field])  # NaN == NaN


NUMERIC = ["f8", "f4", "f2", "u8", "i8", "be", "bef", "fstr", "comp", "enum", "bool", "cplx",
           "scalar", "scalar_nan", "zero", "g/sub/chunked"]


@pytest.mark.parametrize("name", NUMERIC)
def test_cat_json_is_strict_and_reads_back_to_h5py(sample, name):
    want = _h5py(sample, name)
    got = run_json("cat", sample, name)
    with h5py.File(sample) as f:
        assert got["path"] == f[name].name
    assert got["shape"] == list(want.shape)
    _same(_from_json(got["data"], want.dtype), want, got["shape"])


@pytest.mark.parametrize("name", ["vstr", "vlen"])
def test_cat_json_variable_length(sample, name):
    want = _h5py(sample, name)
    got = run_json("cat", sample, name)["data"]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_scalar(g, want.dtype), w)


def test_cat_json_of_a_null_dataspace(sample):
    with h5py.File(sample) as f:
        want = f["empty"]
        assert want.shape is None
        got = run_json("cat", sample, "empty")
        assert got == {"path": want.name, "shape": None, "dtype": str(want.dtype), "data": None}


def _numbers(text: str) -> list[str]:
    return text.replace("[", " ").replace("]", " ").split()


@pytest.mark.parametrize("name", ["f8", "f4", "f2", "bef", "u8", "i8", "g/sub/chunked"])
def test_cat_text_numbers_read_back_to_h5py(sample, name):
    """Every printed number reads back (as the dataset's type) to h5py's value."""
    want = _h5py(sample, name)
    status, text = run("cat", sample, name)
    assert status == 0
    got = np.array([want.dtype.type(t) for t in _numbers(text)], dtype=want.dtype)
    np.testing.assert_array_equal(got, want.ravel())


def test_cat_text_strings_read_back(sample):
    """Each printed bytes literal reads back to h5py's bytes (non-ASCII, tabs, quotes)."""
    for name in ("vstr", "fstr"):
        status, text = run("cat", sample, name)
        assert status == 0
        literals = re.findall(r"b'(?:[^'\\]|\\.)*'|b\"(?:[^\"\\]|\\.)*\"", text)
        assert [ast.literal_eval(t) for t in literals] == list(_h5py(sample, name)), name


@pytest.mark.parametrize("name, selection", [
    ("bef", "1:3"), ("bef", "::-2"), ("bef", "[1, 0, 1]"), ("bef", "-1"), ("bef", "..., 1"),
    ("bef", "None, 1:"), ("bef", "(1, 0)"), ("bef", "()"), ("scalar", "()"), ("f8", "::3")])
def test_cat_selections_as_h5py(sample, name, selection):
    """The selection as Python reads it inside [...] (np.s_), on h5py's values."""
    want = _h5py(sample, name)[eval("np.s_[" + selection + "]")]  # noqa: S307 (fixed text)
    got = run_json("cat", sample, name, "--slice", selection)
    assert got["shape"] == list(np.shape(want))
    _same(_from_json(got["data"], want.dtype), want)


def test_info_json_is_strict_and_equals_h5py(sample):
    info = run_json("info", sample, "/g/sub")
    with h5py.File(sample) as f:
        attrs = f["g/sub"].attrs
        assert list(info["attrs"]) == list(attrs)
        for key in attrs:
            want = np.asarray(attrs[key])
            _same(_from_json(info["attrs"][key], want.dtype), want)
        ds = f["g/sub/chunked"]
        info = run_json("info", sample, "g/sub/chunked")
        assert np.isnan(float(info["fillvalue"])) and np.isnan(ds.fillvalue)
        assert info["chunks"] == list(ds.chunks) and info["shape"] == list(ds.shape)


def _visit_links(path):
    with h5py.File(path) as f:
        names = []
        f.visit_links(lambda name: names.append("/" + name))
        return names


def test_ls_follows_h5py_visit_order(sample):
    assert [row["path"] for row in run_json("ls", sample)] == _visit_links(sample)


def test_ls_order_of_groups_tracking_creation_order(tmp_path):
    """h5py visits in name order also where a group iterates in creation order."""
    path = tmp_path / "tracked.h5"
    with h5py.File(path, "w", track_order=True) as f:
        for name in ("z", "a", "m"):
            group = f.create_group(name, track_order=True)
            for member in ("9", "1", "5"):
                group[member] = np.arange(2)
        f["ä"], f["b"] = 1, 2
    rows = run_json("ls", path)
    assert [row["path"] for row in rows] == _visit_links(path)
    with h5py.File(path) as f:  # info keeps the iteration order, as h5py's keys()
        assert run_json("info", path, "/")["members"] == list(f.keys())


@pytest.mark.parametrize("argv, message", [
    (["cat", "{f}", "/g"], "{f}: /g is a group, not a dataset"),
    (["cat", "{f}", "dt"], "{f}: dt is a datatype, not a dataset"),
    (["cat", "{f}", "dangling"], "{f}: 'dangling' is a soft link to '/nope', which does not exist"),
    (["info", "{f}", "ext_missing"], "{f}: 'ext_missing' is an external link to missing.h5:/x"),
    (["cat", "{f}", "/nope"], "{f}: no object '/nope'"),
    (["cat", "{f}", "be", "--slice", "abc"], "{f}: be: bad index 'abc'"),
    (["cat", "{f}", "be", "--slice", "0, 9"], "{f}: be: bad selection '0, 9'"),
    (["cat", "{f}", "be", "--slice", "1:2:0"], "{f}: be: bad selection"),
    (["cat", "{f}", "scalar", "--slice", "0"], "{f}: scalar: bad selection"),
    (["advise", "{f}", "vstr", "--pattern", "rows", "--measure"], "{f}: vstr: --measure needs"),
    (["advise", "{f}", "bef", "--pattern", "rows", "--measure", "--threads", "0"],
     "bad --threads 0: at least 1"),
])
def test_errors_name_file_and_object(sample, capsys, argv, message):
    status, out = run(*[a.format(f=sample) for a in argv])
    err = capsys.readouterr().err
    assert status == 1 and out == ""
    assert message.format(f=sample) in err and len(err.strip().splitlines()) == 1, err


def test_external_link_is_followed_as_h5py_does(sample):
    got = run_json("cat", sample, "ext")
    _same(got["data"], _h5py(sample, "ext"))


@pytest.mark.parametrize("name", ["long", "wide", "bef", "comp", "vstr"])
def test_cat_all_prints_every_value_as_numpy(sample, name):
    """--all prints block by block; the values are numpy's printing of the whole array."""
    want = _h5py(sample, name)
    status, text = run("cat", sample, name, "--all")
    assert status == 0
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        assert text.split() == np.array2string(want).split()
    if want.dtype.kind == "f":
        got = np.array([want.dtype.type(t) for t in _numbers(text)], dtype=want.dtype)
        np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("kind", ["f8", "f4", "c16", "exp"])
def test_cat_all_of_a_large_float_array_formats_from_a_sample_and_its_extremes(tmp_path, monkeypatch, kind):
    """Past 4 x _FORMAT_SAMPLE values the format is chosen over a sample and every
    extreme (numpy would first make a string of each value: 20 s for 4 million): the
    same notation and values as numpy's whole-array printing, each value exact."""
    monkeypatch.setattr(cli, "_FORMAT_SAMPLE", 64)
    monkeypatch.setattr(cli, "_FORMAT_BLOCK", 1000)
    rng = np.random.default_rng(5)
    values = np.round(rng.normal(size=(50, 101)) * 100, 3)
    if kind == "exp":  # one tiny value off the sample turns numpy to exponents
        values[37, 55] = 3e-9
        values[3, 7], values[4, 8] = np.nan, -np.inf
    want = values.astype({"exp": "f8"}.get(kind, kind)) * (1 + 2j if kind == "c16" else 1)
    path = tmp_path / "floats.h5"
    with h5py.File(path, "w") as f:
        f["x"] = want
    status, text = run("cat", path, "x", "--all")
    assert status == 0
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        assert text.split() == np.array2string(want).split()
    if kind in ("f8", "f4", "exp"):
        got = np.array([want.dtype.type(t) for t in _numbers(text)], dtype=want.dtype)
        np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_closed_pipe_is_no_traceback(sample):
    """`h5turbo cat big --all | head -1`: the first line at once, then a quiet exit
    (600,000 values printed in one piece took numpy minutes: the timeout catches that)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    command = f"{sys.executable} -m h5turbo cat {sample} big --all | head -1"
    # its own session: a hung pipeline is killed whole, not left running after the test
    pipeline = subprocess.Popen(["bash", "-c", "set -o pipefail; " + command], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    try:
        stdout, stderr = pipeline.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(pipeline.pid, signal.SIGKILL)
        pipeline.communicate()
        pytest.fail("h5turbo cat --all | head -1 printed no line in 120 s")
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    first = [float(t) for t in _numbers(stdout)]
    assert first
    np.testing.assert_array_equal(first, _h5py(sample, "big")[:len(first)])


def test_json_of_dates_and_durations_is_their_text(tmp_path):
    # h5py's opaque datetime64 / timedelta64: .item() gave datetime objects, which
    # stopped the JSON half-way with a traceback
    path = tmp_path / "times.h5"
    dates = np.array(["2020-01-01T00:00:00", "NaT"], "datetime64[s]")
    with h5py.File(path, "w") as f:
        f["t"] = dates.astype(h5py.opaque_dtype(dates.dtype))
        durations = np.array([5, -1], "timedelta64[ms]")
        f["td"] = durations.astype(h5py.opaque_dtype(durations.dtype))
        f["x"] = np.arange(2)
        day = np.array(["2020-01-01"], "datetime64[D]")
        f["x"].attrs["when"] = day.astype(h5py.opaque_dtype(day.dtype))
    assert run_json("cat", str(path), "/t")["data"] == ["2020-01-01T00:00:00", "NaT"]
    assert run_json("cat", str(path), "/td")["data"] == ["5 milliseconds", "-1 milliseconds"]
    assert run_json("info", str(path), "/x")["attrs"]["when"] == ["2020-01-01"]
    assert run_json("info", str(path), "/t")["fillvalue"] == "1970-01-01T00:00:00"


# ---------------------------------------------------------------------- cat reads what it prints


def _summary_arrays():
    rng = np.random.default_rng(11)
    comp = np.zeros((30, 40), dtype=[("a", "<i4"), ("b", "<f8"), ("s", "S3")])
    comp["a"], comp["b"] = rng.integers(0, 100, comp.shape), rng.random(comp.shape)
    return {
        "f8": rng.normal(size=2000) * 1e3,
        "f4": (rng.normal(size=(9, 10, 12)) * 100).astype("f4"),
        "i8": rng.integers(-10**12, 10**12, size=(7, 8, 5, 6)),
        "u1": rng.integers(0, 255, size=(100, 30)).astype("u1"),
        "bool": rng.random((50, 40)) > 0.5,
        "c16": rng.normal(size=(30, 40)) + 1j * rng.normal(size=(30, 40)),
        "fixed_str": np.array([[f"s{i * j}".encode() for j in range(40)] for i in range(30)]),
        "tiny": np.where(rng.random((40, 40)) > 0.99, 1e-9, rng.normal(size=(40, 40))),  # exponents
        "nan": np.where(rng.random(3000) > 0.9, np.nan, rng.random(3000)),
        "narrow": rng.random((1001, 2)),
        "big_endian": np.arange(3000, dtype=">f8").reshape(60, 50) / 7,
        "comp": comp,
    }


@pytest.fixture(scope="module")
def summary_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("summary") / "summary.h5"
    with h5py.File(path, "w") as f:
        for name, values in _summary_arrays().items():
            f.create_dataset(name, data=values, chunks=True)
        f.create_dataset("vstr", data=np.array([f"s{i}" for i in range(1500)], dtype=object),
                         dtype=h5py.string_dtype())
    return path


SUMMARY_SELECTIONS = [None, "1:", "::-1", "None, ...", "..., None", "0", "-1", "2:40:3",
                      "[5, 0, 5, 3, 1, 2, 4, 0]", "::2, 3", "'b'", "1:, 'a'"]


def test_cat_summary_is_numpys_summary_of_the_whole_selection(summary_file):
    """Read from the corners, printed as numpy prints the whole array: every rank,
    dtype and selection kind (negative steps, newaxis, index lists, fields)."""
    arrays = dict(_summary_arrays(), vstr=np.array([f"s{i}".encode() for i in range(1500)], dtype=object))
    checked = 0
    for name, values in arrays.items():
        for selection in SUMMARY_SELECTIONS:
            try:
                want = values[np.s_[...] if selection is None else eval("np.s_[" + selection + "]")]  # noqa: S307
            except (IndexError, ValueError):
                continue  # (a field of an array without fields)
            argv = [] if selection is None else ["--slice", selection]
            status, text = run("cat", summary_file, name, *argv)
            assert status == 0, (name, selection, text)
            with np.printoptions(floatmode="unique"):
                expected = np.array2string(want) if isinstance(want, np.ndarray) else str(want)
            assert text == expected + "\n", (name, selection)
            checked += 1
    assert checked > 100


def _counting_reads(monkeypatch) -> list:
    """The number of elements each read of a dataset returns."""
    sizes = []
    real = h5turbo.Dataset.__getitem__

    def counted(self, index):
        value = real(self, index)
        sizes.append(int(np.size(value)))
        return value
    monkeypatch.setattr(h5turbo.Dataset, "__getitem__", counted)
    return sizes


def test_cat_summary_reads_only_the_corners(tmp_path, monkeypatch):
    path = tmp_path / "wide.h5"
    values = np.arange(400 * 500, dtype="f8").reshape(400, 500) / 3
    with h5py.File(path, "w") as f:
        f["x"] = values
        # 74.5 GiB as numbers, 12 KB on disk: was read whole, which cannot be done
        huge = f.create_dataset("huge", shape=(100_000, 100_000), dtype="f8", chunks=(1000, 1000),
                                compression="gzip")
        huge[:3, :3] = np.arange(9.0).reshape(3, 3)
    sizes = _counting_reads(monkeypatch)
    status, text = run("cat", path, "x")
    assert status == 0
    with np.printoptions(floatmode="unique"):
        assert text == np.array2string(values) + "\n"
    assert sum(sizes) <= 36  # the four 3 x 3 corners
    status, text = run("cat", path, "huge")
    assert status == 0
    assert text.splitlines()[:2] == ["[[0. 1. 2. ... 0. 0. 0.]", " [3. 4. 5. ... 0. 0. 0.]"]


def test_cat_json_and_all_stream_in_bounded_blocks_with_the_same_output(summary_file, monkeypatch):
    """--json and --all of a selection over _STREAM_BYTES are read part by part; what
    they print is what the whole read printed (blocks joined, numpy's format chosen
    over every value in a first pass). Small blocks here, to stream small arrays."""
    monkeypatch.setattr(cli, "_PRINT_BLOCK", 64)
    cases = [("f4", None), ("i8", None), ("i8", "::-1, 2:, None"), ("c16", None), ("tiny", None),
             ("comp", None), ("comp", "'b'"), ("vstr", None), ("bool", "[3, 1, 2, 9, 4, 8, 0]"), ("narrow", None)]
    for name, selection in cases:
        argv = ["cat", summary_file, name] + ([] if selection is None else ["--slice", selection])
        for mode in ("--json", "--all"):
            want = run(*argv, mode)
            with monkeypatch.context() as patch:
                sizes = _counting_reads(patch)
                patch.setattr(cli, "_STREAM_BYTES", 256)
                assert run(*argv, mode) == want, (name, selection, mode)
            assert len(sizes) > 2, (name, selection, mode)  # streamed, not read whole
            # a block of about 256 bytes, or one print block of 64 values
            assert max(sizes) <= 256, (name, selection, mode, sizes)
