# Lazy sparse matrices: H5TurboSparseMatrix against HDF5Array's TENxMatrix (10x) and
# H5SparseMatrix (AnnData csr X and a csc layer) on the same counts, 30,000 genes x
# 5,000 cells at 5 % density (benchmarks/r/make_sparse.py ~/.cache/h5turbo 5000).
# For each group:
#   as(x, "dgCMatrix")                 the whole matrix
#   colSums(x), rowSums(x)             DelayedArray block processing, default block size
#   as(x[, j], "dgCMatrix")            250 random cells (unsorted), realised
#   blockApply, small blocks           sparse blocks of 3e6 elements made of whole chunks
#                                      (100 cells of a CSC group, 600 genes of the csc
#                                      layer), each block's column sums: many small reads
# The matrices are made once, before the rounds (making one reads indptr, both
# packages). HDF5Array 1.26's constructors fail on a group ("h5checktype(). Argument
# not of class H5IdComponent") once rhdf5's error handling is "suppress", where a
# first seed leaves it: it is set back to "normal" before each. Every result of
# h5turbo is checked identical to HDF5Array's (names aside where HDF5Array reads none:
# AnnData obs/var) in the warm-up round; then interleaved rounds (every variant once
# per round, warm page cache), median per variant.
#
#   python benchmarks/r/make_sparse.py ~/.cache/h5turbo 5000   # once
#   Rscript benchmarks/r/sparse.R [10x file] [h5ad file] [rounds]
suppressPackageStartupMessages({
    library(h5turbo)
    library(HDF5Array)
    library(DelayedArray)
})
args <- commandArgs(trailingOnly = TRUE)
cache <- path.expand("~/.cache/h5turbo")
tenx <- if (length(args) >= 1) args[1] else file.path(cache, "sparse_10x_30000x5000.h5")
h5ad <- if (length(args) >= 2) args[2] else file.path(cache, "sparse_30000x5000.h5ad")
rounds <- if (length(args) >= 3) as.integer(args[3]) else 5L
stopifnot(file.exists(tenx), file.exists(h5ad), rounds >= 1)

hdf5array <- function(make) { rhdf5::h5errorHandling("normal"); make }   # lazy: after the reset

groups <- list(
    "10x v3 matrix (CSC, int32)" = list(
        h5turbo = function() H5TurboSparseMatrix(tenx, "matrix"),
        hdf5array = function() hdf5array(TENxMatrix(tenx, "matrix"))),
    "AnnData X (csr, float32)" = list(
        h5turbo = function() H5TurboSparseMatrix(h5ad, "X"),
        hdf5array = function() hdf5array(H5SparseMatrix(h5ad, "X"))),
    "AnnData layers/csc (csc, float32)" = list(
        h5turbo = function() H5TurboSparseMatrix(h5ad, "layers/csc"),
        hdf5array = function() hdf5array(H5SparseMatrix(h5ad, "layers/csc"))))

groups <- lapply(groups, function(g) lapply(g, function(make) make()))
n_cells <- ncol(groups[[1]]$h5turbo)
set.seed(15)
cells <- sample(n_cells, 250)
block_col_sums <- function(x)
    unlist(blockApply(x, function(b) Matrix::colSums(as(b, "dgCMatrix")),
                      grid = defaultAutoGrid(x, block.length = 3e6), as.sparse = TRUE), use.names = FALSE)
ops <- list(
    "as(x, \"dgCMatrix\")" = function(x) as(x, "dgCMatrix"),
    "colSums(x)" = function(x) colSums(x),
    "rowSums(x)" = function(x) rowSums(x),
    "as(x[, j], \"dgCMatrix\"), 250 random cells" = function(x) as(x[, cells], "dgCMatrix"),
    "blockApply, blocks of 3e6 elements" = block_col_sums)

# identical values, types and dimensions; names compared only where both give them
same <- function(a, b) {
    if (is.null(names(b)) && is.null(dimnames(b))) { names(a) <- NULL; if (!is.null(dim(a))) dimnames(a) <- NULL }
    if (is(b, "dgCMatrix")) {
        dn <- Map(function(x, y) if (is.null(y)) NULL else x, dimnames(a), dimnames(b))
        a@Dimnames <- if (all(vapply(dn, is.null, TRUE))) list(NULL, NULL) else dn
    }
    identical(a, b)
}

load1 <- function() as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1])
variants <- expand.grid(backend = c("h5turbo", "hdf5array"), op = names(ops), group = names(groups),
                        stringsAsFactors = FALSE)
times <- matrix(NA_real_, rounds, nrow(variants))
loads <- numeric(0)
started <- Sys.time()
for (round in 0:rounds) {               # round 0: warm-up (page cache, thread pools), checked
    for (g in names(groups)) for (o in names(ops)) {
        results <- list()
        for (b in c("h5turbo", "hdf5array")) {
            k <- which(variants$group == g & variants$op == o & variants$backend == b)
            loads <- c(loads, load1())
            gc(verbose = FALSE)
            t <- system.time(results[[b]] <- ops[[o]](groups[[g]][[b]]))[["elapsed"]]
            if (round > 0) times[round, k] <- t
            cat(sprintf("round %d  %-34s %-44s %-9s %7.2f s  (load %.2f)\n", round, g, o, b, t, loads[length(loads)]))
        }
        if (round == 0 && !same(results$h5turbo, results$hdf5array))
            stop("h5turbo and HDF5Array differ: ", g, ", ", o)
        rm(results)
    }
}
med <- apply(times, 2, median)

cat(sprintf("\n| group | operation | h5turbo (s) | HDF5Array (s) | speed-up |\n|---|---|---:|---:|---:|\n"))
for (g in names(groups)) for (o in names(ops)) {
    at <- function(b) med[[which(variants$group == g & variants$op == o & variants$backend == b)]]
    cat(sprintf("| %s | `%s` | %.2f | %.2f | %.1fx |\n", g, o, at("h5turbo"), at("hdf5array"),
                at("hdf5array") / at("h5turbo")))
}
cat(sprintf("\nmedians of %d rounds after a checked warm-up round; %s to %s\n", rounds,
            format(started, "%Y-%m-%d %H:%M", tz = "UTC"), format(Sys.time(), "%H:%M UTC", tz = "UTC")))
cat(sprintf("load average (1 min) during the runs: min %.2f, median %.2f, max %.2f\n",
            min(loads), median(loads), max(loads)))
cat(sprintf("files: %s (%.0f MB), %s (%.0f MB); %d x %d, %.0f values\n", tenx, file.size(tenx) / 1e6,
            h5ad, file.size(h5ad) / 1e6, nrow(groups[[1]]$h5turbo), n_cells, seed(groups[[1]]$h5turbo)@nnz))
cat(sprintf("%d cores (%s); R %s; h5turbo C library %s; HDF5Array %s; DelayedArray %s; %s\n",
            parallel::detectCores(),
            sub("^Model name:\\s*", "", grep("^Model name", system("lscpu", intern = TRUE), value = TRUE)[1]),
            getRversion(), h5t_version(), packageVersion("HDF5Array"), packageVersion("DelayedArray"),
            system("uname -srm", intern = TRUE)))
