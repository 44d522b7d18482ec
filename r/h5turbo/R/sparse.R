# Sparse matrices of AnnData (.h5ad: csr_matrix / csc_matrix groups, and the older
# h5sparse_format attributes) and 10x Genomics (.h5: the `matrix` group, or one group
# per genome in the v2 layout) as a Matrix::dgCMatrix, features (genes) x observations
# (cells), the orientation of Bioconductor's SingleCellExperiment.
#   10x: stored as CSC of shape (features, barcodes): read as is.
#   AnnData csr of shape (cells, genes): the same bytes are CSC of (genes, cells).
#   AnnData csc of shape (cells, genes): read as (cells, genes), then transposed.

h5t_read_sparse <- function(file, group = NULL, threads = NULL) {
    file <- .check_file(file)
    threads <- .threads(threads)
    if (is.null(group)) group <- .default_sparse_group(file)
    group <- .check_name(group)
    layout <- .sparse_layout(file, group, .members(file, group), h5t_readAttributes(file, group))
    m <- .oriented(.sparse_matrix(file, group, layout, threads), layout, stored = FALSE)
    dn <- tryCatch(.sparse_dimnames(file, group, layout, dim(m)), error = function(e) NULL)
    if (!is.null(dn)) dimnames(m) <- dn
    m
}

# A sparse matrix group as a dgCMatrix without names: features x cells (as
# h5t_read_sparse gives it), or with `stored = TRUE` in the orientation of the shape the
# file states (scipy's: what anndata holds in uns, obsp and varp).
.read_sparse_group <- function(file, group, threads, stored = FALSE) {
    layout <- .sparse_layout(file, group, .members(file, group), h5t_readAttributes(file, group))
    .oriented(.sparse_matrix(file, group, layout, threads), layout, stored)
}

# The CSC matrix .sparse_matrix gives, turned as asked: a CSC group (10x, AnnData csc) is
# that matrix in its stored shape, a CSR group its transpose.
.oriented <- function(m, layout, stored) {
    force(m)   # read here: an h5turbo error raised inside Matrix::t's dispatch would lose its class
    flip <- if (stored) layout$compressed == "row" else layout$transpose
    if (flip) Matrix::t(m) else m
}

# The group's data, indices and indptr (checked against `layout$shape`, rows x columns
# as stored) as the CSC matrix they are: (n_minor x n_major).
.sparse_matrix <- function(file, group, layout, threads) {
    read_vec <- function(what, ...) {
        v <- h5t_read(file, paste0(sub("/$", "", group), "/", what), threads = threads, ...)
        if (!is.list(v)) dim(v) <- NULL   # in place: as.vector() copied the array (X's data: 1.3 s -> 0.44 s)
        v
    }
    x <- .sparse_values(read_vec("data", bit64conversion = "double"), file, group)
    i <- read_vec("indices", bit64conversion = "double")
    p <- read_vec("indptr", bit64conversion = "double")
    n_major <- if (layout$compressed == "col") layout$shape[2L] else layout$shape[1L]
    n_minor <- if (layout$compressed == "col") layout$shape[1L] else layout$shape[2L]
    .check_sparse(file, group, x, i, p, n_major, n_minor)
    .csc(x, i, p, n_minor, n_major)
}

# The stored values as doubles. numpy bool (an h5py enum FALSE/TRUE) reads as a factor,
# whose codes as.numeric would give (TRUE as 2): its logical values instead.
.sparse_values <- function(x, file, group) {
    if (is.list(x) && identical(sort(names(x)), c("i", "r")))
        .raise("complex sparse matrices are not read: the Matrix package has no complex sparse class",
               code = 2L, file = file, name = group)
    if (is.factor(x)) {
        if (!identical(levels(x), c("FALSE", "TRUE")))
            .raise("the data of a sparse matrix must be numbers or booleans, not an enum",
                   code = 3L, file = file, name = group)
        x <- as.logical(as.character(x))
    }
    as.numeric(x)
}

.members <- function(file, group) {
    listing <- .h5call(C_ls, file, group, 1L)
    stats::setNames(listing$otype, listing$name)
}

