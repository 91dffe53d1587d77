/* sim/mesh/mesh_fiber.c: a mesh's TensorCores as fibers on a few pool
 * threads (mesh_fiber.h says why and how they keep the thread mode's
 * protocol).
 *
 * A pool thread holds the mesh lock whenever it is not running a fiber: it
 * takes the next fiber off its queue, switches to it (lock held), and gets
 * control back when that fiber parks (lock held) or ends. A fiber lets go
 * of the lock while it runs its walk, as a device thread does. Fiber u
 * belongs to pool u % pools for its whole life.
 */
#define _GNU_SOURCE /* MAP_STACK, MAP_NORESERVE */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../kernel/guard.h"
#include "../../kernel/sanitizers.h"
#include "mesh_fiber.h"
#include "mesh_run.h"

#if TILESIM_ASAN /* AddressSanitizer follows a stack switch it is told of (sanitizer/common_interface_defs.h) */
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
#define ASAN_START(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define ASAN_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define ASAN_START(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define ASAN_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

/* ---- a context switch ------------------------------------------------------------ *
 * On x86-64, by hand: the registers the ABI says a call keeps, the SSE and
 * x87 control words, the stack pointer. glibc's swapcontext also saves and
 * sets the signal mask, a system call at every switch (a 1,024-device ring
 * all-reduce switches about 4 million times), and no fiber here changes its
 * mask. Elsewhere, swapcontext. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(TILESIM_UCONTEXT)
typedef struct fctx {
    void *sp;
} fctx;
void sim_fctx_jump(void **save, void *to); /* below, in assembly */
__asm__(".text\n"
        ".globl sim_fctx_jump\n"
        ".type sim_fctx_jump, @function\n"
        "sim_fctx_jump:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    subq $8, %rsp\n    stmxcsr (%rsp)\n    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n    fldcw 4(%rsp)\n    addq $8, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size sim_fctx_jump, .-sim_fctx_jump\n");

static void fctx_switch(fctx *from, fctx *to) { sim_fctx_jump(&from->sp, to->sp); }
/* Where the context's saved registers and newest frames are. */
static const void *fctx_top(const fctx *c) { return c->sp; }

/* A context that starts entry on [stack, stack + size): the frame
 * sim_fctx_jump pops, with entry as its return address, entered as if
 * called (the stack 16-byte aligned before the call's push). */
static int fctx_make(fctx *c, void *stack, size_t size, void (*entry)(void))
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    *--sp = 0;                      /* entry's return address: it never returns */
    *--sp = (uint64_t)(uintptr_t)entry;
    for (int k = 0; k < 6; k++) *--sp = 0; /* rbp, rbx, r12 .. r15 */
    uint32_t csr[2] = {0x1F80, 0x037F}; /* MXCSR and the x87 control word at their defaults */
    memcpy(--sp, csr, sizeof csr);
    c->sp = sp;
    return 0;
}
#else
typedef struct fctx {
    ucontext_t uc;
} fctx;

static void fctx_switch(fctx *from, fctx *to) { swapcontext(&from->uc, &to->uc); }
static const void *fctx_top(const fctx *c) { return (void)c, NULL; } /* not worth the machine's register names */

static int fctx_make(fctx *c, void *stack, size_t size, void (*entry)(void))
{
    if (getcontext(&c->uc) != 0) return -1;
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, entry, 0);
    return 0;
}
#endif

struct sim_fiber {
    fctx uc;
    void *map;              /* the mapping: a guard page, then the stack */
    size_t map_bytes;
    struct mesh_dev *next;  /* its pool's queue */
    int queued, finished;
    int running;            /* its pool runs it now: it checks its wait itself before it parks */
    pl_ctx *guard;          /* the kernel it was running when it parked (kernel/guard.c) */
    void *fake;             /* AddressSanitizer's fake stack while parked */
};

struct sim_fiber_pool {
    struct mesh_run *run;
    pthread_t tid;
    int started;
    pthread_cond_t cond;    /* sleeps here while its queue is empty */
    struct mesh_dev *head, *tail;
    int live;               /* its fibers not yet ended */
    fctx uc;                /* the pool thread's own context, while a fiber runs */
    struct mesh_dev *current;
    const void *bottom;     /* its own stack, for AddressSanitizer's switches back */
    size_t size;
    void *fake;
};

int sim_fibers_wanted(void)
{
#if TILESIM_TSAN
    return 0;
#else
    const char *e = getenv("TILESIM_MESH_THREADS");
#if TILESIM_ASAN
    /* AddressSanitizer prints a warning on stderr at the first swapcontext,
     * which the program's own stderr must not carry: threads, unless asked */
    return e && strcmp(e, "0") == 0;
#else
    return !e || !*e || strcmp(e, "0") == 0;
#endif
#endif
}

