/* Dataset reads (whole, hyperslabs, and blocks stacked along the first HDF5 axis) and
   attributes, converted to R values the way rhdf5 gives them. The row-major HDF5
   buffer of shape (d0, ..., dk) is, byte for byte, R's column-major array of dim
   (dk, ..., d0): no element moves, R just sees the dimensions reversed. */
#include <string.h>
#include <stdio.h>
#include <limits.h>
#include "glue.h"

static int threads_arg(SEXP threads)
{
    if (Rf_isNull(threads)) return 0;
    int t = Rf_asInteger(threads);
    return (t == NA_INTEGER || t < 0) ? 0 : t;
}

/* The dataset at c->obj: its rank (-1 null, 0 scalar) and shape. */
static int dataset_shape(call_t *c, int *rank, uint64_t *dims)
{
    int kind = -1;
    int rc = h5turbo_object_kind(c->obj, &kind);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    if (kind != H5TURBO_DATASET) return call_fail(c, H5TURBO_E_INVALID, "the object is not a dataset");
    rc = h5turbo_dataset_rank(c->obj, rank);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    if (*rank > MAX_RANK) return call_fail(c, H5TURBO_E_UNSUPPORTED, "more than 32 dimensions");
    if (*rank > 0) {
        rc = h5turbo_dataset_shape(c->obj, dims, *rank);
        if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    }
    return H5TURBO_OK;
}

static int dataset_type(call_t *c, tnode *t)
{
    h5turbo_datatype *dt = NULL;
    int rc = h5turbo_dataset_datatype(c->obj, &dt);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    memset(t, 0, sizeof *t);
    rc = describe_type(c, dt, t, 0);
    h5turbo_datatype_close(dt);
    return rc;
}

/* rhdf5 stores R logicals as integers with the attribute storage.mode = "logical". */
static int stored_as_logical(call_t *c)
{
    h5turbo_attribute *attr = NULL;
    if (h5turbo_attribute_open(c->obj, "storage.mode", &attr) != H5TURBO_OK) return 0;
    char **s = NULL;
    size_t n = 0;
    int logical = 0;
    if (h5turbo_attribute_read_strings(attr, &s, &n) == H5TURBO_OK) {
        logical = n == 1 && s[0] != NULL && strcmp(s[0], "logical") == 0;
        h5turbo_strings_free(s, n);
    }
    h5turbo_attribute_close(attr);
    return logical;
}

static SEXP as_logical(SEXP x, size_t size)
{
    R_xlen_t n = XLENGTH(x);
    SEXP out = PROTECT(Rf_allocVector(LGLSXP, n));
    int *r = LOGICAL(out);
    const int *v = INTEGER(x);
    /* NA was written as the smallest value of the stored integer type */
    int na = size == 1 ? -128 : (size == 2 ? -32768 : NA_INTEGER);
    for (R_xlen_t i = 0; i < n; i++)
        r[i] = (v[i] == na || v[i] == NA_INTEGER) ? NA_LOGICAL : (v[i] != 0);
    UNPROTECT(1);
    return out;
}

static void set_list_dims(SEXP x, const uint64_t *shape, int rank);

/* dim = rev(shape) on a value, on every column of a compound (a sequence column, a
   list of cells, is itself the array); opaque bytes get their element size as a first
   dimension. */
static void set_dims(SEXP x, const uint64_t *shape, int rank, R_xlen_t n)
{
    if (TYPEOF(x) == VECSXP && Rf_getAttrib(x, Rf_install("h5turbo_sequences")) != R_NilValue) {
        set_list_dims(x, shape, rank);
        return;
    }
    if (TYPEOF(x) == VECSXP) {
        for (R_xlen_t k = 0; k < XLENGTH(x); k++) set_dims(VECTOR_ELT(x, k), shape, rank, n);
        return;
    }
    /* an array type's dimensions come first (see convert_arrays) */
    SEXP element_dims = PROTECT(Rf_getAttrib(x, Rf_install(ELEMENT_DIMS)));
    Rf_setAttrib(x, Rf_install(ELEMENT_DIMS), R_NilValue);
    int n_element = element_dims == R_NilValue ? 0 : LENGTH(element_dims);
    R_xlen_t per_element = 1;
    for (int k = 0; k < n_element; k++) per_element *= INTEGER(element_dims)[k];
    if (rank < 1 || (rank == 1 && shape[0] > (uint64_t) INT_MAX)) {
        if (n_element > 0) Rf_setAttrib(x, R_DimSymbol, element_dims);
        UNPROTECT(1);
        return;
    }
    R_xlen_t len = XLENGTH(x);
    /* opaque bytes: their element size as one more first dimension */
    int extra = (n > 0 && per_element > 0 && len != n * per_element) ? 1 : 0;
    SEXP dim = PROTECT(Rf_allocVector(INTSXP, extra + n_element + rank));
    if (extra) INTEGER(dim)[0] = (int) (len / n / per_element);
    for (int k = 0; k < n_element; k++) INTEGER(dim)[extra + k] = INTEGER(element_dims)[k];
    for (int k = 0; k < rank; k++) INTEGER(dim)[extra + n_element + k] = (int) shape[rank - 1 - k];
    Rf_setAttrib(x, R_DimSymbol, dim);
    UNPROTECT(2);
}

