"""A virtual dataset's mappings as h5py's ``virtual_sources()`` gives them: VDSmap
(vspace, file_name, dset_name, src_space) per mapping. h5py's vspace/src_space are
libhdf5 dataspaces; here they are VirtualSelection objects answering the same
questions (select type, number of points, bounds, regular hyperslab) from the stored
selection."""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

__all__ = ["VDSmap", "VirtualSelection", "virtual_sources"]

# libhdf5's H5S_sel_type values, as h5py's get_select_type() returns them
_SELECT_TYPES = {"none": 0, "points": 1, "regular": 2, "blocks": 2, "all": 3}
# a regular hyperslab's unlimited count or block, as libhdf5's H5S_UNLIMITED
UNLIMITED = 2**64 - 1


class VirtualSelection:
    """One side of a mapping: ``kind`` ('none', 'all', 'points', 'blocks', 'regular')
    and ``data`` as ``_native.File.region`` gives them; ``shape`` the extent when known
    (the virtual dataset's for vspace; None for a source, whose extent is not stored)."""

    def __init__(self, kind: str, data, shape: Optional[tuple]):
        if kind == "blocks":
            regular = _as_regular(*data)
            if regular is not None:  # libhdf5 sees a regular hyperslab there too
                kind, data = "regular", regular
        self.kind, self.data, self.shape = kind, data, shape

    def get_select_type(self) -> int:
        return _SELECT_TYPES[self.kind]

    def is_regular_hyperslab(self) -> bool:
        return self.kind == "regular"

    def get_regular_hyperslab(self) -> tuple:
        """(start, stride, count, block), one tuple each, as h5py's."""
        if self.kind != "regular":
            raise ValueError(f"a {self.kind} selection is no regular hyperslab")
        return tuple(tuple(int(v) for v in part) for part in self.data)

    def _unlimited(self) -> bool:
        return self.kind == "regular" and any(v == UNLIMITED for part in self.data[2:] for v in part)

    def get_select_npoints(self) -> Optional[int]:
        if self._unlimited():
            raise RuntimeError("an unlimited selection has no number of points until its source is opened")
        if self.kind == "none":
            return 0
        if self.kind == "all":
            return None if self.shape is None else math.prod(int(n) for n in self.shape)
        if self.kind == "points":
            return len(self.data)
        if self.kind == "blocks":
            starts, ends = (np.asarray(a, dtype=np.int64) for a in self.data)
            return int(np.prod(ends - starts + 1, axis=1).sum())
        _start, _stride, count, block = self.data
        return int(np.prod([c * b for c, b in zip(count, block)], dtype=object))

    def get_select_bounds(self) -> tuple:
        """((low per axis), (high per axis)), inclusive, as h5py's."""
        if self._unlimited():
            raise RuntimeError("an unlimited selection has no bounds until its source is opened")
        if self.kind == "all":
            if self.shape is None:
                raise ValueError("the extent of this selection is not stored")
            return tuple(0 for _ in self.shape), tuple(n - 1 for n in self.shape)
        if self.kind == "none":
            raise ValueError("an empty selection has no bounds")
        if self.kind == "points":
            coords = np.asarray(self.data, dtype=np.int64)
            return tuple(int(v) for v in coords.min(axis=0)), tuple(int(v) for v in coords.max(axis=0))
        if self.kind == "blocks":
            starts, ends = (np.asarray(a, dtype=np.int64) for a in self.data)
            return tuple(int(v) for v in starts.min(axis=0)), tuple(int(v) for v in ends.max(axis=0))
        start, stride, count, block = self.data
        high = tuple(s + (c - 1) * st + b - 1 for s, st, c, b in zip(start, stride, count, block))
        return tuple(int(s) for s in start), high

    def __repr__(self):
        return f"<VirtualSelection {self.kind}>"


def _as_regular(starts, ends) -> Optional[tuple]:
    """(start, stride, count, block) lists when the blocks are the cross product of one
    evenly spaced run of equal blocks per axis (how version-1 selections store a
    regular hyperslab), else None."""
    starts, ends = (np.asarray(a, dtype=np.int64) for a in (starts, ends))
    if starts.ndim != 2 or len(starts) == 0:
        return None
    params = []
    for axis in range(starts.shape[1]):
        pairs = sorted(set(zip(starts[:, axis].tolist(), ends[:, axis].tolist())))
        first = [a for a, _ in pairs]
        sizes = {b - a + 1 for a, b in pairs}
        steps = {b - a for a, b in zip(first, first[1:])}
        if len(sizes) != 1 or len(steps) > 1:
            return None
        params.append((first[0], steps.pop() if steps else 1, len(pairs), sizes.pop()))
    if int(np.prod([c for _, _, c, _ in params])) != len(starts):
        return None
    return tuple([p[k] for p in params] for k in range(4))


class VDSmap(NamedTuple):
    """One mapping of a virtual dataset (h5py's VDSmap)."""

    vspace: VirtualSelection
    file_name: str
    dset_name: str
    src_space: VirtualSelection


def virtual_sources(dataset) -> list[VDSmap]:
    mappings = dataset._obj.virtual_sources()
    if mappings is None:
        raise RuntimeError("Not a virtual dataset")
    return [VDSmap(VirtualSelection(vkind, vdata, dataset.shape), file_name, dset_name,
                   VirtualSelection(skind, sdata, None))
            for vkind, vdata, file_name, dset_name, skind, sdata in mappings]
