# Out-of-memory strategies in R: a 5000 x 100 double matrix written, read whole, and
# rows 4001:5000 read, by rhdf5, h5turbo (reads; the file is rhdf5's), ff, bigmemory,
# data.table (fwrite/fread) and RSQLite. bench::mark, median of 5 after a warm-up;
# every read checked against the matrix. Two HDF5 layouts: contiguous (rhdf5's
# default) and chunked 500 x 100 rows x columns (R orientation), gzip 6.
#
#   Rscript benchmarks/r/strategies.R
suppressPackageStartupMessages({
    library(h5turbo)
    library(rhdf5)
    library(bench)
})
set.seed(1)
m <- matrix(rnorm(5000 * 100), 5000, 100)
rows <- 4001:5000
dir <- tempfile("strategies")
dir.create(dir)
has <- function(pkg) requireNamespace(pkg, quietly = TRUE)

write_h5 <- function(f, chunked) {
    unlink(f)
    h5createFile(f)
    if (chunked) h5createDataset(f, "m", dim(m), chunk = c(500, 100), level = 6)
    h5write(m, f, "m")
}
# One HDF5 layout: rhdf5 writes and reads the file f, h5turbo reads the same file.
hdf5_strategies <- function(f, chunked, layout) {
    force(f)
    force(chunked)
    out <- list(
        list(write = function() write_h5(f, chunked),
             read = function() h5read(f, "m"),
             rows = function() h5read(f, "m", index = list(rows, NULL))),
        list(write = NULL,
             read = function() h5t_read(f, "m"),
             rows = function() h5t_read(f, "m", index = list(rows, NULL))))
    names(out) <- c(sprintf("rhdf5 (%s)", layout), sprintf("h5turbo (%s; file by rhdf5)", layout))
    out
}
strategies <- c(hdf5_strategies(file.path(dir, "plain.h5"), FALSE, "contiguous"),
                hdf5_strategies(file.path(dir, "gzip.h5"), TRUE, "chunked, gzip 6"))
if (has("ff")) {
    ff_file <- file.path(dir, "m.ff")
    strategies[["ff"]] <- list(
        write = function() { unlink(ff_file); x <- ff::ff(m, dim = dim(m), vmode = "double", filename = ff_file,
                                                          finalizer = "close"); close(x) },
        read = function() { x <- ff::ff(filename = ff_file, vmode = "double", dim = dim(m), readonly = TRUE,
                                        finalizer = "close"); on.exit(close(x)); x[, ] },
        rows = function() { x <- ff::ff(filename = ff_file, vmode = "double", dim = dim(m), readonly = TRUE,
                                        finalizer = "close"); on.exit(close(x)); x[rows, ] })
}
if (has("bigmemory")) {
    strategies[["bigmemory (file-backed)"]] <- list(
        write = function() { unlink(file.path(dir, c("m.bin", "m.desc")))
            bigmemory::as.big.matrix(m, backingfile = "m.bin", descriptorfile = "m.desc", backingpath = dir); NULL },
        read = function() bigmemory::attach.big.matrix(file.path(dir, "m.desc"))[, ],
        rows = function() bigmemory::attach.big.matrix(file.path(dir, "m.desc"))[rows, ])
}
if (has("data.table")) {
    csv <- file.path(dir, "m.csv")
    strategies[["data.table (fwrite/fread)"]] <- list(
        write = function() data.table::fwrite(data.table::as.data.table(m), csv),
        read = function() as.matrix(data.table::fread(csv)),
        rows = function() as.matrix(data.table::fread(csv, skip = 4001, nrows = 1000, header = FALSE)))
}
if (has("RSQLite")) {
    db <- file.path(dir, "m.sqlite")
    strategies[["RSQLite"]] <- list(
        write = function() { unlink(db); con <- DBI::dbConnect(RSQLite::SQLite(), db)
            on.exit(DBI::dbDisconnect(con)); DBI::dbWriteTable(con, "m", as.data.frame(m)) },
        read = function() { con <- DBI::dbConnect(RSQLite::SQLite(), db); on.exit(DBI::dbDisconnect(con))
            as.matrix(DBI::dbReadTable(con, "m")) },
        rows = function() { con <- DBI::dbConnect(RSQLite::SQLite(), db); on.exit(DBI::dbDisconnect(con))
            as.matrix(DBI::dbGetQuery(con, "SELECT * FROM m WHERE rowid BETWEEN 4001 AND 5000")) })
}
missing <- setdiff(c("ff", "bigmemory", "data.table", "RSQLite"), Filter(has, c("ff", "bigmemory", "data.table", "RSQLite")))

same <- function(a, b) isTRUE(all.equal(unname(a), unname(b), tolerance = 1e-12))
load1 <- function() as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1])
median_ms <- function(f) {
    if (is.null(f)) return(NA_real_)
    r <- bench::mark(f(), iterations = 5, check = FALSE, memory = FALSE, filter_gc = FALSE)
    as.numeric(r$median) * 1000
}
# writers first (the readers need their files), then a checked warm-up of every read
for (s in names(strategies)) if (!is.null(strategies[[s]]$write)) strategies[[s]]$write()
for (s in names(strategies)) {
    stopifnot(same(strategies[[s]]$read(), m), same(strategies[[s]]$rows(), m[rows, ]))
}
loads <- numeric(0)
res <- data.frame(strategy = names(strategies), write = NA, read = NA, rows = NA)
for (i in seq_along(strategies)) {
    s <- strategies[[i]]
    loads <- c(loads, load1())
    res$write[i] <- median_ms(s$write)
    res$read[i] <- median_ms(s$read)
    res$rows[i] <- median_ms(s$rows)
    loads <- c(loads, load1())
}
fmt <- function(x) ifelse(is.na(x), "n/a", sprintf("%.2f", x))
cat("\n| strategy | write (ms) | full read (ms) | rows 4001:5000 (ms) |\n|---|---:|---:|---:|\n")
for (i in seq_len(nrow(res)))
    cat(sprintf("| %s | %s | %s | %s |\n", res$strategy[i], fmt(res$write[i]), fmt(res$read[i]), fmt(res$rows[i])))
for (p in missing) cat(sprintf("| %s | n/a | n/a | n/a |\n", p))
cat(sprintf("\nmedian of 5 (bench::mark), warm page cache; load average (1 min) min %.2f, max %.2f\n",
            min(loads), max(loads)))
cat(sprintf("%s; %d cores; R %s; h5turbo C library %s\n", Sys.time(), parallel::detectCores(),
            getRversion(), h5t_version()))
unlink(dir, recursive = TRUE)
