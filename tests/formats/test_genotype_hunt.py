"""GenotypeArray against scikit-allel's GenotypeArray on the same matrix as h5py reads it:
every count method with its arguments (max_allele, subpop, allele, axis), across integer
widths and byte orders, ploidies, chunkings, filters, fill values, threads and blocks;
and the typed errors for what is not a genotype matrix."""

from __future__ import annotations

import threading
from functools import partial

import h5py
import hdf5plugin
import numpy as np
import pytest

import h5turbo
from h5turbo.formats import GenotypeArray

allel = pytest.importorskip("allel")

CALL_COUNTS = ("called", "missing", "hom_ref", "hom_alt", "het")
AXES = (None, 0, 1, -1, -2, (0, 1), (1,))


def genotypes(shape, dtype, seed, top=None) -> np.ndarray:
    """Calls of alleles 0..3, -1 (missing, whole and half calls), -2 (allel: not called,
    not counted), and a few of the dtype's largest allele ``top``."""
    rng = np.random.default_rng(seed)
    gt = rng.choice(np.array([0, 0, 0, 1, 1, 2, 3, -1, -2]), size=shape).astype(dtype)
    gt[rng.random(shape[:2]) < 0.05] = -1
    if top is not None and gt.size:
        gt.reshape(-1)[rng.integers(0, gt.size, 5)] = top
    return gt


def write(path, gt, **layout):
    with h5py.File(path, "w") as f:
        f.create_dataset("calldata/GT", data=gt, **layout)
    return path


def allel_of(gt: np.ndarray):
    """allel on the matrix h5py read (native byte order: allel's Cython takes no other)."""
    return allel.GenotypeArray(gt.astype(gt.dtype.newbyteorder("=")))


def assert_counts_like_allel(g: GenotypeArray, gt: np.ndarray):
    want = allel_of(gt)
    ploidy = gt.shape[2]
    assert (g.shape, g.n_variants, g.n_samples, g.ploidy) == (want.shape, want.n_variants, want.n_samples, want.ploidy)
    for name in CALL_COUNTS:
        for axis in AXES:
            got = getattr(g, f"count_{name}")(axis=axis)
            if name == "hom_alt" and ploidy == 1:  # allel counts every haploid call: see docs/formats.md
                expected = np.sum(allel.HaplotypeArray(want.values[:, :, 0]).is_alt(), axis=axis)
            else:
                expected = getattr(want, f"count_{name}")(axis=axis)
            np.testing.assert_array_equal(got, expected, err_msg=f"{name} axis={axis}")
            assert np.asarray(got).dtype == np.asarray(expected).dtype and np.shape(got) == np.shape(expected)
    for allele in (0, 1, 3):
        np.testing.assert_array_equal(g.count_het(allele), want.count_het(allele))  # allele is first, as allel
        np.testing.assert_array_equal(g.count_het(allele, 0), want.count_het(allele, 0))
        np.testing.assert_array_equal(g.count_het(allele=allele, axis=1), want.count_het(allele=allele, axis=1))
    assert_per_call_like_allel(g, want)
    ac = want.count_alleles().values
    np.testing.assert_array_equal(g.count_alt(), ac[:, 1:].sum(axis=1))
    assert_alleles_like_allel(g, want)


def assert_per_call_like_allel(g: GenotypeArray, want):
    """is_*, count_hom, count_call and to_n_alt/to_n_ref against allel's, values and dtypes."""
    haploid = want.ploidy == 1
    checks = [("is_called", ()), ("is_missing", ()), ("is_hom_ref", ()), ("is_het", ()), ("is_het", (1,)),
              ("is_hom", (0,)), ("is_hom", (3,)), ("is_call", ([0] * want.ploidy,)),
              ("is_call", (list(range(want.ploidy)),))]
    if not haploid:  # allel takes every haploid call as hom and hom_alt (docs/formats.md)
        checks += [("is_hom", ()), ("is_hom_alt", ())]
    for name, args in checks:
        got, expected = getattr(g, name)(*args), getattr(want, name)(*args)
        assert got.dtype == expected.dtype == bool and got.shape == expected.shape, name
        np.testing.assert_array_equal(got, expected, err_msg=f"{name}{args}")
    if haploid:
        called_alt = allel.HaplotypeArray(want.values[:, :, 0]).is_alt()
        np.testing.assert_array_equal(g.is_hom_alt(), called_alt)
        np.testing.assert_array_equal(g.is_hom(), want.is_called())
    for axis in AXES:
        for allele in (None, 0, 2) if not haploid else (0, 2):
            np.testing.assert_array_equal(g.count_hom(allele, axis), want.count_hom(allele, axis))
        call = [1] + [0] * (want.ploidy - 1)
        got, expected = g.count_call(call, axis=axis), want.count_call(call, axis=axis)
        np.testing.assert_array_equal(got, expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
    for fill, dtype in ((0, "i1"), (-1, "i1"), (7, np.int32), (-1, ">i2")):
        for name in ("to_n_alt", "to_n_ref"):
            got = getattr(g, name)(fill=fill, dtype=dtype)
            expected = getattr(want, name)(fill=fill, dtype=dtype)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected, err_msg=f"{name} fill={fill}")
    with pytest.raises(ValueError, match="ploidy"):
        g.count_call([0] * (want.ploidy + 1))
    with pytest.raises(ValueError, match="ploidy"):
        want.count_call([0] * (want.ploidy + 1))


