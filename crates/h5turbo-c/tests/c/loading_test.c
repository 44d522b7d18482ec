/* The library loaded as plugins and language bindings load it: by dlopen, from a thread
 * that is gone before the library is used again, and several copies in one process.
 *
 *   loading_test LIBRARY FILE DATASET COPIES_DIR
 *
 * 1. A short-lived thread dlopens LIBRARY and opens FILE; once it has exited, the main
 *    thread reads DATASET on 2 threads (the library starts its pool then) and a new
 *    thread opens FILE again. mimalloc 3.x crashed the first thread to allocate after
 *    the loading thread had exited (microsoft/mimalloc#1287).
 * 2. Four copies of LIBRARY (COPIES_DIR/copyN.so, made by the caller) dlopened beside
 *    it: with the allocator's thread-locals in the static TLS block, the third copy
 *    failed to load ("cannot allocate memory in static TLS block"). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*file_open_fn)(const char *, void **);
typedef void (*close_fn)(void *);
typedef int (*object_open_fn)(void *, const char *, void **);
typedef int (*rank_fn)(void *, int *);
typedef int (*shape_fn)(void *, uint64_t *, int);
typedef int (*read_fn)(void *, const uint64_t *, const uint64_t *, const uint64_t *, void *, size_t, int);
typedef const char *(*last_error_fn)(void);

static void *library;
static const char *library_path, *file_path;
static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; printf("FAIL "); printf(__VA_ARGS__); printf("\n"); } \
                              else { printf("ok   "); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void *symbol(const char *name) {
    void *s = dlsym(library, name);
    if (s == NULL) {
        printf("FAIL no symbol %s\n", name);
        exit(1);
    }
    return s;
}

static int open_and_close(void) {
    void *f = NULL;
    int rc = ((file_open_fn)symbol("h5turbo_file_open"))(file_path, &f);
    ((close_fn)symbol("h5turbo_file_close"))(f);
    return rc;
}

static void *load_and_open(void *unused) {
    (void)unused;
    library = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (library != NULL) CHECK(open_and_close() == 0, "the loading thread opens the file");
    return NULL;
}

static void *open_in_new_thread(void *rc) {
    *(int *)rc = open_and_close();
    return NULL;
}

/* Every element of DATASET (rank at most 8) read on 2 threads, from the main thread. */
static int read_all(const char *dataset) {
    void *f = NULL, *o = NULL;
    int rank = 0, rc;
    uint64_t dims[8], n = 1;
    if ((rc = ((file_open_fn)symbol("h5turbo_file_open"))(file_path, &f)) != 0) return rc;
    if ((rc = ((object_open_fn)symbol("h5turbo_object_open"))(f, dataset, &o)) == 0 &&
        (rc = ((rank_fn)symbol("h5turbo_dataset_rank"))(o, &rank)) == 0 &&
        (rc = ((shape_fn)symbol("h5turbo_dataset_shape"))(o, dims, 8)) == 0) {
        for (int d = 0; d < rank; d++) n *= dims[d];
        void *buf = malloc(n * 8 + 1);
        rc = ((read_fn)symbol("h5turbo_dataset_read"))(o, NULL, NULL, NULL, buf, n * 8 + 1, 2);
        free(buf);
    }
    if (rc != 0) printf("     %s\n", ((last_error_fn)symbol("h5turbo_last_error"))());
    ((close_fn)symbol("h5turbo_object_close"))(o);
    ((close_fn)symbol("h5turbo_file_close"))(f);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: loading_test LIBRARY FILE DATASET COPIES_DIR\n");
        return 2;
    }
    library_path = argv[1];
    file_path = argv[2];
    pthread_t t;
    pthread_create(&t, NULL, load_and_open, NULL);
    pthread_join(t, NULL);
    if (library == NULL) {
        printf("FAIL dlopen %s: %s\n", library_path, dlerror());
        return 1;
    }
    CHECK(read_all(argv[3]) == 0, "after the loading thread exited, the main thread reads %s on 2 threads", argv[3]);
    int rc = -1;
    pthread_create(&t, NULL, open_in_new_thread, &rc);
    pthread_join(t, NULL);
    CHECK(rc == 0, "a new thread opens the file");
    for (int k = 0; k < 4; k++) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s/copy%d.so", argv[4], k);
        void *other = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
        CHECK(other != NULL, "copy %d of the library loads beside it%s%s", k, other ? "" : ": ", other ? "" : dlerror());
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
