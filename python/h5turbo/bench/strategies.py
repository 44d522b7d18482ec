"""Storage strategies: how each library writes the matrix, opens it and runs the
operations of an access pattern. A strategy whose library is missing, or that cannot
store a layout, says why (`missing()`, `unsupported(layout)`) and is skipped."""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from .patterns import Op, Read, Sums
from .source import Source

DATASET = "matrix"


def dataset_name(source) -> str:
    """The dataset to read: "matrix" in generated stores, the user's in --file runs."""
    return getattr(source, "dataset", DATASET)


@dataclass(frozen=True)
class Layout:
    """How the matrix is stored: chunk shape, codec, level, shuffle. `kind` is
    "chunked" for HDF5 and zarr; the other strategies have layouts of their own."""
    chunks: tuple = (100, 100)
    codec: str = "none"  # none, gzip, lzf, zstd, lz4, blosc-lz4, blosc-zstd, blosc-blosclz, ...
    level: Optional[int] = None
    shuffle: bool = False
    kind: str = "chunked"

    @property
    def name(self) -> str:
        if self.kind != "chunked":
            return self.kind + ("" if self.codec == "none" else f"-{self.codec}{self.level or ''}")
        codec = self.codec + (str(self.level) if self.level is not None else "")
        return f"c{self.chunks[0]}x{self.chunks[1]}-{codec}" + ("-shuffle" if self.shuffle else "")

    @property
    def blosc_cname(self) -> Optional[str]:
        return self.codec.split("-", 1)[1] if self.codec.startswith("blosc-") else None


CODECS = ["none", "gzip", "lzf", "zstd", "lz4", "blosc-lz4", "blosc-lz4hc", "blosc-zstd", "blosc-zlib",
          "blosc-blosclz"]


def parse_layout(text: str) -> Layout:
    """``100x100:gzip3``, ``1x20000:zstd:shuffle``, ``512x512:blosc-lz4-5:shuffle``, ``64x64`` (no codec)."""
    parts = text.split(":")
    try:
        chunks = tuple(int(x) for x in parts[0].lower().split("x"))
    except ValueError:
        raise ValueError(f"bad layout {text!r}: chunk shape like 100x100") from None
    if len(chunks) != 2 or min(chunks) < 1:
        raise ValueError(f"bad layout {text!r}: a chunk shape of two positive sizes")
    codec, level = "none", None
    if len(parts) > 1 and parts[1]:
        codec, level = _codec_level(parts[1], text)
    shuffle = len(parts) > 2 and parts[2] == "shuffle"
    if len(parts) > 2 and parts[2] not in ("shuffle", "noshuffle"):
        raise ValueError(f"bad layout {text!r}: third part is shuffle or noshuffle")
    return Layout(chunks, codec, level, shuffle)


def _codec_level(text: str, whole: str) -> tuple[str, Optional[int]]:
    base = text.rstrip("0123456789").rstrip("-")
    digits = text[len(base):].lstrip("-")
    if base not in CODECS:
        raise ValueError(f"bad layout {whole!r}: codec one of {', '.join(CODECS)}")
    level = int(digits) if digits else None
    if base == "gzip" and level is not None and not 1 <= level <= 9:
        raise ValueError(f"bad layout {whole!r}: gzip level 1..9")
    return base, level


class Unsupported(Exception):
    """This strategy cannot store or read this layout (the row is skipped with the reason)."""


# ---------------------------------------------------------------------- base classes


class Reader:
    """Runs the operations of a pattern on an opened store."""

    def __init__(self, path: Path, source: Source, layout: Layout, threads: int):
        self.path, self.source, self.layout, self.threads = path, source, layout, threads

    def run(self, op: Op):
        if isinstance(op, Read):
            return self.read(op.rows, op.cols)
        return self.sums(op)

    def read(self, rows, cols) -> np.ndarray:
        raise NotImplementedError

    def sums(self, op: Sums) -> np.ndarray:
        """Chunk-aligned sums: read whole-chunk blocks along the other axis, sum each."""
        full = slice(0, self.source.rows if op.axis == 0 else self.source.cols)
        parts = []
        for a, b in op.blocks:
            block = self.read(full, slice(a, b)) if op.axis == 0 else self.read(slice(a, b), full)
            parts.append(block.sum(axis=op.axis))
        return np.concatenate(parts)

    def close(self) -> None:
        pass


