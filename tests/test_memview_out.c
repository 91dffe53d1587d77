/* tests/test_memview_out.c: the memory viewer's output (sim/tools/memview_out.c,
 * sim/tools/memview_svg.c): the JSON parsed with jansson and checked against the
 * view and the budget (M4); the SVG well formed, self-contained, with both
 * limits, the peak and a legend row per allocation, names escaped. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_memview.h"

static char *to_text(const pl_memview *mv, int svg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(svg ? pl_memview_svg(mv, f) : pl_memview_json(mv, f), PL_OK);
    fclose(f);
    return text;
}

Test(memview, json_parses_and_agrees)
{
    pl_memview mv;
    pl_report rep;
    view_kernel("matmul", NULL, NULL, &mv, &rep);
    char *text = to_text(&mv, 0);
    json_t *j = th_json_parse(text, "memview json");
    cr_expect_eq((int64_t)th_json_num(j, "peak_bytes"), rep.vmem_bytes);
    cr_expect_eq((int64_t)th_json_num(j, "peak_step"), 2);
    cr_expect_eq((int64_t)th_json_num(j, "reserved_bytes"), rep.vmem_bytes);
    cr_expect_eq((int64_t)th_json_num(j, "vmem_limit"), rep.vmem_limit);
    cr_expect_eq((int64_t)th_json_num(j, "vmem_physical"), rep.chip->vmem_bytes);
    json_t *steps = json_object_get(j, "steps"), *allocs = json_object_get(j, "allocations");
    cr_assert(json_is_array(steps) && json_is_array(allocs));
    cr_expect_eq((int64_t)json_array_size(steps), rep.steps);
    cr_expect_eq((int)json_array_size(allocs), mv.n_allocs);
    json_t *peak_live = json_object_get(j, "live_at_peak");
    cr_assert(json_is_array(peak_live));
    cr_expect_eq(json_array_size(peak_live), 7);
    cr_expect(json_is_array(json_object_get(j, "hbm")));
    cr_expect_str_eq(th_json_str(json_array_get(allocs, 0), "name"), mv.allocs[0].name);
    json_decref(j);
    free(text);
    pl_memview_free(&mv);
}

Test(memview, svg_is_well_formed_with_both_limits_the_peak_and_a_legend)
{
    pl_memview mv;
    pl_report rep;
    view_kernel("flash_attention", NULL, NULL, &mv, &rep);
    char *svg = to_text(&mv, 1), why[128] = "";
    cr_expect(strncmp(svg, "<svg", 4) == 0 || strncmp(svg, "<?xml", 5) == 0, "%.80s", svg);
    cr_expect(tags_balance(svg, why, sizeof why), "%s", why);
    cr_expect(strstr(svg, "class=\"limit-scoped\"") && strstr(svg, "class=\"limit-physical\""), "both limits");
    cr_expect(strstr(svg, "class=\"peak\""), "the peak is marked");
    cr_expect(strstr(svg, "scoped VMEM limit") && strstr(svg, "physical VMEM"), "the lines are labelled");
    for (int a = 0; a < mv.n_allocs; a++)
        cr_expect(strstr(svg, mv.allocs[a].name), "legend lacks %s", mv.allocs[a].name);
    cr_expect(!strstr(svg, "<script") && !strstr(svg, "href=\"http"), "self-contained, no scripts");
    free(svg);
    pl_memview_free(&mv);
}

/* The y of the line of class cls ("<path class=\"cls\" d=\"Mx y H..."). */
static double line_y(const char *svg, const char *cls)
{
    char key[64];
    snprintf(key, sizeof key, "class=\"%s\" d=\"M", cls);
    const char *p = strstr(svg, key);
    cr_assert(p, "no %s line", cls);
    double x, y;
    cr_assert_eq(sscanf(p + strlen(key), "%lf %lf", &x, &y), 2);
    return y;
}

/* v4: the scoped limit is the whole VMEM (16 MiB): one height for both lines (M4). */
Test(memview, svg_draws_a_limit_equal_to_the_physical_vmem_at_its_height)
{
    pl_call call = copy_rows(0, 0);
    pl_memview mv;
    pl_report rep;
    view_call(&call, "v4", &mv, &rep);
    cr_assert_eq(mv.vmem_limit, mv.vmem_physical);
    char *svg = to_text(&mv, 1);
    cr_expect_float_eq(line_y(svg, "limit-scoped"), line_y(svg, "limit-physical"), 1e-9);
    free(svg);
    pl_memview_free(&mv);
    view_call(&call, NULL, &mv, &rep); /* v5e: 16 MiB of 128 MiB: the physical line is higher (smaller y) */
    svg = to_text(&mv, 1);
    cr_expect_lt(line_y(svg, "limit-physical"), line_y(svg, "limit-scoped"));
    free(svg);
    pl_memview_free(&mv);
}

Test(memview, svg_escapes_names)
{
    pl_call call = copy_rows(0, 0);
    call.in[0].name = "a<b&c";
    pl_memview mv;
    pl_report rep;
    view_call(&call, NULL, &mv, &rep);
    char *svg = to_text(&mv, 1), why[128] = "";
    cr_expect(strstr(svg, "a&lt;b&amp;c") && !strstr(svg, "a<b"), "names are escaped");
    cr_expect(tags_balance(svg, why, sizeof why), "%s", why);
    free(svg);
    pl_memview_free(&mv);
}
