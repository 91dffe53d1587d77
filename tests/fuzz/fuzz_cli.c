/* tests/fuzz/fuzz_cli.c: libFuzzer harness for the `tilesim` command's
 * argument parsing, called in-process through tilesim_main (cli/main.c).
 *
 * The bytes are the command line, one word per line ('\n' separates words;
 * a NUL ends a word early, as it would in argv). The harness keeps each
 * input to milliseconds and inside a scratch directory:
 *   - at most MAX_WORDS words of at most MAX_WORD bytes;
 *   - no word may contain '/', and the command runs in a scratch directory
 *     (which holds a few chip files, a shapes file s.csv for tune and a
 *     measurements file m.csv for calibrate; --svg and --chip-file values are also
 *     made to name files there), so a run never reads or writes anything
 *     else;
 *   - a legacy sweep (sweep matmul M N K) whose configurations would walk
 *     more than STEP_BUDGET grid steps in all is not run, nor are the kernel
 *     verbs (run, verify, sweep/explain KERNEL) with a number above 1024 or
 *     numbers whose product passes 2^30, nor anything with more than 2
 *     threads.
 * The scratch directory is under $TMPDIR and removed at exit (fuzz_tmp.h).
 * The command writes to stdout and stderr: the harness points the stdio
 * globals at /dev/null around the call. libFuzzer and the sanitizers keep
 * the real stderr (libFuzzer holds its own FILE pointer, the sanitizers write
 * to the descriptor), so crash reports are still seen. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cli/cli.h"
#include "fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_WORDS 24
#define MAX_WORD 160
#define STEP_BUDGET 40000
#define SWEEP_MAX_STEPS (1LL << 21) /* cli/sweep.c runs no configuration with more steps */
#define MAX_SIZE (1LL << 24)        /* cli/sweep.c's bound on sizes and blocks */

static char scratch[512];
static FILE *devnull;

static void put_file(const char *name, const char *text)
{
    char path[sizeof scratch + 32];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    FILE *f = fopen(path, "w");
    if (f) fputs(text, f), fclose(f);
}

/* at exit: the scratch directory and whatever the command wrote there */
static void remove_scratch(void) { fz_remove_tree(scratch); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fz_tmp_path(scratch, sizeof scratch, "tilesim_fuzz_cli_XXXXXX");
    if (!mkdtemp(scratch)) abort();
    atexit(remove_scratch);
    devnull = fopen("/dev/null", "w");
    if (!devnull) abort();
    put_file("a.chip", "base = v5p\nname = what-if\nhbm_gbps = 4000\n");
    put_file("b.chip", "base = v7x\nstep_overhead_us = 0\ndma_latency_us = 0\n");
    put_file("c.chip", "mxu_width = 8\nvmem_mib = 1\nvmem_limit_mib = 1\n");
    put_file("bad.chip", "base = v9\n");
    put_file("empty.chip", "");
    /* tune's shapes and calibrate's measurements: small, so a run that parses them stays quick */
    put_file("s.csv", "M,N,K\n64,64,64\n# a comment\n128,64,256\n");
    put_file("m.csv", "kernel,chip,time_us,params\nmatmul,v5e,12.5,M=128 N=128 K=128 bm=128 bn=128 bk=128\n");
    return 0;
}

/* ---- bounding the work of a sweep ------------------------------------------- */

/* As cli/args.c decides: "-x" and "--x" are options, "-", "-5" are not. */
static int is_option(const char *s) { return s[0] == '-' && s[1] && !(s[1] >= '0' && s[1] <= '9'); }

/* A whole number as cli/args.c accepts it (digits, 1..max), or -1. */
static int64_t whole(const char *s, size_t len)
{
    if (len == 0 || len > 9) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= MAX_SIZE ? v : -1;
}

/* Parse a comma list into out; returns the count, or -1 when it is not one
 * the command accepts (then the command rejects it without running). */
