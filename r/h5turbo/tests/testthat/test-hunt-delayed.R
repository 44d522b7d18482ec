# A demanding Bioconductor user's idioms on H5TurboArray / H5TurboSparseMatrix and the
# h5t_* readers, each compared with what HDF5Array / rhdf5 give on the same file:
# subsetting (drop, negative, logical), t(), cbind/rbind of two seeds, realize and
# writeHDF5Array, summaries with NA / NaN / Inf and integer overflow, dtypes (int8,
# uint16, 64-bit, strings, 1-d, empty and very wide), fill values of unwritten chunks.
skip_if_not_installed("HDF5Array")
skip_if_not_installed("DelayedMatrixStats")

# The value of expr, or the condition message when it fails or warns (so a comparison
# also checks that both sides fail or warn alike).
outcome <- function(expr) {
    tryCatch(expr, error = function(e) "error", warning = function(w) "warning")
}

# Everything a user does with a DelayedMatrix, on x (h5turbo) and h (HDF5Array).
expect_same_delayed_matrix <- function(x, h, info) {
    same <- function(f, what) expect_identical(outcome(f(x)), outcome(f(h)), info = paste(info, what))
    # the native float sums of an untransformed H5TurboMatrix add chunk partials: equal
    # to rounding (docs/r.md, "Sums and base R"), NA / NaN / Inf where HDF5Array has them
    close <- function(f, what) {
        if (type(h) == "double") expect_equal(f(x), f(h), tolerance = 1e-13, info = paste(info, what))
        else same(f, what)
    }
    same(type, "type")
    same(dim, "dim")
    same(dimnames, "dimnames")
    same(chunkdim, "chunkdim")
    same(as.matrix, "as.matrix")
    same(function(m) m[2, ], "row, drop")
    same(function(m) m[, 3], "column, drop")
    same(function(m) as.matrix(m[2, 3, drop = FALSE]), "one value, kept")
    same(function(m) as.matrix(m[-1, -c(1, 3)]), "negative indices")
    same(function(m) as.matrix(m[rep(c(TRUE, FALSE), length.out = nrow(m)), ]), "logical rows")
    same(function(m) as.matrix(t(m)), "t()")
    same(function(m) as.matrix(cbind(m, m[, 2:1])), "cbind")
    same(function(m) as.matrix(rbind(m[3:1, ], m)), "rbind")
    if (type(h) == "character") return(invisible())
    same(function(m) sum(m), "sum")
    same(function(m) sum(m, na.rm = TRUE), "sum, na.rm")
    same(function(m) range(m), "range")
    same(function(m) range(m, na.rm = TRUE), "range, na.rm")
    same(function(m) mean(m), "mean")
    same(anyNA, "anyNA")
    same(function(m) sum(is.na(m)), "is.na")
    same(function(m) sum(is.nan(m)), "is.nan")
    close(colSums, "colSums")
    same(function(m) rowSums(m, na.rm = TRUE), "rowSums, na.rm")
    same(function(m) colMeans(m, na.rm = TRUE), "colMeans, na.rm")
    same(function(m) DelayedMatrixStats::colSums2(m, na.rm = TRUE), "colSums2, na.rm")
    same(function(m) DelayedMatrixStats::rowMeans2(m, na.rm = TRUE), "rowMeans2, na.rm")
    same(function(m) as.matrix(log1p(abs(m))[, 1:2]), "delayed log1p")
}

make_delayed_file <- function() {
    f <- new_h5()
    set.seed(21)
    ints <- matrix(sample(c(1:50, NA), 20 * 12, TRUE), 20, 12,
                   dimnames = list(paste0("g", 1:20), paste0("c", 1:12)))
    HDF5Array::writeHDF5Array(ints, f, "ints", chunkdim = c(7L, 5L), with.dimnames = TRUE)
    dbl <- matrix(rnorm(20 * 12), 20, 12)
    dbl[3, 4] <- NA
    dbl[5, 6] <- NaN
    dbl[7, 8] <- Inf
    HDF5Array::writeHDF5Array(dbl, f, "dbl", chunkdim = c(6L, 6L))
    lgl <- matrix(c(TRUE, FALSE, NA)[sample(3, 30, TRUE)], 6, 5)
    HDF5Array::writeHDF5Array(lgl, f, "lgl")
    chr <- matrix(c("a", "bb", NA, "")[sample(4, 12, TRUE)], 3, 4)
    HDF5Array::writeHDF5Array(chr, f, "chr")
    # sums past 2^31 - 1: R's integer sum overflows to NA with a warning
    HDF5Array::writeHDF5Array(matrix(.Machine$integer.max - 0:11, 4, 3), f, "near_max")
    f
}

