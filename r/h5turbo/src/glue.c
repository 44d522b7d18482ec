/* Call contexts, errors as values, datatype trees and element conversion. */
#include <string.h>
#include <stdio.h>
#include <limits.h>
#include <math.h>
#include <float.h>
#include "glue.h"

static void call_finalizer(SEXP ptr)
{
    call_t *c = (call_t *) R_ExternalPtrAddr(ptr);
    if (c == NULL) return;
    call_end(c);
    free(c);
    R_ClearExternalPtr(ptr);
}

call_t *call_begin(SEXP *holder)
{
    call_t *c = (call_t *) calloc(1, sizeof(call_t));
    if (c == NULL) Rf_error("h5turbo: out of memory");
    *holder = PROTECT(R_MakeExternalPtr(c, R_NilValue, R_NilValue));
    R_RegisterCFinalizerEx(*holder, call_finalizer, TRUE);
    return c;
}

void call_free_strings(call_t *c)
{
    if (c->strings != NULL) h5turbo_strings_free(c->strings, c->n_strings);
    c->strings = NULL;
    c->n_strings = 0;
}

void call_free_sequences(call_t *c)
{
    if (c->seqs != NULL) h5turbo_sequences_free(c->seqs, c->n_seqs);
    c->seqs = NULL;
    c->n_seqs = 0;
}

void call_free_columns(call_t *c)
{
    h5turbo_columns_free(c->columns);
    c->columns = NULL;
}

void call_end(call_t *c)
{
    call_free_strings(c);
    call_free_sequences(c);
    call_free_columns(c);
    if (c->attr != NULL) h5turbo_attribute_close(c->attr);
    if (c->obj != NULL) h5turbo_object_close(c->obj);
    if (c->file != NULL) h5turbo_file_close(c->file);
    c->attr = NULL;
    c->obj = NULL;
    c->file = NULL;
}

int call_fail(call_t *c, int code, const char *msg)
{
    if (msg == NULL) {
        const char *last = h5turbo_last_error();
        msg = (last != NULL && last[0] != '\0') ? last : "unknown error";
    }
    if (c->code == H5TURBO_OK) {   /* the first failure is the cause */
        c->code = code;
        snprintf(c->msg, MSG_MAX, "%s", msg);
    }
    return code;
}

SEXP call_fail_null(call_t *c, int code, const char *msg)
{
    call_fail(c, code, msg);
    return NULL;
}

SEXP failure_value(const char *msg, int code)
{
    SEXP out = PROTECT(Rf_mkString(msg));
    Rf_setAttrib(out, Rf_install("code"), Rf_ScalarInteger(code));
    Rf_setAttrib(out, R_ClassSymbol, Rf_mkString("h5turbo_failure"));
    UNPROTECT(1);
    return out;
}

static SEXP call_failure(call_t *c)
{
    call_end(c);
    return failure_value(c->msg, c->code);
}

SEXP call_return(call_t *c, SEXP out)
{
    if (out == NULL) out = call_failure(c);
    else call_end(c);   /* closes library handles only: no R allocation, out stays safe */
    UNPROTECT(1);       /* call_begin's holder */
    return out;
}

int open_file(call_t *c, SEXP path)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
        return call_fail(c, H5TURBO_E_INVALID, "file must be one path");
    const char *p = R_ExpandFileName(Rf_translateCharUTF8(STRING_ELT(path, 0)));
    int rc = h5turbo_file_open(p, &c->file);
    return rc == H5TURBO_OK ? rc : call_fail(c, rc, NULL);
}

int open_object(call_t *c, SEXP name)
{
    if (!Rf_isString(name) || XLENGTH(name) != 1 || STRING_ELT(name, 0) == NA_STRING)
        return call_fail(c, H5TURBO_E_INVALID, "name must be one object path");
    int rc = h5turbo_object_open(c->file, r_name_bytes(STRING_ELT(name, 0)), &c->obj);
    return rc == H5TURBO_OK ? rc : call_fail(c, rc, NULL);
}

const char *r_strdup(const char *s)
{
    size_t n = strlen(s);
    char *out = R_alloc(n + 1, 1);
    memcpy(out, s, n + 1);
    return out;
}

