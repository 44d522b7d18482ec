"""Every fenced code block of README.md and docs/*.md, run as a newcomer would run it.

The blocks are read from the markdown when the tests are collected (nothing of them is
copied here). Each block has an entry in SPECS below, keyed by (document, block index):
what it needs (input files made in tmp_path, a prelude for fragments that use names the
surrounding text defines, earlier blocks it continues), how it is run, and what the text
around it claims (checked where that is cheap). A block without an entry fails
`test_every_block_has_a_spec`, so a new example cannot go unchecked.

  python  a fresh interpreter (sys.executable) in tmp_path; checks run in the same
          process after the block (an epilogue) against h5py / anndata / scanpy /
          scikit-allel, or on its output.
  c       compiled with the project's warning flags (-std=c11 -Wall -Wextra -Werror)
          against build/c (`make c`; built here if absent), linked with libh5turbo, run
          on a generated file. Fragments are put in a main() that opens the file (and
          the dataset `ds` the text means).
  r       one Rscript per document (library(h5turbo) loads the Bioconductor stack: 3-4 s);
          each block's test checks that its part ran and its checks passed.
  sh      only quick, side-effect-free commands: the `h5turbo` CLI (cli.md; writing.md's
          synopsis, instantiated option by option), the link lines of docs/c.md, bench.md's
          `--file` line on a small file. Not run: installs and builds (`pip install`: the
          extras it names are checked against pyproject.toml; `make demo/test/c/install-c/r`,
          `R CMD INSTALL`: skipped) and bench.md's preset and --shape runs (minutes; their
          options are checked against `h5turbo bench --help`), cli.md's `bench` line (same).

A block that does not run as written is marked xfail(strict=True, reason="DOC BUG: ...").
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Optional

import h5py
import numpy as np
import pytest

from support import h5gen

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BIN = Path(sys.executable).parent  # the venv's bin: `h5turbo` lives there
C_BUILD = ROOT / "build" / "c"

# ----------------------------------------------------------------- markdown


@dataclasses.dataclass(frozen=True)
class Block:
    doc: str    # "README.md", "docs/c.md"
    index: int  # 0-based, over every fenced block of the document
    lang: str   # the info string's first word, lower case ("" for none)
    code: str
    line: int   # 1-based line of the opening fence

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line} (block {self.index}, {self.lang or 'no language'})"


class DocBug(Exception):
    """A block failed the way its xfail's reason says (any other failure fails the test)."""


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def parse_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a CommonMark document."""
    doc = path.relative_to(ROOT).as_posix()
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence, indent, start = m["fence"], len(m["indent"]), i
        info = m["info"].strip().split()
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = re.match(r"^ {0,3}(`{3,}|~{3,})\s*$", lines[i])
            if close and close[1][0] == fence[0] and len(close[1]) >= len(fence):
                break
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])  # the fence's indent removed
            i += 1
        blocks.append(Block(doc, len(blocks), info[0].lower() if info else "", "\n".join(body) + "\n", start + 1))
        i += 1
    return blocks


BLOCKS: dict[tuple[str, int], Block] = {(b.doc, b.index): b for path in DOCS for b in parse_blocks(path)}

# ----------------------------------------------------------------- input files


_SHIM: list = []  # a folder with an `h5turbo` script, where the interpreter's bin has none


@pytest.fixture(scope="session", autouse=True)
def _h5turbo_command(tmp_path_factory):
    """`h5turbo` on PATH: the venv's script; under an interpreter without one (the oldest-
    NumPy run puts the source tree on PYTHONPATH) a shim running `python -m h5turbo`,
    which cli.md says is the same command."""
    if not (BIN / "h5turbo").exists():
        shim = tmp_path_factory.mktemp("bin")
        (shim / "h5turbo").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m h5turbo "$@"\n')
        (shim / "h5turbo").chmod(0o755)
        _SHIM.append(shim)
    yield


def _env() -> dict:
    """The environment of the examples: this interpreter's bin (and `h5turbo`) first on PATH,
    the rest (PYTHONPATH, HDF5_PLUGIN_PATH set by tests/conftest.py) as the tests have it."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(p) for p in _SHIM] + [str(BIN), env.get("PATH", "")])
    return env


def make_data_h5(d: Path) -> None:
    """data.h5 of README.md, reading.md, reductions-and-sparse.md, cli.md, dask-xarray.md."""
    rng = np.random.default_rng(1)
    matrix = rng.integers(0, 100, (10000, 300), dtype=np.int32)
    matrix[rng.random(matrix.shape) < 0.2] = 0
    with h5py.File(d / "data.h5", "w") as f:
        f.attrs["title"] = "example"
        f.attrs["version"] = np.int32(3)
        f.create_dataset("matrix", data=matrix, chunks=(1000, 64), compression="gzip", compression_opts=4)
        # an AnnData csr_matrix group (1000 cells x 50 genes), laid out as anndata writes it
        dense = rng.integers(0, 5, (1000, 50)).astype(np.float32) * (rng.random((1000, 50)) < 0.1)
        rows, cols = np.nonzero(dense)
        x = f.create_group("X")
        x.attrs["encoding-type"] = "csr_matrix"
        x.attrs["encoding-version"] = "0.1.0"
        x.attrs["shape"] = np.array(dense.shape, dtype=np.int64)
        x.create_dataset("data", data=dense[rows, cols], chunks=True, compression="gzip")
        x.create_dataset("indices", data=cols.astype(np.int32), chunks=True, compression="gzip")
        x.create_dataset("indptr", data=np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=1000))]))
        g = f.create_group("group")
        g.create_dataset("sub", data=np.arange(12.0).reshape(3, 4))
        data = f.create_dataset("data", data=np.arange(200).reshape(10, 20))
        regions = f.create_dataset("regions", (2,), dtype=h5py.regionref_dtype)
        regions[0] = data.regionref[2:5, ::3]
        regions[1] = data.regionref[7, :]
        refs = f.create_dataset("refs", (3,), dtype=h5py.ref_dtype)
        refs[0] = f["matrix"].ref
        refs[2] = g.ref  # refs[1] stays a null reference


def make_10x(path: Path, barcodes: list[str], n_features: int = 30, seed: int = 2) -> None:
    """A 10x Genomics v3 filtered_feature_bc_matrix.h5 (features x barcodes, CSC by barcode)."""
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 6, (len(barcodes), n_features)).astype(np.int32) * (rng.random((len(barcodes), n_features)) < 0.3)
    data, indices, indptr = [], [], [0]
    for row in dense:
        nz = np.nonzero(row)[0]
        data.extend(row[nz])
        indices.extend(nz)
        indptr.append(len(data))
    with h5py.File(path, "w") as f:
        m = f.create_group("matrix")
        m.create_dataset("barcodes", data=np.array([b.encode() for b in barcodes], dtype="S18"))
        m.create_dataset("data", data=np.array(data, dtype=np.int32), compression="gzip")
        m.create_dataset("indices", data=np.array(indices, dtype=np.int64), compression="gzip")
        m.create_dataset("indptr", data=np.array(indptr, dtype=np.int64))
        m.create_dataset("shape", data=np.array([n_features, len(barcodes)], dtype=np.int32))
        feats = m.create_group("features")
        feats.create_dataset("id", data=np.array([f"ENSG{i:011d}".encode() for i in range(n_features)]))
        feats.create_dataset("name", data=np.array([f"GENE{i}".encode() for i in range(n_features)]))
        feats.create_dataset("feature_type", data=np.array([b"Gene Expression"] * n_features))
        feats.create_dataset("genome", data=np.array([b"GRCh38"] * n_features))
        feats.create_dataset("_all_tag_keys", data=np.array([b"genome"]))