test_that("DelayedArray idioms on an H5TurboMatrix give HDF5Array's results", {
    f <- make_delayed_file()
    for (name in c("ints", "dbl", "lgl", "chr", "near_max"))
        expect_same_delayed_matrix(H5TurboArray(f, name), HDF5Array::HDF5Array(f, name), name)
    # cbind / rbind of two different seeds (two files)
    g <- new_h5()
    HDF5Array::writeHDF5Array(matrix(1:24, 2, 12), g, "more")
    expect_identical(as.matrix(rbind(H5TurboArray(f, "near_max")[1:2, 1:3], H5TurboArray(g, "more")[, 1:3])),
                     as.matrix(rbind(HDF5Array::HDF5Array(f, "near_max")[1:2, 1:3],
                                     HDF5Array::HDF5Array(g, "more")[, 1:3])))
})

test_that("seed(), path(), realize() and writeHDF5Array() of an H5TurboMatrix are HDF5Array's", {
    f <- make_delayed_file()
    x <- H5TurboArray(f, "ints")
    h <- HDF5Array::HDF5Array(f, "ints")
    expect_s4_class(seed(x), "H5TurboArraySeed")
    expect_identical(path(seed(x)), path(seed(h)))
    expect_identical(path(x), path(h))
    out <- tempfile(fileext = ".h5")
    written <- HDF5Array::writeHDF5Array(x, out, "copy", with.dimnames = TRUE)
    expect_identical(as.matrix(written), as.matrix(h))
    expect_identical(as.matrix(H5TurboArray(out, "copy")), as.matrix(h))
    old <- DelayedArray::getAutoRealizationBackend()
    DelayedArray::setAutoRealizationBackend("HDF5Array")
    on.exit(DelayedArray::setAutoRealizationBackend(old))
    expect_identical(as.matrix(realize(log1p(x))), as.matrix(realize(log1p(h))))
})

test_that("h5py dtypes, 1-d, empty and very wide datasets: H5TurboArray as HDF5Array", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["i8"] = (np.arange(12, dtype="i1") - 6).reshape(3, 4)
    f["u16"] = np.arange(12, dtype="u2").reshape(3, 4) * 5000
    f["i64"] = np.array([[2**40, -3, 5], [7, -(2**45), 9]], dtype="i8")
    f["u8"] = np.arange(12, dtype="u1").reshape(3, 4)
    f["s"] = np.array([[b"ab", b"c"], [b"", b"NA"]])
    f["vs"] = np.array(["x", "yy", "zzz"], dtype=h5py.string_dtype())
    f["one_d"] = np.arange(10, dtype="f8")
    f["empty"] = np.zeros((0, 5), dtype="i4")
    f.create_dataset("empty_chunked", shape=(0, 5), maxshape=(None, 5), dtype="f8", chunks=(4, 5))
    f["wide"] = np.arange(200000, dtype="i4").reshape(1, 200000)
    f["f32"] = np.array([[1.5, np.nan], [np.inf, -2]], dtype="f4")
', f)
    for (name in c("i8", "u16", "i64", "u8", "s", "vs", "one_d", "empty", "empty_chunked", "wide", "f32")) {
        x <- H5TurboArray(f, name)
        h <- HDF5Array::HDF5Array(f, name)
        expect_identical(type(x), type(h), info = name)
        expect_identical(dim(x), dim(h), info = name)
        expect_identical(chunkdim(x), chunkdim(h), info = name)
        expect_identical(as.array(x), as.array(h), info = name)
        if (type(h) %in% c("integer", "double") && length(dim(h)) == 2L) {
            expect_identical(colSums(x), colSums(h), info = name)
            expect_identical(rowSums(x), rowSums(h), info = name)
            expect_identical(outcome(range(x)), outcome(range(h)), info = name)
            expect_identical(sum(x), sum(h), info = name)
        }
    }
    x <- H5TurboArray(f, "wide")
    h <- HDF5Array::HDF5Array(f, "wide")
    expect_identical(as.vector(x[199990:200000, 1]), as.vector(h[199990:200000, 1]))
    expect_identical(DelayedMatrixStats::colMeans2(x), DelayedMatrixStats::colMeans2(h))
})

