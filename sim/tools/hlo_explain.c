/* sim/tools/hlo_explain.c: what a parsed HLO instruction means (sim/tilesim_hlo.h),
 * in plain words or as JSON.
 *
 * The words follow XLA's docs/shapes.md (name, shape, layout, memory space)
 * and docs/tiled_layout.md (tiles apply to the most minor dimensions; the
 * second tile (2,1) of bf16 or (4,1) of 8-bit types packs 2 or 4 values of
 * one column into a 32-bit word), for a reader of XProf's HLO op view who
 * wants each part of the line said once. The JSON form is sim/tools/hlo_json.c.
 */
#include <inttypes.h>
#include <string.h>

#include "hlo.h"

/* What the dtype is, in a few words. */
static const char *dtype_words(pl_hlo_dtype t)
{
    switch (t) {
    case PL_HLO_PRED: return "a boolean";
    case PL_HLO_BF16: return "bfloat16, a 16-bit float with f32's 8 exponent bits and 7 mantissa bits";
    case PL_HLO_F16: return "IEEE half precision, a 16-bit float (5 exponent bits)";
    case PL_HLO_F32: return "IEEE single precision, a 32-bit float";
    case PL_HLO_F64: return "IEEE double precision, a 64-bit float";
    case PL_HLO_C64: return "a complex number of two f32";
    case PL_HLO_C128: return "a complex number of two f64";
    case PL_HLO_TOKEN: return "a token: no data, it orders side effects";
    case PL_HLO_OPAQUE: return "an opaque value of the backend";
    default: break;
    }
    const char *n = pl_hlo_dtype_name(t);
    if (n[0] == 's') return "a signed integer";
    if (n[0] == 'u') return "an unsigned integer";
    return "a low-precision float (the letters after e and m give its exponent and mantissa bits)";
}

/* Where S(n) puts the array (docs/shapes.md, "Memory space identifiers"). */
static const char *space_words(int64_t s)
{
    if (s == 0) return "HBM, the chip's high-bandwidth main memory";
    if (s == 1) return "VMEM, the TensorCore's on-chip vector memory (small, fast; what Pallas blocks live in)";
    if (s == 5) return "host memory";
    return "a device-specific memory space";
}

static void print_dims(const int64_t *d, int n, FILE *f)
{
    for (int i = 0; i < n; i++) fprintf(f, "%s%" PRId64, i ? " x " : "", d[i]);
}

static void print_bytes(int64_t b, FILE *f)
{
    char buf[32];
    if (b < 0) fprintf(f, "too many to count");
    else fprintf(f, "%" PRId64 " (%s)", b, pl_format_bytes((double)b, buf, sizeof buf));
}

/* {2,1,0}: which dimension is most minor, and the name of the order. */
static void explain_layout(const pl_hlo_shape *s, FILE *f)
{
    if (s->rank < 2) {
        fprintf(f, "  layout     %s: %s\n", s->has_layout ? "given" : "none given",
                s->rank ? "one dimension, laid out in order" : "a scalar: one element");
        return;
    }
    fprintf(f, "  layout     {");
    for (int i = 0; i < s->rank; i++) fprintf(f, "%s%d", i ? "," : "", s->minor_to_major[i]);
    fprintf(f, "}%s: the dimensions from most minor (consecutive in memory) to most major:\n             ",
            s->has_layout ? "" : " (none given: XLA's default)");
    for (int i = 0; i < s->rank; i++)
        fprintf(f, "%sdim %d (%" PRId64 ")", i ? ", then " : "", s->minor_to_major[i], s->dims[s->minor_to_major[i]]);
    int row_major = 1, col_major = 1;
    for (int i = 0; i < s->rank; i++) {
        row_major &= s->minor_to_major[i] == s->rank - 1 - i;
        col_major &= s->minor_to_major[i] == i;
    }
    fprintf(f, "%s\n", row_major ? ": row-major" : col_major ? ": column-major" : ": a transposed order");
}

