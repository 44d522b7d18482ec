/* Registration of the .Call entry points. */
#include "glue.h"
#include <R_ext/Rdynload.h>

SEXP C_read(SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP C_attributes(SEXP, SEXP, SEXP);
SEXP C_info(SEXP, SEXP);
SEXP C_dimscales(SEXP, SEXP);
SEXP C_reduce(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP C_ls(SEXP, SEXP, SEXP);
SEXP C_version(void);
SEXP C_mean_ld(SEXP, SEXP);

static const R_CallMethodDef call_methods[] = {
    {"C_read", (DL_FUNC) &C_read, 5},
    {"C_attributes", (DL_FUNC) &C_attributes, 3},
    {"C_info", (DL_FUNC) &C_info, 2},
    {"C_dimscales", (DL_FUNC) &C_dimscales, 2},
    {"C_reduce", (DL_FUNC) &C_reduce, 7},
    {"C_ls", (DL_FUNC) &C_ls, 3},
    {"C_version", (DL_FUNC) &C_version, 0},
    {"C_mean_ld", (DL_FUNC) &C_mean_ld, 2},
    {NULL, NULL, 0}
};

void R_init_h5turbo(DllInfo *dll)
{
    R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
    R_useDynamicSymbols(dll, FALSE);
    R_forceSymbols(dll, TRUE);
}
