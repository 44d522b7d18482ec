/* api_test GENERATED_DIR FAST5_DIR: the C API's contract checked directly: status
 * codes and messages for bad arguments and missing things, closed files, buffer
 * checks, reductions against sums of the data read, strings, and the fast5 API
 * (batch sizes, get by read id, per-read errors, stop_on_error). Prints one line per
 * failed check and "api_test: N checks, N failed". */
#include "common.h"
#include <pthread.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static long g_checks, g_failed;

#define CHECK(cond, ...) do { g_checks++; if (!(cond)) { g_failed++; printf("FAIL api_test:%d: ", __LINE__); printf(__VA_ARGS__); printf(" [last error: %s]\n", h5turbo_last_error()); } } while (0)

static char g_path[4096];
static const char *path_in(const char *dir, const char *name) {
    snprintf(g_path, sizeof g_path, "%s/%s", dir, name);
    return g_path;
}

static void test_errors(const char *gen) {
    CHECK(strlen(h5turbo_version()) > 0, "version");
    h5turbo_file *f = NULL;
    CHECK(h5turbo_file_open(NULL, &f) == H5TURBO_E_INVALID && f == NULL, "open NULL path");
    CHECK(strstr(h5turbo_last_error(), "NULL") != NULL, "message says NULL");
    CHECK(h5turbo_file_open(path_in(gen, "dtypes.h5"), NULL) == H5TURBO_E_INVALID, "open NULL out");
    CHECK(h5turbo_file_open("/nonexistent/file.h5", &f) == H5TURBO_E_IO, "missing file is IO");
    CHECK(strstr(h5turbo_last_error(), "/nonexistent/file.h5") != NULL, "message names the file");
    CHECK(h5turbo_file_open(gen, &f) != H5TURBO_OK, "a folder is not a file");
    CHECK(h5turbo_file_open(path_in(gen, "dtypes.h5"), &f) == H5TURBO_OK, "open");
    h5turbo_object *o = NULL;
    CHECK(h5turbo_object_open(f, "/no/such", &o) == H5TURBO_E_NOT_FOUND && o == NULL, "missing object");
    CHECK(strstr(h5turbo_last_error(), "dtypes.h5") != NULL, "message names the file");
    CHECK(h5turbo_object_open(NULL, "/", &o) == H5TURBO_E_INVALID, "NULL file");
    CHECK(h5turbo_object_open(f, NULL, &o) == H5TURBO_E_INVALID, "NULL path");
    /* a null dataspace: rank -1, and no read of it (as documented) */
    CHECK(h5turbo_object_open(f, "/null", &o) == H5TURBO_OK, "open the null dataset");
    {
        int null_rank = 0;
        double nothing[1];
        CHECK(h5turbo_dataset_rank(o, &null_rank) == H5TURBO_OK && null_rank == -1, "null rank -1");
        CHECK(h5turbo_dataset_read(o, NULL, NULL, NULL, nothing, 0, 0) == H5TURBO_E_INVALID &&
              strstr(h5turbo_last_error(), "null dataspace") && strstr(h5turbo_last_error(), "/null"),
              "a null dataspace is not read: %s", h5turbo_last_error());
    }
    h5turbo_object_close(o);
    o = NULL;
    {
        /* opening from a group: relative paths, "." parts, absolute paths, and errors */
        h5turbo_object *root = NULL, *group = NULL, *member = NULL;
        const char *path = NULL;
        CHECK(h5turbo_object_open(f, "/", &root) == H5TURBO_OK, "open root");
        CHECK(h5turbo_object_open_at(root, "chunked", &group) == H5TURBO_OK, "open a member");
        CHECK(h5turbo_object_open_at(group, "./le_i4", &member) == H5TURBO_OK &&
              h5turbo_object_path(member, &path) == H5TURBO_OK && strcmp(path, "/chunked/le_i4") == 0,
              "open a member of a member: %s", path ? path : h5turbo_last_error());
        h5turbo_object_close(member);
        member = NULL;
        CHECK(h5turbo_object_open_at(root, "chunked/le_i4", &member) == H5TURBO_OK &&
              h5turbo_object_path(member, &path) == H5TURBO_OK && strcmp(path, "/chunked/le_i4") == 0,
              "open a path of two parts");
        h5turbo_object *inner = NULL;
        CHECK(h5turbo_object_open_at(member, "x", &inner) == H5TURBO_E_INVALID && inner == NULL &&
              strstr(h5turbo_last_error(), "not a group") && strstr(h5turbo_last_error(), "dtypes.h5"),
              "a dataset is no base: %s", h5turbo_last_error());
        CHECK(h5turbo_object_open_at(member, "/chunked", &inner) == H5TURBO_OK &&
              h5turbo_object_path(inner, &path) == H5TURBO_OK && strcmp(path, "/chunked") == 0,
              "an absolute path from any object");
        h5turbo_object_close(inner);
        inner = NULL;
        CHECK(h5turbo_object_open_at(group, "nope", &inner) == H5TURBO_E_NOT_FOUND && inner == NULL &&
              strstr(h5turbo_last_error(), "nope") && strstr(h5turbo_last_error(), "dtypes.h5"),
              "a missing member: %s", h5turbo_last_error());
        CHECK(h5turbo_object_open_at(NULL, "x", &inner) == H5TURBO_E_INVALID, "NULL base");
        CHECK(h5turbo_object_open_at(group, NULL, &inner) == H5TURBO_E_INVALID, "NULL relative path");
        h5turbo_object_close(member);
        h5turbo_object_close(group);
        h5turbo_object_close(root);
    }
    CHECK(h5turbo_object_open(f, "/chunked/le_i4", &o) == H5TURBO_OK, "open dataset");
    int rank = 0, kind = -1;
    uint64_t dims[3];
    CHECK(h5turbo_object_kind(o, &kind) == H5TURBO_OK && kind == H5TURBO_DATASET, "kind");
    CHECK(h5turbo_dataset_rank(o, &rank) == H5TURBO_OK && rank == 3, "rank");
    CHECK(h5turbo_dataset_shape(o, dims, 2) == H5TURBO_E_INVALID, "max_rank too small");
    CHECK(strstr(h5turbo_last_error(), "dtypes.h5") && strstr(h5turbo_last_error(), "/chunked/le_i4") &&
          strstr(h5turbo_last_error(), "max_rank"), "a bad argument's message names file and object: %s",
          h5turbo_last_error());
    CHECK(h5turbo_dataset_read(o, NULL, NULL, NULL, NULL, 0, -5) == H5TURBO_E_INVALID &&
          strstr(h5turbo_last_error(), "/chunked/le_i4") && strstr(h5turbo_last_error(), "threads"),
          "negative threads named with the dataset: %s", h5turbo_last_error());
    CHECK(h5turbo_dataset_shape(o, dims, 3) == H5TURBO_OK && dims[0] == 41 && dims[1] == 13 && dims[2] == 3, "shape");
    char **names = NULL;
    size_t n = 0;
    CHECK(h5turbo_group_members(o, &names, &n) == H5TURBO_E_INVALID, "a dataset has no members");
    int32_t small[4];
    CHECK(h5turbo_dataset_read(o, NULL, NULL, NULL, small, sizeof small, 0) == H5TURBO_E_INVALID, "buffer too small");
    CHECK(strstr(h5turbo_last_error(), "le_i4") != NULL, "message names the dataset");
    uint64_t start[3] = {40, 0, 0}, count[3] = {2, 1, 1}, stride0[3] = {0, 1, 1};
    CHECK(h5turbo_dataset_read(o, start, count, NULL, small, sizeof small, 0) == H5TURBO_E_INVALID, "selection outside");
    CHECK(h5turbo_dataset_read(o, NULL, count, stride0, small, sizeof small, 0) == H5TURBO_E_INVALID, "stride 0");
    CHECK(h5turbo_dataset_read(o, NULL, count, NULL, NULL, sizeof small, 0) == H5TURBO_E_INVALID, "NULL buffer");
    CHECK(h5turbo_dataset_read(o, NULL, count, NULL, small, sizeof small, -1) == H5TURBO_E_INVALID, "negative threads");
    double out[2];
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_SUM, -1, 0, out, 2, 0) == H5TURBO_E_INVALID, "out_len checked");
    CHECK(h5turbo_dataset_reduce(o, 99, -1, 0, out, 1, 0) == H5TURBO_E_INVALID, "unknown op");
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_SUM, 3, 0, out, 1, 0) == H5TURBO_E_INVALID, "axis out of range");
    h5turbo_attribute *a = NULL;
    CHECK(h5turbo_attribute_open(o, "nope", &a) == H5TURBO_E_NOT_FOUND && a == NULL, "missing attribute");
    /* closing the file: objects still open then fail cleanly */
    h5turbo_file_close(f);
    CHECK(h5turbo_dataset_read(o, NULL, count, NULL, small, sizeof small, 0) == H5TURBO_E_CLOSED, "closed file");
    h5turbo_object_close(o);
    h5turbo_file_close(NULL);
    h5turbo_object_close(NULL);
    h5turbo_attribute_close(NULL);
    h5turbo_datatype_close(NULL);
    h5turbo_strings_free(NULL, 3);
    h5turbo_fast5_batch_free(NULL);
    h5turbo_fast5_close(NULL);
    CHECK(h5turbo_filter_name(1) && strcmp(h5turbo_filter_name(1), "deflate") == 0, "filter name");
    CHECK(h5turbo_filter_name(32020) && strcmp(h5turbo_filter_name(32020), "vbz") == 0, "vbz name");
    CHECK(h5turbo_filter_name(12345) == NULL, "unknown filter");
}

/* Reductions against the values read (integers: exact). */
static void test_reduce(const char *gen, const char *path) {
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "filters.h5"), &f) == H5TURBO_OK, "open filters.h5");
    CHECK(h5turbo_object_open(f, path, &o) == H5TURBO_OK, "open %s", path);
    uint64_t dims[2];
    h5turbo_dataset_shape(o, dims, 2);
    size_t rows = (size_t)dims[0], cols = (size_t)dims[1], n = rows * cols;
    h5turbo_datatype *dt = NULL;
    h5turbo_type_info t;
    h5turbo_dataset_datatype(o, &dt);
    h5turbo_datatype_info(dt, &t);
    h5turbo_datatype_close(dt);
    double *v = malloc(n * sizeof *v);
    unsigned char *raw = malloc(n * t.size);
    CHECK(h5turbo_dataset_read(o, NULL, NULL, NULL, raw, n * t.size, 2) == H5TURBO_OK, "read %s", path);
    for (size_t i = 0; i < n; i++) v[i] = t.size == 4 ? *(int32_t *)(raw + 4 * i) : *(int16_t *)(raw + 2 * i);
    double sum = 0, min = INFINITY, max = -INFINITY, nonzero = 0;
    for (size_t i = 0; i < n; i++) { sum += v[i]; min = fmin(min, v[i]); max = fmax(max, v[i]); nonzero += v[i] != 0; }
    double mean = sum / (double)n, m2 = 0;
    for (size_t i = 0; i < n; i++) m2 += (v[i] - mean) * (v[i] - mean);
    double r;
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_SUM, -1, 0, &r, 1, 0) == H5TURBO_OK && r == sum, "%s sum %g vs %g", path, r, sum);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_MIN, -1, 0, &r, 1, 1) == H5TURBO_OK && r == min, "%s min", path);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_MAX, -1, 0, &r, 1, 2) == H5TURBO_OK && r == max, "%s max", path);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_COUNT_NONZERO, -1, 0, &r, 1, 0) == H5TURBO_OK && r == nonzero, "%s count_nonzero", path);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_MEAN, -1, 0, &r, 1, 0) == H5TURBO_OK && fabs(r - mean) <= 1e-9 * fabs(mean) + 1e-12, "%s mean", path);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_VAR, -1, 1, &r, 1, 0) == H5TURBO_OK && fabs(r - m2 / (double)(n - 1)) <= 1e-9 * m2 / (double)n, "%s var ddof=1", path);
    /* numpy's var past the count: m2 / max(n - ddof, 0), inf (NaN for all-equal values) */
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_VAR, -1, (int)n + 1, &r, 1, 0) == H5TURBO_OK && (m2 > 0 ? isinf(r) && r > 0 : isnan(r)),
          "%s var ddof=n+1: %g", path, r);
    /* per axis: axis 0 leaves one cell per column, axis 1 one per row */
    double *cells = malloc((rows > cols ? rows : cols) * sizeof *cells);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_SUM, 0, 0, cells, cols, 0) == H5TURBO_OK, "%s sum axis 0", path);
    int bad = 0;
    for (size_t c = 0; c < cols; c++) {
        double s = 0;
        for (size_t i = 0; i < rows; i++) s += v[i * cols + c];
        bad += s != cells[c];
    }
    CHECK(bad == 0, "%s: %d column sums differ", path, bad);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_MAX, 1, 0, cells, rows, 0) == H5TURBO_OK, "%s max axis 1", path);
    bad = 0;
    for (size_t i = 0; i < rows; i++) {
        double m = -INFINITY;
        for (size_t c = 0; c < cols; c++) m = fmax(m, v[i * cols + c]);
        bad += m != cells[i];
    }
    CHECK(bad == 0, "%s: %d row maxima differ", path, bad);
    free(cells);
    free(v);
    free(raw);
    h5turbo_object_close(o);
    h5turbo_file_close(f);
}

