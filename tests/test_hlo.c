/* tests/test_hlo.c: the HLO op reader (sim/tilesim_hlo.h) and `tilesim hlo`.
 *
 * The example read field by field; each tiling real TPU dumps use
 * (T(8,128)(2,1) bf16, T(4,128), T(32,128)(4,1) 8-bit, T(2,128)(2,1)) with
 * its bytes with and without padding checked against hand arithmetic (XLA's
 * docs/tiled_layout.md: pad every tiled dimension up to its tile, tile by
 * tile); tuples and scalars; text refused with the right column; and the
 * command, run as a program. The instruction struct is big: from the heap.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_hlo.h"
#include "run.h"

#define EXAMPLE                                                                                                        \
    "%fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(bf16[32,32,8192]{2,1,0:T(8,128)(2,1)} "              \
    "%fusion.32), kind=kCustom, calls=%all-reduce-scatter.3"

static pl_hlo_instr *parse_ok(const char *text)
{
    pl_hlo_instr *h = malloc(sizeof *h);
    cr_assert(h);
    char err[1024];
    int rc = pl_hlo_parse(text, h, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "refused %s:\n%s", text, err);
    return h;
}

/* The message of a refused text; its first line must start "column COL:". */
static void expect_refused(const char *text, int col, const char *words)
{
    pl_hlo_instr *h = malloc(sizeof *h);
    cr_assert(h);
    char err[1024], want[32];
    cr_assert_eq(pl_hlo_parse(text, h, err, sizeof err), PL_EINVAL, "accepted %s", text);
    snprintf(want, sizeof want, "column %d: ", col);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "%s: wanted \"%s...\", got:\n%s", text, want, err);
    cr_expect(strstr(err, words), "%s: the message lacks \"%s\":\n%s", text, words, err);
    const char *caret = strrchr(err, '\n'); /* the last line: the caret under the column */
    cr_assert(caret && strchr(caret, '^'), "no caret line:\n%s", err);
    if (strlen(text) <= 100) cr_expect_eq(strchr(caret, '^') - caret - 3, col - 1, "caret misplaced:\n%s", err);
    free(h);
}

static pl_hlo_shape shape_ok(const char *text)
{
    pl_hlo_shape s;
    char err[512];
    cr_assert_eq(pl_hlo_parse_shape(text, &s, err, sizeof err), PL_OK, "refused %s:\n%s", text, err);
    return s;
}

static int64_t bytes(const char *shape, int padded)
{
    pl_hlo_shape s = shape_ok(shape);
    return pl_hlo_shape_bytes(&s, padded);
}

/* ---- the example, field by field ---------------------------------------------- */

Test(hlo, example_parsed_field_by_field)
{
    pl_hlo_instr *h = parse_ok(EXAMPLE);
    cr_expect_str_eq(h->name, "fusion.3");
    cr_expect_eq(h->is_root, 0);
    cr_expect_eq(h->result.is_tuple, 0);
    cr_assert_eq(h->result.n, 1);
    const pl_hlo_shape *r = &h->shapes[h->result.first];
    cr_expect_eq(r->dtype, PL_HLO_BF16);
    cr_assert_eq(r->rank, 3);
    cr_expect(r->dims[0] == 32 && r->dims[1] == 32 && r->dims[2] == 4096);
    cr_expect_eq(r->has_layout, 1);
    cr_expect(r->minor_to_major[0] == 2 && r->minor_to_major[1] == 1 && r->minor_to_major[2] == 0);
    cr_assert_eq(r->n_tiles, 2);
    cr_expect(r->tile_rank[0] == 2 && r->tiles[0][0] == 8 && r->tiles[0][1] == 128);
    cr_expect(r->tile_rank[1] == 2 && r->tiles[1][0] == 2 && r->tiles[1][1] == 1);
    cr_expect_eq(r->memory_space, 1);
    cr_expect_str_eq(h->op, "fusion");
    cr_assert_eq(h->n_operands, 1);
    cr_expect_str_eq(h->operands[0].name, "fusion.32");
    cr_assert_eq(h->operands[0].type.n, 1);
    const pl_hlo_shape *o = &h->shapes[h->operands[0].type.first];
    cr_expect(o->dtype == PL_HLO_BF16 && o->rank == 3 && o->dims[2] == 8192 && o->n_tiles == 2);
    cr_expect_eq(o->memory_space, 0, "no S(n): HBM");
    cr_assert_eq(h->n_attrs, 2);
    cr_expect_str_eq(h->attr_key[0], "kind");
    cr_expect_str_eq(h->attr_value[0], "kCustom");
    cr_expect_str_eq(h->attr_key[1], "calls");
    cr_expect_str_eq(h->attr_value[1], "%all-reduce-scatter.3");
    char buf[256];
    cr_expect_str_eq(pl_hlo_shape_format(r, buf, sizeof buf), "bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}");
    /* 32*32*4096 bf16 = 8 MiB; rows (32) are a multiple of 8 and columns (4096) of 128: no padding */
    cr_expect_eq(pl_hlo_shape_bytes(r, 0), 32 * 32 * 4096 * 2);
    cr_expect_eq(pl_hlo_shape_bytes(r, 1), 32 * 32 * 4096 * 2);
    cr_expect_eq(pl_hlo_shape_bytes(o, 1), 32 * 32 * 8192 * 2);
    free(h);
}