/* One tile of a repeated tiling, in words. */
static void explain_tile(const pl_hlo_shape *s, int k, FILE *f)
{
    const int64_t *t = s->tiles[k];
    int r = s->tile_rank[k], vbits = s->element_bits ? s->element_bits : sim_hlo_value_bits(s->dtype);
    fprintf(f, "             (");
    for (int j = 0; j < r; j++) {
        if (t[j] == PL_HLO_TILE_COMBINE) fprintf(f, "%s*", j ? "," : "");
        else fprintf(f, "%s%" PRId64, j ? "," : "", t[j]);
    }
    if (k == 0 && r >= 2 && r <= s->rank && t[r - 2] > 0) { /* a (*,...) tile is said below */
        int minor = s->minor_to_major[0], second = s->minor_to_major[1];
        fprintf(f, "): the %d most minor dimensions are cut into tiles, each contiguous in memory;\n", r);
        fprintf(f,
                "             dim %d (%" PRId64 ") is padded up to a multiple of %" PRId64 ", dim %d (%" PRId64
                ") up to a multiple of %" PRId64 "\n",
                second, s->dims[second], t[r - 2], minor, s->dims[minor], t[r - 1]);
        if (t[r - 2] == 8 && t[r - 1] == 128)
            fprintf(f, "             (8 x 128 is a TPU vector register: 8 sublanes x 128 lanes of 32 bits)\n");
        else if (t[r - 1] == 128 && t[r - 2] < 8)
            fprintf(f,
                    "             (a small second-minor dimension gets a %" PRId64 " x 128 tile instead of 8 x 128,"
                    " to pad less)\n",
                    t[r - 2]);
        return;
    }
    if (k > 0 && r == 2 && t[1] == 1 && t[0] > 1 && vbits > 0 && vbits * t[0] == 32) {
        fprintf(f,
                "): inside each tile, %" PRId64 " values of one column from %" PRId64
                " adjacent rows are packed into\n             one %" PRId64 "-bit word (%s packing): the TPU moves"
                " 32-bit words, and packing along the rows\n             keeps each value in its own lane",
                t[0], t[0], t[0] * vbits, pl_hlo_dtype_name(s->dtype));
        if (s->n_tiles >= 1 && s->tile_rank[0] >= 2 && s->tiles[0][s->tile_rank[0] - 2] % t[0] == 0)
            fprintf(f, "; each %" PRId64 " x %" PRId64 " tile is %" PRId64 " x %" PRId64 " words",
                    s->tiles[0][s->tile_rank[0] - 2], s->tiles[0][s->tile_rank[0] - 1],
                    s->tiles[0][s->tile_rank[0] - 2] / t[0], s->tiles[0][s->tile_rank[0] - 1]);
        fprintf(f, "\n");
        return;
    }
    int star = 0;
    for (int j = 0; j < r; j++) star |= t[j] == PL_HLO_TILE_COMBINE;
    fprintf(f, "): tiles over the %d most minor dimensions%s%s\n", r, k ? " of what the tiles before made" : "",
            star ? "; each '*' first merges its dimension into the next more minor one" : "");
}

/* Same element type, layout and tiling: an operand like the result is said in brief. */
static int same_format(const pl_hlo_shape *a, const pl_hlo_shape *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->n_tiles != b->n_tiles || a->element_bits != b->element_bits)
        return 0;
    for (int k = 0; k < a->n_tiles; k++)
        if (a->tile_rank[k] != b->tile_rank[k] ||
            memcmp(a->tiles[k], b->tiles[k], (size_t)a->tile_rank[k] * sizeof *a->tiles[k]) != 0)
            return 0;
    return memcmp(a->minor_to_major, b->minor_to_major, (size_t)a->rank * sizeof *a->minor_to_major) == 0;
}