BARCODES = ["AAACCTGAGAAGGCCT-1", "AAACCTGAGACAGACC-1", "AAACCTGAGATAGTCA-1", "AAACCTGAGCGCCTCA-1",
            "AAACCTGAGGCATGGT-1", "AAACCTGCAAGGTTCT-1", "AAACCTGCAGGCGATA-1", "AAACCTGCATACGCCG-1"]


def make_h5ad(path: Path, seed: int = 3) -> None:
    """An AnnData file as anndata writes it: sparse X, layers/counts, categorical obs."""
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    counts = sp.random(len(BARCODES), 12, density=0.4, format="csr", random_state=seed, dtype=np.float32)
    counts.data = np.ceil(counts.data * 10)
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["B", "T", "NK"], len(BARCODES))),
                        "n_genes": rng.integers(100, 1000, len(BARCODES))}, index=BARCODES)
    var = pd.DataFrame({"gene_ids": [f"ENSG{i:05d}" for i in range(12)]}, index=[f"GENE{i}" for i in range(12)])
    adata = anndata.AnnData(X=counts.multiply(1 / 3).tocsr().astype(np.float32), obs=obs, var=var,
                            layers={"counts": counts}, obsm={"X_pca": rng.normal(size=(len(BARCODES), 3))})
    adata.write_h5ad(path)


def make_formats_single_cell(d: Path) -> None:
    make_h5ad(d / "pbmc.h5ad")
    make_10x(d / "filtered_feature_bc_matrix.h5", BARCODES)
    shutil.copy(ROOT / "tests/data/corpus/loom/test.loom", d / "cells.loom")


# The read ids the fast5 examples ask for (formats.md, c.md), and some others.
DOC_READ_IDS = ["002ad0e4-c6bb-4eff-a30f-5fec01475ab8", "00031f3e-415c-4ab5-9c16-fb6fe45ff519",
                "0003a5f2-b8b6-4e9b-a5c7-2a3e4d7f1c10"]
OTHER_READ_IDS = ["7e1bd09c-1f7d-4d1e-9e2b-3c5a7f10aa01"]


def make_fast5_runs(d: Path) -> dict:
    """runs/: a multi-read file (the ids the docs name), a single-read file in a subfolder
    (folders are searched recursively), and a file that is not HDF5. Returns
    {read_id: (signal, channel, raw attrs)}."""
    runs = d / "runs"
    (runs / "sub").mkdir(parents=True)
    rng = np.random.default_rng(5)
    reads = {}
    with h5py.File(runs / "a_multi.fast5", "w") as f:
        f.attrs["file_version"] = np.bytes_("2.0")
        f.attrs["file_type"] = np.bytes_("multi-read")
        for read_id, length in zip(DOC_READ_IDS + OTHER_READ_IDS, [500, 1200, 0, 300]):
            _, signal, channel, attrs = h5gen.fast5_read_values(rng, length)
            attrs["read_id"] = np.bytes_(read_id)
            group = f.create_group(f"read_{read_id}")
            raw = group.create_group("Raw")
            for k, v in attrs.items():
                raw.attrs[k] = v
            raw.create_dataset("Signal", data=signal, chunks=(max(length, 1),), maxshape=(None,), **h5gen.GZIP)
            channel_group = group.create_group("channel_id")
            for k, v in channel.items():
                channel_group.attrs[k] = v
            reads[read_id] = (signal, channel, attrs)
    h5gen.write_fast5_single(runs / "sub" / "b_single.fast5", 700, seed=9, filters=h5gen.GZIP)
    with h5py.File(runs / "sub" / "b_single.fast5", "r") as f:
        (group,) = f["Raw/Reads"].values()
        read_id = group.attrs["read_id"].decode()
        reads[read_id] = (group["Signal"][()], dict(f["UniqueGlobalKey/channel_id"].attrs), dict(group.attrs))
    (runs / "c_bad.fast5").write_bytes(b"this is not an HDF5 file\n" * 10)
    return reads


def make_calls_h5(d: Path) -> None:
    """calls.h5: scikit-allel's layout, calldata/GT variants x samples x ploidy, -1 missing."""
    rng = np.random.default_rng(6)
    gt = rng.choice(np.array([0, 0, 0, 1, 1, 2, 3, -1], dtype=np.int8), size=(300, 10, 2))
    with h5py.File(d / "calls.h5", "w") as f:
        f.create_dataset("calldata/GT", data=gt, chunks=(64, 10, 2), compression="gzip")


def make_climate_nc(d: Path) -> None:
    import xarray as xr

    rng = np.random.default_rng(4)
    ds = xr.Dataset({"t": (("time", "lat", "lon"), rng.normal(280, 5, (12, 20, 30)).astype(np.float32),
                           {"units": "K"})},
                    coords={"time": np.arange(12), "lat": np.linspace(-45, 45, 20), "lon": np.linspace(0, 348, 30)})
    ds.to_netcdf(d / "climate.nc", engine="h5netcdf", encoding={"t": {"chunksizes": (4, 10, 15)}})


def make_c_data_h5(d: Path) -> None:
    """data.h5 of docs/c.md: /matrix (float64 50 x 100, chunked, shuffle + gzip, attributes
    scale and units, a dimension scale on dimension 1), links, strings, references, a
    table with a variable-length string member, ragged rows, an array type of rank 9."""
    rng = np.random.default_rng(8)
    with h5py.File(d / "other.h5", "w") as f:
        f["thing"] = np.arange(3)
    with h5py.File(d / "data.h5", "w") as f:
        m = f.create_dataset("matrix", data=rng.normal(size=(50, 100)), chunks=(10, 25), shuffle=True,
                             compression="gzip")
        m.attrs["scale"] = 2.5
        m.attrs["units"] = "m/s"
        x = f.create_dataset("x", data=np.arange(100.0))
        x.make_scale("x")
        m.dims[1].attach_scale(x)
        f["alias"] = h5py.SoftLink("/matrix")
        f["ext"] = h5py.ExternalLink("other.h5", "/thing")
        f.create_dataset("strings", data=["alpha", "beta", "gamma"], dtype=h5py.string_dtype())
        refs = f.create_dataset("refs", (3,), dtype=h5py.ref_dtype)
        refs[0] = m.ref
        refs[2] = f["strings"].ref
        table_type = np.dtype([("name", h5py.string_dtype()), ("score", "f8")])
        f.create_dataset("table", data=np.array([("ann", 1.5), ("bob", -2.0), ("cy", 3.25)], dtype=table_type))
        ragged = f.create_dataset("ragged", (3,), dtype=h5py.vlen_dtype(np.float64))
        ragged[0] = [1.0, 2.0]
        ragged[1] = np.array([], dtype=np.float64)
        ragged[2] = [3.0, 4.0, 5.5]
        f.create_dataset("arr", (2,), dtype=np.dtype(("f4", (1,) * 9)))


# ----------------------------------------------------------------- the specs


@dataclasses.dataclass
class Spec:
    contains: str                          # text the block must hold (the index still points at it)
    run: str = ""                          # "python" | "c" | "r" | "sh" | "" (skipped: see skip)
    skip: str = ""
    xfail: str = ""                        # "DOC BUG: ..." (strict, only for a DocBug: the expected failure)
    fails_with: str = ""                   # with xfail: text the failure's output must hold
    setup: Optional[Callable] = None       # setup(tmp_path)
    prelude: str = ""                      # for fragments: the names the surrounding text means
    after: tuple = ()                      # earlier block indices of the same doc this one continues
    replace: tuple = ()                    # (old, new, why): scale-downs only
    epilogue: str = ""                     # code run after the block, in its scope
    check: Optional[Callable] = None       # check(tmp_path, stdout, stderr)
    c_ds: str = ""                         # c fragments: the dataset opened as `ds`
    c_args: tuple = ()                     # c programs: argv
    needs_installed: bool = False          # needs h5turbo's installed metadata (an entry point)
    variants: dict = dataclasses.field(default_factory=dict)  # name -> dict of overrides


