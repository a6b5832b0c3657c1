#!/bin/sh
# Benchmark of retained sizes on N synthetic objects (see README.md).
# usage: bench/dominators/run.sh [BUILD_DIR] [N_OBJECTS]
set -eu
build=${1:-build}
n=${2:-10000000}
bin=$build/bin
for exe in bench_dominators bench_retention_db heaplens; do
  [ -x "$bin/$exe" ] || { echo "run.sh: $bin/$exe missing; build first" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/heaplens-bench-dom-XXXXXX")
trap 'rm -rf "$dir"' EXIT
time_fmt='wall %e s, user %U s, sys %S s, peak %M KiB'

echo "== in memory: bench_dominators $n"
/usr/bin/time -f "$time_fmt" "$bin/bench_dominators" "$n"

echo "== database: bench_retention_db (not timed)"
"$bin/bench_retention_db" "$dir/synthetic.db" "$n"

echo "== heaplens retention, first run (computes and stores)"
/usr/bin/time -f "$time_fmt" "$bin/heaplens" retention "$dir/synthetic.db" --progress --top 5

echo "== heaplens retention, second run (reads the stored rows)"
/usr/bin/time -f "$time_fmt" "$bin/heaplens" retention "$dir/synthetic.db" --top 5