static void test_strings_and_attributes(const char *gen) {
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "structures.h5"), &f) == H5TURBO_OK, "open structures.h5");
    CHECK(h5turbo_object_open(f, "/utf8", &o) == H5TURBO_OK, "open /utf8");
    char **s = NULL;
    size_t n = 0;
    CHECK(h5turbo_dataset_read_strings(o, NULL, NULL, NULL, &s, &n, 0) == H5TURBO_OK && n == 3, "utf8 strings");
    if (n == 3) CHECK(strcmp(s[0], "grüße") == 0 && strcmp(s[1], "日本") == 0 && s[2][0] == 0, "utf8 values");
    h5turbo_strings_free(s, n);
    unsigned char buf[64];
    CHECK(h5turbo_dataset_read(o, NULL, NULL, NULL, buf, sizeof buf, 0) == H5TURBO_E_UNSUPPORTED, "vlen strings need read_strings");
    CHECK(h5turbo_dataset_read_references(o, NULL, NULL, NULL, &s, &n, 0) == H5TURBO_E_INVALID &&
          strstr(h5turbo_last_error(), "not a reference") && strstr(h5turbo_last_error(), "/utf8"),
          "strings are not references: %s", h5turbo_last_error());
    h5turbo_object_close(o);
    {
        /* object references, a hyperslab of them: row 1 and column 0 of /refs */
        h5turbo_object *refs = NULL;
        CHECK(h5turbo_object_open(f, "/refs", &refs) == H5TURBO_OK, "open /refs");
        uint64_t start[2] = {1, 0}, count[2] = {1, 3};
        CHECK(h5turbo_dataset_read_references(refs, start, count, NULL, &s, &n, 0) == H5TURBO_OK && n == 3 &&
              strcmp(s[0], "/ordered") == 0 && strcmp(s[1], "/ordered/mid") == 0 && strcmp(s[2], "/") == 0,
              "references of row 1: %s", n == 3 ? s[0] : h5turbo_last_error());
        h5turbo_strings_free(s, n);
        uint64_t column[2] = {0, 1}, down[2] = {2, 1}, strided[2] = {1, 2};
        CHECK(h5turbo_dataset_read_references(refs, column, down, NULL, &s, &n, 0) == H5TURBO_OK && n == 2 &&
              s[0] == NULL && strcmp(s[1], "/ordered/mid") == 0, "a null reference is NULL");
        h5turbo_strings_free(s, n);
        uint64_t first_row[2] = {1, 2};
        CHECK(h5turbo_dataset_read_references(refs, NULL, first_row, strided, &s, &n, 2) == H5TURBO_OK && n == 2 &&
              strcmp(s[0], "/compound") == 0 && (strcmp(s[1], "/enum") == 0 || strcmp(s[1], "/hard") == 0),
              "strided references: %s", n == 2 && s[1] ? s[1] : h5turbo_last_error());
        h5turbo_strings_free(s, n);
        h5turbo_object_close(refs);
        h5turbo_file *dangling = NULL;
        CHECK(h5turbo_file_open(path_in(gen, "dangling_ref.h5"), &dangling) == H5TURBO_OK, "open dangling_ref.h5");
        CHECK(h5turbo_object_open(dangling, "/refs", &refs) == H5TURBO_OK, "open /refs of dangling_ref.h5");
        uint64_t one = 1;
        CHECK(h5turbo_dataset_read_references(refs, NULL, &one, NULL, &s, &n, 0) == H5TURBO_OK && n == 1 &&
              strcmp(s[0], "/a") == 0, "the sound reference: %s", n == 1 ? s[0] : h5turbo_last_error());
        h5turbo_strings_free(s, n);
        s = NULL;
        n = 7;
        CHECK(h5turbo_dataset_read_references(refs, NULL, NULL, NULL, &s, &n, 0) == H5TURBO_E_FORMAT && s == NULL &&
              n == 0 && strstr(h5turbo_last_error(), "dangling_ref.h5") && strstr(h5turbo_last_error(), "/refs"),
              "a reference to no object: %s", h5turbo_last_error());
        h5turbo_object_close(refs);
        h5turbo_file_close(dangling);
        CHECK(h5turbo_object_open(f, "/region_refs", &refs) == H5TURBO_OK, "open /region_refs");
        CHECK(h5turbo_dataset_read_references(refs, NULL, NULL, NULL, &s, &n, 0) == H5TURBO_E_UNSUPPORTED &&
              strstr(h5turbo_last_error(), "region"), "region references: %s", h5turbo_last_error());
        h5turbo_object_close(refs);
    }
    CHECK(h5turbo_object_open(f, "/ordered", &o) == H5TURBO_OK, "open /ordered");
    CHECK(h5turbo_group_members(o, &s, &n) == H5TURBO_OK && n == 3, "members");
    if (n == 3) CHECK(strcmp(s[0], "zeta") == 0 && strcmp(s[1], "alpha") == 0 && strcmp(s[2], "mid") == 0, "creation order");
    h5turbo_strings_free(s, n);
    h5turbo_object_close(o);
    CHECK(h5turbo_object_open(f, "/", &o) == H5TURBO_OK, "open /");
    int link = -1;
    CHECK(h5turbo_link_kind(o, "soft", &link) == H5TURBO_OK && link == H5TURBO_LINK_SOFT, "soft link kind");
    CHECK(h5turbo_link_kind(o, "hard", &link) == H5TURBO_OK && link == H5TURBO_LINK_HARD, "hard link kind");
    h5turbo_object_close(o);
    h5turbo_object *a1 = NULL, *a2 = NULL;
    uint64_t x1 = 0, x2 = 1;
    h5turbo_object_open(f, "/hard", &a1);
    h5turbo_object_open(f, "/enum", &a2);
    CHECK(h5turbo_object_address(a1, &x1) == H5TURBO_OK && h5turbo_object_address(a2, &x2) == H5TURBO_OK && x1 == x2, "hard links share an address");
    h5turbo_object_close(a1);
    h5turbo_object_close(a2);
    CHECK(h5turbo_object_open(f, "/array_elements", &o) == H5TURBO_OK, "open /array_elements");
    h5turbo_datatype *dt = NULL;
    uint64_t adims[4] = {0};
    int arank = 0;
    CHECK(h5turbo_dataset_datatype(o, &dt) == H5TURBO_OK, "array datatype");
    CHECK(h5turbo_datatype_array_dims(dt, adims, 4, &arank) == H5TURBO_OK && arank == 2 && adims[0] == 2 && adims[1] == 3, "array dims");
    arank = -1;
    CHECK(h5turbo_datatype_array_dims(dt, NULL, 0, &arank) == H5TURBO_OK && arank == 2, "array rank alone (dims NULL, max_rank 0)");
    {
        /* room for fewer dimensions than the rank: as h5turbo_dataset_filters, the first
           max_rank and the whole rank, nothing written beyond (a heap block of exactly one
           dimension: ASan sees an overrun) */
        uint64_t *one = malloc(sizeof *one);
        one[0] = 99;
        arank = -7;
        CHECK(h5turbo_datatype_array_dims(dt, one, 1, &arank) == H5TURBO_OK && arank == 2 && one[0] == 2,
              "array dims: room for 1 of 2 gives the first and the rank (%d, %llu)", arank, (unsigned long long)one[0]);
        free(one);
        arank = -7;
        adims[0] = 99;
        CHECK(h5turbo_datatype_array_dims(dt, adims, -1, &arank) == H5TURBO_E_INVALID && arank == -7 && adims[0] == 99 &&
              strstr(h5turbo_last_error(), "max_rank") && strstr(h5turbo_last_error(), "/array_elements"),
              "array dims: a negative max_rank fails and writes nothing (rank %d): %s", arank, h5turbo_last_error());
        CHECK(h5turbo_datatype_array_dims(dt, NULL, 2, &arank) == H5TURBO_E_INVALID && arank == -7 && strstr(h5turbo_last_error(), "dims is NULL"),
              "array dims: dims NULL with max_rank 2 fails and writes nothing (rank %d)", arank);
    }
    size_t members = 0;
    CHECK(h5turbo_datatype_member_count(dt, &members) == H5TURBO_E_INVALID && strstr(h5turbo_last_error(), "not a compound") &&
          strstr(h5turbo_last_error(), "/array_elements") && strstr(h5turbo_last_error(), "structures.h5"),
          "a type's error names the file and the object: %s", h5turbo_last_error());
    h5turbo_datatype *base_dt = NULL;
    CHECK(h5turbo_datatype_base(dt, &base_dt) == H5TURBO_OK, "array base type");
    CHECK(h5turbo_datatype_array_dims(base_dt, adims, 4, &arank) == H5TURBO_E_INVALID &&
          strstr(h5turbo_last_error(), "/array_elements (base type)") && strstr(h5turbo_last_error(), "structures.h5"),
          "a base type's error names where it came from: %s", h5turbo_last_error());
    h5turbo_datatype_close(base_dt);
    h5turbo_datatype_close(dt);
    const char *opath = NULL;
    CHECK(h5turbo_object_path(o, &opath) == H5TURBO_OK && strcmp(opath, "/array_elements") == 0, "object path");
    h5turbo_object_close(o);
    CHECK(h5turbo_object_open(f, "/compound", &o) == H5TURBO_OK, "open /compound");
    /* a member handle reused in a loop: past the last member it is set to NULL, so the
       loop's close after the failure closes nothing twice */
    CHECK(h5turbo_dataset_datatype(o, &dt) == H5TURBO_OK && h5turbo_datatype_member_count(dt, &members) == H5TURBO_OK,
          "/compound's members");
    h5turbo_datatype *member = NULL;
    for (size_t k = 0; k <= members; k++) {
        int rc = h5turbo_datatype_member(dt, k, NULL, NULL, &member);
        CHECK(k < members ? rc == H5TURBO_OK && member != NULL : rc == H5TURBO_E_INVALID && member == NULL,
              "member %zu of %zu: status %d, handle %p", k, members, rc, (void *) member);
        h5turbo_datatype_close(member);
    }
    h5turbo_datatype_close(dt);
    /* none selected: no block, as no strings */
    {
        h5turbo_object *ragged = NULL;
        h5turbo_sequence *seqs = (h5turbo_sequence *) &ragged;
        size_t n_seqs = 7;
        uint64_t none = 0;
        CHECK(h5turbo_object_open(f, "/ragged_be_u2", &ragged) == H5TURBO_OK &&
              h5turbo_dataset_read_sequences(ragged, NULL, &none, NULL, &seqs, &n_seqs, 1) == H5TURBO_OK && seqs == NULL &&
              n_seqs == 0, "no sequence selected: NULL and 0 (%zu)", n_seqs);
        h5turbo_sequences_free(seqs, n_seqs);
        h5turbo_object_close(ragged);
    }
    h5turbo_attribute *a = NULL;
    CHECK(h5turbo_attribute_open(o, "be_float", &a) == H5TURBO_OK, "attr be_float");
    double d[2] = {0, 0};
    CHECK(h5turbo_attribute_read(a, d, sizeof d) == H5TURBO_OK && d[0] == 1.5 && d[1] == -2.25, "big-endian attribute in native order");
    CHECK(h5turbo_attribute_read(a, d, 8) == H5TURBO_E_INVALID, "attribute buffer checked");
    CHECK(h5turbo_attribute_datatype(a, &dt) == H5TURBO_OK, "attribute datatype");
    CHECK(h5turbo_datatype_enum_count(dt, &members) == H5TURBO_E_INVALID &&
          strstr(h5turbo_last_error(), "/compound (attribute 'be_float')") && strstr(h5turbo_last_error(), "structures.h5"),
          "an attribute type's error names the attribute: %s", h5turbo_last_error());
    h5turbo_datatype_close(dt);
    h5turbo_attribute_close(a);
    CHECK(h5turbo_attribute_open(o, "vlen", &a) == H5TURBO_OK, "attr vlen");
    CHECK(h5turbo_attribute_read_strings(a, &s, &n) == H5TURBO_OK && n == 1 && strcmp(s[0], "variable") == 0, "vlen attribute");
    h5turbo_strings_free(s, n);
    h5turbo_attribute_close(a);
    CHECK(h5turbo_attribute_open(o, "empty", &a) == H5TURBO_OK, "attr empty");
    int rank = 0;
    CHECK(h5turbo_attribute_rank(a, &rank) == H5TURBO_OK && rank == -1, "null attribute rank");
    h5turbo_attribute_close(a);
    h5turbo_object_close(o);
    h5turbo_file_close(f);
}

