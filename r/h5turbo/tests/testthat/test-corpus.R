# Every corpus file: h5t_ls as rhdf5::h5ls, every dataset and attribute list rhdf5
# reads cleanly (no error, no warning) read identically; the rest either read or fail
# with an h5turbo_error naming the file, never crash. rhdf5's side runs in child
# processes (helper-rhdf5-reference.R): it crashes on some of these files.
skip_if_not_installed("rhdf5")

# rhdf5 keeps the padding of space-padded strings; h5turbo removes it, as h5py and
# libhdf5's own string conversion do.
strip_pad <- function(x) {
    if (is.character(x)) { at <- attributes(x); x <- sub(" +$", "", x); attributes(x) <- at; return(x) }
    if (is.list(x)) { at <- attributes(x); x <- lapply(x, strip_pad); attributes(x) <- at }
    x
}

# An enum value that is no member is NA here; rhdf5 gives it some member's code (or
# one beyond the levels, a malformed factor). Where that is the only difference, the
# reference takes our NA; anything else still has to match.
unmapped_enum <- function(ours, ref) {
    is.factor(ours) && is.factor(ref) && identical(levels(ours), levels(ref)) && anyNA(ours) &&
        identical(unclass(ours)[!is.na(ours)], unclass(ref)[!is.na(ours)])
}
align_enums <- function(ours, ref) {
    if (unmapped_enum(ours, ref)) return(ours)
    if (is.list(ours) && is.list(ref) && identical(names(ours), names(ref)) && length(ours) == length(ref)) {
        at <- attributes(ref)
        ref <- Map(align_enums, ours, ref)
        attributes(ref) <- at
    }
    ref
}
# rhdf5 gives references as H5Ref objects; h5turbo reads no references (NA, warning)
drop_references <- function(ours, ref) {
    if (!is.list(ref) || is.data.frame(ref)) return(list(ours, ref))
    refs <- names(ref)[vapply(ref, isS4, TRUE)]
    list(ours[setdiff(names(ours), refs)], ref[setdiff(names(ref), refs)])
}

expect_rhdf5 <- function(ours, ref, info) {
    if (!identical(ours, ref) && identical(ours, strip_pad(ref))) ref <- strip_pad(ref)
    ref <- align_enums(ours, ref)
    expect_identical(ours, ref, info = info)
}

