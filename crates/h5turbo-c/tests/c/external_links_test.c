/* External links followed from C open each target file once per source file (the
 * core's cache of link targets), and read what libhdf5 reads.
 * Usage: external_links_test FOLDER, where FOLDER holds copies of the libhdf5-written
 * fixtures crates/h5turbo-core/tests/data/external_links/{links,target,
 * target_rewritten}.h5 (the test rewrites target.h5 there).
 * Build: cc external_links_test.c $(pkg-config --cflags --libs h5turbo hdf5-serial) */
#include <h5turbo.h>
#include <hdf5.h>
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, " (%s)\n", h5turbo_last_error()); } } while (0)

static char *in(const char *folder, const char *name) {
    static char paths[4][PATH_MAX];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", folder, name);
    return p;
}

/* Descriptors of this process open on `path` (Linux: /proc/self/fd). */
static int descriptors_on(const char *path) {
    char wanted[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
    if (!realpath(path, wanted)) return -1;
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len > 0 && (target[len] = 0, strcmp(target, wanted) == 0)) n++;
    }
    if (d) closedir(d);
    return n;
}

/* The whole of int32 dataset `path` of `file` as libhdf5 reads it (the reference). */
static size_t hdf5_read(const char *file, const char *path, int32_t *out) {
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Oopen(f, path, H5P_DEFAULT);
    hid_t s = H5Dget_space(d);
    size_t n = (size_t)H5Sget_simple_extent_npoints(s);
    if (n > 24 || H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) n = 0;
    H5Sclose(s);
    H5Oclose(d);
    H5Fclose(f);
    return n;
}

/* Read all of `o` (n int32 elements as rows x cols) and compare with `expected`. */
static int same_values(const h5turbo_object *o, uint64_t rows, uint64_t cols, const int32_t *expected) {
    uint64_t start[2] = {0, 0}, count[2] = {rows, cols};
    int32_t got[24];
    if (h5turbo_dataset_read(o, start, count, NULL, got, rows * cols * 4, 1) != H5TURBO_OK) return 0;
    return memcmp(got, expected, rows * cols * 4) == 0;
}

/* Each object's path is the one libhdf5's H5Iget_name gives it: the path as typed
   (a soft link's name, not its target), restarted by an external link at its target
   in the other file; from the root and from a group (h5turbo_object_open_at). */
