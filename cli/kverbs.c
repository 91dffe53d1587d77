/* cli/kverbs.c: `tilesim run` and `tilesim verify` over any kernel
 * definition: one configuration, run, every output compared with the
 * kernel's reference (V5). `tilesim run NAME` of a mesh program
 * (examples/kernels/mesh_progs.h: ring_allreduce, ...) runs that program.
 *
 * Exit status: 0 PASS (or MARGINAL, whose last line says so; --strict: 1),
 * 1 an output FAILs or the host ran out
 * of memory, 2 the configuration is rejected (the call's message names the
 * rule) or the command line is wrong. */
#include <stdlib.h>
#include <string.h>

#include "../sim/base/json.h"
#include "../kernel/guard.h"
#include "../sim/kdef/kdef_internal.h"
#include "../sim/tools/html.h"
#include "../examples/kernels/mesh_cli.h"
#include "../examples/kernels/mesh_progs.h"
#include "../examples/kernels/registry.h"
#include "cli.h"


/* The verb's kernel, values and options from its command line. -1: go on. */
/* PL_ENOMEM is a rejected call (2), as the mesh programs exit: pl_kernel_run
 * refuses a configuration this host lacks the memory for before it runs
 * anything. 1 stays for a wrong result and the command's own allocations. */
static int exit_for(int status) { return status == PL_OK ? 0 : status == PL_EVERIFY || status == PL_ERACE ? 1 : 2; }

/* The last line of a checked run (V5): MARGINAL when an output is past its
 * tolerance but within the margin a FAIL needs, naming the worst; NULL: none. */
static const char *marginal_line(const pl_check *check, int n, const char *const *names, char *buf, size_t len)
{
    int worst = -1;
    for (int o = 0; o < n; o++)
        if (check[o].verdict == PL_MARGINAL && (worst < 0 || check[o].norm_err > check[worst].norm_err)) worst = o;
    if (worst < 0) return NULL;
    snprintf(buf, len, "MARGINAL: output '%s' is %.3g of its tolerance, past it but short of a FAIL: check the "
             "tolerance against the dtype and the accumulation order (rule V5; --strict makes this exit 1)",
             names[worst] ? names[worst] : "out", check[worst].norm_err);
    return buf;
}

static void rejected(const cli_cmd *cmd, const pl_kernel_def *d, const char *label, const pl_report *rep)
{
    fflush(stdout);
    fprintf(stderr, "tilesim %s: %s %s: %s\n", cmd->name, d->name, label, rep->error);
    /* what the checks found before the run stopped: often the first sign of the same bug */
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++)
        if (!strstr(rep->error, rep->findings[i].msg))
            fprintf(stderr, "  before that, %s: %s\n", rep->findings[i].rule, rep->findings[i].msg);
    if (rep->status == PL_EVMEM && rep->chip) { /* the listing XLA prints on hardware */
        fprintf(stderr, "\n");
        pl_vmem_report(rep, stderr);
        cli_vmem_hint(rep, stderr);
    }
}

/* ---- run ------------------------------------------------------------------------- */

/* A mesh kernel's run: its mesh, every device's report and the mesh's. */
typedef struct mesh_out {
    pl_mesh mesh;
    pl_mesh_report mr;
    pl_report *reps;
} mesh_out;

/* A mesh kernel's part of run --json: the mesh's time, bound and busy
 * fractions, its copies, and each device's time. */
