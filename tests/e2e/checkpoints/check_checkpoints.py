#!/usr/bin/env python3
"""End-to-end test of checkpoints: record examples/Checkpoints and compare with its own truth.

    check_checkpoints.py --heaplens build/bin/heaplens --dotnet dotnet \
        --dll build/examples/Checkpoints/Checkpoints.dll --workdir /tmp/checkpoints

The program writes three checkpoints from an EventSource named "HeapLens" (Checkpoint(name),
event 1), each right after a blocking GC.Collect(), and writes what it did (examples/README.md).
For a full and a sampled recording, and an attach session (the program started without heaplens
with --wait, `heaplens attach PID`, then its phases), this script checks:

  (a) table checkpoints: the program's checkpoints in order, each with the GC count the program
      read when writing it (GC.CollectionCount(0)) and the OS thread that wrote it;
  (b) `snapshots --json` and `info --json` list them;
  (c) `allocations --between FROM..TO --json`: the Orders and Scratch objects the program made
      between consecutive checkpoints (full mode: exact; sampled mode: Orders and Scratch are
      small objects, counted exactly by the census);
  (d) `check`: --max-live TYPE=N@NAME and --max-allocated TYPE=N@FROM..TO hold at the program's
      figures (exit 0) and fail one below them (exit 1, one FAIL line each naming what was
      expected and found); an unknown checkpoint, a range written backwards and a range
      without a GC between its ends are refused in one line (exit 1).
  (e) `diff FILE @A @B` and `diff --between A..B`: the Orders new, dead and survived between
      the snapshots taken at two checkpoints.

With --xunit-dll (examples/XunitCheckpoints): `heaplens record --children=testhost -- dotnet
test XunitCheckpoints.dll` records the test host into its own database; its checkpoints
cache-start and cache-end are stored, and `check --max-allocated Widget=100@cache-start..cache-end
--max-live Widget=100@cache-end` holds while 99 fails both with their lines.

Python 3 standard library only. Prints every mismatch and a final line "N passed, M failed";
exits 1 if anything failed (2 on usage errors).
"""
import argparse
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import (Checks, count_rows, heaplens_json, record, remove_db, run,  # noqa: E402
                    start_log)


def fmt(n):
    return f"{n:,}"


