#!/bin/sh
# Writes h5turbo.pc for the library installed under $1 (version $2), its library in
# $3 (default $1/lib: libh5turbo.{so,a}) and its header in $4 (default $1/include);
# those under $1 are written relative to ${prefix}. Static linking needs the
# system libraries Rust's standard library uses (Libs.private: pkg-config --static).
# Not -lgcc_s: the compiler driver adds the unwinder itself (libgcc_s, or libgcc_eh in
# a -static link, where -lgcc_s has no archive and fails).
prefix=$1
version=$2
libdir=${3:-$prefix/lib}
includedir=${4:-$prefix/include}
# under the prefix: written as ${prefix}/..., so a relocated prefix (pkg-config
# --define-prefix) still finds them
relative() { case $1 in "$prefix"/*) printf '${prefix}/%s' "${1#"$prefix"/}" ;; *) printf '%s' "$1" ;; esac; }
cat <<PC
prefix=$prefix
includedir=$(relative "$includedir")
libdir=$(relative "$libdir")

Name: h5turbo
Description: HDF5 and fast5 reading on every core, without libhdf5
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lh5turbo
Libs.private: -lpthread -ldl -lm -lc
PC
