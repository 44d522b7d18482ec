"""Shared fixtures.

- The h5py oracle's plugin set-up (hdf5plugin + ONT's vbz plugin), done before
  anything imports h5py.
- The backend switch of the API tests: the h5py-backed test double ('fake') or the
  compiled module ('native').
- The generated file matrix (written once per session). Paths and helpers: support/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if str(Path(__file__).resolve().parent) not in sys.path:  # the support package under any import mode
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.common import vbz_plugin_dir  # noqa: E402


def _setup_plugins() -> None:
    """Before h5py loads: make every filter h5py can use available to the oracle."""
    folder = vbz_plugin_dir()
    if folder:
        paths = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
        if folder not in paths:
            os.environ["HDF5_PLUGIN_PATH"] = os.pathsep.join(paths + [folder])
    import h5py
    import hdf5plugin  # noqa: F401  (registers blosc, lz4, bitshuffle, zstd... with h5py)
    if folder and hasattr(h5py, "h5pl"):
        known = [h5py.h5pl.get(i).decode() for i in range(h5py.h5pl.size())]
        if folder not in known:
            h5py.h5pl.append(folder.encode())


_setup_plugins()

# The package under test is this source tree, installed editable (`make setup`), so its
# compiled module sits beside the Python sources. Without it the suite cannot run.
import h5turbo  # noqa: E402
import h5turbo.objects.file  # noqa: E402
import h5turbo._native as REAL_NATIVE  # noqa: E402

from support import fake_native  # noqa: E402  (tests/ is on sys.path: pytest's rootdir conftest)

fake_native.use_error_classes(REAL_NATIVE)

BACKENDS = ["fake", "native"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """Open files through the h5py-backed double ('fake') or the compiled module ('native')."""
    if request.param == "native":
        monkeypatch.setattr(h5turbo.objects.file, "_native", REAL_NATIVE)
    else:
        monkeypatch.setattr(h5turbo.objects.file, "_native", fake_native)
    return request.param

from support import h5gen  # noqa: E402  (after the plugin set-up)



@pytest.fixture(scope="session")
def matrix_paths(tmp_path_factory) -> dict:
    """{('data'|'structure', libver): Path} of the generated files."""
    return h5gen.build_all(tmp_path_factory.mktemp("h5matrix"))


@pytest.fixture(scope="session")
def open_pairs(matrix_paths):
    """{(kind, libver): (h5py.File, h5turbo.File)} opened once for the session."""
    import h5py
    import h5turbo
    pairs = {key: (h5py.File(path, "r"), h5turbo.File(str(path)))
             for key, path in matrix_paths.items()}
    yield pairs
    for ref, turbo in pairs.values():
        ref.close()
        turbo.close()