def _lines_before_after(stdout: str, marker: str = "=== EXPECTED ===") -> tuple[list[str], list[str]]:
    assert marker in stdout, stdout
    got, want = stdout.split(marker + "\n", 1)
    return got.splitlines(), want.splitlines()


def _same_as_expected(tmp, out, err):
    got, want = _lines_before_after(out)
    assert got == want, f"printed:\n{got}\nexpected (h5py):\n{want}"


# --- README.md

README_EPILOGUE = """
print("=== EXPECTED ===")
import h5py
with h5py.File("data.h5", "r") as g:
    ref = g["matrix"]
    whole = ref[...]
    assert isinstance(x, np.ndarray) and x.dtype == whole.dtype and np.array_equal(x, whole)
    assert np.array_equal(block, ref[1000:2000, ::2])
    assert np.array_equal(rows, whole[[5, 1, 5]])
    assert np.array_equal(buf, whole[:100])
    print(ref.chunks, ref.compression, dict(g.attrs))
"""

# --- reading.md

READING_EPILOGUE = """
print("=== EXPECTED ===")
import h5py
import numpy as np
with h5py.File("data.h5", "r") as g:
    for ref in g["refs"][()]:
        if ref:
            print(g[ref].name)
    want = g["data"][g["regions"][0]]
assert np.array_equal(values, want) and values.shape == want.shape, (values, want)
"""

# --- reductions-and-sparse.md

REDUCTIONS_EPILOGUE = """
import h5py
import scipy.sparse as sp
with h5py.File("data.h5", "r") as g:
    whole = g["matrix"][...]
    csr = sp.csr_matrix((g["X/data"][()], g["X/indices"][()], g["X/indptr"][()]), shape=tuple(g["X"].attrs["shape"]))
assert np.array_equal(libsize, whole.sum(axis=1)) and libsize.dtype == whole.sum(axis=1).dtype
assert np.allclose(mu, whole.mean(axis=0), rtol=1e-12) and np.allclose(var, whole.var(axis=0, ddof=1), rtol=1e-12)
assert np.array_equal(nnz, np.count_nonzero(whole[1000:2000], axis=0))
assert (m != csr).nnz == 0 and m.shape == csr.shape
assert (sp.csr_matrix(rows) != csr[[5, 17, 900]]).nnz == 0
# "Once the file is closed, shape and format stay answered; everything else, ndim included,
# raises h5turbo.ClosedError"
assert x.shape == csr.shape and x.format == "csr"
try:
    x.ndim
except h5turbo.ClosedError:
    pass
else:
    raise AssertionError("x.ndim after close did not raise ClosedError")
with h5turbo.File("data.h5") as f:
    x = f["X"]
    assert (x.shape, x.format, x.nnz, x.dtype) == (csr.shape, "csr", csr.nnz, csr.dtype)
    # float32 data: "accumulated in float64 and cast back", "variances always in float64"
    dense64 = csr.toarray().astype(np.float64)
    assert np.array_equal(np.asarray(x.sum(axis=1)).ravel(), dense64.sum(axis=1).astype(np.float32))
    assert np.array_equal(np.asarray(x.var(axis=0)).ravel(), dense64.var(axis=0).astype(np.float32))
print("checked")
"""

# --- writing.md

WRITING_PRELUDE = """
import numpy as np
import dask.array as da
import anndata
import scipy.sparse as sp
import h5turbo
rng = np.random.default_rng(0)
x = rng.integers(0, 1000, (3000, 400), dtype=np.int32)
blocks = [np.full((250, 2000), i, dtype=np.float32) for i in range(4)]
dask_array = da.from_array(rng.normal(size=(2000, 300)), chunks=(500, 300))
adata = anndata.AnnData(X=sp.random(200, 50, density=0.1, format="csr", random_state=1, dtype=np.float32),
                        layers={"counts": sp.random(200, 50, density=0.1, format="csr", random_state=2, dtype=np.float32)})
import h5py
with h5py.File("source.h5", "w") as src:
    src["counts"] = x
h5py_file = h5py.File("source.h5", "r")
adata.write_h5ad("big.h5ad")
"""

WRITING_EPILOGUE = """
import h5py, hdf5plugin, anndata
from anndata.tests.helpers import assert_equal
with h5py.File("out.h5", "r") as g:
    def filters(ds):
        plist = ds.id.get_create_plist()
        return [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    assert np.array_equal(g["matrix"][...], x) and filters(g["matrix"]) == [2, 32015], filters(g["matrix"])
    assert np.array_equal(g["big"][...], np.concatenate(blocks)) and g["big"].dtype == np.float32
    assert filters(g["big"]) == [1]
    assert np.array_equal(g["lazy"][...], dask_array.compute()) and filters(g["lazy"]) == [32004]
    assert np.array_equal(g["copy"][...], x)
assert_equal(anndata.read_h5ad("out.h5ad"), adata)   # written twice: adata, then its backed copy
# claims of the text below the block
assert h5turbo.auto_chunks((30000, 20000), 4) == (512, 512) and h5turbo.auto_chunks((10**6, 10), 8) == (8192, 10)
h5turbo.write("conv.h5", "u8", np.array([300.2, -5.0, 2.7]), dtype="u1")   # "300.2 as uint8 is 255"
with h5py.File("conv.h5", "r") as g:
    assert g["u8"][()].tolist() == [255, 0, 2], g["u8"][()]
try:
    h5turbo.write("conv.h5", "b", np.array([0.5]), dtype="bool")   # "(float to bool) is an ArgumentError"
except h5turbo.ArgumentError:
    pass
else:
    raise AssertionError("float to bool did not raise ArgumentError")
print("checked")
"""

# --- dask-xarray.md

DASK_EPILOGUE = """
import h5py
assert arr.chunks == ((5000, 5000), (300,)), arr.chunks   # (4096, -1) rounded up to whole 1000-row chunks
assert f["matrix"].to_dask().chunks == ((1000,) * 10, (64,) * 4 + (44,))   # one block per HDF5 chunk
with h5py.File("data.h5", "r") as g:
    assert np.array_equal(arr.compute(), g["matrix"][...])
print("checked")
"""

XARRAY_EPILOGUE = """
ref = xr.open_dataset("climate.nc", engine="h5netcdf")
xr.testing.assert_identical(ds.load(), ref.load())
"""
XARRAY_EPILOGUE_CHUNKS = """
assert ds["t"].chunks == ((4,) * 3, (10,) * 2, (15,) * 2), ds["t"].chunks   # chunks={}: dask blocks = HDF5 chunks
"""

# --- formats.md

FORMATS_SC_EPILOGUE = """
import anndata, scanpy, warnings
from anndata.tests.helpers import assert_equal
warnings.simplefilter("ignore")
assert_equal(h5turbo.read_h5ad("pbmc.h5ad"), anndata.read_h5ad("pbmc.h5ad"))
assert_equal(h5turbo.read_10x_h5("filtered_feature_bc_matrix.h5", genome=None),
             scanpy.read_10x_h5("filtered_feature_bc_matrix.h5", genome=None))
assert_equal(adata, anndata.io.read_loom("cells.loom") if hasattr(anndata, "io") else anndata.read_loom("cells.loom"))
print("checked")
"""

FAST5_INDEX_PRELUDE = f"""
import h5turbo
ids_from_bam = {DOC_READ_IDS[::-1] + [DOC_READ_IDS[0]]!r}   # any order, a repeat
wanted_ids = {[OTHER_READ_IDS[0], DOC_READ_IDS[0]]!r}
"""