Test(hlo, example_tiled_dims_follow_the_tiling)
{
    pl_hlo_shape s = shape_ok("bf16[32,32,4096]{2,1,0:T(8,128)(2,1)}");
    int64_t d[64];
    int n = pl_hlo_tiled_dims(&s, d, 64);
    /* (32, 32, 4096) by (8,128): (32, 4, 32, 8, 128); the (2,1) cuts the (8, 128) into (4, 128, 2, 1) */
    int64_t want[] = {32, 4, 32, 4, 128, 2, 1};
    cr_assert_eq(n, 7);
    for (int i = 0; i < 7; i++) cr_expect_eq(d[i], want[i], "dim %d", i);
}

Test(hlo, example_explained_in_words)
{
    pl_hlo_instr *h = parse_ok(EXAMPLE);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl_hlo_explain(h, f), 0);
    fclose(f);
    const char *want[] = {"%fusion.3",  "bf16",    "32 x 32 x 4096",   "dim 2 (4096), then dim 1 (32), then dim 0 (32)",
                          "(8,128)",    "(2,1)",   "packed",           "32-bit word",
                          "VMEM",       "HBM",     "8388608",          "fusion",
                          "%fusion.32", "kCustom", "fused collective", "reduce-scatter",
                          "2 shards"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(text, want[i]), "the explanation lacks \"%s\":\n%s", want[i], text);
    free(text);
    free(h);
}

/* ---- tilings real dumps use, bytes by hand -------------------------------------------- */

Test(hlo, bf16_8x128_2x1_pads_rows_to_8_and_columns_to_128)
{
    /* 1 x 100 bf16: 200 bytes; one 8 x 128 tile of 2 bytes = 2048 */
    cr_expect_eq(bytes("bf16[1,100]{1,0:T(8,128)(2,1)}", 0), 200);
    cr_expect_eq(bytes("bf16[1,100]{1,0:T(8,128)(2,1)}", 1), 2048);
    /* 9 x 129: rows to 16, columns to 256: 16*256*2 */
    cr_expect_eq(bytes("bf16[9,129]{1,0:T(8,128)(2,1)}", 1), 16 * 256 * 2);
}

Test(hlo, f32_4x128_small_tile)
{
    pl_hlo_shape s = shape_ok("f32[3,200]{1,0:T(4,128)}");
    cr_expect(s.n_tiles == 1 && s.tiles[0][0] == 4 && s.tiles[0][1] == 128);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 0), 3 * 200 * 4);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 1), 4 * 256 * 4);
}

Test(hlo, s8_32x128_4x1_packs_four_rows)
{
    pl_hlo_shape s = shape_ok("s8[3,256]{1,0:T(32,128)(4,1)}");
    cr_expect(s.dtype == PL_HLO_S8 && s.n_tiles == 2 && s.tiles[1][0] == 4 && s.tiles[1][1] == 1);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 0), 768);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 1), 32 * 256);
    pl_hlo_instr *h = parse_ok("%c = s8[64,128]{1,0:T(32,128)(4,1)} copy(%x)");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pl_hlo_explain(h, f);
    fclose(f);
    cr_expect(strstr(text, "4 values of one column from 4 adjacent rows"), "%s", text);
    free(text);
    free(h);
}

