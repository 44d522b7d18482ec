"""Groups (h5py-like mapping of link name -> object), committed datatypes, link lookup."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Callable, Optional

import numpy as np

from .. import _native
from .base import HLObject
from .dataset import Dataset
from .references import Reference
from .types import (ClosedKeyError, ExternalLink, HardLink, ItemsViewHDF5, KeysViewHDF5,
                    ReadOnlyError, ReadOnlyKeyError, ReadOnlyRuntimeError, SoftLink, ValuesViewHDF5,
                    closed_error, read_only_error, stored_order, text_name, user_name, user_names)

__all__ = ["Group", "Datatype", "wrap", "has_member"]


def wrap(native_obj, file, name: str) -> HLObject:
    """The Python object for a native one, by kind; a sparse-matrix group opens as a
    SparseDataset (which is also a Group)."""
    cls = {"group": Group, "dataset": Dataset, "datatype": Datatype}[native_obj.kind]
    obj = cls(native_obj, file, name)
    if cls is Group:
        from ..compute.sparse import open_group  # compute.sparse builds on Group: imported when first needed

        return open_group(obj)
    return obj


def has_member(group: "Group", name: str) -> bool:
    """Whether a group has a link ``name`` (one component): one lookup, no path walk."""
    return _has_link(group.id, name)


def _components(path: str) -> list[str]:
    return [c for c in path.split("/") if c not in ("", ".")]


def _as_path(name: Any) -> str:
    return text_name(name, f"Accessing a group is done with bytes or str, not {type(name)}")


class Group(HLObject, MutableMapping):
    """An HDF5 group: link names map to groups, datasets and committed datatypes.

    A MutableMapping as h5py's Group, whose writes the file refuses as h5py refuses
    them on a file opened read-only (each with the class h5py raises there), so pop,
    popitem, update, setdefault and clear behave as h5py's."""

    # ------------------------------------------------------------------ lookup

    def __getitem__(self, name: Any) -> HLObject:
        try:
            if isinstance(name, Reference):
                return self._file._dereference(name)
            path = _as_path(name)
            if not path:
                raise KeyError("Unable to open object: an empty name (use '.' or '/')")
            return wrap(*self._resolve(path))
        except _native.ClosedError:
            # h5py: KeyError (the object cannot be opened), so get() gives the default
            raise closed_error(self._file, ClosedKeyError) from None

    def get(self, name: Any, default: Any = None, getclass: bool = False,
            getlink: bool = False) -> Any:
        """The object (or with getlink its HardLink/SoftLink/ExternalLink, with getclass
        its class) at ``name``; ``default`` when nothing is there, as h5py."""
        if not (getclass or getlink):
            try:
                return self[name]
            except KeyError:
                return default
        if name not in self:
            return default
        if not getlink:
            return _h5py_class(self[name])
        link = self._link(_as_path(name))
        return type(link) if getclass else link

    def require_group(self, name: Any) -> "Group":
        """The group at ``name`` (h5py's require_group on an existing group); TypeError
        when something else is there; creating it is writing: ReadOnlyError."""
        if name not in self:
            raise self._write_error(f"require_group({name!r}) would create a group")
        group = self[name]
        if not isinstance(group, Group):
            raise TypeError(f"Incompatible object ({type(group).__name__}) already exists")
        return group

    def require_dataset(self, name: Any, shape: Any, dtype: Any, exact: bool = False, **kwds) -> Any:
        """The dataset at ``name`` when its shape (or ``maxshape``, given) and dtype fit,
        with h5py's checks and TypeErrors; creating it is writing: ReadOnlyError."""
        if name not in self:
            raise self._write_error(f"require_dataset({name!r}) would create a dataset")
        shape = (shape,) if isinstance(shape, int) else shape
        dset = self[name]
        if not isinstance(dset, Dataset):
            raise TypeError(f"Incompatible object ({type(dset).__name__}) already exists")
        if shape != dset.shape:
            if "maxshape" not in kwds:
                raise TypeError(f"Shapes do not match (existing {dset.shape} vs new {shape})")
            if kwds["maxshape"] != dset.maxshape:
                raise TypeError(f"Max shapes do not match (existing {dset.maxshape} vs new {kwds['maxshape']})")
        if exact:
            if dtype != dset.dtype:
                raise TypeError(f"Datatypes do not exactly match (existing {dset.dtype} vs new {dtype})")
        elif not np.can_cast(dtype, dset.dtype):
            raise TypeError(f"Datatypes cannot be safely cast (existing {dset.dtype} vs new {dtype})")
        return dset

    # ------------------------------------------------------------------ writing: refused
    # with the class h5py raises on a file opened read-only (a ReadOnlyError, which is an
    # OSError and a ValueError, or one that is also a KeyError / RuntimeError); on a
    # closed file with ClosedError (h5py: ValueError), first.

    def __setitem__(self, name: Any, value: Any) -> None:
        raise self._write_error(f"storing {name!r}", _setitem_error_class(value))

    def __delitem__(self, name: Any) -> None:
        raise self._write_error(f"deleting {name!r}", ReadOnlyKeyError)

    def create_group(self, name: Any, *args, **kwds) -> "Group":
        raise self._write_error(f"create_group({name!r})")

    def create_dataset(self, name: Any, *args, **kwds) -> Dataset:
        raise self._write_error(f"create_dataset({name!r})")

    def create_dataset_like(self, name: Any, other: Any, **kwupdate) -> Dataset:
        raise self._write_error(f"create_dataset_like({name!r})")

    def create_virtual_dataset(self, name: Any, layout: Any, fillvalue: Any = None) -> Dataset:
        raise self._write_error(f"create_virtual_dataset({name!r})")

    def build_virtual_dataset(self, name: Any, shape: Any, dtype: Any, maxshape: Any = None,
                              fillvalue: Any = None):
        """h5py creates the dataset when its ``with`` block ends (ValueError there on a
        read-only file); refused here at once, with that class."""
        raise self._write_error(f"build_virtual_dataset({name!r})")

    def move(self, source: Any, dest: Any) -> None:
        raise self._write_error(f"move({source!r}, {dest!r})")

    def copy(self, source: Any, dest: Any, name: Any = None, shallow: bool = False,
             expand_soft: bool = False, expand_external: bool = False,
             expand_refs: bool = False, without_attrs: bool = False) -> None:
        """Refused (RuntimeError, as h5py copying inside a read-only file). h5py can also
        copy into another, writable file: open this one with h5py for that."""
        raise self._write_error(f"copy({source!r}, {dest!r}) (to copy into another file, "
                                "open this one with h5py)", ReadOnlyRuntimeError)

    def _write_error(self, what: str, kind: type = ReadOnlyError) -> Exception:
        self._check_open()
        return read_only_error(f"{self._file._path_text}: {self._name}: {what}", kind)

    def __contains__(self, name: Any) -> bool:
        """True when the path's last link exists (h5py: a dangling soft link or an external
        link counts, its target is not checked); the components before it must resolve."""
        path = _as_path(name)
        if not path or self._file.closed:
            return False
        head, tail = posixpath.split(path.rstrip("/") or "/")
        try:
            parent_obj = self._resolve(head)[0] if head else self._obj
        except KeyError:
            return False
        if not _components(tail):  # "g/.": the group itself (after a dataset, nothing)
            return parent_obj.kind == "group"
        return parent_obj.kind == "group" and _has_link(parent_obj, tail)

    def _resolve(self, path: str, external_hops: int = 0):
        """(native object, File, name) at a path relative to this group, or absolute;
        ``external_hops``: external links followed to get here."""
        if path.startswith("/"):
            native_obj, name = self._file._root_native(), "/"
        else:
            native_obj, name = self._obj, self._name
        file = self._file
        for component in _components(path):
            native_obj, file, name = _follow(native_obj, component, file, name, external_hops)
        return native_obj, file, name

    def _link(self, path: str):
        """The link (as HardLink/SoftLink/ExternalLink) that ``path`` ends with."""
        head, tail = posixpath.split(path.rstrip("/"))
        if not _components(tail):
            # '.', '/', 'g/.': the group itself, reached by no link of that name
            raise _NoLinkThereError(f"Unable to get link info ({path!r} names no link)")
        parent_obj = self._resolve(head)[0] if head else self._obj
        kind, target = _find_link(parent_obj, tail)
        return _link_value(kind, target)

    # ------------------------------------------------------------------ mapping protocol

    def __iter__(self):
        return iter(user_names(self._link_names()))

    def __len__(self) -> int:
        return self._obj.link_count()

    def __reversed__(self):
        """Member names in reverse iteration order (as h5py; KeyError on a closed file,
        as h5py's)."""
        if self._file.closed:
            raise closed_error(self._file, ClosedKeyError)
        return reversed(user_names(self._link_names()))

    def keys(self) -> "KeysViewHDF5":
        return KeysViewHDF5(self)

    def values(self) -> "ValuesViewHDF5":
        return ValuesViewHDF5(self)

    def items(self) -> "ItemsViewHDF5":
        return ItemsViewHDF5(self)

    def _link_names(self) -> list[str]:
        return [name for name, _kind, _target in self._obj.links()]

    # ------------------------------------------------------------------ dask

    def to_dask(self, chunks=None):
        """A sparse-matrix group (AnnData CSR/CSC, h5sparse, 10x) as a dask array of
        scipy.sparse blocks: CSR split by rows, CSC by columns, ``chunks`` rows/columns a
        block (default: about a million stored values a block). Tasks carry only (path,
        group, range) and need no lock. TypeError for any other group."""
        from ..compute.dask import sparse_to_dask

        return sparse_to_dask(self, chunks)

    # ------------------------------------------------------------------ visiting

    def visit(self, func: Callable[[str], Any]) -> Any:
        """Call ``func(name)`` on every object below this group, each once, in name
        order (names relative to this group); stop at the first non-None result."""
        return self.visititems(lambda name, _obj: func(name))

    def visititems(self, func: Callable[[str, HLObject], Any]) -> Any:
        """Like visit, with ``func(name, object)``. Only hard links are followed."""
        return self._visit_subtree(("", self._obj), func)

    def visit_links(self, func: Callable[[str], Any]) -> Any:
        """Call ``func(name)`` on every link below this group (soft and external links
        too, not followed), in name order, each once (h5py's visit_links, H5Lvisit);
        a group reached by several hard links is descended into once."""
        return self.visititems_links(lambda name, _link: func(name))

    def visititems_links(self, func: Callable[[str, Any], Any]) -> Any:
        """Like visit_links, with ``func(name, link)``: a HardLink, SoftLink or
        ExternalLink as ``get(name, getlink=True)`` gives."""
        return self._visit_links("", self._obj, func, {self._obj.address})

    def _visit_links(self, prefix: str, group_obj, func, seen: set) -> Any:
        """Depth first, links in name order; a group reached by several hard links is
        descended into once."""
        def links_of(path_prefix: str, obj):
            for name, kind, target in sorted(obj.links(), key=lambda link: stored_order(link[0])):
                yield path_prefix + name, obj, name, kind, target

        def below(item):
            path, parent, name, kind, _target = item
            if kind != "hard":
                return None
            child = parent.child(name)
            if child.kind != "group" or child.address in seen:
                return None
            seen.add(child.address)
            return links_of(path + "/", child)

        for path, _parent, _name, kind, target in depth_first(links_of(prefix, group_obj), below):
            result = func(user_name(path), _link_value(kind, target))
            if result is not None:
                return result
        return None

    def _visit_subtree(self, entry, func) -> Any:
        """Depth first, pre-order, as HDF5's H5Ovisit: each group is descended into
        once (this one first), and an object is named once if several hard links lead
        to it. libhdf5 remembers only those, so a group of one link (this one, reached
        again round a cycle of hard links) is named again, but not descended into."""
        start = entry[1]
        descended = {start.address}
        named = {start.address} if start.hard_links > 1 else set()

        def unseen_children(path_prefix: str, obj):
            for name, child in _hard_children(obj):
                if child.address not in named:
                    if child.hard_links > 1:
                        named.add(child.address)
                    yield path_prefix + name, child

        def below(item):
            path, child = item
            if child.kind != "group" or child.address in descended:
                return None
            descended.add(child.address)
            return unseen_children(path + "/", child)

        for path, child in depth_first(unseen_children(*entry), below):
            result = func(user_name(path), wrap(child, self._file, posixpath.join(self._name, path)))
            if result is not None:
                return result
        return None

    def __repr__(self):
        if not self:
            return "<Closed HDF5 group>"
        return f'<HDF5 group "{self.name}" ({len(self)} members)>'


