"""Element, row and slice loops (``ds[i]``, ``ds[i, j]``, ``ds[i, :]``) against h5py.

Such loops take a shortcut past the general index planning, and unfiltered data read
in small pieces switches to whole chunks kept in the file's cache once the small reads
have cost as much (contiguous data too, in virtual chunks of about 1 MiB, the last one
short): every value and every result type must stay h5py's through each switch."""

import h5py
import numpy as np
import pytest

import h5turbo

VIRTUAL_CHUNK_ELEMENTS = (1 << 20) // 8  # contiguous f8: rows of about 1 MiB

COMPOUND = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])


def _values(n: int, dtype: np.dtype) -> np.ndarray:
    if dtype == COMPOUND:
        out = np.zeros(n, COMPOUND)
        out["a"] = np.arange(n)
        out["b"] = np.arange(n) * 0.5
        out["c"] = [b"x%d" % (i % 100) for i in range(n)]
        return out
    if dtype.kind == "S":
        return np.array([b"v%d" % (i % 1000) for i in range(n)], dtype)
    return (np.arange(n) % 30011).astype(dtype)


@pytest.fixture(scope="module")
def loops_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("loops") / "loops.h5"
    n = 3 * VIRTUAL_CHUNK_ELEMENTS - 1001  # three virtual chunks, the last short
    with h5py.File(path, "w") as f:
        f["contiguous_f8"] = np.arange(n, dtype="<f8") * 1.5
        f["contiguous_be_i2"] = (np.arange(5000) % 3000 - 1500).astype(">i2")
        f["small_contiguous"] = np.arange(7, dtype="<u4")
        _compact(f, np.arange(50, dtype="<i8"))
        f.create_dataset("chunked_uneven", data=np.arange(100003, dtype="<i4"), chunks=(4099,))
        f.create_dataset("chunked_big", data=np.arange(600000, dtype="<f8"), chunks=(200000,))
        f.create_dataset("gzip", data=np.arange(20000, dtype="<f4"), chunks=(999,), compression="gzip")
        f.create_dataset("compound", data=_values(3001, COMPOUND), chunks=(256,))
        f.create_dataset("fixed_string", data=_values(3001, np.dtype("S5")))
        f.create_dataset("vlen_string", data=[f"s{i}" * (i % 4) for i in range(777)],
                         dtype=h5py.string_dtype(), chunks=(100,))
        arrays = f.create_dataset("array_type", shape=(1000,), dtype=np.dtype(("<i2", (3,))))
        arrays[...] = np.arange(3000, dtype="<i2").reshape(1000, 3)
        grid = np.arange(600 * 700, dtype="<f8").reshape(600, 700)
        f.create_dataset("grid_chunked", data=grid, chunks=(64, 100))
        f["grid_contiguous"] = grid
        cube = _values(4 * 5 * 6, COMPOUND).reshape(4, 5, 6)
        f.create_dataset("cube_compound", data=cube, chunks=(3, 2, 6))
        f.create_dataset("rows_of_arrays", shape=(40, 3), dtype=np.dtype(("<f4", (2,))))
        f.create_dataset("empty", shape=(0,), dtype="<i4")
        f.create_dataset("empty_rows", shape=(0, 4), dtype="<f8", chunks=(5, 4), maxshape=(None, 4))
        f.create_dataset("empty_columns", shape=(3, 0), dtype="<u2")
        f["scalar"] = 5.5
        f.create_dataset("unwritten", shape=(5000,), dtype="<i4", chunks=(1000,), fillvalue=-7)
        partly = f.create_dataset("partly_written", shape=(5000,), dtype="<i4", chunks=(1000,), fillvalue=9)
        partly[2500:2600] = np.arange(100)
    return path


def _compact(f, data):
    """A compact-layout dataset through h5py's low-level API."""
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_layout(h5py.h5d.COMPACT)
    dset = h5py.h5d.create(f.id, b"compact", h5py.h5t.py_create(data.dtype), h5py.h5s.create_simple(data.shape), plist)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)


