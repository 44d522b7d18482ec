# The two commands of the README:
#   make demo   sets everything up and reads a built-in example with h5turbo and h5py
#   make test   builds, then runs every test suite (Rust, Python, C, R)
#
# Python: the active virtual environment if there is one, else the project's own
# .venv (made on first use), so a system Python that refuses pip installs (PEP 668)
# is never touched. Each front end adds its targets in mk/*.mk.
ifdef VIRTUAL_ENV
PYTHON ?= $(VIRTUAL_ENV)/bin/python
else
PYTHON ?= .venv/bin/python
endif

# System packages the test suites need (Debian names); the front ends add theirs.
APT_PACKAGES :=
TEST_TARGETS := rust-test py-test py-test-oldest-numpy

# The oldest NumPy pyproject.toml declares, tested in a venv of its own; the
# constraints pin it and what must match it (tests/oldest-numpy.txt).
OLDEST_NUMPY_VENV := .venv-oldest-numpy
# The two slowest tests (~47 s of CI together) run in py-test only: a 2^31-element
# repack and the bench harness end to end; the faster tests beside them cover their NumPy use.
OLDEST_NUMPY_SKIP := "tests/write/test_repack.py::test_repack_corpus_file[jhdf/tiny_huge_1d_over_maxint.hdf5]" \
	tests/bench/test_bench.py::test_quick_preset_end_to_end
# Whole modules whose subject NumPy's version does not touch (decoded bytes, the page
# cache, processes and signals; ~95 s of CI) run under the current NumPy only, and the
# indexing hunt, whose reference model of numpy's indexing is NumPy 2's (the selection
# tests, objects/test_selection.py and the h5py hunts, cover indexing under NumPy 1);
# the docs' examples run once, in docs-test.
OLDEST_NUMPY_IGNORE := tests/filters/test_filters.py tests/filters/test_filters_hunt.py \
	tests/robustness/test_cold.py tests/robustness/test_lifecycle_hunt.py \
	tests/objects/test_indexing_hunt.py tests/docs

include $(wildcard mk/*.mk)

# The examples of README.md and docs/ run as written (tests/docs), last: their C and R
# blocks need the library and the R package the suites above built and installed.
TEST_TARGETS += docs-test

.PHONY: setup system-packages demo test test-locks rust-test py-test py-test-oldest-numpy docs-test bench

demo: setup
	$(PYTHON) -m h5turbo.demo

# One suite after the other, the Python ones in a process per core. Two suites at a
# time (make -j2, tried 2026-11-29) took longer on 2 cores than one after the other.
test: setup $(TEST_TARGETS)

# TEST_DEPS=locked (as .ci/run does): the test dependencies at the versions in tests/locks/,
# the last set a full `make test` passed with, so that a new release of a reference
# library (h5netcdf 1.8.3 changed how it reads attributes) cannot fail CI overnight.
# The default takes the newest releases; after `make test` passes with them,
# `make test-locks` records them.
TEST_DEPS ?= newest
TEST_DEPS_LOCK = $(if $(filter locked,$(TEST_DEPS)),-c tests/locks/newest-numpy.txt)
OLDEST_NUMPY_LOCK = $(if $(filter locked,$(TEST_DEPS)),-c tests/locks/oldest-numpy.txt)

test-locks:
	sh tools/write-test-lock.sh $(PYTHON) tests/locks/newest-numpy.txt
	sh tools/write-test-lock.sh $(OLDEST_NUMPY_VENV)/bin/python tests/locks/oldest-numpy.txt

.venv/bin/python:
	python3 -m venv .venv

# pip compiles the bytecode as it installs (half of an install: 121 s, 56 s with
# --no-compile). Keep it: where PYTHONDONTWRITEBYTECODE is set, as on CI machines, an
# uncompiled venv compiles every module at every import (import anndata 7.6 s, 2.6 s
# compiled; scanpy 17 s), in every test process.
setup: $(PYTHON) system-packages
	$(PYTHON) -m pip install --quiet --editable '.[test]' $(TEST_DEPS_LOCK)

system-packages:
	@sh tools/install-system-packages.sh $(APT_PACKAGES)

# The C library's Rust unit tests too: beside the core's they reuse its debug build
# (as `cargo test --release` they cost a link-time-optimised build of their own, 75 s).
rust-test:
	cargo test -p h5turbo-core -p h5turbo-c

# One pytest process keeps about one core busy (measured: 420 CPU-seconds in 454 s), so
# the suite runs in a process per core (pytest-xdist), at most 4: each imports h5py,
# anndata, dask ... and makes the session's files. PYTEST_PROCESSES="-n 0": one process.
PYTEST_PROCESSES ?= -n auto --maxprocesses=4

py-test:
	$(PYTHON) -m pytest -q $(PYTEST_PROCESSES) --ignore=tests/docs tests

docs-test: setup c r
	$(PYTHON) -m pytest -q -p no:cacheprovider $(PYTEST_PROCESSES) tests/docs

# The suite again under the oldest NumPy: the test dependencies (as `make setup`
# installed them, read from the package's metadata) under tests/oldest-numpy.txt, and
# this source tree (with the native module `make setup` built into it) on PYTHONPATH.
py-test-oldest-numpy: setup $(OLDEST_NUMPY_VENV)/bin/python
	$(PYTHON) tools/extra-requirements.py test > $(OLDEST_NUMPY_VENV)/test-requirements.txt
	$(OLDEST_NUMPY_VENV)/bin/python -m pip install --quiet -c tests/oldest-numpy.txt $(OLDEST_NUMPY_LOCK) \
	    numpy -r $(OLDEST_NUMPY_VENV)/test-requirements.txt
	PYTHONPATH=$(CURDIR)/python $(OLDEST_NUMPY_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_PROCESSES) \
	    $(addprefix --deselect ,$(OLDEST_NUMPY_SKIP)) $(addprefix --ignore=,$(OLDEST_NUMPY_IGNORE)) tests

$(OLDEST_NUMPY_VENV)/bin/python:
	$(PYTHON) -m venv $(OLDEST_NUMPY_VENV)

bench: setup
	$(PYTHON) benchmarks/read_reference.py
