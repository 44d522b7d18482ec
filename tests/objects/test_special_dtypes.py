"""h5py's module-level dtype helpers: h5turbo's give h5py's answers on the dtypes of
every dataset and attribute of a file with each special type, and build the same
dtypes."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import h5turbo

CHECKS = ["check_string_dtype", "check_vlen_dtype", "check_enum_dtype", "check_ref_dtype",
          "check_opaque_dtype"]


@pytest.fixture(scope="module")
def special_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("special") / "special.h5"
    with h5py.File(path, "w") as f:
        f["plain"] = np.arange(3)
        f.create_dataset("vstr", data=["a", "bc"], dtype=h5py.string_dtype())
        f.create_dataset("vbytes", data=[b"a", b"bc"], dtype=h5py.string_dtype("ascii"))
        f.create_dataset("fixed_utf8", data=[b"ab"], dtype=h5py.string_dtype("utf-8", 4))
        f.create_dataset("fixed", data=np.array([b"xy"], "S5"))
        f.create_dataset("enum", data=[0, 1], dtype=h5py.enum_dtype({"a": 0, "b": 1}, "i2"))
        f.create_dataset("bool", data=[True, False])
        ragged = np.empty(2, object)
        ragged[:] = [np.arange(2, dtype="i4"), np.arange(3, dtype="i4")]
        f.create_dataset("ragged", data=ragged, dtype=h5py.vlen_dtype("i4"))
        f.create_dataset("refs", data=[f["plain"].ref], dtype=h5py.ref_dtype)
        f.create_dataset("regrefs", data=[f["plain"].regionref[1:]], dtype=h5py.regionref_dtype)
        f.create_dataset("opaque", data=np.void(b"\x01\x02"), dtype=h5py.opaque_dtype("V2"))
        table = np.array([("a", 1.0), ("b", 2.0)], [("s", h5py.string_dtype()), ("x", "f4")])
        f.create_dataset("table", data=table)
    return path


def test_checks_answer_as_h5py_on_every_dtype(special_file):
    with h5py.File(special_file) as h, h5turbo.File(special_file) as f:
        names = list(h)
        dtypes = [(f[n].dtype, h[n].dtype) for n in names]
        dtypes += [(f["table"].dtype["s"], h["table"].dtype["s"])]
        for ours, theirs in dtypes:
            for check in CHECKS:
                got = getattr(h5turbo, check)(ours)
                want = getattr(h5py, check)(theirs)
                if check == "check_ref_dtype" and want is not None:
                    want = {h5py.Reference: h5turbo.Reference, h5py.RegionReference: h5turbo.RegionReference}[want]
                assert got == want, (check, ours, theirs)
            assert h5turbo.check_dtype(vlen=ours) == (h5turbo.check_vlen_dtype(ours))
            assert h5turbo.check_dtype(enum=ours) == h5py.check_dtype(enum=theirs)


def test_constructors_build_h5py_dtypes():
    for encoding in ("utf-8", "ascii"):
        for length in (None, 7):
            ours = h5turbo.string_dtype(encoding, length)
            theirs = h5py.string_dtype(encoding, length)
            assert ours == theirs and ours.metadata == theirs.metadata
            assert h5turbo.check_string_dtype(ours) == h5py.check_string_dtype(theirs)
    assert h5turbo.vlen_dtype("f4").metadata == h5py.vlen_dtype("f4").metadata
    for ours, theirs in [(h5turbo.enum_dtype({"a": 1}, "i1"), h5py.enum_dtype({"a": 1}, "i1")),
                         (h5turbo.opaque_dtype("V3"), h5py.opaque_dtype("V3")),
                         (h5turbo.special_dtype(enum=("u2", {"x": 3})), h5py.special_dtype(enum=("u2", {"x": 3}))),
                         (h5turbo.special_dtype(vlen=str), h5py.special_dtype(vlen=str))]:
        assert ours == theirs and ours.metadata == theirs.metadata
    assert h5turbo.check_ref_dtype(h5turbo.special_dtype(ref=h5turbo.Reference)) is h5turbo.Reference
    with pytest.raises(ValueError):
        h5turbo.string_dtype("latin-1")
    with pytest.raises(TypeError):
        h5turbo.enum_dtype({"a": 1}, "f4")
    with pytest.raises(TypeError):
        h5turbo.special_dtype(vlen=str, enum=("i1", {}))


def test_is_hdf5_as_h5py(special_file, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("not hdf5")
    with_userblock = tmp_path / "ub.h5"
    with h5py.File(with_userblock, "w", userblock_size=1024) as f:
        f["x"] = 1
    for path in (special_file, text, with_userblock, tmp_path, tmp_path / "missing.h5"):
        assert h5turbo.is_hdf5(path) == h5py.is_hdf5(path), path


_COMPLEX_CANDIDATES = [
    np.dtype("c8"), np.dtype(">c16"), np.dtype("f8"), np.dtype("i4"),
    np.dtype([("r", "<f4"), ("i", "<f4")]), np.dtype([("r", ">f8"), ("i", ">f8")]),
    np.dtype([("re", "<f8"), ("im", "<f8")]), np.dtype([("i", "<f4"), ("r", "<f4")]),
    np.dtype([("r", "<f4"), ("i", "<f8")]), np.dtype([("r", "<i4"), ("i", "<i4")]),
    np.dtype([("r", "<f4"), ("i", "<f4"), ("x", "u1")]),
    np.dtype({"names": ["r", "i"], "formats": ["<f4", "<f4"], "offsets": [0, 8], "itemsize": 16}),
    np.dtype([("r", "<f8"), ("i", "<f8")], align=True),
]


@pytest.mark.parametrize("names", [("r", "i"), None, ("re", "im")])
@pytest.mark.parametrize("dt", _COMPLEX_CANDIDATES, ids=str)
def test_check_complex_dtype_as_h5py(dt, names):
    """h5py 3.16's helper: a complex dtype, or a packed pair of equal floats named as asked."""
    assert h5turbo.check_complex_dtype(dt, names=names) == h5py.check_complex_dtype(dt, names=names)
    assert h5turbo.check_complex_dtype(dt) == h5py.check_complex_dtype(dt)


