/* cli/commands.c: the commands whose code lives in more than one file
 * (sweep and explain: the kernel form and the original matmul form) or
 * whose help is plain text (chips), with their synopses and help. Data
 * only: the verbs and main.c read it (the bottom of cli/, with help.c). */
#include "cli.h"

const cli_cmd cli_chips_cmd = {"chips", "tilesim chips [--json] [--chip-file FILE]",
                                "tilesim chips [--json] [--chip-file FILE]",
    /* help */
    "Print the chip presets with every figure of the timing model, in readable units.\n"
                   "  --json            one JSON object instead of the table (figures in SI units)\n"
                   "  --chip-file FILE  add the what-if chip read from FILE ('key = value' lines, '# comments',\n"
                   "                    'base = v5e' first to start from a preset) as another column\n",
    NULL};
const cli_cmd cli_sweep_cmd = {
    "sweep", "tilesim sweep KERNEL [--vary name=v1,v2,...] [options] | tilesim sweep matmul M N K [options]",
    "tilesim sweep KERNEL|PLUGIN.so[:NAME] [--vary name=v1,v2,...] [--set name=value ...] [--chip NAME | --chip-file FILE] "
    "[--vmem-limit BYTES] [--csv | --json] [--svg FILE] [--top N] [--threads N]\n"
    "       tilesim sweep matmul M N K [--dtype f32|bf16] [--chip NAME | --chip-file FILE] [--bm LIST] [--bn LIST] "
    "[--bk LIST] [--vmem-limit BYTES] [--csv | --json] [--top N] [--svg FILE] [--threads N]",
    /* help */
    "Any kernel: run every combination of parameter values in cost-only mode on all host cores and\n"
                   "rank the legal ones by predicted time; the rejected ones are listed with their reason. A parameter\n"
                   "given --vary takes that list, one given --set that value, any other the candidates its definition\n"
                   "lists for sweeps ('tilesim list'), or its default when it has none; a dtype keeps its default on\n"
                   "the chip unless --vary or --set names it (the data's dtype is not a tiling).\n"
                   "  --vary NAME=V1,V2,...  sweep a parameter over these values (repeatable)\n"
                   "  --set NAME=VALUE       fix a parameter (repeatable)\n"
                   "  --chip NAME            a preset (see 'tilesim chips'; default v5e)\n"
                   "  --chip-file FILE       a what-if chip file instead of a preset\n"
                   "  --vmem-limit BYTES     pin the scoped VMEM limit (rule M4; bytes, or 32M); without it each configuration may\n"
                   "                         raise its limit up to the physical VMEM, as an autotuner's may: the\n"
                   "                         'limit' column shows what it sets, '*' what is above the default\n"
                   "  --csv | --json         machine-readable output, every configuration\n"
                   "  --svg FILE             also write a roofline plot of the legal configurations\n"
                   "  --top N                legal rows to show in the table (default 20)\n"
                   "  --threads N            host threads (default: one per core)\n"
                   "KERNEL is a built-in name ('tilesim list'), PLUGIN.so (one kernel) or PLUGIN.so:NAME.\n\n"
                   "matmul M N K: the original matmul sweep, kept as it was.\n"
                   "Evaluate every (bm, bn, bk) block configuration of the tiled matmul C (M x N) = A (M x K) @ B\n"
                   "(K x N) in cost-only mode on all host cores, and rank the legal ones by predicted time.\n"
                   "  --dtype f32|bf16     element type of A, B and C (default f32)\n"
                   "  --chip NAME          a preset (see 'tilesim chips'; default v5e)\n"
                   "  --chip-file FILE     a what-if chip file instead of a preset\n"
                   "  --bm/--bn/--bk LIST  comma-separated block sizes (default 128,256,512,1024,2048)\n"
                   "  --vmem-limit BYTES   the scoped VMEM limit (default: the chip's; rule M4; 32M, 32MiB too)\n"
                   "  --csv | --json       machine-readable output, every row\n"
                   "  --top N              legal rows to show (default 20 in text, all in CSV and JSON)\n"
                   "  --svg FILE           also write a roofline plot of the legal configurations\n"
                   "  --threads N          host threads (default: one per core)\n"
                   "Exit status 1 when no configuration is legal.\n",
    NULL};
const cli_cmd cli_explain_cmd = {
    "explain", "tilesim explain KERNEL [--set name=value ...] | tilesim explain matmul M N K BM BN BK [options]",
    "tilesim explain KERNEL|PLUGIN.so[:NAME] [--set name=value ...] [--chip NAME | --chip-file FILE] [--html FILE]\n"
    "       [--vmem-limit BYTES] [--trace-limit BYTES]\n"
    "       tilesim explain matmul M N K BM BN BK [--dtype f32|bf16] [--chip NAME | --chip-file FILE] [--vmem-limit BYTES]",
    /* help */
    "Any kernel: narrate the pipeline of one configuration step by step (grids of at most 512 steps):\n"
                   "which block each operand holds, what was copied, skipped, kept or written back, and the rule.\n"
                   "  --set NAME=VALUE     change a parameter from its default (repeatable; 'tilesim list')\n"
                   "  --chip NAME          a preset (default v5e)\n"
                   "  --chip-file FILE     a what-if chip file instead of a preset\n"
                   "  --vmem-limit BYTES   the scoped VMEM limit of the call (rule M4), in place of the kernel's own\n"
                   "  --html FILE          also write the teaching page: the walk step by step, the timeline\n"
                   "  --trace-limit BYTES  refuse a page whose timeline is estimated larger (64M, 1G, none; default 256M)\n\n"
                   "matmul M N K BM BN BK: the original matmul narration.\n"
                   "Narrate the pipeline of one small tiled matmul grid step by step: which block each operand\n"
                   "holds, what was copied, skipped, kept or written back, and the rule of PALLAS.md behind it.\n"
                   "Grids of more than 512 steps are refused.\n"
                   "  --dtype f32|bf16     element type (default f32)\n"
                   "  --chip NAME          a preset (default v5e)\n"
                   "  --chip-file FILE     a what-if chip file instead of a preset\n",
    NULL};
