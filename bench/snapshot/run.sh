#!/usr/bin/env bash
# Snapshot benchmark: SnapshotBench (about one million live objects) run plainly, under the
# "empty profiler" (HEAPLENS_EMPTY=1), under `heaplens record --snapshot none` and under
# `heaplens record` (default policy: a snapshot at the program's one GC.Collect()). Prints the
# medians and these ratios (not a test; the numbers depend on the machine):
#
#  snapshot objects/s, end to end  snapshot objects / (time from the snapshot GC's start,
#        gcs.start_ns, to the moment its snapshot row is visible to a reader of the database,
#        i.e. committed): the GC itself, the runtime's walk, the collector's work, the stream and
#        the writer's transaction. Before its GC.Collect() the program waits until the writer
#        has committed every earlier GC (SnapshotBench --wait-before-collect), so the figure is
#        not the writer's backlog of the million allocations. A poller opens the database
#        read-only every 2 ms and stamps the first time `snapshots` has a row (CLOCK_MONOTONIC,
#        the clock of the *_ns columns). Cross-check: the same objects / (median wall time of
#        `record` − median wall time of `record --snapshot none`, the catch-up wait left out).
#  walk objects/s  snapshot objects / snapshots.walk_ns (the runtime's ObjectReferences walk only).
#  bytes/object    (database size with the snapshot − size with --snapshot none) / snapshot
#        objects: what the snapshot tables and their indexes cost on disk.
#  snapshot GC     the program's wall time of GC.Collect() with the snapshot vs the same GC
#        with --snapshot none and plain (the runtime's own pause clock, GetTotalPauseDuration,
#        stops before the profiler's heap walk, so wall time is the figure that counts; both
#        are shown), and heaplens' gcs.pause_ns.
#  gen0 GCs        median pause of the 10 gen0 GCs after the snapshot GC (tree in gen2; heaplens
#        cuts the heap walk at its first object) as wall time of the allocation that triggered
#        each, under heaplens vs plain vs the empty profiler.
#
#   bench/snapshot/run.sh --heaplens build/bin/heaplens [--runs 3] [--nodes N] [--gen0 K]
#                         [--dll PATH/SnapshotBench.dll] [--workdir DIR] [--keep]
#
# Without --dll, SnapshotBench is built (Release) into the work directory first.
set -euo pipefail

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }

heaplens= runs=3 nodes=1048575 gen0=10 dll= workdir= keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --heaplens) heaplens=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --gen0) gen0=$2; shift 2 ;;
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
command -v python3 >/dev/null || { echo "run.sh: python3 not found" >&2; exit 1; }
bench_workdir_make snapshot
bench_example_build SnapshotBench

# `--snapshot none` once `heaplens record` has the option; until then the collector's own
# variable, which is what the option sets.
if "$heaplens" record --help 2>&1 | grep -- '--snapshot' >/dev/null; then
    none_args=(--snapshot none) none_env=()
else
    none_args=() none_env=(HEAPLENS_SNAPSHOT=none)
    echo "note: heaplens record has no --snapshot option yet; using HEAPLENS_SNAPSHOT=none"
fi

program=(dotnet "$dll" --nodes "$nodes" --gen0 "$gen0")
now_ns() { date +%s%N; }

# The runner: starts one mode's command, lets heaplens' writer catch up before the snapshot GC
# (SnapshotBench --wait-before-collect: when the program says "collect-ready gcs=N", it waits
# until GC N is committed, then creates the go file), and stamps (CLOCK_MONOTONIC ns, the clock
# of the *_ns columns) the moment the snapshot's row is visible to a reader, i.e. committed. It
# polls read-only every 2 ms, and only once the -wal file exists: a reader holding the file while
# the writer sets it up makes the writer fail ("database is locked"). Prints the program's output,
# then "RUNNER caught_up_ms=... commit_ns=..." and exits with the command's status.
cat >"$workdir/runner.py" <<'EOF'
import os, sqlite3, subprocess, sys, threading, time
mode, db, go = sys.argv[1], sys.argv[2], sys.argv[3]
cmd = sys.argv[5:]  # after "--"
def query(sql):
    if not os.path.exists(db + "-wal"):
        return None
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0)
        try:
            return c.execute(sql).fetchone()[0]
        finally:
            c.close()
    except sqlite3.Error:
        return None
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
lines, ready = [], threading.Event()
def pump():
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("SnapshotBench: collect-ready"):
            ready.gcs = int(line.split("gcs=")[1].split()[0])
            ready.set()
threading.Thread(target=pump, daemon=True).start()
caught_up = commit = None
while proc.poll() is None and not ready.wait(0.01):
    pass
