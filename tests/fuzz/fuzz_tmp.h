/* tests/fuzz/fuzz_tmp.h: where the harnesses keep their temporary files.
 * Under $TMPDIR (/tmp when unset), so that tests/fuzz/run.sh can give each
 * run a private directory and check that nothing named tilesim_fuzz_* is
 * left in it; each harness removes its files again at exit (libFuzzer ends
 * a run with exit(), which runs atexit handlers; after a crash the files
 * may stay, beside the crash input). Static inline: each harness is one
 * program. */
#ifndef TILESIM_FUZZ_TMP_H
#define TILESIM_FUZZ_TMP_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path = $TMPDIR/name (name may end in XXXXXX for mkstemp/mkdtemp); aborts
 * when it does not fit in n bytes: a truncated path could name another file. */
static inline void fz_tmp_path(char *path, size_t n, const char *name)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0]) dir = "/tmp";
    int k = snprintf(path, n, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= n) {
        fprintf(stderr, "fuzz: TMPDIR '%s' is too long for a path of %zu bytes\n", dir, n);
        abort();
    }
}

/* Remove path and, if it is a directory, everything below it (depth-first,
 * symbolic links removed, never followed). Best effort: what cannot be
 * removed stays, and run.sh's check names it. */
static inline void fz_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *sub = malloc(n);
            if (!sub) continue;
            snprintf(sub, n, "%s/%s", path, e->d_name);
            fz_remove_tree(sub);
            free(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

#endif
