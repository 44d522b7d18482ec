/* Shared by the C tests: a walk over every object of a file through h5turbo. */
#ifndef H5TURBO_TEST_COMMON_H
#define H5TURBO_TEST_COMMON_H
#include <h5turbo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char **paths; size_t n, cap; uint64_t *seen; size_t n_seen, cap_seen; } object_list;

static inline void list_push(object_list *l, const char *path) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->paths = realloc(l->paths, l->cap * sizeof *l->paths);
    }
    l->paths[l->n++] = strdup(path);
}

static inline int list_seen(object_list *l, uint64_t address) {
    for (size_t i = 0; i < l->n_seen; i++)
        if (l->seen[i] == address) return 1;
    if (l->n_seen == l->cap_seen) {
        l->cap_seen = l->cap_seen ? 2 * l->cap_seen : 64;
        l->seen = realloc(l->seen, l->cap_seen * sizeof *l->seen);
    }
    l->seen[l->n_seen++] = address;
    return 0;
}

/* Failures that break the error contract: a status that is not one of the header's
 * error codes (or is H5TURBO_E_INTERNAL, a caught panic: a bug on any input), or a
 * message that is empty or, when `error_file` is set, does not name that file. */
static long bad_errors;
static const char *error_file;

/* Count a failure of `status` at object `path`, and check it keeps the contract. */
static inline void count_error(long *errors, int status, const char *path) {
    (*errors)++;
    const char *m = h5turbo_last_error();
    if (status < H5TURBO_E_FORMAT || status >= H5TURBO_E_INTERNAL || m[0] == 0 || (error_file && !strstr(m, error_file))) {
        printf("FAIL error contract at %s: status %d, message '%s'\n", path, status, m);
        bad_errors++;
    }
}

/* Every object reached by hard links from `path` (each once), paths into `l`;
 * `errors` counts failures (each must have a message). */
static inline void walk_objects(const h5turbo_file *f, const char *path, object_list *l, long *errors) {
    h5turbo_object *o = NULL;
    int status = h5turbo_object_open(f, path, &o);
    if (status != H5TURBO_OK) {
        count_error(errors, status, path);
        return;
    }
    uint64_t address = 0;
    int kind = -1;
    h5turbo_object_address(o, &address);
    h5turbo_object_kind(o, &kind);
    if (list_seen(l, address)) { h5turbo_object_close(o); return; }
    list_push(l, path);
    char **names = NULL;
    size_t n = 0;
    if (kind == H5TURBO_GROUP) {
        if ((status = h5turbo_group_members(o, &names, &n)) != H5TURBO_OK) count_error(errors, status, path);
        for (size_t i = 0; i < n; i++) {
            int link = -1;
            if ((status = h5turbo_link_kind(o, names[i], &link)) != H5TURBO_OK) { count_error(errors, status, path); continue; }
            if (link != H5TURBO_LINK_HARD) continue;
            size_t len = strlen(path) + strlen(names[i]) + 2;
            char *child = malloc(len);
            snprintf(child, len, "%s%s%s", path, strcmp(path, "/") ? "/" : "", names[i]);
            walk_objects(f, child, l, errors);
            free(child);
        }
        h5turbo_strings_free(names, n);
    }
    h5turbo_object_close(o);
}

static inline void list_free(object_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->seen);
}