class Strategy:
    name = ""
    family = ""        # strategies of one family read the same store
    modules: tuple = ()  # what must import for it to run
    thread_mode = "threads"  # "threads", "processes" or "fixed" (the library decides)
    fixed_note = ""
    # the threads a "fixed" strategy reads on, where known (1: it runs on one thread);
    # None: the library's own pool, reported as the core count
    fixed_threads: Optional[int] = None
    writes = True
    parallel_write = False  # writes on all cores (the row's thread count says so)
    suffix = ""

    def missing(self) -> Optional[str]:
        for mod in self.modules:
            try:
                __import__(mod)
            except ImportError as exc:
                return f"{mod} not installed ({exc})"
        return None

    def layouts(self, chunked: list[Layout]) -> list[Layout]:
        return chunked

    def unsupported(self, layout: Layout, source: Source) -> Optional[str]:
        return None

    def store_path(self, folder: Path, layout: Layout) -> Path:
        return folder / f"{self.family}-{layout.name}{self.suffix}"

    def write(self, path: Path, source: Source, layout: Layout) -> None:
        raise NotImplementedError

    def open(self, path: Path, source: Source, layout: Layout, threads: int) -> Reader:
        raise NotImplementedError


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def _write_step(source: Source, layout: Layout) -> int:
    """Rows per write: whole chunks, about 64 MiB at a time (bounded memory)."""
    row_bytes = source.cols * source.dtype.itemsize
    chunk = layout.chunks[0] if layout.kind == "chunked" else 1
    return max(chunk, (64 << 20) // max(1, row_bytes) // chunk * chunk)


# ---------------------------------------------------------------------- HDF5


def h5py_filters(layout: Layout) -> dict:
    if layout.codec == "none":
        return {"shuffle": layout.shuffle} if layout.shuffle else {}
    if layout.codec == "gzip":
        return dict(compression="gzip", compression_opts=layout.level or 4, shuffle=layout.shuffle)
    if layout.codec == "lzf":
        return dict(compression="lzf", shuffle=layout.shuffle)
    import hdf5plugin
    if layout.codec == "zstd":
        return dict(hdf5plugin.Zstd(clevel=layout.level or 3), shuffle=layout.shuffle)
    if layout.codec == "lz4":
        return dict(hdf5plugin.LZ4(), shuffle=layout.shuffle)
    mode = hdf5plugin.Blosc.SHUFFLE if layout.shuffle else hdf5plugin.Blosc.NOSHUFFLE
    return dict(hdf5plugin.Blosc(cname=layout.blosc_cname, clevel=5 if layout.level is None else layout.level,
                                 shuffle=mode))


class H5py(Strategy):
    name, family, modules, suffix = "h5py", "hdf5", ("h5py", "hdf5plugin"), ".h5"
    thread_mode = "processes"

    def write(self, path, source, layout):
        import h5py
        with h5py.File(path, "w") as f:
            ds = f.create_dataset(DATASET, shape=source.shape, dtype=source.dtype, chunks=layout.chunks,
                                  **h5py_filters(layout))
            for start, block in source.blocks(_write_step(source, layout)):
                ds[start:start + len(block)] = block

    def open(self, path, source, layout, threads):
        return H5pyReader(path, source, layout, threads)


class H5pyReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import h5py
        import hdf5plugin  # noqa: F401  registers the filters with libhdf5
        self.file = h5py.File(self.path, "r")
        self.ds = self.file[dataset_name(self.source)]

    def read(self, rows, cols):
        if isinstance(rows, np.ndarray) and isinstance(cols, np.ndarray):
            return self.ds[rows][:, cols]
        return self.ds[rows, cols]

    def close(self):
        self.file.close()


class H5turbo(Strategy):
    name, family, modules, suffix = "h5turbo", "hdf5", ("h5turbo", "h5py"), ".h5"

    parallel_write = True

    def write(self, path, source, layout):
        """Through ``h5turbo.write`` (all cores) once it exists; until then the
        strategy's write row is skipped and the file is written by h5py."""
        import h5turbo
        if not hasattr(h5turbo, "write"):
            raise Unsupported("h5turbo.write not available yet (the file is written with h5py)")
        compression = {"none": None}.get(layout.codec, layout.codec)
        if layout.blosc_cname:
            compression = f"blosc:{layout.blosc_cname}"
        blocks = (block for _, block in source.blocks(_write_step(source, layout)))
        h5turbo.write(str(path), DATASET, blocks, chunks=layout.chunks, compression=compression, level=layout.level,
                      shuffle=layout.shuffle, mode="w", shape=source.shape, dtype=source.dtype)

    def open(self, path, source, layout, threads):
        return H5turboReader(path, source, layout, threads)


class H5turboReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import h5turbo
        self.file = h5turbo.File(self.path)
        self.ds = self.file[dataset_name(self.source)]

    def read(self, rows, cols):
        if isinstance(rows, np.ndarray) and isinstance(cols, np.ndarray):
            return self.ds.read((rows, slice(None)), threads=self.threads)[:, cols]
        return self.ds.read((rows, cols), threads=self.threads)

    def sums(self, op):
        return self.ds.sum(axis=op.axis, threads=self.threads)  # its own chunk-parallel reduction

    def close(self):
        self.file.close()


class Hidefix(Strategy):
    name, family, modules, suffix = "hidefix", "hdf5", ("hidefix",), ".h5"
    thread_mode, writes = "fixed", False
    fixed_note = "hidefix decodes on rayon's global pool (all cores); not settable per call"

    def unsupported(self, layout, source):
        if layout.codec not in ("none", "gzip"):
            return f"hidefix reads deflate (+shuffle) only, not {layout.codec}"
        if source.rows % layout.chunks[0] or source.cols % layout.chunks[1]:
            # hidefix 0.12 returns wrong values and corrupts the heap ("corrupted size vs.
            # prev_size", then an abort) on reads that end in a partial edge chunk
            return "shape not a multiple of the chunk shape: hidefix 0.12 corrupts memory on partial edge chunks"
        return None

    def open(self, path, source, layout, threads):
        return HidefixReader(path, source, layout, threads)


class HidefixReader(Reader):
    """hidefix takes slices only: an index list becomes one slice per index."""

    def __init__(self, *args):
        super().__init__(*args)
        import hidefix
        self.ds = hidefix.Index(str(self.path)).dataset(dataset_name(self.source).lstrip("/"))

    def _slice(self, rows: slice, cols: slice):
        # hidefix returns a flat array when a dimension has length one: give it its shape back
        got = np.asarray(self.ds[rows.start:rows.stop, cols.start:cols.stop])
        return got.reshape(rows.stop - rows.start, cols.stop - cols.start)

    def read(self, rows, cols):
        if isinstance(rows, np.ndarray):
            cs = cols if isinstance(cols, slice) else slice(0, self.source.cols)
            out = np.concatenate([self._slice(slice(r, r + 1), cs) for r in rows])
            return out if isinstance(cols, slice) else out[:, cols]
        if isinstance(cols, np.ndarray):
            return np.concatenate([self._slice(rows, slice(c, c + 1)) for c in cols], axis=1)
        return self._slice(rows, cols)


# ---------------------------------------------------------------------- zarr v3


def zarr_compressors(layout: Layout, itemsize: int):
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec
    shuffle = []
    if layout.shuffle and not layout.blosc_cname:
        shuffle = [_numcodecs("Shuffle")(elementsize=itemsize)]
    if layout.codec == "none":
        return shuffle or None
    if layout.codec == "gzip":
        return shuffle + [GzipCodec(level=layout.level or 4)]
    if layout.codec == "zstd":
        return shuffle + [ZstdCodec(level=layout.level or 3)]
    if layout.codec == "lz4":
        return shuffle + [_numcodecs("LZ4")(acceleration=1)]
    if layout.blosc_cname:
        return [BloscCodec(cname=layout.blosc_cname, clevel=5 if layout.level is None else layout.level,
                           shuffle="shuffle" if layout.shuffle else "noshuffle", typesize=itemsize)]
    raise Unsupported(f"zarr v3 has no {layout.codec} codec")


def _numcodecs(name: str):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numcodecs' zarr3 wrappers warn that they are unstable
        import zarr.codecs.numcodecs as nc
    return getattr(nc, name)


class ZarrPython(Strategy):
    name, family, modules, suffix = "zarr-python", "zarr", ("zarr",), ".zarr"
    thread_mode = "fixed"
    fixed_note = "zarr-python runs its codecs through asyncio (default concurrency)"
    config: dict = {}

    def unsupported(self, layout, source):
        if layout.codec == "lzf":
            return "zarr v3 has no lzf codec"
        return None

    def write(self, path, source, layout):
        import zarr
        with zarr.config.set(self.config):
            arr = zarr.create_array(store=str(path), shape=source.shape, chunks=layout.chunks,
                                    dtype=source.dtype, compressors=zarr_compressors(layout, source.dtype.itemsize),
                                    zarr_format=3, overwrite=True)
            for start, block in source.blocks(_write_step(source, layout)):
                arr[start:start + len(block)] = block

    def open(self, path, source, layout, threads):
        return ZarrReader(path, source, layout, threads, self.config)


class Zarrs(ZarrPython):
    name, modules = "zarr-python+zarrs", ("zarr", "zarrs")
    thread_mode, fixed_note = "threads", ""

    @property
    def config(self):
        # strict: a codec zarrs cannot decode is an error, not a silent fallback to zarr-python
        return {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}

    def open(self, path, source, layout, threads):
        return ZarrReader(path, source, layout, threads, dict(self.config, **{"threading.max_workers": threads}))


class ZarrReader(Reader):
    def __init__(self, path, source, layout, threads, config):
        super().__init__(path, source, layout, threads)
        import zarr
        self.config = config
        with zarr.config.set(config):  # the codec pipeline is chosen when the array is opened
            self.arr = zarr.open_array(str(path), mode="r")

    def read(self, rows, cols):
        import zarr
        with zarr.config.set(self.config):
            if isinstance(rows, np.ndarray) or isinstance(cols, np.ndarray):
                return self.arr.oindex[rows, cols]
            return self.arr[rows, cols]


def tensorstore_codecs(layout: Layout, itemsize: int) -> list:
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if layout.shuffle and not layout.blosc_cname:
        raise Unsupported("tensorstore's zarr3 has no separate shuffle codec")
    if layout.codec == "gzip":
        codecs.append({"name": "gzip", "configuration": {"level": layout.level or 4}})
    elif layout.codec == "zstd":
        codecs.append({"name": "zstd", "configuration": {"level": layout.level or 3, "checksum": False}})
    elif layout.blosc_cname:
        codecs.append({"name": "blosc", "configuration": {
            "cname": layout.blosc_cname, "clevel": 5 if layout.level is None else layout.level,
            "shuffle": "shuffle" if layout.shuffle else "noshuffle", "typesize": itemsize, "blocksize": 0}})
    elif layout.codec != "none":
        raise Unsupported(f"tensorstore's zarr3 has no {layout.codec} codec")
    return codecs


class Tensorstore(Strategy):
    name, family, modules, suffix = "tensorstore", "zarr", ("tensorstore",), ".zarr"

    def unsupported(self, layout, source):
        try:
            tensorstore_codecs(layout, source.dtype.itemsize)
        except Unsupported as exc:
            return str(exc)
        return None

    def store_path(self, folder, layout):
        return folder / f"zarr-{layout.name}.zarr"

    def write(self, path, source, layout):
        import tensorstore as ts
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
                "metadata": {"shape": list(source.shape), "data_type": source.dtype.name,
                             "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(layout.chunks)}},
                             "codecs": tensorstore_codecs(layout, source.dtype.itemsize)},
                "create": True, "delete_existing": True}
        arr = ts.open(spec).result()
        for start, block in source.blocks(_write_step(source, layout)):
            arr[start:start + len(block)].write(block).result()

    def open(self, path, source, layout, threads):
        return TensorstoreReader(path, source, layout, threads)


class TensorstoreReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import tensorstore as ts
        ctx = ts.Context({"data_copy_concurrency": {"limit": self.threads},
                          "file_io_concurrency": {"limit": max(self.threads, 1)}})
        self.arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(self.path)}},
                           read=True, context=ctx).result()

    def read(self, rows, cols):
        if isinstance(rows, np.ndarray) or isinstance(cols, np.ndarray):
            return self.arr.oindex[rows, cols].read().result()
        return self.arr[rows, cols].read().result()


# ---------------------------------------------------------------------- raw, SQLite, Parquet


class Memmap(Strategy):
    name, family, modules, suffix = "numpy-memmap", "raw", ("numpy",), ".bin"
    thread_mode, fixed_note = "fixed", "numpy indexing of a memory map runs on one thread"
    fixed_threads = 1

    def layouts(self, chunked):
        return [Layout((1, 0), kind="raw")]

    def write(self, path, source, layout):
        with open(path, "wb") as f:
            for _, block in source.blocks(_write_step(source, layout)):
                block.tofile(f)

    def open(self, path, source, layout, threads):
        return MemmapReader(path, source, layout, threads)


class MemmapReader(Reader):
    """Maps the file for each read: a mapping held open keeps its pages in the page
    cache (posix_fadvise cannot evict mapped pages), which would make cold runs warm."""

    def read(self, rows, cols):
        mm = np.memmap(self.path, dtype=self.source.dtype, mode="r", shape=self.source.shape)
        if isinstance(rows, np.ndarray) and isinstance(cols, np.ndarray):
            return np.array(mm[rows][:, cols])
        return np.array(mm[rows, cols])  # a copy: the mapping goes when `mm` does


