#!/usr/bin/env python3
"""End-to-end snapshot test: record examples/SnapshotGraphs with heaplens and compare.

    check_snapshots.py --heaplens build/bin/heaplens \
        --dll build/examples/SnapshotGraphs/SnapshotGraphs.dll --workdir /tmp/snap

SnapshotGraphs builds object graphs of known shape and writes, for each of its checkpoints (one
induced GC each, hence one heap snapshot each under `heaplens record`'s default policy), what
that snapshot must hold of its own types (examples/README.md). This script records the program,
then checks with SQL on the recording's snapshot tables, each comparison being one check:

  (a) every snapshot: model_missing == 0, model_extra == 0, unresolved == 0; its row's counts
      equal its rows in snapshot_objects / snapshot_refs / snapshot_roots (frozen and discovered
      flags included); every reference and root points at an object of the snapshot; the
      snapshot's non-frozen objects and generations equal the stored model (`live_objects` at
      that GC); exactly the induced GCs have a snapshot, trigger 'induced';
  (b) per checkpoint: objects per example type and generation (LOH 3 and POH 4 compare as
      GC.GetGeneration's 2; LOH types must be 3), no other type of the example namespace, and
      the objects that died in this GC (objects.died_gc, and the interval's allocations that
      died in their first GC: alloc_counts count - survived);
  (c) per checkpoint, the shapes: the List<Node>'s backing array has N edges to the N Nodes,
      each Node exactly one edge to a byte[] (sizes as written), the ring of CycleNodes (and
      none of it once dropped), the orphan chain, the POH arrays as reference targets of their
      holder (and roots: a stack root, a pinning handle), the LOH arrays (generation 3) and
      their edges, the edges of GraphInfo to frozen objects (flag frozen, generation 5), two
      references from the Twin's two fields to one object, the Finalizable's payload;
  (d) per checkpoint, roots of the named objects: exact kinds and flags (handle 3, finalizer 2,
      stack 1; pinning 1, weak 2), handle roots' root_id == the handle's address, and no root
      at all on objects reachable only through fields;
  (e) `handles` (recorded with `record --handles`, which keeps the handle events): one row per
      handle of the program, by target: handle_id == its address, kind
      (text or code), created_after_gc, destroyed_after_gc (the freed strong handle has it, the
      others NULL); the cleared weak handle is no root any more;
  (f) `heaplens snapshots FILE --json` equals the snapshots table (skipped, with a note, while
      the command does not exist);
  (g) the recording: run status complete, every drop/anomaly counter 0, exit status 0;
  (i) the compact form (schema 8) against schema 7's rows: the recording is made with
      HEAPLENS_SNAPSHOT_ROWS=1, so its writer also stores every snapshot's objects as schema 7's
      rows (table snapshot_object_rows); every documented view over snapshot_objects
      (snapshot_objects itself, snapshot_refs, snapshot_ref_fields, snapshot_contents,
      snapshot_handles) answers exactly the same from the blocks as from those rows, and a copy
      turned into a schema 7 file (the rows as its table snapshot_objects, no blocks) gives
      exactly the same output for snapshots, retention (every snapshot), roots, leaks, diff and
      inspect;
  (h) on demand: `heaplens record -- dotnet SnapshotGraphs.dll --wait-for-snapshot`; the test
      waits for the program's readiness line, runs `heaplens snapshot PID`, waits for the
      program to report the GC that caused, lets it finish (creates its go file) and checks that
      snapshot: trigger 'requested', zero drift, the program's objects as it wrote them. Skipped,
      with a note, while `heaplens snapshot --help` fails.

Python 3 standard library only. Prints every mismatch and a final line "N passed, M failed";
exits 1 if anything failed (2 on usage errors).
"""
import json
import os
import selectors
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import (DROP_COUNTERS, GEN_NAMES, arguments, begin, bucket,  # noqa: E402
                    check_snapshot_forms, fmt_counts, record, recording_given,
                    run)  # shared e2e helpers

KIND_NAMES = {"unknown": 0, "strong": 1, "weak": 2, "pinned": 3, "refcounted": 4}
ROOT_KIND_NAMES = {"other": 0, "stack": 1, "finalizer": 2, "handle": 3}
TRIGGER_NAMES = {"induced": 1, "every": 2, "gen2": 3, "requested": 4}
FROZEN, DISCOVERED = 1, 2