/* brief: the type, layout and tiling were said for the result already */
static void explain_shape(const pl_hlo_shape *s, int brief, FILE *f)
{
    int vbits = sim_hlo_value_bits(s->dtype), sbits = s->element_bits ? s->element_bits : pl_hlo_dtype_bits(s->dtype);
    if (brief) fprintf(f, "  type       %s, layout and tiling as the result's\n", pl_hlo_dtype_name(s->dtype));
    else {
        fprintf(f, "  type       %s: %s; %d bit%s a value", pl_hlo_dtype_name(s->dtype), dtype_words(s->dtype), vbits,
                vbits == 1 ? "" : "s");
        if (sbits != vbits)
            fprintf(f, ", stored in %d%s", sbits, s->element_bits ? " (E(n))" : " (a byte each: no E(n) packs them)");
        fprintf(f, "\n");
    }
    int64_t e = 1;
    int big = 0;
    for (int i = 0; i < s->rank; i++) big |= __builtin_mul_overflow(e, s->dims[i], &e);
    fprintf(f, "  shape      ");
    if (s->rank == 0) fprintf(f, "[]: a scalar, one value\n");
    else {
        fprintf(f, "%d dimension%s, dim 0 first: ", s->rank, s->rank == 1 ? "" : "s");
        print_dims(s->dims, s->rank, f);
        if (big) fprintf(f, " (too many elements to count)\n");
        else fprintf(f, " = %" PRId64 " element%s\n", e, e == 1 ? "" : "s");
    }
    if (!brief) explain_layout(s, f);
    if (s->n_tiles && !brief) {
        fprintf(f, "  tiling     T");
        for (int k = 0; k < s->n_tiles; k++) {
            fprintf(f, "(");
            for (int j = 0; j < s->tile_rank[k]; j++)
                if (s->tiles[k][j] == PL_HLO_TILE_COMBINE) fprintf(f, "%s*", j ? "," : "");
                else fprintf(f, "%s%" PRId64, j ? "," : "", s->tiles[k][j]);
            fprintf(f, ")");
        }
        fprintf(f, "\n");
        for (int k = 0; k < s->n_tiles; k++) explain_tile(s, k, f);
    }
    if (s->element_bits)
        fprintf(f, "  E(%d)       each element takes %d bits in memory\n", s->element_bits, s->element_bits);
    if (s->tail_align)
        fprintf(f, "  L(%" PRId64 ")     the tiled array is padded at its end to a multiple of %" PRId64 " elements\n",
                s->tail_align, s->tail_align);
    fprintf(f, "  memory     %s%" PRId64 "%s: %s\n", s->memory_space ? "S(" : "no S(n), S(", s->memory_space,
            s->memory_space ? ")" : ") by default", space_words(s->memory_space));
    int64_t logical = pl_hlo_shape_bytes(s, 0), padded = pl_hlo_shape_bytes(s, 1);
    fprintf(f, "  bytes      ");
    print_bytes(logical, f);
    fprintf(f, " of values; ");
    print_bytes(padded, f);
    int64_t td[PL_HLO_MAX_DIMS * (PL_HLO_MAX_TILES + 2)];
    int nt = pl_hlo_tiled_dims(s, td, (int)(sizeof td / sizeof *td));
    if (s->n_tiles && nt > 0) {
        fprintf(f, " with tile padding,\n             stored as ");
        print_dims(td, nt, f);
        fprintf(f, " (tile counts, then the sizes within the tiles)");
    } else {
        fprintf(f, " stored (no tiles, no padding)");
    }
    if (logical > 0 && padded > logical)
        fprintf(f, "\n             %.1f%% of it is padding", 100.0 * (double)(padded - logical) / (double)padded);
    else if (s->n_tiles && logical >= 0 && padded == logical)
        fprintf(f, "\n             no padding: every dimension is a multiple of its tile");
    fprintf(f, "\n");
}

/* ---- ops, operands, attributes ------------------------------------------------------- */

