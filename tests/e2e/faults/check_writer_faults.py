#!/usr/bin/env python3
"""Faults of the writer while a real .NET program is recorded (design: "the collector never harms
its host"). AllocBench runs under `heaplens record`; once the first GC is committed the test
either kills the writer (SIGKILL) or stops it (SIGSTOP) until the program has finished its work;
a third run records into files that cannot grow past 4 MiB (a full disk).

Checked: the program runs to its end and `heaplens record` exits with its status; nothing
already committed is lost and the database stays readable; a writer paused for a while with the
default buffers costs nothing (the collector waits for it); a writer stalled while the buffers are
small makes the program's threads wait until the collector gives the writer up (10 s without
progress), then the program goes on and the run reads as truncated, never a blocked program. One line per failed check, then "N passed, M failed".

Synchronisation is on observable conditions only (a committed GC in the database, the program's
own output line, process exit), each with a timeout -- never on sleeps."""
import argparse
import faulthandler
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import Checks, count_rows, remove_stale  # noqa: E402  (shared e2e helpers)

checks = Checks(verbose=False, fail_prefix="FAIL ")
check = checks.ok


def wait_for(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)  # polling interval of a condition check, not a synchronisation sleep
    raise SystemExit(f"FAIL timed out waiting for {what}")


def committed_gcs(db):
    return count_rows(db, "gcs", busy_timeout=0.1)


def writer_pid(heaplens_pid, proc):
    """The writer is the child of `heaplens record` that is not the program (dotnet)."""
    if proc.poll() is not None:
        raise SystemExit("FAIL the recording ended before the fault could be injected; "
                         "raise --iterations")
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(heaplens_pid)],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, comm = line.split(None, 1)
        if comm.strip() == "heaplens":
            return int(pid)
    return None


def heaplens_json(hl, *args):
    r = subprocess.run([hl, *args, "--json"], capture_output=True, text=True)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None), r.stderr