const char *type_class_name(int type_class)
{
    static const char *names[] = {"INTEGER", "FLOAT", "STRING", "BITFIELD", "OPAQUE", "COMPOUND",
                                  "REFERENCE", "ENUM", "VLEN", "ARRAY", "TIME", "COMPLEX"};
    return (type_class >= 0 && type_class < 12) ? names[type_class] : "UNKNOWN";
}

/* Nesting deeper than this is refused (a hostile file could nest without end). */
#define MAX_TYPE_DEPTH 32

static int describe_compound(call_t *c, const h5turbo_datatype *dt, tnode *t, int depth)
{
    int rc = h5turbo_datatype_member_count(dt, &t->n_members);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    t->members = (tnode *) R_alloc(t->n_members ? t->n_members : 1, sizeof(tnode));
    memset(t->members, 0, (t->n_members ? t->n_members : 1) * sizeof(tnode));
    for (size_t i = 0; i < t->n_members; i++) {
        const char *name = NULL;
        size_t offset = 0;
        h5turbo_datatype *member = NULL;
        rc = h5turbo_datatype_member(dt, i, &name, &offset, &member);
        if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
        t->members[i].name = r_strdup(name != NULL ? name : "");
        t->members[i].offset = offset;
        rc = describe_type(c, member, &t->members[i], depth + 1);
        h5turbo_datatype_close(member);
        if (rc != H5TURBO_OK) return rc;
        if (offset + t->members[i].info.size > t->info.size)
            return call_fail(c, H5TURBO_E_FORMAT, "compound member lies outside its element");
    }
    return H5TURBO_OK;
}

static int describe_enum(call_t *c, const h5turbo_datatype *dt, tnode *t)
{
    int rc = h5turbo_datatype_enum_count(dt, &t->n_enum);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    size_t n = t->n_enum ? t->n_enum : 1;
    t->enum_names = (const char **) R_alloc(n, sizeof(char *));
    t->enum_values = (int64_t *) R_alloc(n, sizeof(int64_t));
    for (size_t i = 0; i < t->n_enum; i++) {
        const char *name = NULL;
        rc = h5turbo_datatype_enum_member(dt, i, &name, &t->enum_values[i]);
        if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
        t->enum_names[i] = r_strdup(name != NULL ? name : "");
    }
    return H5TURBO_OK;
}

/* An array type: its dimensions and its element type, which must be one R reads from
   fixed bytes (numbers, enums, fixed strings, complex, opaque) and fill the array
   exactly. */
static int describe_array(call_t *c, const h5turbo_datatype *dt, tnode *t, int depth)
{
    int rank = 0;
    int rc = h5turbo_datatype_array_dims(dt, NULL, 0, &rank);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    if (rank < 1 || rank > MAX_RANK) return call_fail(c, H5TURBO_E_UNSUPPORTED, "array type of more than 32 dimensions");
    t->array_dims = (uint64_t *) R_alloc((size_t) rank, sizeof(uint64_t));
    rc = h5turbo_datatype_array_dims(dt, t->array_dims, rank, &t->array_rank);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    double count = 1;
    for (int k = 0; k < rank; k++) {
        if (t->array_dims[k] > (uint64_t) INT_MAX) return call_fail(c, H5TURBO_E_FORMAT, "array type dimension too large");
        count *= (double) t->array_dims[k];
    }
    h5turbo_datatype *base = NULL;
    if ((rc = h5turbo_datatype_base(dt, &base)) != H5TURBO_OK) return call_fail(c, rc, NULL);
    t->base = (tnode *) R_alloc(1, sizeof(tnode));
    memset(t->base, 0, sizeof(tnode));
    rc = describe_type(c, base, t->base, depth + 1);
    h5turbo_datatype_close(base);
    if (rc != H5TURBO_OK) return rc;
    int k = t->base->info.type_class;
    if (k == H5TURBO_COMPOUND || k == H5TURBO_ARRAY || k == H5TURBO_VLEN || k == H5TURBO_REFERENCE ||
        (k == H5TURBO_STRING && t->base->info.is_variable_string))
        return call_fail(c, H5TURBO_E_UNSUPPORTED,
                         "arrays of compounds, arrays, references or variable-length values are not supported by the R package");
    if (count * (double) t->base->info.size != (double) t->info.size)
        return call_fail(c, H5TURBO_E_FORMAT, "array type whose elements do not fill it");
    t->array_count = (size_t) count;
    return H5TURBO_OK;
}

