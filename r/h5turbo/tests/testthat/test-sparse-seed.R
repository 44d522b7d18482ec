# H5TurboSparseMatrix, the lazy sparse DelayedArray backend: against HDF5Array's
# TENxMatrix / H5SparseMatrix (where they read the group) and h5t_read_sparse, on the
# corpus's 10x files and on AnnData / 10x files written by h5py at test time.
skip_if_not_installed("HDF5Array")
skip_if_not_installed("DelayedMatrixStats")

# HDF5Array's reader of the group, or NULL where it cannot read it (TENxMatrix 1.26
# wants a `genes` dataset; H5SparseMatrix fails on some groups). HDF5Array 1.26's
# h5isdataset fails on a group once rhdf5's error handling is "suppress", which a
# first seed leaves it at: each attempt sets it back to rhdf5's "normal".
hdf5array_ref <- function(f, g, tenx) {
    quiet <- function(expr) {
        rhdf5::h5errorHandling("normal")
        tryCatch(suppressWarnings(suppressMessages(expr)), error = function(e) NULL)
    }
    if (tenx) {
        ref <- quiet(HDF5Array::TENxMatrix(f, g))
        if (!is.null(ref)) return(ref)
    }
    quiet(HDF5Array::H5SparseMatrix(f, g))
}

# Index sets DelayedArray may hand a seed: unsorted, repeated, empty, everything, one.
index_sets <- function(n, seed) {
    set.seed(seed)
    list(NULL, integer(0), sample(n, min(n, 7)), sample(n, 2 * n, replace = TRUE), n, 1L,
         rev(seq_len(n)), sort(sample(n, max(1, n %/% 3))))
}

# Everything the seed gives, against a dense reference matrix `dense` (features x
# cells, the values as HDF5Array would type them) and h5t_read_sparse's dgCMatrix.
check_seed <- function(x, dense, sparse_ref, info) {
    expect_s4_class(x, "H5TurboSparseMatrix")
    expect_s4_class(x, "DelayedMatrix")
    expect_true(is_sparse(x), info = info)
    expect_true(is_sparse(seed(x)), info = info)
    expect_identical(dim(x), dim(dense), info = info)
    expect_identical(dimnames(x), dimnames(sparse_ref), info = info)
    expect_identical(type(x), typeof(dense), info = info)
    # realized: identical to h5t_read_sparse, both directly and by blocks
    expect_identical(as(x, "dgCMatrix"), sparse_ref, info = info)
    expect_identical(unname(as.matrix(x)), unname(dense), info = info)
    rows <- index_sets(nrow(x), 1)[c(1, 2, 4, 5)]   # the minor axis: fewer kinds
    cols <- index_sets(ncol(x), 2)
    for (k in seq_along(rows)) for (l in seq_along(cols)) {
        index <- list(rows[[k]], cols[[l]])
        size <- prod(mapply(function(i, n) if (is.null(i)) n else length(i), index, dim(x)))
        if (size > 2e5 && !(k == 1L && l == 1L)) next   # the whole matrix once: the big corpus one is 5 M cells
        want <- dense[if (is.null(index[[1]])) TRUE else index[[1]],
                      if (is.null(index[[2]])) TRUE else index[[2]], drop = FALSE]
        got <- extract_array(seed(x), index)
        expect_identical(got, unname(want), info = paste(info, k, l))
        sas <- extract_sparse_array(seed(x), index)
        expect_identical(dim(sas), dim(want), info = paste(info, k, l))
        expect_identical(as.array(sas), unname(want), info = paste(info, k, l))
    }
    # the DelayedArray front end: [ with names, transposition, arithmetic
    i <- cols[[4]]   # unsorted, repeated
    expect_identical(as.matrix(x[, i]), {d <- dense[, i, drop = FALSE]; dimnames(d) <- dimnames(sparse_ref[, i, drop = FALSE]); d},
                     info = info)
    expect_identical(unname(as.matrix(t(x))), unname(t(dense)), info = info)
    dsum <- unname(colSums(dense)); rsum <- unname(rowSums(dense))
    expect_equal(unname(colSums(x)), dsum, info = info)
    expect_equal(unname(rowSums(x)), rsum, info = info)
    expect_equal(unname(colSums(log1p(x))), unname(colSums(log1p(dense))), info = info)
    expect_identical(names(colSums(x)), colnames(sparse_ref), info = info)
    if (typeof(dense) != "logical") {
        expect_equal(DelayedMatrixStats::colVars(x), matrixStats::colVars(dense + 0), info = info)
        expect_equal(DelayedMatrixStats::rowMeans2(x), unname(rowMeans(dense)), info = info)
    }
}

