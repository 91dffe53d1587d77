/* cli/chips.c: `tilesim chips`: every figure of every preset (and of a
 * what-if chip file) in readable units; and choosing the chip of a run. */
#include <string.h>

#include "../sim/base/json.h"
#include "cli.h"

#define MAX_COLS 8

static double critical_intensity(const pl_chip *c)
{
    return c->hbm_bw > 0 ? c->bf16_flops * c->cores_per_device / c->hbm_bw : 0;
}

static void preset_names(char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < pl_chip_count() && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", pl_chip_at(i)->name);
}

int cli_select_chip(const cli_cmd *cmd, const char *name, const char *file, pl_chip *file_chip,
                    const pl_chip **out)
{
    if (name && file) return cli_fail(cmd, "--chip and --chip-file exclude each other; give one");
    if (file) {
        char err[PL_MSG_MAX];
        if (pl_chip_load(file, file_chip, err, sizeof err) != PL_OK) return cli_fail(cmd, "--chip-file: %s", err);
        *out = file_chip;
        return 0;
    }
    if (!name) {
        *out = pl_chip_default();
        return 0;
    }
    if (!(*out = pl_chip_find(name))) {
        char names[128];
        preset_names(names, sizeof names);
        return cli_fail(cmd, "--chip: unknown chip '%s'; the presets are %s (or use --chip-file)", CLI_CUT(name),
                        names);
    }
    return 0;
}

/* ---- the table --------------------------------------------------------------- */

typedef void (*cell_fn)(const pl_chip *c, char *buf, size_t n);

#define CELL(fn, fmt, expr) \
    static void fn(const pl_chip *c, char *b, size_t n) { snprintf(b, n, fmt, expr); }

CELL(c_bf16, "%.1f", c->bf16_flops / 1e12)
CELL(c_f32, "%.3f", c->f32_fraction)
CELL(c_vpu, "%.2f", c->vpu_flops / 1e12)
CELL(c_hbm_bw, "%.0f", c->hbm_bw / 1e9)
CELL(c_hbm, "%.1f", (double)c->hbm_bytes / (1024.0 * 1024 * 1024))
CELL(c_vmem, "%.0f", (double)c->vmem_bytes / (1024.0 * 1024))
CELL(c_limit, "%.0f", (double)c->vmem_default_limit / (1024.0 * 1024))
CELL(c_smem, "%.0f", (double)c->smem_bytes / 1024.0)
CELL(c_sub, "%d", c->sublanes_16bit)
CELL(c_cores, "%d", c->cores_per_device)
CELL(c_devs, "%d", c->devices_per_chip)
CELL(c_step, "%.2f", c->step_overhead_s * 1e6)
CELL(c_dma, "%.2f", c->dma_latency_s * 1e6)
CELL(c_ici_lat, "%.2f", c->ici_latency_s * 1e6)
CELL(c_issue, "%.3f", c->dma_issue_s * 1e6)
CELL(c_row, "%.0f", c->dma_row_bytes)
CELL(c_fill, "%.0f", c->mxu_fill_cycles)
CELL(c_prologue, "%.2f", c->prologue_s * 1e6)
CELL(c_regular, "%s", c->dma_regular_sems ? "yes" : "no")
CELL(c_vmem_bw, "%.0f", c->vmem_bw / 1e9)
CELL(c_crit, "%.0f", critical_intensity(c))

