#!/usr/bin/env python3
"""End-to-end handle lifetimes: record `RuntimeQuirks handles` with `record --handles` (handle
lifetimes need the runtime's GC monitoring at every GC) and compare `handles` with the program's
own facts (examples/README.md, RuntimeQuirks).

    check_handles.py --heaplens build/bin/heaplens --dll build/examples/RuntimeQuirks/RuntimeQuirks.dll \
        --workdir /tmp/h

Checks: the 1,000 WeakReference<object> handles of batch 1 (and 100 non-generic WeakReferences
with trackResurrection) have one lifetime each, created after
the GC count the program read before creating them and destroyed_after_gc = (the GC in which the
WeakReference objects died) - 1 — the runtime frees those handles inside that GC without
HandleDestroyed; the 1,000 of batch 2 (most at batch 1's addresses, which the program also
reports) are open at the end; the 100 GCHandle weak handles allocated and freed between two GCs
have destroyed_after_gc = that GC count; the 10 strong handles the program keeps are in
strong_handles_never_freed; the 5 pinned ones are in pinned_handles_per_gc for every GC after
their creation; kinds (weak, strong, pinned); writer_anomalies = 0, handles_closed_by_reuse = 0;
program_peak_rss_bytes is stored and plausible. Python 3 standard library only.
"""
import os
import sqlite3
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, record_facts  # noqa: E402


def main():
    a, checks, log = begin(arguments(timeout=300))
    db_path = os.path.join(a.workdir, "handles.db")
    truth_path = os.path.join(a.workdir, "handles.json")
    # Handle lifetimes between snapshots need `record --handles` (MONITOR_GC at every GC).
    t = record_facts(checks, a, db_path, truth_path, [], log, record_options=["--handles"],
                     args_before_truth=["handles"])
    if t is None:
        return checks.summary()
    checks.ok("the WeakReference objects died in one GC", t["batch1_death_gc_single"])
    checks.ok("batch 2 reuses batch 1's handle addresses (the test means something)",
              t["batch2_reused_addresses"] >= 100, str(t["batch2_reused_addresses"]))
    db = sqlite3.connect(db_path)
    flags = (db.execute("SELECT flags FROM run").fetchone() or [None])[0] or ""
    checks.ok("run.flags has 'handles'", "handles" in flags.split(","), flags)
    rows = {}
    for hid, kind, created, destroyed in db.execute(
            "SELECT handle_id, kind, created_after_gc, destroyed_after_gc FROM handles ORDER BY id"):
        rows.setdefault(hid, []).append((kind, created, destroyed))

    def lifetimes(ids, want, name):
        bad = []
        for hid in ids:
            got = rows.get(hid, [])
            if want not in got:
                bad.append((hex(hid), got))
        checks.ok(f"{name}: {len(ids)} lifetimes {want}", not bad,
                  f"{len(bad)} differ, e.g. {bad[:3]}")

    death = t["batch1_death_gc"]
    b1c, b2c = t["batch1_created_after_gc"], t["batch2_created_after_gc"]
    lifetimes(t["batch1_handles"], ("weak", b1c, death - 1), "WeakReference batch 1")
    lifetimes(t["batch1_old_handles"], ("weak", b1c, death - 1),
              "WeakReference (non-generic, trackResurrection) batch 1")
    lifetimes(t["batch2_handles"], ("weak", b2c, None), "WeakReference batch 2")
    # Batch 1's addresses that batch 2 reused have exactly two lifetimes: one per batch.
    both = set(t["batch1_handles"]) & set(t["batch2_handles"])
    bad = [hex(h) for h in both if len(rows.get(h, [])) != 2]
    checks.ok(f"{len(both)} reused addresses have exactly two lifetimes", not bad, str(bad[:3]))
    fa = t["freed_after_gc"]
    lifetimes(t["freed_handles"], ("unknown", fa, fa), "GCHandle weak, freed between GCs")
    kc = t["kept_created_after_gc"]
    lifetimes(t["strong_handles"], ("strong", kc, None), "strong handles kept")
    lifetimes(t["pinned_handles"], ("pinned", kc, None), "pinned handles kept")
    never = {r[0] for r in db.execute("SELECT handle_id FROM strong_handles_never_freed")}
    missing = [hex(h) for h in t["strong_handles"] if h not in never]
    checks.ok("strong_handles_never_freed lists the 10 kept strong handles", not missing,
              str(missing))
    gcs = [r[0] for r in db.execute("SELECT gc FROM gcs ORDER BY gc")]
    checks.eq("GCs recorded", t["gcs_total"], len(gcs))
    per_gc = {}
    for gc, hid in db.execute("SELECT gc, handle_id FROM pinned_handles_per_gc"):
        per_gc.setdefault(gc, set()).add(hid)
    bad = [gc for gc in gcs if gc > kc and not set(t["pinned_handles"]) <= per_gc.get(gc, set())]
    checks.ok("pinned_handles_per_gc has the 5 pinned handles after every GC", not bad, str(bad))
    counters = dict(db.execute("SELECT name, value FROM counters"))
    checks.eq("writer_anomalies", 0, counters.get("writer_anomalies"))
    checks.eq("handles_closed_by_reuse", 0, counters.get("handles_closed_by_reuse"))
    rss = counters.get("program_peak_rss_bytes")
    checks.ok("program_peak_rss_bytes between 10 MB and 2 GB", rss is not None and
              10e6 < rss < 2e9, str(rss))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
