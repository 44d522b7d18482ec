# A DelayedArray backend: H5TurboArraySeed reads blocks through h5t_read (all cores);
# H5TurboArray / H5TurboMatrix wrap it. Dimensions are R's (the HDF5 shape reversed),
# as for HDF5Array.

setClassUnion("integer_OR_NULL", c("integer", "NULL"))
setClassUnion("h5turbo_list_OR_NULL", c("list", "NULL"))

# dimnames: read once, when the seed is made (DelayedArray asks for them often).
setClass("H5TurboArraySeed", contains = "Array",
         representation(filepath = "character", name = "character", dim = "integer",
                        chunkdim = "integer_OR_NULL", type = "character",
                        dimnames = "h5turbo_list_OR_NULL"))

H5TurboArraySeed <- function(filepath, name) {
    filepath <- normalizePath(.check_file(filepath))
    name <- .check_name(name)
    info <- .h5call(C_info, filepath, name)
    if (info$rank < 1L)
        .raise("a DelayedArray needs a dataset with at least one dimension", file = filepath, name = name)
    if (!info$rtype %in% c("integer", "double", "logical", "character", "raw", "complex"))
        .raise(sprintf("a DelayedArray holds numbers, logicals, strings or raw bytes, not values of HDF5 class %s",
                       info$dclass), file = filepath, name = name)
    dims <- rev(info$dims)
    if (any(dims > .Machine$integer.max))
        .raise("a dimension exceeds R's limit of 2^31 - 1", file = filepath, name = name)
    # chunks no larger than the array (an empty dimension has empty chunks), as HDF5Array
    chunk <- if (is.null(info$chunk)) NULL else as.integer(pmin(rev(info$chunk), dims))
    new("H5TurboArraySeed", filepath = filepath, name = name, dim = as.integer(dims),
        chunkdim = chunk, type = .seed_type(info),
        dimnames = .read_dimnames(filepath, name, as.integer(dims)))
}

# 64-bit and unsigned 32-bit integers as doubles (R's integers would be NA past
# 2^31 - 1; HDF5Array types 64-bit ones so, and caps unsigned 32-bit ones at
# 2^31 - 1): every value kept, as h5t_read(bit64conversion = "double") gives them
.seed_type <- function(info) if (.is_wide_int(info)) "double" else info$rtype

# The seed holds a path: the file may have been replaced since the seed was made. A
# dataset of other dimensions or type would give blocks DelayedArray rejects with an
# obscure message, and native sums of the wrong length; stop with a clear one (as
# HDF5Array stops on other dimensions). `filepath`: where to look (path<-).
.seed_info <- function(x, filepath = x@filepath) {
    info <- .h5call(C_info, .check_file(filepath), x@name)
    dims <- if (info$rank < 1L) integer(0) else rev(info$dims)
    if (!identical(as.numeric(dims), as.numeric(x@dim)) || .seed_type(info) != x@type)
        .raise(sprintf("the dataset is now %s of type %s; the H5TurboArray expects %s of type %s (the file changed since it was made)",
                       paste(dims, collapse = " x "), .seed_type(info),
                       paste(x@dim, collapse = " x "), x@type),
               code = 5L, file = filepath, name = x@name)
    info
}

.is_wide_int <- function(info) {
    info$dclass == "INTEGER" && info$rtype == "integer" &&
        (info$size == 8 || (info$size == 4 && !isTRUE(info$signed)))
}

# The dimnames HDF5Array::writeHDF5Array(with.dimnames = TRUE) stores and
# HDF5Array::h5readDimnames(as.character = TRUE) gives back: R dimension i takes the
# first dimension scale whose NAME is "dimnames" among those attached to HDF5 dimension
# i - 1 (HDF5Array's convention: the HDF5 dimension of the same position, not the
# reversed one dim() uses), its values as character; NULL where none is attached. The
# DIMENSION_LABELS attribute names the list. NULL when there are neither.
.read_dimnames <- function(filepath, name, dims) {
    found <- .h5call(C_dimscales, filepath, name)
    h5dimnames <- mapply(function(paths, names) {
        is_dimnames <- vapply(names, function(n) is.character(n) && length(n) == 1L &&
                                  !is.na(n) && n == "dimnames", TRUE)
        if (any(is_dimnames)) paths[[which(is_dimnames)[1L]]] else NA_character_
    }, found$scales, found$names, USE.NAMES = FALSE)
    labels <- .dimension_labels(found$labels, length(found$scales))
    if (all(is.na(h5dimnames)) && is.null(labels)) return(NULL)
    dimnames <- Map(function(path, n) {
        if (is.na(path)) return(NULL)
        values <- as.character(h5t_read(filepath, path))
        # HDF5Array refuses such a seed; dimnames of the wrong length would make
        # DelayedArray objects that fail later (as.matrix, [) far from the cause
        if (length(values) != n)
            .raise(sprintf("its dimnames scale '%s' holds %d values for a dimension of extent %d",
                           path, length(values), n), code = 1L, file = filepath, name = name)
        values
    }, h5dimnames, dims, USE.NAMES = FALSE)
    names(dimnames) <- labels
    dimnames
}

# DIMENSION_LABELS as H5DSget_label gives them ("" where unset); NULL when none is set.
.dimension_labels <- function(labels, rank) {
    if (!is.character(labels) || length(labels) != rank) return(NULL)
    labels[is.na(labels)] <- ""
    if (!any(nzchar(labels))) NULL else as.vector(labels)
}

