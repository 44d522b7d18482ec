/* blow5_loop THREADS FILE [BATCH]: every read of a BLOW5 file through slow5lib's
 * multi-threaded batch API (slow5_init_mt + slow5_get_next_batch of BATCH reads,
 * default 512, decoded on THREADS threads): the same work and output as hdf5_loop and
 * h5turbo_loop ("reads samples signal_sum channel_sum", channel values summed as
 * float32, as f5c reads them). Built by bench.py against slow5lib from the pyslow5
 * source package (zstd records, svb-zd signals). */
#include <slow5/slow5.h>
#include <slow5/slow5_mt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: blow5_loop THREADS FILE [BATCH]\n"); return 2; }
    int threads = atoi(argv[1]);
    int batch_size = argc > 3 ? atoi(argv[3]) : 512;
    slow5_file_t *file = slow5_open(argv[2], "r");
    if (!file) { fprintf(stderr, "blow5_loop: cannot open %s\n", argv[2]); return 1; }
    slow5_mt_t *mt = slow5_init_mt(threads, file);
    slow5_batch_t *batch = slow5_init_batch(batch_size);
    unsigned long long reads = 0, samples = 0;
    long long signal_sum = 0;
    double channel_sum = 0;
    int n;
    while ((n = slow5_get_next_batch(mt, batch, batch_size)) > 0) {
        for (int i = 0; i < n; i++) {
            const slow5_rec_t *r = batch->slow5_rec[i];
            for (uint64_t j = 0; j < r->len_raw_signal; j++) signal_sum += r->raw_signal[j];
            samples += r->len_raw_signal;
            channel_sum += (float)r->digitisation + (float)r->offset + (float)r->range + (float)r->sampling_rate;
            reads++;
        }
        if (n < batch_size) break;
    }
    slow5_free_batch(batch);
    slow5_free_mt(mt);
    slow5_close(file);
    printf("%llu %llu %lld %.6f\n", reads, samples, signal_sum, channel_sum);
    return n < 0;
}