/* FNV-1a over bytes. */
static inline uint64_t fnv(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Ragged rows: each one's length and values (base values of base_size bytes). */
static inline uint64_t sequences_digest(const h5turbo_sequence *seqs, size_t k, size_t base_size, uint64_t h) {
    for (size_t i = 0; i < k; i++) {
        h = fnv(&seqs[i].len, sizeof seqs[i].len, h);
        if (seqs[i].len) h = fnv(seqs[i].data, (size_t)seqs[i].len * base_size, h);
    }
    return h;
}

/* Each member of a compound (type dt) from its columns, read with status `status` (a
   dataset's or an attribute's): strings, ragged rows or values. Frees the columns. */
static inline uint64_t columns_digest(int status, h5turbo_columns *cols, h5turbo_datatype *dt, long *errors, const char *path,
                                      uint64_t h) {
    size_t members = 0, rows = 0;
    if (status == H5TURBO_OK) status = h5turbo_datatype_member_count(dt, &members);
    if (status == H5TURBO_OK) status = h5turbo_columns_rows(cols, &rows);
    if (status != H5TURBO_OK) {
        count_error(errors, status, path);
        h5turbo_columns_free(cols);
        return fnv(&status, sizeof status, h);
    }
    for (size_t k = 0; k < members; k++) {
        h5turbo_datatype *mt = NULL, *base = NULL;
        h5turbo_type_info mi, bi;
        int ms = h5turbo_datatype_member(dt, k, NULL, NULL, &mt);
        if (ms == H5TURBO_OK) ms = h5turbo_datatype_info(mt, &mi);
        if (ms == H5TURBO_OK && mi.type_class == H5TURBO_STRING) {
            char **s = NULL;
            size_t got = 0;
            ms = h5turbo_columns_member_strings(cols, k, &s, &got);
            for (size_t i = 0; i < got; i++) h = fnv(s[i], strlen(s[i]) + 1, h);
            h5turbo_strings_free(s, got);
        } else if (ms == H5TURBO_OK && mi.type_class == H5TURBO_VLEN) {
            h5turbo_sequence *seqs = NULL;
            size_t got = 0;
            ms = h5turbo_datatype_base(mt, &base);
            if (ms == H5TURBO_OK) ms = h5turbo_datatype_info(base, &bi);
            if (ms == H5TURBO_OK) ms = h5turbo_columns_member_sequences(cols, k, &seqs, &got);
            if (ms == H5TURBO_OK) h = sequences_digest(seqs, got, bi.size, h);
            h5turbo_sequences_free(seqs, got);
        } else if (ms == H5TURBO_OK && mi.size > 0) {
            size_t bytes = rows * mi.size;
            void *buf = calloc(bytes ? bytes : 1, 1);
            ms = h5turbo_columns_member(cols, k, buf, bytes);
            if (ms == H5TURBO_OK) h = fnv(buf, bytes, h);
            free(buf);
        }
        if (ms != H5TURBO_OK) count_error(errors, ms, path);
        h = fnv(&ms, sizeof ms, h);
        h5turbo_datatype_close(base);
        h5turbo_datatype_close(mt);
    }
    h5turbo_columns_free(cols);
    return h;
}

/* A digest of everything read from object `path` (data or strings, attributes), or
 * of the error codes met: the same file must always give the same digest. */
static inline uint64_t object_digest(const h5turbo_file *f, const char *path, int threads, long *errors) {
    uint64_t h = 1469598103934665603ull;
    h5turbo_object *o = NULL;
    int status = h5turbo_object_open(f, path, &o);
    if (status != H5TURBO_OK) { count_error(errors, status, path); return fnv(&status, sizeof status, h); }
    int kind = -1, rank = -2;
    h5turbo_object_kind(o, &kind);
    if (kind == H5TURBO_DATASET && h5turbo_dataset_rank(o, &rank) == H5TURBO_OK && rank >= 0 && rank <= 32) {
        uint64_t dims[32];
        h5turbo_datatype *dt = NULL;
        h5turbo_type_info t;
        h5turbo_dataset_shape(o, dims, 32);
        uint64_t n = 1;
        for (int i = 0; i < rank; i++) n *= dims[i];
        if ((status = h5turbo_dataset_datatype(o, &dt)) == H5TURBO_OK && (status = h5turbo_datatype_info(dt, &t)) == H5TURBO_OK) {
            if (t.type_class == H5TURBO_VLEN) {
                h5turbo_datatype *base = NULL;
                h5turbo_type_info bi = {0};
                h5turbo_sequence *seqs = NULL;
                size_t k = 0;
                status = h5turbo_datatype_base(dt, &base);
                if (status == H5TURBO_OK) status = h5turbo_datatype_info(base, &bi);
                if (status == H5TURBO_OK) status = h5turbo_dataset_read_sequences(o, NULL, NULL, NULL, &seqs, &k, threads);
                h = sequences_digest(seqs, k, bi.size, h);
                h5turbo_sequences_free(seqs, k);
                h5turbo_datatype_close(base);
            } else if (t.type_class == H5TURBO_STRING) {
                char **s = NULL;
                size_t k = 0;
                status = h5turbo_dataset_read_strings(o, NULL, NULL, NULL, &s, &k, threads);
                for (size_t i = 0; i < k; i++) h = fnv(s[i], strlen(s[i]) + 1, h);
                h5turbo_strings_free(s, k);
            } else if (t.type_class == H5TURBO_REFERENCE) {
                char **s = NULL;
                size_t k = 0;
                status = h5turbo_dataset_read_references(o, NULL, NULL, NULL, &s, &k, threads);
                if (status == H5TURBO_E_UNSUPPORTED) status = H5TURBO_OK; /* region references */
                for (size_t i = 0; i < k; i++) h = s[i] ? fnv(s[i], strlen(s[i]) + 1, h) : fnv("", 1, h);
                h5turbo_strings_free(s, k);
            } else if (t.size > 0 && n <= (256u << 20) / t.size) {
                size_t bytes = (size_t)n * t.size;
                void *buf = calloc(bytes ? bytes : 1, 1);
                status = h5turbo_dataset_read(o, NULL, NULL, NULL, buf, bytes, threads);
                if (status == H5TURBO_OK) h = fnv(buf, bytes, h);
                free(buf);
                if (status == H5TURBO_OK && rank > 0 && n > 0 && (t.type_class == H5TURBO_INTEGER || t.type_class == H5TURBO_FLOAT)) {
                    double sum = 0;
                    status = h5turbo_dataset_reduce(o, H5TURBO_MAX, -1, 0, &sum, 1, threads);
                    if (status == H5TURBO_OK) h = fnv(&sum, sizeof sum, h);
                }
            }
            if (status != H5TURBO_OK) count_error(errors, status, path);
            h = fnv(&status, sizeof status, h);
            if (t.type_class == H5TURBO_COMPOUND && t.size > 0 && n <= (256u << 20) / t.size) {
                h5turbo_columns *cols = NULL;
                int read = h5turbo_dataset_read_columns(o, NULL, NULL, NULL, &cols, threads);
                h = columns_digest(read, cols, dt, errors, path, h);
            }
        } else {
            count_error(errors, status, path);
        }
        h5turbo_datatype_close(dt);
    }
    char **names = NULL;
    size_t n_attrs = 0;
    if ((status = h5turbo_attribute_names(o, &names, &n_attrs)) != H5TURBO_OK) count_error(errors, status, path);
    for (size_t i = 0; i < n_attrs; i++) {
        h5turbo_attribute *a = NULL;
        status = h5turbo_attribute_open(o, names[i], &a);
        if (status == H5TURBO_OK) {
            char **s = NULL;
            size_t k = 0;
            unsigned char buf[4096] = {0};
            status = h5turbo_attribute_read_strings(a, &s, &k);
            for (size_t j = 0; j < k; j++) h = fnv(s[j], strlen(s[j]) + 1, h);
            h5turbo_strings_free(s, k);
            if (status != H5TURBO_OK) {
                status = h5turbo_attribute_read(a, buf, sizeof buf);
                if (status == H5TURBO_OK) h = fnv(buf, sizeof buf, h);
            }
            /* compounds also into columns, ragged rows as sequences */
            h5turbo_datatype *at = NULL, *base = NULL;
            h5turbo_type_info ai, bi;
            if (h5turbo_attribute_datatype(a, &at) == H5TURBO_OK && h5turbo_datatype_info(at, &ai) == H5TURBO_OK) {
                if (ai.type_class == H5TURBO_COMPOUND) {
                    h5turbo_columns *cols = NULL;
                    int read = h5turbo_attribute_read_columns(a, &cols);
                    h = columns_digest(read, cols, at, errors, path, h);
                } else if (ai.type_class == H5TURBO_VLEN && h5turbo_datatype_base(at, &base) == H5TURBO_OK &&
                           h5turbo_datatype_info(base, &bi) == H5TURBO_OK) {
                    h5turbo_sequence *seqs = NULL;
                    size_t got = 0;
                    int read = h5turbo_attribute_read_sequences(a, &seqs, &got);
                    if (read == H5TURBO_OK) h = sequences_digest(seqs, got, bi.size, h);
                    else count_error(errors, read, path);
                    h = fnv(&read, sizeof read, h);
                    h5turbo_sequences_free(seqs, got);
                }
            }
            h5turbo_datatype_close(base);
            h5turbo_datatype_close(at);
        }
        if (status != H5TURBO_OK) count_error(errors, status, path);
        h = fnv(&status, sizeof status, h);
        h5turbo_attribute_close(a);
    }
    h5turbo_strings_free(names, n_attrs);
    h5turbo_object_close(o);
    return h;
}
#endif
