/* examples/kernels/mesh_cli.c: the mesh example programs' shared command
 * line and lines (mesh_cli.h). */
#include <stdio.h>
#include <stdlib.h>

#include "../../sim/tilesim_mesh.h"
#include "mesh_cli.h"

enum { O_DEVICES = 256, O_ROWS, O_COLS, O_K, O_SEED, O_DIGEST, O_MESH, O_ONE_WAY };

static int mesh_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    ex_mesh_args *a = user;
    int64_t v = 0;
    int e = 0;
    switch (code) {
    case O_DEVICES: e = ex_parse_int(cl, arg, "--devices", 2, PL_MESH_MAX_DEVICES, &v), a->devices = (int)v; break;
    case O_ROWS: e = ex_parse_int(cl, arg, "--rows", 1, 1 << 24, &a->rows); break;
    case O_COLS: e = ex_parse_int(cl, arg, "--cols", 1, 1 << 20, &a->cols); break;
    case O_K: e = ex_parse_int(cl, arg, "--k", 1, 1 << 20, &a->k); break;
    case O_SEED: e = ex_parse_int(cl, arg, "--seed", 0, INT64_MAX, &a->seed); break;
    case O_DIGEST: a->digest = 1; break;
    case O_ONE_WAY:
        if (!a->with_one_way) return ex_usage_error(cl, "unknown option '--one-way'");
        a->one_way = 1;
        break;
    case O_MESH: {
        char msg[256];
        if (!a->with_mesh) return ex_usage_error(cl, "unknown option '--mesh'");
        if (pl_mesh_parse(arg, &a->mesh, msg, sizeof msg) != PL_OK) return ex_usage_error(cl, "--mesh: %s", msg);
        a->has_mesh = 1;
        break;
    }
    default: break;
    }
    return e;
}

int ex_mesh_parse(ex_cmdline *cl, int argc, char **argv, int with_k, ex_mesh_args *a)
{
    static const struct option with[] = {{"devices", required_argument, NULL, O_DEVICES},
                                         {"rows", required_argument, NULL, O_ROWS},
                                         {"k", required_argument, NULL, O_K},
                                         {"cols", required_argument, NULL, O_COLS},
                                         {"seed", required_argument, NULL, O_SEED},
                                         {"digest", no_argument, NULL, O_DIGEST},
                                         {0}};
    static const struct option without[] = {{"devices", required_argument, NULL, O_DEVICES},
                                            {"rows", required_argument, NULL, O_ROWS},
                                            {"cols", required_argument, NULL, O_COLS},
                                            {"seed", required_argument, NULL, O_SEED},
                                            {"digest", no_argument, NULL, O_DIGEST},
                                            {"mesh", required_argument, NULL, O_MESH},
                                            {"one-way", no_argument, NULL, O_ONE_WAY},
                                            {0}};
    int given = a->devices;
    a->devices = -1; /* to tell --devices given from the default */
    int e = ex_parse(cl, argc, argv, with_k ? with : without, mesh_option, a);
    if (e != EX_PARSE_OK) return e == EX_PARSE_HELP ? 0 : 2;
    if (cl->npos) return ex_usage_error(cl, "unexpected argument '%s'", cl->pos[0]), 2;
    if (a->has_mesh && a->devices >= 0 && a->devices != pl_mesh_devices(&a->mesh))
        return ex_usage_error(cl, "--devices %d and --mesh (%d devices) disagree; give one", a->devices,
                              pl_mesh_devices(&a->mesh)), 2;
    if (a->has_mesh) a->devices = pl_mesh_devices(&a->mesh);
    else if (a->devices < 0) a->devices = given;
    return -1;
}

const pl_chip *ex_chip_of(const pl_options *opt)
{
    if (opt->chip_spec) return opt->chip_spec;
    return opt->chip ? pl_chip_find(opt->chip) : pl_chip_default();
}

