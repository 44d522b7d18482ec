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
import itertools
import json
import math
import os
import signal
import sys
import threading
from typing import Any, Callable, Iterator, Optional

import numpy as np

from . import _native
from .objects.dataset import Dataset
from .objects.file import File
from .objects.group import Group, depth_first
from .compute.sparse import SparseDataset
from .objects.types import Empty, ExternalLink, SoftLink
from .objects.references import Reference, RegionReference
from .objects.selection import plan_read, split_fields
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
    NaN and infinities as the strings "NaN", "Infinity", "-Infinity"; bytes that are not
    UTF-8 as \\xNN escapes). Not `strict`, for text: floats stay Python's floats (the
    text tells them from strings) and stray bytes stay surrogates, which _literal
    writes as \\xNN (an escape already in the string would show its backslash doubled)."""
    number = _json_float if strict else float
    if isinstance(value, np.ndarray):
        if value.dtype.names:
            return [to_jsonable(v, strict) for v in value.ravel()] if value.ndim else to_jsonable(value[()], strict)
        return [to_jsonable(v, strict) for v in value] if value.ndim else to_jsonable(value[()], strict)
    if isinstance(value, np.void) and value.dtype.names:
        return {name: to_jsonable(value[name], strict) for name in value.dtype.names}
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", _decoding(strict))
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


# ---------------------------------------------------------------------- names
# h5turbo (as h5py) gives a name that is not valid UTF-8 as bytes, b'x\xff'. In JSON
# and in paths its stray bytes are \xNN escapes; text also escapes what would break
# its line (a newline, a tab, other unprintable characters) as Python's repr does.


def _decoding(strict: bool) -> str:
    """How bytes become text: escaped at once for JSON (strict), kept as surrogates for
    the text output, whose printing escapes them (_shown, _literal)."""
    return "backslashreplace" if strict else "surrogateescape"


def _name_text(name, errors: str = "backslashreplace") -> str:
    return name.decode("utf-8", errors) if isinstance(name, bytes) else name


def _name_order(name) -> bytes:
    """HDF5 orders the names of a group by their bytes (what h5py's iteration gives):
    str names by their UTF-8 encoding, which orders as their characters do, and bytes
    names among them by their raw bytes."""
    return name if isinstance(name, bytes) else name.encode("utf-8")


def _object_key(path: str):
    """The name to look up for a path from the command line: Python decodes argv with
    surrogate escapes, so a name that is not UTF-8 arrives as 'x\\udcff', and h5turbo
    looks it up by its bytes."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path)


def _escaped_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a stray byte kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return repr(ch)[1:-1]  # \n, \t, \x00, \u2028 as Python writes them


def _shown(text: str) -> str:
    """text on one line: unprintable characters escaped as repr does, stray bytes as
    \\xNN; the rest (backslashes too) as it is."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escaped_char(ch) for ch in text)


def _literal(value: Any) -> str:
    """repr(value) for info's values (str, numbers, None, lists and dicts of them),
    except that a stray byte is \\xNN as in a bytes literal, not repr's \\udcNN."""
    if isinstance(value, str):
        quote = '"' if "'" in value and '"' not in value else "'"  # repr's choice
        return quote + "".join(
            "\\" + ch if ch in ("\\", quote) else ch if ch.isprintable() else _escaped_char(ch)
            for ch in value) + quote
    if isinstance(value, list):
        return "[" + ", ".join(map(_literal, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


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
        return ((group, name, depth) for name in sorted(group, key=_name_order))

    def below(member):
        group, name, depth = member
        sub = _list_member(group, name, seen, depth, emit)
        return members(sub, depth + 1) if sub is not None and recursive else None

    for _member in depth_first(members(group, depth), below):
        pass


def _list_member(group: Group, key, seen: dict, depth: int, emit: Callable) -> Optional[Group]:
    """Emit one member (key: its name, str or bytes); the group to list next when it is
    one met for the first time."""
    link = group.get(key, getlink=True)
    name = _name_text(key)
    path = _name_text(group.name).rstrip("/") + "/" + name
    if isinstance(link, SoftLink):
        emit(path, name, depth, {"kind": "soft_link", "target": _name_text(link.path)})
        return None
    if isinstance(link, ExternalLink):
        emit(path, name, depth, {"kind": "external_link", "file": _name_text(link.filename),
                                 "target": _name_text(link.path)})
        return None
    try:
        obj = group[key]
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
    name = _shown(name)
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
        return f"{indent}{name} -> {_shown(info['file'])}:{_shown(info['target'])}  (external link)"
    return f"{indent}{name} -> {_shown(info['target'])}  ({kind.replace('_', ' ')})"


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
                print(f"{_shown(_name_text(top.name))}  ({len(top)} members)", file=out)
            _walk(top, {top.id.address: _name_text(top.name)}, 1, not args.no_recursive, emit)
        else:
            emit(_name_text(top.name), _name_text(top.name), 0, _describe_short(top))
        if args.json:
            dump_json(rows, out, indent=1)


# ---------------------------------------------------------------------- info


def describe(obj, strict: bool = True) -> dict:
    """Everything about one object, JSON-ready (not `strict`: NaN and infinities stay
    floats and stray bytes in names and values surrogates, for the text)."""
    errors = _decoding(strict)
    info = {"path": _name_text(obj.name, errors), "address": obj.id.address, **_describe_short(obj)}
    if isinstance(obj, Dataset):
        info.update({
            "maxshape": None if obj.maxshape is None else list(obj.maxshape),
            "chunk_index": obj.chunk_index,
            "filters": [{"id": fid, "name": filter_name(fid, name), "client_data": list(data)}
                        for fid, name, data in obj.filters],
            "fillvalue": to_jsonable(obj.fillvalue, strict),
        })
    if isinstance(obj, Group):
        info["members"] = [_name_text(name, errors) for name in obj]
    info["attrs"] = {_name_text(name, errors): _attr_value(obj, name, strict) for name in obj.attrs}
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
        lines.append(f"{key + ':':<18} {_shown(value) if isinstance(value, str) else _literal(value)}")
    attrs = info["attrs"]
    lines.append(f"{'attributes:':<18} {len(attrs)}")
    lines += [f"  {_shown(name)} = {_literal(value)}" for name, value in attrs.items()]
    return lines


def cmd_info(args, out) -> None:
    with _open(args.file) as f:
        info = describe(_lookup(f, args.path), strict=args.json)
    if args.json:
        dump_json(info, out, indent=1)
    else:
        print("\n".join(_info_text(info)), file=out)


# ---------------------------------------------------------------------- cat
# cat reads what it prints: numpy's summary of a large array shows only the first and
# last items of each axis, so only those corners are read; --all and --json read and
# write a large selection in blocks of about _STREAM_BYTES, so neither waits for, nor
# holds, the whole selection (a 74.5 GiB dataset is printed as a 1 KiB one).

_STREAM_BYTES = 8 << 20


def cmd_cat(args, out) -> None:
    with _open(args.file) as f:
        where = f"{args.file}: {_shown(args.path)}"
        try:
            index = parse_slice(args.slice) if args.slice is not None else Ellipsis
        except CLIError as exc:
            raise CLIError(f"{where}: {exc}") from None
        ds = _lookup(f, args.path)
        if not isinstance(ds, Dataset):
            raise CLIError(f"{where} is a {_describe_short(ds)['kind']}, not a dataset")
        name = _name_text(ds.name)  # (a closed file's dataset has no name)
        bad = f"{where}: bad selection {args.slice!r} for shape {ds.shape}"
        sel = _selection_of(ds, index, bad)
        summary = not (args.all or args.json)
        if sel is not None and summary and sel.size > np.get_printoptions()["threshold"]:
            with np.printoptions(floatmode="unique"):
                print(_summary(sel), file=out)
            return
        if index is Ellipsis and (ds.nbytes or 0) > _PROGRESS_BYTES:
            print(f"h5turbo: reading {ds.nbytes / 2**20:.0f} MiB of {_shown(name)} ...",
                  file=sys.stderr, flush=True)
        if sel is not None and args.json and sel.nbytes > _STREAM_BYTES:
            _stream_json(sel, name, out)
            return
        if sel is not None and args.all and not _fits_a_print(sel, sel.shape):
            _stream_all(sel, out)
            return
        try:
            data = ds[index]
        except (IndexError, TypeError, ValueError) as exc:
            raise CLIError(f"{bad}: {exc}") from None
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


class _Selection:
    """A selection of a dataset as one source per axis of its result, so that a part of
    the result (a corner, a block of rows) is read alone. `template` follows the
    dataset's axes (newaxis entries among them): ("at", i) an integer, fixed;
    ("range", range) a slice; ("list", array) an index list or mask; ("new", None) a
    newaxis. The integers take no result axis, the others one each, in order (h5turbo,
    as h5py, leaves an index list in its place). Compound field names apply to each
    part. `dtype` and `trailing` (an array type's axes, read whole) are those of a read."""

    def __init__(self, ds: Dataset, template: list, fields: list):
        self.ds, self.template, self.fields = ds, template, fields
        self.shape = tuple(1 if kind == "new" else len(source)
                           for kind, source in template if kind != "at")
        probe = self.read(tuple(slice(0, 0) for _ in self.shape))  # nothing read; checks fields
        self.dtype = probe.dtype
        self.trailing = probe.shape[len(self.shape):]
        self.per_item = math.prod(self.trailing)  # values per element of the outer axes
        self.size = math.prod(self.shape) * self.per_item
        self.nbytes = self.size * self.dtype.itemsize

    def read(self, parts: tuple) -> Any:
        """result[parts]: for the leading axes an int or a slice (step 1), the rest whole."""
        index, axis = [], 0
        for kind, source in self.template:
            if kind == "at":
                index.append(source)
                continue
            part = parts[axis] if axis < len(parts) else slice(None)
            axis += 1
            if kind == "new":  # one place: an int drops the axis, a slice keeps it
                index += [None] if isinstance(part, slice) else []
            elif kind == "range":
                picked = source[part]
                index.append(picked if isinstance(picked, int) else _range_slice(picked))
            else:
                picked = source[part]
                index.append(int(picked) if np.ndim(picked) == 0 else picked)
        return self.ds[tuple(index) + tuple(self.fields)]


def _range_slice(r: range) -> slice:
    """The slice that selects r's positions (a range inside [0, n): a negative stop, with
    a negative step, means through position 0)."""
    return slice(r.start, r.stop if r.stop >= 0 else None, r.step)


def _selection_of(ds: Dataset, index: Any, bad: str) -> Optional[_Selection]:
    """index as a _Selection, checked as ds[index] checks it (a bad one: CLIError
    `bad: reason`); None for a null dataspace, one element and what _sources does
    not model, which are read whole."""
    if ds.shape is None:
        return None
    rest, fields = split_fields(index)
    try:
        plan = plan_read(rest, ds.shape)
        template = _sources(rest, ds.shape)
        if template is None or all(kind == "at" for kind, _ in template):
            return None  # not modelled, or one element
        sel = _Selection(ds, template, fields)
    except (IndexError, TypeError, ValueError) as exc:
        raise CLIError(f"{bad}: {exc}") from None
    return sel if sel is not None and sel.shape == plan.out_shape else None


def _sources(index: Any, shape: tuple) -> Optional[list]:
    """_Selection's template for a checked index (parse_slice's entries: Ellipsis,
    None, slices, integers, 1-D lists and masks)."""
    entries = list(index) if isinstance(index, tuple) else [index]
    consumed = sum(e is not None and e is not Ellipsis for e in entries)
    template, axis = [], 0
    for entry in entries:
        if entry is Ellipsis:
            template += [("range", range(n)) for n in shape[axis:axis + len(shape) - consumed]]
            axis += len(shape) - consumed
        elif entry is None:
            template.append(("new", None))
        elif isinstance(entry, slice):
            template.append(("range", range(shape[axis])[entry]))
            axis += 1
        elif isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
            template.append(("at", int(entry)))
            axis += 1
        elif isinstance(entry, np.ndarray) and entry.ndim == 1:
            positions = np.flatnonzero(entry) if entry.dtype == bool else entry
            template.append(("list", positions))
            axis += 1
        else:
            return None
    return template + [("range", range(n)) for n in shape[axis:]]


# ------------------------------------------------- the summary: numpy's, from the corners


def _summary(sel: _Selection) -> str:
    """np.array2string of the whole result, read from its corners: numpy prints an
    array over its threshold as the first and last edgeitems of each long axis, in a
    format chosen over those items alone (arrayprint's _leading_trailing). With one
    filler item put between the leading and trailing items of each long axis, numpy,
    told to summarise the corners, puts its '...' where it would in the whole array
    and never looks at the filler."""
    edge = np.get_printoptions()["edgeitems"]
    corners = _read_corners(sel, edge)
    for axis in range(corners.ndim):
        n = sel.shape[axis] if axis < len(sel.shape) else corners.shape[axis]
        if n > 2 * edge:
            corners = _with_filler(corners, axis, edge)
    return np.array2string(corners, threshold=0)


def _read_corners(sel: _Selection, edge: int) -> np.ndarray:
    """The first and last `edge` items along each outer axis (all of a short one), read
    part by part: 2**k small reads for k long axes. An array type's axes come whole."""
    ends = [[(slice(0, edge), slice(0, edge)), (slice(n - edge, n), slice(edge, 2 * edge))]
            if n > 2 * edge else [(slice(0, n), slice(0, n))] for n in sel.shape]
    corners = None
    for combination in itertools.product(*ends):
        block = sel.read(tuple(source for source, _ in combination))
        if corners is None:
            outer = tuple(min(n, 2 * edge) for n in sel.shape)
            corners = np.empty(outer + block.shape[len(outer):], dtype=block.dtype)
        corners[tuple(place for _, place in combination)] = block
    return corners


def _with_filler(data: np.ndarray, axis: int, edge: int) -> np.ndarray:
    """data with a copy of its first item inserted after the leading `edge` items of
    `axis` (and its middle dropped, for an array type's long axis)."""
    n = data.shape[axis]
    return np.take(data, [*range(edge), 0, *range(n - edge, n)], axis=axis)


# ------------------------------------------------- --json and --all of a large selection


def _parts(sel: _Selection, prefix: tuple = ()) -> Iterator[Any]:
    """result[prefix] in C order as parts of about _STREAM_BYTES: blocks of rows along
    its first axis, or each row's own parts where one row is bigger."""
    shape = sel.shape[len(prefix):]
    if not shape:
        yield sel.read(prefix)
        return
    row_bytes = math.prod(shape[1:]) * sel.per_item * sel.dtype.itemsize
    if row_bytes > _STREAM_BYTES and len(shape) > 1:
        for i in range(shape[0]):
            yield from _parts(sel, prefix + (i,))
        return
    rows = max(1, _STREAM_BYTES // max(1, row_bytes))
    for start in range(0, shape[0], rows):
        yield sel.read(prefix + (slice(start, min(start + rows, shape[0])),))


def _stream_json(sel: _Selection, name: str, out) -> None:
    """What dump_json writes for the whole selection, written part by part."""
    head = json.dumps({"path": name, "shape": list(sel.shape + sel.trailing),
                       "dtype": _dtype_text(sel.dtype)})
    out.write(head[:-1] + ', "data": ')
    _write_json(sel, (), out)
    out.write("}\n")


def _write_json(sel: _Selection, prefix: tuple, out) -> None:
    """result[prefix] as json.dumps writes it: whole where it fits in _STREAM_BYTES,
    else its rows in blocks (or each row alone, where one row is bigger)."""
    shape = sel.shape[len(prefix):]
    if not shape or math.prod(shape) * sel.per_item * sel.dtype.itemsize <= _STREAM_BYTES:
        out.write(_json_text(sel.read(prefix)))
        return
    out.write("[")
    row_bytes = math.prod(shape[1:]) * sel.per_item * sel.dtype.itemsize
    if row_bytes > _STREAM_BYTES:
        for i in range(shape[0]):
            out.write(", " if i else "")
            _write_json(sel, prefix + (i,), out)
    else:
        for i, block in enumerate(_parts(sel, prefix)):
            out.write((", " if i else "") + _json_text(block)[1:-1])
    out.write("]")


def _json_text(value: Any) -> str:
    return json.dumps(_json_value_fixed(value), allow_nan=False)


def _stream_all(sel: _Selection, out) -> None:
    """_print_all of the whole selection, read twice in parts: once to choose numpy's
    number format over every value (as _whole_array_format does), once to print."""
    with np.printoptions(floatmode="unique"):  # (numpy's options shape the format)
        element = _streamed_format(sel)
        options = {"threshold": sys.maxsize}
        if element is not None:
            options["formatter"] = {"all": element}
        _write_streamed(sel, (), out, options, 0)
    out.write("\n")


def _fits_a_print(sel: _Selection, shape: tuple) -> bool:
    """Whether result[...] of this shape is read whole for _write_nested: small enough
    in bytes, or in values for numpy to print in one piece (as _write_nested would)."""
    values = math.prod(shape) * sel.per_item
    return values <= _PRINT_BLOCK or values * sel.dtype.itemsize <= _STREAM_BYTES


def _write_streamed(sel: _Selection, prefix: tuple, out, options: dict, depth: int) -> None:
    """What _write_nested writes for result[prefix], read part by part: the same
    pieces (one whole, items one by one, or print blocks of rows, chosen as it
    chooses), read in blocks of whole print blocks of about _STREAM_BYTES."""
    shape = sel.shape[len(prefix):]
    if not shape or _fits_a_print(sel, shape):
        _write_nested(sel.read(prefix), out, options, depth)
        return
    item_size = math.prod(shape[1:]) * sel.per_item
    separator = "\n" * (len(shape) + len(sel.trailing) - 1) + " " * (depth + 1)
    out.write("[")
    if item_size > _PRINT_BLOCK:
        for i in range(shape[0]):
            out.write(separator if i else "")
            _write_streamed(sel, prefix + (i,), out, options, depth + 1)
    else:
        rows = max(1, _PRINT_BLOCK // max(1, item_size))
        per_read = rows * max(1, _STREAM_BYTES // max(1, rows * item_size * sel.dtype.itemsize))
        for start in range(0, shape[0], per_read):
            block = sel.read(prefix + (slice(start, min(start + per_read, shape[0])),))
            for offset in range(0, len(block), rows):
                text = np.array2string(block[offset:offset + rows], prefix=" " * depth, **options)
                out.write(("" if start + offset == 0 else separator) + text[1:-1])
    out.write("]")


def _streamed_format(sel: _Selection) -> Optional[Callable]:
    """_whole_array_format of the whole selection from one pass over its parts:
    integers need their extremes, floats _FormatBasis's values, booleans nothing."""
    kind = sel.dtype.kind
    if kind not in "biufc":
        return None
    if kind == "b":
        return _numpy_format(np.zeros(1, dtype=sel.dtype))
    if kind in "iu":
        lowest, highest = None, None
        for part in _parts(sel):
            if part.size:
                low, high = part.min(), part.max()
                lowest = low if lowest is None else min(lowest, low)
                highest = high if highest is None else max(highest, high)
        return _numpy_format(np.array([lowest, highest], dtype=sel.dtype))
    basis = _FormatBasis(sel.dtype, sel.size)
    for part in _parts(sel):
        basis.add(np.asarray(part).reshape(-1))
    return _numpy_format(basis.values())


# ------------------------------------------------- --all


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
    return _numpy_format(_format_basis(data) if data.dtype.kind in "fc" else data)


def _numpy_format(basis: np.ndarray) -> Optional[Callable]:
    """The element format numpy's array2string would choose for `basis` (None where
    numpy's internals differ)."""
    try:
        try:  # NumPy 2: the options in a context variable
            from numpy._core import arrayprint
            options = arrayprint.format_options.get()
        except ImportError:  # NumPy 1.x: in a module dict
            from numpy.core import arrayprint
            options = arrayprint._format_options
        return arrayprint._get_format_function(basis, **options)
    except (ImportError, AttributeError, TypeError):
        return None


# Floats beyond four times this many choose their format over a sample this size and
# their extremes (_format_basis), found in runs of _FORMAT_BLOCK values.
_FORMAT_SAMPLE = 1 << 16
_FORMAT_BLOCK = 1 << 20


def _format_basis(data: np.ndarray) -> np.ndarray:
    """Values whose numpy format is the whole array's notation (_FormatBasis)."""
    if data.size <= 4 * _FORMAT_SAMPLE:
        return data
    basis = _FormatBasis(data.dtype, data.size)
    basis.add(data.reshape(-1))
    return basis.values()


class _FormatBasis:
    """The values whose numpy format is a float array's notation, gathered from its
    values fed in C order, part by part: every value of a small array; else an even
    sample of _FORMAT_SAMPLE and every extreme numpy's choice looks at (largest and
    smallest finite magnitudes, signs, nan and inf) of each run of _FORMAT_BLOCK
    values, the runs counted from the first value however the parts fall. A value
    that needs more digits than any of them prints wider than the others: out of line,
    still exact."""

    def __init__(self, dtype: np.dtype, size: int):
        self.dtype, self.size = dtype, size
        self.every = size <= 4 * _FORMAT_SAMPLE
        self.step = max(1, size // _FORMAT_SAMPLE)
        self.seen = 0
        self.kept = []  # every value, or the sample (copies: a view would keep its part)
        self.pending = np.empty(0, dtype)  # the values of a run not yet complete
        self.found = ([], [])  # extremes of the real and of the imaginary parts

    def add(self, values: np.ndarray) -> None:
        first = 0 if self.every else (-self.seen) % self.step
        self.kept.append(values[first::1 if self.every else self.step].copy())
        self.seen += values.size
        if self.every:
            return
        run = np.concatenate([self.pending, values]) if self.pending.size else values
        complete = run.size if self.seen >= self.size else run.size - run.size % _FORMAT_BLOCK
        for start in range(0, complete, _FORMAT_BLOCK):
            self._note(run[start:start + _FORMAT_BLOCK])
        self.pending = run[complete:].copy()

    def _note(self, run: np.ndarray) -> None:
        parts = [run.real, run.imag] if self.dtype.kind == "c" else [run]
        for values, extremes in zip(parts, self.found):
            finite = values[np.isfinite(values)]
            nonzero = finite[finite != 0]
            if nonzero.size:
                extremes += [nonzero.max(), nonzero.min(), nonzero[np.argmin(np.abs(nonzero))]]
            if np.isnan(values).any():
                extremes.append(np.nan)
            extremes += [v for v in (np.inf, -np.inf) if (values == v).any()]

    def values(self) -> np.ndarray:
        kept = np.concatenate(self.kept) if self.kept else np.empty(0, self.dtype)
        if self.every:
            return kept
        real, imaginary = self.found
        if self.dtype.kind == "c":
            extra = [complex(v, 0) for v in real] + [complex(0, v) for v in imaginary]
        else:
            extra = real
        return np.concatenate([kept, np.asarray(extra, dtype=self.dtype)])


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
        return f[_object_key(path)]
    except KeyError:
        raise CLIError(f"{f.filename}: {_why_missing(f, path)}") from None


def _why_missing(f: File, path: str) -> str:
    """A link that leads nowhere is named as one: 'no object' would hide it exists."""
    try:
        link = f.get(_object_key(path), getlink=True)
    except (KeyError, _native.Error):
        link = None
    if isinstance(link, SoftLink):
        return f"{_literal(path)} is a soft link to {_literal(_name_text(link.path, 'surrogateescape'))}, which does not exist"
    if isinstance(link, ExternalLink):
        return (f"{_literal(path)} is an external link to {_shown(_name_text(link.filename))}:"
                f"{_shown(_name_text(link.path))}, which cannot be opened")
    return f"no object {_literal(path)}"


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
