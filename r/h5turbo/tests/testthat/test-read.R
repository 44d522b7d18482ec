# h5t_read against rhdf5::h5read on files written by rhdf5.
skip_if_not_installed("rhdf5")

test_that("numeric matrices and arrays read as rhdf5 reads them, dims reversed", {
    f <- new_h5()
    set.seed(1)
    ints <- matrix(sample.int(1000L, 37L * 23L, replace = TRUE), 37L, 23L)
    dbls <- array(rnorm(5 * 7 * 3), c(5, 7, 3))
    write_rhdf5(f, "ints", ints)
    write_rhdf5(f, "ints_chunked", ints, chunk = c(10, 6))        # chunks do not divide 37 x 23
    write_rhdf5(f, "dbls", dbls, chunk = c(2, 3, 2))
    write_rhdf5(f, "vec", as.numeric(1:101), chunk = 17)
    write_rhdf5(f, "scalar_like", 42L)
    for (name in c("ints", "ints_chunked", "dbls", "vec", "scalar_like")) {
        expect_identical(h5t_read(f, name), rhdf5_read(f, name), info = name)
        expect_identical(h5t_read(f, name, threads = 1), rhdf5_read(f, name), info = name)
    }
    expect_identical(dim(h5t_read(f, "ints")), c(37L, 23L))
})

test_that("index subsets: ranges, strides, unsorted, repeats, scattered, empty", {
    f <- new_h5()
    x <- matrix(as.integer(1:(60 * 45)), 60, 45)
    write_rhdf5(f, "x", x, chunk = c(7, 8))
    a <- array(as.numeric(1:(6 * 5 * 40)), c(6, 5, 40))
    write_rhdf5(f, "a", a, chunk = c(4, 2, 9))
    cases <- list(
        list(1:10, NULL), list(NULL, 3:9), list(seq(2, 60, by = 3), c(45, 1)),
        list(c(5, 1, 5, 60), c(2, 2, 44)), list(c(3, 59), c(1, 45)),
        list(NULL, c(1, 2, 30, 31, 45)), list(7, 7), list(sample(60), sample(45)))
    for (idx in cases) {
        expect_identical(h5t_read(f, "x", index = idx), rhdf5_read(f, "x", index = idx),
                         info = deparse(idx))
        expect_identical(h5t_read(f, "x", index = idx), x[idx[[1]] %||% seq_len(60),
                                                          idx[[2]] %||% seq_len(45), drop = FALSE])
    }
    for (idx in list(list(NULL, NULL, c(40, 1, 20)), list(2:3, c(5, 1), NULL), list(1, 1, 1))) {
        expect_identical(h5t_read(f, "a", index = idx), rhdf5_read(f, "a", index = idx),
                         info = deparse(idx))
    }
    empty <- h5t_read(f, "x", index = list(integer(0), NULL))
    expect_identical(dim(empty), c(0L, 45L))
    expect_identical(h5t_read(f, "x", index = list(1:2, 1), drop = TRUE), x[1:2, 1])
})

test_that("dtypes: integer sizes, unsigned, floats, logicals", {
    f <- new_h5()
    ints <- matrix(as.integer(c(-5:6)), 3, 4)
    for (mode in c("integer", "double")) write_rhdf5(f, paste0("m_", mode), `storage.mode<-`(ints, mode))
    rhdf5::h5createDataset(f, "i8", dims = 12, storage.mode = "integer", H5type = "H5T_STD_I8LE")
    rhdf5::h5write(as.integer(-5:6), f, "i8")
    rhdf5::h5createDataset(f, "u16", dims = 12, storage.mode = "integer", H5type = "H5T_STD_U16BE")
    rhdf5::h5write(as.integer(0:11) * 5000L, f, "u16")
    rhdf5::h5createDataset(f, "f32", dims = c(3, 4), storage.mode = "double", H5type = "H5T_IEEE_F32LE",
                           chunk = c(2, 3), level = 4)
    rhdf5::h5write(ints / 4, f, "f32")
    write_rhdf5(f, "lgl", matrix(c(TRUE, NA, FALSE, TRUE, FALSE, NA), 2, 3))
    write_rhdf5(f, "special", c(NaN, Inf, -Inf, NA, 0, -0, 1e308, 5e-324))
    for (name in c("m_integer", "m_double", "i8", "u16", "f32", "lgl", "special")) {
        expect_identical(h5t_read(f, name), rhdf5_read(f, name), info = name)
    }
    expect_type(h5t_read(f, "lgl"), "logical")
})

