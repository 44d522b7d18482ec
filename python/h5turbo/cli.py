"""The ``h5turbo`` command: look inside HDF5 files from the shell.

    h5turbo ls FILE [PATH]            tree of groups and datasets with storage details
    h5turbo info FILE PATH            everything about one object, attributes included
    h5turbo cat FILE PATH [--slice S] values, numpy-style selection
    h5turbo bench --preset quick      which reader and layout is fast here (h5turbo.bench)
    h5turbo repack SRC DST [...]      rewrite with new chunks/compression, in parallel
    h5turbo advise FILE PATH --pattern rows|cols|blocks|all [--measure]

Each subcommand takes ``--json`` for scripts. Errors (missing file, missing object,
a file h5turbo cannot read) print one line on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import ast
import json
import math
import signal
import sys
import threading
from typing import Any, Callable, Optional

import numpy as np

from . import _native
from .objects.dataset import Dataset
from .objects.file import File
from .objects.group import Group, depth_first
from .compute.sparse import SparseDataset
from .objects.types import Empty, ExternalLink, SoftLink
from .objects.references import Reference, RegionReference
from .objects.filters import filter_name
from .bench.cli import BenchUsageError

__all__ = ["main", "parse_slice"]

# Reads bigger than this announce themselves on stderr so a long wait is explained.
_PROGRESS_BYTES = 256 << 20


class CLIError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


# ---------------------------------------------------------------------- selection parsing


def parse_slice(text: str) -> tuple:
    """A numpy index from its text form, without eval: ``"0:10, ::2"``, ``"5, ..."``,
    ``"-1"``, ``"[1, 4, 2], :"``, ``"None, 3"``, ``"'field'"`` (a compound field); in
    parentheses as Python writes a tuple too (``"()"``: h5py's ``ds[()]``, everything)."""
    stripped = text.strip()
    if stripped.startswith("(") and stripped.endswith(")"):
        text = stripped[1:-1]
    items = _split_top_level(text)
    if items == [""]:
        return ()
    return tuple(_parse_item(item.strip(), text) for item in items)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside [...] (index lists)."""
    parts, depth, current = [], 0, []
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _parse_item(item: str, whole: str) -> Any:
    if item in ("...", "Ellipsis"):
        return Ellipsis
    if item in ("None", "newaxis", "np.newaxis"):
        return None
    if ":" in item and not item.startswith("["):
        bounds = item.split(":")
        if len(bounds) > 3:
            raise CLIError(f"bad slice {item!r} in {whole!r}: at most start:stop:step")
        return slice(*(_parse_int(b, whole) if b.strip() else None for b in bounds))
    if item.startswith(("[", "'", '"')):
        return _parse_literal(item, whole)
    return _parse_int(item, whole)


def _parse_int(text: str, whole: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CLIError(f"bad index {text.strip()!r} in {whole!r}: expected an integer, "
                       "start:stop:step, ..., None, [i, j, ...] or a quoted field name") from None


def _parse_literal(item: str, whole: str) -> Any:
    """Index lists and field names through ast.literal_eval, which evaluates no code."""
    try:
        value = ast.literal_eval(item)
    except (ValueError, SyntaxError):
        raise CLIError(f"bad index {item!r} in {whole!r}") from None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, (int, bool)) for v in value):
        return np.array(value) if value else np.array([], dtype=np.intp)
    raise CLIError(f"bad index {item!r} in {whole!r}: a list must hold integers or booleans")


# ---------------------------------------------------------------------- JSON conversion


def _json_float(x: float) -> Any:
    """JSON has no NaN or infinities (jq, JavaScript, Go reject Python's NaN token): they
    are written as the strings float() reads back, "NaN", "Infinity", "-Infinity"."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def dump_json(value: Any, out, **options) -> None:
    """Strict JSON (allow_nan=False: a NaN that slipped past to_jsonable is a bug, not
    output) and a final newline."""
    json.dump(value, out, allow_nan=False, **options)
    out.write("\n")


def to_jsonable(value: Any, strict: bool = True) -> Any:
    """numpy values, bytes and HDF5 markers as plain JSON types (complex as [re, im];
    NaN and infinities as the strings "NaN", "Infinity", "-Infinity", unless not
    `strict`: then Python's floats, for text that tells them from strings)."""
    number = _json_float if strict else float
    if isinstance(value, np.ndarray):
        if value.dtype.names:
            return [to_jsonable(v, strict) for v in value.ravel()] if value.ndim else to_jsonable(value[()], strict)
        return [to_jsonable(v, strict) for v in value] if value.ndim else to_jsonable(value[()], strict)
    if isinstance(value, np.void) and value.dtype.names:
        return {name: to_jsonable(value[name], strict) for name in value.dtype.names}
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, np.void):
        return bytes(value).hex()
    if isinstance(value, (complex, np.complexfloating)):
        return [number(float(value.real)), number(float(value.imag))]
    if isinstance(value, (float, np.floating)):
        return number(float(value))
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return str(value)  # '2020-01-01T00:00:00', '5 milliseconds', 'NaT': .item() is no JSON type
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Empty):
        return None
    if isinstance(value, RegionReference):  # before Reference: a subclass of it
        return {"region_reference": list(value.heap_id)} if value else None
    if isinstance(value, Reference):
        return {"object_reference": value.address} if value else None
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, strict) for v in value]
    return value


