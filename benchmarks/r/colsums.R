# The column-sum experiment of issue 15, in R, on the reference matrix
# (30000 x 20000 int32, random 1..100, chunks 100 x 100, gzip 3; HDF5 shape, so a
# 20000 x 30000 matrix in R): column sums by
#   colSums2(HDF5Array)          DelayedMatrixStats over rhdf5, one core
#   lapply  over 1000-column blocks, rhdf5::h5read(index = ) + colSums
#   mclapply(mc.cores = 2), the same blocks in forked processes
#   h5t_colSums                  h5turbo's native reduction
#   colSums2(H5TurboArray)       DelayedMatrixStats over h5turbo (block processing)
#   colSums(H5TurboArray)        untransformed: the native reduction
# Interleaved rounds after a warm-up round (warm page cache); median per variant.
#
#   python benchmarks/r/make_colsum_matrix.py            # once
#   Rscript benchmarks/r/colsums.R [file] [rounds]
suppressPackageStartupMessages({
    library(h5turbo)
    library(HDF5Array)
    library(DelayedMatrixStats)
    library(parallel)
})
args <- commandArgs(trailingOnly = TRUE)
file <- if (length(args) >= 1) args[1] else path.expand("~/.cache/h5turbo/colsum_100x100.h5")
rounds <- if (length(args) >= 2) as.integer(args[2]) else 3L
name <- "counts"
stopifnot(file.exists(file))

listing <- h5t_ls(file)
n_cols <- as.numeric(strsplit(listing$dim[listing$name == name], " x ")[[1]])[2]   # R's dims: rows x cols
blocks <- split(seq_len(n_cols), ceiling(seq_len(n_cols) / 1000))
block_sums <- function(cols) colSums(rhdf5::h5read(file, name, index = list(NULL, cols)))

variants <- list(
    "colSums2(HDF5Array)" = function() colSums2(HDF5Array(file, name)),
    "lapply, 1000-column blocks (rhdf5)" = function() unlist(lapply(blocks, block_sums), use.names = FALSE),
    "mclapply(mc.cores = 2), 1000-column blocks (rhdf5)" =
        function() unlist(mclapply(blocks, block_sums, mc.cores = 2), use.names = FALSE),
    "h5t_colSums" = function() h5t_colSums(file, name),
    "colSums2(H5TurboArray)" = function() colSums2(H5TurboArray(file, name)),
    "colSums(H5TurboArray) (native)" = function() colSums(H5TurboArray(file, name))
)

load1 <- function() as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1])
times <- matrix(NA_real_, rounds, length(variants), dimnames = list(NULL, names(variants)))
loads <- numeric(0)
reference <- NULL
for (round in 0:rounds) {               # round 0: warm-up (page cache, thread pools), checked
    for (v in names(variants)) {
        loads <- c(loads, load1())
        gc(verbose = FALSE)
        t <- system.time(result <- variants[[v]]())[["elapsed"]]
        if (is.null(reference)) reference <- as.numeric(result)
        if (!isTRUE(all.equal(as.numeric(result), reference, tolerance = 0)))
            stop("variant '", v, "' gives different column sums")
        if (round > 0) times[round, v] <- t
        cat(sprintf("round %d  %-52s %7.2f s  (load %.2f)\n", round, v, t, loads[length(loads)]))
    }
}
med <- apply(times, 2, median)
mc <- med[["mclapply(mc.cores = 2), 1000-column blocks (rhdf5)"]]
hd <- med[["colSums2(HDF5Array)"]]
cat("\n| R, column sums | seconds (median of", rounds, ") | vs mclapply | vs colSums2(HDF5Array) |\n|---|---:|---:|---:|\n")
for (v in names(med)) cat(sprintf("| `%s` | %.2f | %.2fx | %.2fx |\n", v, med[[v]], mc / med[[v]], hd / med[[v]]))
cat(sprintf("\nload average (1 min) during the runs: min %.2f, median %.2f, max %.2f\n",
            min(loads), median(loads), max(loads)))
cat(sprintf("file: %s (%.0f MB); %s; %d cores; R %s; h5turbo C library %s; %s\n", file,
            file.size(file) / 1e6, Sys.time(), parallel::detectCores(), getRversion(), h5t_version(),
            system("uname -srm", intern = TRUE)))
