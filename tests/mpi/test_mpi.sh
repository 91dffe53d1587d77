#!/bin/sh
# tests/mpi/test_mpi.sh SINGLE MPI CASES: the MPI build against one process,
# under mpirun on this host (loopback). `make test-mpi` runs it.
#   1. sweeps split between 2 and 4 ranks print exactly what one process
#      prints (CSV and JSON, a matmul sweep and a kernel sweep), and so do
#      tune's tables (its shapes' sweeps split the same way);
#   2. a rank given another command line stops every rank: exit 2, rank 0
#      names the rank;
#      so is a rank that reads other files under the same command line;
#      a failure of one rank alone is said by it, prefixed with its rank;
#   3. a bad command line exits 2 with one message, not one per rank;
#   4. meshes across ranks: the ring all-reduce (with data, and 64 devices
#      cost-only), the all-gather and the collective matmul print on 2 and 4
#      ranks what one process prints, every figure of every report at full
#      precision and a digest of every device's outputs (--digest), with
#      messages crossing between the ranks; the deadlock example is
#      reported within 5 s; CASES (tests/mpi/mesh_cases.c) prints the same
#      on 1 to 4 ranks (races, M10, a fault, a deadlock every rank reports,
#      and a trace file, compared byte for byte);
#   5. every run ends within its time limit: nothing hangs;
#   6. the watchdog (--rank-timeout): a rank stopped with SIGSTOP is named
#      by rank 0 (or, when rank 0 is the one stopped, by rank 1) and the job
#      ends with exit 4 within seconds; a long computation with a short
#      timeout is not mistaken for a stop; a bad value is a usage error.
# CI runs as root: Open MPI refuses that unless told (--allow-run-as-root).
# More ranks than cores: --oversubscribe. In containers the shared-memory
# transport's single-copy mechanism may be forbidden: switched off.
set -u
single=$1 mpi=$2 cases=$3
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none"
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
stopped= # a rank's process this script stopped: continued and killed at exit, whatever happens
trap 'if [ -n "$stopped" ]; then kill -CONT $stopped; kill -KILL $stopped; fi 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$1" = 0 ]; then echo "test-mpi: ok: $2"; else echo "test-mpi: FAIL: $2" >&2; fail=1; fi; }

# the host's own time ("evaluated in 0.02 s") is the one thing that may differ
host_time() { sed 's/evaluated in [0-9.]* s/evaluated in T s/' "$1"; }

same_output() { # NAME ARGS...: one process and 2 and 4 ranks print the same
    name=$1; shift
    timeout 120 "$single" "$@" >"$tmp/one" 2>&1; one=$?
    for n in 2 4; do
        timeout 120 $MPIRUN -n $n "$mpi" "$@" >"$tmp/many" 2>&1; many=$?
        host_time "$tmp/one" >"$tmp/a"
        host_time "$tmp/many" >"$tmp/b"
        if cmp -s "$tmp/a" "$tmp/b" && [ $one = $many ]; then ok=0; else ok=1; fi
        check $ok "$name on $n ranks prints what one process prints (exit $one)"
        [ $ok = 0 ] || diff "$tmp/a" "$tmp/b" | head -10 >&2
    done
}

same_output "sweep matmul --csv" sweep matmul 2048 2048 2048 --csv
same_output "sweep matmul (table)" sweep matmul 1024 1024 4096 --dtype bf16
same_output "sweep rmsnorm --json" sweep rmsnorm --vary br=8,12,16,32,64,128,256,512,1024 --vary dtype=f32,bf16 --json
same_output "sweep flash_attention --csv" sweep flash_attention --csv
# tune: each shape's sweep split between the ranks, one table on rank 0
printf 'batch,out,in,wdtype\n16,1024,4096,i8\n256,2048,1024,f8e4m3\n512,1280,8192,i8\n' >"$tmp/shapes.csv"
printf 'M,N,K\n8,4096,4096\n1024,1024,4096\n' >"$tmp/shapes_mm.csv"
same_output "tune quant_matmul --csv" tune quant_matmul --shapes "$tmp/shapes.csv" --chip v6e --csv
same_output "tune matmul --json" tune matmul --shapes "$tmp/shapes_mm.csv" --set dtype=bf16 --json

# 2. another command line on rank 1
timeout 60 $MPIRUN -n 2 sh -c "exec $mpi sweep matmul 512 512 \$((512 + OMPI_COMM_WORLD_RANK * 128)) --csv" \
    >"$tmp/out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "rank 1 was given another command line" "$tmp/out"
check $? "a rank with another command line stops every rank (exit $rc)"

