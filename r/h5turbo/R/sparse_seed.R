# A lazy sparse DelayedArray backend, as HDF5Array's TENxMatrix / H5SparseMatrix: a
# 10x matrix group (CSC, features x barcodes) or an AnnData csr_matrix / csc_matrix
# group (X, layers/...), in h5t_read_sparse's orientation (features x cells). A block
# reads only the compressed rows or columns it needs: the slices of indptr, then the
# slices of indices and data they point to, each as one multi-block h5turbo read.
#
# "compressed" is the R axis that indptr runs along in the oriented matrix: "col" for
# 10x and AnnData csr (whose bytes are CSC of genes x cells), "row" for AnnData csc
# (CSC of cells x genes, i.e. CSR of genes x cells). chunkdim follows it (as
# HDF5Array's CSC_/CSR_H5SparseMatrixSeed), so block processing walks whole columns
# (rows) and never reads a value twice.

setClass("H5TurboSparseMatrixSeed", contains = "Array",
         representation(filepath = "character", group = "character", dim = "integer",
                        dimnames = "h5turbo_list_OR_NULL", type = "character",
                        compressed = "character", nnz = "numeric"))

H5TurboSparseMatrixSeed <- function(filepath, group = NULL) {
    filepath <- normalizePath(.check_file(filepath))
    if (is.null(group)) group <- .default_sparse_group(filepath)
    group <- .check_name(group)   # checked first: an error inside sub's S4 dispatch would lose its class
    group <- sub("/$", "", group)
    layout <- .sparse_layout(filepath, group, .members(filepath, group), h5t_readAttributes(filepath, group))
    geo <- .sparse_geometry(filepath, group, layout)
    # oriented as h5t_read_sparse: 10x (features, barcodes) as stored; AnnData (cells,
    # genes) reversed. The oriented matrix is CSC when the stored one is 10x or csr.
    dims <- as.integer(if (layout$source == "10x") layout$shape else rev(layout$shape))
    compressed <- if (layout$transpose) "row" else "col"
    dn <- tryCatch(.sparse_dimnames(filepath, group, layout, dims), error = function(e) NULL)
    new("H5TurboSparseMatrixSeed", filepath = filepath, group = group, dim = dims, dimnames = dn,
        type = geo$type, compressed = compressed, nnz = geo$nnz)
}

# Checks what a lazy reader relies on, reading indptr whole (one number per compressed
# row/column) but neither indices nor data: the lengths and types of the three
# datasets and that indptr is a valid offset list. Gives the values' R type (that of
# HDF5Array: 64-bit and unsigned 32-bit integers as double) and the number of values.
.sparse_geometry <- function(file, group, layout) {
    bad <- function(what) .raise(paste("inconsistent sparse matrix:", what), code = 1L,
                                 file = file, name = group, call = sys.call(-2L))
    part <- function(what) paste0(group, "/", what)
    info <- lapply(c(data = "data", indices = "indices", indptr = "indptr"),
                   function(w) .h5call(C_info, file, part(w)))
    for (w in names(info)) if (info[[w]]$rank != 1L) bad(sprintf("%s is not a one-dimensional dataset", w))
    for (w in c("indices", "indptr")) if (info[[w]]$dclass != "INTEGER") bad(sprintf("%s does not hold integers", w))
    d <- info$data
    type <- switch(d$rtype, integer = .seed_type(d), double = "double", raw = "integer", factor = "logical",
                   logical = "logical",
                   .raise(sprintf("the data of a sparse matrix must be numbers or booleans, not values of HDF5 class %s",
                                  d$dclass), code = 2L, file = file, name = group, call = sys.call(-1L)))
    nnz <- d$dims[1L]
    if (info$indices$dims[1L] != nnz) bad("data and indices differ in length")
    n_major <- if (layout$compressed == "col") layout$shape[2L] else layout$shape[1L]
    n_minor <- if (layout$compressed == "col") layout$shape[1L] else layout$shape[2L]
    if (any(is.na(layout$shape)) || any(layout$shape < 0) || any(layout$shape != floor(layout$shape)))
        bad("the shape must be two whole numbers")
    if (nnz > .Machine$integer.max || n_minor > .Machine$integer.max || n_major > .Machine$integer.max)
        bad("more than 2^31 - 1 values or rows/columns, beyond a dgCMatrix")
    if (info$indptr$dims[1L] != n_major + 1)
        bad(sprintf("indptr has %.0f entries for %.0f compressed rows/columns", info$indptr$dims[1L], n_major))
    p <- h5t_read(file, part("indptr"), bit64conversion = "double")
    dim(p) <- NULL
    if (anyNA(p) || p[1L] != 0 || is.unsorted(p) || p[length(p)] != nnz) bad("indptr is not a valid offset list")
    list(type = type, nnz = nnz)
}

