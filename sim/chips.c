/* sim/chips.c: the chip presets, one row per TPU generation.
 *
 * Figures per TensorCore, from ../shared/CHIPS.md (Cloud TPU architecture
 * pages and JAX's pltpu.get_tpu_info() table). Only the limits that
 * validation needs live here so far; timing figures join them with the cost
 * model. v5e is the default.
 */
#include <string.h>

#include "tilesim.h"

#define MiB (1024LL * 1024LL)

static const pl_chip chips[] = {
    /* v4: 16 MiB VMEM; scoped default assumed equal to it (CHIPS.md) */
    {.name = "v4", .vmem_bytes = 16 * MiB, .vmem_default_limit = 16 * MiB, .smem_bytes = 1 * MiB,
     .sublanes_16bit = 8},
    /* v5e: the default preset; 128 MiB VMEM, 16 MiB scoped default */
    {.name = "v5e", .vmem_bytes = 128 * MiB, .vmem_default_limit = 16 * MiB, .smem_bytes = 1 * MiB,
     .sublanes_16bit = 8},
    /* v5p: 64 MiB VMEM, 16 MiB scoped default (assumed, CHIPS.md) */
    {.name = "v5p", .vmem_bytes = 64 * MiB, .vmem_default_limit = 16 * MiB, .smem_bytes = 1 * MiB,
     .sublanes_16bit = 8},
    /* v6e (Trillium): 128 MiB VMEM, 32 MiB scoped default */
    {.name = "v6e", .vmem_bytes = 128 * MiB, .vmem_default_limit = 32 * MiB, .smem_bytes = 1 * MiB,
     .sublanes_16bit = 8},
    /* v7x (Ironwood): 64 MiB VMEM per TensorCore, 32 MiB scoped default;
     * 16-bit types tile as (16, 128) (rule T6) */
    {.name = "v7x", .vmem_bytes = 64 * MiB, .vmem_default_limit = 32 * MiB, .smem_bytes = 1 * MiB,
     .sublanes_16bit = 16},
};

int pl_chip_count(void) { return (int)(sizeof chips / sizeof *chips); }

const pl_chip *pl_chip_at(int i) { return i >= 0 && i < pl_chip_count() ? &chips[i] : NULL; }

const pl_chip *pl_chip_default(void) { return &chips[1]; }

const pl_chip *pl_chip_find(const char *name)
{
    for (int i = 0; name && i < pl_chip_count(); i++)
        if (strcmp(chips[i].name, name) == 0) return &chips[i];
    return NULL;
}
