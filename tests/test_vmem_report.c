/* The VMEM report in the compiler's own format (issue 15): a call's scoped
 * VMEM listed as XLA lists it when a TPU program runs out of VMEM (rule
 * M4), each allocation with its padded and unpadded size and its shape
 * with layout and tiling (T6, T8), which the HLO reader reads back. */
#include <criterion/criterion.h>
#include <string.h>

#include "../sim/tilesim_hlo.h"
#include "helpers.h"
#include "run.h"

static void noop(pl_ctx *c, pl_ref *refs) { (void)c, (void)refs; }

static char *listing(const pl_report *rep)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    cr_assert_eq(pl_vmem_report(rep, f), PL_OK);
    fclose(f);
    return text;
}

/* The number after "Size: " at the k-th allocation, in bytes (XLA units). */
static double listed_size(const char *text, int k)
{
    char key[32];
    snprintf(key, sizeof key, "\n  %d. Size: ", k);
    const char *p = strstr(text, key);
    cr_assert(p, "allocation %d is listed:\n%s", k, text);
    char *end;
    double v = strtod(p + strlen(key), &end);
    return v * (*end == 'K' ? 1024 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1);
}

Test(vmem_report, over_the_limit_it_reads_as_xla_and_lists_the_largest_first)
{
    pl_call call = {.name = "big", .kernel = noop, .grid_rank = 2, .grid = {2, 2},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 1), 2048, 1024)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 2048, 2048)},
                    .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 512, 1024)}};
    pl_array in = PL_ARRAY(NULL, PL_F32, 4096, 2048), out = PL_ARRAY(NULL, PL_F32, 4096, 4096);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    cr_assert_eq(pl_validate(&call, &in, &out, &opt, &rep), PL_EVMEM, "%s", rep.error);
    char *text = listing(&rep);
    /* o: 2 x 16 MiB, x: 2 x 8 MiB, the scratch 2 MiB: 50 MiB over the 16 MiB limit of v5e */
    cr_expect(strstr(text, "Ran out of memory in memory space vmem. Used 50.00M of 16.00M vmem. Exceeded vmem "
                           "capacity by 34.00M."), "%s", text);
    cr_expect(strstr(text, "Program vmem requirement 50.00M:"), "%s", text);
    cr_expect_eq(listed_size(text, 1), 32.0 * (1 << 20), "the output's two buffers first");
    cr_expect_eq(listed_size(text, 2), 16.0 * (1 << 20));
    cr_expect_eq(listed_size(text, 3), 2.0 * (1 << 20), "the scratch last");
    cr_expect(strstr(text, "Shape: f32[2,2048,2048]{2,1,0:T(8,128)}"), "%s", text);
    cr_expect(strstr(text, "Shape: f32[512,1024]{1,0:T(8,128)}"), "%s", text);
    cr_expect(strstr(text, "Allocation type: scoped"), "%s", text);
    free(text);
}

Test(vmem_report, a_padded_block_says_its_extra_bytes_and_its_shape_reads_back_to_them)
{
    /* a (4, 512) f32 block, the whole array: legal (T1), its 4 rows padded to the 8-row tile (T6) */
    pl_call call = {.name = "thin", .kernel = noop, .grid_rank = 1, .grid = {1},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 4, 512)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 4, 512)}};
    pl_array in = PL_ARRAY(NULL, PL_F32, 4, 512), out = PL_ARRAY(NULL, PL_F32, 4, 512);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    cr_assert_eq(pl_validate(&call, &in, &out, &opt, &rep), PL_OK, "%s", rep.error);
    char *text = listing(&rep);
    cr_expect(strstr(text, "Scoped vmem of thin on v5e: used"), "under the limit it says so:\n%s", text);
    cr_expect(strstr(text, "Unpadded size: 8.00K"), "%s", text);
    cr_expect(strstr(text, "Extra memory due to padding:"), "%s", text);
    const char *sh = strstr(text, "Shape: ");
    cr_assert(sh);
    char shape[128];
    cr_assert_eq(sscanf(sh + 7, "%127s", shape), 1);
    pl_hlo_shape s;
    char err[256];
    cr_assert_eq(pl_hlo_parse_shape(shape, &s, err, sizeof err), PL_OK, "%s: %s", shape, err);
    cr_expect_eq((double)pl_hlo_shape_bytes(&s, 1), listed_size(text, 1),
                 "the HLO reader pads %s to the bytes the budget counts", shape);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 0), 1 * 4 * 512 * 4 * (rep.op[0].buffers), "unpadded: %s", shape);
    free(text);
}

Test(vmem_report, bf16_is_tiled_16_rows_on_v7x_and_8_before, .timeout = 30)
{
    const char *chips[2] = {"v7x", "v5e"}, *want[2] = {"bf16[2,256,512]{2,1,0:T(16,128)(2,1)}",
                                                        "bf16[2,256,512]{2,1,0:T(8,128)(2,1)}"};
    for (int i = 0; i < 2; i++) {
        pl_call call = {.name = "b", .kernel = noop, .grid_rank = 1, .grid = {4},
                        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 512)},
                        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 512)}};
        pl_array in = PL_ARRAY(NULL, PL_BF16, 1024, 512), out = PL_ARRAY(NULL, PL_BF16, 1024, 512);
        pl_options opt = {.cost_only = 1, .chip = chips[i]};
        pl_report rep;
        cr_assert_eq(pl_validate(&call, &in, &out, &opt, &rep), PL_OK, "%s: %s", chips[i], rep.error);
        char *text = listing(&rep);
        cr_expect(strstr(text, want[i]), "%s: %s\n%s", chips[i], want[i], text);
        free(text);
    }
}

Test(vmem_report, null_arguments_are_refused)
{
    pl_report rep = {0};
    cr_expect_eq(pl_vmem_report(NULL, stdout), PL_EINVAL);
    cr_expect_eq(pl_vmem_report(&rep, NULL), PL_EINVAL);
    cr_expect_eq(pl_vmem_report(&rep, stdout), PL_EINVAL, "a report without a chip");
}

Test(vmem_report, tilesim_run_prints_it_when_the_call_does_not_fit_and_with_the_flag)
{
    th_run r = TH_RUN("run", "matmul", "--set", "M=4096", "--set", "N=4096", "--set", "K=4096", "--set", "bm=2048",
                      "--set", "bn=2048", "--set", "bk=1024", "--cost-only");
    cr_expect_eq(r.status, 2, "rejected (M4)");
    cr_expect(strstr(r.err, "Ran out of memory in memory space vmem. Used 80.00M of 16.00M vmem."), "%s", r.err);
    cr_expect(strstr(r.err, "Shape: f32[2,2048,2048]{2,1,0:T(8,128)}"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("run", "matmul", "--cost-only", "--vmem-report");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "Scoped vmem of matmul on v5e: used 1.75M of 16.00M vmem."), "%s", r.out);
    cr_expect(strstr(r.out, "Shape: f32[256,256]{1,0:T(8,128)}"), "the accumulator: %s", r.out);
    th_run_free(&r);
}
