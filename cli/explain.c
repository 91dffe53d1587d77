/* cli/explain.c: `tilesim explain matmul M N K BM BN BK`: narrate a small
 * grid step by step, for teaching. The grid and the BlockSpecs come first;
 * then pl_pallas_call runs in cost-only mode with an on_step recorder that
 * prints, at each grid point, what the pipeline did for every operand and
 * the rule of PALLAS.md behind it; last, the copies per operand and the
 * predicted time.
 *
 * A write-back that the simulator reports at step n belongs to the end of
 * step n - 1 (rule P8: a point's write-backs start after its kernel), so it
 * is printed before step n's header, under step n - 1.
 */
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/matmul.h"
#include "../kernel/pltpu.h"
#include "../sim/tools/html.h"
#include "../sim/kdef/kdef_internal.h"
#include "cli.h"

#define MAX_SIZE (1LL << 24)

const char cli_axis_letter[PL_MAX_GRID] = {'i', 'j', 'k', 'l', 'm', 'n'};


/* ---- the header ------------------------------------------------------------------ */

static void map_words(const pl_index_map *m, int rank, char *buf, size_t n)
{
    if (m->fn) {
        snprintf(buf, n, "(computed by a function)");
        return;
    }
    size_t at = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < rank && at < n; d++) {
        int ax = m->n == 0 ? PL_ZERO : m->axis[d];
        if (ax == PL_ZERO) at += (size_t)snprintf(buf + at, n - at, "%s0", d ? ", " : "");
        else at += (size_t)snprintf(buf + at, n - at, "%s%c", d ? ", " : "", cli_axis_letter[ax]);
    }
    if (at < n) snprintf(buf + at, n - at, ")");
}

static void print_grid(const pl_call *call, const int64_t *sizes, const int64_t *blocks, int64_t steps, FILE *f)
{
    static const char *what[3] = {"the row block of C", "the column block of C", "the contraction block"};
    static const char *ratio[3] = {"M / bm", "N / bn", "K / bk"};
    char g[64];
    fprintf(f, "grid %s = %lld steps, visited one after another, the last axis fastest (rule G1):\n",
            cli_tuple(call->grid, call->grid_rank, g, sizeof g), (long long)steps);
    for (int a = 0; a < 3; a++) {
        fprintf(f, "  %c = program_id(%d) in 0..%lld: %s, %s = %lld / %lld%s; %s\n", cli_axis_letter[a], a,
                (long long)call->grid[a] - 1, what[a], ratio[a], (long long)sizes[a], (long long)blocks[a],
                sizes[a] % blocks[a] ? " rounded up: the last block hangs over the edge (rule B6)" : "",
                call->semantics[a] == PL_PARALLEL ? "parallel (rule G3)"
                                                  : "arbitrary: a reduction, so o stays in VMEM while k runs (rule P3)");
    }
}