class Sqlite(Strategy):
    """One table row per matrix row (a blob, keyed by row number), or one per cell
    (row, col, value; primary key (row, col) and an index on (col, row))."""
    name, family, modules, suffix = "sqlite", "sqlite", ("sqlite3",), ".sqlite"
    thread_mode, fixed_note = "fixed", "one connection, one thread"
    fixed_threads = 1

    def layouts(self, chunked):
        return [Layout((1, 0), kind="sqlite-rows"), Layout((1, 1), kind="sqlite-cells")]

    def unsupported(self, layout, source):
        if layout.kind == "sqlite-cells" and source.rows * source.cols > 20_000_000:
            return "more than 20 million cells: one table row per cell would take too long to write"
        return None

    def write(self, path, source, layout):
        remove(path)
        con = sqlite3.connect(path)
        try:
            if layout.kind == "sqlite-rows":
                con.execute("CREATE TABLE m (r INTEGER PRIMARY KEY, v BLOB)")
                for start, block in source.blocks(_write_step(source, layout)):
                    con.executemany("INSERT INTO m VALUES (?, ?)",
                                    ((start + i, row.tobytes()) for i, row in enumerate(block)))
            else:
                con.execute("CREATE TABLE c (r INTEGER, c INTEGER, v, PRIMARY KEY (r, c)) WITHOUT ROWID")
                cols = np.arange(source.cols)
                for start, block in source.blocks(1 << 16):
                    for i, row in enumerate(block):
                        con.executemany("INSERT INTO c VALUES (?, ?, ?)",
                                        zip([start + i] * source.cols, cols.tolist(), row.tolist()))
                con.execute("CREATE INDEX c_by_col ON c (c, r)")
            con.commit()
        finally:
            con.close()

    def open(self, path, source, layout, threads):
        cls = SqliteRowsReader if layout.kind == "sqlite-rows" else SqliteCellsReader
        return cls(path, source, layout, threads)


