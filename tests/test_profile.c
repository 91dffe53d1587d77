/* tests/test_profile.c: the op profile of a run (pl_report.profile, issue 14):
 * rows named by the pl_ / pltpu_ function that made them, their times
 * adding up to the report's time on every built-in kernel and chip (P9 for
 * the overhead row, G4 for the last core's timeline), FLOPs and bytes as the
 * ops logged them, the cap on rows; the VMEM bandwidth of the presets; the
 * trace's overhead slices (P9). The command is in test_profile_cli.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/matmul.h"
#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"
#include "../sim/call/profile.h"
#include "helpers.h"
#include "test_run_helpers.h"
#include "test_mesh_helpers.h"

#define run_kernel th_run_builtin

static const pl_profile_row *row_named(const pl_report *r, const char *name)
{
    for (int i = 0; i < r->n_profile; i++)
        if (strcmp(r->profile[i].name, name) == 0) return &r->profile[i];
    return NULL;
}

/* The rows that are not overlapped copies, summed. */
static double timeline_sum(const pl_report *r)
{
    double s = 0;
    for (int i = 0; i < r->n_profile; i++) s += r->profile[i].overlapped ? 0 : r->profile[i].time_s;
    return s;
}

/* compute ops + step overhead + exposed DMA waits (+ remote waits) = time_s,
 * on the timeline of the core that finished last (G4), for every built-in
 * kernel on a one-core chip and on megacore chips. */
Test(profile, rows_add_up_to_the_report_time_on_every_builtin_kernel)
{
    const char *chips[] = {"v5e", "v5p", "v4", "v7x"};
    for (int i = 0; i < ex_kernel_count(); i++)
        for (int c = 0; c < 4; c++) {
            static const char *const fp8[] = {"wdtype=f8e4m3", NULL}; /* v7x has no int8 MXU path (T10) */
            int qm = strcmp(ex_kernel_at(i)->name, "quant_matmul") == 0, q = qm && strcmp(chips[c], "v7x") == 0;
            if (qm && strcmp(chips[c], "v4") == 0) continue; /* neither int8 nor fp8 on v4's MXU (T10) */
            pl_report *r = run_kernel(ex_kernel_at(i)->name, chips[c], q ? fp8 : NULL);
            cr_assert_gt(r->n_profile, 1, "%s on %s: no profile", ex_kernel_at(i)->name, chips[c]);
            double sum = timeline_sum(r);
            cr_expect(fabs(sum - r->time_s) <= 1e-9 * r->time_s, "%s on %s: rows add up to %.12g s, time_s %.12g s",
                      ex_kernel_at(i)->name, chips[c], sum, r->time_s);
            const pl_profile_row *o = row_named(r, "step overhead (P9)");
            cr_assert(o, "%s: no overhead row (P9)", ex_kernel_at(i)->name);
            cr_expect_float_eq(o->time_s, r->core_overhead_s, 1e-12, "the last core's overhead (P9)");
            cr_expect_eq(o->count, r->steps, "one overhead per grid step (P9)");
            double ops = 0;
            for (int k = 0; k < r->n_profile; k++)
                if (r->profile[k].cat <= PL_PROF_SCALAR) ops += r->profile[k].time_s;
            cr_expect(fabs(ops - r->core_compute_s) <= 1e-9 * r->time_s, "%s on %s: ops %.12g, the core's compute %.12g",
                      ex_kernel_at(i)->name, chips[c], ops, r->core_compute_s);
            free(r);
        }
}

/* Each op's row carries the name of the function that made it, its unit
 * and what the op logged: 2mnk for pl_dot, (m*k + k*n + m*n) elements of
 * VMEM traffic, and the busy time is what the timing model charged. */
