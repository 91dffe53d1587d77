#!/bin/sh
# tests/mpi/test_mpi.sh SINGLE MPI: the MPI build against one process, under
# mpirun on this host (loopback). `make test-mpi` runs it.
#   1. sweeps split between 2 and 4 ranks print exactly what one process
#      prints (CSV and JSON, a matmul sweep and a kernel sweep);
#   2. a rank given another command line stops every rank: exit 2, rank 0
#      names the rank;
#   3. a bad command line exits 2 with one message, not one per rank;
#   4. every run ends within its time limit: nothing hangs.
# CI runs as root: Open MPI refuses that unless told (--allow-run-as-root).
# More ranks than cores: --oversubscribe. In containers the shared-memory
# transport's single-copy mechanism may be forbidden: switched off.
set -u
single=$1 mpi=$2
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none"
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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

# 2. another command line on rank 1
timeout 60 $MPIRUN -n 2 sh -c "exec $mpi sweep matmul 512 512 \$((512 + OMPI_COMM_WORLD_RANK * 128)) --csv" \
    >"$tmp/out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "rank 1 was given another command line" "$tmp/out"
check $? "a rank with another command line stops every rank (exit $rc)"

# 3. a bad option: one message, exit 2
timeout 60 $MPIRUN -n 4 "$mpi" sweep matmul 512 512 512 --bogus >"$tmp/out" 2>&1
rc=$?
n=$(grep -c "unknown option '--bogus'" "$tmp/out")
[ $rc != 0 ] && [ $rc != 124 ] && [ "$n" = 1 ]
check $? "a bad option on 4 ranks: one message ($n), exit non-zero ($rc)"

exit $fail
