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
    expect_identical(dimnames(x), dimnames(h))
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

# Files with dimnames, as HDF5Array::writeHDF5Array(with.dimnames = TRUE) writes them
# (dimension scales named "dimnames", DIMENSION_LABELS for names(dimnames)).
make_dimnames_file <- function() {
    f <- new_h5()
    set.seed(9)
    m <- matrix(sample.int(50L, 9L * 6L, replace = TRUE), 9L, 6L,
                dimnames = list(paste0("gene", 1:9), paste0("cell", 1:6)))
    write <- function(x, name) HDF5Array::writeHDF5Array(x, f, name, chunkdim = c(4L, 3L), with.dimnames = TRUE)
    write(m, "both")
    write(`rownames<-`(m, NULL), "cols_only")
    write(`colnames<-`(m, NULL), "rows_only")
    write(unname(m), "none")
    labelled <- m
    names(dimnames(labelled)) <- c("genes", "cells")
    write(labelled, "labelled")
    a <- array(as.numeric(1:60), c(3L, 4L, 5L), dimnames = list(c("x", "y", "z"), NULL, paste0("t", 1:5)))
    HDF5Array::writeHDF5Array(a, f, "cube", with.dimnames = TRUE)
    f
}

test_that("dimnames are HDF5Array's (writeHDF5Array with.dimnames = TRUE)", {
    f <- make_dimnames_file()
    for (name in c("both", "cols_only", "rows_only", "none", "labelled", "cube")) {
        x <- H5TurboArray(f, name)
        h <- HDF5Array::HDF5Array(f, name)
        expect_identical(dimnames(x), dimnames(h), info = name)
        expect_identical(dimnames(seed(x)), HDF5Array::h5readDimnames(f, name, as.character = TRUE), info = name)
        expect_identical(as.array(x), as.array(h), info = name)
    }
    expect_identical(dimnames(H5TurboArray(f, "both")),
                     list(paste0("gene", 1:9), paste0("cell", 1:6)))
    expect_identical(dimnames(H5TurboArray(f, "cols_only")), list(NULL, paste0("cell", 1:6)))
    expect_identical(names(dimnames(H5TurboArray(f, "labelled"))), c("genes", "cells"))
    expect_null(dimnames(H5TurboArray(f, "none")))
    expect_identical(dimnames(H5TurboArray(f, "cube")), list(c("x", "y", "z"), NULL, paste0("t", 1:5)))
    # names follow subsetting, transposition and the reductions
    x <- H5TurboArray(f, "both")
    h <- HDF5Array::HDF5Array(f, "both")
    expect_identical(as.matrix(t(x[c(2, 9), 3:1])), as.matrix(t(h[c(2, 9), 3:1])))
    for (name in c("both", "rows_only", "labelled")) {
        x <- H5TurboArray(f, name)
        h <- HDF5Array::HDF5Array(f, name)
        expect_identical(colSums(x), colSums(h), info = name)
        expect_identical(rowSums(x), rowSums(h), info = name)
        expect_equal(colMeans(x), colMeans(h), info = name)
        expect_equal(rowMeans(x), rowMeans(h), info = name)
        expect_identical(colSums(log1p(x)), colSums(log1p(h)), info = name)
        for (use in c(NA, TRUE, FALSE)) {
            expect_identical(DelayedMatrixStats::colSums2(x, useNames = use),
                             DelayedMatrixStats::colSums2(h, useNames = use), info = name)
            expect_equal(DelayedMatrixStats::rowVars(x, useNames = use),
                         DelayedMatrixStats::rowVars(h, useNames = use), info = name)
        }
    }
})

test_that("dimnames come from the scales named \"dimnames\" only, as in HDF5Array", {
    f <- new_h5()
    m <- matrix(1:12, 3L, 4L)
    HDF5Array::writeHDF5Array(m, f, "m")
    rhdf5::h5write(c("p", "q", "r"), f, "other_rows")
    rhdf5::h5write(c("a", "b", "c"), f, "rows")
    rhdf5::h5write(paste0("c", 1:4), f, "cols")
    # another kind of scale first on the first dimension: not dimnames
    HDF5Array:::h5setdimscales(f, "m", c("/other_rows", NA), scalename = "other")
    expect_null(dimnames(H5TurboArray(f, "m")))
    expect_identical(dimnames(H5TurboArray(f, "m")), dimnames(HDF5Array::HDF5Array(f, "m")))
    # then dimnames scales: the first named "dimnames" counts
    HDF5Array:::h5setdimscales(f, "m", c("/rows", "/cols"), scalename = "dimnames")
    expect_identical(dimnames(H5TurboArray(f, "m")), list(c("a", "b", "c"), paste0("c", 1:4)))
    expect_identical(dimnames(H5TurboArray(f, "m")), dimnames(HDF5Array::HDF5Array(f, "m")))
})
