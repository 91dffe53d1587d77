/* tests/test_ops_more_cost.c: the rest of suite ops_more (issue 10): iota
 * with program_id offsets building masks that pl_where and pl_load (V6)
 * share; the ops' errors (PL_ESHAPE, PL_EDTYPE, PL_EINVAL with messages);
 * the work each op reports (VPU FLOPs, EUP elements) and the time it takes;
 * and element access (pl_get / pl_set) timed as scalar-unit work.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- iota, masks, where and masked loads across a grid ------------------------ */

#define ROWS 20  /* the array's rows: the last (8, 128) block is ragged */
#define KEEP 12  /* rows kept by the mask: global row < KEEP */

/* o1 = where(row < KEEP, x, -1), o2 = load(x, mask=row < KEEP, other=-2),
 * o3[i, j] = j (iota along the lanes) as i32. Mask built from program_id. */
static void mask_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], o1 = refs[1], o2 = refs[2], o3 = refs[3], mask = refs[4], fill = refs[5];
    pl_iota(c, mask, 0, pl_program_id(c, 0) * 8);
    pl_cmp_scalar(c, mask, mask, PL_LT, KEEP);
    pl_fill(c, fill, -1);
    pl_where(c, o1, mask, x, fill);
    pl_load(c, o2, x, &mask, -2);
    pl_iota(c, o3, 1, 0);
}

Test(ops_more, iota_with_program_id_builds_masks_for_where_and_masked_loads)
{
    float *x = th_f32_seq(ROWS * 128), *o1 = th_f32_fill(ROWS * 128, 0), *o2 = th_f32_fill(ROWS * 128, 0);
    int32_t *o3 = calloc(ROWS * 128, sizeof *o3);
    pl_array in = PL_ARRAY(x, PL_F32, ROWS, 128);
    pl_array outs[3] = {PL_ARRAY(o1, PL_F32, ROWS, 128), PL_ARRAY(o2, PL_F32, ROWS, 128),
                        PL_ARRAY(o3, PL_I32, ROWS, 128)};
    pl_call call = {.name = "masks", .kernel = mask_kernel, .grid_rank = 1, .grid = {3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, -1), 8, 128)}, .n_out = 3,
                    .out = {PL_BLOCK(PL_MAP(0, -1), 8, 128), PL_BLOCK(PL_MAP(0, -1), 8, 128),
                            PL_BLOCK(PL_MAP(0, -1), 8, 128)},
                    .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_I32, 8, 128), PLTPU_VMEM(PL_F32, 8, 128)}};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, outs, NULL, &rep), &rep);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < 128; j++) {
            float v = x[i * 128 + j];
            cr_assert_eq(o1[i * 128 + j], i < KEEP ? v : -1.0f, "where: (%d, %d) is %g", i, j, o1[i * 128 + j]);
            cr_assert_eq(o2[i * 128 + j], i < KEEP ? v : -2.0f, "load (V6): (%d, %d) is %g", i, j, o2[i * 128 + j]);
            cr_assert_eq(o3[i * 128 + j], j, "iota along dim 1: (%d, %d) is %d", i, j, o3[i * 128 + j]);
        }
    free(x), free(o1), free(o2), free(o3);
}

static void iota3_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_iota(c, refs[0], 1, 5);
    pl_iota(c, refs[1], 0, -1); /* integers, and the leading dimension */
}

Test(ops_more, iota_counts_along_inner_and_leading_dimensions_of_a_rank3_block)
{
    float *o = th_f32_fill(2 * 3 * 4, 0);
    int32_t k[2 * 3 * 4] = {0};
    pl_array outs[2] = {PL_ARRAY(o, PL_F32, 2, 3, 4), PL_ARRAY(k, PL_I32, 2, 3, 4)};
    pl_call call = {.name = "iota3", .kernel = iota3_kernel, .n_out = 2};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, NULL, outs, NULL, &rep), &rep);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < 4; j++) {
                int at = (a * 3 + b) * 4 + j;
                cr_assert_eq(o[at], 5.0f + b, "dim 1 at (%d, %d, %d) is %g", a, b, j, o[at]);
                cr_assert_eq(k[at], a - 1, "dim 0 at (%d, %d, %d) is %d", a, b, j, k[at]);
            }
    free(o);
}

