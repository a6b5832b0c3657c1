#!/usr/bin/env python3
"""heaplens attach on an ASP.NET Core minimal API under load (examples/WebApi, server GC).

    check_attach_aspnet.py --heaplens build/bin/heaplens --dll build/examples/WebApi/WebApi.dll
                           --workdir DIR [--dotnet dotnet] [--requests 400]

WebApi is started WITHOUT heaplens on 127.0.0.1 (a free port). Four client threads send
requests (GET /orders/N) until told to stop; once they have been answered --warmup times,
`heaplens attach PID` starts (no --duration), `heaplens snapshot PID` is retried until the
session exists, the clients are let run for --while-attached more answers, and the session is
ended as a user would end it: Ctrl-C (SIGINT) to `heaplens attach`. After the detach a second,
fixed load of --requests requests runs. Every step waits on a count, never on a clock; a
deadline bounds each wait. Checks:

  - the app runs with server GC; every request before, during and after the session is
    answered 200 (non-2xx: 0), requests were answered while attached, and the app stops on
    SIGINT afterwards ("WebApi: stopped", exit 0);
  - heaplens attach exits 0; the database: run.mode 'attach', status complete, every loss and
    anomaly counter 0, >= 2 snapshots (at attach, requested, at the end) with model_missing 0,
    allocation samples stored (sampling row, alloc_samples rows) and `allocations` says it
    shows estimates;
  - `heaplens leaks`, `retention`, `survivors` and `report` run on it with exit status 0.

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
from e2elib import (LOSS, WebApiOutput, arguments, begin, free_port, get,  # noqa: E402
                    heaplens_json, kill_if_running, remove_db, run)

class Load:
    """Client threads sending GET /orders/N to 127.0.0.1:port: `limit` requests in all, or
    until stop(); answered() counts the answers so far (a condition to wait on)."""

    def __init__(self, port, limit, threads=4):
        self.port, self.limit = port, limit
        self.sent, self.done, self.statuses = 0, 0, {}
        self.cond = threading.Condition()
        self.stopping = False
        self.threads = [threading.Thread(target=self.client, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def client(self):
        while True:
            with self.cond:
                if self.stopping or self.sent >= self.limit:
                    return
                i = self.sent
                self.sent += 1
            try:
                st, _ = get(self.port, f"/orders/{50 + i % 200}")
            except OSError as e:
                st = f"error: {e}"
            with self.cond:
                self.statuses[st] = self.statuses.get(st, 0) + 1
                self.done += 1
                self.cond.notify_all()

    def answered(self):
        with self.cond:
            return self.done

    def wait_for(self, n, timeout):
        """Until n answers (or the load's end, or the deadline): True when n were reached."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.done < n and self.done < self.limit and time.monotonic() < deadline:
                self.cond.wait(max(0.0, min(1.0, deadline - time.monotonic())))
            return self.done >= n

    def finish(self):
        with self.cond:
            self.stopping = True
        for t in self.threads:
            t.join(120)
        return self.done, dict(self.statuses)


def non_2xx(statuses):
    return sum(n for st, n in statuses.items() if not (isinstance(st, int) and 200 <= st < 300))


def check_database(checks, a, db, log):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        mode, status = conn.execute("SELECT mode, status FROM run").fetchone()
        checks.eq("run.mode", "attach", mode)
        checks.eq("run.status", "complete", status)
        counters = dict(conn.execute("SELECT name, value FROM counters").fetchall())
        for c in LOSS:
            checks.eq(f"counter {c}", 0, counters.get(c, "missing"))
        bad = conn.execute("SELECT group_concat(gc) FROM gcs WHERE incomplete != 0").fetchone()[0]
        checks.ok("no GC marked incomplete", bad is None, f"incomplete GCs: {bad}")
        snaps = conn.execute("SELECT snapshot, trigger, model_missing, objects FROM snapshots "
                             "ORDER BY snapshot").fetchall()
        checks.ok("at least 2 snapshots (at attach, requested, at the end)", len(snaps) >= 2,
                  str(len(snaps)))
        for snapshot, trigger, missing, objects in snaps:
            checks.eq(f"snapshot {snapshot} ({trigger}) model_missing", 0, missing)
            checks.ok(f"snapshot {snapshot} has the app's objects", objects > 1000, str(objects))
        sampling = conn.execute("SELECT source, samples FROM sampling").fetchone()
        samples = conn.execute("SELECT count(*) FROM alloc_samples").fetchone()[0]
        checks.ok("allocation samples stored (sampling row, alloc_samples rows)",
                  sampling is not None and samples > 0 and sampling[1] == samples,
                  f"sampling {sampling}, {samples} alloc_samples rows")
        orders = conn.execute("SELECT coalesce(sum(est_count), 0) FROM allocation_estimates_by_type "
                              "WHERE type = 'Order'").fetchone()[0]
        checks.ok("Order allocations estimated from the samples", orders > 0, str(orders))
    finally:
        conn.close()
    allocations = heaplens_json(checks, a.heaplens, ["allocations", db], log)
    if allocations:
        checks.eq("heaplens allocations says it shows estimates", True, allocations.get("estimated"))
    for command in (["leaks", db], ["retention", db], ["survivors", db], ["report", db]):
        heaplens_json(checks, a.heaplens, command, log)


def main():
    ap = arguments(__doc__.split("\n")[0], timeout=300)
    ap.add_argument("--warmup", type=int, default=50, help="answers before attaching")
    ap.add_argument("--while-attached", type=int, default=200,
                    help="answers after the requested snapshot, before the detach")
    ap.add_argument("--requests", type=int, default=400, help="the load after the detach")
    ap.add_argument("--limit", type=int, default=100000, help="at most this many requests "
                    "in the load that spans the session")
    a, checks, log = begin(ap)
    # A shell's background job starts with SIGINT ignored, and a program inherits that: the app
    # would never see the Ctrl-C this script sends it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    db = os.path.join(a.workdir, "webapi-attach.db")
    remove_db(db)
    port = free_port()
    cmd = [a.dotnet, a.dll, "--urls", f"http://127.0.0.1:{port}"]
    print("$ " + " ".join(cmd))
    env = dict(os.environ)
    for k in [k for k in env if k.startswith(("CORECLR_", "DOTNET_ENABLE_PROFIL", "HEAPLENS_"))]:
        del env[k]  # started without heaplens
    app = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True, env=env)
    app_output = WebApiOutput(app.stdout)
    attach = None
    try:
        if not checks.ok("app listening", app_output.listening.wait(a.timeout), app_output.tail()):
            return checks.summary()
        pid = app_output.listening.pid
        checks.eq("app runs with server GC", "server", app_output.listening.gc)
        checks.ok("app started without heaplens", "libheaplens.so" not in open(f"/proc/{pid}/maps").read())

        load = Load(port, a.limit)
        checks.ok(f"load running: {a.warmup} answers before the attach",
                  load.wait_for(a.warmup, a.timeout), str(load.answered()))
        attach_cmd = [a.heaplens, "attach", str(pid), "-o", db, "--json"]
        print("$ " + " ".join(attach_cmd))
        at_attach = load.answered()
        attach = subprocess.Popen(attach_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        snap_rc, err = None, ""
        deadline = time.monotonic() + a.timeout
        while snap_rc != 0 and time.monotonic() < deadline and attach.poll() is None:
            snap_rc, out, err = run([a.heaplens, "snapshot", str(pid), "--json"], log=log,
                                    timeout=a.timeout)
            if snap_rc != 0 and "not being recorded" not in err and "not connected" not in err:
                break
            if snap_rc != 0:
                time.sleep(0.05)  # polling for the session to exist, not waiting on it
        checks.eq("heaplens snapshot PID under load, while attached", 0, snap_rc)
        after_snapshot = load.answered()
        checks.ok(f"{a.while_attached} more answers while attached",
                  load.wait_for(after_snapshot + a.while_attached, a.timeout),
                  str(load.answered() - after_snapshot))
        checks.ok("heaplens attach still running before Ctrl-C", attach.poll() is None)
        attach.send_signal(signal.SIGINT)  # Ctrl-C: detach
        try:
            out, err = attach.communicate(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            attach.kill()
            out, err = attach.communicate()
        at_detach = load.answered()
        with open(log, "a") as f:
            f.write(f"$ {' '.join(attach_cmd)}\n[exit {attach.returncode}]\n{out}\n{err}\n")
        checks.eq("heaplens attach exits 0 after Ctrl-C", 0, attach.returncode)
        try:
            summary = json.loads(out)
        except ValueError:
            summary = {}
        checks.eq("attach summary: pid", pid, summary.get("pid"))
        checks.eq("attach summary: the process did not exit", False, summary.get("process_exited"))
        checks.ok("requests answered while attached", at_detach - at_attach >= a.while_attached,
                  f"{at_detach - at_attach}")
        done, statuses = load.finish()
        checks.eq("load spanning the session: non-2xx answers", 0, non_2xx(statuses))
        checks.ok("load spanning the session: bounded", done <= a.limit, str(done))

        after = Load(port, a.requests)
        after.wait_for(a.requests, a.timeout)
        done, statuses = after.finish()
        checks.eq(f"after the detach: {a.requests} requests answered", a.requests, done)
        checks.eq("after the detach: non-2xx answers", 0, non_2xx(statuses))
        st, body = get(port, "/stats")
        stats = json.loads(body) if st == 200 else {}
        checks.eq("GET /stats after the detach", 200, st)
        checks.ok("the app counted every request", stats.get("Requests", 0) >= at_detach + a.requests,
                  f"{stats.get('Requests')} >= {at_detach + a.requests}")
        os.killpg(app.pid, signal.SIGINT)
        if checks.ok("app stopped on Ctrl-C", app_output.stopped.wait(60), app_output.tail()):
            checks.eq("app exit status", 0, app.wait(a.timeout))
    finally:
        kill_if_running(attach)
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()
        app_output.join(5)
        with open(log, "a") as f:
            f.write("".join(app_output.lines))

    if os.path.exists(db):
        check_database(checks, a, db, log)
    else:
        checks.ok("the session database exists", False, db)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