# Small blocks: DelayedArray's block processing walks column (row for a csc AnnData)
# blocks of sparse data, every block spanning the whole compressed axis.
check_blocks <- function(x, dense, sparse_ref, info) {
    old <- DelayedArray::getAutoBlockSize()
    on.exit(suppressMessages(DelayedArray::setAutoBlockSize(old)))
    suppressMessages(DelayedArray::setAutoBlockSize(max(8 * max(dim(x)), length(x))))   # ~8 blocks
    grid <- DelayedArray::defaultAutoGrid(x)
    cd <- chunkdim(seed(x))
    col_major <- cd[2] == 1L
    expect_true(identical(cd, c(nrow(x), 1L)) || identical(cd, c(1L, ncol(x))), info = info)
    expect_gt(length(grid), 1L)
    spans <- dims(grid)
    if (col_major) expect_true(all(spans[, 1] == nrow(x)), info = info)
    else expect_true(all(spans[, 2] == ncol(x)), info = info)
    classes <- unlist(DelayedArray::blockApply(x, function(b) class(b)[1], grid = grid, as.sparse = NA))
    expect_false(any(classes %in% c("matrix", "array")), info = info)   # sparse blocks
    sums <- DelayedArray::blockApply(x, function(b) sum(as.array(b)), grid = grid)
    expect_equal(sum(unlist(sums)), sum(dense + 0), info = info)
    expect_equal(unname(colSums(x)), unname(colSums(dense)), info = info)
    expect_equal(unname(rowSums(x)), unname(rowSums(dense)), info = info)
    # a subset is a plain DelayedMatrix: as(, "dgCMatrix") by blocks
    j <- rev(seq_len(ncol(x)))
    got <- suppressMessages(suppressWarnings(as(x[, j], "dgCMatrix")))   # Matrix 1.5 warns on logical blocks
    expect_identical(unname(as.matrix(got)), unname(dense[, j, drop = FALSE] + 0), info = info)
    expect_identical(dimnames(got), dimnames(sparse_ref[, j, drop = FALSE]), info = info)
    if (typeof(dense) != "logical")
        expect_equal(DelayedMatrixStats::colSums2(x * 2), 2 * unname(colSums(dense)), info = info)
}

test_that("10x corpus files: as TENxMatrix / H5SparseMatrix and h5t_read_sparse", {
    skip_without_corpus()
    files <- corpus_files("10x")
    expect_gt(length(files), 0)
    compared <- 0L
    for (f in files) {
        top <- h5t_ls(f, recursive = FALSE)
        groups <- if ("matrix" %in% top$name) "matrix" else top$name[top$otype == "H5I_GROUP"]
        for (g in groups) {
            info <- paste(basename(f), g)
            x <- H5TurboSparseMatrix(f, g)
            sparse_ref <- h5t_read_sparse(f, g)
            ref <- hdf5array_ref(f, g, tenx = TRUE)
            if (!is.null(ref)) {
                compared <- compared + 1L
                dense <- as.matrix(ref)
                expect_identical(type(x), type(ref), info = info)
                expect_identical(chunkdim(seed(x)), chunkdim(seed(ref)), info = info)
                if (!is.null(dimnames(ref))) expect_identical(dimnames(x), dimnames(ref), info = info)
                expect_identical(colSums(x), colSums(ref), info = info)
                expect_identical(rowSums(x), rowSums(ref), info = info)
                expect_identical(DelayedMatrixStats::colSums2(x), DelayedMatrixStats::colSums2(ref), info = info)
            } else {
                dense <- as.matrix(sparse_ref)
                storage.mode(dense) <- type(x)
            }
            dimnames(dense) <- NULL
            check_seed(x, dense, sparse_ref, info)
            if (ncol(x) > 1L) check_blocks(x, dense, sparse_ref, info)
            expect_identical(path(x), normalizePath(f))
        }
    }
    expect_gt(compared, 0L)
    f3 <- grep("3.0.0", files, value = TRUE)[1]
    if (!is.na(f3)) expect_identical(as(H5TurboSparseMatrix(f3), "dgCMatrix"), h5t_read_sparse(f3))
})