test_that("reductions over an empty dimension are base R's on the values rhdf5 reads", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py
with h5py.File(sys.argv[1], "w") as f:
    for t in ["i4", "f8", "u2", "f4"]:
        f.create_dataset("rows0_" + t, shape=(5, 0), dtype=t)
        f.create_dataset("cols0_" + t, shape=(0, 5), maxshape=(None, 5), chunks=(2, 5), dtype=t)
', f)
    for (name in c(outer(c("rows0_", "cols0_"), c("i4", "f8", "u2", "f4"), paste0))) {
        m <- rhdf5::h5read(f, name)
        expect_identical(h5t_colSums(f, name), colSums(m), info = name)
        expect_identical(h5t_rowMeans(f, name), rowMeans(m), info = name)
        expect_identical(h5t_colMeans(f, name), colMeans(m), info = name)
        expect_identical(h5t_colVars(f, name), apply(m, 2, stats::var), info = name)
        x <- H5TurboArray(f, name)
        h <- HDF5Array::HDF5Array(f, name)
        expect_identical(colMeans(x), colMeans(h), info = name)
        expect_identical(DelayedMatrixStats::rowVars(x), DelayedMatrixStats::rowVars(h), info = name)
    }
})

test_that("unwritten chunks read as the fill value, in reads, sums and DelayedArrays", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("fill", shape=(10, 8), dtype="i4", chunks=(3, 3), fillvalue=7)
    d[0:3, 0:3] = 1
    d[9, 7] = -2
    e = f.create_dataset("fill_nan", shape=(10, 8), dtype="f8", chunks=(4, 4), fillvalue=np.nan)
    e[0:4, 0:4] = 2.5
    f.create_dataset("never", shape=(5, 4), dtype="i2", fillvalue=3)
    f.create_dataset("never_chunked", shape=(5, 4), dtype="f4", chunks=(2, 2), fillvalue=-1.5)
    g = f.create_dataset("edge", shape=(7, 5), dtype="u2", chunks=(4, 4), fillvalue=9)
    g[6, 4] = 1
', f)
    for (name in c("fill", "fill_nan", "never", "never_chunked", "edge")) {
        m <- rhdf5::h5read(f, name)
        expect_identical(h5t_read(f, name), m, info = name)
        expect_identical(h5t_read(f, name, index = list(c(4, 1, 4), 2:1)),
                         rhdf5::h5read(f, name, index = list(c(4, 1, 4), 2:1)), info = name)
        expect_identical(h5t_colSums(f, name), colSums(m), info = name)
        expect_identical(h5t_rowMeans(f, name), rowMeans(m), info = name)
        x <- H5TurboArray(f, name)
        h <- HDF5Array::HDF5Array(f, name)
        expect_identical(as.matrix(x), as.matrix(h), info = name)
        expect_identical(rowSums(x), rowSums(h), info = name)
        expect_identical(DelayedMatrixStats::colSums2(x), DelayedMatrixStats::colSums2(h), info = name)
    }
})

test_that("integer means of large values and renamed matrices are HDF5Array's exactly", {
    f <- new_h5()
    set.seed(2)
    m <- matrix(sample(c(-2^31 + 1, 2^31 - 1, 7, 3e8), 300 * 400, TRUE), 300, 400)
    storage.mode(m) <- "integer"
    HDF5Array::writeHDF5Array(m, f, "m", chunkdim = c(100L, 100L))
    x <- H5TurboArray(f, "m")
    h <- HDF5Array::HDF5Array(f, "m")
    expect_identical(DelayedMatrixStats::colMeans2(x), DelayedMatrixStats::colMeans2(h))
    expect_identical(DelayedMatrixStats::rowMeans2(x), DelayedMatrixStats::rowMeans2(h))
    expect_identical(colMeans(x), colMeans(m))
    expect_identical(rowMeans(x), rowMeans(m))
    # dimnames set by the user: a delayed operation, the names carried as HDF5Array's
    colnames(x) <- colnames(h) <- paste0("cell", 1:400)
    rownames(x) <- rownames(h) <- paste0("gene", 1:300)
    expect_identical(colSums(x), colSums(h))
    expect_identical(rowMeans(x), rowMeans(h))
    expect_identical(DelayedMatrixStats::colSums2(x), DelayedMatrixStats::colSums2(h))
    expect_identical(x["gene3", c("cell9", "cell1")], h["gene3", c("cell9", "cell1")])
})

