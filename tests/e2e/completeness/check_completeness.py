#!/usr/bin/env python3
"""End-to-end completeness test: scaled-down versions of the recording benchmarks (bench/record).

    check_completeness.py --heaplens build/bin/heaplens --examples build/examples --workdir DIR

Nothing here measures time; every check is exact.

  workload  examples/Workload (4 threads, --orders N) allocates on its own, with GCs on their own.
            The recording must be whole: status complete, every loss counter 0, the program's
            exact count of its own types per worker thread equals the allocations stored per
            (type, thread) — through `heaplens allocations --thread` and the
            allocations_by_type_thread view — the sum of all stored allocations equals the
            collector's allocs_seen, and the number of GCs equals the program's
            GC.CollectionCount(0).
  heap      examples/SnapshotBench builds a tree of N nodes and waits; `heaplens snapshot PID`
            must return only once the snapshot is stored, with every node in it, a clean
            self-check (model_missing = model_extra = 0), and nothing lost. The pool is
            scaled down with the heap (--heap-pool-mb, default 1: 64 chunks, the least), so
            the building thread outruns the collector and waits for it (issue 17: the 10M
            heap on default settings lost 2M allocations while it was built).

Python 3 standard library only. Prints every mismatch and a final "N passed, M failed" line.
"""
import argparse
import os
import re
import sqlite3
import subprocess
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import Checks, heaplens_json, remove_db, run, start_log  # noqa: E402

NS = "HeapLens.Examples.Workload."
LOSS_COUNTERS = ["allocs_dropped", "allocs_dropped_buffer", "allocs_dropped_writer",
                 "gc_events_dropped", "records_dropped", "bytes_dropped", "gcs_dropped",
                 "snapshots_dropped", "writer_lost", "threads_overflowed", "model_anomalies",
                 "gcs_discarded_incomplete", "snapshots_discarded", "writer_anomalies"]


def open_ro(db):
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def check_whole(checks, conn, what):
    status = conn.execute("SELECT status FROM run").fetchone()[0]
    checks.eq(f"{what}: run.status", "complete", status)
    counters = dict(conn.execute("SELECT name, value FROM counters").fetchall())
    for c in LOSS_COUNTERS:
        checks.eq(f"{what}: counter {c}", 0, counters.get(c, "missing"))
    bad = conn.execute("SELECT group_concat(gc) FROM gcs WHERE incomplete != 0").fetchone()[0]
    checks.ok(f"{what}: no GC marked incomplete", bad is None, f"incomplete GCs: {bad}")
    return counters


