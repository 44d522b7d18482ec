# External links are followed as rhdf5 (libhdf5) follows them: h5t_read, the attribute
# readers and H5TurboArray reach the dataset in the target file.

test_that("a dataset behind an external link reads as rhdf5 reads it", {
    skip_without_corpus()
    file <- file.path(corpus_dir(), "jhdf", "test_file.hdf5")
    link <- "/links_group/external_link"
    expected <- rhdf5::h5read(file, link)
    expect_identical(h5t_read(file, link), expected)
    expect_identical(as.array(H5TurboArray(file, link)), as.array(expected))
    direct <- h5t_read(file.path(corpus_dir(), "jhdf", "test_file_ext.hdf5"), "/external_dataset")
    expect_identical(h5t_read(file, link), direct)
})

test_that("an external link to a missing file is an h5turbo error naming the link", {
    skip_without_corpus()
    file <- file.path(corpus_dir(), "jhdf", "test_file.hdf5")
    err <- tryCatch(h5t_read(file, "/links_group/external_link_to_missing_file"), error = identity)
    expect_s3_class(err, "h5turbo_error")
    expect_match(conditionMessage(err), "missing_file.hdf5", fixed = TRUE)
})

test_that("a link to another file's root reaches its groups", {
    skip_without_corpus()
    file <- file.path(corpus_dir(), "jhdf", "external_link.hdf5")
    target <- file.path(corpus_dir(), "jhdf", "test_file.hdf5")
    expect_identical(h5t_read(file, "/root_dot/links_group/external_link"),
                     h5t_read(target, "/links_group/external_link"))
})