@pytest.mark.parametrize("spec", ["c8", np.complex128, ">c16", "c32", "f8", "i4"], ids=str)
def test_complex_compat_dtype_as_h5py(spec):
    try:
        expected = h5py.complex_compat_dtype(spec)
    except TypeError as error:
        with pytest.raises(TypeError, match="not a complex dtype"):
            h5turbo.complex_compat_dtype(spec)
        assert "not a complex dtype" in str(error)
        return
    assert h5turbo.complex_compat_dtype(spec) == expected
    assert h5turbo.check_complex_dtype(expected) == np.dtype(spec)


def test_complex_compat_dataset_reads_as_its_compound(tmp_path):
    """A dataset written with the compatible dtype reads back as h5py reads it, and the
    helper turns it into the complex numbers."""
    values = np.array([1 + 2j, -3.5 + 0.25j], dtype="c8")
    path = tmp_path / "compat.h5"
    with h5py.File(path, "w") as f:
        f["z"] = values.view(h5py.complex_compat_dtype("c8"))
    with h5turbo.File(path) as f, h5py.File(path, "r") as ref:
        got = f["z"][()]
        assert got.dtype == ref["z"].dtype
        assert got.tobytes() == ref["z"][()].tobytes()
        np.testing.assert_array_equal(got.view(h5turbo.check_complex_dtype(got.dtype)), values)


@pytest.mark.skipif(not hasattr(h5py.h5t, "COMPLEX_IEEE_F64LE"), reason="HDF5 2.0's complex type")
@pytest.mark.parametrize("stored", ["COMPLEX_IEEE_F64LE", "COMPLEX_IEEE_F32BE"])
def test_native_complex_converts_to_numbers_as_libhdf5_the_real_part(tmp_path, stored):
    # libhdf5 converts HDF5 2.0 complex numbers to integers and reals (the real part,
    # saturated); h5turbo refused, saying h5py and libhdf5 could not either
    path = tmp_path / "complex.h5"
    tid = getattr(h5py.h5t, stored)
    values = np.array([1 + 2j, -3.5j, 1e30, -7.75 + 1j], "<c16")
    with h5py.File(path, "w") as f:
        ds = h5py.h5d.create(f.id, b"z", tid, h5py.h5s.create_simple((4,)))
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=h5py.h5t.COMPLEX_IEEE_F64LE)
        f["pairs"] = values.view(h5py.complex_compat_dtype("c16"))  # h5py's {r, i}: no path
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for target in ("f8", "f4", "i4", "u2", "i8"):
            want = ref["z"].astype(target)[...]
            got = ours["z"].astype(target)[...]
            assert got.dtype == want.dtype and np.array_equal(got, want), (target, got, want)
            assert ours["z"].astype(target)[2] == want[2]
            assert np.array_equal(np.asarray(ours["z"], dtype=target), np.asarray(ref["z"], dtype=target))
        with pytest.raises(OSError):
            ref["pairs"].astype("f8")[...]
        with pytest.raises(OSError):
            ours["pairs"].astype("f8")[...]
