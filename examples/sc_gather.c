/* examples/sc_gather.c: an embedding lookup on SparseCores (rule K5):
 * out[i] = scale * table[ids[i]], the lookups split over every vector
 * subcore of the device (plsc.VectorSubcoreMesh), each gathering its rows
 * from HBM into its own VMEM with one DMA per row, all in flight at once.
 * The same body then runs as a TensorCore pl_kernel, for comparison.
 *
 *   sc_gather [--chip NAME] [--trace FILE.json] [--cost-only] [--json]
 *
 * prints, for v5p, v6e and v7x (or the chip --chip names), both times.
 * --trace writes the Chrome trace of the SparseCore call (of the last chip
 * when there are several); --cost-only times the calls without checking the
 * results; --json prints the reports as one JSON object instead of lines.
 *
 * Exit status: 0 when every result matches the host loop, 1 when one does
 * not, 2 for a bad command line or a call tilesim rejects (a chip without
 * SparseCores). */
#include <stdio.h>
#include <stdlib.h>

#include "../sim/tilesim_kernel.h"
#include "kernels/options.h"

#define USAGE "usage: sc_gather [--chip NAME] [--trace FILE.json] [--cost-only] [--json]\n"

enum { DIM = 128, TABLE_ROWS = 10000, LOOKUPS = 2048 };

typedef struct gather {
    int64_t share; /* lookups per worker */
    double scale;
} gather;

/* refs: table (TABLE_ROWS, DIM), ids (LOOKUPS,) and out (LOOKUPS, DIM) in
 * HBM; scratch rows (share, DIM) in VMEM, my_ids (share,) in SMEM, one DMA
 * semaphore. Worker w (a subcore, or a TensorCore) does lookups
 * [w * share, (w + 1) * share). */
static void gather_rows(pl_ctx *c, pl_ref *refs)
{
    const gather *g = pl_kernel_user(c);
    pl_ref table = refs[0], ids = refs[1], out = refs[2], rows = refs[3], my_ids = refs[4];
    pl_ref sem = pl_at(c, refs[5], 0);
    int64_t w = (int64_t)pl_core_index(c) * pl_subcore_count(c) + pl_subcore_index(c);
    pltpu_sync_copy(c, pl_ds(c, ids, 0, w * g->share, g->share), my_ids); /* my indices, into SMEM */
    for (int pass = 0; pass < 2; pass++) /* start every row's copy, then wait for each (same handles) */
        for (int64_t r = 0; r < g->share; r++) {
            int64_t id = (int64_t)pl_get_at(c, my_ids, r);
            pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, table, 0, id, 1), pl_ds(c, rows, 0, r, 1), sem);
            if (pass == 0) pltpu_copy_start(c, &cp);
            else pltpu_copy_wait(c, &cp);
        }
    pl_mul_scalar(c, rows, rows, g->scale); /* on the VPU: 8 or 16 lanes on a subcore */
    pltpu_sync_copy(c, rows, pl_ds(c, out, 0, w * g->share, g->share));
}

/* Run the lookup on chip over `mesh` with the command line's options
 * (trace: write this call's trace) and print its line, or its JSON element
 * (the first without a comma before it); 0 when out matches the host loop
 * (or --cost-only), 1 when it does not, 2 when tilesim rejects the call. */
