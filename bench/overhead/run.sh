#!/usr/bin/env bash
# Overhead benchmark: AllocBench run plainly, under `heaplens record`, and under the "empty
# profiler" (the collector loaded with the same runtime flags but callbacks that do nothing,
# HEAPLENS_EMPTY=1). Prints the median of each and the ratios recorded/plain and empty/plain,
# for the benchmark's own timing of its allocation loop (elapsed_ms) and for the wall-clock
# time of the whole command (start-up, recording and the writer's final commit included).
#
#   bench/overhead/run.sh --heaplens build/bin/heaplens [--runs 5] [--iterations 2000]
#                         [--threads 2] [--dll PATH/AllocBench.dll] [--workdir DIR] [--keep]
#
# Without --dll, AllocBench is built (Release) into the work directory first. Not a test: the
# numbers depend on the machine; run it on a quiet one.
set -euo pipefail

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

heaplens= runs=5 iterations=2000 threads=2 dll= workdir= keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --heaplens) heaplens=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --iterations) iterations=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --dll) dll=$2; shift 2 ;;
        --workdir) workdir=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=bench/common.sh
. "$repo/bench/common.sh"
bench_check_tools
bench_workdir_make overhead
bench_example_build AllocBench

now_ns() { date +%s%N; }

# run_one MODE I: runs once, appends "elapsed_ms wall_ms" to $workdir/MODE.times
run_one() {
    local mode=$1 i=$2 out start end db rc=0
    db=$workdir/$mode-$i.db
    rm -f "$db" "$db-wal" "$db-shm"
    start=$(now_ns)
    case "$mode" in
        plain) out=$(dotnet "$dll" "$iterations" --threads "$threads" 2>&1) || rc=$? ;;
        recorded) out=$(env -u HEAPLENS_EMPTY "$heaplens" record -o "$db" -- \
                        dotnet "$dll" "$iterations" --threads "$threads" 2>&1) || rc=$? ;;
        empty) out=$(HEAPLENS_EMPTY=1 "$heaplens" record -o "$db" -- \
                     dotnet "$dll" "$iterations" --threads "$threads" 2>&1) || rc=$? ;;
    esac
    end=$(now_ns)
    printf '%s\n' "$out" >>"$workdir/$mode.log"
    if [ "$rc" -ne 0 ]; then
        printf '%s\n' "$out" >&2
        echo "run.sh: $mode run $i failed with exit status $rc" >&2
        exit 1
    fi
    local elapsed collector want=loaded
    elapsed=$(printf '%s\n' "$out" | sed -n 's/.*AllocBench:.* elapsed_ms=\([0-9.]*\).*/\1/p' | tail -1)
    [ -n "$elapsed" ] || { printf '%s\n' "$out" >&2; echo "run.sh: no elapsed_ms in output" >&2; exit 1; }
    # AllocBench says whether the collector library is mapped into it: a run that was meant to
    # be profiled but is not would make the ratios meaningless.
    collector=$(printf '%s\n' "$out" | sed -n 's/.*AllocBench:.* collector=\([a-z]*\).*/\1/p' | tail -1)
    [ "$mode" = plain ] && want=none
    if [ "$collector" != "$want" ]; then
        printf '%s\n' "$out" >&2
        echo "run.sh: $mode run $i: collector=${collector:-?}, expected $want" >&2
        exit 1
    fi
    echo "$elapsed $(( (end - start) / 1000000 ))" >>"$workdir/$mode.times"
    [ "$keep" = 1 ] || rm -f "$db" "$db-wal" "$db-shm"
}

median() { # column N of file → median
    sort -g -k"$1","$1" "$2" | awk -v c="$1" '{ v[NR] = $c } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

modes="plain recorded empty"
for m in $modes; do rm -f "$workdir/$m.times" "$workdir/$m.log"; done
echo "AllocBench: $(basename "$dll"), iterations=$iterations threads=$threads, $runs runs per mode"
dotnet "$dll" "$iterations" --threads "$threads" >/dev/null # warm the disk cache
for i in $(seq 1 "$runs"); do # interleaved, so slow drifts of the machine hit every mode alike
    for m in $modes; do run_one "$m" "$i"; done
done

printf '\n%-10s %16s %14s\n' mode "alloc loop ms" "wall ms"
for m in $modes; do
    printf '%-10s %16s %14s\n' "$m" "$(median 1 "$workdir/$m.times")" "$(median 2 "$workdir/$m.times")"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'; }
p1=$(median 1 "$workdir/plain.times") p2=$(median 2 "$workdir/plain.times")
r1=$(median 1 "$workdir/recorded.times") r2=$(median 2 "$workdir/recorded.times")
e1=$(median 1 "$workdir/empty.times") e2=$(median 2 "$workdir/empty.times")
printf '\n%-16s %16s %14s\n' ratio "alloc loop" "wall"
printf '%-16s %16s %14s\n' recorded/plain "$(ratio "$r1" "$p1")" "$(ratio "$r2" "$p2")"
printf '%-16s %16s %14s\n' empty/plain "$(ratio "$e1" "$p1")" "$(ratio "$e2" "$p2")"
[ "$keep" = 1 ] && echo "logs and times in $workdir"
exit 0
