#!/usr/bin/env python3
"""End-to-end test of snapshots that explain themselves: record examples/Inspections twice and
compare with the program's own ground truth.

    check_inspections.py --heaplens build/bin/heaplens --dotnet dotnet \
        --dll build/examples/Inspections/Inspections.dll --workdir /tmp/inspect

`grow` run (a static registry whose List field gains 100 sessions per snapshot):
  (a) `heaplens leaks --json`: the session type ranks first; its path starts at the static
      SessionRegistry.Instance and names every field: SessionRegistry._sessions ->
      List<Session>._items -> Session[][i] -> Session, i an element the array holds;
  (b) `heaplens roots --type Session --json`: the same root and fields; the text says
      "root: static SessionRegistry.Instance";
  (c) the last snapshot in SQL (snapshot_ref_fields, snapshot_statics): the Holder's references
      are exactly its five fields by name; Copies' references are elements 0 .. copies-1; each
      sparse array's are the elements i % every == 0; the statics Program.s_holder,
      SessionRegistry.Instance and Ticker.Tick are named, and Ticker.Tick's delegate holds the
      subscribers' handlers.
  (d) `heaplens inspect --json`: the duplicate string (5,000 copies, all but one wasted), the
      empty List<int> and Dictionary<int, int> counts, the sparse Node?[] arrays (count, fill,
      wasted bytes), the static event's 1,000 handlers and their target type, ranked by bytes;
      the finalizable objects (Finalizable: 50, none waiting; Resurrected: 20) and the 20
      Resurrected objects finalized and reachable again; in the first snapshot the 20 waiting
      for their finalizer; the under-filled List<int> (10 of 1,000) and Dictionary<int, int>
      (10 of its capacity), each by its own count (schema 8, snapshot_collections);
  (e) stack roots name their frame's method: Program.Main holds objects (root_methods), and
      `roots --json` of an object Main's frame holds says "method";
  (f) thread statics: every snapshot names PerThread.t_payload once per worker thread (by its
      OS id and its name), each slot holding that worker's Payload (its Tag "payload-N");
  (g) a stack root's thread: each worker holds an object of its own type HeldByWorkerN only in
      a local variable; `roots --type HeldByWorkerN` (text and --json) says its stack root is
      on that worker's thread (OS id and name), in every snapshot by SQL.
`--no-strings` run: snapshot_strings has lengths and hashes, no characters; inspect still finds
the duplicates, without their value.
`steady` run (three snapshots of a heap that does not change): `heaplens leaks` finds no
suspect.
`attach` run (the program started without heaplens, its workers and PerThread's class loaded
before `heaplens attach --duration 2`): both snapshots of the session name the thread static of
every worker as in (f) (by OS id: a thread named before an attach has its OS name, 15 bytes).

Python 3 standard library only. Prints every mismatch and a final line "N passed, M failed";
exits 1 if anything failed.
"""
import json
import os
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, heaplens_json, program, record, remove_db, run  # noqa: E402


def check_path(checks, what, row, truth):
    """A path as the issue wants it: the static, then each hop's field."""
    roots = row.get("roots") or []
    checks.eq(f"{what}: the root is the static", [{"kind": "static", "static": truth["registry_static"]}],
              roots)
    hops = row.get("path") or []
    types = [h.get("type") for h in hops]
    checks.eq(f"{what}: the hops' types",
              [truth["registry_type"], truth["list_type"], truth["array_type"], truth["session_type"]],
              types)
    if len(hops) != 4:
        return
    checks.eq(f"{what}: SessionRegistry's field", "_sessions", hops[0].get("field"))
    checks.eq(f"{what}: List's field", "_items", hops[1].get("field"))
    index = hops[2].get("index")
    checks.ok(f"{what}: the array's element is an index among the sessions",
              isinstance(index, int) and 0 <= index < truth["checkpoints"][-1]["sessions"], repr(index))
    checks.ok(f"{what}: the last hop holds nothing named", "field" not in hops[3] and "index" not in hops[3],
              repr(hops[3]))


