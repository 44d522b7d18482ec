/* h5turbo_get THREADS LISTFILE READLIST [BATCH]: reads fetched by id through h5turbo's
 * C fast5 API (h5turbo_fast5_open on the files of LISTFILE, then the read ids of
 * READLIST, "read_id<TAB>path" a line, the path unused: the library finds the file).
 * Without BATCH: h5turbo_fast5_get per read from THREADS C threads sharing the handle,
 * each taking every THREADS-th read. With BATCH: h5turbo_fast5_get_batch of BATCH ids
 * at a time from one thread, decoded on a pool of THREADS. Prints "reads samples
 * signal_sum channel_sum", as hdf5_get. */
#include <h5turbo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "path_list.h"

typedef struct {
    h5turbo_fast5 *f5;
    char **ids;
    size_t n, first, step;
    unsigned long long reads, samples;
    long long signal_sum;
    double channel_sum;
    int failed;
} worker;

static void add(worker *w, const h5turbo_fast5_read *r) {
    if (r->status != H5TURBO_OK) {
        fprintf(stderr, "h5turbo_get: %s: %s\n", r->read_id, r->error);
        w->failed = 1;
        return;
    }
    for (uint64_t j = 0; j < r->n_samples; j++) w->signal_sum += r->signal[j];
    w->samples += r->n_samples;
    w->channel_sum += (float)r->digitisation + (float)r->offset + (float)r->range + (float)r->sampling_rate;
    w->reads++;
}

static void *fetch_each(void *arg) {
    worker *w = arg;
    for (size_t i = w->first; i < w->n; i += w->step) {
        h5turbo_fast5_batch *one = NULL;
        if (h5turbo_fast5_get(w->f5, w->ids[i], &one) != H5TURBO_OK) {
            fprintf(stderr, "h5turbo_get: %s: %s\n", w->ids[i], h5turbo_last_error());
            w->failed = 1;
            continue;
        }
        add(w, &one->reads[0]);
        h5turbo_fast5_batch_free(one);
    }
    return NULL;
}

static void fetch_batches(worker *w, size_t batch) {
    for (size_t i = 0; i < w->n; i += batch) {
        size_t k = w->n - i < batch ? w->n - i : batch;
        h5turbo_fast5_batch *b = NULL;
        if (h5turbo_fast5_get_batch(w->f5, (const char *const *)w->ids + i, k, &b) != H5TURBO_OK) {
            fprintf(stderr, "h5turbo_get: %s\n", h5turbo_last_error());
            w->failed = 1;
            continue;
        }
        for (size_t j = 0; j < b->n; j++) add(w, &b->reads[j]);
        h5turbo_fast5_batch_free(b);
    }
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) { fprintf(stderr, "usage: h5turbo_get THREADS LISTFILE READLIST [BATCH]\n"); return 2; }
    int threads = atoi(argv[1]);
    size_t batch = argc == 5 ? strtoul(argv[4], NULL, 10) : 0;
    char **paths = NULL, **ids = NULL;
    size_t n_paths = 0, n = 0;
    if (threads < 1 || threads > 64 || read_path_list(argv[2], &paths, &n_paths) != 0 || read_path_list(argv[3], &ids, &n) != 0) {
        fprintf(stderr, "h5turbo_get: bad arguments\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++) ids[i][strcspn(ids[i], "\t")] = 0;
    h5turbo_fast5 *f5 = NULL;
    if (h5turbo_fast5_open((const char *const *)paths, n_paths, threads, 0, &f5) != H5TURBO_OK) {
        fprintf(stderr, "h5turbo_get: %s\n", h5turbo_last_error());
        return 1;
    }
    worker w[64];
    pthread_t tid[64];
    int callers = batch ? 1 : threads;
    for (int t = 0; t < callers; t++) w[t] = (worker){f5, ids, n, (size_t)t, (size_t)threads, 0, 0, 0, 0, 0};
    if (batch) fetch_batches(&w[0], batch);
    else for (int t = 0; t < callers; t++) pthread_create(&tid[t], NULL, fetch_each, &w[t]);
    unsigned long long reads = 0, samples = 0;
    long long signal_sum = 0;
    double channel_sum = 0;
    int failed = 0;
    for (int t = 0; t < callers; t++) {
        if (!batch) pthread_join(tid[t], NULL);
        reads += w[t].reads; samples += w[t].samples; signal_sum += w[t].signal_sum; channel_sum += w[t].channel_sum; failed |= w[t].failed;
    }
    h5turbo_fast5_close(f5);
    printf("%llu %llu %lld %.6f\n", reads, samples, signal_sum, channel_sum);
    return failed;
}
