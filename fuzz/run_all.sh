#!/usr/bin/env bash
# Run every fuzz target with the stable driver: SECONDS each (open_read gets 4x),
# under a 4 GiB address-space limit; an abort or hang keeps its input as
# artifacts/TARGET/crash-RC. Usage: fuzz/run_all.sh [SECONDS] [SEED]
set -u
cd "$(dirname "$0")"
secs=${1:-60}
seed=${2:-1}
cargo build --release --no-default-features --bin drive -q || exit 1
[ -d corpus/open_read ] || python3 seed_corpus.py
targets="open_read $(ls corpus | grep '^decode_' | tr '\n' ' ')"
for t in $targets; do
    budget=$secs
    [ "$t" = open_read ] && budget=$((secs * 4))
    ( ulimit -v 4194304; timeout $((budget + 60)) ./target/release/drive "$t" "$budget" "corpus/$t" "$seed" )
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$t: driver exited with $rc; input kept as artifacts/$t/crash-$rc"
        cp "artifacts/$t/current" "artifacts/$t/crash-$rc" 2>/dev/null
    fi
done
