/* The R glue's shared pieces: one call's resources (closed even when R unwinds the
   stack on an allocation error, through an external pointer's finalizer), errors
   returned to R as values (the R side raises the condition), and datatype trees. */
#ifndef H5TURBO_R_GLUE_H
#define H5TURBO_R_GLUE_H

#include <stdint.h>
#include <stddef.h>
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include <h5turbo.h>

#define MSG_MAX 2048
/* Datasets and attributes of more dimensions are refused. */
#define MAX_RANK 32

/* Everything one .Call may hold open. */
typedef struct {
    h5turbo_file *file;
    h5turbo_object *obj;
    h5turbo_attribute *attr;
    char **strings;   /* from a *_read_strings or *_names call, freed with their count */
    size_t n_strings;
    h5turbo_sequence *seqs;   /* from h5turbo_dataset_read_sequences */
    size_t n_seqs;
    h5turbo_columns *columns;   /* from h5turbo_dataset_read_columns */
    int code;         /* H5TURBO_OK or the failure's code */
    char msg[MSG_MAX];
} call_t;

/* A call context, protected on R's stack (one PROTECT, released by call_return). */
call_t *call_begin(SEXP *holder);
/* The end of every .Call: `out` (the body's value, or NULL when it failed) with what
   is open closed, or the failure as an R value; releases call_begin's protection, so
   the body must leave R's protection stack as it found it. */
SEXP call_return(call_t *c, SEXP out);
/* The whole of a .Call entry point: body(c, ...) run in a call context, whose value
   (or failure) the entry point returns. */
#define CALL_BODY(body, ...)                                    \
    do {                                                        \
        SEXP holder_;                                           \
        call_t *c_ = call_begin(&holder_);                      \
        return call_return(c_, body(c_, __VA_ARGS__));          \
    } while (0)
/* Closes what is open; safe to call twice. */
void call_end(call_t *c);
/* Records the library's last error (or msg when given) and returns the code. */
int call_fail(call_t *c, int code, const char *msg);
/* call_fail for functions that give an R value: returns NULL. */
SEXP call_fail_null(call_t *c, int code, const char *msg);
/* A failure as an R value: the message with class "h5turbo_failure" and attribute
   "code" (the R side raises the condition). */
SEXP failure_value(const char *msg, int code);
/* Frees the strings held by the call. */
void call_free_strings(call_t *c);
/* Frees the sequences held by the call. */
void call_free_sequences(call_t *c);
/* Frees the columns held by the call. */
void call_free_columns(call_t *c);

int open_file(call_t *c, SEXP path);
int open_object(call_t *c, SEXP name);

/* A datatype described once, as a tree (compound members, enum members). Memory from
   R_alloc: released when the .Call returns. */
typedef struct tnode {
    h5turbo_type_info info;
    size_t offset;              /* within the parent compound */
    const char *name;           /* member name, NULL at the top */
    size_t n_members;
    struct tnode *members;
    size_t n_enum;
    const char **enum_names;
    int64_t *enum_values;
    struct tnode *base;         /* an array's element type */
    int array_rank;             /* an array's dimensions (HDF5 order) and their product */
    uint64_t *array_dims;
    size_t array_count;
} tnode;

int describe_type(call_t *c, const h5turbo_datatype *dt, tnode *t, int depth);

/* Conversion flags */
#define CONV_U1_INTEGER 1  /* 8-bit unsigned as integer, not raw: attributes and array types (rhdf5) */
#define CONV_DOUBLE64  2   /* bit64conversion = "double" */

/* What a conversion lost (the bits of *overflow): a value that did not fit R's integer
   (NA), a 64-bit value that a double holds only rounded (past 2^53) */
#define LOST_OVERFLOW  1
#define LOST_PRECISION 2

/* Elements at buf + i * stride + t->offset (+ extra_offset), i < n, as an R vector (or a
   list of columns for a compound). *overflow gets LOST_* bits when a 64-bit or unsigned 32-bit
   value did not fit R's integer. Returns NULL (C) with c->code set when unsupported. */
SEXP convert_elements(call_t *c, const tnode *t, const unsigned char *buf, R_xlen_t n,
                      size_t stride, size_t extra_offset, int flags, int *overflow);
/* The attribute an array type's values carry until set_dims places them: the array's
   dimensions in R's order, which come first in the value's dim. */
#define ELEMENT_DIMS "h5turbo_element_dims"
/* Marks the column of a compound's array-type member m for the R side (which makes a
   data.frame's matrix column of it). */
void mark_array_member(SEXP col, const tnode *m);

/* A copy of s in R_alloc memory (released when the .Call returns). */
const char *r_strdup(const char *s);
/* rhdf5's name of a type class ("INTEGER", "FLOAT" ...; h5ls's dclass). */
const char *type_class_name(int type_class);

/* A character vector from C strings (UTF-8 or ASCII). */
SEXP strings_to_r(char **strings, size_t n, int utf8);
cetype_t name_encoding(const char *s);
const char *r_name_bytes(SEXP s);

#endif