def named(value, names):
    """A kind or trigger stored as text or as its numeric code -> the code (None if unknown)."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        return names.get(value.lower())
    return None


def fmt_roots(roots):
    return "[" + ", ".join(f"(kind {k}, flags {f})" for k, f in sorted(roots)) + "]"


def table_exists(conn, name):
    return conn.execute("SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') "
                        "AND name = ?", (name,)).fetchone()[0] > 0


def columns(conn, table):
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


class Snapshot:
    """One snapshot, loaded whole: it is small for SnapshotGraphs."""

    def __init__(self, conn, row):
        self.row = row
        self.id = row["snapshot"]
        self.gc = row["gc"]
        self.objects = {}  # object id -> (generation, flags)
        for oid, gen, flags in conn.execute(
                "SELECT object_id, generation, flags FROM snapshot_objects WHERE snapshot = ?",
                (self.id,)):
            self.objects[oid] = (gen, flags)
        self.n_object_rows = conn.execute(
            "SELECT count(*) FROM snapshot_objects WHERE snapshot = ?", (self.id,)).fetchone()[0]
        # One row per reference; a store that merges equal (from, to) pairs must say how many
        # references a row stands for (a column named count/refs/multiplicity).
        mult = next((c for c in ("count", "refs", "multiplicity") if c in
                     columns(conn, "snapshot_refs")), None)
        self.refs = []
        for a, b, n in conn.execute(
                f"SELECT from_id, to_id, {mult or 1} FROM snapshot_refs WHERE snapshot = ?",
                (self.id,)):
            self.refs.extend([(a, b)] * n)
        self.n_ref_rows = conn.execute("SELECT count(*) FROM snapshot_refs WHERE snapshot = ?",
                                       (self.id,)).fetchone()[0]
        # Root kinds as codes (the table may hold 'handle', 'stack', ... or 3, 1, ...).
        self.roots = [(o, named(k, ROOT_KIND_NAMES), f, rid) for o, k, f, rid in conn.execute(
            "SELECT object_id, kind, flags, root_id FROM snapshot_roots WHERE snapshot = ?",
            (self.id,))]
        self.info = {}  # object id -> (type name, size)
        for oid, name, size in conn.execute(
                "SELECT o.id, t.name, o.size FROM snapshot_objects s JOIN objects o ON o.id = "
                "s.object_id JOIN types t ON t.id = o.type_id WHERE s.snapshot = ?", (self.id,)):
            self.info[oid] = (name, size)
        self.out = {}
        self.into = {}
        for a, b in self.refs:
            self.out.setdefault(a, []).append(b)
            self.into.setdefault(b, []).append(a)
        self.roots_of = {}
        for oid, kind, flags, root_id in self.roots:
            self.roots_of.setdefault(oid, []).append((kind, flags, root_id))
        self.by_type = {}
        for oid in self.objects:
            name = self.info.get(oid, (None, None))[0]
            self.by_type.setdefault(name, []).append(oid)

    def of_type(self, name):
        return self.by_type.get(name, [])

    def type_of(self, oid):
        return self.info.get(oid, ("?", None))[0]

    def size_of(self, oid):
        return self.info.get(oid, (None, None))[1]

    def gen_of(self, oid):
        return self.objects.get(oid, (None, None))[0]

    def select(self, truth, label):
        """Objects the ground truth names `label`: an entry of truth["objects"] or a type."""
        sel = truth["objects"].get(label, {"type": label})
        found = self.of_type(sel["type"])
        if "size" in sel:
            found = [o for o in found if self.size_of(o) == sel["size"]]
        if "referenced_by" in sel:
            holders = set(self.of_type(sel["referenced_by"]))
            found = [o for o in found if any(h in holders for h in self.into.get(o, []))]
        return found


def load_truth(checks, path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        checks.ok(f"ground truth written by SnapshotGraphs ({what})", False, f"{path}: {e}")
        return None


def open_db(checks, db, where):
    if not checks.ok(f"{where}recording exists", os.path.exists(db), db):
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM objects LIMIT 1").fetchall()
        return conn
    except sqlite3.Error as e:
        checks.ok(f"{where}recording opens with sqlite3", False, str(e))
        return None


def snapshot_rows(conn):
    return {r["snapshot"]: r for r in conn.execute("SELECT * FROM snapshots ORDER BY snapshot")}


# ------------------------------------------------------------------------------ (a) every snapshot
def check_snapshot_integrity(checks, conn, s, where, trigger=None):
    r = s.row
    keys = r.keys()
    checks.eq(f"{where}: model_missing", 0, r["model_missing"])
    checks.eq(f"{where}: model_extra", 0, r["model_extra"])
    if "unresolved" in keys:
        checks.eq(f"{where}: unresolved references and roots", 0, r["unresolved"])
    if trigger is not None:
        checks.eq(f"{where}: trigger", trigger, named(r["trigger"], TRIGGER_NAMES))
    checks.eq(f"{where}: objects column == its snapshot_objects rows", s.n_object_rows,
              r["objects"])
    checks.eq(f"{where}: snapshot_objects has no duplicate object", s.n_object_rows,
              len(s.objects))
    checks.eq(f"{where}: refs column == its references in snapshot_refs", len(s.refs), r["refs"])
    pairs = {}
    for a, b in s.refs:
        pairs[(a, b)] = pairs.get((a, b), 0) + 1
    multi = sum(1 for n in pairs.values() if n > 1)
    if multi and s.n_ref_rows != len(s.refs):
        print(f"note: {where}: {multi} (from, to) pairs stand for several references each")
    checks.eq(f"{where}: roots column == its snapshot_roots rows", len(s.roots), r["roots"])
    if "handles" in keys:
        checks.eq(f"{where}: handles column == its handle roots", sum(
            1 for x in s.roots if x[1] == ROOT_KIND_NAMES["handle"]), r["handles"])
    unknown = sorted({x[1] for x in s.roots if x[1] not in ROOT_KIND_NAMES.values()}, key=str)
    checks.ok(f"{where}: root kinds are other/stack/finalizer/handle", not unknown,
              f"unknown kinds {unknown}")
    frozen = [o for o, (g, f) in s.objects.items() if f & FROZEN]
    discovered = [o for o, (g, f) in s.objects.items() if f & DISCOVERED]
    if "frozen" in keys:
        checks.eq(f"{where}: frozen column == objects flagged frozen", len(frozen), r["frozen"])
    # Unreported objects (.NET 10 delegates and boxes, flag 4) are discovered too.
    unreported = r["model_unreported"] if "model_unreported" in keys else 0
    checks.eq(f"{where}: objects flagged discovered == model_extra + model_unreported",
              r["model_extra"] + unreported, len(discovered))
    bad = [o for o in frozen if s.gen_of(o) != 5]
    checks.ok(f"{where}: frozen objects have generation 5 (NonGC)", not bad,
              f"{len(bad)} do not, e.g. {[(o, s.gen_of(o)) for o in bad[:3]]}")
    unfrozen5 = [o for o, (g, f) in s.objects.items() if g == 5 and not f & FROZEN]
    checks.ok(f"{where}: every NonGC object is flagged frozen", not unfrozen5,
              f"{len(unfrozen5)} are not, e.g. {unfrozen5[:3]}")
    dangling = [(a, b) for a, b in s.refs if a not in s.objects or b not in s.objects]
    checks.ok(f"{where}: every reference joins two objects of the snapshot", not dangling,
              f"{len(dangling)} do not, e.g. {dangling[:3]}")
    orphan_roots = [x for x in s.roots if x[0] and x[0] not in s.objects]
    checks.ok(f"{where}: every root's object is in the snapshot", not orphan_roots,
              f"{len(orphan_roots)} are not, e.g. {orphan_roots[:3]}")
    no_row = [o for o in s.objects if o not in s.info]
    checks.ok(f"{where}: every snapshot object has an objects row with a type", not no_row,
              f"{len(no_row)} have none, e.g. {no_row[:3]}")
    if "bytes" in keys:
        # bytes sums the walked objects; whether frozen ones count depends on whether the walk
        # reported them, so: at least the non-frozen objects, at most all objects.
        low = sum(s.size_of(o) or 0 for o, (g, f) in s.objects.items() if not f & FROZEN)
        high = sum(s.size_of(o) or 0 for o in s.objects)
        checks.ok(f"{where}: bytes between the sizes of the non-frozen and of all objects",
                  low <= r["bytes"] <= high, f"{r['bytes']} not in [{low}, {high}]")
    # The snapshot is the runtime's walk; live_objects is the model as stored. model_missing ==
    # model_extra == 0 says the collector found them equal; this says the database agrees.
    if table_exists(conn, "live_objects"):
        model = {oid: gen for oid, gen in conn.execute(
            "SELECT object_id, generation FROM live_objects WHERE gc = ? AND generation != 5",
            (s.gc,))}
        walk = {o: g for o, (g, f) in s.objects.items() if g != 5}
        only_model = sorted(set(model) - set(walk))
        only_walk = sorted(set(walk) - set(model))
        gen_diff = sorted(o for o in set(model) & set(walk) if model[o] != walk[o])
        checks.ok(f"{where}: objects and generations == live_objects at GC {s.gc}",
                  not only_model and not only_walk and not gen_diff,
                  f"{len(only_model)} only in live_objects (e.g. {only_model[:3]}), "
                  f"{len(only_walk)} only in the snapshot (e.g. {only_walk[:3]}), "
                  f"{len(gen_diff)} in other generations "
                  f"(e.g. {[(o, model[o], walk[o]) for o in gen_diff[:3]]})")


# ------------------------------------------------------------------------------ (b)-(d) checkpoints
def check_counts(checks, conn, truth, cp, s, where):
    types = truth["types"]
    ns = truth["namespace"]
    got, raw = {}, {}
    for oid, (gen, flags) in s.objects.items():
        name = s.type_of(oid)
        if name not in types and not name.startswith(ns + "."):
            continue
        b = bucket(gen)
        got.setdefault(name, {})
        got[name][b] = got[name].get(b, 0) + 1
        raw.setdefault(name, {})
        raw[name][gen] = raw[name].get(gen, 0) + 1
    for name, t in types.items():
        expected = cp["in_snapshot"].get(name, {})
        actual = got.get(name, {})
        detail = f"expected {fmt_counts(expected)}, got {fmt_counts(actual)}"
        if name in raw:
            detail += " (heaplens generations " + ", ".join(
                f"{GEN_NAMES.get(k, k)}={v}" for k, v in sorted(raw[name].items())) + ")"
        checks.ok(f"{where}: {name} objects", expected == actual, detail)
        if name in raw:
            allowed = {"loh": {3}, "poh": {4}}.get(t["heap"], {0, 1, 2})
            wrong = {GEN_NAMES.get(k, k): v for k, v in raw[name].items() if k not in allowed}
            checks.ok(f"{where}: {name} in its heap ({t['heap']})", not wrong, f"rows in {wrong}")
    extra = {n: v for n, v in got.items() if n not in types}
    checks.ok(f"{where}: no unexpected {ns}.* objects", not extra, f"{extra}")

    # Deaths in this GC: exactly the dropped objects it condemned. Objects that had survived an
    # earlier GC have died_gc = this GC; those allocated since the previous GC that died in this
    # one (their first) have no row: they are this interval's count - survived in alloc_counts.
    died = {}
    for name, n in conn.execute(
            "SELECT name, sum(n) FROM ("
            " SELECT t.name AS name, count(*) AS n FROM objects o JOIN types t ON t.id = o.type_id"
            "  WHERE o.died_gc = ?1 GROUP BY t.name"
            " UNION ALL"
            " SELECT t.name, sum(a.count - a.survived) FROM alloc_counts a"
            "  JOIN types t ON t.id = a.type_id WHERE a.gc = ?1 GROUP BY t.name)"
            " GROUP BY name HAVING sum(n) > 0", (cp["gc"],)):
        if name in types or name.startswith(ns + "."):
            died[name] = n
    for name in sorted(set(types) | set(died)):
        checks.eq(f"{where}: {name} objects with died_gc = {cp['gc']}",
                  cp["died"].get(name, 0), died.get(name, 0))


def check_shapes(checks, truth, cp, s, where):
    g = truth["graph"]
    present = cp["in_snapshot"]

    def count_of(name):
        return sum(present.get(name, {}).values())

    # (a) the List<Node>, its backing array, the Nodes and their byte[]s.
    nd = g["nodes"]
    if count_of(nd["list"]):
        lists, arrays, nodes = s.of_type(nd["list"]), s.of_type(nd["array"]), s.of_type(nd["node"])
        if checks.ok(f"{where}: one {nd['list']} and one {nd['array']}",
                     len(lists) == 1 and len(arrays) == 1,
                     f"{len(lists)} lists, {len(arrays)} arrays"):
            lst, arr = lists[0], arrays[0]
            checks.eq(f"{where}: the list's references", [arr], s.out.get(lst, []))
            checks.eq(f"{where}: references to the backing array (from the list only)", [lst],
                      s.into.get(arr, []))
            targets = s.out.get(arr, [])
            checks.eq(f"{where}: edges of the backing array", nd["count"], len(targets))
            checks.ok(f"{where}: the backing array's edges go to every Node once",
                      sorted(targets) == sorted(nodes) and len(nodes) == nd["count"],
                      f"{len(set(targets))} distinct targets, {len(nodes)} Nodes, "
                      f"{len(set(targets) - set(nodes))} targets are not Nodes")
            bad_in = [n for n in nodes if s.into.get(n, []) != [arr]]
            checks.ok(f"{where}: each Node is referenced by the backing array only", not bad_in,
                      f"{len(bad_in)} are not, e.g. {[(n, s.into.get(n)) for n in bad_in[:3]]}")
        bad = [n for n in nodes if len(s.out.get(n, [])) != 1]
        checks.ok(f"{where}: each Node has exactly one reference", not bad,
                  f"{len(bad)} do not, e.g. {[(n, s.out.get(n)) for n in bad[:3]]}")
        data = [s.out[n][0] for n in nodes if len(s.out.get(n, [])) == 1]
        wrong = [d for d in data if s.type_of(d) != nd["data_type"]]
        checks.ok(f"{where}: each Node's reference is a {nd['data_type']}", not wrong,
                  f"{len(wrong)} are not, e.g. {[s.type_of(d) for d in wrong[:3]]}")
        checks.eq(f"{where}: the Nodes' {nd['data_type']} targets are distinct", len(data),
                  len(set(data)))
        sizes = {}
        for d in data:
            sizes[str(s.size_of(d))] = sizes.get(str(s.size_of(d)), 0) + 1
        checks.ok(f"{where}: sizes of the Nodes' {nd['data_type']} targets",
                  sizes == nd["data_sizes"],
                  "differences (size: expected/got): " + ", ".join(
                      f"{k}: {nd['data_sizes'].get(k, 0)}/{sizes.get(k, 0)}"
                      for k in sorted(set(sizes) | set(nd["data_sizes"]), key=int)
                      if sizes.get(k) != nd["data_sizes"].get(k))[:400])

    # (b) the ring; once dropped, none of it (checked by the counts too).
    cy = g["cycle"]
    ring = s.of_type(cy["type"])
    if count_of(cy["type"]):
        bad = [c for c in ring if len(s.out.get(c, [])) != 1 or
               s.type_of(s.out[c][0]) != cy["type"]]
        checks.ok(f"{where}: each {cy['type']} references exactly one {cy['type']}", not bad,
                  f"{len(bad)} do not")
        if not bad and ring:
            seen, c = [], ring[0]
            while c not in seen and len(seen) <= len(ring):
                seen.append(c)
                c = s.out[c][0]
            checks.ok(f"{where}: the {cy['type']}s form one ring of {cy['length']}",
                      c == ring[0] and len(seen) == cy["length"] == len(ring),
                      f"walk from {ring[0]} came back to {c} after {len(seen)} steps; "
                      f"{len(ring)} objects")
    else:
        checks.eq(f"{where}: no {cy['type']} in the snapshot (not built yet, or dropped)", [],
                  ring)

    # The orphan chain (alive, then dead but not condemned, then gone).
    orp = g["orphans"]
    if count_of(orp["type"]):
        chain = set(s.of_type(orp["type"]))
        edges = [(a, b) for a in chain for b in s.out.get(a, [])]
        inner = [(a, b) for a, b in edges if b in chain]
        checks.ok(f"{where}: the {orp['type']}s form a chain of {orp['count']}",
                  len(edges) == len(inner) == orp["count"] - 1 and
                  len({b for a, b in inner}) == len(inner) and
                  all(len(s.out.get(a, [])) <= 1 for a in chain),
                  f"{len(chain)} objects, {len(edges)} references, {len(inner)} inside the chain")

    # (e) the POH arrays: reference targets of their holder, generation 4.
    poh = g["poh"]
    if count_of(poh["holder"]):
        holder = s.of_type(poh["holder"])
        arrays = {}
        for label in poh["arrays"]:
            sel = truth["objects"][label]
            found = s.select(truth, label)
            if checks.ok(f"{where}: {label} ({sel['type']} of {sel['size']} bytes referenced by "
                         f"{poh['holder']}) found once", len(found) == 1, f"found {found}"):
                o = arrays[label] = found[0]
                checks.eq(f"{where}: {label} generation (POH)", 4, s.gen_of(o))
                checks.eq(f"{where}: {label} GC.GetGeneration", cp["poh_generation"].get(label),
                          int(bucket(s.gen_of(o))) if bucket(s.gen_of(o)) != "other" else None)
                checks.eq(f"{where}: references to {label} (from its holder only)", holder,
                          s.into.get(o, []))
                checks.eq(f"{where}: references of {label}", [], s.out.get(o, []))
        if len(holder) == 1:
            checks.eq(f"{where}: references of {poh['holder']}", sorted(arrays.values()),
                      sorted(s.out.get(holder[0], [])))

    # (f) the LOH arrays: generation 3, their size, their edges.
    loh = g["loh"]
    if count_of(loh["holder"]):
        holder = s.of_type(loh["holder"])
        targets = []
        for a in loh["arrays"]:
            found = s.of_type(a["type"])
            if not checks.eq(f"{where}: {a['type']} objects", 1, len(found)):
                continue
            o = found[0]
            targets.append(o)
            checks.eq(f"{where}: {a['type']} generation (LOH)", 3, s.gen_of(o))
            checks.eq(f"{where}: {a['type']} size", a["size"], s.size_of(o))
            checks.eq(f"{where}: references to {a['type']} (from its holder only)", holder,
                      s.into.get(o, []))
            outs = s.out.get(o, [])
            checks.eq(f"{where}: references of {a['type']}", a["refs"], len(outs))
            if a.get("refs_to"):
                checks.eq(f"{where}: {a['type']} references every {a['refs_to']} once",
                          sorted(s.of_type(a["refs_to"])), sorted(outs))
        if len(holder) == 1:
            checks.eq(f"{where}: references of {loh['holder']}", sorted(targets),
                      sorted(s.out.get(holder[0], [])))

    # References to the frozen heap: the targets are in the snapshot, flagged and in NonGC.
    fz = g["frozen"]
    if count_of(fz["holder"]):
        holder = s.of_type(fz["holder"])
        if len(holder) == 1:
            outs = s.out.get(holder[0], [])
            checks.eq(f"{where}: {fz['holder']} references (types)", sorted(fz["targets"]),
                      sorted(s.type_of(o) for o in outs))
            for o in outs:
                gen, flags = s.objects.get(o, (None, 0))
                checks.ok(f"{where}: {fz['holder']} -> {s.type_of(o)} is frozen (flag 1, "
                          f"generation 5)", gen == 5 and flags & FROZEN,
                          f"generation {gen}, flags {flags}")

    # Two fields of one object referencing the same object: two references.
    tw = g["twin"]
    if count_of(tw["holder"]):
        holder, target = s.of_type(tw["holder"]), s.of_type(tw["target"])
        if len(holder) == 1 and len(target) == 1:
            checks.eq(f"{where}: {tw['holder']} has {tw['refs']} references to its one "
                      f"{tw['target']}", [target[0]] * tw["refs"], s.out.get(holder[0], []))

    # (d) the Finalizable keeps its payload.
    fin = g["finalizable"]
    if count_of(fin["type"]):
        objs, payloads = s.of_type(fin["type"]), s.of_type(fin["payload"])
        if len(objs) == 1:
            checks.eq(f"{where}: {fin['type']} references its payload", payloads,
                      s.out.get(objs[0], []))


def check_roots(checks, truth, cp, s, where, addresses):
    """Roots of the objects the checkpoint names: "exact" compares the multiset of (kind, flags),
    "kinds" the set of distinct (kind, flags) (at least one root); handle roots must carry the
    handle's address as root_id."""
    for spec in cp["roots"]:
        label = spec["object"]
        objs = s.select(truth, label)
        if not checks.ok(f"{where}: roots of {label}: object found", len(objs) >= 1,
                         "not in the snapshot"):
            continue
        want = sorted((r["kind"], r["flags"]) for r in spec["roots"])
        bad = []
        for o in objs:
            pairs = sorted((k, f) for k, f, _ in s.roots_of.get(o, []))
            if spec["match"] == "exact":
                ok = pairs == want
            else:
                ok = bool(pairs) and sorted(set(pairs)) == sorted(set(want))
            if not ok:
                bad.append((o, pairs))
        name = f"{where}: roots of {label}" + (f" (all {len(objs)})" if len(objs) > 1 else "")
        checks.ok(name, not bad, f"expected {spec['match']} {fmt_roots(want)}, got "
                  + "; ".join(f"#{o}: {fmt_roots(p)}" for o, p in bad[:3])
                  + (f" ({len(bad)} objects differ)" if len(bad) > 1 else ""))
        if len(objs) != 1 or bad:
            continue
        got = s.roots_of.get(objs[0], [])
        for r in spec["roots"]:
            if "handle" not in r:
                continue
            addr = addresses.get(r["handle"])
            ids = [rid for k, f, rid in got if (k, f) == (r["kind"], r["flags"])]
            checks.ok(f"{where}: {label}'s handle root is handle '{r['handle']}'",
                      addr is not None and ids == [addr],
                      f"root_id {[hex(i) for i in ids]}, handle address "
                      f"{hex(addr) if addr is not None else None}")


