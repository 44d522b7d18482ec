/* h5sum FILE: one TSV line per numeric dataset (integers, floats, booleans and enums
 * as their base integer), depth-first in h5py's visiting order (members by name, each
 * object once however many hard links reach it, soft and external links not
 * followed): path, shape (dimensions joined by "x", "scalar" for scalars), and the
 * sum of all elements in float64 (%.17g), added in row-major order. A dataset that
 * cannot be read is reported on stderr (exit status 1) and the others still printed. */
#include <h5turbo.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANK 32
#define BLOCK_BYTES (8u << 20) /* read at most this much at a time */

/* The objects visited, by address: a hash set (open addressing; 0 marks a free slot,
 * so address 0 is kept aside), for files of millions of objects. */
typedef struct { uint64_t *slots; size_t n, cap; int has_zero; } address_set;

static size_t slot_of(uint64_t address, size_t cap) {
    address ^= address >> 33;
    address *= 0xff51afd7ed558ccdULL;
    address ^= address >> 33;
    return (size_t)address & (cap - 1);
}

static void insert_slot(uint64_t *slots, size_t cap, uint64_t address) {
    size_t i = slot_of(address, cap);
    while (slots[i] != 0) i = (i + 1) & (cap - 1);
    slots[i] = address;
}

static int seen_before(address_set *seen, uint64_t address) {
    if (address == 0) {
        int had = seen->has_zero;
        seen->has_zero = 1;
        return had;
    }
    if (2 * (seen->n + 1) > seen->cap) { /* keep it at most half full */
        size_t cap = seen->cap ? 2 * seen->cap : 1024;
        uint64_t *slots = calloc(cap, sizeof *slots);
        if (!slots) { perror("h5sum"); exit(1); }
        for (size_t i = 0; i < seen->cap; i++)
            if (seen->slots[i]) insert_slot(slots, cap, seen->slots[i]);
        free(seen->slots);
        seen->slots = slots;
        seen->cap = cap;
    }
    for (size_t i = slot_of(address, seen->cap); seen->slots[i] != 0; i = (i + 1) & (seen->cap - 1))
        if (seen->slots[i] == address) return 1;
    insert_slot(seen->slots, seen->cap, address);
    seen->n++;
    return 0;
}

static int is_numeric(const h5turbo_type_info *t) {
    return t->type_class == H5TURBO_INTEGER || t->type_class == H5TURBO_FLOAT ||
           t->type_class == H5TURBO_ENUM;
}

static double half_to_double(uint16_t h) {
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double value;
    if (exponent == 0) value = mantissa / 16777216.0; /* 2^-24 */
    else if (exponent == 31) value = mantissa ? NAN : INFINITY;
    else value = (1.0 + mantissa / 1024.0) * ldexp(1.0, exponent - 15);
    return (h & 0x8000) ? -value : value;
}

/* One element (native byte order) as a double. */
static double element(const unsigned char *p, const h5turbo_type_info *t) {
    if (t->type_class == H5TURBO_FLOAT) {
        switch (t->size) {
        case 2: { uint16_t v; memcpy(&v, p, 2); return half_to_double(v); }
        case 4: { float v; memcpy(&v, p, 4); return v; }
        case 8: { double v; memcpy(&v, p, 8); return v; }
        default: { long double v; memcpy(&v, p, sizeof v < t->size ? sizeof v : t->size); return (double)v; }
        }
    }
    switch (t->size) {
    case 1: return t->is_signed ? (double)*(const int8_t *)p : (double)*p;
    case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); return t->is_signed ? (double)s : (double)u; }
    case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); return t->is_signed ? (double)s : (double)u; }
    default: { int64_t s; uint64_t u; memcpy(&s, p, 8); memcpy(&u, p, 8); return t->is_signed ? (double)s : (double)u; }
    }
}

/* Sum a dataset in row-major order, reading blocks of whole rows along axis 0.
   H5TURBO_OK, an h5turbo status (h5turbo_last_error says why), or -1 when a row is
   too large to hold (told on stderr here: the walk goes on with the other datasets). */
