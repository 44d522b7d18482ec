# Reads from forked R processes (parallel::mclapply) give the serial results, and
# threads = 1 and the default agree.
skip_if_not_installed("rhdf5")
skip_on_os("windows")

test_that("mclapply reads equal serial reads", {
    f <- new_h5()
    set.seed(11)
    m <- matrix(sample.int(100L, 400L * 300L, replace = TRUE), 400L, 300L)
    write_rhdf5(f, "m", m, chunk = c(64, 64), level = 3)
    # the parent uses its threads first: the children must not inherit a dead pool
    serial_full <- h5t_read(f, "m")
    blocks <- split(seq_len(300), ceiling(seq_len(300) / 50))
    serial <- lapply(blocks, function(cols) h5t_read(f, "m", index = list(NULL, cols)))
    forked <- parallel::mclapply(blocks, function(cols) h5t_read(f, "m", index = list(NULL, cols)),
                                 mc.cores = 2)
    expect_identical(forked, serial)
    sums <- parallel::mclapply(1:4, function(i) h5t_colSums(f, "m"), mc.cores = 2)
    for (s in sums) expect_identical(s, colSums(m) + 0)
    expect_identical(do.call(cbind, serial), serial_full)
    expect_identical(h5t_read(f, "m", threads = 1), serial_full)
    expect_identical(h5t_read(f, "m", threads = 3), m)
})
