/* h5sum_hdf5 FILE: what the example h5sum prints, computed with libhdf5 alone (the
 * reference of the h5sum test): H5Ovisit by name, each numeric dataset read whole in
 * its native type and summed in float64 in row-major order. Datasets libhdf5 cannot
 * read are reported on stderr and the exit status is 1. */
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failed;

static double element(const unsigned char *p, H5T_class_t cls, size_t size, int is_signed) {
    if (cls == H5T_FLOAT) {
        if (size == 4) { float v; memcpy(&v, p, 4); return v; }
        if (size == 8) { double v; memcpy(&v, p, 8); return v; }
        long double v; memcpy(&v, p, sizeof v); return (double)v;
    }
    switch (size) {
    case 1: return is_signed ? (double)*(const int8_t *)p : (double)*p;
    case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); return is_signed ? (double)s : (double)u; }
    case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); return is_signed ? (double)s : (double)u; }
    default: { int64_t s; uint64_t u; memcpy(&s, p, 8); memcpy(&u, p, 8); return is_signed ? (double)s : (double)u; }
    }
}

static herr_t visit(hid_t root, const char *name, const H5O_info_t *info, void *data) {
    (void)data;
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t ds = H5Dopen2(root, name, H5P_DEFAULT);
    hid_t ftype = H5Dget_type(ds), space = H5Dget_space(ds);
    H5T_class_t cls = H5Tget_class(ftype);
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT && cls != H5T_ENUM) || H5Sget_simple_extent_type(space) == H5S_NULL)
        goto done;
    /* half floats: read as float (exact); others in their native type */
    hid_t mtype = cls == H5T_FLOAT && H5Tget_size(ftype) == 2 ? H5Tcopy(H5T_NATIVE_FLOAT) : H5Tget_native_type(ftype, H5T_DIR_ASCEND);
    hid_t base = cls == H5T_ENUM ? H5Tget_super(mtype) : H5Tcopy(mtype);
    size_t size = H5Tget_size(mtype);
    int is_signed = cls != H5T_FLOAT && H5Tget_sign(base) == H5T_SGN_2;
    H5T_class_t value_class = cls == H5T_FLOAT ? H5T_FLOAT : H5T_INTEGER;
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[32];
    H5Sget_simple_extent_dims(space, dims, NULL);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    unsigned char *buf = malloc(n ? (size_t)n * size : 1);
    if (n > 0 && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        fprintf(stderr, "h5sum_hdf5: /%s: libhdf5 cannot read it\n", name);
        g_failed = 1;
    } else {
        double sum = 0.0;
        for (hssize_t i = 0; i < n; i++) sum += element(buf + (size_t)i * size, value_class, size, is_signed);
        printf("/%s\t", name);
        if (rank == 0) printf("scalar");
        for (int i = 0; i < rank; i++) printf(i ? "x%llu" : "%llu", (unsigned long long)dims[i]);
        if (isnan(sum)) printf("\tnan\n");
        else printf("\t%.17g\n", sum);
    }
    free(buf);
    H5Tclose(base);
    H5Tclose(mtype);
done:
    H5Sclose(space);
    H5Tclose(ftype);
    H5Dclose(ds);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: h5sum_hdf5 FILE\n"); return 2; }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) { fprintf(stderr, "h5sum_hdf5: %s: libhdf5 cannot open it\n", argv[1]); return 1; }
    printf("path\tshape\tsum\n");
    H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, visit, NULL, H5O_INFO_BASIC);
    H5Fclose(f);
    return g_failed;
}