static void mesh_json(const mesh_out *mo, FILE *f)
{
    const pl_mesh_report *mr = &mo->mr;
    char shape[64];
    fprintf(f, ",\"mesh\":{\"shape\":");
    pl_json_string(f, pl_mesh_format(&mo->mesh, shape, sizeof shape));
    fprintf(f, ",\"devices\":%d,\"time_s\":%.9g,\"remote_copies\":%lld,\"ici_bytes\":%lld,\"bound\":",
            mr->n_devices, mr->time_s, (long long)mr->remote_copies, (long long)mr->ici_bytes);
    pl_json_string(f, mr->bound > 0 ? pl_bound_name((pl_bound)mr->bound) : "none");
    fprintf(f, ",\"bound_msg\":");
    pl_json_string(f, mr->bound_msg);
    fprintf(f, ",\"busy\":{");
    for (int b = 1, first = 1; b < PL_MESH_BUSY && b < PL_BOUND_COUNT; b++)
        if (mr->busy[b] > 0)
            fprintf(f, "%s\"%s\":%.6g", first ? "" : ",", pl_bound_name((pl_bound)b), mr->busy[b]), first = 0;
    fprintf(f, "},\"slices\":%d", mr->slices > 0 ? mr->slices : 1);
    if (mr->dcn_copies) { /* the Megascale view: traffic between slices (M14) */
        fprintf(f, ",\"dcn\":{\"copies\":%lld,\"bytes\":%.0f,\"busiest_nic_s\":%.9g,\"busy\":%.6g,\"wait_s\":%.9g,"
                "\"pairs\":[", (long long)mr->dcn_copies, mr->dcn_bytes, mr->dcn_busiest_s, mr->busy[PL_BOUND_DCN], mr->dcn_wait_s);
        for (int i = 0, first = 1; i < PL_MESH_MAX_SLICES; i++)
            for (int j = 0; j < PL_MESH_MAX_SLICES; j++)
                if (mr->dcn_pair_bytes[i][j] > 0)
                    fprintf(f, "%s{\"from\":%d,\"to\":%d,\"bytes\":%.0f}", first ? "" : ",", i, j,
                            mr->dcn_pair_bytes[i][j]), first = 0;
        fprintf(f, "]}");
    }
    fprintf(f, ",\"device_time_s\":[");
    for (int dev = 0; dev < mr->n_devices && mo->reps; dev++) fprintf(f, "%s%.9g", dev ? "," : "", mo->reps[dev].time_s);
    fprintf(f, "]}");
}

static void run_json(const pl_kernel_def *d, const char *label, const pl_report *rep, const pl_check *check,
                     int checked, int marginal, const mesh_out *mo)
{
    fprintf(stdout, "{\"kernel\":");
    pl_json_string(stdout, d->name);
    fprintf(stdout, ",\"config\":");
    pl_json_string(stdout, label);
    fprintf(stdout, ",\"status\":%d,\"verdict\":", rep->status);
    pl_json_string(stdout, !checked ? "not checked" : rep->status == PL_EVERIFY ? "FAIL" : marginal ? "MARGINAL"
                                                                                                   : "PASS");
    fprintf(stdout, ",\"outputs\":[");
    for (int i = 0, o = 0; i < rep->n_operands && checked; i++) {
        if (rep->op[i].role != PL_ROLE_OUT) continue;
        const pl_check *k = &check[o];
        fprintf(stdout, "%s{\"name\":", o ? "," : "");
        pl_json_string(stdout, rep->op[i].name);
        /* NaN or inf (a kernel that wrote NaN) is null: JSON has no such numbers */
        fprintf(stdout, ",\"verdict\":\"%s\",\"max_abs_err\":", pl_verdict_name(k->verdict));
        cli_json_number(stdout, k->max_abs_err);
        fprintf(stdout, ",\"norm_err\":");
        cli_json_number(stdout, k->norm_err < 1e300 ? k->norm_err : 1e300);
        fprintf(stdout, ",\"blame\":");
        pl_json_string(stdout, k->blame);
        fputc('}', stdout);
        o++;
    }
    fprintf(stdout, "],\"report\":");
    pl_report_json_with(rep, checked ? &check[0] : NULL, stdout);
    if (mo && mo->reps) mesh_json(mo, stdout);
    fprintf(stdout, "}\n");
}

/* What the checks found on the devices of a mesh (their reports'
 * findings: M7, M15, V3, ...), which the mesh's report does not list: at
 * most 8 lines, then how many more. */
