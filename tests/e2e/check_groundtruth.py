#!/usr/bin/env python3
"""End-to-end ground-truth test: record examples/AllocPatterns with heaplens and compare.

    check_groundtruth.py --heaplens build/bin/heaplens \
        --dll build/examples/AllocPatterns/AllocPatterns.dll --workdir /tmp/gt

Also examples/MidLife, which writes the same ground truth (--dll MidLife.dll --program-args
"--rounds N"); with --expect-waits (a run with deliberately small buffers) the recording must
show that program threads waited for the collector (counter thread_waits > 0) and lost nothing.

AllocPatterns writes its own ground truth (examples/README.md): exact allocation counts per
example type and, right after each induced GC, the number of tracked objects still alive per
type and GC.GetGeneration value, read through weak handles. This script records the program
with `heaplens record`, then compares, each comparison being one check:

  (a) allocations per example type (`heaplens allocations --json`), per thread name (SQL), and
      no example-namespace type that the program did not allocate;
  (b) for every checkpoint: GC N exists, GCs 1..N are all there, the number of gen1+/gen2 GCs up
      to N equals CollectionCount(1)/(2), GC N is induced and of the generation the runtime
      reported; `heaplens survivors --gc N --json` per example type equals the ground truth per
      generation exactly (heaplens' 3 = LOH and 4 = POH compare as GC.GetGeneration's 2, and
      LOH/POH types must appear as 3/4, small-object types as 0..2); the survivors_by_generation
      view agrees with the command;
  (c) the recording: heaplens database, run status complete, mode full, every drop/anomaly
      counter 0, no incomplete GC; in full mode the runtime reported roots (MONITOR_GC's walk)
      at the first GC and the snapshot GCs only, never at the others;
  (d) heaplens' exit status == the program's (run with --exit-code 7 by default) == run.exit_status.

With --census off (sampled mode without the census of gen0) the small objects' counts must be
marked ESTIMATED everywhere — run.flags census-off, `allocations`, `info` and `report --json`
("census_off": true, "exact_per_type": false, the note saying --census off) and record's summary
line — and no census row may exist, while the large and pinned objects stay exact; --census on
must record exactly as the default does.

Sampled mode (--mode sampled) follows only its samples' objects between snapshots: at a
checkpoint without a snapshot (--snapshot gen2: the gen0 checkpoints) `survivors --json` says
"estimated": true and each example type's count must be within 10% of the ground truth (per
type; per generation within 10% of the type's total; or, when that is more, within the weight
of the heaviest sample it weighs times the samples that the type's objects allocated since the
last snapshot draw at most but once in 10^9, a Poisson bound), at least one checkpoint must be
such an estimate, and the survivors_by_generation view must still agree with the command. With
--expect-leak TYPE, `heaplens leaks --json` must rank TYPE first.

Python 3 standard library only. Prints every mismatch and a final line "N passed, M failed";
exits 1 if anything failed (2 on usage errors).
"""
import json
import math
import os
import shlex
import sqlite3
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import (DROP_COUNTERS, GEN_NAMES, arguments, begin, bucket,  # noqa: E402
                    check_snapshot_forms, fmt_counts, heaplens_json, record, recording_given,
                    run)

LOH_THRESHOLD = 85000
# The chance that a sampled estimate's check in (b) fails on a draw of the runtime's sampling.
CHANCE = 1e-9


def poisson_bound(mean, chance):
    """The least m with P(K > m) <= chance for K Poisson of this mean."""
    if mean <= 0:
        return 0
    if mean > 500:  # exp(-mean) underflows; the normal approximation is close there
        return math.ceil(mean + 7 * math.sqrt(mean))
    p = cdf = math.exp(-mean)
    m = 0
    while 1 - cdf > chance:
        m += 1
        p *= mean / m
        cdf += p
    return m


HISTORY_SQL = ("SELECT object_id, generation, from_gc, until_gc FROM object_generations"
               " ORDER BY object_id, from_gc")


