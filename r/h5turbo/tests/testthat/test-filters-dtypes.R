# Files written from Python (h5py + hdf5plugin): every filter next to an unfiltered
# copy of the same values ("plain/<name>"), which rhdf5 reads; and the dtypes h5py writes.
skip_if_not_installed("rhdf5")

filters_py <- '
import sys, h5py, numpy as np, hdf5plugin
rng = np.random.default_rng(7)
ints = rng.integers(0, 1000, size=(53, 41), dtype="i4")
floats = rng.normal(size=(53, 41))
with h5py.File(sys.argv[1], "w") as f:
    plain = f.create_group("plain")
    plain["ints"] = ints
    plain["floats"] = floats
    cases = {
        "gzip": dict(compression="gzip", compression_opts=4),
        "gzip_shuffle": dict(compression="gzip", shuffle=True),
        "lzf": dict(compression="lzf"),
        "fletcher32": dict(fletcher32=True),
        "zstd": dict(**hdf5plugin.Zstd(clevel=5)),
        "blosc_lz4": dict(**hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
        "blosc_zstd": dict(**hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE)),
        "lz4": dict(**hdf5plugin.LZ4()),
        "bitshuffle_lz4": dict(**hdf5plugin.Bitshuffle(cname="lz4")),
        "bzip2": dict(**hdf5plugin.BZip2()),
    }
    for name, kw in cases.items():
        f.create_dataset("ints_" + name, data=ints, chunks=(16, 12), **kw)
        f.create_dataset("floats_" + name, data=floats, chunks=(20, 7), **kw)
    f.create_dataset("scaleoffset", data=ints, chunks=(16, 12), scaleoffset=0)
'

test_that("every filter reads the values written (rhdf5 reads the unfiltered copy)", {
    f <- tempfile(fileext = ".h5")
    run_python(filters_py, f, needs = "hdf5plugin")
    ref_ints <- rhdf5_read(f, "plain/ints")
    ref_floats <- rhdf5_read(f, "plain/floats")
    names <- h5t_ls(f, recursive = FALSE)$name
    filtered <- setdiff(names, "plain")
    expect_gte(length(filtered), 21)
    for (name in filtered) {
        ref <- if (startsWith(name, "floats")) ref_floats else ref_ints
        expect_identical(h5t_read(f, name), ref, info = name)
        expect_identical(h5t_read(f, name, index = list(c(41, 3, 3), 10:30)), ref[c(41, 3, 3), 10:30],
                         info = name)
        expect_equal(h5t_colSums(f, name), colSums(ref), tolerance = 1e-12, info = name)
    }
})

dtypes_py <- '
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    for t in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", ">i2", ">i4", ">u4", ">f4", ">f8"]:
        v = np.array([[0, 1, 2], [100, 120, 127]], dtype=t)
        f.create_dataset("t_" + t.replace(">", "be"), data=v, chunks=(1, 2))
    f["big_u4"] = np.array([1, 2**31 - 1, 2**31, 2**32 - 1], dtype="u4")
    f["big_i8"] = np.array([1, -2**31 + 1, 2**40, -2**40], dtype="i8")
    f["bools"] = np.array([[True, False], [False, True], [True, True]])
    e = h5py.enum_dtype({"RED": 0, "GREEN": 5, "BLUE": 2}, basetype="i2")
    f.create_dataset("enum", data=np.array([[0, 5, 2], [2, 2, 0]], dtype="i2"), dtype=e)
    f["fixed"] = np.array([b"a", b"bcd", b""], dtype="S4")
    f["vlen"] = np.array(["x", "héllo", "", "ünïcode"], dtype=h5py.string_dtype())
    f.create_dataset("vlen_chunked", data=np.array([["a%d" % i for i in range(9)]] * 5, dtype=object),
                     dtype=h5py.string_dtype(), chunks=(2, 4), compression="gzip")
    c = np.dtype([("id", "i4"), ("x", "f8"), ("tag", "S3"), ("flag", "?")])
    f["compound"] = np.array([(1, 0.5, b"ab", True), (2, -1.5, b"cde", False), (3, 2.0, b"", True)], dtype=c)
    t = np.dtype([("name", h5py.string_dtype()), ("score", ">f8"), ("count", "<i4"),
                  ("note", h5py.string_dtype("ascii")), ("code", "S4")])
    f.create_dataset("table_vlen", data=np.array([("gene_a", 1.5, 3, b"x", b"AB"), ("", -2.0, -1, b"", b""),
                                                  ("\u00fcn\u00ef", 0.25, 7, b"a longer note", b"CDEF")], dtype=t),
                     chunks=(2,))
    f["scalar"] = 3.25
    f["scalar_str"] = "just one"
    f.create_dataset("empty2d", shape=(0, 4), dtype="f8")
    f.create_dataset("unwritten", shape=(6, 5), chunks=(4, 4), dtype="i4", fillvalue=-7)
    f["unwritten"][0:4, 0:4] = 1
