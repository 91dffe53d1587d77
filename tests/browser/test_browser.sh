#!/bin/sh
# tests/browser/test_browser.sh TILESIM [OUT_PNG]: the teaching page (tilesim
# run/explain --html) in a real browser, headless Chromium (`make
# test-browser`, which installs Debian's chromium when missing).
#
# There is no DevTools client here: the page, opened with #selftest=next5,
# clicks its own "next" button five times after load (element.click(), the
# real button and its handler) and writes what it then shows into
# <pre id="selftest">; `chromium --dump-dom` prints the DOM the script built,
# which this script reads with grep. Checked, on matmul's grid (2, 2, 4) in
# (256, 256, 256) blocks (G1, B1) and more:
#   - a cell per block: x 2 x 4, y 4 x 2, o 2 x 2 = 20; the slider's max = steps - 1 = 15;
#   - after next x5: step 5, grid point (0, 1, 1), its events (P1 copies, P8 copies
#     in flight, P3 kept), its kernel op; the timeline drew its 16 steps;
#   - previous and play move the step too; a grid over 512 steps says it is capped;
#   - a screenshot is not blank: far larger than the same browser's screenshot of an
#     empty page (a blank 1280 x 1600 PNG compresses to a few kB).
# OUT_PNG (optional): where to keep the screenshot of the matmul page
# (docs/page.png in the README).
# Exit 0 when every check passes, 1 naming each that failed.
set -u
tilesim=${1:?usage: test_browser.sh TILESIM [OUT_PNG]}
keep=${2:-}
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$browser" ] || { echo "test-browser: no chromium (make test-browser installs it)" >&2; exit 1; }
dir=$(mktemp -d)
[ -n "${KEEP_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
fails=0
start=$(date +%s)

fail() { echo "test-browser: FAIL: $*" >&2; fails=$((fails + 1)); }
# check WHAT PATTERN FILE: a fixed string FILE must hold
check() { grep -qF -- "$2" "$3" || fail "$1: '$2' not in $(basename "$3")"; }
# the flags every run takes: root needs --no-sandbox; no GPU, no first-run
# dialogs; virtual time lets the page's timers (play) run. A profile of its
# own each run: a browser still ending would otherwise take the next run's
# page over (one browser per profile) and that run print nothing.
runs=0
chrome() {
    runs=$((runs + 1))
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
        --disable-extensions --hide-scrollbars --user-data-dir="$dir/profile$runs" --virtual-time-budget=5000 "$@" \
        2>>"$dir/chromium.log"
}
dom() { chrome --dump-dom "file://$1#$2" >"$dir/$3" || fail "chromium --dump-dom $2 failed (see below)"; }

# ---- the pages ----
mm="$dir/matmul.html"
"$tilesim" run matmul --set M=512 --set N=512 --set K=1024 --set bm=256 --set bn=256 --set bk=256 \
    --html "$mm" >"$dir/run.out" 2>&1 || fail "tilesim run matmul --html: $(cat "$dir/run.out")"
long="$dir/long_page.html"
"$tilesim" run matmul --set M=1024 --set N=1024 --set K=2048 --set bm=128 --set bn=128 --set bk=128 \
    --cost-only --html "$long" >/dev/null 2>&1 || fail "tilesim run (a long grid) --html"
ex="$dir/explain_page.html"
"$tilesim" explain add --set rows=512 --set cols=1024 --html "$ex" >/dev/null 2>&1 || fail "tilesim explain --html"

mesh="$dir/mesh_page.html"
ring=$(dirname "$tilesim")/examples/plugin/ring_reduce_scatter.so
"$tilesim" run "$ring" --set devices=4 --html "$mesh" >"$dir/mesh.out" 2>&1 || fail "tilesim run ring_reduce_scatter.so --html: $(cat "$dir/mesh.out")"

# ---- matmul: next x5 ----
dom "$mm" selftest=next5 next5.dom
d="$dir/next5.dom"
# (each pattern is one the page's own script text cannot hold: the DOM dump holds that too)
check "the script ran to its end" "selftest done</pre>" "$d"
check "cells: a block each of x (2 x 4), y (4 x 2), o (2 x 2)" "cells: 20" "$d"
check "the slider runs over the 16 steps" "slider max: 15" "$d"
check "next x5 shows step 5" "step: 5" "$d"
check "the slider follows" "slider value: 5" "$d"
check "step 5 is grid point (0, 1, 1) (G1)" "status: step 5: core 0, grid point (0, 1, 1)" "$d"
check "the step counter numbers steps as the status does (issue 24)" "stepno: step 5 of 0..15" "$d"
check "x (0, 1) copied into slot 1 (P1)" "x block (0, 1): copied HBM -&gt; VMEM into slot 1 (new block, rule P1)" "$d"
check "x (0, 2) in flight for step 6 (P8)" "x block (0, 2): copy HBM -&gt; VMEM slot 0 in flight for the next step (rule P8)" "$d"
check "o (0, 1) kept (P3)" "o block (0, 1): kept in VMEM: same output block, the kernel accumulates into it (rule P3)" "$d"
check "the rule behind an event on hover" "title=\"P8: while a step runs" "$d"
check "the kernel's op at step 5" "kernel: pl_dot 256x256 @ 256x256 f32 (MXU)" "$d"
check "the timeline drew every step" "timeline steps: 16" "$d"
check "the current step is marked on the timeline" 'class="tstep now" x=' "$d"
check "a cell marked in flight" 'class="cell inflight"' "$d"
check "cells carry their rule on hover" 'in flight for the next step (P8)">' "$d"
check "every tool's place is filled" "not available: 0" "$d"
check "the roofline's labels neither overlap nor run off it (issue 24)" "roofline labels: 0 overlapping, 0 cut" "$d"
grep -A3 '<section id="op-profile"' "$d" | grep -q 'pl_dot' || fail "the op profile's section has no pl_dot row"
grep -A3 '<section id="roofline"' "$d" | grep -q '<svg' || fail "the roofline's section holds no chart (<svg)"
check "the places of the other tools" '<section id="memory-viewer"' "$d"
grep -A3 '<section id="memory-viewer"' "$d" | grep -q '<svg' || fail "the memory viewer's section holds no chart (<svg)"
n=$(grep -o '<div class="cell[^"]*" id="c' "$d" | wc -l)
[ "$n" -eq 20 ] || fail "the DOM holds $n block cells, not 20"

# ---- previous, play, the cap, explain ----
dom "$mm" selftest=prev3 prev.dom
check "previous x3 from the last step (15) shows step 12" "step: 12" "$dir/prev.dom"
check "step 12 is grid point (1, 1, 0)" "grid point (1, 1, 0)" "$dir/prev.dom"
dom "$mm" selftest=play2 play.dom
grep -q "^step: [1-9]" "$dir/play.dom" || fail "play did not move past step 0 in 2 s: $(grep '^step:' "$dir/play.dom")"
dom "$long" selftest=next1 long.dom
check "a long grid embeds 512 steps" "steps: 512" "$dir/long.dom"
check "and says how many it had" "total steps: 1024" "$dir/long.dom"
check "the note of the cap" "this page embeds the first 512" "$dir/long.dom"
check "the slider of a capped grid" "slider max: 511" "$dir/long.dom"
dom "$ex" selftest=next1 explain.dom
check "explain's page: x, y, z in (256, 512) blocks, 2 x 2 each" "cells: 12" "$dir/explain.dom"
check "explain's page: step 1" "status: step 1: core 0, grid point (0, 1)" "$dir/explain.dom"

# ---- a mesh kernel's page (issue 24): 4 devices' tracks and 4 links drawn ----
# (60 slices: each device's wait for its neighbour's free-slot signal is one, since signals cross the link,
# and each device's kernel track begins with the call's prologue)
dom "$mesh" selftest mesh.dom
check "mesh page" 'rows=24 slices=60 devices=4 links=4' "$dir/mesh.dom"
check "mesh page" 'class="row" data-row="device 3 / waits (semaphores)"' "$dir/mesh.dom"
check "mesh page" 'class="slice"' "$dir/mesh.dom"

# ---- the screenshot: not blank ----
printf '<!DOCTYPE html><html><body></body></html>\n' >"$dir/blank.html"
chrome --screenshot="$dir/blank.png" --window-size=1280,1600 "file://$dir/blank.html" >/dev/null ||
    fail "chromium --screenshot of a blank page failed"
chrome --screenshot="$dir/page.png" --window-size=1280,1600 "file://$mm#step=5" >/dev/null ||
    fail "chromium --screenshot failed"
blank=$(wc -c <"$dir/blank.png" 2>/dev/null || echo 0)
page=$(wc -c <"$dir/page.png" 2>/dev/null || echo 0)
# a PNG: its signature, then the header chunk
head -c 8 "$dir/page.png" 2>/dev/null | od -An -c | grep -q 'P   N   G' || fail "the screenshot is not a PNG"
[ "$page" -gt 30000 ] && [ "$page" -gt $((blank * 5)) ] ||
    fail "the screenshot looks blank: $page bytes (an empty page: $blank bytes)"
[ -n "$keep" ] && [ "$fails" -eq 0 ] && cp "$dir/page.png" "$keep"

end=$(date +%s)
if [ "$fails" -ne 0 ]; then
    echo "test-browser: $fails check(s) failed; chromium said:" >&2
    grep -v -e dbus -e 'Fontconfig' "$dir/chromium.log" | tail -n 20 >&2
    exit 1
fi
echo "test-browser: every check passed in $((end - start)) s (screenshot $page bytes, an empty page $blank)"
