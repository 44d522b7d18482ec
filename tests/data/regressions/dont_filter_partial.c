/* Writes dont_filter_partial_{earliest,latest}.h5: chunked datasets made with
 * H5Pset_chunk_opts(H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS), so partial edge chunks are
 * stored without the filter pipeline. Earliest: v1 B-tree index; latest: fixed array,
 * extensible array, v2 B-tree. */
#include <hdf5.h>
#include <stdlib.h>
static void add(hid_t f, const char *name, hsize_t r, hsize_t c, hsize_t cr, hsize_t cc,
                hsize_t mr, hsize_t mc, int shuffle) {
    hsize_t dims[2] = {r, c}, ch[2] = {cr, cc}, maxd[2] = {mr, mc};
    hid_t s = H5Screate_simple(2, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    if (shuffle) H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 6);
    H5Pset_chunk_opts(dcpl, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS);
    int *data = malloc(sizeof(int) * r * c);
    for (hsize_t i = 0; i < r * c; i++) data[i] = (int)(i % 97);
    hid_t d = H5Dcreate2(f, name, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    free(data); H5Dclose(d); H5Sclose(s); H5Pclose(dcpl);
}
int main(void) {
    for (int latest = 0; latest < 2; latest++) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        if (latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
        hid_t f = H5Fcreate(latest ? "dont_filter_partial_latest.h5" : "dont_filter_partial_earliest.h5",
                            H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        add(f, "d", 10, 9, 4, 4, 10, 9, 0);
        add(f, "shuffle", 10, 9, 4, 4, 10, 9, 1);
        add(f, "many", 41, 37, 4, 4, 41, 37, 0);
        if (latest) {
            add(f, "ea", 10, 9, 4, 4, H5S_UNLIMITED, 9, 0);
            add(f, "bt2", 10, 9, 4, 4, H5S_UNLIMITED, H5S_UNLIMITED, 0);
        }
        H5Fclose(f); H5Pclose(fapl);
    }
    return 0;
}