int describe_type(call_t *c, const h5turbo_datatype *dt, tnode *t, int depth)
{
    if (depth > MAX_TYPE_DEPTH) return call_fail(c, H5TURBO_E_UNSUPPORTED, "datatype nested too deeply");
    int rc = h5turbo_datatype_info(dt, &t->info);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    if (t->info.type_class == H5TURBO_COMPOUND) return describe_compound(c, dt, t, depth);
    if (t->info.type_class == H5TURBO_ENUM) return describe_enum(c, dt, t);
    if (t->info.type_class == H5TURBO_ARRAY) return describe_array(c, dt, t, depth);
    return H5TURBO_OK;
}

/* ---- element conversion ---- */

static uint64_t load_unsigned(const unsigned char *p, size_t size)
{
    switch (size) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* The same bits sign-extended from size bytes (two's complement), without the
   implementation-defined conversion of a large unsigned value to int64_t. */
static int64_t load_signed(const unsigned char *p, size_t size)
{
    uint64_t u = load_unsigned(p, size);
    uint64_t sign = (uint64_t) 1 << (8 * size - 1);
    if (!(u & sign)) return (int64_t) u;
    return -(int64_t) (~u & (sign - 1)) - 1;
}

static double half_to_double(uint16_t h)
{
    int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double v;
    if (exponent == 0) v = ldexp((double) mantissa, -24);
    else if (exponent == 31) v = mantissa ? NAN : INFINITY;
    else v = ldexp((double) (mantissa | 0x400), exponent - 25);
    return sign ? -v : v;
}

/* Element i of a buffer of elements `stride` bytes apart, at `off` within each. */
static const unsigned char *element(const unsigned char *buf, R_xlen_t i, size_t stride, size_t off)
{
    return buf + (size_t) i * stride + off;
}

static int integer_size_ok(size_t size)
{
    return size == 1 || size == 2 || size == 4 || size == 8;
}

/* Whether a double holds the magnitude u only rounded: significant bits below the
   53 a double keeps. */
static int rounded_in_double(uint64_t u)
{
    if (u < (1ull << 53)) return 0;
    int shift = 64 - __builtin_clzll(u) - 53;
    return (u & ((1ull << shift) - 1)) != 0;
}

static SEXP convert_integers(const tnode *t, const unsigned char *buf, R_xlen_t n, size_t stride,
                             size_t off, int flags, int *overflow)
{
    size_t size = t->info.size;
    int is_signed = t->info.is_signed;
    if (!is_signed && size == 1 && !(flags & CONV_U1_INTEGER)) {
        SEXP out = PROTECT(Rf_allocVector(RAWSXP, n));
        Rbyte *r = RAW(out);
        for (R_xlen_t i = 0; i < n; i++) r[i] = *element(buf, i, stride, off);
        UNPROTECT(1);
        return out;
    }
    int wide = size == 8 || (size == 4 && !is_signed);
    if (wide && (flags & CONV_DOUBLE64)) {
        SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
        double *r = REAL(out);
        for (R_xlen_t i = 0; i < n; i++) {
            const unsigned char *p = element(buf, i, stride, off);
            if (is_signed) {
                int64_t v = load_signed(p, size);
                r[i] = (double) v;
                if (rounded_in_double(v < 0 ? 0 - (uint64_t) v : (uint64_t) v)) *overflow |= LOST_PRECISION;
            } else {
                uint64_t v = load_unsigned(p, size);
                r[i] = (double) v;
                if (rounded_in_double(v)) *overflow |= LOST_PRECISION;
            }
        }
        UNPROTECT(1);
        return out;
    }
    SEXP out = PROTECT(Rf_allocVector(INTSXP, n));
    int *r = INTEGER(out);
    for (R_xlen_t i = 0; i < n; i++) {
        const unsigned char *p = element(buf, i, stride, off);
        if (is_signed) {
            int64_t v = load_signed(p, size);
            if (v > INT_MAX || v <= INT_MIN) {
                r[i] = NA_INTEGER;
                if (v != INT_MIN || size == 8) *overflow |= LOST_OVERFLOW;
            } else {
                r[i] = (int) v;
            }
        } else {
            uint64_t v = load_unsigned(p, size);
            if (v > (uint64_t) INT_MAX) { r[i] = NA_INTEGER; *overflow |= LOST_OVERFLOW; }
            else r[i] = (int) v;
        }
    }
    UNPROTECT(1);
    return out;
}

/* Floats of 16 bytes: the C library reads them as numpy's long double of the platform
   it runs on (x87 80-bit extended in 16 bytes on x86, IEEE binary128 on 64-bit ARM
   Linux), which is C's long double here when it has 16 bytes and one of those
   precisions. Converted to double as libhdf5 converts them for rhdf5: for the native
   byte order its hard H5T_NATIVE_LDOUBLE -> H5T_NATIVE_DOUBLE conversion, a C cast
   (round to nearest, ties to even; below double's range 0 or a subnormal) except that
   any value past the largest double is +-Inf; for the other byte order
   ldouble_to_double_soft. */
#if defined(LDBL_MANT_DIG) && (LDBL_MANT_DIG == 64 || LDBL_MANT_DIG == 113)
#define HAVE_LDOUBLE16 (sizeof(long double) == 16)
#else
#define HAVE_LDOUBLE16 0
#endif

/* A long double stored in another layout than the native one (the other byte order)
   libhdf5 converts with its soft conversion (H5T__conv_f_f), not a C cast: a tie is
   rounded away from zero (the first bit cut off set: round up), and a value that would
   round up into infinity stays the largest double. */
static double ldouble_to_double_soft(long double v)
{
    double d = (double) v;
    if (isnan(v) || isinf(v)) return d;
    long double av = fabsl(v);
    if (av >= 0x1p1024L) return d;                           /* out of range: +-Inf */
    if (av > (long double) DBL_MAX) return v < 0 ? -DBL_MAX : DBL_MAX;
    if ((long double) d == v) return d;
    double other = nextafter(d, (long double) d < v ? INFINITY : -INFINITY);
    /* both differences are exact in long double (the values are close) */
    if (fabsl(v - (long double) d) == fabsl((long double) other - v) && fabs(other) > fabs(d)) return other;
    return d;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static SEXP convert_floats(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                           size_t stride, size_t off)
{
    size_t size = t->info.size;
    if (size != 2 && size != 4 && size != 8 && !(size == 16 && HAVE_LDOUBLE16))
        return call_fail_null(c, H5TURBO_E_UNSUPPORTED,
                              size == 16 ? "16-byte floats where C's long double is not numpy's"
                                         : "floating-point size other than 2, 4, 8 or 16 bytes");
    int soft = size == 16 && t->info.byte_order == (host_is_little_endian() ? H5TURBO_ORDER_BE : H5TURBO_ORDER_LE);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *r = REAL(out);
    for (R_xlen_t i = 0; i < n; i++) {
        const unsigned char *p = element(buf, i, stride, off);
        if (size == 8) { memcpy(&r[i], p, 8); }
        else if (size == 4) { float v; memcpy(&v, p, 4); r[i] = v; }
        else if (size == 16) {
            long double v;
            memcpy(&v, p, sizeof v);
            if (soft) r[i] = ldouble_to_double_soft(v);
            else if (fabsl(v) > (long double) DBL_MAX && !isnan(v)) r[i] = v < 0 ? -INFINITY : INFINITY;
            else r[i] = (double) v;
        }
        else { uint16_t h; memcpy(&h, p, 2); r[i] = half_to_double(h); }
    }
    UNPROTECT(1);
    return out;
}

/* rhdf5 reads an enum as a factor whose levels are the members in the file's order. */
static SEXP convert_enum(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                         size_t stride, size_t off)
{
    size_t size = t->info.size;
    if (!integer_size_ok(size))
        return call_fail_null(c, H5TURBO_E_UNSUPPORTED, "enum base type of unusual size");
    SEXP out = PROTECT(Rf_allocVector(INTSXP, n));
    int *r = INTEGER(out);
    for (R_xlen_t i = 0; i < n; i++) {
        const unsigned char *p = element(buf, i, stride, off);
        int64_t v = t->info.is_signed ? load_signed(p, size) : (int64_t) load_unsigned(p, size);
        r[i] = NA_INTEGER;
        for (size_t k = 0; k < t->n_enum; k++) {
            if (t->enum_values[k] == v) { r[i] = (int) k + 1; break; }
        }
    }
    SEXP levels = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t) t->n_enum));
    for (size_t k = 0; k < t->n_enum; k++)
        SET_STRING_ELT(levels, (R_xlen_t) k, Rf_mkCharCE(t->enum_names[k], CE_UTF8));
    Rf_setAttrib(out, R_LevelsSymbol, levels);
    Rf_setAttrib(out, R_ClassSymbol, Rf_mkString("factor"));
    UNPROTECT(2);
    return out;
}