test_that("corpus: listings, datasets and attributes match rhdf5", {
    skip_without_corpus()
    files <- corpus_files()
    expect_gt(length(files), 50)
    # Known differences from rhdf5 on files added 2026-12-06, each left out with why
    # until the R front end handles it:
    floats <- "rhdf5 converts floats numpy lacks (128-bit, VAX, IEEE quad) to double; h5turbo refuses them"
    known_differences <- c(
        "hdf5/be_extlink1.h5" = "rhdf5's h5ls lists the objects behind an external link; h5t_ls does not follow it",
        "pytables/elink.h5" = "rhdf5's h5ls lists the objects behind an external link; h5t_ls does not follow it",
        "nexus/silx_dicttonx.h5" = "rhdf5's h5ls lists the objects behind an external link; h5t_ls does not follow it",
        "hdf5/t128bit_float.h5" = floats, "hdf5/tvms.h5" = floats, "pytables/float.h5" = floats,
        "hdf5/tscalarintattrsize.h5" = "unsigned 8-, 32- and 64-bit values: rhdf5 gives integers (saturated), h5t_read raw bytes or NA",
        "pytables/indexes_2_0.h5" = "PyTables' index arrays (unsigned 64-bit, bitfields) convert otherwise in rhdf5",
        "pandas/store.h5" = "PyTables' empty index arrays: rhdf5 gives chr(0) without dimensions, h5t_read keeps them",
        "pandas/table_zstd.h5" = "PyTables' empty index arrays: rhdf5 gives chr(0) without dimensions, h5t_read keeps them")
    relative <- substring(files, nchar(corpus_dir()) + 2L)
    files <- files[!relative %in% names(known_differences)]
    compared <- attrs_compared <- 0
    crashed <- vlen_compounds <- character(0)
    rhdf5_reference <- rhdf5_references(files)
    on.exit(unlink(attr(rhdf5_reference, "root"), recursive = TRUE), add = TRUE)
    for (f in files) {
        ref <- rhdf5_reference(f)
        if (is.null(ref$ls)) next
        ours_ls <- tryCatch(h5t_ls(f), h5turbo_error = function(e) e)
        if (inherits(ours_ls, "h5turbo_error")) {
            expect_match(conditionMessage(ours_ls), basename(f), fixed = TRUE)
            next
        }
        cols <- c("group", "name", "otype", "dclass", "dim")
        # (committed datatypes too: rhdf5 leaves them out, so must h5t_ls)
        keep <- function(d) d[d$otype %in% c("H5I_GROUP", "H5I_DATASET", "H5I_DATATYPE"), cols]
        expect_identical(keep(ours_ls), keep(ref$ls), info = f, ignore_attr = TRUE)
        n_objects <- sum(ref$ls$otype %in% c("H5I_GROUP", "H5I_DATASET")) + 1
        if (length(ref$objects) < n_objects) crashed <- c(crashed, basename(f))
        for (o in ref$objects) {
            if (o$dataset) {
                ours <- tryCatch(suppressWarnings(h5t_read(f, o$name)), h5turbo_error = function(e) e)
                if (is.null(o$value)) {
                    if (inherits(ours, "h5turbo_error")) expect_match(conditionMessage(ours), basename(f), fixed = TRUE)
                } else if (inherits(ours, "h5turbo_error_unsupported") && is.data.frame(o$value) &&
                           grepl("variable-length", conditionMessage(ours))) {
                    # known gap: compounds with variable-length sequence or reference members
                    vlen_compounds <- c(vlen_compounds, paste(basename(f), o$name))
                } else {
                    expect_rhdf5(ours, o$value, info = paste(f, o$name))
                    compared <- compared + 1
                }
            }
            if (!is.null(o$attrs)) {
                ours <- tryCatch(suppressWarnings(h5t_readAttributes(f, o$name)), h5turbo_error = function(e) e)
                refa <- o$attrs
                if (is.list(ours)) {
                    # a null dataspace is NULL here; rhdf5 reads bytes that are not there
                    empty <- names(ours)[vapply(ours, is.null, TRUE)]
                    # rhdf5 gives NA (with a warning) for what it cannot read: compared elsewhere
                    ours <- ours[setdiff(names(ours), empty)]
                    refa <- refa[setdiff(names(refa), empty)]
                }
                pair <- drop_references(ours, refa)
                expect_rhdf5(pair[[1]], pair[[2]], info = paste(f, o$name, "attributes"))
                attrs_compared <- attrs_compared + 1
            }
        }
    }
    expect_gt(compared, 200)
    expect_gt(attrs_compared, 200)
    message(sprintf("corpus: %d datasets and %d attribute lists identical to rhdf5's", compared, attrs_compared))
    if (length(crashed)) message("rhdf5 crashed on objects of: ", paste(unique(crashed), collapse = ", "))
    if (length(vlen_compounds)) message("compounds with variable-length sequence or reference members not read: ",
                                        paste(vlen_compounds, collapse = ", "))
})

test_that("vbz-compressed nanopore signals read as h5py with the vbz plugin reads them", {
    skip_without_corpus()
    vbz <- corpus_files("fast5")
    vbz <- vbz[grepl("vbz", basename(vbz))]
    skip_if(length(vbz) == 0, "no vbz files")
    script <- '
import sys, os, h5py, numpy as np
import ont_fast5_api
plugin = os.path.join(os.path.dirname(ont_fast5_api.__file__), "vbz_plugin")
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