'

test_that("h5py dtypes read as rhdf5 reads them", {
    f <- tempfile(fileext = ".h5")
    run_python(dtypes_py, f)
    rh <- function(name) rhdf5_read(f, name)
    for (name in h5t_ls(f)$name) {
        ours <- suppressWarnings(h5t_read(f, name))
        expect_identical(ours, rh(name), info = name)
    }
    expect_warning(h5t_read(f, "big_u4"), "integer overflow")
    expect_warning(h5t_read(f, "big_i8"), "integer overflow")
    expect_identical(h5t_read(f, "big_i8", bit64conversion = "double"), array(c(1, -2^31 + 1, 2^40, -2^40), 4))
    expect_identical(h5t_read(f, "big_u4", bit64conversion = "double"), array(c(1, 2^31 - 1, 2^31, 2^32 - 1), 4))
    expect_identical(levels(h5t_read(f, "enum")), c("BLUE", "GREEN", "RED"))
    expect_identical(h5t_read(f, "t_u1")[, 2], as.raw(c(100, 120, 127)))
    expect_identical(h5t_read(f, "vlen")[2], "héllo")
    expect_identical(h5t_read(f, "unwritten")[5, 6], -7L)
    # a compound with variable-length strings: read member by member
    tab <- h5t_read(f, "table_vlen", index = list(c(3, 1)))
    expect_identical(as.vector(tab$name), c("\u00fcn\u00ef", "gene_a"))
    expect_identical(as.vector(tab$score), c(0.25, 1.5))
    expect_identical(as.vector(tab$code), c("CDEF", "AB"))
    expect_identical(h5t_read(f, "vlen_chunked", index = list(c(9, 1), 5)), rh("vlen_chunked")[c(9, 1), 5, drop = FALSE])
})

wide_py <- '
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["T"] = np.dtype("<i8")                       # a committed datatype
    d = f.create_dataset("i64", data=np.array([1, 2**53 + 1, -(2**60) - 3, 2**40], "<i8"))
    f["exact"] = np.array([2**60, -(2**62), 5], "<i8")  # past 2^53, but exact in a double
    d.attrs["big64"] = np.int64(1_100_000_000_000)
    d.attrs["bigu32"] = np.uint32(4294967295)
    d.attrs["small"] = np.int64(7)
    d.attrs["rounded"] = np.array([2**53 + 1, 3], "<i8")
    f.create_group("g")["T2"] = np.dtype("f4")
'

