# rhdf5's view of the corpus files, computed in child R processes: rhdf5 (libhdf5 under
# it) crashes the R session on some real files (reference attributes, some pyfive
# files), which must not take the test run down. A worker goes through its share of the
# files and saves each object's result as it goes; when it dies, the object it was on
# is marked "crashed" and a new worker goes on from the next one.
#
# Each worker loads rhdf5 once for all its files (a process per file spent ~50 s of
# CI's run starting R and rhdf5), and the shares are read by parallel workers.

rhdf5_worker <- '
args <- commandArgs(trailingOnly = TRUE)
jobs <- readRDS(args[1])
suppressMessages(library(rhdf5))
clean <- function(expr) {
    warned <- FALSE
    value <- tryCatch(withCallingHandlers(suppressMessages(expr),
                                          warning = function(w) { warned <<- TRUE; invokeRestart("muffleWarning") }),
                      error = function(e) NULL)
    if (warned) NULL else value
}
# The listing, once: a worker that died listing the file left the marker, and the file
# then has no listing.
listing_of <- function(f, out) {
    ls_file <- file.path(out, "ls.rds")
    if (!file.exists(ls_file)) {
        marker <- file.path(out, "listing")
        died_listing <- file.exists(marker)
        file.create(marker)
        saveRDS(if (died_listing) NULL else tryCatch(suppressWarnings(h5ls(f)), error = function(e) NULL), ls_file)
    }
    readRDS(ls_file)
}
read_objects <- function(f, out) {
    listing <- listing_of(f, out)
    if (is.null(listing)) return(invisible())
    keep <- listing$otype %in% c("H5I_GROUP", "H5I_DATASET")
    objects <- c("/", sub("^//", "/", paste0(listing$group, "/", listing$name))[keep])
    is_dataset <- c(FALSE, listing$otype[keep] == "H5I_DATASET")
    refs <- c(FALSE, listing$dclass[keep] == "REFERENCE")
    # after the object a dead worker was on (started, never done)
    seen <- list.files(out, pattern = "^[0-9]+\\\\.rds$")
    start <- if (length(seen)) max(as.integer(sub("\\\\.rds$", "", seen))) + 1L else 1L
    for (k in seq_along(objects)) {
        if (k < start) next
        saveRDS(list(state = "started"), file.path(out, sprintf("%06d.rds", k)))
        value <- if (is_dataset[k] && !refs[k]) clean(h5read(f, objects[k])) else NULL
        attrs <- if (k <= 60) clean(h5readAttributes(f, objects[k])) else NULL
        saveRDS(list(state = "done", name = objects[k], dataset = is_dataset[k], value = value, attrs = attrs),
                file.path(out, sprintf("%06d.rds", k)))
    }
}
for (i in seq_len(nrow(jobs))) {
    finished <- file.path(jobs$out[i], "finished")
    if (file.exists(finished)) next
    read_objects(jobs$file[i], jobs$out[i])
    file.create(finished)
}
'

# Workers run one after the other over a share until every file of it is finished, or a
# worker made no progress (it died before its first marker: nothing left to skip).
run_rhdf5_share <- function(script, jobs_file, outs) {
    rscript <- file.path(R.home("bin"), "Rscript")
    markers <- function() length(list.files(outs, all.files = TRUE, no.. = TRUE))
    repeat {
        before <- markers()
        system2(rscript, c(shQuote(script), shQuote(jobs_file)), stdout = FALSE, stderr = FALSE)
        if (all(file.exists(file.path(outs, "finished"))) || markers() == before) break
    }
    invisible(NULL)
}

# rhdf5's results for `files`, computed now; returns a function giving one file's
# (list(ls, objects), read from disk when asked: the corpus's values are not all held).
rhdf5_references <- function(files, workers = NULL) {
    root <- tempfile("rhdf5ref")
    dir.create(root)
    outs <- file.path(root, sprintf("file%04d", seq_along(files)))
    for (o in outs) dir.create(o)
    script <- file.path(root, "worker.R")
    writeLines(rhdf5_worker, script)
    if (is.null(workers)) workers <- max(1L, min(4L, parallel::detectCores(), na.rm = TRUE))
    workers <- min(workers, length(files))
    shares <- split(seq_along(files), (seq_along(files) - 1L) %% workers)
    jobs_files <- vapply(seq_along(shares), function(s) {
        path <- file.path(root, sprintf("jobs%d.rds", s))
        saveRDS(data.frame(file = files[shares[[s]]], out = outs[shares[[s]]], stringsAsFactors = FALSE), path)
        path
    }, "")
    run <- function(s) run_rhdf5_share(script, jobs_files[[s]], outs[shares[[s]]])
    if (workers > 1L && .Platform$OS.type == "unix") {
        parallel::mclapply(seq_along(shares), run, mc.cores = workers, mc.preschedule = FALSE)
    } else {
        lapply(seq_along(shares), run)
    }
    reference <- function(f) {
        out <- outs[match(f, files)]
        ls_file <- file.path(out, "ls.rds")
        ls <- if (file.exists(ls_file)) readRDS(ls_file) else NULL
        objects <- lapply(sort(list.files(out, pattern = "^[0-9]+\\.rds$", full.names = TRUE)), readRDS)
        list(ls = ls, objects = Filter(function(o) identical(o$state, "done"), objects))
    }
    attr(reference, "root") <- root
    reference
}