static void mesh_findings(const mesh_out *mo, FILE *f)
{
    int n = pl_mesh_devices(&mo->mesh), shown = 0, more = 0;
    for (int d = 0; mo->reps && d < n; d++)
        for (int i = 0; i < mo->reps[d].n_findings; i++) {
            if (shown == 8 || i >= PL_MAX_FINDINGS) {
                more++;
                continue;
            }
            if (!shown++) fprintf(f, "the checks found:\n");
            fprintf(f, "  device %d, %s: %s\n", d, mo->reps[d].findings[i].rule, mo->reps[d].findings[i].msg);
        }
    if (more) fprintf(f, "  and %d more\n", more);
}

/* `run ring_allreduce --devices 8` is the program; with an option only
 * the definitions take (--set, --html, --json, --strict, --vmem-report) it
 * is the mesh kernel definition of the same name (examples/kernels/mesh_defs.c). */
static int definition_options(int argc, char **argv)
{
    static const char *const opts[] = {"--set", "--html", "--json", "--strict", "--vmem-report"};
    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
            if (!strncmp(argv[i], opts[k], strlen(opts[k]))) return ex_mesh_kernel_find(argv[0]) != NULL;
    return 0;
}


/* `run ring_allreduce --devices 16 --json`: the definition has no
 * --devices, its parameter is --set devices=16. Say so, rather than that
 * --devices is unknown to a command whose help the user just read. 1 when
 * it failed (and said why). */
static int rc_program_option(const cli_cmd *cmd, int argc, char **argv)
{
    const pl_kernel_def *d = ex_mesh_kernel_find(argv[0]);
    for (int i = 1; d && i < argc; i++) {
        if (strncmp(argv[i], "--", 2) || (i > 1 && !strcmp(argv[i - 1], "--set"))) continue;
        size_t len = strcspn(argv[i] + 2, "=");
        for (int p = 0; p < d->n_params; p++)
            if (strlen(d->params[p].name) == len && !strncmp(argv[i] + 2, d->params[p].name, len)) {
                cli_fail(cmd, "--%s is an option of the %s program; with --set, --json, --html, --strict or "
                         "--vmem-report, %s is its mesh kernel definition, whose parameters go in --set: give "
                         "--set %s=VALUE (or drop those options to run the program)",
                         d->params[p].name, d->name, d->name, d->params[p].name);
                return 1;
            }
    }
    return 0;
}

static int run_mesh(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_report *rep, pl_check *check,
                    FILE *vf, mesh_out *mo)
{
    char msg[PL_MSG_MAX];
    int rc = pl_kernel_def_mesh(d, v, &mo->mesh, msg, sizeof msg);
    if (rc != PL_OK) {
        rep->status = rc;
        snprintf(rep->error, sizeof rep->error, "%s", msg);
        return rc;
    }
    mo->reps = calloc((size_t)pl_mesh_devices(&mo->mesh), sizeof *mo->reps);
    if (!mo->reps) {
        rep->status = PL_ENOMEM;
        snprintf(rep->error, sizeof rep->error, "out of host memory for the devices' reports");
        return PL_ENOMEM;
    }
    return pl_kernel_run_mesh(d, v, &mo->mesh, opt, rep, check, vf, &mo->mr, mo->reps);
}