def assert_alleles_like_allel(g: GenotypeArray, want, max_alleles=(-1, 0, 1, 2, 5)):
    got = g.count_alleles()
    expected = want.count_alleles().values
    assert got.dtype == expected.dtype == np.int32 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    for max_allele in max_alleles:
        np.testing.assert_array_equal(g.count_alleles(max_allele=max_allele),
                                      want.count_alleles(max_allele=max_allele).values, err_msg=str(max_allele))
    n = want.shape[1]
    for subpop in ([0], [n - 1, 0, 0], list(range(0, n, 2)), [], np.array([1, 1], dtype=np.uint8) % n):
        np.testing.assert_array_equal(g.count_alleles(subpop=subpop), want.count_alleles(subpop=subpop).values,
                                      err_msg=str(subpop))
        np.testing.assert_array_equal(g.count_alleles(2, subpop), want.count_alleles(2, subpop).values)


@pytest.mark.parametrize("dtype", ["i1", "i2", "<i4", "i8", ">i2", ">i8"])
@pytest.mark.parametrize("ploidy", [1, 2, 4])
def test_widths_byte_orders_ploidies(tmp_path, dtype, ploidy):
    # the largest allele the type holds, where allel can count that many columns
    top = int(np.iinfo(dtype).max) if np.dtype(dtype).itemsize <= 2 else 70000
    gt = genotypes((61, 7, ploidy), dtype, seed=ploidy, top=top)
    path = write(tmp_path / "gt.h5", gt, chunks=(8, 3, ploidy), compression="gzip")
    with h5py.File(path) as f:
        read = f["calldata/GT"][()]
        assert read.dtype == np.dtype(dtype)
    with h5turbo.File(path) as f:
        assert_counts_like_allel(GenotypeArray(f["calldata/GT"], threads=2, block_variants=5), read)


LAYOUTS = {
    "contiguous": dict(),
    "odd_chunks": dict(chunks=(7, 5, 2)),
    "one_row": dict(chunks=(1, 13, 2), compression="gzip"),
    "sample_axis": dict(chunks=(97, 1, 1)),
    "lzf_shuffle": dict(chunks=(16, 13, 2), compression="lzf", shuffle=True),
    "blosc": dict(chunks=(16, 13, 2), **hdf5plugin.Blosc(cname="lz4", shuffle=hdf5plugin.Blosc.SHUFFLE)),
    "zstd": dict(chunks=(30, 4, 2), **hdf5plugin.Zstd()),
}


# each layout with two of the thread / block settings, every setting with several layouts
RUNS = [(1, None), (2, 1), (8, 11), (2, 10**9)]


@pytest.mark.parametrize("layout,threads,block", [(layout, *RUNS[(i + k) % len(RUNS)])
                                                  for i, layout in enumerate(LAYOUTS) for k in (0, 2)])
def test_layouts_threads_blocks(tmp_path, layout, threads, block):
    gt = genotypes((97, 13, 2), np.int16, seed=len(layout))
    path = write(tmp_path / "gt.h5", gt, **LAYOUTS[layout])
    with h5turbo.File(path) as f:
        assert_counts_like_allel(GenotypeArray(f["calldata/GT"], threads=threads, block_variants=block), gt)


