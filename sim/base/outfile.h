/* sim/base/outfile.h: output files that never destroy what the user had
 * (issue 21). Not part of the public API; sim/, cli/ and examples/ use it
 * for every file they write (--trace, --html, --svg, --heatmap, --roofline,
 * --json-file, -o).
 *
 * A regular file (new, or existing, or the target of a symbolic link) is
 * written to a temporary file beside it and renamed over it only at
 * sim_out_commit: a failed run, a full disk, a crash or a stop (SIGINT,
 * SIGTERM, SIGHUP: the temporary files go, then the signal acts as before)
 * leaves the old file as it was and no temporary file behind, and a
 * symbolic link stays a link. (SIGKILL and _exit cannot be caught.)
 * A replaced file keeps its mode; a new one gets 0666 less the umask, as
 * fopen would. A device, FIFO or socket is written directly and never
 * removed: there is nothing to replace atomically, and removing it would
 * destroy it (`--svg /dev/null` run as root removed /dev/null).
 */
#ifndef TILESIM_SIM_OUTFILE_H
#define TILESIM_SIM_OUTFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sim_out {
    FILE *f;          /* write here */
    char *path;       /* the path the user gave (for messages) */
    char *target;     /* where the file ends up: path, or a link's final target */
    char *tmp;        /* the temporary file; NULL when writing a device directly */
} sim_out;

/* Open path for writing. NULL on failure, with err (what, where, why). */
sim_out *sim_out_open(const char *path, char *err, size_t n);

/* Finish: flush, close, rename into place. 0, or -1 with err (and the
 * original file untouched, the temporary file removed). Frees o. */
int sim_out_commit(sim_out *o, char *err, size_t n);

/* Give up: close and remove the temporary file (ours); a device is only
 * closed. Frees o; NULL is fine. */
void sim_out_abort(sim_out *o);

/* Would sim_out_open(path) succeed? Creates, truncates and removes nothing:
 * for checks before a long run. 0, or -1 with err. */
int sim_out_probe(const char *path, char *err, size_t n);

/* A file this process read: a chip file, a plugin, a CSV, a model. An
 * output that names it (the same file, by device and inode, through any
 * link) is refused by sim_out_open and sim_out_probe, so that an output
 * option can never replace the user's input (`--trace mine.chip`).
 * `what` says which input it is ("the chip file"); kept, not copied.
 * Call before the threads start. */
void sim_out_protect(const char *path, const char *what);

/* A temporary file of the program's own (mkstemp on tmpl, "...XXXXXX"),
 * removed on Ctrl-C, SIGTERM, SIGHUP or a crash as the outputs' temporary
 * files are: its descriptor, or -1 with errno. sim_tmp_drop removes it. */
int sim_tmp_make(char *tmpl);
void sim_tmp_drop(const char *path);

/* --trace-limit's value (pl_options.trace_limit_bytes): BYTES, optionally
 * with K, M, G or T (powers of 1024; "64M", "1G"), or "none" (-1: no
 * limit). 0, or -1 when s is none of these or is 0 or overflows. Here so
 * that the CLI and the examples read it alike. */
int sim_parse_size(const char *s, int64_t *out);

#endif