/* gen_files.py attaches /scales/rows then /rows_num to dimension 0 of /scaled, nothing
   to 1, /depth (no NAME) to 2; the label of dimension 0 is "R". */
static void test_dimension_scales(const char *gen) {
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "structures.h5"), &f) == H5TURBO_OK, "open structures.h5");
    CHECK(h5turbo_object_open(f, "/scaled", &o) == H5TURBO_OK, "open /scaled");
    char **s = NULL;
    size_t n = 99;
    CHECK(h5turbo_dataset_dimension_scales(o, 0, &s, &n) == H5TURBO_OK && n == 2, "two scales on dimension 0");
    if (n == 2) CHECK(strcmp(s[0], "/scales/rows") == 0 && strcmp(s[1], "/rows_num") == 0, "in attachment order: %s %s", s[0], s[1]);
    h5turbo_strings_free(s, n);
    CHECK(h5turbo_dataset_dimension_scales(o, 1, &s, &n) == H5TURBO_OK && n == 0 && s == NULL, "none on dimension 1");
    CHECK(h5turbo_dataset_dimension_scales(o, 2, &s, &n) == H5TURBO_OK && n == 1 && strcmp(s[0], "/depth") == 0, "one on dimension 2");
    h5turbo_strings_free(s, n);
    n = 99;
    CHECK(h5turbo_dataset_dimension_scales(o, 3, &s, &n) == H5TURBO_E_INVALID && s == NULL && n == 0, "dimension beyond the rank");
    CHECK(strstr(h5turbo_last_error(), "/scaled") != NULL, "the message names the dataset");
    CHECK(h5turbo_dataset_dimension_scales(o, 0, NULL, &n) == H5TURBO_E_INVALID, "NULL paths");
    CHECK(h5turbo_dataset_dimension_scales(o, 0, &s, NULL) == H5TURBO_E_INVALID, "NULL count");
    CHECK(h5turbo_dataset_dimension_scales(NULL, 0, &s, &n) == H5TURBO_E_INVALID, "NULL dataset");
    h5turbo_attribute *a = NULL;
    CHECK(h5turbo_attribute_open(o, "DIMENSION_LABELS", &a) == H5TURBO_OK, "labels attribute");
    CHECK(h5turbo_attribute_read_strings(a, &s, &n) == H5TURBO_OK && n == 3 && strcmp(s[0], "R") == 0 && s[1][0] == 0, "labels");
    h5turbo_strings_free(s, n);
    h5turbo_attribute_close(a);
    h5turbo_object_close(o);
    CHECK(h5turbo_object_open(f, "/scales/rows", &o) == H5TURBO_OK, "open a scale");
    CHECK(h5turbo_attribute_open(o, "NAME", &a) == H5TURBO_OK, "scale NAME attribute");
    CHECK(h5turbo_attribute_read_strings(a, &s, &n) == H5TURBO_OK && n == 1 && strcmp(s[0], "dimnames") == 0, "scale name");
    h5turbo_strings_free(s, n);
    h5turbo_attribute_close(a);
    CHECK(h5turbo_dataset_dimension_scales(o, 0, &s, &n) == H5TURBO_OK && n == 0, "a scale has no scales");
    h5turbo_object_close(o);
    CHECK(h5turbo_object_open(f, "/scales", &o) == H5TURBO_OK, "open a group");
    CHECK(h5turbo_dataset_dimension_scales(o, 0, &s, &n) != H5TURBO_OK && s == NULL, "a group has no dimensions");
    h5turbo_object_close(o);
    h5turbo_file_close(f);
}

typedef struct { char *id; uint64_t n; long long sum; double digitisation; char *path; } read_summary;

/* Every read of dir, through batches of batch_size read with `threads` threads (two or
 * more: each batch is decoded while the previous one is summed here). */
static size_t collect(const char *dir, size_t batch_size, int threads, read_summary *out, size_t max) {
    h5turbo_fast5 *f5 = NULL;
    const char *paths[] = {dir};
    size_t k = 0;
    if (h5turbo_fast5_open(paths, 1, threads, 0, &f5) != H5TURBO_OK) return 0;
    for (;;) {
        h5turbo_fast5_batch *b = NULL;
        if (h5turbo_fast5_next_batch(f5, batch_size, &b) != H5TURBO_OK) break;
        size_t n = b->n;
        CHECK(n <= batch_size, "batch of %zu over %zu", n, batch_size);
        for (size_t i = 0; i < n && k < max; i++, k++) {
            h5turbo_fast5_read *r = &b->reads[i];
            long long s = 0;
            for (uint64_t j = 0; j < r->n_samples; j++) s += r->signal[j];
            out[k] = (read_summary){strdup(r->read_id), r->n_samples, s, r->digitisation, strdup(r->path)};
        }
        h5turbo_fast5_batch_free(b);
        if (n == 0) break;
    }
    h5turbo_fast5_close(f5);
    return k;
}

/* Batches kept while later ones are decoded (their signal memory is reused only once
 * freed), freed in another order, some after the handle is closed; and a handle
 * closed while a batch is being decoded ahead. */
static void test_fast5_kept(const char *dir, const read_summary *a, size_t na) {
    enum { KEPT = 4096 };
    static h5turbo_fast5_batch *kept[KEPT];
    const char *paths[] = {dir};
    h5turbo_fast5 *f5 = NULL;
    CHECK(h5turbo_fast5_open(paths, 1, 2, 0, &f5) == H5TURBO_OK, "fast5 open");
    size_t nk = 0;
    for (; nk < KEPT; nk++) {
        kept[nk] = NULL;
        if (h5turbo_fast5_next_batch(f5, 5, &kept[nk]) != H5TURBO_OK || kept[nk]->n == 0) break;
        if (nk % 3 == 2) { h5turbo_fast5_batch_free(kept[nk - 1]); kept[nk - 1] = NULL; } /* free some early */
    }
    h5turbo_fast5_close(f5);
    h5turbo_fast5_batch_free(kept[nk]);
    size_t k = 0, bad = 0;
    for (size_t i = 0; i < nk; i++) {
        size_t n = kept[i] ? kept[i]->n : 5;
        for (size_t j = 0; kept[i] && j < n && k + j < na; j++) {
            const h5turbo_fast5_read *r = &kept[i]->reads[j];
            long long s = 0;
            for (uint64_t m = 0; m < r->n_samples; m++) s += r->signal[m];
            bad += strcmp(r->read_id, a[k + j].id) != 0 || r->n_samples != a[k + j].n || s != a[k + j].sum;
        }
        k += n;
    }
    CHECK(bad == 0 && k >= na, "%zu reads of batches kept past later ones differ (%zu of %zu)", bad, k, na);
    for (size_t i = nk; i-- > 0;) h5turbo_fast5_batch_free(kept[i]); /* after close, last first */
    for (int threads = 1; threads <= 3; threads++) {
        h5turbo_fast5_batch *b = NULL;
        CHECK(h5turbo_fast5_open(paths, 1, threads, 0, &f5) == H5TURBO_OK, "fast5 open");
        CHECK(h5turbo_fast5_next_batch(f5, 2, &b) == H5TURBO_OK && b->n == 2, "first batch");
        h5turbo_fast5_close(f5); /* the next batch may be in flight */
        CHECK(strcmp(b->reads[0].read_id, a[0].id) == 0, "a batch outlives its handle");
        h5turbo_fast5_batch_free(b);
    }
}

/* Read a[i] fetched by id is the read streamed: id, file, samples (a file error's
 * entry, with no id, counts as fetched). */
static int fetched_as_streamed(h5turbo_fast5 *f5, const read_summary *a, size_t i) {
    if (a[i].id[0] == 0) return 1;
    h5turbo_fast5_batch *one = NULL;
    if (h5turbo_fast5_get(f5, a[i].id, &one) != H5TURBO_OK || one->n != 1) { h5turbo_fast5_batch_free(one); return 0; }
    h5turbo_fast5_read *r = &one->reads[0];
    long long s = 0;
    for (uint64_t j = 0; j < r->n_samples; j++) s += r->signal[j];
    /* read ids repeat across the corpus files: the first file holding it wins */
    size_t first = 0;
    while (strcmp(a[first].id, a[i].id) != 0) first++;
    int same = r->status == H5TURBO_OK && strcmp(r->read_id, a[i].id) == 0 && strcmp(r->path, a[first].path) == 0 &&
               s == a[first].sum && r->n_samples == a[first].n;
    h5turbo_fast5_batch_free(one);
    return same;
}

typedef struct { h5turbo_fast5 *f5; const read_summary *a; size_t na, step, start; int bad; } get_job;

/* Every read fetched in a scattered order (start + k * step, modulo na). */
static void *fetch_scattered(void *arg) {
    get_job *job = arg;
    for (size_t k = 0; k < job->na; k++) job->bad += !fetched_as_streamed(job->f5, job->a, (job->start + k * job->step) % job->na);
    return NULL;
}

/* h5turbo_fast5_get_batch: the reads asked, in the order asked (scattered across the
 * files, in batches of 1 to 50 ids, with repeats), as streamed; an unknown id fails the
 * call and names it; empty and NULL arguments. */
static void test_fast5_get_batch(h5turbo_fast5 *f5, const read_summary *a, size_t na, size_t step) {
    enum { MAX = 4096 };
    static const char *ids[MAX];
    static size_t which[MAX];
    size_t n = 0;
    for (size_t k = 0; k < na && n < MAX - 1; k++) {
        size_t i = (k * step) % na;
        if (a[i].id[0] == 0) continue; /* a file error's entry */
        which[n] = i;
        ids[n++] = a[i].id;
        if (k % 5 == 0) { which[n] = i; ids[n++] = a[i].id; } /* asked twice */
    }
    size_t sizes[] = {1, 7, 50}, bad = 0, got = 0;
    for (size_t s = 0; s < 3; s++) {
        for (size_t start = 0; start < n; start += sizes[s]) {
            size_t k = n - start < sizes[s] ? n - start : sizes[s];
            h5turbo_fast5_batch *b = NULL;
            if (h5turbo_fast5_get_batch(f5, ids + start, k, &b) != H5TURBO_OK || b->n != k) { bad += k; h5turbo_fast5_batch_free(b); continue; }
            for (size_t j = 0; j < k; j++) {
                const h5turbo_fast5_read *r = &b->reads[j];
                size_t first = 0;
                while (strcmp(a[first].id, ids[start + j]) != 0) first++;
                long long sum = 0;
                for (uint64_t m = 0; m < r->n_samples; m++) sum += r->signal[m];
                bad += r->status != H5TURBO_OK || strcmp(r->read_id, a[which[start + j]].id) != 0 ||
                       strcmp(r->path, a[first].path) != 0 || sum != a[first].sum || r->n_samples != a[first].n;
                got++;
            }
            h5turbo_fast5_batch_free(b);
        }
    }
    CHECK(bad == 0 && got == 3 * n, "%zu of %zu reads differ when fetched in batches by id", bad, got);
    h5turbo_fast5_batch *b = NULL;
    const char *unknown[] = {ids[0], "no-such-read", ids[1]};
    CHECK(h5turbo_fast5_get_batch(f5, unknown, 3, &b) == H5TURBO_E_NOT_FOUND && b == NULL &&
          strstr(h5turbo_last_error(), "no-such-read"), "an unknown id fails the batch: %s", h5turbo_last_error());
    CHECK(h5turbo_fast5_get_batch(f5, ids, 0, &b) == H5TURBO_OK && b && b->n == 0, "no ids: an empty batch");
    h5turbo_fast5_batch_free(b);
    b = NULL;
    CHECK(h5turbo_fast5_get_batch(f5, NULL, 2, &b) == H5TURBO_E_INVALID && b == NULL, "NULL read_ids");
    const char *holes[] = {ids[0], NULL};
    CHECK(h5turbo_fast5_get_batch(f5, holes, 2, &b) == H5TURBO_E_INVALID && strstr(h5turbo_last_error(), "read_ids[1]"),
          "a NULL id is named: %s", h5turbo_last_error());
    CHECK(h5turbo_fast5_get_batch(f5, ids, 1, NULL) == H5TURBO_E_INVALID, "NULL batch");
}

