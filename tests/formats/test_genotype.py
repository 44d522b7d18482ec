"""GenotypeArray (scikit-allel's calldata/GT layout) against numpy on h5py-written
files: several chunkings, compressions, ploidies and integer widths."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo.formats import GenotypeArray

LAYOUTS = {
    "chunked_gzip": dict(chunks=(100, 37, 2), compression="gzip", compression_opts=4),
    "chunked_lzf_shuffle": dict(chunks=(64, 8, 2), compression="lzf", shuffle=True),
    "sample_chunks": dict(chunks=(1000, 5, 2)),
    "contiguous": dict(),
    "one_row_chunks": dict(chunks=(1, 37, 2), compression="gzip"),
}


def random_genotypes(shape, dtype=np.int8, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    gt = rng.choice(np.array([0, 0, 0, 1, 1, 2, 3, -1], dtype=dtype), size=shape)
    gt[rng.random(shape[:2]) < 0.02] = -1  # whole missing calls as well as half-missing ones
    return gt


def numpy_counts(gt: np.ndarray) -> dict:
    called = np.all(gt >= 0, axis=2)
    same = np.all(gt == gt[..., :1], axis=2)
    return {
        "called": called, "missing": np.any(gt < 0, axis=2), "hom_ref": np.all(gt == 0, axis=2),
        "hom_alt": called & same & (gt[..., 0] > 0), "het": called & ~same,
    }


@pytest.fixture(scope="module", params=list(LAYOUTS))
def gt_file(request, tmp_path_factory):
    gt = random_genotypes((2503, 37, 2), seed=len(request.param))
    path = tmp_path_factory.mktemp("gt") / f"{request.param}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("calldata/GT", data=gt, **LAYOUTS[request.param])
    return path, gt


@pytest.mark.parametrize("threads,block", [(1, None), (2, None), (3, 150), (2, 7)])
def test_counts_match_numpy(gt_file, threads, block):
    path, gt = gt_file
    with h5turbo.File(path) as f:
        g = GenotypeArray(f["calldata/GT"], threads=threads, block_variants=block)
        want = numpy_counts(gt)
        for name, mask in want.items():
            count = getattr(g, f"count_{name}")
            assert count() == int(mask.sum()), name
            np.testing.assert_array_equal(count(axis=0), mask.sum(axis=0), err_msg=name)
            np.testing.assert_array_equal(count(axis=1), mask.sum(axis=1), err_msg=name)
        np.testing.assert_array_equal(g.count_alt(), (gt > 0).sum(axis=(1, 2)))
        counts = g.count_alleles()
        assert counts.dtype == np.int32 and counts.shape == (gt.shape[0], 4)
        for allele in range(4):
            np.testing.assert_array_equal(counts[:, allele], (gt == allele).sum(axis=(1, 2)))
        np.testing.assert_array_equal(g.count_alleles(max_allele=1), counts[:, :2])


@pytest.mark.parametrize("shape,dtype", [((500, 11, 1), np.int8), ((700, 9, 3), np.int16),
                                         ((0, 5, 2), np.int8), ((300, 1, 2), np.int32)])
def test_other_ploidies_and_widths(tmp_path, shape, dtype):
    gt = random_genotypes(shape, dtype=dtype, seed=3)
    path = tmp_path / "gt.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("calldata/GT", data=gt, chunks=(max(1, shape[0] // 7), shape[1], shape[2]) if shape[0]
                         else None, compression="gzip" if shape[0] else None, maxshape=(None,) + shape[1:])
    with h5turbo.File(path) as f:
        g = GenotypeArray(f["calldata/GT"], threads=2)
        want = numpy_counts(gt)
        for name, mask in want.items():
            np.testing.assert_array_equal(getattr(g, f"count_{name}")(axis=1), mask.sum(axis=1))
            np.testing.assert_array_equal(getattr(g, f"count_{name}")(axis=0), mask.sum(axis=0))
        np.testing.assert_array_equal(g.count_alt(), (gt > 0).sum(axis=(1, 2)))
        assert g.count_alleles().shape[0] == shape[0]


def test_not_a_genotype_array(tmp_path):
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        f["calldata/GT"] = np.zeros((4, 3), dtype=np.int8)
        f["floats"] = np.zeros((4, 3, 2))
        f["ok"] = np.zeros((4, 3, 2), dtype=np.int8)
    with h5turbo.File(path) as f:
        for name in ("calldata/GT", "floats"):
            with pytest.raises(h5turbo.FormatError, match=f"bad.h5.*{name}.*not a genotype array"):
                GenotypeArray(f[name])
        with pytest.raises(ValueError, match="axis"):
            GenotypeArray(f["ok"]).count_called(axis=2)
        with pytest.raises(ValueError, match="block_variants"):
            GenotypeArray(f["ok"], block_variants=0)


def test_corrupt_chunk_raises_a_format_error(tmp_path):
    path = tmp_path / "corrupt.h5"
    gt = random_genotypes((400, 20, 2), seed=9)
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("calldata/GT", data=gt, chunks=(50, 20, 2), compression="gzip")
        offset = ds.id.get_chunk_info(3).byte_offset
    data = bytearray(path.read_bytes())
    data[offset:offset + 16] = b"\xff" * 16  # no longer a deflate stream
    path.write_bytes(bytes(data))
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.Error, match="corrupt.h5"):
            GenotypeArray(f["calldata/GT"], threads=2).count_alt()


def test_all_missing_calls_count_no_alleles(tmp_path):
    """Every call missing: no allele columns, as scikit-allel's count_alleles gives."""
    path = tmp_path / "missing.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("calldata/GT", data=np.full((20, 4, 2), -1, np.int8), chunks=(10, 4, 2))
    with h5turbo.File(path) as f:
        counts = GenotypeArray(f["calldata/GT"]).count_alleles()
    assert counts.shape == (20, 0) and counts.dtype == np.int32
