#!/usr/bin/env python3
"""heaplens import / export of .gcdump files, against dotnet-gcdump itself.

import: examples/AttachTarget, started WITHOUT heaplens and leaking nothing on its own (rate 0),
  leaks exactly 5,000 LeakedRecord on command (held by its static List<LeakedRecord>);
  `dotnet-gcdump collect -p PID` writes a .gcdump; `heaplens import` makes a database of it:
  per type, the objects' count equals `dotnet-gcdump report`'s (its rows of one type in several
  size buckets, " (Bytes > 10K)", summed), the report's bytes (the size of the type's first
  object) are the size of one of heaplens' objects of that type, the total bytes equal "GC Heap
  bytes"; 5,000 LeakedRecord (the program's own count); `retention` puts the List first with
  5,000 records under it, `roots --type AttachTarget.LeakedRecord` goes through it;
  `snapshots`, `info`, `report` run; a truncated and a corrupted copy: one line, exit 1, no file.
leaks across imports: two more dumps after 5,000 records more each, imported; `leaks FIRST.db
  --with SECOND.db THIRD.db` finds LeakedRecord growing 5,000 / 10,000 / 15,000, by type.
export: the imported snapshot, and a snapshot heaplens recorded of the same program (`record`,
  the program's GC.Collect), written with `heaplens export --gcdump` and read by
  `dotnet-gcdump report`: per type, its counts are heaplens' own (snapshot_contents); the
  export imported again and diffed with the first import: the note that ids mean nothing.

Python 3 standard library only; the program is driven by its stdin/stdout lines."""
import argparse
import collections
import os
import re
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402

BUCKET = re.compile(r" \(Bytes > (1K|10K|100K|1M|10M|100M)\)$")
ROW = re.compile(r"^\s*([\d,]+)\s+([\d,]+)  (.*?)(?:  \[[^\]]*\])?$")


def report(checks, tool, path, log):
    """dotnet-gcdump report PATH -> (total bytes, {type: [count, [bytes...]]}) or None."""
    rc, out, err = e2elib.run([tool, "report", path], log=log)
    if not checks.ok(f"dotnet-gcdump report {os.path.basename(path)} runs", rc == 0,
                     f"exit {rc}: {err.strip()[:300]}"):
        return None
    total, types, rows, unparsed = None, collections.defaultdict(lambda: [0, []]), False, []
    for line in out.splitlines():
        if line.strip().endswith("GC Heap bytes"):
            total = int(line.split()[0].replace(",", ""))
        elif line.strip().startswith("Object Bytes"):
            rows = True
        elif rows and line.strip():
            m = ROW.match(line)
            if not m:
                unparsed.append(line)
                continue
            name = BUCKET.sub("", m.group(3))
            types[name][0] += int(m.group(2).replace(",", ""))
            types[name][1].append(int(m.group(1).replace(",", "")))
    checks.ok(f"every row of the report of {os.path.basename(path)} parsed", not unparsed,
              repr(unparsed[:3]))
    return total, types


def heaplens_types(db, snapshot):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT coalesce(type, '<unknown>'), count(*), min(size), max(size), "
                       "sum(size) "
                       "FROM snapshot_contents WHERE snapshot = ? GROUP BY type",
                       (snapshot,)).fetchall()
    con.close()
    return {r[0]: r[1:] for r in rows}


def compare(checks, what, rep, ours, sizes):
    total, theirs = rep
    counts = {t: v[0] for t, v in theirs.items()}
    mine = {t: v[0] for t, v in ours.items()}
    diff = {t: (counts.get(t), mine.get(t)) for t in set(counts) | set(mine)
            if counts.get(t) != mine.get(t)}
    checks.ok(f"{what}: per-type counts equal dotnet-gcdump report's ({len(mine)} types)",
              not diff, f"{len(diff)} differ (report, heaplens): "
              + ", ".join(f"{t}: {v}" for t, v in sorted(diff.items())[:8]))
    checks.eq(f"{what}: total bytes = GC Heap bytes", total, sum(v[3] for v in ours.values()))
    if sizes:
        bad = [t for t, v in theirs.items() if t in ours and
               not all(ours[t][1] <= b <= ours[t][2] for b in v[1])]
        checks.ok(f"{what}: the report's bytes per type are sizes of heaplens' objects", not bad,
                  ", ".join(bad[:8]))


