#!/usr/bin/env python3
"""repeat.py -- snapshots of one unchanged heap: what the second costs, and heaplens against
dotnet-gcdump on the same heap.

    bench/snapshot/repeat.py --heaplens build/bin/heaplens --dll SnapshotBench.dll
                             [--gcdump build/tools/dotnet-gcdump] [--nodes N] [--runs R]
                             [--workdir DIR]

Records SnapshotBench (N live objects, a binary tree) twice with `heaplens record`:
  one    only the program's own GC.Collect() takes a snapshot;
  two    `--snapshot none` (no snapshot at an induced GC: not at dotnet-gcdump's), and while
         the program waits before its GC.Collect(), `heaplens snapshot PID` and `dotnet-gcdump
         collect -p PID` R times each, interleaved (request -> stored, timed). Every snapshot of
         `two` is of the same heap as `one`'s.
Prints, from SQLite's dbstat of each file, the bytes of the snapshot tables (snapshot_blocks or
snapshot_objects with their indexes, snapshot_roots, snapshot_strings, snapshot_statics) per
snapshot object of `one`, what the later snapshots of `two` added per object, and the medians of
heaplens snapshot and dotnet-gcdump collect (wall seconds, with the load average).
"""
import argparse
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

TABLES = ("snapshot_blocks", "snapshot_blocks_by_snapshot", "snapshot_blocks_by_id",
          "snapshot_objects", "snapshot_object_rows", "snapshot_roots", "snapshot_roots_by_object",
          "snapshot_strings", "snapshot_statics", "snapshots", "fields", "statics")


def snapshot_bytes(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    q = "SELECT sum(pgsize) FROM dbstat WHERE name IN (%s)" % ",".join("?" * len(TABLES))
    total = c.execute(q, TABLES).fetchone()[0] or 0
    snaps = c.execute("SELECT snapshot, objects, trigger FROM snapshots ORDER BY 1").fetchall()
    c.close()
    return total, snaps


def timed(cmd, env=None):
    t = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return time.monotonic() - t, p.returncode, p.stdout


def record(a, db, extra, options=()):
    """Records SnapshotBench; `extra(pid)` runs while it waits before its GC.Collect()."""
    go = db + ".go"
    for p in (db, db + "-wal", db + "-shm", go):
        if os.path.exists(p):
            os.remove(p)
    cmd = [a.heaplens, "record", "-q", "-o", db, *options, "--", "dotnet", a.dll, "--nodes", str(a.nodes),
           "--wait-before-collect", go]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    result = None
    for line in proc.stdout:
        m = re.search(r"collect-ready gcs=\d+ pid=(\d+)", line)
        if m:
            result = extra(int(m.group(1)))
            open(go, "w").close()
    rc = proc.wait()
    if rc != 0:
        sys.exit(f"repeat.py: heaplens record exited with {rc}")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--dll", required=True, help="SnapshotBench.dll")
    ap.add_argument("--gcdump", default=shutil.which("dotnet-gcdump"), help="dotnet-gcdump")
    ap.add_argument("--nodes", type=int, default=1048575)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="heaplens-repeat.")
    os.makedirs(work, exist_ok=True)

    one = os.path.join(work, "one.db")
    record(a, one, lambda pid: None)

    def extra(pid):
        times = {"heaplens": [], "gcdump": []}
        for i in range(a.runs):
            t, rc, out = timed([a.heaplens, "snapshot", str(pid)])
            if rc != 0:
                sys.exit(f"repeat.py: heaplens snapshot failed: {out}")
            times["heaplens"].append(t)
            if a.gcdump:
                out_file = os.path.join(work, f"heap{i}.gcdump")
                t, rc, out = timed([a.gcdump, "collect", "-p", str(pid), "-o", out_file])
                if rc != 0:
                    sys.exit(f"repeat.py: dotnet-gcdump collect failed: {out}")
                times["gcdump"].append(t)
        return times

    two = os.path.join(work, "two.db")
    times = record(a, two, extra, ("--snapshot", "none"))
    b1, s1 = snapshot_bytes(one)
    b2, s2 = snapshot_bytes(two)
    objects = s1[0][1]
    load = os.getloadavg()
    print(f"SnapshotBench --nodes {a.nodes}: {objects:,} objects per snapshot")
    print(f"one snapshot: {b1:,} bytes of snapshot tables, {b1 / objects:.2f} bytes per object")
    print(f"{len(s2)} snapshots of the same heap: {b2:,} bytes; each after the first added "
          f"{(b2 - b1) / (len(s2) - 1):,.0f} bytes, {(b2 - b1) / (len(s2) - 1) / objects:.3f} "
          f"per object")
    med = {k: statistics.median(v) for k, v in times.items() if v}
    for k, v in times.items():
        if v:
            print(f"{k:>9}: request -> stored {' '.join(f'{x:.2f}' for x in v)} s "
                  f"(median {med[k]:.2f})")
    if "gcdump" in med and "heaplens" in med:
        print(f"heaplens snapshot / dotnet-gcdump collect: {med['heaplens'] / med['gcdump']:.2f} "
              f"(load average {load[0]:.1f})")
    print(f"recordings in {work}")


if __name__ == "__main__":
    main()
