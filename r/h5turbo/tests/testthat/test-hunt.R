# Regression tests for bugs found by comparing H5TurboArray and the sparse readers
# with HDF5Array (Bioconductor idioms: files replaced or moved, odd dimnames, 10x v2).
skip_if_not_installed("HDF5Array")

test_that("a seed whose file was replaced stops with a clear error, not wrong sums", {
    f <- new_h5()
    rhdf5::h5write(matrix(1:12, 3L, 4L), f, "m")
    x <- H5TurboArray(f, "m")
    # the same dataset name, other dimensions and type
    unlink(f)
    rhdf5::h5createFile(f)
    rhdf5::h5write(matrix(as.numeric(1:30), 5L, 6L), f, "m")
    # the native sums gave 6 values for a matrix of 4 columns
    expect_error(colSums(x), "the file changed", class = "h5turbo_error")
    expect_error(DelayedMatrixStats::colSums2(x), "the file changed", class = "h5turbo_error")
    expect_error(DelayedMatrixStats::rowVars(x), "the file changed", class = "h5turbo_error")
    # blocks: DelayedArray's "contact the author" message, or values of the new file
    expect_error(as.matrix(x), "3 x 4 of type integer", class = "h5turbo_error")
    expect_error(as.matrix(x[1:2, 1:2]), "5 x 6 of type double", class = "h5turbo_error")
    # a smaller dataset of the same type
    unlink(f)
    rhdf5::h5createFile(f)
    rhdf5::h5write(matrix(1:4, 2L, 2L), f, "m")
    expect_error(colSums(x), "the file changed", class = "h5turbo_error")
    # the same shape and type again: reads as before
    unlink(f)
    rhdf5::h5createFile(f)
    rhdf5::h5write(matrix(12:1, 3L, 4L), f, "m")
    expect_identical(as.matrix(x), matrix(12:1, 3L, 4L))
    expect_identical(colSums(x), colSums(matrix(12:1, 3L, 4L)))
})

test_that("path<- points a saved object at the moved file, as for an HDF5Array", {
    f <- new_h5()
    m <- matrix(c(1:29, NA), 5L, 6L)
    HDF5Array::writeHDF5Array(m, f, "m", chunkdim = c(2L, 3L))
    rhdf5::h5write(matrix(1:4, 2L, 2L), f, "small")
    y <- log1p(H5TurboArray(f, "m"))[2:4, ]
    rds <- tempfile(fileext = ".rds")
    saveRDS(y, rds)
    moved <- tempfile(fileext = ".h5")
    file.copy(f, moved)
    unlink(f)
    z <- readRDS(rds)
    expect_error(as.matrix(z), "no such file", class = "h5turbo_error")
    path(z) <- moved
    expect_identical(path(z), normalizePath(moved))
    expect_identical(as.matrix(z), log1p(m)[2:4, ])
    x <- H5TurboArray(moved, "m")
    h <- HDF5Array::HDF5Array(moved, "m")
    path(h) <- moved
    path(x) <- moved
    expect_identical(as.matrix(x), as.matrix(h))
    # a file whose dataset differs: refused (HDF5Array refuses too)
    other <- new_h5()
    rhdf5::h5write(matrix(1:4, 2L, 2L), other, "m")
    expect_error(path(x) <- other, "the file changed", class = "h5turbo_error")
    expect_error(path(h) <- other)
    expect_error(path(x) <- tempfile(), "no such file", class = "h5turbo_error")
    expect_identical(path(x), normalizePath(moved))
})

test_that("a dimnames scale of the wrong length is refused when the seed is made, as in HDF5Array", {
    f <- new_h5()
    HDF5Array::writeHDF5Array(matrix(1:12, 3L, 4L), f, "m")
    rhdf5::h5write(c("a", "b"), f, "short")
    HDF5Array:::h5setdimscales(f, "m", c("/short", NA), scalename = "dimnames")
    # validObject wraps its message to the width, where the temporary path's length
    # puts the breaks: any space may be a line break
    expect_error(HDF5Array::HDF5Array(f, "m"), "not\\s+equal\\s+to\\s+the\\s+extent")
    # was accepted: a DelayedMatrix of 3 rows with 2 row names, failing in as.matrix
    expect_error(H5TurboArray(f, "m"), "'/short' holds 2 values for a dimension of extent 3",
                 class = "h5turbo_error_format")
})

