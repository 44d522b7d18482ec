# rhdf5's view of a corpus file, computed in child R processes: rhdf5 (libhdf5 under
# it) crashes the R session on some real files (reference attributes, some pyfive
# files), which must not take the test run down. A worker saves each object's result
# as it goes; when it dies, the object it was on is marked "crashed" and a new worker
# goes on from the next one.

rhdf5_worker <- '
args <- commandArgs(trailingOnly = TRUE)
f <- args[1]; start <- as.integer(args[2]); out <- args[3]
suppressMessages(library(rhdf5))
clean <- function(expr) {
    warned <- FALSE
    value <- tryCatch(withCallingHandlers(suppressMessages(expr),
                                          warning = function(w) { warned <<- TRUE; invokeRestart("muffleWarning") }),
                      error = function(e) NULL)
    if (warned) NULL else value
}
ls_file <- file.path(out, "ls.rds")
if (!file.exists(ls_file)) saveRDS(tryCatch(suppressWarnings(h5ls(f)), error = function(e) NULL), ls_file)
listing <- readRDS(ls_file)
if (is.null(listing)) quit(save = "no")
keep <- listing$otype %in% c("H5I_GROUP", "H5I_DATASET")
objects <- c("/", sub("^//", "/", paste0(listing$group, "/", listing$name))[keep])
is_dataset <- c(FALSE, listing$otype[keep] == "H5I_DATASET")
refs <- c(FALSE, listing$dclass[keep] == "REFERENCE")
for (k in seq_along(objects)) {
    if (k < start) next
    saveRDS(list(state = "started"), file.path(out, sprintf("%06d.rds", k)))
    value <- if (is_dataset[k] && !refs[k]) clean(h5read(f, objects[k])) else NULL
    attrs <- if (k <= 60) clean(h5readAttributes(f, objects[k])) else NULL
    saveRDS(list(state = "done", name = objects[k], dataset = is_dataset[k], value = value, attrs = attrs),
            file.path(out, sprintf("%06d.rds", k)))
}
saveRDS(length(objects), file.path(out, "count.rds"))
'

rhdf5_reference <- function(f) {
    out <- tempfile("rhdf5ref")
    dir.create(out)
    script <- file.path(out, "worker.R")
    writeLines(rhdf5_worker, script)
    rscript <- file.path(R.home("bin"), "Rscript")
    start <- 1L
    repeat {
        system2(rscript, c(shQuote(script), shQuote(f), start, shQuote(out)), stdout = FALSE, stderr = FALSE)
        if (file.exists(file.path(out, "count.rds")) || !file.exists(file.path(out, "ls.rds")) ||
            is.null(readRDS(file.path(out, "ls.rds")))) break
        done <- list.files(out, pattern = "^[0-9]+\\.rds$")
        if (length(done) == 0L) break
        last <- max(as.integer(sub("\\.rds$", "", done)))
        start <- last + 1L         # the object being read when the worker died is skipped
    }
    ls <- if (file.exists(file.path(out, "ls.rds"))) readRDS(file.path(out, "ls.rds")) else NULL
    objects <- lapply(sort(list.files(out, pattern = "^[0-9]+\\.rds$", full.names = TRUE)), readRDS)
    objects <- Filter(function(o) identical(o$state, "done"), objects)
    unlink(out, recursive = TRUE)
    list(ls = ls, objects = objects)
}
