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

test_that("integer NA (rhdf5's and HDF5Array's) and 64-bit sums reduce as base R and HDF5Array do", {
    skip_if_not_installed("HDF5Array")
    f <- new_h5()
    m <- matrix(c(1L, NA, 3L, 4L, 5L, 6L), 2)
    HDF5Array::writeHDF5Array(m, f, "na", chunkdim = c(1L, 2L))
    expect_identical(h5t_colSums(f, "na"), colSums(m) + 0)
    expect_identical(h5t_rowMeans(f, "na"), rowMeans(m))
    expect_identical(h5t_colVars(f, "na"), apply(m, 2, var))
    ref <- HDF5Array::HDF5Array(f, "na")
    ours <- H5TurboArray(f, "na")
    for (fun in list(colSums, rowSums, colMeans, rowMeans)) {
        expect_identical(fun(ours), fun(ref))
        expect_identical(fun(ours, na.rm = TRUE), fun(ref, na.rm = TRUE))
    }
    expect_equal(DelayedMatrixStats::rowVars(ours, na.rm = TRUE), DelayedMatrixStats::rowVars(ref, na.rm = TRUE))
    expect_equal(DelayedMatrixStats::colMeans2(ours), DelayedMatrixStats::colMeans2(ref))
    # a variance of one value or with a NaN: NA, as var() gives
    HDF5Array::writeHDF5Array(matrix(c(1, NaN, 2, 3), 2), f, "nan")
    expect_identical(h5t_colVars(f, "nan"), c(NA, 0.5))
    expect_identical(h5t_rowVars(f, "nan")[[2]], NA_real_)
})

sums64_py <- '
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["u8"] = np.array([[0, 1, 2**64 - 1], [0, 5, 7]], dtype="<u8")
    f["i8"] = np.array([[0, 1, 2**63 - 1], [2**62, 2**62, 7]], dtype=">i8")
    f["big"] = np.array([[1, 2, 3], [4, 5, 3 * 10**9]], dtype="<i8")
    f.create_dataset("empty", shape=(5, 0), chunks=(5, 1), dtype="<f4", maxshape=(5, None))
    f.create_dataset("past53", data=np.array([[2**53 + 1] * 3, [1, 2, 3], [-2**53 - 1, 5, 2**53 + 3]], dtype="<i8"), chunks=(2, 2))
    f["u8big"] = np.array([[2**63 + 1, 2**63 + 1, 1], [0, 1, 2]], dtype="<u8")
'

test_that("64-bit integer sums are exact (no wrapping); 64-bit integers are doubles in a DelayedArray, as HDF5Array", {
    f <- tempfile(fileext = ".h5")
    run_python(sums64_py, f)
    expect_identical(h5t_colSums(f, "u8"), c(2^64, 12))   # 2^64 + 0: the nearest double
    expect_identical(h5t_rowSums(f, "i8"), c(2^62, 2^62 + 1, 2^63 + 7))
    expect_identical(h5t_colSums(f, "i8"), c(2^63 + 0, 2^63 + 7))
    big <- H5TurboArray(f, "big")
    expect_identical(type(big), "double")
    expect_identical(as.matrix(big), matrix(c(1, 2, 3, 4, 5, 3e9), 3))
    expect_identical(colSums(big), colSums(as.matrix(big)))
    skip_if_not_installed("HDF5Array")
    expect_identical(type(big), DelayedArray::type(HDF5Array::HDF5Array(f, "big")))
    # an empty dimension has empty chunks (DelayedArray's grids need chunkdim <= dim)
    empty <- H5TurboArray(f, "empty")
    expect_identical(DelayedArray::chunkdim(empty), DelayedArray::chunkdim(HDF5Array::HDF5Array(f, "empty")))
    expect_identical(colSums(log1p(empty)), numeric(5))
})