# One read of the 1-d dataset `name`: the runs (0-based starts, counts) one after the other.
.read_runs <- function(file, name, starts, counts, flags = 2L) {
    keep <- counts > 0
    sel <- if (any(keep)) Map(function(s, n) c(s, n, 1), starts[keep], counts[keep]) else list(c(0, 0, 1))
    x <- .finish(.h5call(C_read, file, name, sel, 0L, flags), TRUE, name)
    dim(x) <- NULL
    x
}

# The compressed rows/columns `major` (sorted, unique, 1-based) as the CSC matrix
# (n_minor x length(major)) of the stored bytes: indptr, indices and data read in
# runs of adjacent rows/columns, each slice checked as h5t_read_sparse checks the whole.
.sparse_slice <- function(x, major) {
    n_minor <- if (x@compressed == "col") x@dim[1L] else x@dim[2L]
    file <- x@filepath
    group <- x@group
    part <- function(what) paste0(group, "/", what)
    bad <- function(what) .raise(paste("inconsistent sparse matrix:", what), code = 1L,
                                 file = file, name = group, call = sys.call(-2L))
    if (length(major) == 0L)
        return(new("dgCMatrix", Dim = c(as.integer(n_minor), 0L), p = 0L))
    breaks <- which(diff(major) != 1)
    starts <- major[c(1L, breaks + 1L)]
    ends <- major[c(breaks, length(major))]
    lens <- ends - starts + 1
    p <- .read_runs(file, part("indptr"), starts - 1, lens + 1)
    if (anyNA(p)) bad("indptr is not a valid offset list")
    run <- rep.int(seq_along(starts), lens + 1)
    first <- !duplicated(run)
    last <- !duplicated(run, fromLast = TRUE)
    widths <- diff(p)[!last[-length(last)]]   # within runs only
    if (any(widths < 0) || any(p < 0) || any(p > x@nnz)) bad("indptr is not a valid offset list")
    from <- p[first]
    counts <- p[last] - from
    i <- .read_runs(file, part("indices"), from, counts)
    v <- .sparse_values(.read_runs(file, part("data"), from, counts), file, group)
    if (length(i) != length(v)) bad("data and indices differ in length")
    if (length(i) && (anyNA(i) || min(i) < 0 || max(i) >= n_minor)) bad("an index lies outside the shape")
    .csc(v, i, c(0, cumsum(widths)), n_minor, length(major))
}

# The selection `index` (DelayedArray's: NULL or positions per dimension, any order,
# repeats) as an oriented dgCMatrix without names.
.extract_sparse_dgc <- function(x, index) {
    major_dim <- if (x@compressed == "col") 2L else 1L
    want <- index[[major_dim]]
    all_major <- seq_len(x@dim[major_dim])
    u <- if (is.null(want)) all_major else sort(unique(as.integer(want)))
    m <- .sparse_slice(x, u)
    cols <- if (is.null(want) || identical(as.integer(want), u)) NULL else match(want, u)
    rows <- index[[3L - major_dim]]
    if (!is.null(cols)) m <- m[, cols, drop = FALSE]
    if (!is.null(rows)) m <- m[rows, , drop = FALSE]
    if (major_dim == 1L) m <- Matrix::t(m)
    m
}