.default_sparse_group <- function(file) {
    top <- .members(file, "/")
    for (g in c("X", "matrix")) if (identical(unname(top[g]), "H5I_GROUP")) return(g)
    dense <- intersect(c("X", "matrix"), names(top)[top == "H5I_DATASET"])
    if (length(dense) > 0L)
        .raise(sprintf("'/%s' is a dense dataset, not a sparse matrix group: read it with h5t_read or H5TurboArray",
                       dense[[1L]]), code = 5L, file = file)
    # 10x v2 (Cell Ranger 2): one group per genome, named after it ("GRCh38"); the only
    # one is the matrix, as DropletUtils::read10xCounts takes it
    genomes <- Filter(function(g) all(c("data", "indices", "indptr", "shape", "barcodes") %in%
                                          names(.members(file, g))), names(top)[top == "H5I_GROUP"])
    if (length(genomes) == 1L) return(genomes)
    if (length(genomes) > 1L)
        .raise(sprintf("several 10x genome groups (%s); name one with group =", paste(genomes, collapse = ", ")),
               code = 5L, file = file)
    .raise("no sparse matrix group found (looked for 'X', 'matrix' and a 10x genome group); name one with group =",
           code = 3L, file = file)
}

# shape (rows, cols) as the file states it, which axis is compressed, whether to transpose
.sparse_layout <- function(file, group, members, attrs) {
    need <- c("data", "indices", "indptr")
    if (!all(need %in% names(members)))
        .raise(sprintf("not a sparse matrix group: it lacks %s",
                       paste(setdiff(need, names(members)), collapse = ", ")),
               code = 2L, file = file, name = group)
    enc <- attrs[["encoding-type"]]
    old <- attrs[["h5sparse_format"]]
    if (!is.null(enc) || !is.null(old)) {
        kind <- if (!is.null(enc)) as.character(enc) else paste0(as.character(old), "_matrix")
        shape <- if (!is.null(enc)) attrs[["shape"]] else attrs[["h5sparse_shape"]]
        if (!kind %in% c("csr_matrix", "csc_matrix") || length(shape) != 2L)
            .raise(sprintf("unknown sparse encoding '%s'", kind), code = 2L, file = file, name = group)
        shape <- as.numeric(shape)   # (cells, genes)
        if (kind == "csr_matrix") return(list(compressed = "row", shape = shape, transpose = FALSE,
                                              source = "anndata"))
        return(list(compressed = "col", shape = shape, transpose = TRUE, source = "anndata"))
    }
    if ("shape" %in% names(members)) {
        shape <- as.numeric(h5t_read(file, paste0(group, "/shape"), bit64conversion = "double"))
        if (length(shape) != 2L)
            .raise("the shape dataset must hold 2 numbers", code = 1L, file = file, name = group)
        return(list(compressed = "col", shape = shape, transpose = FALSE, source = "10x"))
    }
    .raise("no sparse encoding (attributes encoding-type/shape or h5sparse_format, or a 10x shape dataset)",
           code = 2L, file = file, name = group)
}

.check_sparse <- function(file, group, x, i, p, n_major, n_minor) {
    bad <- function(what) .raise(paste("inconsistent sparse matrix:", what), code = 1L,
                                 file = file, name = group, call = sys.call(-2L))
    if (length(p) != n_major + 1) bad(sprintf("indptr has %d entries for %.0f compressed rows/columns",
                                              length(p), n_major))
    if (length(x) != length(i)) bad("data and indices differ in length")
    if (p[1L] != 0 || is.unsorted(p) || p[length(p)] != length(x)) bad("indptr is not a valid offset list")
    if (length(i) && (min(i) < 0 || max(i) >= n_minor)) bad("an index lies outside the shape")
    if (length(x) > .Machine$integer.max || n_minor > .Machine$integer.max || n_major > .Machine$integer.max)
        bad("more than 2^31 - 1 values or rows/columns, beyond a dgCMatrix")
}

.csc <- function(x, i, p, nrow, ncol) {
    # scipy allows unsorted or repeated indices within a column, a dgCMatrix does not:
    # such a matrix goes through sparseMatrix, which sorts and sums
    tryCatch(new("dgCMatrix", i = as.integer(i), p = as.integer(p), x = x, Dim = as.integer(c(nrow, ncol))),
             error = function(e) Matrix::sparseMatrix(i = as.integer(i) + 1L, p = as.integer(p), x = x,
                                                      dims = as.integer(c(nrow, ncol)), repr = "C"))
}

# Feature ids and barcodes (10x); var and obs names (AnnData X and layers).
.sparse_dimnames <- function(file, group, layout, dims) {
    g <- sub("/$", "", sub("^/", "", group))
    if (layout$source == "10x") {
        rows <- if ("features" %in% names(.members(file, g))) paste0(g, "/features/id") else paste0(g, "/genes")
        dn <- list(as.vector(h5t_read(file, rows)), as.vector(h5t_read(file, paste0(g, "/barcodes"))))
    } else {
        if (!(g == "X" || startsWith(g, "layers/"))) return(NULL)
        dn <- list(.h5ad_index(file, "var", NULL), .h5ad_index(file, "obs", NULL))
    }
    if (!identical(lengths(dn), as.integer(dims))) return(NULL)
    dn
}
