/* Fixtures of tests/external_links.rs, written by libhdf5 itself (the reference):
 *   target.h5            /data: int32 4x6, element k = 3k; /back: external link to links.h5:/to_data
 *   target_rewritten.h5  /data: int32 2x3, element k = 5k (copied over target.h5 by the tests)
 *   links.h5             to_data, to_root, round_trip (through target.h5:/back), missing
 *                        (no_such_file.h5), loop_a <-> loop_b (a cycle through links.h5
 *                        itself), g/soft_to_ext (a soft link to /to_data), and many/m0000
 *                        .. many/m0999: 1000 external links to target.h5:/data
 * Build and run from this folder:
 *   cc gen_external_links.c $(pkg-config --cflags --libs hdf5-serial) -o /tmp/gen_ext && /tmp/gen_ext
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

#define MUST(x) do { if ((x) < 0) { fprintf(stderr, "failed: %s\n", #x); exit(1); } } while (0)

static void data_file(const char *name, hsize_t rows, hsize_t cols, int scale, int with_back) {
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {rows, cols};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "data", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int values[24];
    for (int k = 0; k < (int)(rows * cols); k++) values[k] = k * scale;
    MUST(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values));
    if (with_back) MUST(H5Lcreate_external("links.h5", "/to_data", f, "back", H5P_DEFAULT, H5P_DEFAULT));
    H5Dclose(d);
    H5Sclose(space);
    MUST(H5Fclose(f));
}

static void links_file(void) {
    hid_t f = H5Fcreate("links.h5", H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    MUST(H5Lcreate_external("target.h5", "/data", f, "to_data", H5P_DEFAULT, H5P_DEFAULT));
    MUST(H5Lcreate_external("target.h5", "/", f, "to_root", H5P_DEFAULT, H5P_DEFAULT));
    MUST(H5Lcreate_external("target.h5", "/back", f, "round_trip", H5P_DEFAULT, H5P_DEFAULT));
    MUST(H5Lcreate_external("no_such_file.h5", "/x", f, "missing", H5P_DEFAULT, H5P_DEFAULT));
    MUST(H5Lcreate_external("links.h5", "/loop_b", f, "loop_a", H5P_DEFAULT, H5P_DEFAULT));
    MUST(H5Lcreate_external("links.h5", "/loop_a", f, "loop_b", H5P_DEFAULT, H5P_DEFAULT));
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    MUST(H5Lcreate_soft("/to_data", g, "soft_to_ext", H5P_DEFAULT, H5P_DEFAULT));
    hid_t many = H5Gcreate2(f, "many", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    char name[16];
    for (int k = 0; k < 1000; k++) {
        snprintf(name, sizeof name, "m%04d", k);
        MUST(H5Lcreate_external("target.h5", "/data", many, name, H5P_DEFAULT, H5P_DEFAULT));
    }
    H5Gclose(many);
    H5Gclose(g);
    MUST(H5Fclose(f));
}

int main(void) {
    data_file("target.h5", 4, 6, 3, 1);
    data_file("target_rewritten.h5", 2, 3, 5, 0);
    links_file();
    /* what libhdf5 says of the links the tests check (printed for the record) */
    hid_t f = H5Fopen("links.h5", H5F_ACC_RDONLY, H5P_DEFAULT);
    H5E_BEGIN_TRY {
        printf("loop_a opens: %s\n", H5Oopen(f, "/loop_a", H5P_DEFAULT) < 0 ? "no (error)" : "yes");
        printf("missing opens: %s\n", H5Oopen(f, "/missing", H5P_DEFAULT) < 0 ? "no (error)" : "yes");
    } H5E_END_TRY;
    hid_t d = H5Oopen(f, "/many/m0999", H5P_DEFAULT);
    int values[24];
    MUST(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values));
    printf("many/m0999[1][5] = %d\n", values[11]);
    H5Oclose(d);
    H5Fclose(f);
    return 0;
}
