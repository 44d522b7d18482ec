/* hdf5_loop PROCESSES LISTFILE: every read of the fast5 files named in LISTFILE (one
 * path a line) loaded the way f5c's fast5 loader does it with libhdf5: per file
 * H5Fopen, the root's file_version attribute, then per read the Raw/Signal dataset
 * (H5Dopen, extent, malloc, H5Dread as native int16) and the channel_id group's four
 * float attributes (digitisation, offset, range, sampling_rate). libhdf5 is not
 * thread-safe (Debian's build), so PROCESSES > 1 forks workers that take every n-th
 * file, as f5c's --iop does. Prints "reads samples signal_sum channel_sum". */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "path_list.h"

typedef struct { unsigned long long reads, samples; long long signal_sum; double channel_sum; } totals;

static int read_signal(hid_t file, const char *path, totals *t) {
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t space = H5Dget_space(ds);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space, &n, NULL);
    int16_t *signal = malloc(n ? n * sizeof *signal : 1);
    int status = H5Dread(ds, H5T_NATIVE_SHORT, H5S_ALL, H5S_ALL, H5P_DEFAULT, signal) < 0 ? -1 : 0;
    for (hsize_t i = 0; status == 0 && i < n; i++) t->signal_sum += signal[i];
    t->samples += n;
    free(signal);
    H5Sclose(space);
    H5Dclose(ds);
    return status;
}

static int read_channel(hid_t file, const char *group_path, totals *t) {
    static const char *names[] = {"digitisation", "offset", "range", "sampling_rate"};
    hid_t group = H5Gopen2(file, group_path, H5P_DEFAULT);
    if (group < 0) return -1;
    for (int i = 0; i < 4; i++) {
        float value = 0;
        hid_t a = H5Aopen(group, names[i], H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_FLOAT, &value) < 0) { H5Gclose(group); return -1; }
        t->channel_sum += value;
        H5Aclose(a);
    }
    H5Gclose(group);
    return 0;
}

typedef struct { hid_t file; totals *t; int failed; } walk_state;

/* multi-read: /read_<id>/Raw/Signal and /read_<id>/channel_id */
static herr_t multi_read(hid_t root, const char *name, const H5L_info_t *info, void *data) {
    (void)root; (void)info;
    walk_state *s = data;
    if (strncmp(name, "read_", 5) != 0) return 0;
    char path[512];
    snprintf(path, sizeof path, "/%s/Raw/Signal", name);
    s->failed |= read_signal(s->file, path, s->t);
    snprintf(path, sizeof path, "/%s/channel_id", name);
    s->failed |= read_channel(s->file, path, s->t);
    s->t->reads++;
    return 0;
}

/* single-read: /Raw/Reads/Read_<n>/Signal and /UniqueGlobalKey/channel_id */
static herr_t single_read(hid_t group, const char *name, const H5L_info_t *info, void *data) {
    (void)group; (void)info;
    walk_state *s = data;
    char path[512];
    snprintf(path, sizeof path, "/Raw/Reads/%s/Signal", name);
    s->failed |= read_signal(s->file, path, s->t);
    s->failed |= read_channel(s->file, "/UniqueGlobalKey/channel_id", s->t);
    s->t->reads++;
    return 0;
}

static int load_file(const char *path, totals *t) {
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return -1;
    float version = 0;
    hid_t a = H5Aopen(file, "file_version", H5P_DEFAULT); /* f5c reads it to pick the layout */
    if (a >= 0) { H5Aread(a, H5T_NATIVE_FLOAT, &version); H5Aclose(a); }
    walk_state s = {file, t, 0};
    if (H5Lexists(file, "/Raw/Reads", H5P_DEFAULT) > 0) {
        hid_t reads = H5Gopen2(file, "/Raw/Reads", H5P_DEFAULT);
        H5Literate(reads, H5_INDEX_NAME, H5_ITER_INC, NULL, single_read, &s);
        H5Gclose(reads);
    } else {
        H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, NULL, multi_read, &s);
    }
    H5Fclose(file);
    return s.failed;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: hdf5_loop PROCESSES LISTFILE\n"); return 2; }
    int procs = atoi(argv[1]);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are counted, not printed */
    char **paths = NULL;
    size_t n = 0;
    if (read_path_list(argv[2], &paths, &n) != 0 || procs < 1) { perror("hdf5_loop"); return 2; }
    int pipes[64][2];
    if (procs > 64) procs = 64;
    for (int p = 0; p < procs; p++) {
        if (pipe(pipes[p]) != 0) { perror("pipe"); return 1; }
        if (fork() == 0) {
            totals t = {0};
            int failed = 0;
            for (size_t i = (size_t)p; i < n; i += (size_t)procs) failed |= load_file(paths[i], &t);
            if (failed) fprintf(stderr, "hdf5_loop: some reads failed\n");
            if (write(pipes[p][1], &t, sizeof t) != sizeof t) _exit(1);
            _exit(failed);
        }
        close(pipes[p][1]);
    }
    totals all = {0};
    int failed = 0;
    for (int p = 0; p < procs; p++) {
        totals t;
        if (read(pipes[p][0], &t, sizeof t) != sizeof t) failed = 1;
        all.reads += t.reads; all.samples += t.samples; all.signal_sum += t.signal_sum; all.channel_sum += t.channel_sum;
        int status;
        wait(&status);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    printf("%llu %llu %lld %.6f\n", all.reads, all.samples, all.signal_sum, all.channel_sum);
    return failed;
}