# A 10x v3 group and an AnnData file holding the same counts as csr X and a csc layer.
make_sparse_files <- function() {
    dir <- tempfile("sparse")
    dir.create(dir)
    run_python('
import sys, os, warnings
import h5py, numpy as np, scipy.sparse as sp, anndata as ad, pandas as pd
warnings.simplefilter("ignore")
rng = np.random.default_rng(4)
m = sp.random(300, 40, density=0.05, format="csc", random_state=4)   # genes x cells
m.data = rng.integers(1, 20, m.data.size).astype("i4")
with h5py.File(os.path.join(sys.argv[1], "tenx.h5"), "w") as f:
    g = f.create_group("matrix")
    g["data"] = m.data; g["indices"] = m.indices.astype("i8"); g["indptr"] = m.indptr.astype("i8")
    g["shape"] = np.array(m.shape, dtype="i4")
    g["barcodes"] = np.array([f"BC{j}-1".encode() for j in range(40)])
    g["features/id"] = np.array([f"ENSG{i}".encode() for i in range(300)])
    g["features/name"] = np.array([f"gene{i}".encode() for i in range(300)])
X = m.T.tocsr().astype("f4")
ad.AnnData(X=X, obs=pd.DataFrame(index=[f"BC{j}-1" for j in range(40)]),
           var=pd.DataFrame(index=[f"ENSG{i}" for i in range(300)]),
           layers={"csc": X.tocsc()}).write_h5ad(os.path.join(sys.argv[1], "a.h5ad"))
', dir, needs = c("anndata", "scipy"))
    list(tenx = file.path(dir, "tenx.h5"), h5ad = file.path(dir, "a.h5ad"))
}

# HDF5Array 1.26's sparse constructors fail on a group once rhdf5's error handling is
# "suppress", where a first seed leaves it: set it back before each.
hdf5array_sparse <- function(f, group, tenx = FALSE) {
    rhdf5::h5errorHandling("normal")
    if (tenx) HDF5Array::TENxMatrix(f, group) else HDF5Array::H5SparseMatrix(f, group)
}

test_that("DelayedArray idioms on an H5TurboSparseMatrix give TENxMatrix's / H5SparseMatrix's results", {
    files <- make_sparse_files()
    cases <- list(list(files$tenx, "matrix", TRUE), list(files$h5ad, "X", FALSE),
                  list(files$h5ad, "layers/csc", FALSE))
    for (case in cases) {
        info <- paste(basename(case[[1]]), case[[2]])
        x <- H5TurboSparseMatrix(case[[1]], case[[2]])
        h <- hdf5array_sparse(case[[1]], case[[2]], case[[3]])
        # HDF5Array reads no names from AnnData groups: compare the values
        if (is.null(dimnames(h))) dimnames(x) <- NULL
        expect_true(is_sparse(x), info = info)
        expect_identical(chunkdim(seed(x)), chunkdim(seed(h)), info = info)
        expect_same_delayed_matrix(x, h, info)
        expect_identical(as(x[, c(5, 1, 5)], "dgCMatrix"), as(h[, c(5, 1, 5)], "dgCMatrix"), info = info)
        expect_identical(as(t(x), "dgCMatrix"), as(t(h), "dgCMatrix"), info = info)
        expect_identical(DelayedMatrixStats::colVars(x), DelayedMatrixStats::colVars(h), info = info)
        expect_identical(sum(x > 2), sum(h > 2), info = info)
        grid <- DelayedArray::defaultAutoGrid(x, block.length = 3000)
        expect_identical(DelayedArray::blockApply(x, function(b) class(b)[1], grid = grid, as.sparse = NA),
                         DelayedArray::blockApply(h, function(b) class(b)[1], grid = grid, as.sparse = NA),
                         info = info)
        out <- tempfile(fileext = ".h5")
        expect_identical(as.matrix(HDF5Array::writeHDF5Array(x, out, "dense", with.dimnames = TRUE)),
                         as.matrix(h), info = info)
        # writeTENxMatrix's own TENxMatrix() at the end trips on rhdf5's error handling
        rhdf5::h5errorHandling("normal")
        try(HDF5Array::writeTENxMatrix(x, out, group = "tenx"), silent = TRUE)
        expect_identical(as(hdf5array_sparse(out, "tenx", tenx = TRUE), "dgCMatrix"),
                         as(h, "dgCMatrix"), info = info)
    }
})

test_that("sparse value types, NaN, empty and all-zero groups: as H5SparseMatrix", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np, scipy.sparse as sp
def put(f, name, m, fmt, dtype):
    g = f.create_group(name)
    g.attrs["encoding-type"] = fmt + "_matrix"
    g.attrs["encoding-version"] = "0.1.0"
    g.attrs["shape"] = np.array(m.shape)
    g["data"] = m.data.astype(dtype)
    g["indices"] = m.indices
    g["indptr"] = m.indptr
with h5py.File(sys.argv[1], "w") as f:
    m = sp.random(6, 9, density=0.4, format="csr", random_state=3) * 10
    m.data = np.round(m.data) + 1
    put(f, "i64", m, "csr", "i8")
    big = m.copy(); big.data[0] = 2**40
    put(f, "i64_big", big, "csr", "i8")
    put(f, "csc_f64", m.tocsc(), "csc", "f8")
    put(f, "u16", m, "csr", "u2")
    put(f, "f16", m, "csr", "f2")
    put(f, "no_rows", sp.csr_matrix((0, 9)), "csr", "f4")
    put(f, "no_cols", sp.csr_matrix((6, 0)), "csr", "f4")
    put(f, "all_zero", sp.csr_matrix((6, 9)), "csr", "f4")
    nan = m.copy(); nan.data[1] = np.nan; nan.data[2] = -np.inf
    put(f, "nan", nan, "csr", "f8")
', f, needs = "scipy")
    for (group in c("i64", "i64_big", "csc_f64", "u16", "f16", "no_cols", "all_zero", "nan")) {
        x <- H5TurboSparseMatrix(f, group)
        h <- hdf5array_sparse(f, group)
        dimnames(x) <- NULL
        expect_identical(type(x), type(h), info = group)
        expect_identical(as.matrix(x), as.matrix(h), info = group)
        expect_identical(as(x, "dgCMatrix"), as(h, "dgCMatrix"), info = group)
        expect_identical(outcome(colSums(x)), outcome(colSums(h)), info = group)
        expect_identical(outcome(rowSums(x)), outcome(rowSums(h)), info = group)
        expect_identical(outcome(range(x)), outcome(range(h)), info = group)
        expect_identical(anyNA(x), anyNA(h), info = group)
        expect_identical(outcome(as(x[c(2, 1), ], "dgCMatrix")), outcome(as(h[c(2, 1), ], "dgCMatrix")), info = group)
    }
})

