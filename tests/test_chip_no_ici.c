/* tests/test_chip_no_ici.c: a chip file with ici_links = 0 (issue 21) is a
 * single-device chip: a mesh of more than one device on it is refused
 * naming ici_links (pl_mesh_call), and the review weighs 1 device only
 * instead of recommending a ring the chip cannot form. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/review_defs.h"
#include "../examples/kernels/ring_allreduce.h"
#include "run.h"

static pl_chip no_ici(void)
{
    pl_chip c;
    char err[256];
    cr_assert_eq(pl_chip_parse("base = v5e\nname = lonely\nici_links = 0\n", "lonely.chip", &c, err, sizeof err),
                 PL_OK, "%s", err);
    return c;
}

/* A real 2-device ring all-reduce on chip: its status and the mesh report. */
static int ring_of_two(const pl_chip *chip, pl_mesh_report *mr)
{
    pl_mesh mesh;
    char msg[256];
    cr_assert_eq(pl_mesh_parse("ring:2", &mesh, msg, sizeof msg), PL_OK, "%s", msg);
    ar_shape s = {.devices = 2, .rows = 32, .cols = 128};
    ar_data d;
    cr_assert_eq(ar_alloc(&d, &s, 1, 42), PL_OK);
    pl_call call;
    ar_call(&call, &s, NULL);
    pl_options opt = {.chip_spec = chip};
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, mr, NULL);
    ar_free(&d);
    return rc;
}

Test(chip_no_ici, a_mesh_of_two_devices_on_a_chip_without_ici_is_refused_naming_ici_links)
{
    pl_chip c = no_ici();
    pl_mesh_report mr;
    cr_expect_eq(ring_of_two(&c, &mr), PL_EINVAL, "%s", mr.error);
    cr_expect(strstr(mr.error, "pl_mesh_call: chip lonely has ici_links = 0") && strstr(mr.error, "2 devices"),
              "%s", mr.error);
    cr_expect_eq(ring_of_two(pl_chip_find("v5e"), &mr), PL_OK, "the same ring on v5e runs: %s", mr.error);
}

static const pl_model tiny = {.name = "tiny", .layers = 2, .d_model = 256, .heads = 8, .kv_heads = 2,
                              .head_dim = 128, .ffn = 512, .ffn_kind = PL_FFN_SWIGLU, .vocab = 1024, .params = 2.5e6};

Test(chip_no_ici, the_review_weighs_one_device_only_on_a_chip_without_ici)
{
    pl_chip c = no_ici();
    pl_review_brief b = {.model = &tiny, .chip = &c, .prompt = 256, .context = 512, .ttft_s = 10, .tpot_s = 10,
                         .n_chips = 2, .chips = {1, 2}, .n_quant = 1, .quant = {PL_W_BF16}, .n_batch = 1,
                         .batch = {4}};
    pl_review_kernels k = ex_review_kernels();
    pl_review_result r;
    char err[512];
    cr_assert_eq(pl_review_run(&b, &k, &r, err, sizeof err), PL_OK, "%s", err);
    cr_assert_eq(r.n_configs, 2);
    cr_expect_eq(r.best, 0, "the single device is recommended");
    cr_expect_eq(r.configs[1].verdict, PL_RV_ILLEGAL, "%s", r.configs[1].reason);
    cr_expect(strstr(r.configs[1].reason, "ici_links = 0"), "%s", r.configs[1].reason);
    pl_review_free(&r);
}

Test(chip_no_ici, tilesim_review_with_such_a_chip_file_recommends_one_device)
{
    char chip[64], model[64];
    th_temp_file(chip, "base = v5e\nname = lonely\nici_links = 0\n");
    th_temp_file(model, "name = small\nlayers = 2\nd_model = 256\nheads = 8\nkv_heads = 2\nhead_dim = 128\n"
                        "ffn = 512\nffn_kind = gelu\nvocab = 1024\nparams = 2.5M\n");
    th_run r = TH_RUN("review", "--model", model, "--chip-file", chip, "--prompt", "256", "--context", "512",
                      "--ttft", "1s", "--tpot", "1s", "--batch", "1,4");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "recommended: 1 device (1.0 chip of lonely)"), "%s", r.out);
    cr_expect(strstr(r.out, "weighed 12 configurations"), "TP 1 only, 2 dtypes x 3 KV caches x 2 batches: %s", r.out);
    th_run_free(&r);
    unlink(chip);
    unlink(model);
}
