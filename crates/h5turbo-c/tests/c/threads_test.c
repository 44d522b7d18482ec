/* threads_test FILE [THREADS]: many threads share one h5turbo_file and read every
 * object of FILE (data, strings, reductions, attributes) in different orders; each
 * digest must equal the serial one. Prints "threads_test FILE: N objects x N
 * threads, N differ". */
#include "common.h"
#include <pthread.h>

static h5turbo_file *g_file;
static object_list g_objects;
static uint64_t *g_serial;
static long g_differ;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void *reader(void *arg) {
    size_t id = (size_t)arg;
    long errors = 0, differ = 0;
    for (size_t k = 0; k < g_objects.n; k++) {
        size_t i = (k + id * 7) % g_objects.n;
        if (object_digest(g_file, g_objects.paths[i], 1 + (int)(id % 3), &errors) != g_serial[i]) differ++;
    }
    pthread_mutex_lock(&g_lock);
    g_differ += differ;
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: threads_test FILE [THREADS]\n"); return 2; }
    int n_threads = argc > 2 ? atoi(argv[2]) : 8;
    if (h5turbo_file_open(argv[1], &g_file) != H5TURBO_OK) {
        printf("FAIL threads_test %s: %s\n", argv[1], h5turbo_last_error());
        return 1;
    }
    long errors = 0;
    walk_objects(g_file, "/", &g_objects, &errors);
    g_serial = malloc((g_objects.n ? g_objects.n : 1) * sizeof *g_serial);
    for (size_t i = 0; i < g_objects.n; i++) g_serial[i] = object_digest(g_file, g_objects.paths[i], 1, &errors);
    pthread_t threads[64];
    if (n_threads < 1 || n_threads > 64) n_threads = 8;
    for (int t = 0; t < n_threads; t++) pthread_create(&threads[t], NULL, reader, (void *)(size_t)t);
    for (int t = 0; t < n_threads; t++) pthread_join(threads[t], NULL);
    printf("%sthreads_test %s: %zu objects x %d threads, %ld differ\n", g_differ ? "FAIL " : "", argv[1], g_objects.n, n_threads, g_differ);
    free(g_serial);
    list_free(&g_objects);
    h5turbo_file_close(g_file);
    return g_differ ? 1 : 0;
}
