/* cli/explain_kernel.c: `tilesim explain KERNEL [--set ...]`: any kernel's
 * pipeline narrated step by step (explain.c prints the narration; this
 * builds the kernel's call, runs it cost-only, a mesh kernel on every
 * device with device 0's steps told, and adds each step's block ops). */
#include <stdlib.h>
#include <string.h>

#include "../kernel/pltpu.h"
#include "../sim/tools/html.h"
#include "../sim/kdef/kdef_internal.h"
#include "cli.h"

static void print_generic_grid(const pl_call *call, int64_t steps, FILE *f)
{
    char g[64];
    fprintf(f, "grid %s = %lld steps, visited one after another, the last axis fastest (rule G1):\n",
            cli_tuple(call->grid, call->grid_rank, g, sizeof g), (long long)steps);
    for (int a = 0; a < call->grid_rank; a++)
        fprintf(f, "  %c = program_id(%d) in 0..%lld: %s\n", cli_axis_letter[a], a, (long long)call->grid[a] - 1,
                call->semantics[a] == PL_PARALLEL ? "parallel (rule G3)"
                                                  : "arbitrary: visited in order; an output block kept over it "
                                                    "accumulates (rule P3)");
}

/* Build the call for the values; scalar-prefetch tables get data (index maps
 * read them), every other array stays without (cost only). */
static int explain_build(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_kernel_build *b,
                         void **owned, char *msg, size_t n)
{
    int rc = sim_kdef_prepare(d, v, opt, b, msg, n);
    if (rc == PL_OK) rc = sim_kdef_tables(d, v, b, 0, owned);
    if (rc != PL_OK && !msg[0]) snprintf(msg, n, "%s", pl_strerror(rc));
    return rc;
}

static int64_t grid_steps(const pl_call *call)
{
    int64_t steps = 1;
    for (int d = 0; d < call->grid_rank; d++)
        steps = call->grid[d] <= 0 ? 0 : steps > (1LL << 40) / call->grid[d] ? (1LL << 40) : steps * call->grid[d];
    return steps;
}

/* The kernel explain narrates (one call at a time) and its block ops after
 * each step: what any kernel, a plugin's too, did there. */
static pl_kernel_fn narrated;
static void narrating_kernel(pl_ctx *c, pl_ref *refs)
{
    narrated(c, refs);
    if (pltpu_device_id(c) != 0) return; /* a mesh kernel: device 0's steps are told */
    char ops[1024];
    sim_step_ops_words(c, ops, sizeof ops);
    fprintf(stdout, "  kernel: %s\n", ops);
}

/* A mesh kernel's call on every device of its mesh (the devices' arrays are
 * build's, cost-only), device 0's steps narrated (pl_mesh_call hands the
 * recorder device 0's); rep gets device 0's report. */
static int run_mesh_call(const pl_kernel_def *d, const int64_t *v, const pl_call *call, pl_kernel_build *b,
                         pl_options *opt, pl_report *rep)
{
    pl_mesh mesh;
    int rc = pl_kernel_def_mesh(d, v, &mesh, rep->error, sizeof rep->error);
    if (rc != PL_OK) return rc;
    int n = pl_mesh_devices(&mesh), na = b->n_args, no = b->n_outs;
    pl_array *args = calloc((size_t)n * (size_t)(na ? na : 1), sizeof *args);
    pl_array *outs = calloc((size_t)n * (size_t)(no ? no : 1), sizeof *outs);
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    pl_mesh_report mr;
    rc = args && outs && reps ? PL_OK : PL_ENOMEM;
    for (int dev = 0; dev < n && rc == PL_OK; dev++) {
        memcpy(args + (size_t)dev * (size_t)na, b->args, (size_t)na * sizeof *args);
        memcpy(outs + (size_t)dev * (size_t)no, b->outs, (size_t)no * sizeof *outs);
    }
    if (rc == PL_OK) {
        char shape[64];
        fprintf(stdout, "mesh kernel on a %s: every device runs this call; device 0's steps:\n\n",
                pl_mesh_format(&mesh, shape, sizeof shape));
        rc = pl_mesh_call(&mesh, call, args, outs, opt, &mr, reps);
        *rep = reps[0];
        if (rc != PL_OK) snprintf(rep->error, sizeof rep->error, "%s", mr.error);
    } else snprintf(rep->error, sizeof rep->error, "out of host memory");
    free(args), free(outs), free(reps);
    return rc;
}

