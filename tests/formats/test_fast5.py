"""h5turbo.read_fast5 against ont_fast5_api: the corpus files and generated ones
(single- and multi-read, vbz and gzip, several libver settings), read for read and
bit for bit; broken files give errors naming them without stopping the others."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from ont_fast5_api.fast5_interface import get_fast5_file

from support import h5gen
import h5turbo

from support.common import corpus_dir, run_python

CORPUS = corpus_dir() / "fast5"
CORPUS_FILES = sorted(CORPUS.glob("*.fast5"))


def ont_reads(path: Path) -> list[dict]:
    """What ont_fast5_api gives for every read of a file; 'error' where it raises."""
    reads = []
    with get_fast5_file(str(path), mode="r") as f:
        for r in f.get_reads():
            try:
                signal = r.get_raw_data()
            except KeyError as exc:
                reads.append({"error": str(exc)})
                continue
            try:
                channel = r.get_channel_info()
            except KeyError:
                channel = None
            attrs = dict(r.handle[r.raw_dataset_group_name].attrs)
            reads.append({"read_id": r.read_id, "signal": signal, "channel": channel, "attrs": attrs})
    return reads


def assert_same_value(ours, theirs, what: str) -> None:
    assert type(ours) is type(theirs), f"{what}: {type(ours)} != {type(theirs)}"
    if isinstance(theirs, (np.ndarray, np.generic)):  # bit for bit: NaN equals NaN
        assert ours.dtype == theirs.dtype and np.asarray(ours).tobytes() == np.asarray(theirs).tobytes(), what
    else:
        assert ours == theirs, what


def assert_matches_ont(paths: list[Path], items: list) -> None:
    expected = [(p, r) for p in paths for r in ont_reads(p)]
    assert len(items) == len(expected)
    for item, (path, ref) in zip(items, expected):
        if "error" in ref:
            assert isinstance(item, h5turbo.Fast5Error)
            assert item.path == str(path) and str(path) in str(item)
            continue
        assert_read_matches(item, path, ref)


def assert_read_matches(item, path: Path, ref: dict) -> None:
    """A Fast5Read equals ont_fast5_api's read `ref` of file `path`, bit for bit."""
    assert isinstance(item, h5turbo.Fast5Read), item
    assert item.path == str(path)
    assert item.read_id == ref["read_id"]
    assert item.signal.dtype == np.int16 and ref["signal"].dtype == np.int16
    assert np.array_equal(item.signal, ref["signal"]), item.read_id
    assert item.channel == ref["channel"]
    if ref["channel"] is not None:
        for key, value in ref["channel"].items():
            assert_same_value(item.channel[key], value, f"{item.read_id} channel {key}")
    assert list(item.attrs) == list(ref["attrs"])
    for key, value in ref["attrs"].items():
        assert_same_value(item.attrs[key], value, f"{item.read_id} attr {key}")


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_file_matches_ont(path):
    assert_matches_ont([path], list(h5turbo.read_fast5(path)))


def test_corpus_directory_in_file_order():
    items = list(h5turbo.read_fast5(CORPUS, threads=2))
    assert_matches_ont(CORPUS_FILES, items)
    # the two corpus files with basecalls but no raw signal are errors naming them
    errors = [i for i in items if isinstance(i, h5turbo.Fast5Error)]
    assert sorted(Path(e.path).name for e in errors) == ["basecall_2d_file_v1.0.fast5",
                                                         "read_file_v1.0_single.fast5"]
    assert all("no Raw" in e.problem for e in errors)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    """Many small single-read files and a few multi-read ones, vbz and gzip, several libvers."""
    folder = tmp_path_factory.mktemp("fast5")
    paths = []
    lengths = np.random.default_rng(5).integers(1, 30000, 200)
    for i in range(60):
        filters = h5gen.VBZ if i % 3 else h5gen.GZIP
        libver = ["earliest", "v110", "latest"][i % 3]
        p = folder / f"single_{i:03d}.fast5"
        h5gen.write_fast5_single(p, int(lengths[i]), seed=i, filters=filters, libver=libver)
        paths.append(p)
    for i, (filters, libver) in enumerate([(h5gen.VBZ, "earliest"), (h5gen.GZIP, "latest"),
                                           (h5gen.VBZ, "v110")]):
        p = folder / f"multi_{i}.fast5"
        h5gen.write_fast5_multi(p, [int(n) for n in lengths[60 + 40 * i:100 + 40 * i]], seed=100 + i,
                                filters=filters, libver=libver)
        paths.append(p)
    return paths


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_generated_files_match_ont(generated, threads):
    items = list(h5turbo.read_fast5([str(p) for p in generated], threads=threads))
    assert_matches_ont(generated, items)
    assert sum(isinstance(i, h5turbo.Fast5Read) for i in items) == 60 + 3 * 40