@pytest.mark.parametrize("fill", [-1, 0, 2])
def test_unwritten_chunks_read_as_the_fill_value(tmp_path, fill):
    path = tmp_path / "partial.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("calldata/GT", (50, 6, 2), dtype=np.int8, chunks=(8, 4, 2), fillvalue=fill,
                              compression="gzip", shuffle=True)
        ds[3:11, 1:5] = genotypes((8, 4, 2), np.int8, seed=1)  # parts of a few chunks
        ds[40:41] = 1
        gt = ds[()]
    with h5turbo.File(path) as f:
        assert_counts_like_allel(GenotypeArray(f["calldata/GT"], threads=2, block_variants=9), gt)


def test_zero_variants_and_samples(tmp_path):
    """allel's default count_alleles fails on an empty matrix (max of nothing): here no
    columns; with max_allele both give zeros."""
    path = tmp_path / "empty.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("no_variants", (0, 5, 2), dtype=np.int8, chunks=(4, 5, 2), maxshape=(None, 5, 2))
        f.create_dataset("no_samples", (9, 0, 2), dtype=np.int8)
    with h5turbo.File(path) as f:
        for name, shape in (("no_variants", (0, 5, 2)), ("no_samples", (9, 0, 2))):
            g, want = GenotypeArray(f[name], threads=2), allel.GenotypeArray(np.zeros(shape, np.int8))
            assert g.count_alleles().shape == (shape[0], 0)
            np.testing.assert_array_equal(g.count_alleles(max_allele=3), want.count_alleles(max_allele=3).values)
            for name in CALL_COUNTS:
                for axis in (None, 0, 1):
                    got, expected = getattr(g, f"count_{name}")(axis=axis), getattr(want, f"count_{name}")(axis=axis)
                    np.testing.assert_array_equal(got, expected)
                    assert np.shape(got) == np.shape(expected)


def test_max_allele_beyond_the_stored_type_counts_zero(tmp_path):
    """allel raises OverflowError for an int8 matrix and max_allele 200; here those
    columns are 0 (no int8 call is allele 200) and the others are allel's."""
    gt = genotypes((30, 5, 2), np.int8, seed=4, top=127)
    path = write(tmp_path / "gt.h5", gt, chunks=(7, 5, 2))
    with h5turbo.File(path) as f:
        counts = GenotypeArray(f["calldata/GT"]).count_alleles(max_allele=200)
    assert counts.shape == (30, 201) and not counts[:, 128:].any()
    np.testing.assert_array_equal(counts[:, :128], allel_of(gt).count_alleles(max_allele=127).values)


def test_bad_arguments_raise_as_allel(tmp_path):
    gt = genotypes((10, 4, 2), np.int8, seed=2)
    path = write(tmp_path / "gt.h5", gt)
    want = allel_of(gt)
    with h5turbo.File(path) as f:
        g = GenotypeArray(f["calldata/GT"])
        for bad in (dict(max_allele=-2), dict(subpop=[4]), dict(subpop=[-1])):
            with pytest.raises(ValueError):
                want.count_alleles(**bad)
            with pytest.raises(ValueError):
                g.count_alleles(**bad)
        for axis in (2, -3, ()):
            with pytest.raises(ValueError, match="axis"):
                g.count_called(axis=axis)


def test_a_huge_allele_is_an_error_not_an_allocation(tmp_path):
    """Allele 2**40 in the data: allel asks numpy for terabytes of counts (MemoryError);
    here a FormatError naming the file and the dataset before anything is allocated."""
    gt = np.zeros((4, 3, 2), np.int64)
    gt[2, 1, 0] = 2**40
    path = write(tmp_path / "huge.h5", gt, chunks=(2, 3, 2))
    with pytest.raises(MemoryError):
        allel_of(gt).count_alleles()
    with h5turbo.File(path) as f:
        g = GenotypeArray(f["calldata/GT"])
        with pytest.raises(h5turbo.FormatError, match=r"huge\.h5.*calldata/GT.*largest allele 1099511627776"):
            g.count_alleles()
        with pytest.raises(MemoryError, match="max_allele"):
            g.count_alleles(max_allele=2**40)
        np.testing.assert_array_equal(g.count_alleles(max_allele=1), allel_of(gt).count_alleles(max_allele=1).values)