/* ---- errors ---------------------------------------------------------------------- */

typedef enum { E_LOG_INT, E_DIV_SHAPE, E_WHERE_MASK, E_SUM_DST, E_MAX_AXIS, E_IOTA_DIM, E_CMP_OP, E_CAST_SHAPE,
               E_REDUCE_RANK } err_case;

/* refs: f32 (4, 5) 'x', i32 (4, 5) 'k', f32 (3, 5) 'y', f32 (4, 5) out, f32 (4, 1) out, f32 (20,) out */
static void err_kernel(pl_ctx *c, pl_ref *refs)
{
    const err_case *e = pl_kernel_user(c);
    pl_ref x = refs[0], k = refs[1], y = refs[2], o = refs[3], col = refs[4], flat = refs[5];
    pl_fill(c, o, 0), pl_fill(c, col, 0), pl_fill(c, flat, 0);
    switch (*e) {
    case E_LOG_INT: pl_log(c, k, k); break;
    case E_DIV_SHAPE: pl_div(c, o, x, y); break;
    case E_WHERE_MASK: pl_where(c, o, pl_ds(c, k, 0, 0, 2), x, x); break;
    case E_SUM_DST: pl_reduce_sum(c, col, x, 0); break;
    case E_MAX_AXIS: pl_reduce_max(c, col, x, 2); break;
    case E_IOTA_DIM: pl_iota(c, o, 2, 0); break;
    case E_CMP_OP: pl_cmp(c, k, x, x, (pl_cmp_op)9); break;
    case E_CAST_SHAPE: pl_cast(c, k, y); break;
    case E_REDUCE_RANK: pl_reduce_sum(c, col, flat, 1); break;
    }
}

static void expect_error(err_case e, int code, const char *const *subs)
{
    static err_case user;
    user = e;
    float *x = th_f32_fill(20, 1), *y = th_f32_fill(15, 1), *o = th_f32_fill(20, 0), *col = th_f32_fill(4, 0);
    float *flat = th_f32_fill(20, 0);
    int32_t k[20] = {0};
    pl_array args[3] = {PL_ARRAY(x, PL_F32, 4, 5), PL_ARRAY(k, PL_I32, 4, 5), PL_ARRAY(y, PL_F32, 3, 5)};
    pl_array outs[3] = {PL_ARRAY(o, PL_F32, 4, 5), PL_ARRAY(col, PL_F32, 4, 1), PL_ARRAY(flat, PL_F32, 20)};
    pl_call call = {.name = "errs", .kernel = err_kernel, .user = &user, .n_in = 3, .n_out = 3,
                    .in = {{.name = "x"}, {.name = "k"}, {.name = "y"}}};
    pl_report rep;
    th_expect_error(pl_pallas_call(&call, args, outs, NULL, &rep), &rep, code, subs);
    free(x), free(y), free(o), free(col), free(flat);
}

Test(ops_more, errors_name_the_op_the_refs_and_the_rule)
{
    expect_error(E_LOG_INT, PL_EDTYPE, (const char *[]){"pl_log", "'k'", "float", NULL});
    expect_error(E_DIV_SHAPE, PL_ESHAPE, (const char *[]){"pl_div", "'y'", "(3, 5)", "does not broadcast", NULL});
    expect_error(E_WHERE_MASK, PL_ESHAPE, (const char *[]){"pl_where", "(2, 5)", "(4, 5)", NULL});
    expect_error(E_SUM_DST, PL_ESHAPE, (const char *[]){"pl_reduce_sum", "axis 0", "(1, 5)", NULL});
    expect_error(E_MAX_AXIS, PL_EINVAL, (const char *[]){"pl_reduce_max", "axis 2", NULL});
    expect_error(E_IOTA_DIM, PL_EINVAL, (const char *[]){"pl_iota", "dimension 2", "rank 2", NULL});
    expect_error(E_CMP_OP, PL_EINVAL, (const char *[]){"pl_cmp", "comparison 9", "PL_LT", NULL});
    expect_error(E_CAST_SHAPE, PL_ESHAPE, (const char *[]){"pl_cast", "(3, 5)", NULL});
    expect_error(E_REDUCE_RANK, PL_ESHAPE, (const char *[]){"pl_reduce_sum", "rank 1", "rank-2", NULL});
}

