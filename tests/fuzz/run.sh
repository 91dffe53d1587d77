#!/bin/sh
# tests/fuzz/run.sh NAME BUILD SECONDS: run one libFuzzer harness (see fuzz.mk).
#
# The checked-in corpus is copied to BUILD/corpus/NAME, where the fuzzer adds
# what it finds; crashes go to BUILD/crashes/NAME-*. Prints the executions
# reached and exits 1, naming the crash file, if the harness failed.
#
# The harness gets a private, empty TMPDIR (BUILD/tmp/NAME); a file or
# directory named tilesim_fuzz_* left there after the run, or new in /tmp
# (a harness that ignores TMPDIR), fails the run: the harnesses clean up
# after themselves (fuzz_tmp.h).
set -u
name=$1 build=$2 seconds=$3
bin=$(cd "$build" && pwd)/fuzz_$name
corpus=$(cd "$build" && pwd)/corpus/$name
crashes=$(cd "$build" && pwd)/crashes
log=$(cd "$build" && pwd)/fuzz_$name.log
rm -rf "$corpus"
mkdir -p "$corpus" "$crashes"
cp tests/fuzz/corpus/"$name"/* "$corpus"/
dict=
[ -f tests/fuzz/"$name".dict ] && dict=-dict=$(pwd)/tests/fuzz/$name.dict
# the harness runs in a directory of its own: whatever it writes stays there
work=$(cd "$build" && pwd)/work/$name
rm -rf "$work"
mkdir -p "$work"
before=$(ls "$crashes" | grep -c "^$name-" || true)
tmp=$(cd "$build" && pwd)/tmp/$name
rm -rf "$tmp"
mkdir -p "$tmp"
marker=$tmp.start
: >"$marker"
echo "fuzz: $name for ${seconds}s (log: $log)"
# A huge allocation returns NULL, as malloc does without ASan, so that the
# library's PL_ENOMEM paths are what run; leaks are findings.
(cd "$work" && TMPDIR=$tmp ASAN_OPTIONS=allocator_may_return_null=1 OPENBLAS_NUM_THREADS=1 \
  "$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$crashes/$name-" $dict "$corpus" >"$log" 2>&1)
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
left=$( (ls -d "$tmp"/tilesim_fuzz_* 2>/dev/null; find /tmp -maxdepth 1 -name 'tilesim_fuzz_*' -newer "$marker" 2>/dev/null) | sort -u)
rm -f "$marker"
echo "fuzz: $name: ${runs:-?} executions, ${rate:-?} exec/s, $cov, corpus $(ls "$corpus" | wc -l) files"
if [ $rc != 0 ]; then
  grep -E 'ERROR|runtime error|SUMMARY|Test unit written|ALARM|==[0-9]+==' "$log" | head -n 20
  for f in $(ls "$crashes" | grep "^$name-"); do echo "fuzz: $name: crash input: $crashes/$f"; done
  echo "fuzz: $name FAILED (exit $rc, $(( $(ls "$crashes" | grep -c "^$name-" || true) - before )) new crash file(s)); replay: $bin <file>" >&2
  exit 1
fi
if [ -n "$left" ]; then
  echo "fuzz: $name left temporary files behind (TMPDIR was $tmp):" >&2
  echo "$left" | sed 's/^/fuzz:   /' >&2
  exit 1
fi
rm -rf "$tmp"