class Datatype(HLObject):
    """A committed (named) datatype."""

    @property
    def dtype(self):
        try:
            return self._obj.dtype
        except _native.ClosedError as exc:
            raise _ClosedDatatypeError(f"Not a datatype: {exc}") from None

    def __repr__(self):
        if not self:
            return "<Closed HDF5 named type>"
        name = posixpath.basename(posixpath.normpath(self.name))
        return f'<HDF5 named type "{name}" (dtype {self.dtype.str})>'


def _h5py_class(obj: HLObject) -> type:
    """The class h5py's get(getclass=True) names: Group, Dataset or Datatype (a sparse
    matrix group is a Group there, so `cls is h5turbo.Group` holds as in h5py)."""
    return next(cls for cls in (Dataset, Datatype, Group) if isinstance(obj, cls))


# ---------------------------------------------------------------------- links


def _setitem_error_class(value: Any) -> type:
    """The class h5py raises storing ``value`` in a read-only file: libhdf5's refusal
    surfaces differently per kind of object it would create."""
    if isinstance(value, ExternalLink):
        return ReadOnlyRuntimeError
    if isinstance(value, np.dtype):
        return ReadOnlyKeyError  # committing a named datatype
    # a hard link to an object or a soft link (h5py: OSError), a dataset (ValueError):
    # ReadOnlyError is both
    return ReadOnlyError


