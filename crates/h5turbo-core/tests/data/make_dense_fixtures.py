"""Generate dense-storage fixtures and the expectations the Rust tests check.

Run from this directory:  python3 make_dense_fixtures.py
Writes dense_storage.h5 and dense_storage.expect (our fixture), and
corpus.expect (expectations for files in the repository's tests/data/corpus, named
relative to it).

The expectations come from h5py (libhdf5), the oracle. Message addresses are found
by walking version-2 object headers here, so the Rust tests need no object-header
parser of their own.
"""
import struct
from pathlib import Path
import numpy as np
import h5py

CORPUS = str(Path(__file__).resolve().parents[4] / "tests" / "data" / "corpus")
LINK_INFO, LINK, LAYOUT, CONTINUATION, ATTRIBUTE_INFO = 0x02, 0x06, 0x08, 0x10, 0x15


def v2_header_messages(raw, addr):
    """(type, body address, body size) of every message in the v2 object header at addr."""
    assert raw[addr:addr + 4] == b"OHDR", hex(addr)
    flags = raw[addr + 5]
    pos = addr + 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 3)
    size = int.from_bytes(raw[pos:pos + width], "little")
    pos += width
    chunks = [(pos, pos + size)]
    out = []
    while chunks:
        start, end = chunks.pop(0)
        p = start
        while p + 4 <= end:
            mtype, msize, mflags = raw[p], struct.unpack_from("<H", raw, p + 1)[0], raw[p + 3]
            p += 4 + (2 if flags & 0x04 else 0)
            out.append((mtype, p, msize))
            if mtype == CONTINUATION:
                caddr, clen = struct.unpack_from("<QQ", raw, p)
                assert raw[caddr:caddr + 4] == b"OCHK"
                chunks.append((caddr + 4, caddr + clen - 4))
            p += msize
    return out


def find_message(raw, obj, mtype):
    addr = h5py.h5o.get_info(obj.id).addr
    found = [(a, s) for t, a, s in v2_header_messages(raw, addr) if t == mtype]
    assert len(found) == 1, (obj.name, mtype, found)
    return found[0]


def link_lines(f, group):
    lines = []
    names = sorted(group.keys(), key=lambda n: n.encode())
    gid = group.id
    orders = {}
    if gid.get_create_plist().get_link_creation_order():
        # h5py iterates in creation order when the group tracks it.
        orders = {n: i for i, n in enumerate(group.keys())}
    for n in names:
        link = group.get(n, getlink=True)
        corder = str(orders.get(n, "-"))
        if isinstance(link, h5py.SoftLink):
            lines.append(f"link\t{n}\tsoft\t{link.path}\t{corder}")
        elif isinstance(link, h5py.ExternalLink):
            lines.append(f"link\t{n}\texternal\t{link.filename}\t{link.path}\t{corder}")
        else:
            addr = h5py.h5o.get_info(h5py.h5o.open(gid, n.encode())).addr
            lines.append(f"link\t{n}\thard\t{addr}\t{corder}")
    return lines


def group_block(path, raw, f, group_path):
    group = f[group_path]
    a, s = find_message(raw, group, LINK_INFO)
    addr = h5py.h5o.get_info(group.id).addr
    # Compact groups keep their links as link messages in the header.
    compact = [f"{a}:{s}" for t, a, s in v2_header_messages(raw, addr) if t == LINK]
    head = f"links\t{path}\t{group_path}\t{a}\t{s}\t" + ",".join(compact)
    return [head] + link_lines(f, group) + ["end"]


def attr_block(path, raw, f, obj_path):
    obj = f[obj_path]
    a, s = find_message(raw, obj, ATTRIBUTE_INFO)
    names = sorted(obj.attrs.keys(), key=lambda n: n.encode())
    lines = [f"attrs\t{path}\t{obj_path}\t{a}\t{s}"]
    lines += [f"attr\t{n}\t{obj.attrs.get_id(n).get_storage_size()}" for n in names]
    if obj.id.get_create_plist().get_attr_creation_order():
        ordered = list(obj.attrs.keys())  # creation order when tracked
        lines += [f"attr_by_order\t{n}" for n in ordered]
    return lines + ["end"]


def chunk_block(path, raw, f, ds_path):
    ds = f[ds_path]
    a, _ = find_message(raw, ds, LAYOUT)
    version, cls, _flags, ndims, width = raw[a:a + 5]
    assert version == 4 and cls == 2
    p = a + 5 + ndims * width
    assert raw[p] == 5, "not a v2 B-tree chunk index"
    btree = struct.unpack_from("<Q", raw, p + 7)[0]
    addrs = sorted(ds.id.get_chunk_info(i).byte_offset for i in range(ds.id.get_num_chunks()))
    return [f"chunks\t{path}\t{ds_path}\t{btree}\t" + ",".join(map(str, addrs)), "end"]


def make_fixture():
    path = "dense_storage.h5"
    with h5py.File(path, "w", libver="latest") as f:
        target = f.create_dataset("target", data=np.arange(4, dtype="i4"))
        sub = f.create_group("sub")
        # Dense links, no creation order: hard, soft and external links, UTF-8 names.
        plain = f.create_group("plain")
        for i in range(12):
            plain[f"hard_{i:02d}"] = target if i % 2 else sub
        plain["soft_a"] = h5py.SoftLink("/target")
        plain["soft_dangling"] = h5py.SoftLink("/no/such/thing")
        plain["ext"] = h5py.ExternalLink("other.h5", "/data/x")
        plain["名前"] = sub
        # Enough links (creation order tracked and indexed) for a depth-2 name index.
        many = f.create_group("many", track_order=True)
        for i in range(1300):
            many[f"s{(i * 7919) % 1300:04d}"] = h5py.SoftLink(f"/t{i}")
        # Dense attributes with creation order, one large enough to be a huge heap object.
        holder = f.create_group("attr_holder", track_order=True)
        for i in range(30):
            holder.attrs[f"a{(i * 13) % 30:02d}"] = np.arange(i + 1, dtype="f8")
        holder.attrs["big"] = np.arange(72000 // 4, dtype="i4")
        # Dense attributes without creation order.
        ds = f.create_dataset("attr_ds", data=np.zeros(3))
        for i in range(20):
            ds.attrs[f"z{19 - i:02d}"] = f"value {i}"
    raw = open(path, "rb").read()
    lines = []
    with h5py.File(path, "r") as f:
        for g in ["plain", "many"]:
            lines += group_block(path, raw, f, g)
        for o in ["attr_holder", "attr_ds"]:
            lines += attr_block(path, raw, f, o)
    open("dense_storage.expect", "w").write("\n".join(lines) + "\n")


def make_corpus_expectations():
    lines = []
    for rel, groups, attrs, chunks in [
        ("jhdf/test_large_group_latest.hdf5", ["large_group"], [], []),
        ("jhdf/test_ordered_group_latest.hdf5", ["ordered_group", "unordered_group"], [], []),
        ("pyfive/new_style_groups.hdf5", ["/"], [], []),
        ("pyfive/btreev2.hdf5", [], [], ["btreev2", "btreev2_filters"]),
    ]:
        full = f"{CORPUS}/{rel}"
        raw = open(full, "rb").read()
        with h5py.File(full, "r") as f:
            for g in groups:
                lines += group_block(rel, raw, f, g)
            for o in attrs:
                lines += attr_block(rel, raw, f, o)
            for d in chunks:
                lines += chunk_block(rel, raw, f, d)
    open("corpus.expect", "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    make_fixture()
    make_corpus_expectations()
