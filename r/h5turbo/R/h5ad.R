# AnnData (.h5ad) as a SingleCellExperiment, as zellkonverter::readH5AD gives one:
# assays X and the layers (features x cells), colData from obs, rowData from var,
# reducedDims from obsm, colPairs/rowPairs from obsp/varp, metadata from uns. Read
# with h5t_read / h5t_read_sparse, every dataset on all cores. Layouts: anndata 0.7
# and later (dataframe groups; categoricals as groups of categories and codes, or
# 0.7's codes with obs/__categories), and anndata 0.5-0.6 (obs and var as compound
# datasets, categories in uns/<column>_categories). Not read: varm and raw (the
# documentation says so).

h5t_read_h5ad <- function(file, layers = TRUE, reducedDims = TRUE, uns = TRUE, pairs = TRUE, threads = NULL) {
    file <- .check_file(file)
    threads <- .threads(threads)
    layers <- .h5ad_wanted(layers, "layers")
    reducedDims <- .h5ad_wanted(reducedDims, "reducedDims")
    uns <- .h5ad_wanted(uns, "uns")
    pairs <- .h5ad_wanted(pairs, "pairs")
    top <- .members(file, "/")
    if (!all(c("obs", "var") %in% names(top)))
        .raise("not an AnnData file: it has no obs and var", code = 2L, file = file)
    obs <- .h5ad_frame(file, "obs", top, threads)
    var <- .h5ad_frame(file, "var", top, threads)
    shape <- c(nrow(obs), nrow(var))
    assays <- list()
    if ("X" %in% names(top)) assays$X <- .h5ad_matrix(file, "X", top[["X"]], shape, threads)
    members <- .group_members(file, top, "layers")
    for (name in .h5ad_pick(names(members), layers, "layers", file))
        assays[[name]] <- .h5ad_matrix(file, paste0("layers/", name), members[[name]], shape, threads)
    assays <- lapply(assays, function(m) { dimnames(m) <- list(rownames(var), rownames(obs)); m })
    dims <- .h5ad_embeddings(file, .otype(top, "obsm"), nrow(obs), threads, reducedDims)
    meta <- if (!isFALSE(uns))
        .h5ad_uns(file, "uns", skip = .h5ad_uns_moved(top, obs, var), threads,
                  wanted = uns, members = .group_members(file, top, "uns")) else list()
    col_pairs <- .h5ad_pairs(file, "obsp", .otype(top, "obsp"), nrow(obs), threads, pairs)
    row_pairs <- .h5ad_pairs(file, "varp", .otype(top, "varp"), nrow(var), threads, pairs)
    if (isTRUE(pairs)) col_pairs <- .h5ad_legacy_graphs(file, col_pairs, nrow(obs), threads)
    if (is.character(pairs)) {
        missing <- setdiff(pairs, c(names(col_pairs), names(row_pairs)))
        if (length(missing))
            .raise(sprintf("pairs %s not in obsp or varp", paste0("'", missing, "'", collapse = ", ")), code = 3L, file = file)
    }
    .h5ad_result(assays, obs, var, dims, meta, col_pairs, row_pairs)
}

# layers, reducedDims, uns, pairs: TRUE (all), FALSE (none) or the names of the
# entries to read (as zellkonverter's readH5AD takes them).
.h5ad_wanted <- function(value, what) {
    if (is.logical(value) && length(value) == 1L && !is.na(value)) return(value)
    if (is.character(value) && !anyNA(value)) return(value)
    .raise(paste(what, "must be TRUE, FALSE or the names of the entries to read"), call = sys.call(-1L))
}

# The names of `available` to read, in the file's order; a name asked for that the
# file does not have stops, naming it.
.h5ad_pick <- function(available, wanted, what, file) {
    if (isTRUE(wanted)) return(available)
    if (isFALSE(wanted)) return(character())
    missing <- setdiff(wanted, available)
    if (length(missing))
        .raise(sprintf("%s %s not in the file", what, paste0("'", missing, "'", collapse = ", ")), code = 3L, file = file)
    available[available %in% wanted]
}

# The members of group `name` of the root (whose members are `top`); none when it is
# not a group.
.group_members <- function(file, top, name) {
    if (identical(.otype(top, name), "H5I_GROUP")) .members(file, name) else character()
}

