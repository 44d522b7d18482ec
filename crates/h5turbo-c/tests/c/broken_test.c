/* broken_test FILE...: each (damaged) file opened and everything in it read through
 * h5turbo; every failure must be a status code from the header (not a caught panic)
 * with a message naming the file, never a crash or a hang (the driver runs this under a time limit and the sanitizers).
 * Prints "broken_test: N files, N opened, N errors, N bad errors". */
#include "common.h"

/* The reads of `b` that have an id fetched again by id, one by one and all at once:
 * each call succeeds or fails under the contract, each failed read names the file.
 * Returns the failures outside the contract. */
static int fetch_by_id(h5turbo_fast5 *f5, const h5turbo_fast5_batch *b, const char *path, long *errors) {
    const char **ids = malloc((b->n ? b->n : 1) * sizeof *ids);
    size_t n = 0;
    int bad = 0;
    for (size_t r = 0; r < b->n; r++)
        if (b->reads[r].read_id[0]) ids[n++] = b->reads[r].read_id;
    for (size_t k = 0; k <= n; k++) {
        h5turbo_fast5_batch *got = NULL;
        int status = k < n ? h5turbo_fast5_get(f5, ids[k], &got) : h5turbo_fast5_get_batch(f5, ids, n, &got);
        if (status != H5TURBO_OK) {
            count_error(errors, status, k < n ? "fast5 get" : "fast5 get_batch");
            continue;
        }
        for (size_t r = 0; r < got->n; r++) {
            const h5turbo_fast5_read *read = &got->reads[r];
            if (read->status == H5TURBO_OK) continue;
            (*errors)++;
            if (read->status >= H5TURBO_E_INTERNAL || !read->error || !strstr(read->error, path)) {
                printf("FAIL broken_test %s: read %s fetched by id: status %d, error '%s'\n", path, read->read_id, read->status, read->error ? read->error : "(null)");
                bad++;
            }
        }
        h5turbo_fast5_batch_free(got);
    }
    free(ids);
    /* the index's ids: every one a string (a file that cannot be indexed lists none) */
    char **listed = NULL;
    size_t n_listed = 0;
    int status = h5turbo_fast5_read_ids(f5, &listed, &n_listed);
    if (status != H5TURBO_OK) {
        count_error(errors, status, "fast5 read_ids");
    } else {
        for (size_t k = 0; k < n_listed; k++) bad += listed[k] == NULL || strlen(listed[k]) > 4096;
    }
    h5turbo_strings_free(listed, n_listed);
    return bad;
}

int main(int argc, char **argv) {
    long opened = 0, errors = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        h5turbo_file *f = NULL;
        int status = h5turbo_file_open(argv[i], &f);
        if (status != H5TURBO_OK) {
            errors++;
            if (status < 1 || status > 7 || h5turbo_last_error()[0] == 0 || !strstr(h5turbo_last_error(), argv[i])) {
                printf("FAIL broken_test %s: status %d, message '%s'\n", argv[i], status, h5turbo_last_error());
                bad++;
            }
            continue;
        }
        opened++;
        error_file = argv[i];
        object_list objects = {0};
        walk_objects(f, "/", &objects, &errors);
        for (size_t k = 0; k < objects.n; k++) object_digest(f, objects.paths[k], 2, &errors);
        /* each object again, opened from the root group by a relative path: the same
           object, or an error under the same contract */
        h5turbo_object *root = NULL;
        if (h5turbo_object_open(f, "/", &root) == H5TURBO_OK) {
            for (size_t k = 0; k < objects.n; k++) {
                h5turbo_object *by_path = NULL, *by_member = NULL;
                uint64_t a = 0, b = 1;
                int status = h5turbo_object_open_at(root, objects.paths[k] + 1, &by_member);
                if (status != H5TURBO_OK) count_error(&errors, status, objects.paths[k]);
                if (status == H5TURBO_OK && h5turbo_object_open(f, objects.paths[k], &by_path) == H5TURBO_OK &&
                    (h5turbo_object_address(by_path, &a) != H5TURBO_OK || h5turbo_object_address(by_member, &b) != H5TURBO_OK || a != b)) {
                    printf("FAIL broken_test %s: %s opened from the root is another object\n", argv[i], objects.paths[k]);
                    bad++;
                }
                h5turbo_object_close(by_path);
                h5turbo_object_close(by_member);
            }
            h5turbo_object_close(root);
        }
        list_free(&objects);
        h5turbo_file_close(f);
        /* the fast5 reader on the same file */
        h5turbo_fast5 *f5 = NULL;
        const char *paths[] = {argv[i]};
        if (h5turbo_fast5_open(paths, 1, 2, 0, &f5) == H5TURBO_OK) {
            h5turbo_fast5_batch *b = NULL;
            int status = h5turbo_fast5_next_batch(f5, 100000, &b);
            if (status == H5TURBO_OK) {
                for (size_t r = 0; r < b->n; r++) {
                    const h5turbo_fast5_read *read = &b->reads[r];
                    if (read->status == H5TURBO_OK) continue;
                    errors++;
                    if (read->status >= H5TURBO_E_INTERNAL || !read->error || !strstr(read->error, argv[i])) {
                        printf("FAIL broken_test %s: read %zu: status %d, error '%s'\n", argv[i], r, read->status, read->error ? read->error : "(null)");
                        bad++;
                    }
                }
                bad += fetch_by_id(f5, b, argv[i], &errors);
            } else {
                count_error(&errors, status, "fast5 next_batch");
            }
            h5turbo_fast5_batch_free(b);
            h5turbo_fast5_close(f5);
        }
    }
    bad += bad_errors;
    printf("broken_test: %d files, %ld opened, %ld errors, %ld bad errors\n", argc - 1, opened, errors, bad);
    return bad ? 1 : 0;
}
