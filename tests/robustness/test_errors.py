"""Errors name the file, the object and the problem (the project's error standard)."""

import h5py
import numpy as np
import pytest

import h5turbo


def _corrupt_first_chunk(path, name):
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=np.arange(10000, dtype="i4"), chunks=(1000,), compression="gzip")
        offset = f[name].id.get_chunk_info(0).byte_offset
    data = bytearray(path.read_bytes())
    data[offset + 10:offset + 30] = b"\xff" * 20
    path.write_bytes(bytes(data))


def test_corrupt_chunk_names_file_dataset_and_chunk(tmp_path):
    path = tmp_path / "corrupt.h5"
    _corrupt_first_chunk(path, "grp/data")
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError) as info:
            f["grp/data"][...]
        assert f["grp/data"][1000:2000].sum() == np.arange(1000, 2000).sum()  # other chunks still read
    message = str(info.value)
    assert str(path) in message and "/grp/data" in message
    assert "chunk at [0]" in message and "deflate" in message


def test_truncated_file_names_the_file(tmp_path):
    path = tmp_path / "cut.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100000, dtype="f8"))
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(h5turbo.Error) as info:
        with h5turbo.File(path) as f:
            f["x"][...]
    assert str(path) in str(info.value)


def test_unknown_filter_is_unsupported_and_named(tmp_path):
    """An optional filter nobody registered: libhdf5 skips it on write and marks the
    chunks, and those read as h5py reads them. A chunk stored through it cannot be
    decoded: an UnsupportedError naming the filter, the file and the dataset."""
    path = tmp_path / "unknown.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(40000, h5py.h5z.FLAG_OPTIONAL, (1,))
        space = h5py.h5s.create_simple((100,))
        h5py.h5d.create(f.id, b"x", h5py.h5t.NATIVE_INT32, space, dcpl=dcpl)
        f["x"][:20] = np.arange(20)  # skipped: filter mask 1
        f["x"].id.write_direct_chunk((50,), np.arange(10, dtype="i4").tobytes(), 0)  # "filtered"
        want = f["x"][:20]
    with h5turbo.File(path) as f:
        np.testing.assert_array_equal(f["x"][:20], want)
        with pytest.raises(h5turbo.UnsupportedError) as info:
            f["x"][...]
        assert f["x"].shape == (100,)  # metadata stays readable
    assert "filter 40000" in str(info.value) and str(path) in str(info.value) and "/x" in str(info.value)


def _bump_dims(path, sizes, bump_max):
    """Set each dataspace (size, max) pair holding `sizes` to 2^31 + size, the maximum
    too when bump_max: a damaged size field, as fuzzing makes one."""
    import struct

    data = bytearray(path.read_bytes())
    for n in sizes:
        at = data.find(struct.pack("<QQ", n, n))
        assert at >= 0
        data[at:at + 8] = struct.pack("<Q", 2**31 + n)
        if bump_max:
            data[at + 8:at + 16] = struct.pack("<Q", 2**31 + n)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("bump_max", [False, True], ids=["past-maximum", "maximum-too"])
def test_a_damaged_dataspace_size_is_refused_before_anything_is_allocated(tmp_path, bump_max):
    # h5py refuses both at open; a reader must not allocate gigabytes for them
    import resource

    path = tmp_path / "dims.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f["table"] = np.zeros(6, [("a", "<i4"), ("b", "<f8")])
        f.create_dataset("names", data=["x"] * 7, dtype=h5py.string_dtype())
        f["plain"] = np.arange(5, dtype="<i8")
    _bump_dims(path, (6, 7, 5), bump_max)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with h5turbo.File(path) as f:
        for name in ("table", "names", "plain"):
            with pytest.raises(h5turbo.FormatError) as info:
                f[name][()]
            message = str(info.value)
            assert str(path) in message and name in message
            assert ("greater than its maximum" in message) != bump_max, message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # KiB: nothing near 24 GiB


@pytest.mark.parametrize("make", ["directory", "missing", "missing_parent"])
def test_operating_system_errors_are_the_oserror_subclass_h5py_raises(tmp_path, make):
    """An operating-system failure is OSError(errno, message): the subclass Python
    itself would raise (IsADirectoryError, FileNotFoundError ...), errno set, as h5py's."""
    import errno

    path = tmp_path / "target"
    if make == "directory":
        path.mkdir()
        expected, code = IsADirectoryError, errno.EISDIR
    elif make == "missing":
        expected, code = FileNotFoundError, errno.ENOENT
    else:
        path = tmp_path / "missing_dir" / "f.h5"
        expected, code = FileNotFoundError, errno.ENOENT
    with pytest.raises(expected):
        h5py.File(path, "r")
    with pytest.raises(expected) as info:
        h5turbo.File(path)
    assert info.value.errno == code and str(path) in str(info.value)


def test_a_broken_dataspace_names_its_place_in_the_file(tmp_path):
    """A dataset's dataspace was parsed from a copy of its bytes, so its error said
    "(at byte offset 0)"; it names the message's own address now."""
    path = tmp_path / "dataspace.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("bad", shape=(123457, 7), dtype="u1")
    raw = bytearray(path.read_bytes())
    at = raw.find(bytes([1, 2, 1, 0, 0, 0, 0, 0]) + (123457).to_bytes(8, "little"))
    raw[at] = 9  # a dataspace message version that does not exist
    path.write_bytes(bytes(raw))
    with h5turbo.File(path) as f, pytest.raises(h5turbo.FormatError) as info:
        f["bad"].shape
    message = str(info.value)
    assert "/bad" in message and "version 9" in message and f"(at byte offset {at})" in message


