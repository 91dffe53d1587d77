/* sim/timing/mesh.c: the geometry of a mesh of devices (sim/tilesim_mesh.h): its
 * text form, its check, device numbers and coordinates, and routes.
 *
 * Routing is dimension-ordered, as on a TPU torus: a copy first travels
 * along axis 0 until its coordinate there is the destination's, then along
 * axis 1, then axis 2. On a wrapping axis it goes the shorter way round (a
 * tie, half-way round a ring of even length, goes the positive way, so that
 * a route is a function of its ends); on an axis that does not wrap there is
 * only the straight way. Every function checks the mesh first: a mesh built
 * by hand may be anything.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../kernel/pallas.h" /* PL_OK, PL_EINVAL */
#include "ici.h"

/* ---- checks ------------------------------------------------------------------------ */

/* s for a message: bytes outside printable ASCII as \xNN, so that a mesh
 * from a command line cannot put control characters on a terminal; cut
 * with "..." when longer than the buffer. */
static const char *esc(const char *s, char *buf, size_t n)
{
    size_t at = 0;
    for (; *s && at + 8 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch < 0x7f) buf[at++] = (char)ch;
        else at += (size_t)snprintf(buf + at, n - at, "\\x%02x", ch);
    }
    if (*s) at += (size_t)snprintf(buf + at, n - at, "...");
    buf[at] = '\0';
    return buf;
}

/* s[0..len) for a message, escaped as esc does. */
static const char *piece(const char *s, size_t len, char *buf, size_t n)
{
    char raw[64];
    snprintf(raw, sizeof raw, "%.*s", (int)(len < sizeof raw - 1 ? len : sizeof raw - 1), s);
    return esc(raw, buf, n);
}

/* An axis name: a letter or '_', then letters, digits and '_'. */
static int is_name(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_') return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

/* What is wrong with the mesh, into msg (after `who`), or PL_OK. */
static int check(const pl_mesh *m, const char *who, char *msg, size_t n)
{
    if (!m) return snprintf(msg, n, "%s: no mesh", who), PL_EINVAL;
    if (m->rank < 1 || m->rank > PL_MESH_MAX_AXES)
        return snprintf(msg, n, "%s: rank %d; a mesh has 1 to %d axes", who, m->rank, PL_MESH_MAX_AXES), PL_EINVAL;
    for (int a = 0; a < m->rank; a++) {
        char en[4 * PL_MESH_AXIS_NAME + 8];
        if (!memchr(m->axis[a], '\0', PL_MESH_AXIS_NAME))
            return snprintf(msg, n, "%s: the name of axis %d does not end within %d bytes", who, a,
                            PL_MESH_AXIS_NAME), PL_EINVAL;
        if (!is_name(m->axis[a]))
            return snprintf(msg, n, "%s: '%s' is not an axis name (a letter or '_', then letters, digits, '_')",
                            who, esc(m->axis[a], en, sizeof en)), PL_EINVAL;
        for (int b = 0; b < a; b++)
            if (strcmp(m->axis[a], m->axis[b]) == 0)
                return snprintf(msg, n, "%s: axis name '%s' is given twice; axis names are unique", who,
                                m->axis[a]), PL_EINVAL;
        if (m->shape[a] < 1)
            return snprintf(msg, n, "%s: axis %s has %lld devices; an axis has at least 1", who, m->axis[a],
                            (long long)m->shape[a]), PL_EINVAL;
        if (m->shape[a] > PL_MESH_MAX_DEVICES)
            return snprintf(msg, n, "%s: axis %s has %lld devices; a mesh has at most %d devices", who, m->axis[a],
                            (long long)m->shape[a], PL_MESH_MAX_DEVICES), PL_EINVAL;
        if (m->wrap[a] > 1)
            return snprintf(msg, n, "%s: axis %s has wrap %d; it is 0 (a line) or 1 (a ring)", who, m->axis[a],
                            m->wrap[a]), PL_EINVAL;
    }
    if (m->dcn > 1) return snprintf(msg, n, "%s: dcn is %d; it is 0 (one slice) or 1 (axis 0 joins slices over DCN)",
                                    who, m->dcn), PL_EINVAL;
    if (m->dcn && m->shape[0] > PL_MESH_MAX_SLICES)
        return snprintf(msg, n, "%s: %lld slices; a multislice mesh has at most %d here", who,
                        (long long)m->shape[0], PL_MESH_MAX_SLICES), PL_EINVAL;
    if (m->dcn && m->wrap[0])
        return snprintf(msg, n, "%s: the DCN axis %s wraps; slices are joined by the data-center network, which has "
                        "no ring of ICI links (rule M14)", who, m->axis[0]), PL_EINVAL;
    if (!m->dcn && m->rank == PL_MESH_MAX_AXES)
        return snprintf(msg, n, "%s: %d ICI axes; a slice's torus has at most %d (a fourth axis is a multislice "
                        "mesh's DCN axis, 'dcn:4 x 4x4x4')", who, m->rank, PL_MESH_MAX_AXES - 1), PL_EINVAL;
    int64_t devices = 1; /* each factor <= 4096 and at most 4 of them: checked as it grows, no overflow */
    for (int a = 0; a < m->rank && devices <= PL_MESH_MAX_DEVICES; a++) devices *= m->shape[a];
    if (devices > PL_MESH_MAX_DEVICES)
        return snprintf(msg, n, "%s: %lld devices; a mesh has at most %d devices", who, (long long)devices,
                        PL_MESH_MAX_DEVICES), PL_EINVAL;
    return PL_OK;
}

int pl_mesh_check(const pl_mesh *mesh, char *msg, size_t n)
{
    char unused[8];
    if (!msg || !n) msg = unused, n = sizeof unused;
    msg[0] = '\0';
    return check(mesh, "mesh", msg, n);
}

static int valid(const pl_mesh *m)
{
    char unused[8];
    return check(m, "", unused, sizeof unused) == PL_OK;
}

/* ---- parsing ----------------------------------------------------------------------- */

/* An axis size: decimal digits, >= 1 (0 passes here and fails the check, so
 * that its message names the axis). -1: not a number; -2: over the limit. */
static int64_t parse_size(const char *s, size_t len)
{
    if (!len) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
        if (v > PL_MESH_MAX_DEVICES) return -2;
    }
    return v;
}

