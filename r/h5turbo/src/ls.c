/* h5t_ls: the objects below a group, depth first, members sorted by name (byte order),
   as rhdf5::h5ls lists them (it visits by the name index). */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include "glue.h"

typedef struct {
    size_t n, cap;
    const char **group, **name, **otype, **dclass, **dim;
    uint64_t *seen;            /* addresses of the objects listed: each object once */
    size_t n_seen, cap_seen;
} rows_t;

/* Groups already listed (reached again by another hard link) are skipped, as rhdf5's
   h5ls does; soft and external links are not followed. */
static int seen_before(rows_t *r, uint64_t address)
{
    for (size_t i = 0; i < r->n_seen; i++)
        if (r->seen[i] == address) return 1;
    if (r->n_seen == r->cap_seen) {
        size_t cap = r->cap_seen ? 2 * r->cap_seen : 64;
        uint64_t *bigger = (uint64_t *) R_alloc(cap, sizeof(uint64_t));
        if (r->n_seen) memcpy(bigger, r->seen, r->n_seen * sizeof(uint64_t));
        r->seen = bigger;
        r->cap_seen = cap;
    }
    r->seen[r->n_seen++] = address;
    return 0;
}

static void rows_grow(rows_t *r)
{
    size_t cap = r->cap ? 2 * r->cap : 64;
    const char ***cols[] = {&r->group, &r->name, &r->otype, &r->dclass, &r->dim};
    for (int k = 0; k < 5; k++) {
        const char **bigger = (const char **) R_alloc(cap, sizeof(char *));
        if (r->n) memcpy(bigger, *cols[k], r->n * sizeof(char *));
        *cols[k] = bigger;
    }
    r->cap = cap;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* dclass and dim of a dataset, rhdf5's way: dims reversed, "( 0 )" for a scalar. */
static void describe_dataset(const h5turbo_object *ds, const char **dclass, const char **dim)
{
    h5turbo_datatype *dt = NULL;
    h5turbo_type_info info;
    *dclass = "";
    *dim = "";
    if (h5turbo_dataset_datatype(ds, &dt) == H5TURBO_OK) {
        if (h5turbo_datatype_info(dt, &info) == H5TURBO_OK) *dclass = type_class_name(info.type_class);
        h5turbo_datatype_close(dt);
    }
    int rank = 0;
    uint64_t dims[MAX_RANK];
    if (h5turbo_dataset_rank(ds, &rank) != H5TURBO_OK || rank < 0 || rank > MAX_RANK) return;
    if (rank == 0) { *dim = "( 0 )"; return; }
    if (h5turbo_dataset_shape(ds, dims, rank) != H5TURBO_OK) return;
    char buf[MAX_RANK * 24];
    size_t at = 0;
    for (int k = rank - 1; k >= 0; k--)
        at += (size_t) snprintf(buf + at, sizeof buf - at, "%s%llu", k == rank - 1 ? "" : " x ",
                                (unsigned long long) dims[k]);
    *dim = r_strdup(buf);
}

static char *join_path(const char *group, const char *name)
{
    size_t g = strlen(group), n = strlen(name);
    int slash = !(g > 0 && group[g - 1] == '/');
    char *out = R_alloc(g + n + 2, 1);
    memcpy(out, group, g);
    if (slash) out[g] = '/';
    memcpy(out + g + slash, name, n + 1);
    return out;
}

/* Depth-first listing of `group` (open as obj) into rows; depth counts down. */
static int list_group(call_t *c, h5turbo_object *obj, const char *group, int depth, rows_t *rows, int level)
{
    char **members = NULL;
    size_t n = 0;
    int rc = h5turbo_group_members(obj, &members, &n);
    if (rc != H5TURBO_OK) return call_fail(c, rc, NULL);
    const char **names = (const char **) R_alloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) names[i] = r_strdup(members[i]);
    h5turbo_strings_free(members, n);
    qsort(names, n, sizeof(char *), by_name);
    for (size_t i = 0; i < n; i++) {
        R_CheckUserInterrupt();
        const char *full = join_path(group, names[i]);
        h5turbo_object *child = NULL;
        int kind = -1, link = H5TURBO_LINK_HARD;
        uint64_t address = 0;
        h5turbo_link_kind(obj, names[i], &link);
        if (link != H5TURBO_LINK_HARD) continue;   /* soft and external links: not followed */
        int opened = h5turbo_object_open(c->file, full, &child) == H5TURBO_OK &&
                     h5turbo_object_kind(child, &kind) == H5TURBO_OK;
        /* rhdf5 leaves committed datatypes out (a loop reading each row that is not a
           group reads datasets only) */
        if (opened && kind == H5TURBO_NAMED_DATATYPE) {
            h5turbo_object_close(child);
            continue;
        }
        /* rhdf5 lists a dataset under each of its names, a group only the first time */
        if (opened && kind == H5TURBO_GROUP && h5turbo_object_address(child, &address) == H5TURBO_OK &&
            seen_before(rows, address)) {
            h5turbo_object_close(child);
            continue;
        }
        if (rows->n == rows->cap) rows_grow(rows);
        size_t r = rows->n++;
        rows->group[r] = group;
        rows->name[r] = names[i];
        rows->dclass[r] = "";
        rows->dim[r] = "";
        if (!opened) {            /* a hard link to an object that cannot be read */
            rows->otype[r] = "H5I_BADID";
            h5turbo_object_close(child);
            continue;
        }
        if (kind == H5TURBO_DATASET) {
            rows->otype[r] = "H5I_DATASET";
            describe_dataset(child, &rows->dclass[r], &rows->dim[r]);
        } else if (kind == H5TURBO_GROUP) {
            rows->otype[r] = "H5I_GROUP";
            /* visiting each object once also ends loops; the level cap is a backstop */
            if (depth > 1 && level < 64) {
                rc = list_group(c, child, full, depth - 1, rows, level + 1);
                if (rc != H5TURBO_OK) { h5turbo_object_close(child); return rc; }
            }
        }
        h5turbo_object_close(child);
    }
    return H5TURBO_OK;
}

