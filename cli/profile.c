/* cli/profile.c: `tilesim profile KERNEL`: the op profile of one run, as
 * XProf's HLO op profile shows a real one (sim/tools/profile_print.c), and with
 * --roofline FILE.svg the run's roofline (sim/tools/roofline_run.c).
 *
 * The kernel, its --set values and the chip are resolved as for run
 * (cli_kernel_setup); the run is cost-only: timing does not depend on the
 * data, and the profile checks no output. Exit status: 0, 1 out of host
 * memory, 2 a bad command line, a refused configuration or an unwritable
 * --roofline file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/outfile.h"
#include "cli.h"

const cli_cmd cli_profile_cmd = {
    "profile", "tilesim profile KERNEL [--set name=value ...] [--chip NAME | --chip-file FILE] [--json] "
               "[--roofline FILE.svg]",
    "tilesim profile KERNEL|PLUGIN.so[:NAME] [--set name=value ...] [--chip NAME | --chip-file FILE] [--json]\n"
    "       [--roofline FILE.svg] [--host-threads N] [--vmem-limit BYTES]",
    NULL, cli_profile_help};

#define PROFILE_OPTS (K_SET | K_CHIP | K_CHIP_FILE | K_JSON | K_HOST_THREADS | K_VMEM_LIMIT)

void cli_profile_help(const cli_cmd *cmd, FILE *f)
{
    (void)cmd;
    fprintf(f, "usage: %s\n\n", cli_profile_cmd.synopsis);
    fprintf(f, "Run one configuration (cost-only: the timing does not depend on the data) and print its op\n"
               "profile, as XProf's HLO op profile: a row per pl_ / pltpu_ function the kernel called, per\n"
               "operand's pipeline copies, the per-step overhead (P9) and the waits for copies, sorted by time\n"
               "so the few rows worth attention come first; each with its category (MXU, VPU, EUP, scalar, DMA),\n"
               "count, time, share of the total, FLOPs, achieved FLOP/s against its unit's peak, bytes and\n"
               "bandwidth against HBM (copies) or VMEM (ops). The times add up to the report's time; copies\n"
               "that overlap compute show their busy time and are marked overlapped. On a megacore chip the\n"
               "times are those of the TensorCore that finished last (G4).\n");
    cli_kopt_help(PROFILE_OPTS, f);
    fprintf(f, "  %-24s %s\n", "--roofline FILE.svg", "also write the run's roofline: each op at its FLOP per VMEM "
                                                     "byte under the HBM and VMEM ceilings");
    fprintf(f, "KERNEL is a built-in name ('tilesim list'), PLUGIN.so (a plugin with one kernel) or\n"
               "PLUGIN.so:NAME.\n");
}

/* argv without --roofline FILE (or --roofline=FILE), into out[1..]: out[0]
 * is the verb, as cli_kernel_setup wants argv[-1]. -1: go on; else the exit
 * status (help printed, or a usage error). */
static int take_roofline(int argc, char **argv, char **out, int *n, const char **svg)
{
    *n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            cli_profile_help(&cli_profile_cmd, stdout);
            return cli_finish_stdout(&cli_profile_cmd, 0);
        }
        if (!strcmp(argv[i], "--")) { /* positional from here on */
            while (i < argc) out[1 + (*n)++] = argv[i++];
            break;
        }
        if (!strncmp(argv[i], "--roofline=", 11)) *svg = argv[i] + 11;
        else if (!strcmp(argv[i], "--roofline")) {
            if (i + 1 >= argc) return cli_fail(&cli_profile_cmd, "--roofline: missing the file name");
            *svg = argv[++i];
        } else out[1 + (*n)++] = argv[i];
    }
    if (*svg && !**svg) return cli_fail(&cli_profile_cmd, "--roofline: the file name is empty");
    return -1;
}

static int write_roofline(const pl_kernel_def *d, const pl_report *rep, const char *path, int quiet)
{
    char msg[PL_MSG_MAX];
    sim_out *f = sim_out_open(path, msg, sizeof msg); /* temp + rename: a failure leaves path as it was */
    if (!f) return cli_fail(&cli_profile_cmd, "--roofline: %s", msg);
    if (pl_roofline_run_svg(rep, d->name, f->f) != 0) {
        sim_out_abort(f);
        return cli_fail(&cli_profile_cmd, "--roofline: writing '%s' failed (disk full?)", path);
    }
    if (sim_out_commit(f, msg, sizeof msg)) return cli_fail(&cli_profile_cmd, "--roofline: %s", msg);
    if (!quiet) fprintf(stdout, "roofline: %s\n", path);
    return 0;
}

int cli_profile(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_profile_cmd;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    pl_report *rep = calloc(1, sizeof *rep);
    if (!args || !rep) {
        free(args), free(rep);
        fprintf(stderr, "tilesim profile: out of host memory\n");
        return 1;
    }
    const char *svg = NULL;
    int n, rc = take_roofline(argc, argv, args, &n, &svg);
    cli_kopts o;
    const pl_kernel_def *d = NULL;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_chip file_chip;
    pl_options opt;
    args[0] = (char *)"profile";
    if (rc < 0) rc = cli_kernel_setup(cmd, PROFILE_OPTS, n, args + 1, &o, &d, v, &file_chip, &opt);
    if (rc >= 0) goto out;
    char why[PL_MSG_MAX];
    if (svg && sim_out_probe(svg, why, sizeof why)) { /* before the run, as every output: not after its report */
        rc = cli_fail(&cli_profile_cmd, "--roofline: %s", why);
        goto out;
    }
    opt.cost_only = 1;
    int status = pl_kernel_run(d, v, &opt, rep, NULL, NULL);
    if (status != PL_OK) {
        char label[512];
        fflush(stdout);
        fprintf(stderr, "tilesim profile: %s %s: %s\n", d->name, pl_kernel_format(d, v, label, sizeof label),
                rep->error);
        cli_vmem_hint(rep, stderr);
        rc = status == PL_ENOMEM ? 1 : CLI_EXIT_USAGE;
        goto out;
    }
    if (o.json) pl_profile_json(rep, stdout);
    else {
        if (d->mesh) { /* pl_kernel_run kept the slowest device's report, with the mesh's time */
            pl_mesh mesh;
            char shape[64], msg[PL_MSG_MAX];
            if (pl_kernel_def_mesh(d, v, &mesh, msg, sizeof msg) == PL_OK)
                fprintf(stdout, "mesh kernel on a %s: the profile of its slowest device\n\n",
                        pl_mesh_format(&mesh, shape, sizeof shape));
        }
        pl_profile_print(rep, stdout);
    }
    rc = svg ? write_roofline(d, rep, svg, o.json) : 0;
    rc = cli_finish_stdout(cmd, rc);
out:
    free(args);
    free(rep);
    return rc;
}