test_that("sums of 64-bit integers past 2^53 are exact, on an H5TurboMatrix too (base R adds the rounded doubles)", {
    f <- tempfile(fileext = ".h5")
    run_python(sums64_py, f)
    # 3 * (2^53 + 1) to the nearest double, where the doubles (2^53 each) give 3 * 2^53
    expect_identical(h5t_colSums(f, "past53")[[1]], 3 * 2^53 + 4)
    expect_identical(colSums(H5TurboArray(f, "past53"))[[1]], 3 * 2^53 + 4)
    # (realized as doubles, the values are rounded, and that is told)
    expect_warning(m <- as.matrix(H5TurboArray(f, "past53")), "precision lost")
    expect_identical(colSums(m)[[1]], 3 * 2^53)
    # rows without such values are base R's
    expect_warning(x <- as.matrix(H5TurboArray(f, "u8big")), "precision lost")
    expect_identical(rowSums(H5TurboArray(f, "u8big"))[[3]], rowSums(x)[[3]])
})

# identical, NaN told from NA (waldo's comparison takes them as equal)
expect_same_nan <- function(object, expected, ...) {
    expect_identical(object, expected, ...)
    expect_identical(is.nan(object), is.nan(expected), ...)
}

test_that("a variance from infinities is NaN, one with NA or NaN among the values NA, as var() and HDF5Array give", {
    f <- new_h5()
    # columns: Inf and -Inf (NaN), plain, an NA (NA), a NaN (NA), Inf alone (NaN), NA with infinities (NA)
    m <- matrix(c(Inf, -Inf, 9,  1, 2, 3,  4, NA, 6,  7, NaN, 8,  Inf, 1, 2,  NA, Inf, -Inf), 3)
    write_rhdf5(f, "m", m)
    write_rhdf5(f, "mc", m, chunk = c(2, 2))
    for (name in c("m", "mc")) {
        expect_same_nan(h5t_colVars(f, name), apply(m, 2, var), info = name)
        expect_same_nan(h5t_rowVars(f, name), apply(m, 1, var), info = name)
        expect_same_nan(h5t_colVars(f, name, threads = 1), c(NaN, 1, NA, NA, NaN, NA), info = name)
    }
    # one value per column: NA, as var() gives
    write_rhdf5(f, "one", matrix(c(Inf, 1, NaN), 1))
    expect_same_nan(h5t_colVars(f, "one"), rep(NA_real_, 3))
    expect_same_nan(h5t_rowVars(f, "one"), var(c(Inf, 1, NaN)))
    skip_if_not_installed("HDF5Array")
    skip_if_not_installed("DelayedMatrixStats")
    HDF5Array::writeHDF5Array(m, f, "h")
    ref <- HDF5Array::HDF5Array(f, "h")
    ours <- H5TurboArray(f, "h")
    expect_same_nan(DelayedMatrixStats::colVars(ours), DelayedMatrixStats::colVars(ref))
    expect_same_nan(DelayedMatrixStats::rowVars(ours), DelayedMatrixStats::rowVars(ref))
    expect_same_nan(DelayedMatrixStats::colVars(ours), c(NaN, 1, NA, NA, NaN, NA))
})

u32_py <- '
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["u4"] = np.array([[0, 2**31 - 1], [2**31, 2**32 - 1]], dtype="<u4")
    f.create_dataset("u4c", data=np.array([[1, 2**32 - 1, 3], [4, 5, 2**31]], dtype=">u4"), chunks=(1, 2))
    f["small"] = np.array([[1, 2], [3, 4]], dtype="<u4")
'

test_that("unsigned 32-bit integers are doubles in a DelayedArray, every value kept, as h5t_read(bit64conversion = 'double')", {
    f <- tempfile(fileext = ".h5")
    run_python(u32_py, f)
    for (name in c("u4", "u4c", "small")) {
        x <- H5TurboArray(f, name)
        expect_identical(type(x), "double", info = name)
        full <- h5t_read(f, name, bit64conversion = "double")
        expect_identical(as.matrix(x), full, info = name)
        expect_no_warning(m <- as.matrix(x))
        expect_identical(colSums(x), colSums(full), info = name)
        expect_identical(rowSums(x), rowSums(full), info = name)
        expect_identical(as.matrix(x[2:1, 1, drop = FALSE]), full[2:1, 1, drop = FALSE], info = name)
        expect_identical(as.matrix(x + 1), full + 1, info = name)
    }
    expect_identical(as.matrix(H5TurboArray(f, "u4")), matrix(c(0, 2^31 - 1, 2^31, 2^32 - 1), 2))
    # h5t_read itself stays rhdf5's: integers, NA (with a warning) past 2^31 - 1
    expect_warning(v <- h5t_read(f, "u4"), "integer overflow")
    expect_identical(v, matrix(c(0L, 2147483647L, NA, NA), 2))
})