static void same_names_as_libhdf5(const char *links) {
    h5turbo_file *f = NULL;
    CHECK(h5turbo_file_open(links, &f) == H5TURBO_OK, "open %s again", links);
    hid_t hf = H5Fopen(links, H5F_ACC_RDONLY, H5P_DEFAULT);
    const char *cases[][2] = {{"/", "to_data"}, {"/", "to_root"}, {"/", "g/soft_to_ext"},
                              {"/", "many/m0007"}, {"/", "to_root/data"}, {"/g", "soft_to_ext"}, {"/to_root", "data"},
                              {"/to_root", "/data"}, {"/many", "m0001"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *base = cases[k][0], *rel = cases[k][1];
        char expected[256] = "", full[256], expected_file[PATH_MAX] = "";
        snprintf(full, sizeof full, "%s%s%s", rel[0] == '/' ? "" : base, rel[0] == '/' || base[1] == 0 ? "" : "/", rel);
        hid_t hb = H5Oopen(hf, base, H5P_DEFAULT);
        hid_t ho = hb < 0 ? -1 : H5Oopen(hb, rel, H5P_DEFAULT);
        CHECK(ho >= 0 && H5Iget_name(ho, expected, sizeof expected) > 0 && H5Fget_name(ho, expected_file, sizeof expected_file) > 0,
              "libhdf5 opens %s from %s", rel, base);
        if (ho >= 0) H5Oclose(ho);
        if (hb >= 0) H5Oclose(hb);
        h5turbo_object *b = NULL, *o = NULL;
        const char *got = NULL;
        CHECK(h5turbo_object_open(f, base, &b) == H5TURBO_OK && h5turbo_object_open_at(b, rel, &o) == H5TURBO_OK &&
              h5turbo_object_path(o, &got) == H5TURBO_OK && strcmp(got, expected) == 0,
              "%s from %s: path '%s', libhdf5's '%s'", rel, base, got ? got : "(none)", expected);
        /* the file it lies in: the same file (addresses start again in each) */
        const char *file_name = NULL;
        CHECK(o && h5turbo_object_filename(o, &file_name) == H5TURBO_OK && strcmp(file_name, expected_file) == 0,
              "%s from %s: in file '%s', libhdf5's '%s'", rel, base, file_name ? file_name : "(none)", expected_file);
        h5turbo_object_close(o);
        o = NULL;
        got = NULL;
        /* the same path from the root (an absolute one from a group of another file
           names an object of that file) */
        CHECK(rel[0] == '/' || (h5turbo_object_open(f, full, &o) == H5TURBO_OK && h5turbo_object_path(o, &got) == H5TURBO_OK &&
              strcmp(got, expected) == 0), "%s: path '%s', libhdf5's '%s'", full, got ? got : "(none)", expected);
        h5turbo_object_close(o);
        h5turbo_object_close(b);
    }
    H5Fclose(hf);
    h5turbo_file_close(f);
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[65536];
    for (size_t n; a && b && (n = fread(buf, 1, sizeof buf, a)) > 0;) fwrite(buf, 1, n, b);
    if (a) fclose(a);
    if (b) fclose(b);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: external_links_test FOLDER\n"); return 2; }
    static char dir[PATH_MAX]; /* absolute: the test changes folder */
    if (!realpath(argv[1], dir)) { perror(argv[1]); return 2; }
    int32_t expected[24], rewritten[24];
    CHECK(hdf5_read(in(dir, "target.h5"), "/data", expected) == 24, "libhdf5 reads target.h5");
    CHECK(hdf5_read(in(dir, "target_rewritten.h5"), "/data", rewritten) == 6, "libhdf5 reads target_rewritten.h5");

    h5turbo_file *f = NULL;
    CHECK(h5turbo_file_open(in(dir, "links.h5"), &f) == H5TURBO_OK, "open links.h5");
    /* 1000 objects through 1000 links into one target, all open at once: one descriptor */
    static h5turbo_object *objects[1000];
    char path[32];
    for (int k = 0; k < 1000; k++) {
        snprintf(path, sizeof path, "/many/m%04d", k);
        CHECK(h5turbo_object_open(f, path, &objects[k]) == H5TURBO_OK, "open %s", path);
    }
    CHECK(descriptors_on(in(dir, "target.h5")) == 1, "one descriptor on target.h5, not %d", descriptors_on(in(dir, "target.h5")));
    CHECK(objects[0] && same_values(objects[0], 4, 6, expected), "/many/m0000 reads what libhdf5 reads");
    CHECK(objects[999] && same_values(objects[999], 4, 6, expected), "/many/m0999 reads what libhdf5 reads");
    for (int k = 0; k < 1000; k++) h5turbo_object_close(objects[k]);

    /* the target rewritten in place: read fresh, as libhdf5 reads the new file */
    copy_file(in(dir, "target_rewritten.h5"), in(dir, "target.h5"));
    h5turbo_object *o = NULL;
    CHECK(h5turbo_object_open(f, "/to_data", &o) == H5TURBO_OK && same_values(o, 2, 3, rewritten),
          "/to_data after target.h5 was rewritten reads the new file");
    h5turbo_object_close(o);

    /* a cycle and a missing file: errors every time, the same each time */
    for (int k = 0; k < 3; k++) {
        o = NULL;
        CHECK(h5turbo_object_open(f, "/loop_a", &o) == H5TURBO_E_NOT_FOUND && !o && strstr(h5turbo_last_error(), "too many"),
              "the loop fails (try %d)", k);
        CHECK(h5turbo_object_open(f, "/missing", &o) == H5TURBO_E_NOT_FOUND && !o &&
              strstr(h5turbo_last_error(), "no_such_file.h5"), "the missing file is not found (try %d)", k);
    }
    h5turbo_file_close(f);
    CHECK(descriptors_on(in(dir, "target.h5")) == 0, "closing links.h5 gives the target's descriptor back");
    /* last: libhdf5 may hold the targets it opened */
    same_names_as_libhdf5(in(dir, "links.h5"));
    /* opened by a relative name, then the program changes folder: the targets are
       still found next to the file, and named absolutely (libhdf5's "extpath") */
    char here[PATH_MAX];
    CHECK(getcwd(here, sizeof here) && chdir(dir) == 0, "into %s", dir);
    same_names_as_libhdf5("links.h5");
    f = NULL;
    CHECK(h5turbo_file_open("links.h5", &f) == H5TURBO_OK && chdir("/") == 0, "links.h5 opened, then the folder changed");
    o = NULL;
    const char *target = NULL;
    CHECK(h5turbo_object_open(f, "/to_data", &o) == H5TURBO_OK && same_values(o, 2, 3, rewritten) &&
          h5turbo_object_filename(o, &target) == H5TURBO_OK && strcmp(target, in(dir, "target.h5")) == 0,
          "the link's target found where the file was opened: %s", target ? target : h5turbo_last_error());
    h5turbo_object_close(o);
    h5turbo_file_close(f);
    CHECK(chdir(here) == 0, "back to %s", here);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("external_links_test: ok\n");
    return failures != 0;
}