Test(hlo, one_dim_2x128_2x1)
{
    /* {0:T(2,128)(2,1)}: a 2-D tile over a 1-D shape sees a size-1 major dimension: 1 x 300 -> 2 x 384 */
    pl_hlo_shape s = shape_ok("bf16[300]{0:T(2,128)(2,1)}");
    cr_expect_eq(pl_hlo_shape_bytes(&s, 0), 600);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 1), 2 * 384 * 2);
    cr_expect_eq(bytes("bf16[2,130]{1,0:T(2,128)(2,1)}", 1), 2 * 256 * 2);
}

Test(hlo, tiling_follows_the_layout_not_the_dimension_order)
{
    /* XLA's Figure 1: F32[3,5]{1,0:T(2,2)} pads to 4 x 6; with {0,1} the 5 is the second-minor: 6 x 4 */
    cr_expect_eq(bytes("f32[3,5]{1,0:T(2,2)}", 0), 60);
    cr_expect_eq(bytes("f32[3,5]{1,0:T(2,2)}", 1), 24 * 4);
    cr_expect_eq(bytes("f32[3,5]{0,1:T(8,128)}", 1), 8 * 128 * 4);
    cr_expect_eq(bytes("f32[200,3]{0,1:T(8,128)}", 1), 8 * 256 * 4, "dim 0 is the minor one: 200 -> 256");
}

Test(hlo, memory_space_element_bits_tail_and_combined_dimensions)
{
    pl_hlo_shape s = shape_ok("f32[8,128]{1,0:S(1)}");
    cr_expect_eq(s.memory_space, 1);
    cr_expect_eq(s.n_tiles, 0);
    cr_expect_eq(bytes("s4[16]{0:E(4)}", 0), 8, "E(4): two values a byte");
    cr_expect_eq(bytes("s4[16]", 0), 16, "no E(n): a byte each, as XLA's ByteWidth");
    cr_expect_eq(bytes("f32[1000]{0:L(1024)}", 1), 4096);
    cr_expect_eq(bytes("f32[1000]{0:L(1024)}", 0), 4000);
    /* tiled_layout.md: (*,*,2,*,3) combines F32[2,7,8,11,10] into [112,110], then tiles by (2,3): 56*37 tiles of 6 */
    cr_expect_eq(bytes("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}", 1), 56 * 37 * 6 * 4);
    char buf[128];
    pl_hlo_shape c = shape_ok("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}");
    cr_expect_str_eq(pl_hlo_shape_format(&c, buf, sizeof buf), "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}");
}

Test(hlo, every_listed_dtype_reads_with_its_size)
{
    const char *names[] = {"pred", "s4",  "u4",   "s8",  "u8",  "s16",      "u16",    "s32", "u32",  "s64",
                           "u64",  "f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2", "c64", "c128", "f8e4m3b11fnuz"};
    const int size[] = {1, 1, 1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8, 1, 1, 8, 16, 1};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s[2,3]{1,0}", names[i]);
        cr_expect_eq(bytes(text, 0), 6 * size[i], "%s", text);
    }
}

/* ---- tuples, scalars, constants ------------------------------------------------------- */

Test(hlo, tuple_and_scalar)
{
    pl_hlo_instr *h = parse_ok("ROOT %t = (f32[8,128]{1,0}, s32[]) tuple(f32[8,128]{1,0} %a, s32[] %b)");
    cr_expect_eq(h->is_root, 1);
    cr_expect_eq(h->result.is_tuple, 1);
    cr_assert_eq(h->result.n, 2);
    const pl_hlo_shape *e0 = &h->shapes[h->result.first], *e1 = &h->shapes[h->result.first + 1];
    cr_expect(e0->dtype == PL_HLO_F32 && e0->rank == 2);
    cr_expect(e1->dtype == PL_HLO_S32 && e1->rank == 0);
    cr_expect_eq(pl_hlo_shape_bytes(e0, 1), 8 * 128 * 4);
    cr_expect_eq(pl_hlo_shape_bytes(e1, 0), 4, "a scalar is one element");
    cr_assert_eq(h->n_operands, 2);
    cr_expect_str_eq(h->operands[1].name, "b");
    cr_expect_eq(h->operands[1].type.n, 1);
    free(h);
    h = parse_ok("%c = f32[] constant(0)");
    cr_expect_str_eq(h->literal, "0");
    cr_expect_eq(h->n_operands, 0);
    free(h);
    h = parse_ok("p = bf16[8,128]{1,0} parameter(3), sharding={replicated}");
    cr_expect_str_eq(h->name, "p");
    cr_expect_str_eq(h->literal, "3");
    free(h);
}