/* One axis, "4" or "x=4" (item s[0..len)), into axis a of m. */
static int parse_axis(pl_mesh *m, int a, const char *s, size_t len, int named, const char *q, char *msg, size_t n)
{
    char tok[4 * 64];
    const char *size = s;
    size_t size_len = len;
    snprintf(m->axis[a], PL_MESH_AXIS_NAME, "%c", "xyz"[a]);
    if (named) {
        const char *eq = memchr(s, '=', len);
        piece(s, len, tok, sizeof tok);
        if (!eq)
            return snprintf(msg, n, "mesh '%s': '%s' is not name=size; named axes read 'x=4,y=4'", q, tok), PL_EINVAL;
        size_t nl = (size_t)(eq - s);
        piece(s, nl, tok, sizeof tok);
        if (nl >= PL_MESH_AXIS_NAME)
            return snprintf(msg, n, "mesh '%s': axis name '%s' has %zu characters; at most %d characters", q, tok,
                            nl, PL_MESH_AXIS_NAME - 1), PL_EINVAL;
        if (!is_name(tok)) /* esc changes only bytes no name holds: a name's tok is s[0..nl) */
            return snprintf(msg, n, "mesh '%s': '%s' is not an axis name (a letter or '_', then letters, digits, "
                            "'_')", q, tok), PL_EINVAL;
        memcpy(m->axis[a], tok, nl + 1);
        size = eq + 1;
        size_len = len - nl - 1;
    }
    if (!size_len)
        return snprintf(msg, n, "mesh '%s': axis %s has no size after '='; named axes read 'x=4,y=4'", q,
                        m->axis[a]), PL_EINVAL;
    int64_t v = parse_size(size, size_len);
    piece(size, size_len, tok, sizeof tok);
    if (v == -1) return snprintf(msg, n, "mesh '%s': '%s' is not an axis size (a whole number >= 1)", q, tok), PL_EINVAL;
    if (v == -2)
        return snprintf(msg, n, "mesh '%s': axis %s has %s devices; a mesh has at most %d devices", q, m->axis[a],
                        tok, PL_MESH_MAX_DEVICES), PL_EINVAL;
    m->shape[a] = v;
    return PL_OK;
}

/* The kind before ':' (ring, line, torus, mesh): wrap or not, at most one
 * axis or any. The default, without a kind, is a torus (or a ring). */