/* Fixed-length strings inside a compound: the bytes up to the first NUL. */
static SEXP convert_fixed_strings(const tnode *t, const unsigned char *buf, R_xlen_t n,
                                  size_t stride, size_t off)
{
    SEXP out = PROTECT(Rf_allocVector(STRSXP, n));
    cetype_t enc = t->info.is_utf8 ? CE_UTF8 : CE_NATIVE;
    for (R_xlen_t i = 0; i < n; i++) {
        const char *p = (const char *) element(buf, i, stride, off);
        size_t len = 0;
        while (len < t->info.size && p[len] != '\0') len++;
        SET_STRING_ELT(out, i, Rf_mkCharLenCE(p, (int) len, enc));
    }
    UNPROTECT(1);
    return out;
}

static SEXP convert_complex(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                            size_t stride, size_t off)
{
    if (t->info.size != 16 && t->info.size != 8)
        return call_fail_null(c, H5TURBO_E_UNSUPPORTED, "complex numbers other than 2 x float32 or 2 x float64");
    SEXP out = PROTECT(Rf_allocVector(CPLXSXP, n));
    Rcomplex *r = COMPLEX(out);
    for (R_xlen_t i = 0; i < n; i++) {
        const unsigned char *p = element(buf, i, stride, off);
        if (t->info.size == 16) {
            memcpy(&r[i].r, p, 8);
            memcpy(&r[i].i, p + 8, 8);
        } else {
            float re, im;
            memcpy(&re, p, 4);
            memcpy(&im, p + 4, 4);
            r[i].r = re;
            r[i].i = im;
        }
    }
    UNPROTECT(1);
    return out;
}