# ------------------------------------------------------------------------------ (e) handles
def check_handles(checks, conn, truth, snaps, where="(e)"):
    addresses = {h["role"]: int(h["address"], 16) for h in truth["handles"]}
    if not checks.ok(f"{where} table handles exists", table_exists(conn, "handles")):
        return addresses
    rows = [dict(r) for r in conn.execute("SELECT * FROM handles")]
    for h in truth["handles"]:
        role, addr = h["role"], addresses[h["role"]]
        # The target's object id: from the first snapshot that holds it.
        target = None
        for s in snaps:
            found = s.select(truth, h["target"])
            if len(found) == 1:
                target = found[0]
                break
        if not checks.ok(f"{where} handle '{role}': its target {h['target']} is in a snapshot",
                         target is not None):
            continue
        mine = [r for r in rows if r["object_id"] == target]
        if not checks.eq(f"{where} handle '{role}': rows with object_id = its target", 1,
                         len(mine)):
            continue
        r = mine[0]
        checks.eq(f"{where} handle '{role}': handle_id == the GCHandle's address", hex(addr),
                  hex(r["handle_id"]) if isinstance(r["handle_id"], int) else r["handle_id"])
        checks.eq(f"{where} handle '{role}': kind", KIND_NAMES[h["kind"]],
                  named(r["kind"], KIND_NAMES))
        checks.eq(f"{where} handle '{role}': created_after_gc", h["created_after_gc"],
                  r["created_after_gc"])
        checks.eq(f"{where} handle '{role}': destroyed_after_gc", h["freed_after_gc"],
                  r["destroyed_after_gc"])
        # The snapshot_handles view joins each handle root to this lifetime.
        if table_exists(conn, "snapshot_handles"):
            seen = conn.execute(
                "SELECT snapshot, kind, handle, object_id FROM snapshot_handles "
                "WHERE handle_id = ? AND (handle = ? OR object_id = ?) ORDER BY snapshot",
                (addr, r["id"], target)).fetchall()  # the address may be reused later
            bad = [tuple(v) for v in seen if (v["handle"], v["object_id"]) != (r["id"], target)
                   or named(v["kind"], KIND_NAMES) != KIND_NAMES[h["kind"]]]
            expected = [sn.id for sn in snaps if target in sn.objects and
                        (h["freed_after_gc"] is None or sn.gc <= h["freed_after_gc"])]
            checks.ok(f"{where} handle '{role}': snapshot_handles rows (lifetime {r['id']}, "
                      f"kind {h['kind']}, its target) in snapshots {expected}",
                      not bad and [v["snapshot"] for v in seen] == expected,
                      f"rows {[tuple(v) for v in seen]}")
        if h["target_cleared_after_gc"] is not None:
            # A cleared weak handle is null: the runtime reports no root for it.
            late = [(s.id, o, k, f) for s in snaps if s.gc >= h["target_cleared_after_gc"]
                    for o, k, f, rid in s.roots if rid == addr]
            checks.ok(f"{where} handle '{role}': no root from GC {h['target_cleared_after_gc']} "
                      f"on (its target died)", not late, f"roots {late[:3]}")
            gone = [s.id for s in snaps if s.gc >= h["target_cleared_after_gc"] and
                    target in s.objects]
            checks.ok(f"{where} handle '{role}': its target is in no snapshot from GC "
                      f"{h['target_cleared_after_gc']} on", not gone, f"snapshots {gone}")
    return addresses