/* dim = rev(shape) on a list whose elements are the array's cells. */
static void set_list_dims(SEXP x, const uint64_t *shape, int rank)
{
    if (rank < 1 || (rank == 1 && shape[0] > (uint64_t) INT_MAX)) return;
    SEXP dim = PROTECT(Rf_allocVector(INTSXP, rank));
    for (int k = 0; k < rank; k++) INTEGER(dim)[k] = (int) shape[rank - 1 - k];
    Rf_setAttrib(x, R_DimSymbol, dim);
    UNPROTECT(1);
}

/* Selections: `blocks` is NULL (everything) or a list of numeric vectors, each
   (start[rank], count[rank], stride[rank]) 0-based in HDF5 order; the blocks are
   stacked along axis 0 and must agree on the other axes. */
typedef struct {
    int n_blocks;
    uint64_t *start, *count, *stride;   /* n_blocks * rank each */
    uint64_t total[MAX_RANK];
    R_xlen_t n;
} selection_t;

static int parse_blocks(call_t *c, SEXP blocks, int rank, const uint64_t *dims, selection_t *s)
{
    int whole = Rf_isNull(blocks);
    if (!whole && TYPEOF(blocks) != VECSXP) return call_fail(c, H5TURBO_E_INVALID, "bad selection");
    s->n_blocks = whole ? 1 : (int) XLENGTH(blocks);
    if (s->n_blocks < 1) return call_fail(c, H5TURBO_E_INVALID, "empty selection");
    size_t cells = (size_t) s->n_blocks * (rank > 0 ? rank : 1);
    s->start = (uint64_t *) R_alloc(cells, sizeof(uint64_t));
    s->count = (uint64_t *) R_alloc(cells, sizeof(uint64_t));
    s->stride = (uint64_t *) R_alloc(cells, sizeof(uint64_t));
    for (int b = 0; b < s->n_blocks; b++) {
        SEXP v = whole ? R_NilValue : VECTOR_ELT(blocks, b);
        if (!whole && (TYPEOF(v) != REALSXP || XLENGTH(v) != 3 * rank))
            return call_fail(c, H5TURBO_E_INVALID, "a selection block needs start, count and stride per axis");
        for (int k = 0; k < rank; k++) {
            size_t at = (size_t) b * rank + k;
            double st = whole ? 0 : REAL(v)[k], ct = whole ? (double) dims[k] : REAL(v)[rank + k];
            double sd = whole ? 1 : REAL(v)[2 * rank + k];
            if (!(st >= 0 && ct >= 0 && sd >= 1) || (ct > 0 && st + (ct - 1) * sd >= (double) dims[k]))
                return call_fail(c, H5TURBO_E_INVALID, "selection outside the dataset's shape");
            s->start[at] = (uint64_t) st;
            s->count[at] = (uint64_t) ct;
            s->stride[at] = (uint64_t) sd;
            if (k > 0 && b > 0 && s->count[at] != s->count[k])
                return call_fail(c, H5TURBO_E_INVALID, "selection blocks disagree");
        }
    }
    double n = 1;
    for (int k = 0; k < rank; k++) {
        uint64_t t = 0;
        if (k == 0) for (int b = 0; b < s->n_blocks; b++) t += s->count[(size_t) b * rank];
        else t = s->count[k];
        s->total[k] = t;
        if (t > (uint64_t) INT_MAX && rank > 1)   /* one axis: a long vector without dim, as rhdf5 */
            return call_fail(c, H5TURBO_E_UNSUPPORTED, "a dimension of the selection exceeds R's limit of 2^31 - 1");
        n *= (double) t;
    }
    if (n > (double) R_XLEN_T_MAX || n > 4.0e18)
        return call_fail(c, H5TURBO_E_INVALID, "selection too large for an R vector");
    s->n = (R_xlen_t) n;
    return H5TURBO_OK;
}

static size_t block_elements(const selection_t *s, int b, int rank)
{
    size_t n = 1;
    for (int k = 0; k < rank; k++) n *= (size_t) s->count[(size_t) b * rank + k];
    return n;
}

/* Block b's start, count and stride arguments (NULL for a scalar, which takes none). */
static void block_args(const selection_t *s, int b, int rank, const uint64_t **start, const uint64_t **count,
                       const uint64_t **stride)
{
    size_t at = (size_t) b * rank;
    *start = rank > 0 ? s->start + at : NULL;
    *count = rank > 0 ? s->count + at : NULL;
    *stride = rank > 0 ? s->stride + at : NULL;
}

/* Moves the call's strings into out from element at on (checked to fit by the
   caller); returns the next element. */
static R_xlen_t take_strings(call_t *c, SEXP out, R_xlen_t at, int utf8)
{
    for (size_t i = 0; i < c->n_strings; i++) {
        const char *str = c->strings[i];
        SET_STRING_ELT(out, at++, str == NULL ? NA_STRING : Rf_mkCharCE(str, utf8 ? CE_UTF8 : CE_NATIVE));
    }
    call_free_strings(c);
    return at;
}

/* The strings of the selection. */
static SEXP read_strings_selection(call_t *c, const selection_t *s, int rank, int threads, int utf8)
{
    SEXP out = PROTECT(Rf_allocVector(STRSXP, s->n));
    R_xlen_t at = 0;
    for (int b = 0; b < s->n_blocks; b++) {
        const uint64_t *st, *ct, *sd;
        block_args(s, b, rank, &st, &ct, &sd);
        if (rank > 0 && block_elements(s, b, rank) == 0) continue;
        int rc = h5turbo_dataset_read_strings(c->obj, st, ct, sd, &c->strings, &c->n_strings, threads);
        if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); UNPROTECT(1); return NULL; }
        if (at + (R_xlen_t) c->n_strings > s->n) {
            call_fail(c, H5TURBO_E_INTERNAL, "more strings than selected");
            UNPROTECT(1);
            return NULL;
        }
        at = take_strings(c, out, at, utf8);
    }
    UNPROTECT(1);
    return out;
}

