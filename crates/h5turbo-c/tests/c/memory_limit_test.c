/* Reads whose results cannot be allocated under a memory limit (ulimit -v, strict
 * overcommit, a cgroup's limit) fail with a status and a message; the host program
 * goes on. The sizes pass the library's "more than this machine's memory" check, and
 * the stored values (16 or 8 bytes an element) fit: what does not is the library's
 * value per element (a string, a sequence, a path). Before, that vector was grown
 * element by element, and Rust's allocation failure aborted the program.
 *
 *   memory_limit_test FILE   (FILE: the datasets below, 2^40 elements, none written)
 *
 * Run by the plain build only: the sanitizers reserve more address space than the
 * limit leaves. */
#include <h5turbo.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* Bytes of address space this process maps now (/proc/self/statm, in pages). */
static unsigned long long mapped_bytes(void) {
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%llu", &pages) != 1) pages = 0;
    if (f) fclose(f);
    return pages * 4096ull;
}

static int failures;

static void expect_cannot_allocate(const char *what, int rc) {
    const char *m = h5turbo_last_error();
    if (rc != H5TURBO_E_NOMEM || strstr(m, "cannot allocate") == NULL) {
        printf("FAIL %s: status %d, message '%s'\n", what, rc, rc ? m : "");
        failures++;
    } else {
        printf("ok   %s: %s\n", what, m);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: memory_limit_test FILE\n");
        return 2;
    }
    h5turbo_file *f = NULL;
    if (h5turbo_file_open(argv[1], &f) != H5TURBO_OK) {
        printf("FAIL open: %s\n", h5turbo_last_error());
        return 1;
    }
    /* 768 MiB more than mapped now: 2^25 stored values of 8 or 16 bytes fit, 2^25
       values of the library's 24- or 32-byte element type on top of them do not */
    struct rlimit limit = {mapped_bytes() + (768ull << 20), RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) {
        perror("setrlimit");
        return 1;
    }
    uint64_t count = 1ull << 25;
    const char *names[] = {"/vlen_strings", "/fixed_strings", "/sequences", "/references"};
    for (int k = 0; k < 4; k++) {
        h5turbo_object *o = NULL;
        if (h5turbo_object_open(f, names[k], &o) != H5TURBO_OK) {
            printf("FAIL open %s: %s\n", names[k], h5turbo_last_error());
            failures++;
            continue;
        }
        char **strings = NULL;
        h5turbo_sequence *seqs = NULL;
        size_t n = 0;
        int rc;
        switch (k) {
        case 2: rc = h5turbo_dataset_read_sequences(o, NULL, &count, NULL, &seqs, &n, 1); break;
        case 3: rc = h5turbo_dataset_read_references(o, NULL, &count, NULL, &strings, &n, 1); break;
        default: rc = h5turbo_dataset_read_strings(o, NULL, &count, NULL, &strings, &n, 1); break;
        }
        expect_cannot_allocate(names[k], rc);
        if (k == 2) h5turbo_sequences_free(seqs, n);
        else h5turbo_strings_free(strings, n);
        h5turbo_object_close(o);
    }
    /* the limit lifted, a small read of the same dataset works */
    limit.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_AS, &limit);
    h5turbo_object *o = NULL;
    char **strings = NULL;
    size_t n = 0;
    uint64_t few = 3;
    if (h5turbo_object_open(f, "/vlen_strings", &o) != H5TURBO_OK ||
        h5turbo_dataset_read_strings(o, NULL, &few, NULL, &strings, &n, 1) != H5TURBO_OK || n != 3 ||
        strcmp(strings[0], "") != 0) {
        printf("FAIL three strings after the limit: %s\n", h5turbo_last_error());
        failures++;
    }
    h5turbo_strings_free(strings, n);
    h5turbo_object_close(o);
    h5turbo_file_close(f);
    printf("%d failed\n", failures);
    return failures != 0;
}
