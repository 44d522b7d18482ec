# Every corpus file: h5t_ls as rhdf5::h5ls, and every dataset rhdf5 reads cleanly
# (no error, no warning) read identically; the others either read or fail with an
# h5turbo_error, never crash.
skip_if_not_installed("rhdf5")

rhdf5_clean <- function(f, name) {
    warned <- FALSE
    value <- tryCatch(withCallingHandlers(suppressMessages(rhdf5::h5read(f, name)),
                                          warning = function(w) { warned <<- TRUE; invokeRestart("muffleWarning") }),
                      error = function(e) NULL)
    if (warned) NULL else value
}

test_that("corpus: listings and datasets match rhdf5", {
    skip_without_corpus()
    files <- corpus_files()
    expect_gt(length(files), 50)
    compared <- 0
    for (f in files) {
        ref_ls <- tryCatch(suppressWarnings(rhdf5::h5ls(f)), error = function(e) NULL)
        ours_ls <- tryCatch(h5t_ls(f), h5turbo_error = function(e) e)
        if (is.null(ref_ls)) next
        if (inherits(ours_ls, "h5turbo_error")) {
            expect_match(conditionMessage(ours_ls), basename(f), fixed = TRUE)
            next
        }
        cols <- c("group", "name", "otype", "dclass", "dim")
        ok <- ref_ls$otype %in% c("H5I_GROUP", "H5I_DATASET")
        expect_identical(ours_ls[ours_ls$otype %in% c("H5I_GROUP", "H5I_DATASET"), cols],
                         ref_ls[ok, cols], info = f, ignore_attr = TRUE)
        for (k in which(ref_ls$otype == "H5I_DATASET")) {
            name <- sub("^//", "/", paste0(ref_ls$group[k], "/", ref_ls$name[k]))
            ref <- rhdf5_clean(f, name)
            ours <- tryCatch(suppressWarnings(h5t_read(f, name)), h5turbo_error = function(e) e)
            if (is.null(ref)) {
                if (inherits(ours, "h5turbo_error")) expect_match(conditionMessage(ours), basename(f), fixed = TRUE)
                next
            }
            expect_identical(ours, ref, info = paste(f, name))
            compared <- compared + 1
        }
    }
    expect_gt(compared, 200)
})

test_that("corpus: attributes match rhdf5 where rhdf5 reads them cleanly", {
    skip_without_corpus()
    compared <- 0
    for (f in corpus_files()) {
        ref_ls <- tryCatch(suppressWarnings(rhdf5::h5ls(f)), error = function(e) NULL)
        if (is.null(ref_ls)) next
        objects <- c("/", sub("^//", "/", paste0(ref_ls$group, "/", ref_ls$name))[ref_ls$otype %in% c("H5I_GROUP", "H5I_DATASET")])
        for (name in head(objects, 40)) {
            # rhdf5 crashes the R session on some reference attributes: ask it only
            # about objects whose attributes hold no references
            ours_warnings <- character(0)
            ours <- tryCatch(withCallingHandlers(h5t_readAttributes(f, name), warning = function(w) {
                ours_warnings <<- c(ours_warnings, conditionMessage(w)); invokeRestart("muffleWarning")
            }), h5turbo_error = function(e) e)
            if (any(grepl("reference", ours_warnings))) next
            warned <- FALSE
            ref <- tryCatch(withCallingHandlers(rhdf5::h5readAttributes(f, name),
                                                warning = function(w) { warned <<- TRUE; invokeRestart("muffleWarning") }),
                            error = function(e) NULL)
            if (is.null(ref) || warned) next
            expect_identical(ours, ref, info = paste(f, name))
            compared <- compared + 1
        }
    }
    expect_gt(compared, 100)
})

test_that("vbz-compressed nanopore signals read as h5py with the vbz plugin reads them", {
    skip_without_corpus()
    vbz <- corpus_files("fast5")
    vbz <- vbz[grepl("vbz", basename(vbz))]
    skip_if(length(vbz) == 0, "no vbz files")
    script <- '
import sys, os, glob, h5py, numpy as np
import ont_fast5_api
plugin = os.path.join(os.path.dirname(ont_fast5_api.__file__), "vbz_plugin")
os.environ["HDF5_PLUGIN_PATH"] = plugin
h5py.h5pl.prepend(plugin.encode())
src, dst = sys.argv[1], sys.argv[2]
with h5py.File(src, "r") as f, h5py.File(dst, "w") as out:
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and name.endswith("Signal"):
            out[name] = obj[...]
    f.visititems(visit)
'
    for (f in vbz) {
        ref <- tempfile(fileext = ".h5")
        run_python(script, f, ref, needs = "ont_fast5_api")
        listing <- rhdf5::h5ls(ref)
        signals <- listing[listing$otype == "H5I_DATASET", ]
        expect_gt(nrow(signals), 0)
        for (k in seq_len(nrow(signals))) {
            name <- paste0(signals$group[k], "/", signals$name[k])
            expect_identical(h5t_read(f, name), rhdf5_read(ref, name), info = paste(f, name))
        }
    }
})
