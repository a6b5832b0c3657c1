#!/usr/bin/env python3
"""End-to-end leak-hunting test: record examples/LeakDemo with heaplens and compare.

    check_leaks.py --heaplens build/bin/heaplens \
        --dll build/examples/LeakDemo/LeakDemo.dll --workdir /tmp/leaks

LeakDemo leaks sessions into a registry, keeps a steady cache, warms up a cache and churns,
with one induced GC (one heap snapshot) per iteration, and writes what it did
(examples/README.md). This script records it, then checks, each comparison being one check:

  (a) the recording: complete, nothing dropped; one snapshot per checkpoint, at its GC; each
      snapshot holds exactly the program's live objects of its own types;
  (b) `heaplens leaks --json`: the leaking type ranks first, its holder is the registry, the
      path starts at a GC root, passes through the holder and ends at a leaking object, the
      growth figures equal the program's; the steady cache, the warm-up cache and the churn are
      not suspects;
  (c) `heaplens roots --type <leaking type> --json`: a path through the holder;
  (d) retention is exact on a known sub-graph, in every snapshot: the probe's structure is read
      from snapshot_refs and checked against the program's description, the expected retained
      sizes (and dominators) are computed from the objects' sizes in `objects`, and compared
      with what `heaplens retention` stored, and with `retention --by type` for the probe nodes;
  (e) `heaplens diff --json` between consecutive snapshots: per type of the program, objects
      new, dead and survived equal the program's own counts;
  (f) `heaplens survivors --by age`: the leaked sessions, 200 of each age 1 .. iterations;
  (g) every examples/queries/*.sql runs under the sqlite3 command-line shell without error;
  (h) retained sizes packed per block (retention_blocks and the view `retention`) answer as the
      rows of the table an older heaplens made: a copy of the recording given that table gets
      every snapshot's retained sizes as rows, and every documented query (the views, the
      example queries) and the commands that read them back give the same answers on both.

Python 3 standard library only. Prints every mismatch and a final line "N passed, M failed";
exits 1 if anything failed (2 on usage errors).
"""
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, heaplens_json, recording_given, remove_stale, run  # noqa: E402  (shared e2e helpers)

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def short(name):
    return name.rsplit(".", 1)[-1]


def check_recording(checks, con, truth):
    run_row = con.execute("SELECT status FROM run").fetchone()
    checks.eq("run status", "complete", run_row[0] if run_row else None)
    for name in ("allocs_dropped", "gc_events_dropped", "records_dropped", "gcs_dropped",
                 "snapshots_dropped", "writer_lost"):
        row = con.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        checks.eq(f"counter {name}", 0, row[0] if row else 0)
    snapshots = {}
    for cp in truth["checkpoints"]:
        row = con.execute("SELECT snapshot FROM snapshots WHERE gc = ?", (cp["gc"],)).fetchone()
        if not checks.ok(f"{cp['label']}: a snapshot at GC {cp['gc']}", row is not None):
            continue
        snapshots[cp["label"]] = row[0]
        counts = dict(con.execute(
            "SELECT type, count(*) FROM snapshot_contents WHERE snapshot = ? AND type LIKE ?"
            " GROUP BY type", (row[0], truth["namespace"] + ".%")).fetchall())
        for type_name, alive in cp["alive"].items():
            checks.eq(f"{cp['label']}: {short(type_name)} in the snapshot", alive,
                      counts.get(type_name, 0))
    return snapshots