def _hard_children(group_obj):
    """(name, native object) per hard link of a group, in name order (as H5Ovisit)."""
    names = sorted((name for name, kind, _target in group_obj.links() if kind == "hard"), key=stored_order)
    return [(name, group_obj.child(name)) for name in names]


def depth_first(items: Iterable, below: Callable[[Any], Optional[Iterable]]) -> Iterator:
    """Every item of ``items`` and, right after each, the items ``below(item)`` gives
    (None: none), depth first in pre-order. ``below`` is asked once the item has been
    taken, so the caller has seen it first. A stack of its own, not recursion: any
    depth of nesting works (1000 nested groups passed Python's recursion limit)."""
    stack = [iter(items)]
    while stack:
        for item in stack[-1]:
            yield item
            deeper = below(item)
            if deeper is not None:
                stack.append(iter(deeper))
                break
        else:
            stack.pop()


class _NoLinkThereError(KeyError, RuntimeError):
    """get(path, getlink=True) where the path ends at a group itself ('.', '/'): no
    link has that name; h5py's RuntimeError, and a KeyError as for other names."""


def _has_link(group_obj, name: str) -> bool:
    try:
        group_obj.child(name)
    except KeyError:  # a dangling soft link still is a link
        return group_obj.link(name) is not None
    except _native.ClosedError:
        raise
    except _native.Error:
        # an external link the native side does not follow, a target that cannot be
        # opened: a link all the same if the group lists it (a lookup that fails, on
        # a damaged index say, raises from here)
        return group_obj.link(name) is not None
    return True