test_that("h5t_read_sparse finds a 10x v2 file's only genome group by itself", {
    f <- new_h5()
    m <- Matrix::rsparsematrix(7L, 5L, 0.4)
    m@x <- round(abs(m@x) * 10) + 1
    write_10x <- function(g) {
        rhdf5::h5createGroup(f, g)
        rhdf5::h5write(as.integer(m@x), f, paste0(g, "/data"))
        rhdf5::h5write(m@i, f, paste0(g, "/indices"))
        rhdf5::h5write(m@p, f, paste0(g, "/indptr"))
        rhdf5::h5write(dim(m), f, paste0(g, "/shape"))
        rhdf5::h5write(paste0("BC", 1:5), f, paste0(g, "/barcodes"))
        rhdf5::h5write(paste0("ENSG", 1:7), f, paste0(g, "/genes"))
    }
    write_10x("GRCh38")
    expected <- h5t_read_sparse(f, "GRCh38")
    expect_identical(unname(as.matrix(expected)), as.matrix(m))
    expect_identical(dimnames(expected), list(paste0("ENSG", 1:7), paste0("BC", 1:5)))
    # was: "no sparse matrix group found"
    expect_identical(h5t_read_sparse(f), expected)
    write_10x("mm10")
    expect_error(h5t_read_sparse(f), "GRCh38, mm10", class = "h5turbo_error")
    expect_identical(h5t_read_sparse(f, "mm10"), expected)
})