/* More files than h5turbo_fast5_get_batch opens at once (gen/many_fast5: 150 files):
 * every read asked for in one call, in an order that jumps between files, comes back
 * in that order with the values streamed. */
static void test_fast5_get_batch_many_files(const char *gen) {
    enum { MAX = 1024 };
    static read_summary a[MAX];
    static const char *ids[MAX];
    static size_t which[MAX];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/many_fast5", gen);
    size_t na = collect(dir, 100, 2, a, MAX);
    CHECK(na == 450, "%zu reads in the 150 files", na);
    if (na == 0) return;
    for (size_t k = 0; k < na; k++) {
        which[k] = (k * 7919) % na;
        ids[k] = a[which[k]].id;
    }
    h5turbo_fast5 *f5 = NULL;
    const char *paths[] = {dir};
    CHECK(h5turbo_fast5_open(paths, 1, 2, 0, &f5) == H5TURBO_OK, "fast5 open");
    h5turbo_fast5_batch *b = NULL;
    size_t bad = 0;
    if (h5turbo_fast5_get_batch(f5, ids, na, &b) == H5TURBO_OK && b->n == na) {
        for (size_t k = 0; k < na; k++) {
            const read_summary *want = &a[which[k]];
            const h5turbo_fast5_read *r = &b->reads[k];
            long long sum = 0;
            for (uint64_t m = 0; m < r->n_samples; m++) sum += r->signal[m];
            bad += r->status != H5TURBO_OK || strcmp(r->read_id, want->id) != 0 || strcmp(r->path, want->path) != 0 ||
                   r->n_samples != want->n || sum != want->sum || r->digitisation != want->digitisation;
        }
    } else {
        bad = na;
    }
    CHECK(bad == 0, "%zu of %zu reads from 150 files differ when fetched in one batch [%s]", bad, na, h5turbo_last_error());
    h5turbo_fast5_batch_free(b);
    h5turbo_fast5_close(f5);
    for (size_t i = 0; i < na; i++) { free(a[i].id); free(a[i].path); }
}

/* Reads fetched by id in an order that jumps between files (each multi-read file
 * reopened many times, its read groups looked up by name), on the calling thread and
 * from 4 C threads sharing the handle at once. */
static void test_fast5_get_scattered(h5turbo_fast5 *f5, const read_summary *a, size_t na) {
    size_t step = 7919 % na ? 7919 : 7907; /* primes: every read once, when na is not their multiple */
    get_job alone = {f5, a, na, step, 0, 0};
    fetch_scattered(&alone);
    CHECK(alone.bad == 0, "%d reads differ when fetched by id in scattered order", alone.bad);
    pthread_t threads[4];
    get_job jobs[4];
    for (size_t t = 0; t < 4; t++) {
        jobs[t] = (get_job){f5, a, na, step, t * na / 4, 0};
        pthread_create(&threads[t], NULL, fetch_scattered, &jobs[t]);
    }
    int bad = 0;
    for (size_t t = 0; t < 4; t++) { pthread_join(threads[t], NULL); bad += jobs[t].bad; }
    CHECK(bad == 0, "%d reads differ when fetched by id from 4 threads at once", bad);
    test_fast5_get_batch(f5, a, na, step);
}

/* h5turbo_fast5_read_ids: the ids streamed, each once (at its first file), in file
 * order, from a handle whose index it builds and from one that fetched already. */
static void check_read_ids(h5turbo_fast5 *f5, const read_summary *a, size_t na, const char *what) {
    char **ids = NULL;
    size_t n = 0, k = 0;
    int same = h5turbo_fast5_read_ids(f5, &ids, &n) == H5TURBO_OK;
    for (size_t i = 0; same && i < na; i++) {
        if (a[i].id[0] == 0) continue; /* a file error's entry */
        size_t first = 0;
        while (strcmp(a[first].id, a[i].id) != 0) first++;
        if (first < i) continue; /* listed at its first file */
        same = k < n && strcmp(ids[k++], a[i].id) == 0;
    }
    CHECK(same && k == n, "read ids of %s: %zu listed, %zu matched [%s]", what, n, k, h5turbo_last_error());
    h5turbo_strings_free(ids, n);
}

static void test_fast5_read_ids(const char *fast5_dir, h5turbo_fast5 *fetched, const read_summary *a, size_t na) {
    h5turbo_fast5 *fresh = NULL;
    const char *paths[] = {fast5_dir};
    CHECK(h5turbo_fast5_open(paths, 1, 2, 0, &fresh) == H5TURBO_OK, "fast5 open");
    check_read_ids(fresh, a, na, "a fresh handle");
    check_read_ids(fetched, a, na, "a handle that fetched");
    h5turbo_fast5_close(fresh);
    char **ids = (char **)1;
    size_t n = 1;
    CHECK(h5turbo_fast5_read_ids(NULL, &ids, &n) == H5TURBO_E_INVALID && ids == NULL && n == 0, "NULL handle");
    CHECK(h5turbo_fast5_read_ids(fetched, NULL, &n) == H5TURBO_E_INVALID, "NULL ids");
    CHECK(h5turbo_fast5_read_ids(fetched, &ids, NULL) == H5TURBO_E_INVALID, "NULL n");
}

static void test_fast5(const char *fast5_dir) {
    enum { MAX = 4096 };
    static read_summary a[MAX], b[MAX];
    size_t na = collect(fast5_dir, 1000, 1, a, MAX);
    CHECK(na > 0, "reads found");
    size_t sizes[] = {1, 3, 64, 1000, 1, 7};
    int threads[] = {2, 2, 2, 2, 1, 3};
    for (size_t s = 0; s < 6; s++) {
        size_t nb = collect(fast5_dir, sizes[s], threads[s], b, MAX);
        int same = nb == na;
        for (size_t i = 0; same && i < na; i++)
            same = strcmp(a[i].id, b[i].id) == 0 && a[i].n == b[i].n && a[i].sum == b[i].sum && strcmp(a[i].path, b[i].path) == 0;
        CHECK(same, "batches of %zu on %d threads give the reads of batches of 1000 on one", sizes[s], threads[s]);
        for (size_t i = 0; i < nb; i++) { free(b[i].id); free(b[i].path); }
    }
    test_fast5_kept(fast5_dir, a, na);
    /* get by read id: the same read as in the stream */
    h5turbo_fast5 *f5 = NULL;
    const char *paths[] = {fast5_dir};
    CHECK(h5turbo_fast5_open(paths, 1, 2, 0, &f5) == H5TURBO_OK, "fast5 open");
    size_t n_files = 0;
    CHECK(h5turbo_fast5_file_count(f5, &n_files) == H5TURBO_OK && n_files >= 10, "file count %zu", n_files);
    int bad = 0;
    for (size_t i = 0; i < na; i++) bad += !fetched_as_streamed(f5, a, i);
    CHECK(bad == 0, "%d reads differ when fetched by id", bad);
    test_fast5_get_scattered(f5, a, na);
    test_fast5_read_ids(fast5_dir, f5, a, na);
    h5turbo_fast5_batch *none = NULL;
    CHECK(h5turbo_fast5_get(f5, "no-such-read", &none) == H5TURBO_E_NOT_FOUND && none == NULL, "unknown read id");
    CHECK(h5turbo_fast5_next_batch(f5, 0, &none) == H5TURBO_E_INVALID, "max_reads 0");
    h5turbo_fast5_close(f5);
    for (size_t i = 0; i < na; i++) { free(a[i].id); free(a[i].path); }
}

/* A broken file among good ones: reported in its place, or stops the stream. */
static void test_fast5_errors(const char *fast5_dir, const char *broken) {
    char good[4096];
    snprintf(good, sizeof good, "%s/single_reads_read0.fast5", fast5_dir);
    const char *paths[] = {good, broken, good};
    h5turbo_fast5 *f5 = NULL;
    CHECK(h5turbo_fast5_open(paths, 3, 1, 0, &f5) == H5TURBO_OK, "open with a broken file");
    h5turbo_fast5_batch *b = NULL;
    CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b->n == 3, "three entries");
    if (b && b->n == 3) {
        CHECK(b->reads[0].status == H5TURBO_OK && b->reads[2].status == H5TURBO_OK, "good reads read");
        CHECK(b->reads[1].status != H5TURBO_OK && b->reads[1].signal == NULL, "broken file reported");
        CHECK(b->reads[1].error && strstr(b->reads[1].error, broken) != NULL, "error names the file: %s", b->reads[1].error);
        CHECK(strcmp(b->reads[1].path, broken) == 0, "path of the failed entry");
    }
    h5turbo_fast5_batch_free(b);
    h5turbo_fast5_close(f5);
    for (int threads = 1; threads <= 2; threads++) {
        CHECK(h5turbo_fast5_open(paths, 3, threads, 1, &f5) == H5TURBO_OK, "open with stop_on_error");
        /* the good read before the failure is given, then the failure stops a call, then the rest */
        b = NULL;
        CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b && b->n == 1 && b->reads[0].status == H5TURBO_OK,
              "stop_on_error: the batch ends before the failure");
        h5turbo_fast5_batch_free(b);
        b = NULL;
        int status = h5turbo_fast5_next_batch(f5, 10, &b);
        CHECK(status != H5TURBO_OK && b == NULL, "stop_on_error stops (%d)", status);
        CHECK(strstr(h5turbo_last_error(), broken) != NULL, "stop message names the file");
        CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b && b->n == 1 && b->reads[0].status == H5TURBO_OK,
              "stop_on_error: the read after the failure is given next");
        h5turbo_fast5_batch_free(b);
        b = NULL;
        CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b && b->n == 0, "then the end");
        h5turbo_fast5_batch_free(b);
        h5turbo_fast5_close(f5);
    }
    /* closing with reads held after a failure frees them (ASan's leak check) */
    CHECK(h5turbo_fast5_open(paths, 3, 1, 1, &f5) == H5TURBO_OK, "open with stop_on_error again");
    b = NULL;
    CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b && b->n == 1, "first batch");
    h5turbo_fast5_batch_free(b);
    h5turbo_fast5_close(f5);
    const char *missing[] = {"/nonexistent/folder/x.fast5"};
    CHECK(h5turbo_fast5_open(missing, 1, 1, 0, &f5) == H5TURBO_OK, "open a missing file (reported per read)");
    CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b->n == 1 && b->reads[0].status == H5TURBO_E_IO, "missing file is an IO entry");
    h5turbo_fast5_batch_free(b);
    h5turbo_fast5_close(f5);
    CHECK(h5turbo_fast5_open(NULL, 1, 1, 0, &f5) == H5TURBO_E_INVALID, "NULL paths");
}

/* A read whose Signal claims 2^40 samples (2 TiB, more than any test machine's memory
 * and swap), between two good ones: it fails alone, at once, with an error naming it, on
 * every thread count (never an abort, never an allocation filled until the out-of-memory
 * killer comes). */
