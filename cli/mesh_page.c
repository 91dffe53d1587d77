/* cli/mesh_page.c: the page of a mesh kernel's run (`tilesim run MESH.so
 * --html FILE`, issue 24): the run's report, then every device's timeline
 * and every ICI link's, drawn in the browser from the run's Chrome trace
 * (sim/timing/trace.c), which the page carries whole. No network: the script is in
 * the page. The teaching page of one device (cli/html.c) walks a grid step
 * by step; a mesh's story is when each device waits on which copy, so this
 * one draws the time.
 *
 * The page draws on load into <svg id="lanes">: a row per device track and
 * per link, a rectangle per slice (hover: its name and time). Opened with
 * #selftest it writes what it drew into <pre id="selftest">
 * ("rows=R slices=S devices=D links=L"), which tests/browser reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/outfile.h"
#include "cli.h"

static const char page_js[] =
    "(function(){\n"
    "var T=JSON.parse(document.getElementById('trace').textContent);\n"
    "var ev=T.traceEvents||T, pn={}, tn={}, rows={}, order=[], end=0, slices=0;\n"
    "ev.forEach(function(e){if(e.ph!=='M')return;var k=e.pid+':'+e.tid;\n"
    "  if(e.name==='process_name')pn[e.pid]=e.args.name;if(e.name==='thread_name')tn[k]=e.args.name;});\n"
    "ev.forEach(function(e){if(e.ph!=='X')return;var k=e.pid+':'+e.tid;\n"
    "  if(!rows[k]){rows[k]=[];order.push([e.pid,e.tid,k]);}rows[k].push(e);slices++;\n"
    "  if(e.ts+e.dur>end)end=e.ts+e.dur;});\n"
    "order.sort(function(a,b){return a[0]-b[0]||a[1]-b[1];});\n"
    "var NS='http://www.w3.org/2000/svg', svg=document.getElementById('lanes'), L=260, W=1000, H=18;\n"
    "function el(n,a,p){var x=document.createElementNS(NS,n);for(var k in a)x.setAttribute(k,a[k]);p.appendChild(x);return x;}\n"
    "function color(s){var h=0;for(var i=0;i<s.length;i++)h=(h*31+s.charCodeAt(i))%360;return 'hsl('+h+',60%,62%)';}\n"
    "svg.setAttribute('width',L+W+20);svg.setAttribute('height',(order.length+1)*H+24);\n"
    "var devices={}, links=0;\n"
    "order.forEach(function(o,i){var k=o[2],y=i*H+4,p=pn[o[0]]||('process '+o[0]),t=tn[k]||('track '+o[1]);\n"
    "  var g=el('g',{'class':'row','data-row':p+' / '+t},svg);\n"
    "  if(p==='ICI links')links++;else devices[p]=1;\n"
    "  el('text',{x:4,y:y+13,'font-size':11,'font-family':'sans-serif'},g).textContent=(p==='ICI links'?'link ':p+': ')+t;\n"
    "  rows[k].forEach(function(e){var r=el('rect',{'class':'slice',x:L+W*e.ts/end,y:y+2,\n"
    "    width:Math.max(0.5,W*e.dur/end),height:H-4,fill:color(e.name)},g);\n"
    "    el('title',{},r).textContent=e.name+': '+e.dur.toFixed(3)+' us at '+e.ts.toFixed(3)+' us';});});\n"
    "var ax=order.length*H+18;el('text',{x:L,y:ax,'font-size':11,'font-family':'sans-serif'},svg).textContent='0 us';\n"
    "el('text',{x:L+W-80,y:ax,'font-size':11,'font-family':'sans-serif'},svg).textContent=end.toFixed(2)+' us';\n"
    "var n=Object.keys(devices).length;\n"
    "document.getElementById('drawn').textContent=order.length+' rows, '+slices+' slices over '+end.toFixed(2)+\n"
    "  ' us: '+n+' devices, '+links+' link tracks';\n"
    "if(location.hash.indexOf('selftest')>=0)document.getElementById('selftest').textContent=\n"
    "  'rows='+order.length+' slices='+slices+' devices='+n+' links='+links;\n"
    "})();\n";

/* s with &, < and > escaped, into f */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else fputc(*s, f);
    }
}

/* The trace's JSON into f, "</" written "<\/" (the same JSON) so that no
 * name in it can end the <script> that holds it. */
static int put_json(FILE *f, FILE *in)
{
    int c, prev = 0;
    while ((c = fgetc(in)) != EOF) {
        if (prev == '<' && c == '/') fputc('\\', f);
        fputc(c, f);
        prev = c;
    }
    return ferror(in) ? -1 : 0;
}

