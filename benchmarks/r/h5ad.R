# An AnnData file into R: h5t_read_h5ad (a SingleCellExperiment) beside rhdf5 reading
# only X's three arrays (data, indices, indptr; no matrix, no obs or var), warm page
# cache, interleaved rounds after a warm-up round; median per variant. anndata's own
# Python read_h5ad of the same file is timed by the caller (see docs/r.md).
#
#   python benchmarks/r/make_h5ad.py                  # once
#   Rscript benchmarks/r/h5ad.R [file] [rounds]
suppressPackageStartupMessages({
    library(h5turbo)
    library(SingleCellExperiment)
    library(rhdf5)
})
args <- commandArgs(trailingOnly = TRUE)
file <- if (length(args) >= 1) args[1] else path.expand("~/.cache/h5turbo/bench_50000x20000.h5ad")
rounds <- if (length(args) >= 2) as.integer(args[2]) else 5L
stopifnot(file.exists(file))

variants <- list(
    "h5t_read_h5ad (SingleCellExperiment)" = function() h5t_read_h5ad(file),
    "rhdf5::h5read of X/data, X/indices, X/indptr" = function()
        lapply(c("X/data", "X/indices", "X/indptr"), function(n) h5read(file, n)))
for (v in variants) invisible(v())   # warm-up round
times <- lapply(variants, function(v) numeric())
for (r in seq_len(rounds))
    for (name in names(variants)) times[[name]] <- c(times[[name]], system.time(variants[[name]]())[["elapsed"]])
cat(sprintf("%s, %s, %d cores, load %s\n", format(Sys.time(), tz = "UTC", usetz = TRUE), file,
            parallel::detectCores(), paste(readLines("/proc/loadavg"), collapse = "")))
for (name in names(times))
    cat(sprintf("%-48s median %.2f s  runs %s\n", name, stats::median(times[[name]]),
                paste(sprintf("%.2f", times[[name]]), collapse = " ")))