# Files written before obsp existed keep the neighbour graphs in uns/neighbors as bare
# CSR arrays (data, indices, indptr; no shape): anndata moves them to obsp, and so does
# this (into colPairs), unless obsp has them.
.h5ad_legacy_graphs <- function(file, col_pairs, n, threads) {
    csr <- list(compressed = "row", shape = c(n, n), transpose = FALSE)
    for (name in c("connectivities", "distances")) {
        path <- paste0("uns/neighbors/", name)
        if (!is.null(col_pairs[[name]]) || !.exists(file, path)) next
        col_pairs[[name]] <- .oriented(.sparse_matrix(file, path, csr, threads), csr, stored = TRUE)
    }
    col_pairs
}

# obsp / varp: square matrices over the cells / features (a sparse group, or a dense
# dataset), as anndata holds them; a dgCMatrix stays sparse.
.h5ad_pairs <- function(file, group, otype, n, threads, wanted = TRUE) {
    if (isFALSE(wanted) || !identical(otype, "H5I_GROUP")) return(list())
    members <- .members(file, group)
    out <- list()
    for (name in names(members)) {
        if (is.character(wanted) && !name %in% wanted) next
        path <- paste0(group, "/", name)
        m <- if (identical(members[[name]], "H5I_GROUP")) .read_sparse_group(file, path, threads, stored = TRUE)
             else t(.h5ad_array_values(.h5ad_read(file, path, threads)))
        if (!identical(as.numeric(dim(m)), as.numeric(c(n, n))))
            .raise(sprintf("a pairwise matrix must be %d x %d", n, n), code = 2L, file = file, name = path)
        out[[name]] <- m
    }
    out
}

# uns as a named list, as anndata gives it in Python: groups as lists, arrays with
# numpy's dimension order, strings as character, encoded elements (dataframes, sparse
# matrices, categoricals, nullable arrays) as their R counterparts. `skip`: paths of
# entries anndata takes out of uns when it reads them (see .h5ad_uns_moved).
.h5ad_uns <- function(file, group, skip = character(), threads, wanted = TRUE, members = .members(file, group)) {
    out <- list()
    for (name in .h5ad_pick(names(members), wanted, group, file)) {
        path <- paste0(group, "/", name)
        if (path %in% skip) next
        value <- if (identical(members[[name]], "H5I_GROUP")) .h5ad_uns_group(file, path, threads)
                 else .h5ad_uns_dataset(file, path, threads)
        if (!is.null(value)) out[[name]] <- value
    }
    out
}

.h5ad_uns_group <- function(file, path, threads) {
    kind <- as.character(h5t_readAttributes(file, path)[["encoding-type"]] %||% "dict")
    switch(kind,
        dict = .h5ad_uns(file, path, skip = .h5ad_uns_moved(), threads = threads),
        dataframe = .h5ad_frame(file, path, c(stats::setNames("H5I_GROUP", path)), threads),
        csr_matrix = , csc_matrix = .read_sparse_group(file, path, threads, stored = TRUE),
        categorical = , `nullable-integer` = , `nullable-boolean` = , `nullable-string-array` =
            .h5ad_encoded_column(file, path, threads),
        {
            warning(sprintf("h5turbo: '%s', '%s': encoding '%s' is not read; left out", file, path, kind),
                    call. = FALSE)
            NULL
        })
}

# A dataset of uns: a scalar as a length-1 vector, an array with numpy's dimension
# order (h5t_read gives them reversed), a compound as a data.frame.
.h5ad_uns_dataset <- function(file, path, threads) {
    x <- .h5ad_read(file, path, threads)
    if (is.data.frame(x)) return(x)
    d <- dim(x)
    if (length(d) >= 2L) return(aperm(.h5ad_array_values(x)))
    .h5ad_vector(x)
}

# bool and uint8 arrays as logical and integer (as .h5ad_vector), keeping dim.
.h5ad_array_values <- function(x) {
    x <- .h5ad_complex(x)
    d <- dim(x)
    x <- .h5ad_vector(x)
    dim(x) <- d
    x
}

# numpy's complex numbers (h5py stores them as compounds of r and i, which h5t_read
# gives as a list, or a data frame for one axis) as R's complex values, in their shape
.h5ad_complex <- function(x) {
    if (!is.list(x) || !identical(sort(names(x)), c("i", "r"))) return(x)
    values <- complex(real = as.vector(x$r), imaginary = as.vector(x$i))
    if (!is.null(dim(x$r))) dim(values) <- dim(x$r)
    values
}