setMethod("dim", "H5TurboArraySeed", function(x) x@dim)
setMethod("dimnames", "H5TurboArraySeed", function(x) x@dimnames)
setMethod("chunkdim", "H5TurboArraySeed", function(x) x@chunkdim)
setMethod("path", "H5TurboArraySeed", function(object, ...) object@filepath)
# After the file moved (a saved object read elsewhere), as HDF5Array's path<-: the
# file at the new path must hold the dataset with the same dimensions and type.
setReplaceMethod("path", "H5TurboArraySeed", function(object, ..., value) {
    filepath <- normalizePath(.check_file(value))
    .seed_info(object, filepath)
    object@filepath <- filepath
    object
})
setMethod("type", "H5TurboArraySeed", function(x) x@type)
setMethod("extract_array", "H5TurboArraySeed", function(x, index) {
    info <- .seed_info(x)   # one header read, reused by the indexed read
    full <- all(vapply(index, is.null, TRUE))
    flags <- if (x@type == "double") 2L else 0L
    .read_values(x@filepath, x@name, if (full) NULL else index, 0L, flags, TRUE, info)
})

setClass("H5TurboArray", contains = "DelayedArray", representation(seed = "H5TurboArraySeed"))
setClass("H5TurboMatrix", contains = c("H5TurboArray", "DelayedMatrix"))

setMethod("matrixClass", "H5TurboArray", function(x) "H5TurboMatrix")
setMethod("DelayedArray", "H5TurboArraySeed",
          function(seed) new_DelayedArray(seed, Class = "H5TurboArray"))
setAs("H5TurboArray", "H5TurboMatrix", function(from) new2("H5TurboMatrix", from))
setAs("H5TurboMatrix", "H5TurboArray", function(from) from)

H5TurboArray <- function(filepath, name) {
    seed <- if (is(filepath, "H5TurboArraySeed")) filepath else H5TurboArraySeed(filepath, name)
    DelayedArray(seed)
}

# colSums & co. on an untransformed H5TurboMatrix: the native chunk-parallel reductions
# (a transformed one is a plain DelayedMatrix and takes DelayedArray's block route),
# named by the matrix's colnames / rownames as base R's are.
.native_sum <- function(margin, op, along) {
    function(x, na.rm = FALSE, dims = 1) {
        if (!.use_native(x, na.rm, dims)) return(callNextMethod())
        .seed_info(x@seed)
        result <- .reduce_na(x@seed@filepath, x@seed@name, margin, op, NULL, na.rm)
        if (is.null(result)) return(callNextMethod())   # integer NAs to remove
        names(result) <- dimnames(x)[[along]]
        result
    }
}
setMethod("colSums", "H5TurboMatrix", .native_sum("col", "sum", 2L))
setMethod("rowSums", "H5TurboMatrix", .native_sum("row", "sum", 1L))
setMethod("colMeans", "H5TurboMatrix", .native_sum("col", "mean", 2L))
setMethod("rowMeans", "H5TurboMatrix", .native_sum("row", "mean", 1L))

# MatrixGenerics' colSums2 & co. (what DelayedMatrixStats, scuttle and scran call) on a
# whole untransformed H5TurboMatrix: the same native reductions. A subset (rows/cols),
# a center for the variances or a transformed matrix take DelayedMatrixStats' block route.
.native_stat <- function(margin, op) {
    function(x, rows = NULL, cols = NULL, na.rm = FALSE, ..., useNames = NA) {
        whole <- is.null(rows) && is.null(cols) && length(list(...)) == 0L
        if (whole && .use_native(x, na.rm, 1)) {
            .seed_info(x@seed)
            result <- .reduce_na(x@seed@filepath, x@seed@name, margin, op, NULL, na.rm, ref = "matrixStats")
            if (!is.null(result)) return(result)
        }
        callNextMethod()
    }
}
.native_var <- function(margin) {
    function(x, rows = NULL, cols = NULL, na.rm = FALSE, center = NULL, ..., useNames = NA) {
        whole <- is.null(rows) && is.null(cols) && is.null(center) && length(list(...)) == 0L
        if (whole && .use_native(x, na.rm, 1)) {
            .seed_info(x@seed)
            result <- .reduce_na(x@seed@filepath, x@seed@name, margin, "var", NULL, na.rm)
            if (!is.null(result)) return(result)
        }
        callNextMethod()
    }
}
setMethod("colSums2", "H5TurboMatrix", .native_stat("col", "sum"))
setMethod("rowSums2", "H5TurboMatrix", .native_stat("row", "sum"))
setMethod("colMeans2", "H5TurboMatrix", .native_stat("col", "mean"))
setMethod("rowMeans2", "H5TurboMatrix", .native_stat("row", "mean"))
setMethod("colVars", "H5TurboMatrix", .native_var("col"))
setMethod("rowVars", "H5TurboMatrix", .native_var("row"))

# Native when the values are numbers and nothing asks for NA handling the file's
# numbers could need (NaN in floats with na.rm = TRUE).
.use_native <- function(x, na.rm, dims) {
    dims == 1 && x@seed@type %in% c("integer", "double") && !(isTRUE(na.rm) && x@seed@type == "double")
}