def _json_value_fixed(value: Any, strict: bool = True) -> Any:
    """Structured arrays keep their shape: rows of {field: value} nested like the array."""
    if isinstance(value, np.ndarray) and value.dtype.names and value.ndim:
        return [_json_value_fixed(v, strict) for v in value]
    return to_jsonable(value, strict)


# ---------------------------------------------------------------------- descriptions


def _dtype_text(dtype: np.dtype) -> str:
    metadata = dtype.metadata or {}
    vlen = metadata.get("vlen")
    if vlen is str:
        return "vlen str"
    if vlen is bytes:
        return "vlen bytes"
    if dtype.names:
        return "compound{" + ", ".join(f"{n}: {_dtype_text(dtype.fields[n][0])}"
                                       for n in dtype.names) + "}"
    return str(dtype)


def _logical_bytes(ds: Dataset) -> Optional[int]:
    """Uncompressed size; None where it has no meaning (variable-length elements, null)."""
    if ds.shape is None or ds.dtype.hasobject:
        return None
    return ds.size * ds.dtype.itemsize


def dataset_summary(ds: Dataset) -> dict:
    """The storage facts ls and info show for a dataset, as JSON-ready values."""
    stored = ds.storage_size
    logical = _logical_bytes(ds)
    chunked = ds.layout == "chunked"
    return {
        "kind": "dataset",
        "shape": None if ds.shape is None else list(ds.shape),
        "dtype": _dtype_text(ds.dtype),
        "layout": ds.layout,
        "chunks": list(ds.chunks) if ds.chunks else None,
        "chunk_count": ds.chunk_count if chunked else None,
        "filters": [filter_name(fid, name) for fid, name, _data in ds.filters],
        "storage_size": stored,
        "logical_size": logical,
        "compression_ratio": round(logical / stored, 3) if logical and stored else None,
    }


def _dataset_line(info: dict) -> str:
    shape = "null" if info["shape"] is None else "(" + ", ".join(map(str, info["shape"])) + ")"
    parts = [shape, info["dtype"], info["layout"]]
    if info["chunks"]:
        parts.append("chunks " + "x".join(map(str, info["chunks"])))
        parts.append(f"{info['chunk_count']} stored")
    if info["filters"]:
        parts.append("[" + ", ".join(info["filters"]) + "]")
    if info["compression_ratio"] is not None:
        parts.append(f"ratio {info['compression_ratio']:.2f}")
    return "  ".join(parts)


# ---------------------------------------------------------------------- ls


def _walk(group: Group, seen: dict, depth: int, recursive: bool, emit: Callable) -> None:
    """Depth first in name order (h5py's visit, h5ls and h5dump order, also for a group
    that tracks creation order: that order is what iterating it gives); a group met
    twice (hard links) is listed once. Listing a member is what tells whether it opens
    a group to list next."""
    def members(group: Group, depth: int):
        # HDF5 orders names by their UTF-8 bytes; Python's str order is the same
        return ((group, name, depth) for name in sorted(group))

    def below(member):
        group, name, depth = member
        sub = _list_member(group, name, seen, depth, emit)
        return members(sub, depth + 1) if sub is not None and recursive else None

    for _member in depth_first(members(group, depth), below):
        pass


