/* sim/base/common.c: helpers shared by every stage of sim/ (see common.h). */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include <ctype.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../kernel/context.h"
#include "common.h"

/* ---- messages ------------------------------------------------------------------ */

int sim_fail(pl_report *rep, int code, const char *fmt, ...)
{
    if (rep->status != PL_OK) return rep->status; /* keep the first error */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->error, sizeof rep->error, fmt, ap);
    va_end(ap);
    rep->status = code;
    return code;
}

/* The line that ends a full list, once: a warning that does not fit whole is left out, not cut. */
static const char more_warnings[] = "(more warnings not shown: the report's n_warnings counts them all)\n";

void sim_warn(pl_report *rep, const char *fmt, ...)
{
    char line[PL_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rep->n_warnings++;
    size_t used = strlen(rep->warnings), n = strlen(line), room = sizeof rep->warnings - sizeof more_warnings;
    if (used + n + 2 <= room) {
        memcpy(rep->warnings + used, line, n);
        memcpy(rep->warnings + used + n, "\n", 2);
    } else if (used + sizeof more_warnings <= sizeof rep->warnings && !strstr(rep->warnings, more_warnings))
        memcpy(rep->warnings + used, more_warnings, sizeof more_warnings);
}

/* One format for sim/ and kernel/: the kernel's messages print points too. */
void sim_format_idx(const int64_t *idx, int rank, char *buf, size_t n) { kern_format_point(idx, rank, buf, n); }

/* ---- numbers for people ------------------------------------------------------- */

/* 1536 -> "1.5 KiB". Here rather than in report.c so that analyze.c and
 * host.c, which print sizes and times too, do not call into the report
 * (report.c calls analyze.c: that was a cycle). */
const char *pl_format_bytes(double b, char *buf, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *pl_format_time(double s, char *buf, size_t n)
{
    if (s < 1e-6) snprintf(buf, n, "%.0f ns", s * 1e9);
    else if (s < 1e-3) snprintf(buf, n, "%.2f us", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.2f ms", s * 1e3);
    else snprintf(buf, n, "%.3f s", s);
    return buf;
}

/* ---- sizes ----------------------------------------------------------------------- */

/* Byte counts saturate at INT64_MAX instead of wrapping, so that an absurd
 * block is rejected by the budget (M4) rather than sized as a tiny one. */
int64_t sim_sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t pl_array_size(const pl_array *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->rank && d < PL_MAX_RANK; d++) n = sim_sat_mul(n, a->shape[d]);
    return n;
}

size_t pl_array_bytes(const pl_array *a)
{
    int64_t n = pl_array_size(a);
    if (pl_dtype_bits(a->dtype) == 4) return (size_t)(n / 2 + n % 2); /* int4, fp4: packed two per byte */
    /* saturates at INT64_MAX, as the size does: 2^62 f32 elements wrapped to 0 bytes, passed the host-memory
     * check and were filled through a 1-byte allocation; INT64_MAX (+ 1 still fits a size_t) is refused */
    return (size_t)sim_sat_mul(n, (int64_t)pl_dtype_size(a->dtype));
}

/* ---- random numbers ------------------------------------------------------------ */

uint64_t sim_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- the grid ------------------------------------------------------------------ */

void sim_grid_iter_box(sim_grid_iter *it, int rank, const int64_t *lo, const int64_t *hi)
{
    it->rank = rank;
    for (int a = 0; a < rank; a++) {
        it->lo[a] = lo[a];
        it->hi[a] = hi[a];
        it->pos[a] = lo[a];
    }
}

void sim_grid_iter_init(sim_grid_iter *it, int rank, const int64_t *grid)
{
    int64_t zero[PL_MAX_GRID] = {0};
    sim_grid_iter_box(it, rank, zero, grid);
}

int sim_grid_iter_empty(const sim_grid_iter *it)
{
    for (int a = 0; a < it->rank; a++)
        if (it->hi[a] <= it->lo[a]) return 1;
    return 0;
}

int sim_grid_iter_next(sim_grid_iter *it)
{
    for (int a = it->rank - 1; a >= 0; a--) { /* G1: last axis fastest */
        if (++it->pos[a] < it->hi[a]) return 1;
        it->pos[a] = it->lo[a];
    }
    return 0;
}

void sim_grid_point(int rank, const int64_t *grid, int64_t linear, int64_t *idx)
{
    for (int a = rank - 1; a >= 0; a--) idx[a] = linear % grid[a], linear /= grid[a];
}


const char *sim_text_escape(const char *s, char *buf, size_t n)
{
    size_t at = 0;
    for (; *s && at + 5 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch < 0x7f) buf[at++] = (char)ch;
        else at += (size_t)snprintf(buf + at, n - at, "\\x%02x", ch);
    }
    if (n) buf[at] = '\0';
    return buf;
}

char *sim_text_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

void sim_text_skip_bom(char *text, size_t len)
{
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) memmove(text, text + 3, len - 2); /* with the NUL */
}

char *sim_text_load(const char *path, const char *kind, char *err, size_t n, int *rc)
{
    enum { MAX = (1 << 16) - 1 };
    struct stat st;
    *rc = PL_EINVAL;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* fopen would take a directory, or block on a FIFO */
        snprintf(err, n, "%s: %s, not a %s file", path, S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file",
                 kind);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, n, "%s: cannot open: %s", path, strerror(errno)), NULL;
    char *buf = malloc(MAX + 1);
    if (!buf) return fclose(f), snprintf(err, n, "%s: out of host memory", path), *rc = PL_ENOMEM, NULL;
    size_t got = fread(buf, 1, MAX, f);
    /* a file of exactly MAX bytes has read no EOF yet: one more byte tells */
    int too_long = got == MAX && fgetc(f) != EOF;
    fclose(f);
    if (too_long) snprintf(err, n, "%s: larger than %d bytes; a %s file is a few lines", path, MAX, kind);
    else if (memchr(buf, '\0', got)) snprintf(err, n, "%s: not a text file", path);
    else {
        buf[got] = '\0';
        *rc = PL_OK;
        sim_text_skip_bom(buf, got);
        return buf;
    }
    free(buf);
    return NULL;
}

const char *pl_verdict_name(pl_verdict v)
{
    return v == PL_PASS ? "PASS" : v == PL_MARGINAL ? "MARGINAL" : "FAIL";
}

void sim_hugepages(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (bytes < SIM_HUGE_BYTES) return;
    /* malloc gives such a block its own mapping; skip to its first whole page */
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096, lo = ((uintptr_t)p + page - 1) & ~(page - 1),
              hi = ((uintptr_t)p + bytes) & ~(page - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: nothing to undo if refused */
#else
    (void)p, (void)bytes;
#endif
}

int sim_grow(void **p, int64_t *cap, size_t elem, int64_t first)
{
    int64_t want = *cap ? 2 * *cap : first;
    void *q = realloc(*p, (size_t)want * elem);
    if (!q) return -1;
    sim_hugepages(q, (size_t)want * elem);
    *p = q;
    *cap = want;
    return 0;
}