@pytest.mark.parametrize("threads", [1, 2])
def test_reads_taken_in_file_order_come_back_in_listing_order(generated, threads):
    # read_fast5 and the C API take a file's reads in the order their groups lie in
    # the file (their metadata shares blocks) and must hand them back as listed
    multi = [p for p in generated if p.name.startswith("multi_")]
    for path in multi:
        with h5py.File(path, "r") as f:
            listed = [name for name in f if name.startswith("read_")]
            by_address = sorted(listed, key=lambda name: h5py.h5o.get_info(f[name].id).addr)
        assert by_address != listed, f"{path.name}: the premise (reads scattered by name) does not hold"
    items = list(h5turbo.read_fast5([str(p) for p in multi], threads=threads))
    assert_matches_ont(multi, items)


def test_directory_and_single_path(generated):
    folder = generated[0].parent
    by_dir = [r.read_id for r in h5turbo.read_fast5(folder)]
    by_list = [r.read_id for r in h5turbo.read_fast5(sorted(folder.glob("*.fast5")))]
    assert by_dir == by_list and len(by_dir) == 180
    assert [r.read_id for r in h5turbo.read_fast5(generated[0])] == [ont_reads(generated[0])[0]["read_id"]]


def test_stopping_early_leaves_no_work_behind(generated):
    reads = h5turbo.read_fast5(generated, threads=2)
    first = [next(reads) for _ in range(3)]
    reads.close()
    assert all(isinstance(r, h5turbo.Fast5Read) for r in first)


@pytest.fixture(scope="module")
def broken(tmp_path_factory, generated) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fast5_broken")
    good = generated[1]
    truncated = folder / "truncated.fast5"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    no_signal = folder / "no_signal.fast5"
    shutil.copy(generated[2], no_signal)
    import h5py
    with h5py.File(no_signal, "a") as f:
        reads = f["Raw/Reads"]
        del reads[next(iter(reads))]["Signal"]
    garbage = folder / "garbage.fast5"
    garbage.write_bytes(b"not an HDF5 file at all" * 100)
    chopped_multi = folder / "chopped_multi.fast5"
    data = generated[-1].read_bytes()
    chopped_multi.write_bytes(data[: int(len(data) * 0.9)])
    return {"good": good, "truncated": truncated, "no_signal": no_signal, "garbage": garbage,
            "missing": folder / "missing.fast5", "chopped_multi": chopped_multi}


def test_broken_files_yield_errors_and_the_others_go_on(broken):
    order = ["good", "truncated", "good", "no_signal", "garbage", "missing", "chopped_multi", "good"]
    items = list(h5turbo.read_fast5([broken[k] for k in order], threads=2))
    good_id = ont_reads(broken["good"])[0]["read_id"]
    # the good file's read appears after every broken one
    assert [i.read_id for i in items if isinstance(i, h5turbo.Fast5Read)][-1] == good_id
    errors = [i for i in items if isinstance(i, h5turbo.Fast5Error)]
    named = {Path(e.path).name for e in errors}
    assert {"truncated.fast5", "no_signal.fast5", "garbage.fast5", "missing.fast5"} <= named
    for e in errors:
        assert isinstance(e, h5turbo.Error) and e.path in str(e) and e.problem
    no_signal = [e for e in errors if e.path == str(broken["no_signal"])]
    assert len(no_signal) == 1 and no_signal[0].read_id and "Signal" in no_signal[0].problem
    missing = [e for e in errors if e.path == str(broken["missing"])]
    assert missing[0].read_id is None and "no such file" in missing[0].problem.lower()