def _list_member(group: Group, name: str, seen: dict, depth: int, emit: Callable) -> Optional[Group]:
    """Emit one member; the group to list next when it is one met for the first time."""
    link = group.get(name, getlink=True)
    path = group.name.rstrip("/") + "/" + name
    if isinstance(link, SoftLink):
        emit(path, name, depth, {"kind": "soft_link", "target": link.path})
        return None
    if isinstance(link, ExternalLink):
        emit(path, name, depth, {"kind": "external_link", "file": link.filename, "target": link.path})
        return None
    try:
        obj = group[name]
        info = _describe_short(obj)
    except _native.Error as exc:  # one unreadable object must not hide the rest
        emit(path, name, depth, {"kind": "error", "error": f"{type(exc).__name__}: {exc}"})
        return None
    if obj.id.address in seen:
        emit(path, name, depth, {"kind": "hard_link", "target": seen[obj.id.address]})
        return None
    seen[obj.id.address] = path
    emit(path, name, depth, info)
    return obj if isinstance(obj, Group) else None


def _describe_short(obj) -> dict:
    if isinstance(obj, Dataset):
        return dataset_summary(obj)
    if isinstance(obj, SparseDataset):
        return {"kind": "group", "members": len(obj), "sparse": _sparse_summary(obj)}
    if isinstance(obj, Group):
        return {"kind": "group", "members": len(obj)}
    return {"kind": "datatype", "dtype": _dtype_text(obj.dtype)}


def _sparse_summary(sp: SparseDataset) -> dict:
    """What a sparse matrix group holds; its members are still listed below it."""
    return {"format": sp.format, "shape": list(sp.shape), "dtype": _dtype_text(sp.dtype),
            "nnz": sp.nnz}


def _sparse_text(sparse: dict) -> str:
    shape = " x ".join(str(n) for n in sparse["shape"])
    return f"  {sparse['format']} matrix {shape} {sparse['dtype']}, {sparse['nnz']} stored values"


def _ls_text(name: str, depth: int, info: dict) -> str:
    indent = "  " * depth
    kind = info["kind"]
    if kind == "group":
        sparse = _sparse_text(info["sparse"]) if "sparse" in info else ""
        return f"{indent}{name}/  ({info['members']} members){sparse}"
    if kind == "dataset":
        return f"{indent}{name}  {_dataset_line(info)}"
    if kind == "datatype":
        return f"{indent}{name}  datatype {info['dtype']}"
    if kind == "error":
        return f"{indent}{name}  ({info['error']})"
    if kind == "external_link":
        return f"{indent}{name} -> {info['file']}:{info['target']}  (external link)"
    return f"{indent}{name} -> {info['target']}  ({kind.replace('_', ' ')})"


def cmd_ls(args, out) -> None:
    with _open(args.file) as f:
        top = _lookup(f, args.path)
        rows = []

        def emit(path, name, depth, info):
            if args.json:
                rows.append({"path": path, **info})
            else:
                print(_ls_text(name, depth, info), file=out)

        if isinstance(top, Group):
            if not args.json:
                print(f"{top.name}  ({len(top)} members)", file=out)
            _walk(top, {top.id.address: top.name}, 1, not args.no_recursive, emit)
        else:
            emit(top.name, top.name, 0, _describe_short(top))
        if args.json:
            dump_json(rows, out, indent=1)


# ---------------------------------------------------------------------- info


def describe(obj, strict: bool = True) -> dict:
    """Everything about one object, JSON-ready (not `strict`: NaN and infinities stay
    floats, for the text)."""
    info = {"path": obj.name, "address": obj.id.address, **_describe_short(obj)}
    if isinstance(obj, Dataset):
        info.update({
            "maxshape": None if obj.maxshape is None else list(obj.maxshape),
            "chunk_index": obj.chunk_index,
            "filters": [{"id": fid, "name": filter_name(fid, name), "client_data": list(data)}
                        for fid, name, data in obj.filters],
            "fillvalue": to_jsonable(obj.fillvalue, strict),
        })
    if isinstance(obj, Group):
        info["members"] = list(obj)
    info["attrs"] = {name: _attr_value(obj, name, strict) for name in obj.attrs}
    return info


