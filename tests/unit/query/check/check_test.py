#!/usr/bin/env python3
"""check_test.py -- `heaplens check` on the leak fixture (`test_leaks fixture`: 4 snapshots,
App.Leak growing 3 a snapshot under App.Holder): assertions that hold (exit 0), each kind failing
on purpose with its exact line (expected, found, the query to see it, which gives what was
found), --json, assertions at checkpoints and between them (rows added to the fixture's
checkpoints table), and bad assertions refused in one line without touching the file.

Usage: check_test.py --heaplens PATH --fixture TEST_LEAKS --workdir DIR"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
import leak_fixture  # noqa: E402
from leak_fixture import expect  # noqa: E402


def main():
    a = leak_fixture.setup()
    db = "graph.db"

    def check(*args, file=db):
        """heaplens check FILE ARGS: exit status, stdout, stderr."""
        p = subprocess.run([a.heaplens, "check", file] + list(args), cwd=a.workdir,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def check_json(*args, file=db):
        """check ARGS --json: exit status, the document ({} when stdout is not JSON), stdout,
        stderr."""
        rc, out, err = check(*args, "--json", file=file)
        try:
            doc = json.loads(out)
        except ValueError:
            doc = {}
        return rc, doc, out, err

    rc, out, err = check("--max-live", "App.Leak=12", "--max-allocated", "Leak=12",
                         "--max-retained", "Holder=20K", "--sql", "SELECT 1 WHERE 0")
    expect("assertions that hold", rc == 0 and out == "4 assertions hold\n", f"{rc} {out!r} {err!r}")

    # A misspelt type holds every "at most" assertion (0 of a type nobody allocated): each is
    # said with a NOTE, exit still 0 (a type never loaded is no error); JSON: type_unknown true.
    rc, out, err = check("--max-live", "App.Laek=0", "--max-allocated", "App.Laek=0",
                         "--max-retained", "App.Laek=0", "--max-live", "App.Leak=12")
    notes = [f"NOTE --{k} App.Laek=0 holds, but the recording has no type of that name (misspelt? "
             "'heaplens allocations' lists the types)" for k in ("max-live", "max-allocated",
                                                               "max-retained")]
    expect("misspelt types noted", rc == 0 and out.splitlines() == notes + ["4 assertions hold"],
           f"{rc} {out!r} {err!r}")
    rc, doc, out, err = check_json("--max-live", "App.Laek=0", "--max-live", "App.Leak=12")
    expect("misspelt type in JSON", rc == 0 and [r.get("type_unknown") for r in
                                                 doc.get("results", [])] == [True, None], out)

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
                 ["--max-allocated", "App.Leak=1@b..c"], ["--max-allocated", "App.Leak=1@a"],
                 # statements SQLite calls read-only that return no row: they "held" (exit 0)
                 ["--sql", "ATTACH 'graph.db' AS other"], ["--sql", "BEGIN"],
                 ["--sql", "SAVEPOINT s"]):
        rc, out, err = check(*args)
        expect(f"refused: {args}", rc == 1 and out == "" and len(err.splitlines()) == 1 and
               err.startswith("heaplens: check: ") or (rc == 1 and err.startswith("heaplens: ")
                                                       and len(err.splitlines()) == 1 and out == ""),
               f"{rc} {out!r} {err!r}")
    # a blank query or a comment alone: "heaplens: check: --sql not an error" before
    for sql in (" ", "-- nothing", ";"):
        rc, out, err = check("--sql", sql)
        expect(f"refused: --sql {sql!r}", rc == 1 and out == "" and
               err == "heaplens: check: --sql needs a query\n", f"{rc} {out!r} {err!r}")
    with open(os.path.join(a.workdir, db), "rb") as f:
        expect("refused assertions leave the file as it was",
               hashlib.sha256(f.read()).hexdigest() == before)

    # Assertions the recording cannot decide never pass: each is a result of its own on stdout,
    # "UNDECIDED ASSERTION: why and how to record what it needs", and exit 1 (it was "1
    # assertion holds" for --no-leaks on a file with one snapshot); every other assertion is still
    # decided and printed (before, the first undecidable one ended the command with one line on
    # stderr and nothing else).
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
    variant("early.db", "INSERT INTO checkpoints (name, gc, time_ns, thread) VALUES ('early', 0, 5, 7)")
    # recorded with --census off: small objects' allocations only estimated
    variant("censusoff.db", "UPDATE run SET mode = 'sampled', flags = 'samples-followed,census-off'")
    # sampled with the census: every GC's interval counted exactly, the allocations after the
    # last GC (GC 4) only estimated from the samples
    variant("census.db", "UPDATE run SET mode = 'sampled', flags = 'samples-followed';"
                         "UPDATE gcs SET census_objects = 1")
    how = "(take one per GC.Collect() with 'heaplens record', or with 'heaplens snapshot PID')"
    sampled_how = ("and between snapshots a sampled recording follows only its sampled objects; "
                   "take snapshots ('heaplens record --snapshot induced', the default, or "
                   "'heaplens snapshot PID') or record in full mode")
    why = {
        "one.db --no-leaks":
            f"leaks needs at least two heap snapshots to see growth; one.db has 1 {how}",
        "none.db --no-leaks":
            f"leaks needs at least two heap snapshots to see growth; none.db has 0 {how}",
        "none.db --max-retained App.Leak=1G":
            "none.db has no heap snapshot; 'heaplens record' takes one at every GC.Collect() "
            "(--snapshot induced, the default) and 'heaplens snapshot PID' on demand",
        "sampled0.db --max-live App.Leak=100":
            f"sampled0.db has no heap snapshot at GC 4 (its last GC), {sampled_how}",
        "sampled.db --max-live App.Leak=100@a":
            f"sampled.db has no heap snapshot at GC 1 (the last before checkpoint 'a'), {sampled_how}",
        "nogc.db --max-live App.Leak=100":
            "nogc.db has no GC and no heap snapshot, so nothing is known alive (a program that "
            "ends before its first GC can call GC.Collect() before it ends)",
        "early.db --max-live App.Leak=100@early":
            "early.db's checkpoint 'early' was written before its first GC: nothing is known "
            "alive then (a GC.Collect() right before the checkpoint gives it one)",
        "censusoff.db --max-allocated App.Leak=100":
            "censusoff.db was recorded with --census off, where small-object allocations are only "
            "estimated from the samples; record with the census on (the default) or in full mode",
        # 12 counted exactly are within 100, but what came after the last GC is only estimated
        # (it was decided on the estimate before)
        "census.db --max-allocated App.Leaf=100":
            "census.db: 12 allocations of App.Leaf: 12 counted exactly by the census and the "
            "runtime, ~0 estimated from the samples after the last GC, which no census counted; "
            "within the limit of 100, but a type no sample hit reads 0 where only samples tell; "
            "record in full mode, or assert over checkpoints that end before the last GC "
            "(TYPE=N@FROM..TO)",
    }
    # the recording's accuracy note follows, as after any answer (nogc.db lost its GCs' rows)
    notes = {"nogc.db": "note: GCs 1 to 4 of the program's 4 are missing; 4 GCs were lost; "
                        "counts are lower bounds\n"}
    for key, reason in why.items():
        name, assertion = key.split(" ", 1)
        args = assertion.split(" ", 1)
        note = notes.get(name, "")
        want = f"UNDECIDED {assertion}: {reason}\n1 of 1 assertion could not be decided\n{note}"
        rc, out, err = check(*args, file=name)
        expect(f"undecided: {key}", rc == 1 and out == want and err == "",
               f"{rc} {err!r}\n got  {out!r}\n want {want!r}")
        rc, doc, out, err = check_json(*args, file=name)
        row = {"assertion": assertion, "ok": False, "decided": False, "expected": None,
               "found": None, "value": None, "limit": None, "query": None, "undecided": reason}
        expect(f"undecided: {key} --json", rc == 1 and
               err == ("heaplens: " + note if note else "") and
               doc == {"file": name, "ok": False, "assertions": 1, "failed": 0, "undecided": 1,
                       "results": [row]}, f"{rc} {out!r} {err!r}")
    # Undecided and decided assertions mixed: every one is decided that can be, in the order
    # check takes them (--max-live, --max-allocated, --max-retained, --sql, --no-leaks).
    q_none = ("sqlite3 'none.db' \"SELECT count(*) FROM live_objects WHERE gc = (SELECT max(gc) "
              "FROM gcs) AND type = 'App.Leak'\"")
    args = ["--no-leaks", "--sql", "SELECT 1", "--max-retained", "App.Leak=1G", "--max-live",
            "App.Leak=11", "--max-allocated", "App.Leaf=100"]
    want = [
        "FAIL --max-live App.Leak=11: expected at most 11, found 12 objects of App.Leak alive "
        f"after the last GC (no snapshots); see: {q_none}",
        f"UNDECIDED --max-retained App.Leak=1G: {why['none.db --max-retained App.Leak=1G']}",
        "FAIL --sql SELECT 1: expected no row, found 1 row: 1; see: sqlite3 'none.db' \"SELECT 1\"",
        f"UNDECIDED --no-leaks: {why['none.db --no-leaks']}",
        "2 of 5 assertions failed, 2 could not be decided",
    ]
    rc, out, err = check(*args, file="none.db")
    expect("mixed: every assertion decided that can be", rc == 1 and err == "" and
           out.splitlines() == want, f"{rc} {err!r}\n got  {out.splitlines()}\n want {want}")
    rc, doc, out, err = check_json(*args, file="none.db")
    expect("mixed --json", rc == 1 and err == "" and doc.get("ok") is False and
           (doc.get("assertions"), doc.get("failed"), doc.get("undecided")) == (5, 2, 2) and
           [(r["ok"], r["decided"]) for r in doc.get("results", [])] ==
           [(False, True), (True, True), (False, False), (False, True), (False, False)] and
           doc["results"][1]["value"] == 12 and doc["results"][2]["undecided"] ==
           why["none.db --max-retained App.Leak=1G"], f"{rc} {out!r} {err!r}")
    # ... and what the census decides: its exact part alone over the limit fails, saying what it
    # compared; a range of checkpoints that ends before the last GC holds (all counted)
    rc, out, err = check("--max-allocated", "App.Leaf=11", "--max-allocated", "App.Leaf=100@a..c",
                         file="census.db")
    want = ("FAIL --max-allocated App.Leaf=11: expected at most 11, found 12 allocations of "
            "App.Leaf: 12 counted exactly by the census and the runtime, ~0 estimated from the "
            "samples after the last GC, which no census counted (the exact part alone is over the "
            "limit); see: sqlite3 'census.db' \"SELECT round(total(count)) FROM "
            "allocations_estimated_by_type_thread WHERE type = 'App.Leaf'\"\n"
            "1 of 2 assertions failed\n")
    expect("census: the exact part decides", rc == 1 and out == want and err == "",
           f"{rc} {err!r}\n got  {out!r}\n want {want!r}")
    # what can be decided there still is: a snapshot (GCs 3 and 4 of the sampled file) names
    # every live object, and a full recording without snapshots knows every object after its
    # last GC
    for name, args in (("sampled.db", ["--max-live", "App.Leak=12", "--max-live", "App.Leak=12@b"]),
                       ("none.db", ["--max-live", "App.Leak=12"])):
        rc, out, err = check(*args, file=name)
        n = len(args) // 2
        expect(f"decided: {name} {args}", rc == 0 and
               out == f"{n} assertion{'s' if n > 1 else ''} hold{'' if n > 1 else 's'}\n",
               f"{rc} {out!r} {err!r}")

    # An unfinished recording (its writer still at work, or killed): check and export say so as
    # every other command does — check's note after the answer in text, on stderr with --json;
    # export's on stderr, where it says what it wrote (its stdout holds only --json's document).
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
            export = args[0] == "export"
            where = p.stderr if json_flag or export else p.stdout
            expect(f"unfinished: {args + json_flag} says so",
                   p.returncode == 0 and note in where and
                   (not json_flag or len(p.stderr.splitlines()) == 1) and
                   (not export or json_flag or p.stdout == ""),
                   f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    # A recording that lost data or did not end complete holds lower bounds (its note says
    # "counts are lower bounds"): an assertion that holds there is undecided (it was "1
    # assertion holds" for --max-allocated on a recording whose writer was killed with half of
    # the program's allocations), exit 1; one that fails is decided (the lower bound is over the
    # limit already); --sql is the user's own query and answers as it says.
    variant("lossy.db", "UPDATE run SET status = 'truncated', loss = 'writer-lost';"
                        "INSERT OR REPLACE INTO counters VALUES ('allocs_dropped', 100);"
                        "INSERT OR REPLACE INTO counters VALUES ('allocs_dropped_writer', 100)")
    for name in ("lossy.db", "unfinished.db"):
        for args in (["--max-allocated", "Leak=12"], ["--max-live", "App.Leak=12"],
                     ["--max-retained", "Holder=20K"]):
            first = " ".join(args)
            reason = (f"{name} lost data or did not end complete, so what it holds is a lower "
                      f"bound (its note says what: heaplens info '{name}'); it holds on what was "
                      f"kept")
            rc, out, err = check(*args, file=name)
            want = f"UNDECIDED {first}: {reason}\n1 of 1 assertion could not be decided\n"
            expect(f"lower bounds: {name} {args}",
                   rc == 1 and out.startswith(want) and "note: " in out[len(want):] and err == "",
                   f"{rc} {err!r}\n got  {out!r}\n want {want!r}")
            rc, doc, out, err = check_json(*args, file=name)
            row = {"assertion": first, "ok": False, "decided": False, "expected": None,
                   "found": None, "value": None, "limit": None, "query": None,
                   "undecided": reason}
            expect(f"lower bounds: {name} {args} --json",
                   rc == 1 and "note: " in err and
                   doc.get("undecided") == 1 and doc.get("results") == [row],
                   f"{rc} {out!r} {err!r}")
    rc, out, err = check("--max-allocated", "App.Leaf=11", "--sql", "SELECT 1 WHERE 0",
                         "--no-leaks", file="lossy.db")
    expect("lower bounds: a lower bound over the limit fails (and growth seen is growth)",
           rc == 1 and out.startswith("FAIL --max-allocated App.Leaf=11: expected at most 11, "
                                      "found 12 allocations") and
           "FAIL --no-leaks: expected no leak suspect" in out and
           "2 of 3 assertions failed\n" in out and "counts are lower bounds" in out,
           f"{rc} {out!r} {err!r}")
    return leak_fixture.finish()


if __name__ == "__main__":
    sys.exit(main())