int cli_run(int argc, char **argv)
{
    const ex_mesh_prog *prog = argc > 0 ? ex_mesh_prog_find(argv[0]) : NULL;
    if (prog && !definition_options(argc, argv))
        return prog->main(argc, argv); /* a mesh program: its own options (NAME --help) */
    const cli_cmd *cmd = &cli_run_cmd;
    if (prog && (rc_program_option(cmd, argc, argv))) return 2;
    cli_kopts o;
    const pl_kernel_def *d;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_chip file_chip;
    pl_options opt;
    int rc = cli_kernel_setup(cmd, K_RUN_OPTS, argc, argv, &o, &d, v, &file_chip, &opt);
    if (rc >= 0) return rc;
    char why[PL_MSG_MAX]; /* a page refused for its timeline's size is said before the run, not after it */
    if (o.html && !d->mesh && sim_page_check(d, v, &opt, why, sizeof why)) return cli_fail(cmd, "--html: %s", why);
    char label[512];
    pl_kernel_format(d, v, label, sizeof label);
    pl_report *rep = calloc(1, sizeof *rep);
    pl_check check[PL_MAX_OPERANDS];
    char *verdicts = NULL;
    size_t vlen = 0;
    FILE *vf = open_memstream(&verdicts, &vlen); /* the verdicts go after the report */
    if (!rep || !vf) {
        if (vf) fclose(vf);
        free(rep);
        free(verdicts);
        fprintf(stderr, "tilesim run: out of host memory\n");
        return 1;
    }
    memset(check, 0, sizeof check);
    mesh_out mo = {0};
    int st = d->mesh ? run_mesh(d, v, &opt, rep, check, vf, &mo) : pl_kernel_run(d, v, &opt, rep, check, vf);
    fclose(vf);
    int checked = !opt.cost_only && (d->mesh ? d->mesh_reference != NULL : d->reference != NULL) &&
                  (st == PL_OK || st == PL_EVERIFY);
    if (!d->mesh && (st == PL_OK || st == PL_EVERIFY)) pl_kernel_advise(d, v, &opt, rep); /* only simulated gains (issue 22) */
    const char *names[PL_MAX_OPERANDS];
    int n_outs = 0;
    for (int i = 0; i < rep->n_operands && n_outs < PL_MAX_OPERANDS; i++)
        if (rep->op[i].role == PL_ROLE_OUT) names[n_outs++] = rep->op[i].name;
    char mline[PL_MSG_MAX];
    const char *marginal = checked && st == PL_OK ? marginal_line(check, n_outs, names, mline, sizeof mline) : NULL;
    if (st != PL_OK && st != PL_EVERIFY) {
        if (o.json) run_json(d, label, rep, check, 0, 0, NULL);
        rejected(cmd, d, label, rep);
    } else if (o.json) run_json(d, label, rep, check, checked, marginal != NULL, d->mesh ? &mo : NULL);
    else {
        char mesh_name[96] = "", shape[64];
        if (d->mesh) snprintf(mesh_name, sizeof mesh_name, ", %s", pl_mesh_format(&mo.mesh, shape, sizeof shape));
        fprintf(stdout, "run: %s %s on %s%s%s\n\n", d->name, label, opt.chip_spec->name, mesh_name,
                opt.cost_only ? " (cost only: no data, outputs not checked)" : "");
        if (d->mesh) pl_mesh_report_print(&mo.mr, mo.reps, stdout), ex_mesh_ranks_line(&mo.mr), mesh_findings(&mo, stdout);
        else pl_report_print(rep, stdout);
        if (o.vmem_report) fprintf(stdout, "\n"), pl_vmem_report(rep, stdout);
        if (vlen) fprintf(stdout, "\nreference check (V5):\n%s", verdicts);
        if (opt.check_dma_modes && !opt.cost_only)
            fprintf(stdout, "\ncopies (M7): the outputs are the same whether copies move at start or when waited\n");
        if (st == PL_EVERIFY) fprintf(stdout, "\nFAIL: %s\n", rep->error);
        else if (marginal) fprintf(stdout, "\n%s\n", marginal);
        else if (checked) fprintf(stdout, "\nPASS\n");
    }
    free(verdicts);
    free(rep);
    free(mo.reps);
    rc = marginal && o.strict ? 1 : exit_for(st);
    if (o.html && rc != CLI_EXIT_USAGE) { /* the teaching page (cli/html.c) */
        int h = d->mesh ? cli_mesh_page(cmd, d, v, &opt, o.html, o.json) : cli_html(cmd, d, v, &opt, o.html, NULL, o.json);
        rc = h ? h : rc;
    }
    return cli_finish_stdout(cmd, rc);
}

/* ---- verify ------------------------------------------------------------------------ */

typedef struct vstate {
    pl_kernel_build b;
    unsigned char owned[PL_KDEF_MAX_ARGS]; /* a definition may give an array's data itself */
    pl_array want[PL_MAX_OPERANDS];
    pl_report rep;
} vstate;