static int parse_kind(const char *text, const char **rest, int *wrap, int *one_axis, const char *q, char *msg,
                      size_t n)
{
    static const struct { const char *name; int wrap, one_axis; } kinds[] = {
        {"ring", 1, 1}, {"line", 0, 1}, {"torus", 1, 0}, {"mesh", 0, 0}};
    const char *colon = strchr(text, ':');
    *rest = text, *wrap = 1, *one_axis = 0;
    if (!colon) return PL_OK;
    size_t len = (size_t)(colon - text);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strlen(kinds[i].name) == len && strncmp(text, kinds[i].name, len) == 0) {
            *rest = colon + 1, *wrap = kinds[i].wrap, *one_axis = kinds[i].one_axis;
            if (!**rest) return snprintf(msg, n, "mesh '%s': no axes after '%s:'", q, kinds[i].name), PL_EINVAL;
            return PL_OK;
        }
    char kind[4 * 64];
    return snprintf(msg, n, "mesh '%s': unknown kind '%s'; the kinds are ring, line (one axis), torus, mesh", q,
                    piece(text, len, kind, sizeof kind)), PL_EINVAL;
}

/* What an empty item of the axis list lacks: rank is its index, more says
 * that a separator follows it. */
static const char *missing_axis(int named, int rank, int more)
{
    if (named) return "an axis is missing (an empty item between commas); named axes read 'x=4,y=4'";
    if (rank == 0 && more) return "an axis size is missing before 'x'; a shape reads '4x4'";
    if (!more) return "an axis size is missing after the last 'x'; a shape reads '4x4'";
    return "an axis size is missing between two 'x'; a shape reads '4x4'";
}

static int parse_ici(const char *text, const char *q, pl_mesh *mesh, char *msg, size_t n);

/* "dcn:[name=]N x REST": REST is one slice's mesh, parsed as any; the DCN
 * axis goes in front of its axes (rule M14). */
static int parse_dcn(const char *text, const char *q, pl_mesh *mesh, char *msg, size_t n)
{
    const char *s = text + 4, *x = s;
    while (*x && *x != ' ' && !(*x == 'x' && x > s && isdigit((unsigned char)x[-1]))) x++; /* "4x..." or "4 x" */
    size_t len = (size_t)(x - s);
    const char *rest = x;
    while (*rest == ' ') rest++;
    if (*rest != 'x' || !len)
        return snprintf(msg, n, "mesh '%s': a multislice mesh reads 'dcn:SLICES x SLICE', e.g. 'dcn:4 x 16x16' "
                        "(4 slices of a 16x16 torus) or 'dcn:data=2 x ring:8'", q), PL_EINVAL;
    rest++;
    while (*rest == ' ') rest++;
    if (!*rest)
        return snprintf(msg, n, "mesh '%s': no slice after 'x'; a multislice mesh reads 'dcn:4 x 16x16'", q),
               PL_EINVAL;
    pl_mesh slice, m;
    if (parse_ici(rest, q, &slice, msg, n)) return PL_EINVAL;
    memset(&m, 0, sizeof m);
    int named = memchr(s, '=', len) != NULL;
    /* unnamed, the axis is 'dcn' from the start: its messages say so ('axis dcn has 4097 devices') */
    char as_named[96];
    if (!named && len + 5 <= sizeof as_named) {
        snprintf(as_named, sizeof as_named, "dcn=%.*s", (int)len, s);
        s = as_named, len += 4, named = 1;
    }
    if (parse_axis(&m, 0, s, len, named, q, msg, n)) return PL_EINVAL;
    if (!named) snprintf(m.axis[0], PL_MESH_AXIS_NAME, "dcn");
    m.rank = slice.rank + 1;
    m.dcn = 1;
    for (int a = 0; a < slice.rank; a++) {
        m.shape[a + 1] = slice.shape[a], m.wrap[a + 1] = slice.wrap[a];
        memcpy(m.axis[a + 1], slice.axis[a], PL_MESH_AXIS_NAME);
    }
    char who[200];
    snprintf(who, sizeof who, "mesh '%s'", q);
    if (check(&m, who, msg, n)) return PL_EINVAL;
    *mesh = m;
    return PL_OK;
}

int pl_mesh_parse(const char *text, pl_mesh *mesh, char *msg, size_t n)
{
    char unused[8], q[160];
    if (!msg || !n) msg = unused, n = sizeof unused;
    msg[0] = '\0';
    if (!text || !mesh) return snprintf(msg, n, "pl_mesh_parse: no mesh text or no mesh to fill"), PL_EINVAL;
    esc(text, q, sizeof q);
    if (strncmp(text, "dcn:", 4) == 0) return parse_dcn(text, q, mesh, msg, n);
    return parse_ici(text, q, mesh, msg, n);
}