/* Reads the blocks into buf (elem bytes per element), one after the other. */
static int read_selection(call_t *c, const selection_t *s, int rank, int threads, unsigned char *buf, size_t elem)
{
    size_t at = 0;
    for (int b = 0; b < s->n_blocks; b++) {
        size_t n = rank > 0 ? block_elements(s, b, rank) : 1;
        if (n == 0) continue;
        const uint64_t *st, *ct, *sd;
        block_args(s, b, rank, &st, &ct, &sd);
        int rc = h5turbo_dataset_read(c->obj, st, ct, sd, buf + at * elem, n * elem, threads);
        if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
        at += n;
    }
    return H5TURBO_OK;
}

/* The R vector a plain numeric type can be read into without conversion, or NILSXP. */
static SEXPTYPE direct_type(const tnode *t, int flags)
{
    if (t->info.type_class == H5TURBO_INTEGER && t->info.is_signed && t->info.size == 4) return INTSXP;
    if (t->info.type_class == H5TURBO_FLOAT && t->info.size == 8) return REALSXP;
    if (t->info.type_class == H5TURBO_INTEGER && !t->info.is_signed && t->info.size == 1 &&
        !(flags & CONV_U1_INTEGER))
        return RAWSXP;
    return NILSXP;
}

static void *vector_data(SEXP x)
{
    switch (TYPEOF(x)) {
    case INTSXP: return INTEGER(x);
    case REALSXP: return REAL(x);
    default: return RAW(x);
    }
}

static SEXP mark_overflow(SEXP x, int overflow)
{
    if (overflow) Rf_setAttrib(x, Rf_install("h5turbo_overflow"), Rf_ScalarInteger(overflow));
    return x;
}

/* The base type of the variable-length sequence type dt, described into bt. */
static int describe_base(call_t *c, const h5turbo_datatype *dt, tnode *bt)
{
    h5turbo_datatype *base = NULL;
    memset(bt, 0, sizeof *bt);
    int rc = h5turbo_datatype_base(dt, &base);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    rc = describe_type(c, base, bt, 1);
    h5turbo_datatype_close(base);
    if (rc == H5TURBO_OK && bt->info.type_class == H5TURBO_ARRAY)
        return call_fail(c, H5TURBO_E_UNSUPPORTED, "variable-length sequences of arrays are not supported by the R package");
    return rc;
}

/* One sequence as the R value h5t_read gives its base type, or NULL (C) with c->code set. */
static SEXP sequence_value(call_t *c, const tnode *bt, const h5turbo_sequence *q, int flags, int *overflow)
{
    if (q->len > (uint64_t) R_XLEN_T_MAX / (bt->info.size ? bt->info.size : 1))
        return call_fail_null(c, H5TURBO_E_INVALID, "a sequence too long for an R vector");
    /* an empty sequence has no data: converters get a valid pointer all the same */
    const unsigned char *data = q->data != NULL ? (const unsigned char *) q->data : (const unsigned char *) "";
    return convert_elements(c, bt, data, (R_xlen_t) q->len, bt->info.size, 0, flags, overflow);
}

/* Moves the call's sequences into out (a list) from element at on (checked to fit by
   the caller); returns the next element, or -1 with c->code set. */
static R_xlen_t take_sequences(call_t *c, const tnode *bt, SEXP out, R_xlen_t at, int flags, int *overflow)
{
    for (size_t i = 0; i < c->n_seqs; i++) {
        SEXP v = sequence_value(c, bt, &c->seqs[i], flags, overflow);
        if (v == NULL) return -1;
        SET_VECTOR_ELT(out, at++, v);
    }
    call_free_sequences(c);
    return at;
}

/* Variable-length sequences (ragged rows): a list with one vector per element, each
   the base type's values as h5t_read gives that type (rhdf5 gives NA here). */
static SEXP read_sequences_selection(call_t *c, const selection_t *s, int rank, int threads, int flags,
                                     int *overflow)
{
    h5turbo_datatype *dt = NULL;
    tnode bt;
    int rc = h5turbo_dataset_datatype(c->obj, &dt);
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    rc = describe_base(c, dt, &bt);
    h5turbo_datatype_close(dt);
    if (rc != H5TURBO_OK) return NULL;
    SEXP out = PROTECT(Rf_allocVector(VECSXP, s->n));
    R_xlen_t at = 0;
    for (int b = 0; b < s->n_blocks; b++) {
        const uint64_t *st, *ct, *sd;
        block_args(s, b, rank, &st, &ct, &sd);
        if (rank > 0 && block_elements(s, b, rank) == 0) continue;
        rc = h5turbo_dataset_read_sequences(c->obj, st, ct, sd, &c->seqs, &c->n_seqs, threads);
        if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); UNPROTECT(1); return NULL; }
        if (at + (R_xlen_t) c->n_seqs > s->n) {
            call_fail(c, H5TURBO_E_INTERNAL, "more sequences than selected");
            UNPROTECT(1);
            return NULL;
        }
        at = take_sequences(c, &bt, out, at, flags, overflow);
        if (at < 0) { UNPROTECT(1); return NULL; }
    }
    UNPROTECT(1);
    return out;
}