def test_not_genotypes_are_typed_errors_naming_the_object(tmp_path):
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        f["two_d"] = np.zeros((4, 3), np.int8)
        f["floats"] = np.zeros((4, 3, 2), np.float32)
        f["unsigned"] = np.zeros((4, 3, 2), np.uint8)
        f.create_dataset("vlen", (4, 3, 2), dtype=h5py.vlen_dtype(np.int8))
        f["scalar"] = np.int8(1)
        f["no_ploidy"] = np.zeros((4, 3, 0), np.int8)
        f.create_group("group")
    with h5turbo.File(path) as f:
        for name in ("two_d", "floats", "unsigned", "vlen", "scalar", "no_ploidy", "group"):
            with pytest.raises(h5turbo.FormatError, match=f"bad.h5: /{name}: not a genotype array"):
                GenotypeArray(f[name])
    with pytest.raises(TypeError, match="h5turbo Dataset"):
        GenotypeArray(np.zeros((4, 3, 2), np.int8))
    with h5py.File(path) as f:  # an h5py dataset: refused at once, not at the first count
        with pytest.raises(TypeError, match="h5turbo Dataset.*h5py"):
            GenotypeArray(f["unsigned"])


def test_closed_file(tmp_path):
    path = write(tmp_path / "gt.h5", genotypes((20, 3, 2), np.int8, seed=5), chunks=(5, 3, 2))
    with h5turbo.File(path) as f:
        ds = f["calldata/GT"]
        g = GenotypeArray(ds)
    with pytest.raises(h5turbo.ClosedError):
        GenotypeArray(ds)
    for count in (g.count_alt, g.count_alleles, g.count_called, g.count_hom, g.is_het, g.to_n_alt):
        with pytest.raises(h5turbo.ClosedError):
            count()


def test_one_object_from_several_python_threads(tmp_path):
    gt = genotypes((400, 9, 2), np.int8, seed=6)
    path = write(tmp_path / "gt.h5", gt, chunks=(13, 9, 2), compression="gzip")
    want = allel_of(gt)
    expected = {"alleles": want.count_alleles().values, "het": want.count_het(axis=0),
                "called": want.count_called(axis=1), "hom_alt": want.count_hom_alt()}
    failures = []
    with h5turbo.File(path) as f:
        g = GenotypeArray(f["calldata/GT"], threads=2, block_variants=17)

        def work():
            try:
                for _ in range(3):
                    got = {"alleles": g.count_alleles(), "het": g.count_het(axis=0),
                           "called": g.count_called(axis=1), "hom_alt": g.count_hom_alt()}
                    for key, value in expected.items():
                        np.testing.assert_array_equal(got[key], value, err_msg=key)
            except BaseException as error:  # reported below, from the main thread
                failures.append(error)

        workers = [threading.Thread(target=work) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert not failures, failures[0]


def test_unreadable_chunks_are_errors_naming_the_file_and_dataset(tmp_path):
    """A filter h5turbo cannot decode (SZ): count_alleles finds the largest allele by
    reading, and the error names the file and the dataset, as h5py's read names its
    failure (Dataset.max's engine reduction named neither)."""
    gt = genotypes((40, 6, 2), np.int8, seed=8)
    path = write(tmp_path / "sz.h5", gt, chunks=(7, 6, 2), **hdf5plugin.SZ(absolute=0.1))
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["calldata/GT"][()], gt)  # libhdf5 reads it back
    with h5turbo.File(path) as f:
        g = GenotypeArray(f["calldata/GT"], threads=2)
        for count in (g.count_alleles, g.count_alt, g.is_called, g.to_n_ref, partial(g.count_call, [0, 1])):
            with pytest.raises(h5turbo.Error, match=r"sz\.h5: /calldata/GT: .*SZ"):
                count()


def test_thread_counts_are_checked_and_bounded(tmp_path):
    """threads as the rest of h5turbo takes it (None and 0: the default, as read_fast5),
    a ValueError for what is no positive count; a huge count is bounded (each thread holds
    two blocks: 10**6 threads asked 16 TB of blocks in flight) and counts as allel."""
    gt = genotypes((60, 7, 2), np.int8, seed=11)
    path = write(tmp_path / "gt.h5", gt, chunks=(5, 7, 2))
    with h5turbo.File(path) as f:
        ds = f["calldata/GT"]
        for threads in (-1, True, 1.5, "2", 2**70 * -1):
            with pytest.raises(ValueError, match="threads"):
                GenotypeArray(ds, threads=threads)
        for threads in (None, 0, np.int64(3), 10**6, 2**64):
            g = GenotypeArray(ds, threads=threads, block_variants=1)
            assert 1 <= g.threads <= 256
            np.testing.assert_array_equal(g.count_alleles(), allel_of(gt).count_alleles().values)