static int write_page(FILE *f, const char *title, const char *report, FILE *trace)
{
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f);
    put_text(f, title);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:16px}pre{background:#f4f4f4;padding:8px;"
          "overflow-x:auto}rect.slice:hover{stroke:#000}pre:empty{display:none}</style></head><body>\n<h1>", f);
    put_text(f, title);
    fputs("</h1>\n<p>Each device of the mesh runs the same kernel on its own host thread; a row per device's "
          "track (its grid steps, its copies, its waits) and per ICI link (the copies crossing it). Hover a "
          "slice for its name and time.</p>\n<pre id=\"report\">", f);
    put_text(f, report);
    fputs("</pre>\n<p id=\"drawn\"></p>\n<svg id=\"lanes\" xmlns=\"http://www.w3.org/2000/svg\"></svg>\n"
          "<pre id=\"selftest\"></pre>\n<script id=\"trace\" type=\"application/json\">", f);
    if (put_json(f, trace)) return -1;
    fprintf(f, "</script>\n<script>\n%s</script>\n</body></html>\n", page_js);
    return ferror(f) ? -1 : 0;
}

int cli_mesh_page(const cli_cmd *cmd, const pl_kernel_def *d, const int64_t *v, const pl_options *opt,
                  const char *path, int quiet)
{
    if (!path || !*path) return fprintf(stderr, "tilesim %s: --html: the file name is empty\n", cmd->name), 2;
    const char *dir = getenv("TMPDIR");
    char trace[4096], msg[PL_MSG_MAX];
    snprintf(trace, sizeof trace, "%s/tilesim_mesh_page_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = sim_tmp_make(trace); /* removed on Ctrl-C too */
    if (fd < 0) /* named: a TMPDIR that is not a directory we may write */
        return fprintf(stderr, "tilesim %s: --html: a temporary trace in '%.200s' (TMPDIR): %s\n", cmd->name,
                       dir && *dir ? dir : "/tmp", strerror(errno)), 2;
    close(fd);
    pl_options o = *opt;
    o.trace_path = trace;
    o.cost_only = 1; /* the same times; run has checked the outputs already */
    pl_mesh mesh;
    pl_mesh_report mr;
    pl_report rep, *reps = NULL;
    int status = pl_kernel_def_mesh(d, v, &mesh, msg, sizeof msg);
    if (status == PL_OK && !(reps = calloc((size_t)pl_mesh_devices(&mesh), sizeof *reps))) status = PL_ENOMEM;
    if (status == PL_OK) status = pl_kernel_run_mesh(d, v, &mesh, &o, &rep, NULL, NULL, &mr, reps);
    int rc = 0;
    char *report = NULL;
    size_t n = 0;
    FILE *mem = status == PL_OK || status == PL_EVERIFY ? open_memstream(&report, &n) : NULL;
    FILE *in = mem ? fopen(trace, "r") : NULL;
    if (!in) {
        fprintf(stderr, "tilesim %s: --html: %s\n", cmd->name,
                status != PL_OK && status != PL_EVERIFY ? (rep.error[0] ? rep.error : msg) : "the run left no trace");
        rc = status == PL_ENOMEM ? 1 : 2;
    } else {
        pl_mesh_report_print(&mr, reps, mem);
        fclose(mem), mem = NULL;
        char title[256], label[200], shape[64];
        snprintf(title, sizeof title, "%s %s on a %s", d->name, pl_kernel_format(d, v, label, sizeof label),
                 pl_mesh_format(&mesh, shape, sizeof shape));
        sim_out *f = sim_out_open(path, msg, sizeof msg); /* temp + rename: a failure leaves path as it was */
        if (!f || write_page(f->f, title, report ? report : "", in)) {
            if (f) snprintf(msg, sizeof msg, "writing '%s' failed", path), sim_out_abort(f);
            fprintf(stderr, "tilesim %s: --html: %s\n", cmd->name, msg);
            rc = 2;
        } else if (sim_out_commit(f, msg, sizeof msg)) {
            fprintf(stderr, "tilesim %s: --html: %s\n", cmd->name, msg);
            rc = 2;
        } else if (!quiet) {
            fprintf(stdout, "\npage: %s (every device's timeline and the links; open it in a browser)\n", path);
        }
    }
    if (mem) fclose(mem);
    if (in) fclose(in);
    free(report);
    free(reps);
    sim_tmp_drop(trace);
    return rc;
}