void cli_explain_specs(const pl_call *call, const pl_report *v, int generic, FILE *f)
{
    static const char *array_name[3] = {"A", "B", "C"};
    int shown = generic ? v->n_operands : v->n_operands < 3 ? v->n_operands : 3;
    char blk[64], map[64], sz[32], lim[32];
    fprintf(f, "\nblock specs (an index map returns block indices: block b starts at element b x block size, "
               "rule B2):\n");
    for (int i = 0; i < shown; i++) {
        const pl_operand_report *o = &v->op[i];
        int j = i - call->num_scalar_prefetch; /* the reports list the prefetch tables first */
        if (o->role == PL_ROLE_PREFETCH || j < 0) {
            fprintf(f, "  %s: scalar-prefetch table in SMEM, read by the index maps (rule M5)\n", o->name);
            continue;
        }
        const pl_block_spec *s = j < call->n_in ? &call->in[j] : &call->out[j - call->n_in];
        map_words(&s->map, s->rank, map, sizeof map);
        if (generic && o->space == PL_ANY)
            fprintf(f, "  %s: stays in HBM (memory space ANY): the kernel copies what it needs with its own DMAs "
                       "(rule T5)\n", o->name);
        else if (generic)
            fprintf(f, "  %s: block %s at block index %s, %s; %d VMEM buffer%s of %s (rule P6)\n", o->name,
                    cli_tuple(o->block, o->rank, blk, sizeof blk), map, o->role == PL_ROLE_IN ? "an input" : "an output",
                    o->buffers, o->buffers == 1 ? "" : "s", pl_format_bytes((double)o->vmem_bytes, sz, sizeof sz));
        else
            fprintf(f, "  %s: block %s at block index %s of %s, %s; %d VMEM buffers of %s (rule P6)\n", o->name,
                    cli_tuple(o->block, o->rank, blk, sizeof blk), map, array_name[i],
                    o->role == PL_ROLE_IN ? "an input" : "the output", o->buffers,
                    pl_format_bytes((double)o->vmem_bytes, sz, sizeof sz));
    }
    for (int i = 0; i < v->n_scratch; i++)
        fprintf(f, "  %s: %s scratch %s, %s, kept from one step to the next (rule M2)\n", v->scratch[i].name,
                pl_dtype_name(v->scratch[i].dtype),
                cli_tuple(call->scratch[i].shape, call->scratch[i].rank, blk, sizeof blk),
                pl_format_bytes((double)v->scratch[i].bytes, sz, sizeof sz));
    fprintf(f, "  VMEM: %s of the %s scoped limit (rule M4)\n", pl_format_bytes((double)v->vmem_bytes, sz, sizeof sz),
            pl_format_bytes((double)v->vmem_limit, lim, sizeof lim));
    const char *w = v->warnings;
    while (*w) {
        size_t len = strcspn(w, "\n");
        fprintf(f, "  warning: %.*s\n", (int)len, w);
        w += len + (w[len] ? 1 : 0);
    }
    if (generic) fputc('\n', f);
    else fprintf(f, "\nkernel: at k == 0 zero acc; at every step acc += x @ y; at the last k write o = acc\n\n");
}

/* ---- the steps -------------------------------------------------------------------- */

/* The column the operand names take: the longest (at least 3), so that
 * "gamma" or "bias" lines up with "x" (issue 24). */
static int name_width(const char *const *names, int n)
{
    int w = 3;
    for (int i = 0; i < n; i++)
        if (names[i] && (int)strlen(names[i]) > w) w = (int)strlen(names[i]);
    return w > 24 ? 24 : w;
}

static void write_backs(const pl_step_info *s, FILE *f)
{
    char blk[64];
    int first = 1, w = name_width(s->names, s->n_operands);
    for (int i = 0; i < s->n_operands; i++) {
        if (!s->op[i].wrote_back) continue;
        if (s->final && first) fprintf(f, "after the last step:\n");
        first = 0;
        fprintf(f, "  %-*s block %-8s written back to HBM: %s (rule P3)\n", w, s->names[i],
                cli_tuple(s->op[i].wb_block, s->ranks[i], blk, sizeof blk),
                s->final ? "the grid is done, every output writes back its last block"
                         : "the next step selects another block");
    }
}

/* " (an edge block: ...)" when block b of operand i hangs past its array
 * (B6): the reads there are garbage, the writes dropped. */
static void edge_note(const cli_narrator *nr, int i, const int64_t *b, int rank, FILE *f)
{
    const pl_array *a = nr->blocks && i < nr->blocks->n_operands ? nr->arrays[i] : NULL;
    if (!a || a->rank != rank || nr->blocks->op[i].rank != rank) return;
    for (int d = 0; d < rank; d++) {
        int64_t bs = nr->blocks->op[i].block[d], start = b[d] * bs;
        if (bs <= 0 || start >= a->shape[d] || start + bs <= a->shape[d]) continue;
        fprintf(f, " (an edge block: it covers %lld..%lld along dimension %d, the array ends at %lld; past that it "
                "reads as garbage and what is written there is dropped, rule B6)", (long long)start,
                (long long)(start + bs - 1), d, (long long)a->shape[d] - 1);
        return;
    }
}

