#!/usr/bin/env python3
"""End-to-end test: an ASP.NET Core minimal API (examples/WebApi, server GC) recorded under load.

    check_aspnet.py --heaplens build/bin/heaplens --dll build/examples/WebApi/WebApi.dll --workdir DIR

Starts `heaplens record -- dotnet WebApi.dll --urls http://127.0.0.1:PORT` in a process group
of its own, as a terminal would, sends a bounded load from four client threads (127.0.0.1
only, --requests in all, at most --load-seconds), takes `heaplens snapshot PID` while the load
runs, then presses Ctrl-C: SIGINT to the whole process group. Checks, each exact:

  - the app served every request (HTTP 200) and stopped on Ctrl-C ("WebApi: stopped");
  - heaplens record exited with the app's status (0), and the recording is complete with every
    loss and anomaly counter 0 (writer_anomalies included) and no incomplete GC;
  - the snapshot taken under load is stored with a clean self-check (model_missing and
    model_extra 0), and the GCs recorded are at least those the app had counted at /stats;
  - the app ran with server GC (the Web SDK's default), and the collector was in it.

Python 3 standard library only. Prints every mismatch and a final "N passed, M failed" line.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import LOSS, WebApiOutput, arguments, begin, free_port, get, remove_db, run  # noqa: E402

def main():
    ap = arguments(__doc__.split("\n")[0], timeout=300)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--load-seconds", type=float, default=60)
    a, checks, log = begin(ap)
    db = os.path.join(a.workdir, "webapi.db")
    remove_db(db)
    port = free_port()
    cmd = [a.heaplens, "record", "-o", db, "--snapshot", "none", "--", a.dotnet, a.dll,
           "--urls", f"http://127.0.0.1:{port}"]
    print("$ " + " ".join(cmd))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own process group, like a terminal job
    app_output = WebApiOutput(proc.stdout)
    try:
        if not checks.ok("app listening", app_output.listening.wait(a.timeout), app_output.tail()):
            return checks.summary()
        checks.eq("app runs with server GC", "server", app_output.listening.gc)
        maps = open(f"/proc/{app_output.listening.pid}/maps").read()
        checks.ok("collector loaded in the app", "libheaplens.so" in maps)

        statuses, lock = {}, threading.Lock()
        deadline = time.monotonic() + a.load_seconds
        todo = iter(range(a.requests))

        def client():
            while time.monotonic() < deadline:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                try:
                    st, _ = get(port, f"/orders/{50 + i % 200}")
                except OSError as e:
                    st = str(e)
                with lock:
                    statuses[st] = statuses.get(st, 0) + 1
        clients = [threading.Thread(target=client) for _ in range(4)]
        for t in clients:
            t.start()
        # A snapshot while the load runs.
        rc, out, err = run([a.heaplens, "snapshot", str(app_output.listening.pid)], log=log, timeout=a.timeout)
        checks.eq("heaplens snapshot PID under load: exit status", 0, rc)
        for t in clients:
            t.join()
        checks.eq("every request answered 200", {200: a.requests}, statuses)
        st, body = get(port, "/stats")
        stats = json.loads(body) if st == 200 else {}
        # Ctrl-C in a terminal: SIGINT to the whole foreground process group.
        os.killpg(proc.pid, signal.SIGINT)
        if checks.ok("app stopped on Ctrl-C", app_output.stopped.wait(60), app_output.tail()):
            try:
                checks.eq("heaplens record exit status == app's (0)", 0, proc.wait(a.timeout))
            except subprocess.TimeoutExpired:
                checks.ok("heaplens record ended after the app", False, f"{a.timeout} s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        app_output.join(5)
        with open(log, "a") as f:
            f.write("".join(app_output.lines))

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    checks.eq("run.status", "complete", conn.execute("SELECT status FROM run").fetchone()[0])
    counters = dict(conn.execute("SELECT name, value FROM counters").fetchall())
    for c in LOSS:
        checks.eq(f"counter {c}", 0, counters.get(c, "missing"))
    bad = conn.execute("SELECT group_concat(gc) FROM gcs WHERE incomplete != 0").fetchone()[0]
    checks.ok("no GC marked incomplete", bad is None, f"incomplete GCs: {bad}")
    gcs = conn.execute("SELECT count(*) FROM gcs").fetchone()[0]
    checks.ok("GCs recorded >= the app's GC.CollectionCount(0) at /stats",
              gcs >= stats.get("Gen0", 1 << 60), f"{gcs} recorded, app counted {stats.get('Gen0')}")
    snaps = conn.execute("SELECT trigger, model_missing, model_extra, objects FROM snapshots").fetchall()
    if checks.eq("one snapshot (taken under load)", 1, len(snaps)):
        trigger, missing, extra, objects = snaps[0]
        checks.eq("snapshot trigger", "requested", trigger)
        checks.eq("snapshot self-check model_missing", 0, missing)
        checks.eq("snapshot self-check model_extra", 0, extra)
        checks.ok("snapshot has objects", objects > 1000, str(objects))
    conn.close()
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