def attach(checks, a, db, truth_path, log):
    """The program started without heaplens (--wait: it says "ready PID" and waits), `heaplens
    attach PID`, then, once the attach's first snapshot is stored, the program runs its phases
    and exits, which ends the session. Returns attach's exit status."""
    remove_db(db, truth_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORECLR_", "DOTNET_"))}
    prog = subprocess.Popen([a.dotnet, a.dll, truth_path, "--wait"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    ready = prog.stdout.readline().split()
    if not checks.ok("attach: the program started and waits", len(ready) == 2 and
                     ready[0] == "ready", str(ready)):
        prog.kill()
        return None
    cmd = [a.heaplens, "attach", ready[1], "-o", db]
    print("$ " + " ".join(cmd))
    session = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = session.stderr.readline()
    checks.ok("attach: attached", first.startswith("heaplens: attached to process"), first)
    deadline = time.monotonic() + a.timeout
    while (count_rows(db, "snapshots") < 1 and session.poll() is None and
           time.monotonic() < deadline):
        time.sleep(0.02)  # polling the database for the attach's first snapshot
    prog.stdin.write("go\n")
    prog.stdin.flush()
    prog.stdout.read()
    prog.wait(timeout=a.timeout)
    out, err = session.communicate(timeout=a.timeout)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n[exit {session.returncode}]\n{out}\n{first}{err}\n")
    return session.returncode


def check_recording(checks, a, mode, log):
    db = os.path.join(a.workdir, f"checkpoints-{mode}.db")
    truth_path = os.path.join(a.workdir, f"truth-{mode}.json")
    if mode == "attach":
        rc = attach(checks, a, db, truth_path, log)
        checks.eq(f"{mode}: heaplens attach exit status", 0, rc)
    else:
        rc = record(a, db, truth_path, [], log, record_options=["--mode", mode])
        checks.eq(f"{mode}: heaplens record exit status", 0, rc)
    if not os.path.exists(truth_path) or not os.path.exists(db):
        checks.ok(f"{mode}: program wrote its truth and heaplens its recording", False)
        return
    with open(truth_path) as f:
        truth = json.load(f)
    if mode != "attach":  # attached later: the program saw no collector at its start
        checks.ok(f"{mode}: collector loaded", bool(truth.get("collector")))
    checks.ok(f"{mode}: the program's EventSource HeapLens was enabled", truth["provider_enabled"])

    # (a) the table
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT name, gc, thread FROM checkpoints ORDER BY id").fetchall()
    con.close()
    want = [(c["name"], c["gc"], c["thread"]) for c in truth["checkpoints"]]
    checks.eq(f"{mode}: checkpoints (name, gc, thread)", want, rows)

    # (b) listed by snapshots and info
    doc = heaplens_json(checks, a.heaplens, ["snapshots", db], log)
    if doc is not None:
        checks.eq(f"{mode}: snapshots --json checkpoints", want,
                  [(c["name"], c["gc"], c["thread"]) for c in doc.get("checkpoints", [])])
    doc = heaplens_json(checks, a.heaplens, ["info", db], log)
    if doc is not None:
        checks.eq(f"{mode}: info --json checkpoints", [w[0] for w in want],
                  [c["name"] for c in doc.get("checkpoints", [])])

    order, scratch = truth["order_type"], truth["scratch_type"]
    # (c) allocations --between
    for b in truth["between"]:
        rng = f"{b['from']}..{b['to']}"
        doc = heaplens_json(checks, a.heaplens, ["allocations", db, "--between", rng], log)
        if doc is None:
            continue
        counts = {r["type"]: r["count"] for r in doc["rows"]}
        checks.eq(f"{mode}: allocations --between {rng}: {order}", b["orders_allocated"],
                  counts.get(order, 0))
        checks.eq(f"{mode}: allocations --between {rng}: {scratch}", b["scratch_allocated"],
                  counts.get(scratch, 0))

    # (d) check: holds at the program's figures, fails one below
    holds, fails, lines = [], [], []
    for c in truth["checkpoints"]:
        if c["gc"] == 0:
            continue
        n = c["orders_alive"]
        holds += ["--max-live", f"Order={n}@{c['name']}"]
        if n > 0:
            fails += ["--max-live", f"Order={n - 1}@{c['name']}"]
            lines.append(f"FAIL --max-live Order={n - 1}@{c['name']}: expected at most "
                         f"{fmt(n - 1)}, found {fmt(n)} objects of {order} alive after GC "
                         f"{c['gc']} (the last before checkpoint '{c['name']}')")
    for b in truth["between"]:
        rng = f"{b['from']}..{b['to']}"
        n = b["scratch_allocated"]
        holds += ["--max-allocated", f"Scratch={n}@{rng}"]
        fails += ["--max-allocated", f"Scratch={n - 1}@{rng}"]
        lines.append(f"FAIL --max-allocated Scratch={n - 1}@{rng}: expected at most {fmt(n - 1)}, "
                     f"found {fmt(n)} allocations of {scratch} between checkpoints {rng}")
    rc, out, err = run([a.heaplens, "check", db] + holds, log=log)
    checks.eq(f"{mode}: check at the program's figures: exit status", 0, rc)
    checks.ok(f"{mode}: check at the program's figures: all hold", "assertions hold" in out,
              out + err)
    rc, out, err = run([a.heaplens, "check", db] + fails, log=log)
    checks.eq(f"{mode}: check one below: exit status", 1, rc)
    got = [ln for ln in out.splitlines() if ln.startswith("FAIL ")]
    checks.eq(f"{mode}: check one below: one FAIL line per assertion", len(lines), len(got))
    for want_line, line in zip(lines, got):
        checks.ok(f"{mode}: check line '{want_line[:60]}...'", line.startswith(want_line), line)
    doc = None
    rc, out, err = run([a.heaplens, "check", db] + fails + ["--json"], log=log)
    try:
        doc = json.loads(out)
    except ValueError:
        pass
    checks.ok(f"{mode}: check --json one below: exit 1, every assertion failed",
              rc == 1 and doc is not None and doc.get("failed") == len(lines), f"exit {rc}: {out[:300]}")

    # (e) diff between checkpoints: the snapshots taken at them (the GC.Collect() before each),
    # Orders new, dead and survived by identity from the program's figures (the Orders it
    # allocated between two checkpoints are all alive at the second)
    alive = {c["name"]: c["orders_alive"] for c in truth["checkpoints"]}
    for b in truth["between"]:
        new = b["orders_allocated"]
        survived = alive[b["to"]] - new
        dead = alive[b["from"]] - survived
        for args in (["@" + b["from"], "@" + b["to"]], ["--between", f"{b['from']}..{b['to']}"]):
            doc = heaplens_json(checks, a.heaplens, ["diff", db] + args + ["--all"], log)
            if doc is None:
                continue
            rows = {r["type"]: r for r in doc["rows"]}
            r = rows.get(order, {})
            checks.eq(f"{mode}: diff {' '.join(args)}: {order} new, dead, survived",
                      (new, dead, survived),
                      (r.get("new"), r.get("dead"), r.get("survived")))
            checks.eq(f"{mode}: diff {' '.join(args)}: the sides name their checkpoints",
                      (b["from"], b["to"]),
                      (doc["from"].get("checkpoint"), doc["to"].get("checkpoint")))
        rc, out, err = run([a.heaplens, "diff", db, "@" + b["from"], "@" + b["to"]], log=log)
        checks.ok(f"{mode}: diff @{b['from']} @{b['to']} (text) names them",
                  rc == 0 and out.startswith(f"@{b['from']}: snapshot "), out[:200])

    # refused in one line
    names = [c["name"] for c in truth["checkpoints"]]
    for args, pattern in [
        (["check", db, "--max-live", "Order=1@no-such-checkpoint"],
         r"has no checkpoint 'no-such-checkpoint' \(it has 'start', 'filled', 'drained'\)"),
        (["allocations", db, "--between", f"{names[-1]}..{names[0]}"], r"was written before"),
        (["allocations", db, "--between", names[0]], r"FROM\.\.TO"),
        (["allocations", db, "--between", f"{names[0]}..{names[0]}"], r"no GC finished between"),
        (["diff", db, "@" + names[0]], r"needs a second checkpoint"),
        (["diff", db, "@no-such-checkpoint", "@" + names[0]],
         r"has no checkpoint 'no-such-checkpoint'"),
    ]:
        rc, out, err = run([a.heaplens] + args, log=log)
        checks.ok(f"{mode}: {' '.join(args[:1] + args[2:])}: exit 1, one line on stderr",
                  rc == 1 and len(err.strip().splitlines()) == 1 and re.search(pattern, err),
                  f"exit {rc}: {err.strip()}")


def check_xunit(checks, a, log):
    db = os.path.join(a.workdir, "tests.db")
    for f in glob.glob(os.path.join(a.workdir, "tests*.db*")):
        os.remove(f)
    cmd = [a.heaplens, "record", "-o", db, "--children=testhost", "--", a.dotnet, "test",
           a.xunit_dll]
    print("$ " + " ".join(cmd))
    rc, out, err = run(cmd, log=log, timeout=a.timeout)
    checks.eq("xunit: heaplens record --children=testhost -- dotnet test: exit status", 0, rc)
    hosts = [f for f in glob.glob(os.path.join(a.workdir, "tests.*.db"))
             if sqlite3.connect(f"file:{f}?mode=ro", uri=True).execute(
                 "SELECT command FROM run").fetchone()[0].find("testhost") >= 0]
    if not checks.eq("xunit: one recording of the test host", 1, len(hosts)):
        return
    host = hosts[0]
    con = sqlite3.connect(f"file:{host}?mode=ro", uri=True)
    names = [r[0] for r in con.execute("SELECT name FROM checkpoints ORDER BY id")]
    con.close()
    checks.eq("xunit: the test's checkpoints", ["cache-start", "cache-end"], names)
    holds = ["--max-allocated", "Widget=100@cache-start..cache-end", "--max-live",
             "Widget=100@cache-end"]
    rc, out, err = run([a.heaplens, "check", host] + holds, log=log)
    checks.ok("xunit: check at 100 holds", rc == 0 and out == "2 assertions hold\n", f"{rc} {out!r} {err!r}")
    rc, out, err = run([a.heaplens, "check", host] + [h.replace("=100", "=99") for h in holds],
                       log=log)
    got = out.splitlines()
    # check reports the assertions kind by kind: --max-live first
    checks.ok("xunit: check at 99 fails both", rc == 1 and len(got) == 3 and
              got[0].startswith("FAIL --max-live Widget=99@cache-end: expected at most 99, found "
                                "100 objects of HeapLens.Examples.Xunit.Widget alive after GC") and
              got[1].startswith("FAIL --max-allocated Widget=99@cache-start..cache-end: expected "
                                "at most 99, found 100 allocations of "
                                "HeapLens.Examples.Xunit.Widget between checkpoints"),
              f"{rc} {out!r} {err!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--dotnet", required=True)
    ap.add_argument("--dll", help="examples/Checkpoints")
    ap.add_argument("--xunit-dll", help="examples/XunitCheckpoints (dotnet test)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    log = start_log(a.workdir)
    checks = Checks(a.verbose)
    if a.dll:
        for mode in ("full", "sampled", "attach"):
            check_recording(checks, a, mode, log)
    if a.xunit_dll:
        check_xunit(checks, a, log)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