static int sum_dataset(const h5turbo_object *ds, const char *path, int rank, const uint64_t *dims,
                       const h5turbo_type_info *t, double *sum) {
    *sum = 0.0;
    uint64_t rows = rank == 0 ? 1 : dims[0];
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0) return H5TURBO_OK;
    uint64_t row_bytes = t->size; /* bytes per index of axis 0, checked against overflow */
    for (int i = 1; i < rank; i++) {
        if (row_bytes > UINT64_MAX / dims[i]) {
            fprintf(stderr, "h5sum: %s: a row of the dataset is too large to sum\n", path);
            return -1;
        }
        row_bytes *= dims[i];
    }
    uint64_t rows_per_block = BLOCK_BYTES / row_bytes;
    if (rows_per_block == 0) rows_per_block = 1;
    uint64_t block_bytes = (rows_per_block < rows ? rows_per_block : rows) * row_bytes;
    unsigned char *buf = block_bytes <= SIZE_MAX ? malloc((size_t)block_bytes) : NULL;
    if (!buf) {
        fprintf(stderr, "h5sum: %s: cannot allocate %llu bytes for a row of the dataset\n", path,
                (unsigned long long)block_bytes);
        return -1;
    }
    uint64_t start[MAX_RANK] = {0}, count[MAX_RANK];
    for (int i = 0; i < rank; i++) count[i] = dims[i];
    int status = H5TURBO_OK;
    for (uint64_t first = 0; first < rows && status == H5TURBO_OK; first += rows_per_block) {
        uint64_t n_rows = rows - first < rows_per_block ? rows - first : rows_per_block;
        if (rank > 0) { start[0] = first; count[0] = n_rows; }
        size_t bytes = (size_t)(n_rows * row_bytes);
        status = h5turbo_dataset_read(ds, rank ? start : NULL, rank ? count : NULL, NULL, buf, bytes, 0);
        for (size_t k = 0; status == H5TURBO_OK && k < bytes; k += t->size) *sum += element(buf + k, t);
    }
    free(buf);
    return status;
}