def check_grow(checks, a, log, workdir):
    db = os.path.join(workdir, "grow.db")
    truth_path = os.path.join(workdir, "grow.json")
    rc = record(a, db, truth_path, ["grow"], log, record_options=["-q"])
    checks.eq("grow: recorded (exit status)", 0, rc)
    if not checks.ok("grow: truth written", os.path.exists(truth_path)):
        return
    with open(truth_path) as f:
        truth = json.load(f)

    doc = heaplens_json(checks, a.heaplens, ["leaks", db], log)
    rows = doc.get("rows", []) if doc else []
    if checks.ok("leaks: a suspect", len(rows) >= 1):
        checks.eq("leaks: the sessions rank first", truth["session_type"], rows[0].get("type"))
        checks.eq("leaks: growth", truth["checkpoints"][-1]["sessions"] - truth["checkpoints"][0]["sessions"],
                  rows[0].get("growth_count"))
        check_path(checks, "leaks", rows[0], truth)
    rc, out, err = run([a.heaplens, "leaks", db, "--top", "1"], log=log)
    expected = (f"path:    static SessionRegistry.Instance -> SessionRegistry._sessions -> "
                f"List<Session>._items -> Session[][")
    checks.ok("leaks: the path reads like code", expected in out, out[-600:])

    doc = heaplens_json(checks, a.heaplens, ["roots", db, "--type", truth["session_type"]], log)
    rows = doc.get("rows", []) if doc else []
    if checks.ok("roots: a path", len(rows) == 1):
        check_path(checks, "roots", rows[0], truth)
    rc, out, err = run([a.heaplens, "roots", db, "--type", truth["session_type"]], log=log)
    checks.ok("roots: the text names the static", "root: static SessionRegistry.Instance\n" in out, out[:400])

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    snap = con.execute("SELECT max(snapshot) FROM snapshots").fetchone()[0]
    holder = con.execute(
        "SELECT so.object_id FROM snapshot_objects so JOIN objects o ON o.id = so.object_id"
        " JOIN types t ON t.id = o.type_id WHERE so.snapshot = ? AND t.name = ?",
        (snap, truth["holder_type"])).fetchall()
    if checks.eq("sql: one Holder", 1, len(holder)):
        hid = holder[0][0]
        names = sorted(r[0] for r in con.execute(
            "SELECT name FROM snapshot_ref_fields WHERE snapshot = ? AND from_id = ?", (snap, hid)))
        checks.eq("sql: the Holder's references are its fields", sorted(truth["holder_fields"]), names)

        def field_target(name):
            r = con.execute("SELECT to_id FROM snapshot_ref_fields WHERE snapshot = ? AND from_id = ?"
                            " AND name = ?", (snap, hid, name)).fetchone()
            return r[0] if r else None

        def elements(array_id):
            r = con.execute("SELECT fields FROM snapshot_objects WHERE snapshot = ? AND object_id = ?",
                            (snap, array_id)).fetchone()
            return json.loads(r[0]) if r and r[0] else []

        copies = field_target("Copies")
        checks.eq("sql: Copies' elements", list(range(truth["copies"])), elements(copies))
        sparse = field_target("Sparse")
        arrays = [r[0] for r in con.execute(
            "SELECT to_id FROM snapshot_ref_fields WHERE snapshot = ? AND from_id = ? ORDER BY field",
            (snap, sparse))]
        checks.eq("sql: sparse arrays", truth["sparse_arrays"], len(arrays))
        want = list(range(0, truth["sparse_length"], truth["sparse_every"]))
        checks.ok("sql: each sparse array's elements", all(elements(x) == want for x in arrays),
                  repr([elements(x) for x in arrays[:2]]))
        lists = field_target("EmptyLists")
        checks.eq("sql: EmptyLists' elements", truth["empty_lists"], len(elements(lists)))
        dicts = field_target("EmptyDicts")
        checks.eq("sql: EmptyDicts' elements", truth["empty_dicts"], len(elements(dicts)))
    statics = {r[0]: (r[1], r[2]) for r in con.execute(
        "SELECT t.name || '.' || s.name, ss.object_id, ss.field FROM snapshot_statics ss"
        " JOIN statics s ON s.id = ss.static_id JOIN types t ON t.id = s.type_id"
        " WHERE ss.snapshot = ?", (snap,))}
    for key in ("holder_static", "registry_static", "event_static"):
        checks.ok(f"sql: static {truth[key]} named", truth[key] in statics, "")
    if truth["event_static"] in statics:
        obj, field = statics[truth["event_static"]]
        delegate = con.execute("SELECT to_id FROM snapshot_ref_fields WHERE snapshot = ? AND from_id = ?"
                               " AND field = ?", (snap, obj, field)).fetchone()
        handlers = con.execute(
            "SELECT count(*) FROM snapshot_ref_fields r JOIN snapshot_ref_fields l"
            " ON l.snapshot = r.snapshot AND l.from_id = r.to_id"
            " WHERE r.snapshot = ? AND r.from_id = ? AND r.name = '_invocationList'",
            (snap, delegate[0] if delegate else -1)).fetchone()[0]
        checks.eq("sql: the event's delegate holds the subscribers' handlers", truth["subscribers"], handlers)
    methods = [r[0] for r in con.execute(
        "SELECT DISTINCT m.name FROM snapshot_roots r JOIN root_methods m ON m.function_id = r.root_id"
        " WHERE r.snapshot = ? AND r.kind = 'stack'", (snap,))]
    main = "HeapLens.Examples.Inspections.Program.Main"
    checks.ok("sql: stack roots name their method (Program.Main)", main in methods, repr(methods))
    held = con.execute(
        "SELECT r.object_id FROM snapshot_roots r JOIN root_methods m ON m.function_id = r.root_id"
        " WHERE r.snapshot = ? AND m.name = ? AND r.object_id IS NOT NULL LIMIT 1", (snap, main)).fetchone()
    check_thread_static(checks, con, truth, "")
    for w in truth["workers"]:
        threads = con.execute(
            "SELECT r.snapshot, group_concat(DISTINCT r.thread) FROM snapshot_roots r"
            " JOIN objects o ON o.id = r.object_id JOIN types t ON t.id = o.type_id"
            " WHERE t.name = ? AND r.kind = 'stack' GROUP BY r.snapshot", (w["held_type"],)).fetchall()
        n_snapshots = con.execute("SELECT count(*) FROM snapshots").fetchone()[0]
        checks.eq(f"sql: {w['held_type']}'s stack root is on {w['name']}'s thread in every snapshot",
                  [str(w["os_tid"])] * n_snapshots, [t for _, t in threads])
    con.close()
    if held:
        doc = heaplens_json(checks, a.heaplens, ["roots", db, "--object", str(held[0])], log)
        roots = [r for row in (doc or {}).get("rows", []) for r in row.get("roots", [])]
        checks.ok("roots: a stack root says its method", any(r.get("kind") == "stack" and r.get("method") == main
                                                            for r in roots), repr(roots))
    check_stack_threads(checks, a, log, db, truth)
    check_inspect(checks, a, log, db, truth)