test_that("h5t_ls leaves committed datatypes out, attributes take bit64conversion, precision lost is warned, as rhdf5", {
    f <- tempfile(fileext = ".h5")
    run_python(wide_py, f)
    ours <- h5t_ls(f)
    ref <- suppressMessages(capture.output(r <- rhdf5::h5ls(f)))
    expect_identical(ours[, c("group", "name", "otype")], r[, c("group", "name", "otype")], ignore_attr = TRUE)
    expect_false("T" %in% ours$name)
    # the warnings of a call, muffled
    warned <- function(expr) {
        w <- character(0)
        withCallingHandlers(expr, warning = function(e) { w <<- c(w, conditionMessage(e)); invokeRestart("muffleWarning") })
        w
    }
    # attributes: 64-bit values as double on request (before, no such argument)
    expect_match(warned(a <- h5t_readAttributes(f, "i64", bit64conversion = "double")), "precision lost.*i64@rounded")
    expect_identical(a$big64, 1.1e12)
    expect_identical(a$bigu32, 4294967295)
    expect_identical(a$small, 7)
    ref_a <- suppressWarnings(rhdf5::h5readAttributes(f, "i64", bit64conversion = "double"))
    for (k in c("big64", "bigu32", "small")) expect_identical(as.vector(a[[k]]), as.vector(ref_a[[k]]), info = k)
    expect_identical(sum(grepl("integer overflow", warned(h5t_readAttributes(f, "i64")))), 3L)  # big64, bigu32, rounded
    # datasets: values past 2^53 that a double rounds are warned about, exact ones not
    expect_warning(x <- h5t_read(f, "i64", bit64conversion = "double"), "precision lost")
    expect_identical(x, array(c(1, 2^53 + 1, -(2^60) - 3, 2^40), 4))
    expect_warning(rhdf5::h5read(f, "i64", bit64conversion = "double"), "precision lost")
    expect_no_warning(y <- h5t_read(f, "exact", bit64conversion = "double"))
    expect_identical(y, array(c(2^60, -(2^62), 5), 3))
})

nested_py <- '
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    inner = np.dtype([("x", "f4"), ("y", "i2")])
    c = np.dtype([("a", "i4"), ("n", inner)])
    f["nested"] = np.array([(1, (0.5, 2)), (2, (1.5, -3))], dtype=c)
    ds = f.create_dataset("attrs_here", data=np.arange(3))
    e = h5py.enum_dtype({"OFF": 0, "ON": 1}, basetype="u1")
    ds.attrs.create("state", np.array([1, 0, 1], dtype="u1"), dtype=e)
    ds.attrs["pair"] = np.array([(1, 2.5)], dtype=[("a", "i4"), ("b", "f8")])
    ds.attrs["text"] = "hello"
    ds.attrs["u8"] = np.uint8(200)
    ds.attrs["grid"] = np.arange(6.0).reshape(2, 3)
    ds.attrs["empty"] = h5py.Empty("f8")
    ragged = f.create_dataset("ragged", shape=(7,), dtype=h5py.vlen_dtype(np.dtype(">u2")), chunks=(3,))
    for i in range(7):
        ragged[i] = np.arange(i % 5, dtype=">u2") * 1000 + i
    grid = f.create_dataset("ragged_grid", shape=(3, 2), dtype=h5py.vlen_dtype(np.dtype("<f8")))
    for i in range(3):
        for j in range(2):
            grid[i, j] = np.arange(i + j, dtype="<f8") / 4 - j
    pairs = f.create_dataset("ragged_pairs", shape=(3,), dtype=h5py.vlen_dtype(np.dtype([("a", "<i4"), ("b", "S2")])))
    for i in range(3):
        pairs[i] = np.array([(k, b"x%d" % k) for k in range(i)], dtype=[("a", "<i4"), ("b", "S2")])
'