static void print_shape(int rank, const uint64_t *dims) {
    if (rank == 0) { printf("scalar"); return; }
    for (int i = 0; i < rank; i++) printf(i ? "x%llu" : "%llu", (unsigned long long)dims[i]);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dataset_line(const h5turbo_object *ds, const char *path) {
    h5turbo_datatype *dt = NULL;
    h5turbo_type_info t;
    int rank;
    uint64_t dims[MAX_RANK];
    if (h5turbo_dataset_datatype(ds, &dt) != H5TURBO_OK || h5turbo_datatype_info(dt, &t) != H5TURBO_OK ||
        h5turbo_dataset_rank(ds, &rank) != H5TURBO_OK) {
        fprintf(stderr, "h5sum: %s\n", h5turbo_last_error());
        h5turbo_datatype_close(dt);
        return 1;
    }
    h5turbo_datatype_close(dt);
    if (!is_numeric(&t) || rank < 0) return 0; /* not numbers, or a null dataspace */
    if (rank > MAX_RANK || h5turbo_dataset_shape(ds, dims, MAX_RANK) != H5TURBO_OK) {
        fprintf(stderr, "h5sum: %s: %s\n", path, rank > MAX_RANK ? "rank too large" : h5turbo_last_error());
        return 1;
    }
    double sum;
    int status = sum_dataset(ds, path, rank, dims, &t, &sum);
    if (status != H5TURBO_OK) {
        if (status > 0) fprintf(stderr, "h5sum: %s\n", h5turbo_last_error());
        return 1;
    }
    printf("%s\t", path);
    print_shape(rank, dims);
    if (isnan(sum)) printf("\tnan\n"); /* the sign of a NaN says nothing */
    else printf("\t%.17g\n", sum);
    return 0;
}

/* A group being visited: its members (sorted by name), the next one to visit, and the
 * length of its path in the walk's path buffer. */
typedef struct { h5turbo_object *group; size_t path_len; char **names; size_t n, next; } frame;

/* The walk: the groups from the root to the current one, the current path (one
 * buffer, each group's path a prefix of it: memory grows with the depth, not its
 * square) and the objects seen. */
typedef struct {
    frame *frames;
    size_t depth, cap;
    char *path;
    size_t path_len, path_cap;
    address_set seen;
} walk;

/* The path set to that of the group `parent` (its first `parent_len` bytes) plus "/name". */
static void set_path(walk *w, size_t parent_len, const char *name) {
    size_t len = strlen(name);
    size_t need = parent_len + len + 2;
    if (need > w->path_cap) {
        w->path_cap = need > 2 * w->path_cap ? need : 2 * w->path_cap;
        w->path = realloc(w->path, w->path_cap);
        if (!w->path) { perror("h5sum"); exit(1); }
    }
    size_t at = parent_len;
    if (at > 1 || (at == 1 && w->path[0] != '/')) w->path[at++] = '/';
    memcpy(w->path + at, name, len + 1);
    w->path_len = at + len;
}

/* Push the group `obj` (taking it) with its members, or report why not. */
static int push_group(walk *w, h5turbo_object *obj) {
    frame f = {obj, w->path_len, NULL, 0, 0};
    if (h5turbo_group_members(obj, &f.names, &f.n) != H5TURBO_OK) {
        fprintf(stderr, "h5sum: %s\n", h5turbo_last_error());
        h5turbo_object_close(obj);
        return 1;
    }
    if (f.n > 1) qsort(f.names, f.n, sizeof *f.names, by_name);
    if (w->depth == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->frames = realloc(w->frames, w->cap * sizeof *w->frames);
        if (!w->frames) { perror("h5sum"); exit(1); }
    }
    w->frames[w->depth++] = f;
    return 0;
}

/* The object at the walk's path: a dataset's line, or a group pushed to be visited,
 * once per object however many hard links reach it (by address); takes `obj`.
 * Returns 1 if a dataset or a group could not be read. */
static int visit_one(walk *w, h5turbo_object *obj) {
    int kind = -1, failed = 0;
    uint64_t address = 0;
    h5turbo_object_kind(obj, &kind);
    h5turbo_object_address(obj, &address);
    if (!seen_before(&w->seen, address)) {
        if (kind == H5TURBO_GROUP) return push_group(w, obj);
        if (kind == H5TURBO_DATASET) failed = dataset_line(obj, w->path);
    }
    h5turbo_object_close(obj);
    return failed;
}

/* Depth-first, members by name, with a stack of its own (no recursion: a file may
 * nest groups deeper than a thread's stack), each child opened from its group. */
static int visit_file(const h5turbo_file *file) {
    walk w = {0};
    h5turbo_object *root = NULL;
    if (h5turbo_object_open(file, "/", &root) != H5TURBO_OK) {
        fprintf(stderr, "h5sum: %s\n", h5turbo_last_error());
        return 1;
    }
    set_path(&w, 0, "/");
    int failed = visit_one(&w, root);
    while (w.depth > 0) {
        frame *top = &w.frames[w.depth - 1];
        if (top->next == top->n) {
            h5turbo_strings_free(top->names, top->n);
            h5turbo_object_close(top->group);
            w.depth--;
            continue;
        }
        const char *name = top->names[top->next++];
        int link = -1;
        if (h5turbo_link_kind(top->group, name, &link) != H5TURBO_OK || link != H5TURBO_LINK_HARD) continue;
        set_path(&w, top->path_len, name);
        h5turbo_object *obj = NULL;
        if (h5turbo_object_open_at(top->group, name, &obj) != H5TURBO_OK) {
            fprintf(stderr, "h5sum: %s\n", h5turbo_last_error());
            failed = 1;
            continue;
        }
        failed |= visit_one(&w, obj); /* may push a frame (and move the frames) */
    }
    free(w.frames);
    free(w.path);
    free(w.seen.slots);
    return failed;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: h5sum FILE\n");
        return 2;
    }
    h5turbo_file *file = NULL;
    if (h5turbo_file_open(argv[1], &file) != H5TURBO_OK) {
        fprintf(stderr, "h5sum: %s\n", h5turbo_last_error());
        return 1;
    }
    printf("path\tshape\tsum\n");
    int failed = visit_file(file);
    h5turbo_file_close(file);
    return failed;
}
