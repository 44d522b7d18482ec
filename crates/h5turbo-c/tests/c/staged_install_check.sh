#!/bin/sh
# make install-c into a staging folder (DESTDIR, with a space in it) on a lib64 layout,
# as a distribution package builds: the files where LIBDIR/INCLUDEDIR/BINDIR say, a
# pkg-config file naming them, and the example programs loading the library beside
# them (exit status 2, their usage, not 127: library not found).
#   staged_install_check.sh STAGE PREFIX LIBDIR
set -eu
stage=$1 prefix=$2 libdir=$3
for f in "$libdir/libh5turbo.a" "$libdir/libh5turbo.so" "$prefix/include/h5turbo.h" "$prefix/bin/h5sum"; do
    [ -e "$stage$f" ] || { echo "FAIL staged install: $stage$f missing"; exit 1; }
done
pc="$stage$libdir/pkgconfig/h5turbo.pc"
grep -qx 'libdir=${prefix}/lib64' "$pc" && grep -qx "prefix=$prefix" "$pc" || { echo "FAIL $pc:"; cat "$pc"; exit 1; }
status=0
"$stage$prefix/bin/h5sum" > /dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || { echo "FAIL staged h5sum exited $status (127: it did not find the library)"; exit 1; }
echo "ok   staged install (DESTDIR with a space, LIBDIR lib64)"
