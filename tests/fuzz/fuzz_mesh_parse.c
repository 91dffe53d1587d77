/* tests/fuzz/fuzz_mesh_parse.c: libFuzzer harness for the mesh parser and
 * the geometry it feeds (sim/timing/mesh.c): pl_mesh_parse, then, for a mesh it
 * accepts, every device's coordinates round trip, a route between a few
 * pairs of devices stays within the link numbering and takes as many hops
 * as pl_mesh_hops says, and pl_mesh_format fits its buffer. A refused text
 * must come with a message. Never a read or write out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/timing/ici.h"
#include "fuzz_text.h"
#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_mesh(const pl_mesh *m)
{
    int n = pl_mesh_devices(m);
    if (n < 1 || n > PL_MESH_MAX_DEVICES) abort();
    int64_t coords[PL_MESH_MAX_AXES];
    for (int d = 0; d < n; d += 1 + n / 64) { /* a sample of devices: big meshes stay quick */
        pl_mesh_coords(m, d, coords);
        if (pl_mesh_device(m, coords) != d) abort();
    }
    int links[3 * PL_MESH_MAX_DEVICES];
    for (int k = 0; k < 8; k++) {
        int from = (k * 7919) % n, to = (k * 104729 + 1) % n;
        int h = sim_mesh_route(m, from, to, links, (int)(sizeof links / sizeof *links));
        if (h != pl_mesh_hops(m, from, to) || h < 0 || (from == to && h != 0)) abort();
        for (int i = 0; i < h; i++)
            if (links[i] < 0 || links[i] >= SIM_ICI_LINKS(n)) abort();
    }
    char buf[96];
    memset(buf, 0x5a, sizeof buf);
    pl_mesh_format(m, buf, sizeof buf);
    if (!memchr(buf, '\0', sizeof buf)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size, 4096);
    if (!text) return 0;
    pl_mesh m;
    char msg[256];
    memset(msg, 0x5a, sizeof msg);
    int rc = pl_mesh_parse(text, &m, msg, sizeof msg);
    if (rc == PL_OK) {
        char again[256];
        if (pl_mesh_check(&m, again, sizeof again) != PL_OK) abort(); /* what parse gives, check accepts */
        check_mesh(&m);
    } else if (rc != PL_EINVAL || !memchr(msg, '\0', sizeof msg) || !msg[0]) {
        abort();
    }
    free(text);
    return 0;
}
