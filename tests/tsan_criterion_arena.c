/* tests/tsan_criterion_arena.c: lets the Criterion runner start under
 * ThreadSanitizer (make check-tsan); compiled to nothing otherwise.
 *
 * Criterion keeps the tests' shared data in an "inheritable arena" that
 * BoxFort maps with MAP_FIXED at 0x200000000000 + ((rand_r() & 0x3fffff) << 24),
 * after checking the pages are free. Under TSan almost all of that range is
 * TSan's shadow and metadata, so the three tries fail and the runner aborts
 * with "Could not initialize inheritable arena: Resource temporarily
 * unavailable" before any test runs (Snaipe/Criterion#274). This rand_r,
 * which the executable's symbol gives the library in place of libc's, draws
 * only from the one application range there, 0x550000000000-0x568000000000
 * (TSan's x86_64 layout; the PIE binary sits in it, and BoxFort skips pages in
 * use). Nothing in tilesim or its tests calls rand_r.
 */
#include "../kernel/sanitizers.h"

#if TILESIM_TSAN
#include <stdlib.h>

int rand_r(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u; /* the classic LCG; any spread will do */
    return (int)(0x350000u + (*seed >> 8) % 0x18000u);
}
#else
typedef int tilesim_no_tsan_arena; /* ISO C wants a declaration in every file */
#endif
