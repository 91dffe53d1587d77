/* cli/fmt.c: numbers, tuples and JSON strings as the command prints them. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cli.h"

const char *cli_bytes(double b, char *buf, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *cli_time(double s, char *buf, size_t n)
{
    if (s < 1e-6) snprintf(buf, n, "%.0f ns", s * 1e9);
    else if (s < 1e-3) snprintf(buf, n, "%.2f us", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.2f ms", s * 1e3);
    else snprintf(buf, n, "%.3f s", s);
    return buf;
}

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
        fprintf(stderr, "tilesim %s: cannot write the output: %s\n", cmd->name, strerror(e));
        return CLI_EXIT_USAGE;
    }
    return status;
}