static void test_fast5_huge_signal(const char *path) {
    for (int threads = 1; threads <= 2; threads++) {
        const char *paths[] = {path};
        h5turbo_fast5 *f5 = NULL;
        h5turbo_fast5_batch *b = NULL;
        CHECK(h5turbo_fast5_open(paths, 1, threads, 0, &f5) == H5TURBO_OK, "open the huge-signal file");
        CHECK(h5turbo_fast5_next_batch(f5, 10, &b) == H5TURBO_OK && b->n == 3, "three reads");
        if (b && b->n == 3) {
            const h5turbo_fast5_read *r = b->reads;
            CHECK(r[0].status == H5TURBO_OK && r[0].n_samples == 100 && r[0].signal[99] == 99, "read_a read");
            CHECK(r[2].status == H5TURBO_OK && r[2].n_samples == 300 && r[2].signal[299] == 299, "read_c read");
            CHECK(r[1].status == H5TURBO_E_NOMEM && r[1].signal == NULL, "the huge read fails: no memory for it");
            CHECK(r[1].error && strstr(r[1].error, "read_b") && strstr(r[1].error, "cannot allocate"),
                  "its error names the read and the problem: %s", r[1].error ? r[1].error : "(none)");
        }
        h5turbo_fast5_batch_free(b);
        h5turbo_fast5_close(f5);
    }
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t got;
    int ok = in && out;
    while (ok && (got = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, got, out) == got;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

/* An object's path is the one it was opened by (libhdf5's H5Iget_name), not the
 * target of the soft link it was reached through; an empty path is refused. */
static void test_opened_paths(const char *gen) {
    h5turbo_file *f = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "structures.h5"), &f) == H5TURBO_OK, "open structures.h5");
    if (!f) return;
    h5turbo_object *o = NULL, *root = NULL;
    const char *path = NULL;
    CHECK(h5turbo_object_open(f, "/soft", &o) == H5TURBO_OK && h5turbo_object_path(o, &path) == H5TURBO_OK &&
          strcmp(path, "/soft") == 0, "a soft link's path as opened: %s", path ? path : h5turbo_last_error());
    h5turbo_object_close(o);
    o = NULL;
    CHECK(h5turbo_object_open(f, "soft//", &o) == H5TURBO_OK && h5turbo_object_path(o, &path) == H5TURBO_OK &&
          strcmp(path, "/soft") == 0, "a path's repeated and trailing slashes dropped: %s", path);
    h5turbo_object_close(o);
    o = NULL;
    CHECK(h5turbo_object_open(f, "/", &root) == H5TURBO_OK, "open the root");
    CHECK(h5turbo_object_open_at(root, "./soft", &o) == H5TURBO_OK && h5turbo_object_path(o, &path) == H5TURBO_OK &&
          strcmp(path, "/soft") == 0, "a soft link opened from a group: %s", path);
    h5turbo_object_close(o);
    o = NULL;
    CHECK(h5turbo_object_open(f, "", &o) == H5TURBO_E_INVALID && o == NULL && strstr(h5turbo_last_error(), "empty") &&
          strstr(h5turbo_last_error(), "structures.h5"), "an empty path is refused: %s", h5turbo_last_error());
    CHECK(h5turbo_object_open_at(root, "", &o) == H5TURBO_E_INVALID && o == NULL, "an empty relative path is refused");
    h5turbo_object_close(root);
    h5turbo_file_close(f);
}

/* gen/odd_fast5 (gen_files.py odd_fast5): a variable-length read_id is the read's id
 * in the stream, in the index and for a fetch; a float holding a whole number is taken
 * for an integer field; a read_number that int32 cannot hold, or text, fails its read
 * (not a silent 0). */
static void test_fast5_odd_attributes(const char *gen) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/odd_fast5", gen);
    const char *paths[] = {dir};
    h5turbo_fast5 *f5 = NULL;
    CHECK(h5turbo_fast5_open(paths, 1, 1, 0, &f5) == H5TURBO_OK, "fast5 open odd_fast5");
    if (!f5) return;
    h5turbo_fast5_batch *b = NULL;
    CHECK(h5turbo_fast5_next_batch(f5, 100, &b) == H5TURBO_OK && b && b->n == 7, "odd_fast5: 7 reads");
    int seen = 0;
    for (size_t i = 0; b && i < b->n; i++) {
        const h5turbo_fast5_read *r = &b->reads[i];
        if (strstr(r->path, "single_no_id.fast5")) {
            /* no made-up id (the group's name) that the index would not know */
            seen++;
            CHECK(r->status == H5TURBO_E_FORMAT && strcmp(r->read_id, "") == 0 && r->signal == NULL && r->n_samples == 0 &&
                  r->error && strstr(r->error, "read_id") && strstr(r->error, "Read_100") && strstr(r->error, "single_no_id.fast5"),
                  "a read without read_id fails, naming file, group and problem: %s", r->error ? r->error : "(none)");
        } else if (strstr(r->path, "legacy_no_id.fast5")) {
            /* file_version 0.6: the file's name, as ont_fast5_api's Fast5Info names it */
            seen++;
            CHECK(r->status == H5TURBO_OK && strcmp(r->read_id, "legacy_no_id.fast5") == 0 && r->n_samples == 4,
                  "a legacy read without read_id is named by its file: '%s' %s", r->read_id, r->error ? r->error : "");
        } else if (strcmp(r->read_id, "single-vlen") == 0) {
            seen++;
            CHECK(r->status == H5TURBO_OK && r->n_samples == 5 && r->read_number == 42, "vlen read_id: read");
        } else if (strcmp(r->read_id, "start_float") == 0) {
            seen++;
            CHECK(r->status == H5TURBO_OK && r->start_time == 123456, "float start_time taken: %llu", (unsigned long long)r->start_time);
        } else if (strcmp(r->read_id, "duration_float32") == 0) {
            seen++;
            CHECK(r->status == H5TURBO_OK && r->duration == 77, "float32 duration taken");
        } else if (strcmp(r->read_id, "number_too_big") == 0 || strcmp(r->read_id, "number_text") == 0) {
            seen++;
            CHECK(r->status != H5TURBO_OK && r->error && strstr(r->error, "read_number") && strstr(r->error, r->read_id),
                  "%s: a failed read naming the attribute and read: %s", r->read_id, r->error ? r->error : "(none)");
        }
    }
    CHECK(seen == 7, "odd_fast5: every read by its id (%d of 7)", seen);
    h5turbo_fast5_batch_free(b);
    char **ids = NULL;
    size_t n = 0;
    int listed = 0;
    CHECK(h5turbo_fast5_read_ids(f5, &ids, &n) == H5TURBO_OK && n == 6, "odd_fast5: 6 ids indexed (%zu)", n);
    for (size_t i = 0; i < n; i++) listed += strcmp(ids[i], "single-vlen") == 0;
    CHECK(listed == 1, "the variable-length read_id indexed");
    listed = 0;
    for (size_t i = 0; i < n; i++) listed += strcmp(ids[i], "legacy_no_id.fast5") == 0;
    CHECK(listed == 1, "the legacy file's read indexed by the file's name");
    h5turbo_strings_free(ids, n);
    h5turbo_fast5_batch *one = NULL;
    CHECK(h5turbo_fast5_get(f5, "single-vlen", &one) == H5TURBO_OK && one && one->n == 1 &&
          strcmp(one->reads[0].read_id, "single-vlen") == 0 && one->reads[0].n_samples == 5, "fetched by its variable-length id");
    h5turbo_fast5_batch_free(one);
    h5turbo_fast5_close(f5);
}

/* A single-read file replaced by another read's file after the index was built: its
   read fetched by id is an error for that read (the file changed), never the other
   file's read under the id asked. */
static void test_fast5_get_replaced_file(const char *gen, const char *fast5_dir) {
    char dir[4096], file[4096], first[4096], other[4096];
    snprintf(dir, sizeof dir, "%s/replaced", gen);
    snprintf(file, sizeof file, "%s/replaced/a.fast5", gen);
    snprintf(first, sizeof first, "%s/single_reads_read0.fast5", fast5_dir);
    snprintf(other, sizeof other, "%s/read_file_v0.6_raw.fast5", fast5_dir);
    mkdir(dir, 0755);
    CHECK(copy_file(first, file), "copy a single-read file");
    h5turbo_fast5 *f5 = NULL;
    const char *paths[] = {dir};
    CHECK(h5turbo_fast5_open(paths, 1, 1, 0, &f5) == H5TURBO_OK, "fast5 open");
    char **ids = NULL;
    size_t n = 0;
    CHECK(h5turbo_fast5_read_ids(f5, &ids, &n) == H5TURBO_OK && n == 1, "one read id");
    CHECK(copy_file(other, file), "replace the file");
    h5turbo_fast5_batch *one = NULL;
    if (n == 1 && h5turbo_fast5_get(f5, ids[0], &one) == H5TURBO_OK) {
        const h5turbo_fast5_read *r = &one->reads[0];
        CHECK(one->n == 1 && r->status == H5TURBO_E_FORMAT && r->error && strstr(r->error, "changed since it was indexed") &&
              strstr(r->error, file) && r->signal == NULL,
              "a replaced file's read: status %d, error '%s'", r->status, r->error ? r->error : "(null)");
    } else {
        CHECK(0, "fetching from a replaced file returns the read's error in a batch");
    }
    h5turbo_fast5_batch_free(one);
    h5turbo_strings_free(ids, n);
    h5turbo_fast5_close(f5);
}

/* Files full of external links read under a low descriptor limit: each file keeps
   some of its targets open, and every file lets them go when the system has no
   descriptor left (4 files x 64 links under 40 free descriptors failed from the 40th
   target on; then, when each file let go of its own alone, every link of the fourth
   failed: the other three held the descriptors). */
static void link_targets_under(const char *gen, int free_descriptors) {
    struct rlimit old;
    if (getrlimit(RLIMIT_NOFILE, &old) != 0) return;
    /* the limit below which exactly free_descriptors numbers are free (an open
       descriptor above it, such as a shell's 255, leaves no more room) */
    int limit = 0;
    for (int found = 0; found < free_descriptors; limit++) found += fcntl(limit, F_GETFD) == -1;
    struct rlimit few = old;
    few.rlim_cur = (rlim_t)limit;
    CHECK(setrlimit(RLIMIT_NOFILE, &few) == 0, "lower the descriptor limit");
    h5turbo_file *files[4] = {NULL};
    int failed = 0;
    for (int m = 0; m < 4; m++) {
        char name[64];
        snprintf(name, sizeof name, "link_targets/m%d.h5", m);
        CHECK(h5turbo_file_open(path_in(gen, name), &files[m]) == H5TURBO_OK, "open %s under %d free descriptors: %s",
              name, free_descriptors, h5turbo_last_error());
        for (int i = 0; files[m] && i < 64; i++) {
            char link[16];
            snprintf(link, sizeof link, "/l%d", i);
            h5turbo_object *o = NULL;
            int64_t v[10] = {0};
            int ok = h5turbo_object_open(files[m], link, &o) == H5TURBO_OK &&
                     h5turbo_dataset_read(o, NULL, NULL, NULL, v, sizeof v, 1) == H5TURBO_OK && v[0] == i && v[9] == i + 9;
            if (!ok && failed++ == 0) printf("first failure: m%d %s: %s\n", m, link, h5turbo_last_error());
            h5turbo_object_close(o);
        }
    }
    CHECK(failed == 0, "every link of 4 files read under %d free descriptors (%d failed)", free_descriptors, failed);
    for (int m = 0; m < 4; m++) h5turbo_file_close(files[m]);
    setrlimit(RLIMIT_NOFILE, &old);
}

static void test_link_targets_under_few_descriptors(const char *gen) {
    link_targets_under(gen, 40);
    link_targets_under(gen, 6);
}

/* A stream used in a child of fork(): its threads are the parent's, so each call is
   an error there (it waited for them forever), close does nothing, and the parent's
   stream goes on. The child reports by its exit status (0: as documented). */