def schema_version():
    """The schema the writer writes: STORE_SCHEMA_VERSION in store/store.h, read from the source
    so that a schema change needs no edit here."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "store", "store.h")
    with open(header) as f:
        for line in f:
            if line.startswith("#define STORE_SCHEMA_VERSION "):
                return int(line.split()[2])
    raise SystemExit(f"{header}: no STORE_SCHEMA_VERSION")


def in_namespace(type_name, namespace):
    return type_name.startswith(namespace + ".")


def expected_heap_ok(heap, gen):
    return {"loh": gen == 3, "poh": gen == 4}.get(heap, gen in (0, 1, 2))


def main():
    ap = arguments(__doc__.split("\n")[0], dll_required=False, timeout=600,
                   dll_help="path of AllocPatterns.dll (not needed with --db)")
    ap.add_argument("--scale", type=int, default=1, help="AllocPatterns --scale (default 1)")
    ap.add_argument("--program-args", help="the program's arguments after the truth path and "
                                           "--exit-code, instead of --scale (MidLife)")
    ap.add_argument("--expect-waits", action="store_true",
                    help="the buffers are too small on purpose: threads must have waited")
    ap.add_argument("--exit-code", type=int, default=7,
                    help="exit status AllocPatterns is asked to return (default 7)")
    ap.add_argument("--db", help="check this existing recording instead of recording "
                                 "(needs --truth)")
    ap.add_argument("--truth", help="ground truth JSON of the --db recording")
    ap.add_argument("--mode", choices=("full", "sampled"), default="full",
                    help="heaplens record --mode (sampled: small objects counted per type by the "
                         "census of gen0, exactly; survivors and snapshots must still be exact)")
    ap.add_argument("--census-check", action="store_true",
                    help="sampled mode with HEAPLENS_CENSUS_CHECK=1 (ObjectAllocated as well): "
                         "the census must equal the reported allocations per type and GC "
                         "interval, count and bytes")
    ap.add_argument("--census", choices=("on", "off"),
                    help="heaplens record --census (sampled mode); off: small-object counts "
                         "estimated from the samples, and said so by every command")
    ap.add_argument("--snapshot", help="heaplens record --snapshot POLICY (default: heaplens' "
                                       "own, induced)")
    ap.add_argument("--expect-leak", metavar="TYPE",
                    help="heaplens leaks must rank TYPE first (the program's growing cache)")
    a, checks, log = begin(ap)
    census_off = a.census == "off"
    recorded = []  # record's (stdout, stderr)

    if recording_given(ap, a):
        db, truth_path, heaplens_rc = a.db, a.truth, None
    else:
        name = os.path.splitext(os.path.basename(a.dll))[0].lower()
        db = os.path.join(a.workdir, name + ".db")
        truth_path = os.path.join(a.workdir, "truth.json")
        program_args = (shlex.split(a.program_args) if a.program_args is not None
                        else ["--scale", str(a.scale)])
        if a.census_check:
            os.environ["HEAPLENS_CENSUS_CHECK"] = "1"
        # the snapshots as schema 7's rows too, for (s)
        os.environ["HEAPLENS_SNAPSHOT_ROWS"] = "1"
        heaplens_rc = record(a, db, truth_path, ["--exit-code", str(a.exit_code)] + program_args,
                             log, ["--mode", a.mode] +
                             (["--snapshot", a.snapshot] if a.snapshot else []) +
                             (["--census", a.census] if a.census else []), output=recorded)

    try:
        with open(truth_path) as f:
            truth = json.load(f)
    except (OSError, ValueError) as e:
        checks.ok("ground truth written by the program", False, f"{truth_path}: {e}")
        checks.summary()
        return 1
    ns = truth["namespace"]
    types = truth["types"]
    tail = truth.get("after_last_gc", {})  # allocated after the program's last GC
    program_status = truth["exit_status"]

    # ---------------------------------------------------------------- (d) exit status
    if heaplens_rc is not None or not a.db:
        checks.eq("(d) program exited with the requested status", a.exit_code, program_status)
        checks.eq("(d) heaplens record exit status == program's", program_status, heaplens_rc)

    # ---------------------------------------------------------------- (c) the recording itself
    conn = None
    runtime_major = None
    if checks.ok("(c) recording exists", os.path.exists(db), db):
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            conn.execute("SELECT 1 FROM run").fetchall()
        except sqlite3.Error as e:
            checks.ok("(c) recording opens with sqlite3", False, str(e))
            conn = None
    if conn is not None:
        checks.eq("(c) PRAGMA application_id", 1212960339,
                  conn.execute("PRAGMA application_id").fetchone()[0])
        checks.eq("(c) PRAGMA user_version", schema_version(), conn.execute("PRAGMA user_version").fetchone()[0])
        version = conn.execute("SELECT runtime_version FROM run").fetchone()[0] or ""
        runtime_major = int(version.split(".")[0]) if version[:1].isdigit() else None
        print(f"runtime {version}")
        rows = conn.execute("SELECT status, mode, exit_status, flags, loss FROM run").fetchall()
        if checks.eq("(c) run has one row", 1, len(rows)):
            status, mode, exit_status, flags, loss = rows[0]
            checks.eq("(c) run.status", "complete", status)
            checks.eq("(c) run.loss (nothing lost)", None, loss)
            checks.eq("(c) run.mode", a.mode, mode)
            checks.eq("(d) run.exit_status == program's", program_status, exit_status)
            checks.ok("(c) run.flags has no empty-profiler", "empty-profiler" not in (flags or ""),
                      repr(flags))
            checks.eq("(c) run.flags says census-off exactly when recorded with --census off",
                      census_off, "census-off" in (flags or "").split(","))
        counters = dict(conn.execute("SELECT name, value FROM counters").fetchall())
        for c in DROP_COUNTERS:
            checks.eq(f"(c) counter {c}", 0, counters.get(c, "missing"))
        for c in sorted(counters):  # counters the schema does not list yet, same meaning
            if c not in DROP_COUNTERS and c.endswith(("_dropped", "_anomalies", "_overflowed")):
                checks.eq(f"(c) counter {c}", 0, counters[c])
        if a.expect_waits:
            waits = counters.get("thread_waits", 0)
            checks.ok("(c) threads waited for the collector (small buffers)", waits > 0,
                      f"thread_waits {waits}, thread_wait_ns {counters.get('thread_wait_ns')}")
            print(f"threads waited {counters.get('thread_wait_ns', 0) / 1e6:.1f} ms "
                  f"({waits} waits)")
        # Sampled mode: ObjectAllocated reports only LOH and POH allocations.
        total_allocs = sum(t["allocations"] for t in types.values()
                           if a.mode == "full" or a.census_check or t["heap"] in ("loh", "poh"))
        seen = counters.get("allocs_seen")
        checks.ok("(c) counter allocs_seen >= example allocations", isinstance(seen, int)
                  and seen >= total_allocs, f"allocs_seen {seen!r} < {total_allocs}")
        bad = conn.execute("SELECT group_concat(gc) FROM gcs WHERE incomplete != 0").fetchone()[0]
        checks.ok("(c) no GC marked incomplete", bad is None, f"incomplete GCs: {bad}")
        # Full mode follows GCs without the runtime's walk of every GC (issue 17): MONITOR_GC is
        # on at the first GC and at snapshots only, and the runtime reports roots (gcs.roots)
        # at exactly those GCs. With the walk at every GC (`record --handles`, run.flags
        # `handles`, asks for it), every GC would have roots.
        run_flags = conn.execute("SELECT coalesce(max(flags), '') FROM run").fetchone()[0]
        if a.mode == "full" and "handles" not in run_flags.split(","):
            walked = [g for (g,) in conn.execute(
                "SELECT gc FROM gcs WHERE roots > 0 AND gc > 1"
                " AND gc NOT IN (SELECT gc FROM snapshots) ORDER BY gc")]
            checks.ok("(c) full mode: the runtime walked only the first GC and snapshot GCs",
                      not walked, f"roots reported at GCs {walked[:20]}")
            unwalked = [g for (g,) in conn.execute(
                "SELECT gc FROM snapshots WHERE gc NOT IN (SELECT gc FROM gcs WHERE roots > 0)")]
            checks.ok("(c) full mode: every snapshot GC walked (roots reported)", not unwalked,
                      f"snapshot GCs without roots: {unwalked}")
        # The end of the recording builds no generation history: it is still the GCs' changes,
        # which the view derives; the first command below builds the rows (compared in (f)).
        checks.eq("(c) object_generation_rows empty before the first command", 0,
                  conn.execute("SELECT count(*) FROM object_generation_rows").fetchone()[0])
        derived_generations = conn.execute(HISTORY_SQL).fetchall()
        checks.ok("(c) generation changes recorded", len(derived_generations) > 0,
                  "object_generations is empty")

    # Per type, over the GC intervals after the last snapshot up to GC gc: `value` of `table`
    # (its columns gc and type_id; the rows `where` keeps).
    def since_snapshot(gc, value, table, where):
        if conn is None or a.mode != "sampled":
            return {}
        return dict(conn.execute(
            f"SELECT t.name, {value} FROM {table} x JOIN types t ON t.id = x.type_id"
            f" WHERE {where} AND x.gc <= ?1 AND x.gc > (SELECT coalesce(max(gc), 0) FROM"
            " snapshots WHERE gc <= ?1) GROUP BY t.name", (gc,)).fetchall())

    # A followed sample's object stands for its sample's weight (est_count: 1/p, times the sample
    # budget's factor when it was drawn): the heaviest of a type's samples that a checkpoint's
    # estimate weighs (those allocated since the last snapshot: the snapshot named the older
    # ones) bounds how finely its survivors can be estimated in (b).
    def sample_weight(gc):
        return since_snapshot(gc, "max(x.est_count)", "alloc_samples", "x.heap = 0")

    # How many samples an estimate may weigh: its type's objects allocated since the last
    # snapshot (the census's exact counts of those GC intervals) each drew a sample with
    # probability size / mean distance, so the samples among the survivors are at most a Poisson
    # count of mean allocated * size / distance (the budget only leaves samples out).
    def allocated_since_snapshot(gc):
        return since_snapshot(gc, "sum(x.count)", "alloc_counts", "x.flags & 2")

    distance = 102400
    if conn is not None and a.mode == "sampled":
        row = conn.execute("SELECT mean_distance_bytes FROM sampling").fetchone()
        distance = (row and row[0]) or distance

    # ---------------------------------------------------------------- (a) allocations
    doc = heaplens_json(checks, a.heaplens, ["allocations", db], log)
    avg_size = {}  # type -> average object size (for the estimates' resolution in (b))
    if doc is not None:
        got = {}
        for r in doc.get("rows", []):
            got[r["type"]] = got.get(r["type"], 0) + r["count"]
            if r["count"]:
                avg_size[r["type"]] = r["bytes"] / r["count"]
        for name, t in types.items():
            if a.census_check:
                continue  # the census and ObjectAllocated both counted: compared below
            if census_off and t["heap"] not in ("loh", "poh"):
                continue  # estimated from the samples: their marking is checked below
            if a.mode == "sampled" and tail.get(name):
                # The census counts up to the last GC; after it, samples estimate.
                checks.ok(f"(a) allocations of {name} (exact up to the last GC, then estimated)",
                          got.get(name, 0) >= t["allocations"] - tail[name],
                          f"{got.get(name, 0)} < {t['allocations'] - tail[name]}")
                continue
            checks.eq(f"(a) allocations of {name}", t["allocations"], got.get(name, 0))
        if a.mode == "sampled" and not census_off:
            checks.ok("(a) allocations --json says counts per type are exact (census)",
                      doc.get("mode") == "sampled" and doc.get("exact_per_type") is True
                      and doc.get("census_off") is False
                      and "census" in (doc.get("note") or ""), f"{doc.get('note')!r}")
        if census_off:
            checks.ok("(a) allocations --json says the counts are ESTIMATES, for --census off",
                      doc.get("mode") == "sampled" and doc.get("estimated") is True
                      and doc.get("exact_per_type") is False and doc.get("census_off") is True
                      and "--census off" in (doc.get("note") or ""), f"{doc!r}"[:600])
    if census_off:
        # Every other place a user reads the allocation figures says it too.
        info = heaplens_json(checks, a.heaplens, ["info", db], log)
        if info is not None:
            al = info.get("allocations", {})
            checks.ok("(a) info --json: allocations estimated, census_off",
                      al.get("census_off") is True and al.get("estimated") is True
                      and info.get("totals", {}).get("allocations_estimated") is True,
                      f"{al!r}"[:600])
        rep = heaplens_json(checks, a.heaplens, ["report", db], log)
        if rep is not None:
            al = rep.get("allocations", {})
            checks.ok("(a) report --json: allocations estimated, census_off, the note says why",
                      al.get("census_off") is True and al.get("census") is False
                      and "--census off" in (al.get("note") or ""), f"{al.get('note')!r}")
        rc, out, _ = run([a.heaplens, "info", db], log=log)
        checks.ok("(a) info says the allocations are ESTIMATED (recorded with --census off)",
                  rc == 0 and "ESTIMATED from the samples (recorded with --census off)" in out,
                  out[-800:])
        if recorded:
            err = recorded[0][1]
            checks.ok("(a) record's summary line says the counts are estimated (--census off)",
                      "estimated from" in err and "--census off: no census of gen0" in err,
                      err[-600:])
    if conn is not None and a.mode == "sampled":
        # The census (up to the last GC) and the LOH/POH callbacks, exact, per example type.
        for name, t in types.items():
            if census_off and t["heap"] not in ("loh", "poh"):
                continue  # no census: none of its rows
            n = conn.execute(
                "SELECT coalesce(sum(a.count), 0) FROM alloc_counts a JOIN types t"
                " ON t.id = a.type_id WHERE t.name = ? AND (a.flags & 2 OR (a.flags = 0"
                " AND a.heap IN (3, 4)))", (name,)).fetchone()[0]
            checks.eq(f"(a) alloc_counts (census, LOH, POH) of {name}",
                      t["allocations"] - (0 if t["heap"] in ("loh", "poh") else tail.get(name, 0)),
                      n)
        exact = conn.execute("SELECT count(*), count(census_objects) FROM gcs").fetchone()
        if census_off:
            checks.eq("(a) --census off: no GC's interval counted by the census", 0, exact[1])
            checks.eq("(a) --census off: no census rows (alloc_counts flags 2)", 0,
                      conn.execute("SELECT count(*) FROM alloc_counts WHERE flags & 2")
                      .fetchone()[0])
        else:
            checks.eq("(a) every GC's interval counted by the census", exact[0], exact[1])
        # Per thread only estimates: the samples spread each type's exact total over the threads
        # (allocations_estimated_by_type_thread), so that they add up to `allocations`' figure.
        if doc is not None and not a.census_check:
            for name in types:
                spread = conn.execute(
                    "SELECT coalesce(sum(count), 0) FROM allocations_estimated_by_type_thread"
                    " WHERE type = ?", (name,)).fetchone()[0]
                checks.ok(f"(a) {name}: the threads' estimates add up to the exact total",
                          abs(spread - got.get(name, 0)) <= 1, f"{spread} vs {got.get(name, 0)}")
    if conn is not None and a.census_check:
        # The census against ObjectAllocated, per GC interval and type (small-object heap).
        diff = conn.execute(
            "WITH c AS (SELECT gc, type_id, sum(count) n, sum(bytes) b FROM alloc_counts"
            "           WHERE flags & 2 GROUP BY gc, type_id),"
            "     r AS (SELECT gc, type_id, sum(count) n, sum(bytes) b FROM alloc_counts"
            "           WHERE flags = 0 AND heap = 0 GROUP BY gc, type_id)"
            " SELECT count(*), (SELECT coalesce(sum(n), 0) FROM c), (SELECT count(*) FROM c)"
            " FROM c FULL JOIN r USING (gc, type_id) WHERE c.n IS NOT r.n OR c.b IS NOT r.b"
        ).fetchone()
        print(f"census self-check: {diff[0]} differences; {diff[1]} allocations in "
              f"{diff[2]} (interval, type) entries")
        checks.eq("(a) census vs ObjectAllocated: (interval, type) differences", 0, diff[0])
        checks.ok("(a) the census counted allocations", diff[1] > 0, f"{diff[1]}")
        extra = {n: c for n, c in got.items() if in_namespace(n, ns) and n not in types}
        checks.ok(f"(a) no unexpected {ns}.* types allocated", not extra, f"{extra}")
        byname = {r["type"]: r for r in doc.get("rows", [])}
        for name, t in types.items():
            if t["heap"] in ("loh", "poh") and name in byname and byname[name]["count"]:
                avg = byname[name]["bytes"] / byname[name]["count"]
                if t["heap"] == "loh":
                    checks.ok(f"(a) {name} objects are LOH-sized", avg >= LOH_THRESHOLD,
                              f"average size {avg:.0f} bytes")
    if conn is not None and a.mode == "full":
        for thread, per_type in truth.get("threads", {}).items():
            for name, count in per_type.items():
                # Every allocation is counted per type and thread (alloc_counts); objects rows
                # exist only for those that survived a GC.
                n = conn.execute(
                    "SELECT coalesce(sum(count), 0) FROM allocations_by_type_thread"
                    " WHERE type = ? AND thread_name = ?",
                    (name, thread)).fetchone()[0]
                checks.eq(f"(a) {name} allocated by thread '{thread}'", count, n)

    # ---------------------------------------------------------------- (b) GCs and survivors
    doc = heaplens_json(checks, a.heaplens, ["gcs", db], log)
    gcs = {}
    if doc is not None:
        for r in doc.get("rows", []):
            gcs[r["gc"]] = r
        ordinals = sorted(gcs)
        checks.eq("(b) GC ordinals are 1..n without gaps", list(range(1, len(ordinals) + 1)),
                  ordinals)
        checks.ok("(b) at least as many GCs as the program counted", len(gcs) >= truth["gcs_total"],
                  f"{len(gcs)} GCs recorded, program counted {truth['gcs_total']}")
    estimated_checkpoints = 0
    for cp in truth["checkpoints"]:
        n, label = cp["gc"], cp["label"]
        c0, c1, c2 = cp["collection_counts"]
        where = f"(b) checkpoint '{label}' (GC {n})"
        if cp["redo"]:
            print(f"note: checkpoint '{label}' was redone {cp['redo']} time(s) by the program")
        if cp["generation"] != cp["requested_generation"]:
            print(f"note: checkpoint '{label}': gen{cp['requested_generation']} requested, the "
                  f"runtime ran gen{cp['generation']} (CollectionCount says so; checked against that)")
        if doc is not None and checks.ok(f"{where}: GC exists", n in gcs,
                                         f"heaplens gcs has {len(gcs)} GCs"):
            g = gcs[n]
            checks.eq(f"{where}: GCs up to it", c0, sum(1 for k in gcs if k <= n))
            checks.eq(f"{where}: gen1+ GCs up to it (CollectionCount(1))", c1,
                      sum(1 for k, r in gcs.items() if k <= n and r["generation"] >= 1))
            checks.eq(f"{where}: gen2 GCs up to it (CollectionCount(2))", c2,
                      sum(1 for k, r in gcs.items() if k <= n and r["generation"] == 2))
            checks.eq(f"{where}: generation", cp["generation"], g["generation"])
            # The reason is the runtime's own (its GCStart event): InducedCompacting for
            # GC.Collect(..., compacting: true). `induced` is what the profiler was told: .NET 8
            # tells COR_PRF_GC_OTHER for that one.
            want = "InducedCompacting" if "compacting" in label else "Induced"
            induced = not (runtime_major == 8 and "compacting" in label)
            checks.ok(f"{where}: reason {want}, induced {induced}",
                      bool(g.get("induced")) == induced and g.get("reason") == want,
                      f"induced={g.get('induced')!r} reason={g.get('reason')!r}")

        surv = heaplens_json(checks, a.heaplens, ["survivors", db, "--gc", str(n)], log)
        if surv is None:
            continue
        # Sampled mode between snapshots: estimates from the followed samples.
        estimated = surv.get("estimated") is True
        if estimated:
            estimated_checkpoints += 1
        checks.ok(f"{where}: survivors estimated only in sampled mode",
                  not estimated or a.mode == "sampled", "estimated in a full recording")
        if surv.get("gc") != n:
            checks.eq(f"{where}: survivors document's gc", n, surv.get("gc"))
        got = {}   # type -> {bucket: count}
        raw = {}   # type -> {heaplens generation: count}
        for r in surv.get("rows", []):
            t = r["type"]
            if t not in types and not in_namespace(t, ns):
                continue
            b = bucket(r["generation"])
            got.setdefault(t, {})
            got[t][b] = got[t].get(b, 0) + r["count"]
            raw.setdefault(t, {})
            raw[t][r["generation"]] = raw[t].get(r["generation"], 0) + r["count"]
        errors = []  # estimated checkpoints: (type, truth, estimate), printed below
        weighed = sample_weight(n) if estimated else {}
        allocated = allocated_since_snapshot(n) if estimated else {}
        bounds = []  # estimated checkpoints: (type, samples at most, slack), printed below
        for name, t in types.items():
            expected = cp["alive"].get(name, {})
            actual = got.get(name, {})
            detail = f"expected {fmt_counts(expected)}, got {fmt_counts(actual)}"
            if name in raw:
                detail += " (heaplens generations " + ", ".join(
                    f"{GEN_NAMES.get(k, k)}={v}" for k, v in sorted(raw[name].items())) + ")"
            if estimated:
                # Within 10%, or within the weight of as many samples as the objects allocated
                # since the last snapshot can have drawn (one sample stands for distance / size
                # objects, K times that when the sample budget drew it, one in K, from beyond
                # its type's firsts: the heaviest counts): a few hundred objects allocated
                # since the snapshot are below what a sample can resolve. The number of samples
                # is the Poisson bound that a draw passes once in 10^9 (a fixed 3 samples'
                # weight failed about once in 10^4 runs: 3 or 4 samples of MidLife's 256-object
                # bursts, 0.1 expected). LOH and POH objects are all followed: 3 as before.
                # (The samples drawn, not only those alive: a bound on the survivors' samples.)
                want, got_n = sum(expected.values()), sum(actual.values())
                errors.append((name, want, got_n))
                size = avg_size.get(name)
                weight = max(distance / size if size else 0, weighed.get(name) or 0)
                samples = (poisson_bound(allocated.get(name, 0) * size / distance, CHANCE)
                           if size and t["heap"] not in ("loh", "poh") and not census_off
                           else 3)  # --census off: no count of the allocations to bound by
                slack = max(0.1 * want, samples * weight)
                bounds.append((name, samples, slack))
                close = abs(got_n - want) <= slack and all(
                    abs(actual.get(b, 0) - expected.get(b, 0)) <= slack
                    for b in set(expected) | set(actual))
                checks.ok(f"{where}: alive {name} (estimated: within 10% or {samples} samples' "
                          f"weight, {slack:.0f})", close, detail)
            else:
                checks.ok(f"{where}: alive {name}", expected == actual, detail)
            if name in raw:
                wrong = {GEN_NAMES.get(k, k): v for k, v in raw[name].items()
                         if not expected_heap_ok(t["heap"], k)}
                checks.ok(f"{where}: {name} reported in its heap ({t['heap']})", not wrong,
                          f"rows in {wrong}")
        extra = {t: v for t, v in got.items() if t not in types}
        checks.ok(f"{where}: no unexpected {ns}.* survivors", not extra, f"{extra}")
        if estimated:
            print(f"note: checkpoint '{label}' (GC {n}): survivors estimated from the samples: " +
                  ", ".join(f"{name.rsplit('.', 1)[-1]} {got_n} of {want}"
                            f" ({100 * (got_n - want) / want:+.1f}%)" if want else
                            f"{name.rsplit('.', 1)[-1]} {got_n} of 0"
                            for name, want, got_n in errors))
            print(f"note: checkpoint '{label}' (GC {n}): the heaviest sample of each type allocated"
                  " since the last snapshot (est_count): " + (", ".join(
                      f"{name.rsplit('.', 1)[-1]} {w:.0f}" for name, w in sorted(weighed.items())
                      if name in types) or "none"))
            print(f"note: checkpoint '{label}' (GC {n}): allocated since the last snapshot, "
                  "samples at most, slack: " + ", ".join(
                      f"{name.rsplit('.', 1)[-1]} {allocated.get(name, 0)}, {k}, {sl:.0f}"
                      for name, k, sl in bounds))
        top = heaplens_json(checks, a.heaplens, ["survivors", db, "--gc", str(n), "--top", "3"], log)
        if top is not None:
            # Sizes, not names: groups of equal size (MidLife's windows) may come in any order.
            key = lambda r: (-r["bytes"], -r["count"])
            largest = sorted(surv.get("rows", []), key=key)[:3]
            checks.ok(f"{where}: survivors --top 3 are the 3 largest groups",
                      sorted(map(key, top.get("rows", []))) == sorted(map(key, largest)),
                      f"{top.get('rows')} vs {largest}")
        if conn is not None:
            try:
                view = {}
                for t, gen, cnt in conn.execute(
                        "SELECT type, generation, count FROM survivors_by_generation "
                        "WHERE gc = ? AND (type LIKE ? ESCAPE '\\')", (n, ns.replace("_", "\\_") + ".%")):
                    view[(t, gen)] = view.get((t, gen), 0) + cnt
                cli = {(t, k): v for t, d in raw.items() for k, v in d.items()}
                checks.ok(f"{where}: survivors_by_generation view agrees with heaplens survivors",
                          view == cli, f"view {sorted(view.items())} vs command {sorted(cli.items())}")
            except sqlite3.Error as e:
                checks.ok(f"{where}: survivors_by_generation view", False, str(e))

    if a.mode == "sampled" and a.snapshot and a.snapshot != "induced":
        checks.ok("(b) some checkpoints without a snapshot were estimated from the samples",
                  estimated_checkpoints > 0, f"{estimated_checkpoints} estimated")

    # ---------------------------------------------------------------- (e) snapshots' self-check
    if conn is not None:
        snaps = conn.execute("SELECT snapshot, gc, model_missing, model_extra FROM snapshots"
                             " ORDER BY snapshot").fetchall()
        # The default policy snapshots GCs the runtime reports to profilers as induced (on
        # .NET 8 a compacting GC.Collect is not: checked in (b)).
        policy = a.snapshot or "induced"
        snapshotted = {gc for (gc,) in conn.execute(
            "SELECT gc FROM gcs WHERE " + ("generation = 2" if policy == "gen2" else "induced = 1"))}
        wanted = {c["gc"] for c in truth["checkpoints"]} & snapshotted
        checks.ok(f"(e) snapshots expected ({policy})", policy in ("induced", "gen2"),
                  "this script knows the policies induced and gen2")
        checks.ok(f"(e) the {policy} checkpoint GCs took snapshots",
                  wanted <= {gc for _, gc, _, _ in snaps},
                  f"snapshots at GCs {sorted(gc for _, gc, _, _ in snaps)}, {policy} checkpoints "
                  f"{sorted(wanted)}")
        for snap, gc, missing, extra in snaps:
            checks.eq(f"(e) snapshot {snap} (GC {gc}): model_missing", 0, missing)
            checks.eq(f"(e) snapshot {snap} (GC {gc}): model_extra", 0, extra)

    # ---------------------------------------------------------------- (g) the growing cache
    if a.expect_leak:
        doc = heaplens_json(checks, a.heaplens, ["leaks", db], log)
        rows = (doc or {}).get("rows") or (doc or {}).get("suspects") or []
        first = rows[0].get("type") if rows else None
        checks.eq("(g) heaplens leaks ranks the growing cache first", a.expect_leak, first)

    # ---------------------------------------------------------------- (f) the built history
    # The first command summed the objects up (object_spans: what survivors read above) and
    # left the changes; the snapshot commands read the packed objects in memory and build
    # nothing; `stacks --by survived` (the fate of sampled objects) builds the rows.
    if conn is not None:
        checks.ok("(f) the first command wrote the summary (object_spans)",
                  conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                               " AND name = 'object_spans'").fetchone()[0] == 1, "no object_spans")
        if conn.execute("SELECT count(*) FROM snapshots").fetchone()[0] > 0:
            changes = conn.execute("SELECT count(*) FROM generation_changes").fetchone()[0]
            heaplens_json(checks, a.heaplens, ["retention", db, "--top", "1"], log)
            checks.eq("(f) generation_changes left by retention (it builds no objects rows)",
                      changes, conn.execute("SELECT count(*) FROM generation_changes").fetchone()[0])
        # built whether or not the recording has samples (stacks then says it has none)
        run([a.heaplens, "stacks", db, "--by", "survived"], log=log)
        checks.eq("(f) generation_changes emptied by the first command building the rows", 0,
                  conn.execute("SELECT count(*) FROM generation_changes").fetchone()[0])
        built = conn.execute(HISTORY_SQL).fetchall()
        checks.ok("(f) object_generations: the built rows equal the derived ones",
                  built == derived_generations,
                  f"{len(built)} rows built, {len(derived_generations)} derived")

    # ---------------------------------------------------------------- (s) compact snapshots
    # every documented snapshot view answers the same from schema 8's blocks as from schema 7's
    # rows of the same snapshots (up to 200,000 snapshot objects: the views unpack in SQL alone)
    if conn is not None and not a.db:
        objects = conn.execute("SELECT coalesce(sum(objects), 0) FROM snapshots").fetchone()[0]
        if objects <= 200000:
            checks.ok("(s) the recording has schema 7's rows (HEAPLENS_SNAPSHOT_ROWS=1)",
                      check_snapshot_forms(checks, db, "(s)"))
        else:
            print(f"(s) skipped: {objects} snapshot objects")

    if conn is not None:
        conn.close()
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