def _find_link(group_obj, name: str):
    found = group_obj.link(name)
    if found is None:
        raise KeyError(f"Unable to find link '{name}' in '{group_obj.name}'")
    _name, kind, target = found
    return kind, target


def _link_value(kind: str, target: Any):
    if kind == "unreadable":  # h5py: "Unknown link type" (TypeError) for a user-defined one
        raise TypeError(f"the link cannot be read: {target}")
    if kind == "soft":
        return SoftLink(target)
    if kind == "external":
        filename, path = target
        return ExternalLink(filename, path)
    return HardLink()


# External links followed in one lookup at most: libhdf5's limit (its nlinks default),
# which ends a link that leads back to itself, as h5py reports it.
MAX_EXTERNAL_HOPS = 16


class _ClosedDatatypeError(_native.ClosedError, TypeError):
    """A named datatype of a closed file: h5py's TypeError ("Not a datatype"), and the
    ClosedError of every other object of a closed file."""


def _follow(group_obj, component: str, file, name: str, external_hops: int = 0):
    """Follow one link: (object, File, name). An external link opens its target file, as
    h5py does; the name then is the path inside that file."""
    if group_obj.kind != "group":
        raise KeyError(f"'{group_obj.name}' is not a group: no member '{component}'")
    try:
        return group_obj.child(component), file, posixpath.join(name, component)
    except _native.ClosedError:
        raise
    except _native.Error as exc:
        kind, target = _find_link(group_obj, component)
        crosses_external = kind == "soft" and isinstance(exc, _native.UnsupportedError)
        if kind != "external" and not crosses_external:
            raise
    if external_hops >= MAX_EXTERNAL_HOPS:
        raise KeyError(f"{file.filename}: unable to open '{posixpath.join(name, component)}': too many links "
                       f"(more than {MAX_EXTERNAL_HOPS} external links in a row: a cycle?)")
    if kind == "soft":
        # a soft link whose path crosses an external link (the native side follows
        # soft links within a file only): its path walked here, as h5py walks it; the
        # object is named by the path it was reached by, as any soft link's (h5py)
        native_obj, target_file, _ = file._resolve(posixpath.join(name, target), external_hops + 1)
        return native_obj, target_file, posixpath.join(name, component)
    filename, path = target
    try:
        external_file = file._open_external(filename)
    except KeyError as exc:  # the target file is nowhere: say which link wanted it
        raise KeyError(f"{exc.args[0]} (external link '{posixpath.join(name, component)}')") from None
    except _native.ClosedError:
        raise
    except OSError as exc:  # no HDF5 file there (or unreadable): the link leads nowhere, as in h5py
        raise KeyError(f"{file.filename}: external link '{posixpath.join(name, component)}': its target "
                       f"file '{filename}' cannot be opened: {exc}") from None
    return external_file._resolve(path, external_hops + 1)