def _positions(n: int) -> list:
    """Every 7th element, plus runs across each virtual chunk's boundary and the end,
    and negative positions: enough touches of each chunk to switch it to the cache."""
    near = [b + d for b in range(0, n + 1, VIRTUAL_CHUNK_ELEMENTS) for d in range(-300, 300)]
    tail = list(range(max(0, n - 400), n)) + [-1, -2, -n]
    return [i for i in list(range(0, n, 7)) + near + tail if -n <= i < n]


def _same(got, want):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    elif isinstance(want, float) and np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == want
        if hasattr(want, "dtype"):
            assert got.dtype == want.dtype


@pytest.mark.parametrize("name", [
    "contiguous_f8", "contiguous_be_i2", "small_contiguous", "compact", "chunked_uneven",
    "chunked_big", "gzip", "compound", "fixed_string", "vlen_string", "array_type",
    "unwritten", "partly_written",
])
def test_element_loop_matches_h5py(loops_file, name):
    with h5py.File(loops_file, "r") as ref, h5turbo.File(loops_file, "r") as f:
        want_ds, ds = ref[name], f[name]
        n = len(want_ds)
        positions = _positions(n) if n > 1000 else list(range(-n, n))
        for i in positions:
            _same(ds[i], want_ds[i])
        # numpy integers and tuples take the same values
        for i in positions[::50]:
            _same(ds[np.int64(i)], want_ds[np.int64(i)])
            _same(ds[(i,)], want_ds[(i,)])
        # a whole read after the loops still gives every value
        np.testing.assert_array_equal(ds[()], want_ds[()])


@pytest.mark.parametrize("name", ["grid_chunked", "grid_contiguous"])
def test_grid_loops_match_h5py(loops_file, name):
    with h5py.File(loops_file, "r") as ref, h5turbo.File(loops_file, "r") as f:
        want_ds, ds = ref[name], f[name]
        for i in range(0, 600, 3):
            _same(ds[i], want_ds[i])
            _same(ds[-i - 1], want_ds[-i - 1])
            _same(ds[i, :], want_ds[i, :])
            _same(ds[i, 50:260], want_ds[i, 50:260])
            _same(ds[i, (i * 7) % 700], want_ds[i, (i * 7) % 700])
            _same(ds[-i - 1, -5], want_ds[-i - 1, -5])
        for j in range(0, 700, 31):
            _same(ds[:, j], want_ds[:, j])
        _same(ds[599, 699], want_ds[599, 699])


@pytest.mark.parametrize("name", ["cube_compound", "rows_of_arrays"])
def test_row_loops_of_higher_rank_and_array_types_match_h5py(loops_file, name):
    with h5py.File(loops_file, "r") as ref, h5turbo.File(loops_file, "r") as f:
        want_ds, ds = ref[name], f[name]
        for i in range(-len(want_ds), len(want_ds)):
            _same(ds[i], want_ds[i])
            _same(ds[np.int32(i)], want_ds[np.int32(i)])
        with pytest.raises(IndexError):
            ds[len(want_ds)]


SPANS = [(), Ellipsis, slice(None), slice(3, 9), slice(-5, None), slice(10, 3), slice(0, 10**9),
         slice(-10**9, 5), slice(None, -1), slice(np.int64(2), np.int64(6)), slice(2, 8, None)]


@pytest.mark.parametrize("name", [
    "contiguous_be_i2", "small_contiguous", "compact", "chunked_uneven", "gzip", "compound",
    "fixed_string", "vlen_string", "array_type", "partly_written", "grid_chunked", "cube_compound",
    "rows_of_arrays", "empty", "empty_rows", "empty_columns", "scalar",
])
def test_whole_reads_and_slices_match_h5py(loops_file, name):
    with h5py.File(loops_file, "r") as ref, h5turbo.File(loops_file, "r") as f:
        want_ds, ds = ref[name], f[name]
        for index in SPANS if want_ds.shape else [(), Ellipsis]:
            for _ in range(3):  # again: from the cache once kept
                _same(ds[index], want_ds[index])