def check_leaks(checks, heaplens, db, truth, log):
    doc = heaplens_json(checks, heaplens, ["leaks", db], log)
    if not doc:
        return
    rows = doc.get("rows", [])
    leak = truth["leak"]
    if not checks.ok("leaks: at least one suspect", len(rows) > 0):
        return
    first = rows[0]
    checks.eq("leaks: the leaking type ranks first", leak["type"], first.get("type"))
    checks.eq("leaks: its holder", leak["holder"], first.get("holder"))
    n = leak["per_iteration"] * truth["iterations"]
    checks.eq("leaks: growth_count", n, first.get("growth_count"))
    counts = first.get("counts") or []
    expected_counts = [cp["alive"][leak["type"]] for cp in truth["checkpoints"]]
    checks.eq("leaks: live objects per snapshot", expected_counts, counts)
    path = first.get("path") or []
    types = [hop.get("type") for hop in path]
    checks.ok("leaks: the path passes through the holder", leak["holder"] in types, str(types))
    checks.ok("leaks: the path ends at a leaking object",
              bool(types) and types[-1] == leak["type"], str(types))
    checks.ok("leaks: the path starts at a GC root", bool(first.get("roots")), str(first.get("roots")))
    flagged = {r["type"] for r in rows if r.get("flagged")}
    for type_name, why in truth["not_leaks"].items():
        checks.ok(f"leaks: {short(type_name)} is not a suspect ({why})", type_name not in flagged)
    return first


def check_leak_bytes(checks, con, first, truth):
    if not first:
        return
    leak = truth["leak"]["type"]
    sizes = con.execute("SELECT DISTINCT o.size FROM objects o JOIN types t ON t.id = o.type_id"
                        " WHERE t.name = ?", (leak,)).fetchall()
    if checks.eq(f"one size for every {short(leak)}", 1, len(sizes)):
        n = truth["leak"]["per_iteration"] * truth["iterations"]
        checks.eq("leaks: growth_bytes", n * sizes[0][0], first.get("growth_bytes"))


def check_roots(checks, heaplens, db, truth, log):
    leak = truth["leak"]
    doc = heaplens_json(checks, heaplens, ["roots", db, "--type", leak["type"]], log)
    if not doc:
        return
    rows = doc.get("rows", [])
    if not checks.ok("roots: a path", len(rows) == 1):
        return
    types = [hop.get("type") for hop in rows[0].get("path", [])]
    checks.ok("roots: through the holder", leak["holder"] in types, str(types))
    checks.eq("roots: to a leaking object", leak["type"], types[-1] if types else None)
    checks.ok("roots: the root is named", bool(rows[0].get("roots")))


def probe_expected(checks, con, snapshot, probe, label):
    """The probe's objects, read from the snapshot and checked against the program's
    description; returns ({object id: (expected retained bytes, expected retained count,
    expected dominator id)}, [node ids]) or None."""
    def one(type_name):
        rows = con.execute("SELECT object_id, size FROM snapshot_contents"
                           " WHERE snapshot = ? AND type = ?", (snapshot, type_name)).fetchall()
        checks.eq(f"{label}: one {short(type_name)}", 1, len(rows))
        return rows[0] if len(rows) == 1 else None

    def refs(obj):
        return con.execute("SELECT to_id, to_type, to_size FROM snapshot_references"
                           " WHERE snapshot = ? AND from_id = ?", (snapshot, obj)).fetchall()

    holder, shared = one(probe["holder"]), one(probe["shared"])
    if not holder or not shared:
        return None
    out = refs(holder[0])
    arrays = [r for r in out if r[1] == probe["array"]]
    if not checks.eq(f"{label}: the probe references its array", 1, len(arrays)):
        return None
    array_id, _, array_size = arrays[0]
    checks.eq(f"{label}: the array's size", probe["array_size"], array_size)
    nodes = [r for r in refs(array_id) if r[1] == probe["node"]]
    checks.eq(f"{label}: the array references the nodes", probe["nodes"], len(nodes))
    expected = {}
    node_retained = {}
    for node_id, _, node_size in nodes:
        out = refs(node_id)
        payloads = [r for r in out if r[1] == probe["payload_type"]]
        if not checks.eq(f"{label}: node {node_id} has one payload", 1, len(payloads)):
            return None
        payload_id, _, payload_size = payloads[0]
        if not checks.ok(f"{label}: node {node_id}'s payload size is one of the program's",
                         payload_size in probe["payload_sizes"], str(payload_size)):
            return None
        index = probe["payload_sizes"].index(payload_size)
        to_shared = [r for r in out if r[0] == shared[0]]
        checks.eq(f"{label}: node {index} references the shared object",
                  index in probe["shared_by"], bool(to_shared))
        node_retained[node_id] = node_size + payload_size
        expected[node_id] = (node_size + payload_size, 2, array_id)
        expected[payload_id] = (payload_size, 1, node_id)
    blobs = [r for r in refs(shared[0]) if r[1] == probe["payload_type"]]
    if not checks.eq(f"{label}: the shared object has its blob", 1, len(blobs)):
        return None
    checks.eq(f"{label}: the blob's size", probe["shared_blob_size"], blobs[0][2])
    shared_retained = shared[1] + blobs[0][2]
    expected[shared[0]] = (shared_retained, 2, array_id)  # both paths to it go through the array
    expected[blobs[0][0]] = (blobs[0][2], 1, shared[0])
    array_retained = array_size + sum(node_retained.values()) + shared_retained
    array_count = 1 + 2 * len(nodes) + 2
    expected[array_id] = (array_retained, array_count, holder[0])
    expected[holder[0]] = (holder[1] + array_retained, array_count + 1, None)
    return expected, [n[0] for n in nodes]


