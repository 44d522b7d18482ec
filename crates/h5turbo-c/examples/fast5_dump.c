/* fast5_dump [-a] PATH...: one TSV line per read of the fast5 files and folders given,
 * in file order: read_id, n_samples, signal_sum, digitisation, offset, range,
 * sampling_rate (floats with %.17g). With -a, also channel_number, read_number,
 * start_time, duration and signal_checksum (the sum of (k + 1) * signal[k] over the
 * samples, modulo 2^64: it changes when samples move). A read that fails is reported
 * on stderr and the exit status is 1; the other reads are still printed.
 * Environment: H5TURBO_THREADS (decoding threads; default every core),
 * FAST5_DUMP_BATCH (reads per batch; default 1000). */
#include <h5turbo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_batch(const h5turbo_fast5_batch *batch, int all) {
    int failed = 0;
    for (size_t i = 0; i < batch->n; i++) {
        const h5turbo_fast5_read *r = &batch->reads[i];
        if (r->status != H5TURBO_OK) {
            fprintf(stderr, "fast5_dump: %s\n", r->error);
            failed = 1;
            continue;
        }
        long long sum = 0;
        uint64_t checksum = 0;
        for (uint64_t k = 0; k < r->n_samples; k++) {
            sum += r->signal[k];
            checksum += (k + 1) * (uint64_t)(int64_t)r->signal[k];
        }
        printf("%s\t%llu\t%lld\t%.17g\t%.17g\t%.17g\t%.17g", r->read_id,
               (unsigned long long)r->n_samples, sum, r->digitisation, r->offset, r->range,
               r->sampling_rate);
        if (all)
            printf("\t%s\t%d\t%llu\t%llu\t%llu", r->channel_number, r->read_number,
                   (unsigned long long)r->start_time, (unsigned long long)r->duration,
                   (unsigned long long)checksum);
        printf("\n");
    }
    return failed;
}

int main(int argc, char **argv) {
    int all = argc > 1 && strcmp(argv[1], "-a") == 0;
    argv += all;
    argc -= all;
    if (argc < 2) {
        fprintf(stderr, "usage: fast5_dump [-a] PATH... (fast5 files or folders)\n");
        return 2;
    }
    const char *batch_env = getenv("FAST5_DUMP_BATCH");
    size_t batch_size = batch_env ? strtoul(batch_env, NULL, 10) : 1000;
    if (batch_size == 0) batch_size = 1000;

    h5turbo_fast5 *f5 = NULL;
    if (h5turbo_fast5_open((const char *const *)(argv + 1), (size_t)(argc - 1), 0, 0, &f5) != H5TURBO_OK) {
        fprintf(stderr, "fast5_dump: %s\n", h5turbo_last_error());
        return 1;
    }
    printf("read_id\tn_samples\tsignal_sum\tdigitisation\toffset\trange\tsampling_rate%s\n",
           all ? "\tchannel_number\tread_number\tstart_time\tduration\tsignal_checksum" : "");
    int failed = 0;
    for (;;) {
        h5turbo_fast5_batch *batch = NULL;
        if (h5turbo_fast5_next_batch(f5, batch_size, &batch) != H5TURBO_OK) {
            fprintf(stderr, "fast5_dump: %s\n", h5turbo_last_error());
            failed = 1;
            break;
        }
        size_t n = batch->n;
        failed |= print_batch(batch, all);
        h5turbo_fast5_batch_free(batch);
        if (n == 0) break;
    }
    h5turbo_fast5_close(f5);
    return failed;
}
