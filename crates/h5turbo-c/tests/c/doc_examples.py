"""The C examples of docs/c.md as programs the C tests build and run.

doc_examples.py DOC OUTDIR writes into OUTDIR:
- doc_program_N.c: each example that is a whole program (it has a main), as it is;
- doc_fragments.c: every other example, each the body of a function given the open
  `file` and its dataset `ds` ("/matrix"), and a main that opens the file named by its
  first argument and runs them all in order;
- data.h5: a file the examples read (h5py): /matrix (20 x 100 float64, attributes
  scale and units) with /x attached as the dimension scale of its dimension 1, and
  /table, a compound of a variable-length string and a float64, and /ragged, three
  variable-length sequences of float64 (0, 2 and 4 values).
"""

import re
import sys
from pathlib import Path

import h5py
import numpy as np

FRAGMENTS_HEAD = """#include <h5turbo.h>
#include <stdint.h>
#include <stdio.h>
"""

FRAGMENTS_MAIN = """
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    h5turbo_file *file = NULL;
    h5turbo_object *ds = NULL;
    if (h5turbo_file_open(argv[1], &file) != H5TURBO_OK || h5turbo_object_open(file, "/matrix", &ds) != H5TURBO_OK) {
        fprintf(stderr, "%s\\n", h5turbo_last_error());
        return 1;
    }
CALLS    h5turbo_object_close(ds);
    h5turbo_file_close(file);
    return 0;
}
"""


def c_blocks(doc: str) -> list[str]:
    return re.findall(r"^```c\n(.*?)^```", doc, flags=re.S | re.M)


def write_data(path: Path) -> None:
    with h5py.File(path, "w") as f:
        matrix = f.create_dataset("matrix", data=np.arange(2000, dtype="<f8").reshape(20, 100), chunks=(8, 50),
                                  compression="gzip")
        matrix.attrs["scale"] = 2.0
        matrix.attrs["units"] = "mV"
        x = f.create_dataset("x", data=np.linspace(0.0, 1.0, 100))
        x.make_scale("x")
        matrix.dims[1].attach_scale(x)
        table = np.dtype([("name", h5py.string_dtype()), ("score", "<f8")])
        f["table"] = np.array([("alpha", 1.5), ("", -2.0), ("gamma", 0.25)], dtype=table)
        ragged = f.create_dataset("ragged", shape=(3,), dtype=h5py.vlen_dtype(np.dtype("<f8")))
        for i in range(3):
            ragged[i] = np.arange(i * 2, dtype="<f8")


def main(doc: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    blocks = c_blocks(doc.read_text())
    if not blocks:
        print(f"{doc}: no C examples found", file=sys.stderr)
        return 1
    fragments = []
    for n, block in enumerate(blocks, 1):
        if re.search(r"\bint\s+main\s*\(", block):
            (out / f"doc_program_{n}.c").write_text(block)
        else:
            body = "".join(f"    {line}\n" if line else "\n" for line in block.splitlines())
            fragments.append((n, f"/* docs example {n} */\nstatic void example_{n}(h5turbo_file *file, h5turbo_object *ds) {{\n"
                                 f"    (void)file;\n    (void)ds;\n    {{\n{body}    }}\n}}\n"))
    calls = "".join(f"    example_{n}(file, ds);\n" for n, _ in fragments)
    (out / "doc_fragments.c").write_text(FRAGMENTS_HEAD + "\n".join(text for _, text in fragments) + FRAGMENTS_MAIN.replace("CALLS", calls))
    write_data(out / "data.h5")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