static int narrate(const cli_cmd *cmd, const pl_kernel_def *d, const int64_t *nr_values, const char *label,
                   pl_kernel_build *b, pl_options *opt)
{
    pl_report *rep = calloc(1, sizeof *rep);
    if (!rep) return fprintf(stderr, "tilesim explain: out of host memory\n"), 1;
    int64_t steps = grid_steps(&b->call), rc = 0;
    if (pl_validate(&b->call, b->args, b->outs, opt, rep) != PL_OK) {
        rc = cli_fail(cmd, "%s %s is not legal: %s", d->name, label, rep->error);
        cli_vmem_hint(rep, stderr);
    }
    else if (steps > CLI_MAX_EXPLAIN_STEPS) {
        char g[64];
        rc = cli_fail(cmd, "grid %s has %lld steps; explain narrates at most %d: use --set for larger blocks or "
                           "smaller sizes", cli_tuple(b->call.grid, b->call.grid_rank, g, sizeof g), (long long)steps,
                      CLI_MAX_EXPLAIN_STEPS);
    }
    if (rc) return free(rep), (int)rc;
    fprintf(stdout, "explain: %s %s on %s\n  %s\n\n", d->name, label, opt->chip_spec->name, d->summary ? d->summary : "");
    print_generic_grid(&b->call, steps, stdout);
    cli_explain_specs(&b->call, rep, 1, stdout);
    int many = 0;
    for (int a = 0; a < b->call.grid_rank; a++) many |= b->call.semantics[a] == PL_PARALLEL && b->call.grid[a] > 1;
    cli_narrator nr = {stdout, 1, opt->chip_spec->cores_per_device > 1 && many, 1, rep, {0}};
    for (int i = 0, n = 0; i < b->n_args + b->n_outs && n < PL_MAX_CALL_OPERANDS; i++)
        nr.arrays[n++] = i < b->n_args ? &b->args[i] : &b->outs[i - b->n_args];
    opt->on_step = cli_explain_step;
    opt->on_step_user = &nr;
    pl_call call = b->call;
    narrated = call.kernel;
    call.kernel = narrating_kernel;
    if ((d->mesh ? run_mesh_call(d, nr_values, &call, b, opt, rep) : pl_pallas_call(&call, b->args, b->outs, opt, rep)) !=
        PL_OK) {
        fflush(stdout);
        fprintf(stderr, "tilesim explain: the simulation failed: %s\n", rep->error);
        free(rep);
        return 2;
    }
    cli_explain_summary(rep, 1, stdout);
    free(rep);
    return 0;
}

int cli_kexplain(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_explain_cmd;
    cli_kopts o;
    const pl_kernel_def *d;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_chip file_chip;
    pl_options opt;
    int rc = cli_kernel_setup(cmd, K_SET | K_CHIP | K_CHIP_FILE | K_HTML | K_VMEM_LIMIT, argc, argv, &o, &d, v,
                              &file_chip, &opt);
    if (rc >= 0) return rc;
    opt.cost_only = 1;
    char label[512], msg[PL_MSG_MAX] = "";
    pl_kernel_format(d, v, label, sizeof label);
    pl_kernel_build *b = calloc(1, sizeof *b);
    if (!b) return fprintf(stderr, "tilesim explain: out of host memory\n"), 1;
    void *owned[PL_KDEF_MAX_ARGS] = {0}; /* a definition may give its own tables */
    if ((rc = explain_build(d, v, &opt, b, owned, msg, sizeof msg)) != PL_OK) rc = cli_fail(cmd, "%s %s: %s", d->name, label, msg);
    else rc = narrate(cmd, d, v, label, b, &opt);
    if (rc == 0 && o.html) rc = cli_html(cmd, d, v, &opt, o.html, NULL, 0); /* the teaching page (cli/html.c) */
    for (int a = 0; a < PL_KDEF_MAX_ARGS; a++) free(owned[a]);
    free(b);
    return cli_finish_stdout(cmd, rc);
}
