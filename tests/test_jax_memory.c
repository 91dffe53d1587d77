/* tests/test_jax_memory.c: where tilesim follows JAX's own Pallas TPU tests
 * on memory (issue 9): out-of-bounds reads as poison for blocks, ranges and
 * DMA sources (V2, B7), masked loads and stores (V6), narrow scalar prefetch
 * (M5) and single-semaphore arguments (M8, M9). Each test names the JAX test
 * file it mirrors. */
#include <math.h>

#include "../kernel/pltpu.h"
#include "helpers.h"

/* ---- M9: semaphore arguments are single semaphores ------------------------------------ */

/* Mirrors JAX's tests/pallas/tpu_pallas_test.py semaphore tests, which pass
 * sem.at[i] (one semaphore) to signal, wait and copies: a (1,)-shaped
 * semaphore array is not one semaphore, even though it holds one. */
enum { SEM_SIGNAL, SEM_WAIT, SEM_READ, SEM_COPY, SEM_ONE };

static void sem_arg_kernel(pl_ctx *c, pl_ref *refs)
{
    int what = *(int *)pl_kernel_user(c);
    pl_ref sems = refs[2], dsem = refs[3]; /* PLTPU_SEMAPHORE(1), PLTPU_SEMAPHORE_DMA(1) */
    pl_fill(c, refs[1], 1.0);
    if (what == SEM_SIGNAL) pltpu_semaphore_signal(c, sems, 1);
    if (what == SEM_WAIT) pltpu_semaphore_wait(c, sems, 0);
    if (what == SEM_READ) (void)pltpu_semaphore_read(c, sems);
    if (what == SEM_COPY) (void)pltpu_async_copy(c, refs[0], refs[1], dsem);
    if (what == SEM_ONE) { /* the control: selected with pl_at, all of it works */
        pl_ref s = pl_at(c, sems, 0);
        pltpu_semaphore_signal(c, s, 2);
        pltpu_semaphore_wait(c, s, 2);
        pltpu_copy cp = pltpu_async_copy(c, refs[0], refs[1], pl_at(c, dsem, 0));
        pltpu_copy_start(c, &cp);
        pltpu_copy_wait(c, &cp);
    }
}

static int sem_arg_call(int what, pl_report *rep)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = sem_arg_kernel;
    call.user = &what;
    call.n_scratch = 2;
    call.scratch[0] = PLTPU_SEMAPHORE(1);
    call.scratch[1] = PLTPU_SEMAPHORE_DMA(1);
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, rep);
    th_io_free(&io);
    return rc;
}

Test(jax_memory, M9_signal_of_a_semaphore_array_is_rejected)
{
    pl_report rep;
    int rc = sem_arg_call(SEM_SIGNAL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot signal a semaphore array; select one with pl_at", "refs[2]",
                    "shape (1)", "rule M9", "grid point (0, 0)");
}

Test(jax_memory, M9_wait_and_read_of_a_semaphore_array_are_rejected)
{
    pl_report rep;
    int rc = sem_arg_call(SEM_WAIT, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot wait on a semaphore array; select one with pl_at", "refs[2]");
    rc = sem_arg_call(SEM_READ, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot read a semaphore array; select one with pl_at", "refs[2]");
}

Test(jax_memory, M8_copy_with_a_semaphore_array_is_rejected)
{
    pl_report rep;
    int rc = sem_arg_call(SEM_COPY, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot copy with a semaphore array; select one with pl_at", "refs[3]",
                    "rule M8");
}

Test(jax_memory, M9_a_semaphore_selected_with_pl_at_works)
{
    pl_report rep;
    th_expect_ok(sem_arg_call(SEM_ONE, &rep), &rep);
}