/* ---- cost ------------------------------------------------------------------------- */

typedef enum { C_RSQRT, C_SQRT, C_LOG, C_TANH, C_SIGMOID, C_GELU, C_EXP, C_DIV, C_ADDS, C_MULS, C_CMP, C_WHERE,
               C_IOTA, C_CAST, C_SUM0, C_MAX1, C_COUNT } cost_op;

static const struct { double flops; int eup; } COST[C_COUNT] = {
    [C_RSQRT] = {4, 1}, [C_SQRT] = {4, 1}, [C_LOG] = {4, 1}, [C_TANH] = {6, 1}, [C_SIGMOID] = {6, 1},
    [C_GELU] = {10, 1}, [C_EXP] = {4, 1}, [C_DIV] = {4, 0}, [C_ADDS] = {1, 0}, [C_MULS] = {1, 0},
    [C_CMP] = {1, 0}, [C_WHERE] = {1, 0}, [C_IOTA] = {1, 0}, [C_CAST] = {1, 0},
    [C_SUM0] = {1, 0}, [C_MAX1] = {1, 0}, /* per element reduced */
};

/* refs: x (r, 128), o (r, 128), red0 (8, 128) (row 0 used), red1 (r, 1); one op on x per grid step */
static void cost_kernel(pl_ctx *c, pl_ref *refs)
{
    cost_op op = *(const cost_op *)pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1], r0 = refs[2], r1 = refs[3];
    switch (op) {
    case C_RSQRT: pl_rsqrt(c, o, x); break;
    case C_SQRT: pl_sqrt(c, o, x); break;
    case C_LOG: pl_log(c, o, x); break;
    case C_TANH: pl_tanh(c, o, x); break;
    case C_SIGMOID: pl_sigmoid(c, o, x); break;
    case C_GELU: pl_gelu(c, o, x); break;
    case C_EXP: pl_exp(c, o, x); break;
    case C_DIV: pl_div(c, o, x, x); break;
    case C_ADDS: pl_add_scalar(c, o, x, 1); break;
    case C_MULS: pl_mul_scalar(c, o, x, 2); break;
    case C_CMP: pl_cmp(c, o, x, x, PL_LT); break;
    case C_WHERE: pl_where(c, o, x, x, x); break;
    case C_IOTA: pl_iota(c, o, 0, 0); break;
    case C_CAST: pl_cast(c, o, x); break;
    case C_SUM0: pl_reduce_sum(c, pl_ds(c, r0, 0, 0, 1), x, 0); break;
    case C_MAX1: pl_reduce_max(c, r1, x, 1); break;
    default: break;
    }
}