def check_retention(checks, heaplens, db, con, truth, snapshots, log):
    probe = truth["probe"]
    for label, snapshot in snapshots.items():
        rc, _, err = run([heaplens, "retention", db, "--snapshot", str(snapshot)], log=log)
        if not checks.ok(f"{label}: heaplens retention runs", rc == 0, err.strip()[:300]):
            continue
        found = probe_expected(checks, con, snapshot, probe, label)
        if not found:
            continue
        expected, node_ids = found
        for obj, (retained, count, dominator) in expected.items():
            row = con.execute("SELECT retained_bytes, retained_count, idom_id FROM retention"
                              " WHERE snapshot = ? AND object_id = ?", (snapshot, obj)).fetchone()
            got = tuple(row) if row else None
            want = (retained, count)
            checks.eq(f"{label}: object {obj} retains", want, got[:2] if got else None)
            if dominator is not None:
                checks.eq(f"{label}: object {obj}'s dominator", dominator, got[2] if got else None)
        # the large retainers stored apart (retention_top): the rows of `retention` retaining
        # 64 KiB or more with their objects' types and sizes, and the element types the listing
        # computed from the graph equal to those it computes from `retention` and `objects`
        top = con.execute("SELECT object_id, type_id, shallow_bytes, retained_bytes,"
                          " retained_count FROM retention_top WHERE snapshot = ?"
                          " ORDER BY object_id", (snapshot,)).fetchall()
        rows = con.execute("SELECT r.object_id, coalesce(o.type_id, 0), coalesce(o.size, 0),"
                           " r.retained_bytes, r.retained_count FROM retention r"
                           " LEFT JOIN objects o ON o.id = r.object_id"
                           " WHERE r.snapshot = ? AND r.retained_bytes >= 65536"
                           " ORDER BY r.object_id", (snapshot,)).fetchall()
        checks.ok(f"{label}: retention_top holds the rows of retention retaining 64 KiB or more",
                  top == rows and len(rows) > 0, f"{len(top)} rows, retention {len(rows)}")
        n = len(top)
        listed = heaplens_json(checks, heaplens,
                               ["retention", db, "--snapshot", str(snapshot), "--top", str(n)], log)
        joined = heaplens_json(checks, heaplens, ["retention", db, "--snapshot", str(snapshot),
                                                  "--top", str(n + 1)], log)
        if listed and joined:
            checks.ok(f"{label}: the largest retainers from retention_top equal those from"
                      " retention joined with objects",
                      listed["rows"] == joined["rows"][:n], "rows differ")
        # the nodes as a type: the sum of the nodes' own subtrees
        doc = heaplens_json(checks, heaplens,
                            ["retention", db, "--snapshot", str(snapshot), "--by", "type",
                             "--top", "1000000"], log)
        if doc:
            rows = {r["type"]: r for r in doc["rows"]}
            node = rows.get(probe["node"], {})
            nodes_retained = sum(expected[n][0] for n in node_ids)
            checks.eq(f"{label}: retention --by type, {short(probe['node'])} retained",
                      nodes_retained, node.get("retained_bytes"))
            checks.eq(f"{label}: retention --by type, {short(probe['node'])} count",
                      probe["nodes"], node.get("count"))


