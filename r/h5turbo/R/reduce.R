# Reductions straight from the file, chunk-parallel, in R's orientation. The HDF5
# matrix of shape (d0, d1) is the R matrix of dim (d1, d0): R's columns are HDF5's
# rows. So colSums (one value per R column) reduces HDF5 axis 1, giving d0 values;
# rowSums (one value per R row) reduces HDF5 axis 0, giving d1 values.

.OP <- c(sum = 0L, mean = 1L, var = 2L, min = 3L, max = 4L)

# R's integer NA, as rhdf5 and HDF5Array store it in 32-bit signed integers.
.INTEGER_NA <- -2^31

.reduce <- function(file, name, margin, op, threads) {
    .reduce_na(file, name, margin, op, threads, na.rm = FALSE)
}

# The function whose result a reduction gives: base R's colSums & co. (which add in
# long double) for h5t_col* and colSums & co. on an H5TurboMatrix; with ref
# "matrixStats", MatrixGenerics' colSums2 & co. on a matrix (matrixStats, which adds
# in double), what DelayedMatrixStats gives on an HDF5Array.
.ref_fun <- function(margin, op, ref = "base") {
    if (op == "var") {
        along <- if (margin == "col") 2L else 1L
        return(function(m) apply(m, along, stats::var))
    }
    key <- paste(margin, op)
    if (ref == "matrixStats")
        return(switch(key, "col sum" = MatrixGenerics::colSums2, "row sum" = MatrixGenerics::rowSums2,
                      "col mean" = MatrixGenerics::colMeans2, "row mean" = MatrixGenerics::rowMeans2))
    switch(key, "col sum" = colSums, "row sum" = rowSums, "col mean" = colMeans, "row mean" = rowMeans)
}

# The reduction as base R gives it on h5t_read's values: a cell with an integer NA is
# NA; a variance is NA where there are fewer than two values or the values hold a NaN
# or an NA, NaN where the values hold infinities (Inf and -Inf) but neither. With na.rm,
# NULL when the values hold integer NAs (the caller then takes DelayedArray's route).
# ref: whose sums and means (.ref_fun) the cells the native reduction cannot give
# alike are recomputed with.
.reduce_na <- function(file, name, margin, op, threads, na.rm, ref = "base") {
    file <- .check_file(file)
    name <- .check_name(name)
    threads <- .threads(threads)
    info <- .h5call(C_info, file, name)
    if (info$rank != 2L)
        .raise(sprintf("h5t_col*/h5t_row* need a 2-dimensional dataset, this one has %d dimensions",
                       max(info$rank, 0L)), file = file, name = name)
    if (!info$dclass %in% c("INTEGER", "FLOAT"))
        .raise(sprintf("h5t_col*/h5t_row* need numbers, the dataset holds %s", info$dclass),
               file = file, name = name)
    # rhdf5's logicals: NA is stored as a number; base R on the values is exact.
    # Floats of 16 bytes (long double), which the native reduction does not take: base
    # R on the values h5t_read gives (doubles, as rhdf5)
    if (info$rtype == "logical" || (info$dclass == "FLOAT" && !info$size %in% c(2, 4, 8)))
        return(.ref_fun(margin, op, ref)(h5t_read(file, name, threads = threads)))
    axis <- if (margin == "col") 1L else 0L
    n_out <- info$dims[2L - axis]
    # 32-bit signed integers may hold R's NA: a pass of minima finds the cells that do
    # (a second read of the data, measured 0.08 -> 0.16 s on a 6000 x 5000 gzip int32
    # matrix; the sums alone cannot tell), before the reduction, which na.rm with NAs
    # leaves to DelayedArray
    has_na <- NULL   # none; nothing sized by the file's shape is made before the native side checks it
    if (info$dclass == "INTEGER" && info$size == 4 && info$signed && n_out > 0 && info$dims[axis + 1L] > 0) {
        has_na <- .h5call(C_reduce, file, name, .OP[["min"]], axis, 0L, threads, n_out) == .INTEGER_NA
        if (isTRUE(na.rm) && any(has_na)) return(NULL)
    }
    # integer means as base R's colMeans and rowMeans: the exact sum divided in long
    # double (the native mean divides in double, as numpy and matrixStats do)
    ld_mean <- op == "mean" && ref == "base" && info$dclass == "INTEGER"
    native_op <- if (ld_mean) "sum" else op
    out <- .h5call(C_reduce, file, name, .OP[[native_op]], axis, if (op == "var") 1L else 0L, threads, n_out)
    if (ld_mean) out <- .Call(C_mean_ld, out, info$dims[axis + 1L])
    if (!is.null(has_na)) out[has_na] <- NA_real_
    if (op == "var") out <- .var_nan(out, file, name, info, margin, threads)
    else if (info$dclass == "FLOAT") out <- .recompute(out, which(!is.finite(out)), file, name, info, margin, op, threads, ref)
    out
}

