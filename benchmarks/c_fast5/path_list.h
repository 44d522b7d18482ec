/* The list of fast5 files both benchmark loops take: one path a line. Shared so that
 * the two programs do the same work before their timed loops. */
#ifndef C_FAST5_PATH_LIST_H
#define C_FAST5_PATH_LIST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lines of `file` (without their newlines) in *paths, their number in *n; -1 with
 * errno set when the file cannot be opened. */
static int read_path_list(const char *file, char ***paths, size_t *n) {
    FILE *list = fopen(file, "r");
    if (!list) return -1;
    size_t cap = 0;
    char line[4096];
    *paths = NULL;
    *n = 0;
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = 0;
        if (*n == cap) *paths = realloc(*paths, (cap = cap ? 2 * cap : 1024) * sizeof **paths);
        (*paths)[(*n)++] = strdup(line);
    }
    fclose(list);
    return 0;
}

#endif