static const struct {
    const char *op, *words;
} ops[] = {
    {"fusion", "several HLO ops compiled into one kernel; the ops are the body named by calls="},
    {"parameter", "an input of the computation"},
    {"constant", "a constant value, in the parentheses"},
    {"dot", "a matrix multiplication (on the MXU), with the contracting and batch dimensions of the *_dims attributes"},
    {"convolution", "a convolution (on the MXU)"},
    {"all-reduce", "a collective: values summed (or reduced by to_apply) across devices, every device gets the result"},
    {"all-gather", "a collective: every device's shard gathered from all devices into the whole array"},
    {"reduce-scatter", "a collective: values reduced across devices, each device keeps one shard of the result"},
    {"all-to-all", "a collective: each device sends a different slice to every other device"},
    {"collective-permute", "a collective: each device sends its array to another (source_target_pairs)"},
    {"copy", "a copy, often a change of layout"},
    {"copy-start", "the start of an asynchronous copy (between memory spaces); copy-done waits for it"},
    {"copy-done", "the end of an asynchronous copy"},
    {"bitcast", "the same bytes seen as another shape: no data moves"},
    {"reshape", "the same values in another shape"},
    {"transpose", "a permutation of the dimensions"},
    {"broadcast", "the operand repeated along new dimensions"},
    {"reduce", "a reduction over the dimensions listed, with the to_apply computation"},
    {"tuple", "several values grouped into one tuple"},
    {"get-tuple-element", "one element (index=) of a tuple"},
    {"custom-call", "a call of a backend kernel (custom_call_target=), as a Pallas kernel is on TPU"},
    {"while", "a loop: condition= and body= computations"},
    {"dynamic-slice", "a slice at offsets computed at run time"},
    {"dynamic-update-slice", "an update of a slice at offsets computed at run time"},
    {"convert", "an element type conversion"},
    {"add", "an element-wise sum"},
    {"multiply", "an element-wise product"},
};

static const struct {
    const char *key, *words;
} attrs[] = {
    {"calls", "the computation this instruction runs (its body, printed elsewhere in the dump)"},
    {"to_apply", "the computation applied to pairs of values (the reduction)"},
    {"dimensions", "the dimensions the op works on"},
    {"replica_groups", "the groups of devices the collective runs within"},
    {"channel_id", "pairs the collective's parts across devices"},
    {"metadata", "where it came from: the JAX op and source line"},
    {"backend_config", "options for the compiler backend"},
    {"sharding", "how the value is split over devices"},
    {"custom_call_target", "the backend kernel called"},
    {"lhs_contracting_dims", "dimensions of the left operand summed over"},
    {"rhs_contracting_dims", "dimensions of the right operand summed over"},
    {"lhs_batch_dims", "batch dimensions of the left operand"},
    {"rhs_batch_dims", "batch dimensions of the right operand"},
    {"index", "which tuple element"},
};

static const char *fusion_kind(const char *v)
{
    if (strcmp(v, "kLoop") == 0) return "a loop fusion: element-wise ops in one loop over the output";
    if (strcmp(v, "kInput") == 0) return "an input fusion: ops fused into the input of a reduction";
    if (strcmp(v, "kOutput") == 0)
        return "an output fusion: element-wise ops fused into the output of a dot or convolution";
    if (strcmp(v, "kCustom") == 0)
        return "a custom fusion: made by a backend (TPU) pass, such as a collective fused with its computation";
    return "the fusion's kind";
}

/* calls=%all-reduce-scatter.3 on a fusion: a fused collective. The shard
 * count is read off the one dimension where operand and result differ. */
