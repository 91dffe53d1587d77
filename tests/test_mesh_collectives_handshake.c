/* tests/test_mesh_collectives_handshake.c: what the capacity handshake of
 * the collectives prevents (rules M12, V4). The collective matmul refills
 * its neighbour's x slot, and the single-slot all-reduce its neighbour's
 * receive slot, only after the neighbour signals that it has read it.
 * Without the signal a fast left neighbour overwrites a block that is still
 * being multiplied or added.
 *
 * The broken versions really do let one device's thread write memory that
 * another's is reading (a remote copy lands at start), so this suite is a
 * host data race by design: keep it out of make check-tsan. */
#include "../examples/kernels/collective_matmul.h"
#include "../examples/kernels/ring_allreduce.h"
#include "test_mesh_helpers.h"

/* One run of the matmul (overlapped) or the all-reduce on a ring of 8 under
 * seed: PL_OK and right (0), PL_OK and wrong (1), PL_ERACE (2), other (3). */
static int matmul_outcome(int handshake, uint64_t seed, char *msg, size_t n)
{
    cm_shape s = {.devices = 8, .rows = 8, .k = 128, .cols = 128};
    cm_params p = {.no_handshake = !handshake};
    cm_data d;
    cr_assert_eq(cm_alloc(&d, &s, 1, 7), PL_OK);
    pl_call call;
    cm_call(&call, &s, CM_OVERLAPPED, &p);
    pl_mesh mesh = mh_mesh("ring:8");
    pl_mesh_report mr;
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, &(pl_options){.seed = seed}, &mr, NULL);
    snprintf(msg, n, "%s", mr.error);
    int wrong = 0;
    for (int dev = 0; rc == PL_OK && dev < s.devices; dev++) {
        pl_check chk;
        wrong |= cm_check(&d, dev, &chk, NULL) != PL_OK;
    }
    cm_free(&d);
    return rc == PL_OK ? wrong : rc == PL_ERACE ? 2 : 3;
}

static int allreduce_outcome(int single_slot, uint64_t seed, char *msg, size_t n)
{
    ar_shape s = {.devices = 8, .rows = 64, .cols = 128};
    ar_params p = {.single_slot = single_slot};
    ar_data d;
    cr_assert_eq(ar_alloc(&d, &s, 1, 42), PL_OK);
    pl_call call;
    ar_call(&call, &s, &p);
    pl_mesh mesh = mh_mesh("ring:8");
    pl_mesh_report mr;
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, &(pl_options){.seed = seed}, &mr, NULL);
    snprintf(msg, n, "%s", mr.error);
    ar_error e = {.ok = 0};
    if (rc == PL_OK) ar_verify(&d, -1, &e);
    ar_free(&d);
    return rc == PL_OK ? !e.ok : rc == PL_ERACE ? 2 : 3;
}

/* The control: with the handshake, every thread order gives the right result. */
Test(mesh_collectives_handshake, with_it_every_seed_is_right_M12)
{
    char msg[2048];
    for (uint64_t seed = 1; seed <= 5; seed++) {
        cr_expect_eq(matmul_outcome(1, seed, msg, sizeof msg), 0, "matmul, seed %llu: %s", (unsigned long long)seed,
                     msg);
        cr_expect_eq(allreduce_outcome(0, seed, msg, sizeof msg), 0, "all-reduce, seed %llu: %s",
                     (unsigned long long)seed, msg);
    }
}

/* Without it, some thread order overwrites a block still in use: the result
 * is wrong (or, once the runtime sees it, PL_ERACE). In practice every run
 * is wrong; five seeds make a right one by luck vanishingly unlikely. */
Test(mesh_collectives_handshake, without_it_a_slot_is_overwritten_while_read_M12)
{
    char msg[2048];
    int caught_mm = 0, caught_ar = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        int a = matmul_outcome(0, seed, msg, sizeof msg), b = allreduce_outcome(1, seed, msg, sizeof msg);
        cr_expect_neq(a, 3, "matmul, seed %llu: an unexpected error: %s", (unsigned long long)seed, msg);
        cr_expect_neq(b, 3, "all-reduce, seed %llu: an unexpected error: %s", (unsigned long long)seed, msg);
        caught_mm += a == 1 || a == 2, caught_ar += b == 1 || b == 2;
    }
    cr_expect_gt(caught_mm, 0, "the matmul without its handshake was right under every seed");
    cr_expect_gt(caught_ar, 0, "the single-slot all-reduce without its handshake was right under every seed");
}

/* What V4 should say: a copy into bytes whose previous copy the receiver has
 * not yet taken (no wait_recv of it that the sender has seen) is a race, in
 * every thread order. Today the race check (sim/mesh_race.c) orders a copy
 * only after the earlier copy's start; two copies from the same sender are
 * always ordered, so this overwrite is never reported. Disabled until the
 * runtime checks receipt; enabled, it fails now: PL_OK and a wrong result. */
Test(mesh_collectives_handshake, without_it_a_race_is_reported_V4, .disabled = true)
{
    char msg[2048];
    static const char *said[] = {"PL_OK and right", "PL_OK and wrong", "PL_ERACE", "another error"};
    for (uint64_t seed = 0; seed <= 2; seed++) {
        int a = matmul_outcome(0, seed, msg, sizeof msg), b = allreduce_outcome(1, seed, msg, sizeof msg);
        cr_expect_eq(a, 2, "matmul, seed %llu: %s, not PL_ERACE", (unsigned long long)seed, said[a]);
        cr_expect_eq(b, 2, "all-reduce, seed %llu: %s, not PL_ERACE", (unsigned long long)seed, said[b]);
    }
}
