#!/usr/bin/env python3
"""End-to-end test of allocation samples and call stacks: record examples/AllocSites.

    check_stacks.py --heaplens build/bin/heaplens --dotnet dotnet \
        --dll build/examples/AllocSites/AllocSites.dll --workdir /tmp/stacks
        [--biased] [--mode sampled] [--chromium /usr/bin/chromium]

AllocSites allocates ChainItem only in C, called A -> B -> C, and SplitItem at two sites, Major
and Minor, 3:1, and writes its true counts. From SQL on the recording:
  - sampling: the source ('ObjectAllocated' in full mode: the collector's own sampler; in
    sampled mode 'AllocationSampled' on .NET 10, with --biased 'AllocationTick'),
    samples delivered, none dropped, each stored or left out by the sample budget (sampled
    mode only);
  - the heaviest stack of ChainItem, innermost first, is C, B, A, Run, Main;
  - the heaviest stack of SplitItem starts at Major, the next at Minor;
  - object ids of samples join `objects` with the same type;
  - with --expect-budgeted (run under a small HEAPLENS_SAMPLE_BUDGET): samples were left out
    by the budget and the kept ones weigh more than their sampling weight, the estimates below
    holding all the same;
  - unless --biased: Minor's share of the SplitItem estimate is within 5 points of the truth
    (10 in sampled mode), and the estimated counts of both types are within 5.5 standard
    errors of the truth (the error computed from the recording's own sample weights:
    sqrt(sum(w * (w - 1)))), 5.5 standard errors being within 10% of the truth;
    in full mode the exact counts (alloc_counts) equal the truth too;
  - with --chromium: `heaplens report` of the recording, rendered by headless Chromium, draws
    the flame graph with the frames of the chain.
Python 3 standard library only; prints every mismatch and "N passed, M failed".
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, heaplens_json, program, remove_db, remove_stale, run  # noqa: E402

NS = "AllocSites."
# How many standard errors an estimate may be off: a normal draw beyond 5.5 comes once in 26
# million two-sided; the estimates here sum over thousands of samples.
SIGMAS = 5.5
CHAIN = [NS + "Program.C", NS + "Program.B", NS + "Program.A", NS + "Program.Run",
         NS + "Program.Main"]


def stacks_of(con, type_name):
    """[(frames innermost first, est_count, samples)], heaviest first."""
    rows = con.execute(
        "SELECT s.stack_id, sum(s.est_count), count(*) FROM alloc_samples s "
        "JOIN types t ON t.id = s.type_id WHERE t.name = ? AND s.stack_id IS NOT NULL "
        "GROUP BY s.stack_id ORDER BY sum(s.est_count) DESC", (type_name,)).fetchall()
    out = []
    for stack_id, est, n in rows:
        frames = [r[0] for r in con.execute(
            "SELECT f.name FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id "
            "WHERE sf.stack_id = ? ORDER BY sf.position", (stack_id,))]
        out.append((frames, est, n))
    return out


def main():
    ap = arguments()
    ap.add_argument("--biased", action="store_true", help="AllocationTick (.NET 8/9, sampled mode): stacks only")
    ap.add_argument("--mode", default="full", choices=["full", "sampled"])
    ap.add_argument("--chromium", help="render the report's flame graph with this browser")
    ap.add_argument("--count", type=int, default=12000000,
                    help="objects of each type (default 12,000,000: about 3,700 samples of "
                         "ChainItem, enough for 5.5 standard errors to be within 10%%)")
    ap.add_argument("--expect-budgeted", action="store_true",
                    help="sampled mode under a small HEAPLENS_SAMPLE_BUDGET: some samples must "
                         "have been left out, and the estimates still hold")
    a, checks, log = begin(ap, verbose=True)
    db = os.path.join(a.workdir, "stacks.db")
    truth_path = os.path.join(a.workdir, "truth.json")
    remove_db(db, truth_path)
    cmd = [a.heaplens, "record", "-q", "--mode", a.mode, "-o", db, "--"] + program(a.dotnet, a.dll) + \
        [truth_path, "--count", str(a.count)]
    rc, out, err = run(cmd, log=log)
    if not checks.ok("heaplens record exits 0", rc == 0, f"exit {rc}: {err[-500:]}"):
        return checks.summary()
    truth = json.load(open(truth_path))
    con = sqlite3.connect(db)

    row = con.execute("SELECT source, biased, samples, samples_dropped, mean_distance_bytes "
                      "FROM sampling").fetchone()
    if not checks.ok("sampling row", row is not None):
        return checks.summary()
    source, biased, samples, dropped, mean = row
    want = ("ObjectAllocated" if a.mode == "full"
            else "AllocationTick" if a.biased else "AllocationSampled")
    checks.eq("sampling source", want, source)
    checks.eq("sampling biased", 1 if a.biased else 0, biased)
    checks.eq("samples dropped", 0, dropped)
    stored = con.execute("SELECT count(*) FROM alloc_samples").fetchone()[0]
    # Sampled mode: those the sample budget left out have no row (collector/README.md)
    budgeted = con.execute("SELECT coalesce((SELECT value FROM counters"
                           " WHERE name = 'samples_budgeted'), 0)").fetchone()[0]
    if a.mode == "full":
        checks.eq("no sample left out by a budget in full mode", 0, budgeted)
    checks.eq("every sample stored or left out by the budget", samples, stored + budgeted)
    if a.expect_budgeted:
        checks.ok("the sample budget left samples out", budgeted > 0, f"{budgeted} left out")
        heavier = sum(1 for est, size in con.execute("SELECT est_count, size FROM alloc_samples")
                      if est > 1.5 / (1 - (1 - 1.0 / 102400) ** size))
        checks.ok("kept samples weigh for the left-out ones", heavier > 0,
                  f"{heavier} samples weigh more than their sampling weight")
    print(f"samples: {samples} ({source}, mean distance {mean}), {budgeted} left out by the budget")

    chain = stacks_of(con, NS + "ChainItem")
    checks.ok("ChainItem has stacks", bool(chain))
    if chain:
        top = chain[0][0]
        checks.eq("ChainItem heaviest stack, innermost first", CHAIN, top[:len(CHAIN)])
        print(f"ChainItem: {len(chain)} stacks, heaviest {chain[0][2]} samples: {' <- '.join(top)}")
    split = stacks_of(con, NS + "SplitItem")
    checks.ok("SplitItem has two stacks at least", len(split) >= 2)
    if len(split) >= 2:
        checks.eq("SplitItem heaviest site", NS + "Program.Major", split[0][0][0])
        checks.eq("SplitItem second site", NS + "Program.Minor", split[1][0][0])
        checks.eq("SplitItem sites called from Run", [NS + "Program.Run"] * 2,
                  [split[0][0][1], split[1][0][1]])

    bad = con.execute(
        "SELECT count(*) FROM alloc_samples s LEFT JOIN objects o ON o.id = s.object_id "
        "WHERE s.object_id IS NOT NULL AND (o.id IS NULL OR o.type_id != s.type_id)").fetchone()[0]
    checks.eq("sample object ids join objects of their type", 0, bad)

    if not a.biased:
        for t, n in truth["types"].items():
            exact = con.execute("SELECT sum(a.count) FROM alloc_counts a JOIN types t "
                                "ON t.id = a.type_id WHERE t.name = ?", (t,)).fetchone()[0]
            if a.mode == "full":
                checks.eq(f"{t} exact count", n, exact)
            est, nsamples = con.execute("SELECT est_count, samples FROM "
                                        "allocation_estimates_by_type WHERE type = ?",
                                        (t,)).fetchone() or (0, 0)
            # The estimate is a sum of sample weights (est_count = 1/p, the budget's factor
            # included): its standard error, from the recording's own samples, is
            # sqrt(sum(w * (w - 1))). Within SIGMAS of it fails on chance once in millions of
            # runs (a fixed 10% was 3.5 of them with AllocSites' first 4M objects, about one
            # run in 2,000 per type); and SIGMAS of it must be within 10% of the truth, so that
            # the check still proves 10% (the count gives enough samples for that).
            se = con.execute("SELECT sqrt(coalesce(sum(s.est_count * (s.est_count - 1)), 0))"
                             " FROM alloc_samples s JOIN types ty ON ty.id = s.type_id"
                             " WHERE ty.name = ?", (t,)).fetchone()[0]
            err_pct = 100.0 * abs(est - n) / n
            bound_pct = 100.0 * SIGMAS * se / n
            checks.ok(f"{t} estimated count within {SIGMAS} standard errors of {n}",
                      abs(est - n) <= SIGMAS * se,
                      f"estimate {est:.0f} ({err_pct:.1f}% off, {SIGMAS} standard errors "
                      f"{bound_pct:.1f}%, {nsamples} samples)")
            checks.ok(f"{t}: {SIGMAS} standard errors are within 10% (enough samples)",
                      bound_pct <= 10, f"{bound_pct:.1f}% from {nsamples} samples")
            print(f"{t}: true {n}, estimated {est:.0f} ({err_pct:.1f}% off; {SIGMAS} standard "
                  f"errors {bound_pct:.1f}%) from {nsamples} samples")
        sites = {}
        for frames, est, _ in split:
            sites[frames[0]] = sites.get(frames[0], 0) + est
        total = sum(sites.values())
        minor_true = truth["sites"][NS + "Program.Minor"] / sum(truth["sites"].values())
        minor = sites.get(NS + "Program.Minor", 0) / total if total else 0
        points = 5 if a.mode == "full" else 10
        checks.ok(f"SplitItem Minor share within {points} points",
                  abs(minor - minor_true) <= points / 100,
                  f"{100 * minor:.1f}% vs {100 * minor_true:.1f}%")
        print(f"SplitItem Minor share: {100 * minor:.1f}% (truth {100 * minor_true:.1f}%)")
    check_scaled(checks, a, db, log)
    if a.chromium:
        check_flame_graph(checks, a, db)
    return checks.summary()


def check_scaled(checks, a, db, log):
    """`heaplens stacks` scales each type's sites to its allocations: every type's sites add up to
    what `heaplens allocations` says of it (its exact count in full mode, from alloc_counts; the
    census's exact counts plus the estimates after the last GC in sampled mode), and to the one
    total of info; the by-method view's inclusive figures are the sums over the sites that hold
    each method (recursion once), its exclusive figures add up to the total."""
    if a.biased:
        return  # AllocationTick in sampled mode: no census on .NET 8, nothing exact to scale to
    every = ["--top", "4294967295"]
    stacks = heaplens_json(checks, a.heaplens, ["stacks", db] + every, log)
    allocations = heaplens_json(checks, a.heaplens, ["allocations", db], log)
    info = heaplens_json(checks, a.heaplens, ["info", db], log)
    methods = heaplens_json(checks, a.heaplens, ["stacks", db, "--by", "method"] + every, log)
    if not (stacks and allocations and info and methods):
        return
    sites, exact = {}, {}
    for row in stacks["rows"]:
        c, b = sites.get(row["type"], (0, 0))
        sites[row["type"]] = (c + row["count"], b + row["bytes"])
    for row in allocations["rows"]:
        exact[row["type"]] = (row["count"], row["bytes"])
    wrong = {t: (sites.get(t), exact.get(t)) for t in set(sites) | set(exact)
             if sites.get(t, (0, 0)) != exact.get(t, (0, 0))}
    checks.ok(f"each type's sites add up to its allocations ({len(exact)} types)", not wrong,
              f"{len(wrong)} differ, e.g. {sorted(wrong.items())[:5]}")
    total = info["allocations"]["total"]
    checks.eq("stacks' total is info's", total["count"], stacks["total"]["count"])
    checks.eq("stacks' total terms are info's", total, stacks["total"]["allocations"])
    checks.eq("allocations' total is info's", total, allocations["total"])
    inclusive = {}
    for row in stacks["rows"]:
        for frame in set(row["frames"]):
            c, b = inclusive.get(frame, (0, 0))
            inclusive[frame] = (c + row["count"], b + row["bytes"])
    got = {m["method"]: (m["inclusive"]["count"], m["inclusive"]["bytes"]) for m in methods["rows"]}
    checks.ok(f"by method: inclusive = the sum over the sites that hold it ({len(got)} methods)",
              got == inclusive, f"{len(set(got.items()) ^ set(inclusive.items()))} differ")
    checks.eq("by method: the exclusive counts add up to the total", stacks["total"]["count"],
              sum(m["exclusive"]["count"] for m in methods["rows"]))
    checks.eq("by method: the exclusive bytes add up to the total", stacks["total"]["bytes"],
              sum(m["exclusive"]["bytes"] for m in methods["rows"]))
    print(f"scaled: {len(exact)} types, {stacks['total']['sites']} sites, "
          f"{len(got)} methods, total {total['count']:,}")


def check_flame_graph(checks, a, db):
    """The report's flame graph, as headless Chromium draws it, holds the chain's frames."""
    page = os.path.join(a.workdir, "report.html")
    remove_stale(page)
    rc, _, err = run([a.heaplens, "report", db, "-o", page])
    if not checks.ok("heaplens report exits 0", rc == 0, err[-500:]):
        return
    profile = tempfile.mkdtemp(dir=a.workdir, prefix="chromium-")
    try:
        r = subprocess.run([a.chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--user-data-dir=" + profile,
                            "--window-size=1280,2000", "--dump-dom", "file://" + page],
                           capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if not checks.ok("chromium renders the report", r.returncode == 0, r.stderr[-500:]):
        return
    svg = re.search(r'<svg class="flame".*?</svg>', r.stdout, re.S)
    if not checks.ok("the flame graph is drawn", svg is not None):
        return
    names = set(re.findall(r'data-name="([^"]*)"', svg.group(0)))
    checks.ok("the flame graph holds the chain's frames", set(CHAIN) <= names,
              f"missing {sorted(set(CHAIN) - names)}")
    checks.ok("the flame graph holds both SplitItem sites",
              {NS + "Program.Major", NS + "Program.Minor"} <= names)


if __name__ == "__main__":
    sys.exit(main())