Test(profile, matmul_rows_are_named_by_function_with_flops_and_vmem_bytes)
{
    const char *sets[] = {"M=512", "N=512", "K=512", "bm=256", "bn=256", "bk=128", NULL};
    pl_report *r = run_kernel("matmul", "v5e", sets);
    const pl_profile_row *dot = row_named(r, "pl_dot");
    cr_assert(dot, "no pl_dot row");
    cr_expect_eq(dot->cat, PL_PROF_MXU);
    cr_expect_eq(dot->count, r->steps, "one pl_dot per step");
    cr_expect_float_eq(dot->flops, r->mxu_flops, 1e-6 * r->mxu_flops);
    cr_expect_float_eq(dot->flops, 2.0 * 512 * 512 * 512, 1.0);
    cr_expect_float_eq(dot->vmem_bytes, (double)r->steps * 4 * (256 * 128 + 128 * 256 + 256 * 256), 1.0,
                       "f32: (m*k + k*n + m*n) * 4 bytes per pl_dot");
    cr_expect_float_eq(dot->busy_s, r->mxu_s, 1e-15, "the MXU time the report counts");
    double dma_bytes = 0;
    for (int i = 0; i < r->n_profile; i++) {
        const pl_profile_row *w = &r->profile[i];
        if (w->cat != PL_PROF_DMA) continue;
        cr_expect(w->overlapped && w->time_s == 0, "%s: copies overlap compute, adding nothing", w->name);
        cr_expect_gt(w->busy_s, 0, "%s: the copies' time in flight", w->name);
        dma_bytes += w->hbm_bytes;
    }
    cr_expect_float_eq(dma_bytes, (double)r->hbm_bytes, 0.5, "the DMA rows move the report's HBM bytes");
    cr_expect(row_named(r, "copy in: x") || row_named(r, "copy in: a") || r->n_profile > 3, "pipeline rows");
    free(r);
}

/* Transcendentals are EUP rows, elementwise ops VPU rows, by function. */
Test(profile, flash_attention_has_eup_and_vpu_rows_by_function)
{
    pl_report *r = run_kernel("flash_attention", "v5e", NULL);
    const pl_profile_row *e = row_named(r, "pl_exp");
    cr_assert(e, "no pl_exp row");
    cr_expect_eq(e->cat, PL_PROF_EUP);
    /* exp(s - m) and exp(m - m_new) take the values the subtraction before
     * each left in registers (kern_vmem_read): fused, no VMEM bytes; s
     * itself is read again after the row max, which pays its store and load */
    cr_expect_eq(e->vmem_bytes, 0);
    const pl_profile_row *sub = row_named(r, "pl_sub_col");
    cr_assert(sub, "no pl_sub_col row");
    cr_expect_gt(sub->vmem_bytes, 0);
    int vpu = 0;
    for (int i = 0; i < r->n_profile; i++) vpu += r->profile[i].cat == PL_PROF_VPU;
    cr_expect_geq(vpu, 2, "several VPU functions");
    for (int i = 0; i < r->n_profile; i++)
        cr_expect(strncmp(r->profile[i].name, "pl_", 3) == 0 || r->profile[i].cat >= PL_PROF_DMA,
                  "op row '%s' is not a pl_ function", r->profile[i].name);
    free(r);
}

/* Manual copies are rows of the function that started them. */
Test(profile, paged_attention_manual_copies_are_a_row_of_their_own)
{
    pl_report *r = run_kernel("paged_attention", "v5e", NULL);
    const pl_profile_row *c = row_named(r, "pltpu_copy_start");
    cr_assert(c, "no pltpu_copy_start row");
    cr_expect_eq(c->count, r->dma_copies);
    cr_expect(c->overlapped);
    cr_expect_gt(c->busy_s, 0);
    free(r);
}

/* Past PL_MAX_PROFILE rows, new ops share the last row, which counts them. */
Test(profile, rows_past_the_cap_share_the_last_row)
{
    pl_report *r = calloc(1, sizeof *r);
    char name[32];
    for (int i = 0; i < PL_MAX_PROFILE + 10; i++) {
        snprintf(name, sizeof name, "pl_op%d", i);
        sim_profile_add(r, PL_PROF_VPU, name, 2, 1e-6, 10, 0, 0);
    }
    cr_expect_eq(r->n_profile, PL_MAX_PROFILE);
    cr_expect_str_eq(r->profile[PL_MAX_PROFILE - 1].name, SIM_PROFILE_OTHER);
    cr_expect_eq(r->profile[PL_MAX_PROFILE - 1].count, 2 * 11);
    cr_expect_eq(r->profile_other, 2 * 11);
    double busy = 0;
    for (int i = 0; i < r->n_profile; i++) busy += r->profile[i].busy_s;
    cr_expect_float_eq(busy, (PL_MAX_PROFILE + 10) * 1e-6, 1e-12, "nothing is lost past the cap");
    pl_report *to = calloc(1, sizeof *to);
    sim_profile_merge(to, r);
    sim_profile_merge(to, r);
    cr_expect_eq(to->n_profile, PL_MAX_PROFILE);
    cr_expect_eq(to->profile_other, 4 * 11, "merged cores' ops past the cap");
    free(r);
    free(to);
}