def check_stack_threads(checks, a, log, db, truth):
    """(g): `roots --type HeldByWorkerN` names the worker's thread."""
    for w in truth["workers"]:
        doc = heaplens_json(checks, a.heaplens, ["roots", db, "--type", w["held_type"]], log)
        roots = [r for row in (doc or {}).get("rows", []) for r in row.get("roots", [])]
        checks.ok(f"roots --json: {w['held_type']} is a stack root of {w['name']}",
                  len(roots) > 0 and all(r.get("kind") == "stack" and r.get("thread") ==
                                         {"os_tid": w["os_tid"], "name": w["name"]} for r in roots),
                  repr(roots))
        rc, out, err = run([a.heaplens, "roots", db, "--type", w["held_type"]], log=log)
        checks.ok(f"roots: the text names {w['name']}'s thread",
                  f"thread {w['name']}, {w['os_tid']})" in out, out[:600])


def check_thread_static(checks, con, truth, what, names=True):
    """(f): every snapshot names the thread static once per worker, holding its own payload."""
    # Step by step: one join of the views (blocks read for every static) took minutes.
    slots = con.execute(
        "SELECT ss.snapshot, s.thread, th.name, ss.object_id, ss.field FROM snapshot_statics ss"
        " JOIN statics s ON s.id = ss.static_id JOIN types t ON t.id = s.type_id"
        " LEFT JOIN threads th ON th.os_tid = s.thread"
        " WHERE t.name || '.' || s.name = ?", (truth["thread_static"],)).fetchall()

    def target(snap, holder, field):
        r = con.execute("SELECT to_id FROM snapshot_ref_fields WHERE snapshot = ? AND from_id = ?"
                        " AND field = ?", (snap, holder, field)).fetchone()
        return r[0] if r else None

    def tag(snap, payload):
        r = con.execute("SELECT sv.value FROM snapshot_ref_fields r JOIN snapshot_strings sv"
                        " ON sv.snapshot = r.snapshot AND sv.object_id = r.to_id"
                        " WHERE r.snapshot = ? AND r.from_id = ? AND r.name = 'Tag'",
                        (snap, payload)).fetchone()
        return r[0] if r else None

    rows = [(snap, tid, name, tag(snap, target(snap, holder, field)))
            for snap, tid, name, holder, field in slots]
    by_snapshot = {s: [] for (s,) in con.execute("SELECT snapshot FROM snapshots")}
    for s, tid, thread, tag in rows:
        by_snapshot.setdefault(s, []).append((tid, thread, tag) if names else (tid, tag))
    want = sorted((w["os_tid"], w["name"], w["tag"]) if names else (w["os_tid"], w["tag"])
                  for w in truth["workers"])
    checks.ok(f"{what}sql: every snapshot names the thread static of every worker, holding its payload",
              len(by_snapshot) > 0 and all(sorted(v) == want for v in by_snapshot.values()),
              f"want {want} in each; found {by_snapshot!r}")
    print(f"{what}thread static {truth['thread_static']} named in snapshots "
          f"{sorted(k for k, v in by_snapshot.items() if v)} of {sorted(by_snapshot)}")