class Target:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  bufsize=1)
        ready = self.p.stdout.readline().split()
        self.pid = int(ready[1]) if len(ready) == 2 and ready[0] == "ready" else None

    def ask(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()


def leaks_across(checks, a, db, dumps, log):
    """`leaks FIRST.db --with SECOND.db THIRD.db` on three imports of one process, 5,000 records
    more each time: LeakedRecord is a suspect with the program's counts, per type, and the
    output says a .gcdump has no object identity."""
    dbs = [db]
    for dump in dumps:
        dbs.append(dump[:-len(".gcdump")] + ".db")
        rc, out, err = e2elib.run([a.heaplens, "import", dump, "-o", dbs[-1]], log=log)
        checks.ok(f"heaplens import {os.path.basename(dump)}", rc == 0, err)
    doc = e2elib.heaplens_json(checks, a.heaplens, ["leaks", db, "--with"] + dbs[1:], log)
    if doc is None:
        return
    rows = {r["type"]: r for r in doc["rows"]}
    leaked = rows.get("AttachTarget.LeakedRecord", {})
    checks.ok("leaks across imports: LeakedRecord is a suspect", leaked.get("flagged") is True,
              str(leaked))
    checks.eq("leaks across imports: LeakedRecord per file", [5000, 10000, 15000],
              leaked.get("counts"))
    checks.eq("leaks across imports: the files in order", dbs, [f["file"] for f in doc["files"]])
    # every type that grew (--all): LeakedRecord first and the only suspect; the runtime's own
    # types that appear once between two dumps and then stay are not
    doc_all = e2elib.heaplens_json(checks, a.heaplens, ["leaks", db, "--with"] + dbs[1:] + ["--all"],
                                   log)
    if doc_all is not None:
        checks.eq("leaks across imports --all: LeakedRecord first, the only one flagged",
                  ["AttachTarget.LeakedRecord"], [r["type"] for r in doc_all["rows"] if r["flagged"]])
        checks.eq("leaks across imports --all: LeakedRecord ranked first", "AttachTarget.LeakedRecord",
                  doc_all["rows"][0]["type"] if doc_all["rows"] else None)
    checks.ok("leaks across imports: says a .gcdump has no object identity",
              "a .gcdump has no object identity" in doc.get("note", ""), doc.get("note"))
    rc, out, err = e2elib.run([a.heaplens, "leaks", db, "--with"] + dbs[1:], log=log)
    checks.ok("leaks across imports (text): LeakedRecord ranked, 5,000 10,000 15,000, the note",
              rc == 0 and re.search(r"\n\s+\d+\s+\+10,000 .*5,000 10,000 15,000\s+"
                                    r"AttachTarget\.LeakedRecord\n", out) is not None and
              "no object identity" in out + err, out[-800:] + err)
    rc, out, err = e2elib.run([a.heaplens, "leaks", db, "--with"], log=log)
    checks.ok("leaks --with and no file: exit 1, one line", rc == 1 and
              len(err.strip().splitlines()) == 1, f"exit {rc}: {err!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--gcdump-tool", required=True, help="the dotnet-gcdump executable")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("program", nargs="+", help="the command running AttachTarget")
    a = ap.parse_args()
    checks = e2elib.Checks(a.verbose)
    log = e2elib.start_log(a.workdir)
    dump = os.path.join(a.workdir, "target.gcdump")
    db = os.path.join(a.workdir, "target.db")
    e2elib.remove_stale(dump, db)
    env_clean = {k: v for k, v in os.environ.items() if not k.startswith(("CORECLR_", "DOTNET_"))}
    os.environ.clear()
    os.environ.update(env_clean)

    # import
    t = Target(a.program + ["0"])
    if not checks.ok("AttachTarget started", t.pid is not None):
        return checks.summary()
    checks.eq("the program leaked 5000 records", "count 5000", t.ask("leak 5000"))
    rc, out, err = e2elib.run([a.gcdump_tool, "collect", "-p", str(t.pid), "-o", dump], log=log,
                              timeout=300)
    checks.ok("dotnet-gcdump collect", rc == 0 and os.path.exists(dump), f"exit {rc}: {err[:300]}")
    # two more dumps, 5,000 records more each: leaks across the imported files
    more = []
    for n in (10000, 15000):
        checks.eq(f"the program leaked {n} records", f"count {n}", t.ask("leak 5000"))
        more.append(os.path.join(a.workdir, f"target-{n}.gcdump"))
        e2elib.remove_stale(more[-1], more[-1][:-len(".gcdump")] + ".db")
        rc, out, err = e2elib.run([a.gcdump_tool, "collect", "-p", str(t.pid), "-o", more[-1]],
                                  log=log, timeout=300)
        checks.ok(f"dotnet-gcdump collect at {n}", rc == 0 and os.path.exists(more[-1]),
                  f"exit {rc}: {err[:300]}")
    checks.ok("the program verified its records", t.ask("stop").startswith("verified 15000"))
    t.p.wait(timeout=120)
    rc, out, err = e2elib.run([a.heaplens, "import", dump, "-o", db], log=log)
    if not checks.ok("heaplens import", rc == 0 and os.path.exists(db), f"exit {rc}: {err}"):
        return checks.summary()
    rep = report(checks, a.gcdump_tool, dump, log)
    ours = heaplens_types(db, 1)
    if rep:
        compare(checks, "import", rep, ours, True)
    checks.eq("5000 LeakedRecord imported", 5000,
              ours.get("AttachTarget.LeakedRecord", [0])[0])
    leaks_across(checks, a, db, more, log)
    info = e2elib.heaplens_json(checks, a.heaplens, ["info", db], log)
    if info:
        checks.eq("run.mode", "import", (info.get("run") or info).get("mode"))
    snaps = e2elib.heaplens_json(checks, a.heaplens, ["snapshots", db], log)
    if snaps:
        rows = snaps["rows"]
        checks.ok("one snapshot, trigger import", len(rows) == 1 and rows[0]["trigger"] == "import",
                  str(rows))
    ret = e2elib.heaplens_json(checks, a.heaplens, ["retention", db, "--top", "3"], log)
    if ret:
        top = ret["rows"][0] if ret.get("rows") else {}
        checks.ok("retention: the List<LeakedRecord> retains most, with the 5000 records",
                  top.get("type") == "System.Collections.Generic.List<AttachTarget.LeakedRecord>"
                  and top.get("retained_count", 0) >= 5002, str(top)[:300])
    rc, out, err = e2elib.run([a.heaplens, "roots", db, "--type", "AttachTarget.LeakedRecord"],
                              log=log)
    checks.ok("roots: the path goes through the List<LeakedRecord>",
              rc == 0 and "System.Collections.Generic.List<AttachTarget.LeakedRecord>" in out,
              out[-400:] + err)
    rc, out, err = e2elib.run([a.heaplens, "report", db, "-o",
                               os.path.join(a.workdir, "report.html")], log=log)
    checks.ok("report", rc == 0, err)

    # damaged files: one line, exit 1, nothing written
    data = open(dump, "rb").read()
    for name, damaged in (("truncated", data[:len(data) // 2]),
                          ("corrupted", data[:200] + bytes(b ^ 0x5a for b in data[200:260])
                           + data[260:])):
        bad, bad_db = (os.path.join(a.workdir, f"{name}.gcdump"),
                       os.path.join(a.workdir, f"{name}.db"))
        e2elib.remove_stale(bad_db)
        open(bad, "wb").write(damaged)
        rc, out, err = e2elib.run([a.heaplens, "import", bad, "-o", bad_db], log=log)
        checks.ok(f"import of a {name} file: exit 1, one line, no database",
                  rc == 1 and len(err.strip().splitlines()) == 1 and not os.path.exists(bad_db),
                  f"exit {rc}: {err!r}")

    # export: the imported snapshot, and a recorded one
    out_dump = os.path.join(a.workdir, "reexport.gcdump")
    e2elib.remove_stale(out_dump)
    rc, out, err = e2elib.run([a.heaplens, "export", db, "--gcdump", out_dump], log=log)
    if checks.ok("heaplens export of the import", rc == 0, err):
        rep = report(checks, a.gcdump_tool, out_dump, log)
        if rep:
            compare(checks, "export of the import", rep, ours, False)
        # ... imported again: diff --to-file compares per type and says ids mean nothing
        again = os.path.join(a.workdir, "reexport.db")
        e2elib.remove_stale(again)
        rc, out, err = e2elib.run([a.heaplens, "import", out_dump, "-o", again], log=log)
        checks.ok("import of the export", rc == 0, err)
        rc, out, err = e2elib.run([a.heaplens, "diff", db, "--to-file", again], log=log)
        checks.ok("diff --to-file of two imports says they have no identity",
                  rc == 0 and "imported from a .gcdump, which has no object identity" in out,
                  out[-300:] + err)
    rec = os.path.join(a.workdir, "recorded.db")
    rec_dump = os.path.join(a.workdir, "recorded.gcdump")
    e2elib.remove_stale(rec, rec_dump)
    p = subprocess.run([a.heaplens, "record", "-q", "-o", rec, "--"] + a.program + ["0"],
                       input="leak 3000\ngc\nstop\n", stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    checks.ok("heaplens record of the program", p.returncode == 0, p.stderr[-400:])
    rc, out, err = e2elib.run([a.heaplens, "export", rec, "--gcdump", rec_dump], log=log)
    if checks.ok("heaplens export of a recorded snapshot", rc == 0, err):
        con = sqlite3.connect(f"file:{rec}?mode=ro", uri=True)
        last = con.execute("SELECT max(snapshot) FROM snapshots").fetchone()[0]
        con.close()
        ours = heaplens_types(rec, last)
        checks.eq("the recorded snapshot holds the 3000 records", 3000,
                  ours.get("AttachTarget.LeakedRecord", [0])[0])
        rep = report(checks, a.gcdump_tool, rec_dump, log)
        if rep:
            compare(checks, "export of a recording", rep, ours, False)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