/* A compound with variable-length string or sequence members has no fixed C layout:
   such a compound is read into columns, one per member, once per block. */
static int needs_columns(const tnode *t)
{
    for (size_t k = 0; k < t->n_members; k++) {
        const tnode *m = &t->members[k];
        if ((m->info.type_class == H5TURBO_STRING && m->info.is_variable_string) || m->info.type_class == H5TURBO_VLEN)
            return 1;
    }
    return 0;
}

/* The base types of the sequence members of the compound dt (described as t), into
   bases[k] for member k: an array of t->n_members in R_alloc memory, or NULL (C) with
   c->code set. */
static tnode *describe_member_bases(call_t *c, const h5turbo_datatype *dt, const tnode *t)
{
    size_t count = t->n_members ? t->n_members : 1;
    tnode *bases = (tnode *) R_alloc(count, sizeof(tnode));
    memset(bases, 0, count * sizeof(tnode));
    for (size_t k = 0; k < t->n_members; k++) {
        if (t->members[k].info.type_class != H5TURBO_VLEN) continue;
        h5turbo_datatype *mt = NULL;
        int rc = h5turbo_datatype_member(dt, k, NULL, NULL, &mt);
        if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); return NULL; }
        rc = describe_base(c, mt, &bases[k]);
        h5turbo_datatype_close(mt);
        if (rc != H5TURBO_OK) return NULL;
    }
    return bases;
}

/* Each member's column for s->n elements: a character vector for strings, a list for
   sequences, else the values' bytes (converted once every block is in). */
static SEXP member_columns(call_t *c, const tnode *t, R_xlen_t n)
{
    SEXP cols = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t) t->n_members));
    for (size_t k = 0; k < t->n_members; k++) {
        const tnode *m = &t->members[k];
        if (m->info.type_class == H5TURBO_STRING || m->info.type_class == H5TURBO_VLEN) {
            SET_VECTOR_ELT(cols, (R_xlen_t) k, Rf_allocVector(m->info.type_class == H5TURBO_STRING ? STRSXP : VECSXP, n));
            continue;
        }
        if (m->info.size == 0) { UNPROTECT(1); return call_fail_null(c, H5TURBO_E_FORMAT, "member of size 0"); }
        if ((double) n * (double) m->info.size > (double) R_XLEN_T_MAX) {
            UNPROTECT(1);
            return call_fail_null(c, H5TURBO_E_INVALID, "selection too large for an R vector");
        }
        SET_VECTOR_ELT(cols, (R_xlen_t) k, Rf_allocVector(RAWSXP, n * (R_xlen_t) m->info.size));
    }
    UNPROTECT(1);
    return cols;
}

/* One block's columns (c->columns, `rows` of them) into cols from element at on. */
static int take_columns(call_t *c, const tnode *t, const tnode *bases, SEXP cols, R_xlen_t at, size_t rows,
                        int flags, int *overflow)
{
    for (size_t k = 0; k < t->n_members; k++) {
        const tnode *m = &t->members[k];
        SEXP col = VECTOR_ELT(cols, (R_xlen_t) k);
        int rc;
        switch (m->info.type_class) {
        case H5TURBO_STRING:
            rc = h5turbo_columns_member_strings(c->columns, k, &c->strings, &c->n_strings);
            if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
            if (c->n_strings != rows) return call_fail(c, H5TURBO_E_INTERNAL, "a string column of the wrong length");
            take_strings(c, col, at, m->info.is_utf8);
            break;
        case H5TURBO_VLEN:
            rc = h5turbo_columns_member_sequences(c->columns, k, &c->seqs, &c->n_seqs);
            if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
            if (c->n_seqs != rows) return call_fail(c, H5TURBO_E_INTERNAL, "a sequence column of the wrong length");
            if (take_sequences(c, &bases[k], col, at, flags, overflow) < 0) return c->code;
            break;
        default:
            rc = h5turbo_columns_member(c->columns, k, RAW(col) + (size_t) at * m->info.size, rows * m->info.size);
            if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
        }
    }
    return H5TURBO_OK;
}

/* The filled columns as the compound's R value: a named list, numbers converted,
   sequence columns marked for the R side. */
static SEXP finish_columns(call_t *c, const tnode *t, SEXP cols, R_xlen_t n, int flags, int *overflow)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t) t->n_members));
    SEXP names = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t) t->n_members));
    for (size_t k = 0; k < t->n_members; k++) {
        tnode m = t->members[k];
        m.offset = 0;   /* a column: its values packed */
        SEXP col = VECTOR_ELT(cols, (R_xlen_t) k);
        if (m.info.type_class == H5TURBO_VLEN) {
            /* ragged values: a list column, marked so that R keeps it one */
            Rf_setAttrib(col, Rf_install("h5turbo_sequences"), Rf_ScalarLogical(1));
        } else if (m.info.type_class != H5TURBO_STRING) {
            col = convert_elements(c, &m, RAW(col), n, m.info.size, 0, flags, overflow);
            if (col == NULL) { UNPROTECT(2); return NULL; }
            mark_array_member(col, &m);
        }
        SET_VECTOR_ELT(out, (R_xlen_t) k, col);
        SET_STRING_ELT(names, (R_xlen_t) k, Rf_mkCharCE(m.name, CE_UTF8));
    }
    Rf_setAttrib(out, R_NamesSymbol, names);
    UNPROTECT(2);
    return out;
}