def test_chopped_multi_read_file_keeps_its_readable_reads(broken, generated):
    items = list(h5turbo.read_fast5(broken["chopped_multi"]))
    assert any(isinstance(i, h5turbo.Fast5Error) for i in items)
    uncut = {r["read_id"]: r["signal"] for r in ont_reads(generated[-1])}
    for read in items:  # whatever is still read is right: the uncut file says so
        if isinstance(read, h5turbo.Fast5Read):
            assert np.array_equal(read.signal, uncut[read.read_id])


def test_on_error_raise_stops_with_the_file_named(broken):
    with pytest.raises(h5turbo.Fast5Error, match="truncated.fast5") as info:
        list(h5turbo.read_fast5([broken["good"], broken["truncated"], broken["good"]], on_error="raise"))
    assert info.value.path == str(broken["truncated"])


@pytest.mark.parametrize("kwargs, error", [
    ({"on_error": "ignore"}, ValueError), ({"threads": -1}, ValueError), ({"threads": 1.5}, ValueError),
    ({"threads": True}, ValueError), ({"io_depth": "lots"}, ValueError), ({"io_depth": -1}, ValueError),
])
def test_bad_arguments_fail_at_the_call(kwargs, error):
    """Not at the first next() of the generator, which may be far from the mistake."""
    with pytest.raises(error):
        h5turbo.read_fast5([], **kwargs)
    with pytest.raises(error):
        h5turbo.Fast5Index([], **kwargs) if "on_error" not in kwargs else h5turbo.Fast5Index([]).get_reads([], **kwargs)
    assert list(h5turbo.read_fast5([])) == list(h5turbo.read_fast5([], threads=0)) == []


@pytest.mark.parametrize("source", ["single_001.fast5", "multi_0.fast5", "multi_1.fast5"])
def test_damaged_files_give_reads_or_errors_never_a_crash(generated, tmp_path, source):
    """Cuts at many lengths and bytes overwritten across the file: every item is a read
    or a Fast5Error naming the file; a read from a cut file is the uncut file's read."""
    original = next(p for p in generated if p.name == source)
    data = original.read_bytes()
    uncut = {r["read_id"]: r["signal"] for r in ont_reads(original)}
    rng = np.random.default_rng(len(source))
    damaged = []
    for i, cut in enumerate(np.linspace(0, len(data) - 1, 12).astype(int)):
        damaged.append((tmp_path / f"cut_{i}.fast5", data[:cut]))
    for i, at in enumerate(rng.integers(0, len(data), 20)):
        flipped = bytearray(data)
        flipped[at:at + 8] = bytes(8 * [0xA5])
        damaged.append((tmp_path / f"flip_{i}.fast5", bytes(flipped)))
    for path, content in damaged:
        path.write_bytes(content)
    for item in h5turbo.read_fast5([p for p, _ in damaged], threads=2):
        if isinstance(item, h5turbo.Fast5Error):
            assert item.path in str(item) and item.problem
            continue
        assert isinstance(item, h5turbo.Fast5Read) and item.signal.dtype == np.int16
        if Path(item.path).name.startswith("cut_"):  # a cut file's bytes that remain are intact
            assert np.array_equal(item.signal, uncut[item.read_id])


