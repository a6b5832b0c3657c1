#!/usr/bin/env python3
"""The collector's memory stays bounded while it is behind a program's snapshots
(examples/GcLoop: N live objects and GC.Collect(0) every 5 ms, recorded under the default policy
`induced`, which wants a heap snapshot at every one of them). Before the bound the collector
held one heap walk per GC it had not applied yet (7.4 GiB on GcLoop) and the program's GCs
waited in their pause for room in its queue.

Checks: the collector says what its GC captures held at most (HEAPLENS_STATS=1,
"heaplens: captures:"): the snapshots not yet applied at most 4 walks, or 64 MiB and one walk
when 4 are less (a GC under the bound takes its whole walk), every capture within twice that, the
collector's whole heap within --heap-bound; every induced GC stored either took a snapshot or
is counted in `snapshots_skipped_queued` (nothing silently missing); the skipped snapshots are
said by the summary line, `heaplens info` (its counter line and note; --json), and the report;
the recording is complete, lost nothing, and holds every GC of the program.

Synchronised on the program's own GC count (its "gcs" answer), never on sleeps."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402

NOTE = ("because the collector still held 4 or more earlier snapshots, 64 MiB or more, not yet "
        "applied")


def main():
    ap = e2elib.arguments(__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=200000, help="the program's live objects")
    ap.add_argument("--gcs", type=int, default=150,
                    help="the program's GCs to record (few: without the bound each held a walk)")
    ap.add_argument("--heap-bound", type=int, default=384,
                    help="MiB the collector's heap may reach (its model, the young arrays, the "
                         "captures, the snapshot being built)")
    a, checks, log = e2elib.begin(ap)
    db = os.path.join(a.workdir, "snapshot_bound.db")
    e2elib.remove_db(db)
    env = dict(os.environ, HEAPLENS_STATS="1")
    rec = subprocess.Popen([a.heaplens, "record", "-o", db, "--"] +
                           e2elib.program(a.dotnet, a.dll) + [str(a.objects)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, bufsize=1, env=env)
    err = []
    reader = threading.Thread(target=lambda: err.extend(rec.stderr), daemon=True)
    reader.start()
    try:
        if e2elib.gcloop_ready(checks, rec) is None:
            return checks.summary()
        started = time.monotonic()
        gcs = 0
        deadline = started + 300
        while gcs < a.gcs and time.monotonic() < deadline:
            rec.stdin.write("gcs\n")
            rec.stdin.flush()
            words = rec.stdout.readline().split()
            if len(words) != 2 or words[0] != "gcs":
                break
            gcs = int(words[1])
        took = time.monotonic() - started
        checks.ok(f"the program runs {a.gcs} GCs", gcs >= a.gcs, f"{gcs} after {took:.1f} s")
        e2elib.gcloop_stop(checks, rec)
        rec.stdin.close()
        try:
            rc = rec.wait(timeout=300)
        except subprocess.TimeoutExpired:
            rec.kill()
            rc = rec.wait()
        reader.join(timeout=60)
    finally:
        e2elib.kill_if_running(rec)
    stderr = "".join(err)
    with open(log, "a") as f:
        f.write(f"heaplens record: exit {rc}\n{stderr[-4000:]}\n")
    checks.eq("heaplens record exits 0", 0, rc)
    print(f"the program ran {gcs} GCs in {took:.1f} s while recorded ({gcs / took:.0f} per s)")

    line = [l for l in stderr.splitlines() if l.startswith("heaplens: captures:")]
    checks.ok("the collector says what its captures held (heaplens: captures:)", len(line) == 1,
              stderr[-800:])
    if line:
        print(line[0])
    # The collector thread's kernel share (getrusage RUSAGE_THREAD): its first touches of fresh
    # pages fault, so a run that held snapshots has some.
    stats = [l for l in stderr.splitlines() if l.startswith("heaplens: allocs_seen=")]
    kernel = re.search(r" minflt=(\d+) sys_ms=(\d+\.\d)", stats[0] if stats else "")
    checks.ok("the collector says its page faults and system time (minflt=, sys_ms=)",
              kernel is not None and int(kernel.group(1)) > 0, stats[0] if stats else "")
    # A figure not said fails its check below (the memory is not shown to be bounded).
    figures = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line[0] if line else "")}
    huge = 1 << 62
    bound = figures.get("walks_held_max_bytes", 0)
    checks.eq("the bound is 64 MiB", 64 << 20, bound)
    held_max = figures.get("snapshots_held_max", 0)
    checks.eq("... and 4 snapshots", 4, held_max)

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    status, loss = con.execute("SELECT status, loss FROM run").fetchone()
    counters = dict(con.execute("SELECT name, value FROM counters"))
    stored, induced = con.execute("SELECT count(*), total(induced) FROM gcs").fetchone()
    snapshots = con.execute("SELECT count(*) FROM snapshots").fetchone()[0]
    largest, refs = con.execute("SELECT coalesce(max(objects), 0), coalesce(max(refs), 0) "
                                "FROM snapshots").fetchone()
    # Which GCs went without their snapshot (gcs.snapshot_skipped, schema 9), and that none of
    # them has one.
    held_gcs = [gc for (gc,) in con.execute(
        "SELECT gc FROM gcs WHERE snapshot_skipped = 'held' ORDER BY gc")]
    held_with_snapshot = con.execute(
        "SELECT count(*) FROM gcs g JOIN snapshots s ON s.gc = g.gc"
        " WHERE g.snapshot_skipped IS NOT NULL").fetchone()[0]
    con.close()
    skipped = counters.get("snapshots_skipped_queued", 0)
    print(f"{stored} GCs stored, {int(induced)} induced: {snapshots} snapshots taken, "
          f"{skipped} skipped; the largest snapshot {largest} objects, {refs} references")
    checks.eq("the recording is complete", "complete", status)
    checks.ok("nothing lost", not loss, repr(loss))
    checks.eq("every GC of the program is stored", counters.get("program_gcs"), stored)
    checks.ok("snapshots were skipped (the collector fell behind)", skipped > 0, repr(counters))
    checks.ok("snapshots were taken", snapshots > 0)
    checks.eq("every induced GC took a snapshot or is counted as skipped", int(induced),
              snapshots + skipped)
    checks.eq("the collector's count of skipped snapshots is the stored one",
              figures.get("snapshots_skipped_queued"), skipped)
    checks.eq("each skipped snapshot's GC is marked (gcs.snapshot_skipped = 'held')", skipped,
              len(held_gcs))
    checks.eq("... and no marked GC has a snapshot", 0, held_with_snapshot)
    rc, gcs_json, _ = e2elib.run([a.heaplens, "gcs", db, "--json"], log=log)
    try:
        rows = json.loads(gcs_json).get("rows", [])
    except ValueError:
        rows = []
    checks.eq("heaplens gcs --json marks the same GCs", held_gcs,
              [r.get("gc") for r in rows if r.get("snapshot_skipped") == "held"])
    rc, gcs_text, _ = e2elib.run([a.heaplens, "gcs", db], log=log)
    checks.eq("heaplens gcs shows them as 'skipped (held)'", len(held_gcs),
              gcs_text.count("skipped (held)"))

    # The walk of the largest snapshot (gc_capture.h hl_walk_object_bytes: 32 bytes an object,
    # 12 a reference), doubled by the buffer's growth, and 1 MiB for its strings and the rest.
    one_walk = 2 * (32 * largest + 12 * refs) + (1 << 20)
    walks_bound = max(bound + one_walk, held_max * one_walk)
    checks.ok("the snapshots held stay within their count",
              figures.get("snapshots_held_peak", huge) <= max(held_max, bound // one_walk + 1),
              repr(figures.get("snapshots_held_peak")))
    checks.ok("the walks held stay within 4 walks, or the bound and one walk",
              figures.get("walks_held_peak_bytes", huge) <= walks_bound,
              f"{figures.get('walks_held_peak_bytes')} > {walks_bound}")
    checks.ok("every capture held stays within twice that",
              figures.get("held_peak_bytes", huge) <= 2 * walks_bound,
              f"{figures.get('held_peak_bytes')} > {2 * walks_bound}")
    checks.ok(f"the collector's heap stays within {a.heap_bound} MiB",
              figures.get("collector_heap_peak_bytes", huge) <= a.heap_bound << 20,
              f"{figures.get('collector_heap_peak_bytes', huge) / 2**20:.0f} MiB")

    checks.ok("the summary line says the snapshots skipped", NOTE in stderr, stderr[-800:])
    rc, info, _ = e2elib.run([a.heaplens, "info", db], log=log)
    checks.ok("heaplens info shows the counter",
              rc == 0 and re.search(r"snapshots_skipped_queued\s+[\d,]+", info), info[-1500:])
    checks.ok("heaplens info's note says why", NOTE in info, info[-800:])
    rc, out, _ = e2elib.run([a.heaplens, "info", db, "--json"], log=log)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    checks.eq("heaplens info --json has the counter", skipped,
              doc.get("counters", {}).get("snapshots_skipped_queued"))
    html = os.path.join(a.workdir, "snapshot_bound.html")
    rc, _, rerr = e2elib.run([a.heaplens, "report", db, "-o", html], log=log)
    text = open(html, encoding="utf-8").read() if rc == 0 and os.path.exists(html) else ""
    checks.ok("the report says the snapshots skipped", NOTE in text, rerr[-400:])
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
