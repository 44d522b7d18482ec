"""Small reads of datasets with large chunk indexes find their chunks one by one
(a descent of the v1 or v2 B-tree, one page of a fixed or extensible array) instead of
reading the whole index. Each selection here is the first read of a freshly opened
file, so it takes that path; it must equal h5py, and a damaged index piece on its
way must give an h5turbo error naming the file and the dataset."""

from __future__ import annotations

import threading

import h5py
import numpy as np
import pytest

from support.common import import_h5turbo, signature_offsets

h5turbo = import_h5turbo()

LIBVERS = ["earliest", "latest"]


def _write(path, libver):
    rng = np.random.default_rng(7)
    with h5py.File(path, "w", libver=libver) as f:
        # 100,000 one-element chunks: a v1 B-tree of three levels, a paged fixed array.
        f.create_dataset("deep", data=np.arange(100_000, dtype="<i2"), chunks=(1,))
        # 10,000 chunks, filtered, partly written, with a fill value.
        grid = f.create_dataset("grid", shape=(300, 400), chunks=(3, 4), dtype="<f4",
                                compression="gzip", shuffle=True, fillvalue=7.0)
        grid[30:150, 0:200] = rng.random((120, 200), dtype="f4")
        grid[250:251, 390:400] = -1
        # One unlimited axis (an extensible array in the latest format), partly written.
        ext = f.create_dataset("ext", shape=(0, 6), maxshape=(None, 6), chunks=(2, 3), dtype=">i8")
        ext.resize((20_000, 6))
        ext[:8000] = np.arange(8000 * 6).reshape(8000, 6)
        ext[15_000:15_010, 3:] = -5
        # Grown then shrunk: index entries outside the current extent remain.
        shrunk = f.create_dataset("shrunk", shape=(4000, 5), maxshape=(None, 5), chunks=(4, 5), dtype="<u2")
        shrunk[...] = np.arange(20_000).reshape(4000, 5) % 65_000
        shrunk.resize((2001, 5))
        # Two unlimited axes (a v2 B-tree in the latest format).
        both = f.create_dataset("both", shape=(0, 0), maxshape=(None, None), chunks=(3, 5), dtype="<i4",
                                compression="gzip")
        both.resize((600, 500))
        both[100:400, 50:300] = np.arange(300 * 250).reshape(300, 250)


@pytest.fixture(scope="module", params=LIBVERS)
def big_index_file(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("lookup") / f"{request.param}.h5"
    _write(path, request.param)
    return path


def _selections(shape, rng, count=25):
    """Small selections: single elements, short slices (with steps), short lists."""
    out = []
    for _ in range(count):
        sel = []
        for n in shape:
            kind = rng.integers(4)
            start = int(rng.integers(n))
            if kind == 0:
                sel.append(start)
            elif kind == 1:
                sel.append(slice(start, min(n, start + int(rng.integers(1, 9)))))
            elif kind == 2:
                sel.append(slice(start, min(n, start + 40), int(rng.integers(2, 9))))
            else:
                sel.append(sorted({int(i) for i in rng.integers(n, size=3)}))
        if sum(isinstance(s, list) for s in sel) > 1:
            sel = [s[0] if isinstance(s, list) else s for s in sel]
        out.append(tuple(sel))
    return out


@pytest.mark.parametrize("name", ["deep", "grid", "ext", "shrunk", "both"])
def test_first_small_reads_equal_h5py(big_index_file, name):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    with h5py.File(big_index_file, "r") as ref:
        shape = ref[name].shape
        selections = _selections(shape, rng)
        selections += [(0,) * len(shape), tuple(n - 1 for n in shape)]
        for sel in selections:
            with h5turbo.File(big_index_file) as f:
                np.testing.assert_array_equal(f[name][sel], ref[name][sel], err_msg=f"{name}{sel}")


def test_small_reads_before_and_after_the_whole_index(big_index_file):
    """The same handle: small reads, a whole read (which loads the index), small reads."""
    sels = [(slice(31, 33), slice(5, 9)), (250, slice(385, 400)), (299, 399)]
    with h5py.File(big_index_file, "r") as ref, h5turbo.File(big_index_file) as f:
        ds = f["grid"]
        first = [ds[s] for s in sels]
        np.testing.assert_array_equal(ds[...], ref["grid"][...])
        for sel, got in zip(sels, first):
            np.testing.assert_array_equal(got, ref["grid"][sel])
            np.testing.assert_array_equal(ds[sel], ref["grid"][sel])


def test_small_reductions_find_their_chunks(big_index_file):
    with h5py.File(big_index_file, "r") as ref, h5turbo.File(big_index_file) as f:
        want = ref["ext"][7990:8002].sum(axis=0)
        np.testing.assert_array_equal(f["ext"].sum(axis=0, selection=np.s_[7990:8002]), want)


def test_threads_share_a_fresh_handle(big_index_file):
    """Many threads' first reads on one handle look chunks up at once."""
    with h5py.File(big_index_file, "r") as ref:
        want = {i: ref["deep"][i * 997:i * 997 + 5] for i in range(64)}
    errors = []
    with h5turbo.File(big_index_file) as f:
        ds = f["deep"]

        def work(ids):
            try:
                for i in ids:
                    np.testing.assert_array_equal(ds[i * 997:i * 997 + 5], want[i])
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(range(t, 64, 8),)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors


def test_damaged_btree_node_on_the_way_is_an_error(tmp_path):
    path = tmp_path / "broken_leaf.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("x", data=np.arange(50_000, dtype="<i4"), chunks=(10,))
    data = bytearray(path.read_bytes())
    leaves = signature_offsets(bytes(data), b"TREE\x01\x00")  # chunk nodes (type 1) at level 0
    assert len(leaves) > 10
    for at in leaves:
        data[at:at + 4] = b"JUNK"
    path.write_bytes(bytes(data))
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError) as info:
            f["x"][12_345:12_350]
    message = str(info.value)
    assert str(path) in message and "/x" in message and "B-tree" in message


def test_damaged_fixed_array_page_is_an_error(tmp_path):
    path = tmp_path / "broken_page.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", data=np.arange(50_000, dtype="<i4"), chunks=(10,))
        address = f["x"].id.get_chunk_info_by_coord((20_000,)).byte_offset
    data = bytearray(path.read_bytes())
    # Element 2000 (page 1) holds that chunk's address: damage it in its page.
    at = data.find(address.to_bytes(8, "little"))
    assert at > 0
    data[at + 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError) as info:
            f["x"][20_000:20_003]
        np.testing.assert_array_equal(f["x"][5:8], [5, 6, 7])  # another page still reads
    message = str(info.value)
    assert str(path) in message and "/x" in message and "checksum" in message


def test_many_small_reads_on_one_handle_switch_to_the_whole_index(tmp_path):
    """Lookups one by one until they add up to a share of the grid, then the whole
    index: every read before, at and after the switch equals h5py."""
    path = tmp_path / "switch.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("x", shape=(4000,), chunks=(2,), dtype="<i4", fillvalue=-3)
        ds[:3000] = np.arange(3000)
    with h5py.File(path, "r") as ref, h5turbo.File(path) as f:
        want, ds = ref["x"][...], f["x"]
        for i in range(0, 4000, 7):
            assert ds[i] == want[i], i
            np.testing.assert_array_equal(ds[i:i + 3], want[i:i + 3], err_msg=str(i))