# What anndata takes out of uns when it reads a file: the neighbour graphs older
# versions kept in uns/neighbors (it moves them to obsp; .h5ad_legacy_graphs moves them
# to colPairs), and,
# in the 0.5-0.6 layout, the uns/<column>_categories of obs/var categoricals (it moves
# them into the columns; so does .h5ad_compound_frame).
.h5ad_uns_moved <- function(top = NULL, obs = NULL, var = NULL) {
    moved <- c("uns/neighbors/connectivities", "uns/neighbors/distances")
    for (frame in list(list("obs", obs), list("var", var)))
        if (identical(.otype(top, frame[[1L]]), "H5I_DATASET"))
            moved <- c(moved, paste0("uns/", names(frame[[2L]])[vapply(frame[[2L]], is.factor, NA)], "_categories"))
    moved
}

# obsm: a group of (cells, k) datasets, or (anndata 0.5-0.6) one compound dataset whose
# members are the embeddings, each a k-array per cell. Sparse and dataframe entries of
# the group are left out, with a warning naming them.
.h5ad_embeddings <- function(file, otype, n_obs, threads, wanted = TRUE) {
    dims <- list()
    if (isFALSE(wanted)) return(dims)
    if (identical(otype, "H5I_GROUP")) {
        members <- .members(file, "obsm")
        members <- members[.h5ad_pick(names(members), wanted, "reducedDims", file)]
        for (name in names(members)[members == "H5I_DATASET"])
            dims[[name]] <- .h5ad_embedding(file, paste0("obsm/", name), n_obs, threads)
        dims <- dims[!vapply(dims, is.null, TRUE)]
        left <- names(members)[members != "H5I_DATASET"]
        if (length(left))
            warning(sprintf("h5turbo: '%s': obsm %s %s not dense arrays (sparse matrices or data frames), left out of reducedDims",
                            file, paste0("'", left, "'", collapse = ", "), if (length(left) == 1L) "is" else "are"),
                    call. = FALSE)
    } else if (identical(otype, "H5I_DATASET")) {
        frame <- .h5ad_read(file, "obsm", threads)
        for (name in .h5ad_pick(names(frame), wanted, "reducedDims", file)) {
            m <- .h5ad_array_values(frame[[name]])
            dims[[name]] <- if (is.null(dim(m))) matrix(m, ncol = 1L) else unclass(m)
        }
    } else {
        .h5ad_pick(character(), wanted, "reducedDims", file)  # names asked of a file without obsm
    }
    dims
}

# A SingleCellExperiment when the package is there, else the same parts as a list.
.h5ad_result <- function(assays, obs, var, dims, meta, col_pairs, row_pairs) {
    if (!requireNamespace("SingleCellExperiment", quietly = TRUE))
        return(list(assays = assays, colData = obs, rowData = var, reducedDims = dims, metadata = meta,
                    colPairs = col_pairs, rowPairs = row_pairs))
    SingleCellExperiment::SingleCellExperiment(
        assays = assays, colData = S4Vectors::DataFrame(obs, check.names = FALSE),
        rowData = S4Vectors::DataFrame(var, check.names = FALSE), reducedDims = dims, metadata = meta,
        colPairs = col_pairs, rowPairs = row_pairs)
}

# X or a layer, features x cells: a dgCMatrix for a sparse group, a dense matrix for a
# dataset (whose HDF5 shape (cells, features) h5t_read reverses into R's orientation),
# its values as obs columns take them (bool as logical, uint8 as integer, integers
# past 2^31 - 1 as double). Unnamed here: the caller names them from obs and var, read
# once.
.h5ad_matrix <- function(file, name, otype, shape, threads) {
    m <- if (identical(otype, "H5I_GROUP")) .read_sparse_group(file, name, threads)
         else .h5ad_array_values(.h5ad_read(file, name, threads))
    if (!identical(as.numeric(dim(m)), rev(as.numeric(shape))))
        .raise(sprintf("shape %s does not match obs x var (%s)", paste(rev(dim(m)), collapse = " x "),
                       paste(shape, collapse = " x ")), code = 2L, file = file, name = name)
    m
}