static int run(const ex_cmdline *cl, const char *chip, pl_kernel_mesh mesh, int trace, int first, pl_array *ins,
               float *o, double *seconds)
{
    const pl_chip *p = pl_chip_find(chip);
    int workers = mesh == PL_MESH_VECTOR_SUBCORES ? p->sc_cores * p->sc_subcores : p->cores_per_device;
    if (workers < 1) workers = 1; /* no SparseCores: pl_kernel refuses the call and says so */
    gather g = {.share = LOOKUPS / workers, .scale = 0.5};
    pl_kernel_spec k = {.name = "sc_gather", .body = gather_rows, .user = &g, .n_in = 2, .n_out = 1,
                        .in_names = {"table", "ids"}, .out_names = {"out"}, .n_scratch = 3, .mesh = mesh,
                        .scratch = {PLTPU_VMEM(PL_F32, g.share, DIM), PLTPU_SMEM(PL_I32, g.share),
                                    PLTPU_SEMAPHORE_DMA(1)}};
    pl_array out = PL_ARRAY(o, PL_F32, LOOKUPS, DIM);
    pl_options opt = cl->opt;
    opt.chip = chip;
    if (!trace) opt.trace_path = NULL;
    pl_report rep;
    if (pl_kernel(&k, ins, &out, &opt, &rep) != PL_OK) {
        fprintf(stderr, "sc_gather: %s\n", rep.error);
        return 2;
    }
    const float *table = ins[0].data;
    const int32_t *ids = ins[1].data;
    for (int64_t i = 0; i < (int64_t)LOOKUPS * DIM && !opt.cost_only; i++)
        if (o[i] != (float)(g.scale * table[ids[i / DIM] * DIM + i % DIM])) {
            fprintf(stderr, "sc_gather: %s: out[%lld][%lld] = %g is wrong\n", rep.chip->name,
                    (long long)(i / DIM), (long long)(i % DIM), o[i]);
            return 1;
        }
    if (cl->json) {
        printf("%s{\"mesh\":\"%s\",\"workers\":%d,\"report\":", first ? "" : ",",
               mesh == PL_MESH_VECTOR_SUBCORES ? "vector_subcores" : "tensorcores", workers);
        pl_report_json(&rep, stdout);
        printf("}");
    } else {
        printf("  %-30s %2d worker%s %8.2f us\n", rep.chip->name, workers, workers > 1 ? "s" : " ", rep.time_s * 1e6);
    }
    *seconds = rep.time_s;
    return 0;
}

int main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "sc_gather", .usage = USAGE, .accept = EX_CHIP | EX_TRACE | EX_COST_ONLY | EX_JSON};
    int rc = ex_parse(&cl, argc, argv, NULL, NULL, NULL);
    if (rc != EX_PARSE_OK) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos) return ex_usage_error(&cl, "unexpected argument '%s'", cl.pos[0]);
    float *table = malloc(sizeof(float) * TABLE_ROWS * DIM), *o = malloc(sizeof(float) * LOOKUPS * DIM);
    int32_t *ids = malloc(sizeof(int32_t) * LOOKUPS);
    if (!table || !o || !ids) {
        fprintf(stderr, "sc_gather: out of host memory\n");
        free(table), free(o), free(ids);
        return 2;
    }
    for (int64_t i = 0; i < (int64_t)TABLE_ROWS * DIM; i++) table[i] = (float)(i % 1009) / 8.0f;
    for (int i = 0; i < LOOKUPS; i++) ids[i] = (int32_t)(((int64_t)i * 7919 + 13) % TABLE_ROWS);
    pl_array ins[2] = {PL_ARRAY(table, PL_F32, TABLE_ROWS, DIM), PL_ARRAY(ids, PL_I32, LOOKUPS)};
    const char *chips[] = {"v5p", "v6e", "v7x"};
    int n = 3;
    if (cl.opt.chip) chips[0] = cl.opt.chip, n = 1;
    if (cl.json) printf("{\"lookups\":%d,\"dim\":%d,\"table_rows\":%d,\"runs\":[", LOOKUPS, DIM, TABLE_ROWS);
    else printf("gather of %d rows of %d f32 from a %d-row table, scaled by 0.5:\n", LOOKUPS, DIM, TABLE_ROWS);
    for (int i = 0; i < n && !rc; i++) {
        double sc = 0, tc = 0;
        rc = run(&cl, chips[i], PL_MESH_VECTOR_SUBCORES, i == n - 1, i == 0, ins, o, &sc);
        if (!rc) rc = run(&cl, chips[i], PL_MESH_TENSORCORES, 0, 0, ins, o, &tc);
        if (!rc && !cl.json) printf("  -> the SparseCores take %.2fx the TensorCore time\n", sc / tc);
    }
    if (cl.json) printf("]}\n");
    free(table), free(o), free(ids);
    return rc;
}