/* One slice's mesh: every axis ICI. */
static int parse_ici(const char *text, const char *q, pl_mesh *mesh, char *msg, size_t n)
{
    if (!*text)
        return snprintf(msg, n, "mesh '': empty; write a device count ('8'), a shape ('4x4') or named axes "
                        "('x=4,y=4')"), PL_EINVAL;
    const char *s;
    int wrap, one_axis;
    if (strncmp(text, "dcn:", 4) == 0)
        return snprintf(msg, n, "mesh '%s': a mesh has one DCN axis, the first ('dcn:4 x 16x16')", q), PL_EINVAL;
    if (parse_kind(text, &s, &wrap, &one_axis, q, msg, n)) return PL_EINVAL;
    int named = strchr(s, '=') != NULL, rank = 0;
    char sep = named ? ',' : 'x';
    pl_mesh m;
    memset(&m, 0, sizeof m);
    for (const char *item = s;; rank++) {
        const char *end = strchr(item, sep);
        size_t len = end ? (size_t)(end - item) : strlen(item);
        if (rank == PL_MESH_MAX_AXES - 1)
            return snprintf(msg, n, "mesh '%s': more axes than a slice has: at most %d axes", q,
                            PL_MESH_MAX_AXES - 1), PL_EINVAL;
        if (len == 0) /* "x4", "4x", "4xx4", "x=4,": say where the size is missing, not that '' is no size */
            return snprintf(msg, n, "mesh '%s': %s", q, missing_axis(named, rank, end != NULL)), PL_EINVAL;
        if (parse_axis(&m, rank, item, len, named, q, msg, n)) return PL_EINVAL;
        m.wrap[rank] = (uint8_t)wrap;
        if (!end) break;
        item = end + 1;
    }
    m.rank = rank + 1;
    if (one_axis && m.rank > 1)
        return snprintf(msg, n, "mesh '%s': a %s has one axis; write torus: or mesh: for %d axes", q,
                        wrap ? "ring" : "line", m.rank), PL_EINVAL;
    char who[200];
    snprintf(who, sizeof who, "mesh '%s'", q);
    if (check(&m, who, msg, n)) return PL_EINVAL;
    *mesh = m;
    return PL_OK;
}

/* ---- geometry ---------------------------------------------------------------------- */

int pl_mesh_devices(const pl_mesh *mesh)
{
    if (!valid(mesh)) return 0;
    int d = 1;
    for (int a = 0; a < mesh->rank; a++) d *= (int)mesh->shape[a];
    return d;
}

int pl_mesh_slices(const pl_mesh *mesh)
{
    if (!valid(mesh)) return 0;
    return mesh->dcn ? (int)mesh->shape[0] : 1;
}

int pl_mesh_slice_of(const pl_mesh *mesh, int device)
{
    int n = pl_mesh_devices(mesh);
    if (!n || device < 0 || device >= n) return -1;
    return mesh->dcn ? device / (n / (int)mesh->shape[0]) : 0;
}

/* Coordinates and device number of a mesh already checked: a route checks
 * its mesh once, not at every hop (the replay routes every remote copy). */
static void coords_of(const pl_mesh *m, int device, int64_t *at)
{
    for (int a = m->rank - 1; a >= 0; a--) {
        at[a] = device % m->shape[a];
        device /= (int)m->shape[a];
    }
}

static int device_of(const pl_mesh *m, const int64_t *at)
{
    int64_t d = 0;
    for (int a = 0; a < m->rank; a++) d = d * m->shape[a] + at[a];
    return (int)d;
}

void pl_mesh_coords(const pl_mesh *mesh, int device, int64_t *coords)
{
    if (!coords || !mesh) return;
    int n = pl_mesh_devices(mesh);
    if (device < 0 || device >= n) { /* -1 on every axis the caller can have room for, and no further */
        int rank = mesh->rank >= 1 && mesh->rank <= PL_MESH_MAX_AXES ? mesh->rank : 0;
        for (int a = 0; a < rank; a++) coords[a] = -1;
        return;
    }
    coords_of(mesh, device, coords);
}

int pl_mesh_device(const pl_mesh *mesh, const int64_t *coords)
{
    if (!coords || !valid(mesh)) return -1;
    for (int a = 0; a < mesh->rank; a++)
        if (coords[a] < 0 || coords[a] >= mesh->shape[a]) return -1;
    return device_of(mesh, coords);
}