void cli_explain_step(const pl_step_info *s, void *user)
{
    cli_narrator *nr = user;
    FILE *f = nr->f;
    char g[64], blk[64];
    write_backs(s, f);
    if (s->final) return;
    if (s->step == 0 && (s->core > 0 || nr->megacore))
        fprintf(f, "\nTensorCore %d walks its share of the grid, with its own VMEM buffers and scratch: a chip "
                   "with several cores cuts a parallel axis between them (rule G4)\n", s->core);
    fprintf(f, "step %lld  grid %s", (long long)s->step, cli_tuple(s->idx, s->grid_rank, g, sizeof g));
    if (s->core) fprintf(f, " (core %d)", s->core); /* what-if chips may have more than two */
    fprintf(f, ":\n");
    int w = name_width(s->names, s->n_operands);
    for (int i = 0; i < s->n_operands; i++) {
        const pl_step_operand *o = &s->op[i];
        if (o->action == PL_ACT_NONE) continue;
        fprintf(f, "  %-*s block %-8s ", w, s->names[i], cli_tuple(o->block, s->ranks[i], blk, sizeof blk));
        switch (o->action) {
        case PL_ACT_COPY:
            fprintf(f, "copied HBM -> VMEM slot %d (new block, rule P1)", o->slot);
            edge_note(nr, i, o->block, s->ranks[i], f);
            fputc('\n', f);
            break;
        case PL_ACT_SKIP: fprintf(f, "skipped: same block as the previous step (rule P2)\n"); break;
        case PL_ACT_KEEP: fprintf(f, "kept in VMEM: same output block, the kernel accumulates into it (rule P3)\n"); break;
        case PL_ACT_NEW:
            fprintf(f, "new buffer in slot %d, starts as garbage: the kernel must write all of it (rule P4)", o->slot);
            edge_note(nr, i, o->block, s->ranks[i], f);
            fputc('\n', f);
            break;
        case PL_ACT_FETCH:
            fprintf(f, "fetched back from HBM into slot %d: revisited (RevisitMode.ANY, P5)\n", o->slot);
            break;
        default: fputc('\n', f); break;
        }
    }
    if (nr->generic) return;
    int64_t k = s->grid_rank > 2 ? s->idx[2] : 0;
    fprintf(f, "  kernel: %sacc += x @ y%s\n", k == 0 ? "acc = 0; " : "", k == nr->nk - 1 ? "; o = acc" : "");
}

/* ---- the summary -------------------------------------------------------------------- */