test_that("variable-length sequences, which rhdf5 gives as NA: a list array", {
    f <- tempfile(fileext = ".h5")
    run_python(nested_py, f)
    x <- h5t_read(f, "ragged")
    expect_type(x, "list")
    expect_identical(dim(x), 7L)
    for (i in 0:6) expect_identical(x[[i + 1]], (seq_len(i %% 5) - 1L) * 1000L + i, info = i)
    g <- h5t_read(f, "ragged_grid")
    expect_identical(dim(g), c(2L, 3L))   # HDF5 (3, 2), reversed as for every array
    for (i in 0:2) for (j in 0:1) expect_identical(g[[j + 1, i + 1]], (seq_len(i + j) - 1) / 4 - j)
    expect_identical(h5t_read(f, "ragged_grid", index = list(2, c(3, 1))), g[2, c(3, 1), drop = FALSE])
    expect_identical(h5t_read(f, "ragged", index = list(c(6, 2))), x[c(6, 2), drop = FALSE])
    p <- h5t_read(f, "ragged_pairs")
    expect_identical(nrow(p[[1]]), 0L)
    expect_s3_class(p[[3]], "data.frame")
    expect_identical(p[[3]]$a, 0:1)
    expect_identical(p[[3]]$b, c("x0", "x1"))
})

test_that("nested compounds and enum/compound attributes, which rhdf5 gives as NA", {
    f <- tempfile(fileext = ".h5")
    run_python(nested_py, f)
    x <- h5t_read(f, "nested")
    expect_s3_class(x, "data.frame")
    expect_identical(x$a, array(1:2, 2))
    expect_s3_class(x$n, "data.frame")
    expect_identical(x$n$x, array(c(0.5, 1.5), 2))
    expect_identical(x$n$y, array(c(2L, -3L), 2))
    a <- h5t_readAttributes(f, "attrs_here")
    expect_identical(names(a), c("empty", "grid", "pair", "state", "text", "u8"))
    expect_identical(as.character(a$state), c("ON", "OFF", "ON"))
    expect_identical(levels(a$state), c("OFF", "ON"))
    expect_identical(a$pair$b, array(2.5, 1))
    expect_identical(a$u8, 200L)
    expect_null(a$empty)
    expect_identical(a$grid, matrix(c(0, 1, 2, 3, 4, 5), 3, 2))
})

big_table_py <- '
import sys, h5py, numpy as np
n = 50000
t = np.dtype([("name", h5py.string_dtype()), ("x", "<f8"), ("k", ">i4"), ("note", h5py.string_dtype("ascii"))])
a = np.zeros(n, dtype=t)
a["name"] = np.array(["g%d_%s" % (i, "\u00e9" * (i % 3)) for i in range(n)], dtype=object)
a["x"] = np.arange(n) / 8
a["k"] = -np.arange(n)
a["note"] = np.array([b"n%d" % (i % 7) for i in range(n)], dtype=object)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("table", data=a, chunks=(4096,), compression="gzip")
'

test_that("a large table with variable-length strings reads in one pass per block as rhdf5 reads it", {
    f <- tempfile(fileext = ".h5")
    run_python(big_table_py, f)
    whole <- rhdf5_read(f, "table")
    expect_identical(h5t_read(f, "table"), whole)
    rows <- c(3, 40000:40010, 7, 1:5)   # several blocks, out of order
    part <- h5t_read(f, "table", index = list(rows))
    expect_identical(lapply(part, as.vector), lapply(whole, function(col) as.vector(col)[rows]))
})

ragged_members_py <- '
import sys, h5py, numpy as np
t = np.dtype([("id", "<i4"), ("vals", h5py.vlen_dtype("<f8")), ("hits", h5py.vlen_dtype(">u2")),
              ("name", h5py.string_dtype())])
a = np.zeros(5, dtype=t)
for i in range(5):
    a[i] = (i, np.arange(i, dtype="<f8") / 2, np.arange(i % 3, dtype=">u2") * 1000 + i, "n%d" % i)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("t", data=a, chunks=(2,))
'