test_that("a sparse matrix without cells or genes works in block operations, as the dgCMatrix", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np, scipy.sparse as sp
def put(f, name, m, fmt):
    g = f.create_group(name)
    g.attrs["encoding-type"] = fmt + "_matrix"
    g.attrs["encoding-version"] = "0.1.0"
    g.attrs["shape"] = np.array(m.shape)
    g["data"] = m.data.astype("f4")
    g["indices"] = m.indices
    g["indptr"] = m.indptr
with h5py.File(sys.argv[1], "w") as f:
    put(f, "no_cells_csr", sp.csr_matrix((0, 9)), "csr")
    put(f, "no_genes_csr", sp.csr_matrix((6, 0)), "csr")
    put(f, "no_cells_csc", sp.csc_matrix((0, 9)), "csc")
    put(f, "no_genes_csc", sp.csc_matrix((6, 0)), "csc")
', f, needs = "scipy")
    for (group in c("no_cells_csr", "no_genes_csr", "no_cells_csc", "no_genes_csc")) {
        # genes x cells, as the shape attribute (cells, genes) that rhdf5 reads says
        dims <- rev(as.integer(rhdf5::h5readAttributes(f, group)$shape))
        ref <- DelayedArray::DelayedArray(Matrix::sparseMatrix(i = integer(0), j = integer(0), x = numeric(0),
                                                               dims = dims))
        x <- H5TurboSparseMatrix(f, group)
        dimnames(x) <- NULL
        expect_identical(dim(x), dims, info = group)
        # was: c(nrow, 1) for a matrix of 0 columns, a chunk grid DelayedArray refuses
        # ("the current automatic grid maker returned an error"; HDF5Array's seed too)
        expect_true(all(chunkdim(seed(x)) <= dims), info = group)
        expect_identical(colSums(x), colSums(ref), info = group)
        expect_identical(rowSums(x), rowSums(ref), info = group)
        expect_identical(anyNA(x), anyNA(ref), info = group)
        expect_identical(sum(x), sum(ref), info = group)
        expect_identical(as.matrix(x), unname(as.matrix(ref)) + 0, info = group)
        expect_identical(DelayedMatrixStats::colSums2(x), DelayedMatrixStats::colSums2(ref), info = group)
    }
})

