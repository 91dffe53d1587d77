/* examples/kernels/mesh_cli.c: the mesh example programs' shared command
 * line and lines (mesh_cli.h). */
#include <stdio.h>

#include "../../sim/tilesim_mesh.h"
#include "mesh_cli.h"

enum { O_DEVICES = 256, O_ROWS, O_COLS, O_K, O_SEED };

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
                                         {0}};
    static const struct option without[] = {{"devices", required_argument, NULL, O_DEVICES},
                                            {"rows", required_argument, NULL, O_ROWS},
                                            {"cols", required_argument, NULL, O_COLS},
                                            {"seed", required_argument, NULL, O_SEED},
                                            {0}};
    int e = ex_parse(cl, argc, argv, with_k ? with : without, mesh_option, a);
    if (e != EX_PARSE_OK) return e == EX_PARSE_HELP ? 0 : 2;
    if (cl->npos) return ex_usage_error(cl, "unexpected argument '%s'", cl->pos[0]);
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