test_that("compound members of variable-length sequences read as list columns (rhdf5 reads NA)", {
    f <- tempfile(fileext = ".h5")
    run_python(ragged_members_py, f)
    x <- h5t_read(f, "t")
    expect_s3_class(x, "data.frame")
    expect_identical(as.vector(x$id), 0:4)
    expect_identical(as.vector(x$name), paste0("n", 0:4))
    expect_type(x$vals, "list")
    expect_identical(x$vals[[1]], numeric(0))
    expect_identical(x$vals[[4]], c(0, 0.5, 1))
    expect_identical(x$hits[[3]], c(2L, 1002L))
    expect_null(attr(x$vals, "h5turbo_sequences"))
    # the other columns as rhdf5 reads them
    r <- rhdf5_read(f, "t")
    expect_identical(x[c("id", "name")], r[c("id", "name")])
    part <- h5t_read(f, "t", index = list(c(5, 2)))
    expect_identical(part$vals, structure(list(c(0, 0.5, 1, 1.5), 0), dim = 2L))
    expect_identical(as.vector(part$id), c(4L, 1L))
    cols <- h5t_read(f, "t", compoundAsDataFrame = FALSE)
    expect_false(is.data.frame(cols))
    expect_identical(cols$hits[[5]], 4L)
})

vlen_attributes_py <- '
import sys, h5py, numpy as np
t = np.dtype([("name", h5py.string_dtype()), ("x", "<f8"), ("hits", h5py.vlen_dtype("<i2")), ("u", "u1")])
a = np.zeros(3, dtype=t)
for i in range(3):
    a[i] = ("n%d" % i, i / 2, np.arange(i, dtype="<i2"), 200 + i)
rows = np.empty(3, dtype=object)
for i in range(3):
    rows[i] = np.arange(i, dtype=">f8") + 0.5
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("d", data=1)
    d.attrs["table"] = a
    d.attrs["one"] = a[1]
    d.attrs.create("ragged", rows, dtype=h5py.vlen_dtype(">f8"))
    d.attrs["plain"] = 1.5
'

test_that("attributes with variable-length parts: tables as data.frames, ragged rows as lists (rhdf5 reads NA)", {
    f <- tempfile(fileext = ".h5")
    run_python(vlen_attributes_py, f)
    x <- h5t_readAttributes(f, "d")
    expect_identical(names(x), c("one", "plain", "ragged", "table"))
    expect_s3_class(x$table, "data.frame")
    expect_identical(as.vector(x$table$name), c("n0", "n1", "n2"))
    expect_identical(as.vector(x$table$x), c(0, 0.5, 1))
    expect_identical(as.vector(x$table$u), 200:202)   # unsigned 8-bit as integer in attributes, as rhdf5
    expect_identical(x$table$hits[[3]], 0:1)
    expect_identical(x$one$name, "n1")
    expect_identical(x$one$hits[[1]], 0L)
    expect_identical(x$ragged, structure(list(numeric(0), 0.5, c(0.5, 1.5)), dim = 3L))
    expect_identical(x$plain, suppressWarnings(rhdf5::h5readAttributes(f, "d"))$plain)
})

array_types_py <- '
import sys, h5py, numpy as np
from h5py import h5t, h5s, h5d, h5a

def array_dataset(f, name, base_file, base_mem, dims, shape, values):
    d = h5d.create(f.id, name.encode(), h5t.array_create(base_file, dims), h5s.create_simple(shape))
    d.write(h5s.ALL, h5s.ALL, values, mtype=h5t.array_create(base_mem, dims))
    return d