/* A compound dataset's selection read into columns, once per block. */
static SEXP read_members(call_t *c, const tnode *t, const selection_t *s, int rank, int threads, int flags,
                         int *overflow)
{
    h5turbo_datatype *dt = NULL;
    int rc = h5turbo_dataset_datatype(c->obj, &dt);
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    tnode *bases = describe_member_bases(c, dt, t);
    h5turbo_datatype_close(dt);
    if (bases == NULL) return NULL;
    SEXP cols = member_columns(c, t, s->n);
    if (cols == NULL) return NULL;
    PROTECT(cols);
    R_xlen_t at = 0;
    for (int b = 0; b < s->n_blocks; b++) {
        const uint64_t *st, *ct, *sd;
        block_args(s, b, rank, &st, &ct, &sd);
        if (rank > 0 && block_elements(s, b, rank) == 0) continue;
        size_t rows = 0;
        rc = h5turbo_dataset_read_columns(c->obj, st, ct, sd, &c->columns, threads);
        if (rc == H5TURBO_OK) rc = h5turbo_columns_rows(c->columns, &rows);
        if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); UNPROTECT(1); return NULL; }
        if (rows > (size_t) (s->n - at)) {
            call_fail(c, H5TURBO_E_INTERNAL, "more rows than selected");
            UNPROTECT(1);
            return NULL;
        }
        if (take_columns(c, t, bases, cols, at, rows, flags, overflow)) { UNPROTECT(1); return NULL; }
        call_free_columns(c);
        at += (R_xlen_t) rows;
    }
    SEXP out = finish_columns(c, t, cols, s->n, flags, overflow);
    UNPROTECT(1);
    return out;
}

/* The selection of the dataset as an R value (R's NULL for a null dataspace), or
   NULL (C) with c->code set. */
static SEXP read_dataset(call_t *c, SEXP path, SEXP name, SEXP blocks, int threads, int flags)
{
    int rank = 0, overflow = 0;
    uint64_t dims[MAX_RANK];
    tnode t;
    selection_t s;
    memset(&s, 0, sizeof s);
    if (open_file(c, path) || open_object(c, name) || dataset_shape(c, &rank, dims)) return NULL;
    if (rank < 0) return R_NilValue;   /* null dataspace */
    if (dataset_type(c, &t) || parse_blocks(c, blocks, rank, dims, &s)) return NULL;

    SEXP out;
    if (t.info.type_class == H5TURBO_REFERENCE)   /* rhdf5 gives H5Ref objects */
        return call_fail_null(c, H5TURBO_E_UNSUPPORTED, "references are not read in R (read the objects they point to by path)");
    if (t.info.type_class == H5TURBO_STRING) {
        out = read_strings_selection(c, &s, rank, threads, t.info.is_utf8);
        if (out == NULL) return NULL;
        PROTECT(out);
    } else if (t.info.type_class == H5TURBO_VLEN) {
        out = read_sequences_selection(c, &s, rank, threads, flags, &overflow);
        if (out == NULL) return NULL;
        PROTECT(out);
    } else if (t.info.type_class == H5TURBO_COMPOUND && needs_columns(&t)) {
        out = read_members(c, &t, &s, rank, threads, flags, &overflow);
        if (out == NULL) return NULL;
        PROTECT(out);
    } else {
        SEXPTYPE direct = direct_type(&t, flags);
        if (t.info.size == 0) return call_fail_null(c, H5TURBO_E_FORMAT, "datatype of size 0");
        if ((double) s.n * (double) t.info.size > (double) R_XLEN_T_MAX)
            return call_fail_null(c, H5TURBO_E_INVALID, "selection too large for an R vector");
        if (direct != NILSXP) {
            out = PROTECT(Rf_allocVector(direct, s.n));
            if (read_selection(c, &s, rank, threads, vector_data(out), t.info.size)) { UNPROTECT(1); return NULL; }
        } else {
            SEXP raw = PROTECT(Rf_allocVector(RAWSXP, s.n * (R_xlen_t) t.info.size));
            if (read_selection(c, &s, rank, threads, RAW(raw), t.info.size)) { UNPROTECT(1); return NULL; }
            out = convert_elements(c, &t, RAW(raw), s.n, t.info.size, 0, flags, &overflow);
            UNPROTECT(1);
            if (out == NULL) return NULL;
            PROTECT(out);
        }
        if (t.info.type_class == H5TURBO_INTEGER && TYPEOF(out) == INTSXP && stored_as_logical(c)) {
            out = as_logical(out, t.info.size);
            UNPROTECT(1);
            PROTECT(out);
        }
    }
    if (t.info.type_class == H5TURBO_VLEN) {
        /* the list itself is the array; R's side keeps it a list (not a data.frame) */
        set_list_dims(out, s.total, rank);
        Rf_setAttrib(out, Rf_install("h5turbo_sequences"), Rf_ScalarLogical(1));
    } else {
        set_dims(out, s.total, rank, s.n);
    }
    mark_overflow(out, overflow);
    UNPROTECT(1);
    return out;
}

SEXP C_read(SEXP path, SEXP name, SEXP blocks, SEXP threads, SEXP flags)
{
    CALL_BODY(read_dataset, path, name, blocks, threads_arg(threads), Rf_asInteger(flags) & CONV_DOUBLE64);
}

/* ---- attributes ---- */