Test(hlo, attributes_with_nested_brackets_and_strings)
{
    pl_hlo_instr *h = parse_ok("%d = f32[8,8]{1,0} dot(f32[8,4]{1,0} %a, f32[4,8]{1,0} %b), lhs_contracting_dims={1}, "
                               "rhs_contracting_dims={0}, metadata={op_name=\"jit(f)/dot, x\" source_line=3}, "
                               "replica_groups={{0,1},{2,3}}");
    cr_assert_eq(h->n_attrs, 4);
    cr_expect_str_eq(h->attr_value[2], "{op_name=\"jit(f)/dot, x\" source_line=3}");
    cr_expect_str_eq(h->attr_value[3], "{{0,1},{2,3}}");
    cr_expect_str_eq(h->operands[1].name, "b");
    free(h);
}

/* ---- refused text names the column ---------------------------------------------------- */

Test(hlo, bad_text_names_the_column)
{
    expect_refused("%x = f32[3,5", 13, "expected ']' after the dimensions of the shape");
    expect_refused("%x = f32[3,5} add(a)", 13, "expected ']' after the dimensions");
    expect_refused("%x = f33[3] add(a)", 6, "element type");
    expect_refused("%x f32[3] add(a)", 4, "expected '='");
    expect_refused("%x = f32[3]{1} add(a)", 13, "dimension 1 of a shape of 1 dimension");
    expect_refused("%x = f32[3,4]{1,1} add(a)", 17, "twice");
    expect_refused("%x = f32[3,4]{1} add(a)", 16, "expected 2 dimension numbers");
    expect_refused("%x = f32[3,4]{1,0:T(8,128)(0,1)} add(a)", 28, "at least 1");
    expect_refused("%x = f32[3,4]{1,0:Q(1)} add(a)", 19, "layout item");
    expect_refused("%x = f32[3,4]{1,0:T(8,128)", 27, "expected '}'");
    expect_refused("%x = f32[<=8] add(a)", 10, "dynamic");
    expect_refused("%x = f32[8] add(a", 18, "expected ',' or ')' after an operand");
    expect_refused("%x = f32[8] (a)", 13, "op name");
    expect_refused("%x = f32[8] add(a), kind", 25, "expected '=' after the attribute name");
    expect_refused("%x = f32[8] add(a), k=1, k=2", 26, "given twice");
    expect_refused("%x = f32[8] add(a), m={a=(1}", 28, "expected ')' to close the '(' of column 26");
    expect_refused("%x = f32[8] add(a), m=\"abc", 23, "not closed");
    expect_refused("%x = f32[8] add(a) junk", 20, "expected ','");
    expect_refused("%x = (((((((((f32[8]))))))))) tuple()", 14, "nested more than 8 deep");
    expect_refused("", 1, "expected the instruction's name");
}

Test(hlo, caps_are_refused_by_name_and_null_is_safe)
{
    char text[2048] = "%x = f32[8] add(";
    for (int i = 0; i < PL_HLO_MAX_OPERANDS + 1; i++) strcat(text, i ? ", a" : "a");
    strcat(text, ")");
    pl_hlo_instr *h = malloc(sizeof *h);
    char err[1024];
    cr_expect_eq(pl_hlo_parse(text, h, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "more than 32 operands"), "%s", err);
    cr_expect(strstr(err, "..."), "a long line is shown around the column:\n%s", err);
    cr_expect_eq(pl_hlo_parse(NULL, h, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "NULL"), "%s", err);
    cr_expect_eq(pl_hlo_parse("%x = f32[] constant(0)", NULL, err, sizeof err), PL_EINVAL);
    cr_expect_eq(pl_hlo_parse("%x = f32[", h, NULL, 0), PL_EINVAL, "no message buffer: still refused");
    cr_expect_eq(pl_hlo_parse("%x = f32[", h, err, 8), PL_EINVAL);
    cr_expect_eq(strlen(err), 7, "cut to the buffer");
    free(h);
}

Test(hlo, sizes_too_big_to_count_are_minus_one)
{
    pl_hlo_shape s = shape_ok("f32[1000000000000000,1000000000000000]{1,0:T(8,128)}");
    cr_expect_eq(pl_hlo_shape_bytes(&s, 0), -1);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 1), -1);
    pl_hlo_instr *h = parse_ok("%x = f32[1000000000000000,1000000000000000]{1,0:T(8,128)} add(a)");
    FILE *f = fopen("/dev/null", "w");
    cr_expect(pl_hlo_explain(h, f) == 0 && pl_hlo_json(h, f) == 0);
    fclose(f);
    free(h);
}

