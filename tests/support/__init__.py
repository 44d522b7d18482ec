"""Helpers shared by the test suite: where things are (common), the generated file
matrix (h5gen), object-by-object comparison with h5py (h5compare), the h5py-backed
stand-in for the native module (fake_native) and the corrupted-file generator of the
robustness tests (robust_mutants)."""