def test_out_of_range_and_other_indexes_still_follow_h5py(loops_file):
    with h5turbo.File(loops_file, "r") as f:
        ds, grid = f["small_contiguous"], f["grid_chunked"]
        for bad in (7, -8, 2**70):
            with pytest.raises(IndexError):
                ds[bad]
        with pytest.raises(IndexError):
            grid[600, 0]
        with pytest.raises((IndexError, ValueError, TypeError)):
            grid[1, 2, 3]
        assert ds[True].shape == (1, 7)  # a boolean is a 0-d mask, not the integer 1
        assert isinstance(ds[3], np.uint32) and ds[3] == 3


def test_loops_over_two_files_and_datasets_never_mix(loops_file, tmp_path):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["contiguous_f8"] = -np.arange(40000, dtype="<f8")
    with h5turbo.File(loops_file, "r") as a, h5turbo.File(other, "r") as b:
        x, y, z = a["contiguous_f8"], b["contiguous_f8"], a["chunked_big"]
        for i in range(0, 40000, 3):
            assert x[i] == i * 1.5 and y[i] == -i and z[i] == i


def test_a_loop_on_a_closed_file_raises(loops_file):
    f = h5turbo.File(loops_file, "r")
    ds = f["contiguous_f8"]
    for i in range(300):
        ds[i]
    f.close()
    with pytest.raises(ValueError):
        ds[5]


def test_loops_over_a_file_cut_short_while_open_still_read_what_is_there(tmp_path):
    """Reading whole chunks to keep them fails where the file now ends early; the
    selected elements alone, read as before, are still there (so are a missing
    external file's neighbours: test_vds_external_hunt)."""
    path = tmp_path / "cut.h5"
    data = np.arange(300000, dtype="<f8")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(100000,))
        offset = f["x"].id.get_chunk_info(0).byte_offset
    with h5turbo.File(path, "r") as f:
        ds = f["x"]
        assert ds[0] == 0  # the chunk index read while the file is whole
        with open(path, "r+b") as fh:
            fh.truncate(offset + 400_000)  # the first chunk (800 KB) cut in half
        for i in range(0, 50000, 3):
            assert ds[i] == data[i]
        with pytest.raises(OSError):
            ds[70000]


def test_slices_of_other_types_are_refused_as_before(loops_file):
    with h5turbo.File(loops_file, "r") as f:
        ds = f["small_contiguous"]
        for bad in (slice(1.5, 3), slice("a", None), slice(None, 2.0)):
            with pytest.raises((TypeError, ValueError)):
                ds[bad]
        assert ds[2:6:1].tolist() == [2, 3, 4, 5]
        assert ds[6:2:-1].tolist() == [6, 5, 4, 3]


@pytest.mark.parametrize("dtype", ["u1", "<i2", ">f4", "<f8", "<c16", COMPOUND])
def test_columns_of_every_element_size_match_h5py(tmp_path, dtype):
    """A column (one element of each chunk row) is gathered by a loop of its own."""
    path = tmp_path / "columns.h5"
    dtype = np.dtype(dtype)
    values = _values(60 * 7 * 9, dtype) if dtype == COMPOUND else np.arange(60 * 7 * 9).astype(dtype)
    with h5py.File(path, "w") as f:
        f.create_dataset("plane", data=values.reshape(60, 63), chunks=(16, 10))
        f.create_dataset("cube", data=values.reshape(60, 7, 9), chunks=(16, 3, 4), compression="gzip")
        f["flat"] = values.reshape(60, 63)
    indexes = [np.s_[:, 5], np.s_[:, -1], np.s_[3:50:4, 9], np.s_[[1, 5, 17, 59], 12], np.s_[:, 10:11],
               np.s_[:, :, 3], np.s_[:, [0, 2, 4], 5], np.s_[1:3, ::2, -1], np.s_[[0, 33], :, 8]]
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for name in ("plane", "cube", "flat"):
            for index in indexes:
                if len(index) != ref[name].ndim:
                    continue
                for _ in range(2):  # the second from the cache
                    _same(f[name][index], ref[name][index])