@pytest.fixture(scope="module")
def unusual(tmp_path_factory, generated) -> dict[str, Path]:
    """Reads whose attributes leave the native fast path: arrays, variable-length and
    big-endian values, an empty attribute, text that is not UTF-8, a read_id that is
    not text, a channel_number that is not a number."""
    import h5py
    folder = tmp_path_factory.mktemp("fast5_unusual")
    paths = {}
    for name, edit in [
        ("odd_values", lambda raw, channel: (
            raw.attrs.create("levels", np.arange(3, dtype=np.int16)),
            raw.attrs.create("note", "variable length", dtype=h5py.string_dtype()),
            raw.attrs.create("big", 7, dtype=">i4"),
            raw.attrs.create("nothing", h5py.Empty("f8")),
            channel.attrs.create("offset", 5.5, dtype=">f8"),
            channel.attrs.create("label", "vlen text", dtype=h5py.string_dtype()))),
        ("numeric_read_id", lambda raw, channel: (raw.attrs.__delitem__("read_id"),
                                                  raw.attrs.create("read_id", 12345, dtype="i8"))),
        ("vlen_read_id", lambda raw, channel: (raw.attrs.__delitem__("read_id"),
                                               raw.attrs.create("read_id", "vlen-id-1", dtype=h5py.string_dtype()))),
        ("bad_channel_number", lambda raw, channel: channel.attrs.modify("channel_number", np.bytes_(b"abc"))),
        ("non_utf8_channel", lambda raw, channel: channel.attrs.modify("channel_number", np.bytes_(b"\xff\xfe"))),
    ]:
        path = folder / f"{name}.fast5"
        shutil.copy(generated[1], path)
        with h5py.File(path, "a") as f:
            raw = f["Raw/Reads"][next(iter(f["Raw/Reads"]))]
            edit(raw, f["UniqueGlobalKey/channel_id"])
        paths[name] = path
    return paths


def test_unusual_attribute_values_match_h5py_and_ont(unusual):
    import h5py
    for name in ["odd_values", "numeric_read_id"]:
        [read] = h5turbo.read_fast5(unusual[name])
        [ref] = ont_reads(unusual[name])
        assert read.channel == ref["channel"]
        for key, value in ref["channel"].items():
            assert_same_value(read.channel[key], value, f"{name} channel {key}")
        assert list(read.attrs) == list(ref["attrs"])
        for key, value in ref["attrs"].items():
            if isinstance(value, h5py.Empty):
                assert isinstance(read.attrs[key], h5turbo.Empty) and read.attrs[key].dtype == value.dtype
            else:
                assert_same_value(read.attrs[key], value, f"{name} attr {key}")
    [numeric] = h5turbo.read_fast5(unusual["numeric_read_id"])
    # an integer read_id (ont_fast5_api gives the int): its decimal text, the id the
    # index keys it by (the read's group name stood for it, which the index did not know)
    assert numeric.read_id == str(ont_reads(unusual["numeric_read_id"])[0]["read_id"]) == "12345"
    assert h5turbo.Fast5Index(unusual["numeric_read_id"]).read_ids == ["12345"]


def test_a_variable_length_read_id_is_the_id_streamed_indexed_and_fetched(unusual):
    # h5py writes a str attribute as a variable-length string; the index read only
    # fixed-length ones and left such a single-read file unindexed
    path = unusual["vlen_read_id"]
    [read] = h5turbo.read_fast5(path)
    assert read.read_id == "vlen-id-1" == ont_reads(path)[0]["read_id"]
    index = h5turbo.Fast5Index([path])
    assert index.read_ids == ["vlen-id-1"] and index.unindexed == (0, None)
    fetched = index.get_read("vlen-id-1")
    assert fetched.read_id == "vlen-id-1" and np.array_equal(fetched.signal, read.signal)


def test_unusual_channel_values_are_errors_naming_the_read(unusual):
    for name, problem in [("bad_channel_number", "invalid literal"), ("non_utf8_channel", "utf-8")]:
        [item] = h5turbo.read_fast5(unusual[name])
        assert isinstance(item, h5turbo.Fast5Error), name
        assert item.read_id and problem in item.problem.lower() and "channel_id" in item.problem


def test_decode_floor_of_generated_files(generated, tmp_path):
    """The fast5 benchmark's floor (every Signal chunk decoded from memory) comes from
    the native module: a positive time for real files, a typed error naming the file
    for one without raw signal (KeyError, as for any missing group)."""
    assert 0 < h5turbo._native.fast5_limit([str(p) for p in generated], 2, 2) < 60
    broken = tmp_path / "no_raw.fast5"
    with h5py.File(broken, "w") as f:
        f.create_group("read_0001/channel_id")
    with pytest.raises(KeyError, match="no_raw.fast5"):
        h5turbo._native.fast5_limit([str(broken)], 1, 1)