with h5py.File(sys.argv[1], "w") as f:
    d = array_dataset(f, "be", h5t.IEEE_F64BE, h5t.IEEE_F64LE, (2, 3), (4,),
                      np.arange(24, dtype="<f8").reshape(4, 2, 3) / 4)
    array_dataset(f, "grid", h5t.STD_I16LE, h5t.STD_I16LE, (5,), (3, 2),
                  np.arange(30, dtype="<i2").reshape(3, 2, 5) - 7)
    a = h5a.create(d, b"rows", h5t.array_create(h5t.STD_I32BE, (3,)), h5s.create_simple((2,)))
    a.write(np.arange(6, dtype="<i4").reshape(2, 3), mtype=h5t.array_create(h5t.STD_I32LE, (3,)))
    s = h5d.create(f.id, b"scalar", h5t.array_create(h5t.IEEE_F32LE, (3, 2)), h5s.create(h5s.SCALAR))
    s.write(h5s.ALL, h5s.ALL, np.arange(6, dtype="<f4").reshape(3, 2), mtype=h5t.array_create(h5t.IEEE_F32LE, (3, 2)))
    a = h5a.create(d, b"one", h5t.array_create(h5t.IEEE_F32LE, (3,)), h5s.create(h5s.SCALAR))
    a.write(np.arange(3, dtype="<f4") + 0.5, mtype=h5t.array_create(h5t.IEEE_F32LE, (3,)))
    t = np.dtype([("id", "<i4"), ("xyz", ">f8", (3,)), ("m", "<i2", (2, 2)), ("tag", "S3")])
    x = np.zeros(5, t)
    x["id"] = np.arange(5)
    x["xyz"] = np.arange(15).reshape(5, 3) / 2
    x["m"] = np.arange(20).reshape(5, 2, 2)
    x["tag"] = [b"a", b"bb", b"ccc", b"d", b"e"]
    f.create_dataset("table", data=x, chunks=(2,))
    v = np.dtype([("id", "<i4"), ("xyz", "<f4", (2,)), ("name", h5py.string_dtype())])
    y = np.zeros(4, v)
    y["id"] = np.arange(4)
    y["xyz"] = np.arange(8).reshape(4, 2)
    y["name"] = ["p", "q", "r", "s"]
    f.create_dataset("named", data=y)
    f["named"].attrs["points"] = y[["id", "xyz"]][:3]
    array_dataset(f, "bytes", h5t.STD_U8LE, h5t.STD_U8LE, (3,), (4,),
                  np.arange(12, dtype="u1").reshape(4, 3) + 200)
    b = np.dtype([("u", "u1"), ("us", "u1", (3,)), ("n", [("pair", "u1", (2,)), ("one", "u1")])])
    z = np.zeros(4, b)
    z["u"] = [1, 2, 250, 4]
    z["us"] = np.arange(12).reshape(4, 3) + 240
    z["n"]["pair"] = np.arange(8).reshape(4, 2)
    z["n"]["one"] = [9, 8, 7, 6]
    f.create_dataset("byte_members", data=z)
'