# ------------------------------------------------------------------------------ (f) the command
def check_snapshots_command(checks, heaplens, db, conn, log):
    rc, _, _ = run([heaplens, "snapshots", "--help"], log=log)
    if rc != 0:
        print("note: (f) skipped: `heaplens snapshots --help` exits "
              f"{rc}: the command does not exist yet")
        return
    rc, out, err = run([heaplens, "snapshots", db, "--json"], log=log)
    if not checks.ok("(f) heaplens snapshots --json runs", rc == 0,
                     f"exit {rc}: {err.strip()[:300]}"):
        return
    try:
        doc = json.loads(out)
    except ValueError as e:
        checks.ok("(f) heaplens snapshots --json is JSON", False, str(e))
        return
    rows = {r.get("snapshot"): r for r in doc.get("rows", [])}
    table = snapshot_rows(conn)
    checks.eq("(f) heaplens snapshots: one row per snapshot", sorted(table), sorted(rows))
    for sid, t in table.items():
        r = rows.get(sid)
        if r is None:
            continue
        for key, col in (("gc", "gc"), ("objects", "objects"), ("references", "refs"),
                         ("roots", "roots"), ("handles", "handles"), ("bytes", "bytes"),
                         ("model_missing", "model_missing"), ("model_extra", "model_extra")):
            if col in t.keys():
                checks.eq(f"(f) heaplens snapshots: snapshot {sid} {key}", t[col], r.get(key))
            else:
                checks.ok(f"(f) heaplens snapshots: snapshot {sid} has {key}",
                          isinstance(r.get(key), int), repr(r.get(key)))


