# The two commands of the README:
#   make demo   sets everything up and reads a built-in example with h5turbo and h5py
#   make test   builds, then runs the Rust and Python test suites
PYTHON ?= python3

.PHONY: setup demo test rust-test py-test bench

setup:
	$(PYTHON) -m pip install --quiet --editable '.[test]'

demo: setup
	$(PYTHON) -m h5turbo.demo

test: setup rust-test py-test

rust-test:
	cargo test -p h5turbo-core

py-test:
	$(PYTHON) -m pytest -q tests

bench: setup
	$(PYTHON) benchmarks/read_reference.py