sparse_seed_py <- '
import sys, h5py, numpy as np, scipy.sparse as sp
n_cells, n_genes = 57, 23
m = sp.random(n_cells, n_genes, density=0.25, format="lil", random_state=3, dtype="f8")
m[5, :] = 0                                   # an empty cell
m = m.tocsr(); m.eliminate_zeros()
m.data = np.round(m.data * 100) / 4
counts = sp.random(n_cells, n_genes, density=0.3, format="csr", random_state=5)
counts.data = np.ceil(counts.data * 50)
def put(f, name, mat, kind, idx="i4", data=None, chunks=None):
    g = f.create_group(name)
    g.attrs["encoding-type"] = kind
    g.attrs["encoding-version"] = "0.1.0"
    g.attrs["shape"] = np.array(mat.shape)
    comp = "gzip" if chunks else None
    g.create_dataset("data", data=mat.data if data is None else data, chunks=chunks, compression=comp)
    g.create_dataset("indices", data=mat.indices.astype(idx), chunks=chunks, compression=comp)
    g["indptr"] = mat.indptr.astype("i8")
with h5py.File(sys.argv[1], "w") as f:
    put(f, "X", m.astype("f4"), "csr_matrix", chunks=(16,))
    f.create_group("layers")
    put(f, "layers/csc", m.tocsc(), "csc_matrix")
    put(f, "layers/counts", counts.astype("i8"), "csr_matrix", idx="i8")
    put(f, "layers/counts32", counts.tocsc().astype("i4"), "csc_matrix")
    b = (m > 2).tocsr(); b.eliminate_zeros()
    put(f, "layers/bool", b, "csr_matrix", data=b.data.astype(bool))
    # unsorted and repeated indices within a row (scipy allows them; they add up)
    u = m.copy()
    for r in range(u.shape[0]):
        a, z = u.indptr[r], u.indptr[r + 1]
        u.indices[a:z] = u.indices[a:z][::-1].copy()
    r = int(np.argmax(np.diff(u.indptr) >= 2))
    u.indices[u.indptr[r] + 1] = u.indices[u.indptr[r]]
    put(f, "layers/unsorted", u, "csr_matrix")
    f["ref/unsorted"] = u.toarray()           # scipy adds the repeats up
    for name, n in [("obs", n_cells), ("var", n_genes)]:
        g = f.create_group(name)
        g.attrs["_index"] = "_index"
        g.attrs["encoding-type"] = "dataframe"
        g["_index"] = np.array(["%s%d" % (name, i) for i in range(n)], dtype=h5py.string_dtype())
    def bad(name, data, indices, indptr, shape=(3, 4)):
        g = f.create_group(name)
        g.attrs["encoding-type"] = "csr_matrix"
        g.attrs["shape"] = np.array(shape)
        g["data"] = np.asarray(data, dtype="f8"); g["indices"] = np.asarray(indices); g["indptr"] = np.asarray(indptr)
    bad("bad/index_out", [1, 2, 3], [0, 9, 1], [0, 1, 2, 3])   # cell 2 points past 4 genes
    bad("bad/index_neg", [1, 2, 3], [0, 1, -1], [0, 1, 2, 3])
    bad("bad/indptr_down", [1, 2, 3], [0, 1, 2], [0, 2, 1, 3])
    bad("bad/indptr_len", [1, 2, 3], [0, 1, 2], [0, 1, 3])
    bad("bad/indptr_end", [1, 2, 3], [0, 1, 2], [0, 1, 2, 5])
    bad("bad/lengths", [1, 2, 3], [0, 1], [0, 1, 2, 3])
    g = f.create_group("bad/strings"); g.attrs["encoding-type"] = "csr_matrix"; g.attrs["shape"] = np.array([1, 2])
    g["data"] = np.array([b"a"]); g["indices"] = np.array([0]); g["indptr"] = np.array([0, 1])
    g = f.create_group("bad/encoding"); g.attrs["encoding-type"] = "coo_matrix"; g.attrs["shape"] = np.array([1, 2])
    g["data"] = np.ones(1); g["indices"] = np.array([0]); g["indptr"] = np.array([0, 1])
    f["dense"] = np.ones((3, 2))
with h5py.File(sys.argv[2], "w") as f:
    c = counts.T.tocsc().astype("i4")   # features x barcodes, CSC
    for name, v3 in [("matrix", True), ("GRCh38", False)]:
        g = f.create_group(name)
        g["data"] = c.data if v3 else c.data.astype("i8")
        g["indices"] = c.indices.astype("i8"); g["indptr"] = c.indptr.astype("i8")
        g["shape"] = np.array(c.shape, dtype="i4")
        g["barcodes"] = np.array([b"AC%03d-1" % i for i in range(c.shape[1])])
        ids = np.array([b"ENSG%05d" % i for i in range(c.shape[0])])
        if v3:
            ft = g.create_group("features"); ft["id"] = ids
            ft["name"] = np.array([b"G%d" % i for i in range(c.shape[0])])
        else:
            g["genes"] = ids; g["gene_names"] = np.array([b"G%d" % i for i in range(c.shape[0])])