test_that("h5t_ls, h5t_readAttributes and h5t_read on links, scalars, unlimited and empty datasets: as rhdf5", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["grp/a"] = np.arange(6).reshape(2, 3)
    f["grp/sub/b"] = np.arange(3.0)
    f["soft"] = h5py.SoftLink("/grp/a")
    f["scalar"] = 3.5
    f["scalar_s"] = "hello"
    f.create_dataset("unlim", shape=(4, 3), maxshape=(None, 3), dtype="i4", chunks=(2, 3))
    f.create_dataset("zero", shape=(0,), dtype="f4")
    f.create_dataset("ud", shape=(0, 3), maxshape=(None, None), dtype="i2", chunks=(1, 1))
    f["i8"] = np.array([-1, 2], dtype="i1")
    a = f["grp/a"].attrs
    a["Zeta"] = 1; a["Beta"] = 5; a["_under"] = 4
    a["alpha"] = np.int64(2**40)
    a["beta"] = np.array([1, 2, 3], dtype="i8")
    a["u32"] = np.uint32(2**32 - 1)
    a["s"] = "text"; a["fs"] = np.bytes_(b"fixed")
    a["sarr"] = np.array([b"x", b"yy"])
    a["vsarr"] = np.array(["p", "qq"], dtype=h5py.string_dtype())
    a["empty_arr"] = np.zeros((0,), dtype="f8")
    a["m"] = np.arange(6.0).reshape(2, 3)
    a["u8"] = np.array([1, 255], dtype="u1")
    a["f32"] = np.float32(1.5)
    f.attrs["root_attr"] = "r"
', f)
    expect_identical(h5t_ls(f), rhdf5::h5ls(f))
    expect_identical(h5t_ls(f, recursive = FALSE), rhdf5::h5ls(f, recursive = FALSE))
    expect_identical(h5t_ls(f, recursive = 2), rhdf5::h5ls(f, recursive = 2))
    quiet <- function(expr) suppressWarnings(suppressMessages(expr))
    expect_identical(quiet(h5t_readAttributes(f, "grp/a")), quiet(rhdf5::h5readAttributes(f, "grp/a")))
    # overflow warnings as rhdf5's (64-bit and unsigned 32-bit values past 2^31 - 1)
    warned <- character()
    withCallingHandlers(h5t_readAttributes(f, "grp/a"),
                        warning = function(w) { warned <<- c(warned, conditionMessage(w)); invokeRestart("muffleWarning") })
    expect_true(any(grepl("alpha", warned)) && any(grepl("u32", warned)))
    expect_gt(length(tryCatch(rhdf5::h5readAttributes(f, "grp/a"), warning = function(w) "warned")), 0)
    expect_identical(h5t_readAttributes(f, "/"), rhdf5::h5readAttributes(f, "/"))
    for (name in c("grp/a", "/grp/a", "soft", "scalar", "scalar_s", "unlim", "zero", "ud", "i8"))
        expect_identical(h5t_read(f, name), quiet(rhdf5::h5read(f, name)), info = name)
    expect_identical(h5t_read(f, "grp/a", index = list(c(3L, 1L, 3L), 2.0)),
                     rhdf5::h5read(f, "grp/a", index = list(c(3L, 1L, 3L), 2.0)))
})