/* A fiber's stack: 2 MiB (TILESIM_MESH_STACK_MB sets it; RLIMIT_STACK caps
 * it), mapped without reserving memory: it costs address space, and memory
 * only for the pages a kernel touches. A thread's is 8 MiB, but 4096
 * devices of 8 MiB are 32 GiB of address space; tilesim's own frames need
 * a few KiB, and a kernel with a bigger array on its stack than this meets
 * the guard page below it, which the crash guard reports as a stack
 * overflow naming the kernel. */
static size_t stack_bytes(void)
{
    struct rlimit rl;
    size_t b = 2u << 20;
    const char *e = getenv("TILESIM_MESH_STACK_MB");
    if (e && atoi(e) > 0 && atoi(e) <= 1024) b = (size_t)atoi(e) << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < b) b = rl.rlim_cur;
    if (b < (256u << 10)) b = 256u << 10;
    return b;
}

static struct sim_fiber_pool *pool_of(struct mesh_run *r, const struct mesh_dev *d)
{
    return &r->pools[(int)(d - r->dev) % r->n_pools];
}

/* From fiber d back to its pool (lock held). */
static void to_pool(struct mesh_run *r, struct mesh_dev *d)
{
    struct sim_fiber_pool *p = pool_of(r, d);
    struct sim_fiber *f = d->fiber;
    ASAN_START(f->finished ? NULL : &f->fake, p->bottom, p->size);
    fctx_switch(&f->uc, &p->uc);
    ASAN_FINISH(f->fake, &p->bottom, &p->size);
}

/* Where a fiber starts, on its pool thread, lock held (the pool's current
 * fiber tells which). */
static _Thread_local struct sim_fiber_pool *this_pool;

static void fiber_main(void)
{
    struct sim_fiber_pool *p = this_pool;
    struct mesh_dev *d = p->current;
    struct mesh_run *r = p->run;
    ASAN_FINISH(NULL, &p->bottom, &p->size);
    pthread_mutex_unlock(&r->lock);
    r->run_unit(d); /* its walk, then its end told to the others (mesh_run.c) */
    pthread_mutex_lock(&r->lock);
    d->fiber->finished = 1;
    to_pool(r, d); /* never comes back */
}

static void run_one(struct sim_fiber_pool *p, struct mesh_dev *d)
{
    struct sim_fiber *f = d->fiber;
    p->current = d;
    f->running = 1;
    pl_ctx *mine = kern_guard_enter(f->guard); /* what the fiber runs, while it runs */
    kern_guard_stack(f->map, (char *)f->map + sysconf(_SC_PAGESIZE), p->run->stack_note);
    ASAN_START(&p->fake, (char *)f->map + sysconf(_SC_PAGESIZE), f->map_bytes - (size_t)sysconf(_SC_PAGESIZE));
    fctx_switch(&p->uc, &f->uc);
    ASAN_FINISH(p->fake, NULL, NULL);
    f->guard = kern_guard_enter(mine);
    kern_guard_stack(NULL, NULL, NULL);
    p->current = NULL;
    f->running = 0;
    if (!f->finished) return;
    p->live--;
    munmap(f->map, f->map_bytes);
    f->map = NULL;
}

/* The fiber that runs next resumes in its newest stack frames (the
 * saved registers, then the frames of the wait it parked in and of its
 * kernel): fetch them while this one runs. A mesh of 1,024 devices has
 * 1,024 stacks, and each has left the cache by its next turn. */
static void prefetch_fiber(const struct mesh_dev *d)
{
    if (!d || !d->fiber->map) return;
    const char *top = fctx_top(&d->fiber->uc);
    if (!top) return;
    for (int line = 0; line < 32; line++) __builtin_prefetch(top + 64 * line);
}