def test_signal_too_large_to_allocate_is_an_error_for_its_read(tmp_path):
    """A Signal claiming 2^50 samples (no chunk stored) cannot be allocated: its read is
    an error naming it, and the reads around it are read."""
    path = tmp_path / "huge_signal.fast5"
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = "multi-read"
        for name, signal in [("a", np.arange(100, dtype="<i2")), ("b", None), ("c", np.arange(300, dtype="<i2"))]:
            raw = f.create_group(f"read_{name}/Raw")
            raw.attrs["read_id"] = np.bytes_(name)
            if signal is None:
                raw.create_dataset("Signal", shape=(2**50,), dtype="<i2", chunks=(1024,))
            else:
                raw.create_dataset("Signal", data=signal)
    items = list(h5turbo.read_fast5(path))
    assert [type(i).__name__ for i in items] == ["Fast5Read", "Fast5Error", "Fast5Read"]
    assert [len(items[0].signal), len(items[2].signal)] == [100, 300]
    assert "cannot allocate /read_b/Raw/Signal" in str(items[1])


def test_a_dangling_link_in_a_folder_is_an_error_not_a_silent_gap(tmp_path):
    """A *.fast5 entry that cannot be opened (a link into a disk that is not mounted)
    is reported for that file, as the same path given explicitly is."""
    shutil.copy(CORPUS / "multi_read_batch_0.fast5", tmp_path / "a.fast5")
    os.symlink(tmp_path / "unmounted" / "b.fast5", tmp_path / "b.fast5")
    items = list(h5turbo.read_fast5(tmp_path))
    errors = [i for i in items if isinstance(i, h5turbo.Fast5Error)]
    assert len(errors) == 1 and "b.fast5" in str(errors[0])
    assert len(items) - 1 == sum(1 for _ in h5turbo.read_fast5(tmp_path / "a.fast5"))


def test_a_folder_of_large_files_stays_within_the_descriptor_limit(tmp_path):
    """Files over 1 MiB keep their descriptor until decoded, and a window of tasks of 16
    files each is in flight: under a low RLIMIT_NOFILE the window shrinks instead of
    files failing with EMFILE (120 of 200 failed at 64 descriptors and 8 threads)."""
    folder = tmp_path / "run"
    folder.mkdir()
    big = CORPUS / "vbz_multi_fast5_vbz.fast5"
    for i in range(200):
        os.symlink(big, folder / f"r{i:03d}.fast5")
    script = (
        "import resource, h5turbo\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        f"items = list(h5turbo.read_fast5({str(folder)!r}, threads=8))\n"
        "print(sum(isinstance(i, h5turbo.Fast5Error) for i in items), len(items))\n"
    )
    output = run_python(script, timeout=300)
    errors, total = map(int, output.split())
    assert errors == 0 and total == 200 * sum(1 for _ in h5turbo.read_fast5(big))


def test_an_iterator_continued_in_a_forked_child_says_so_instead_of_hanging(tmp_path):
    script = (
        "import os, sys, h5turbo\n"
        f"reads = h5turbo.read_fast5({str(CORPUS)!r}, threads=2)\n"
        "next(reads)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        next(reads)\n"
        "    except RuntimeError as exc:\n"
        "        os._exit(0 if 'forked child' in str(exc) else 2)\n"
        "    os._exit(3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status), sum(1 for _ in reads))\n"
    )
    output = run_python(script, timeout=120)
    assert output.split()[0] == "0"


@pytest.mark.parametrize("env, cores, expected", [
    (None, 64, 8),     # many cores: the measured best, not every core
    (None, 2, 2),      # fewer cores than the cap: all of them
    ("32", 32, 32),    # H5TURBO_THREADS names a count: that count
    ("0", 64, 8),      # 0 names none (the core ignores it too): the cap
])
def test_the_default_pool_stops_at_the_measured_best(monkeypatch, env, cores, expected):
    """On 16 cores read_fast5 was slower at 16 threads than at 4-8
    (benchmarks/results/scaling.md), so without `threads` or H5TURBO_THREADS its pool
    takes at most DEFAULT_MAX_THREADS; an explicit count is kept."""
    import h5turbo.formats.fast5 as fast5_module
    from h5turbo.workers import WorkerPool
    sizes = []

    class Recording(WorkerPool):
        def __init__(self, workers, *args, **kwargs):
            sizes.append(workers)
            super().__init__(workers, *args, **kwargs)

    monkeypatch.setattr(fast5_module, "WorkerPool", Recording)
    monkeypatch.setattr(fast5_module._native, "default_threads", lambda: cores)
    if env is None:
        monkeypatch.delenv("H5TURBO_THREADS", raising=False)
    else:
        monkeypatch.setenv("H5TURBO_THREADS", env)
    items = list(h5turbo.read_fast5(CORPUS / "multi_read_batch_0.fast5"))
    assert sizes == [expected] and items
    assert list(h5turbo.read_fast5(CORPUS / "multi_read_batch_0.fast5", threads=16)) and sizes[-1] == 16


