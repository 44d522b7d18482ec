# Bad input gives an R condition naming the file, the object and the problem.

test_that("missing files, objects and bad arguments raise h5turbo errors", {
    f <- system.file("extdata", "example.h5", package = "h5turbo")
    missing <- file.path(tempdir(), "no_such_file.h5")
    expect_error(h5t_read(missing, "x"), class = "h5turbo_error", regexp = "no_such_file.h5")
    expect_error(h5t_ls(missing), class = "h5turbo_error", regexp = "no such file")
    e <- tryCatch(h5t_read(f, "/nope/deeper"), error = identity)
    expect_s3_class(e, "h5turbo_error")
    expect_match(conditionMessage(e), "example.h5", fixed = TRUE)
    expect_match(conditionMessage(e), "nope", fixed = TRUE)
    expect_type(h5t_read(f, "cells"), "list")   # a group: its members, as h5read
    expect_error(h5t_read(f, "counts", index = list(1:3)), class = "h5turbo_error", regexp = "one element")
    expect_error(h5t_read(f, "counts", index = list(0, NULL)), class = "h5turbo_error", regexp = "index")
    expect_error(h5t_read(f, "counts", index = list(NULL, 41)), class = "h5turbo_error", regexp = "1 to 40")
    expect_error(h5t_read(f, "counts", threads = -1), class = "h5turbo_error", regexp = "threads")
    expect_error(h5t_read(f, c("a", "b")), class = "h5turbo_error")
    expect_error(h5t_readAttributes(f, "nothing"), class = "h5turbo_error", regexp = "nothing")
    expect_error(H5TurboArray(f, "cells/table"), class = "h5turbo_error", regexp = "DelayedArray")
})

test_that("broken files raise errors, never crash", {
    f <- system.file("extdata", "example.h5", package = "h5turbo")
    bytes <- readBin(f, "raw", file.size(f))
    garbage <- tempfile(fileext = ".h5")
    writeBin(as.raw(sample(0:255, 4096, replace = TRUE)), garbage)
    expect_error(h5t_ls(garbage), class = "h5turbo_error", regexp = basename(garbage), fixed = TRUE)
    expect_error(h5t_read(garbage, "counts"), class = "h5turbo_error")
    empty <- tempfile(fileext = ".h5")
    file.create(empty)
    expect_error(h5t_read(empty, "counts"), class = "h5turbo_error")
    # truncations at many lengths: an error or (for cuts past what is read) a value
    set.seed(9)
    for (cut in c(8, 100, 600, 1500, 3000, sort(sample(length(bytes), 12)))) {
        t <- tempfile(fileext = ".h5")
        writeBin(bytes[seq_len(cut)], t)
        r <- tryCatch({ h5t_read(t, "counts"); "value" }, h5turbo_error = function(e) "error")
        expect_true(r %in% c("value", "error"))
        r <- tryCatch({ h5t_ls(t); h5t_readAttributes(t, "counts"); h5t_colSums(t, "counts"); "value" },
                      h5turbo_error = function(e) "error")
        expect_true(r %in% c("value", "error"))
    }
    # corrupted bytes inside the compressed chunks of counts: a decode error, or values
    corrupt <- bytes
    at <- seq(3000, min(length(bytes), 9000), by = 97)
    corrupt[at] <- as.raw(255 - as.integer(corrupt[at]))
    t <- tempfile(fileext = ".h5")
    writeBin(corrupt, t)
    r <- tryCatch({ h5t_read(t, "counts"); "value" }, h5turbo_error = function(e) conditionMessage(e))
    expect_true(is.character(r))
})
