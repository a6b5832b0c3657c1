#!/usr/bin/env python3
"""End-to-end test of counted allocation sites: `heaplens record --count` on examples/CountedSites.

    check_counted.py --heaplens build/bin/heaplens --dotnet dotnet \
        --dll build/examples/CountedSites/CountedSites.dll --workdir /tmp/counted

CountedSites (namespace HeapLens.Examples.Counted) allocates at sites of every kind the IL
rewriter must handle — newobj in a loop, newarr, box of an int, sites in try/catch/finally and
a throw, in switch cases, in a generic method (its own code for int, shared for string), in a
method whose short branches must widen — and a struct constructor (no site); it counts its own
allocations per (method, type) and writes them. Checks:
  - heaplens record --count 'HeapLens.Examples.Counted.*' exits 0 (the program's status: it
    checked its own data);
  - `heaplens allocations --by site --json`: the counts summed per (method, type) equal the
    program's exactly, every site is the program's, and every kind of site is there;
  - the matched methods without a site (constructors, RunAll) are listed as not rewritten for
    that reason, and no method was refused for another;
  - a recording without --count has no counted sites: `allocations --by site` says so in one
    line on stderr and exits 1;
  - attach --count: CountedSites --stdin started without heaplens runs every site method once
    (jitted), then `heaplens attach PID --count` (counting is on when it says it attached),
    the program runs N iterations and writes its counts, the session ends (Ctrl-C): every
    site's count equals the program's; the runtime keeps that collector, and a second
    `heaplens attach` without --count and a third with it reach it over its own socket: each
    records a complete session, the third counts exactly again; the program runs on, checks
    its own data and exits 0;
  - a process whose runtime refuses ReJIT after attach (DOTNET_ProfApi_RejitOnAttach=0):
    attach --count records the session without counting and says so in one line per pattern;
  - the differential run: `--count 'System.Linq.*' --count 'System.Collections.Generic.*'`
    rewrites every method of those namespaces in System.Linq and System.Private.CoreLib (loaded
    before the collector: recompiled at their next call) while CountedSites --workload checks
    each LINQ and collection result against a plain loop: it exits 0, and sites of both
    assemblies counted.
Python 3 standard library only; prints every mismatch and "N passed, M failed".
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, heaplens_json, program, remove_db, run  # noqa: E402

PATTERN = "HeapLens.Examples.Counted.*"
NS = "HeapLens.Examples.Counted."


def compare(checks, label, want, doc):
    got = {}
    for row in doc["rows"]:
        key = (row["method"], row["type"])
        got[key] = got.get(key, 0) + row["count"]
    for key in sorted(want):
        checks.eq(f"{label}: {key[0]} {key[1]} count", want[key], got.get(key))
    checks.eq(f"{label}: every counted site is one of the program's", [],
              sorted(k for k in got if k not in want))


def check_attach(checks, a, log):
    db = os.path.join(a.workdir, "attach.db")
    truth_path = os.path.join(a.workdir, "attach-truth.json")
    remove_db(db, truth_path)
    # The resident collector resets its session slowly (2 s): "attach again", started as soon as
    # the first attach exits, must find its socket all the same (collector/resident.h).
    env = dict(os.environ, HEAPLENS_RESIDENT_DELAY_MS="2000")
    prog = subprocess.Popen(program(a.dotnet, a.dll) + ["--stdin", "--truth", truth_path],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def say(command):
        prog.stdin.write(command + "\n")
        prog.stdin.flush()
        return prog.stdout.readline().strip()

    try:
        ready = prog.stdout.readline().strip()
        if not checks.ok("attach: the program is ready", ready.startswith("ready"), ready):
            return
        checks.eq("attach: a round before the attach", "done 50", say("run 50"))
        checks.eq("attach: counts reset", "reset", say("reset"))
        # The first attach counts; the collector then stays. A second attach without --count
        # and a third with it reach that collector over its own socket.
        for label, counted in (("attach", True), ("attach again", False),
                               ("attach --count again", True)):
            db = os.path.join(a.workdir, label.replace(" ", "-") + ".db")
            remove_db(db, truth_path)
            checks.eq(f"{label}: counts reset", "reset", say("reset"))
            cmd = [a.heaplens, "attach", str(prog.pid), "--snapshot", "none", "-o", db]
            if counted:
                cmd += ["--count", PATTERN]
            session = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
            lines = []
            for line in session.stderr:
                lines.append(line)
                if "attached to process" in line:
                    break
            if counted:
                checks.ok(f"{label}: says first that the collector stays loaded",
                          any("leaves the collector loaded" in l for l in lines), "".join(lines))
            if not checks.ok(f"{label}: attached", any("attached to process" in l for l in lines),
                             "".join(lines)):
                session.kill()
                session.communicate()
                return
            n = a.iterations
            checks.eq(f"{label}: the round", f"done {n}", say(f"run {n}"))
            checks.eq(f"{label}: the program wrote its counts", "truth", say("truth"))
            session.send_signal(signal.SIGINT)
            out, err = session.communicate(timeout=300)
            with open(log, "a") as f:
                f.write(f"--- {label}\n" + "".join(lines) + err)
            checks.eq(f"{label}: heaplens attach exits 0", 0, session.returncode)
            info = heaplens_json(checks, a.heaplens, ["info", db], log)
            if info is not None:
                checks.eq(f"{label}: the recording is complete", "complete",
                          info["run"].get("status"))
            if not counted:
                checks.ok(f"{label}: no counted sites", info is not None and
                          info.get("counted_sites") is None, str(info and info.get("counted_sites")))
                continue
            checks.ok(f"{label}: says what it counted", "counted 17 sites in 7 methods" in err, err)
            truth = json.load(open(truth_path))
            want = {(t["method"], t["type"]): t["count"] for t in truth["sites"]}
            doc = heaplens_json(checks, a.heaplens, ["allocations", db, "--by", "site"], log)
            if doc is not None:
                compare(checks, label, want, doc)
        checks.eq("attach: the program runs on after the sessions", "done 100", say("run 100"))
        prog.stdin.write("quit\n")
        prog.stdin.flush()
        checks.eq("attach: the program checks its own data and exits 0", 0, prog.wait(timeout=120))
    finally:
        if prog.poll() is None:
            prog.kill()


def check_no_rejit(checks, a, log):
    db = os.path.join(a.workdir, "norejit.db")
    remove_db(db)
    env = dict(os.environ, DOTNET_ProfApi_RejitOnAttach="0")
    prog = subprocess.Popen(program(a.dotnet, a.dll) + ["--stdin"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        ready = prog.stdout.readline().strip()
        if not checks.ok("no ReJIT: the program is ready", ready.startswith("ready"), ready):
            return
        session = subprocess.Popen([a.heaplens, "attach", str(prog.pid), "--count", PATTERN,
                                    "--snapshot", "none", "-o", db], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        lines = []
        for line in session.stderr:
            lines.append(line)
            if "attached to process" in line:
                break
        prog.stdin.write("run 100\n")
        prog.stdin.flush()
        checks.eq("no ReJIT: the program runs", "done 100", prog.stdout.readline().strip())
        session.send_signal(signal.SIGINT)
        out, err = session.communicate(timeout=300)
        with open(log, "a") as f:
            f.write("--- no ReJIT\n" + "".join(lines) + err)
        checks.eq("no ReJIT: heaplens attach exits 0", 0, session.returncode)
        said = [l for l in err.splitlines() if "does not allow recompiling" in l]
        checks.ok("no ReJIT: said in one line per pattern", len(said) == 1 and PATTERN in said[0],
                  err)
        prog.stdin.write("quit\n")
        prog.stdin.flush()
        checks.eq("no ReJIT: the program exits 0", 0, prog.wait(timeout=120))
    finally:
        if prog.poll() is None:
            prog.kill()


def main():
    ap = arguments()
    ap.add_argument("--iterations", type=int, default=3000)
    a, checks, log = begin(ap, verbose=True)
    db = os.path.join(a.workdir, "counted.db")
    truth_path = os.path.join(a.workdir, "truth.json")
    remove_db(db, truth_path)
    cmd = ([a.heaplens, "record", "-q", "--count", PATTERN, "-o", db, "--"] +
           program(a.dotnet, a.dll) + ["--iterations", str(a.iterations), "--truth", truth_path])
    rc, out, err = run(cmd, log=log)
    if not checks.ok("heaplens record --count exits 0", rc == 0, f"exit {rc}: {err[-500:]}"):
        return checks.summary()
    truth = json.load(open(truth_path))
    want = {(s["method"], s["type"]): s["count"] for s in truth["sites"]}

    doc = heaplens_json(checks, a.heaplens, ["allocations", db, "--by", "site"], log)
    if doc is None:
        return checks.summary()
    got = {}
    kinds = set()
    for row in doc["rows"]:
        key = (row["method"], row["type"])
        got[key] = got.get(key, 0) + row["count"]
        kinds.add(row["kind"])
        print(f"{row['count']:>8}  {row['method']}  IL_{row['il_offset']:04x}  {row['kind']}  "
              f"{row['type']}")
    for key in sorted(want):
        checks.eq(f"{key[0]} {key[1]} count", want[key], got.get(key))
    extra = sorted(k for k in got if k not in want)
    checks.eq("every counted site is one of the program's", [], extra)
    checks.eq("kinds of sites", {"newobj", "newarr", "box"}, kinds)
    checks.eq("methods with sites", 7, doc["methods"])
    generic_box = [r for r in doc["rows"] if r["method"] == NS + "Sites.Generic" and
                   r["kind"] == "box"]
    checks.ok("the box of a generic parameter is flagged", len(generic_box) == 1 and
              generic_box[0]["exact"] is False, str(generic_box))
    # The runtime's own count (full mode: ObjectAllocated for every object) agrees: Node is
    # allocated at counted sites only.
    con = sqlite3.connect(db)
    node = con.execute("SELECT sum(a.count) FROM alloc_counts a JOIN types t ON t.id = a.type_id "
                       "WHERE t.name = ?", (NS + "Node",)).fetchone()[0]
    sites_node = con.execute("SELECT sum(count) FROM count_sites WHERE type = ?",
                             (NS + "Node",)).fetchone()[0]
    con.close()
    checks.eq("Node: counted sites sum to the runtime's own count (alloc_counts)", node, sites_node)
    report = heaplens_json(checks, a.heaplens, ["report", db], log)
    if report is not None:
        c = report.get("counted_sites") or {}
        checks.eq("the report lists the counted sites", (17, 7), (c.get("sites"), c.get("methods")))
    reasons = {r["method"]: r["reason"] for r in doc["not_rewritten"]}
    checks.eq("matched methods not rewritten", {
        NS + "Node..ctor": "no allocating instruction",
        NS + "Holder..ctor": "no allocating instruction",
        NS + "Pair..ctor": "no allocating instruction",
        NS + "Sites.RunAll": "no allocating instruction"}, reasons)

    # Without --count: no counted sites, said in one line.
    plain = os.path.join(a.workdir, "plain.db")
    remove_db(plain)
    rc, out, err = run([a.heaplens, "record", "-q", "--mode", "sampled", "-o", plain, "--"] +
                       program(a.dotnet, a.dll) + ["--iterations", "10"], log=log)
    checks.eq("heaplens record without --count exits 0", 0, rc)
    rc, out, err = run([a.heaplens, "allocations", plain, "--by", "site"], log=log)
    checks.ok("allocations --by site without counted sites: exit 1, one line",
              rc == 1 and len(err.strip().splitlines()) == 1 and "--count" in err,
              f"exit {rc}: {err!r}")

    check_attach(checks, a, log)
    check_no_rejit(checks, a, log)

    # The differential run over the runtime's own LINQ and collections.
    linq = os.path.join(a.workdir, "linq.db")
    remove_db(linq)
    rc, out, err = run([a.heaplens, "record", "-q", "--mode", "sampled", "--count", "System.Linq.*",
                        "--count", "System.Collections.Generic.*", "-o", linq, "--"] +
                       program(a.dotnet, a.dll) + ["--workload", "5000"], log=log)
    checks.ok("LINQ and collections rewritten: the program's results unchanged (exit 0)", rc == 0,
              f"exit {rc}: {err[-500:]}")
    doc = heaplens_json(checks, a.heaplens, ["allocations", linq, "--by", "site"], log)
    if doc is not None:
        counted = {}
        for row in doc["rows"]:
            if row["count"] > 0:
                counted[row["module"]] = counted.get(row["module"], 0) + 1
        print(f"differential: {doc['sites']} sites in {doc['methods']} methods, counted at: "
              f"{counted}")
        checks.ok("hundreds of sites rewritten", doc["sites"] >= 500, str(doc["sites"]))
        checks.ok("sites of System.Linq and CoreLib counted",
                  counted.get("System.Linq.dll", 0) > 0 and
                  counted.get("System.Private.CoreLib.dll", 0) > 0, str(counted))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