void ex_mesh_device_line(int dev, const pl_report *r)
{
    printf("  device %3d: %10.2f us, %lld copies started, %lld of them over ICI (%lld bytes)", dev, r->time_s * 1e6,
           (long long)r->dma_copies, (long long)r->ici_copies, (long long)r->ici_bytes);
}

uint64_t ex_digest(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
    return h;
}

void ex_mesh_digest(const pl_mesh_report *mr, const pl_report *reps, int n, const double *v, int per, int hi)
{
    printf("digest: every figure at full precision, to compare runs (one process, MPI ranks, seeds)\n");
    for (int d = 0; d < n; d++) {
        const pl_report *r = &reps[d];
        printf("  device %d: status %d time_s %.17g compute_s %.17g remote_wait_s %.17g dma_copies %lld "
               "ici_copies %lld ici_bytes %lld hbm_bytes %lld", d, r->status, r->time_s, r->compute_s,
               r->remote_wait_s, (long long)r->dma_copies, (long long)r->ici_copies, (long long)r->ici_bytes,
               (long long)r->hbm_bytes);
        if (v) {
            const double *w = v + (size_t)d * (size_t)per + hi;
            printf(" outputs %08llx%08llx", (unsigned long long)w[0], (unsigned long long)w[1]);
        }
        printf("\n");
    }
    printf("  mesh: status %d time_s %.17g compute_s %.17g hbm_s %.17g remote_wait_s %.17g remote_copies %lld "
           "ici_bytes %lld link_bytes %.17g links_used %d busiest_link_s %.17g ici_bw_achieved %.17g ici_bound %d "
           "slices %d dcn_copies %lld dcn_bytes %.17g dcn_busiest_s %.17g dcn_wait_s %.17g\n",
           mr->status, mr->time_s, mr->compute_s, mr->hbm_s, mr->remote_wait_s, (long long)mr->remote_copies,
           (long long)mr->ici_bytes, mr->link_bytes, mr->links_used, mr->busiest_link_s, mr->ici_bw_achieved,
           mr->ici_bound, mr->slices, (long long)mr->dcn_copies, mr->dcn_bytes, mr->dcn_busiest_s, mr->dcn_wait_s);
}

void ex_mesh_ranks_line(const pl_mesh_report *mr)
{
    if (mr->ranks > 1)
        printf("  ranks: the devices ran in %d processes, in blocks; %lld copies and signals went between them\n",
               mr->ranks, (long long)mr->rank_messages);
}

int ex_ring_mesh(const char *prog, int devices, pl_mesh *mesh)
{
    char text[32], msg[256];
    snprintf(text, sizeof text, "ring:%d", devices);
    int rc = pl_mesh_parse(text, mesh, msg, sizeof msg);
    if (rc != PL_OK) fprintf(stderr, "%s: %s\n", prog, msg);
    return rc;
}

int ex_mesh_check_memory(const ex_cmdline *cl, const pl_mesh *mesh, const char *what, double bytes)
{
    int n = pl_mesh_devices(mesh), first, count, bad = -1;
    pl_mesh_local_devices(mesh, &first, &count);
    double *ok = calloc((size_t)n, sizeof *ok);
    int mine = ex_check_host_memory(cl, what, bytes) == 0;
    for (int d = first; ok && d < first + count; d++) ok[d] = mine;
    if (!ok || pl_mesh_share(mesh, ok, 1) != PL_OK) {
        free(ok);
        fprintf(stderr, "%s: out of host memory\n", cl->prog);
        return 2;
    }
    for (int d = 0; d < n && bad < 0; d++) bad = ok[d] ? -1 : d;
    free(ok);
    if (bad >= 0 && mine) /* only rank 0 prints: say which rank stopped the others */
        fprintf(stderr, "%s: the process that runs device %d has too little host memory for %s\n", cl->prog, bad,
                what);
    return bad >= 0 || !mine ? 2 : 0;
}