void mark_array_member(SEXP col, const tnode *m)
{
    if (m->info.type_class == H5TURBO_ARRAY) Rf_setAttrib(col, Rf_install("h5turbo_array"), Rf_ScalarLogical(1));
}

static SEXP convert_compound(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                             size_t stride, size_t off, int flags, int *overflow)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t) t->n_members));
    SEXP names = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t) t->n_members));
    for (size_t k = 0; k < t->n_members; k++) {
        const tnode *m = &t->members[k];
        SEXP col = convert_elements(c, m, buf, n, stride, off, flags, overflow);
        if (col == NULL) { UNPROTECT(2); return NULL; }
        mark_array_member(col, m);
        SET_VECTOR_ELT(out, (R_xlen_t) k, col);
        SET_STRING_ELT(names, (R_xlen_t) k, Rf_mkCharCE(m->name, CE_UTF8));
    }
    Rf_setAttrib(out, R_NamesSymbol, names);
    UNPROTECT(2);
    return out;
}

/* n values of an array type: each element's values side by side (an R array whose
   first dimensions are the array type's, reversed as every HDF5 shape is), marked with
   ELEMENT_DIMS for set_dims. */
static SEXP convert_arrays(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                           size_t stride, size_t off, int flags, int *overflow)
{
    size_t bytes = t->info.size;
    if ((double) n * (double) t->array_count > (double) R_XLEN_T_MAX)
        return call_fail_null(c, H5TURBO_E_INVALID, "selection too large for an R vector");
    unsigned char *packed = (unsigned char *) R_alloc((size_t) n * bytes + 1, 1);
    for (R_xlen_t i = 0; i < n; i++) memcpy(packed + (size_t) i * bytes, element(buf, i, stride, off), bytes);
    /* rhdf5 gives an array type's 8-bit unsigned values as integers (a plain u1 dataset
       as raw) */
    SEXP out = convert_elements(c, t->base, packed, n * (R_xlen_t) t->array_count, t->base->info.size, 0,
                                flags | CONV_U1_INTEGER, overflow);
    if (out == NULL) return NULL;
    PROTECT(out);
    SEXP dims = PROTECT(Rf_allocVector(INTSXP, t->array_rank));
    for (int k = 0; k < t->array_rank; k++) INTEGER(dims)[k] = (int) t->array_dims[t->array_rank - 1 - k];
    Rf_setAttrib(out, Rf_install(ELEMENT_DIMS), dims);
    UNPROTECT(2);
    return out;
}