def _attr_value(obj, name: str, strict: bool = True) -> Any:
    """An attribute h5turbo cannot read (an HDF5 1.12+ reference, say) is shown as the reason."""
    try:
        return _json_value_fixed(obj.attrs[name], strict)
    except _native.Error as exc:
        return f"<{type(exc).__name__}: {exc}>"


def _info_text(info: dict) -> list[str]:
    lines = []
    for key, value in info.items():
        if key == "attrs":
            continue
        if key == "filters" and value:
            value = ", ".join(f"{f['name']} (id {f['id']}, data {f['client_data']})"
                              for f in value)
        lines.append(f"{key + ':':<18} {value}")
    attrs = info["attrs"]
    lines.append(f"{'attributes:':<18} {len(attrs)}")
    lines += [f"  {name} = {value!r}" for name, value in attrs.items()]
    return lines


def cmd_info(args, out) -> None:
    with _open(args.file) as f:
        info = describe(_lookup(f, args.path), strict=args.json)
    if args.json:
        dump_json(info, out, indent=1)
    else:
        print("\n".join(_info_text(info)), file=out)


# ---------------------------------------------------------------------- cat


def cmd_cat(args, out) -> None:
    with _open(args.file) as f:
        where = f"{args.file}: {args.path}"
        try:
            index = parse_slice(args.slice) if args.slice is not None else Ellipsis
        except CLIError as exc:
            raise CLIError(f"{where}: {exc}") from None
        ds = _lookup(f, args.path)
        if not isinstance(ds, Dataset):
            raise CLIError(f"{where} is a {_describe_short(ds)['kind']}, not a dataset")
        name = ds.name  # (a closed file's dataset has no name)
        if index is Ellipsis and (ds.nbytes or 0) > _PROGRESS_BYTES:
            print(f"h5turbo: reading {ds.nbytes / 2**20:.0f} MiB of {name} ...",
                  file=sys.stderr, flush=True)
        try:
            data = ds[index]
        except (IndexError, TypeError, ValueError) as exc:
            raise CLIError(f"{where}: bad selection {args.slice!r} for shape {ds.shape}: "
                           f"{exc}") from None
    if args.json:
        empty = isinstance(data, Empty)  # a null dataspace: no shape, no values
        dump_json({"path": name, "shape": None if empty else list(np.shape(data)),
                   "dtype": _dtype_text(data.dtype if empty else np.asarray(data).dtype),
                   "data": _json_value_fixed(data)}, out)
        return
    # floatmode "unique": every float printed with the digits that read back to it
    # (numpy's default keeps 8 and prints 0.123456789 as 0.12345679)
    with np.printoptions(floatmode="unique"):
        if not isinstance(data, np.ndarray):
            print(data, file=out)
        elif args.all:
            _print_all(data, out)
        else:
            print(np.array2string(data), file=out)


# --all prints blocks of about this many values: numpy's array2string joins the lines of
# a 1-D array (or of one long row) quadratically (300,000 floats: a minute), and blocks
# reach a pipe at once.
_PRINT_BLOCK = 4096


def _print_all(data: np.ndarray, out) -> None:
    """Every value, in numpy's layout, written block by block (numbers formatted as in
    the whole array; other types aligned within a block)."""
    element = _whole_array_format(data)
    options = {"threshold": sys.maxsize}
    if element is not None:
        options["formatter"] = {"all": element}
    _write_nested(data, out, options, 0)
    out.write("\n")