def test_errors_pickle_to_another_process_as_themselves(tmp_path):
    """h5turbo's errors were of module "_native", which pickle cannot import: an error
    raised in a worker process reached the parent as a PicklingError, its message lost
    (Fast5Error failed the other way, at unpickling, breaking the process pool)."""
    import pickle
    truncated = tmp_path / "cut.h5"
    with h5py.File(truncated, "w") as f:
        f.create_dataset("x", data=np.arange(100000), chunks=(1000,))
    truncated.write_bytes(truncated.read_bytes()[:4000])
    caught = []
    for call in (lambda: h5turbo.File(truncated)["x"][()], lambda: h5turbo.File(tmp_path / "none.h5")):
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - each error as raised
            caught.append(exc)
    caught += [h5turbo.UnsupportedError("u"), h5turbo.FormatError("f"), h5turbo.Error("e"), h5turbo.OutOfMemoryError("m"),
               h5turbo.Fast5Error("/runs/a.fast5", "no Signal", "r1"), h5turbo.Fast5Error("/runs/b.fast5", "broken")]
    for exc in caught:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc), (type(exc), str(exc))
    fast5 = pickle.loads(pickle.dumps(caught[-2]))
    assert (fast5.path, fast5.problem, fast5.read_id) == ("/runs/a.fast5", "no Signal", "r1")


def test_reductions_and_fill_values_name_the_file_and_dataset_once(tmp_path):
    """A reduction's errors named only the chunk (a missing external file), or the file
    and dataset twice (a truncated file); a fill value of an unreadable type named
    neither."""
    path = tmp_path / "ext.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("external", shape=(100,), dtype="<i4", external=[("missing.bin", 0, 400)])
        f.create_dataset("x", data=np.arange(400_000).reshape(200, 2000), chunks=(10, 2000))
    with h5turbo.File(path) as f:
        for reduce in (lambda d: d.sum(), lambda d: d.max(), lambda d: d.mean(axis=0)):
            with pytest.raises(OSError) as info:
                reduce(f["external"])
            assert str(info.value).count(str(path)) == 1 and "/external" in str(info.value), str(info.value)
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError) as info:
            f["x"].sum(axis=0)
        assert str(info.value).count(str(path)) == 1 and str(info.value).count("/x") == 1, str(info.value)


def test_a_root_object_that_is_no_group_and_a_size_past_2_63_are_format_errors(tmp_path):
    """A superblock pointing at a dataset's header opened, and every walk then failed
    with a bare ValueError; a dimension of 2^64 - 1 (the "unlimited" marker) opened as
    that shape, and len() raised OverflowError (h5py refuses both)."""
    import struct
    path = tmp_path / "dims.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("d", data=np.arange(5, dtype="<i8"), maxshape=(5,))
    data = bytearray(path.read_bytes())
    at = data.find(struct.pack("<QQ", 5, 5))
    data[at:at + 16] = struct.pack("<QQ", 2**64 - 1, 2**64 - 1)
    path.write_bytes(bytes(data))
    with h5turbo.File(path) as f, pytest.raises(h5turbo.FormatError, match=r"/d: .*past 2\^63 - 1"):
        f["d"].shape
    with h5py.File(tmp_path / "root.h5", "w", libver="earliest") as f:
        f["d"] = np.arange(5)
        dataset_address = h5py.h5o.get_info(f["d"].id).addr
        root_address = h5py.h5o.get_info(f.id).addr
    raw = bytearray((tmp_path / "root.h5").read_bytes())
    # superblock v0 (no checksum): the root group's symbol table entry holds its address
    at = raw.find(struct.pack("<Q", root_address), 8, 128)
    assert at > 0
    raw[at:at + 8] = struct.pack("<Q", dataset_address)
    (tmp_path / "root.h5").write_bytes(bytes(raw))
    with pytest.raises(h5turbo.FormatError, match="root object is not a group"):
        h5turbo.File(tmp_path / "root.h5")


@pytest.mark.skipif(h5py.version.hdf5_version_tuple < (2, 0, 0), reason="only HDF5 2.0 writes chunks over 4 GiB")
def test_chunks_over_4_gib_are_unsupported_not_a_broken_file(tmp_path):
    """HDF5 2.0 writes chunks over 4 GiB (8 GiB here, none stored); the file was called
    broken (FormatError: "exceeds HDF5's 4 GiB chunk limit"). Valid HDF5 not read yet."""
    path = tmp_path / "big_chunk.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(2**33,), chunks=(2**30,), dtype="f8", fillvalue=2.5)
        f["small"] = np.arange(3)
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.UnsupportedError, match=r"/x.*8589934592 bytes.*over 4 GiB") as info:
            f["x"].shape
        assert not isinstance(info.value, h5turbo.FormatError)
        assert f["small"][()].tolist() == [0, 1, 2]