# 2b. one command line, other files: ranks started in other directories read
# other chip files (a sweep mixed rows of two chips, or deadlocked when one
# rank refused its file): refused up front, rank 0 names the rank
mkdir -p "$tmp/r0" "$tmp/r1"
printf 'base = v5e\nhbm_gbps = 500\n' >"$tmp/r0/c.chip"
printf 'base = v5e\nhbm_gbps = 50\n' >"$tmp/r1/c.chip"
mpi_abs="$(cd "$(dirname "$mpi")" && pwd)/$(basename "$mpi")" # --wdir: not relative to here
timeout 60 $MPIRUN -n 1 --wdir "$tmp/r0" "$mpi_abs" sweep matmul 512 512 512 --chip-file c.chip --csv : \
    -n 1 --wdir "$tmp/r1" "$mpi_abs" sweep matmul 512 512 512 --chip-file c.chip --csv >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "rank 1 reads other files than rank 0" "$tmp/out"
check $? "ranks reading other chip files under one command line stop, exit 2 ($rc)"

# 2c. a failure only rank 1 meets (its own environment) is said, prefixed with its rank
timeout 60 $MPIRUN -n 1 "$mpi" run matmul --cost-only : -n 1 -x TILESIM_HOST_MEMORY=junk "$mpi" run matmul \
    --cost-only >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "^rank 1: tilesim-mpi: TILESIM_HOST_MEMORY='junk'" "$tmp/out"
check $? "a failure of rank 1 alone is said by rank 1 (exit $rc)"

# 2d. the same failure of rank 1 in a mesh run: rank 0 does not enter the run's collectives alone (it hung)
timeout 60 $MPIRUN -n 1 "$mpi" run ring_allreduce --devices 8 : -n 1 -x TILESIM_KERNEL_TIMEOUT=junk "$mpi" \
    run ring_allreduce --devices 8 >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "^rank 1: tilesim-mpi: TILESIM_KERNEL_TIMEOUT='junk'" "$tmp/out"
check $? "a mesh run where rank 1 alone refuses its environment ends, exit 2 ($rc)"

# 3. a bad option: one message, exit 2
timeout 60 $MPIRUN -n 4 "$mpi" sweep matmul 512 512 512 --bogus >"$tmp/out" 2>&1
rc=$?
n=$(grep -c "unknown option '--bogus'" "$tmp/out")
[ $rc != 0 ] && [ $rc != 124 ] && [ "$n" = 1 ]
check $? "a bad option on 4 ranks: one message ($n), exit non-zero ($rc)"

# 4. meshes across ranks
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
# the one line that differs: how many processes ran the devices
no_ranks() { grep -v '^  ranks: ' "$1"; }

same_mesh() { # NAME ARGS...: one process and 2 and 4 ranks, the same digest
    name=$1; shift
    start=$(date +%s.%N)
    timeout 300 "$single" "$@" >"$tmp/one" 2>&1; one=$?
    t1=$(elapsed $start)
    for n in 2 4; do
        start=$(date +%s.%N)
        timeout 300 $MPIRUN -n $n "$mpi" "$@" >"$tmp/many" 2>&1; many=$?
        tn=$(elapsed $start)
        no_ranks "$tmp/one" >"$tmp/a"
        no_ranks "$tmp/many" >"$tmp/b"
        msgs=$(sed -n 's/^  ranks: the devices ran in [0-9]* processes, in blocks; \([0-9]*\) copies.*/\1/p' "$tmp/many")
        if cmp -s "$tmp/a" "$tmp/b" && [ $one = $many ] && [ $one = 0 ] && [ "${msgs:-0}" -gt 0 ]; then ok=0; else ok=1; fi
        check $ok "$name on $n ranks: the same figures and outputs as one process, $msgs messages between ranks (wall: one process ${t1} s, $n ranks ${tn} s)"
        [ $ok = 0 ] || diff "$tmp/a" "$tmp/b" | head -10 >&2
    done
}

same_mesh "ring_allreduce" run ring_allreduce --devices 8 --rows 256 --cols 512 --seed 3 --digest
same_mesh "ring_allreduce, 64 devices cost-only" run ring_allreduce --devices 64 --cost-only --digest
same_mesh "ring_allreduce over 2 slices (DCN)" run ring_allreduce --mesh 'dcn:2 x ring:4' --rows 256 --cols 256 --seed 3 --digest
same_mesh "hier_allreduce, 4 slices split across ranks" run hier_allreduce --mesh 'dcn:4 x ring:4' --rows 512 --cols 256 --seed 3 --digest
same_mesh "ring_allgather" run ring_allgather --devices 6
# each device's report and records reach rank 0 in parts (64 MiB by
# default); 1000-byte parts make every device's cross in many
export TILESIM_MPI_PART_BYTES=1000
same_mesh "ring_allreduce, records to rank 0 in 1000-byte parts" run ring_allreduce --devices 16 --cost-only --digest
unset TILESIM_MPI_PART_BYTES
same_mesh "collective_matmul" run collective_matmul --devices 4

