/* tests/fuzz/fuzz_model_parse.c: libFuzzer harness for the model-file
 * parser of `tilesim review` (pl_model_parse in sim/review/model.c). The bytes are
 * the text of a model file; a NUL ends it early, as for a C string.
 * Whatever the text, the parser returns PL_OK with a usable model (every
 * size >= 1, heads shared evenly by the KV heads, a named model) or
 * PL_EINVAL with a message naming where, and never reads or writes out of
 * bounds, also with an error buffer too small for the message.
 *
 * `make fuzz` runs it with the others (tests/fuzz/fuzz.mk), from the seeds
 * in tests/fuzz/corpus/model_parse (the two model presets). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/tilesim_review.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TEXT (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size, MAX_TEXT);
    if (!text) return 0;
    pl_model m;
    char err[512];
    memset(err, 0x5a, sizeof err);
    int rc = pl_model_parse(text, "fuzz.model", &m, err, sizeof err);
    if (rc == PL_OK) {
        if (!memchr(m.name, '\0', sizeof m.name) || !m.name[0]) abort();
        if (m.layers < 1 || m.d_model < 1 || m.heads < 1 || m.kv_heads < 1 || m.head_dim < 1 || m.ffn < 1 ||
            m.vocab < 1 || !(m.params >= 1) || m.heads % m.kv_heads)
            abort();
    } else {
        if (rc != PL_EINVAL) abort();
        fz_check_message(err, sizeof err);
    }
    char small[7];
    memset(small, 0x5a, sizeof small);
    if (pl_model_parse(text, "fuzz.model", &m, small, sizeof small) != rc) abort();
    if (rc != PL_OK) fz_check_message(small, sizeof small);
    free(text);
    return 0;
}