'

sparse_seed_files <- function() {
    h5ad <- tempfile(fileext = ".h5ad")
    tenx <- tempfile(fileext = ".h5")
    run_python(sparse_seed_py, h5ad, tenx, needs = "scipy")
    list(h5ad = h5ad, tenx = tenx)
}

test_that("AnnData csr and csc groups and generated 10x groups: as h5t_read_sparse and HDF5Array", {
    files <- sparse_seed_files()
    f <- files$h5ad
    types <- c(X = "double", "layers/csc" = "double", "layers/counts" = "double",
               "layers/counts32" = "integer", "layers/bool" = "logical", "layers/unsorted" = "double")
    compared <- 0L
    for (g in names(types)) {
        x <- H5TurboSparseMatrix(f, g)
        sparse_ref <- h5t_read_sparse(f, g)
        expect_identical(dim(x), c(23L, 57L))
        expect_identical(type(x), types[[g]], info = g)
        expect_identical(rownames(x), paste0("var", 0:22))
        expect_identical(colnames(x), paste0("obs", 0:56))
        expect_identical(chunkdim(seed(x)), if (g %in% c("layers/csc", "layers/counts32")) c(1L, 57L) else c(23L, 1L))
        dense <- as.matrix(sparse_ref)
        dimnames(dense) <- NULL
        storage.mode(dense) <- types[[g]]
        # HDF5Array's H5SparseMatrix (cells x genes for AnnData), where it reads the group
        # (h5mread 1.26 reads no enum: not the bool layer)
        ref <- hdf5array_ref(f, g, tenx = FALSE)
        refm <- if (is.null(ref)) NULL else tryCatch(unname(as.matrix(ref)), error = function(e) NULL)
        if (g == "layers/unsorted") {
            # HDF5Array keeps one of two values at the same index; scipy adds them
            expect_identical(rhdf5_read(f, "ref/unsorted"), dense)
            refm <- NULL
        }
        if (!is.null(refm)) {
            compared <- compared + 1L
            if (!identical(dim(refm), dim(dense))) refm <- t(refm)
            expect_identical(refm, dense, info = g)
        }
        check_seed(x, dense, sparse_ref, g)
        check_blocks(x, dense, sparse_ref, g)
    }
    expect_gt(compared, 0L)
    # the unsorted layer: repeated indices add up, as in h5t_read_sparse and scipy
    expect_identical(as(H5TurboSparseMatrix(f, "layers/unsorted"), "dgCMatrix"), h5t_read_sparse(f, "layers/unsorted"))
    expect_identical(as(H5TurboSparseMatrix(f, "layers/csc"), "dgCMatrix"), h5t_read_sparse(f, "X"))
    expect_identical(as(H5TurboSparseMatrix(f), "dgCMatrix"), h5t_read_sparse(f))   # default group X
    # the same matrix, gene x cell, in 10x v3 (features/id) and v2 (genes, int64 data)
    counts <- unname(as.matrix(H5TurboSparseMatrix(f, "layers/counts32")))
    for (g in c("matrix", "GRCh38")) {
        x <- H5TurboSparseMatrix(files$tenx, g)
        sparse_ref <- h5t_read_sparse(files$tenx, g)
        expect_identical(type(x), if (g == "matrix") "integer" else "double")
        expect_identical(rownames(x), sprintf("ENSG%05d", 0:22))
        expect_identical(colnames(x), sprintf("AC%03d-1", 0:56))
        dense <- counts
        storage.mode(dense) <- type(x)
        ref <- hdf5array_ref(files$tenx, g, tenx = TRUE)
        if (!is.null(ref)) expect_identical(unname(as.matrix(ref)), dense, info = g)
        check_seed(x, dense, sparse_ref, g)
        check_blocks(x, dense, sparse_ref, g)
    }
})

test_that("names subset, and a SingleCellExperiment holds it as an assay", {
    skip_if_not_installed("SingleCellExperiment")
    f <- sparse_seed_files()$h5ad
    x <- H5TurboSparseMatrix(f, "layers/counts")
    ref <- h5t_read_sparse(f, "layers/counts")
    cells <- c("obs9", "obs2", "obs9")
    expect_identical(as.matrix(x[c("var3", "var0"), cells]), as.matrix(ref[c("var3", "var0"), cells]))
    sce <- SingleCellExperiment::SingleCellExperiment(list(counts = x))
    expect_true(is_sparse(SummarizedExperiment::assay(sce, "counts")))
    expect_identical(dimnames(sce), dimnames(ref))
    expect_identical(as(SummarizedExperiment::assay(sce[, 10:1], "counts"), "dgCMatrix"), ref[, 10:1])
})