SEXP convert_elements(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                      size_t stride, size_t extra_offset, int flags, int *overflow)
{
    size_t off = t->offset + extra_offset;
    switch (t->info.type_class) {
    case H5TURBO_INTEGER:
    case H5TURBO_BITFIELD:
        if (!integer_size_ok(t->info.size)) break;
        return convert_integers(t, buf, n, stride, off, flags, overflow);
    case H5TURBO_FLOAT:
        return convert_floats(c, t, buf, n, stride, off);
    case H5TURBO_ENUM:
        return convert_enum(c, t, buf, n, stride, off);
    case H5TURBO_COMPLEX:
        return convert_complex(c, t, buf, n, stride, off);
    case H5TURBO_COMPOUND:
        return convert_compound(c, t, buf, n, stride, off, flags, overflow);
    case H5TURBO_ARRAY:
        return convert_arrays(c, t, buf, n, stride, off, flags, overflow);
    case H5TURBO_STRING:
        if (t->info.is_variable_string)
        return call_fail_null(c, H5TURBO_E_UNSUPPORTED, "variable-length strings inside a compound");
        return convert_fixed_strings(t, buf, n, stride, off);
    case H5TURBO_OPAQUE: {
        SEXP out = PROTECT(Rf_allocVector(RAWSXP, n * (R_xlen_t) t->info.size));
        for (R_xlen_t i = 0; i < n; i++)
            memcpy(RAW(out) + (size_t) i * t->info.size, element(buf, i, stride, off), t->info.size);
        UNPROTECT(1);
        return out;
    }
    default:
        break;
    }
    char msg[200];
    static const char *classes[] = {"integer", "float", "string", "bitfield", "opaque", "compound",
                                    "reference", "enum", "variable-length sequence", "array",
                                    "time", "complex"};
    int k = t->info.type_class;
    snprintf(msg, sizeof msg, "datatype not supported by the R package: %s of %zu bytes",
             (k >= 0 && k < 12) ? classes[k] : "unknown class", t->info.size);
    return call_fail_null(c, H5TURBO_E_UNSUPPORTED, msg);
}

/* A name inside the file as the bytes libhdf5 takes: an unmarked (native) string as it
   is, so that a Latin-1 name h5t_ls listed is found again; a marked one in UTF-8. */
const char *r_name_bytes(SEXP s)
{
    return Rf_getCharCE(s) == CE_NATIVE ? CHAR(s) : Rf_translateCharUTF8(s);
}

/* Whether `s` is valid UTF-8 (a name an old program wrote in Latin-1 is not). */
static int valid_utf8(const unsigned char *s)
{
    while (*s) {
        int extra = *s < 0x80 ? 0 : (*s >> 5) == 0x6 ? 1 : (*s >> 4) == 0xe ? 2 : (*s >> 3) == 0x1e ? 3 : -1;
        if (extra < 0) return 0;
        for (int k = 1; k <= extra; k++)
            if ((s[k] & 0xc0) != 0x80) return 0;
        s += extra + 1;
    }
    return 1;
}

/* UTF-8 where the bytes are UTF-8; other bytes (a Latin-1 name) unmarked, as rhdf5
   gives every name, so that they compare and print as rhdf5's do. */
cetype_t name_encoding(const char *s)
{
    return valid_utf8((const unsigned char *) s) ? CE_UTF8 : CE_NATIVE;
}

SEXP strings_to_r(char **strings, size_t n, int utf8)
{
    SEXP out = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t) n));
    for (size_t i = 0; i < n; i++) {
        if (strings[i] == NULL) SET_STRING_ELT(out, (R_xlen_t) i, NA_STRING);
        else SET_STRING_ELT(out, (R_xlen_t) i, Rf_mkCharCE(strings[i], utf8 ? name_encoding(strings[i]) : CE_NATIVE));
    }
    UNPROTECT(1);
    return out;
}