# Float sums and means that come back NA, NaN, Inf or -Inf, rare, are recomputed with
# the reference function from their values: which of an NA and a NaN a cell holding
# both gives depends on the order of the additions (the native reduction merges chunk
# partials), and base R adds in long double, whose range a sum such as 1e308 + 1e308 -
# 1e308 stays within where a double overflows to Inf. .recompute gives the cells
# `todo` so, reading their values in batches of about 2^24.
.recompute <- function(out, todo, file, name, info, margin, op, threads, ref) {
    if (length(todo) == 0L) return(out)
    fun <- .ref_fun(margin, op, ref)
    n_along <- if (margin == "col") info$dims[2L] else info$dims[1L]
    per_batch <- max(1, floor(2^24 / max(n_along, 1)))
    for (batch in split(todo, ceiling(seq_along(todo) / per_batch))) {
        index <- if (margin == "col") list(NULL, batch) else list(batch, NULL)
        out[batch] <- fun(h5t_read(file, name, index = index, threads = threads, bit64conversion = "double"))
    }
    out
}

# A variance that comes back NaN is, in base R's var, NA when its values hold a NaN or
# an NA (or are fewer than two) and NaN when it comes from infinities (Inf and -Inf, or
# an Inf alone among the values): the cells that are NaN, rare, are recomputed with
# stats::var from their values, read in batches of about 2^24 values.
.var_nan <- function(out, file, name, info, margin, threads) {
    n_along <- if (margin == "col") info$dims[2L] else info$dims[1L]
    if (n_along < 2) return(rep(NA_real_, length(out)))
    todo <- which(is.nan(out))
    if (length(todo) == 0L || info$dclass != "FLOAT") {
        out[todo] <- NA_real_   # integers: no NaN among the values
        return(out)
    }
    per_batch <- max(1, floor(2^24 / n_along))
    for (batch in split(todo, ceiling(seq_along(todo) / per_batch))) {
        # R's columns are HDF5's rows (R dimension 2 for colVars, 1 for rowVars)
        index <- if (margin == "col") list(NULL, batch) else list(batch, NULL)
        x <- h5t_read(file, name, index = index, threads = threads)
        out[batch] <- if (margin == "col") apply(x, 2L, stats::var) else apply(x, 1L, stats::var)
    }
    out
}

h5t_colSums <- function(file, name, threads = NULL) .reduce(file, name, "col", "sum", threads)
h5t_rowSums <- function(file, name, threads = NULL) .reduce(file, name, "row", "sum", threads)
h5t_colMeans <- function(file, name, threads = NULL) .reduce(file, name, "col", "mean", threads)
h5t_rowMeans <- function(file, name, threads = NULL) .reduce(file, name, "row", "mean", threads)
h5t_colVars <- function(file, name, threads = NULL) .reduce(file, name, "col", "var", threads)
h5t_rowVars <- function(file, name, threads = NULL) .reduce(file, name, "row", "var", threads)