if ready.is_set():
    t = time.monotonic_ns()
    if mode in ("none", "snapshot"):  # wait for the writer to commit every GC so far
        while proc.poll() is None and (query("SELECT max(gc) FROM gcs") or 0) < ready.gcs:
            time.sleep(0.002)
    caught_up = (time.monotonic_ns() - t) / 1e6
    open(go, "w").close()
    if mode == "snapshot":
        while proc.poll() is None:
            if query("SELECT count(*) FROM snapshots"):
                commit = time.monotonic_ns()
                break
            time.sleep(0.002)
rc = proc.wait()
time.sleep(0.05)  # let the reader thread take the last lines
sys.stdout.write("".join(lines))
print(f"RUNNER caught_up_ms={caught_up if caught_up is not None else 'none'} "
      f"commit_ns={commit if commit is not None else 'none'}")
sys.exit(rc)
EOF

# Facts of one recording's first snapshot: "objects refs roots walk_ns gc_start_ns gc_pause_ns
# model_missing model_extra", or "none".
db_facts() {
    python3 - "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
try:
    r = c.execute("SELECT s.objects, s.refs, s.roots, s.walk_ns, g.start_ns, g.pause_ns, "
                  "s.model_missing, s.model_extra FROM snapshots s JOIN gcs g ON g.gc = s.gc "
                  "ORDER BY s.snapshot LIMIT 1").fetchone()
except sqlite3.Error:
    r = None
print(" ".join(str(v) for v in r) if r else "none")
EOF
}

field() { printf '%s\n' "$2" | sed -n "s/.*$1=\([^ ]*\).*/\1/p" | tail -1; }

# run_one MODE I: one run; appends to $workdir/MODE.times:
#   collect_wall_us collect_pause_us gen0_wall_median_us gen0_pause_median_us wall_ms db_bytes
# and, for mode snapshot, the database facts and the commit stamp to $workdir/snapshot.facts.
run_one() {
    local mode=$1 i=$2 out rc=0 start end db go
    db=$workdir/$mode-$i.db go=$workdir/go
    rm -f "$db" "$db-wal" "$db-shm" "$go"
    local prog=("${program[@]}" --wait-before-collect "$go")
    start=$(now_ns)
    case "$mode" in
        plain) out=$(python3 "$workdir/runner.py" plain "$db" "$go" -- "${prog[@]}") || rc=$? ;;
        empty) out=$(HEAPLENS_EMPTY=1 python3 "$workdir/runner.py" empty "$db" "$go" -- \
                     "$heaplens" record -q -o "$db" -- "${prog[@]}") || rc=$? ;;
        none) out=$(env -u HEAPLENS_EMPTY "${none_env[@]}" python3 "$workdir/runner.py" none "$db" \
                    "$go" -- "$heaplens" record -q "${none_args[@]}" -o "$db" -- "${prog[@]}") || rc=$? ;;
        snapshot) out=$(env -u HEAPLENS_EMPTY python3 "$workdir/runner.py" snapshot "$db" "$go" -- \
                        "$heaplens" record -q -o "$db" -- "${prog[@]}") || rc=$? ;;
    esac
    end=$(now_ns)
    printf '%s\n' "$out" >>"$workdir/$mode.log"
    if [ "$rc" -ne 0 ]; then
        printf '%s\n' "$out" >&2
        echo "run.sh: $mode run $i failed with exit status $rc" >&2
        exit 1
    fi
    local want=loaded collector
    [ "$mode" = plain ] && want=none
    collector=$(field collector "$out")
    if [ "$collector" != "$want" ]; then
        printf '%s\n' "$out" >&2
        echo "run.sh: $mode run $i: collector=${collector:-?}, expected $want" >&2
        exit 1
    fi
    # Wall time of the command, less the time spent waiting for the writer to catch up.
    local caught wall bytes=0
    caught=$(field caught_up_ms "$out")
    wall=$(awk -v a="$(( (end - start) / 1000000 ))" -v b="${caught:-0}" \
           'BEGIN { if (b == "none") b = 0; printf "%.0f", a - b }')
    [ "$mode" = plain ] || bytes=$(( $(stat -c %s "$db") + $( [ -f "$db-wal" ] && stat -c %s "$db-wal" || echo 0) ))
    echo "$(field collect_wall_us "$out") $(field collect_pause_us "$out")" \
         "$(field gen0_wall_median_us "$out") $(field gen0_pause_median_us "$out")" \
         "$wall $bytes" >>"$workdir/$mode.times"
    if [ "$mode" = snapshot ]; then
        echo "$(db_facts "$db") $(field commit_ns "$out")" >>"$workdir/snapshot.facts"
    fi
    [ "$keep" = 1 ] || rm -f "$db" "$db-wal" "$db-shm"
}

modes="plain empty none snapshot"
for m in $modes; do rm -f "$workdir/$m.times" "$workdir/$m.log"; done
rm -f "$workdir/snapshot.facts"
echo "SnapshotBench: $(basename "$dll"), nodes=$nodes gen0=$gen0, $runs runs per mode"
"${program[@]}" >/dev/null # warm the disk cache
for i in $(seq 1 "$runs"); do # interleaved, so slow drifts of the machine hit every mode alike
    for m in $modes; do run_one "$m" "$i"; done