# An obsm entry: HDF5 (cells, k) arrives as R k x cells; reducedDims want cells x k.
# Values converted as those of X.
.h5ad_embedding <- function(file, name, n_obs, threads) {
    m <- .h5ad_array_values(.h5ad_read(file, name, threads))
    if (is.null(dim(m))) m <- matrix(m, nrow = 1L)
    if (length(dim(m)) > 2L && dim(m)[length(dim(m))] == n_obs) {
        # (cells, a, b ...): valid in anndata, no reducedDim (a cells x k matrix) holds it
        warning(sprintf("h5turbo: '%s': %s has %d dimensions, left out of reducedDims", file, name, length(dim(m))),
                call. = FALSE)
        return(NULL)
    }
    if (length(dim(m)) != 2L || ncol(m) != n_obs)
        .raise(sprintf("an embedding must be %d cells x k", n_obs), code = 2L, file = file, name = name)
    t(m)
}

# obs or var as a data.frame whose row names are the index.
.h5ad_frame <- function(file, name, top, threads) {
    if (identical(.otype(top, name), "H5I_DATASET")) return(.h5ad_compound_frame(file, name))
    attrs <- h5t_readAttributes(file, name)
    members <- .members(file, name)
    index <- as.character(attrs[["_index"]] %||% "_index")
    if (!index %in% names(members))
        .raise(sprintf("the index '%s' is missing", index), code = 2L, file = file, name = name)
    order <- as.character(attrs[["column-order"]])
    columns <- lapply(stats::setNames(order, order), function(col)
        .h5ad_column(file, paste0(name, "/", col), .column_otype(file, name, members, col), name, col, threads))
    frame <- as.data.frame(columns, optional = TRUE, stringsAsFactors = FALSE)
    rows <- .h5ad_index(file, name, threads, attrs, members)
    if (length(columns) == 0L) frame <- data.frame(row.names = seq_along(rows))
    if (nrow(frame) != length(rows))
        .raise("columns and index differ in length", code = 2L, file = file, name = name)
    .set_rownames(frame, rows)
}

# The index of an obs/var group as text: a dataset, or an encoded group as anndata
# writes a pandas StringDtype index (pandas 3's default: a nullable-string-array) or a
# CategoricalIndex (read as plain h5t_read, such a group gave its parts as row names).
.h5ad_index <- function(file, frame, threads, attrs = h5t_readAttributes(file, frame),
                        members = .members(file, frame)) {
    index <- as.character(attrs[["_index"]] %||% "_index")
    as.character(.h5ad_column(file, paste0(frame, "/", index), .otype(members, index), frame, index, threads))
}

# A column's object type; anndata writes a column named "a/b" as dataset b of a
# group a (and lists "a/b" in column-order).
.column_otype <- function(file, frame, members, col) {
    if (!grepl("/", col, fixed = TRUE)) return(.otype(members, col))
    inner <- tryCatch(.members(file, paste0(frame, "/", dirname(col))), h5turbo_error = function(e) character())
    .otype(inner, basename(col))
}

# anndata allows repeated obs / var names (it warns), a data.frame's row names do not:
# repeated ones are set as the row.names attribute directly, which DataFrame and the
# SingleCellExperiment (colnames, rownames) keep, as anndata keeps them.
.set_rownames <- function(frame, rows) {
    if (anyDuplicated(rows)) attr(frame, "row.names") <- rows else rownames(frame) <- rows
    frame
}

# One column of a dataframe group, by its encoding.
.h5ad_column <- function(file, path, otype, frame, col, threads) {
    if (identical(otype, "H5I_GROUP")) return(.h5ad_encoded_column(file, path, threads))
    if (!identical(otype, "H5I_DATASET"))
        .raise(sprintf("column '%s' is missing", col), code = 2L, file = file, name = frame)
    values <- .h5ad_vector(.h5ad_read(file, path, threads))
    categories <- paste0(frame, "/__categories/", col)   # anndata 0.7: codes, categories apart
    if (.exists(file, categories)) {
        # 0.7 marks the categories dataset as ordered (the codes' own attribute,
        # categories, is a reference: read as NA, with a warning, and not needed)
        ordered <- .flag(h5t_readAttributes(file, categories)[["ordered"]]) ||
            .flag(suppressWarnings(h5t_readAttributes(file, path))[["ordered"]])
        return(.h5ad_factor(values, .h5ad_read(file, categories, NULL), ordered, file, path))
    }
    values
}

