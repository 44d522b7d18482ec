/* h5turbo_loop THREADS LISTFILE [BATCH]: every read of the fast5 files named in
 * LISTFILE through h5turbo's fast5 API (h5turbo_fast5_open with THREADS decoding
 * threads, h5turbo_fast5_next_batch of BATCH reads, default 1000): the same work and
 * output as hdf5_loop ("reads samples signal_sum channel_sum", channel values summed
 * as float32, as f5c reads them). */
#include <h5turbo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "path_list.h"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: h5turbo_loop THREADS LISTFILE [BATCH]\n"); return 2; }
    int threads = atoi(argv[1]);
    size_t batch_size = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000;
    char **paths = NULL;
    size_t n = 0;
    if (read_path_list(argv[2], &paths, &n) != 0) { perror("h5turbo_loop"); return 2; }
    h5turbo_fast5 *f5 = NULL;
    if (h5turbo_fast5_open((const char *const *)paths, n, threads, 0, &f5) != H5TURBO_OK) {
        fprintf(stderr, "h5turbo_loop: %s\n", h5turbo_last_error());
        return 1;
    }
    unsigned long long reads = 0, samples = 0;
    long long signal_sum = 0;
    double channel_sum = 0;
    int failed = 0;
    for (;;) {
        h5turbo_fast5_batch *b = NULL;
        if (h5turbo_fast5_next_batch(f5, batch_size, &b) != H5TURBO_OK) { failed = 1; break; }
        size_t k = b->n;
        for (size_t i = 0; i < k; i++) {
            const h5turbo_fast5_read *r = &b->reads[i];
            if (r->status != H5TURBO_OK) { failed = 1; continue; }
            for (uint64_t j = 0; j < r->n_samples; j++) signal_sum += r->signal[j];
            samples += r->n_samples;
            channel_sum += (float)r->digitisation + (float)r->offset + (float)r->range + (float)r->sampling_rate;
            reads++;
        }
        h5turbo_fast5_batch_free(b);
        if (k == 0) break;
    }
    h5turbo_fast5_close(f5);
    printf("%llu %llu %lld %.6f\n", reads, samples, signal_sum, channel_sum);
    return failed;
}