def workload(a, checks, log):
    db = os.path.join(a.workdir, "workload.db")
    remove_db(db)
    dll = os.path.join(a.examples, "Workload", "Workload.dll")
    cmd = [a.heaplens, "record", "-o", db, "--", a.dotnet, dll,
           "--threads", str(a.threads), "--orders", str(a.orders)]
    rc, out, err = run(cmd, log=log, timeout=a.timeout)
    if not checks.eq("workload: heaplens record exit status", 0, rc):
        print(err[-2000:])
        return
    truth = {}
    gcs_program = None
    for line in out.splitlines():
        m = re.match(r"Workload: worker=(\S+) (.*)", line)
        if m:
            truth[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        m = re.search(r"collection_count0=(\d+)", line)
        if m:
            gcs_program = int(m.group(1))
    checks.eq("workload: every worker reported its counts", a.threads, len(truth))
    checks.ok("workload: the collector was loaded", "collector=loaded" in out, out[-300:])
    conn = open_ro(db)
    counters = check_whole(checks, conn, "workload")
    checks.eq("workload: GCs recorded == GC.CollectionCount(0)", gcs_program,
              conn.execute("SELECT count(*) FROM gcs").fetchone()[0])
    # Allocations the runtime did not report (flags 1, .NET 10 delegates and boxes) are counted
    # too, but are not in allocs_seen.
    stored = conn.execute("SELECT sum(count) FROM alloc_counts WHERE flags & 1 = 0").fetchone()[0]
    checks.eq("workload: reported allocations stored == allocs_seen", counters.get("allocs_seen"),
              stored)
    for worker, per_type in sorted(truth.items()):
        for short, count in sorted(per_type.items()):
            name = NS + short
            n = conn.execute("SELECT coalesce(sum(count), 0) FROM allocations_by_type_thread "
                             "WHERE type = ? AND thread_name = ?", (name, worker)).fetchone()[0]
            checks.eq(f"workload: {short} allocated by {worker} (view)", count, n)
            doc = heaplens_json(checks, a.heaplens, ["allocations", db, "--thread", worker], log)
            if doc is not None:
                got = sum(r["count"] for r in doc.get("rows", []) if r["type"] == name)
                checks.eq(f"workload: {short} allocated by {worker} (heaplens allocations)",
                          count, got)
    # Objects that survived a GC have rows; the aggregate says how many survived.
    survived = conn.execute("SELECT sum(survived) FROM allocations_by_type_thread").fetchone()[0]
    rows = conn.execute("SELECT count(*) FROM objects WHERE id < 281474976710656").fetchone()[0]
    checks.eq("workload: one objects row per allocation that survived a GC", survived, rows)
    conn.close()


def heap(a, checks, log):
    db = os.path.join(a.workdir, "heap.db")
    go = os.path.join(a.workdir, "heap.go")
    remove_db(db, go)
    dll = os.path.join(a.examples, "SnapshotBench", "SnapshotBench.dll")
    cmd = [a.heaplens, "record", "-o", db, "--snapshot", "none", "--", a.dotnet, dll,
           "--nodes", str(a.nodes), "--gen0", "1", "--wait-before-collect", go]
    env = dict(os.environ, HEAPLENS_POOL_MB=str(a.heap_pool_mb))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    ready = threading.Event()
    lines = []

    def pump():
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"collect-ready .*pid=(\d+)", line)
            if m:
                ready.pid = int(m.group(1))
                ready.set()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        if not checks.ok("heap: the program built its tree", ready.wait(a.timeout),
                         "".join(lines)[-500:]):
            return
        rc, out, err = run([a.heaplens, "snapshot", str(ready.pid)], log=log, timeout=a.timeout)
        checks.eq("heap: heaplens snapshot PID exit status", 0, rc)
        # The command returns once the snapshot is stored: it must be readable right now.
        conn = open_ro(db)
        snap = conn.execute("SELECT snapshot, objects, model_missing, model_extra, trigger "
                            "FROM snapshots").fetchall()
        conn.close()
        if checks.eq("heap: one snapshot stored when the command returned", 1, len(snap)):
            _, objects, missing, extra, trigger = snap[0]
            checks.eq("heap: snapshot trigger", "requested", trigger)
            checks.ok("heap: every node in the snapshot", objects >= a.nodes,
                      f"{objects} objects < {a.nodes} nodes")
            checks.eq("heap: self-check model_missing", 0, missing)
            checks.eq("heap: self-check model_extra", 0, extra)
    finally:
        open(go, "w").close()
        try:
            proc.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(5)
    checks.eq("heap: heaplens record exit status", 0, proc.returncode)
    conn = open_ro(db)
    counters = check_whole(checks, conn, "heap")
    print(f"heap: threads waited {counters.get('thread_wait_ns', 0) / 1e6:.1f} ms for the "
          f"collector ({counters.get('thread_waits', 0)} waits), nothing lost")
    nodes = conn.execute(
        "SELECT count(*) FROM snapshot_contents WHERE snapshot = 1 AND type = ?",
        ("HeapLens.Bench.BenchNode",)).fetchone()[0]
    checks.eq("heap: BenchNode objects in the snapshot", a.nodes, nodes)
    conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--examples", required=True, help="directory with Workload/ and SnapshotBench/")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--dotnet", default="dotnet")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--orders", type=int, default=40000)
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("--heap-pool-mb", type=int, default=1,
                    help="HEAPLENS_POOL_MB of the heap case (default 1)")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", choices=["workload", "heap"])
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    log = start_log(a.workdir)
    checks = Checks(a.verbose)
    if a.only in (None, "workload"):
        workload(a, checks, log)
    if a.only in (None, "heap"):
        heap(a, checks, log)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
