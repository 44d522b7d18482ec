"""Generate the dereferencing fixtures and the names h5py gives each reference.

Run from this directory:  python3 make_refs.py
Writes refs_earliest.h5 and refs_latest.h5 (symbol-table groups / link messages and
dense link storage) and refs.expect: per file, one line per stored reference,
"<file> <index> <address> <name h5py gives f[ref].name>".

Objects reached by several paths (hard links in two groups, a group linked twice)
make the name depend on the order libhdf5 walks the file, which h5turbo must follow.
"""
import h5py
import numpy as np


def write(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        refs = f.create_group("#refs#")
        for i in range(40):  # many members: dense link storage with libver latest
            refs.create_dataset("%x" % i, data=np.arange(i % 5))
        a = f.create_group("a")
        shared = a.create_group("shared")
        shared.create_dataset("leaf", data=[1, 2])
        f["b"] = a  # the group /a reached twice
        f.create_group("z")["again"] = shared  # /a/shared reached by a third path
        f["#refs#"]["alias_of_a"] = a["shared/leaf"]
        f["soft"] = h5py.SoftLink("/a/shared")
        targets = [refs["%x" % i] for i in range(40)]
        targets += [a, shared, shared["leaf"], f["z"], f, f["z/again"], f["b/shared/leaf"]]
        cell = f.create_dataset("cell", (len(targets),), dtype=h5py.ref_dtype)
        for i, t in enumerate(targets):
            cell[i] = t.ref


def expectations(path, name):
    lines = []
    with h5py.File(path, "r") as f:
        for i, ref in enumerate(f["cell"][()]):
            obj = f[ref]
            lines.append("%s %d %d %s" % (name, i, h5py.h5o.get_info(obj.id).addr if hasattr(h5py.h5o.get_info(obj.id), "addr") else 0, obj.name))
    return lines


lines = []
for libver in ("earliest", "latest"):
    name = "refs_%s.h5" % libver
    write(name, libver)
    lines += expectations(name, name)
with open("refs.expect", "w") as out:
    out.write("\n".join(lines) + "\n")