static void c_int8(const pl_chip *c, char *b, size_t n)
{
    if (c->int8_ops > 0) snprintf(b, n, "%.1f", c->int8_ops / 1e12);
    else snprintf(b, n, "none*");
}
static void c_fp8(const pl_chip *c, char *b, size_t n)
{
    if (c->fp8_ops > 0) snprintf(b, n, "%.1f", c->fp8_ops / 1e12);
    else snprintf(b, n, "none");
}
/* T8: the memory tile rows of 32-, 16-, 8- and 4-bit types in a tall array */
static void c_tiles(const pl_chip *c, char *b, size_t n)
{
    snprintf(b, n, "%d/%d/%d/%d", pl_chip_tile_rows(c, PL_F32, 1 << 20), pl_chip_tile_rows(c, PL_BF16, 1 << 20),
             pl_chip_tile_rows(c, PL_I8, 1 << 20), c->sublanes_4bit > 0 ? c->sublanes_4bit : 64);
}
/* T10: what the MXU multiplies (float mixes and float x int8 always) */
static void c_mxu_dtypes(const pl_chip *c, char *b, size_t n)
{
    int i8 = c->int8_ops > 0, f8 = c->fp8_ops > 0;
    snprintf(b, n, "%s", i8 && f8 ? "int8,fp8" : i8 ? "int8" : f8 ? "fp8" : "none");
}
/* T10: fp8 x fp8 at the fp8 rate, widened to bf16 (no fp8 rate), or refused (E2001) */
static void c_fp8_in(const pl_chip *c, char *b, size_t n)
{
    snprintf(b, n, "%s", c->fp8_ops > 0 ? "fp8 rate" : c->mxu_fp8_operands ? "as bf16" : "E2001");
}
/* K5: SparseCores x vector subcores x f32 lanes, and each subcore's VMEM */
static void c_sc(const pl_chip *c, char *b, size_t n)
{
    if (c->sc_cores > 0) snprintf(b, n, "%dx%dx%d", c->sc_cores, c->sc_subcores, c->sc_lanes);
    else snprintf(b, n, "none");
}
static void c_sc_vmem(const pl_chip *c, char *b, size_t n)
{
    if (c->sc_cores > 0) snprintf(b, n, "%lld", (long long)(c->sc_vmem_bytes / 1024));
    else snprintf(b, n, "-");
}
static void c_mxu(const pl_chip *c, char *b, size_t n) { snprintf(b, n, "%d x %d", c->mxu_count, c->mxu_width); }
static void c_ici(const pl_chip *c, char *b, size_t n) { snprintf(b, n, "%d x %.0f", c->ici_links, c->ici_bw / 1e9); }
/* M14: chips a host serves, and its NICs' bandwidth each way */
static void c_dcn(const pl_chip *c, char *b, size_t n)
{
    if (c->dcn_bw > 0) snprintf(b, n, "%d / %.1f", c->chips_per_host, c->dcn_bw / 1e9);
    else snprintf(b, n, "none");
}
CELL(c_dcn_lat, "%.1f", c->dcn_latency_s * 1e6)
static void c_clock(const pl_chip *c, char *b, size_t n)
{
    if (c->clock_hz > 0) snprintf(b, n, "%.2f", c->clock_hz / 1e9);
    else snprintf(b, n, "n/a");
}

static const struct {
    const char *label;
    cell_fn cell;
} rows[] = {
    {"bf16 MXU peak, TFLOP/s", c_bf16},
    {"int8 MXU peak, TOP/s", c_int8},
    {"fp8 MXU peak, TFLOP/s", c_fp8},
    {"MXU int8 x int8 / fp8 (T10)", c_mxu_dtypes},
    {"fp8 x fp8 operands (T10)", c_fp8_in},
    {"f32 matmul rate / bf16 rate", c_f32},
    {"VPU (f32), TFLOP/s", c_vpu},
    {"MXUs x width", c_mxu},
    {"HBM bandwidth, GB/s (per device)", c_hbm_bw},
    {"HBM capacity, GiB (per device)", c_hbm},
    {"VMEM bandwidth, GB/s (per core)", c_vmem_bw},
    {"VMEM, MiB", c_vmem},
    {"scoped VMEM limit, MiB (default)", c_limit},
    {"SMEM, KiB", c_smem},
    {"sublanes of 16-bit types (T6)", c_sub},
    {"tile rows 32/16/8/4-bit (T8)", c_tiles},
    {"TensorCores per device", c_cores},
    {"devices per chip", c_devs},
    {"SparseCores x subcores x lanes", c_sc},
    {"SparseCore subcore VMEM, KiB", c_sc_vmem},
    {"ICI links x GB/s (one way)", c_ici},
    {"ICI hop latency, us", c_ici_lat},
    {"DCN chips a host / GB/s (M14)", c_dcn},
    {"DCN latency, us", c_dcn_lat},
    {"clock, GHz", c_clock},
    {"step overhead, us (P9)", c_step},
    {"DMA latency, us", c_dma},
    {"DMA issue / semaphore wait, us", c_issue},
    {"DMA full-bandwidth row, bytes", c_row},
    {"MXU fill + drain per dot, cycles", c_fill},
    {"pipeline prologue, us", c_prologue},
    {"DMA signals a regular semaphore (M8)", c_regular},
    {"critical intensity, FLOP/B", c_crit},
};

static void print_table(const pl_chip **cols, int n, FILE *f)
{
    int width[MAX_COLS];
    fprintf(f, "%-34s", "per TensorCore unless noted");
    for (int i = 0; i < n; i++) {
        width[i] = (int)strlen(cols[i]->name) + 2;
        if (width[i] < 12) width[i] = 12; /* "8/16/32/64" and a gap */
        fprintf(f, "%*s", width[i], cols[i]->name);
    }
    fputc('\n', f);
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        fprintf(f, "%-34s", rows[r].label);
        for (int i = 0; i < n; i++) {
            char cell[64];
            rows[r].cell(cols[i], cell, sizeof cell);
            fprintf(f, "%*s", width[i], cell);
        }
        fputc('\n', f);
    }
    fprintf(f, "\n%s is the default chip; --chip NAME picks another.\n", pl_chip_default()->name);
    fprintf(f, "critical intensity = bf16 peak x TensorCores per device / HBM bandwidth: a kernel with fewer\n"
               "  FLOPs per HBM byte is HBM-bound. Megacore devices (2 TensorCores) share one HBM.\n"
               "* no int8 MXU path: an int8 x int8 pl_dot is an error there (XLA E2001, rule T10).\n"
               "tile rows: an array's (rows, 128) memory tile when its rows are a multiple; a block's\n"
               "  second-last size must be a multiple of it or the whole dimension (XLA E2002, rule T8).\n");
}