static int list(const char *s, int64_t *out)
{
    int n = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (n == CLI_MAX_LIST || (out[n] = whole(s, len)) < 0) return -1;
        n++;
        if (!comma) return n;
        s = comma + 1;
    }
}

/* The value of option name in words (either "--x v" or "--x=v"), or NULL. */
static const char *value_of(char **w, int n, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < n; i++) {
        if (strcmp(w[i], "--") == 0) return NULL;
        if (strncmp(w[i], name, len) != 0) continue;
        if (w[i][len] == '=') return w[i] + len + 1;
        if (w[i][len] == '\0' && i + 1 < n) return w[i + 1];
    }
    return NULL;
}

/* M, N, K: the positional words after "matmul", as cli/args.c splits them
 * (an option of the sweep that takes a value takes the next word). */
static int sweep_dims(char **w, int n, int64_t *dims)
{
    static const char *flags[] = {"--csv", "--json", "--help", "-h"};
    const char *pos[5];
    int np = 0, only_pos = 0;
    for (int i = 0; i < n && np < 5; i++) {
        if (only_pos || !is_option(w[i])) {
            pos[np++] = w[i];
            continue;
        }
        if (strcmp(w[i], "--") == 0) only_pos = 1;
        int flag = strchr(w[i], '=') != NULL || strcmp(w[i], "--") == 0;
        for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) flag |= strcmp(w[i], flags[f]) == 0;
        if (!flag) i++; /* its value */
    }
    if (np != 4) return -1;
    for (int d = 0; d < 3; d++)
        if ((dims[d] = whole(pos[1 + d], strlen(pos[1 + d]))) < 0) return -1;
    return 0;
}

/* Grid steps the sweep would walk in all (those it runs), or -1 when it
 * would reject the command line first. */
static int64_t sweep_steps(char **w, int n)
{
    static const char *opts[3] = {"--bm", "--bn", "--bk"};
    int64_t lists[3][CLI_MAX_LIST], dims[3];
    int counts[3];
    for (int d = 0; d < 3; d++) {
        const char *v = value_of(w, n, opts[d]);
        if (!v) {
            counts[d] = 0;
            for (int64_t b = 128; b <= 2048; b *= 2) lists[d][counts[d]++] = b;
        } else if ((counts[d] = list(v, lists[d])) < 0) {
            return -1;
        }
    }
    if (sweep_dims(w, n, dims)) return -1;
    int64_t total = 0;
    for (int x = 0; x < counts[0]; x++)
        for (int y = 0; y < counts[1]; y++)
            for (int z = 0; z < counts[2]; z++) {
                int64_t b[3] = {lists[0][x], lists[1][y], lists[2][z]}, steps = 1;
                for (int d = 0; d < 3; d++) {
                    int64_t g = (dims[d] + b[d] - 1) / b[d];
                    steps = steps > SWEEP_MAX_STEPS ? steps : steps * g;
                }
                if (steps <= SWEEP_MAX_STEPS) total += steps;
                if (total > STEP_BUDGET) return total;
            }
    return total;
}

/* Every option value given for a prefix of --threads (getopt_long takes
 * "--thr 4" too) is 1 or 2: more host threads only cost time here. */
static int few_threads(char **w, int n)
{
    for (int i = 0; i < n; i++) {
        size_t len = strcspn(w[i], "=");
        if (len < 4 || strncmp(w[i], "--threads", len) != 0) continue;
        const char *v = w[i][len] ? w[i] + len + 1 : i + 1 < n ? w[i + 1] : "1";
        if (!(v[0] >= '1' && v[0] <= '2' && !v[1])) return 0;
    }
    return 1;
}

/* The kernel-definition verbs (run, verify, sweep KERNEL, explain KERNEL)
 * take sizes through --set and --vary: every number at most 1024 and their
 * product at most 2^30, so no run allocates or computes much. */
