#!/bin/sh
# The mesh program of docs/meshes.md (ring.c, "Meshes of chips") must compile and
# run: a user's first mesh kernel is copied from there.
#   sh tests/readme_mesh_example.sh LIB    against the source tree and the static library LIB
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
readme=$(dirname "$0")/../docs/meshes.md
awk '/^\/\* ring.c/{p=1} p{print} /^```$/{if(p)exit}' "$readme" | grep -v '^```' > "$tmp/ring.c"
test -s "$tmp/ring.c" || { echo "readme_mesh_example: the ring.c example is missing from docs/meshes.md" >&2; exit 1; }
cc -std=c11 -O2 -Wall -Wextra -Werror -I. "$tmp/ring.c" "$1" $(pkg-config --cflags --libs openblas hwloc) -lm -pthread \
    -o "$tmp/ring"
OPENBLAS_NUM_THREADS=1 "$tmp/ring" > "$tmp/out"
grep -q "ring: PASS, every device holds all 4 shards" "$tmp/out" || {
    echo "readme_mesh_example: unexpected output" >&2; cat "$tmp/out" >&2; exit 1; }
grep -q "^mesh: 4 devices" "$tmp/out" || { echo "readme_mesh_example: no mesh report" >&2; exit 1; }
# the right permute with run_scoped semaphores (permute.c), the guide's first example
awk '/^\/\* permute.c/{p=1} p{print} /^```$/{if(p)exit}' "$readme" | grep -v '^```' > "$tmp/permute.c"
test -s "$tmp/permute.c" || { echo "readme_mesh_example: the permute.c example is missing from docs/meshes.md" >&2; exit 1; }
cc -std=c11 -O2 -Wall -Wextra -Werror -I. "$tmp/permute.c" "$1" $(pkg-config --cflags --libs openblas hwloc) -lm \
    -pthread -o "$tmp/permute"
OPENBLAS_NUM_THREADS=1 "$tmp/permute" > "$tmp/out"
grep -q "permute: PASS, each device holds its left neighbour's block" "$tmp/out" || {
    echo "readme_mesh_example: permute: unexpected output" >&2; cat "$tmp/out" >&2; exit 1; }
echo "readme_mesh_example: the README's mesh programs compile and run"
