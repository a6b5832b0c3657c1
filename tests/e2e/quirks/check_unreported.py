#!/usr/bin/env python3
"""End-to-end: allocations the runtime never reports (.NET 10's InternalAllocNoChecks fast
path: delegate combination, a second `event +=`, Nullable boxing).

    check_unreported.py --heaplens build/bin/heaplens --dll build/examples/RuntimeQuirks/RuntimeQuirks.dll \
        --workdir /tmp/u [--n 100] [--no-handles]

`RuntimeQuirks unreported TRUTH N` makes N `a + b` combinations, N publishers with two `event +=`
(the second combines), N `object o = (int?)i` boxes and N boxes of a struct in shared generic
code (`G<string>.Box`: `object o = new S<T>`), all kept, between two GC.Collect()
(snapshots: --snapshot gen2). Checks: every snapshot's self-check is clean
(model_missing = model_extra = 0); on .NET 10 the snapshot after the loops counts the
combinations' System.Action objects, the boxes' System.Int32 and S<System.String> objects as
unreported (model_unreported, DISCOVERED objects flagged 4 in snapshot_objects): at most 2N, N
and N, at least 2N - 3, N - 3 and N - 3 (the runtime reports an allocation that refills a thread's allocation context;
how many do is not known to the program); the flagged ALLOC_COUNTS of that interval
(ObjectsAllocatedByClass estimate) equal the snapshot's per-type unreported counts exactly, and
no other interval has any; on .NET 8/9 nothing is unreported. Those counts come from the
runtime's gen0 walk at every GC: recorded with `record --handles` (run.flags 'handles'); with
--no-handles the recording is made without it and the snapshots must be the same while no
interval has a flagged count. With --census the recording is sampled (no ObjectAllocated for
small objects: the census of gen0 counts them) and the census's counts of the loops' interval
must be the program's own, per type, exactly — on .NET 10 too, where ObjectAllocated misses
most of them: System.Action 2N, System.Int32 N, S<System.String> N, Publisher N. Python 3
standard library only.
"""
import os
import sqlite3
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import DROP_COUNTERS, arguments, begin, record_facts  # noqa: E402


