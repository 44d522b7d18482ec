# Native reductions against base R on the matrix h5t_read gives.
skip_if_not_installed("rhdf5")

reduce_py <- '
import sys, h5py, numpy as np
rng = np.random.default_rng(3)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("i4", data=rng.integers(1, 101, size=(203, 157), dtype="i4"), chunks=(50, 40), compression="gzip", compression_opts=3)
    f.create_dataset("u2", data=rng.integers(0, 60000, size=(64, 33), dtype="u2"), chunks=(64, 33))
    f.create_dataset("i8", data=rng.integers(-10**12, 10**12, size=(31, 17), dtype="i8"), chunks=(7, 5))
    f.create_dataset("f4", data=rng.normal(size=(90, 80)).astype("f4"), chunks=(33, 17), compression="gzip")
    f.create_dataset("f8", data=rng.normal(loc=1e6, size=(120, 45)), chunks=(11, 13))
    f["contig"] = rng.normal(size=(40, 25))
    f["vec"] = np.arange(10.0)
    f["text"] = np.array([[b"a", b"b"]])
'

test_that("colSums/rowSums/colMeans/rowMeans/colVars/rowVars equal base R", {
    f <- tempfile(fileext = ".h5")
    run_python(reduce_py, f)
    for (name in c("i4", "u2", "i8", "f4", "f8", "contig")) {
        x <- h5t_read(f, name, bit64conversion = "double")
        storage.mode(x) <- "double"
        expect_identical(length(h5t_colSums(f, name)), ncol(x))
        expect_identical(length(h5t_rowSums(f, name)), nrow(x))
        if (name %in% c("i4", "u2")) {
            expect_identical(h5t_colSums(f, name), colSums(x), info = name)   # exact
            expect_identical(h5t_rowSums(f, name), rowSums(x), info = name)
        }
        expect_equal(h5t_colSums(f, name), colSums(x), tolerance = 1e-9, info = name)
        expect_equal(h5t_rowSums(f, name), rowSums(x), tolerance = 1e-9, info = name)
        expect_equal(h5t_colMeans(f, name), colMeans(x), tolerance = 1e-9, info = name)
        expect_equal(h5t_rowMeans(f, name, threads = 1), rowMeans(x), tolerance = 1e-9, info = name)
        expect_equal(h5t_colVars(f, name), apply(x, 2, var), tolerance = 1e-9, info = name)
        expect_equal(h5t_rowVars(f, name, threads = 2), apply(x, 1, var), tolerance = 1e-9, info = name)
    }
    expect_error(h5t_colSums(f, "vec"), class = "h5turbo_error", regexp = "2-dimensional")
    expect_error(h5t_colSums(f, "text"), class = "h5turbo_error", regexp = "numbers")
})

test_that("reductions of rhdf5's logical matrices count NA as base R does", {
    f <- new_h5()
    m <- matrix(c(TRUE, NA, FALSE, TRUE, TRUE, FALSE), 3, 2)
    write_rhdf5(f, "lgl", m)
    expect_identical(h5t_colSums(f, "lgl"), colSums(m))
    expect_identical(h5t_rowMeans(f, "lgl"), rowMeans(m))
})
