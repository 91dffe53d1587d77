/* tests/fuzz/fuzz_chip_parse.c: libFuzzer harness for the chip-file parser
 * (pl_chip_parse in sim/timing/chips.c). The bytes are the text of a chip file; a
 * NUL in them ends the text early, as it would for a C string. Whatever the
 * text, the parser must return PL_OK with a sane chip or PL_EINVAL with a
 * message that names where, and never read or write out of bounds.
 *
 * A chip the parser accepts then goes through the report helpers that read
 * every figure (the MXU rate per dtype), so that a figure the parser lets
 * through but nothing else can handle shows up here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/tilesim.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bytes the harness hands over, bounded: a chip file is a few lines, and
 * pl_chip_load refuses more than 64 KiB anyway. */
#define MAX_TEXT (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size, MAX_TEXT);
    if (!text) return 0;

    pl_chip chip;
    char err[512];
    memset(err, 0x5a, sizeof err);
    int rc = pl_chip_parse(text, "fuzz.chip", &chip, err, sizeof err);
    if (rc == PL_OK) {
        /* a chip the parser accepts is usable: named, limits consistent */
        if (!memchr(chip.name, '\0', sizeof chip.name) || !chip.name[0]) abort();
        if (chip.vmem_default_limit > chip.vmem_bytes) abort();
        for (int t = 0; t < PL_DTYPE_COUNT; t++)
            if (!(pl_chip_mxu_rate(&chip, (pl_dtype)t) > 0)) abort();
    } else {
        if (rc != PL_EINVAL) abort();
        fz_check_message(err, sizeof err);
    }
    /* a tiny error buffer must be cut, never overrun */
    char small[7];
    memset(small, 0x5a, sizeof small);
    if (pl_chip_parse(text, "fuzz.chip", &chip, small, sizeof small) != rc) abort();
    if (rc != PL_OK) fz_check_message(small, sizeof small);
    free(text);
    return 0;
}