# Reads by id (Fast5Index): f5c's and bonito's pattern, reads asked in any order.

def first_holder(paths: list[Path]) -> dict[str, tuple[Path, dict]]:
    """read id -> (file, ont_fast5_api's read) for the first file that holds it."""
    found: dict[str, tuple[Path, dict]] = {}
    for path in paths:
        for ref in ont_reads(path):
            if "error" not in ref:
                found.setdefault(ref["read_id"], (path, ref))
    return found


def scattered(ids: list[str], times: int, seed: int) -> list[str]:
    asked = ids * times
    np.random.default_rng(seed).shuffle(asked)
    return asked


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_corpus_reads_fetched_by_id_in_any_order_match_ont(threads):
    index = h5turbo.Fast5Index(CORPUS, threads=threads)
    expected = first_holder(CORPUS_FILES)  # three corpus files hold the same reads: the first wins
    assert sorted(index.read_ids) == sorted(expected) and len(index) == len(expected)
    # the two files without raw signal cannot be indexed; they explain a missing id
    assert index.unindexed[0] == 2 and "no Raw" in index.unindexed[1]
    asked = scattered(list(expected), 3, seed=threads)
    items = list(index.get_reads(asked))
    assert len(items) == len(asked)
    for read_id, item in zip(asked, items):
        assert_read_matches(item, *expected[read_id])
    one = asked[5]
    assert_read_matches(index.get_read(one), *expected[one])


@pytest.mark.parametrize("threads, ids_per_round", [(1, 512), (2, 7), (4, 100)])
def test_generated_reads_fetched_by_id_over_many_rounds(generated, monkeypatch, threads, ids_per_round):
    import h5turbo.formats.fast5 as fast5_module
    monkeypatch.setattr(fast5_module, "IDS_PER_ROUND", ids_per_round)
    expected = first_holder(generated)
    index = h5turbo.Fast5Index([str(p) for p in generated], threads=threads)
    # read_ids in file order, as read_fast5 streams them
    assert index.read_ids == [r.read_id for r in h5turbo.read_fast5(generated)]
    asked = scattered(index.read_ids, 4, seed=ids_per_round)  # 720 ids: rounds, repeats, file jumps
    items = list(index.get_reads(iter(asked)))  # any iterable of ids
    assert [i.read_id for i in items] == asked
    for read_id, item in zip(asked, items):
        assert_read_matches(item, *expected[read_id])
    # a selection in file order: each id where its file and read put it, repeats kept
    place = {read_id: k for k, read_id in enumerate(index.read_ids)}
    in_file_order = sorted(asked[:300], key=place.__getitem__)
    items = list(index.get_reads(iter(asked[:300]), order="file"))
    assert [i.read_id for i in items] == in_file_order
    for read_id, item in zip(in_file_order, items):
        assert_read_matches(item, *expected[read_id])


def test_fetching_by_id_contract(generated):
    index = h5turbo.Fast5Index(generated[0].parent)
    first = index.read_ids[0]
    assert first in index and "nope" not in index and 5 not in index
    assert repr(index) == f"<Fast5Index: 180 reads in {len(generated)} files>"
    assert list(index.get_reads([])) == []
    with pytest.raises(KeyError, match="no read 'nope' in the fast5 files"):
        index.get_read("nope")
    with pytest.raises(KeyError, match="'nope'"):  # when its round is reached
        list(index.get_reads([first, "nope"]))
    # bad arguments, and in file order an id no file holds, fail at the call (every id
    # is looked up before the first read), not at the first next()
    with pytest.raises(KeyError, match="'nope'"):
        index.get_reads([first, "nope"], order="file")
    with pytest.raises(ValueError, match="order"):
        index.get_reads([first], order="sorted")
    with pytest.raises(TypeError, match="read id is a str"):
        index.get_read(b"abc")
    with pytest.raises(ValueError, match="on_error"):
        index.get_reads([first], on_error="skip")
    with pytest.raises(TypeError, match="call get_read"):
        index.get_reads(first)
    reads = index.get_reads(index.read_ids)
    assert next(reads).read_id == first
    reads.close()  # stopping early leaves no work behind
    assert index.paths == sorted(str(p) for p in generated)


