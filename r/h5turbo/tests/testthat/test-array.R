# H5TurboArray against HDF5Array through DelayedArray and DelayedMatrixStats.
skip_if_not_installed("HDF5Array")
skip_if_not_installed("DelayedMatrixStats")

make_matrix_file <- function() {
    f <- new_h5()
    set.seed(5)
    m <- matrix(sample.int(100L, 150L * 130L, replace = TRUE), 150L, 130L)
    write_rhdf5(f, "counts", m, chunk = c(40, 30), level = 3)
    d <- matrix(rnorm(77 * 64), 77, 64)
    write_rhdf5(f, "dense", d, chunk = c(20, 20))
    write_rhdf5(f, "arr3", array(as.numeric(1:(6 * 5 * 4)), c(6, 5, 4)), chunk = c(3, 2, 2))
    f
}

test_that("seed and array: dim, chunkdim, path, type, values", {
    f <- make_matrix_file()
    x <- H5TurboArray(f, "counts")
    h <- HDF5Array::HDF5Array(f, "counts")
    expect_s4_class(x, "H5TurboMatrix")
    expect_s4_class(x, "DelayedMatrix")
    expect_identical(dim(x), dim(h))
    expect_identical(chunkdim(x), chunkdim(h))
    expect_identical(path(x), normalizePath(f))
    expect_identical(type(x), type(h))
    expect_null(dimnames(x))
    expect_identical(as.matrix(x), as.matrix(h))
    expect_identical(as.matrix(x[c(150, 3, 3), 10:1]), as.matrix(h[c(150, 3, 3), 10:1]))
    a <- H5TurboArray(f, "arr3")
    expect_s4_class(a, "H5TurboArray")
    expect_identical(as.array(a), as.array(HDF5Array::HDF5Array(f, "arr3")))
    expect_identical(extract_array(seed(a), list(c(6, 1), NULL, 4)),
                     extract_array(seed(HDF5Array::HDF5Array(f, "arr3")), list(c(6, 1), NULL, 4)))
})

test_that("DelayedMatrixStats and delayed operations give HDF5Array's results", {
    f <- make_matrix_file()
    for (name in c("counts", "dense")) {
        x <- H5TurboArray(f, name)
        h <- HDF5Array::HDF5Array(f, name)
        expect_equal(DelayedMatrixStats::colSums2(x), DelayedMatrixStats::colSums2(h), info = name)
        expect_equal(DelayedMatrixStats::rowMeans2(x), DelayedMatrixStats::rowMeans2(h), info = name)
        expect_equal(DelayedMatrixStats::colVars(x), DelayedMatrixStats::colVars(h), info = name)
        expect_equal(DelayedMatrixStats::rowMedians(x), DelayedMatrixStats::rowMedians(h), info = name)
        expect_equal(as.matrix(log1p(abs(t(x)))[1:5, ]), as.matrix(log1p(abs(t(h)))[1:5, ]), info = name)
        expect_equal(colSums(log1p(abs(x))), colSums(log1p(abs(h))), info = name)
        # native reductions on the untransformed matrix
        expect_equal(colSums(x), colSums(h), info = name)
        expect_equal(rowSums(x), rowSums(h), info = name)
        expect_equal(colMeans(x), colMeans(h), info = name)
        expect_equal(rowMeans(x), rowMeans(h), info = name)
        expect_equal(DelayedMatrixStats::rowSums2(x), DelayedMatrixStats::rowSums2(h), info = name)
        expect_equal(DelayedMatrixStats::colMeans2(x), DelayedMatrixStats::colMeans2(h), info = name)
        expect_equal(DelayedMatrixStats::rowVars(x), DelayedMatrixStats::rowVars(h), info = name)
    }
    # small blocks: many extract_array calls (a rows= subset takes the block route)
    old <- DelayedArray::getAutoBlockSize()
    DelayedArray::setAutoBlockSize(4000)
    on.exit(DelayedArray::setAutoBlockSize(old))
    x <- H5TurboArray(f, "counts")
    m <- as.matrix(HDF5Array::HDF5Array(f, "counts"))
    expect_equal(DelayedMatrixStats::colSums2(x, rows = seq_len(nrow(x))), colSums(m))
    expect_equal(DelayedMatrixStats::colSums2(x, cols = 3:7), colSums(m[, 3:7]))
    expect_equal(DelayedMatrixStats::rowVars(x, rows = 2:9), matrixStats::rowVars(m[2:9, ]))
    centers <- colMeans(m)
    expect_equal(DelayedMatrixStats::colVars(x, center = centers), matrixStats::colVars(m, center = centers))
})

test_that("SingleCellExperiment takes an H5TurboMatrix as assay", {
    skip_if_not_installed("SingleCellExperiment")
    f <- make_matrix_file()
    sce <- SingleCellExperiment::SingleCellExperiment(list(counts = H5TurboArray(f, "counts")))
    expect_identical(dim(sce), c(150L, 130L))
    expect_equal(colSums(SummarizedExperiment::assay(sce, "counts")),
                 colSums(rhdf5::h5read(f, "counts")))
})
