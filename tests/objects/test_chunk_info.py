"""``Dataset.id``'s storage queries (get_num_chunks, get_chunk_info,
get_chunk_info_by_coord, chunk_iter, read_direct_chunk, get_offset, get_storage_size)
equal h5py's on every chunk index, filter, file format version and layout: what
kerchunk and VirtualiZarr read to index a file for other readers."""

from __future__ import annotations

import h5py
import hdf5plugin
import numpy as np
import pytest

from support.common import corpus_files, import_h5turbo

h5turbo = import_h5turbo()


def _partly_written(f, name, shape, chunks, maxshape=None, **kwargs):
    ds = f.create_dataset(name, shape=shape, chunks=chunks, maxshape=maxshape, dtype="<i4", **kwargs)
    region = tuple(slice(0, max(1, n * 2 // 3)) for n in shape)
    ds[region] = np.arange(np.prod([s.stop for s in region]), dtype="<i4").reshape([s.stop for s in region]) % 97
    ds[tuple(n - 1 for n in shape)] = 5
    return ds


def _write_layouts(path, libver, userblock):
    with h5py.File(path, "w", libver=libver, userblock_size=userblock) as f:
        _partly_written(f, "fixed", (10, 7), (4, 3))
        _partly_written(f, "fixed_gzip", (10, 7), (4, 3), compression="gzip", shuffle=True, fletcher32=True)
        _partly_written(f, "unlimited_first", (9, 6), (4, 4), maxshape=(None, 6), compression="lzf")
        _partly_written(f, "unlimited_second", (9, 10), (4, 3), maxshape=(9, None), compression="gzip")
        _partly_written(f, "unlimited_both", (9, 6, 5), (2, 4, 3), maxshape=(None, None, 5))
        _partly_written(f, "one_chunk", (5, 6), (5, 6), compression="gzip")
        _partly_written(f, "zstd", (300,), (7,), **hdf5plugin.Zstd())
        f.create_dataset("never_written", shape=(8, 8), chunks=(4, 4), dtype="f8")
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 4))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        h5py.h5d.create(f.id, b"implicit", h5py.h5t.STD_I16LE, h5py.h5s.create_simple((9, 9)), dcpl=dcpl)
        skipped = f.create_dataset("skipped_filter", shape=(8,), chunks=(4,), dtype="<i4", compression="gzip")
        skipped.id.write_direct_chunk((4,), np.arange(4, dtype="<i4").tobytes(), filter_mask=1)
        skipped[:4] = 9
        f.create_dataset("contiguous", data=np.arange(12, dtype=">f8").reshape(3, 4))
        f.create_dataset("contiguous_empty", shape=(4,), dtype="i1")
        f.create_dataset("scalar", data=2.5)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((3,)), dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(3, dtype="<i4"))


def _extensible_array_later_axis(ds_turbo) -> bool:
    """libhdf5 (2.0 at least) answers wrongly for an extensible-array index whose
    unlimited axis is not the first: get_chunk_info's chunk_offset is the stored,
    axis-swapped position, and get_chunk_info_by_coord looks up the swapped chunk
    (read_direct_chunk is right). The order, masks, offsets and sizes are right."""
    maxshape = ds_turbo.maxshape
    return ds_turbo.chunk_index == "extensible_array" and maxshape[0] is not None


def _same_info(expected, got) -> bool:
    """libhdf5 leaves filter_mask uninitialised for a chunk it does not find."""
    if expected.byte_offset is None:
        return (got.chunk_offset, got.byte_offset, got.size) == (None, None, 0) == expected[::2][:1] + expected[2:]
    return got == expected