def check_diff(checks, heaplens, db, truth, snapshots, log):
    cps = truth["checkpoints"]
    for before, after in zip(cps, cps[1:]):
        s1, s2 = snapshots.get(before["label"]), snapshots.get(after["label"])
        if s1 is None or s2 is None:
            continue
        doc = heaplens_json(checks, heaplens,
                            ["diff", db, "--from", str(s1), "--to", str(s2), "--all"], log)
        if not doc:
            continue
        rows = {r["type"]: r for r in doc.get("rows", [])}
        for type_name in after["new"]:
            row = rows.get(type_name, {})
            got = (row.get("new", 0), row.get("dead", 0), row.get("survived", 0))
            want = (after["new"][type_name], after["dead"][type_name], after["survived"][type_name])
            checks.eq(f"diff {before['label']} -> {after['label']}: {short(type_name)} "
                      "new/dead/survived", want, got)


def check_age(checks, heaplens, db, truth, log):
    last = truth["checkpoints"][-1]
    doc = heaplens_json(checks, heaplens,
                        ["survivors", db, "--gc", str(last["gc"]), "--by", "age"], log)
    if not doc:
        return
    leak = truth["leak"]
    ages = {}
    for r in doc.get("rows", []):
        if r["type"] == leak["type"]:
            ages[r["age"]] = ages.get(r["age"], 0) + r["count"]
    want = {age: leak["per_iteration"] for age in range(1, truth["iterations"] + 1)}
    checks.eq(f"survivors --by age: {short(leak['type'])} per age", want, ages)


