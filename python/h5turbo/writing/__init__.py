"""The write side: everything that needs h5py/libhdf5 (write, repack, advise,
write_h5ad). h5turbo encodes the chunks in parallel; libhdf5 writes the file."""