setMethod("dim", "H5TurboSparseMatrixSeed", function(x) x@dim)
setMethod("dimnames", "H5TurboSparseMatrixSeed", function(x) x@dimnames)
setMethod("type", "H5TurboSparseMatrixSeed", function(x) x@type)
setMethod("is_sparse", "H5TurboSparseMatrixSeed", function(x) TRUE)
# Whole compressed columns (rows), no larger than the matrix: a matrix without cells
# (genes) has empty chunks, else DelayedArray refuses the chunk grid and every block
# operation (colSums, anyNA, blockApply) fails on it (HDF5Array 1.26's seeds do).
setMethod("chunkdim", "H5TurboSparseMatrixSeed", function(x) {
    chunk <- if (x@compressed == "col") c(x@dim[1L], 1L) else c(1L, x@dim[2L])
    pmin(chunk, x@dim)
})
setMethod("path", "H5TurboSparseMatrixSeed", function(object, ...) object@filepath)
# After the file moved: the group at the new path must be a sparse matrix of the same
# dimensions, orientation and type.
setReplaceMethod("path", "H5TurboSparseMatrixSeed", function(object, ..., value) {
    moved <- H5TurboSparseMatrixSeed(value, object@group)
    if (!identical(moved@dim, object@dim) || moved@type != object@type || moved@compressed != object@compressed)
        .raise(sprintf("the group there is a %s sparse matrix of type %s; the seed expects %s of type %s",
                       paste(moved@dim, collapse = " x "), moved@type,
                       paste(object@dim, collapse = " x "), object@type),
               code = 5L, file = moved@filepath, name = object@group)
    object@filepath <- moved@filepath
    object@nnz <- moved@nnz
    object
})

setMethod("extract_array", "H5TurboSparseMatrixSeed", function(x, index) {
    m <- .extract_sparse_dgc(x, index)   # read first, as in .oriented
    a <- as.matrix(m)
    dimnames(a) <- NULL
    storage.mode(a) <- x@type
    a
})

setMethod("extract_sparse_array", "H5TurboSparseMatrixSeed", function(x, index) {
    m <- .extract_sparse_dgc(x, index)
    if (x@type == "logical") m <- as(m, "lMatrix")
    sas <- extract_sparse_array(m, list(NULL, NULL))
    if (x@type == "integer") {
        # DelayedArray's SparseArraySeed (0.24) or SparseArray's COO_SparseArray (later)
        if (methods::.hasSlot(sas, "nzdata")) sas@nzdata <- as.integer(sas@nzdata) else type(sas) <- "integer"
    }
    sas
})

setClass("H5TurboSparseMatrix", contains = "DelayedMatrix", representation(seed = "H5TurboSparseMatrixSeed"))
setMethod("DelayedArray", "H5TurboSparseMatrixSeed",
          function(seed) new_DelayedArray(seed, Class = "H5TurboSparseMatrix"))

H5TurboSparseMatrix <- function(filepath, group = NULL) {
    seed <- if (is(filepath, "H5TurboSparseMatrixSeed")) filepath else H5TurboSparseMatrixSeed(filepath, group)
    DelayedArray(seed)
}

# The whole untransformed matrix as a dgCMatrix in one parallel read of each dataset
# (HDF5Array has the same shortcut): what h5t_read_sparse gives, names included. A
# transformed or subset one takes DelayedArray's block route.
setAs("H5TurboSparseMatrix", "dgCMatrix", function(from) {
    m <- .extract_sparse_dgc(from@seed, list(NULL, NULL))
    if (!is.null(from@seed@dimnames)) dimnames(m) <- from@seed@dimnames
    m
})