int pl_mesh_axis(const pl_mesh *mesh, const char *name)
{
    if (!name || !valid(mesh)) return -1;
    for (int a = 0; a < mesh->rank; a++)
        if (strcmp(mesh->axis[a], name) == 0) return a;
    return -1;
}

/* Steps along axis a from coordinate f to t: the count, and the direction
 * (+1 or -1) in *dir. */
static int64_t axis_steps(const pl_mesh *m, int a, int64_t f, int64_t t, int *dir)
{
    int64_t n = m->shape[a], fwd = ((t - f) % n + n) % n;
    *dir = 1;
    if (!fwd) return 0;
    if (!m->wrap[a]) {
        *dir = t > f ? 1 : -1;
        return t > f ? t - f : f - t;
    }
    if (fwd <= n - fwd) return fwd; /* a tie goes the positive way */
    *dir = -1;
    return n - fwd;
}

int sim_mesh_route(const pl_mesh *m, int from, int to, int *links, int max)
{
    int n = pl_mesh_devices(m);
    if (!n || from < 0 || from >= n || to < 0 || to >= n) return -1;
    int64_t at[PL_MESH_MAX_AXES] = {0}, goal[PL_MESH_MAX_AXES] = {0};
    coords_of(m, from, at);
    coords_of(m, to, goal);
    if (m->dcn && at[0] != goal[0]) { /* another slice: out by this chip's DCN port, in by that one's (M14) */
        if (links && max > 0) links[0] = SIM_DCN_LINK(n, from, 0);
        if (links && max > 1) links[1] = SIM_DCN_LINK(n, to, 1);
        return 2;
    }
    int hops = 0;
    for (int a = 0; a < m->rank; a++) {
        int dir;
        for (int64_t k = axis_steps(m, a, at[a], goal[a], &dir); k > 0; k--, hops++) {
            if (hops < max && links) links[hops] = SIM_ICI_LINK(device_of(m, at), a, dir > 0);
            at[a] = ((at[a] + dir) % m->shape[a] + m->shape[a]) % m->shape[a];
        }
    }
    return hops;
}

int pl_mesh_hops(const pl_mesh *mesh, int from, int to) { return sim_mesh_route(mesh, from, to, NULL, 0); }

/* Append to buf (n bytes, n >= 1) at *at, never past its end. */
static void put(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
    if (*at >= n - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *at, n - *at, fmt, ap);
    va_end(ap);
    *at = w < 0 ? n - 1 : *at + (size_t)w;
}

const char *pl_mesh_format(const pl_mesh *mesh, char *buf, size_t n)
{
    if (!buf || !n) return buf;
    buf[0] = '\0';
    size_t at = 0;
    if (!valid(mesh)) {
        put(buf, n, &at, "invalid mesh");
        return buf;
    }
    if (mesh->dcn) { /* "4 slices over DCN (dcn) x 16x16 torus (x, y)" */
        pl_mesh slice = *mesh;
        slice.dcn = 0;
        slice.rank = mesh->rank - 1;
        for (int a = 0; a < slice.rank; a++) {
            slice.shape[a] = mesh->shape[a + 1], slice.wrap[a] = mesh->wrap[a + 1];
            memcpy(slice.axis[a], mesh->axis[a + 1], PL_MESH_AXIS_NAME);
        }
        put(buf, n, &at, "%lld slices over DCN (%s) x ", (long long)mesh->shape[0], mesh->axis[0]);
        if (slice.rank) pl_mesh_format(&slice, buf + at, n - at);
        else put(buf, n, &at, "1 chip");
        return buf;
    }
    int wraps = 0;
    for (int a = 0; a < mesh->rank; a++) wraps += mesh->wrap[a];
    if (mesh->rank == 1) {
        put(buf, n, &at, "%s of %lld (%s)", wraps ? "ring" : "line", (long long)mesh->shape[0], mesh->axis[0]);
        return buf;
    }
    int all = wraps == mesh->rank;
    for (int a = 0; a < mesh->rank; a++) put(buf, n, &at, "%s%lld", a ? "x" : "", (long long)mesh->shape[a]);
    put(buf, n, &at, " %s (", all ? "torus" : "mesh");
    for (int a = 0; a < mesh->rank; a++) /* a mixed mesh says which axes wrap */
        put(buf, n, &at, "%s%s%s", a ? ", " : "", mesh->axis[a], !all && mesh->wrap[a] ? " wraps" : "");
    put(buf, n, &at, ")");
    return buf;
}
