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

/* Whether a float type is one numpy has: IEEE half, single or double, or this machine's
   long double, in either byte order. */
static int numpy_float(hid_t ftype) {
    if (H5Tget_order(ftype) == H5T_ORDER_VAX) return 0;
    size_t f[5];
    H5Tget_fields(ftype, &f[0], &f[1], &f[2], &f[3], &f[4]);
    size_t size = H5Tget_size(ftype), bias = H5Tget_ebias(ftype);
    /* size, sign position, exponent position and size, mantissa position and size, bias */
    static const size_t ieee[3][7] = {{2, 15, 10, 5, 0, 10, 15}, {4, 31, 23, 8, 0, 23, 127}, {8, 63, 52, 11, 0, 52, 1023}};
    for (int k = 0; k < 3; k++)
        if (size == ieee[k][0] && memcmp(f, &ieee[k][1], sizeof f) == 0 && bias == ieee[k][6]) return 1;
    size_t n[5];
    H5Tget_fields(H5T_NATIVE_LDOUBLE, &n[0], &n[1], &n[2], &n[3], &n[4]);
    return size == H5Tget_size(H5T_NATIVE_LDOUBLE) && memcmp(f, n, sizeof f) == 0 && bias == H5Tget_ebias(H5T_NATIVE_LDOUBLE);
}

static herr_t visit(hid_t root, const char *name, const H5O_info_t *info, void *data) {
    (void)data;
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t ds = H5Dopen2(root, name, H5P_DEFAULT);
    hid_t ftype = H5Dget_type(ds), space = H5Dget_space(ds);
    H5T_class_t cls = H5Tget_class(ftype);
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT && cls != H5T_ENUM) || H5Sget_simple_extent_type(space) == H5S_NULL)
        goto done;
    if (cls == H5T_FLOAT && !numpy_float(ftype)) {
        /* VAX, IEEE quad, a custom 128-bit float: libhdf5 converts them with loss, h5turbo
           (as h5py) has no type for them: not summed, as a dataset it cannot read */
        fprintf(stderr, "%s: a float layout with no numpy type\n", name);
        g_failed = 1;
        goto done;
    }
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