/* An attribute of variable-length sequences (a list, one vector per element) or a
   compound one with variable-length members (read into columns); n elements of dt,
   described as t. */
static SEXP read_vlen_attribute(call_t *c, const h5turbo_datatype *dt, const tnode *t, R_xlen_t n, int flags,
                                int *overflow)
{
    if (t->info.type_class == H5TURBO_VLEN) {
        tnode bt;
        if (describe_base(c, dt, &bt)) return NULL;
        int rc = h5turbo_attribute_read_sequences(c->attr, &c->seqs, &c->n_seqs);
        if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
        if ((R_xlen_t) c->n_seqs != n) return call_fail_null(c, H5TURBO_E_INTERNAL, "sequence count differs from the shape");
        SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
        R_xlen_t done = take_sequences(c, &bt, out, 0, flags, overflow);
        UNPROTECT(1);
        return done < 0 ? NULL : out;
    }
    tnode *bases = describe_member_bases(c, dt, t);
    if (bases == NULL) return NULL;
    SEXP cols = member_columns(c, t, n);
    if (cols == NULL) return NULL;
    PROTECT(cols);
    size_t rows = 0;
    int rc = h5turbo_attribute_read_columns(c->attr, &c->columns);
    if (rc == H5TURBO_OK) rc = h5turbo_columns_rows(c->columns, &rows);
    if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); UNPROTECT(1); return NULL; }
    if ((R_xlen_t) rows != n) { call_fail(c, H5TURBO_E_INTERNAL, "row count differs from the shape"); UNPROTECT(1); return NULL; }
    if (take_columns(c, t, bases, cols, 0, rows, flags, overflow)) { UNPROTECT(1); return NULL; }
    call_free_columns(c);
    SEXP out = finish_columns(c, t, cols, n, flags, overflow);
    UNPROTECT(1);
    return out;
}

/* flags: CONV_U1_INTEGER (attributes' 8-bit unsigned values are integers, as rhdf5
   gives them), with CONV_DOUBLE64 when asked */
static SEXP read_one_attribute(call_t *c, const char *name, int flags)
{
    int rank = 0, overflow = 0;
    uint64_t dims[MAX_RANK];
    h5turbo_datatype *dt = NULL;
    tnode t;
    memset(&t, 0, sizeof t);
    int rc = h5turbo_attribute_open(c->obj, name, &c->attr);
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    rc = h5turbo_attribute_rank(c->attr, &rank);
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    if (rank > MAX_RANK) return call_fail_null(c, H5TURBO_E_UNSUPPORTED, "more than 32 dimensions");
    if (rank < 0) return R_NilValue;
    if (rank > 0 && (rc = h5turbo_attribute_shape(c->attr, dims, rank)) != H5TURBO_OK)
        return call_fail_null(c, rc, NULL);
    double n = 1;
    for (int k = 0; k < rank; k++) n *= (double) dims[k];
    if ((rc = h5turbo_attribute_datatype(c->attr, &dt)) != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    rc = describe_type(c, dt, &t, 0);
    if (rc == H5TURBO_OK && (t.info.type_class == H5TURBO_VLEN ||
                             (t.info.type_class == H5TURBO_COMPOUND && needs_columns(&t)))) {
        SEXP out = read_vlen_attribute(c, dt, &t, (R_xlen_t) n, flags, &overflow);
        h5turbo_datatype_close(dt);
        if (out == NULL) return NULL;
        PROTECT(out);
        if (t.info.type_class == H5TURBO_VLEN) {
            set_list_dims(out, dims, rank);
            Rf_setAttrib(out, Rf_install("h5turbo_sequences"), Rf_ScalarLogical(1));
        } else {
            set_dims(out, dims, rank, (R_xlen_t) n);
        }
        mark_overflow(out, overflow);
        UNPROTECT(1);
        return out;
    }
    h5turbo_datatype_close(dt);
    if (rc != H5TURBO_OK) return NULL;
    SEXP out;
    if (t.info.type_class == H5TURBO_STRING) {
        rc = h5turbo_attribute_read_strings(c->attr, &c->strings, &c->n_strings);
        if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
        if ((double) c->n_strings != n) return call_fail_null(c, H5TURBO_E_INTERNAL, "string count differs from the shape");
        out = PROTECT(strings_to_r(c->strings, c->n_strings, t.info.is_utf8));
        call_free_strings(c);
    } else {
        if (t.info.size == 0 || n * (double) t.info.size > 1.0e12)
            return call_fail_null(c, H5TURBO_E_FORMAT, "attribute size out of range");
        SEXP raw = PROTECT(Rf_allocVector(RAWSXP, (R_xlen_t) n * (R_xlen_t) t.info.size));
        rc = h5turbo_attribute_read(c->attr, RAW(raw), (size_t) XLENGTH(raw));
        if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); UNPROTECT(1); return NULL; }
        out = convert_elements(c, &t, RAW(raw), (R_xlen_t) n, t.info.size, 0, flags, &overflow);
        UNPROTECT(1);
        if (out == NULL) return NULL;
        PROTECT(out);
    }
    set_dims(out, dims, rank, (R_xlen_t) n);
    mark_overflow(out, overflow);
    UNPROTECT(1);
    return out;
}

/* The failure c holds as the value of one attribute (the R side warns and gives NA, as
   rhdf5 does); c is cleared for the next attribute. */
static SEXP attribute_failure(call_t *c)
{
    SEXP v = failure_value(c->msg, c->code);
    c->code = H5TURBO_OK;
    /* what the failed read held is not the next attribute's */
    call_free_strings(c);
    call_free_sequences(c);
    call_free_columns(c);
    return v;
}