FAST5_INDEX_EPILOGUE = """
got = index.get_reads(ids_from_bam)
assert [r.read_id for r in got] == ids_from_bam, [r.read_id for r in got]
sel = [r.read_id for r in index.get_reads(wanted_ids, order="file")]
assert sorted(sel) == sorted(wanted_ids), sel
r = index.get_read("002ad0e4-c6bb-4eff-a30f-5fec01475ab8")
import numpy as np
assert r.read_id == "002ad0e4-c6bb-4eff-a30f-5fec01475ab8" and r.signal.dtype == np.int16
print("checked")
"""

GENOTYPE_EPILOGUE = """
import allel, h5py, numpy as np
with h5py.File("calls.h5", "r") as h:
    ref = allel.GenotypeArray(h["calldata/GT"][...])
def same(ours, theirs, what):
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and np.array_equal(ours, theirs), what
same(ac, ref.count_alleles(), "count_alleles")
assert ac.dtype == np.int32 and ac.shape == (300, 4)                    # (variants, alleles) int32
same(ac_pop, ref.count_alleles(max_allele=3, subpop=[0, 5, 7]), "count_alleles subpop")
assert np.array_equal(alt, np.asarray(ref.count_alleles())[:, 1:].sum(axis=1))
same(np.asarray(called), ref.count_called(axis=1), "count_called")
same(np.asarray(missing), ref.count_missing(axis=0), "count_missing")
assert het == ref.count_het() and het_1 == ref.count_het(1)
assert hom_ref == ref.count_hom_ref() and hom_alt == ref.count_hom_alt() and hom_2 == ref.count_hom(2)
same(np.asarray(n_01), ref.count_call([0, 1], axis=0), "count_call")
same(dosage, ref.to_n_alt(fill=-1), "to_n_alt")
assert dosage.dtype == np.int8 and dosage.shape == (300, 10)            # (variants, samples) int8
same(het_calls, ref.is_het(), "is_het")
assert het_calls.dtype == bool
print("checked")
"""


FAST5_LOOP_EPILOGUE = """
items = list(h5turbo.read_fast5("runs/", threads=2))
bad = [r for r in items if isinstance(r, h5turbo.Fast5Error)]
assert len(bad) == 1 and bad[0].path.endswith("c_bad.fast5") and bad[0].problem, bad
assert bad[0].read_id is None or isinstance(bad[0].read_id, str)
assert bad[0].path in str(bad[0])
print("checked")
"""


def _check_fast5_loop(tmp, out, err):
    reads = _FAST5_READS[tmp]
    lines = out.splitlines()
    _last_line_checked(out)
    lines = lines[:-1]
    errors = [line for line in lines if "c_bad.fast5" in line]
    assert len(errors) == 1, out  # the bad file is named, once, and the others go on
    want = {f"{rid} int16 {attrs['start_time']}" for rid, (_, _, attrs) in reads.items()}
    got = set(lines) - set(errors)
    assert got == want, f"printed {got}, expected {want}"


def _check_fast5_index(tmp, out, err):
    lines = out.splitlines()
    assert lines[-1] == "checked", out
    summary = lines[-3]
    assert summary.startswith(f"{len(_FAST5_READS[tmp])} ["), summary  # every read of the good files
    assert "c_bad.fast5" in summary, summary  # unindexed: the file that could not be indexed, and why
    assert lines[-2].startswith("runs/c_bad.fast5 ") and "not an HDF5 file" in lines[-2], lines[-2]  # unindexed_files


_FAST5_READS: dict = {}


def _setup_fast5(tmp):
    _FAST5_READS[tmp] = make_fast5_runs(tmp)


# --- cli.md and writing.md's synopsis


def _expand_optional(command: str) -> list[str]:
    """A synopsis line with [optional] parts: the line without them, then with each one."""
    parts = re.findall(r"\[([^\]]*)\]", command)
    bare = re.sub(r"\s*\[[^\]]*\]", "", command)
    return [bare] + [re.sub(r"\s*\[[^\]]*\]", "", command.replace(f"[{p}]", p, 1)) for p in parts]


