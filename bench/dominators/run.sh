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

# The first run twice, on two copies: loading on one thread (HEAPLENS_THREADS=1, as before the
# references were read alongside the objects) and on two (the default).
cp "$dir/synthetic.db" "$dir/one-thread.db"
seconds() { /usr/bin/time -f "%e" -o "$dir/t" "$@" >/dev/null && cat "$dir/t"; }

echo "== heaplens retention, first run, loading on one thread (HEAPLENS_THREADS=1)"
one=$(export HEAPLENS_THREADS=1; seconds "$bin/heaplens" retention "$dir/one-thread.db" --top 5)
echo "wall $one s"
rm -f "$dir/one-thread.db"

echo "== heaplens retention, first run (computes and stores)"
/usr/bin/time -f "$time_fmt" -o "$dir/t2" "$bin/heaplens" retention "$dir/synthetic.db" --progress --top 5
cat "$dir/t2"
two=$(sed -n 's/^wall \([0-9.]*\) s.*/\1/p' "$dir/t2")

echo "== heaplens retention, second run (reads the stored rows)"
/usr/bin/time -f "$time_fmt" "$bin/heaplens" retention "$dir/synthetic.db" --top 5

echo "== first run, one-thread loading / default: $(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.2fx", a / b }')"
