#!/bin/sh
# Writes h5turbo.pc for the library installed under $1 (version $2).
# Layout: $1/include/h5turbo.h, $1/lib/libh5turbo.{so,a}. Static linking needs the
# system libraries Rust's standard library uses (Libs.private: pkg-config --static).
# Not -lgcc_s: the compiler driver adds the unwinder itself (libgcc_s, or libgcc_eh in
# a -static link, where -lgcc_s has no archive and fails).
prefix=$1
version=$2
cat <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: h5turbo
Description: HDF5 and fast5 reading on every core, without libhdf5
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lh5turbo
Libs.private: -lpthread -ldl -lm -lc
PC
