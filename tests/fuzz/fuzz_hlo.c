/* tests/fuzz/fuzz_hlo.c: libFuzzer harness for the HLO op reader
 * (sim/tools/hlo_parse.c, sim/tools/hlo_shape.c, sim/tools/hlo_explain.c): pl_hlo_parse of
 * the input as one instruction, and pl_hlo_parse_shape of it as a shape.
 * A refused text must come with a message "column C: ..." whose column is
 * inside the text (or just past its end). An accepted one is explained and
 * written as JSON (to /dev/null), each of its shapes is printed, read back
 * to the same shape, and counted: the padded bytes are never fewer than the
 * logical ones. Never a read or write out of bounds, never an abort. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/tilesim_hlo.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(const char *text, const char *msg, size_t size)
{
    unsigned long col = 0;
    if (sscanf(msg, "column %lu: ", &col) != 1 || col < 1 || col > size + 1) abort();
    (void)text;
}

static void check_shape(const pl_hlo_shape *s)
{
    int64_t b = pl_hlo_shape_bytes(s, 0), p = pl_hlo_shape_bytes(s, 1);
    if (b >= 0 && p >= 0 && p < b) abort();
    char buf[1024], msg[512];
    memset(buf, 0x5a, sizeof buf);
    pl_hlo_shape_format(s, buf, sizeof buf);
    if (!memchr(buf, '\0', sizeof buf)) abort();
    pl_hlo_shape again;
    if (pl_hlo_parse_shape(buf, &again, msg, sizeof msg) != PL_OK) abort(); /* what it prints, it reads */
    if (pl_hlo_shape_bytes(&again, 1) != p || pl_hlo_shape_bytes(&again, 0) != b) abort();
}

static pl_hlo_instr instr; /* ~70 KiB: not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null) null = fopen("/dev/null", "w");
    if (!null) return 0;
    char *text = fz_text(data, size, 8192);
    if (!text) return 0;
    size_t len = strlen(text); /* an input with a NUL byte is read up to it */
    char msg[512];
    memset(msg, 0x5a, sizeof msg);
    int rc = pl_hlo_parse(text, &instr, msg, sizeof msg);
    if (rc == PL_OK) {
        if (instr.n_shapes < 0 || instr.n_shapes > PL_HLO_MAX_SHAPES) abort();
        for (int i = 0; i < instr.n_shapes; i++) check_shape(&instr.shapes[i]);
        if (pl_hlo_explain(&instr, null) != 0 || pl_hlo_json(&instr, null) != 0) abort();
    } else if (rc != PL_EINVAL || !memchr(msg, '\0', sizeof msg) || !msg[0]) {
        abort();
    } else {
        check_refusal(text, msg, len);
    }
    pl_hlo_shape s;
    memset(msg, 0x5a, sizeof msg);
    rc = pl_hlo_parse_shape(text, &s, msg, sizeof msg);
    if (rc == PL_OK) check_shape(&s);
    else if (rc != PL_EINVAL || !memchr(msg, '\0', sizeof msg) || !msg[0]) abort();
    else check_refusal(text, msg, len);
    free(text);
    return 0;
}
