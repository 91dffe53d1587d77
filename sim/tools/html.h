/* sim/tools/html.h: the teaching page of a run (issue 14, "The page"): one
 * self-contained HTML file (inline CSS and script, nothing fetched) that
 * steps through the grid walk of one kernel configuration, draws the
 * timeline of its TensorCores and leaves places for the op profile, the
 * roofline and the memory viewer.
 *
 * Two halves: sim_page_record walks the configuration once in cost-only
 * mode with an on_step recorder (what the pipeline did per operand, as
 * `tilesim explain` narrates it), the kernel's op log of each step and the
 * trace-event JSON of the run (the timeline); sim_page_write turns that
 * into the page. Not part of the public API.
 */
#ifndef TILESIM_HTML_H
#define TILESIM_HTML_H

#include <stdio.h>

#include "../kdef.h"
#include "../tilesim.h"

/* Steps the page embeds, over all cores (as explain narrates at most 512);
 * the page says when a run had more. */
#define SIM_PAGE_MAX_STEPS 512
/* Block cells drawn per operand; an operand with more says so instead. */
#define SIM_PAGE_MAX_CELLS 4096

/* The sections other tools fill. Each field is an HTML fragment (an SVG
 * element is one) inserted as is inside the section of that name; NULL or
 * "" shows "not available". The caller owns the strings. more_*: further
 * sections after those, n_more of them (title plain text, escaped). */
#define SIM_PAGE_MAX_MORE 8
typedef struct sim_page_extras {
    const char *op_profile;    /* section "Op profile": e.g. the profile's <table> */
    const char *roofline;      /* section "Roofline": e.g. the run's roofline <svg> */
    const char *memory_viewer; /* section "Memory viewer": e.g. the VMEM-over-steps <svg> */
    int n_more;
    const char *more_title[SIM_PAGE_MAX_MORE];
    const char *more_html[SIM_PAGE_MAX_MORE];
} sim_page_extras;

/* One operand of one embedded step. */
typedef struct sim_page_opstep {
    int8_t act;                    /* pl_step_action */
    int8_t wb;                     /* output: its block went back to HBM after this step (P3) */
    int16_t slot;
    int64_t block[PL_MAX_RANK];
    int64_t wb_block[PL_MAX_RANK];
} sim_page_opstep;

typedef struct sim_page_step {
    int core;
    int64_t step;                  /* on its core */
    int64_t idx[PL_MAX_GRID];
    char ops[200];                 /* the kernel's ops, summarised ("pl_dot 128x128x128 f32; ...") */
    sim_page_opstep *op;           /* n_ops of them */
} sim_page_step;

/* An operand as the page draws it. */
typedef struct sim_page_operand {
    char name[PL_NAME_MAX];
    pl_role role;
    pl_memspace space;
    pl_dtype dtype;
    int rank, buffers;
    int64_t shape[PL_MAX_RANK];    /* its HBM array */
    int64_t block[PL_MAX_RANK];    /* elements of a block (squeezed: 1) */
    int64_t nblocks[PL_MAX_RANK];  /* blocks per dimension, the edge ones counted (B6) */
} sim_page_operand;

typedef struct sim_page {
    char title[600];               /* "matmul M=512 ... on v5e" */
    const char *origin;            /* "run" or "explain": the command that wrote it */
    pl_report rep;
    double step_overhead_s;        /* the chip's (P9): the timeline draws it before each step */
    int grid_rank;
    int64_t grid[PL_MAX_GRID];
    int n_ops;
    sim_page_operand op[PL_MAX_CALL_OPERANDS];
    int64_t total_steps;           /* all cores, as run */
    int n_steps;                   /* embedded: at most SIM_PAGE_MAX_STEPS */
    sim_page_step *steps;
    char *trace;                   /* the trace-event JSON, cut after the embedded steps; NULL: none */
    size_t trace_len;
    int trace_cut;                 /* 1: events after the last embedded step were left out */
} sim_page;

/* Walk kernel d at values v with opt's chip (cost only, on_step and a trace
 * of its own) and record the page's data into *page (zeroed first). PL_OK,
 * or an error code with a message into msg naming what failed. */
int sim_page_record(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, sim_page *page, char *msg,
                    size_t n);
void sim_page_free(sim_page *page);
/* Would sim_page_record refuse d at v for its timeline's size (the trace limit, sim_trace_check)? -1 with
 * msg, else 0: for a check before a long run whose page would be refused after it. */
int sim_page_check(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, char *msg, size_t n);
/* The block ops the kernel made at c's current step, in words ("x @ y into
 * acc (256x128x256); ..."), repeats counted; "no block ops" when none. For
 * a wrapper around a kernel (the page's recorder, explain's narrator). */
void sim_step_ops_words(pl_ctx *c, char *buf, size_t cap);

/* Write the page to f. extras: NULL, or the sections other tools give.
 * 0, or -1 on a write error. */
int sim_page_write(const sim_page *page, const sim_page_extras *extras, FILE *f);

/* The page's style sheet and script (html_js.c), inlined by sim_page_write. */
extern const char sim_page_css[];
extern const char sim_page_js[];

#endif