static void *pool_main(void *arg)
{
    struct sim_fiber_pool *p = arg;
    struct mesh_run *r = p->run;
    this_pool = p;
    pthread_mutex_lock(&r->lock);
    while (!r->go) pthread_cond_wait(&p->cond, &r->lock);
    while (r->go > 0 && p->live > 0) {
        while (!p->head) pthread_cond_wait(&p->cond, &r->lock);
        struct mesh_dev *d = p->head;
        p->head = d->fiber->next;
        if (!p->head) p->tail = NULL;
        d->fiber->queued = 0;
        prefetch_fiber(p->head);
        if (!d->fiber->finished) run_one(p, d); /* its stack is gone once it ended */
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void push(struct mesh_run *r, struct mesh_dev *d)
{
    struct sim_fiber_pool *p = pool_of(r, d);
    struct sim_fiber *f = d->fiber;
    f->queued = 1;
    f->next = NULL;
    if (p->tail) p->tail->fiber->next = d;
    else p->head = d;
    p->tail = d;
    pthread_cond_signal(&p->cond);
}

/* A fiber that runs is not queued: it looks at its wait again before it parks (run_block). Queued, it
 * would run again after it parked elsewhere or ended: a deadlock declared by a fiber woke every blocked
 * one, itself included, and its pool later switched to the stack it had freed on ending (a crash). */
void sim_fiber_ready(struct mesh_run *r, struct mesh_dev *d)
{
    if (!d->fiber->queued && !d->fiber->finished && !d->fiber->running) push(r, d);
}

void sim_fiber_park(struct mesh_run *r, struct mesh_dev *d) { to_pool(r, d); }

void sim_fiber_yield(struct mesh_run *r, struct mesh_dev *d)
{
    pthread_mutex_lock(&r->lock);
    push(r, d); /* to the back: every fiber queued now runs first */
    to_pool(r, d);
    pthread_mutex_unlock(&r->lock);
}

static int make_fiber(struct mesh_dev *d, size_t bytes, size_t page)
{
    struct sim_fiber *f = d->fiber;
    f->map_bytes = bytes + page;
    f->map = mmap(NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                  -1, 0);
    if (f->map == MAP_FAILED) return f->map = NULL, -1;
    if (mprotect(f->map, page, PROT_NONE) != 0 || fctx_make(&f->uc, (char *)f->map + page, bytes, fiber_main) != 0) {
        munmap(f->map, f->map_bytes); /* the guard page (an overflow faults) or the context failed */
        return f->map = NULL, -1;
    }
    return 0;
}

int sim_fibers_start(struct mesh_run *r)
{
    int units = r->count * r->cores, first = r->first * r->cores;
    /* Cost-only, a core runs a few bookkeeping steps between waits: a second
     * pool thread only fights the first for the mesh lock (512 devices of a
     * ring all-reduce: 16.7 s on one, 22.0 s on two). With data, each core's
     * block ops are real work, and every host core helps. */
    const char *e = getenv("TILESIM_MESH_POOL"); /* a what-if for the bench: threads in the pool */
    /* the CPUs online, not hwloc's physical cores (sim_host_cores): loading
     * hwloc's topology takes 5-15 ms, more than a small mesh's whole run */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int pools = e && atoi(e) > 0 ? atoi(e) : r->cost_only ? 1 : cpus > 0 && cpus < 256 ? (int)cpus : 1;
    if (pools > units) pools = units;
    if (pools < 1) pools = 1;
    r->fibers_of = calloc((size_t)units, sizeof *r->fibers_of);
    r->pools = calloc((size_t)pools, sizeof *r->pools);
    if (!r->fibers_of || !r->pools) return 0;
    r->n_pools = pools;
    size_t bytes = stack_bytes(), page = (size_t)sysconf(_SC_PAGESIZE);
    snprintf(r->stack_note, sizeof r->stack_note, "a mesh device runs on a stack of %zu KiB; TILESIM_MESH_STACK_MB "
             "sets it, or TILESIM_MESH_THREADS=1 gives each device a thread's", bytes >> 10);
    int made = 0;
    for (; made < units; made++) {
        struct mesh_dev *d = &r->dev[first + made];
        d->fiber = &r->fibers_of[made];
        if (make_fiber(d, bytes, page) != 0) break;
    }
    /* a pool's fibers are the units u with u % pools == its index: count them */
    for (int u = 0; u < made; u++) pool_of(r, &r->dev[first + u])->live++;
    for (int k = 0; k < pools; k++) {
        struct sim_fiber_pool *p = &r->pools[k];
        p->run = r;
        pthread_cond_init(&p->cond, NULL);
        p->started = pthread_create(&p->tid, NULL, pool_main, p) == 0;
        if (!p->started) made = 0; /* without every pool thread, none runs */
    }
    return made;
}

void sim_fibers_go(struct mesh_run *r)
{
    int units = r->count * r->cores, first = r->first * r->cores;
    for (int u = 0; r->go > 0 && u < units; u++) push(r, &r->dev[first + u]);
    for (int k = 0; k < r->n_pools; k++) pthread_cond_broadcast(&r->pools[k].cond);
}

void sim_fibers_join(struct mesh_run *r)
{
    for (int k = 0; r->pools && k < r->n_pools; k++) {
        if (r->pools[k].started) pthread_join(r->pools[k].tid, NULL);
        pthread_cond_destroy(&r->pools[k].cond);
    }
    int units = r->count * r->cores;
    for (int u = 0; r->fibers_of && u < units; u++)
        if (r->fibers_of[u].map) munmap(r->fibers_of[u].map, r->fibers_of[u].map_bytes);
    free(r->pools);
    free(r->fibers_of);
    r->pools = NULL;
    r->fibers_of = NULL;
    r->n_pools = 0;
}
