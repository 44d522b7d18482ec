"""Broken and hostile files: a few hundred mutants of real files, read in child processes.

Each mutant (truncation, bit flips and boundary values in metadata, zeroed blocks,
splices of two files) is opened, walked and read fully in a worker process under an
address-space limit. Every operation must return data or raise h5turbo.Error
(KeyError/ValueError where the API says so): never a crash, a hang, a caught Rust
panic or a memory blow-up. Failures print the replay command.

H5TURBO_MUTANTS and H5TURBO_MUTANT_SEED change the count and the seed.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

from support.common import corpus_dir
from support import robust_mutants
from support.common import DATA_DIR, REPO_ROOT, SUPPORT_DIR

REGRESSIONS = DATA_DIR / "regressions"
COUNT = int(os.environ.get("H5TURBO_MUTANTS", "600"))
SEED = int(os.environ.get("H5TURBO_MUTANT_SEED", "20261122"))
BATCH = 60
MUTANT_TIMEOUT = 20.0      # seconds without progress before a mutant counts as a hang
MAX_BASE_BYTES = 400_000   # keep each mutant cheap to read


def _generated(folder: Path) -> list[Path]:
    """Small files covering the layouts and indexes h5py writes, earliest and latest."""
    paths = []
    for libver in ("earliest", "latest"):
        path = folder / f"gen_{libver}.h5"
        with h5py.File(path, "w", libver=libver) as f:
            _fill(f)
        paths.append(path)
    return paths


def _fill(f) -> None:
    rng = np.random.default_rng(7)
    f.attrs["title"] = "robust"
    f.attrs["vec"] = np.arange(5, dtype="<i8")
    g = f.create_group("g/sub")
    for i in range(12):  # enough links for dense storage under 'latest'
        g.create_dataset(f"d{i}", data=np.full(3, i, dtype="<i2"))
    data = rng.integers(0, 50, (40, 30), dtype="<i4")
    f.create_dataset("contig", data=data)
    _compact(f, "compact", np.arange(6, dtype="<f4"))
    f.create_dataset("gzip", data=data, chunks=(8, 8), compression="gzip", shuffle=True,
                     fletcher32=True)
    f.create_dataset("ext", data=data, chunks=(8, 8), maxshape=(None, 30))
    f.create_dataset("bt2", data=data, chunks=(8, 8), maxshape=(None, None))
    f.create_dataset("strings", data=["a", "bb", "ccc"], dtype=h5py.string_dtype())
    f["soft"] = h5py.SoftLink("/g/sub/d1")
    for i in range(10):
        f["gzip"].attrs[f"a{i}"] = np.arange(i + 1)
    vds = h5py.VirtualLayout(shape=(2, 30), dtype="<i4")  # a virtual dataset over "contig"
    vds[0] = h5py.VirtualSource(f["contig"])[3, :]
    vds[1, 0:10] = h5py.VirtualSource(f["contig"])[5, 0:20:2]
    f.create_virtual_dataset("vds", vds, fillvalue=-3)


def _compact(f, name: str, data: np.ndarray) -> None:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple(data.shape)
    dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data)


def _bases(tmp_path: Path) -> list[Path]:
    corpus = sorted(p for p in corpus_dir().rglob("*")
                    if p.is_file() and p.suffix != ".md" and p.stat().st_size <= MAX_BASE_BYTES)
    sohm = sorted((DATA_DIR / "sohm").glob("*.h5"))  # shared object header messages
    return corpus + sohm + _generated(tmp_path)


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _run_batch(entries: list[tuple[int, dict]], folder: Path) -> tuple[dict, list[int]]:
    """Run one worker over ``entries``; ({index: failure}, indices it did not reach)."""
    manifest = folder / f"batch_{entries[0][0]}.json"
    manifest.write_text(json.dumps(entries))
    env = dict(os.environ, H5TURBO_THREADS="2", PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT / "python"), str(SUPPORT_DIR), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(SUPPORT_DIR / "robust_mutants.py"), "worker",
                             str(manifest)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    failures, current, done = {}, None, set()
    while True:
        try:
            line = lines.get(timeout=MUTANT_TIMEOUT)
        except queue.Empty:
            proc.kill()
            failures[current] = f"hang: no progress in {MUTANT_TIMEOUT:.0f} s"
            break
        if line is None:
            break
        word, _, rest = line.strip().partition(" ")
        if word == "START":
            current = int(rest)
        elif word == "OK":
            done.add(int(rest))
        elif word == "BAD":
            index, _, why = rest.partition(" ")
            failures[int(index)] = why
            done.add(int(index))
    rc = proc.wait()
    if current is not None and current not in done and current not in failures:
        failures[current] = f"worker died with return code {rc}"
    finished = done | set(failures)
    return failures, [i for i, _ in entries if i not in finished]


def _run_all(entries: list[dict], folder: Path) -> dict:
    """Every mutant through workers; a dead worker is replaced for the rest."""
    pending = list(enumerate(entries))
    failures = {}
    while pending:
        batch, pending = pending[:BATCH], pending[BATCH:]
        found, unreached = _run_batch(batch, folder)
        failures.update(found)
        pending = [(i, entries[i]) for i in unreached] + pending
    return failures


def _report(failures: dict, entries: list[dict]) -> str:
    lines = [f"{len(failures)} of {len(entries)} mutants failed (seed {SEED}):"]
    for i, why in sorted(failures.items()):
        e = entries[i]
        lines.append(f"  #{i} {e['kind']} ({e['what']}) of {e['base']}: {why}\n"
                     f"    replay: python tests/support/robust_mutants.py replay {e['base']} "
                     f"{e['other']} {e['seed']} {e['kind']} /tmp/mutant.h5")
    return "\n".join(lines)


def test_mutants_error_or_data(tmp_path):
    """A few hundred mutants: each read gives data or an h5turbo error, nothing worse."""
    bases = _bases(tmp_path)
    assert len(bases) >= 20, "the corpus is missing"
    entries = robust_mutants.make_mutants(bases, COUNT, SEED, tmp_path)
    failures = _run_all(entries, tmp_path)
    assert not failures, _report(failures, entries)


def test_worker_reports_crashes(tmp_path):
    """The harness itself: a worker that dies is reported, not taken for a pass."""
    entries = [(0, {"path": str(tmp_path / "missing.h5")})]
    manifest = tmp_path / "boom.json"
    manifest.write_text(json.dumps(entries))
    code = ("import os, robust_mutants; robust_mutants.exercise = "
            "lambda p: os.abort(); robust_mutants.worker(%r)" % str(manifest))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(SUPPORT_DIR)))
    assert proc.returncode < 0 and "START 0" in proc.stdout and "OK 0" not in proc.stdout


def test_memory_limit_applies(tmp_path):
    """Under the worker's address-space limit a huge allocation fails as MemoryError."""
    code = ("import resource, robust_mutants, numpy as np\n"
            "lim = robust_mutants.MEMORY_LIMIT\n"
            "resource.setrlimit(resource.RLIMIT_AS, (lim, lim))\n"
            "try:\n    np.ones(lim, dtype=np.uint8)\nexcept MemoryError:\n    print('limited')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(SUPPORT_DIR)))
    assert "limited" in proc.stdout, proc.stderr


def test_results_too_large_for_a_memory_limit_are_errors(tmp_path):
    """2^25 variable-length strings or sequences (unwritten: none stored) under an
    address-space limit 768 MiB above what the process maps: an h5turbo error, where
    the per-element values were once collected into vectors grown past the limit and
    Rust's allocation failure aborted the interpreter."""
    import h5py
    path = tmp_path / "unwritten.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", shape=(2**40,), dtype=h5py.string_dtype(), chunks=(1024,))
        f.create_dataset("seq", shape=(2**40,), dtype=h5py.vlen_dtype("i4"), chunks=(1024,))
    code = ("import resource, sys, h5turbo\n"
            "mapped = int(open('/proc/self/statm').read().split()[0]) * 4096\n"
            "resource.setrlimit(resource.RLIMIT_AS, (mapped + (768 << 20), resource.RLIM_INFINITY))\n"
            "with h5turbo.File(sys.argv[1]) as f:\n"
            "    for name in ['s', 'seq']:\n"
            "        try:\n            f[name][: 2**25]\n            print(name, 'read')\n"
            "        except (h5turbo.Error, MemoryError) as e:\n            print(name, 'refused:', type(e).__name__, e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("refused: OutOfMemoryError") == 2 and "cannot allocate" in proc.stdout, proc.stdout


def test_results_larger_than_memory_are_errors_without_a_memory_limit(tmp_path):
    """A reduction whose output cells are more than the machine's memory (2^40 cells, none
    stored), with no limit set: OutOfMemoryError, a MemoryError too, at once. The cells
    were reserved fallibly, but the allocator maps large blocks without reserving them
    (the kernel never refuses), and filling them ran until the out-of-memory killer. The
    child is killed here once it holds more than 2 GiB."""
    import time
    path = tmp_path / "huge.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(2**40, 2), dtype="f8", chunks=(2**20, 2))
    code = ("import sys, h5turbo\n"
            "with h5turbo.File(sys.argv[1]) as f:\n"
            "    try:\n        f['x'].sum(axis=1)\n        print('read')\n"
            "    except h5turbo.OutOfMemoryError as e:\n"
            "        print('refused:', isinstance(e, MemoryError), e)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        status = Path(f"/proc/{proc.pid}/status").read_text() if Path(f"/proc/{proc.pid}/status").exists() else ""
        rss_kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        if rss_kib > 2 << 20:
            proc.kill()
            pytest.fail(f"the reduction filled {rss_kib >> 10} MiB before it was killed")
        time.sleep(0.02)
    out = proc.communicate(timeout=10)[0] if proc.poll() is not None else (proc.kill(), "timed out")[1]
    assert out.startswith("refused: True") and "/x" in out and "cannot allocate" in out, out


def test_regression_files(tmp_path):
    """Mutants that once crashed, hung or panicked, under the worker's limits: now
    data or an h5turbo error."""
    paths = sorted(REGRESSIONS.glob("*.h5"))
    assert paths
    entries = [{"path": str(p), "base": str(p), "other": str(p), "seed": 0, "kind": "file",
                "what": p.name} for p in paths]
    failures = _run_all(entries, tmp_path)
    assert not failures, _report(failures, entries)


def test_element_size_mismatch_is_format_error():
    """Regression: a datatype size that disagrees with the chunked layout's (once an
    8 GiB chunk buffer and an abort) is a FormatError naming both sizes."""
    import h5turbo
    with h5turbo.File(str(REGRESSIONS / "chunk_element_size_mismatch.h5")) as f:
        with pytest.raises(h5turbo.FormatError, match="32-byte elements.*8388640"):
            f["DOMAINS"][()]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_a_chunk_claiming_gigabytes_costs_no_gigabytes():
    """Regression (fuzzing): a 269 KB file whose lzf dataset claims chunks of 4 GB
    (30 x 16711730 float64). The decode buffer was zero-filled to its full size before
    the stored bytes were found wrong: 4.4 s and 3.9 GB resident for a FormatError. A
    fresh zeroed allocation leaves the untouched pages unbacked."""
    from support.common import run_python
    out = run_python(f"""
import h5turbo
try:
    with h5turbo.File({str(REGRESSIONS / "chunk_claims_gigabytes.h5")!r}) as f:
        f["obsm/array"][()]
except h5turbo.FormatError as exc:
    print(exc)
# the peak of this process image (ru_maxrss would carry the forking parent's over exec)
print(next(int(line.split()[1]) // 1024 for line in open("/proc/self/status") if line.startswith("VmHWM")))
""")
    message, resident_mb = out.strip().rsplit("\n", 1)
    assert "/obsm/array: chunk at [0, 0]" in message, out
    assert int(resident_mb) < 1024, out