# ------------------------------------------------------------------------------ (g) the recording
def check_run(checks, conn, where, exit_status):
    rows = conn.execute("SELECT status, mode, exit_status FROM run").fetchall()
    if checks.eq(f"{where}run has one row", 1, len(rows)):
        checks.eq(f"{where}run.status", "complete", rows[0]["status"])
        checks.eq(f"{where}run.mode", "full", rows[0]["mode"])
        checks.eq(f"{where}run.exit_status", exit_status, rows[0]["exit_status"])
    counters = {r[0]: r[1] for r in conn.execute("SELECT name, value FROM counters")}
    for c in DROP_COUNTERS:
        checks.eq(f"{where}counter {c}", 0, counters.get(c, "missing"))
    for c in sorted(counters):
        if c not in DROP_COUNTERS and c.endswith(("_dropped", "_anomalies", "_overflowed")):
            checks.eq(f"{where}counter {c}", 0, counters[c])
    bad = conn.execute("SELECT group_concat(gc) FROM gcs WHERE incomplete != 0").fetchone()[0]
    checks.ok(f"{where}no GC marked incomplete", bad is None, f"incomplete GCs: {bad}")


def check_recording(checks, a, db, truth, heaplens_rc, log):
    if heaplens_rc is not None:
        checks.eq("(g) heaplens record exit status", 0, heaplens_rc)
    conn = open_db(checks, db, "(g) ")
    if conn is None:
        return
    if "run" in [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]:
        check_run(checks, conn, "(g) ", 0)
    if not checks.ok("(a) the recording has the snapshot tables",
                     all(table_exists(conn, t) for t in
                         ("snapshots", "snapshot_objects", "snapshot_refs", "snapshot_roots")),
                     "missing: " + ", ".join(t for t in ("snapshots", "snapshot_objects",
                                                         "snapshot_refs", "snapshot_roots",
                                                         "handles")
                                             if not table_exists(conn, t))):
        return
    rows = snapshot_rows(conn)
    snaps = [Snapshot(conn, r) for r in rows.values()]
    checks.eq("(a) snapshots are numbered 1..n", list(range(1, len(snaps) + 1)),
              [s.id for s in snaps])
    gcs = {r["gc"]: r for r in conn.execute("SELECT gc, induced FROM gcs")}
    induced = sorted(g for g, r in gcs.items() if r["induced"])
    checks.eq("(a) one snapshot per induced GC, at that GC (default policy)", induced,
              sorted(s.gc for s in snaps))
    checks.eq("(a) the program's induced GCs are all there", truth["gcs_induced"], len(induced))
    for s in snaps:
        check_snapshot_integrity(checks, conn, s, f"(a) snapshot {s.id} (GC {s.gc})",
                                 trigger=TRIGGER_NAMES["induced"])

    addresses = check_handles(checks, conn, truth, snaps)
    by_gc = {s.gc: s for s in snaps}
    for cp in truth["checkpoints"]:
        where = f"checkpoint '{cp['label']}' (GC {cp['gc']})"
        if cp["redo"]:
            print(f"note: checkpoint '{cp['label']}' was redone {cp['redo']} time(s)")
        s = by_gc.get(cp["gc"])
        if not checks.ok(f"(b) {where}: has a snapshot", s is not None,
                         f"snapshots at GCs {sorted(by_gc)}"):
            continue
        gen = conn.execute("SELECT generation FROM gcs WHERE gc = ?", (cp["gc"],)).fetchone()
        checks.eq(f"(b) {where}: GC generation", cp["generation"], gen[0] if gen else None)
        check_counts(checks, conn, truth, cp, s, f"(b) {where}")
        check_shapes(checks, truth, cp, s, f"(c) {where}")
        check_roots(checks, truth, cp, s, f"(d) {where}", addresses)
    check_snapshots_command(checks, a.heaplens, db, conn, log)
    conn.close()


