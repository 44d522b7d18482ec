#!/bin/bash
# The fast5 C API with the system's free memory in two states, for builds side by side:
#
#   R=4 benchmarks/c_fast5/memory_state.sh PROGRAM SINGLE_LIST MULTI_LIST LIBDIR...
#
# PROGRAM: h5turbo_loop as bench.py builds it; the lists: the benchmark's single-read and
# multi-read files, one path a line; each LIBDIR holds a build's libh5turbo.so.SOVERSION
# (found first through LD_LIBRARY_PATH). For each round, set (2000 single-read, 50
# multi-read files) and thread count (1, 2), and each build in turn: the files are read
# (page cache warm), the machine idles 6 s, the program runs ("coldmem": in a virtual
# machine that hands free memory back to its host, the first write of each page then
# costs the host's fault too) and at once runs again ("warmmem": the memory just freed
# is reused). One line per run: round, set, threads, build, state, wall s, user s, sys s;
# then the median wall and CPU time of each case.
set -euo pipefail
program=$1 single=$2 multi=$3
shift 3
libs=("$@")
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for r in $(seq "${R:-4}"); do
    for set in single multi; do
        list=$single
        [ "$set" = multi ] && list=$multi
        for threads in 1 2; do
            xargs cat < "$list" > /dev/null
            for lib in "${libs[@]}"; do
                sleep 6
                for state in coldmem warmmem; do
                    t=$( { LD_LIBRARY_PATH=$lib /usr/bin/time -f "%e %U %S" "$program" "$threads" "$list" 512 > /dev/null; } 2>&1 )
                    echo "$r $set $threads $lib $state $t" | tee -a "$runs"
                done
            done
        done
    done
done
python3 - "$runs" <<'PY'
import collections, statistics, sys
cases = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, kind, threads, lib, state, wall, user, system = line.split()
    cases[(kind, threads, state, lib)].append((float(wall), float(user) + float(system)))
print("set threads state build: median wall s, median CPU s (runs)")
for (kind, threads, state, lib), runs in sorted(cases.items()):
    walls = [w for w, _ in runs]
    print(f"{kind} {threads} {state} {lib}: {statistics.median(walls):.3f} {statistics.median(c for _, c in runs):.3f}"
          f" ({' '.join(f'{w:.2f}' for w in walls)})")
PY
