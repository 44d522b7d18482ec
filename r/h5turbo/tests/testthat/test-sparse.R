# Sparse matrices: 10x and AnnData groups against the same arrays read by rhdf5.
skip_if_not_installed("rhdf5")

csc_from_rhdf5 <- function(f, g, nrow, ncol) {
    Matrix::sparseMatrix(i = as.integer(rhdf5_read(f, paste0(g, "/indices"))) + 1L,
                         p = as.integer(rhdf5_read(f, paste0(g, "/indptr"))),
                         x = as.numeric(rhdf5_read(f, paste0(g, "/data"))),
                         dims = c(nrow, ncol), repr = "C")
}

test_that("10x matrices are features x barcodes with ids and barcodes as names", {
    skip_without_corpus()
    files <- corpus_files("10x")
    expect_gt(length(files), 0)
    for (f in files) {
        top <- rhdf5::h5ls(f, recursive = FALSE)
        groups <- if ("matrix" %in% top$name) "matrix" else top$name[top$otype == "H5I_GROUP"]
        for (g in groups) {
            shape <- as.numeric(rhdf5_read(f, paste0(g, "/shape")))
            m <- h5t_read_sparse(f, g)
            expect_s4_class(m, "dgCMatrix")
            expect_identical(dim(m), as.integer(shape), info = f)
            ref <- csc_from_rhdf5(f, g, shape[1], shape[2])
            expect_identical(suppressMessages(unname(m)), suppressMessages(unname(ref)), info = paste(f, g))
            barcodes <- as.vector(rhdf5_read(f, paste0(g, "/barcodes")))
            expect_identical(colnames(m), barcodes, info = f)
        }
    }
    f3 <- grep("3.0.0", files, value = TRUE)[1]
    if (!is.na(f3)) expect_identical(h5t_read_sparse(f3), h5t_read_sparse(f3, "matrix"))
})

test_that("AnnData X (csr in the corpus files) is genes x cells", {
    skip_without_corpus()
    for (f in corpus_files("h5ad")) {
        top <- h5t_ls(f, recursive = FALSE)
        if (!any(top$name == "X" & top$otype == "H5I_GROUP")) next   # dense X, or none
        attrs <- rhdf5::h5readAttributes(f, "X")
        enc <- attrs[["encoding-type"]] %||% paste0(attrs[["h5sparse_format"]], "_matrix")
        if (length(enc) == 0 || !enc %in% c("csr_matrix", "csc_matrix")) next
        shape <- as.numeric(attrs[["shape"]] %||% attrs[["h5sparse_shape"]])   # cells x genes
        m <- h5t_read_sparse(f, "X")
        expect_identical(dim(m), as.integer(rev(shape)), info = f)
        stored <- csc_from_rhdf5(f, "X", if (enc == "csr_matrix") shape[2] else shape[1],
                                 if (enc == "csr_matrix") shape[1] else shape[2])
        ref <- if (enc == "csr_matrix") stored else Matrix::t(stored)
        expect_identical(suppressMessages(unname(m)), suppressMessages(unname(ref)), info = f)
    }
})

sparse_py <- '
import sys, h5py, numpy as np, scipy.sparse as sp
m = sp.random(30, 12, density=0.3, format="csr", random_state=4, dtype="f8")
with h5py.File(sys.argv[1], "w") as f:
    for kind, mat in [("csr_matrix", m.tocsr()), ("csc_matrix", m.tocsc())]:
        g = f.create_group("layers/" + kind)
        g.attrs["encoding-type"] = kind
        g.attrs["encoding-version"] = "0.1.0"
        g.attrs["shape"] = np.array(mat.shape)
        g.create_dataset("data", data=mat.data, chunks=True, compression="gzip")
        g["indices"] = mat.indices.astype("i8")
        g["indptr"] = mat.indptr.astype("i8")
    for name, n in [("obs", 30), ("var", 12)]:
        g = f.create_group(name)
        g.attrs["_index"] = "_index"
        g["_index"] = np.array(["%s%d" % (name, i) for i in range(n)], dtype=h5py.string_dtype())
    bad = f.create_group("bad")
    bad.attrs["encoding-type"] = "csr_matrix"
    bad.attrs["shape"] = np.array([3, 3])
    bad["data"] = np.ones(2)
    bad["indices"] = np.array([0, 7])
    bad["indptr"] = np.array([0, 1, 2, 2])
    np.save(sys.argv[2], m.toarray())
'

test_that("AnnData csr and csc give the same genes x cells matrix with var/obs names", {
    f <- tempfile(fileext = ".h5ad")
    dense_file <- tempfile(fileext = ".npy")
    run_python(sparse_py, f, dense_file, needs = "scipy")
    csr <- h5t_read_sparse(f, "layers/csr_matrix")
    csc <- h5t_read_sparse(f, "layers/csc_matrix")
    expect_identical(dim(csr), c(12L, 30L))
    expect_identical(csr, csc)
    expect_identical(rownames(csr), paste0("var", 0:11))
    expect_identical(colnames(csr), paste0("obs", 0:29))
    expect_error(h5t_read_sparse(f, "bad"), class = "h5turbo_error", regexp = "outside the shape")
    expect_error(h5t_read_sparse(f, "obs"), class = "h5turbo_error", regexp = "not a sparse matrix group")
})

test_that("a dense X is named as such, not as missing", {
    f <- new_h5()
    rhdf5::h5write(matrix(1:6, 2), f, "X")
    expect_error(h5t_read_sparse(f), class = "h5turbo_error_invalid", regexp = "'/X' is a dense dataset")
})
