# The R package (r/h5turbo), built on the C library (mk/c.mk: `make c`).
#   make r        builds libh5turbo, then R CMD INSTALL (into R's default library, or
#                 R_LIB=/path when set)
#   make r-test   the testthat suite against the installed package
#   make r-check  R CMD check (builds the source package first)
#   make r-bench  the R benchmarks (benchmarks/r/)
R_PACKAGES := r-base-dev pkg-config r-bioc-rhdf5 r-bioc-hdf5array r-bioc-delayedarray \
	r-bioc-delayedmatrixstats r-cran-matrix r-cran-testthat r-cran-bench \
	r-bioc-singlecellexperiment r-bioc-matrixgenerics
R_BENCH_PACKAGES := r-cran-ff r-cran-bigmemory r-cran-data.table r-cran-rsqlite
APT_PACKAGES += $(R_PACKAGES)
TEST_TARGETS += r-test

R_LIB ?=
R_LIB_FLAG = $(if $(R_LIB),-l $(R_LIB))
R_LIBS_ENV = $(if $(R_LIB),R_LIBS=$(R_LIB)$${R_LIBS:+:$$R_LIBS})
R_PKG_CONFIG = PKG_CONFIG_PATH=$(CURDIR)/build/c/lib$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}

.PHONY: r r-test r-check r-bench

r: c
	@sh tools/install-system-packages.sh $(R_PACKAGES)
	$(if $(R_LIB),mkdir -p $(R_LIB))
	$(R_PKG_CONFIG) R CMD INSTALL --preclean --no-multiarch $(R_LIB_FLAG) r/h5turbo
	@sh r/h5turbo/cleanup

# H5TURBO_PYTHON: the Python with h5py + hdf5plugin that writes the files rhdf5
# cannot (zstd, blosc, lz4 ... filters); those tests are skipped without it.
r-test: r
	cd r/h5turbo/tests && $(R_LIBS_ENV) H5TURBO_PYTHON=$(abspath $(PYTHON)) \
		H5TURBO_CORPUS=$(CURDIR)/tests/data/corpus Rscript testthat.R

r-check: c
	rm -rf build/r/check && mkdir -p build/r/check
	cd build/r/check && R CMD build $(CURDIR)/r/h5turbo && \
		$(R_PKG_CONFIG) $(R_LIBS_ENV) _R_CHECK_FORCE_SUGGESTS_=false \
		R CMD check --no-manual h5turbo_*.tar.gz

r-bench: r
	@sh tools/install-system-packages.sh $(R_BENCH_PACKAGES)
	$(R_LIBS_ENV) Rscript benchmarks/r/colsums.R
	$(R_LIBS_ENV) Rscript benchmarks/r/strategies.R