test_that("h5t_read_h5ad keeps repeated obs / var names, as anndata does", {
    skip_if_not_installed("SingleCellExperiment")
    f <- tempfile(fileext = ".h5ad")
    run_python('
import sys, warnings
import anndata as ad, numpy as np, pandas as pd, scipy.sparse as sp
warnings.simplefilter("ignore")
X = sp.csr_matrix(np.arange(12, dtype="f4").reshape(4, 3))
obs = pd.DataFrame({"v": [1, 2, 3, 4]}, index=["c1", "c1", "c2", "c2"])
ad.AnnData(X=X, obs=obs, var=pd.DataFrame(index=["g", "g", "h"])).write_h5ad(sys.argv[1])
', f, needs = c("anndata", "scipy"))
    # was: "duplicate 'row.names' are not allowed", a plain R error
    sce <- h5t_read_h5ad(f)
    expect_identical(colnames(sce), c("c1", "c1", "c2", "c2"))
    expect_identical(rownames(sce), c("g", "g", "h"))
    expect_identical(SingleCellExperiment::colData(sce)$v, 1:4)
    expect_identical(as.matrix(SummarizedExperiment::assay(sce, "X")),
                     matrix(as.numeric(0:11), 3L, 4L, dimnames = list(c("g", "g", "h"), c("c1", "c1", "c2", "c2"))))
    expect_identical(dimnames(h5t_read_sparse(f)), dimnames(SummarizedExperiment::assay(sce, "X")))
})

test_that("a boolean sparse X (numpy bool data) reads TRUE as 1, not as the factor code 2", {
    f <- tempfile(fileext = ".h5ad")
    run_python('
import sys, warnings
import anndata as ad, numpy as np, scipy.sparse as sp
warnings.simplefilter("ignore")
X = sp.csr_matrix(np.array([[True, False, True], [False, True, False]]))
X.data[1] = False   # an explicit FALSE
a = ad.AnnData(X=X)
a.layers["csc"] = sp.csc_matrix(X)
a.write_h5ad(sys.argv[1])
', f, needs = c("anndata", "scipy"))
    expected <- matrix(c(1, 0, 0, 0, 1, 0), 3L, 2L, dimnames = list(c("0", "1", "2"), c("0", "1")))
    m <- h5t_read_sparse(f)
    expect_identical(as.matrix(m), expected)
    expect_identical(m@x, c(1, 0, 1))   # stored entries, the explicit FALSE kept
    expect_identical(as.matrix(h5t_read_sparse(f, "layers/csc")), expected)
    skip_if_not_installed("SingleCellExperiment")
    sce <- h5t_read_h5ad(f)
    expect_identical(as.matrix(SummarizedExperiment::assay(sce, "X")), expected)
    expect_identical(as.matrix(SummarizedExperiment::assay(sce, "csc")), expected)
})

test_that("h5t_read of a group gives what h5read gives: a named list of its members, read", {
    skip_if_not_installed("rhdf5")
    f <- new_h5()
    rhdf5::h5createGroup(f, "g")
    rhdf5::h5createGroup(f, "g/sub")
    rhdf5::h5write(1:3, f, "g/a")
    rhdf5::h5write(matrix(1.5, 2, 2), f, "g/b")
    rhdf5::h5write(c("x", "y"), f, "g/sub/s")
    rhdf5::h5write(7L, f, "top")
    # was: "the object is not a dataset"
    expect_identical(h5t_read(f, "g"), rhdf5_read(f, "g"))
    expect_identical(h5t_read(f, "/"), rhdf5_read(f, "/"))
    expect_identical(h5t_read(f, "g/sub/"), rhdf5_read(f, "g/sub"))
    expect_error(h5t_read(f, "g", index = list(1)), class = "h5turbo_error_invalid")
})

test_that("h5t_ls takes a negative depth as every level, as h5ls does", {
    skip_if_not_installed("rhdf5")
    f <- new_h5()
    rhdf5::h5createGroup(f, "a")
    rhdf5::h5createGroup(f, "a/b")
    rhdf5::h5write(1:3, f, "a/b/x")
    expect_identical(h5t_ls(f, recursive = -1), h5t_ls(f, recursive = TRUE))
    expect_identical(h5t_ls(f, recursive = -1), suppressWarnings(rhdf5::h5ls(f, recursive = -1)))
    expect_error(h5t_ls(f, recursive = 0), class = "h5turbo_error_invalid")
})

h5ad_parts_py <- '
import sys, warnings
import anndata as ad, numpy as np, pandas as pd
warnings.simplefilter("ignore")
a = ad.AnnData(np.ones((3, 2), "f4"), obs=pd.DataFrame({"a/b": [1, 2, 3], "c": [4, 5, 6]}, index=["c1", "c2", "c3"]))
a.layers["counts"] = np.full((3, 2), 2, "i4")
a.layers["spliced"] = np.full((3, 2), 3, "i4")
a.obsm["X_pca"] = np.ones((3, 2))
a.obsm["X_umap"] = np.zeros((3, 2))
a.uns["one"] = 1
a.uns["two"] = "b"
a.obsp["distances"] = np.eye(3)
a.write_h5ad(sys.argv[1])
'

test_that("h5t_read_h5ad takes the names of the layers, reducedDims, uns and pairs to read, and refuses other values", {
    skip_if_not_installed("SingleCellExperiment")
    f <- tempfile(fileext = ".h5ad")
    run_python(h5ad_parts_py, f, needs = "anndata")
    # was: any value but TRUE read none of them, silently
    sce <- h5t_read_h5ad(f, layers = "spliced", reducedDims = "X_umap", uns = "two", pairs = "distances")
    expect_identical(SummarizedExperiment::assayNames(sce), c("X", "spliced"))
    expect_identical(SingleCellExperiment::reducedDimNames(sce), "X_umap")
    expect_identical(names(S4Vectors::metadata(sce)), "two")
    expect_identical(SingleCellExperiment::colPairNames(sce), "distances")
    all <- h5t_read_h5ad(f)
    expect_identical(SummarizedExperiment::assayNames(all), c("X", "counts", "spliced"))
    none <- h5t_read_h5ad(f, layers = FALSE, reducedDims = FALSE, uns = FALSE, pairs = FALSE)
    expect_identical(SummarizedExperiment::assayNames(none), "X")
    expect_length(SingleCellExperiment::reducedDimNames(none), 0L)
    for (bad in list(NA, c(TRUE, TRUE), 1, NULL))
        expect_error(h5t_read_h5ad(f, layers = bad), "layers must be TRUE, FALSE or the names", class = "h5turbo_error_invalid")
    expect_error(h5t_read_h5ad(f, layers = "nope"), "layers 'nope' not in the file", class = "h5turbo_error_not_found")
    expect_error(h5t_read_h5ad(f, pairs = "nope"), "pairs 'nope' not in obsp or varp", class = "h5turbo_error_not_found")
    # anndata writes a column named "a/b" as dataset b of a group a: read as anndata reads it
    expect_identical(SingleCellExperiment::colData(all)[["a/b"]], 1:3)
    expect_identical(SingleCellExperiment::colData(all)[["c"]], 4:6)
})

test_that("scattered positions on any dimension read in blocks give h5read's values", {
    skip_if_not_installed("rhdf5")
    f <- new_h5()
    set.seed(3)
    m <- matrix(rpois(300 * 400, 2), 300, 400)
    cube <- array(runif(40 * 50 * 30), c(40, 50, 30))
    words <- matrix(sprintf("w%d", seq_len(60 * 70)), 60, 70)
    write_rhdf5(f, "rows_chunked", m, chunk = c(1, 400))
    write_rhdf5(f, "blocks", m, chunk = c(20, 20))
    write_rhdf5(f, "cube", cube, chunk = c(4, 5, 3))
    # fixed-length strings: rhdf5's own h5read with index frees a bad pointer on
    # variable-length ones
    rhdf5::h5createDataset(f, "words", dims = dim(words), chunk = c(5, 70), level = 6,
                           storage.mode = "character", size = 8)
    rhdf5::h5write(words, f, "words")
    picks <- list(c(1, 2, 299), c(299, 1, 150, 150, 2), sample(300, 40), 7)
    for (rows in picks) for (name in c("rows_chunked", "blocks")) {
        # was: every row between the first and the last read (the whole matrix)
        expect_identical(h5t_read(f, name, index = list(rows, NULL)), rhdf5_read(f, name, index = list(rows, NULL)))
        expect_identical(h5t_read(f, name, index = list(rows, c(400, 3, 17))),
                         rhdf5_read(f, name, index = list(rows, c(400, 3, 17))))
    }
    idx <- list(c(1, 39, 20, 20), c(50, 2, 25), c(30, 1))
    expect_identical(h5t_read(f, "cube", index = idx), rhdf5_read(f, "cube", index = idx))
    expect_identical(h5t_read(f, "words", index = list(c(60, 1, 33), NULL)),
                     rhdf5_read(f, "words", index = list(c(60, 1, 33), NULL)))
    a <- H5TurboArray(f, "blocks")
    expect_identical(as.matrix(a[c(1, 2, 299), ]), m[c(1, 2, 299), ])
})

test_that("scattered positions on several dimensions take a bounded number of reads", {
    skip_if_not_installed("rhdf5")
    f <- new_h5()
    set.seed(4)
    cube <- array(rpois(200 * 200 * 3, 5), c(200, 200, 3))
    write_rhdf5(f, "cube", cube, chunk = c(2, 2, 3))
    reads <- new.env()
    reads$n <- 0L
    count <- function() reads$n <- reads$n + 1L
    trace(".read_plans", bquote(.(count)()), print = FALSE,
          where = asNamespace("h5turbo"))
    on.exit(untrace(".read_plans", where = asNamespace("h5turbo")), add = TRUE)
    # 40 blocks on each of the first two dimensions: 1600 combinations, was 1600 reads
    scattered <- function() cumsum(sample(3:6, 40, replace = TRUE))  # gaps wider than a chunk
    idx <- list(scattered(), rev(scattered()), c(3, 1))
    expect_identical(h5t_read(f, "cube", index = idx), rhdf5_read(f, "cube", index = idx))
    expect_lte(reads$n, 256L)
    expect_gte(reads$n, 2L)   # one dimension still read in blocks
    # few blocks: still one read per combination, and the same values
    reads$n <- 0L
    idx <- list(c(1, 100, 200), c(5, 150, 151), NULL)
    expect_identical(h5t_read(f, "cube", index = idx), rhdf5_read(f, "cube", index = idx))
    expect_identical(reads$n, 6L)
})

test_that("invalid categoricals and sizes R cannot allocate are h5turbo errors naming the object", {
    f <- tempfile(fileext = ".h5ad")
    run_python('
import sys, warnings
import anndata as ad, numpy as np, pandas as pd, h5py
warnings.simplefilter("ignore")
obs = pd.DataFrame({"a": pd.Categorical(["x", "y", "x"]), "b": pd.Categorical(["u", "v", "u"])},
                   index=["c1", "c2", "c3"])
ad.AnnData(X=np.zeros((3, 2), dtype="f4"), obs=obs).write_h5ad(sys.argv[1])
with h5py.File(sys.argv[1], "a") as f:
    del f["obs/a/categories"]
    f["obs/a/categories"] = np.array([b"x", b"x"], dtype=object)   # repeated: pandas refuses it
    f["obs/b/codes"][1] = 7                                          # past the categories
with h5py.File(sys.argv[2], "w") as f:
    # a compound dataset claiming 2^33 elements (none stored): R cannot hold the values
    f.create_dataset("big", shape=(2**33,), dtype=[("p", "<i4"), ("q", "<f8")], chunks=(2**20,))
', f, paste0(f, ".big.h5"), needs = "anndata")
    # were: "factor level [2] is duplicated" (a plain R error), and b's 7 read as NA
    expect_error(h5t_read_h5ad(f), "obs/a.*not a valid categorical: category 'x' is repeated",
                 class = "h5turbo_error_format")
    expect_error(h5t_read(paste0(f, ".big.h5"), "/big"), "big.*(fit in memory|R's limit|too large|cannot allocate)",
                 class = "h5turbo_error_out_of_memory")
})

test_that("encoded obs/var indexes, uint8 categories and 3-d obsm read as anndata reads them", {
    f <- tempfile(fileext = ".h5ad")
    run_python('
import sys, warnings
import anndata as ad, numpy as np, pandas as pd, scipy.sparse as sp
warnings.simplefilter("ignore")
obs = pd.DataFrame({"cluster": pd.Categorical(np.array([0, 9, 16, 200], np.uint8))},
                   index=pd.CategoricalIndex(["c1", "c2", "c3", "c4"]))
var = pd.DataFrame(index=pd.Index(["g1", "g2"], dtype="string"))   # pandas 3: every string index
a = ad.AnnData(X=sp.csr_matrix(np.arange(8, dtype="f4").reshape(4, 2)), obs=obs, var=var)
a.obsm["X_pca"] = np.ones((4, 3))
a.obsm["stack"] = np.zeros((4, 2, 3))
with ad.settings.override(allow_write_nullable_strings=True):
    a.write_h5ad(sys.argv[1])
', f, needs = c("anndata", "scipy"))
    # were: row names made of the index group's parts ("c(1, 1)"), or "columns and index
    # differ in length"; levels "00" "09" "10" "c8"; the whole file refused for "stack"
    expect_warning(sce <- h5t_read_h5ad(f), "obsm/stack has 3 dimensions, left out of reducedDims")
    expect_identical(colnames(sce), c("c1", "c2", "c3", "c4"))
    expect_identical(rownames(sce), c("g1", "g2"))
    expect_identical(levels(SingleCellExperiment::colData(sce)$cluster), c("0", "9", "16", "200"))
    expect_identical(SingleCellExperiment::reducedDimNames(sce), "X_pca")
    m <- h5t_read_sparse(f)
    expect_identical(dimnames(m), list(c("g1", "g2"), c("c1", "c2", "c3", "c4")))
})

test_that("complex X is a complex assay; complex sparse X an h5turbo error saying why", {
    f <- tempfile(fileext = ".h5ad")
    g <- tempfile(fileext = ".h5ad")
    run_python('
import sys, warnings
import anndata as ad, numpy as np, scipy.sparse as sp
warnings.simplefilter("ignore")
x = (np.arange(12).reshape(3, 4) + 1j * np.arange(12).reshape(3, 4)[::-1]).astype("c16")
ad.AnnData(X=x).write_h5ad(sys.argv[1])
ad.AnnData(X=sp.csr_matrix(x.astype("c8"))).write_h5ad(sys.argv[2])
', f, g, needs = c("anndata", "scipy"))
    # were: "shape  does not match obs x var (3 x 4)", and a bare "'list' object cannot be
    # coerced to type 'double'"
    sce <- h5t_read_h5ad(f)
    x <- matrix(0:11, 3, 4, byrow = TRUE)
    expected <- matrix(complex(real = x, imaginary = x[3:1, ]), 3, 4)   # cells x genes, as anndata
    expect_identical(unname(SummarizedExperiment::assay(sce, withDimnames = FALSE)), t(expected))
    expect_error(h5t_read_h5ad(g), "complex sparse matrices are not read", class = "h5turbo_error_unsupported")
})

test_that("a dataset of references is an unsupported error that says so", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["x"] = np.arange(3)
    refs = f.create_dataset("refs", (2,), dtype=h5py.ref_dtype)
    refs[0] = f["x"].ref
', f)
    # was: "elements with variable-length or reference parts have no fixed C layout"
    expect_error(h5t_read(f, "refs"), "refs.*references are not read in R", class = "h5turbo_error_unsupported")
    expect_identical(as.vector(h5t_read(f, "x")), 0:2)
})