def check_queries(checks, db, log):
    files = sorted(glob.glob(os.path.join(SOURCE_DIR, "examples", "queries", "*.sql")))
    checks.ok("examples/queries has queries", len(files) >= 6, str(len(files)))
    shell = shutil.which("sqlite3")
    for path in files:
        name = os.path.basename(path)
        if shell:
            with open(path) as f:
                p = subprocess.run([shell, "-bail", "-header", "-column", db], stdin=f,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            with open(log, "a") as lf:
                lf.write(f"$ sqlite3 {db} < {name}\n[exit {p.returncode}]\n{p.stdout}{p.stderr}\n")
            checks.ok(f"sqlite3 < {name}", p.returncode == 0 and not p.stderr.strip(),
                      p.stderr.strip()[:300])
            if name == "top_retainers.sql":
                checks.ok("top_retainers.sql names the leak's holder",
                          "SessionRegistry" in p.stdout)
        else:  # no shell: the same SQL through the library, and say so
            try:
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                con.executescript(open(path).read())
                con.close()
                checks.ok(f"{name} (sqlite3 module; no sqlite3 shell found)", True)
            except sqlite3.Error as e:
                checks.ok(f"{name} (sqlite3 module)", False, str(e))


RETENTION_ROWS_TABLE = ("CREATE TABLE retention (snapshot INTEGER NOT NULL, object_id INTEGER"
                        " NOT NULL, idom_id INTEGER, retained_bytes INTEGER NOT NULL,"
                        " retained_count INTEGER NOT NULL, PRIMARY KEY (snapshot, object_id))"
                        " WITHOUT ROWID")


def rows_copy(db, workdir):
    """A copy of the fresh recording with the table `retention` an older heaplens made."""
    rows = os.path.join(workdir, "leakdemo-rows.db")
    remove_stale(rows)
    shutil.copyfile(db, rows)
    con = sqlite3.connect(rows)
    con.execute(RETENTION_ROWS_TABLE)
    con.commit()
    con.close()
    return rows


def check_retention_forms(checks, heaplens, db, rows, snapshots, log):
    for path in (db, rows):
        for snapshot in snapshots.values():
            rc, _, err = run([heaplens, "retention", path, "--snapshot", str(snapshot)], log=log)
            checks.ok(f"(h) retention --snapshot {snapshot} on {os.path.basename(path)}", rc == 0,
                      err.strip()[:300])
    a = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    b = sqlite3.connect(f"file:{rows}?mode=ro", uri=True)
    kinds = [x[0] for x in a.execute("SELECT type FROM sqlite_schema WHERE name = 'retention'")]
    checks.eq("(h) retention is a view over retention_blocks", ["view"], kinds)
    kinds = [x[0] for x in b.execute("SELECT type FROM sqlite_schema WHERE name = 'retention'")]
    checks.eq("(h) the older file's retention stays a table", ["table"], kinds)
    queries = [
        "SELECT * FROM retention ORDER BY snapshot, object_id",
        "SELECT * FROM retained_objects ORDER BY snapshot, object_id",
        "SELECT * FROM retained_by_type ORDER BY snapshot, type",
        "SELECT * FROM snapshot_root_objects ORDER BY snapshot, object_id, kind, root_id",
        "SELECT snapshot, count(*), sum(retained_bytes), count(idom_id) FROM retention"
        " GROUP BY snapshot",
    ]
    for sql in queries:
        got, want = a.execute(sql).fetchall(), b.execute(sql).fetchall()
        checks.ok(f"(h) packed = rows: {' '.join(sql.split())[:70]}", got == want and want,
                  f"{len(got)} rows, {len(want)}")
    shell = shutil.which("sqlite3")
    for name in ("top_retainers.sql", "dominator_chain.sql", "strong_handles_never_freed.sql"):
        if not shell:  # the files hold several statements: the shell runs them
            checks.ok(f"(h) {name}: no sqlite3 shell found, not compared", True)
            continue
        out = []
        for path in (db, rows):
            with open(os.path.join(SOURCE_DIR, "examples", "queries", name)) as f:
                p = subprocess.run([shell, "-bail", "-header", "-column", path], stdin=f,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out.append((p.returncode, p.stdout, p.stderr))
        # LeakDemo is recorded without --handles: no strong handle to list
        checks.ok(f"(h) packed = rows: sqlite3 < {name}", out[0] == out[1] and out[1][0] == 0 and
                  (out[1][1].strip() or name == "strong_handles_never_freed.sql"),
                  f"{out[0][2].strip()[:200]} / {out[1][2].strip()[:200]}")
    a.close()
    b.close()
    last = str(max(snapshots.values()))
    for args in (["retention", "--snapshot", last, "--top", "100"],
                 ["retention", "--snapshot", last, "--by", "type"],
                 ["roots", "--type", "HeapLens.Examples.Leaks.LeakedSession"], ["leaks"]):
        x = heaplens_json(checks, heaplens, args[:1] + [db] + args[1:], log)
        y = heaplens_json(checks, heaplens, args[:1] + [rows] + args[1:], log)
        checks.ok(f"(h) packed = rows: heaplens {' '.join(args)}", x is not None and x == y)


def check_report(checks, heaplens, db, workdir, log):
    """The report shows what `heaplens leaks` and `heaplens retention` show: the same rows."""
    doc = heaplens_json(checks, heaplens, ["report", db], log)
    leaks = heaplens_json(checks, heaplens, ["leaks", db], log)
    retention = heaplens_json(checks, heaplens, ["retention", db, "--top", "10"], log)
    if not doc or not leaks or not retention:
        return
    snaps = doc.get("snapshots") or {}
    last = snaps.get("last") or {}
    checks.eq("report: the last snapshot", retention["snapshot"], last.get("snapshot"))
    checks.eq("report: the last snapshot's GC", retention["gc"], last.get("gc"))
    suspects = doc.get("leak_suspects") or {}
    checks.eq("report: leak suspects as 'heaplens leaks --json'", leaks, suspects)
    retainers = doc.get("retainers") or {}
    checks.eq("report: top retainers as 'heaplens retention --json --top 10'",
              retention["rows"], retainers.get("rows"))
    page = os.path.join(workdir, "report.html")
    rc, _, err = run([heaplens, "report", db, "-o", page], log=log)
    if not checks.ok("report: the page is written", rc == 0 and os.path.exists(page), err.strip()):
        return
    # rendered by a real browser (the page builds its tables from the embedded document)
    browser = shutil.which("chromium") or "/usr/bin/chromium"
    if not checks.ok("report: chromium is installed (scripts/test.sh installs it)",
                     os.path.exists(browser), browser):
        return
    profile = tempfile.mkdtemp(dir=workdir, prefix="chromium-")
    rc, dom, err = run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                        "--dump-dom", "file://" + os.path.abspath(page)], log=log)
    shutil.rmtree(profile, ignore_errors=True)
    checks.ok("report: the page renders without script errors",
              rc == 0 and "Uncaught" not in err, err.strip()[-500:])
    suspects_html = dom.split('id="leak-table"', 1)[-1].split("</table>", 1)[0]
    retainers_html = dom.split('id="retainer-table"', 1)[-1].split("</table>", 1)[0]
    flagged = [r for r in leaks["rows"] if r["flagged"]]
    checks.eq("report: one suspects row per flagged suspect", len(flagged),
              suspects_html.count("<tr data-type="))
    checks.ok("report: the first suspect row is the leak",
              flagged and f'<tr data-type="{flagged[0]["type"]}"' in suspects_html)
    checks.eq("report: one retainers row per top retainer", len(retention["rows"]),
              retainers_html.count("<tr data-object="))


