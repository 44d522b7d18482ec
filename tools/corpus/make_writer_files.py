#!/usr/bin/env python3
"""Write small real HDF5 files with the programs scientists use, for the corpus.

Run it with a Python environment that has the writers installed (NOT the project
venv), e.g.:

    python3 -m venv /tmp/writers-venv
    /tmp/writers-venv/bin/pip install pynwb astropy nexusformat silx hickle h5io \
        pandas tables keras "jax[cpu]"
    /tmp/writers-venv/bin/python tools/corpus/make_writer_files.py [--out DIR] [WRITER ...]

Writers: nwb astropy nexus silx hickle h5io pandas keras. (deepdish 0.3.7 installs
but cannot run on numpy 2: np.ComplexWarning, np.unicode_, np.object are gone.) Each one runs in
its own child process (PyTables and h5py bundle different libhdf5 builds). Each
writes into DIR/<folder>/ (default tests/data/corpus) and a SOURCES.md there listing
this script, the library versions and the date. A writer whose library is missing
is skipped with a message. Files are deterministic in content (fixed seeds), not
byte for byte (libraries stamp times).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "tests" / "data" / "corpus"
SCRIPT = "tools/corpus/make_writer_files.py"

# writer -> (folder, packages whose versions SOURCES.md records)
WRITERS = {
    "nwb": ("nwb", ["pynwb", "hdmf", "h5py"]),
    "astropy": ("astropy", ["astropy", "h5py"]),
    "nexus": ("nexus", ["nexusformat", "h5py"]),
    "silx": ("nexus", ["silx", "h5py"]),
    "hickle": ("hickle", ["hickle", "h5py"]),
    "h5io": ("h5io", ["h5io", "h5py", "scipy"]),
    "pandas": ("pandas", ["pandas", "tables", "blosc2"]),
    "keras": ("keras", ["keras", "jax", "h5py"]),
}


def _versions(packages):
    out = []
    for p in packages:
        try:
            out.append(f"{p} {metadata.version(p)}")
        except metadata.PackageNotFoundError:
            out.append(f"{p} (not installed)")
    return out


def _hdf5_versions(packages):
    if "tables" in packages:
        import tables
        return [f"libhdf5 {tables.hdf5_version} (PyTables')"]
    try:
        import h5py
        return [f"libhdf5 {h5py.version.hdf5_version} (h5py's)"]
    except ImportError:
        return []


# --------------------------------------------------------------------------- NWB

def write_nwb(d: Path) -> list[str]:
    import numpy as np
    from hdmf.backends.hdf5.h5_utils import H5DataIO
    from hdmf.common import DynamicTable, VectorData
    from pynwb import NWBHDF5IO, NWBFile, TimeSeries
    from pynwb.ecephys import ElectricalSeries
    from pynwb.file import Subject

    rng = np.random.default_rng(1)
    start = _dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=_dt.timezone.utc)

    def base_file(ident):
        nwb = NWBFile(session_description="h5turbo corpus: ecephys demo", identifier=ident,
                      session_start_time=start, experimenter=["Doe, Jane", "Roe, Ric"],
                      keywords=["corpus", "naïve ünïcode"], institution="nowhere")
        nwb.subject = Subject(subject_id="m1", species="Mus musculus", sex="F", age="P90D")
        return nwb

    # 1: everything (the cached spec is left out: it alone is ~270 KB)
    nwb = base_file("corpus-full")
    device = nwb.create_device(name="probe", description="a probe", manufacturer="acme")
    group = nwb.create_electrode_group(name="shank0", description="shank", location="CA1", device=device)
    nwb.add_electrode_column(name="label", description="a vlen string column")
    for i in range(4):
        nwb.add_electrode(group=group, location="CA1", x=float(i), y=0.0, z=-float(i), label=f"ch{i}")
    region = nwb.create_electrode_table_region(region=[0, 2, 3], description="three")
    data = rng.integers(-500, 500, size=(200, 3), dtype=np.int16)
    es = ElectricalSeries(name="raw", data=H5DataIO(data, compression="gzip", compression_opts=4,
                                                    chunks=(50, 3), shuffle=True, fillvalue=-1),
                          electrodes=region, rate=1000.0, conversion=0.195e-6, filtering="none")
    nwb.add_acquisition(es)
    ts = TimeSeries(name="speed", data=rng.random(50).astype(np.float32), unit="m/s",
                    timestamps=np.arange(50) / 10.0, comments="with timestamps")
    nwb.add_acquisition(ts)
    nwb.add_trial_column(name="correct", description="bool column")
    nwb.add_trial_column(name="stim", description="string column")
    for i in range(5):
        nwb.add_trial(start_time=i * 1.0, stop_time=i + 0.5, correct=bool(i % 2), stim=f"s{i}" * (i + 1))
    # TimeSeriesReferenceVectorData: compound (idx_start, count, object reference)
    nwb.add_epoch(start_time=0.0, stop_time=1.0, tags=["a", "b"], timeseries=[ts, es])
    nwb.add_epoch(start_time=1.0, stop_time=2.0, tags=["c"], timeseries=[ts])
    nwb.add_unit_column(name="quality", description="float")
    for i in range(3):
        nwb.add_unit(spike_times=np.sort(rng.random(i + 2) * 10), electrodes=[i], quality=0.5 * i,
                     obs_intervals=[[0.0, 5.0], [6.0, 10.0]][: i + 1])
    mod = nwb.create_processing_module(name="behavior", description="processed")
    tbl = DynamicTable(name="events", description="region-free dynamic table",
                       columns=[VectorData(name="t", description="time", data=[0.1, 0.2, 0.3]),
                                VectorData(name="what", description="label", data=["x", "yy", "zzz"])])
    mod.add(tbl)
    with NWBHDF5IO(str(d / "ecephys_full.nwb"), "w") as io:
        io.write(nwb, cache_spec=False)  # the cached core spec alone is ~270 KB

    # 2: small file without the cached spec, then 3: one that links its data to it
    nwb = base_file("corpus-base")
    nwb.add_acquisition(TimeSeries(name="signal", data=np.arange(100, dtype=np.float64).reshape(50, 2),
                                   unit="V", rate=20.0))
    with NWBHDF5IO(str(d / "base.nwb"), "w") as io:
        io.write(nwb, cache_spec=False)
    here = os.getcwd()
    os.chdir(d)  # relative external-link targets
    try:
        with NWBHDF5IO("base.nwb", "r") as rio:
            src = rio.read()
            linked = base_file("corpus-linked")
            linked.add_acquisition(TimeSeries(name="signal_link", data=src.acquisition["signal"].data,
                                              unit="V", rate=20.0))
            with NWBHDF5IO("linked.nwb", "w") as wio:
                wio.write(linked, link_data=True, cache_spec=False)
    finally:
        os.chdir(here)
    # 4: new-format file (v4 chunk indexes) and data written chunk by chunk from an iterator.
    # libver="v114", not "latest": with h5py's libhdf5 2.0, "latest" writes 2.0-format
    # messages that libhdf5 1.10.8 (the C tests' reference) reads but leaks memory on
    # (H5D__layout_oh_read), which fails the C comparison under AddressSanitizer.
    import h5py
    from hdmf.data_utils import DataChunkIterator
    nwb = base_file("corpus-latest")
    rows = (np.full(2, i, dtype=np.float32) * np.float32(0.5) for i in range(100))
    stream = H5DataIO(DataChunkIterator(data=rows, maxshape=(None, 2), buffer_size=16),
                      chunks=(16, 2), compression="gzip", maxshape=(None, 2))
    nwb.add_acquisition(TimeSeries(name="streamed", data=stream, unit="V", rate=50.0))
    nwb.add_acquisition(TimeSeries(name="fixed", unit="A", rate=5.0,
                                   data=H5DataIO(np.arange(64, dtype=np.uint16).reshape(32, 2),
                                                 chunks=(8, 2), compression="lzf")))
    with h5py.File(d / "ecephys_latest.nwb", "w", libver="v114") as h5f:
        with NWBHDF5IO(mode="w", file=h5f) as io:
            io.write(nwb, cache_spec=False)
    return ["ecephys_latest.nwb: h5py.File(libver='v114') handed to NWBHDF5IO: a TimeSeries "
            "written from a DataChunkIterator into an unlimited (extensible-array index) gzip "
            "dataset, a fixed-size lzf one (fixed-array index), v2 object headers",
            "ecephys_full.nwb: ElectricalSeries (gzip+shuffle chunks, fill value), electrodes "
            "table with DynamicTableRegion (object reference attribute 'table'), units with ragged "
            "VectorIndex columns, trials, epochs with a TimeSeriesReferenceVectorData compound "
            "(int, int, object reference), a region-free DynamicTable, soft/hard links "
            "(electrode group -> device); written without the cached spec to stay small",
            "base.nwb: small TimeSeries, no cached spec",
            "linked.nwb: TimeSeries whose data is an external link into base.nwb (link_data=True)"]


# --------------------------------------------------------------------------- astropy

def write_astropy(d: Path) -> list[str]:
    import numpy as np
    import astropy.units as u
    from astropy.coordinates import SkyCoord
    from astropy.table import MaskedColumn, QTable, Table
    from astropy.time import Time

    n = 6
    t = Table()
    t["i"] = np.arange(n, dtype=np.int32)
    t["f"] = np.linspace(0, 1, n)
    t["s"] = ["a", "bb", "ccc", "dddd", "é", "ff"]
    t["b"] = np.array([True, False] * 3)
    t["m"] = MaskedColumn([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], mask=[0, 1, 0, 0, 1, 0], fill_value=-99.0)
    t["mi"] = MaskedColumn(np.arange(n, dtype=np.int64), mask=[1, 0, 0, 0, 0, 1])
    t["v"] = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    t["i"].unit = "count"
    t["f"].description = "a float column"
    t.meta = {"observer": "corpus", "nested": {"a": 1, "b": [1, 2, 3]}, "pi": 3.14159}
    t.write(d / "table.hdf5", path="plain", serialize_meta=True)
    t.write(d / "table.hdf5", path="grp/compressed", serialize_meta=True, compression=True, append=True)
    t.write(d / "table.hdf5", path="nometa", serialize_meta=False, append=True)

    q = QTable()
    q["time"] = Time(["2020-01-01T00:00:00", "2021-06-15T12:30:00", "2022-12-31T23:59:59.5"], scale="utc")
    q["coord"] = SkyCoord(ra=[10.0, 20.0, 30.0] * u.deg, dec=[-5.0, 0.0, 5.0] * u.deg, frame="icrs")
    q["dist"] = [1.0, 2.0, 3.0] * u.pc
    q["flux"] = np.array([1e-3, 2e-3, 3e-3], dtype=np.float32) * u.Jy
    q.meta["comments"] = ["mixin columns", "time skycoord quantity"]
    q.write(d / "mixins.hdf5", path="data", serialize_meta=True)
    return ["table.hdf5: three tables (compound datasets) at /plain, /grp/compressed (gzip), "
            "/nometa; serialize_meta writes '<path>.__table_column_meta__' (YAML as vlen/fixed "
            "strings), masked int and float columns (mask columns), unicode column, 2-d column",
            "mixins.hdf5: QTable with Time, SkyCoord and Quantity mixin columns serialised"]


# --------------------------------------------------------------------------- NeXus

def write_nexus(d: Path) -> list[str]:
    import numpy as np
    from nexusformat.nexus import (NXdata, NXentry, NXfield, NXinstrument, NXlink, NXroot,
                                   NXsample, NXdetector)

    # the external target first
    ext = NXroot(NXentry(NXdata(NXfield(np.arange(12, dtype=np.float64).reshape(3, 4), name="counts"),
                                name="data"), name="entry"))
    ext.save(str(d / "external_target.nxs"), mode="w")

    x = NXfield(np.linspace(0, 1, 8), name="x", units="mm", long_name="position")
    y = NXfield(np.arange(5, dtype=np.int16), name="y", units="pixel")
    signal = NXfield((np.arange(40, dtype=np.float32).reshape(5, 8)), name="intensity",
                     units="counts", long_name="Intensity")
    data = NXdata(signal, [y, x], name="data")
    root = NXroot()
    root["entry"] = NXentry()
    e = root["entry"]
    e["data"] = data
    e["title"] = NXfield("corpus nexus demo")
    e["start_time"] = NXfield("2024-01-02T03:04:05Z")
    e["sample"] = NXsample()
    e["sample/temperature"] = NXfield(np.float64(40.0), units="K")
    e["sample/name"] = NXfield("silicon")
    e["instrument"] = NXinstrument()
    e["instrument/detector"] = NXdetector()
    det = e["instrument/detector"]
    det["data"] = NXfield(np.arange(24, dtype=np.uint32).reshape(2, 3, 4), compression="lzf")
    det["gz"] = NXfield(np.arange(1000, dtype=np.int64), compression="gzip", chunks=(100,))
    f = NXfield(np.zeros(3), name="attrs_demo")
    f.attrs["i8"] = np.int8(-8)
    f.attrs["u16"] = np.uint16(16)
    f.attrs["i32"] = np.int32(-32)
    f.attrs["u64"] = np.uint64(2 ** 63 + 5)
    f.attrs["f32"] = np.float32(1.5)
    f.attrs["f64"] = np.float64(2.25)
    f.attrs["c128"] = np.complex128(1 + 2j)
    f.attrs["boolean"] = np.bool_(True)
    f.attrs["string"] = "text"
    f.attrs["unicode"] = "ångström"
    f.attrs["bytes"] = np.bytes_(b"raw bytes")
    f.attrs["int_array"] = np.arange(4, dtype=np.int64)
    f.attrs["float_array2d"] = np.eye(2, dtype=np.float32)
    f.attrs["string_list"] = ["a", "bb", "ccc"]
    e["attrs_demo"] = f
    e["data_link"] = NXlink(target="/entry/sample/temperature")  # a hard link + @target
    e["soft_link"] = NXlink(target="/entry/data/intensity", soft=True)
    root["entry"].makelink(root["entry/sample/name"], name="sample_name")
    e["external"] = NXlink(target="/entry/data/counts", file="external_target.nxs")
    here = os.getcwd()
    os.chdir(d)
    try:
        root.save("nexusformat.nxs", mode="w")
    finally:
        os.chdir(here)
    return ["external_target.nxs: minimal NXroot/NXentry/NXdata (target of an external link)",
            "nexusformat.nxs: NXroot/NXentry/NXdata with signal/axes, NXsample, NXinstrument/NXdetector "
            "(lzf and gzip chunks), NXlink hard links (with @target) and a soft link, an external link to "
            "external_target.nxs, attributes of every numeric type, complex, bool, str, bytes, arrays"]


def write_silx(d: Path) -> list[str]:
    import h5py
    import numpy as np
    from silx.io.dictdump import dicttonx
    from silx.io.nxdata import save_NXdata

    tree = {
        "@NX_class": "NXroot",
        "@creator": "silx dicttonx",
        "entry": {
            "@NX_class": "NXentry",
            "title": "silx demo",
            "counts": np.arange(20, dtype=np.int32).reshape(4, 5),
            "counts@units": "counts",
            "counts@interpretation": "image",
            "scalar_f": np.float64(3.5),
            "flags": np.array([True, False, True]),
            "strings": np.array(["x", "yy", "zzz"]),
            "soft": h5py.SoftLink("/entry/counts"),
            "ext": h5py.ExternalLink("external_target.nxs", "/entry/data/counts"),
            "measurement": {"@NX_class": "NXcollection", "mca": np.linspace(0, 1, 16, dtype=np.float32)},
        },
    }
    dicttonx(tree, str(d / "silx_dicttonx.h5"), update_mode="replace")
    save_NXdata(str(d / "silx_nxdata.h5"), signal=np.arange(30, dtype=np.float64).reshape(5, 6),
                axes=[np.arange(5), np.linspace(0, 1, 6)], axes_names=["row", "col"],
                signal_name="img", title="silx save_NXdata", nxentry_name="entry0000",
                nxdata_name="plot", signal_errors=np.ones((5, 6)), interpretation="image")
    return ["silx_dicttonx.h5: silx.io.dictdump.dicttonx: NX_class attributes, @units, "
            "soft link, external link to external_target.nxs, bool and string arrays",
            "silx_nxdata.h5: silx.io.nxdata.save_NXdata: NXdata with signal, axes, errors, default attrs"]


# --------------------------------------------------------------------------- hickle, h5io, deepdish

def _python_objects():
    import numpy as np
    return {
        "int": 42, "float": 2.5, "complex": 1 - 3j, "bool": True, "none": None,
        "str": "hello ünïcode", "bytes": b"\x00\x01raw",
        "list": [1, 2.0, "three", [4, 5], None],
        "tuple": (1, 2, 3),
        "set": {1, 2, 3},
        "nested": {"a": {"b": {"c": np.arange(3)}}, "k": [np.ones(2), np.zeros((2, 2))]},
        "array_f32": np.linspace(0, 1, 10, dtype=np.float32),
        "array_i64_2d": np.arange(12, dtype=np.int64).reshape(3, 4),
        "array_c64": (np.arange(4) + 1j).astype(np.complex64),
        "array_bool": np.array([True, False, True]),
        "array_str": np.array(["a", "bc", "def"]),
        "masked": np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False]),
        "scalar_np": np.float64(7.25),
        "empty_list": [],
        "empty_array": np.zeros((0, 3)),
    }


def write_hickle(d: Path) -> list[str]:
    import hickle
    obj = _python_objects()
    hickle.dump(obj, str(d / "objects.hkl"), mode="w")
    hickle.dump(obj["array_i64_2d"], str(d / "array_gzip.hkl"), mode="w", compression="gzip")
    hickle.dump([obj["list"], obj["tuple"], {"x": 1}], str(d / "list_root.hkl"), mode="w")
    return ["objects.hkl: dict of Python objects (int, float, complex, bool, None, str, bytes, list, "
            "tuple, set, nested dicts, numpy arrays incl. complex/bool/str/masked/empty)",
            "array_gzip.hkl: one numpy array, gzip", "list_root.hkl: list at the root"]


def write_h5io(d: Path) -> list[str]:
    import h5io
    import numpy as np
    import scipy.sparse as sp
    skip = ("set", "masked", "bytes", "complex", "array_str")  # types h5io refuses
    obj = {k: v for k, v in _python_objects().items() if k not in skip}
    obj["sparse_csr"] = sp.csr_matrix(np.eye(4) * np.arange(4))
    obj["datetime"] = _dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=_dt.timezone.utc)
    h5io.write_hdf5(str(d / "objects.h5"), obj, title="h5io", overwrite=True)
    h5io.write_hdf5(str(d / "compressed_json.h5"), {"a": np.arange(100.0), "j": {"x": [1, 2]}},
                    title="mne", overwrite=True, compression=4, use_json=True)
    return ["objects.h5: h5io.write_hdf5 (MNE's writer) of dict/list/tuple/None/str/complex/"
            "numpy arrays, scipy CSR matrix, datetime; TITLE attributes on every node",
            "compressed_json.h5: compression=4 (gzip) and use_json=True"]


# --------------------------------------------------------------------------- pandas

def write_pandas(d: Path) -> list[str]:
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(2)
    n = 300
    df = pd.DataFrame({
        "a": np.arange(n, dtype=np.int64),
        "x": rng.random(n),
        "f32": rng.random(n).astype(np.float32),
        "s": [f"name{i % 17}" for i in range(n)],
        "flag": (np.arange(n) % 3 == 0),
        "when": pd.date_range("2024-01-01", periods=n, freq="h"),
        "cat": pd.Categorical([["lo", "mid", "hi"][i % 3] for i in range(n)]),
    })
    df.to_hdf(str(d / "table_zstd.h5"), key="table_zstd", format="table", data_columns=["a", "s"],
              complib="blosc:zstd", complevel=5, mode="w")
    path = str(d / "store.h5")
    df.iloc[:100].to_hdf(path, key="table_zlib", format="table", data_columns=True,
                         complib="zlib", complevel=3, index=False, mode="w")
    df.iloc[100:200].to_hdf(path, key="table_zlib", format="table", append=True, index=False)
    df.drop(columns=["cat"]).iloc[:50].to_hdf(path, key="fixed", format="fixed",
                                              complib="blosc:zstd", complevel=5)
    pd.Series(rng.random(40), name="ser").to_hdf(path, key="series_table", format="table",
                                                  complib="blosc:lz4", complevel=1, index=False)
    return ["table_zstd.h5: pandas to_hdf(format='table', data_columns=['a', 's'], complib='blosc:zstd') "
            "through PyTables: compound table, PyTables indexes of the data columns (_i_table), "
            "categorical (codes + meta), datetimes, strings",
            "store.h5: format='table' with zlib and data_columns=True, appended once, no index; "
            "format='fixed' with blosc:zstd (block arrays, a pickled-object VLArray); a Series "
            "table with blosc:lz4 (filter 32001)"]


# --------------------------------------------------------------------------- keras

def write_keras(d: Path) -> list[str]:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
    import numpy as np
    keras.utils.set_random_seed(3)
    model = keras.Sequential([
        keras.Input((8,)),
        keras.layers.Dense(4, activation="relu", name="dense_a"),
        keras.layers.BatchNormalization(name="bn"),
        keras.layers.Dense(2, name="head"),
    ], name="tiny")
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 8), np.float32), np.zeros((4, 2), np.float32), epochs=1, verbose=0)
    model.save_weights(str(d / "tiny.weights.h5"))
    model.save(str(d / "tiny_legacy.h5"))  # legacy HDF5 format (model config JSON attribute)
    return ["tiny.weights.h5: Keras 3 save_weights (layers/<name>/vars/<i>, optimizer vars)",
            "tiny_legacy.h5: Keras 3 model.save legacy .h5 (model_config JSON attribute, "
            "model_weights with weight_names attributes, optimizer_weights)"]


FUNCS = {"nwb": write_nwb, "astropy": write_astropy, "nexus": write_nexus, "silx": write_silx,
         "hickle": write_hickle, "h5io": write_h5io,
         "pandas": write_pandas, "keras": write_keras}


def _child(writer: str, out: Path) -> int:
    folder, packages = WRITERS[writer]
    d = out / folder
    d.mkdir(parents=True, exist_ok=True)
    descriptions = FUNCS[writer](d)
    section = [f"## {writer}", "",
               f"Written {_dt.date.today().isoformat()} by `{SCRIPT} {writer}` "
               f"(Python {sys.version.split()[0]}; {', '.join(_versions(packages) + _hdf5_versions(packages))}).", ""]
    section += [f"- {line}" for line in descriptions] + [""]
    (d / f".SOURCES.{writer}.part").write_text("\n".join(section))
    return 0


def _old_sections(path: Path) -> dict:
    """The '## <writer>' sections of an existing SOURCES.md, by writer."""
    sections, current = {}, None
    if path.is_file():
        for line in path.read_text().splitlines(keepends=True):
            if line.startswith("## "):
                current = line[3:].strip()
                sections[current] = ""
            if current is not None:
                sections[current] += line
    return sections


def _write_sources(out: Path) -> None:
    """One SOURCES.md per folder; a writer not rerun keeps its section."""
    for folder in sorted({f for f, _ in WRITERS.values()}):
        d = out / folder
        parts = {p.name.split(".")[2]: p for p in d.glob(".SOURCES.*.part")} if d.is_dir() else {}
        if not parts:
            continue
        sections = _old_sections(d / "SOURCES.md")
        for writer, p in parts.items():
            sections[writer] = p.read_text()
            p.unlink()
        writers = [w for w, (f, _) in WRITERS.items() if f == folder]
        text = [f"# {folder}/: files written by the programs themselves", "",
                "Generated (not collected) by the project's own script; rerun with",
                f"`python {SCRIPT} --out tests/data/corpus {' '.join(writers)}` "
                "in a venv that has the writers (see the script's docstring). Licence: the files "
                "are the project's own test data.", ""]
        text += [sections[w].rstrip("\n") + "\n" for w in writers if w in sections]
        (d / "SOURCES.md").write_text("\n".join(text))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("writers", nargs="*", help=f"default: all of {', '.join(WRITERS)}")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args.child, args.out)
    failed = []
    for writer in args.writers or list(WRITERS):
        r = subprocess.run([sys.executable, __file__, "--out", str(args.out), "--child", writer])
        if r.returncode:
            print(f"writer {writer} failed or is not installed (status {r.returncode})", file=sys.stderr)
            failed.append(writer)
    _write_sources(args.out)
    for p in sorted(args.out.rglob("*")):
        if p.is_file() and p.stat().st_size > 200_000 and p.suffix != ".md":
            print(f"warning: {p} is {p.stat().st_size} bytes (> 200 KB)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