test_that("index elements given as calls or names are evaluated, as h5read does", {
    f <- new_h5()
    rhdf5::h5write(matrix(1:20, 4, 5), f, "m")
    keep <- c(5, 2)
    # was: "index[[1]] must hold whole numbers"
    expect_identical(h5t_read(f, "m", index = list(quote(1:2), NULL)),
                     rhdf5::h5read(f, "m", index = list(quote(1:2), NULL)))
    expect_identical(h5t_read(f, "m", index = list(NULL, quote(c(5, 2)))),
                     rhdf5::h5read(f, "m", index = list(NULL, quote(c(5, 2)))))
    expect_identical(h5t_read(f, "m", index = list(quote(seq_len(3)), as.name("keep"))),
                     rhdf5::h5read(f, "m", index = list(1:3, keep)))
})

test_that("random index sets on the corpus's numeric matrices read as h5read reads them", {
    skip_without_corpus()
    checked <- 0
    for (f in corpus_files()) {
        listing <- tryCatch(suppressWarnings(h5t_ls(f)), error = function(e) NULL)
        if (is.null(listing)) next
        keep <- listing$otype == "H5I_DATASET" & listing$dclass %in% c("INTEGER", "FLOAT") & grepl(" x ", listing$dim)
        for (k in which(keep)) {
            name <- sub("^//", "/", paste0(listing$group[k], "/", listing$name[k]))
            ref <- tryCatch(suppressWarnings(suppressMessages(rhdf5::h5read(f, name))), error = function(e) NULL)
            if (is.null(ref) || is.null(dim(ref)) || length(ref) == 0L || length(ref) > 5e6) next
            set.seed(checked)
            index <- lapply(dim(ref), function(n) sample(n, sample(1:5, 1), replace = TRUE))
            index[sample(length(index), 1)] <- list(NULL)
            ours <- tryCatch(suppressWarnings(h5t_read(f, name, index = index)),
                             h5turbo_error_unsupported = function(e) e)
            # floats numpy lacks (128-bit, VAX, IEEE quad): refused, where rhdf5 converts
            if (inherits(ours, "h5turbo_error_unsupported") && grepl("no numpy equivalent", conditionMessage(ours)))
                next
            expect_identical(ours, suppressWarnings(suppressMessages(rhdf5::h5read(f, name, index = index))),
                             info = paste(f, name))
            checked <- checked + 1
        }
    }
    expect_gt(checked, 100)
})

test_that("scattered positions are read a piece at a time, in memory of the result", {
    # 150 random cells of a matrix were read over one range holding them all: the whole
    # matrix in one vector for a result 13 times smaller (rhdf5 reads only the cells).
    # Each read now takes about .PIECE_ELEMENTS values (2^22; 2^20 here, for a matrix
    # of test size), cut to the positions before the next.
    set.seed(20261207)
    x <- matrix(sample.int(1000L, 3000L * 2000L, replace = TRUE), 3000L, 2000L)
    f <- new_h5()
    write_rhdf5(f, "m", x, chunk = c(100L, 100L), level = 1)
    piece <- get(".PIECE_ELEMENTS", envir = asNamespace("h5turbo"))
    assignInNamespace(".PIECE_ELEMENTS", 2^20, "h5turbo")
    on.exit(assignInNamespace(".PIECE_ELEMENTS", piece, "h5turbo"), add = TRUE)
    largest <- new.env()
    largest$n <- 0
    note <- function(r) largest$n <- max(largest$n, length(r))
    trace(".read_plans", exit = bquote(.(note)(returnValue())), print = FALSE, where = asNamespace("h5turbo"))
    on.exit(untrace(".read_plans", where = asNamespace("h5turbo")), add = TRUE)
    cells <- sample(2000L, 150L)
    genes <- c(sample(3000L, 150L), 17L, 17L)
    for (index in list(list(NULL, cells), list(genes, NULL), list(genes, cells))) {
        largest$n <- 0
        expect_identical(h5t_read(f, "m", index = index), rhdf5_read(f, "m", index = index))
        expect_lt(largest$n, length(x) / 4)
    }
    seed <- H5TurboArray(f, "m")
    expect_identical(as.matrix(seed[, cells]), x[, cells])
    expect_identical(as.matrix(seed[rev(genes), ]), x[rev(genes), ])
})