/* A full table's "(other ops)" row is compute time, which adds up to the
 * total: an overlapped copy merged into it must not mark it overlapped
 * (its time would drop out of the sum). */
Test(profile, a_copy_past_the_cap_does_not_make_the_other_row_overlapped)
{
    pl_report *to = calloc(1, sizeof *to), *from = calloc(1, sizeof *from);
    char name[32];
    for (int i = 0; i < PL_MAX_PROFILE + 1; i++) {
        snprintf(name, sizeof name, "pl_op%d", i);
        sim_profile_add(to, PL_PROF_VPU, name, 1, 1e-6, 1, 0, 0);
    }
    int other = PL_MAX_PROFILE - 1;
    cr_assert_str_eq(to->profile[other].name, SIM_PROFILE_OTHER);
    to->profile[other].time_s = 2e-6;
    sim_profile_add(from, PL_PROF_DMA, "copy in: x", 4, 5e-6, 0, 0, 4096);
    cr_assert(from->profile[0].overlapped, "a copy row is overlapped");
    sim_profile_merge(to, from);
    cr_expect_eq(to->n_profile, PL_MAX_PROFILE);
    cr_expect_not(to->profile[other].overlapped, "the (other ops) row still counts towards the total");
    cr_expect_float_eq(to->profile[other].time_s, 2e-6, 1e-15);
    free(to);
    free(from);
}

/* Sorted for a reader: the longest first, overlapped copies last. */
Test(profile, order_puts_the_longest_first_and_copies_last)
{
    pl_report *r = run_kernel("rmsnorm", "v5e", NULL);
    int order[PL_MAX_PROFILE], n = pl_profile_order(r, order);
    cr_assert_eq(n, r->n_profile);
    for (int i = 1; i < n; i++) {
        const pl_profile_row *a = &r->profile[order[i - 1]], *b = &r->profile[order[i]];
        cr_expect(!a->overlapped || b->overlapped, "an overlapped row before a timeline row");
        if (a->overlapped == b->overlapped && !a->overlapped) cr_expect_geq(a->time_s, b->time_s);
    }
    free(r);
}

/* The presets' VMEM bandwidth is far above HBM's (22x a core's share of the
 * spec sheet's figure), and a chip file sets it with vmem_gbps. */
Test(profile, vmem_bandwidth_is_a_chip_field)
{
    static const double spec_gbps[] = {1200, 819, 2765, 1638, 3690}; /* v4 .. v7x (a device) */
    cr_assert_eq(pl_chip_count(), 5);
    for (int i = 0; i < pl_chip_count(); i++) {
        const pl_chip *c = pl_chip_at(i);
        double share = spec_gbps[i] * 1e9 / c->cores_per_device;
        cr_expect_float_eq(c->vmem_bw, 22 * share, 1e-3 * share, "%s: 22x a core's HBM share", c->name);
    }
    char path[] = "/tmp/tilesim_chip_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "base = v5e\nname = fastvmem\nvmem_gbps = 50000\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    pl_chip c;
    char err[256];
    cr_assert_eq(pl_chip_load(path, &c, err, sizeof err), PL_OK, "%s", err);
    cr_expect_float_eq(c.vmem_bw, 50e12, 1.0);
    unlink(path);
}

/* An op under the VMEM roof is VMEM-bound: rmsnorm's elementwise ops do a
 * few FLOPs per 8 bytes, far below the VPU's peak over VMEM's bandwidth. */
