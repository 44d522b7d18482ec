# Reductions straight from the file, chunk-parallel, in R's orientation. The HDF5
# matrix of shape (d0, d1) is the R matrix of dim (d1, d0): R's columns are HDF5's
# rows. So colSums (one value per R column) reduces HDF5 axis 1, giving d0 values;
# rowSums (one value per R row) reduces HDF5 axis 0, giving d1 values.

.OP <- c(sum = 0L, mean = 1L, var = 2L)

.reduce <- function(file, name, margin, op, threads) {
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
    if (info$rtype == "logical") {
        # rhdf5's logicals: NA is stored as a number; base R on the values is exact
        x <- h5t_read(file, name, threads = threads)
        fun <- switch(paste(margin, op),
                      "col sum" = colSums, "row sum" = rowSums, "col mean" = colMeans,
                      "row mean" = rowMeans,
                      "col var" = function(m) apply(m, 2L, stats::var),
                      "row var" = function(m) apply(m, 1L, stats::var))
        return(fun(x))
    }
    axis <- if (margin == "col") 1L else 0L
    n_out <- info$dims[2L - axis]
    .h5call(C_reduce, file, name, .OP[[op]], axis, if (op == "var") 1L else 0L, threads, n_out)
}

h5t_colSums <- function(file, name, threads = NULL) .reduce(file, name, "col", "sum", threads)
h5t_rowSums <- function(file, name, threads = NULL) .reduce(file, name, "row", "sum", threads)
h5t_colMeans <- function(file, name, threads = NULL) .reduce(file, name, "col", "mean", threads)
h5t_rowMeans <- function(file, name, threads = NULL) .reduce(file, name, "row", "mean", threads)
h5t_colVars <- function(file, name, threads = NULL) .reduce(file, name, "col", "var", threads)
h5t_rowVars <- function(file, name, threads = NULL) .reduce(file, name, "row", "var", threads)