static void vfree(vstate *s)
{
    for (int a = 0; a < s->b.n_args; a++)
        if (s->owned[a]) free(s->b.args[a].data);
    for (int o = 0; o < s->b.n_outs; o++) free(s->b.outs[o].data), free(s->want[o].data);
}

/* Allocate, fill, run, compute the reference: PL_OK or a code with rep.error. */
static int vrun(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, vstate *s)
{
    char msg[PL_MSG_MAX];
    int rc = sim_kdef_prepare(d, v, opt, &s->b, msg, sizeof msg);
    if (rc == PL_OK) { /* arguments, outputs and the reference's copy of them: refuse what the host lacks */
        double bytes = 0;
        for (int a = 0; a < s->b.n_args; a++) bytes += s->b.args[a].data ? 0 : (double)pl_array_bytes(&s->b.args[a]);
        for (int o = 0; o < s->b.n_outs; o++) bytes += 2 * (double)pl_array_bytes(&s->b.outs[o]);
        rc = pl_host_memory_check(bytes, msg, sizeof msg);
    }
    if (rc == PL_OK) {
        for (int a = 0; a < s->b.n_args && rc == PL_OK; a++) {
            if (s->b.args[a].data) continue;
            s->owned[a] = 1;
            if (!(s->b.args[a].data = calloc(1, pl_array_bytes(&s->b.args[a]) + 1))) rc = PL_ENOMEM;
        }
        for (int o = 0; o < s->b.n_outs && rc == PL_OK; o++) {
            s->want[o] = s->b.outs[o];
            s->b.outs[o].data = calloc(1, pl_array_bytes(&s->b.outs[o]) + 1);
            s->want[o].data = calloc(1, pl_array_bytes(&s->b.outs[o]) + 1);
            if (!s->b.outs[o].data || !s->want[o].data) rc = PL_ENOMEM;
        }
        if (rc) snprintf(msg, sizeof msg, "out of host memory for the kernel's arrays");
    }
    if (rc == PL_OK) {
        /* the default fill leaves alone the arrays build gave data to (its own tables) */
        rc = sim_kdef_inputs(d, v, &s->b, opt->seed, s->owned);
        if (rc) snprintf(msg, sizeof msg, "kernel '%s': its inputs function failed: %s", d->name, pl_strerror(rc));
    }
    if (rc != PL_OK) {
        snprintf(s->rep.error, sizeof s->rep.error, "%s", msg);
        return s->rep.status = rc < 0 ? rc : PL_EINVAL;
    }
    rc = opt->check_dma_modes ? pl_check_dma_modes(&s->b.call, s->b.args, s->b.outs, opt, &s->rep)
                              : pl_pallas_call(&s->b.call, s->b.args, s->b.outs, opt, &s->rep);
    if (rc != PL_OK) return rc;
    if ((rc = sim_kdef_call_reference(d, v, &s->b, s->want)) != PL_OK) {
        snprintf(s->rep.error, sizeof s->rep.error, "kernel '%s': its reference failed: %s", d->name, pl_strerror(rc));
        return s->rep.status = rc < 0 ? rc : PL_EINVAL;
    }
    return PL_OK;
}

/* Rows and columns of the output's block, the output flattened to 2-D. */
static void block_2d(const pl_block_spec *spec, const pl_array *a, int64_t *bm, int64_t *bn)
{
    int r = spec->rank;
    *bn = r ? spec->block[r - 1] : a->shape[a->rank - 1];
    *bm = r >= 2 ? spec->block[r - 2] : r ? 1 : (a->rank >= 2 ? a->shape[a->rank - 2] : 1);
    if (*bn < 1) *bn = 1;
    if (*bm < 1) *bm = 1;
}

