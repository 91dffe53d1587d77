#!/bin/sh
# The README's "Writing your own kernel" example must compile and run: a
# user's first program is copied from there.
#
#   sh tests/readme_example.sh LIB               against the source tree: -I. and the static library LIB
#   sh tests/readme_example.sh --installed DIR   against `make install PREFIX=DIR`: only the installed
#                                                headers and library, found by `pkg-config tilesim`
#                                                (with and without --static), and every public header
#                                                included from C and from C++
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
readme=$(dirname "$0")/../README.md
awk '/^\/\* relu.c/{p=1} p{print} /^```$/{if(p)exit}' "$readme" | grep -v '^```' > "$tmp/relu.c"
test -s "$tmp/relu.c" || { echo "readme_example: the relu.c example is missing from README.md" >&2; exit 1; }

run() {
    "$tmp/relu" > "$tmp/out"
    grep -q "relu: grid (4, 4) = 16 steps" "$tmp/out" || {
        echo "readme_example: unexpected output" >&2; cat "$tmp/out" >&2; exit 1; }
}

if [ "$1" != --installed ]; then
    cc -std=c11 -O2 -Wall -Wextra -Werror -I. "$tmp/relu.c" "$1" $(pkg-config --cflags --libs openblas hwloc) \
        -lm -pthread -o "$tmp/relu"
    run
    echo "readme_example: the README's kernel compiles and runs"
    exit 0
fi

prefix=$2
test -d "$prefix" || { echo "readme_example: no install at '$prefix'" >&2; exit 1; }
PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PKG_CONFIG_PATH
pkg-config --exists tilesim || { echo "readme_example: no tilesim.pc in $PKG_CONFIG_PATH" >&2; exit 1; }
# compiled in $tmp with no -I. : the headers can only come from the install
for mode in "" --static; do
    cc -std=c11 -O2 -Wall -Wextra -Werror "$tmp/relu.c" $(pkg-config --cflags --libs $mode tilesim) -o "$tmp/relu" || {
        echo "readme_example: relu.c does not build with pkg-config --cflags --libs $mode tilesim" \
             "(--static also needs the libraries of openblas' and hwloc's Libs.private, e.g. libudev-dev)" >&2
        exit 1; }
    run
done
printf '#include "kernel/pallas.h"\n#include "kernel/pltpu.h"\n#include "sim/tilesim.h"\nint main(void) { return 0; }\n' \
    > "$tmp/all.c"
cc -std=c11 -Wall -Wextra -Werror "$tmp/all.c" $(pkg-config --cflags --libs tilesim) -o "$tmp/all_c"
if command -v "${CXX:-g++}" >/dev/null 2>&1; then
    cp "$tmp/all.c" "$tmp/all.cc"
    "${CXX:-g++}" -std=c++17 -Wall -Wextra -pedantic-errors "$tmp/all.cc" $(pkg-config --cflags --libs tilesim) \
        -o "$tmp/all_cc"
fi
echo "readme_example: the README's kernel builds against the install in $prefix (pkg-config, with and without --static) and runs"