test_that("array types read as rhdf5 reads them; in attributes and data.frames, where rhdf5 gives NA", {
    f <- tempfile(fileext = ".h5")
    run_python(array_types_py, f)
    # datasets of array type: the array's dimensions first, all reversed (as rhdf5)
    for (name in c("be", "grid", "scalar")) expect_identical(h5t_read(f, name), rhdf5_read(f, name), info = name)
    be <- h5t_read(f, "be")
    expect_identical(dim(be), c(3L, 2L, 4L))
    expect_identical(be[, 2, 3], c(15, 16, 17) / 4)   # numpy be[2][1]
    grid <- h5t_read(f, "grid", index = list(2L, c(3L, 1L)))
    expect_identical(dim(grid), c(5L, 1L, 2L))
    expect_identical(grid[, 1, 1], (25:29) - 7L)       # numpy grid[2, 1]
    # compounds with array members: the list rhdf5 gives with compoundAsDataFrame = FALSE
    expect_identical(h5t_read(f, "table", compoundAsDataFrame = FALSE),
                     rhdf5_read(f, "table", compoundAsDataFrame = FALSE))
    # one-dimensional array members as matrix columns of a data.frame, one row per
    # element; with a member of several dimensions the compound stays a list
    named <- h5t_read(f, "named")
    expect_s3_class(named, "data.frame")
    expect_identical(named$xyz, matrix(as.numeric(0:7), 4, 2, byrow = TRUE))
    expect_identical(as.vector(named$name), c("p", "q", "r", "s"))
    expect_null(attr(named$xyz, "h5turbo_array"))
    part <- h5t_read(f, "named", index = list(c(4L, 2L)))
    expect_identical(part$xyz, matrix(c(6, 7, 2, 3), 2, 2, byrow = TRUE))
    table <- h5t_read(f, "table")
    expect_false(is.data.frame(table))
    expect_identical(table$m[, , 2], matrix(4:7, 2, 2))
    # attributes of array type and with array members
    a <- h5t_readAttributes(f, "be")
    expect_identical(a$rows, matrix(0:5, 3, 2))
    expect_identical(a$one, array(c(0.5, 1.5, 2.5)))   # a scalar: the array alone, as datasets
    p <- h5t_readAttributes(f, "named")$points
    expect_s3_class(p, "data.frame")
    expect_identical(p$xyz, matrix(as.numeric(0:5), 3, 2, byrow = TRUE))
    # 8-bit unsigned arrays as integer (a u1 member or dataset alone as raw), as rhdf5
    expect_identical(h5t_read(f, "bytes"), rhdf5_read(f, "bytes"))
    expect_identical(h5t_read(f, "bytes")[, 4], 209:211)
    members <- h5t_read(f, "byte_members", compoundAsDataFrame = FALSE)
    expect_identical(members, rhdf5_read(f, "byte_members", compoundAsDataFrame = FALSE))
    expect_identical(as.vector(members$u), as.raw(c(1, 2, 250, 4)))
    expect_identical(members$us[, 2], 243:245)
    framed <- h5t_read(f, "byte_members")   # rhdf5 gives NA for these members
    expect_identical(framed$us, matrix(240:251, 4, 3, byrow = TRUE))
    expect_identical(framed$n$pair, matrix(0:7, 4, 2, byrow = TRUE))
    # no DelayedArray of arrays: a clear error
    expect_error(H5TurboArray(f, "be"), "not values of HDF5 class ARRAY")
})

# Long double (numpy.longdouble, H5T_NATIVE_LDOUBLE: x87 80-bit extended in 16 bytes on
# x86-64) reads as double, as rhdf5 gives it through libhdf5's conversions: in the
# native byte order rounded to nearest (ties to even), Inf past the largest double; in
# the other byte order (libhdf5's soft conversion) ties rounded away from zero.
longdouble_py <- '
import sys, h5py, numpy as np
ld = np.longdouble
if np.dtype(ld).itemsize != 16 or np.finfo(ld).nmant != 63:
    sys.exit(3)
third = ld(1) / ld(3)
dmax = ld(np.finfo(np.float64).max)
half_ulp = ld(2) ** 970   # half the spacing of doubles below the largest
vals = np.array([ld(1) + ld(2)**-60, 2.5, -3.25, 1e300, 1e-310, third, ld(1) + ld(2)**-53,
                 -(ld(1) + ld(2)**-53), ld(1) + ld(2)**-53 + ld(2)**-60, ld(2)**16000, -ld(2)**16000,
                 ld(2)**-16000, np.inf, -np.inf, np.nan, -0.0, 0.1, dmax + half_ulp / 2,
                 dmax + half_ulp, 2.5 * ld(2)**-1074, 0.5 * ld(2)**-1074], dtype=ld)
vals = np.concatenate([vals, np.full(3, 7, dtype=ld)])
with h5py.File(sys.argv[1], "w") as f:
    f["ld"] = vals.reshape(4, 6)
    f.create_dataset("ldc", data=vals.reshape(4, 6), chunks=(3, 3), compression="gzip")
    # libhdf5 rounds a value just past the largest double in the other byte order to
    # 2^1023 or the largest double, depending on the values before it: left out
    swapped = vals.copy()
    swapped[17:19] = 7
    f["be"] = swapped.reshape(4, 6).astype(">f16")
    f["sums"] = np.array([[1e16, 1, -1e16], [1e308, 1e308, -1e308], [third, third, third]], dtype=ld)
    f["cmp"] = np.array([(1, third), (2, 5)], dtype=[("x", "<i4"), ("y", ld)])
    f["clong"] = np.array([1 + 2j, third - 1j], dtype=np.clongdouble)
    f["arr"] = np.array([(third, 1, 2), (3, 4, 5)], dtype=np.dtype((ld, (3,))))
    f["ld"].attrs["vec"] = np.array([third, ld(2)**16000, 7], dtype=ld)
    f["ld"].attrs["scalar"] = ld(0.1)