def main():
    ap = arguments()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--no-handles", action="store_true",
                    help="record without --handles: snapshots as with it, no flagged counts")
    ap.add_argument("--census", action="store_true",
                    help="record --mode sampled: the census of gen0 counts the loops' objects")
    a, checks, log = begin(ap)
    db_path = os.path.join(a.workdir, "unreported.db")
    truth_path = os.path.join(a.workdir, "unreported.json")
    # --snapshot gen2: .NET 8 reports GC.Collect(compacting: true) with reason "other", so the
    # default policy (induced) would take no snapshot there; every GC here is gen2.
    # --handles: the unreported counts need the runtime's gen0 walk at every GC (MONITOR_GC);
    # without it the snapshots find the unreported objects just the same, and nothing is counted.
    if a.census:
        a.no_handles = True  # sampled mode: no --handles, no flagged counts
    options = ["--snapshot", "gen2"] + (["--mode", "sampled"] if a.census else
                                        [] if a.no_handles else ["--handles"])
    t = record_facts(checks, a, db_path, truth_path, [str(a.n)], log, record_options=options,
                     args_before_truth=["unreported"], timeout=300)
    if t is None:
        return checks.summary()
    n = t["n"]
    db = sqlite3.connect(db_path)
    flags = (db.execute("SELECT flags FROM run").fetchone() or [None])[0] or ""
    checks.eq("run.flags says whether --handles was given", not a.no_handles,
              "handles" in flags.split(","))
    counters = dict(db.execute("SELECT name, value FROM counters"))
    for name in DROP_COUNTERS + ["writer_anomalies"]:
        if name in counters:
            checks.eq(name, 0, counters[name])
    snaps = db.execute("SELECT snapshot, gc, model_missing, model_extra, model_unreported"
                       " FROM snapshots ORDER BY snapshot").fetchall()
    checks.ok("snapshots taken", len(snaps) >= 2, str(snaps))
    for snap, gc, missing, extra, _ in snaps:
        checks.eq(f"snapshot {snap} (GC {gc}) model_missing", 0, missing)
        checks.eq(f"snapshot {snap} (GC {gc}) model_extra", 0, extra)
    # The first GC after the loops (the program's Collect() runs two) meets the objects first.
    after = [s for s in snaps if s[1] == t["gc_before"] + 1]
    checks.eq("a snapshot at the first GC after the loops", 1, len(after))
    # Unreported objects per type in each snapshot, and flagged counts per interval and type.
    flagged_snap = {}
    for snap, name, k in db.execute(
            "SELECT so.snapshot, t.name, count(*) FROM snapshot_objects so"
            " JOIN objects o ON o.id = so.object_id JOIN types t ON t.id = o.type_id"
            " WHERE so.flags & 4 GROUP BY 1, 2"):
        flagged_snap.setdefault(snap, {})[name] = k
    flagged_counts = {}
    for gc, name, k in db.execute(
            "SELECT a.gc, t.name, sum(a.count) FROM alloc_counts a JOIN types t ON t.id = a.type_id"
            " WHERE a.flags & 1 GROUP BY 1, 2"):
        flagged_counts.setdefault(gc, {})[name] = k
    print(f"unreported in snapshots: {flagged_snap}; flagged counts per interval: {flagged_counts}")
    if a.census:
        # Sampled mode finds the loops' objects at the GC after them by its survivor ranges
        # (not as unreported ones in the snapshot); the census counted them, reported or not.
        gc = t["gc_before"] + 1
        census = dict(db.execute(
            "SELECT t.name, sum(a.count) FROM alloc_counts a JOIN types t ON t.id = a.type_id"
            " WHERE a.flags & 2 AND a.gc = ? GROUP BY 1", (gc,)))
        exact = db.execute("SELECT census_objects IS NOT NULL FROM gcs WHERE gc = ?",
                           (gc,)).fetchone()
        print(f"census of interval {gc}: " + ", ".join(
            f"{k} {census.get(k, 0)}" for k in ("System.Action", "System.Int32",
                                                t["shared_box_type"],
                                                "HeapLens.Examples.Quirks.Publisher")))
        checks.eq(f"interval {gc} counted by the census", (1,), exact)
        checks.eq("census: System.Action (a + b, the second event +=)",
                  t["combined_delegates"] + t["event_delegates"], census.get("System.Action", 0))
        checks.eq("census: System.Int32 (boxed int?)", t["boxed_ints"],
                  census.get("System.Int32", 0))
        checks.eq(f"census: {t['shared_box_type']} (boxed in shared generic code)",
                  t["shared_boxes"], census.get(t["shared_box_type"], 0))
        checks.eq("census: Publisher", n, census.get("HeapLens.Examples.Quirks.Publisher", 0))
        checks.eq("no flagged ALLOC_COUNTS (sampled mode)", {}, flagged_counts)
    elif t["runtime_major"] >= 10:
        if after:
            snap, gc = after[0][0], after[0][1]
            got = flagged_snap.get(snap, {})
            action, boxed = got.get("System.Action", 0), got.get("System.Int32", 0)
            checks.ok(f"unreported System.Action in [{2 * n - 3}, {2 * n}]",
                      2 * n - 3 <= action <= 2 * n, str(action))
            checks.ok(f"unreported System.Int32 in [{n - 3}, {n}]", n - 3 <= boxed <= n, str(boxed))
            sb = got.get(t["shared_box_type"], 0)
            checks.ok(f"unreported {t['shared_box_type']} in [{n - 3}, {n}]", n - 3 <= sb <= n,
                      str(sb))
            checks.eq("snapshot model_unreported == its flagged objects", after[0][4],
                      sum(got.values()))
            checks.eq(f"flagged ALLOC_COUNTS of interval {gc} == the snapshot's unreported objects",
                      {} if a.no_handles else got, flagged_counts.get(gc, {}))
            others = {g: v for g, v in flagged_counts.items() if g != gc}
            checks.eq("no flagged ALLOC_COUNTS in other intervals", {}, others)
    else:
        checks.eq("no unreported allocations before .NET 10 (snapshots)", {}, flagged_snap)
        checks.eq("no unreported allocations before .NET 10 (counts)", {}, flagged_counts)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