/* ---- the command ---------------------------------------------------------------------- */

Test(hlo_cli, example_explained)
{
    th_run r = TH_RUN("hlo", EXAMPLE);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    const char *want[] = {"VMEM", "8388608", "T(8,128)(2,1)", "fused collective", "reduce-scatter"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(r.out, want[i]), "output lacks \"%s\":\n%s", want[i], r.out);
    cr_expect_str_empty(r.err);
    th_run_free(&r);
}

Test(hlo_cli, json)
{
    th_run r = TH_RUN("hlo", EXAMPLE, "--json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    json_t *doc = th_json_parse(r.out, "hlo --json");
    cr_expect_str_eq(th_json_str(doc, "name"), "fusion.3");
    cr_expect_str_eq(th_json_str(doc, "op"), "fusion");
    json_t *res = json_array_get(json_object_get(json_object_get(doc, "result"), "shapes"), 0);
    cr_assert(res, "no result shape:\n%s", r.out);
    cr_expect_str_eq(th_json_str(res, "memory"), "VMEM");
    cr_expect_eq(json_integer_value(json_object_get(res, "bytes")), 8388608);
    cr_expect_eq(json_integer_value(json_object_get(res, "padded_bytes")), 8388608);
    cr_expect_eq(json_array_size(json_object_get(res, "tiles")), 2);
    cr_expect_str_eq(th_json_str(json_object_get(doc, "attributes"), "calls"), "%all-reduce-scatter.3");
    json_t *op = json_array_get(json_object_get(doc, "operands"), 0);
    cr_expect_str_eq(th_json_str(op, "name"), "fusion.32");
    json_decref(doc);
    th_run_free(&r);
}

Test(hlo_cli, bad_text_is_exit_2_with_the_column_and_a_caret)
{
    th_run r = TH_RUN("hlo", "%x = f32[3,5");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "tilesim hlo: column 13: expected ']' after the dimensions of the shape"), "%s", r.err);
    cr_expect(strstr(r.err, "\n  %x = f32[3,5\n              ^\n"), "no caret under column 13:\n%s", r.err);
    cr_expect_str_empty(r.out);
    th_run_free(&r);
    r = TH_RUN("hlo");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "missing the HLO instruction"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("hlo", "%x", "= f32[] constant(0)");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "quote"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("help", "hlo");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "tilesim hlo"), "%s", r.out);
    th_run_free(&r);
}

/* ---- what real dumps also print --------------------------------------------------------- */

/* XLA numbers long operand lists and tuple shapes with index comments (index=5 between slash-stars), every fifth. */
Test(hlo, index_comments_of_long_lists_are_skipped)
{
    pl_hlo_instr *h = parse_ok("ROOT %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/s32[]) "
                               "tuple(f32[] %a, f32[] %b, f32[] %c, f32[] %d, f32[] %e, /*index=5*/s32[] %f)");
    cr_expect_eq(h->result.n, 6);
    cr_assert_eq(h->n_operands, 6);
    cr_expect_str_eq(h->operands[5].name, "f");
    cr_expect_eq(h->shapes[h->operands[5].type.first].dtype, PL_HLO_S32);
    free(h);
    expect_refused("%t = f32[] tuple(/*index=5 %a)", 18, "comment");
}

Test(hlo, a_scalar_with_a_memory_space)
{
    pl_hlo_shape s = shape_ok("f32[]{:S(1)}");
    cr_expect_eq(s.rank, 0);
    cr_expect_eq(s.memory_space, 1);
    cr_expect_eq(pl_hlo_shape_bytes(&s, 1), 4);
}

/* Async ops return tuples within tuples ((operands), result, context): their leaves, in order. */
Test(hlo, nested_tuples_are_read_flattened)
{
    pl_hlo_instr *h = parse_ok("%s = ((f32[8]{0}, s32[]), u32[]) async-start(f32[8]{0} %a), calls=%c");
    cr_expect_eq(h->result.is_tuple, 1);
    cr_expect_eq(h->result.nested, 1);
    cr_assert_eq(h->result.n, 3);
    cr_expect_eq(h->shapes[h->result.first + 1].dtype, PL_HLO_S32);
    cr_expect_eq(h->shapes[h->result.first + 2].dtype, PL_HLO_U32);
    cr_expect_eq(h->operands[0].type.n, 1);
    free(h);
}