static int choose_output(const cli_cmd *cmd, const cli_kopts *o, const vstate *s, int *out)
{
    *out = 0;
    if (!o->output) return 0;
    for (int i = 0; i < s->b.n_outs; i++)
        if ((s->b.call.out[i].name && strcmp(s->b.call.out[i].name, o->output) == 0) ||
            (o->output[0] - '0' == i && !o->output[1]))
            return *out = i, 0;
    return cli_fail(cmd, "--output: '%s' is neither the name nor the index of one of the %d outputs", o->output,
                    s->b.n_outs);
}

/* What the run's checks found (V1, V3, V4, M7, P4, ...): a verdict may PASS
 * on these inputs while the kernel races or reads a copy before its wait,
 * which another seed or the chip would show. */
static void print_findings(const pl_report *rep, FILE *f)
{
    if (!rep->n_findings) return;
    fprintf(f, "  the checks found (they may not show in these outputs; --strict makes them errors):\n");
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++)
        fprintf(f, "    %s: %s\n", rep->findings[i].rule, rep->findings[i].msg);
    if (rep->n_findings > PL_MAX_FINDINGS)
        fprintf(f, "    and %d more\n", rep->n_findings - PL_MAX_FINDINGS);
}

static int verify_outputs(const pl_kernel_def *d, const vstate *s, FILE *f, pl_check *checks)
{
    int worst = PL_OK;
    for (int o = 0; o < s->b.n_outs; o++) {
        pl_check k;
        double rtol, atol;
        int rc = sim_kdef_check_output(d, &s->b.outs[o], &s->want[o], &k, &rtol, &atol);
        if (rc == PL_ESHAPE) return PL_ESHAPE;
        int64_t last = s->b.outs[o].shape[s->b.outs[o].rank - 1], flat = k.worst_row * last + k.worst_col;
        int64_t elem[PL_MAX_RANK] = {0};
        for (int i = s->b.outs[o].rank - 1; i >= 0; i--) elem[i] = flat % s->b.outs[o].shape[i], flat /= s->b.outs[o].shape[i];
        char shown[64];
        fprintf(f, "  output %d '%s' (%s): max abs err %.3g, %s %.3g%s%s  %s\n", o,
                kern_copy_name(shown, sizeof shown, s->b.call.out[o].name ? s->b.call.out[o].name : "out"),
                pl_dtype_name(s->b.outs[o].dtype),
                k.max_abs_err, rtol < 0 ? "normalised error" : "worst", k.norm_err,
                rtol < 0 ? " (a dot: the rounding its contraction explains)" : " of the tolerance",
                k.n_nan ? ", NaN/inf mismatch" : "", pl_verdict_name(k.verdict));
        if (k.verdict != PL_PASS && pl_check_blame(&s->b.call, o, &s->b.outs[o], elem, k.blame, sizeof k.blame) == PL_OK)
            fprintf(f, "    the worst element is in %s\n", k.blame);
        sim_kdef_rounding_hint(f, o, s->b.outs[o].dtype, &k, rtol);
        if (k.verdict == PL_FAIL) worst = PL_EVERIFY;
        checks[o] = k;
    }
    return worst;
}

/* verify of a mesh kernel: every device against its mesh_reference, the
 * worst device's verdict per output (kdef_mesh.c), then PASS, MARGINAL or FAIL. */
