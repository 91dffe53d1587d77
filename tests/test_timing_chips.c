/* tests/test_timing_chips.c: the chip presets (the figures of CHIPS.md) and
 * what-if chip files: how they override a preset and how their errors read. */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "helpers.h"
#include "test_timing_helpers.h"

/* ---- chips -------------------------------------------------------------------- */

Test(chips, presets_carry_the_chips_md_figures)
{
    cr_assert_eq(pl_chip_count(), 5);
    const pl_chip *d = pl_chip_default();
    cr_assert_str_eq(d->name, "v5e");
    cr_assert_eq(d->bf16_flops, 197e12);
    cr_assert_eq(d->hbm_bw, 819e9);
    cr_assert_eq(d->vmem_bytes, 128LL << 20);
    cr_assert_eq(d->vmem_default_limit, 16LL << 20);
    const pl_chip *v5p = pl_chip_find("v5p"), *v7x = pl_chip_find("v7x"), *v6e = pl_chip_find("v6e");
    cr_assert_eq(v5p->cores_per_device, 2, "v5p is megacore");
    cr_assert_eq(v5p->bf16_flops, 459e12 / 2, "per TensorCore");
    cr_assert_eq(v7x->devices_per_chip, 2);
    cr_assert_eq(v7x->hbm_bw, 3207e9, "a v7x device's DMA rate (OpenXLA), under half the chip's 7380 GB/s");
    cr_assert_eq(v7x->sublanes_16bit, 16);
    cr_assert_eq(v6e->mxu_width, 256);
    cr_assert_null(pl_chip_find("v9z"));
    for (int i = 0; i < pl_chip_count(); i++) {
        const pl_chip *c = pl_chip_at(i);
        /* v4, v5e, v5p: the step cost calibrated on the Pallas matmul guide's
         * v5e timings; v6e and v7x take OpenXLA's measured DMA latency and no
         * fixed step cost (docs/CHIPS.md) */
        int measured = !strcmp(c->name, "v6e") || !strcmp(c->name, "v7x");
        cr_assert_float_eq(c->step_overhead_s, measured ? 0 : 0.15e-6, 1e-12, "%s", c->name);
        cr_assert_float_eq(c->dma_latency_s, !measured ? 0.2e-6 : c->name[1] == '6' ? 0.628e-6 : 0.692e-6, 1e-12,
                           "%s", c->name);
        /* a small step (its overhead, two descriptors and two waits, one MXU
         * fill) outlasts a copy's latency, or tiny blocks could not hide it */
        double small_step = c->step_overhead_s + 4 * c->dma_issue_s + c->mxu_fill_cycles / c->clock_hz;
        if (!measured) cr_assert_lt(c->dma_latency_s, small_step, "%s: latency must hide under a step", c->name);
        cr_assert_leq(c->vmem_default_limit, c->vmem_bytes, "%s", c->name);
        /* critical intensity as CHIPS.md quotes it: 240 on v5e, 560 on v6e
         * (669 at the 1373 GB/s a DMA gets there), ... */
        double crit = c->bf16_flops * c->cores_per_device / c->hbm_bw;
        cr_assert(crit > 150 && crit < 700, "%s: critical intensity %g", c->name, crit);
    }
}

Test(chips, a_what_if_chip_file_overrides_a_preset)
{
    pl_chip c;
    char err[512];
    const char *text = "# v5e with twice the bandwidth\nbase = v5e\nname = v5e-2x\nhbm_gbps = 1638 # doubled\n"
                       "step_overhead_us = 0.1\n";
    cr_assert_eq(pl_chip_parse(text, "what-if", &c, err, sizeof err), PL_OK, "%s", err);
    cr_assert_str_eq(c.name, "v5e-2x");
    cr_assert_eq(c.hbm_bw, 1638e9);
    cr_assert_eq(c.step_overhead_s, 0.1e-6);
    cr_assert_eq(c.bf16_flops, 197e12, "unset figures come from the base");

    pl_report fast = copy_cost(64, 512, 1024, "v5e");
    pl_options opt = {.chip_spec = &c, .cost_only = 1};
    pl_call call = th_copy_call_2d(64 * 512, 1024, 512, 1024);
    pl_array in = PL_ARRAY(NULL, PL_F32, 64 * 512, 1024), out = PL_ARRAY(NULL, PL_F32, 64 * 512, 1024);
    pl_report r;
    cr_assert_eq(pl_pallas_call(&call, &in, &out, &opt, &r), PL_OK, "%s", r.error);
    assert_near(r.time_s, fast.time_s / 2, 0.05, "HBM-bound copy on a chip with twice the bandwidth");
}

Test(chips, chip_file_errors_name_file_line_and_key)
{
    pl_chip c;
    char err[512];
    cr_assert_eq(pl_chip_parse("base = v5e\nhbm_gbs = 100\n", "my.chip", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "my.chip:2") && strstr(err, "unknown key 'hbm_gbs'") && strstr(err, "hbm_gbps"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps = fast\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "f:1") && strstr(err, "hbm_gbps = 'fast'"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps = -3\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("hbm_gbps = 0x1p-3\n", "f", &c, err, sizeof err), PL_EINVAL); /* strtod took it */
    cr_assert(strstr(err, "hbm_gbps = '0x1p-3'"), "%s", err);
    cr_assert_eq(pl_chip_parse("mxu_width = 128.5\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "whole number"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps 100\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "expected 'key = value'"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps = 100\nbase = v4\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "base must be the first key"), "%s", err);
    cr_assert_eq(pl_chip_parse("base = v99\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("vmem_mib = 8\nvmem_limit_mib = 16\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "rule M4"), "%s", err);
    /* a figure given twice: which did the user mean? (the last was kept, silently) */
    cr_assert_eq(pl_chip_parse("base = v6e\nhbm_gbps = 1000\n\nhbm_gbps = 2000\n", "d.chip", &c, err, sizeof err),
                 PL_EINVAL);
    cr_assert(strstr(err, "d.chip:4") && strstr(err, "hbm_gbps given twice (first at line 2)"), "%s", err);
    cr_assert_eq(pl_chip_load("/nonexistent/dir/x.chip", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "/nonexistent/dir/x.chip: cannot open"), "%s", err);
}

/* NULL where a pointer belongs is an error, never a crash. */
Test(chips, null_arguments_are_errors)
{
    pl_chip c;
    char err[256];
    cr_assert_eq(pl_chip_parse(NULL, "x", &c, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("base = v5e\n", "x", NULL, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("bogus = 1\n", NULL, &c, NULL, 0), PL_EINVAL, "no message buffer is fine");
    cr_assert_eq(pl_chip_load(NULL, &c, err, sizeof err), PL_EINVAL);
    pl_report_print(NULL, stdout);
    pl_report_json(NULL, stdout);
}

/* A chip file saved by an editor that writes a UTF-8 byte order mark reads
 * as the same file without it: the mark is not part of the first key. */
Test(chips, a_byte_order_mark_is_not_part_of_the_first_key)
{
    char path[] = "/tmp/tilesim_bom_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char text[] = "\xEF\xBB\xBF" "base = v6e\r\nname = v6e-bom\r\nhbm_gbps = 1000\r\n";
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    pl_chip c;
    char err[512];
    int rc = pl_chip_load(path, &c, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, PL_OK, "%s", err);
    cr_expect_str_eq(c.name, "v6e-bom");
    cr_expect_eq(c.hbm_bw, 1000e9);
    cr_expect_eq(c.mxu_width, 256, "the base's figures");
}
