"""A name looked up in a group not yet listed is found in the group's own index (the
symbol table's B-tree, the dense storage's name index) instead of reading every link;
after 16 such lookups the group is listed whole, and small groups (a one-node symbol
table, at most 64 links in dense storage) are listed at once. Each lookup here runs on a freshly
opened file, or within those first lookups, so it takes that path; it must agree with
h5py, present and absent names alike, and a damaged node on its way must give an
h5turbo error naming the file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from support.common import corpus_files, import_h5turbo, signature_offsets

h5turbo = import_h5turbo()

SIZES = [0, 1, 5, 9, 40, 200, 3000]


def _names(n):
    # Names sharing long prefixes and of different lengths, unicode among them.
    return [f"d{i}" if i % 3 else f"item_{i:05d}_é" for i in range(n)]


def _write(path, libver, track_order):
    with h5py.File(path, "w", libver=libver, track_order=track_order) as f:
        for n in SIZES:
            g = f.create_group(f"g{n}", track_order=track_order)
            for i, name in enumerate(_names(n)):
                if i % 11 == 5:
                    g[name] = h5py.SoftLink(f"/g{n}/{_names(n)[0]}")
                elif i % 13 == 7:
                    g[name] = h5py.ExternalLink("elsewhere.h5", "/x")
                elif i % 17 == 3:
                    g.create_group(name)
                else:
                    g.create_dataset(name, data=np.int32(i))


@pytest.fixture(scope="module", params=[("earliest", False), ("latest", False), ("latest", True)],
                ids=["symbol-table", "dense", "dense-creation-order"])
def groups_file(request, tmp_path_factory):
    libver, track = request.param
    path = tmp_path_factory.mktemp("groups") / f"{libver}_{track}.h5"
    _write(path, libver, track)
    return path


def _absent(names):
    """Names next to the real ones in every order: before, between, after, prefixes."""
    out = ["", "a", "zzz", "d", "item_", "\x7f"]
    for name in names[:50]:
        out += [name + "0", name[:-1], name + "\x00x"[1:], "0" + name]
    return [n for n in out if n and n not in set(names)]


@pytest.mark.parametrize("n", SIZES)
def test_lookups_agree_with_h5py(groups_file, n):
    names = _names(n)
    rng = np.random.default_rng(n)
    picks = [names[i] for i in rng.permutation(n)[:40]] if n else []
    with h5py.File(groups_file, "r") as ref:
        for chunk in range(0, len(picks), 10):
            with h5turbo.File(groups_file) as f:  # each file sees 10 lookups: one by one
                g = f[f"g{n}"]
                for name in picks[chunk:chunk + 10]:
                    assert name in g, name
                    link = g.get(name, getlink=True)
                    want = ref[f"g{n}"].get(name, getlink=True)
                    assert type(link).__name__ == type(want).__name__, name
                    if isinstance(want, h5py.HardLink) and isinstance(ref[f"g{n}/{name}"], h5py.Dataset):
                        assert f[f"g{n}/{name}"][()] == ref[f"g{n}/{name}"][()], name
        absent = _absent(names)
        for chunk in range(0, len(absent), 10):
            with h5turbo.File(groups_file) as f:
                g = f[f"g{n}"]
                for name in absent[chunk:chunk + 10]:
                    assert (name in g) == (name in ref[f"g{n}"]), name
                    with pytest.raises(KeyError):
                        g[name]


def test_many_lookups_then_listing_on_one_handle(groups_file):
    """Past the lookups made one by one the group is listed; every answer agrees."""
    names = _names(3000)
    with h5turbo.File(groups_file) as f:
        g = f["g3000"]
        for i, name in enumerate(names[::29]):
            assert name in g and f"{name}-not" not in g, (i, name)
        assert list(g) == list(h5py.File(groups_file, "r")["g3000"])


def test_nested_paths_resolve_through_lookups(groups_file):
    with h5py.File(groups_file, "r") as ref:
        inner = [k for k in ref["g3000"] if isinstance(ref["g3000"].get(k, getlink=True), h5py.HardLink)
                 and isinstance(ref["g3000"][k], h5py.Group)]
    assert inner
    with h5turbo.File(groups_file) as f:
        for name in inner[:5]:
            assert isinstance(f[f"/g3000/{name}"], h5turbo.Group)
            assert f"/g3000/{name}/nothing" not in f


def test_corpus_groups_found_member_by_member():
    """Every group of every corpus file (up to 12 members each, on a fresh handle, so
    one by one) against the listing h5turbo makes of the same group."""
    checked = 0
    for path in corpus_files():
        try:
            with h5turbo.File(path) as f:
                groups = ["/"]
                f.visit(lambda name: groups.append(name) if isinstance(f.get(name), h5turbo.Group) else None)
                listing = {g: list(f[g]) for g in groups[:40]}
        except h5turbo.Error:
            continue  # files h5turbo refuses are checked by the corpus comparison
        for group, members in listing.items():
            with h5turbo.File(path) as f:
                g = f[group]
                for name in members[:12]:
                    assert name in g, (path, group, name)
                    checked += 1
                assert f"{members[0] if members else ''}~absent" not in g
    assert checked > 500, checked


def test_damaged_symbol_table_node_is_an_error(tmp_path):
    path = tmp_path / "broken_group.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        g = f.create_group("g")
        for i in range(500):
            g.create_dataset(f"d{i}", data=np.int32(i))
    data = bytearray(path.read_bytes())
    for at in signature_offsets(bytes(data), b"SNOD\x01"):
        data[at:at + 4] = b"JUNK"
    path.write_bytes(bytes(data))
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError) as info:
            f["g/d250"]
    assert str(path) in str(info.value) and "symbol table node" in str(info.value)


# Two names of one lookup3 hash (0x51372ec6): dense storage orders them by name under
# that hash, and a lookup must compare names there.
COLLIDING = ["n36468", "n85629"]


def test_names_of_one_hash_in_dense_storage(tmp_path):
    path = tmp_path / "collide.h5"
    others = [f"x{i}" for i in range(100)]  # more than the 64 listed rather than looked into
    with h5py.File(path, "w", libver="latest") as f:
        g = f.create_group("g")
        for i, name in enumerate(COLLIDING + others):
            g.create_dataset(name, data=np.int32(i))
    for name, value in zip(COLLIDING, range(2)):
        with h5turbo.File(path) as f:
            assert f[f"g/{name}"][()] == value
            assert "n36469" not in f["g"]
