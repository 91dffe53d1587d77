/* sim/call/vmem.c: host memory for simulated VMEM buffers and scratch (core.h).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, beside _POSIX_C_SOURCE */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core.h"

/* VMEM buffers. A cost-only run never touches them but must have them (a
 * kernel may still read an element): zeroed pages from mmap cost nothing
 * until touched, where calloc would clear megabytes per call once malloc's
 * mmap threshold has grown (sweeps allocate thousands of such buffers). */
/* Under AddressSanitizer every buffer comes from calloc: mmap'd memory has
 * no redzones, so a write past one would go unseen (FINDINGS.md F3). */
#include "../../kernel/sanitizers.h"
#if TILESIM_ASAN
#define VMEM_MMAP_MIN SIZE_MAX
#else
#define VMEM_MMAP_MIN ((size_t)1 << 16)
#endif

void *sim_vmem_alloc(int cost_only, size_t bytes)
{
    if (!cost_only || bytes < VMEM_MMAP_MIN) return cost_only ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void sim_vmem_free(int cost_only, void *p, size_t bytes)
{
    if (!p) return;
    if (cost_only && bytes >= VMEM_MMAP_MIN) munmap(p, bytes);
    else free(p);
}

