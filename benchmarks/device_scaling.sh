#!/usr/bin/env bash
# Scaling past 2 cores on a lent machine that has Python, numpy and h5py but no
# libhdf5-dev, no compiler toolchain we rely on, no hdf5plugin and no network:
#
#   [BEFORE=DIR] benchmarks/device_scaling.sh pack BUNDLE.tar.xz [SLOW5LIB_SOURCE]   (here, after make setup && make c)
#   [ROUNDS=3] [C_THREADS=...] [CASES=...] benchmarks/device_scaling.sh run BUNDLE.tar.xz OUTDIR [THREADS]   (there, in the repository root)
#
# BEFORE: an earlier build to time beside this one: a folder holding its `h5turbo`
# package (with _native) and lib/libh5turbo.so. CASES: scaling.py's cases (default all).
#
# pack gathers what the run needs and the other machine lacks: the Python extension,
# libh5turbo.so, the C benchmark programs built here (with every library libhdf5 links,
# since only glibc can be assumed there), the LZ4 part of hdf5plugin and ONT's vbz
# plugin (to write the files with h5py) and a pyslow5 wheel (to convert them to BLOW5).
# run unpacks it, finds a directory whose files can be dropped from the page cache
# (a tmpfs cannot), writes the benchmark files there and runs benchmarks/scaling.py
# and benchmarks/c_fast5/bench.py over the thread counts, results into OUTDIR.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

pack() {
    local bundle=$1 slow5=${2:-} stage
    stage=$(mktemp -d)
    mkdir -p "$stage"/{bin,lib,plugins,site,whl,native}
    local py="$here/.venv/bin/python"
    local site
    site=$("$py" -c 'import hdf5plugin, os; print(os.path.dirname(hdf5plugin.__file__))')
    cp "$here/python/h5turbo/_native.abi3.so" "$stage/native/"
    cp -P "$here"/build/c/lib/libh5turbo.so* "$stage/lib/"
    if [ -n "${BEFORE:-}" ]; then
        mkdir -p "$stage/before/py" "$stage/before/lib"
        cp -r "$BEFORE/h5turbo" "$stage/before/py/"
        cp -P "$BEFORE"/lib/libh5turbo.so* "$stage/before/lib/"
    fi
    # the C programs, built as bench.py builds them
    "$py" - "$stage/bin" "$slow5" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks/c_fast5")
import bench
out = Path(sys.argv[1])
bench.build(out)
if sys.argv[2]:
    bench.build_blow5_loop(out, Path(sys.argv[2]).resolve())
EOF
    for program in "$stage"/bin/*; do
        ldd "$program" | awk '/=>/ {print $3}' | grep -v -e '/libc\.so' -e '/libm\.so' -e '/libresolv' -e '/libpthread' -e '/libdl\.' -e '/librt\.' -e 'libh5turbo' \
            | xargs -r cp -L -t "$stage/lib/"
    done
    mkdir -p "$stage/site/hdf5plugin/plugins"
    cp "$site"/*.py "$stage/site/hdf5plugin/"
    cp "$site/plugins/libh5lz4.so" "$stage/site/hdf5plugin/plugins/"
    cp "$("$py" -c 'import ont_fast5_api, os; print(os.path.dirname(ont_fast5_api.__file__))')/vbz_plugin/libvbz_hdf_plugin_x86_64.so" \
        "$stage/plugins/"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$stage/whl" pyslow5
    tar -C "$stage" -cJf "$bundle" .
    rm -rf "$stage"
    ls -la "$bundle"
}

# A directory on a disk (not in memory): eviction must work there for cold runs to mean anything.
evictable_dir() {
    local d
    for d in "$here/.bench-data" /var/tmp/h5turbo-bench /root/h5turbo-bench /tmp/h5turbo-bench; do
        mkdir -p "$d" 2>/dev/null || continue
        if python3 - "$d" <<'EOF'
import os, sys
sys.path.insert(0, "python")
from pathlib import Path
from h5turbo.bench.measure import evict
p = Path(sys.argv[1]) / "probe"
p.write_bytes(os.urandom(64 << 20))
ok = evict(p).ok
p.unlink()
sys.exit(0 if ok else 1)
EOF
        then echo "$d"; return 0; fi
    done
    return 1
}

run() {
    local bundle=$1 out=$2 threads=${3:-1,2,4,8,16} rounds=${ROUNDS:-3} stage=/tmp/h5turbo-device
    mkdir -p "$stage" "$out"
    tar -C "$stage" -xJf "$bundle"
    cp "$stage/native/_native.abi3.so" "$here/python/h5turbo/"
    python3 -m pip install --quiet --no-index --no-deps --target "$stage/site" "$stage"/whl/*.whl
    export PYTHONPATH="$here/python:$stage/site" LD_LIBRARY_PATH="$stage/lib" HDF5_PLUGIN_PATH="$stage/plugins"
    cd "$here"
    local data modes=cold,warm
    if ! data=$(evictable_dir); then
        data=/tmp/h5turbo-bench modes=warm
        echo "no directory here lets its files leave the page cache: warm runs only" | tee "$out/no-cold.txt"
    fi
    { echo "data: $data"; df -h "$data"; grep -m1 'model name' /proc/cpuinfo; nproc; free -g; uname -r
      python3 -c 'import numpy, h5py; print("numpy", numpy.__version__, "h5py", h5py.__version__)'; } \
        | tee "$out/machine.txt"
    local py_before=() c_before=()
    if [ -d "$stage/before" ]; then
        py_before=(--before "$stage/before/py") c_before=(--before-lib "$stage/before/lib")
    fi
    python3 benchmarks/scaling.py --threads "$threads" --rounds "$rounds" --modes "$modes" --data "$data" \
        --cases "${CASES:-dense,lz4,colsums,single,multi}" --h5py-cases dense,lz4,colsums,single "${py_before[@]}" \
        --output "$out/scaling.md" 2>&1 | tee "$out/scaling.log" | grep -v '^round' || true
    python3 benchmarks/c_fast5/bench.py --threads "${C_THREADS:-$threads}" --programs "$stage/bin" --data "$data/fast5" \
        --repeats "$rounds" "${c_before[@]}" --output "$out/c_fast5.md" 2>&1 | tee "$out/c_fast5.log" | tail -3
}

case ${1:-} in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 pack BUNDLE [SLOW5LIB_SOURCE] | run BUNDLE OUTDIR [THREADS]" >&2; exit 2 ;;
esac
