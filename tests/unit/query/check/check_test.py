#!/usr/bin/env python3
"""check_test.py -- `heaplens check` on the leak fixture (`test_leaks fixture`: 4 snapshots,
App.Leak growing 3 a snapshot under App.Holder): assertions that hold (exit 0), each kind failing
on purpose with its exact line (expected, found, the query to see it, which gives what was
found), --json, assertions at checkpoints and between them (rows added to the fixture's
checkpoints table), and bad assertions refused in one line without touching the file.

Usage: check_test.py --heaplens PATH --fixture TEST_LEAKS --workdir DIR"""
import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys

failures = 0


def expect(name, cond, detail=""):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL {name}: {detail}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    subprocess.run([a.fixture, "fixture", a.workdir], check=True)
    db = "graph.db"

    def check(*args):
        p = subprocess.run([a.heaplens, "check", db] + list(args), cwd=a.workdir,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    rc, out, err = check("--max-live", "App.Leak=12", "--max-allocated", "Leak=12",
                         "--max-retained", "Holder=20K", "--sql", "SELECT 1 WHERE 0")
    expect("assertions that hold", rc == 0 and out == "4 assertions hold\n", f"{rc} {out!r} {err!r}")

    q_live = ("sqlite3 'graph.db' \"SELECT count(*) FROM snapshot_contents WHERE snapshot = 4 "
              "AND type = 'App.Leak'\"")
    cases = [
        (["--max-live", "Leak=11"],
         "FAIL --max-live Leak=11: expected at most 11, found 12 objects of App.Leak in snapshot "
         f"4 (GC 4, the last); see: {q_live}", "12"),
        (["--max-allocated", "App.Leaf=11"],
         "FAIL --max-allocated App.Leaf=11: expected at most 11, found 12 allocations of App.Leaf; "
         "see: sqlite3 'graph.db' \"SELECT round(total(count)) FROM "
         "allocations_estimated_by_type_thread WHERE type = 'App.Leaf'\"", "12.0"),
        (["--max-retained", "App.Holder=1K"], None, None),
        (["--no-leaks"],
         "FAIL --no-leaks: expected no leak suspect, found 2 suspects: App.Leak (+9 objects), "
         "App.Leaf (+9 objects); see: heaplens leaks 'graph.db'", None),
        (["--sql", "SELECT type FROM snapshot_contents WHERE snapshot = 4 AND type LIKE 'App.Leak%' "
                   "GROUP BY type"],
         "FAIL --sql SELECT type FROM snapshot_contents WHERE snapshot = 4 AND type LIKE "
         "'App.Leak%' GROUP BY type: expected no row, found 2 rows: App.Leak; App.Leak[]; see: "
         "sqlite3 'graph.db' \"SELECT type FROM snapshot_contents WHERE snapshot = 4 AND type "
         "LIKE 'App.Leak%' GROUP BY type\"", None),
    ]
    for args, line, shows in cases:
        rc, out, err = check(*args)
        lines = out.splitlines()
        expect(f"{args[0]} fails: exit 1", rc == 1, f"{rc} {err!r}")
        expect(f"{args[0]} fails: two lines", len(lines) == 2 and lines[1] == "1 of 1 assertion failed",
               repr(out))
        if line is not None:
            expect(f"{args[0]} line", lines and lines[0] == line, f"\n got  {lines[:1]}\n want {line!r}")
        elif lines:
            expect(f"{args[0]} line", lines[0].startswith(f"FAIL {' '.join(args)}: expected at most "
                                                          "1.0 KiB, found 12."), repr(lines[0]))
        if shows is not None and lines:
            cmd = lines[0].split("; see: ", 1)[1]
            p = subprocess.run(cmd, shell=True, cwd=a.workdir, capture_output=True, text=True)
            expect(f"{args[0]}: its query shows what was found", p.stdout.strip() == shows,
                   f"{cmd}: {p.stdout!r} {p.stderr!r}")

    rc, out, err = check("--max-live", "App.Leak=12", "--max-live", "App.Leaf=1", "--json")
    try:
        doc = json.loads(out)
        expect("--json", rc == 1 and doc["ok"] is False and doc["assertions"] == 2 and
               doc["failed"] == 1 and [r["ok"] for r in doc["results"]] == [True, False] and
               doc["results"][1]["value"] == 12 and doc["results"][1]["limit"] == 1, out)
    except ValueError:
        expect("--json is JSON", False, out)

    # Checkpoints (as the program's EventSource writes them): 'a' after GC 1, 'b' and 'c' after
    # GC 3. Alive at 'b': App.Leak after GC 3 (9); allocated a..b: intervals 2 and 3 (3 each).
    con = sqlite3.connect(os.path.join(a.workdir, db))
    con.executemany("INSERT INTO checkpoints (name, gc, time_ns, thread) VALUES (?, ?, ?, 7)",
                    [("a", 1, 10), ("b", 3, 20), ("c", 3, 30)])
    con.commit()
    con.close()
    rc, out, err = check("--max-live", "App.Leak=9@b", "--max-allocated", "App.Leaf=6@a..b",
                         "--max-allocated", "App.Leak=9@a..c")
    expect("checkpoint assertions that hold", rc == 0 and out == "3 assertions hold\n",
           f"{rc} {out!r} {err!r}")
    rc, out, err = check("--max-live", "App.Leak=8@b", "--max-allocated", "App.Leaf=5@a..b")
    want = [
        "FAIL --max-live App.Leak=8@b: expected at most 8, found 9 objects of App.Leak alive after "
        "GC 3 (the last before checkpoint 'b'); see: sqlite3 'graph.db' \"SELECT count(*) FROM "
        "live_objects WHERE gc = 3 AND type = 'App.Leak'\"",
        "FAIL --max-allocated App.Leaf=5@a..b: expected at most 5, found 6 allocations of App.Leaf "
        "between checkpoints a..b (GC intervals 2 to 3); see: heaplens allocations 'graph.db' "
        "--between 'a..b'",
        "2 of 2 assertions failed",
    ]
    expect("checkpoint assertions fail", rc == 1 and out.splitlines() == want,
           f"{rc}\n got  {out.splitlines()}\n want {want}")
    p = subprocess.run([a.heaplens, "allocations", db, "--between", "a..b", "--json"],
                       cwd=a.workdir, capture_output=True, text=True, timeout=120)
    counts = {r["type"]: r["count"] for r in json.loads(p.stdout)["rows"]} if p.returncode == 0 else {}
    expect("allocations --between a..b: intervals 2 and 3",
           counts == {"App.Leaf": 6, "App.Leak": 6, "App.Node": 2}, f"{p.returncode} {counts} {p.stderr!r}")

    with open(os.path.join(a.workdir, db), "rb") as f:
        before = hashlib.sha256(f.read()).hexdigest()
    for args in (["--max-live", "App.Leak"], ["--max-live", "App.Leak=-1"],
                 ["--max-retained", "App.Leak=3X"], ["--sql", "DELETE FROM gcs"],
                 ["--sql", "SELECT 1 WHERE 0; DELETE FROM gcs"], ["--sql", "SELECT 1 WHERE 0; SELECT 1"],
                 ["--sql", "SELECT nope FROM nothing"], [],
                 ["--max-live", "App.Leak=1@nope"], ["--max-allocated", "App.Leak=1@b..a"],
                 ["--max-allocated", "App.Leak=1@b..c"], ["--max-allocated", "App.Leak=1@a"]):
        rc, out, err = check(*args)
        expect(f"refused: {args}", rc == 1 and out == "" and len(err.splitlines()) == 1 and
               err.startswith("heaplens: check: ") or (rc == 1 and err.startswith("heaplens: ")
                                                       and len(err.splitlines()) == 1 and out == ""),
               f"{rc} {out!r} {err!r}")
    with open(os.path.join(a.workdir, db), "rb") as f:
        expect("refused assertions leave the file as it was",
               hashlib.sha256(f.read()).hexdigest() == before)

    # Assertions the recording cannot decide are refused, never passed: one line on stderr that
    # says why and how to record what they need, exit 1, nothing on stdout (it was "1 assertion
    # holds" for --no-leaks on a file with one snapshot).
    def variant(name, sql):
        shutil.copy(os.path.join(a.workdir, db), os.path.join(a.workdir, name))
        con = sqlite3.connect(os.path.join(a.workdir, name))
        con.executescript(sql)
        con.commit()
        con.close()
    variant("one.db", "DELETE FROM snapshots WHERE snapshot > 1")
    variant("none.db", "DELETE FROM snapshots")
    # sampled: between snapshots only the samples' objects are followed (live_objects holds
    # those alone); snapshots at GCs 3 and 4 ('b' and 'c' follow GC 3, 'a' GC 1)
    variant("sampled.db", "UPDATE run SET mode = 'sampled', flags = 'samples-followed';"
                          "DELETE FROM snapshots WHERE snapshot < 3")
    variant("sampled0.db", "UPDATE run SET mode = 'sampled', flags = 'samples-followed';"
                           "DELETE FROM snapshots")
    variant("nogc.db", "DELETE FROM snapshots; DELETE FROM gc_generations; DELETE FROM gcs;"
                       "DELETE FROM checkpoints")
    how = "(take one per GC.Collect() with 'heaplens record', or with 'heaplens snapshot PID')"
    sampled_how = ("and between snapshots a sampled recording follows only its sampled objects; "
                   "take snapshots ('heaplens record --snapshot induced', the default, or "
                   "'heaplens snapshot PID') or record in full mode")
    undecided = [
        ("one.db", ["--no-leaks"],
         "heaplens: check: --no-leaks cannot be checked: leaks needs at least two heap snapshots "
         f"to see growth; one.db has 1 {how}"),
        ("none.db", ["--max-live", "App.Leak=100", "--no-leaks"],
         "heaplens: check: --no-leaks cannot be checked: leaks needs at least two heap snapshots "
         f"to see growth; none.db has 0 {how}"),
        ("none.db", ["--max-retained", "App.Leak=1G"],
         "heaplens: check: --max-retained App.Leak=1G cannot be checked: none.db has no heap "
         "snapshot; 'heaplens record' takes one at every GC.Collect() (--snapshot induced, the "
         "default) and 'heaplens snapshot PID' on demand"),
        ("sampled0.db", ["--max-live", "App.Leak=100"],
         "heaplens: check: --max-live App.Leak=100 cannot be checked: sampled0.db has no heap "
         f"snapshot at GC 4 (its last GC), {sampled_how}"),
        ("sampled.db", ["--max-live", "App.Leak=100@a"],
         "heaplens: check: --max-live App.Leak=100@a cannot be checked: sampled.db has no heap "
         f"snapshot at GC 1 (the last before checkpoint 'a'), {sampled_how}"),
        ("nogc.db", ["--max-live", "App.Leak=100"],
         "heaplens: check: --max-live App.Leak=100 cannot be checked: nogc.db has no GC and no "
         "heap snapshot, so nothing is known alive (a program that ends before its first GC can "
         "call GC.Collect() before it ends)"),
    ]
    for name, args, want in undecided:
        for json_flag in ([], ["--json"]):
            p = subprocess.run([a.heaplens, "check", name] + args + json_flag, cwd=a.workdir,
                               capture_output=True, text=True, timeout=120)
            expect(f"undecided: {name} {args + json_flag}",
                   p.returncode == 1 and p.stdout == "" and p.stderr == want + "\n",
                   f"{p.returncode} {p.stdout!r}\n got  {p.stderr!r}\n want {want!r}")
    # what can be decided there still is: a snapshot (GCs 3 and 4 of the sampled file) names
    # every live object, and a full recording without snapshots knows every object after its
    # last GC
    for name, args in (("sampled.db", ["--max-live", "App.Leak=12", "--max-live", "App.Leak=12@b"]),
                       ("none.db", ["--max-live", "App.Leak=12"])):
        p = subprocess.run([a.heaplens, "check", name] + args, cwd=a.workdir,
                           capture_output=True, text=True, timeout=120)
        n = len(args) // 2
        expect(f"decided: {name} {args}", p.returncode == 0 and
               p.stdout == f"{n} assertion{'s' if n > 1 else ''} hold{'' if n > 1 else 's'}\n",
               f"{p.returncode} {p.stdout!r} {p.stderr!r}")

    # An unfinished recording (its writer still at work, or killed): check and export say so as
    # every other command does — the note after the answer in text, on stderr with --json.
    shutil.copy(os.path.join(a.workdir, db), os.path.join(a.workdir, "unfinished.db"))
    con = sqlite3.connect(os.path.join(a.workdir, "unfinished.db"))
    con.execute("UPDATE run SET status = 'recording'")
    con.commit()
    con.close()
    note = "note: the recording is unfinished"
    for args in (["export", "unfinished.db", "--gcdump", "unfinished.gcdump"],):
        for json_flag in ([], ["--json"]):
            p = subprocess.run([a.heaplens] + args + json_flag, cwd=a.workdir, capture_output=True,
                               text=True, timeout=120)
            where = p.stderr if json_flag else p.stdout
            expect(f"unfinished: {args + json_flag} says so",
                   p.returncode == 0 and note in where and
                   (not json_flag or len(p.stderr.splitlines()) == 1),
                   f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    # A recording that lost data or did not end complete holds lower bounds (its note says
    # "counts are lower bounds"): an assertion that holds there is not decided (it was "1
    # assertion holds" for --max-allocated on a recording whose writer was killed with half of
    # the program's allocations), one line on stderr, exit 1; one that fails is (the lower bound
    # is over the limit already); --sql is the user's own query and answers as it says.
    variant("lossy.db", "UPDATE run SET status = 'truncated', loss = 'writer-lost';"
                        "INSERT OR REPLACE INTO counters VALUES ('allocs_dropped', 100);"
                        "INSERT OR REPLACE INTO counters VALUES ('allocs_dropped_writer', 100)")
    for name in ("lossy.db", "unfinished.db"):
        for args in (["--max-allocated", "Leak=12"], ["--max-live", "App.Leak=12"],
                     ["--max-retained", "Holder=20K"]):
            first = " ".join(args)
            want = (f"heaplens: check: {first} cannot be checked: {name} lost data or did not end "
                    f"complete, so what it holds is a lower bound (its note says what: heaplens "
                    f"info '{name}'); it holds on what was kept\n")
            for json_flag in ([], ["--json"]):
                p = subprocess.run([a.heaplens, "check", name] + args + json_flag, cwd=a.workdir,
                                   capture_output=True, text=True, timeout=120)
                expect(f"lower bounds: {name} {args + json_flag}",
                       p.returncode == 1 and p.stdout == "" and p.stderr == want,
                       f"{p.returncode} {p.stdout!r}\n got  {p.stderr!r}\n want {want!r}")
    p = subprocess.run([a.heaplens, "check", "lossy.db", "--max-allocated", "App.Leaf=11",
                        "--sql", "SELECT 1 WHERE 0", "--no-leaks"], cwd=a.workdir,
                       capture_output=True, text=True, timeout=120)
    expect("lower bounds: a lower bound over the limit fails (and growth seen is growth)",
           p.returncode == 1 and p.stdout.startswith("FAIL --max-allocated App.Leaf=11: expected "
                                                     "at most 11, found 12 allocations") and
           "FAIL --no-leaks: expected no leak suspect" in p.stdout and
           "2 of 3 assertions failed\n" in p.stdout and "counts are lower bounds" in p.stdout,
           f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