Test(profile, low_intensity_vpu_ops_are_vmem_bound)
{
    pl_report *r = run_kernel("add", "v5e", NULL);
    const pl_profile_row *a = row_named(r, "pl_add");
    cr_assert(a, "no pl_add row");
    pl_profile_rates p = pl_profile_rates_of(r, a);
    cr_expect_float_eq(p.intensity, 1.0 / 12, 1e-9, "one FLOP per three f32 elements");
    cr_expect(p.vmem_bound, "intensity %g x VMEM %g B/s < VPU %g FLOP/s", p.intensity, r->chip->vmem_bw,
              r->chip->vpu_flops);
    cr_expect_float_eq(p.peak_flops, r->chip->vpu_flops, 1.0);
    cr_expect_float_eq(p.peak_bw, r->chip->vmem_bw, 1.0);
    free(r);
}

/* The trace names the per-step overhead (P9): one slice per step on the
 * kernel track, the chip's overhead long, ending before its step's kernel. */
Test(profile, trace_labels_the_step_overhead)
{
    char path[] = "/tmp/tilesim_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    mm_params p;
    pl_call call;
    mm_call(&call, &p, 256, 256, 512, 128, 128, 128);
    pl_array args[2] = {{.dtype = PL_F32, .rank = 2, .shape = {256, 512}}, {.dtype = PL_F32, .rank = 2, .shape = {512, 256}}};
    pl_array out = {.dtype = PL_F32, .rank = 2, .shape = {256, 256}};
    pl_options opt = {.trace_path = path, .cost_only = 1};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &rep), PL_OK, "%s", rep.error);
    const pl_chip *chip = pl_chip_default();
    json_t *doc = th_json_file(path), *ev = json_object_get(doc, "traceEvents"), *e;
    size_t i;
    int overheads = 0, prologues = 0, epilogues = 0;
    double last_end = -1, drawn = 0, end = 0;
    json_array_foreach(ev, i, e) {
        const char *name = th_json_str(e, "name");
        if (strcmp(th_json_str(e, "ph"), "X") == 0) {
            double e_end = th_json_num(e, "ts") + th_json_num(e, "dur");
            if (e_end > end) end = e_end;
        }
        int pro = !strcmp(name, "prologue"), epi = !strcmp(name, "epilogue: write-back waits");
        prologues += pro, epilogues += epi;
        if (pro || epi) drawn += th_json_num(e, "dur");
        if (pro) cr_expect_float_eq(th_json_num(e, "dur"), chip->prologue_s * 1e6, 1e-5);
        if (strcmp(name, "step overhead (P9)") != 0) continue;
        overheads++;
        drawn += th_json_num(e, "dur");
        cr_expect_str_eq(th_json_str(e, "ph"), "X");
        cr_expect_eq(th_json_num(e, "tid"), 0, "on the kernel's track");
        /* the last write-back's wait, the fixed cost, then a descriptor for each copy the step starts (x and
         * y; step 0 also the first) */
        cr_expect_geq(th_json_num(e, "dur"), chip->step_overhead_s * 1e6 - 1e-5);
        cr_expect_leq(th_json_num(e, "dur"), (chip->step_overhead_s + 5 * chip->dma_issue_s) * 1e6 + 1e-5);
        cr_expect_geq(th_json_num(e, "ts"), last_end - 1e-6, "overheads follow each other");
        last_end = th_json_num(e, "ts") + th_json_num(e, "dur");
    }
    cr_expect_eq(overheads, rep.steps, "one overhead slice per grid step (P9)");
    cr_expect_eq(prologues, 1);
    cr_expect_eq(epilogues, 1, "the last write-back's wait");
    /* the track ends when the report's time does, and draws the report's overhead but the semaphore waits
     * before each step's kernel (one for each copy it waits for) and the write-backs' descriptors after it:
     * those are the short gaps around each step */
    cr_expect_float_eq(end, rep.time_s * 1e6, 1e-5);
    double waits = (double)(rep.op[0].copies + rep.op[1].copies + rep.op[2].writebacks) * chip->dma_issue_s * 1e6;
    cr_expect_leq(drawn, rep.overhead_s * 1e6 + 1e-5, "drew %g of %g us", drawn, rep.overhead_s * 1e6);
    cr_expect_geq(drawn, rep.overhead_s * 1e6 - waits - 1e-5, "drew %g of %g us", drawn, rep.overhead_s * 1e6);
    json_decref(doc);
    unlink(path);
}

