"""The rest of h5py's read API against h5py on files written here: visit_links /
visititems_links (soft, external and dangling links reported, not followed; a group
behind two hard links descended once), reversed iteration, File.in_memory,
File.meta_block_size, Dataset.filter_names."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBVERS = ["earliest", "latest"]


@pytest.fixture(params=LIBVERS)
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"extras_{request.param}.h5"
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["t"] = np.arange(3)
    with h5py.File(path, "w", libver=request.param) as f:
        g = f.create_group("grp")
        g.create_group("sub/deeper")["leaf"] = np.arange(3)
        f["grp/loop"] = f["grp"]  # one group, two hard links
        f["alias"] = f["grp/sub"]
        f["soft"] = h5py.SoftLink("/grp/sub/deeper/leaf")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink("other.h5", "/t")
        f["zeta"] = np.arange(2)
        f["Alpha"] = np.arange(2)
        f["ünï"] = np.arange(2)
        ordered = f.create_group("ordered", track_order=True)
        for name in ("z", "a", "m"):
            ordered[name] = 0
        f.create_dataset("gz", data=np.arange(100), chunks=(10,), compression="gzip", shuffle=True,
                         fletcher32=True)
        f.create_dataset("lzf", data=np.arange(100), chunks=(10,), compression="lzf", scaleoffset=0)
        f["plain"] = np.arange(4)
    return path


def _link_kind(link) -> tuple:
    return (type(link).__name__, getattr(link, "path", None), getattr(link, "filename", None))


@pytest.mark.parametrize("group", ["/", "grp", "ordered"])
def test_visit_links_like_h5py(h5file, group):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        ours, theirs = [], []
        f[group].visit_links(ours.append)
        h[group].visit_links(theirs.append)
        assert ours == theirs and ours
        ours, theirs = [], []
        f[group].visititems_links(lambda name, link: ours.append((name, _link_kind(link))))
        h[group].visititems_links(lambda name, link: theirs.append((name, _link_kind(link))))
        assert ours == theirs


def test_visit_links_stops_at_a_result(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        def find(name):
            return name if name.endswith("deeper") else None

        # name order: 'alias' (a hard link to grp/sub) comes before 'grp'
        assert f.visit_links(find) == h.visit_links(find) == "alias/deeper"


@pytest.mark.parametrize("group", ["/", "grp", "ordered"])
def test_reversed_like_h5py(h5file, group):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        assert list(reversed(f[group])) == list(reversed(h[group]))
        for attrs in (f[group].attrs, h[group].attrs):  # h5py's attrs are not reversible
            with pytest.raises(TypeError):
                reversed(attrs)


def test_in_memory_like_h5py(h5file):
    image = h5file.read_bytes()
    with h5turbo.File.in_memory(image) as f, h5py.File.in_memory(image) as h:
        assert sorted(f) == sorted(h) and np.array_equal(f["plain"][()], h["plain"][()])
    with h5turbo.File.in_memory(memoryview(image)) as f:
        assert f["grp/sub/deeper/leaf"][()].tolist() == [0, 1, 2]
    with pytest.raises(h5turbo.ReadOnlyError, match="h5turbo.write"):
        h5turbo.File.in_memory()
    for kwargs in ({"driver": "core"}, {"locking": False}):
        with pytest.raises(TypeError):
            h5py.File.in_memory(image, **kwargs)
        with pytest.raises(TypeError):
            h5turbo.File.in_memory(image, **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"meta_block_size": 4096}])
def test_meta_block_size_like_h5py(h5file, kwargs):
    with h5turbo.File(h5file, **kwargs) as f, h5py.File(h5file, "r", **kwargs) as h:
        assert f.meta_block_size == h.meta_block_size


def test_filter_names_like_h5py(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        for name in ("gz", "lzf", "plain"):
            assert f[name].filter_names == h[name].filter_names
        assert f["gz"].filter_names == ("shuffle", "deflate", "fletcher32")