def _sh_commands(code: str) -> list[str]:
    """The commands of a shell block: backslash continuations joined, comments dropped
    (none of the blocks has a '#' inside quotes)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            commands.append(re.sub(r"\s+", " ", line))
    return commands


def _run_sh(command: str, cwd: Path, env: Optional[dict] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env or _env(), capture_output=True, text=True,
                          timeout=timeout)


def _cli_block(block: Block, spec: Spec, tmp: Path, request) -> None:
    """cli.md: every line but bench, once without its [optional] parts and once with each."""
    make_data_h5(tmp)
    with h5py.File(tmp / "src.h5", "w") as f:
        f.create_dataset("matrix", data=np.arange(60000, dtype=np.int32).reshape(300, 200), chunks=(50, 50),
                         compression="gzip")
        f.create_dataset("plain", data=np.linspace(0, 1, 1000))
    src_bytes = (tmp / "src.h5").read_bytes()
    ran = []
    for line in _sh_commands(block.code):
        if line.startswith("h5turbo bench"):
            continue  # the benchmark: 103 s for the quick preset (bench.md's block checks its options)
        for command in _expand_optional(line):
            done = _run_sh(command, tmp)
            assert done.returncode == 0, f"{block.where}: `{command}` exited {done.returncode}:\n{done.stderr}"
            assert done.stdout.strip(), f"`{command}` printed nothing"
            ran.append((command, done.stdout))
    assert len(ran) == 7, [c for c, _ in ran]
    # claims: the repack rewrote with zstd and left src untouched; cat's values; python -m h5turbo
    assert (tmp / "src.h5").read_bytes() == src_bytes
    import hdf5plugin  # noqa: F401
    with h5py.File(tmp / "src.h5", "r") as s, h5py.File(tmp / "dst.h5", "r") as d:
        for name in s:
            assert np.array_equal(s[name][...], d[name][...]), name
        plist = d["matrix"].id.get_create_plist()
        assert 32015 in [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    done = _run_sh("h5turbo cat data.h5 /matrix --slice '0:10, ::2' --json", tmp)
    assert done.returncode == 0, done.stderr
    with h5py.File(tmp / "data.h5", "r") as f:
        want = f["matrix"][0:10, ::2]
    got = json.loads(done.stdout)
    assert got["data"] == want.tolist() and got["shape"] == list(want.shape) and got["dtype"] == "int32", got
    for command, out in ran[:3]:
        again = _run_sh(command.replace("h5turbo ", f"{shlex.quote(sys.executable)} -m h5turbo ", 1), tmp)
        assert again.returncode == 0 and again.stdout == out, command
    # "A missing file or object ... prints one line naming the file and the object and exits with status 1"
    for command, named in [("h5turbo ls missing.h5", "missing.h5"), ("h5turbo info data.h5 /nope", "/nope")]:
        done = _run_sh(command, tmp)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1 and named in done.stderr, \
            (command, done.returncode, done.stderr)


# writing.md's synopsis (placeholders SRC DST FILE PATH CODEC N GLOB): each option and each
# alternative once.
WRITING_SYNOPSIS_RUNS = [
    "h5turbo repack src.h5 dst.h5",
    "h5turbo repack src.h5 dst1.h5 --chunks auto",
    "h5turbo repack src.h5 dst2.h5 --chunks keep --compression none",
    "h5turbo repack src.h5 dst3.h5 --chunks 512,512 --compression zstd --level 5",
    "h5turbo repack src.h5 dst4.h5 --datasets 'm*' --threads 2 --no-verify -q",
    "h5turbo repack src.h5 dst5.h5 --json",
    "h5turbo advise src.h5 /matrix --pattern rows",
    "h5turbo advise src.h5 /matrix --pattern cols",
    "h5turbo advise src.h5 /matrix --pattern blocks",
    "h5turbo advise src.h5 /matrix --pattern all --measure",
]


def _writing_synopsis(block: Block, spec: Spec, tmp: Path, request) -> None:
    options = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", block.code))
    used = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(WRITING_SYNOPSIS_RUNS)))
    assert options <= used, f"options of the synopsis not run here: {options - used}"
    assert {"rows", "cols", "blocks", "all"} <= set(re.findall(r"--pattern (\w+)", " ".join(WRITING_SYNOPSIS_RUNS)))
    with h5py.File(tmp / "src.h5", "w") as f:
        f.create_dataset("matrix", data=np.arange(600000, dtype=np.int32).reshape(1000, 600), chunks=(100, 100),
                         compression="gzip")
        f.create_dataset("other", data=np.linspace(0, 1, 1000), chunks=(100,), compression="gzip")
    for command in WRITING_SYNOPSIS_RUNS:
        done = _run_sh(command, tmp)
        assert done.returncode == 0, f"{block.where}: `{command}` exited {done.returncode}:\n{done.stderr}"
        if "--json" in command:
            json.loads(done.stdout)
    import hdf5plugin  # noqa: F401
    with h5py.File(tmp / "src.h5", "r") as s:
        for name in ["dst.h5", "dst1.h5", "dst2.h5", "dst3.h5", "dst4.h5", "dst5.h5"]:
            with h5py.File(tmp / name, "r") as d:
                for ds in s:
                    assert np.array_equal(s[ds][...], d[ds][...]), (name, ds)
        with h5py.File(tmp / "dst3.h5", "r") as d:
            assert d["matrix"].chunks == (512, 512)


def _install_extras(block: Block) -> None:
    """README.md's install lines are not run (they build the package); the extras they
    name (`'.[xarray,dask]'` and the comment's list) must exist in pyproject.toml, and the
    floors the text gives (Python 3.9+, NumPy 1.26) must be pyproject's."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        pytest.skip("tomllib needs Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    named = set()
    for line in block.code.splitlines():
        named |= {e for group in re.findall(r"\.\[([^\]]+)\]", line) for e in group.split(",")}
        if "optional extras:" in line:
            named |= {e.strip() for e in line.split("optional extras:", 1)[1].split(",")}
    assert named and named <= extras, f"extras named in {block.where} but not in pyproject.toml: {named - extras}"
    text = (ROOT / block.doc).read_text()
    python_floor = re.search(r"Python (\d+\.\d+)\+", text)[1]
    numpy_floor = re.search(r"NumPy (\d+(?:\.\d+)+) or newer", text)[1]
    assert project["requires-python"] == f">={python_floor}", (project["requires-python"], python_floor)
    assert f"numpy>={numpy_floor}" in project["dependencies"], (project["dependencies"], numpy_floor)


def _bench_options(block: Block, spec: Spec, tmp: Path, request) -> None:
    """bench.md: the preset and --shape lines take minutes (103 s for quick): their options
    must exist (--help); the --file line is run."""
    done = _run_sh("h5turbo bench --help", tmp)
    assert done.returncode == 0, done.stderr
    options = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", block.code))
    missing = {o for o in options if o not in done.stdout}
    assert not missing, f"options of {block.where} not in `h5turbo bench --help`: {missing}"
    for preset in re.findall(r"--preset (\w+)", block.code):
        assert preset in done.stdout
    # The --file line runs in seconds on a small file (HOME in tmp_path: ~/.cache stays untouched).
    # "writes results.csv (...), report.md (...) and three PNG plots"; "Every run is verified".
    (line,) = [c for c in _sh_commands(block.code) if "--file data.h5" in c]
    with h5py.File(tmp / "data.h5", "w") as f:
        f.create_dataset("matrix", data=np.random.default_rng(0).integers(0, 100, (400, 300), dtype=np.int32),
                         chunks=(100, 100), compression="gzip")
    done = _run_sh(line, tmp, dict(_env(), HOME=str(tmp)), timeout=240)
    assert done.returncode == 0, f"{block.where}: `{line}`:\n{done.stderr[-3000:]}"
    out = tmp / "bench-results"
    assert (out / "results.csv").is_file() and (out / "report.md").is_file(), sorted(out.iterdir())
    assert len(list(out.glob("*.png"))) == 3, sorted(out.iterdir())
    import csv
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {r["pattern"] for r in rows} >= {"read_all", "random_rows"}
    assert {r["threads"] for r in rows if r["strategy"] == "h5turbo"} == {"1", "2"}
    assert all(r["verified"] == "True" for r in rows if r["status"] == "ok"), \
        [r for r in rows if r["verified"] != "True"][:3]


# --- c.md


C_FRAGMENT_MAIN = """\
#include <h5turbo.h>
#include <stdint.h>
#include <stdio.h>

int main(void) {{
    h5turbo_file *file = NULL;
    if (h5turbo_file_open("data.h5", &file) != H5TURBO_OK) {{
        fprintf(stderr, "harness: %s\\n", h5turbo_last_error());
        return 2;
    }}
{open_ds}
    {{
/* ---- the block ---- */
{block}
/* ---- checks ---- */
{epilogue}
    }}
{close_ds}
    h5turbo_file_close(file);
    return 0;
}}
"""

C_OPEN_DS = """\
    h5turbo_object *ds = NULL;
    if (h5turbo_object_open(file, "{path}", &ds) != H5TURBO_OK) {{
        fprintf(stderr, "harness: %s\\n", h5turbo_last_error());
        return 2;
    }}"""


def _c_members(tmp, out, err):
    with h5py.File(tmp / "data.h5", "r") as f:
        want = [name + ("" if isinstance(f.get(name, getlink=True), h5py.HardLink) else " (link)") for name in f]
    assert out.splitlines() == want, (out, want)


def _c_dataset_info(tmp, out, err):
    with h5py.File(tmp / "data.h5", "r") as f:
        plist = f["matrix"].id.get_create_plist()
        ids = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    lines = out.splitlines()
    assert [int(line.split()[1]) for line in lines] == ids, (out, ids)
    assert all(line.split()[2] != "?" for line in lines), out  # known filters have names


def _c_array_dims(tmp, out, err):
    assert err.strip() == "rank 9: only the first 8 dimensions were written", err


def _c_hyperslab(tmp, out, err):
    assert not err.strip(), err
    with h5py.File(tmp / "data.h5", "r") as f:
        want = f["matrix"][10:15:2, 0:5].ravel()
    lines = out.splitlines()
    assert np.array_equal(np.array(lines[:-1], dtype=float), want)
    assert lines[-1] == "MSG data.h5: /matrix: buf_size is 16 bytes, the selection needs 40000", lines[-1]


def _c_strings(tmp, out, err):
    assert out.splitlines() == ["alpha", "beta", "gamma"], out


def _c_references(tmp, out, err):
    assert out.splitlines() == ["/matrix", "(null reference)", "/strings"], out


def _c_table(tmp, out, err):
    assert out.splitlines() == ["ann\t1.5", "bob\t-2", "cy\t3.25"], (out, err)


def _c_ragged(tmp, out, err):
    assert out.splitlines() == ["row 0: 2 values, sum 3", "row 1: 0 values, sum 0", "row 2: 3 values, sum 12.5"], \
        (out, err)


def _c_reductions(tmp, out, err):
    with h5py.File(tmp / "data.h5", "r") as f:
        m = f["matrix"][...]
    total, mean0, variance = (float(v) for v in out.split())
    assert np.isclose(total, m.sum(), rtol=1e-12) and np.isclose(mean0, m.mean(axis=0)[0], rtol=1e-12)
    assert np.isclose(variance, m.var(ddof=1), rtol=1e-12)


def _c_attributes(tmp, out, err):
    assert out.splitlines() == ["units: m/s", "2.5"], (out, err)


def _c_scales(tmp, out, err):
    assert out.splitlines() == ["scale 0: /x"], (out, err)


def _c_fast5(tmp, out, err):
    reads = _FAST5_READS[tmp]
    lines = out.splitlines()
    expected = set()
    for rid, (signal, channel, _) in reads.items():
        scale = channel["range"] / channel["digitisation"]
        first = (float(signal[0]) + channel["offset"]) * scale if len(signal) else 0.0
        expected.add(f"{rid} {len(signal)} {first:.2f}")
    n = len(reads)
    assert set(lines[:n]) == expected, (lines, expected)
    multi = tmp / "runs" / "a_multi.fast5"
    assert lines[n] == f"runs/a_multi.fast5: 1200 samples" or lines[n] == f"{multi}: 1200 samples", lines[n]
    assert lines[n + 1:n + 3] == [f"{DOC_READ_IDS[1]}: status 0", f"{DOC_READ_IDS[2]}: status 0"], lines
    assert re.fullmatch(rf"{n} read ids, the first [0-9a-f-]{{36}}", lines[n + 3]), lines[n + 3]
    assert len(lines) == n + 4, lines
    assert "c_bad.fast5" in err  # the file that could not be opened: reported in place, the others read


def _c_link(block: Block, spec: Spec, tmp: Path, request) -> None:
    """c.md's link lines, with my_tool.c = the document's first program: the shared
    build runs with LD_LIBRARY_PATH (as the text says), the static one without, and
    needs no libh5turbo.so."""
    request.getfixturevalue("c_library")
    make_c_data_h5(tmp)
    first_program = next(b for b in _blocks_of(block.doc) if b.lang == "c" and "int main" in b.code)
    (tmp / "my_tool.c").write_text(first_program.code)
    env = _env()
    env["PKG_CONFIG_PATH"] = str(C_BUILD / "lib")
    commands = _sh_commands(_apply_replacements(block.code, spec, block))
    assert len(commands) == 2, commands
    done = _run_sh(commands[0], tmp, env)  # shared
    assert done.returncode == 0, f"{block.where}: `{commands[0]}`:\n{done.stderr}"
    run_env = dict(env, LD_LIBRARY_PATH=str(C_BUILD / "lib"))
    shared = subprocess.run(["./my_tool"], cwd=tmp, env=run_env, capture_output=True, text=True, timeout=60)
    assert shared.returncode == 0, shared.stderr
    _c_members(tmp, shared.stdout, shared.stderr)
    done = _run_sh(commands[1], tmp, env)  # static
    _expected_failure(spec, done)
    assert done.returncode == 0, f"{block.where}: `{commands[1]}`:\n{done.stderr}"
    static = subprocess.run(["./my_tool"], cwd=tmp, env=env, capture_output=True, text=True, timeout=60)
    assert static.returncode == 0, static.stderr
    assert static.stdout == shared.stdout
    ldd = subprocess.run(["ldd", "./my_tool"], cwd=tmp, capture_output=True, text=True)
    assert "libh5turbo" not in ldd.stdout, ldd.stdout


# --- r.md

R_EPILOGUES = {
    2: """
stopifnot(is.integer(x), identical(dim(x), c(30L, 40L)))           # HDF5 40 x 30 -> R 30 x 40 integer matrix
stopifnot(identical(h5t_read(f, "counts", index = list(1:5, c(40, 2, 2))), x[1:5, c(40, 2, 2), drop = FALSE]))
if (requireNamespace("rhdf5", quietly = TRUE)) {                     # "as rhdf5::h5ls", "as rhdf5"
  stopifnot(identical(h5t_ls(f), rhdf5::h5ls(f)), identical(x, rhdf5::h5read(f, "counts")))
  stopifnot(identical(h5t_readAttributes(f, "counts"), rhdf5::h5readAttributes(f, "counts")))
  stopifnot(identical(h5t_read(f, "counts", index = list(1:5, c(40, 2, 2))),
                      rhdf5::h5read(f, "counts", index = list(1:5, c(40, 2, 2)))))
}
stopifnot(identical(h5t_colSums(f, "counts"), colSums(x)))
sc <- h5t_read(f, "scores")
stopifnot(isTRUE(all.equal(h5t_colVars(f, "scores"), apply(sc, 2, var))))
stopifnot(isTRUE(all.equal(h5t_rowMeans(f, "counts", threads = 2), rowMeans(x))))
stopifnot(is.factor(h5t_read(f, "cells/type")), is.data.frame(h5t_read(f, "cells/table")))
stopifnot(is.list(h5t_readAttributes(f, "counts")))
stopifnot(is(m, "dgCMatrix"), identical(dim(m), c(4L, 6L)))         # 6 cells x 4 genes -> 4 x 6
stopifnot(is(m10x, "dgCMatrix"), identical(dim(m10x), c(30L, 8L)))   # features x barcodes
stopifnot(is(sce, "SingleCellExperiment"), identical(dim(sce), c(30L, 40L)))   # the last sce: counts = a
sce_h5ad <- h5t_read_h5ad("pbmc3k.h5ad")
stopifnot(identical(dim(sce_h5ad), c(12L, 8L)), identical(colnames(sce_h5ad)[1], "AAACCTGAGAAGGCCT-1"))
stopifnot(is(a, "DelayedMatrix"), identical(as.vector(colSums(a)), as.vector(colSums(x))))
stopifnot(identical(as.vector(DelayedMatrixStats::colSums2(a)), as.vector(colSums(x))))
""",
    3: """
msg <- tryCatch(h5t_read(f, "nope"), h5turbo_error = function(e) conditionMessage(e))
stopifnot(is.character(msg), grepl("nope", msg), grepl("example.h5", msg))
""",
    4: """
stopifnot(identical(dim(x), c(12L, 8L)), isTRUE(is_sparse(x)))
two <- as.matrix(x[, c("AAACCTGAGAAGGCCT-1", "AAACCTGAGACAGACC-1")])
full <- as.matrix(h5t_read_sparse("pbmc3k.h5ad", "layers/counts"))
stopifnot(identical(unname(two), unname(full[, 1:2])))
stopifnot(identical(as(x, "dgCMatrix"), h5t_read_sparse("pbmc3k.h5ad", "layers/counts")))
""",
}


def _setup_r(tmp):
    make_h5ad(tmp / "pbmc3k.h5ad")
    make_10x(tmp / "filtered_feature_bc_matrix.h5", BARCODES)


# ----------------------------------------------------------------- the registry

SKIP_INSTALL = "installs or builds (pip / make / R CMD INSTALL): not run by a test"

SPECS: dict[tuple[str, int], Spec] = {
    # README.md
    ("README.md", 0): Spec(
        contains='f["matrix"].read(np.s_[:100], out=buf, threads=4)', run="python", setup=make_data_h5,
        epilogue=README_EPILOGUE, check=_same_as_expected),
    ("README.md", 1): Spec(contains="pip install .", run="sh-custom"),
    ("README.md", 2): Spec(contains="make demo", skip=SKIP_INSTALL + " (make demo writes an 810 MB file)"),
    # docs/architecture.md
    ("docs/architecture.md", 0): Spec(contains="h5turbo_core::prelude", skip="a diagram, not code"),
    # docs/bench.md
    ("docs/bench.md", 0): Spec(contains="h5turbo bench --preset quick", run="sh-custom"),
    # docs/c.md
    ("docs/c.md", 0): Spec(contains="make install-c", skip=SKIP_INSTALL + " (build/c is made by the C tests' fixture)"),
    ("docs/c.md", 1): Spec(contains="pkg-config --cflags --libs h5turbo", run="sh-custom"),
    ("docs/c.md", 2): Spec(contains="h5turbo_group_members(group, &names, &n)", run="c", setup=make_c_data_h5,
                           check=_c_members),
    ("docs/c.md", 3): Spec(contains="h5turbo_dataset_chunk_shape(ds, chunk, 32, &chunked)", run="c",
                           setup=make_c_data_h5, check=_c_dataset_info),
    ("docs/c.md", 4): Spec(contains="h5turbo_datatype_array_dims(dt, adims, 8, &arank)", run="c",
                           setup=make_c_data_h5, c_ds="/arr", check=_c_array_dims),
    ("docs/c.md", 5): Spec(contains="uint64_t start[2] = {10, 0}", run="c", setup=make_c_data_h5, c_ds="/matrix",
                           epilogue='for (int k = 0; k < 15; k++) printf("%.17g\\n", values[k]);\n'
                                    '/* Conventions: "data.h5: /matrix: buf_size is 16 bytes, the selection needs 800" */\n'
                                    'if (h5turbo_dataset_read(ds, NULL, NULL, NULL, values, 16, 0) == H5TURBO_E_INVALID)\n'
                                    '    printf("MSG %s\\n", h5turbo_last_error());',
                           check=_c_hyperslab),
    ("docs/c.md", 6): Spec(contains="h5turbo_dataset_read_strings(ds", run="c", setup=make_c_data_h5,
                           c_ds="/strings", check=_c_strings),
    ("docs/c.md", 7): Spec(contains="h5turbo_dataset_read_references(ds", run="c", setup=make_c_data_h5,
                           c_ds="/refs", check=_c_references),
    ("docs/c.md", 8): Spec(contains='h5turbo_object_open(file, "/table", &table)', run="c", setup=make_c_data_h5,
                           check=_c_table),
    ("docs/c.md", 9): Spec(contains='h5turbo_object_open(file, "/ragged", &ragged)', run="c", setup=make_c_data_h5,
                           check=_c_ragged),
    ("docs/c.md", 10): Spec(contains="h5turbo_dataset_reduce(ds, H5TURBO_SUM", run="c", setup=make_c_data_h5,
                            c_ds="/matrix",
                            epilogue='printf("%.17g %.17g %.17g\\n", total, column_means[0], variance);',
                            check=_c_reductions),
    ("docs/c.md", 11): Spec(contains='h5turbo_attribute_open(ds, "scale", &attr)', run="c", setup=make_c_data_h5,
                            c_ds="/matrix",
                            epilogue='{ h5turbo_attribute *a = NULL; double s = 0; h5turbo_attribute_open(ds, "scale", &a);'
                                     ' h5turbo_attribute_read(a, &s, sizeof s); printf("%g\\n", s);'
                                     ' h5turbo_attribute_close(a); }',
                            check=_c_attributes),
    ("docs/c.md", 12): Spec(contains="h5turbo_fast5_open(", run="c", setup=_setup_fast5, c_args=("runs/",),
                            check=_c_fast5),
    ("docs/c.md", 13): Spec(contains="h5turbo_dataset_dimension_scales(ds, 1", run="c", setup=make_c_data_h5,
                            c_ds="/matrix", check=_c_scales),
    # docs/cli.md
    ("docs/cli.md", 0): Spec(contains="h5turbo ls data.h5", run="sh-custom"),
    # docs/dask-xarray.md
    ("docs/dask-xarray.md", 0): Spec(
        contains='f["matrix"].to_dask((4096, -1))', run="python", setup=make_data_h5,
        prelude='import numpy as np\nimport h5turbo\nf = h5turbo.File("data.h5")\n', epilogue=DASK_EPILOGUE,
        check=lambda tmp, out, err: _last_line_checked(out)),
    ("docs/dask-xarray.md", 1): Spec(
        contains='engine="h5turbo", chunks={}', run="python", setup=make_climate_nc,
        prelude="import xarray as xr\n", epilogue=XARRAY_EPILOGUE_CHUNKS + XARRAY_EPILOGUE,
        needs_installed=True),
    # docs/formats.md
    ("docs/formats.md", 0): Spec(
        contains='h5turbo.read_h5ad("pbmc.h5ad")', run="python", setup=make_formats_single_cell,
        prelude="import h5turbo\n", epilogue=FORMATS_SC_EPILOGUE, check=lambda tmp, out, err: _last_line_checked(out)),
    ("docs/formats.md", 1): Spec(contains='h5turbo.read_fast5("runs/", threads=2)', run="python",
                                 setup=_setup_fast5, prelude="import h5turbo\n", epilogue=FAST5_LOOP_EPILOGUE,
                                 check=_check_fast5_loop),
    ("docs/formats.md", 2): Spec(contains='h5turbo.Fast5Index("runs/", threads=2)', run="python",
                                 setup=_setup_fast5, prelude=FAST5_INDEX_PRELUDE, epilogue=FAST5_INDEX_EPILOGUE,
                                 check=_check_fast5_index),
    ("docs/formats.md", 3): Spec(contains="GenotypeArray(f[\"calldata/GT\"], threads=2)", run="python",
                                 setup=make_calls_h5, prelude="import h5turbo\n", epilogue=GENOTYPE_EPILOGUE,
                                 check=lambda tmp, out, err: _last_line_checked(out)),
    # docs/r.md
    ("docs/r.md", 0): Spec(contains="make r", skip=SKIP_INSTALL),
    ("docs/r.md", 1): Spec(contains="R CMD INSTALL r/h5turbo", skip=SKIP_INSTALL),
    ("docs/r.md", 2): Spec(contains='h5t_read(f, "counts")', run="r"),
    ("docs/r.md", 3): Spec(contains='tryCatch(h5t_read(f, "nope")', run="r", after=(2,)),
    ("docs/r.md", 4): Spec(contains='H5TurboSparseMatrix("pbmc3k.h5ad", "layers/counts")', run="r", after=(2,)),
    # docs/reading.md
    ("docs/reading.md", 0): Spec(
        contains='for ref in f["refs"][()]:', run="python", setup=make_data_h5,
        prelude='import h5turbo\nf = h5turbo.File("data.h5")\n', epilogue=READING_EPILOGUE, check=_same_as_expected),
    # docs/reductions-and-sparse.md
    ("docs/reductions-and-sparse.md", 0): Spec(
        contains="ds.count_nonzero(axis=0, selection=np.s_[1000:2000])", run="python", setup=make_data_h5,
        prelude="import numpy as np\nimport h5turbo\n", epilogue=REDUCTIONS_EPILOGUE,
        check=lambda tmp, out, err: _last_line_checked(out)),
    # docs/writing.md
    ("docs/writing.md", 0): Spec(
        contains='h5turbo.write("out.h5", "matrix", x, compression="zstd"', run="python",
        prelude=WRITING_PRELUDE, epilogue=WRITING_EPILOGUE,
        replace=(("10**6", "10**3", "scaled down: a 10**6 x 2000 float32 dataset is 8 GB"),),
        check=lambda tmp, out, err: _last_line_checked(out)),
    ("docs/writing.md", 1): Spec(contains="h5turbo repack SRC DST", run="sh-custom"),
}

SH_CUSTOM = {
    ("README.md", 1): lambda block, spec, tmp, request: _install_extras(block),
    ("docs/bench.md", 0): _bench_options,
    ("docs/cli.md", 0): _cli_block,
    ("docs/writing.md", 1): _writing_synopsis,
    ("docs/c.md", 1): _c_link,
}


def _expected_failure(spec: Spec, done: subprocess.CompletedProcess) -> None:
    """Under an xfail: the documented failure raises DocBug (xfailed); anything else goes on
    to the ordinary assertions (and fails the test)."""
    if spec.xfail and done.returncode != 0 and spec.fails_with in done.stdout + done.stderr:
        raise DocBug(spec.fails_with)


def _last_line_checked(out: str) -> None:
    assert out.splitlines()[-1:] == ["checked"], out


def _blocks_of(doc: str) -> list[Block]:
    return [b for (d, _), b in sorted(BLOCKS.items(), key=lambda kv: kv[0][1]) if d == doc]


# ----------------------------------------------------------------- runners


def _python_source(block: Block, spec: Spec) -> str:
    code = _apply_replacements("".join(BLOCKS[(block.doc, i)].code for i in spec.after) + block.code, spec, block)
    return (textwrap.dedent(spec.prelude) + "\n" if spec.prelude else "") + code + textwrap.dedent(spec.epilogue)


def _apply_replacements(code: str, spec: Spec, block: Block) -> str:
    for old, new, _why in spec.replace:
        assert old in code, (old, block.where)
        code = code.replace(old, new)
    return code


def _run_python(block: Block, spec: Spec, tmp: Path) -> subprocess.CompletedProcess:
    script = tmp / "example.py"
    script.write_text(_python_source(block, spec))
    return subprocess.run([sys.executable, script.name], cwd=tmp, env=_env(), capture_output=True, text=True,
                          timeout=180)


@pytest.fixture(scope="session")
def c_library() -> Path:
    """build/c of `make c`: built if absent (skipped only when there is no toolchain)."""
    ready = (C_BUILD / "include" / "h5turbo.h").is_file() and (C_BUILD / "lib" / "libh5turbo.so").is_file() \
        and (C_BUILD / "lib" / "libh5turbo.a").is_file()
    if not ready:
        missing = [tool for tool in ("cargo", "cc", "make") if shutil.which(tool) is None]
        if missing:
            pytest.skip(f"build/c is absent and {', '.join(missing)} missing: cannot `make c`")
        done = subprocess.run(["make", "c"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, f"make c failed:\n{done.stderr[-3000:]}"
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    return C_BUILD


C_FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"]  # mk/c.mk's C_WARN


def _c_source(block: Block, spec: Spec) -> str:
    if "int main(" in block.code:
        assert not spec.epilogue
        return block.code
    open_ds = C_OPEN_DS.format(path=spec.c_ds) if spec.c_ds else ""
    close_ds = "    h5turbo_object_close(ds);" if spec.c_ds else ""
    return C_FRAGMENT_MAIN.format(open_ds=open_ds, block=block.code, epilogue=spec.epilogue, close_ds=close_ds)


def _run_c(block: Block, spec: Spec, tmp: Path, lib: Path) -> subprocess.CompletedProcess:
    (tmp / "example.c").write_text(_c_source(block, spec))
    build = subprocess.run(["cc", *C_FLAGS, f"-I{lib / 'include'}", "example.c", "-o", "example",
                            f"-L{lib / 'lib'}", "-lh5turbo", "-lm", f"-Wl,-rpath,{lib / 'lib'}"],
                           cwd=tmp, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, f"{block.where} does not compile:\n{build.stderr}"
    return subprocess.run(["./example", *spec.c_args], cwd=tmp, env=_env(), capture_output=True, text=True,
                          timeout=120)


# r.md: one Rscript runs every r block in order, each followed by its checks and a marker.


@pytest.fixture(scope="module")
def r_run(tmp_path_factory):
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("R is not installed (Rscript not found)")
    probe = subprocess.run([rscript, "-e", "quit(status = !requireNamespace('h5turbo', quietly = TRUE))"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip("the h5turbo R package is not installed (`make r`)")
    tmp = tmp_path_factory.mktemp("r-docs")
    _setup_r(tmp)
    parts = []
    for block in _blocks_of("docs/r.md"):
        if SPECS[(block.doc, block.index)].run != "r":
            continue
        parts.append(f'cat("<<START {block.index}>>\\n")\n{block.code}\n{R_EPILOGUES.get(block.index, "")}\n'
                     f'cat("<<OK {block.index}>>\\n")\n')
    (tmp / "docs.R").write_text("".join(parts))
    done = subprocess.run([rscript, "docs.R"], cwd=tmp, env=_env(), capture_output=True, text=True, timeout=300)
    return done


# ----------------------------------------------------------------- tests


def test_every_block_has_a_spec():
    """Every fenced block of the docs is listed in SPECS, and each entry still points at
    the block it was written for."""
    missing = [b.where for key, b in BLOCKS.items() if key not in SPECS]
    assert not missing, f"blocks without a spec (add them to SPECS): {missing}"
    stale = [key for key in SPECS if key not in BLOCKS]
    assert not stale, f"SPECS entries for blocks that no longer exist: {stale}"
    moved = [BLOCKS[key].where for key, spec in SPECS.items() if spec.contains not in BLOCKS[key].code]
    assert not moved, f"blocks that no longer hold the text their spec expects: {moved}"
    for key, spec in SPECS.items():
        lang = BLOCKS[key].lang
        if spec.run in ("python", "c", "r"):
            assert lang == spec.run, (key, lang)
        for i in spec.after:
            assert i < key[1] and BLOCKS[(key[0], i)].lang == lang, key


def _params():
    params = []
    for key in sorted(BLOCKS, key=lambda k: (k[0] != "README.md", k)):
        block = BLOCKS[key]
        spec = SPECS.get(key)
        base_id = f"{block.doc.removeprefix('docs/')}-block{block.index}-{block.lang or 'text'}"
        if spec is None:
            continue  # test_every_block_has_a_spec reports it
        for name, overrides in [("", {})] + list(spec.variants.items()):
            s = dataclasses.replace(spec, variants={}, **overrides)
            marks = []
            if s.skip:
                marks.append(pytest.mark.skip(reason=s.skip))
            if s.xfail:
                assert s.fails_with, key
                marks.append(pytest.mark.xfail(strict=True, raises=DocBug, reason=s.xfail))
            params.append(pytest.param(block, s, id=base_id + (f"[{name}]" if name else ""), marks=marks))
    return params


@pytest.mark.parametrize("block, spec", _params())
def test_doc_example(block: Block, spec: Spec, tmp_path: Path, request):
    assert spec.contains in block.code, f"{block.where}: the spec no longer matches the block"
    if spec.run == "r":
        done = request.getfixturevalue("r_run")
        out = done.stdout
        assert f"<<START {block.index}>>" in out, \
            f"{block.where} was not reached (an earlier block failed):\n{done.stderr[-3000:]}"
        section = out.split(f"<<START {block.index}>>", 1)[1]
        assert f"<<OK {block.index}>>" in section, \
            f"{block.where} failed or its checks did not pass:\n{section[-2000:]}\n{done.stderr[-3000:]}"
        return
    if spec.needs_installed:
        from importlib.metadata import PackageNotFoundError, distribution
        try:
            distribution("h5turbo")
        except PackageNotFoundError:
            pytest.skip("engine='h5turbo' is an entry point of the installed package; h5turbo is not installed "
                        "(source tree on PYTHONPATH)")
    if spec.setup is not None:
        spec.setup(tmp_path)
    if spec.run == "sh-custom":
        SH_CUSTOM[(block.doc, block.index)](block, spec, tmp_path, request)
        return
    if spec.run == "python":
        done = _run_python(block, spec, tmp_path)
    elif spec.run == "c":
        done = _run_c(block, spec, tmp_path, request.getfixturevalue("c_library"))
    else:
        raise AssertionError(f"{block.where}: no runner for {spec.run!r}")
    _expected_failure(spec, done)
    assert done.returncode == 0, \
        f"{block.where} exited {done.returncode}:\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    if spec.check is not None:
        spec.check(tmp_path, done.stdout, done.stderr)