/* One call over `steps` grid steps of (rows, 128) f32 blocks. */
static pl_report cost_run(cost_op op, int64_t rows, int64_t steps, int cost_only)
{
    static cost_op user;
    user = op;
    int64_t n = rows * 128 * steps;
    float *x = cost_only ? NULL : th_f32_fill(n, 1.5f), *o = cost_only ? NULL : th_f32_fill(n, 0);
    float *r0 = cost_only ? NULL : th_f32_fill(8 * 128 * steps, 0), *r1 = cost_only ? NULL : th_f32_fill(n / 128, 0);
    pl_array in = PL_ARRAY(x, PL_F32, rows * steps, 128);
    pl_array outs[3] = {PL_ARRAY(o, PL_F32, rows * steps, 128), PL_ARRAY(r0, PL_F32, 8 * steps, 128),
                        PL_ARRAY(r1, PL_F32, rows * steps, 1)};
    pl_call call = {.name = "cost", .kernel = cost_kernel, .user = &user, .grid_rank = 1, .grid = {steps},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, -1), rows, 128)}, .n_out = 3,
                    .out = {PL_BLOCK(PL_MAP(0, -1), rows, 128), PL_BLOCK(PL_MAP(0, -1), 8, 128),
                            PL_BLOCK(PL_MAP(0, -1), rows, 1)}};
    pl_options opt = {.cost_only = cost_only, .checks_off = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, outs, &opt, &rep), &rep);
    free(x), free(o), free(r0), free(r1);
    return rep;
}

Test(ops_more, each_op_reports_its_vpu_flops_and_eup_elements)
{
    for (int op = 0; op < C_COUNT; op++)
        for (int co = 0; co < 2; co++) { /* cost-only runs report the same work without data */
            pl_report r = cost_run((cost_op)op, 16, 4, co);
            double elems = 16.0 * 128 * 4;
            cr_expect_eq(r.vpu_flops, COST[op].flops * elems, "op %d (cost-only %d): %g VPU FLOPs, want %g", op, co,
                         r.vpu_flops, COST[op].flops * elems);
            cr_expect_eq(r.eup_elems, COST[op].eup ? (int64_t)elems : 0, "op %d: %lld EUP elements", op,
                         (long long)r.eup_elems);
            cr_expect_eq(r.scalar_ops, 0, "op %d: block ops are not scalar work", op);
        }
}

Test(ops_more, op_time_grows_with_elements_and_weight)
{
    /* blocks of 64 x 128 = 8 VPU registers: the work is never rounded up, so time is proportional */
    pl_report small = cost_run(C_TANH, 64, 2, 1), big = cost_run(C_TANH, 128, 2, 1);
    cr_expect_float_eq(big.vpu_s / small.vpu_s, 2.0, 1e-9, "twice the elements: %g s vs %g s", big.vpu_s,
                       small.vpu_s);
    pl_report gelu = cost_run(C_GELU, 64, 2, 1), add = cost_run(C_ADDS, 64, 2, 1);
    cr_expect_float_eq(gelu.vpu_s / small.vpu_s, 10.0 / 6.0, 1e-9, "gelu is 10 per element, tanh 6");
    /* add_scalar is 1 per element, but reads and writes 8 bytes of VMEM per
     * element: those loads and stores take longer than its VPU work (issue 22) */
    double elems = 64.0 * 128 * 2, vpu = elems / add.chip->vpu_flops, vmem = 8 * elems / add.chip->vmem_bw;
    cr_assert_gt(vmem, vpu);
    cr_expect_float_eq(add.vpu_s, vmem, 1e-15, "add_scalar at the VMEM bandwidth: %g s, VPU work %g s", add.vpu_s,
                       vpu);
    cr_expect_float_eq(small.vpu_s, 6.0 * 64 * 128 * 2 / small.chip->vpu_flops, 1e-15, "at the chip's VPU rate");
}

/* ---- element access as scalar-unit work ---------------------------------------------- */

/* o = x, then `reps` passes of pl_get over the whole block and one of pl_set. */
static void element_kernel(pl_ctx *c, pl_ref *refs)
{
    int reps = *(const int *)pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1];
    for (int r = 0; r < reps; r++)
        for (int64_t i = 0; i < x.shape[0]; i++)
            for (int64_t j = 0; j < x.shape[1]; j++) (void)pl_get_at(c, x, i, j);
    pl_fill(c, o, 0); /* a block op after the gets: they are logged before it */
    for (int64_t i = 0; i < o.shape[0]; i++)
        for (int64_t j = 0; j < o.shape[1]; j++) pl_set_at(c, o, pl_get_at(c, x, i, j), i, j);
}

