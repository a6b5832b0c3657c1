#!/usr/bin/env python3
"""bench/record/run.py's counters_of reads the objects a recording stores from the store's own
counts (object_chunks.count), not by counting the `objects` view, which expands every object's
JSON (3-4 minutes on the 10M-object heap). A recording made by the real writer (report_fixture
small) gets 200 packed rows of 4,096 objects; counters_of must give their number while SQLite
runs fewer than 2M VM instructions (counting the view takes hundreds of millions), and give the
table's count(*) once `objects` is a table."""
import argparse
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import types

ROWS, PER_ROW = 200, 4096
STEP = 1000  # VM instructions per progress callback


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run-py", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    db = os.path.join(a.workdir, "small.db")
    r = subprocess.run([a.fixture, "small", db], capture_output=True, text=True)
    if r.returncode != 0:
        print("report_fixture failed: " + r.stderr)
        return 1
    con = sqlite3.connect(db)
    stored = con.execute("SELECT coalesce(sum(count), 0) FROM object_chunks").fetchone()[0]
    chunk = json.dumps([[1 if i else 10_000_000, 1, 24] for i in range(PER_ROW)])
    con.executemany("INSERT INTO object_chunks (gc, thread, heap, generation, count, objects) "
                    "VALUES (1, NULL, 0, 1, ?, ?)", [(PER_ROW, chunk)] * ROWS)
    con.commit()
    con.close()
    want = stored + ROWS * PER_ROW

    spec = importlib.util.spec_from_file_location("bench_run", a.run_py)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    steps = [0]

    def connect(*args, **kwargs):
        c = sqlite3.connect(*args, **kwargs)
        c.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + STEP) and 0, STEP)
        return c

    run.sqlite3 = types.SimpleNamespace(connect=connect, Error=sqlite3.Error)
    failures = []
    k = run.counters_of(db)
    if k.get("survivors") != want:
        failures.append("survivors %r, want %d" % (k.get("survivors"), want))
    if steps[0] >= 2_000_000:
        failures.append("%d VM instructions: the objects were counted one by one" % steps[0])
    # once `objects` is a table (a command built its rows), its count
    con = sqlite3.connect(db)
    con.executescript("DROP VIEW objects; CREATE TABLE objects (id INTEGER PRIMARY KEY);"
                      "INSERT INTO objects VALUES (1), (2), (3);")
    con.close()
    k = run.counters_of(db)
    if k.get("survivors") != 3:
        failures.append("with an objects table: survivors %r, want 3" % k.get("survivors"))
    for f in failures:
        print("FAIL " + f)
    print("%s counters_of (%d VM instructions)" % ("FAIL" if failures else "ok  ", steps[0]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