for n in 2 4; do
    timeout 5 $MPIRUN -n $n "$mpi" run deadlock --devices 8 >"$tmp/out" 2>&1
    rc=$?
    [ $rc = 0 ] && grep -q "naming each of the 7 stuck devices" "$tmp/out"
    check $? "a deadlock across $n ranks is reported within 5 s, naming the 7 stuck devices (exit $rc)"
done

# a mesh kernel of the user's own (examples/plugin/ring_reduce_scatter.c, issue 24)
ring=$(dirname "$single")/examples/plugin/ring_reduce_scatter.so
for n in 2 4; do
    timeout 120 $MPIRUN -n $n "$mpi" run "$ring" --set devices=8 >"$tmp/ring" 2>&1
    rc=$?
    [ $rc = 0 ] && grep -q "the devices ran in $n processes" "$tmp/ring" && grep -q '^PASS$' "$tmp/ring"
    check $? "a mesh plugin (ring_reduce_scatter.so, 8 devices) runs across $n ranks and every device passes (exit $rc)"
done

timeout 120 $MPIRUN -n 1 "$cases" "$tmp/trace1.json" >"$tmp/cases1" 2>"$tmp/err1"
check $? "mesh cases on one rank"
for n in 2 3 4; do
    timeout 120 $MPIRUN -n $n "$cases" "$tmp/trace$n.json" >"$tmp/cases$n" 2>"$tmp/err$n"
    rc=$?
    cmp -s "$tmp/cases1" "$tmp/cases$n" && [ $rc = 0 ]
    ok=$?
    check $ok "mesh cases on $n ranks print what one rank prints: races, M10, a fault, a deadlock (exit $rc)"
    [ $ok = 0 ] || diff "$tmp/cases1" "$tmp/cases$n" | head -10 >&2
    cmp -s "$tmp/trace1.json" "$tmp/trace$n.json"
    check $? "the trace rank 0 writes for $n ranks is the one-process trace, byte for byte"
    k=$(grep -c "case deadlock: rc -8, $n ranks" "$tmp/err$n")
    [ "$k" = $n ]
    check $? "every one of the $n ranks reports the deadlock ($k did)"
    k=$(grep "case ring_allreduce with a trace" "$tmp/err$n" | sed -n 's/.* \([0-9]*\) messages between them/\1/p' | head -n 1)
    [ "${k:-0}" -gt 0 ]
    check $? "the ring all-reduce's copies crossed between the $n ranks ($k messages)"
done

# 6. the watchdog
timeout 60 $MPIRUN -n 2 "$mpi" --rank-timeout 0 chips >"$tmp/out" 2>&1
rc=$?
n=$(grep -c "tilesim-mpi: --rank-timeout: '0' is not a number of seconds" "$tmp/out")
[ $rc = 2 ] && [ "$n" = 1 ]
check $? "--rank-timeout 0: one message ($n), exit 2 ($rc)"

start=$(date +%s.%N)
timeout 120 $MPIRUN -n 2 "$mpi" --rank-timeout 0.5 sweep matmul 16384 16384 16384 --csv >"$tmp/out" 2>&1
rc=$?
[ $rc = 0 ] && ! grep -q "has not" "$tmp/out"
check $? "a sweep computing for seconds with --rank-timeout 0.5 is not stopped (exit $rc, $(elapsed $start) s)"

stop_rank() { # VICTIM WORDS: SIGSTOP rank VICTIM of a long 2-rank job; the others must end it
    victim=$1 words=$2
    rm -f "$tmp"/pid.*
    start=$(date +%s.%N)
    # each rank writes its pid (exec keeps it) before it becomes tilesim-mpi
    timeout 60 $MPIRUN -n 2 sh -c "echo \$\$ >$tmp/pid.\$OMPI_COMM_WORLD_RANK; exec $mpi --rank-timeout 2 \
        sweep matmul 16384 16384 16384 --csv" >"$tmp/out" 2>&1 &
    job=$!
    i=0
    while [ ! -s "$tmp/pid.$victim" ] && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
    sleep 1 # into the sweep, which takes seconds
    stopped=$(cat "$tmp/pid.$victim" 2>/dev/null)
    [ -n "$stopped" ] && kill -STOP "$stopped" 2>/dev/null
    wait $job
    rc=$?
    t=$(elapsed $start)
    if [ -n "$stopped" ]; then kill -CONT "$stopped"; kill -KILL "$stopped"; fi 2>/dev/null
    stopped=
    n=$(grep -F -c "tilesim-mpi: $words for 2 s (stopped or hung?); stopping every rank" "$tmp/out")
    [ $rc = 4 ] && [ "$n" = 1 ] && awk -v t="$t" 'BEGIN { exit !(t < 30) }'
    check $? "rank $victim stopped (SIGSTOP): \"$words\" ($n), exit 4 ($rc) in $t s"
    [ $rc = 4 ] || head -5 "$tmp/out" >&2
}
stop_rank 1 "rank 1 has not answered"
stop_rank 0 "rank 1 has not heard from rank 0"

exit $fail