void cli_explain_summary(const pl_report *r, int generic, FILE *f)
{
    char a[32], t[4][32];
    int64_t skipped = 0;
    fprintf(f, "\nsummary: %lld steps on %s\n", (long long)r->steps, r->chip->name);
    const char *names[PL_MAX_CALL_OPERANDS];
    for (int i = 0; i < r->n_operands && i < PL_MAX_CALL_OPERANDS; i++) names[i] = r->op[i].name;
    int w = name_width(names, r->n_operands < PL_MAX_CALL_OPERANDS ? r->n_operands : PL_MAX_CALL_OPERANDS);
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        if (generic && (o->space == PL_ANY || o->role == PL_ROLE_PREFETCH)) continue; /* no pipeline copies */
        if (o->role == PL_ROLE_IN) {
            fprintf(f, "  %-*s %lld copies HBM -> VMEM (%s), %lld skipped (rule P2)\n", w, o->name, (long long)o->copies,
                    pl_format_bytes((double)o->bytes_in, a, sizeof a), (long long)o->skipped);
            skipped += o->skipped;
        } else if (o->role == PL_ROLE_OUT) {
            fprintf(f, "  %-*s %lld write-backs VMEM -> HBM (%s) (rule P3)\n", w, o->name, (long long)o->writebacks,
                    pl_format_bytes((double)o->bytes_out, a, sizeof a));
            if (o->fetchbacks)
                fprintf(f, "  %-*s %lld fetched back from HBM (%s): revisited (RevisitMode.ANY, P5)\n", w, o->name,
                        (long long)o->fetchbacks, pl_format_bytes((double)o->bytes_in, a, sizeof a));
        }
    }
    if (generic && r->dma_copies)
        fprintf(f, "  the kernel's own DMAs: %lld copies moving %s (rule M7)\n", (long long)r->dma_copies,
                pl_format_bytes((double)r->dma_bytes, a, sizeof a));
    if (!generic && !skipped && r->steps > 1 && r->grid[2] > 1)
        fprintf(f, "  no copy was skipped: k, the fastest axis, changes the block of x and y at every step;\n"
                   "  with bk = K (one contraction block) x would stay put while j runs (rule P2)\n");
    /* G4: on megacore chips the last core's parts, which add up to the time */
    int mc = r->cores > 1;
    fprintf(f, "  predicted time: %s = compute %s + exposed DMA %s + step overhead %s", pl_format_time(r->time_s, t[0], 32),
            pl_format_time(mc ? r->core_compute_s : r->compute_s, t[1], 32),
            pl_format_time(mc ? r->core_exposed_s : r->dma_exposed_s, t[2], 32),
            pl_format_time(mc ? r->core_overhead_s : r->overhead_s, t[3], 32));
    if (mc) fprintf(f, " on core %d, the last of %d to finish", r->slowest_core, r->cores);
    fputc('\n', f);
    if (generic && r->mxu_flops == 0 && r->time_s > 0 && r->chip->hbm_bw > 0) /* a norm: judged by bandwidth */
        fprintf(f, "  %.1f GB/s of HBM = %.1f%% of the %s bandwidth; no MXU work\n", (double)r->hbm_bytes / r->time_s / 1e9,
                100 * (double)r->hbm_bytes / r->time_s / r->chip->hbm_bw, r->chip->name);
    else
        fprintf(f, "  %.3g TFLOP/s = %.1f%% of the %s peak; %.1f FLOP per HBM byte\n", r->flops_per_s / 1e12,
                100 * r->peak_fraction, pl_dtype_name(r->mxu_dtype), r->intensity);
    fprintf(f, "  bound: %s\n", r->bound_msg);
}

/* ---- the command -------------------------------------------------------------------- */

static const cli_optspec specs[] = {{"--dtype", 1}, {"--chip", 1}, {"--chip-file", 1}, {"--vmem-limit", 1}};
enum { NSPECS = sizeof specs / sizeof *specs };

static int parse_sizes(const cli_cmd *cmd, const cli_args *a, int64_t *v)
{
    static const char *names[6] = {"M", "N", "K", "BM", "BN", "BK"};
    if (a->npos == 0) return cli_fail(cmd, "missing the kernel: give 'matmul M N K BM BN BK'");
    if (strcmp(a->pos[0], "matmul") != 0)
        return cli_fail(cmd, "unknown kernel '%s'; explain knows: matmul", CLI_CUT(a->pos[0]));
    if (a->npos < 7) return cli_fail(cmd, "missing %s: give matmul M N K BM BN BK", names[a->npos - 1]);
    if (a->npos > 7) return cli_fail(cmd, "unexpected argument '%s' after matmul M N K BM BN BK",
                                      CLI_CUT(a->pos[7]));
    for (int i = 0; i < 6; i++) {
        int rc = cli_parse_count(cmd, names[i], a->pos[1 + i], MAX_SIZE, &v[i]);
        if (rc) return rc;
    }
    return 0;
}

