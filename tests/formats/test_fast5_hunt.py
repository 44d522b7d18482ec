"""read_fast5 and Fast5Index against ont_fast5_api on multi-read files whose read
groups are reached under more than one name: a read's id is its group's name
(read_<id>), as ont_fast5_api and the index take it."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from ont_fast5_api.fast5_interface import get_fast5_file

import h5turbo


def _write_read(f: h5py.File, read_id: str, attr_id: str, length: int) -> None:
    raw = f.create_group(f"read_{read_id}/Raw")
    raw.attrs["read_id"] = np.bytes_(attr_id)
    raw.attrs["read_number"] = np.int32(length)
    raw.create_dataset("Signal", data=np.arange(length, dtype=np.int16))
    channel = f.create_group(f"read_{read_id}/channel_id")
    channel.attrs["channel_number"] = np.bytes_(str(length))
    channel.attrs["digitisation"] = np.float64(8192)


@pytest.fixture
def linked(tmp_path) -> Path:
    """Reads a, b, c; b's read_id attribute says otherwise; read d is a second (hard)
    name for a's group, read e a soft link to c's."""
    path = tmp_path / "linked.fast5"
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = np.bytes_("multi-read")
        _write_read(f, "a", "a", 3)
        _write_read(f, "b", "not-b", 4)
        _write_read(f, "c", "c", 5)
        f["read_d"] = f["read_a"]
        f["read_e"] = h5py.SoftLink("/read_c")
    return path


def _ont(path: Path) -> list[tuple[str, np.ndarray]]:
    with get_fast5_file(str(path), mode="r") as f:
        return [(r.read_id, r.get_raw_data()) for r in f.get_reads()]


def test_a_multi_read_files_read_is_named_by_its_group_as_ont_names_it(linked):
    # the read_id attribute was taken: b came as "not-b" (which Fast5Index does not
    # know) and d as a second "a"
    expected = _ont(linked)
    assert [read_id for read_id, _ in expected] == ["a", "b", "c", "d", "e"]
    reads = list(h5turbo.read_fast5(linked))
    assert [r.read_id for r in reads[:4]] == ["a", "b", "c", "d"]
    for read, (_, signal) in zip(reads, expected):
        assert np.array_equal(read.signal, signal)
    index = h5turbo.Fast5Index(linked)
    assert all(read.read_id in index for read in reads[:4])


def test_reads_fetched_by_id_carry_the_id_asked(linked):
    # a group reached through a soft link is named by its target: fetching e gave c
    index = h5turbo.Fast5Index(linked)
    assert index.read_ids == ["a", "b", "c", "d", "e"]
    expected = dict(_ont(linked))
    for read_id in index.read_ids:
        read = index.get_read(read_id)
        assert read.read_id == read_id and np.array_equal(read.signal, expected[read_id])
    asked = ["e", "b", "e", "d", "a"]
    for order in ("asked", "file"):
        got = list(index.get_reads(asked, order=order))
        assert sorted(r.read_id for r in got) == sorted(asked)
        for read in got:
            assert np.array_equal(read.signal, expected[read.read_id])
    assert [r.read_id for r in index.get_reads(asked)] == asked


def test_an_unknown_id_comes_after_the_reads_of_the_rounds_before_it(tmp_path, monkeypatch):
    # the next round was started (its ids looked up) before the round before it was
    # yielded: an unknown id in round 2 raised before any read of round 1 came
    import h5turbo.formats.fast5 as fast5_module
    monkeypatch.setattr(fast5_module, "IDS_PER_ROUND", 4)
    path = tmp_path / "reads.fast5"
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = np.bytes_("multi-read")
        for k in range(10):
            _write_read(f, f"r{k}", f"r{k}", k + 1)
    index = h5turbo.Fast5Index(path)
    ids = index.read_ids
    for bad, error in [("nope", KeyError), (5, TypeError)]:
        asked = ids[:9] + [bad] + ids[9:]
        got = []
        with pytest.raises(error):
            for read in index.get_reads(asked):
                got.append(read.read_id)
        assert got == ids[:8]  # rounds 1 and 2 of 4 ids; round 3 holds the bad one


@pytest.fixture
def odd_float(tmp_path) -> Path:
    """Reads r0..r{n}; r1's raw group has an attribute whose float layout numpy lacks
    (an exponent bias of 2^27: a damaged file), which h5py cannot read either."""
    path = tmp_path / "odd_float.fast5"
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = np.bytes_("multi-read")
        for k in range(20):
            _write_read(f, f"r{k}", f"r{k}", k + 2)
        odd = h5py.h5t.IEEE_F64LE.copy()
        odd.set_ebias(134218751)
        h5py.h5a.create(f["read_r1/Raw"].id, b"median_before", odd, h5py.h5s.create(h5py.h5s.SCALAR))
    return path


def test_a_value_python_cannot_hold_is_an_error_for_its_read_only(odd_float, tmp_path):
    # the native call that met it raised UnsupportedError (naming no file): read_fast5
    # stopped there, and so did get_reads, losing every other read
    other = tmp_path / "other.fast5"
    with h5py.File(other, "w") as f:
        f.attrs["file_type"] = np.bytes_("multi-read")
        _write_read(f, "x", "x", 7)
    items = list(h5turbo.read_fast5([odd_float, other], threads=2))
    assert [i.read_id for i in items] == sorted(f"r{k}" for k in range(20)) + ["x"]  # groups by name
    bad = items[1]
    assert isinstance(bad, h5turbo.Fast5Error) and bad.path == str(odd_float)
    assert "numpy" in bad.problem and str(odd_float) in str(bad)
    good = [i for k, i in enumerate(items) if k != 1]
    assert all(isinstance(i, h5turbo.Fast5Read) and i.signal.size == i.attrs["read_number"] for i in good)
    index = h5turbo.Fast5Index([odd_float, other])
    fetched = list(index.get_reads(["x", "r1", "r0", "r19"]))
    assert [i.read_id for i in fetched] == ["x", "r1", "r0", "r19"]
    assert [type(i).__name__ for i in fetched] == ["Fast5Read", "Fast5Error", "Fast5Read", "Fast5Read"]
    with pytest.raises(h5turbo.Fast5Error, match="r1"):
        index.get_read("r1")


def test_a_read_id_that_is_not_utf8_is_streamed_as_the_index_keys_it(tmp_path):
    # the index decodes such an id with U+FFFD; read_fast5 gave the group name
    # ("Read_7"), an id the index does not hold
    path = tmp_path / "non_utf8_id.fast5"
    with h5py.File(path, "w") as f:
        f.attrs["file_version"] = np.bytes_("2.0")
        raw = f.create_group("Raw/Reads/Read_7")
        raw.attrs["read_id"] = np.bytes_(b"ab\xffcd")
        raw.attrs["read_number"] = np.int32(7)
        raw.create_dataset("Signal", data=np.arange(3, dtype=np.int16))
        f.create_group("UniqueGlobalKey/channel_id").attrs["channel_number"] = np.bytes_("1")
    [read] = h5turbo.read_fast5(path)
    index = h5turbo.Fast5Index(path)
    assert read.read_id == "ab\ufffdcd" and index.read_ids == [read.read_id]
    assert np.array_equal(index.get_read(read.read_id).signal, read.signal)


def test_an_empty_compact_signal_and_an_external_read_link(tmp_path):
    """A 0-sample Signal stored compact is a read of no samples (it failed: "chunk
    dimension of zero"); a read group that is an external link is listed, as
    ont_fast5_api lists it, and is an error in its place (it vanished silently)."""
    path = tmp_path / "odd.fast5"
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = np.bytes_("multi-read")
        raw = f.create_group("read_abc/Raw")
        raw.attrs["read_id"] = np.bytes_("abc")
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(raw.id, b"Signal", h5py.h5t.NATIVE_INT16, h5py.h5s.create_simple((0,)), dcpl=dcpl)
        f["read_ext"] = h5py.ExternalLink("elsewhere.fast5", "/read_x")
    with get_fast5_file(str(path)) as ref:
        assert ref.get_read_ids() == ["abc", "ext"]
    empty, external = list(h5turbo.read_fast5(path))
    assert isinstance(empty, h5turbo.Fast5Read) and empty.read_id == "abc" and empty.signal.shape == (0,)
    assert isinstance(external, h5turbo.Fast5Error) and external.read_id == "ext"
    assert "external link" in str(external)
    assert h5turbo.Fast5Index(path).read_ids == ["abc", "ext"]


def _write_single(path: Path, read_number: int, read_id: str | None, version: str | None) -> None:
    with h5py.File(path, "w") as f:
        if version is not None:
            f.attrs["file_version"] = np.bytes_(version)
        raw = f.create_group(f"Raw/Reads/Read_{read_number}")
        if read_id is not None:
            raw.attrs["read_id"] = np.bytes_(read_id)
        raw.attrs["read_number"] = np.int32(read_number)
        for key in ("start_time", "duration"):
            raw.attrs[key] = np.uint64(read_number)
        raw.create_dataset("Signal", data=np.arange(read_number, dtype=np.int16))
        f.create_group("UniqueGlobalKey/channel_id").attrs["channel_number"] = np.bytes_("3")
        f.create_group("UniqueGlobalKey/tracking_id")


def test_links_to_folders_are_walked_once_as_ont_walks_them(tmp_path):
    """A run folder whose sub-folders are links to other disks: their files are read
    (they were skipped silently), as ont_fast5_api lists them; links back up the tree
    list nothing twice."""
    from ont_fast5_api.conversion_tools.conversion_utils import get_fast5_file_list
    elsewhere, top = tmp_path / "disk2" / "run1", tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    elsewhere.mkdir(parents=True)
    _write_single(top / "a.fast5", 3, "a", "2.0")
    _write_single(elsewhere / "b.fast5", 4, "b", "2.0")
    (top / "run1").symlink_to(elsewhere)
    (top / "sub" / "up").symlink_to(top)
    (top / "self").symlink_to(".")
    ont = sorted(get_fast5_file_list(str(top / "run1"), recursive=True))
    assert ont == [str(top / "run1" / "b.fast5")]
    reads = list(h5turbo.read_fast5(top))
    assert [(r.path, r.read_id) for r in reads] == [(str(top / "a.fast5"), "a"), (str(top / "run1" / "b.fast5"), "b")]
    assert sorted(h5turbo.Fast5Index(top).read_ids) == ["a", "b"]


def test_a_legacy_read_without_read_id_is_named_by_its_file_as_ont_names_it(tmp_path):
    """Files before format 1.1 may lack read_id: ont_fast5_api names the read by the
    file's name. The group's name ("Read_7" in every file) was taken, and the index
    refused the files; a later file without one fails its read (ont refuses it)."""
    for channel in (1, 2):
        _write_single(tmp_path / f"ch{channel}_read7.fast5", 7, None, "0.6")
    _write_single(tmp_path / "modern.fast5", 7, None, "2.0")
    legacy = sorted(tmp_path.glob("ch*.fast5"))
    ont = [_ont(path)[0] for path in legacy]
    assert [read_id for read_id, _ in ont] == ["ch1_read7.fast5", "ch2_read7.fast5"]
    reads = list(h5turbo.read_fast5(tmp_path))
    assert [type(r).__name__ for r in reads] == ["Fast5Read", "Fast5Read", "Fast5Error"]
    assert [r.read_id for r in reads[:2]] == [read_id for read_id, _ in ont]
    for read, (_, signal) in zip(reads, ont):
        assert np.array_equal(read.signal, signal)
    assert "modern.fast5" in str(reads[2]) and "no read_id" in str(reads[2]) and "Read_7" in str(reads[2])
    index = h5turbo.Fast5Index(tmp_path)
    assert index.read_ids == ["ch1_read7.fast5", "ch2_read7.fast5"]
    assert np.array_equal(index.get_read("ch2_read7.fast5").signal, ont[1][1])
    assert index.unindexed[0] == 1
    [(path, problem)] = index.unindexed_files
    assert path == str(tmp_path / "modern.fast5") and "read_id" in problem


def test_reads_by_id_stay_within_the_open_file_limit(tmp_path):
    """get_reads ran a task per thread, each holding its files open, whatever
    RLIMIT_NOFILE was left: reads failed with 'Too many open files' where read_fast5
    (which bounds its tasks by the descriptors left) read them all."""
    resource = pytest.importorskip("resource")
    for k in range(200):
        _write_single(tmp_path / f"r{k:03d}.fast5", 5, f"id{k}", "2.0")
    index = h5turbo.Fast5Index(tmp_path, threads=2)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_now = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 24, hard))
    try:
        items = list(index.get_reads(index.read_ids))
        streamed = list(h5turbo.read_fast5(tmp_path, threads=2))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [type(i).__name__ for i in items] == ["Fast5Read"] * 200, [str(i) for i in items if isinstance(i, Exception)][:1]
    assert [i.read_id for i in items] == [i.read_id for i in streamed]


def _expand_paths(folder):
    from h5turbo.formats.fast5 import _expand
    return list(_expand(folder))


def test_the_walk_takes_any_depth_and_the_c_walks_order(tmp_path):
    """The walk recursed once per folder (RecursionError past ~1000 levels; C reads
    such a tree), sorted decoded names (a name that is not UTF-8 came before an emoji,
    where C sorts bytes), and a file named ".fast5" is a fast5 file to ont_fast5_api."""
    deep = tmp_path / "deep"
    deep.mkdir()
    folder = deep
    for _ in range(1100):  # one level at a time: mkdir(parents=True) recurses too
        folder = folder / "d"
        folder.mkdir()
    _write_single(tmp_path / "bottom.fast5", 3, "bottom", "2.0")  # libhdf5 opens no path this long
    os.rename(tmp_path / "bottom.fast5", folder / "bottom.fast5")
    try:
        assert [p.endswith("/d/bottom.fast5") for p in _expand_paths(deep)] == [True]
    finally:
        # removed here, from the bottom up: pytest's own clean-up of old temporary
        # folders (shutil.rmtree) recurses, and a later session failed on this tree
        os.remove(folder / "bottom.fast5")
        while folder != deep:
            folder.rmdir()
            folder = folder.parent
    names = tmp_path / "names"
    names.mkdir()
    for k, name in enumerate([b"e.fast5", b"\xc3\xa9.fast5", b"\xf0\x9f\x98\x80.fast5", b"\xff.fast5", b".fast5"]):
        _write_single(os.fsdecode(names / os.fsdecode(name)), 3, f"r{k}", "2.0")
    got = [os.fsencode(os.path.basename(r.path)) for r in h5turbo.read_fast5(names)]
    assert got == sorted(got) and len(got) == 5 and b".fast5" in got


def _multi_read_file(path: Path, prefix: str, reads: int) -> None:
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = np.bytes_("multi-read")
        for k in range(reads):
            _write_read(f, f"{prefix}{k:03d}", f"{prefix}{k:03d}", 10 + k)


def test_a_file_replaced_while_its_reads_are_read_is_an_error_not_another_files_reads(tmp_path):
    """A multi-read file's later reads are read by later tasks, each opening the path
    again: a file replaced in between (os.replace, a re-export) gave the new file's
    reads as the rest of the old one's, under its path, without a word. ont_fast5_api
    keeps reading the file it opened; h5turbo says the file changed."""
    path, other = tmp_path / "run.fast5", tmp_path / "other.fast5"
    _multi_read_file(path, "old", 300)
    _multi_read_file(other, "new", 300)
    expected = dict(_ont(path))
    reads = h5turbo.read_fast5(path, threads=1)
    items = [next(reads) for _ in range(5)]
    os.replace(other, path)
    items += list(reads)
    errors = [i for i in items if isinstance(i, h5turbo.Fast5Error)]
    good = [i for i in items if not isinstance(i, h5turbo.Fast5Error)]
    assert errors and all("the file changed while it was read" in str(e) and str(path) in str(e) for e in errors)
    assert [r.read_id for r in good] == sorted(expected)[:len(good)]
    assert all(np.array_equal(r.signal, expected[r.read_id]) for r in good)


def test_a_file_rewritten_in_place_between_tasks_is_an_error_too(tmp_path):
    path = tmp_path / "run.fast5"
    _multi_read_file(path, "old", 300)
    reads = h5turbo.read_fast5(path, threads=1)
    first = next(reads)
    os.utime(path, ns=(0, 0))  # the same inode, its times changed as a rewrite changes them
    rest = list(reads)
    assert first.read_id == "old000"
    assert any(isinstance(i, h5turbo.Fast5Error) and "changed while it was read" in str(i) for i in rest)
