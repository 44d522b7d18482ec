#![no_main]
// Open an HDF5 image held in memory, walk every group, read every attribute and dataset.
libfuzzer_sys::fuzz_target!(|data: &[u8]| h5turbo_fuzz::open_walk_read(data));