/* A named list in the file's (h5py's) order; an attribute that cannot be read is an
   "h5turbo_failure" value. */
static SEXP read_attributes(call_t *c, SEXP path, SEXP name, int flags)
{
    if (open_file(c, path) || open_object(c, name)) return NULL;
    char **names = NULL;
    size_t n = 0;
    int rc = h5turbo_attribute_names(c->obj, &names, &n);
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    SEXP rnames = PROTECT(strings_to_r(names, n, 1));
    h5turbo_strings_free(names, n);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t) n));
    for (size_t i = 0; i < n; i++) {
        const char *an = r_name_bytes(STRING_ELT(rnames, (R_xlen_t) i));
        SEXP v = read_one_attribute(c, an, flags);
        if (c->attr != NULL) { h5turbo_attribute_close(c->attr); c->attr = NULL; }
        call_free_strings(c);
        SET_VECTOR_ELT(out, (R_xlen_t) i, v != NULL ? v : attribute_failure(c));
    }
    Rf_setAttrib(out, R_NamesSymbol, rnames);
    UNPROTECT(2);
    return out;
}

SEXP C_attributes(SEXP path, SEXP name, SEXP flags)
{
    CALL_BODY(read_attributes, path, name, CONV_U1_INTEGER | (Rf_asInteger(flags) & CONV_DOUBLE64));
}

/* ---- what a dataset is ---- */

/* The R type h5t_read gives for a datatype (rhdf5's rules). */
static const char *r_type(const tnode *t, int logical)
{
    switch (t->info.type_class) {
    case H5TURBO_INTEGER:
    case H5TURBO_BITFIELD:
        if (logical) return "logical";
        if (!t->info.is_signed && t->info.size == 1) return "raw";
        return "integer";
    case H5TURBO_FLOAT: return "double";
    case H5TURBO_STRING: return "character";
    case H5TURBO_ENUM: return "factor";
    case H5TURBO_COMPOUND: return "data.frame";
    case H5TURBO_COMPLEX: return "complex";
    case H5TURBO_OPAQUE: return "raw";
    case H5TURBO_VLEN: return "list";   /* variable-length sequences */
    case H5TURBO_ARRAY: return "array";  /* of its base type, element dimensions first */
    default: return "unsupported";
    }
}

static SEXP dims_to_r(const uint64_t *dims, int rank)
{
    SEXP v = PROTECT(Rf_allocVector(REALSXP, rank > 0 ? rank : 0));
    for (int k = 0; k < rank; k++) REAL(v)[k] = (double) dims[k];
    UNPROTECT(1);
    return v;
}

/* The filter names of the dataset's pipeline (rhdf5's; "filter N" for unknown ids). */
static SEXP filter_names(call_t *c)
{
    uint32_t filter_ids[64];
    size_t n_filters = 0;
    if (h5turbo_dataset_filters(c->obj, filter_ids, 64, &n_filters) != H5TURBO_OK) n_filters = 0;
    if (n_filters > 64) n_filters = 64;
    SEXP filters = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t) n_filters));
    for (size_t i = 0; i < n_filters; i++) {
        const char *fname = h5turbo_filter_name(filter_ids[i]);
        char buf[32];
        if (fname == NULL) { snprintf(buf, sizeof buf, "filter %u", (unsigned) filter_ids[i]); fname = buf; }
        SET_STRING_ELT(filters, (R_xlen_t) i, Rf_mkChar(fname));
    }
    UNPROTECT(1);
    return filters;
}

static SEXP dataset_info(call_t *c, SEXP path, SEXP name)
{
    int rank = 0, chunked = 0;
    uint64_t dims[MAX_RANK], chunk[MAX_RANK];
    tnode t;
    if (open_file(c, path) || open_object(c, name) || dataset_shape(c, &rank, dims) || dataset_type(c, &t))
        return NULL;
    if (rank > 0) {
        int rc = h5turbo_dataset_chunk_shape(c->obj, chunk, rank, &chunked);
        if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    }
    int logical = t.info.type_class == H5TURBO_INTEGER && stored_as_logical(c);
    const char *fields[] = {"rank", "dims", "chunk", "dclass", "size", "signed", "rtype", "filters", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, fields));
    SET_VECTOR_ELT(out, 0, Rf_ScalarInteger(rank));
    SET_VECTOR_ELT(out, 1, dims_to_r(dims, rank < 0 ? 0 : rank));
    SET_VECTOR_ELT(out, 2, chunked ? dims_to_r(chunk, rank) : R_NilValue);
    SET_VECTOR_ELT(out, 3, Rf_mkString(type_class_name(t.info.type_class)));
    SET_VECTOR_ELT(out, 4, Rf_ScalarReal((double) t.info.size));
    SET_VECTOR_ELT(out, 5, Rf_ScalarLogical(t.info.is_signed != 0));
    SET_VECTOR_ELT(out, 6, Rf_mkString(r_type(&t, logical)));
    SET_VECTOR_ELT(out, 7, filter_names(c));
    UNPROTECT(1);
    return out;
}

SEXP C_info(SEXP path, SEXP name)
{
    CALL_BODY(dataset_info, path, name);
}

/* ---- reductions ---- */

