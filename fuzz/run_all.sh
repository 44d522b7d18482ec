#!/usr/bin/env bash
# Run every fuzz target with the stable driver for SECONDS each (open_read gets 4x),
# under a 4 GiB address-space limit. A driver that aborts (allocation failure) or
# hangs keeps its input as artifacts/TARGET/crash-N and is restarted with the next
# seed until the target's time is spent. Usage: fuzz/run_all.sh [SECONDS] [SEED]
set -u
cd "$(dirname "$0")"
secs=${1:-60}
seed=${2:-1}
cargo build --release --no-default-features --bin drive -q || exit 1
# The seeds are written with h5py: the project's venv has it (a system python3 may not).
python=${PYTHON:-python3}
[ -x ../.venv/bin/python ] && python=${PYTHON:-../.venv/bin/python}
if [ ! -d corpus/open_read ]; then
    "$python" seed_corpus.py || { echo "fuzz: seeding the corpus failed (needs h5py)" >&2; rm -rf corpus; exit 1; }
fi
targets=${TARGETS:-"open_read $(ls corpus | grep '^decode_' | tr '\n' ' ')"}
for t in $targets; do
    budget=$secs
    [ "$t" = open_read ] && budget=$((secs * 4))
    end=$((SECONDS + budget))
    n=0
    while [ $SECONDS -lt $end ]; do
        left=$((end - SECONDS))
        ( ulimit -v 4194304; timeout $((left + 30)) ./target/release/drive "$t" "$left" "corpus/$t" "$seed" 2>/dev/null )
        rc=$?
        if [ $rc -ne 0 ]; then
            n=$((n + 1))
            echo "$t: driver exited with $rc (seed $seed); input kept as artifacts/$t/crash-$n"
            cp "artifacts/$t/current" "artifacts/$t/crash-$n" 2>/dev/null
        fi
        seed=$((seed + 1))
    done
done
