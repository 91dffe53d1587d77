#!/bin/sh
# tools/layering.sh BUILD: the floors of the code, and no cycles between files.
#   floors, bottom to top: kernel/, sim/base, sim/timing, sim/call, sim/mesh,
#             sim/kdef, sim/tools, sim/review, cli/ (each folder's README.md
#             says what it holds); a file may include and call files of its
#             own floor and below, never above. The public headers (sim/*.h,
#             kernel/pallas.h, kernel/pltpu.h) declare; anyone includes them.
#   calls:    object A calls a function defined in object B (nm), and B,
#             directly or through others, calls back into A;
#   includes: a header or source includes, directly or through others, a
#             file that includes it back.
# Issue 11 asked for none of either; `make test` runs this after the build.
# Exit 0 when there is none, 1 naming each pair in a cycle.
set -eu
build=${1:-build}
cd "$(dirname "$0")/.."
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

# calls: "user definer" pairs from the symbol tables
for o in "$build"/sim/*/*.o "$build"/kernel/*.o "$build"/cli/*.o; do
    nm "$o" | awk -v f="$o" '$2 ~ /^[TDBR]$/ { print "D", $3, f } $1 == "U" { print "U", $2, f }'
done | awk '$1 == "D" { def[$2] = $3 } $1 == "U" { use[NR] = $2 " " $3 }
    END { for (i in use) { split(use[i], u, " "); if ((u[1] in def) && def[u[1]] != u[2]) print "calls", u[2], def[u[1]] } }' \
    | sort -u >"$edges"

# includes: "file included" pairs from #include "..." lines
for f in sim/*.h sim/*/*.[ch] kernel/*.[ch] cli/*.[ch]; do
    dir=$(dirname "$f")
    sed -n 's/^#include "\(.*\)".*/\1/p' "$f" | while read -r inc; do
        p=$(realpath -m --relative-to=. "$dir/$inc")
        [ -f "$p" ] && echo "includes $f $p"
    done
done >>"$edges"

# a floor: an edge from a lower floor to a higher one runs up
awk -v build="$build/" '
function floor(p) {
    sub("^" build, "", p)
    if (p ~ /^kernel\//) return 0
    if (p ~ /^sim\/base\//) return 1
    if (p ~ /^sim\/timing\//) return 2
    if (p ~ /^sim\/call\//) return 3
    if (p ~ /^sim\/mesh\//) return 4
    if (p ~ /^sim\/kdef\//) return 5
    if (p ~ /^sim\/tools\//) return 6
    if (p ~ /^sim\/review\//) return 7
    if (p ~ /^cli\//) return 8
    return -1
}
function public(p) { return p ~ /^sim\/[a-z_]*\.h$/ || p == "kernel/pallas.h" || p == "kernel/pltpu.h" }
{
    if ($1 == "includes" && (public($2) || public($3))) next
    a = floor($2); b = floor($3)
    if (a >= 0 && b > a) { print "layering: " $1 " up a floor: " $2 " -> " $3; bad = 1 }
}
END { if (!bad) print "layering: floors: nothing runs up"; exit bad }' "$edges" || up=1

# a cycle: i reaches j and j reaches i (transitive closure, Floyd-Warshall)
awk '{ k = $1; a = $2; b = $3; id[k, a]; id[k, b]; e[k, a, b] = 1; kinds[k] }
END {
    bad = 0
    for (k in kinds) {
        n = 0
        found = 0
        for (x in id) { split(x, p, SUBSEP); if (p[1] == k) name[k, n++] = p[2] }
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) r[i, j] = e[k, name[k, i], name[k, j]] + 0
        for (m = 0; m < n; m++) for (i = 0; i < n; i++) if (r[i, m]) for (j = 0; j < n; j++) if (r[m, j]) r[i, j] = 1
        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (r[i, j] && r[j, i]) { print "layering: " k " cycle: " name[k, i] " <-> " name[k, j]; found = bad = 1 }
        print "layering: " k ": " n " files, " (found ? "cycles" : "no cycles")
        delete r
    }
    exit bad
}' "$edges" && exit ${up:-0}