test_that("float sums and means that are NA, NaN or infinite are base R's (NA or NaN first, long double range)", {
    f <- new_h5()
    # columns: an NA before a NaN (NA), a NaN before an NA (NaN), a sum past the largest
    # double on the way (1e308 in base R's long double; Inf in double), infinities, plain
    m <- cbind(c(NA, NaN, 1, 2), c(NaN, NA, 1, 2), c(1e308, 1e308, -1e308, 0), c(Inf, 1, -Inf, 2),
               c(-Inf, 1, 2, 3), c(1, 2, 3, 4))
    write_rhdf5(f, "m", m)
    write_rhdf5(f, "mc", m, chunk = c(2, 2))
    write_rhdf5(f, "t", t(m), chunk = c(2, 2))
    for (name in c("m", "mc")) {
        expect_same_nan(h5t_colSums(f, name), colSums(m), info = name)
        expect_same_nan(h5t_colMeans(f, name, threads = 1), colMeans(m), info = name)
        expect_same_nan(h5t_rowSums(f, name), rowSums(m), info = name)
        expect_same_nan(h5t_rowMeans(f, name), rowMeans(m), info = name)
    }
    expect_same_nan(h5t_colSums(f, "m"), c(NA, NaN, 1e308, NaN, -Inf, 10))
    expect_same_nan(h5t_rowSums(f, "t"), rowSums(t(m)))
    expect_same_nan(h5t_rowMeans(f, "t"), rowMeans(t(m)))
    a <- H5TurboArray(f, "mc")
    expect_same_nan(colSums(a), colSums(m))
    expect_same_nan(rowMeans(a), rowMeans(m))
    # colSums2 & co. stay matrixStats' (sums in double), as on an HDF5Array
    expect_same_nan(DelayedMatrixStats::colSums2(a), MatrixGenerics::colSums2(m))
    expect_same_nan(DelayedMatrixStats::rowMeans2(a), MatrixGenerics::rowMeans2(m))
    skip_if_not_installed("HDF5Array")
    HDF5Array::writeHDF5Array(m, f, "h", chunkdim = c(2L, 2L))
    ours <- H5TurboArray(f, "h")
    ref <- HDF5Array::HDF5Array(f, "h")
    for (fun in list(colSums, rowSums, colMeans, rowMeans))
        expect_same_nan(fun(ours), fun(ref))
    expect_same_nan(DelayedMatrixStats::colSums2(ours), DelayedMatrixStats::colSums2(ref))
    expect_same_nan(DelayedMatrixStats::rowSums2(ours), DelayedMatrixStats::rowSums2(ref))
})

test_that("integer means are base R's: the exact sum divided in long double", {
    # 1000001908 / 4099 lies so close to half way between two doubles that dividing in
    # long double and rounding to double differs from dividing in double
    n <- 4099L
    m <- matrix(0L, n, 3)
    m[1, ] <- c(1000001908L, 7L, 1000002667L)
    m[n, 2] <- NA
    f <- new_h5()
    write_rhdf5(f, "m", m, chunk = c(1000, 2))
    write_rhdf5(f, "t", t(m), chunk = c(2, 1000))
    expect_identical(h5t_colMeans(f, "m"), colMeans(m))
    expect_identical(h5t_rowMeans(f, "t"), rowMeans(t(m)))
    expect_identical(colMeans(H5TurboArray(f, "m")), colMeans(m))
    expect_identical(rowMeans(H5TurboArray(f, "t")), rowMeans(t(m)))
    # colMeans2 & co. stay matrixStats' (the sum divided in double), as on an HDF5Array
    expect_identical(DelayedMatrixStats::colMeans2(H5TurboArray(f, "m")), MatrixGenerics::colMeans2(m))
    skip_if(colMeans(m)[[1]] == 1000001908 / n, "long double division rounds as double's here")
    expect_false(h5t_colMeans(f, "m")[[1]] == 1000001908 / n)
})