static int verify_mesh(const cli_cmd *cmd, const cli_kopts *o, const pl_kernel_def *d, const int64_t *v,
                       const pl_options *opt)
{
    if (!d->mesh_reference)
        return cli_fail(cmd, "kernel '%s' defines no mesh_reference: there is nothing to verify against", d->name);
    if (o->heatmap) return cli_fail(cmd, "--heatmap draws one device's output; '%s' is a mesh kernel", d->name);
    char label[512];
    pl_kernel_format(d, v, label, sizeof label);
    mesh_out mo = {0};
    pl_report *rep = calloc(1, sizeof *rep);
    pl_check check[PL_MAX_OPERANDS];
    if (!rep) return fprintf(stderr, "tilesim verify: out of host memory\n"), 1;
    memset(check, 0, sizeof check);
    pl_options run_opt = *opt;
    run_opt.cost_only = 0;
    fprintf(stdout, "verify: %s %s on %s against its reference on every device (V5)\n", d->name, label,
            opt->chip_spec->name);
    fflush(stdout);
    int st = run_mesh(d, v, &run_opt, rep, check, stdout, &mo), rc;
    if (st != PL_OK && st != PL_EVERIFY) rejected(cmd, d, label, rep), rc = exit_for(st);
    else {
        const char *names[PL_MAX_OPERANDS];
        int n_outs = 0;
        for (int i = 0; i < rep->n_operands && n_outs < PL_MAX_OPERANDS; i++)
            if (rep->op[i].role == PL_ROLE_OUT) names[n_outs++] = rep->op[i].name;
        char mline[PL_MSG_MAX];
        const char *marginal = st == PL_OK ? marginal_line(check, n_outs, names, mline, sizeof mline) : NULL;
        print_findings(rep, stdout);
        fprintf(stdout, "%s\n", st == PL_OK ? (marginal ? marginal : "PASS") : "FAIL");
        rc = marginal && o->strict ? 1 : exit_for(st);
    }
    free(mo.reps);
    free(rep);
    return cli_finish_stdout(cmd, rc);
}

int cli_verify(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_verify_cmd;
    cli_kopts o;
    const pl_kernel_def *d;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_chip file_chip;
    pl_options opt;
    int rc = cli_kernel_setup(cmd, K_VERIFY_OPTS, argc, argv, &o, &d, v, &file_chip, &opt);
    if (rc >= 0) return rc;
    if (d->mesh) return verify_mesh(cmd, &o, d, v, &opt);
    if (!d->reference) return cli_fail(cmd, "kernel '%s' defines no reference: there is nothing to verify against",
                                       d->name);
    char label[512], msg[PL_MSG_MAX];
    pl_kernel_format(d, v, label, sizeof label);
    vstate *s = calloc(1, sizeof *s);
    if (!s) return fprintf(stderr, "tilesim verify: out of host memory\n"), 1;
    int st = vrun(d, v, &opt, s), out = 0;
    if (st == PL_OK && (rc = choose_output(cmd, &o, s, &out))) st = 1;
    else if (st != PL_OK) rejected(cmd, d, label, &s->rep), rc = exit_for(st);
    else {
        fprintf(stdout, "verify: %s %s on %s against its reference (V5)\n", d->name, label, opt.chip_spec->name);
        pl_check checks[PL_MAX_OPERANDS];
        const char *names[PL_MAX_OPERANDS];
        memset(checks, 0, sizeof checks);
        st = verify_outputs(d, s, stdout, checks);
        if (st != PL_ESHAPE) print_findings(&s->rep, stdout);
        for (int i = 0; i < s->b.n_outs; i++) names[i] = s->b.call.out[i].name;
        char mline[PL_MSG_MAX];
        const char *marginal = st == PL_OK ? marginal_line(checks, s->b.n_outs, names, mline, sizeof mline) : NULL;
        if (st == PL_ESHAPE) fprintf(stderr, "tilesim verify: %s: the reference's shape differs from the output's\n",
                                     d->name);
        if (o.heatmap && st != PL_ESHAPE) {
            int64_t bm, bn;
            block_2d(&s->b.call.out[out], &s->b.outs[out], &bm, &bn);
            int h = pl_allclose_heatmap(&s->b.outs[out], &s->want[out], bm, bn, d->rtol, d->atol, o.heatmap, msg,
                                        sizeof msg);
            if (h == PL_OK || h == PL_EVERIFY) fprintf(stdout, "  %s\n", msg);
            else fprintf(stderr, "tilesim verify: --heatmap: %s\n", msg), st = st ? st : PL_EINVAL;
        }
        fprintf(stdout, "%s\n", st == PL_OK ? (marginal ? marginal : "PASS") : st == PL_EVERIFY ? "FAIL" : "ERROR");
        rc = marginal && o.strict ? 1 : exit_for(st);
    }
    vfree(s);
    free(s);
    return cli_finish_stdout(cmd, rc);
}
