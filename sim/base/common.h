/* sim/base/common.h: what every stage of sim/ shares, kept once (as libuv keeps
 * uv-common): the named limits, error and warning messages into a report,
 * tuple formatting, and the grid iterator. Not part of the public API.
 * common.c also holds pl_format_bytes, pl_format_time and pl_verdict_name
 * (declared in the public headers), which several stages call, so that no
 * two sim/ files call each other.
 *
 * It depends on the public headers only, so any sim/ file may include it
 * without creating a cycle between sim/ files.
 */
#ifndef TILESIM_SIM_COMMON_H
#define TILESIM_SIM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "../../kernel/pallas.h"
#include "../tilesim.h"

/* The most operands of a call: inputs, outputs and scalar prefetch (the
 * public arrays of sim/tilesim.h have this size). */
#define SIM_MAX_OPS PL_MAX_CALL_OPERANDS

/* G4: the most TensorCores a (what-if) device may have. */
#define SIM_MAX_CORES 64

/* ---- messages ------------------------------------------------------------------ */

/* Fill rep->error and return code; keeps the first error. */
int sim_fail(pl_report *rep, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Append one line to rep->warnings (dropped when full) and count it. */
void sim_warn(pl_report *rep, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "(1, 2, 3)": a grid point or block index, as messages print it. */
void sim_format_idx(const int64_t *idx, int rank, char *buf, size_t n);

/* a * b, or INT64_MAX where it would overflow: sizes saturate, never wrap. */
int64_t sim_sat_mul(int64_t a, int64_t b);

/* ---- random numbers ------------------------------------------------------------ */

/* The splitmix64 step: one generator for the definitions' inputs (kdef.c)
 * and the executor's shuffles of parallel axes (exec.c, V4); the example
 * kernels see only the public API and keep their own. Its streams are the
 * same on every host. */
uint64_t sim_splitmix64(uint64_t *s);

/* ---- the grid ------------------------------------------------------------------ */

/* Walks the points of a box of the grid in lexicographic order, last axis
 * fastest (G1). The box is the whole grid, or one TensorCore's chunk of a
 * megacore split (G4: [lo, hi) along the split axis). pos is the point:
 *     for (int more = !sim_grid_iter_empty(&it); more; more = sim_grid_iter_next(&it))
 */
typedef struct sim_grid_iter {
    int rank;
    int64_t lo[PL_MAX_GRID], hi[PL_MAX_GRID];
    int64_t pos[PL_MAX_GRID];
} sim_grid_iter;

/* Room for one more element in the array *p of elem-byte elements, n in
 * use of *cap: when full, *cap doubles (to `first` from 0) and *p moves.
 * 0, or -1 out of host memory (*p and *cap unchanged). The records a walk
 * keeps grow by this, an element at a time, millions in a big mesh.
 *     if (l->n == l->cap && sim_grow((void **)&l->x, &l->cap, sizeof *l->x, 16)) return -1;
 */
int sim_grow(void **p, int64_t *cap, size_t elem, int64_t first);
/* Ask Linux for transparent huge pages (2 MiB) over a malloc'd block of
 * `bytes` once it is SIM_HUGE_BYTES or more: a big mesh's records grow to
 * gigabytes, and faulting them in 4 KiB at a time took a quarter of a
 * 1024-device ring's host time in the kernel (issue 26). Advice only:
 * where huge pages are off or unknown, nothing changes. */
#define SIM_HUGE_BYTES (4 << 20)
void sim_hugepages(void *p, size_t bytes);
/* Ask the cache for the line `bytes` past p, which may lie past the end of
 * p's array: a hint, never a load, and computed on the address as an
 * integer (pointer arithmetic past an array's end is undefined). A record
 * list written or read in order, long before or after its neighbours, is
 * cold: the walk and the replay fetch a few records ahead. */
static inline void sim_prefetch_ahead(const void *p, size_t bytes, int for_write)
{
    const void *q = (const void *)((uintptr_t)p + bytes);
    if (for_write) __builtin_prefetch(q, 1);
    else __builtin_prefetch(q, 0);
}

/* The whole grid of `rank` axes of sizes grid[], at its first point. */
void sim_grid_iter_init(sim_grid_iter *it, int rank, const int64_t *grid);
/* The box [lo, hi) per axis, at its first point lo. */
void sim_grid_iter_box(sim_grid_iter *it, int rank, const int64_t *lo, const int64_t *hi);
/* 1 when the box holds no point (an axis of size < 1: a grid not validated). */
int sim_grid_iter_empty(const sim_grid_iter *it);
/* Step to the next point (G1). Returns 1, or 0 after the last point (pos is
 * then back at the first). */
int sim_grid_iter_next(sim_grid_iter *it);

/* The point of linear index `linear` (row-major over grid[], G1) into idx:
 * what the walk records per step for traces of split grids. */
void sim_grid_point(int rank, const int64_t *grid, int64_t linear, int64_t *idx);

/* The lines of a `key = value` file (chip files, model files): s for a
 * message, bytes outside printable ASCII as \xNN so that a binary or
 * mis-encoded file cannot put control characters on a terminal (n >= 6);
 * and s without its leading and trailing white space (in place). */
const char *sim_text_escape(const char *s, char *buf, size_t n);
char *sim_text_trim(char *s);
/* Such a file's text (at most 64 KiB - 1, no NUL bytes), malloc'd; NULL with
 * *rc (PL_EINVAL, PL_ENOMEM) and err saying why, naming path and kind
 * ("chip", "model"): not a regular file, cannot open, too long, binary. */
char *sim_text_load(const char *path, const char *kind, char *err, size_t n, int *rc);
/* Drop a leading UTF-8 byte order mark (spreadsheets and Windows editors
 * write one; it is not part of the first key) from the NUL-terminated text
 * of len bytes, in place. */
void sim_text_skip_bom(char *text, size_t len);

/* ---- chips --------------------------------------------------------------------- */

/* 1 when `devices` devices of chip can be connected; else 0 with why in msg.
 * A chip with ici_links = 0 has no inter-chip links: it is a single device,
 * so a mesh (pl_mesh_call) or a review configuration of more is refused. */
int sim_chip_devices_ok(const pl_chip *chip, int64_t devices, char *msg, size_t n);

#endif
