/* examples/kernels/deadlock_prog.c: the program examples/deadlock, also
 * `tilesim run deadlock`.
 *
 * A ring all-gather whose last device forgets to send
 * (rules M10, M11): tilesim reports the deadlock, naming every stuck device
 * with its pending wait and grid point, instead of hanging as a real mesh,
 * or JAX's interpret mode, would.
 *
 *   deadlock [--devices N] [--chip NAME]
 *
 * The kernel is the ring all-gather of kernels/ring_allgather.h with
 * ra_params.forgetful = N - 1: that device never starts its copies but still
 * waits for the ones its left neighbour sends it. Its right neighbour,
 * device 0, then waits forever at step 0; device 1 waits at step 1 for what
 * device 0 never sends, and so on: devices 0 .. N - 2 are stuck, the
 * forgetful one finishes.
 *
 * Exit status: 0 when tilesim reported the deadlock as expected (PL_EDEADLOCK
 * naming each of devices 0 .. N - 2), 1 otherwise, 2 for a bad command line.
 */
#include "mesh_progs.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"
#include "mesh_cli.h"
#include "options.h"
#include "ring_allgather.h"

#define USAGE "usage: deadlock [--devices N] [--chip NAME | --chip-file FILE]\n"

enum { O_DEVICES = 256 };

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    int64_t v = 0;
    if (code != O_DEVICES) return 0;
    int e = ex_parse_int(cl, arg, "--devices", 2, 64, &v);
    *(int *)user = (int)v;
    return e;
}

/* Does msg name "device D" as a whole number (not "device 12" for 1)? */
static int names_device(const char *msg, int dev)
{
    char want[32];
    int n = snprintf(want, sizeof want, "device %d", dev);
    for (const char *p = strstr(msg, want); p; p = strstr(p + 1, want))
        if (p[n] < '0' || p[n] > '9') return 1;
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int run(int n, const pl_options *opt)
{
    pl_mesh mesh;
    if (ex_ring_mesh("deadlock", n, &mesh) != PL_OK) return 2;
    ra_shape s = {.devices = n, .rows = 8, .cols = 128};
    ra_params p = {.forgetful = n - 1};
    ra_data d;
    if (ra_alloc(&d, &s, 1, 7) != PL_OK) {
        fprintf(stderr, "deadlock: out of host memory\n");
        return 2;
    }
    pl_call call;
    ra_call(&call, &s, &p);
    pl_mesh_report mr;
    printf("deadlock: a ring all-gather on a ring of %d; device %d forgets to start its copies\n", n, n - 1);
    double t0 = now_s();
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, opt, &mr, NULL);
    double took = now_s() - t0;
    ra_free(&d);
    printf("tilesim (after %.3f s): %s: %s\n", took, rc ? pl_strerror(rc) : "no error", mr.error);
    /* the message names the first 12 stuck devices and counts the rest (sim_mesh_declare_deadlock) */
    int named = 0, listed = n - 1 < 12 ? n - 1 : 12;
    char more[48] = "";
    if (n - 1 > 12) snprintf(more, sizeof more, "; and %d more", n - 1 - 12);
    for (int dev = 0; dev < n - 1; dev++) named += names_device(mr.error, dev);
    if (rc == PL_EDEADLOCK && named == listed && (!more[0] || strstr(mr.error, more))) {
        if (n == 2) printf("=> the deadlock was reported, naming the stuck device (rule M10)\n");
        else if (!more[0]) printf("=> the deadlock was reported, naming each of the %d stuck devices (rule M10)\n", n - 1);
        else printf("=> the deadlock was reported, naming 12 of the %d stuck devices and counting the rest (rule M10)\n",
                    n - 1);
        return 0;
    }
    printf("=> NOT AS EXPECTED: %s, %d of the %d stuck devices named\n",
           rc == PL_EDEADLOCK ? "a deadlock" : "no deadlock", named, n - 1);
    return 1;
}

int ex_deadlock_main(int argc, char **argv)
{
    static const struct option mine[] = {{"devices", required_argument, NULL, O_DEVICES}, {0}};
    ex_cmdline cl = {.prog = "deadlock", .usage = USAGE, .accept = EX_CHIP | EX_CHIP_FILE};
    int n = 4;
    int e = ex_parse(&cl, argc, argv, mine, own_option, &n);
    if (e != EX_PARSE_OK) return e == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos) return ex_usage_error(&cl, "unexpected argument '%s'", cl.pos[0]);
    return run(n, &cl.opt);
}