def _interior_points(shape, chunks, offset):
    yield offset
    yield tuple(min(o + c - 1, n - 1) for o, c, n in zip(offset, chunks, shape))
    yield tuple(min(o + c // 2, n - 1) for o, c, n in zip(offset, chunks, shape))


def _by_coord_from_table(table, chunks):
    """get_chunk_info_by_coord derived from a checked chunk table."""
    by_start = {info.chunk_offset: info for info in table}

    def at(point):
        info = by_start.get(tuple(p // c * c for p, c in zip(point, chunks)))
        return h5turbo.objects.dataset_id.StoreInfo(None, 0, None, 0) if info is None else info._replace(chunk_offset=point)
    return at


def _compare_chunked(a, b, name):
    ia, ib = a[name].id, b[name].id
    n = ia.get_num_chunks()
    assert ib.get_num_chunks() == n, name
    got = [ib.get_chunk_info(i) for i in range(n)]
    expected = [ia.get_chunk_info(i) for i in range(n)]
    swapped = _extensible_array_later_axis(b[name])
    for e, g in zip(expected, got):
        assert (g.filter_mask, g.byte_offset, g.size) == (e.filter_mask, e.byte_offset, e.size), name
        if not swapped:
            assert g.chunk_offset == e.chunk_offset, name
    seen = []
    assert ib.chunk_iter(seen.append) is None
    assert seen == got, name
    shape, chunks = a[name].shape, a[name].chunks
    for info in got:
        # the chunk h5py reads at our chunk_offset is the one we say lies there
        mask, data = ia.read_direct_chunk(info.chunk_offset)
        assert (mask, data) == ib.read_direct_chunk(info.chunk_offset), name
        assert (mask, len(data)) == (info.filter_mask, info.size), name
    reference = _by_coord_from_table(got, chunks) if swapped else ia.get_chunk_info_by_coord
    for info in got:
        for point in _interior_points(shape, chunks, info.chunk_offset):
            assert _same_info(reference(point), ib.get_chunk_info_by_coord(point)), (name, point)
    allocated = {info.chunk_offset for info in got}
    grid = [range(0, s, c) for s, c in zip(shape, chunks)]
    for offset in np.ndindex(*[len(g) for g in grid]):
        start = tuple(g[i] for g, i in zip(grid, offset))
        if start not in allocated:
            e, g = reference(start), ib.get_chunk_info_by_coord(start)
            assert (g.chunk_offset, g.byte_offset, g.size) == (e.chunk_offset, e.byte_offset, e.size) == (None, None, 0)
            with pytest.raises(RuntimeError):
                ib.read_direct_chunk(start)
    # past the extent inside an edge chunk: that chunk, as libhdf5; past the grid: none
    edge = tuple(shape)
    assert _same_info(reference(edge), ib.get_chunk_info_by_coord(edge)), name
    beyond = tuple(-(-n // c) * c for n, c in zip(shape, chunks))
    assert ib.get_chunk_info_by_coord(beyond)[2:] == reference(beyond)[2:] == (None, 0)


@pytest.mark.parametrize("userblock", [0, 512])
@pytest.mark.parametrize("libver", ["earliest", "v110", "latest"])
def test_storage_queries_equal_h5py(tmp_path, libver, userblock):
    path = tmp_path / "layouts.h5"
    _write_layouts(path, libver, userblock)
    with h5py.File(path, "r") as a, h5turbo.File(path) as b:
        for name in a:
            ia, ib = a[name].id, b[name].id
            if a[name].chunks is None and ia.get_storage_size() == 0:
                assert ib.get_offset() is None  # libhdf5 adds the user block to "undefined"
            else:
                assert ib.get_offset() == ia.get_offset(), name
            assert ib.get_storage_size() == ia.get_storage_size(), name
            assert (ib.rank, ib.shape, ib.dtype) == (ia.rank, ia.shape, ia.dtype), name
            if a[name].chunks is not None:
                _compare_chunked(a, b, name)
                continue
            for call in (ib.get_num_chunks, lambda: ib.get_chunk_info(0), lambda: ib.chunk_iter(print),
                         lambda: ib.read_direct_chunk((0,) * ib.rank), lambda: ib.get_chunk_info_by_coord((0,) * ib.rank)):
                with pytest.raises(RuntimeError, match="not a chunked dataset"):
                    call()


def test_offsets_point_at_the_stored_bytes(tmp_path):
    """What an indexer does: read byte_offset/size from the file itself and decode."""
    path = tmp_path / "ub.h5"
    data = np.arange(10_000, dtype="<u2").reshape(100, 100)
    with h5py.File(path, "w", userblock_size=1024) as f:
        f.create_dataset("z", data=data, chunks=(30, 40), compression="gzip")
        f.create_dataset("c", data=data)
    raw = path.read_bytes()
    import zlib

    with h5turbo.File(path) as f:
        dsid = f["z"].id
        for i in range(dsid.get_num_chunks()):
            info = dsid.get_chunk_info(i)
            chunk = np.frombuffer(zlib.decompress(raw[info.byte_offset:info.byte_offset + info.size]), "<u2")
            r, c = info.chunk_offset
            expected = np.zeros((30, 40), "<u2")
            block = data[r:r + 30, c:c + 40]
            expected[:block.shape[0], :block.shape[1]] = block
            np.testing.assert_array_equal(chunk.reshape(30, 40), expected)
            assert dsid.read_direct_chunk(info.chunk_offset) == (0, raw[info.byte_offset:info.byte_offset + info.size])
        offset = f["c"].id.get_offset()
        np.testing.assert_array_equal(np.frombuffer(raw[offset:offset + data.nbytes], "<u2").reshape(100, 100), data)


def test_read_direct_chunk_into_a_buffer_and_bad_arguments(tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100, dtype="<i8"), chunks=(10,), compression="gzip")
    with h5py.File(path, "r") as a, h5turbo.File(path) as b:
        ia, ib = a["x"].id, b["x"].id
        mask, expected = ia.read_direct_chunk((20,))
        out = bytearray(4096)
        got_mask, view = ib.read_direct_chunk((20,), out=out)
        assert (got_mask, bytes(view)) == (mask, expected)
        assert bytes(out[:len(expected)]) == expected
        arr = np.zeros(4096, np.uint8)
        assert bytes(ib.read_direct_chunk([20], out=arr)[1]) == expected  # any sequence, as h5py takes
        with pytest.raises(ValueError):
            ib.read_direct_chunk((20,), out=bytearray(2))
        with pytest.raises(ValueError):
            ib.read_direct_chunk((20,), out=bytes(4096))
        with pytest.raises(OSError, match="boundary"):
            ib.read_direct_chunk((25,))
        for bad in [(1, 2), ()]:
            with pytest.raises(ValueError, match="Tuple length"):
                ib.get_chunk_info_by_coord(bad)
        with pytest.raises(OverflowError):
            ib.get_chunk_info(-1)
        with pytest.raises(ValueError, match="out of range"):
            ib.get_chunk_info(10)
        assert ib.get_chunk_info(np.int64(3)) == ia.get_chunk_info(3)
        with pytest.raises(TypeError):
            ib.get_chunk_info(1.5)
        assert ib.chunk_iter(lambda info: info.chunk_offset if info.chunk_offset[0] == 30 else None) == (30,)


def test_chunk_table_is_read_once_and_follows_refresh(tmp_path):
    path = tmp_path / "grow.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", data=np.arange(10), chunks=(5,), maxshape=(None,))
    with h5turbo.File(path) as f:
        ds = f["x"]
        assert ds.id is ds.id  # one table for a loop over get_chunk_info(i)
        assert ds.id.get_num_chunks() == 2
        with h5py.File(path, "a", libver="latest") as w:
            w["x"].resize((20,))
            w["x"][10:] = 1
        ds.refresh()
        assert ds.id.get_num_chunks() == 4
        assert ds.id.shape == (20,)
    assert not ds.id.valid


def test_ids_are_valid_until_the_file_closes_as_in_h5py(tmp_path):
    """`if obj.id.valid:` (an h5py idiom) for files, groups and datasets; a dataset's id
    first asked after the close raised ClosedError."""
    path = tmp_path / "closed.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("g/x", data=np.arange(10), chunks=(5,))
    for opener in (h5py.File, h5turbo.File):
        f = opener(path, "r")
        group, ds, asked_before = f["g"], f["g/x"], f["g/x"]
        assert f.id.valid and group.id.valid and asked_before.id.valid, opener
        f.close()
        assert not f.id.valid and not group.id.valid, opener
        assert not ds.id.valid and not asked_before.id.valid, opener


def test_corpus_chunk_tables_equal_h5py():
    compared = 0
    for path in corpus_files():
        try:
            a = h5py.File(path, "r")
        except OSError:
            continue
        with a, h5turbo.File(path) as b:
            names = []
            a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and o.chunks else None)
            for name in names[:20]:
                expected = []
                try:
                    a[name].id.chunk_iter(expected.append)  # get_chunk_info(i) walks the index each call
                except Exception:
                    continue  # libhdf5 cannot tell (a damaged file)
                dsid = b[name].id
                got = [dsid.get_chunk_info(i) for i in range(dsid.get_num_chunks())]
                key = (lambda s: s) if not _extensible_array_later_axis(b[name]) else (lambda s: s[1:])
                assert [key(s) for s in got] == [key(s) for s in expected], (path, name)
                compared += 1
    assert compared >= 20