def _where(column: str, index) -> tuple[str, list]:
    if isinstance(index, slice):
        return f"{column} >= ? AND {column} < ?", [index.start, index.stop]
    return f"{column} IN ({','.join('?' * len(index))})", [int(i) for i in index]


class SqliteRowsReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        self.con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)

    def read(self, rows, cols):
        where, params = _where("r", rows)
        blobs = [b for (b,) in self.con.execute(f"SELECT v FROM m WHERE {where} ORDER BY r", params)]
        whole = np.frombuffer(b"".join(blobs), dtype=self.source.dtype).reshape(len(blobs), self.source.cols)
        return np.ascontiguousarray(whole[:, cols])

    def close(self):
        self.con.close()


class SqliteCellsReader(SqliteRowsReader):
    def read(self, rows, cols):
        rw, rp = _where("r", rows)
        cw, cp = _where("c", cols)
        got = self.con.execute(f"SELECT r, c, v FROM c WHERE {rw} AND {cw}", rp + cp).fetchall()
        row_ids = np.arange(self.source.rows)[rows]
        col_ids = np.arange(self.source.cols)[cols]
        out = np.zeros((len(row_ids), len(col_ids)), self.source.dtype)
        if got:
            r, c, v = zip(*got)
            out[np.searchsorted(row_ids, r), np.searchsorted(col_ids, c)] = v
        return out

    def sums(self, op):
        """SQL's own GROUP BY: the natural way to sum in a database."""
        key = "c" if op.axis == 0 else "r"
        got = self.con.execute(f"SELECT {key}, SUM(v) FROM c GROUP BY {key} ORDER BY {key}").fetchall()
        acc = np.float64 if np.issubdtype(self.source.dtype, np.floating) else np.int64
        return np.array([s for _, s in got], dtype=acc)


