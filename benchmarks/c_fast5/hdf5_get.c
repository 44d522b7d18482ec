/* hdf5_get READLIST: reads fetched by id the way f5c fetches them with libhdf5 (its
 * index maps each read id to a file; per read: H5Fopen, the Raw/Signal dataset read as
 * native int16, the channel_id group's four float attributes, H5Fclose). READLIST: one
 * "read_id<TAB>path" a line, in the order to fetch (multi-read files: /read_<id>).
 * Prints "reads samples signal_sum channel_sum", as h5turbo_get. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "path_list.h"

static int fetch(const char *id, const char *path, unsigned long long *samples, long long *signal_sum, double *channel_sum) {
    static const char *names[] = {"digitisation", "offset", "range", "sampling_rate"};
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return -1;
    char at[512];
    snprintf(at, sizeof at, "/read_%s/Raw/Signal", id);
    int status = -1;
    hid_t ds = H5Dopen2(file, at, H5P_DEFAULT);
    if (ds >= 0) {
        hid_t space = H5Dget_space(ds);
        hsize_t n = 0;
        H5Sget_simple_extent_dims(space, &n, NULL);
        int16_t *signal = malloc(n ? n * sizeof *signal : 1);
        status = H5Dread(ds, H5T_NATIVE_SHORT, H5S_ALL, H5S_ALL, H5P_DEFAULT, signal) < 0 ? -1 : 0;
        for (hsize_t i = 0; status == 0 && i < n; i++) *signal_sum += signal[i];
        *samples += n;
        free(signal);
        H5Sclose(space);
        H5Dclose(ds);
    }
    snprintf(at, sizeof at, "/read_%s/channel_id", id);
    hid_t group = status == 0 ? H5Gopen2(file, at, H5P_DEFAULT) : -1;
    for (int i = 0; group >= 0 && i < 4; i++) {
        float value = 0;
        hid_t a = H5Aopen(group, names[i], H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_FLOAT, &value) < 0) status = -1;
        if (a >= 0) H5Aclose(a);
        *channel_sum += value;
    }
    if (group >= 0) H5Gclose(group);
    else status = -1;
    H5Fclose(file);
    return status;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: hdf5_get READLIST\n"); return 2; }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char **lines = NULL;
    size_t n = 0;
    if (read_path_list(argv[1], &lines, &n) != 0) { perror("hdf5_get"); return 2; }
    unsigned long long reads = 0, samples = 0;
    long long signal_sum = 0;
    double channel_sum = 0;
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        char *tab = strchr(lines[i], '\t');
        if (!tab) { fprintf(stderr, "hdf5_get: line %zu is not read_id<TAB>path\n", i + 1); return 2; }
        *tab = 0;
        if (fetch(lines[i], tab + 1, &samples, &signal_sum, &channel_sum) != 0) failed = 1;
        else reads++;
    }
    printf("%llu %llu %lld %.6f\n", reads, samples, signal_sum, channel_sum);
    return failed;
}
