/* sim/tools/hlo_json.c: a parsed HLO instruction as one JSON object
 * (pl_hlo_json, sim/tilesim_hlo.h): the facts pl_hlo_explain says in words,
 * for scripts: each shape with its dims, layout, tiles, memory space and
 * bytes with and without tile padding (null when too many to count).
 */
#include <inttypes.h>

#include "hlo.h"
#include "../base/json.h"

static void json_i64s(const int64_t *v, int n, FILE *f)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%" PRId64, i ? "," : "", v[i]);
    fputc(']', f);
}

static void json_shape(const pl_hlo_shape *s, FILE *f)
{
    char buf[512];
    fprintf(f, "{\"text\":");
    pl_json_string(f, pl_hlo_shape_format(s, buf, sizeof buf));
    fprintf(f, ",\"dtype\":\"%s\",\"dims\":", pl_hlo_dtype_name(s->dtype));
    json_i64s(s->dims, s->rank, f);
    fprintf(f, ",\"minor_to_major\":[");
    for (int i = 0; i < s->rank; i++) fprintf(f, "%s%d", i ? "," : "", s->minor_to_major[i]);
    fprintf(f, "],\"tiles\":[");
    for (int k = 0; k < s->n_tiles; k++) { /* a '*' is -1, as in XLA's TileProto */
        if (k) fputc(',', f);
        json_i64s(s->tiles[k], s->tile_rank[k], f);
    }
    int64_t sp = s->memory_space, b[2] = {pl_hlo_shape_bytes(s, 0), pl_hlo_shape_bytes(s, 1)};
    fprintf(f, "],\"element_bits\":%d,\"memory_space\":%" PRId64 ",\"memory\":\"%s\"",
            s->element_bits ? s->element_bits : pl_hlo_dtype_bits(s->dtype), sp,
            sp == 0 ? "HBM" : sp == 1 ? "VMEM" : sp == 5 ? "host" : "other");
    for (int i = 0; i < 2; i++) { /* null: too many to count in int64 */
        fprintf(f, i ? ",\"padded_bytes\":" : ",\"bytes\":");
        if (b[i] >= 0) fprintf(f, "%" PRId64, b[i]);
        else fprintf(f, "null");
    }
    fputc('}', f);
}

static void json_type(const pl_hlo_instr *h, const pl_hlo_type *t, FILE *f)
{
    fprintf(f, "\"tuple\":%s,\"nested\":%s,\"shapes\":[", t->is_tuple ? "true" : "false",
            t->nested ? "true" : "false");
    for (int i = 0; i < t->n; i++) {
        if (i) fputc(',', f);
        json_shape(&h->shapes[t->first + i], f);
    }
    fputc(']', f);
}

int pl_hlo_json(const pl_hlo_instr *h, FILE *f)
{
    if (!h || !f) return -1;
    fprintf(f, "{\"name\":");
    pl_json_string(f, h->name);
    fprintf(f, ",\"root\":%s,\"op\":", h->is_root ? "true" : "false");
    pl_json_string(f, h->op);
    fprintf(f, ",\"result\":{");
    json_type(h, &h->result, f);
    fprintf(f, "},\"operands\":[");
    for (int i = 0; i < h->n_operands; i++) {
        fprintf(f, "%s{\"name\":", i ? "," : "");
        pl_json_string(f, h->operands[i].name);
        fputc(',', f);
        json_type(h, &h->operands[i].type, f);
        fputc('}', f);
    }
    fprintf(f, "],\"literal\":");
    if (h->literal[0]) pl_json_string(f, h->literal);
    else fprintf(f, "null");
    fprintf(f, ",\"attributes\":{");
    for (int i = 0; i < h->n_attrs; i++) {
        if (i) fputc(',', f);
        pl_json_string(f, h->attr_key[i]);
        fputc(':', f);
        pl_json_string(f, h->attr_value[i]);
    }
    fprintf(f, "}}\n");
    return ferror(f) ? -1 : 0;
}