done

python3 - "$workdir" <<'EOF'
import os, statistics, sys
w = sys.argv[1]

def rows(name):
    path = os.path.join(w, name)
    if not os.path.exists(path):
        return []
    return [line.split() for line in open(path) if line.strip()]

def med(name, col):
    vals = []
    for r in rows(name):
        try:
            v = float(r[col])
        except (IndexError, ValueError):
            continue
        if v == v:  # not nan
            vals.append(v)
    return statistics.median(vals) if vals else None

def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"

def num(v, f="{:,.0f}"):
    return f.format(v) if v is not None else "n/a"

def rate(n, ns):
    return f"{n / (ns / 1e9):,.0f}" if n is not None and ns else "n/a"

modes = ["plain", "empty", "none", "snapshot"]
print(f"\n{'mode':<9} {'GC.Collect wall':>16} {'GC.Collect pause':>17} {'gen0 wall':>10} "
      f"{'gen0 pause':>11} {'record wall':>12} {'db bytes':>13}")
for m in modes:
    t = m + ".times"
    print(f"{m:<9} {num(med(t, 0), '{:,.0f} us'):>16} {num(med(t, 1), '{:,.0f} us'):>17} "
          f"{num(med(t, 2), '{:,.0f} us'):>10} {num(med(t, 3), '{:,.0f} us'):>11} "
          f"{num(med(t, 4), '{:,.0f} ms'):>12} {num(med(t, 5) if m != 'plain' else None):>13}")

facts = [r for r in rows("snapshot.facts") if r and r[0] != "none"]
objects = med("snapshot.facts", 0) if facts else None
print()
if objects is None:
    print("no snapshot in the recordings (does the store write the snapshots table yet?): "
          "snapshot rates and sizes are n/a")
else:
    print(f"snapshot: {objects:,.0f} objects, {med('snapshot.facts', 1):,.0f} references, "
          f"{med('snapshot.facts', 2):,.0f} roots (medians); model_missing "
          f"{med('snapshot.facts', 6):.0f}, model_extra {med('snapshot.facts', 7):.0f}")
e2e = [float(r[8]) - float(r[4]) for r in facts if len(r) > 8 and r[8] != "none"]
e2e_ns = statistics.median(e2e) if e2e else None
walk_ns = med("snapshot.facts", 3) if facts else None
wall_s, wall_n = med("snapshot.times", 4), med("none.times", 4)
bytes_s, bytes_n = med("snapshot.times", 5), med("none.times", 5)
cw = {m: med(m + ".times", 0) for m in modes}
cp = {m: med(m + ".times", 1) for m in modes}
g0 = {m: med(m + ".times", 2) for m in modes}


def line(name, value, target=""):
    print(f"{name:<56} {value:>14}   {target}")


print(f"\n{'figure':<56} {'value':>14}   target (shared goals)")
line("snapshot objects/s end to end (GC start -> committed)", rate(objects, e2e_ns),
     ">= 3,000,000")
line("  GC start -> snapshot committed", num(e2e_ns / 1e6 if e2e_ns else None, "{:,.1f} ms"))
line("snapshot objects/s, wall(record) - wall(record none)",
     rate(objects, (wall_s - wall_n) * 1e6 if wall_s is not None and wall_n is not None
          and wall_s > wall_n else None))
line("walk objects/s (the runtime's walk only, walk_ns)", rate(objects, walk_ns))
line("bytes per snapshot object in the database",
     f"{(bytes_s - bytes_n) / objects:.1f}" if objects and bytes_s and bytes_n else "n/a",
     "<= 17")
line("snapshot GC wall: snapshot / --snapshot none", ratio(cw["snapshot"], cw["none"]))
line("snapshot GC wall: snapshot / plain", ratio(cw["snapshot"], cw["plain"]))
line("snapshot GC wall: --snapshot none / plain", ratio(cw["none"], cw["plain"]))
line("snapshot GC runtime pause clock: snapshot / none", ratio(cp["snapshot"], cp["none"]))
line("snapshot GC heaplens gcs.pause_ns",
     num(med("snapshot.facts", 5) / 1e6 if facts else None, "{:,.1f} ms"))
line("gen0 GC wall: heaplens default / plain", ratio(g0["snapshot"], g0["plain"]))
line("gen0 GC wall: heaplens --snapshot none / plain", ratio(g0["none"], g0["plain"]))
line("gen0 GC wall: heaplens default / empty profiler", ratio(g0["snapshot"], g0["empty"]))
line("gen0 GC wall: empty profiler / plain", ratio(g0["empty"], g0["plain"]))
EOF
[ "$keep" = 1 ] && echo "logs, figures and recordings in $workdir"
exit 0