test_that("only the columns asked for are read", {
    f <- sparse_seed_files()$h5ad
    # cell 2 of bad/index_out holds an index past the genes: a whole read stops, the
    # seed is made (indptr is fine) and reads the other cells
    expect_error(h5t_read_sparse(f, "bad/index_out"), class = "h5turbo_error", regexp = "outside the shape")
    x <- H5TurboSparseMatrix(f, "bad/index_out")
    expect_identical(dim(x), c(4L, 3L))
    expect_identical(as.matrix(x[, c(3, 1)]), cbind(c(0, 3, 0, 0), c(1, 0, 0, 0)))
    expect_identical(extract_array(seed(x), list(NULL, c(1L, 3L, 1L))),
                     cbind(c(1, 0, 0, 0), c(0, 3, 0, 0), c(1, 0, 0, 0)))
    for (read in list(function() as.matrix(x), function() colSums(x), function() extract_array(seed(x), list(1L, 2L)),
                      function() as(x, "dgCMatrix"))) {
        err <- expect_error(read(), class = "h5turbo_error_format", regexp = "outside the shape")
        expect_match(conditionMessage(err), basename(f), fixed = TRUE)
        expect_match(conditionMessage(err), "bad/index_out", fixed = TRUE)
    }
    err <- expect_error(as.matrix(H5TurboSparseMatrix(f, "bad/index_neg")), class = "h5turbo_error_format",
                        regexp = "outside the shape")
})

test_that("bad groups give typed errors naming file and group", {
    f <- sparse_seed_files()$h5ad
    named <- function(expr, class, regexp, group) {
        err <- expect_error(expr, class = class, regexp = regexp)
        expect_match(conditionMessage(err), basename(f), fixed = TRUE)
        if (!is.null(group)) expect_match(conditionMessage(err), group, fixed = TRUE)
    }
    named(H5TurboSparseMatrix(f, "bad/indptr_down"), "h5turbo_error_format", "indptr is not a valid offset list", "bad/indptr_down")
    named(H5TurboSparseMatrix(f, "bad/indptr_end"), "h5turbo_error_format", "indptr is not a valid offset list", "bad/indptr_end")
    named(H5TurboSparseMatrix(f, "bad/indptr_len"), "h5turbo_error_format", "indptr has 3 entries", "bad/indptr_len")
    named(H5TurboSparseMatrix(f, "bad/lengths"), "h5turbo_error_format", "differ in length", "bad/lengths")
    named(H5TurboSparseMatrix(f, "bad/strings"), "h5turbo_error_unsupported", "numbers or booleans", "bad/strings")
    named(H5TurboSparseMatrix(f, "bad/encoding"), "h5turbo_error_unsupported", "unknown sparse encoding", "bad/encoding")
    named(H5TurboSparseMatrix(f, "obs"), "h5turbo_error_unsupported", "not a sparse matrix group", "obs")
    named(H5TurboSparseMatrix(f, "dense"), "h5turbo_error", "not a group", "dense")
    named(H5TurboSparseMatrix(f, "nope"), "h5turbo_error_not_found", "", "nope")
    expect_error(H5TurboSparseMatrix(tempfile()), class = "h5turbo_error_io")
    expect_error(H5TurboSparseMatrix(f, 1), class = "h5turbo_error")
    # the same checks as h5t_read_sparse
    for (g in c("bad/indptr_down", "bad/indptr_end", "bad/indptr_len", "bad/lengths", "bad/index_out"))
        expect_error(h5t_read_sparse(f, g), class = "h5turbo_error_format")
})

test_that("path<- moves the seed to a copy of the file, and refuses another matrix", {
    f <- sparse_seed_files()$h5ad
    x <- H5TurboSparseMatrix(f, "X")
    moved <- tempfile(fileext = ".h5ad")
    file.copy(f, moved)
    s <- seed(x)
    path(s) <- moved
    expect_identical(path(s), normalizePath(moved))
    expect_identical(as(H5TurboSparseMatrix(s), "dgCMatrix"), as(x, "dgCMatrix"))
    other <- H5TurboSparseMatrix(f, "layers/counts32")
    s2 <- seed(other)
    tenx <- sparse_seed_files()$tenx
    expect_error(path(s2) <- tenx, class = "h5turbo_error")
    # a saved object reads back
    saved <- tempfile(fileext = ".rds")
    saveRDS(x, saved)
    expect_identical(as(readRDS(saved), "dgCMatrix"), h5t_read_sparse(f, "X"))
})