def main():
    ap = arguments(__doc__.split("\n")[0], dll_required=False, timeout=300,
                   dll_help="path of LeakDemo.dll (not needed with --db)")
    ap.add_argument("--db", help="check this existing recording instead (needs --truth)")
    ap.add_argument("--truth", help="ground truth JSON of the --db recording")
    a, checks, log = begin(ap)
    if recording_given(ap, a):
        db, truth_path = a.db, a.truth
    else:
        db = os.path.join(a.workdir, "leakdemo.db")
        truth_path = os.path.join(a.workdir, "truth.json")
        remove_stale(db, truth_path)
        rc, out, err = run([a.heaplens, "record", "-q", "-o", db, "--", a.dotnet, a.dll, truth_path],
                           log=log, timeout=a.timeout)
        checks.eq("LeakDemo recorded (exit status)", 0, rc)
    if not checks.ok("truth written", os.path.exists(truth_path)) or \
            not checks.ok("database written", os.path.exists(db)):
        checks.summary()
        return 1
    with open(truth_path) as f:
        truth = json.load(f)

    # heaplens stores retained sizes in the file: work on it, read it with a second connection
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = rows_copy(db, a.workdir)
    snapshots = check_recording(checks, con, truth)
    first = check_leaks(checks, a.heaplens, db, truth, log)
    check_leak_bytes(checks, con, first, truth)
    check_roots(checks, a.heaplens, db, truth, log)
    check_retention(checks, a.heaplens, db, con, truth, snapshots, log)
    check_diff(checks, a.heaplens, db, truth, snapshots, log)
    check_age(checks, a.heaplens, db, truth, log)
    check_queries(checks, db, log)
    check_report(checks, a.heaplens, db, a.workdir, log)
    check_retention_forms(checks, a.heaplens, db, rows, snapshots, log)
    con.close()
    return checks.summary(f" (log: {log})")


if __name__ == "__main__":
    sys.exit(main())
