# Where the test data is, and how files are written for the tests.

# `path` under each folder from the working directory up (the repository this package
# sits in, when the tests run from it).
in_folders_above <- function(path) {
    dir <- normalizePath(getwd(), mustWork = FALSE)
    found <- character(0)
    for (i in 1:6) {
        found <- c(found, file.path(dir, path))
        dir <- dirname(dir)
    }
    found
}

# The corpus of real files: $H5TURBO_CORPUS, else tests/data/corpus of the repository.
corpus_dir <- function() {
    for (d in c(Sys.getenv("H5TURBO_CORPUS"), in_folders_above(file.path("tests", "data", "corpus"))))
        if (nzchar(d) && dir.exists(d)) return(d)
    NULL
}

skip_without_corpus <- function() {
    if (is.null(corpus_dir())) skip("no corpus of HDF5 files (set H5TURBO_CORPUS)")
}

corpus_files <- function(folder = NULL) {
    d <- corpus_dir()
    if (!is.null(folder)) d <- file.path(d, folder)
    sort(list.files(d, pattern = "\\.(h5|hdf5|h5ad|loom|nc|fast5)$", recursive = TRUE, full.names = TRUE))
}

# A Python with h5py (and hdf5plugin for the extra filters): $H5TURBO_PYTHON, else the
# repository's .venv (make setup's), else python3.
python_bin <- function() {
    venvs <- in_folders_above(file.path(".venv", "bin", "python"))
    for (p in c(Sys.getenv("H5TURBO_PYTHON"), venvs, Sys.which("python3"))) {
        if (nzchar(p) && file.exists(p) &&
            system2(p, c("-c", shQuote("import h5py, numpy")), stdout = FALSE, stderr = FALSE) == 0)
            return(p)
    }
    NULL
}

# Runs a Python script (text) with its arguments; skips the test without h5py.
run_python <- function(script, ..., needs = character()) {
    py <- python_bin()
    if (is.null(py)) skip("no Python with h5py (set H5TURBO_PYTHON)")
    for (m in needs)
        if (system2(py, c("-c", shQuote(paste("import", m))), stdout = FALSE, stderr = FALSE) != 0)
            skip(paste("Python lacks", m))
    # rhdf5 points HDF5_PLUGIN_PATH at rhdf5filters' plugins, built for another
    # libhdf5: h5py in the child must not load them
    old <- Sys.getenv("HDF5_PLUGIN_PATH", NA)
    Sys.unsetenv("HDF5_PLUGIN_PATH")
    on.exit(if (!is.na(old)) Sys.setenv(HDF5_PLUGIN_PATH = old))
    path <- tempfile(fileext = ".py")
    writeLines(script, path)
    out <- system2(py, c(path, ...), stdout = TRUE, stderr = TRUE)
    status <- attr(out, "status")
    if (!is.null(status) && status != 0) stop("python failed:\n", paste(out, collapse = "\n"))
    invisible(out)
}

new_h5 <- function() {
    f <- tempfile(fileext = ".h5")
    rhdf5::h5createFile(f)
    f
}

# Writes x at name with rhdf5, chunked and compressed when chunk is given.
write_rhdf5 <- function(f, name, x, chunk = NULL, level = 6) {
    if (!is.null(chunk)) {
        rhdf5::h5createDataset(f, name, dims = dim(x) %||% length(x), chunk = chunk, level = level,
                               storage.mode = storage.mode(x))
        rhdf5::h5write(x, f, name)
    } else {
        rhdf5::h5write(x, f, name)
    }
    invisible(f)
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# rhdf5's reading with warnings silenced (they are compared elsewhere).
rhdf5_read <- function(f, name, ...) suppressWarnings(suppressMessages(rhdf5::h5read(f, name, ...)))