def test_index_pickles_for_worker_processes(generated):
    import pickle

    index = h5turbo.Fast5Index(generated[0].parent, threads=2, io_depth="1M")
    copy = pickle.loads(pickle.dumps(index))
    assert (copy.paths, copy.read_ids, copy._threads, copy._depth) == (index.paths, index.read_ids, 2, 1 << 20)
    some = index.read_ids[::17]
    for a, b in zip(index.get_reads(some), copy.get_reads(some)):
        assert a.read_id == b.read_id and np.array_equal(a.signal, b.signal)


def test_reads_of_files_changed_after_indexing_are_errors_in_their_place(generated, tmp_path):
    folder = tmp_path / "changing"
    folder.mkdir()
    single, multi = generated[4], generated[-1]
    for path in (single, multi, generated[5]):
        shutil.copy(path, folder / path.name)
    index = h5turbo.Fast5Index(folder, threads=2)
    single_id = ont_reads(single)[0]["read_id"]
    multi_ids = [r["read_id"] for r in ont_reads(multi)]
    good_id = ont_reads(generated[5])[0]["read_id"]
    (folder / single.name).unlink()
    data = multi.read_bytes()
    (folder / multi.name).write_bytes(data[: len(data) // 3])
    asked = [multi_ids[-1], single_id, good_id, multi_ids[0], multi_ids[-2]]
    items = list(index.get_reads(asked))
    assert isinstance(items[2], h5turbo.Fast5Read) and items[2].read_id == good_id
    gone = items[1]
    assert isinstance(gone, h5turbo.Fast5Error) and gone.read_id == single_id
    assert gone.path == str(folder / single.name) and "no such file" in gone.problem.lower()
    uncut = {r["read_id"]: r["signal"] for r in ont_reads(multi)}
    for read_id, item in zip(asked, items):
        if isinstance(item, h5turbo.Fast5Error):  # named, in its place
            assert item.read_id == read_id and item.path in str(item) and item.problem
        else:  # what is still read is right
            assert item.read_id == read_id and np.array_equal(item.signal, uncut.get(read_id, item.signal))
    assert any(isinstance(items[k], h5turbo.Fast5Error) for k in (0, 4))  # the cut-off end
    with pytest.raises(h5turbo.Fast5Error, match=single.name):
        list(index.get_reads([good_id, single_id], on_error="raise"))
    with pytest.raises(h5turbo.Fast5Error, match=single.name):
        index.get_read(single_id)
    # a file replaced by another read's: an error for the id asked, never the other read
    shutil.copy(generated[6], folder / single.name)
    with pytest.raises(h5turbo.Fast5Error, match="changed since it was indexed") as info:
        index.get_read(single_id)
    assert info.value.read_id == single_id and single.name in str(info.value)


def test_damaged_files_are_left_out_of_the_index_or_fetched_without_a_crash(broken, generated):
    paths = [broken[k] for k in ["good", "truncated", "no_signal", "garbage", "missing", "chopped_multi"]]
    index = h5turbo.Fast5Index(paths, threads=2)
    count, first_error = index.unindexed
    assert count >= 3 and "truncated.fast5" in first_error  # truncated, garbage, missing at least
    uncut = {r["read_id"]: r["signal"] for r in ont_reads(generated[-1])}
    for read_id, item in zip(index.read_ids, index.get_reads(index.read_ids)):
        if isinstance(item, h5turbo.Fast5Error):
            assert item.read_id == read_id and item.path in str(item)
        elif read_id in uncut:
            assert np.array_equal(item.signal, uncut[read_id])