def start(hl, dll, db, iterations, env, preexec_fn=None):
    # An earlier run's file would satisfy "a committed GC" at once, and the writer would be
    # stopped before the program even starts.
    remove_stale(db, db + "-wal", db + "-shm", db + "-journal")
    return subprocess.Popen([hl, "record", "--force", "-o", db, "--", "dotnet", dll,
                             str(iterations), "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=preexec_fn)


def program_line(proc):
    """Reads the program's stdout until its final 'AllocBench:' line."""
    for line in proc.stdout:
        if line.startswith("AllocBench:"):
            return line
    return None


def writer_killed(hl, dll, workdir, iterations):
    db = os.path.join(workdir, "killed.db")
    proc = start(hl, dll, db, iterations, dict(os.environ))
    wait_for("killed: the first committed GC", lambda: committed_gcs(db) >= 1, 120)
    gcs_before = committed_gcs(db)
    wpid = wait_for("the writer process", lambda: writer_pid(proc.pid, proc), 10)
    os.kill(wpid, signal.SIGKILL)
    line = program_line(proc)
    err = proc.stderr.read()
    status = proc.wait(timeout=300)
    check("killed: the program ran to its end", line is not None, err.strip())
    check("killed: heaplens exits with the program's status (0)", status == 0, f"status {status}")
    check("killed: heaplens says the writer failed", "writer failed" in err, err.strip())
    rc, gcs, e = heaplens_json(hl, "gcs", db)
    check("killed: the database is readable", rc == 0 and gcs is not None, e.strip())
    if gcs:
        check("killed: every GC committed before the kill is there",
              len(gcs["rows"]) >= gcs_before, f"{len(gcs['rows'])} < {gcs_before}")
        check("killed: GC ordinals are 1..n without gaps",
              [r["gc"] for r in gcs["rows"]] == list(range(1, len(gcs["rows"]) + 1)))
    rc, info, e = heaplens_json(hl, "info", db)
    check("killed: the run is not marked complete",
          rc == 0 and info and info["run"]["status"] != "complete", json.dumps(info and info["run"]))


def stall_writer(hl, dll, db, iterations, env):
    """Records AllocBench and stops the writer (SIGSTOP) after the first committed GC until the
    program has finished its work. Returns (program line, heaplens status, stderr)."""
    proc = start(hl, dll, db, iterations, env)
    wait_for("stalled: the first committed GC", lambda: committed_gcs(db) >= 1, 120)
    wpid = wait_for("the writer process", lambda: writer_pid(proc.pid, proc), 10)
    os.kill(wpid, signal.SIGSTOP)
    try:
        line = program_line(proc)  # the program finishes its work while the writer is stopped
    finally:
        os.kill(wpid, signal.SIGCONT)
    err = proc.stderr.read()
    return line, proc.wait(timeout=300), err


def stored_allocations(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        # Reported allocations (flags 0): what allocs_seen counts. Flagged rows are the runtime's
        # unreported allocations (SCHEMA.md), not part of it.
        return con.execute("SELECT coalesce(sum(count), 0) FROM alloc_counts WHERE flags = 0").fetchone()[0]
    finally:
        con.close()


def check_gcs_whole(what, db, line):
    """Every GC of the program reaches the database, numbered without gaps."""
    program_gcs = int(re.search(r"gcs=(\d+)/", line or "gcs=-1/").group(1))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    stored, last = con.execute("SELECT count(*), max(gc) FROM gcs").fetchone()
    con.close()
    check(f"{what}: GCs stored without gaps", stored == last, f"{stored} GCs, the last is {last}")
    check(f"{what}: every GC of the program is stored", program_gcs > 0 and stored >= program_gcs,
          f"{stored} stored, the program counted {program_gcs}")


def writer_paused(hl, dll, workdir, iterations):
    """A writer stopped for a while with the default buffers: the collector waits for it (it keeps
    making progress once resumed), so nothing at all is lost."""
    db = os.path.join(workdir, "paused.db")
    line, status, err = stall_writer(hl, dll, db, iterations, dict(os.environ))
    check("paused: the program finished its work while the writer was stopped", line is not None)
    check("paused: heaplens exits with the program's status (0)", status == 0, f"status {status} {err.strip()}")
    rc, info, e = heaplens_json(hl, "info", db)
    if check("paused: the database is readable", rc == 0 and info is not None, e.strip()):
        counters = info["counters"]
        check("paused: the run is complete", info["run"]["status"] == "complete", json.dumps(info["run"]))
        check("paused: nothing lost", counters.get("allocs_dropped") == 0
              and counters.get("gcs_dropped") == 0 and info["run"].get("loss") is None,
              json.dumps(counters))
        check("paused: every allocation stored", stored_allocations(db) == counters.get("allocs_seen"),
              f"{stored_allocations(db)} stored, {counters.get('allocs_seen')} seen")
    check_gcs_whole("paused", db, line)


def writer_stalled(hl, dll, workdir, iterations):
    """A writer stopped while the buffers are small: the collector's outbox fills, the thread
    buffer pool fills behind it, and the program's threads wait for the collector (full mode
    drops nothing while the writer may still come back). After 10 s without progress the
    collector gives the writer up (writer_lost: nothing more is sent, what follows is counted as
    dropped) and the program goes on to its end. The counters that say so never reach the
    writer, so the run reads as truncated: what was committed stays whole and readable, and the
    commands say the counts are lower bounds."""
    db = os.path.join(workdir, "stalled.db")
    env = dict(os.environ, HEAPLENS_BUFFER_MB="1", HEAPLENS_POOL_MB="4")
    line, status, err = stall_writer(hl, dll, db, iterations, env)
    check("stalled: the program finished its work while the writer was stopped", line is not None)
    check("stalled: heaplens exits with the program's status (0)", status == 0, f"status {status} {err.strip()}")
    rc, info, e = heaplens_json(hl, "info", db)
    check("stalled: the database is readable", rc == 0 and info is not None, e.strip())
    if info:
        counters = info["counters"]
        check("stalled: nothing was dropped before the writer was given up",
              counters.get("allocs_dropped", 0) == 0 and counters.get("writer_lost", 0) == 0,
              json.dumps(counters))
        check("stalled: the run is truncated (the writer was given up: no end-of-run record)",
              info["run"]["status"] == "truncated",
              f'{info["run"]["status"]}; flags {info["run"].get("flags")}; {json.dumps(counters)}')
    r = subprocess.run([hl, "allocations", db, "--top", "1"], capture_output=True, text=True)
    check("stalled: commands say that counts are lower bounds",
          "lower bounds" in r.stdout + r.stderr, r.stdout + r.stderr)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    stored, last = con.execute("SELECT count(*), max(gc) FROM gcs").fetchone()
    con.close()
    check("stalled: GCs stored without gaps", stored == last, f"{stored} GCs, the last is {last}")


def writer_disk_full(hl, dll, workdir, iterations):
    """The database's files cannot grow past 4 MiB (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail
    as on a full disk, without root or a small file system)."""
    db = os.path.join(workdir, "full.db")

    def small_files():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))

    proc = start(hl, dll, db, iterations, dict(os.environ), preexec_fn=small_files)
    line = program_line(proc)
    err = proc.stderr.read()
    status = proc.wait(timeout=300)
    lines = [x for x in err.splitlines() if x.strip()]
    check("disk full: the program ran to its end", line is not None, err.strip())
    check("disk full: heaplens exits with the program's status (0)", status == 0,
          f"status {status}")
    check("disk full: heaplens says what happened in one line", len(lines) == 1, err.strip())
    check("disk full: the line names the file and the error",
          bool(lines) and db in lines[0] and ("disk I/O error" in lines[0] or "full" in lines[0])
          and "committed before" in lines[0], err.strip())
    check("disk full: no GLib critical, no follow-on SQLite error",
          "CRITICAL" not in err and "no transaction" not in err and "savepoint" not in err,
          err.strip())
    rc, gcs, e = heaplens_json(hl, "gcs", db)
    check("disk full: the database is readable", rc == 0 and gcs is not None, e.strip())
    if gcs:
        check("disk full: GCs committed before are there, 1..n without gaps",
              len(gcs["rows"]) >= 1 and
              [r["gc"] for r in gcs["rows"]] == list(range(1, len(gcs["rows"]) + 1)),
              json.dumps([r["gc"] for r in gcs["rows"]]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--dll", required=True, help="AllocBench.dll")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--iterations", type=int, default=80000,
                    help="AllocBench iterations: the program must outlive the injected fault")
    ap.add_argument("--deadline", type=int, default=420,
                    help="seconds after which the test prints where it is stuck and exits")
    a = ap.parse_args()
    faulthandler.dump_traceback_later(a.deadline, exit=True)  # a hang says where, then fails
    os.makedirs(a.workdir, exist_ok=True)
    writer_killed(a.heaplens, a.dll, a.workdir, a.iterations)
    writer_paused(a.heaplens, a.dll, a.workdir, a.iterations)
    writer_stalled(a.heaplens, a.dll, a.workdir, a.iterations)
    writer_disk_full(a.heaplens, a.dll, a.workdir, a.iterations)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
