"""Shared fixtures: the backend switch (h5py-backed test double or the real native module)."""

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import pytest

# Always test this source tree's Python package (an installed copy may be older).
SOURCE = Path(__file__).resolve().parent.parent / "python"
sys.path.insert(0, str(SOURCE))

import fake_native  # noqa: E402  (tests/ is on sys.path: pytest's rootdir conftest)


def _installed_native_spec():
    """The compiled h5turbo._native of an installed h5turbo (pip install .), if any: used
    when the source tree has none built in place (maturin develop puts one there)."""
    for entry in sys.path:
        folder = Path(entry or ".") / "h5turbo"
        if not folder.is_dir() or folder.resolve() == (SOURCE / "h5turbo").resolve():
            continue
        finder = importlib.machinery.FileFinder(
            str(folder),
            (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES))
        spec = finder.find_spec("h5turbo._native")
        if spec is not None:
            return spec
    return None


def _import_real_native():
    """(module, None) when a compiled h5turbo._native exists, else (None, why not)."""
    try:
        import h5turbo._native as real
        return real, None
    except ModuleNotFoundError as exc:
        if exc.name != "h5turbo._native":
            raise
        missing = f"h5turbo._native is not built ({exc})"
    spec = _installed_native_spec()
    if spec is None:
        return None, missing
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    sys.modules["h5turbo._native"] = real
    return real, None


REAL_NATIVE, REAL_NATIVE_MISSING = _import_real_native()
if REAL_NATIVE is None:
    # The package imports its error classes from h5turbo._native: let it find the double.
    sys.modules["h5turbo._native"] = fake_native
else:
    fake_native.use_error_classes(REAL_NATIVE)

import h5turbo  # noqa: E402
import h5turbo._file  # noqa: E402

BACKENDS = ["fake", "native"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """Open files through the h5py-backed double ('fake') or the compiled module ('native')."""
    if request.param == "native":
        if REAL_NATIVE is None:
            pytest.skip(REAL_NATIVE_MISSING)
        monkeypatch.setattr(h5turbo._file, "_native", REAL_NATIVE)
    else:
        monkeypatch.setattr(h5turbo._file, "_native", fake_native)
    return request.param