# ------------------------------------------------------------------------------ (h) on demand
def read_line(proc, sel, deadline, want):
    """Reads the program's stdout until a line starting with `want`; returns it, or None."""
    buf = getattr(proc, "_buf", b"")
    while True:
        nl = buf.find(b"\n")
        while nl >= 0:
            line, buf = buf[:nl].decode(errors="replace"), buf[nl + 1:]
            proc._lines.append(line)
            if line.startswith(want):
                proc._buf = buf
                return line
            nl = buf.find(b"\n")
        left = deadline - time.monotonic()
        if left <= 0 or not sel.select(timeout=left):
            proc._buf = buf
            return None
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            proc._buf = buf
            return None
        buf += chunk


def check_on_demand(checks, a, log):
    rc, _, err = run([a.heaplens, "snapshot", "--help"], log=log)
    if rc != 0:
        print(f"SKIP (h) on-demand snapshot: `heaplens snapshot --help` exits {rc} "
              f"({err.strip().splitlines()[0] if err.strip() else 'no message'}); "
              "the command does not exist yet")
        return
    work = os.path.join(a.workdir, "on_demand")
    os.makedirs(work, exist_ok=True)
    db, truth_path = os.path.join(work, "ondemand.db"), os.path.join(work, "truth.json")
    go = os.path.join(work, "go")
    for p in (db, db + "-wal", db + "-shm", truth_path, go):
        if os.path.exists(p):
            os.remove(p)
    cmd = [a.heaplens, "record", "-o", db, "--", a.dotnet, a.dll, truth_path,
           "--wait-for-snapshot", "--go-file", go, "--wait-timeout", str(a.timeout)]
    print("$ " + shlex.join(cmd))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc._lines, proc._buf = [], b""
    answer = None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + a.timeout
    try:
        ready = read_line(proc, sel, deadline, "SnapshotGraphs: ready ")
        if checks.ok("(h) the program says it is ready", ready is not None,
                     f"output so far: {proc._lines[-5:]}"):
            fields = dict(kv.split("=", 1) for kv in ready.split()[2:] if "=" in kv)
            pid = fields.get("pid", "")
            # The pid of `heaplens record` itself (pgrep -f finds it first): refused in one
            # line that names the program's pid.
            rc, out, err = run([a.heaplens, "snapshot", str(proc.pid)], log=log,
                               timeout=a.timeout)
            checks.ok("(h) heaplens snapshot <heaplens record's pid> names the program's pid",
                      rc == 1 and len(err.splitlines()) == 1
                      and f"heaplens snapshot {pid}" in err, f"exit {rc}: {err.strip()[:300]}")
            rc, out, err = run([a.heaplens, "snapshot", pid, "--json"], log=log,
                               timeout=a.timeout)
            if checks.ok(f"(h) heaplens snapshot {pid} exits 0", rc == 0,
                         f"exit {rc}: {err.strip()[:300]}"):
                try:
                    answer = json.loads(out)
                except ValueError:
                    answer = None
                checks.ok("(h) heaplens snapshot --json answers with the snapshot and its GC",
                          isinstance(answer, dict) and isinstance(answer.get("snapshot"), int)
                          and isinstance(answer.get("gc"), int), repr(out[:200]))
                gc_line = read_line(proc, sel, deadline, "SnapshotGraphs: GC #")
                checks.ok("(h) the program saw the GC that heaplens snapshot asked for",
                          gc_line is not None, f"output so far: {proc._lines[-5:]}")
    finally:
        open(go, "w").close()  # let the program finish, whatever happened
        try:
            out, err = proc.communicate(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        sel.close()
    tail = proc._lines + (proc._buf + out).decode(errors="replace").splitlines()
    with open(log, "a") as f:
        f.write(f"$ {shlex.join(cmd)}\n[exit {proc.returncode}]\n--- stdout\n" + "\n".join(tail)
                + f"\n--- stderr\n{err.decode(errors='replace')}\n")
    checks.eq("(h) heaplens record --wait-for-snapshot exit status", 0, proc.returncode)
    check_on_demand_recording(checks, db, truth_path, answer)


def check_on_demand_recording(checks, db, truth_path, answer=None):
    truth = load_truth(checks, truth_path, "on demand")
    conn = open_db(checks, db, "(h) ")
    if truth is None or conn is None:
        return
    od = truth.get("on_demand") or {}
    checks.eq("(h) GCs while the program waited", 1, od.get("gcs_while_waiting"))
    if not table_exists(conn, "snapshots"):
        checks.ok("(h) the recording has the snapshot tables", False)
        return
    rows = snapshot_rows(conn)
    requested = [r for r in rows.values()
                 if named(r["trigger"], TRIGGER_NAMES) == TRIGGER_NAMES["requested"]]
    if not checks.eq("(h) snapshots with trigger 'requested'", 1, len(requested)):
        return
    s = Snapshot(conn, requested[0])
    where = f"(h) requested snapshot {s.id} (GC {s.gc})"
    checks.eq(f"{where}: at the GC that happened while the program waited", od.get("gc"), s.gc)
    if isinstance(answer, dict):
        checks.eq(f"{where}: is the one heaplens snapshot answered", (answer.get("snapshot"),
                  answer.get("gc")), (s.id, s.gc))
        checks.eq(f"{where}: heaplens snapshot answered with its objects", answer.get("objects"),
                  rows[s.id]["objects"])
    check_snapshot_integrity(checks, conn, s, where, trigger=TRIGGER_NAMES["requested"])
    for other in rows.values():
        if other["snapshot"] != s.id:
            checks.eq(f"(h) snapshot {other['snapshot']} (GC {other['gc']}): drift",
                      (0, 0), (other["model_missing"], other["model_extra"]))
    if od.get("gc") == s.gc:
        od = dict(od, died=od.get("died", {}))
        check_counts(checks, conn, truth, od, s, where)
        check_shapes(checks, truth, od, s, where)
        addresses = {h["role"]: int(h["address"], 16) for h in truth["handles"]}
        check_roots(checks, truth, od, s, where, addresses)
    if table_exists(conn, "run"):
        check_run(checks, conn, "(h) ", 0)
    conn.close()



# What a schema 7 file cannot know (SCHEMA.md, schema 8): which classes have a finalizer and the
# collections' own counts, so `inspect` finds no such objects there.
SCHEMA8_FINDINGS = ("finalizable", "finalized-reachable", "under-filled")


def same_answer(cmd, out8, out7):
    """Schema 8's answer equals schema 7's; `inspect`'s once the findings only schema 8 can make
    are left out of it (both parsed: the findings compared in order)."""
    if cmd[0] != "inspect":
        return out8 == out7
    doc8, doc7 = json.loads(out8), json.loads(out7)
    doc8["findings"] = [f for f in doc8["findings"] if f.get("kind") not in SCHEMA8_FINDINGS]
    return doc8 == doc7


def check_compact(checks, a, db, log, where="(i)"):
    if not checks.ok(f"{where} the recording has schema 7's rows (HEAPLENS_SNAPSHOT_ROWS=1)",
                     check_snapshot_forms(checks, db, where)):
        return
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    snapshots = [r[0] for r in conn.execute("SELECT snapshot FROM snapshots ORDER BY 1")]
    top_type = conn.execute("SELECT type FROM snapshot_contents WHERE snapshot = ? AND type LIKE "
                            "'HeapLens.%' GROUP BY type ORDER BY count(*) DESC, type LIMIT 1",
                            (snapshots[-1],)).fetchone()
    blocks_bytes = conn.execute("SELECT sum(length(ids) + length(kinds) + coalesce(length(refs), 0)"
                                " + coalesce(length(fields), 0)) FROM snapshot_blocks").fetchone()[0]
    conn.close()
    print(f"{where} {len(snapshots)} snapshots; blocks' text: {blocks_bytes} bytes")
    # schema 7: the writer's rows as the table snapshot_objects, no blocks
    form7 = os.path.join(a.workdir, "form7.db")
    form8 = os.path.join(a.workdir, "form8.db")
    for p in (form7, form8):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(p + suffix):
                os.remove(p + suffix)
        shutil.copyfile(db, p)
    c7 = sqlite3.connect(form7)
    c7.executescript("PRAGMA legacy_alter_table = ON; DROP VIEW snapshot_objects;"
                     "ALTER TABLE snapshot_object_rows RENAME TO snapshot_objects;"
                     "DROP TABLE snapshot_blocks; PRAGMA user_version = 7;")
    c7.close()
    commands = [["snapshots", "--json"], ["leaks", "--json"], ["diff", "--json"]]
    commands += [["retention", "--snapshot", str(s), "--json", "--top", "30"] for s in snapshots]
    commands += [["inspect", "--snapshot", str(snapshots[-1]), "--json"]]
    if top_type:
        commands += [["roots", "--type", top_type[0], "--json"]]
    for cmd in commands:
        rc8, out8, err8 = run([a.heaplens, cmd[0], form8] + cmd[1:], log=log)
        rc7, out7, err7 = run([a.heaplens, cmd[0], form7] + cmd[1:], log=log)
        checks.ok(f"{where} heaplens {' '.join(cmd)}: schema 8 and 7 answer the same",
                  rc8 == rc7 == 0 and same_answer(cmd, out8.replace(form8, "F"),
                                                out7.replace(form7, "F")),
                  f"exit {rc8} / {rc7}; {err8.strip()} {err7.strip()}")


def main():
    ap = arguments(__doc__.split("\n")[0], dll_required=False, timeout=300,
                   dll_help="path of SnapshotGraphs.dll (not needed with --db)")
    ap.add_argument("--db", help="check this existing recording instead of recording "
                                 "(needs --truth; the on-demand part is not run)")
    ap.add_argument("--truth", help="ground truth JSON of the --db recording")
    ap.add_argument("--on-demand-db", help="with --db: also check this existing recording of "
                                           "--wait-for-snapshot (needs --on-demand-truth)")
    ap.add_argument("--on-demand-truth", help="ground truth JSON of the --on-demand-db recording")
    ap.add_argument("--no-on-demand", action="store_true", help="skip the on-demand part (h)")
    a, checks, log = begin(ap)

    if recording_given(ap, a):
        db, truth_path, heaplens_rc = a.db, a.truth, None
    else:
        db = os.path.join(a.workdir, "snapshotgraphs.db")
        truth_path = os.path.join(a.workdir, "truth.json")
        # --handles: the handle lifetimes of (e) need the runtime's GC monitoring at every GC;
        # the on-demand recording (h) is made without it.
        # HEAPLENS_SNAPSHOT_ROWS=1: schema 7's rows as well, for (i)
        os.environ["HEAPLENS_SNAPSHOT_ROWS"] = "1"
        heaplens_rc = record(a, db, truth_path, [], log, record_options=["--handles"])
        del os.environ["HEAPLENS_SNAPSHOT_ROWS"]

    truth = load_truth(checks, truth_path, "checkpoints")
    if truth is not None:
        check_recording(checks, a, db, truth, heaplens_rc, log)
        check_compact(checks, a, db, log)
    if a.db and a.on_demand_db:
        check_on_demand_recording(checks, a.on_demand_db, a.on_demand_truth)
    elif not a.db and not a.no_on_demand:
        check_on_demand(checks, a, log)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