# anndata 0.8+: categorical, nullable-integer, nullable-boolean, nullable-string-array.
.h5ad_encoded_column <- function(file, path, threads) {
    attrs <- h5t_readAttributes(file, path)
    kind <- as.character(attrs[["encoding-type"]] %||% "")
    part <- function(what) .h5ad_read(file, paste0(path, "/", what), threads)
    if (kind == "categorical")
        return(.h5ad_factor(part("codes"), part("categories"), .flag(attrs[["ordered"]]), file, path))
    if (kind %in% c("nullable-integer", "nullable-boolean", "nullable-string-array")) {
        values <- .h5ad_vector(part("values"))
        values[.h5ad_vector(part("mask"))] <- NA
        return(values)
    }
    .raise(sprintf("column encoding '%s' is not read", kind), code = 3L, file = file, name = path)
}

# h5t_read's values, but 64-bit and unsigned 32-bit integers that do not fit R's
# integers (NA, with a warning, in h5t_read) as doubles, as zellkonverter gives them:
# the dataset is read again with bit64conversion = "double". Those that fit stay
# integers.
.h5ad_read <- function(file, path, threads) {
    overflow <- FALSE
    x <- withCallingHandlers(h5t_read(file, path, threads = threads), warning = function(w) {
        if (grepl("NAs produced by integer overflow", conditionMessage(w), fixed = TRUE)) {
            overflow <<- TRUE
            invokeRestart("muffleWarning")
        }
    })
    if (overflow) x <- h5t_read(file, path, threads = threads, bit64conversion = "double")
    x
}

# numpy bool (an h5py enum FALSE/TRUE) as logical, uint8 (raw, as rhdf5 gives it) as
# integer, as pandas columns arrive in R; 1-d values without dim.
.h5ad_vector <- function(x) {
    if (is.factor(x) && identical(levels(x), c("FALSE", "TRUE"))) x <- as.logical(as.character(x))
    if (is.raw(x)) x <- as.integer(x)
    as.vector(x)
}

# codes 0..n-1 (-1: missing) into the categories, as pandas' Categorical; repeated
# categories or codes past them are not a categorical (pandas refuses them, and so
# does read_h5ad): an error naming the column.
.h5ad_factor <- function(codes, categories, ordered, file, path) {
    categories <- .h5ad_vector(categories)   # uint8 categories (raw) as numbers: factor() made hex of raw
    codes <- as.integer(codes)
    invalid <- function(why) .raise(sprintf("not a valid categorical: %s", why), code = 1L, file = file, name = path)
    if (anyDuplicated(categories)) invalid(sprintf("category '%s' is repeated", categories[anyDuplicated(categories)]))
    bad <- !is.na(codes) & (codes < -1L | codes >= length(categories))
    if (any(bad)) invalid(sprintf("code %d is not between -1 and %d", codes[bad][1L], length(categories) - 1L))
    codes[codes < 0L] <- NA_integer_
    factor(categories[codes + 1L], levels = categories, ordered = ordered)
}

# anndata 0.5-0.6: obs/var a compound dataset; a categorical column holds codes, its
# categories in uns/<column>_categories.
.h5ad_compound_frame <- function(file, name) {
    frame <- .h5ad_read(file, name, NULL)
    index <- if ("index" %in% names(frame)) "index" else names(frame)[1L]
    rows <- as.character(frame[[index]])
    frame[[index]] <- NULL
    for (col in names(frame)) {
        categories <- paste0("uns/", col, "_categories")
        if (.exists(file, categories)) frame[[col]] <- .h5ad_factor(frame[[col]], .h5ad_read(file, categories, NULL), FALSE, file, categories)
        else frame[[col]] <- .h5ad_vector(frame[[col]])
    }
    .set_rownames(frame, rows)
}

# a boolean attribute (numpy bool: an enum FALSE/TRUE) as TRUE or FALSE
.flag <- function(x) isTRUE(as.logical(as.character(x)))

.otype <- function(members, name) if (name %in% names(members)) members[[name]] else ""

.exists <- function(file, path) {
    parent <- dirname(path)
    if (parent == ".") parent <- "/"
    tryCatch(basename(path) %in% names(.members(file, parent)), h5turbo_error_not_found = function(e) FALSE)
}

`%||%` <- function(a, b) if (is.null(a)) b else a