int cli_explain(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_explain_cmd;
    cli_args a;
    int rc = cli_start(cmd, argc, argv, specs, NSPECS, &a);
    if (rc >= 0) return rc;
    int64_t v[6];
    pl_dtype dt = PL_F32;
    pl_chip file_chip;
    const pl_chip *chip;
    const char *dts = cli_opt(&a, specs, NSPECS, "--dtype");
    if ((rc = parse_sizes(cmd, &a, v)) || (dts && (rc = cli_parse_dtype(cmd, dts, &dt))) ||
        (rc = cli_select_chip(cmd, cli_opt(&a, specs, NSPECS, "--chip"), cli_opt(&a, specs, NSPECS, "--chip-file"),
                              &file_chip, &chip)))
        return rc;
    int64_t limit = 0; /* --vmem-limit: the scoped limit the call sets (M4), at most physical VMEM */
    const char *lims = cli_opt(&a, specs, NSPECS, "--vmem-limit");
    if (lims && (rc = cli_parse_vmem_limit(cmd, lims, &limit))) return rc;
    if ((rc = cli_check_vmem_limit(cmd, limit, chip))) return rc;

    mm_params p;
    pl_call call;
    mm_call(&call, &p, v[0], v[1], v[2], v[3], v[4], v[5]);
    pl_array args[2] = {PL_ARRAY(NULL, dt, v[0], v[2]), PL_ARRAY(NULL, dt, v[2], v[1])};
    pl_array out = PL_ARRAY(NULL, dt, v[0], v[1]);
    pl_options opt = {.chip_spec = chip, .cost_only = 1, .vmem_limit_bytes = limit};
    int64_t steps = 1;
    for (int d = 0; d < 3; d++) steps = steps > (1LL << 40) / call.grid[d] ? (1LL << 40) : steps * call.grid[d];

    pl_report rep;
    if (steps < (1LL << 40) && pl_validate(&call, args, &out, &opt, &rep) != PL_OK)
        return cli_fail(cmd, "blocks (%lld, %lld, %lld) are not legal: %s", (long long)v[3], (long long)v[4],
                        (long long)v[5], rep.error);
    if (steps > CLI_MAX_EXPLAIN_STEPS) {
        char g[64];
        double all = (double)call.grid[0] * (double)call.grid[1] * (double)call.grid[2];
        return cli_fail(cmd, "grid %s has %.*g steps; explain narrates at most %d: use larger blocks or smaller sizes",
                        cli_tuple(call.grid, call.grid_rank, g, sizeof g), all < 1e15 ? 15 : 3, all,
                        CLI_MAX_EXPLAIN_STEPS);
    }
    int64_t sizes[3] = {v[0], v[1], v[2]}, blocks[3] = {v[3], v[4], v[5]};
    fprintf(stdout, "explain: matmul C (%lld x %lld) = A (%lld x %lld) @ B (%lld x %lld), %s on %s\n\n",
            (long long)v[0], (long long)v[1], (long long)v[0], (long long)v[2], (long long)v[2], (long long)v[1],
            pl_dtype_name(dt), chip->name);
    print_grid(&call, sizes, blocks, steps, stdout);
    cli_explain_specs(&call, &rep, 0, stdout);

    /* G4 cuts the first parallel axis with at least 2 points (i or j) */
    cli_narrator nr = {stdout, call.grid[2], chip->cores_per_device > 1 && (call.grid[0] > 1 || call.grid[1] > 1), 0,
                       &rep, {&args[0], &args[1], &out}};
    opt.on_step = cli_explain_step;
    opt.on_step_user = &nr;
    if (pl_pallas_call(&call, args, &out, &opt, &rep) != PL_OK) {
        fflush(stdout);
        fprintf(stderr, "tilesim explain: the simulation failed: %s\n", rep.error);
        return 1;
    }
    cli_explain_summary(&rep, 0, stdout);
    return cli_finish_stdout(cmd, 0);
}