static SEXP reduce_dataset(call_t *c, SEXP path, SEXP name, SEXP op, SEXP axis, SEXP ddof, SEXP threads,
                           SEXP out_len)
{
    if (open_file(c, path) || open_object(c, name)) return NULL;
    double len = Rf_asReal(out_len);
    if (!(len >= 0) || len > (double) R_XLEN_T_MAX) return call_fail_null(c, H5TURBO_E_INVALID, "bad output length");
    SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t) len));
    int rc = h5turbo_dataset_reduce(c->obj, Rf_asInteger(op), Rf_asInteger(axis), Rf_asInteger(ddof), REAL(out),
                                    (size_t) len, threads_arg(threads));
    UNPROTECT(1);
    return rc == H5TURBO_OK ? out : call_fail_null(c, rc, NULL);
}

SEXP C_reduce(SEXP path, SEXP name, SEXP op, SEXP axis, SEXP ddof, SEXP threads, SEXP out_len)
{
    CALL_BODY(reduce_dataset, path, name, op, axis, ddof, threads, out_len);
}

/* Means from exact sums as base R's colMeans and rowMeans give them: the sum divided
   by the count in long double (R's LDOUBLE), then rounded to double. That differs from
   dividing in double (the native mean) where the long double quotient is rounded to a
   point half way between two doubles (about one mean in 4000 over thousands of
   values). sums: doubles holding integers (exact below 2^53). */
SEXP C_mean_ld(SEXP sums, SEXP count)
{
    if (TYPEOF(sums) != REALSXP) Rf_error("h5turbo: sums must be doubles");
    long double n = (long double) Rf_asReal(count);
    R_xlen_t len = XLENGTH(sums);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, len));
    const double *s = REAL(sums);
    double *r = REAL(out);
    for (R_xlen_t i = 0; i < len; i++) r[i] = (double) ((long double) s[i] / n);
    UNPROTECT(1);
    return out;
}

/* ---- dimension scales (what HDF5Array's h5readDimnames reads) ---- */

/* The attribute `name` of c->obj as read_one_attribute gives it, or R NULL when the
   object has no such attribute. */
static SEXP optional_attribute(call_t *c, const char *name)
{
    h5turbo_attribute *probe = NULL;
    int rc = h5turbo_attribute_open(c->obj, name, &probe);
    if (rc == H5TURBO_E_NOT_FOUND) return R_NilValue;
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    h5turbo_attribute_close(probe);
    SEXP v = read_one_attribute(c, name, CONV_U1_INTEGER);
    if (c->attr != NULL) { h5turbo_attribute_close(c->attr); c->attr = NULL; }
    return v;
}

/* list(scales, names, labels): per HDF5 dimension (HDF5's order), the paths of the
   attached scales and each scale's NAME attribute (NULL where it has none); the
   dataset's DIMENSION_LABELS attribute (NULL when absent). */
static SEXP dimension_scales(call_t *c, SEXP path, SEXP name)
{
    int rank = 0;
    uint64_t dims[MAX_RANK];
    if (open_file(c, path) || open_object(c, name) || dataset_shape(c, &rank, dims)) return NULL;
    if (rank < 0) rank = 0;
    SEXP scales = PROTECT(Rf_allocVector(VECSXP, rank));
    for (int d = 0; d < rank; d++) {
        int rc = h5turbo_dataset_dimension_scales(c->obj, (size_t) d, &c->strings, &c->n_strings);
        if (rc != H5TURBO_OK) { call_fail(c, rc, NULL); UNPROTECT(1); return NULL; }
        SET_VECTOR_ELT(scales, d, strings_to_r(c->strings, c->n_strings, 1));
        call_free_strings(c);
    }
    SEXP labels = optional_attribute(c, "DIMENSION_LABELS");
    if (labels == NULL) { UNPROTECT(1); return NULL; }
    PROTECT(labels);
    h5turbo_object_close(c->obj);
    c->obj = NULL;
    SEXP names = PROTECT(Rf_allocVector(VECSXP, rank));
    for (int d = 0; d < rank; d++) {
        SEXP paths = VECTOR_ELT(scales, d);
        SEXP per_dim = PROTECT(Rf_allocVector(VECSXP, XLENGTH(paths)));
        SET_VECTOR_ELT(names, d, per_dim);
        UNPROTECT(1);
        for (R_xlen_t i = 0; i < XLENGTH(paths); i++) {
            SEXP scale_path = PROTECT(Rf_ScalarString(STRING_ELT(paths, i)));
            SEXP v = open_object(c, scale_path) ? NULL : optional_attribute(c, "NAME");
            UNPROTECT(1);
            if (v == NULL) { UNPROTECT(3); return NULL; }
            SET_VECTOR_ELT(per_dim, i, v);
            h5turbo_object_close(c->obj);
            c->obj = NULL;
        }
    }
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
    SET_VECTOR_ELT(out, 0, scales);
    SET_VECTOR_ELT(out, 1, names);
    SET_VECTOR_ELT(out, 2, labels);
    SEXP out_names = PROTECT(Rf_allocVector(STRSXP, 3));
    SET_STRING_ELT(out_names, 0, Rf_mkChar("scales"));
    SET_STRING_ELT(out_names, 1, Rf_mkChar("names"));
    SET_STRING_ELT(out_names, 2, Rf_mkChar("labels"));
    Rf_setAttrib(out, R_NamesSymbol, out_names);
    UNPROTECT(5);
    return out;
}

SEXP C_dimscales(SEXP path, SEXP name)
{
    CALL_BODY(dimension_scales, path, name);
}