static void test_fast5_fork(const char *fast5_dir) {
    for (int threads = 1; threads <= 2; threads++) {
        const char *paths[] = {fast5_dir};
        h5turbo_fast5 *f5 = NULL;
        CHECK(h5turbo_fast5_open(paths, 1, threads, 0, &f5) == H5TURBO_OK, "fork: open (%d threads)", threads);
        if (!f5) return;
        h5turbo_fast5_batch *b = NULL;
        CHECK(h5turbo_fast5_next_batch(f5, 1, &b) == H5TURBO_OK && b && b->n == 1, "fork: a first read");
        char id[256] = "";
        if (b && b->n == 1) snprintf(id, sizeof id, "%s", b->reads[0].read_id);
        h5turbo_fast5_batch_free(b);
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            alarm(20);
            char **ids = NULL;
            size_t n = 0;
            h5turbo_fast5_batch *c = NULL;
            int bad = 0;
            bad += h5turbo_fast5_next_batch(f5, 1, &c) != H5TURBO_E_INVALID || c != NULL ||
                   !strstr(h5turbo_last_error(), "fork");
            bad += h5turbo_fast5_get(f5, id, &c) != H5TURBO_E_INVALID || c != NULL;
            bad += h5turbo_fast5_read_ids(f5, &ids, &n) != H5TURBO_E_INVALID;
            h5turbo_fast5_close(f5);
            _exit(bad);
        }
        int status = -1;
        CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "fork (%d threads): the child's calls are errors, its close returns (status %d)", threads, status);
        CHECK(h5turbo_fast5_next_batch(f5, 1, &b) == H5TURBO_OK && b && b->n == 1, "fork: the parent's stream goes on");
        h5turbo_fast5_batch_free(b);
        h5turbo_fast5_close(f5);
    }
}

/* A folder with links to folders: one elsewhere is walked (as ont_fast5_api walks it),
   links back up the tree (to the folder itself, from a sub-folder to its parent) list
   nothing twice. */
static void test_fast5_folder_links(const char *gen, const char *fast5_dir) {
    char top[4096], sub[4096], far[4096], link[4096], target[4096];
    snprintf(target, sizeof target, "%s/multi_read_batch_0.fast5", fast5_dir);
    snprintf(top, sizeof top, "%s/folder_links", gen);
    snprintf(sub, sizeof sub, "%s/folder_links/sub", gen);
    snprintf(far, sizeof far, "%s/folder_links_far", gen);
    mkdir(top, 0755);
    mkdir(sub, 0755);
    mkdir(far, 0755);
    const char *links[][2] = {{target, "folder_links/a.fast5"}, {target, "folder_links_far/b.fast5"},
                              {target, "folder_links/.fast5"}, /* named by its ending, as ont_fast5_api */
                              {".", "folder_links/self"}, {"..", "folder_links/sub/back"},
                              {far, "folder_links/z_far"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(link, sizeof link, "%s/%s", gen, links[i][1]);
        CHECK(symlink(links[i][0], link) == 0 || errno == EEXIST, "link %s", link);
    }
    enum { MAX = 4096 };
    static read_summary walked[MAX], alone[MAX];
    size_t n_walked = collect(top, 100, 2, walked, MAX);
    size_t n_alone = collect(target, 100, 2, alone, MAX);
    CHECK(n_alone > 0 && n_walked == 3 * n_alone, "%zu reads through the folder, %zu in the file (3 times expected)",
          n_walked, n_alone);
    if (n_walked == 3 * n_alone) {
        CHECK(strstr(walked[0].path, "folder_links/.fast5") && strstr(walked[n_alone].path, "folder_links/a.fast5") &&
              strstr(walked[2 * n_alone].path, "folder_links/z_far/b.fast5"),
              "in name order, the far folder through its link: %s, %s, %s", walked[0].path, walked[n_alone].path,
              walked[2 * n_alone].path);
    }
    for (size_t i = 0; i < n_walked; i++) { free(walked[i].id); free(walked[i].path); }
    for (size_t i = 0; i < n_alone; i++) { free(alone[i].id); free(alone[i].path); }
}

/* One reduction of all values (axis -1) of `path` in reductions.h5; its status. */
static int reduce_all(h5turbo_file *f, const char *path, int op, int threads, double *r) {
    h5turbo_object *o = NULL;
    int rc = h5turbo_object_open(f, path, &o);
    if (rc == H5TURBO_OK) rc = h5turbo_dataset_reduce(o, op, -1, 0, r, 1, threads);
    h5turbo_object_close(o);
    return rc;
}

/* Sums past 64 bits are exact (no wrapping), an integer mean is the same on every
   thread count, half floats reduce, and the extremes of nothing are errors. */
static void test_reduce_edges(const char *gen) {
    h5turbo_file *f = NULL;
    double r = 0;
    CHECK(h5turbo_file_open(path_in(gen, "reductions.h5"), &f) == H5TURBO_OK, "open reductions.h5");
    CHECK(reduce_all(f, "/u8_many", H5TURBO_SUM, 0, &r) == H5TURBO_OK && r == ldexp(3125, 67),
          "100000 x 2^62 sums to 3125 x 2^67: %.17g", r);
    CHECK(reduce_all(f, "/i8_three", H5TURBO_SUM, 2, &r) == H5TURBO_OK && r == ldexp(3, 62), "3 x 2^62: %.17g", r);
    CHECK(reduce_all(f, "/u8_extremes", H5TURBO_SUM, 1, &r) == H5TURBO_OK && r == ldexp(3, 63),
          "2^64 - 1 + 2^63 to the nearest double: %.17g", r);
    CHECK(reduce_all(f, "/u8_many", H5TURBO_MEAN, 0, &r) == H5TURBO_OK && r == ldexp(1, 62), "mean 2^62: %.17g", r);
    for (int threads = 1; threads <= 7; threads += 2) {
        CHECK(reduce_all(f, "/i4_range", H5TURBO_MEAN, threads, &r) == H5TURBO_OK && r == 4999.5,
              "mean of 0..9999 on %d threads: %.17g", threads, r);
        CHECK(reduce_all(f, "/i4_range", H5TURBO_SUM, threads, &r) == H5TURBO_OK && r == 49995000.0,
              "sum of 0..9999 on %d threads", threads);
    }
    /* arange(-8, 8, 0.25) as float16: every value and sum exact */
    CHECK(reduce_all(f, "/f2", H5TURBO_SUM, 2, &r) == H5TURBO_OK && r == -8.0, "half sum %.17g", r);
    CHECK(reduce_all(f, "/f2", H5TURBO_MIN, 2, &r) == H5TURBO_OK && r == -8.0, "half min %.17g", r);
    CHECK(reduce_all(f, "/f2", H5TURBO_MAX, 2, &r) == H5TURBO_OK && r == 7.75, "half max %.17g", r);
    CHECK(reduce_all(f, "/f2", H5TURBO_MEAN, 2, &r) == H5TURBO_OK && r == -0.125, "half mean %.17g", r);
    CHECK(reduce_all(f, "/f2", H5TURBO_COUNT_NONZERO, 2, &r) == H5TURBO_OK && r == 63.0, "half nonzero %.17g", r);
    /* nothing to reduce: a sum of 0, a NaN mean, no minimum or maximum */
    CHECK(reduce_all(f, "/empty", H5TURBO_SUM, 0, &r) == H5TURBO_OK && r == 0.0, "empty sum");
    CHECK(reduce_all(f, "/empty", H5TURBO_MEAN, 0, &r) == H5TURBO_OK && isnan(r), "empty mean is NaN");
    CHECK(reduce_all(f, "/empty", H5TURBO_MIN, 0, &r) == H5TURBO_E_INVALID &&
          strstr(h5turbo_last_error(), "minimum of no values") && strstr(h5turbo_last_error(), "/empty"),
          "empty min is an error naming the dataset: %s", h5turbo_last_error());
    CHECK(reduce_all(f, "/empty", H5TURBO_MAX, 0, &r) == H5TURBO_E_INVALID, "empty max is an error");
    h5turbo_object *o = NULL;
    double cells[5];
    h5turbo_object_open(f, "/empty", &o);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_MAX, 0, 0, cells, 5, 0) == H5TURBO_E_INVALID,
          "max along an empty axis is an error");
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_SUM, 1, 0, cells, 0, 0) == H5TURBO_OK, "sums of no rows");
    h5turbo_object_close(o);
    /* a scalar is its one value, as numpy reduces a 0-d array; a null dataspace holds none */
    CHECK(reduce_all(f, "/scalar_be_i8", H5TURBO_SUM, 1, &r) == H5TURBO_OK && r == -ldexp(1, 62) - 3.0,
          "scalar sum %.17g", r);
    CHECK(reduce_all(f, "/scalar_be_i8", H5TURBO_MIN, 2, &r) == H5TURBO_OK && r == -ldexp(1, 62) - 3.0, "scalar min");
    CHECK(reduce_all(f, "/scalar_f4", H5TURBO_MEAN, 0, &r) == H5TURBO_OK && r == -1.5, "scalar mean %.17g", r);
    CHECK(reduce_all(f, "/scalar_f4", H5TURBO_COUNT_NONZERO, 0, &r) == H5TURBO_OK && r == 1.0, "scalar nonzero");
    CHECK(reduce_all(f, "/scalar_f4", H5TURBO_VAR, 0, &r) == H5TURBO_OK && r == 0.0, "scalar variance %.17g", r);
    h5turbo_object_open(f, "/scalar_f4", &o);
    CHECK(h5turbo_dataset_reduce(o, H5TURBO_SUM, 0, 0, cells, 1, 0) == H5TURBO_E_INVALID, "a scalar has no axis 0");
    h5turbo_object_close(o);
    CHECK(reduce_all(f, "/null", H5TURBO_SUM, 0, &r) == H5TURBO_E_INVALID && strstr(h5turbo_last_error(), "reductions.h5") &&
          strstr(h5turbo_last_error(), "/null") && strstr(h5turbo_last_error(), "null dataspace"),
          "a null dataspace is an error naming it: %s", h5turbo_last_error());
    h5turbo_file_close(f);
}

/* The message of the last failure names `file` and `object` (when not NULL) and says `what`. */
static int names_all(const char *file, const char *object, const char *what) {
    const char *m = h5turbo_last_error();
    return strstr(m, file) && (!object || strstr(m, object)) && strstr(m, what);
}

/* A NULL output pointer (and a bad path) is told with the file and the object, as
   every other failure is; a failed call writes no output (pointers to handles and
   arrays aside, which are set to NULL first). */