def _write_nested(data: np.ndarray, out, options: dict, depth: int) -> None:
    """data as numpy prints it inside `depth` brackets: small enough, in one piece;
    else in blocks of whole items along the first axis, or item by item where one item
    is itself too big (a long row), so no array2string call sees more than a block."""
    if data.ndim == 0 or data.size <= _PRINT_BLOCK:
        out.write(np.array2string(data, prefix=" " * depth, **options))
        return
    item_size = data.size // len(data)
    separator = "\n" * (data.ndim - 1) + " " * (depth + 1)  # numpy's between items
    if item_size > _PRINT_BLOCK:  # one item per piece, itself written in pieces
        out.write("[")
        for i, item in enumerate(data):
            out.write(separator if i else "")
            _write_nested(item, out, options, depth + 1)
        out.write("]")
        return
    rows = max(1, _PRINT_BLOCK // max(1, item_size))
    for start in range(0, len(data), rows):
        block = np.array2string(data[start:start + rows], prefix=" " * depth, **options)
        out.write(("[" if start == 0 else separator) + block[1:-1])
    out.write("]")


def _whole_array_format(data: np.ndarray) -> Optional[Callable]:
    """numpy's element format chosen over the whole array (notation, digits, width), so
    the blocks print as the whole array would; None where numpy's internals differ (the
    blocks then choose their own, each value still printed so that it reads back).
    Plain numbers only: numpy would apply it to each field of a compound. For a large
    float array, chosen over _format_basis (numpy would first turn every value into a
    string: 20 s and 1.9 GB for 4 million float32, before the first line)."""
    if data.dtype.kind not in "biufc":
        return None
    try:
        try:  # NumPy 2: the options in a context variable
            from numpy._core import arrayprint
            options = arrayprint.format_options.get()
        except ImportError:  # NumPy 1.x: in a module dict
            from numpy.core import arrayprint
            options = arrayprint._format_options
        basis = _format_basis(data) if data.dtype.kind in "fc" else data
        return arrayprint._get_format_function(basis, **options)
    except (ImportError, AttributeError, TypeError):
        return None


# Floats beyond four times this many choose their format over a sample this size and
# their extremes (_format_basis), found in blocks of _FORMAT_BLOCK.
_FORMAT_SAMPLE = 1 << 16
_FORMAT_BLOCK = 1 << 20


def _format_basis(data: np.ndarray) -> np.ndarray:
    """Values whose numpy format is the whole array's notation: every extreme numpy's
    choice looks at (largest and smallest finite magnitudes, signs, nan and inf), found
    block by block, with an even sample for the widths. A value that needs more digits
    than any of them prints wider than the others: out of line, still exact."""
    flat = data.reshape(-1)
    if flat.size <= 4 * _FORMAT_SAMPLE:
        return data
    parts = [flat.real, flat.imag] if data.dtype.kind == "c" else [flat]
    found = [[] for _ in parts]
    for values, extremes in zip(parts, found):
        for start in range(0, values.size, _FORMAT_BLOCK):
            block = values[start:start + _FORMAT_BLOCK]
            finite = block[np.isfinite(block)]
            nonzero = finite[finite != 0]
            if nonzero.size:
                extremes += [nonzero.max(), nonzero.min(), nonzero[np.argmin(np.abs(nonzero))]]
            if np.isnan(block).any():
                extremes.append(np.nan)
            extremes += [v for v in (np.inf, -np.inf) if (block == v).any()]
    sample = flat[::flat.size // _FORMAT_SAMPLE]
    if data.dtype.kind == "c":
        extra = [complex(v, 0) for v in found[0]] + [complex(0, v) for v in found[1]]
    else:
        extra = found[0]
    return np.concatenate([sample, np.asarray(extra, dtype=data.dtype)])


# ---------------------------------------------------------------------- writing


def _parse_chunks(text: str):
    if text in ("auto", "keep"):
        return text
    try:
        chunks = tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())
    except ValueError:
        raise CLIError(f"--chunks {text!r}: auto, keep, or a shape such as 512,512") from None
    if not chunks or min(chunks) < 1:
        raise CLIError(f"--chunks {text!r}: every dimension at least 1")
    return chunks


def cmd_repack(args, out) -> None:
    _require("h5py", "h5turbo repack writes through h5py", "write")
    from .writing.repack import KEEP, progress_bar, repack
    from .writing.write import ArgumentError
    compression = {None: KEEP, "none": None}.get(args.compression, args.compression)
    update, close = progress_bar("repack") if not args.quiet else (None, lambda: None)
    try:
        summary = repack(args.src, args.dst, chunks=_parse_chunks(args.chunks),
                         compression=compression,
                         level=args.level, datasets=args.datasets, threads=args.threads,
                         verify=not args.no_verify, progress=update)
    except FileNotFoundError as exc:
        raise CLIError(str(exc)) from None
    except ArgumentError as exc:
        raise CLIError(str(exc)) from None
    finally:
        close()
    if args.json:
        print(json.dumps(summary), file=out)
    else:
        print(f"{args.dst}: {len(summary['reencoded'])} datasets re-encoded, "
              f"{len(summary['copied'])} copied as they were", file=out)


def _require(module: str, what: str, extra: str) -> None:
    """A clear message, not a traceback, when an optional dependency is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise CLIError(f"{what}, which is not installed: pip install 'h5turbo[{extra}]'")


def cmd_advise(args, out) -> None:
    from .writing.advise import measure, suggest
    if args.threads is not None and args.threads < 1:  # before it names a temporary file
        raise CLIError(f"bad --threads {args.threads}: at least 1")
    f = _open(args.file)
    with f:
        ds = _lookup(f, args.path)
        if not isinstance(ds, Dataset) or not ds.shape:
            raise CLIError(f"{args.file}: {args.path} is not an array dataset")
        advice = suggest(ds.shape, ds.dtype, args.pattern)
        if args.measure and ds.dtype.hasobject:  # h5turbo writes fixed-size elements only
            raise CLIError(f"{args.file}: {args.path}: --measure needs fixed-size elements, "
                           f"not {_dtype_text(ds.dtype)} (its candidates are written by h5turbo)")
        if args.measure:
            advice["measured"] = measure(ds, args.pattern, threads=args.threads)
    if args.json:
        dump_json(to_jsonable(advice), out)
        return
    print(f"{args.path} {ds.shape} {ds.dtype}, pattern {args.pattern}: chunks "
          f"{','.join(map(str, advice['chunks']))}, {advice['compression']} level {advice['level']}"
          f"{' + shuffle' if advice['shuffle'] else ''}", file=out)
    for r in advice.get("measured", []):
        print(f"  chunks {','.join(map(str, r['chunks'])):>14}  {str(r['compression']):5} "
              f"shuffle={str(r['shuffle']):5}  ratio {r['ratio']:5.2f}  write {r['write_s']:.3f} s  "
              f"read {r['read_s']:.4f} s", file=out)


# ---------------------------------------------------------------------- plumbing


def _open(path: str) -> File:
    try:
        return File(path)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CLIError(f"{path}: is a directory") from None
    except PermissionError:
        raise CLIError(f"{path}: permission denied") from None
    except _native.Error as exc:  # (an OSError too: caught first)
        raise CLIError(f"{path}: not a readable HDF5 file ({exc})") from None
    except OSError as exc:  # a directory, a device, a read failure
        raise CLIError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _lookup(f: File, path: str):
    try:
        return f[path]
    except KeyError:
        raise CLIError(f"{f.filename}: {_why_missing(f, path)}") from None


def _why_missing(f: File, path: str) -> str:
    """A link that leads nowhere is named as one: 'no object' would hide it exists."""
    try:
        link = f.get(path, getlink=True)
    except (KeyError, _native.Error):
        link = None
    if isinstance(link, SoftLink):
        return f"{path!r} is a soft link to {link.path!r}, which does not exist"
    if isinstance(link, ExternalLink):
        return (f"{path!r} is an external link to {link.filename}:{link.path}, "
                "which cannot be opened")
    return f"no object {path!r}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="h5turbo", description="Look inside, benchmark and repack HDF5 files (reads with h5turbo, no libhdf5; repack writes through h5py).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    ls = sub.add_parser("ls", help="tree of groups and datasets with storage details",
                        description="List groups and datasets: shape, dtype, layout, chunk "
                        "shape, chunks stored, filters, compression ratio (logical / stored).")
    ls.add_argument("file")
    ls.add_argument("path", nargs="?", default="/", help="group or dataset (default /)")
    ls.add_argument("-n", "--no-recursive", action="store_true", help="only the first level")
    ls.set_defaults(run=cmd_ls)

    info = sub.add_parser("info", help="everything about one object",
                          description="Shape, dtype, layout, chunk index, filters, fill "
                          "value, storage and attributes of one object.")
    info.add_argument("file")
    info.add_argument("path")
    info.set_defaults(run=cmd_info)

    cat = sub.add_parser("cat", help="print a dataset's values",
                         description="Print values of a dataset; --slice takes a numpy index "
                         "such as '0:10, ::2', '5, ...', '[1, 4], :', or a quoted field name.")
    cat.add_argument("file")
    cat.add_argument("path")
    cat.add_argument("-s", "--slice", help="numpy-style selection (default: everything)")
    cat.add_argument("-a", "--all", action="store_true",
                     help="print every value (numpy summarises large arrays otherwise)")
    cat.set_defaults(run=cmd_cat)

    from .writing.write import CODECS
    repack = sub.add_parser("repack", help="rewrite a file with new chunks and compression",
                            description="Rewrite SRC into DST with new chunks and compression: "
                            "reads in parallel with h5turbo, compresses in parallel, keeps groups, "
                            "attributes, dtypes, fill values and links. DST appears only when "
                            "complete and verified; SRC is never modified.")
    repack.add_argument("src")
    repack.add_argument("dst")
    repack.add_argument("--chunks", default="auto", help="auto (default), keep, or a shape like 512,512")
    repack.add_argument("--compression", default=None,
                        choices=[c for c in CODECS if c] + ["none"],
                        help="codec (default: keep each dataset's where h5turbo can write it)")
    repack.add_argument("--level", type=int, default=None)
    repack.add_argument("--datasets", default=None, help="glob on dataset paths to re-encode (default all)")
    repack.add_argument("--threads", type=int, default=None)
    repack.add_argument("--no-verify", action="store_true", help="skip reading the result back")
    repack.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    repack.set_defaults(run=cmd_repack)

    advise = sub.add_parser("advise", help="suggest chunks and codec for an access pattern",
                            description="Suggest a chunk shape and codec for reading PATH by "
                            "rows, columns, blocks or whole; --measure times candidates on a sample.")
    advise.add_argument("file")
    advise.add_argument("path")
    advise.add_argument("--pattern", choices=["rows", "cols", "blocks", "all"], required=True)
    advise.add_argument("--measure", action="store_true", help="write and time candidates on a sample")
    advise.add_argument("--threads", type=int, default=None)
    advise.set_defaults(run=cmd_advise)

    for p in (ls, info, cat, repack, advise):
        p.add_argument("--json", action="store_true", help="machine-readable output")
    from .bench.cli import add_parser as add_bench_parser
    add_bench_parser(sub)
    return parser


def main(argv: Optional[list[str]] = None, out=None) -> int:
    """Run the command; returns the exit status (0 ok, 1 error, 2 usage)."""
    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    args.argv = argv
    try:
        with _terminate_as_interrupt(args.command in _WRITING_COMMANDS):
            args.run(args, out)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: writers have removed their temporary files
        print(f"h5turbo {args.command}: interrupted", file=sys.stderr)
        return 130
    except (CLIError, BenchUsageError) as exc:
        print(f"h5turbo {args.command}: {exc}", file=sys.stderr)
        return 1
    except _native.Error as exc:  # a file h5turbo cannot read in full: say what, not where
        print(f"h5turbo {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `h5turbo cat ... | head`
        sys.stderr.close()
        return 0
    except OSError as exc:  # a read failing half-way (file truncated, disk error)
        print(f"h5turbo {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except RuntimeError as exc:  # libhdf5 failing to write (a full disk, a quota)
        print(f"h5turbo {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # numpy's "Unable to allocate 24.4 GiB ..." under a memory limit
        print(f"h5turbo {args.command}: out of memory: {_one_line(exc)}", file=sys.stderr)
        return 1
    return 0


def _one_line(exc: BaseException) -> str:
    """The message on one line (libhdf5's write errors span several)."""
    return " ".join(str(exc).split())


# The commands that write files (repack's destination, advise's and bench's samples).
_WRITING_COMMANDS = {"repack", "advise", "bench"}


@contextlib.contextmanager
def _terminate_as_interrupt(writing: bool):
    """For a command that writes, SIGTERM (what `kill` and job schedulers send) raises
    KeyboardInterrupt, so an interrupted repack or write removes its temporary file as
    Ctrl-C does; the previous handler is restored after. A command that only reads keeps
    SIGTERM's default, which ends it at once: a Python handler runs only between
    bytecodes, so it would wait for a read blocked in native code (a FIFO, a hung
    network file system). Only on the main thread (where Python delivers signals)."""
    if not writing or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