def check_inspect(checks, a, log, db, truth):
    """`heaplens inspect --json`: every structure found, with its exact count."""
    doc = heaplens_json(checks, a.heaplens, ["inspect", db], log)
    if doc is None:
        return
    findings = doc.get("findings", [])

    def find(kind, **match):
        return [f for f in findings if f.get("kind") == kind and
                all(f.get(k) == v for k, v in match.items())]

    dup = find("duplicate-strings", value=truth["copy_value"])
    checks.eq("inspect: the duplicate string's copies", [truth["copies"]], [f.get("count") for f in dup])
    if dup:
        checks.eq("inspect: all but one copy wasted", dup[0]["bytes"] - dup[0]["bytes"] // truth["copies"],
                  dup[0].get("wasted"))
    lists = find("empty-collections", type="System.Collections.Generic.List<System.Int32>")
    checks.eq("inspect: empty lists", [truth["empty_lists"]], [f.get("count") for f in lists])
    dicts = find("empty-collections", type="System.Collections.Generic.Dictionary<System.Int32, System.Int32>")
    checks.eq("inspect: empty dictionaries", [truth["empty_dicts"]], [f.get("count") for f in dicts])
    sparse = find("sparse", type="HeapLens.Examples.Inspections.Node[]")
    checks.eq("inspect: sparse arrays", [truth["sparse_arrays"]], [f.get("count") for f in sparse])
    if sparse:
        fill = 1 / truth["sparse_every"]
        checks.ok("inspect: their fill", abs(sparse[0].get("fill", -1) - fill) < 1e-9, repr(sparse[0]))
        checks.eq("inspect: their wasted bytes",
                  truth["sparse_arrays"] * (truth["sparse_length"] - truth["sparse_length"] // truth["sparse_every"]) * 8,
                  sparse[0].get("wasted"))
    events = find("event-handlers", owner=truth["event_static"].rsplit(".", 1)[0],
                  field=truth["event_static"].rsplit(".", 1)[1])
    checks.eq("inspect: the event's handlers", [truth["subscribers"]], [f.get("subscribers") for f in events])
    if events:
        checks.eq("inspect: the handlers' targets",
                  [{"type": "HeapLens.Examples.Inspections.Subscriber", "count": truth["subscribers"]}],
                  events[0].get("targets"))
    ranks = [f.get("rank_bytes", 0) for f in findings]
    checks.ok("inspect: ranked by bytes", ranks == sorted(ranks, reverse=True), repr(ranks[:8]))

    fin = find("finalizable", type=truth["finalizable_type"])
    checks.eq("inspect: finalizable objects alive", [(truth["finalizables"], 0)],
              [(f.get("count"), f.get("queued")) for f in fin])
    res = find("finalizable", type=truth["resurrected_type"])
    checks.eq("inspect: the resurrected objects have a finalizer", [truth["resurrected"]],
              [f.get("count") for f in res])
    ran = find("finalized-reachable", type=truth["resurrected_type"])
    checks.eq("inspect: finalized and reachable again", [truth["resurrected"]], [f.get("count") for f in ran])
    checks.eq("inspect: nothing else finalized and reachable again", [truth["resurrected_type"]],
              [f.get("type") for f in find("finalized-reachable")])
    first = heaplens_json(checks, a.heaplens, ["inspect", db, "--snapshot", "1"], log)
    if first is not None:
        queued = [f.get("queued") for f in first.get("findings", [])
                  if f.get("kind") == "finalizable" and f.get("type") == truth["resurrected_type"]]
        checks.eq("inspect: snapshot 1: the resurrected objects wait for their finalizer",
                  [truth["resurrected"]], queued)
    ul = find("under-filled", type="System.Collections.Generic.List<System.Int32>")
    checks.eq("inspect: the under-filled list (count, elements, capacity)",
              [(1, truth["underfilled_count"], truth["underfilled_list_capacity"])],
              [(f.get("count"), f.get("elements"), f.get("capacity")) for f in ul])
    if ul:
        checks.eq("inspect: the under-filled list's unused elements, 4 bytes each",
                  (truth["underfilled_list_capacity"] - truth["underfilled_count"]) * 4, ul[0].get("wasted"))
    ud = find("under-filled", type="System.Collections.Generic.Dictionary<System.Int32, System.Int32>")
    checks.eq("inspect: the under-filled dictionary (count, elements, capacity)",
              [(1, truth["underfilled_dict_count"], truth["underfilled_dict_capacity"])],
              [(f.get("count"), f.get("elements"), f.get("capacity")) for f in ud])
    rc, out, err = run([a.heaplens, "inspect", db], log=log)
    checks.ok("inspect: the text says it", "1 System.Collections.Generic.List<System.Int32> filled 1.0% "
              "(10 of 1,000" in out and f"{truth['resurrected']} {truth['resurrected_type']} finalized and "
              "reachable again" in out, out[-1500:])


def check_no_strings(checks, a, log, workdir):
    """record --no-strings: lengths and hashes, no characters; the duplicates still found."""
    db = os.path.join(workdir, "nostrings.db")
    truth_path = os.path.join(workdir, "nostrings.json")
    rc = record(a, db, truth_path, ["grow"], log, record_options=["-q", "--no-strings"])
    checks.eq("no-strings: recorded (exit status)", 0, rc)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows, kept = con.execute("SELECT count(*), count(*) FILTER (WHERE value IS NOT NULL AND length > 0)"
                             " FROM snapshot_strings").fetchone()
    con.close()
    checks.ok("no-strings: strings stored", rows > 0, repr(rows))
    checks.eq("no-strings: no characters stored", 0, kept)
    doc = heaplens_json(checks, a.heaplens, ["inspect", db], log)
    if doc is not None:
        with open(truth_path) as f:
            truth = json.load(f)
        dup = [f for f in doc.get("findings", []) if f.get("kind") == "duplicate-strings"
               and f.get("count") == truth["copies"]]
        checks.ok("no-strings: the duplicates found by hash, without their value",
                  len(dup) == 1 and dup[0].get("value") is None, repr(dup))


def check_steady(checks, a, log, workdir):
    db = os.path.join(workdir, "steady.db")
    truth_path = os.path.join(workdir, "steady.json")
    rc = record(a, db, truth_path, ["steady"], log, record_options=["-q"])
    checks.eq("steady: recorded (exit status)", 0, rc)
    doc = heaplens_json(checks, a.heaplens, ["leaks", db], log)
    if doc is not None:
        checks.eq("steady: leaks finds no suspect", [], [r.get("type") for r in doc.get("rows", [])])
        checks.eq("steady: over the snapshots", 3, len(doc.get("snapshots", [])))


def check_attach(checks, a, log, workdir):
    """The program started without heaplens; `heaplens attach --duration 2` while it waits."""
    db = os.path.join(workdir, "attach.db")
    truth_path = os.path.join(workdir, "attach.json")
    remove_db(db, truth_path)
    p = subprocess.Popen(program(a.dotnet, a.dll) + [truth_path, "attach"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        ready = p.stdout.readline().split()
        if not checks.ok("attach: the program is ready", len(ready) == 2 and ready[0] == "ready",
                         repr(ready)):
            return
        rc, out, err = run([a.heaplens, "attach", ready[1], "-o", db, "--duration", "2"], log=log,
                           timeout=a.timeout)
        checks.eq("attach: heaplens attach (exit status)", 0, rc)
        p.stdin.write("stop\n")
        p.stdin.flush()
        checks.eq("attach: the program ends (exit status)", 0, p.wait(timeout=a.timeout))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if not checks.ok("attach: truth written", os.path.exists(truth_path)):
        return
    with open(truth_path) as f:
        truth = json.load(f)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    checks.eq("attach: two snapshots", 2, con.execute("SELECT count(*) FROM snapshots").fetchone()[0])
    check_thread_static(checks, con, truth, "attach: ", names=False)
    con.close()


def main():
    a, checks, log = begin(arguments(__doc__.split("\n\n")[0], timeout=300,
                                     dll_help="Inspections.dll, or a self-contained executable"))
    check_grow(checks, a, log, a.workdir)
    check_no_strings(checks, a, log, a.workdir)
    check_steady(checks, a, log, a.workdir)
    check_attach(checks, a, log, a.workdir)
    return checks.summary(f" (log: {log})")


if __name__ == "__main__":
    sys.exit(main())