class Parquet(Strategy):
    """One Parquet column per matrix column; row groups of the layout's chunk rows, at
    least MIN_ROW_GROUP (Parquet's per-group overhead makes tiny groups pointless)."""
    name, family, modules, suffix = "parquet", "parquet", ("pyarrow",), ".parquet"
    MAX_COLUMNS = 2000
    MIN_ROW_GROUP = 1024

    def layouts(self, chunked):
        seen, out = set(), []
        for lay in chunked:
            codec = lay.codec if lay.codec in ("none", "gzip", "zstd", "lz4") else "zstd"
            group = max(lay.chunks[0], self.MIN_ROW_GROUP)
            key = (group, codec, lay.level if codec == lay.codec else None)
            if key not in seen:
                seen.add(key)
                out.append(Layout((group, 0), codec, key[2], kind=f"parquet-rg{group}"))
        return out

    def unsupported(self, layout, source):
        if source.cols > self.MAX_COLUMNS:
            return f"{source.cols} columns: one Parquet column per matrix column is impractical past {self.MAX_COLUMNS}"
        return None

    def write(self, path, source, layout):
        import pyarrow as pa
        import pyarrow.parquet as pq
        names = [f"c{j}" for j in range(source.cols)]
        codec = {"none": "NONE"}.get(layout.codec, layout.codec)
        with pq.ParquetWriter(path, pa.schema([(n, pa.from_numpy_dtype(source.dtype)) for n in names]),
                              compression=codec, compression_level=layout.level) as writer:
            for _, block in source.blocks(_write_step(source, layout)):
                writer.write_table(pa.table(dict(zip(names, block.T))), row_group_size=layout.chunks[0])

    def open(self, path, source, layout, threads):
        return ParquetReader(path, source, layout, threads)