static int small_numbers(char **w, int n)
{
    double product = 1;
    for (int i = 0; i < n; i++)
        for (const char *p = w[i]; *p;) {
            if (*p < '0' || *p > '9') {
                p++;
                continue;
            }
            double v = 0;
            for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + (*p - '0');
            if (v > 1024) return 0;
            product *= v > 1 ? v : 1;
        }
    return product <= (double)(1 << 30);
}

static int numeric(const char *s) { return whole(s, strlen(s)) > 0; }

/* 1: the command line may run; 0: skip it (too slow). */
static int affordable(char **w, int n)
{
    if (n < 2 || !few_threads(w, n)) return n < 2;
    const char *v = w[1];
    if (!strcmp(v, "chips") || !strcmp(v, "help") || !strcmp(v, "--help") || !strcmp(v, "-h") || !strcmp(v, "list"))
        return 1;
    int legacy = n > 3 && !strcmp(w[2], "matmul") && numeric(w[3]); /* sweep/explain matmul M N K ... */
    if (legacy && !strcmp(v, "explain")) return 1;                  /* at most 512 steps */
    if (legacy && !strcmp(v, "sweep")) return sweep_steps(w + 2, n - 2) <= STEP_BUDGET;
    return small_numbers(w, n);
}

/* ---- the harness ---------------------------------------------------------------- */

/* Make the value of --svg / --chip-file name a file in the scratch directory. */
static char *sandboxed(const char *prefix, const char *value)
{
    size_t n = strlen(prefix) + strlen(scratch) + strlen(value) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s/%s", prefix, scratch, value);
    return s;
}

static int split(const uint8_t *data, size_t size, char **w)
{
    int n = 0;
    w[n++] = strdup("tilesim");
    size_t at = 0;
    while (at <= size && n < MAX_WORDS + 1) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        if (len > MAX_WORD || memchr(data + at, '/', len)) return -n; /* too long, or a path */
        char *word = malloc(len + 1);
        memcpy(word, data + at, len);
        word[len] = '\0';
        w[n++] = word;
        at += len + 1;
        if (!nl) break;
    }
    return at < size ? -n : n; /* words left over: too many */
}

static void sandbox_paths(char **w, int n)
{
    for (int i = 1; i < n; i++) {
        /* the next word is the value unless cli/args.c takes it for an option ("-" and "-5" are values) */
        int spaced = (strcmp(w[i], "--svg") == 0 || strcmp(w[i], "--chip-file") == 0) && i + 1 < n &&
                     w[i + 1][0] && !is_option(w[i + 1]);
        if (spaced) {
            char *s = sandboxed("", w[i + 1]);
            free(w[i + 1]);
            w[++i] = s;
            continue;
        }
        const char *pre = strncmp(w[i], "--svg=", 6) == 0 ? "--svg=" : strncmp(w[i], "--chip-file=", 12) == 0 ? "--chip-file=" : NULL;
        if (pre && w[i][strlen(pre)]) {
            char *s = sandboxed(pre, w[i] + strlen(pre));
            free(w[i]);
            w[i] = s;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *w[MAX_WORDS + 2] = {0};
    int n = split(data, size, w);
    if (n > 0) sandbox_paths(w, n);
    if (n > 0 && affordable(w, n)) {
        char *argv[MAX_WORDS + 2];
        memcpy(argv, w, sizeof argv);
        argv[n] = NULL;
        FILE *out = stdout, *err = stderr;
        stdout = devnull, stderr = devnull;
        /* files the command writes by relative name (--trace, --heatmap, ...) land in the scratch directory */
        int here = open(".", O_RDONLY);
        if (here < 0 || chdir(scratch) != 0) abort();
        int rc = tilesim_main(n, argv);
        if (fchdir(here) != 0) abort();
        close(here);
        fflush(devnull);
        clearerr(devnull);
        stdout = out, stderr = err;
        if (rc < 0 || rc > CLI_EXIT_USAGE) abort(); /* exit statuses are 0, 1, 2 */
    }
    for (int i = 0; i < (n < 0 ? -n : n); i++) free(w[i]);
    return 0;
}
