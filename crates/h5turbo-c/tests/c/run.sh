#!/bin/sh
# The C tests of libh5turbo (make c-test). Builds the test programs against the
# installed library (pkg-config h5turbo, from $H5TURBO_PREFIX) and libhdf5 (pkg-config
# hdf5-serial or hdf5), twice: plain and under AddressSanitizer + UBSan; then runs
# each test with both builds. Prints a line per test and "N passed, N failed" last.
#
# Environment: H5TURBO_PREFIX (where make install-c put the library; required),
# H5TURBO_CORPUS (default tests/data/corpus), PYTHON (with h5py and ont-fast5-api),
# HDF5_PLUGIN_PATH (default: the vbz plugin of the ont-fast5-api package, and for the
# plain builds hdf5plugin's filters too: blosc, blosc2, zstd, lz4, bitshuffle, ...).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
PREFIX=${H5TURBO_PREFIX:?set H5TURBO_PREFIX to the install-c prefix}
CORPUS=${H5TURBO_CORPUS:-$ROOT/tests/data/corpus}
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/h5turbo-c-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok   $*"; }
not_ok() { failed=$((failed + 1)); echo "FAIL $*"; }

# run NAME COMMAND...: a test passes when the command exits 0 within 300 s.
run() {
    name=$1
    shift
    case $(command -v "$1") in
        /*) timeout 300 "$@" > "$WORK/out" 2>&1 ;;
        *) "$@" > "$WORK/out" 2>&1 ;; # a shell function (its programs are quick)
    esac
    if [ $? -eq 0 ]; then
        ok "$name"
    else
        not_ok "$name"
        tail -n 15 "$WORK/out"
    fi
}

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
H5T_FLAGS="$(pkg-config --cflags h5turbo) -I$HERE"
H5T_LIBS="$(pkg-config --libs h5turbo) -Wl,-rpath,$PREFIX/lib"
HDF5_PC=hdf5-serial
pkg-config --exists $HDF5_PC || HDF5_PC=hdf5
HDF5_FLAGS=$(pkg-config --cflags $HDF5_PC)
HDF5_LIBS=$(pkg-config --libs $HDF5_PC)
# The plain builds load the vbz plugin and hdf5plugin's filters; the sanitizer builds
# the vbz plugin alone: hdf5plugin's leak a few allocations per process, which
# LeakSanitizer reports (from the unloaded plugin) as the test's own.
if [ -z "${HDF5_PLUGIN_PATH:-}" ]; then
    VBZ_PLUGIN=$("$PYTHON" -c 'import ont_fast5_api, os; print(os.path.join(os.path.dirname(ont_fast5_api.__file__), "vbz_plugin"))' 2>/dev/null)
    MORE_PLUGINS=$("$PYTHON" -c 'import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)' 2>/dev/null)
    PLUGINS_PLAIN=$VBZ_PLUGIN${MORE_PLUGINS:+:$MORE_PLUGINS}
    PLUGINS_ASAN=$VBZ_PLUGIN
else
    PLUGINS_PLAIN=$HDF5_PLUGIN_PATH
    PLUGINS_ASAN=$HDF5_PLUGIN_PATH
fi
# use_plugins VARIANT
use_plugins() {
    if [ "$1" = asan ]; then HDF5_PLUGIN_PATH=$PLUGINS_ASAN; else HDF5_PLUGIN_PATH=$PLUGINS_PLAIN; fi
    export HDF5_PLUGIN_PATH
}
use_plugins plain

# build VARIANT EXTRA_CFLAGS: every test program into $WORK/VARIANT/
build() {
    mkdir -p "$WORK/$1"
    cflags="-std=gnu11 -O1 -g -Wall -Wextra -Werror $2"
    for t in api_test threads_test broken_test memory_limit_test; do
        cc $cflags $H5T_FLAGS -o "$WORK/$1/$t" "$HERE/$t.c" $H5T_LIBS -lpthread -lm || return 1
    done
    cc $cflags $H5T_FLAGS $HDF5_FLAGS -o "$WORK/$1/compare" "$HERE/compare.c" $H5T_LIBS $HDF5_LIBS -lm || return 1
    cc $cflags $H5T_FLAGS $HDF5_FLAGS -o "$WORK/$1/external_links_test" "$HERE/external_links_test.c" $H5T_LIBS $HDF5_LIBS || return 1
    cc $cflags -o "$WORK/$1/loading_test" "$HERE/loading_test.c" -ldl -lpthread || return 1
}
# The installed header on its own, in strict C89 to C11 and C++ (included twice).
header_strict() {
    printf '#include <h5turbo.h>\n#include <h5turbo.h>\nint main(void) { return H5TURBO_OK; }\n' > "$WORK/header.c"
    for std in c89 c99 c11; do
        cc -std=$std -pedantic-errors -Wall -Wextra -Werror $H5T_FLAGS -c -o "$WORK/header.o" "$WORK/header.c" || return 1
    done
    cp "$WORK/header.c" "$WORK/header.cpp"
    c++ -std=c++11 -pedantic-errors -Wall -Wextra -Werror $H5T_FLAGS -c -o "$WORK/header.o" "$WORK/header.cpp"
}
run "the header compiles alone: C89, C99, C11, C++11" header_strict
run "build the tests (plain)" build plain ""
run "build the tests (ASan + UBSan)" build asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
run "build h5sum_hdf5 (libhdf5 reference)" cc -std=gnu11 -O2 -Wall -Werror $HDF5_FLAGS -o "$WORK/h5sum_hdf5" "$HERE/h5sum_hdf5.c" $HDF5_LIBS -lm
# The installed libh5turbo.so links to the file named by its SONAME, and a program
# linked with -lh5turbo records that name (not libh5turbo.so) to load.
soname_check() {
    soname=$(readlink "$PREFIX/lib/libh5turbo.so") && [ -f "$PREFIX/lib/$soname" ] &&
        readelf -d "$PREFIX/lib/$soname" | grep -qF "Library soname: [$soname]" &&
        readelf -d "$WORK/plain/api_test" | grep -qF "Shared library: [$soname]"
}
run "the shared library's SONAME: its link installed, recorded by programs" soname_check
run "link the static library (pkg-config --static)" cc -std=gnu11 -O1 $H5T_FLAGS -I"$HERE" -o "$WORK/api_test_static" "$HERE/api_test.c" \
    -L"$PREFIX/lib" -Wl,-Bstatic -lh5turbo -Wl,-Bdynamic $(pkg-config --static --libs-only-other --libs-only-l h5turbo | sed 's/-lh5turbo//') -lm

if [ ! -d "$CORPUS/fast5" ]; then
    not_ok "corpus: no $CORPUS/fast5 (set H5TURBO_CORPUS)"
    echo "$passed passed, $failed failed"
    exit 1
fi
run "generate files with h5py" "$PYTHON" "$HERE/gen_files.py" "$WORK/gen" "$WORK/huge_signal.fast5"
head -c 3000 "$CORPUS/fast5/vbz_multi_fast5_vbz.fast5" > "$WORK/truncated.fast5"
# (gen/many_fast5, 150 small fast5 files for api_test, gen/damaged, files broken
# for api_test's messages, and gen/link_targets, 68 small files for api_test, left out)
FILES=$(find "$CORPUS" "$WORK/gen" \( -path "$WORK/gen/many_fast5" -o -path "$WORK/gen/damaged" -o -path "$WORK/gen/external" -o -path "$WORK/gen/link_targets" \) -prune -o -type f ! -name '*.md' ! -name '*.txt' ! -name '*.py' -print | LC_ALL=C sort)

# allocator_may_return_null: a size no allocator can give returns NULL, as malloc does,
# so the tests of huge sizes from damaged files reach the library's error path.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for variant in plain asan; do
    bin=$WORK/$variant
    # the sanitizer's leak checker sees the library's allocations only through malloc
    if [ $variant = asan ]; then export H5TURBO_SYSTEM_MALLOC=1; else unset H5TURBO_SYSTEM_MALLOC; fi
    use_plugins $variant
    [ -x "$bin/api_test" ] || { not_ok "$variant: test programs not built"; continue; }
    run "$variant: api_test" "$bin/api_test" "$WORK/gen" "$CORPUS/fast5" "$WORK/truncated.fast5" "$WORK/huge_signal.fast5"
    [ -x "$WORK/api_test_static" ] && [ $variant = plain ] && \
        run "static: api_test" "$WORK/api_test_static" "$WORK/gen" "$CORPUS/fast5" "$WORK/truncated.fast5" "$WORK/huge_signal.fast5"
    for f in $FILES; do
        # 2^31 + 1 elements: 65 s plain, 86 s more under the sanitizers, for the same
        # reads (the plain run checks their values past 2^31)
        case "$variant:$f" in asan:*tiny_huge_1d_over_maxint*) continue ;; esac
        run "$variant: compare with libhdf5 ${f#$ROOT/}" "$bin/compare" "$f"
    done
    for f in "$WORK/gen/structures.h5" "$WORK/gen/dtypes.h5" "$WORK/gen/filters.h5" \
             "$CORPUS/fast5/vbz_multi_fast5_vbz.fast5" "$CORPUS/fast5/hardlink_unlinked_batch0.fast5"; do
        run "$variant: 8 threads share one handle ${f#$ROOT/}" "$bin/threads_test" "$f" 8
    done
    # libhdf5-written links into target files; the test rewrites a target, so on a copy
    links=$WORK/$variant/external_links
    rm -rf "$links" && mkdir -p "$links" && cp "$ROOT"/crates/h5turbo-core/tests/data/external_links/*.h5 "$links"
    run "$variant: external links open each target once, changed ones again" "$bin/external_links_test" "$links"
    # the library dlopened by a thread that exits before it is used again, and 4 copies
    # beside it (5 rounds: the crash this guards against came in most runs, not all)
    mkdir -p "$WORK/copies" && for k in 0 1 2 3; do cp "$PREFIX/lib/libh5turbo.so" "$WORK/copies/copy$k.so"; done
    loading() { for round in 1 2 3 4 5; do "$bin/loading_test" "$PREFIX/lib/libh5turbo.so" "$WORK/gen/filters.h5" /gzip/i4 "$WORK/copies" || return 1; done; }
    run "$variant: loaded by a thread gone before it is used; 4 copies loaded beside it" loading
done
use_plugins plain

# Results too large for a memory limit (RLIMIT_AS): errors, not the program aborted.
# Plain build only (the sanitizers reserve more address space than the limit leaves).
unwritten_py='
import sys, h5py
with h5py.File(sys.argv[1], "w") as f:
    for name, dtype in [("vlen_strings", h5py.string_dtype()), ("fixed_strings", "S8"),
                        ("sequences", h5py.vlen_dtype("i4")), ("references", h5py.ref_dtype)]:
        f.create_dataset(name, shape=(2**40,), dtype=dtype, chunks=(1024,))
'
memory_limit() { "$PYTHON" -c "$unwritten_py" "$WORK/unwritten.h5" && "$WORK/plain/memory_limit_test" "$WORK/unwritten.h5"; }
run "plain: results too large for a memory limit are errors" memory_limit

# The example programs against their references.
H5SUM=$PREFIX/bin/h5sum
FAST5_DUMP=$PREFIX/bin/fast5_dump
h5sum_matches() {
    "$WORK/h5sum_hdf5" "$1" > "$WORK/h5sum.expected" 2> /dev/null
    reference=$?
    "$H5SUM" "$1" > "$WORK/h5sum.got" 2> "$WORK/h5sum.err"
    if [ $reference -eq 0 ]; then
        diff "$WORK/h5sum.expected" "$WORK/h5sum.got"
    else
        # libhdf5 lacks a filter here: every line it printed must be h5sum's too
        ! grep -Fxv -f "$WORK/h5sum.got" "$WORK/h5sum.expected"
    fi
}
for f in $FILES; do
    run "h5sum = libhdf5's sums ${f#$ROOT/}" h5sum_matches "$f"
done
# FAST5_THREADS / FAST5_IO_DEPTH: the threads and read-ahead window fast5_dump runs with.
fast5_matches() {
    "$PYTHON" "$HERE/fast5_expected.py" "$@" > "$WORK/fast5.expected" 2> /dev/null || return 1
    H5TURBO_THREADS=${FAST5_THREADS:-2} H5TURBO_IO_DEPTH=${FAST5_IO_DEPTH:-32M} FAST5_DUMP_BATCH=${FAST5_BATCH:-7} \
        "$FAST5_DUMP" "$@" > "$WORK/fast5.got" 2> /dev/null
    diff "$WORK/fast5.expected" "$WORK/fast5.got"
}
run "fast5_dump = ont-fast5-api (corpus folder)" fast5_matches "$CORPUS/fast5"
fast5_without_hints() ( FAST5_THREADS=1; FAST5_IO_DEPTH=0; fast5_matches "$@" )
run "fast5_dump = ont-fast5-api, 1 thread, no read-ahead hints (corpus folder)" fast5_without_hints "$CORPUS/fast5"
run "fast5_dump -a = ont-fast5-api, every field and the samples' order (corpus folder)" fast5_matches -a "$CORPUS/fast5"
run "fast5_dump -a = ont-fast5-api: reads named by their links, numbers in either byte order, halves" \
    fast5_matches -a "$WORK/gen/ont_named_fast5"
# A batch of 1000 reads from 400 single-read files with 64 descriptors allowed: the
# files are opened a few dozen at a time, not a batch's worth at once.
mkdir -p "$WORK/singles"
for i in $(seq -w 1 400); do cp "$CORPUS/fast5/single_reads_read0.fast5" "$WORK/singles/read_$i.fast5"; done
few_descriptors() ( FAST5_BATCH=1000; ulimit -n 64 && fast5_matches "$@" )
run "fast5_dump = ont-fast5-api, 400 single-read files in one batch, ulimit -n 64" few_descriptors "$WORK/singles"
for f in "$CORPUS"/fast5/*.fast5; do
    run "fast5_dump = ont-fast5-api ${f#$ROOT/}" fast5_matches "$f"
done
# A sub-folder that cannot be listed is one failed entry, naming it; the other files
# are read (as `find` reports it and goes on). Root lists any folder: run without the
# right to override permissions (setpriv), or as who we are.
locked_folder() {
    d=$WORK/locked_tree
    rm -rf "$d" && mkdir -p "$d/locked" && cp "$CORPUS/fast5/single_reads_read0.fast5" "$d/a.fast5" &&
        cp "$CORPUS/fast5/single_reads_read0.fast5" "$d/locked/b.fast5" && chmod 000 "$d/locked" || return 1
    as_user=""
    if [ "$(id -u)" = 0 ]; then
        command -v setpriv > /dev/null || { echo "no setpriv to drop root's permission override"; chmod 755 "$d/locked"; return 1; }
        as_user="setpriv --bounding-set=-dac_override,-dac_read_search --inh-caps=-dac_override,-dac_read_search"
    fi
    $as_user "$FAST5_DUMP" "$d" > "$WORK/locked.out" 2> "$WORK/locked.err"
    status=$?
    chmod 755 "$d/locked"
    cat "$WORK/locked.out" "$WORK/locked.err"
    [ $status -eq 1 ] && [ "$(wc -l < "$WORK/locked.out")" -eq 2 ] &&
        grep -q "locked: cannot list the folder" "$WORK/locked.err"
}
run "fast5_dump: a sub-folder that cannot be listed fails alone" locked_folder

# docs/c.md's examples, built and run: the whole programs as they are, the fragments
# each in a function given the open file and its dataset (doc_examples.py).
DOCS=$WORK/docs
run "extract the C examples of docs/c.md" "$PYTHON" "$HERE/doc_examples.py" "$ROOT/docs/c.md" "$DOCS"
doc_build() {
    for src in "$DOCS"/doc_*.c; do
        cc -std=gnu11 -O1 -Wall -Wextra -Werror -Wno-unused-variable -Wno-unused-but-set-variable \
            $H5T_FLAGS -o "${src%.c}" "$src" $H5T_LIBS -lm || return 1
    done
}
run "docs/c.md examples compile" doc_build
# the listing example lists data.h5's root; the fast5 one prints a line per read
# (the programs found by what they call: their numbers move as the page grows)
doc_program() { p=$(grep -l "$1" "$DOCS"/doc_program_*.c | head -n 1) && [ -n "$p" ] && echo "${p%.c}"; }
doc_listing() ( p=$(doc_program h5turbo_group_members) && cd "$DOCS" && "$p" > out.txt && grep -qx matrix out.txt && grep -qx x out.txt )
doc_fast5() { p=$(doc_program h5turbo_fast5_open) && "$p" "$CORPUS/fast5" > "$DOCS/fast5.txt" && [ -s "$DOCS/fast5.txt" ]; }
doc_fragments() {
    "$DOCS/doc_fragments" "$DOCS/data.h5" > "$DOCS/fragments.txt" 2>&1 &&
        grep -q "^filter 1 " "$DOCS/fragments.txt" && grep -qx "units: mV" "$DOCS/fragments.txt" &&
        grep -qx "scale 0: /x" "$DOCS/fragments.txt" && grep -qx "$(printf 'alpha\t1.5')" "$DOCS/fragments.txt" &&
        grep -qx "$(printf 'gamma\t0.25')" "$DOCS/fragments.txt" && grep -qx "row 0: 0 values, sum 0" "$DOCS/fragments.txt" &&
        grep -qx "row 2: 4 values, sum 6" "$DOCS/fragments.txt"
}
run "docs/c.md: the listing example on a file of its own" doc_listing
run "docs/c.md: the fast5 example on the corpus folder" doc_fast5
run "docs/c.md: the fragments, run on a file of their own" doc_fragments

# Damaged files: status codes and messages, never a crash or a hang.
"$PYTHON" "$HERE/make_broken.py" "$WORK/broken" \
    "$CORPUS/jhdf/test_file.hdf5" "$CORPUS/jhdf/test_chunked_datasets_latest.hdf5" \
    "$CORPUS/jhdf/test_compressed_chunked_datasets_earliest.hdf5" "$CORPUS/jhdf/test_large_group_latest.hdf5" \
    "$CORPUS/jhdf/test_vlen_datasets_latest.hdf5" "$CORPUS/jhdf/test_attribute_latest.hdf5" \
    "$CORPUS/pyfive/btreev2.hdf5" "$CORPUS/pyfive/earliest.hdf5" \
    "$CORPUS/fast5/vbz_multi_fast5_vbz.fast5" "$CORPUS/fast5/read_file_v0.6_raw.fast5" \
    "$WORK/gen/structures.h5" "$WORK/gen/filters.h5" > "$WORK/broken.list"
for variant in plain asan; do
    if [ $variant = asan ]; then export H5TURBO_SYSTEM_MALLOC=1; else unset H5TURBO_SYSTEM_MALLOC; fi
    use_plugins $variant
    run "$variant: damaged files ($(wc -l < "$WORK/broken.list") files)" sh -c "xargs '$WORK/$variant/broken_test' < '$WORK/broken.list'"
done
use_plugins plain
unset H5TURBO_SYSTEM_MALLOC
run "fast5_dump on damaged files exits 0 or 1" sh -c "'$FAST5_DUMP' '$WORK/broken' > /dev/null 2>&1; [ \$? -le 1 ]"
run "h5sum on damaged files exits 0 or 1" sh -c "for f in \$(cat '$WORK/broken.list'); do '$H5SUM' \"\$f\" > /dev/null 2>&1; [ \$? -le 1 ] || exit 1; done"
# rows too large to sum: an error each, naming the dataset; the others summed
huge_rows() {
    "$H5SUM" "$WORK/gen/damaged/huge_rows.h5" > "$WORK/huge.out" 2> "$WORK/huge.err"
    [ $? -eq 1 ] && grep -q "^/a_small	5	10$" "$WORK/huge.out" && grep -q "^/z_small	3	3$" "$WORK/huge.out" &&
        grep -q "/huge_row: a row of the dataset is too large" "$WORK/huge.err" &&
        grep -q "/wide_row: cannot allocate" "$WORK/huge.err"
}
run "h5sum: rows too large are errors, the other datasets summed" huge_rows

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
