/* cli/fmt.c: numbers, tuples and JSON strings as the command prints them. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cli.h"

const char *cli_tuple(const int64_t *v, int rank, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < rank && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, d ? ", %lld" : "%lld", (long long)v[d]);
    if (at < len) snprintf(buf + at, len - at, ")");
    return buf;
}

void cli_json_number(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

const char *cli_first_sentence(const char *msg, size_t max, char *buf, size_t n)
{
    size_t len = strcspn(msg, "\n");
    if (len > max) {
        const char *semi = strstr(msg, "; "), *stop = strstr(msg, ". ");
        const char *cut = semi && (!stop || semi < stop) ? semi : stop;
        if (cut && (size_t)(cut - msg) < len) len = (size_t)(cut - msg);
    }
    while (len > 0 && (msg[len - 1] == ':' || msg[len - 1] == ' ')) len--; /* "...smaller blocks:" */
    snprintf(buf, n, "%.*s", (int)len, msg);
    return buf;
}

int cli_finish_stdout(const cli_cmd *cmd, int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        fprintf(stderr, "tilesim%s%s: cannot write the output: %s\n", cmd->name[0] ? " " : "", cmd->name, strerror(e));
        return CLI_EXIT_USAGE;
    }
    return status;
}

void cli_vmem_hint(const pl_report *rep, FILE *f)
{
    if (!rep || rep->status != PL_EVMEM || !rep->chip || rep->vmem_bytes <= 0) return;
    /* what a CLI user types to raise the limit, as the call's
     * vmem_limit_bytes would (M4); past physical VMEM nothing does */
    long long need = (long long)(rep->vmem_bytes / (1 << 20) + (rep->vmem_bytes % (1 << 20) != 0)),
              phys = rep->chip->vmem_bytes >> 20;
    if (rep->vmem_bytes <= rep->chip->vmem_bytes)
        fprintf(f, "\nIt fits the %lld MiB of physical VMEM of a %s TensorCore: --vmem-limit %lldM runs it as a call "
                "that sets vmem_limit_bytes that high (rule M4).\n", phys, rep->chip->name, need);
    else
        fprintf(f, "\nIt needs %lld MiB, more than the %lld MiB of physical VMEM of a %s TensorCore: no limit fits it; "
                "use smaller blocks (rule M4).\n", need, phys, rep->chip->name);
}
