#!/bin/sh
# The README's "Writing your own kernel" example must compile with the link
# line the README gives, and run: a user's first program is copied from there.
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^\/\* relu.c/{p=1} p{print} /^```$/{if(p)exit}' README.md | grep -v '^```' > "$tmp/relu.c"
test -s "$tmp/relu.c" || { echo "readme_example: the relu.c example is missing from README.md" >&2; exit 1; }
cc -std=c11 -O2 -Wall -Wextra -Werror -I. "$tmp/relu.c" "$1" $(pkg-config --cflags --libs openblas hwloc) -lm -pthread -o "$tmp/relu"
"$tmp/relu" > "$tmp/out"
grep -q "relu: grid (4, 4) = 16 steps" "$tmp/out" || { echo "readme_example: unexpected output" >&2; cat "$tmp/out" >&2; exit 1; }
echo "readme_example: the README's kernel compiles and runs"