test_that("strings, data.frames (compounds) and attributes", {
    f <- new_h5()
    s <- matrix(c("a", "bb", "", "dddd", "é ü", "x"), 2, 3)
    write_rhdf5(f, "strings", s)
    df <- data.frame(id = 1:4, score = c(0.5, 1.5, NA, -2), tag = c("x", "yy", "zzz", ""),
                     stringsAsFactors = FALSE)
    rhdf5::h5write(df, f, "table")
    rhdf5::h5createGroup(f, "g")
    rhdf5::h5write(1:3, f, "g/with_attrs")
    fid <- rhdf5::H5Fopen(f)
    did <- rhdf5::H5Dopen(fid, "g/with_attrs")
    rhdf5::h5writeAttribute(2.5, did, "scale")
    rhdf5::h5writeAttribute(c("u", "vw"), did, "labels")
    rhdf5::h5writeAttribute(matrix(1:6, 2, 3), did, "grid")
    rhdf5::h5writeAttribute("text", did, "note")
    rhdf5::H5Dclose(did)
    rhdf5::H5Fclose(fid)
    expect_identical(h5t_read(f, "strings"), rhdf5_read(f, "strings"))
    expect_identical(h5t_read(f, "table"), rhdf5_read(f, "table"))
    expect_identical(h5t_read(f, "table", index = list(c(4, 2))),
                     { d <- rhdf5_read(f, "table"); d <- d[c(4, 2), ]
                       d[] <- lapply(d, function(col) array(col, length(col))); rownames(d) <- NULL; d })
    expect_identical(h5t_readAttributes(f, "g/with_attrs"), rhdf5::h5readAttributes(f, "g/with_attrs"))
    expect_identical(h5t_readAttributes(f, "/"), rhdf5::h5readAttributes(f, "/"))
})

test_that("h5t_ls lists what rhdf5::h5ls lists", {
    f <- new_h5()
    rhdf5::h5createGroup(f, "zeta")
    rhdf5::h5createGroup(f, "alpha")
    rhdf5::h5createGroup(f, "alpha/inner")
    write_rhdf5(f, "alpha/inner/m", matrix(1:6, 2, 3))
    write_rhdf5(f, "b", "text")
    write_rhdf5(f, "zeta/v", as.numeric(1:5))
    cols <- c("group", "name", "otype", "dclass", "dim")
    expect_identical(h5t_ls(f), rhdf5::h5ls(f)[, cols])
    expect_identical(h5t_ls(f, recursive = FALSE), rhdf5::h5ls(f, recursive = FALSE)[, cols])
    expect_identical(h5t_ls(f, recursive = 2), rhdf5::h5ls(f, recursive = 2)[, cols])
})

test_that("character NA written by rhdf5 (as.na) reads as NA; drop = TRUE gives rhdf5's vector", {
    f <- new_h5()
    suppressWarnings(rhdf5::h5write(c("a", NA, "c", "NA"), f, "s"))   # it warns that "NA" becomes NA
    expect_identical(h5t_read(f, "s"), rhdf5_read(f, "s"))
    expect_identical(as.vector(h5t_read(f, "s")), c("a", NA, "c", NA))   # rhdf5 cannot tell them apart
    skip_if_not_installed("HDF5Array")
    expect_identical(as.vector(H5TurboArray(f, "s")), as.vector(HDF5Array::HDF5Array(f, "s")))
    x <- matrix(1:6, 2)
    rhdf5::h5write(x, f, "m")
    expect_identical(h5t_read(f, "m", drop = TRUE), rhdf5_read(f, "m", drop = TRUE))
    expect_null(dim(h5t_read(f, "m", drop = TRUE)))
    expect_error(h5t_read(f, "m", threads = Inf), "threads must be")
    expect_error(h5t_read(f, "m", threads = 1.5), "threads must be")
})

test_that("names that are not UTF-8 (Latin-1) are listed as rhdf5 lists them and read by their bytes", {
    f <- tempfile(fileext = ".h5")
    run_python('
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="earliest") as f:
    g = f.create_group(b"gr\\xfcn")
    g.create_dataset(b"caf\\xe9", data=np.arange(3, dtype="<i4"))
    g.create_dataset(b"caf\\xe8", data=np.arange(4, dtype="<i4"))
    g.attrs[b"att\\xe9"] = np.int32(7)
with h5py.File(sys.argv[1], "a", libver="latest") as f:
    d = f.create_group("dense")
    for i in range(12):
        d.create_dataset(f"n{i}".encode() + b"\\xe9", data=np.full(2, i, dtype="<i2"))
', f)
    listed <- h5t_ls(f)
    expect_identical(listed$name, rhdf5::h5ls(f)$name)
    expect_identical(listed$group, rhdf5::h5ls(f)$group)
    # rhdf5 cannot open these by name (its h5read looks the path up as text); the
    # bytes h5t_ls listed find each object, and the two names stay apart
    e9 <- listed$name[listed$group == "/gr\xfcn"][2]
    expect_identical(h5t_read(f, paste0("/gr\xfcn/", e9), drop = TRUE), 0:2)
    expect_identical(h5t_read(f, "/gr\xfcn/caf\xe8", drop = TRUE), 0:3)
    expect_identical(h5t_read(f, "/dense/n7\xe9", drop = TRUE), c(7L, 7L))
    expect_identical(unname(unlist(h5t_readAttributes(f, "/gr\xfcn"))), 7L)
    expect_error(h5t_read(f, "/gr\xfcn/caf\xe7"), class = "h5turbo_error_not_found")
})