'

longdouble_file <- function() {
    skip_if_not(.Machine$sizeof.longdouble == 16 && isTRUE(.Machine$longdouble.digits == 64),
                "long double is not x87 extended")
    f <- tempfile(fileext = ".h5")
    tryCatch(run_python(longdouble_py, f), error = function(e) skip("numpy's longdouble is not x87 extended"))
    f
}

test_that("16-byte floats (long double) read as double, equal to rhdf5's, in reads, attributes and DelayedArrays", {
    f <- longdouble_file()
    native <- c(1, 2.5, -3.25, 1e300, 1e-310, 1 / 3, 1, -1, 1 + 2^-52, Inf, -Inf, 0, Inf, -Inf, NaN, 0, 0.1,
                Inf, Inf, 2 * 2^-1074, 0, 7, 7, 7)
    swapped <- native
    swapped[c(7, 8, 18, 19, 20, 21)] <- c(1 + 2^-52, -1 - 2^-52, 7, 7, 3 * 2^-1074, 2^-1074)
    for (name in c("ld", "ldc", "be", "sums", "cmp", "clong", "arr"))
        expect_identical(h5t_read(f, name), rhdf5_read(f, name), info = name)
    expect_identical(h5t_read(f, "ld"), matrix(native, 6))
    expect_identical(h5t_read(f, "be"), matrix(swapped, 6))
    expect_identical(h5t_read(f, "ldc", index = list(c(4, 1), 2:3)), matrix(native, 6)[c(4, 1), 2:3])
    expect_identical(as.vector(h5t_read(f, "cmp")$y), c(1 / 3, 5))
    attrs <- h5t_readAttributes(f, "ld")
    expect_identical(attrs[sort(names(attrs))], rhdf5::h5readAttributes(f, "ld")[c("scalar", "vec")])
    expect_identical(as.vector(attrs$vec), c(1 / 3, Inf, 7))
    ls <- h5t_ls(f)
    expect_identical(ls$dclass[ls$name == "ld"], "FLOAT")
    a <- H5TurboArray(f, "ldc")
    expect_identical(type(a), "double")
    expect_identical(as.matrix(a), matrix(native, 6))
    expect_identical(as.matrix(DelayedArray::realize(a[2:3, c(4, 1)])), matrix(native, 6)[2:3, c(4, 1)])
    expect_identical(DelayedArray::extract_array(DelayedArray::seed(a), list(1L, NULL)),
                     matrix(native, 6)[1, , drop = FALSE])
    skip_if_not_installed("HDF5Array")
    expect_identical(as.matrix(a), as.matrix(HDF5Array::HDF5Array(f, "ldc")))
})

test_that("reductions of 16-byte floats are base R's on the doubles read", {
    f <- longdouble_file()
    x <- h5t_read(f, "sums")
    expect_identical(h5t_colSums(f, "sums"), colSums(x))
    expect_identical(h5t_colSums(f, "sums"), c(1, 1e308, 1))
    expect_identical(h5t_rowMeans(f, "sums"), rowMeans(x))
    expect_identical(h5t_colVars(f, "ldc"), apply(h5t_read(f, "ldc"), 2, var))
    a <- H5TurboArray(f, "sums")
    expect_identical(colSums(a), colSums(x))
    expect_identical(rowSums(a), rowSums(x))
    expect_identical(DelayedMatrixStats::colSums2(a), MatrixGenerics::colSums2(x))
})
