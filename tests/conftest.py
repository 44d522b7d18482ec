"""Shared fixtures: the backend switch (h5py-backed test double or the real native module)."""

import importlib.util
import sys
from pathlib import Path

import pytest

# Run from a source tree: use python/h5turbo unless an installed h5turbo is present.
if importlib.util.find_spec("h5turbo") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import fake_native  # noqa: E402  (tests/ is on sys.path: pytest's rootdir conftest)


def _import_real_native():
    """(module, None) when h5turbo._native is built, else (None, why not)."""
    try:
        import h5turbo._native as real
    except ModuleNotFoundError as exc:
        if exc.name != "h5turbo._native":
            raise
        return None, f"h5turbo._native is not built ({exc})"
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