static void test_error_contract(const char *gen, const char *fast5_dir) {
    h5turbo_file *f = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "dtypes.h5"), NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", NULL, "file is NULL"),
          "open, NULL out names the file: %s", h5turbo_last_error());
    CHECK(h5turbo_file_open(gen, &f) == H5TURBO_E_IO && f == NULL && names_all(gen, NULL, "folder") &&
          !strstr(h5turbo_last_error(), "offset 0"), "a folder is told as one, no offset 0: %s", h5turbo_last_error());
    CHECK(h5turbo_file_open(path_in(gen, "dtypes.h5"), &f) == H5TURBO_OK, "open dtypes.h5");
    h5turbo_object *o = NULL, *group = NULL;
    CHECK(h5turbo_object_open(f, "/chunked/le_i4", NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", "/chunked/le_i4", "obj is NULL"),
          "object_open, NULL out: %s", h5turbo_last_error());
    /* names are bytes, as libhdf5 takes them: one that is not UTF-8 is looked up (and
       shown as \xNN in the message) */
    CHECK(h5turbo_object_open(f, "/\xff\xfe", &o) == H5TURBO_E_NOT_FOUND && o == NULL && names_all("dtypes.h5", "\\xff\\xfe", "no object"),
          "object_open, a path that is not UTF-8: %s", h5turbo_last_error());
    CHECK(h5turbo_object_open(f, NULL, &o) == H5TURBO_E_INVALID && names_all("dtypes.h5", NULL, "path is NULL"),
          "object_open, NULL path: %s", h5turbo_last_error());
    CHECK(h5turbo_object_open(f, "/chunked", &group) == H5TURBO_OK, "open /chunked");
    CHECK(h5turbo_object_open_at(group, "le_i4", NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", "/chunked", "obj is NULL"),
          "object_open_at, NULL out: %s", h5turbo_last_error());
    CHECK(h5turbo_object_open_at(group, "\xff", &o) == H5TURBO_E_NOT_FOUND && o == NULL && names_all("dtypes.h5", "/chunked", "\\xff"),
          "object_open_at, a path that is not UTF-8: %s", h5turbo_last_error());
    CHECK(h5turbo_link_kind(group, "le_i4", NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", "/chunked", "kind is NULL"),
          "link_kind, NULL out: %s", h5turbo_last_error());
    int kind = 0;
    CHECK(h5turbo_link_kind(group, "\xff", &kind) == H5TURBO_E_NOT_FOUND && names_all("dtypes.h5", "/chunked", "\\xff"),
          "link_kind, a name that is not UTF-8: %s", h5turbo_last_error());
    CHECK(h5turbo_object_open(f, "/chunked/le_i4", &o) == H5TURBO_OK, "open /chunked/le_i4");
    const char *ds = "/chunked/le_i4";
    CHECK(h5turbo_object_kind(o, NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", ds, "kind is NULL"), "object_kind: %s", h5turbo_last_error());
    CHECK(h5turbo_object_path(o, NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", ds, "path is NULL"), "object_path: %s", h5turbo_last_error());
    CHECK(h5turbo_object_address(o, NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", ds, "address is NULL"),
          "object_address: %s", h5turbo_last_error());
    const char *file_name = "untouched";
    CHECK(h5turbo_object_filename(o, NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", ds, "path is NULL"),
          "object_filename: %s", h5turbo_last_error());
    CHECK(h5turbo_object_filename(NULL, &file_name) == H5TURBO_E_INVALID && strcmp(file_name, "untouched") == 0,
          "object_filename of NULL: %s", h5turbo_last_error());
    CHECK(h5turbo_object_filename(o, &file_name) == H5TURBO_OK && strstr(file_name, "dtypes.h5"), "object_filename: %s", file_name);
    CHECK(h5turbo_dataset_rank(o, NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", ds, "rank is NULL"), "dataset_rank: %s", h5turbo_last_error());
    CHECK(h5turbo_dataset_datatype(o, NULL) == H5TURBO_E_INVALID && names_all("dtypes.h5", ds, "dt is NULL"),
          "dataset_datatype: %s", h5turbo_last_error());
    /* outputs untouched on failure */
    uint64_t dims[3] = {7, 7, 7};
    int chunked = 5;
    CHECK(h5turbo_dataset_chunk_shape(o, dims, 2, &chunked) == H5TURBO_E_INVALID && chunked == 5 && dims[0] == 7 &&
          names_all("dtypes.h5", ds, "max_rank"), "chunk_shape, max_rank too small: chunked %d untouched: %s", chunked, h5turbo_last_error());
    CHECK(h5turbo_dataset_chunk_shape(o, dims, 3, &chunked) == H5TURBO_OK && chunked == 1, "chunk_shape");
    h5turbo_object_close(o);
    h5turbo_object_close(group);
    h5turbo_file_close(f);

    CHECK(h5turbo_file_open(path_in(gen, "filters.h5"), &f) == H5TURBO_OK, "open filters.h5");
    CHECK(h5turbo_object_open(f, "/gzip_shuffle_fletcher32/i4", &o) == H5TURBO_OK, "open a filtered dataset");
    size_t count = 777;
    uint32_t ids[2] = {0, 0};
    CHECK(h5turbo_dataset_filters(o, NULL, 4, &count) == H5TURBO_E_INVALID && count == 777 &&
          names_all("filters.h5", "/gzip_shuffle_fletcher32/i4", "ids is NULL"),
          "filters: ids NULL with max 4 fails and leaves count (%zu): %s", count, h5turbo_last_error());
    CHECK(h5turbo_dataset_filters(o, ids, 1, &count) == H5TURBO_OK && count == 3 && ids[0] != 0 && ids[1] == 0,
          "filters: room for 1 of 3 (count %zu, ids %u %u)", count, ids[0], ids[1]);
    CHECK(h5turbo_dataset_filters(o, NULL, 0, &count) == H5TURBO_OK && count == 3, "filters: the count alone");
    CHECK(h5turbo_dataset_filters(o, ids, 2, NULL) == H5TURBO_E_INVALID && names_all("filters.h5", "/gzip_shuffle_fletcher32/i4", "count is NULL"),
          "filters: count NULL: %s", h5turbo_last_error());
    h5turbo_object_close(o);
    h5turbo_file_close(f);

    CHECK(h5turbo_file_open(path_in(gen, "structures.h5"), &f) == H5TURBO_OK, "open structures.h5");
    CHECK(h5turbo_object_open(f, "/compound", &o) == H5TURBO_OK, "open /compound");
    h5turbo_attribute *a = NULL;
    CHECK(h5turbo_attribute_open(o, "\xff", &a) == H5TURBO_E_NOT_FOUND && a == NULL && names_all("structures.h5", "/compound", "\\xff"),
          "attribute_open, a name that is not UTF-8: %s", h5turbo_last_error());
    CHECK(h5turbo_attribute_open(o, "be_float", &a) == H5TURBO_OK, "open be_float");
    CHECK(h5turbo_attribute_rank(a, NULL) == H5TURBO_E_INVALID && names_all("structures.h5", "/compound (attribute 'be_float')", "rank is NULL"),
          "attribute_rank: %s", h5turbo_last_error());
    h5turbo_attribute_close(a);
    h5turbo_columns *cols = NULL;
    CHECK(h5turbo_dataset_read_columns(o, NULL, NULL, NULL, &cols, 1) == H5TURBO_OK, "columns of /compound");
    CHECK(h5turbo_columns_rows(cols, NULL) == H5TURBO_E_INVALID && names_all("structures.h5", "/compound", "rows is NULL"),
          "columns_rows: %s", h5turbo_last_error());
    size_t rows = 0;
    CHECK(h5turbo_columns_rows(cols, &rows) == H5TURBO_OK && rows > 0, "columns_rows");
    CHECK(h5turbo_columns_member(cols, 0, NULL, 1u << 20) == H5TURBO_E_INVALID && names_all("structures.h5", "/compound", "buf is NULL"),
          "columns_member, NULL buf: %s", h5turbo_last_error());
    CHECK(h5turbo_columns_member_strings(cols, 0, NULL, &rows) == H5TURBO_E_INVALID && names_all("structures.h5", "/compound", "strings is NULL"),
          "columns_member_strings: %s", h5turbo_last_error());
    h5turbo_columns_free(cols);
    h5turbo_object_close(o);
    h5turbo_file_close(f);

    /* a dataspace parsed from a copy of its bytes once said "(at byte offset 0)"; its own address now */
    const char *damaged = path_in(gen, "damaged/dataspace_version.h5");
    CHECK(h5turbo_file_open(damaged, &f) == H5TURBO_OK, "open the damaged file");
    int rank = -9;
    if (h5turbo_object_open(f, "/bad", &o) == H5TURBO_OK) {
        CHECK(h5turbo_dataset_rank(o, &rank) == H5TURBO_E_FORMAT && rank == -9 &&
              names_all("dataspace_version.h5", "/bad", "dataspace message version 9") && !strstr(h5turbo_last_error(), "offset 0"),
              "a broken dataspace: no meaningless offset: %s", h5turbo_last_error());
        h5turbo_object_close(o);
    } else {
        CHECK(names_all("dataspace_version.h5", "/bad", "dataspace message version 9") && !strstr(h5turbo_last_error(), "offset 0"),
              "a broken dataspace: no meaningless offset: %s", h5turbo_last_error());
    }
    h5turbo_file_close(f);

    /* fast5 streams: errors name the paths the stream was opened with */
    const char *paths[] = {fast5_dir};
    h5turbo_fast5 *f5 = NULL;
    CHECK(h5turbo_fast5_open(paths, 1, 1, 0, NULL) == H5TURBO_E_INVALID && names_all(fast5_dir, NULL, "f5 is NULL"),
          "fast5_open, NULL out: %s", h5turbo_last_error());
    CHECK(h5turbo_fast5_open(paths, 1, 1, 0, &f5) == H5TURBO_OK, "fast5_open");
    CHECK(h5turbo_fast5_file_count(f5, NULL) == H5TURBO_E_INVALID && names_all(fast5_dir, NULL, "n is NULL"),
          "fast5_file_count: %s", h5turbo_last_error());
    CHECK(h5turbo_fast5_next_batch(f5, 4, NULL) == H5TURBO_E_INVALID && names_all(fast5_dir, NULL, "batch is NULL"),
          "fast5_next_batch: %s", h5turbo_last_error());
    CHECK(h5turbo_fast5_get(f5, "x", NULL) == H5TURBO_E_INVALID && names_all(fast5_dir, NULL, "one is NULL"),
          "fast5_get: %s", h5turbo_last_error());
    const char *wanted[] = {"x"};
    CHECK(h5turbo_fast5_get_batch(f5, wanted, 1, NULL) == H5TURBO_E_INVALID && names_all(fast5_dir, NULL, "batch is NULL"),
          "fast5_get_batch: %s", h5turbo_last_error());
    size_t n_ids = 0;
    CHECK(h5turbo_fast5_read_ids(f5, NULL, &n_ids) == H5TURBO_E_INVALID && names_all(fast5_dir, NULL, "ids is NULL"),
          "fast5_read_ids: %s", h5turbo_last_error());
    h5turbo_fast5_close(f5);
}

/* Names inside the file are bytes, as libhdf5 takes them: Latin-1 names are listed
   as their bytes, opened by them and kept apart (compare.c checks every listing
   against libhdf5). */
static void test_latin1_names(const char *gen) {
    h5turbo_file *f = NULL;
    h5turbo_object *group = NULL, *o = NULL;
    h5turbo_attribute *a = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "latin1_names.h5"), &f) == H5TURBO_OK, "open latin1_names.h5");
    CHECK(h5turbo_object_open(f, "/gr\xfcn", &group) == H5TURBO_OK, "open /gr\\xfcn: %s", h5turbo_last_error());
    char **names = NULL;
    size_t n = 0;
    CHECK(h5turbo_group_members(group, &names, &n) == H5TURBO_OK && n == 3 && strcmp(names[0], "caf\xe8") == 0 &&
          strcmp(names[1], "caf\xe9") == 0, "members by their bytes, in byte order: %s", h5turbo_last_error());
    h5turbo_strings_free(names, n);
    uint64_t dims[1] = {0};
    CHECK(h5turbo_object_open_at(group, "caf\xe9", &o) == H5TURBO_OK && h5turbo_dataset_shape(o, dims, 1) == H5TURBO_OK &&
          dims[0] == 3, "caf\\xe9 is its own dataset (3 elements, not caf\\xe8's 4): %s", h5turbo_last_error());
    const char *path = NULL;
    CHECK(h5turbo_object_path(o, &path) == H5TURBO_OK && strcmp(path, "/gr\xfcn/caf\xe9") == 0, "its path, in bytes");
    h5turbo_object_close(o);
    CHECK(h5turbo_attribute_open(group, "att\xe9", &a) == H5TURBO_OK, "attribute att\\xe9: %s", h5turbo_last_error());
    h5turbo_attribute_close(a);
    CHECK(h5turbo_object_open(f, "/dense/n7\xe9", &o) == H5TURBO_OK, "a dense group's Latin-1 name: %s", h5turbo_last_error());
    h5turbo_object_close(o);
    h5turbo_object_close(group);
    h5turbo_file_close(f);
}

/* File paths are bytes: a file and a fast5 folder whose names are not UTF-8 open. */
static void test_bytes_paths(const char *gen) {
    char dir[2048], sub[3072], h5[3072], f5path[4096];
    snprintf(dir, sizeof dir, "%s/bytes_\xff_paths", gen);
    snprintf(sub, sizeof sub, "%s/sub\xfe", dir);
    snprintf(h5, sizeof h5, "%s/\xff.h5", dir);
    snprintf(f5path, sizeof f5path, "%s/r\xff.fast5", sub);
    CHECK(mkdir(dir, 0700) == 0 && mkdir(sub, 0700) == 0, "make folders with non-UTF-8 names");
    int copied = 1;
    const char *from[2] = {"dtypes.h5", "many_fast5/batch_000.fast5"};
    const char *to[2] = {h5, f5path};
    for (int k = 0; k < 2; k++) {
        FILE *in = fopen(path_in(gen, from[k]), "rb"), *out = fopen(to[k], "wb");
        char block[65536];
        size_t got;
        if (!in || !out) copied = 0;
        while (in && out && (got = fread(block, 1, sizeof block, in)) > 0) copied &= fwrite(block, 1, got, out) == got;
        if (in) fclose(in);
        if (out) fclose(out);
    }
    CHECK(copied, "copy files to non-UTF-8 names");
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL;
    int rank = 0;
    CHECK(h5turbo_file_open(h5, &f) == H5TURBO_OK && h5turbo_object_open(f, "/chunked/le_i4", &o) == H5TURBO_OK &&
          h5turbo_dataset_rank(o, &rank) == H5TURBO_OK && rank == 3, "a file whose name is not UTF-8: %s", h5turbo_last_error());
    h5turbo_object_close(o);
    h5turbo_file_close(f);
    const char *paths[] = {dir};
    h5turbo_fast5 *f5 = NULL;
    h5turbo_fast5_batch *b = NULL;
    size_t files = 0;
    CHECK(h5turbo_fast5_open(paths, 1, 1, 1, &f5) == H5TURBO_OK && h5turbo_fast5_file_count(f5, &files) == H5TURBO_OK && files == 1,
          "a fast5 folder whose names are not UTF-8: %zu files: %s", files, h5turbo_last_error());
    CHECK(h5turbo_fast5_next_batch(f5, 100, &b) == H5TURBO_OK && b->n == 3 && strcmp(b->reads[0].path, f5path) == 0 &&
          b->reads[0].status == H5TURBO_OK && b->reads[0].n_samples > 0, "its reads, their path the file's bytes: %s", h5turbo_last_error());
    h5turbo_fast5_batch_free(b);
    h5turbo_fast5_close(f5);
    unlink(f5path);
    unlink(h5);
    rmdir(sub);
    rmdir(dir);
}

/* External links are followed into their files, as H5Oopen (gen/external, gen_files.py). */
static void read_4x6(const char *what, const h5turbo_object *o, int32_t scale) {
    uint64_t start[2] = {0, 0}, count[2] = {4, 6};
    int32_t got[24];
    int same = h5turbo_dataset_read(o, start, count, NULL, got, sizeof got, 1) == H5TURBO_OK;
    for (int k = 0; same && k < 24; k++) same = got[k] == k * scale;
    CHECK(same, "%s: the target's values", what);
}

static void test_external_links(const char *gen) {
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL, *root = NULL, *g = NULL;
    const char *path = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "external/links.h5"), &f) == H5TURBO_OK, "open external/links.h5");
    const char *to_data[] = {"/to_data", "/to_root/data", "/round_trip", "/g/soft_to_ext", "to_data"};
    for (int k = 0; k < 5; k++) {
        int rc = k < 4 ? h5turbo_object_open(f, to_data[k], &o) : H5TURBO_E_INVALID;
        if (k == 4 && h5turbo_object_open(f, "/", &root) == H5TURBO_OK) rc = h5turbo_object_open_at(root, to_data[k], &o);
        CHECK(rc == H5TURBO_OK && h5turbo_object_path(o, &path) == H5TURBO_OK, "open %s through external links", to_data[k]);
        if (rc == H5TURBO_OK) read_4x6(to_data[k], o, 3);
        h5turbo_object_close(o);
        o = NULL;
    }
    CHECK(h5turbo_object_open(f, "/to_root", &g) == H5TURBO_OK && h5turbo_object_open_at(g, "data", &o) == H5TURBO_OK,
          "a member of a group reached through an external link");
    if (o) read_4x6("/to_root then data", o, 3);
    h5turbo_object_close(o);
    o = NULL;
    CHECK(h5turbo_object_open(f, "/missing", &o) == H5TURBO_E_NOT_FOUND && o == NULL &&
          strstr(h5turbo_last_error(), "no_such_file.h5") && strstr(h5turbo_last_error(), "missing"),
          "a link to a missing file: not found, naming the link and the file");
    CHECK(h5turbo_object_open(f, "/loop_a", &o) == H5TURBO_E_NOT_FOUND && o == NULL && strstr(h5turbo_last_error(), "loop"),
          "external links round in a loop: an error, not a hang");
    /* valid HDF5 (libhdf5 makes it): the path names no object, as libhdf5's "too many links" */
    CHECK(h5turbo_object_open(f, "/soft_self", &o) == H5TURBO_E_NOT_FOUND && o == NULL &&
          strstr(h5turbo_last_error(), "soft_self") && strstr(h5turbo_last_error(), "too many"),
          "a soft link to itself is not found, not a damaged file: %s", h5turbo_last_error());
    h5turbo_object_close(g);
    h5turbo_object_close(root);
    h5turbo_file_close(f);
}

/* Released twice, or used after its release: an error (libhdf5 refuses a closed id),
   never a second free (a double close corrupted mimalloc and hung the program at exit)
   or a read of freed memory (ASan checks this run). */
static void test_handle_misuse(const char *gen, const char *fast5_dir) {
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL, *root = NULL;
    h5turbo_attribute *a = NULL;
    h5turbo_datatype *dt = NULL;
    char **names = NULL, **texts = NULL;
    size_t n = 0, n_texts = 0;
    int rank = 7;
    CHECK(h5turbo_file_open(path_in(gen, "structures.h5"), &f) == H5TURBO_OK, "open structures.h5");
    CHECK(h5turbo_object_open(f, "/compound", &o) == H5TURBO_OK && h5turbo_object_open(f, "/", &root) == H5TURBO_OK,
          "open objects");
    CHECK(h5turbo_attribute_open(o, "fixed", &a) == H5TURBO_OK && h5turbo_attribute_datatype(a, &dt) == H5TURBO_OK,
          "open an attribute and its type");
    CHECK(h5turbo_attribute_read_strings(a, &texts, &n_texts) == H5TURBO_OK && n_texts == 1, "read its strings");
    CHECK(h5turbo_group_members(root, &names, &n) == H5TURBO_OK && n > 0, "list the root");
    h5turbo_strings_free(names, n);
    h5turbo_strings_free(names, n);
    CHECK(strstr(h5turbo_last_error(), "not an open handle") != NULL, "strings freed twice: told, not freed: %s",
          h5turbo_last_error());
    h5turbo_strings_free(texts, n_texts);
    h5turbo_datatype_close(dt);
    h5turbo_datatype_close(dt);
    CHECK(strstr(h5turbo_last_error(), "dt is not an open handle") != NULL, "a type closed twice: %s", h5turbo_last_error());
    h5turbo_type_info info;
    CHECK(h5turbo_datatype_info(dt, &info) == H5TURBO_E_INVALID && strstr(h5turbo_last_error(), "not an open handle"),
          "a closed type is refused: %s", h5turbo_last_error());
    h5turbo_attribute_close(a);
    h5turbo_attribute_close(a);
    CHECK(h5turbo_attribute_rank(a, &rank) == H5TURBO_E_INVALID && rank == 7, "a closed attribute is refused: %s",
          h5turbo_last_error());
    h5turbo_object_close(o);
    h5turbo_object_close(o);
    CHECK(strstr(h5turbo_last_error(), "obj is not an open handle") != NULL, "an object closed twice: %s",
          h5turbo_last_error());
    CHECK(h5turbo_dataset_rank(o, &rank) == H5TURBO_E_INVALID && rank == 7 && strstr(h5turbo_last_error(), "not an open handle"),
          "a closed object is refused: %s", h5turbo_last_error());
    h5turbo_object_close(root);
    h5turbo_file_close(f);
    h5turbo_file_close(f);
    CHECK(h5turbo_object_open(f, "/compound", &o) == H5TURBO_E_INVALID && o == NULL, "a closed file is refused: %s",
          h5turbo_last_error());
    const char *paths[] = {fast5_dir};
    h5turbo_fast5 *f5 = NULL;
    h5turbo_fast5_batch *b = NULL;
    CHECK(h5turbo_fast5_open(paths, 1, 1, 0, &f5) == H5TURBO_OK && h5turbo_fast5_next_batch(f5, 4, &b) == H5TURBO_OK,
          "a fast5 batch");
    h5turbo_fast5_batch_free(b);
    h5turbo_fast5_batch_free(b);
    CHECK(strstr(h5turbo_last_error(), "batch is not an open handle") != NULL, "a batch freed twice: %s", h5turbo_last_error());
    h5turbo_fast5_close(f5);
    h5turbo_fast5_close(f5);
    CHECK(h5turbo_fast5_next_batch(f5, 4, &b) == H5TURBO_E_INVALID && b == NULL, "a closed stream is refused: %s",
          h5turbo_last_error());
}

/* A live handle of another kind (easy through an FFI that passes untyped pointers:
   Python's ctypes, Julia's Ptr{Cvoid}): an error naming it, never a read of the wrong
   memory (a crash), a hang, or a success with a made-up value. */
static void test_handle_of_another_kind(const char *gen) {
    h5turbo_file *f = NULL;
    h5turbo_object *o = NULL;
    h5turbo_datatype *dt = NULL;
    CHECK(h5turbo_file_open(path_in(gen, "structures.h5"), &f) == H5TURBO_OK &&
          h5turbo_object_open(f, "/compound", &o) == H5TURBO_OK && h5turbo_dataset_datatype(o, &dt) == H5TURBO_OK,
          "open a file, a dataset and its type");
    int rank = 7, kind = 7;
    CHECK(h5turbo_dataset_rank((h5turbo_object *)(void *)dt, &rank) == H5TURBO_E_INVALID && rank == 7 &&
          strstr(h5turbo_last_error(), "another kind"), "a type handle as a dataset's: %s", h5turbo_last_error());
    CHECK(h5turbo_object_kind((h5turbo_object *)(void *)f, &kind) == H5TURBO_E_INVALID && kind == 7,
          "a file handle as an object's: %s", h5turbo_last_error());
    char buf[64];
    CHECK(h5turbo_dataset_read((h5turbo_object *)(void *)f, NULL, NULL, NULL, buf, sizeof buf, 1) == H5TURBO_E_INVALID,
          "a file handle read as a dataset: %s", h5turbo_last_error());
    h5turbo_file_close((h5turbo_file *)(void *)o);
    CHECK(strstr(h5turbo_last_error(), "another kind") != NULL, "an object handle given to file_close: nothing closed: %s",
          h5turbo_last_error());
    h5turbo_strings_free((char **)(void *)f, 3);
    CHECK(strstr(h5turbo_last_error(), "another kind") != NULL, "a file handle given to strings_free: nothing freed: %s",
          h5turbo_last_error());
    h5turbo_sequences_free((h5turbo_sequence *)(void *)o, 3);
    CHECK(h5turbo_dataset_rank(o, &rank) == H5TURBO_OK && rank == 1 && h5turbo_object_kind(o, &kind) == H5TURBO_OK,
          "the handles given to the wrong calls still work");
    h5turbo_datatype_close(dt);
    h5turbo_object_close(o);
    h5turbo_file_close(f);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: api_test GENERATED_DIR FAST5_DIR BROKEN_FAST5 HUGE_SIGNAL_FAST5\n"); return 2; }
    test_errors(argv[1]);
    test_error_contract(argv[1], argv[2]);
    test_bytes_paths(argv[1]);
    test_latin1_names(argv[1]);
    test_external_links(argv[1]);
    test_reduce(argv[1], "/gzip/i4");
    test_reduce(argv[1], "/shuffle/be_i2");
    test_reduce(argv[1], "/gzip_shuffle_fletcher32/i4");
    test_reduce_edges(argv[1]);
    test_strings_and_attributes(argv[1]);
    test_dimension_scales(argv[1]);
    test_fast5(argv[2]);
    test_fast5_get_batch_many_files(argv[1]);
    test_fast5_folder_links(argv[1], argv[2]);
    test_fast5_fork(argv[2]);
    test_link_targets_under_few_descriptors(argv[1]);
    test_fast5_get_replaced_file(argv[1], argv[2]);
    test_fast5_odd_attributes(argv[1]);
    test_opened_paths(argv[1]);
    test_fast5_errors(argv[2], argv[3]);
    test_fast5_huge_signal(argv[4]);
    test_handle_misuse(argv[1], argv[2]);
    test_handle_of_another_kind(argv[1]);
    printf("api_test: %ld checks, %ld failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
