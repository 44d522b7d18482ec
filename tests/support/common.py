"""Where the suite's inputs are, and the switches every test module may need."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = TESTS_DIR.parent
SUPPORT_DIR = TESTS_DIR / "support"
DATA_DIR = TESTS_DIR / "data"
# HDF5 files other programs wrote (origins and licences in its README.md); part of the
# repository, so a clone alone runs every test.
CORPUS_DIR = DATA_DIR / "corpus"


def corpus_dir() -> Path:
    return CORPUS_DIR


def _is_hdf5(path: Path) -> bool:
    """HDF5 signature at 0, 512, 1024, 2048, ... (after a userblock)."""
    with open(path, "rb") as handle:
        offset = 0
        while True:
            handle.seek(offset)
            head = handle.read(8)
            if head == b"\x89HDF\r\n\x1a\n":
                return True
            if len(head) < 8:
                return False
            offset = 512 if offset == 0 else offset * 2


def corpus_files() -> list[Path]:
    """Every HDF5 file of the corpus."""
    return sorted(p for p in corpus_dir().rglob("*") if p.is_file() and _is_hdf5(p))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def import_h5turbo():
    """The package under test: required in CI, a skip elsewhere until it is built."""
    if in_ci():
        import h5turbo
        return h5turbo
    return pytest.importorskip("h5turbo", reason="h5turbo is not built/installed here")


def vbz_plugin_dir() -> str | None:
    """The directory of the vbz HDF5 filter plugin shipped inside ont_fast5_api."""
    spec = importlib.util.find_spec("ont_fast5_api")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "vbz_plugin"
    return str(folder) if folder.is_dir() else None


def run_python(script: str, timeout: float = 120) -> str:
    """Run ``script`` in a fresh interpreter that imports what this one does (for what a
    test must not do to its own process: limits, forks, thread counts); its output,
    after checking it exited 0."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr
    return done.stdout


def signature_offsets(data: bytes, signature: bytes) -> list[int]:
    """Where `signature` (a structure's magic bytes, and any header bytes after it)
    occurs in a file's bytes: to damage every structure of one kind."""
    at, found = 0, []
    while (at := data.find(signature, at)) >= 0:
        found.append(at)
        at += len(signature)
    return found