/* A mesh device's rows add up to its own time_s, and its copies to other
 * devices are the row of the function that started them (M11). */
Test(profile, a_ring_all_gather_device_adds_up_and_names_its_remote_copies)
{
    pl_options opt = {.cost_only = 1};
    mh_ring r;
    mh_ring_run(&r, 4, 64, 1024, &opt, NULL, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < 4; d++) {
        const pl_report *rep = &r.reps[d];
        double sum = timeline_sum(rep);
        cr_expect(fabs(sum - rep->time_s) <= 1e-9 * rep->time_s, "device %d: rows %.12g, time_s %.12g", d, sum,
                  rep->time_s);
        const pl_profile_row *c = row_named(rep, "pltpu_remote_copy_start");
        cr_assert(c, "device %d: no row for its remote copies", d);
        cr_expect(c->overlapped && c->count == rep->ici_copies && c->hbm_bytes == (double)rep->ici_bytes,
                  "device %d: %lld copies, %g bytes over ICI", d, (long long)c->count, c->hbm_bytes);
    }
    mh_ring_free(&r);
}

/* Device 0 computes, then sends x to device 1, which only waits for it. */
static void busy_sender(pl_ctx *c, pl_ref *refs)
{
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[3], 0),
                                                        pl_at(c, refs[3], 1), 1);
    if (pltpu_device_id(c) == 0) {
        for (int i = 0; i < 16; i++) pl_dot(c, refs[2], refs[2], refs[2], 0);
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    } else {
        pltpu_remote_copy_wait_recv(c, &cp);
    }
}

/* The time a device waits for another is a row of its own, "waiting for
 * other devices", equal to the report's remote_wait_s, in the total. */
Test(profile, a_mesh_device_waiting_for_another_has_a_row_for_it)
{
    pl_call call = {
        .name = "busy_sender", .kernel = busy_sender, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, 512, 512), PLTPU_SEMAPHORE_DMA(2)},
    };
    pl_options opt = {.cost_only = 1};
    mh_run r;
    mh_alloc(&r, "line:2", 8, 128, 8, 128);
    mh_call(&r, &call, &opt);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    const pl_profile_row *w = row_named(&r.reps[1], "waiting for other devices");
    cr_assert(w, "device 1 waited %g s but has no row", r.reps[1].remote_wait_s);
    cr_expect_eq(w->cat, PL_PROF_REMOTE_WAIT);
    cr_expect_gt(w->time_s, r.reps[0].compute_s * 0.9, "it waits while device 0 computes");
    cr_expect_float_eq(w->time_s, r.reps[1].remote_wait_s, 1e-15, "the report's remote wait");
    for (int d = 0; d < 2; d++)
        cr_expect(fabs(timeline_sum(&r.reps[d]) - r.reps[d].time_s) <= 1e-9 * r.reps[d].time_s, "device %d", d);
    cr_expect(!row_named(&r.reps[0], "waiting for other devices"), "device 0 waits for nobody");
    mh_free(&r);
}

/* A failed call's profile says why, in the table and in the JSON. */
Test(profile, a_failed_call_prints_its_error)
{
    pl_report *r = calloc(1, sizeof *r);
    r->status = PL_EINVAL;
    snprintf(r->error, sizeof r->error, "the grid is empty");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pl_profile_print(r, f);
    pl_profile_json(r, f);
    cr_expect_eq(pl_roofline_run_svg(r, "x", f), -1, "no roofline of a failed call");
    fclose(f);
    cr_expect(strstr(text, "op profile: the call failed: the grid is empty"), "%s", text);
    cr_expect(strstr(text, "\"status\":-") && strstr(text, "\"error\":\"the grid is empty\""), "%s", text);
    pl_profile_print(NULL, stdout); /* nothing, no crash */
    free(text);
    free(r);
}