static SEXP column(const char **values, size_t n)
{
    SEXP out = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t) n));
    for (size_t i = 0; i < n; i++) SET_STRING_ELT(out, (R_xlen_t) i, Rf_mkCharCE(values[i], name_encoding(values[i])));
    UNPROTECT(1);
    return out;
}

/* The listing as a list of columns, or NULL (c->code set). */
static SEXP list_objects(call_t *c, SEXP path, SEXP group, SEXP depth_)
{
    rows_t rows;
    memset(&rows, 0, sizeof rows);
    int kind = -1, depth = Rf_asInteger(depth_);
    if (open_file(c, path) || open_object(c, group)) return NULL;
    int rc = h5turbo_object_kind(c->obj, &kind);
    if (rc != H5TURBO_OK) return call_fail_null(c, rc, NULL);
    if (kind != H5TURBO_GROUP) return call_fail_null(c, H5TURBO_E_INVALID, "the object is not a group");
    uint64_t root = 0;
    if (h5turbo_object_address(c->obj, &root) == H5TURBO_OK) seen_before(&rows, root);
    if (list_group(c, c->obj, r_strdup(r_name_bytes(STRING_ELT(group, 0))), depth, &rows, 0)) return NULL;
    const char *fields[] = {"group", "name", "otype", "dclass", "dim", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, fields));
    SET_VECTOR_ELT(out, 0, column(rows.group, rows.n));
    SET_VECTOR_ELT(out, 1, column(rows.name, rows.n));
    SET_VECTOR_ELT(out, 2, column(rows.otype, rows.n));
    SET_VECTOR_ELT(out, 3, column(rows.dclass, rows.n));
    SET_VECTOR_ELT(out, 4, column(rows.dim, rows.n));
    UNPROTECT(1);
    return out;
}

SEXP C_ls(SEXP path, SEXP group, SEXP depth)
{
    CALL_BODY(list_objects, path, group, depth);
}

SEXP C_version(void)
{
    return Rf_mkString(h5turbo_version());
}