static pl_report element_run(int reps, const char *chip)
{
    static int user;
    user = reps;
    float *x = th_f32_seq(32 * 128), *o = th_f32_fill(32 * 128, 0);
    pl_array in = PL_ARRAY(x, PL_F32, 32, 128), out = PL_ARRAY(o, PL_F32, 32, 128);
    pl_call call = {.name = "elements", .kernel = element_kernel, .user = &user, .grid_rank = 1, .grid = {4},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, -1), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, -1), 8, 128)}};
    pl_options opt = {.chip = chip};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &rep), &rep);
    cr_expect_eq(th_f32_diff(x, o, 32 * 128), 0, "the element loop copies x");
    free(x), free(o);
    return rep;
}

Test(ops_more, element_loops_are_timed_as_scalar_work)
{
    pl_report one = element_run(1, "v5e"), three = element_run(3, "v5e");
    int64_t block = 8 * 128, steps = 4;
    cr_expect_eq(one.scalar_ops, steps * block * (1 + 2), "1 get pass + the get/set pass: %lld",
                 (long long)one.scalar_ops);
    cr_expect_eq(three.scalar_ops, steps * block * (3 + 2), "%lld", (long long)three.scalar_ops);
    cr_expect_float_eq(one.scalar_s, (double)one.scalar_ops / one.chip->clock_hz, 1e-15,
                       "one access per cycle of the v5e's clock");
    cr_expect(one.compute_s >= one.scalar_s, "compute %g s holds the scalar %g s", one.compute_s, one.scalar_s);
    /* two more passes over 4 blocks of 1024 elements, at 1.5 GHz, lengthen the call by about that much */
    double extra = (double)(three.scalar_ops - one.scalar_ops) / one.chip->clock_hz;
    cr_expect(three.time_s - one.time_s > 0.9 * extra, "time %g s -> %g s, want about %g s more", one.time_s,
              three.time_s, extra);
    pl_report v6e = element_run(1, "v6e"); /* OpenXLA's 1.75 GHz */
    cr_expect_float_eq(v6e.scalar_s, (double)v6e.scalar_ops / 1.75e9, 1e-15, "%g s", v6e.scalar_s);
}

Test(ops_more, an_element_loop_kernel_is_scalar_bound_and_says_so)
{
    pl_report r = element_run(3, "v5e");
    cr_expect_eq(r.bound, PL_BOUND_SCALAR, "bound %s: %s", pl_bound_name(r.bound), r.bound_msg);
    cr_expect_str_eq(pl_bound_name(PL_BOUND_SCALAR), "scalar");
    cr_expect(strstr(r.bound_msg, "scalar-bound") && strstr(r.bound_msg, "pl_get"), "%s", r.bound_msg);
    pl_report blockwise = cost_run(C_ADDS, 64, 2, 0);
    cr_expect_neq(blockwise.bound, PL_BOUND_SCALAR, "a kernel of block ops: %s", blockwise.bound_msg);
}

Test(ops_more, report_prints_and_exports_scalar_and_eup_work)
{
    pl_report r = element_run(1, "v5e"), e = cost_run(C_TANH, 16, 4, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    pl_report_json(&r, f);
    fclose(f);
    json_t *doc = th_json_parse(buf, "pl_report_json");
    cr_expect_eq((int64_t)th_json_num(doc, "scalar_ops"), r.scalar_ops);
    cr_expect_float_eq(th_json_num(doc, "scalar_s"), r.scalar_s, 1e-15);
    cr_expect_eq((int64_t)th_json_num(doc, "eup_elems"), 0);
    json_decref(doc);
    free(buf);
    f = open_memstream(&buf, &len);
    pl_report_print(&r, f);
    pl_report_print(&e, f);
    fclose(f);
    cr_expect(strstr(buf, "scalar unit: 12288 accesses"), "the element loop's accesses are printed:\n%s", buf);
    cr_expect(strstr(buf, "EUP: 8192 elements"), "tanh's EUP elements are printed:\n%s", buf);
    free(buf);
}