class ParquetReader(Reader):
    def __init__(self, *args):
        super().__init__(*args)
        import pyarrow as pa
        import pyarrow.parquet as pq
        pa.set_cpu_count(self.threads)
        self.file = pq.ParquetFile(self.path)
        sizes = [self.file.metadata.row_group(i).num_rows for i in range(self.file.num_row_groups)]
        self.starts = np.concatenate([[0], np.cumsum(sizes)])

    def read(self, rows, cols):
        row_ids = np.arange(self.source.rows)[rows]
        col_ids = np.arange(self.source.cols)[cols]
        if len(row_ids) == 0:
            return np.empty((0, len(col_ids)), self.source.dtype)
        groups = np.unique(np.searchsorted(self.starts, row_ids, side="right") - 1)
        table = self.file.read_row_groups(groups.tolist(), columns=[f"c{j}" for j in col_ids],
                                          use_threads=self.threads > 1)
        block = np.column_stack([table.column(i).to_numpy() for i in range(table.num_columns)])
        # rows of the groups read, in order: map each wanted row to its place among them
        offsets = np.concatenate([np.arange(self.starts[g], self.starts[g + 1]) for g in groups])
        return np.ascontiguousarray(block[np.searchsorted(offsets, row_ids)])


ALL: list[Strategy] = [H5turbo(), H5py(), Hidefix(), ZarrPython(), Zarrs(), Tensorstore(), Memmap(), Sqlite(),
                       Parquet()]
from .sparse import SPARSE  # noqa: E402  (sparse.py builds on the classes above)

BY_NAME = {s.name: s for s in ALL + SPARSE}


def writer_of(family: str) -> Strategy:
    """The strategy that writes the shared store of a family (read by the others)."""
    return {"hdf5": BY_NAME["h5py"], "zarr": BY_NAME["zarr-python"]}.get(family) or next(
        s for s in BY_NAME.values() if s.family == family)


# ---------------------------------------------------------------------- processes (h5py)


def split_ops(ops: list, n: int) -> list[tuple[int, int, Op]]:
    """Work items (op index, part index, op part) for n processes: whole operations
    when there are enough of them, else each operation split into n parts."""
    if len(ops) >= n:
        return [(i, 0, op) for i, op in enumerate(ops)]
    items = []
    for i, op in enumerate(ops):
        if isinstance(op, Sums):
            for p, blocks in enumerate(np.array_split(np.arange(len(op.blocks)), n)):
                if len(blocks):
                    items.append((i, p, Sums(op.axis, tuple(op.blocks[j] for j in blocks))))
        elif isinstance(op.rows, slice):
            bounds = np.linspace(op.rows.start, op.rows.stop, n + 1).astype(int)
            items += [(i, p, Read(slice(int(a), int(b)), op.cols)) for p, (a, b) in enumerate(zip(bounds, bounds[1:]))
                      if b > a]
        else:
            items += [(i, p, Read(part, op.cols)) for p, part in enumerate(np.array_split(op.rows, n)) if len(part)]
    return items


def _process_worker(strategy: Strategy, path, source, layout, items, conn) -> None:
    try:
        reader = strategy.open(path, source, layout, 1)
        conn.send([(i, p, reader.run(op)) for i, p, op in items])
        reader.close()
    except Exception as exc:  # the parent re-raises it: the row is marked failed
        conn.send(exc)
    conn.close()


def run_in_processes(strategy: Strategy, path, source, layout, ops: list, n: int) -> list:
    """Fork n workers, each opening the store itself (libhdf5 serialises threads, so
    processes are how h5py scales); results come back through pipes."""
    items = split_ops(ops, n)
    ctx = multiprocessing.get_context("fork")
    pipes, procs = [], []
    for w in range(n):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_process_worker, args=(strategy, path, source, layout, items[w::n], child))
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    parts = []
    for pipe in pipes:
        got = pipe.recv()
        if isinstance(got, Exception):
            raise got
        parts += got
    for proc in procs:
        proc.join()
    results = []
    for i, op in enumerate(ops):
        pieces = [r for (j, p, r) in sorted(parts, key=lambda t: (t[0], t[1])) if j == i]
        # row parts stack along rows; sums of block parts line up one after another
        results.append(pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=0))
    return results
