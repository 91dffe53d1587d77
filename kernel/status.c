/* kernel/status.c: names of the status codes shared by every layer. A new
 * code needs a name here and PL_STATUS_MIN moved to it (kernel/pallas.h);
 * errors/every_status_code_has_a_distinct_name fails otherwise. */
#include "pallas.h"

const char *pl_strerror(int code)
{
    switch ((pl_status)code) {
    case PL_OK: return "success";
    case PL_EINVAL: return "invalid call, option or argument";
    case PL_EBLOCKSHAPE: return "illegal block shape";
    case PL_EINDEXMAP: return "index map out of range or malformed";
    case PL_EVMEM: return "VMEM budget exceeded";
    case PL_EREVISIT: return "output block revisited after write-back";
    case PL_EBOUNDS: return "access outside a Ref";
    case PL_ERACE: return "race between writers";
    case PL_EDEADLOCK: return "deadlock: a wait nothing can satisfy";
    case PL_ENOMEM: return "out of host memory";
    case PL_ESHAPE: return "operand shapes do not match";
    case PL_EDTYPE: return "unsupported dtype";
    case PL_ESPACE: return "wrong memory space";
    case PL_EVERIFY: return "result does not match its reference";
    case PL_EPOISON: return "uninitialized data reached HBM";
    case PL_EREADONLY: return "write into an input block";
    case PL_ESEMAPHORE: return "semaphore left non-zero or copy never waited";
    case PL_ETILING: return "rejected by the compiler's tiling check";
    }
    return "unknown status code";
}