static void print_json(const pl_chip **cols, const int *from_file, int n, FILE *f)
{
    fprintf(f, "{\"default\":");
    pl_json_string(f, pl_chip_default()->name);
    fprintf(f, ",\"chips\":[");
    for (int i = 0; i < n; i++) {
        const pl_chip *c = cols[i];
        fprintf(f, "%s\n{\"name\":", i ? "," : "");
        pl_json_string(f, c->name);
        fprintf(f,
                ",\"source\":\"%s\",\"bf16_flops\":%.6g,\"int8_ops\":%.6g,\"f32_fraction\":%.6g,\"vpu_flops\":%.6g,"
                "\"mxu_count\":%d,\"mxu_width\":%d,\"clock_hz\":%.6g,\"hbm_bw\":%.6g,\"hbm_bytes\":%lld,"
                "\"vmem_bytes\":%lld,\"vmem_default_limit\":%lld,\"smem_bytes\":%lld,\"sublanes_16bit\":%d,"
                "\"cores_per_device\":%d,\"devices_per_chip\":%d,\"ici_links\":%d,\"ici_bw\":%.6g,"
                "\"step_overhead_s\":%.6g,\"dma_latency_s\":%.6g,\"ici_latency_s\":%.6g,\"critical_intensity\":%.6g,"
                "\"vmem_bw\":%.6g,\"fp8_ops\":%.6g,\"sublanes_8bit\":%d,\"sublanes_4bit\":%d,\"sc_cores\":%d,"
                "\"sc_subcores\":%d,\"sc_lanes\":%d,\"sc_vmem_bytes\":%lld,\"dma_issue_s\":%.6g,\"dma_row_bytes\":%.6g,"
                "\"mxu_fill_cycles\":%.6g,\"prologue_s\":%.6g,\"dma_regular_sems\":%d,\"chips_per_host\":%d,"
                "\"dcn_bw\":%.6g,\"dcn_latency_s\":%.6g}",
                from_file[i] ? "file" : "preset", c->bf16_flops, c->int8_ops, c->f32_fraction, c->vpu_flops,
                c->mxu_count, c->mxu_width, c->clock_hz, c->hbm_bw, (long long)c->hbm_bytes,
                (long long)c->vmem_bytes, (long long)c->vmem_default_limit, (long long)c->smem_bytes,
                c->sublanes_16bit, c->cores_per_device, c->devices_per_chip, c->ici_links, c->ici_bw,
                c->step_overhead_s, c->dma_latency_s, c->ici_latency_s, critical_intensity(c), c->vmem_bw,
                c->fp8_ops, c->sublanes_8bit, c->sublanes_4bit, c->sc_cores, c->sc_subcores, c->sc_lanes,
                (long long)c->sc_vmem_bytes, c->dma_issue_s, c->dma_row_bytes, c->mxu_fill_cycles, c->prologue_s,
                c->dma_regular_sems, c->chips_per_host, c->dcn_bw, c->dcn_latency_s);
    }
    fprintf(f, "\n]}\n");
}

int cli_chips(int argc, char **argv)
{
    static const cli_optspec specs[] = {{"--json", 0}, {"--chip-file", 1}};
    enum { N = sizeof specs / sizeof *specs };
    const cli_cmd *cmd = &cli_chips_cmd;
    cli_args a;
    int rc = cli_start(cmd, argc, argv, specs, N, &a);
    if (rc >= 0) return rc;
    if (a.npos) return cli_fail(cmd, "unexpected argument '%s'; chips takes only options", CLI_CUT(a.pos[0]));
    const pl_chip *cols[MAX_COLS];
    int from_file[MAX_COLS] = {0}, n = 0;
    for (int i = 0; i < pl_chip_count() && n < MAX_COLS - 1; i++) cols[n++] = pl_chip_at(i);
    pl_chip custom;
    const char *file = cli_opt(&a, specs, N, "--chip-file");
    if (file) {
        if ((rc = cli_select_chip(cmd, NULL, file, &custom, &cols[n]))) return rc;
        from_file[n++] = 1;
    }
    if (cli_opt(&a, specs, N, "--json")) print_json(cols, from_file, n, stdout);
    else print_table(cols, n, stdout);
    if (file && !cli_opt(&a, specs, N, "--json")) {
        char note[512];
        pl_chip again; /* the load above keeps no note: read it again for its note */
        printf("%s: read from %s.\n", custom.name, file);
        if (pl_chip_load(file, &again, note, sizeof note) == PL_OK && note[0]) printf("note: %s\n", note);
    }
    return cli_finish_stdout(cmd, 0);
}