static void explain_calls(const pl_hlo_instr *h, const char *v, FILE *f)
{
    const char *what = strstr(v, "reduce-scatter")       ? "reduce-scatter"
                       : strstr(v, "all-gather")         ? "all-gather"
                       : strstr(v, "all-reduce")         ? "all-reduce"
                       : strstr(v, "all-to-all")         ? "all-to-all"
                       : strstr(v, "collective-permute") ? "collective-permute"
                                                         : NULL;
    if (!what || strcmp(h->op, "fusion") != 0) return;
    fprintf(f,
            "             a fusion calling %s is a fused collective (a%s %s):\n"
            "             the collective and the ops around it run as one kernel, overlapping the transfer\n"
            "             between devices with compute; its body, %s, is another computation of the dump\n",
            v, what[0] == 'a' ? "n" : "", what, v);
    if (strcmp(what, "reduce-scatter") == 0)
        fprintf(
            f,
            "             reduce-scatter: every device holds a whole operand; the operands are summed element-wise\n"
            "             across the devices of the group and each device keeps only its own shard of the sum\n");
    if (h->n_operands < 1 || h->operands[0].type.n != 1 || h->result.n != 1 || h->result.is_tuple) return;
    const pl_hlo_shape *in = &h->shapes[h->operands[0].type.first], *out = &h->shapes[h->result.first];
    if (in->rank != out->rank) return;
    int diff = -1;
    for (int i = 0; i < in->rank; i++)
        if (in->dims[i] != out->dims[i]) diff = diff == -1 ? i : -2;
    if (diff >= 0 && out->dims[diff] > 0 && in->dims[diff] % out->dims[diff] == 0)
        fprintf(f, "             here dim %d goes from %" PRId64 " to %" PRId64 ": %" PRId64 " shards, one a device\n",
                diff, in->dims[diff], out->dims[diff], in->dims[diff] / out->dims[diff]);
}

/* like: the result's array shape, when the type is an operand's (else NULL) */
static void explain_type(const pl_hlo_instr *h, const pl_hlo_type *t, const pl_hlo_shape *like, FILE *f)
{
    char buf[512];
    for (int i = 0; i < t->n; i++) {
        const pl_hlo_shape *s = &h->shapes[t->first + i];
        if (t->is_tuple) fprintf(f, " tuple element %d: %s\n", i, pl_hlo_shape_format(s, buf, sizeof buf));
        explain_shape(s, like && same_format(s, like), f);
    }
}

int pl_hlo_explain(const pl_hlo_instr *h, FILE *f)
{
    if (!h || !f) return -1;
    char buf[512];
    fprintf(f, "name         %%%s%s: the instruction's unique name; other instructions read its result by it\n",
            h->name, h->is_root ? " (ROOT: the result of its computation)" : "");
    if (h->result.is_tuple)
        fprintf(f, "result       a tuple of %d value%s%s\n", h->result.n, h->result.n == 1 ? "" : "s",
                h->result.nested ? " (tuples within it: their values in order)" : "");
    else fprintf(f, "result       %s\n", pl_hlo_shape_format(&h->shapes[h->result.first], buf, sizeof buf));
    explain_type(h, &h->result, NULL, f);
    const pl_hlo_shape *like = h->result.is_tuple || h->result.n != 1 ? NULL : &h->shapes[h->result.first];
    const char *words = "an HLO op (see XLA's operation semantics)";
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(ops[i].op, h->op) == 0) words = ops[i].words;
    fprintf(f, "op           %s: %s\n", h->op, words);
    if (h->literal[0])
        fprintf(f, "             %s %s\n",
                strcmp(h->op, "parameter") == 0 ? "parameter number" : "value:", h->literal);
    for (int i = 0; i < h->n_operands; i++) {
        const pl_hlo_operand *o = &h->operands[i];
        fprintf(f, "operand %-4d %%%s", i, o->name);
        if (o->type.n == 1 && !o->type.is_tuple)
            fprintf(f, ": %s\n", pl_hlo_shape_format(&h->shapes[o->type.first], buf, sizeof buf));
        else fprintf(f, o->type.n ? ": a tuple\n" : " (its shape is not given here)\n");
        explain_type(h, &o->type, like, f);
    }
    for (int i = 0; i < h->n_attrs; i++) {
        const char *k = h->attr_key[i], *v = h->attr_value[i], *aw = "an attribute of the op";
        for (size_t j = 0; j < sizeof attrs / sizeof *attrs; j++)
            if (strcmp(attrs[j].key, k) == 0) aw = attrs[j].words;
        if (strcmp(k, "kind") == 0) aw = fusion_kind(v);
        fprintf(f, "attribute    %s=%s\n             %s\n", k, v, aw);
        if (strcmp(k, "calls") == 0) explain_calls(h, v, f);
    }
    return ferror(f) ? -1 : 0;
}
