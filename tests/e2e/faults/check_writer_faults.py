#!/usr/bin/env python3
"""Faults of the writer while a real .NET program is recorded (design: "the collector never harms
its host"). AllocBench runs under `heaplens record`; once the first GC is committed the test
either kills the writer (SIGKILL) or stops it (SIGSTOP) until the program has finished its work;
a third run records into files that cannot grow past 4 MiB (a full disk).

Checked: the program runs to its end and `heaplens record` exits with its status; nothing
already committed is lost and the database stays readable; a writer paused for a while with the
default buffers costs nothing (the collector waits for it); a writer stalled while the buffers are
small makes the program's threads wait until the collector gives the writer up (10 s without
progress), then the program goes on and the run reads as truncated, never a blocked program.
A writer stopped until the program has exited is given up by the collector, whose end file brings
the true reason (writer-stalled) and counts into the file; a killed writer and a full disk are
stored by `heaplens record` (writer-killed, write-failed, the exit status, the GCs missing); a
killed `heaplens record` is stored by its writer (recorder-killed), which cleans up the session's
directory; what a recorder and writer killed together leave is removed by the next run. A
sqlite3 shell holding a read transaction on the recording through its end (reader_holds) makes
the writer keep WAL mode, never fail.
One line per failed check, then "N passed, M failed".

Synchronisation is on observable conditions only, never on time: AllocBench runs with --gate, so
every thread stops half-way and the program says so on its output; the test waits there until
the GCs the program has had are committed, injects the fault and only then lets the program go
on (it goes on when the gate file exists). So the fault always meets a program with work left,
however slow the machine; the work after the gate fits the default buffers (the paused writer
costs nothing) and overflows the small ones (the stalled writer is given up). The waits have
generous timeouts that only turn a hang into a failure. The sessions' directories (TMPDIR) are
short ones in /tmp; a TMPDIR too long for a unix socket is checked on its own (long_tmpdir)."""
import argparse
import faulthandler
import json
import os
import re
import signal
import sqlite3
import subprocess
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import Checks, count_rows, remove_db  # noqa: E402  (shared e2e helpers)

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


def child_pid(heaplens_pid, proc, writer=True):
    """The writer is the child of `heaplens record` that is not the program (dotnet); the
    program is the other one."""
    if proc.poll() is not None:
        raise SystemExit("FAIL the recording ended before the fault could be injected; "
                         "raise --iterations")
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(heaplens_pid)],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, comm = line.split(None, 1)
        if (comm.strip() == "heaplens") == writer:
            return int(pid)
    return None


def writer_pid(heaplens_pid, proc):
    return child_pid(heaplens_pid, proc, writer=True)


def gone(pid):
    """The process has exited (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


def heaplens_json(hl, *args):
    r = subprocess.run([hl, *args, "--json"], capture_output=True, text=True)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None), r.stderr


def start(hl, dll, db, iterations, env, preexec_fn=None, gate=True):
    """`heaplens record` of AllocBench; with `gate`, the program stops half-way (at_gate, go)."""
    # An earlier run's file would satisfy "a committed GC" at once, and the writer would be
    # stopped before the program even starts.
    remove_db(db, db + ".go")
    cmd = [hl, "record", "--force", "-o", db, "--", "dotnet", dll, str(iterations), "--threads", "2"]
    proc = subprocess.Popen(cmd + (["--gate", db + ".go"] if gate else []),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=preexec_fn)
    proc.gate = db + ".go" if gate else None
    return proc


def at_gate(what, proc, db):
    """Waits for the program at its gate (its threads stopped half-way, it said so), then for the
    writer to commit every GC the program had until then. Returns that count (at least 1)."""
    for line in proc.stdout:
        m = re.match(r"AllocBench: gate gcs=(\d+)", line)
        if m:
            gcs = int(m.group(1))
            if gcs < 1:
                raise SystemExit(f"FAIL {what}: no GC before the gate; raise --iterations")
            wait_for(f"{what}: the {gcs} GCs before the gate committed",
                     lambda: committed_gcs(db) >= gcs, 600)
            return gcs
    raise SystemExit(f"FAIL {what}: the program ended without reaching its gate: "
                     + proc.stderr.read().strip()[-500:])


def go(proc):
    """Lets the program go on past its gate."""
    open(proc.gate, "w").close()


def program_line(proc):
    """Reads the program's stdout until its final 'AllocBench:' line."""
    for line in proc.stdout:
        if line.startswith("AllocBench:") and not line.startswith("AllocBench: gate"):
            return line
    return None


def writer_killed(hl, dll, workdir, iterations):
    db = os.path.join(workdir, "killed.db")
    proc = start(hl, dll, db, iterations, dict(os.environ))
    at_gate("killed", proc, db)
    gcs_before = committed_gcs(db)
    wpid = wait_for("the writer process", lambda: writer_pid(proc.pid, proc), 60)
    os.kill(wpid, signal.SIGKILL)
    go(proc)
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
    if not info:
        return
    # `heaplens record` outlived its writer: it stores how the recording ended.
    run, counters = info["run"], info["counters"]
    check("killed: run.loss says the writer was killed, and that the collector lost it",
          "writer-killed" in (run.get("loss") or "").split(",")
          and "writer-lost" in (run.get("loss") or "").split(","), repr(run.get("loss")))
    check("killed: the signal and the program's exit status are stored",
          counters.get("writer_signal") == signal.SIGKILL and run["exit_status"] == 0
          and run["status"] == "truncated", json.dumps(run) + json.dumps(counters))
    program_gcs = int(re.search(r"gcs=(\d+)/", line or "gcs=-1/").group(1))
    check("killed: the collector's final counts are stored",
          counters.get("program_gcs", 0) >= program_gcs and counters.get("writer_lost") == 1,
          json.dumps(counters))
    check_missing_said("killed", hl, db, counters.get("program_gcs", 0))


def stall_writer(hl, dll, db, iterations, env):
    """Records AllocBench and stops the writer (SIGSTOP) at the program's gate until the program
    has finished its work. Returns (program line, heaplens status, stderr)."""
    proc = start(hl, dll, db, iterations, env)
    at_gate(os.path.basename(db), proc, db)
    wpid = wait_for("the writer process", lambda: writer_pid(proc.pid, proc), 60)
    os.kill(wpid, signal.SIGSTOP)
    try:
        go(proc)
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
    dropped) and the program goes on to its end. The run reads as truncated, with the reason the
    collector's end file gives (writer-stalled): what was committed stays whole and readable, and
    the commands say the counts are lower bounds."""
    db = os.path.join(workdir, "stalled.db")
    env = dict(os.environ, HEAPLENS_BUFFER_MB="1", HEAPLENS_POOL_MB="4")
    line, status, err = stall_writer(hl, dll, db, iterations, env)
    check("stalled: the program finished its work while the writer was stopped", line is not None)
    check("stalled: heaplens exits with the program's status (0)", status == 0, f"status {status} {err.strip()}")
    rc, info, e = heaplens_json(hl, "info", db)
    check("stalled: the database is readable", rc == 0 and info is not None, e.strip())
    if info:
        counters = info["counters"]
        check("stalled: the writer was given up, and the file says it was stalled",
              counters.get("writer_lost", 0) == 1
              and "writer-stalled" in (info["run"].get("loss") or "").split(","),
              f'{info["run"].get("loss")}; {json.dumps(counters)}')
        check("stalled: the run is truncated (the writer was given up: no end-of-run record)",
              info["run"]["status"] == "truncated",
              f'{info["run"]["status"]}; flags {info["run"].get("flags")}; {json.dumps(counters)}')
    r = subprocess.run([hl, "allocations", db, "--top", "1"], capture_output=True, text=True)
    check("stalled: commands say that counts are lower bounds",
          "lower bounds" in r.stdout + r.stderr, r.stdout + r.stderr)
    check_totals_agree("stalled", hl, db)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    stored, last = con.execute("SELECT count(*), max(gc) FROM gcs").fetchone()
    con.close()
    check("stalled: GCs stored without gaps", stored == last, f"{stored} GCs, the last is {last}")


def check_totals_agree(what, hl, db):
    """info, allocations and stacks give one allocation total: the same figures and words, the
    terms adding up to it, and what is not in it (lost: allocs_dropped; sent and never stored: a
    writer that stopped) makes up the runtime's own count (allocs_seen), said in words."""
    docs = {}
    for cmd, args in (("info", []), ("allocations", []), ("stacks", ["--top", "1"])):
        rc, doc, err = heaplens_json(hl, cmd, db, *args)
        check(f"{what}: {cmd} --json reads the file", rc == 0 and doc is not None, err.strip()[-300:])
        if doc is None:
            return
        docs[cmd] = doc
    totals = {"info": docs["info"]["allocations"]["total"], "allocations": docs["allocations"]["total"],
              "stacks": docs["stacks"]["total"].get("allocations")}
    check(f"{what}: info, allocations and stacks give one total", totals["info"] == totals["allocations"]
          == totals["stacks"], json.dumps(totals))
    t = totals["info"]
    parts = sum(t[k]["count"] for k in ("reported", "unreported", "census", "estimated"))
    check(f"{what}: the total is the sum of its terms", t["count"] == parts, json.dumps(t))
    check(f"{what}: the stacks' sites add up to the total", docs["stacks"]["total"]["count"] == t["count"],
          f'{docs["stacks"]["total"]["count"]} vs {t["count"]}')
    counters = docs["info"]["counters"]
    check(f"{what}: lost is allocs_dropped, and seen = reported + lost + unstored",
          t["lost"] == counters.get("allocs_dropped", 0)
          and t["seen"] == t["reported"]["count"] + t["lost"] + t["unstored"], json.dumps(t))
    r = subprocess.run([hl, "info", db], capture_output=True, text=True)
    if t["lost"] > 0:
        check(f"{what}: info says the lost allocations are not in the total",
              f'not in the total: {t["lost"]:,} reported, then lost uncounted' in r.stdout, r.stdout[-800:])
    if t["unstored"] > 0:
        check(f"{what}: info says the allocations sent and never stored are not in the total",
              f'not in the total: {t["unstored"]:,} reported and sent, never stored' in r.stdout
              and docs["info"]["run"]["status"] == "truncated", r.stdout[-800:])


def check_missing_said(what, hl, db, program_gcs):
    """Every command's loss note names the GCs that are missing, up to the program's own count."""
    r = subprocess.run([hl, "gcs", db], capture_output=True, text=True)
    note = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("note:")]
    check(f"{what}: the loss note says which GCs are missing, up to the program's {program_gcs}",
          bool(note) and f"of the program's {program_gcs:,} " in note[0] and "missing" in note[0],
          r.stdout[-300:] + r.stderr)


def writer_given_up(hl, dll, workdir, iterations):
    """The writer stopped (SIGSTOP) from the first committed GC until the program has exited,
    with small buffers: the collector must give it up (it took nothing for the stall limit) and
    can say so only through its end file. The true reason and counts must reach the file, the
    summary and the loss note: not "program killed, 0 lost"."""
    db = os.path.join(workdir, "given_up.db")
    env = dict(os.environ, HEAPLENS_BUFFER_MB="1")
    proc = start(hl, dll, db, iterations, env)
    at_gate("given up", proc, db)
    wpid = wait_for("the writer process", lambda: writer_pid(proc.pid, proc), 60)
    ppid = wait_for("the program process", lambda: child_pid(proc.pid, proc, writer=False), 60)
    os.kill(wpid, signal.SIGSTOP)
    try:
        go(proc)
        line = program_line(proc)
        # Its exit waits for the collector, which gives the stopped writer up after the limit.
        wait_for("the program's exit", lambda: gone(ppid), 600)
    finally:
        os.kill(wpid, signal.SIGCONT)
    err = proc.stderr.read()
    status = proc.wait(timeout=300)
    check("given up: the program ran to its end", line is not None, err.strip())
    check("given up: heaplens exits with the program's status (0)", status == 0, f"status {status}")
    program_gcs = int(re.search(r"gcs=(\d+)/", line or "gcs=-1/").group(1))
    rc, info, e = heaplens_json(hl, "info", db)
    if not check("given up: the database is readable", rc == 0 and info is not None, e.strip()):
        return
    run, counters = info["run"], info["counters"]
    loss = (run.get("loss") or "").split(",")
    check("given up: run.loss is writer-stalled, not program-killed",
          "writer-stalled" in loss and "program-killed" not in loss, repr(run.get("loss")))
    check("given up: the run is truncated, with the program's exit status",
          run["status"] == "truncated" and run["exit_status"] == 0, json.dumps(run))
    check("given up: writer_lost is stored", counters.get("writer_lost") == 1, json.dumps(counters))
    check("given up: the collector's GC count is stored", counters.get("program_gcs", 0) >= program_gcs,
          f"{counters.get('program_gcs')} vs the program's {program_gcs}")
    stored = info["totals"]["gcs"]
    check("given up: GCs not stored are counted as lost",
          stored < program_gcs and counters.get("gcs_dropped", 0) > 0
          and stored + counters.get("gcs_dropped", 0) + counters.get("gcs_discarded_incomplete", 0)
          >= program_gcs, f"{stored} stored, {json.dumps(counters)}, program {program_gcs}")
    dropped = counters.get("allocs_dropped", 0)
    check("given up: the allocations not stored are counted, exactly",
          dropped > 0 and stored_allocations(db) + dropped <= counters.get("allocs_seen", 0),
          f"{stored_allocations(db)} stored + {dropped} lost vs {counters.get('allocs_seen')} seen")
    summary = [x for x in err.splitlines() if x.startswith("heaplens: recorded")]
    check("given up: the summary says what was lost and why",
          bool(summary) and " 0 lost" not in summary[0] and "writer-stalled" in summary[0],
          err.strip())
    check_missing_said("given up", hl, db, counters.get("program_gcs", 0))


def recorder_killed(hl, dll, workdir, iterations, tmp):
    """`heaplens record` killed (SIGKILL) once the first GC is committed: the program and the
    writer outlive it. The writer records the program to its end, stores that the recorder was
    killed (the exit status is unknown), and removes the session's private directory."""
    db = os.path.join(workdir, "recorder.db")
    tmp = os.path.join(tmp, "recorder")  # TMPDIR: where record makes its directory
    os.makedirs(tmp, exist_ok=True)
    proc = start(hl, dll, db, iterations, dict(os.environ, TMPDIR=tmp))
    at_gate("recorder killed", proc, db)
    wpid = wait_for("the writer process", lambda: writer_pid(proc.pid, proc), 60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    go(proc)
    line = program_line(proc)  # the program runs on, its output still comes
    wait_for("the writer's end", lambda: gone(wpid), 600)
    check("recorder killed: the program ran to its end", line is not None)
    own = os.path.join(tmp, f"heaplens-{os.getuid()}")  # the sessions' directories' parent
    left = [n for n in os.listdir(tmp) if n.startswith("heaplens-") and n != os.path.basename(own)]
    left += os.listdir(own) if os.path.isdir(own) else []
    check("recorder killed: the session's directory is removed", not left, repr(left))
    rc, info, e = heaplens_json(hl, "info", db)
    if not check("recorder killed: the database is readable", rc == 0 and info is not None, e.strip()):
        return
    run = info["run"]
    check("recorder killed: run.loss says so, the stream is complete, the exit status unknown",
          "recorder-killed" in (run.get("loss") or "").split(",") and run["status"] == "complete"
          and run["exit_status"] is None, json.dumps(run))
    check_gcs_whole("recorder killed", db, line)
    r = subprocess.run([hl, "info", db], capture_output=True, text=True)
    check("recorder killed: info says it", "heaplens record was killed" in r.stdout + r.stderr,
          r.stdout[-400:] + r.stderr)


def stale_sessions(hl, workdir, short_tmp):
    """What a recorder and its writer killed together leave (their private directory in
    TMPDIR/heaplens-UID, the program's session file) is removed by the next `heaplens record` --
    only ours, only when its owner is gone and nobody serves it, and only the files a session
    puts there. Directories so named in TMPDIR itself (where heaplens made them before) are left
    alone: the next record reads TMPDIR/heaplens-UID alone."""
    import socket
    # TMPDIR short enough for the sockets bound in it, whatever the length of the work directory
    tmp, xdg = os.path.join(short_tmp, "stale"), os.path.join(workdir, "xdg-stale")
    for d in (tmp, xdg):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d, mode=0o700)
    os.makedirs(os.path.join(xdg, "heaplens"), mode=0o700)
    p = subprocess.Popen(["true"])
    p.wait()
    dead, alive = p.pid, os.getpid()

    own = os.path.join(tmp, f"heaplens-{os.getuid()}")
    os.makedirs(own, mode=0o700)

    def session_dir(name, files, mode=0o700, parent=own):
        path = os.path.join(parent, name)
        os.makedirs(path)
        os.chmod(path, mode)
        for f in files:
            open(os.path.join(path, f), "w").close()
        return path

    stale = session_dir(f"heaplens-{dead}-aaaaaa", ["collector.sock", f"end.{dead}", "recorded"])
    served = session_dir(f"heaplens-{dead}-bbbbbb", ["collector.sock"])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(served, "control.sock"))
    listener.listen(1)
    owned = session_dir(f"heaplens-{alive}-cccccc", ["collector.sock"])
    foreign = session_dir(f"heaplens-{dead}-dddddd", ["collector.sock", "notes.txt"])
    public = session_dir(f"heaplens-{dead}-eeeeee", ["collector.sock"], mode=0o755)
    outside = session_dir(f"heaplens-{dead}-ffffff", ["collector.sock"], parent=tmp)
    for pid in (dead, alive):
        open(os.path.join(xdg, "heaplens", str(pid)), "w").close()
    r = subprocess.run([hl, "record", "-o", os.path.join(tmp, "none.db"), "--", "true"],
                       capture_output=True, text=True,
                       env=dict(os.environ, TMPDIR=tmp, XDG_RUNTIME_DIR=xdg))
    listener.close()
    check("stale: record runs", r.returncode == 0, r.stderr.strip())
    check("stale: a directory whose recorder is gone is removed", not os.path.exists(stale))
    check("stale: one still served (a writer outlived its recorder) stays",
          os.path.exists(os.path.join(served, "collector.sock")))
    check("stale: one whose recorder lives stays", os.path.exists(os.path.join(owned, "collector.sock")))
    check("stale: a file heaplens never puts there stays, with its directory",
          os.path.exists(os.path.join(foreign, "notes.txt"))
          and not os.path.exists(os.path.join(foreign, "collector.sock")))
    check("stale: a directory that is not private stays",
          os.path.exists(os.path.join(public, "collector.sock")))
    check("stale: the session file of a process that is gone is removed, a live one's stays",
          not os.path.exists(os.path.join(xdg, "heaplens", str(dead)))
          and os.path.exists(os.path.join(xdg, "heaplens", str(alive))))
    check("stale: one in TMPDIR itself is not looked at",
          os.path.exists(os.path.join(outside, "collector.sock")))
    check("stale: record leaves no directory of its own",
          set(n for n in os.listdir(own) if n.startswith("heaplens-")) ==
          set(os.path.basename(x) for x in (served, owned, foreign, public)),
          repr(os.listdir(own)))


def writer_disk_full(hl, dll, workdir, iterations):
    """The database's files cannot grow past 4 MiB (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail
    as on a full disk, without root or a small file system)."""
    db = os.path.join(workdir, "full.db")

    def small_files():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))

    proc = start(hl, dll, db, iterations, dict(os.environ), preexec_fn=small_files, gate=False)
    line = program_line(proc)
    err = proc.stderr.read()
    status = proc.wait(timeout=300)
    lines = [x for x in err.splitlines() if x.strip()]
    # the writer's line, then (when the end could be stored) the summary and its note
    said = [x for x in lines if not x.startswith(("heaplens: recorded ", "heaplens: note: "))]
    summary = [x for x in lines if x.startswith("heaplens: recorded ")]
    check("disk full: the program ran to its end", line is not None, err.strip())
    check("disk full: heaplens exits with the program's status (0)", status == 0,
          f"status {status}")
    check("disk full: heaplens says what happened in one line", len(said) == 1, err.strip())
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
    # `heaplens record` stores why the recording stopped, when the file takes a few more pages
    # (it does here: the failed transaction was rolled back); a file that cannot take them
    # stays as the writer left it, whole.
    rc, info, e = heaplens_json(hl, "info", db)
    if info:
        run = info["run"]
        stored = "write-failed" in (run.get("loss") or "").split(",")
        check("disk full: the reason, the exit status and the program's GC count are stored "
              "(or the file stayed as the writer left it)",
              (stored and run["status"] == "truncated" and run["exit_status"] == 0
               and info["counters"].get("program_gcs", 0) > len(gcs["rows"] if gcs else []))
              or (not stored and run["status"] == "recording"),
              json.dumps(run) + json.dumps(info["counters"]))
        # The end stored, the summary says what was lost and why, as for a killed writer (it
        # said only how many GCs the file keeps); not stored, no summary reads the file.
        check("disk full: the summary line says the loss and its reason when the end was stored",
              (stored and len(summary) == 1 and "lost at least" in summary[0]
               and "write-failed" in summary[0] and lines[0] in said)
              or (not stored and not summary), err.strip())
        if stored:
            check_missing_said("disk full", hl, db, info["counters"]["program_gcs"])


def reader_holds(hl, dll, workdir, iterations):
    """A user's sqlite3 reading the recording while it records, its read transaction held from
    the first committed GC until heaplens has exited: the writer cannot leave WAL mode, and must
    neither fail nor lose anything. The file stays in WAL mode, complete and whole, heaplens says
    it in one line, and the commands read it once the reader is gone."""
    db = os.path.join(workdir, "held.db")
    proc = start(hl, dll, db, iterations, dict(os.environ))
    at_gate("reader", proc, db)
    reader = subprocess.Popen(["sqlite3", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        reader.stdin.write("BEGIN; SELECT count(*) FROM gcs;\n")
        reader.stdin.flush()
        seen = reader.stdout.readline().strip()  # printed inside the transaction: it is held
        check("reader: the reader sees the committed GCs", seen.isdigit() and int(seen) >= 1, seen)
        go(proc)
        line = program_line(proc)
        err = proc.stderr.read()
        status = proc.wait(timeout=300)
        held_wal = os.path.exists(db + "-wal")
    finally:
        reader.stdin.close()  # end of input: the shell ends its transaction and exits
        reader.wait(timeout=60)
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("heaplens: recorded ")]
    check("reader: the program ran to its end", line is not None, err.strip())
    check("reader: heaplens exits with the program's status (0)", status == 0, f"status {status}")
    check("reader: heaplens says in one line (besides its summary) that the file stayed in WAL "
          "mode, nothing failed",
          len(lines) == 1 and f"a reader kept {db} open: left in WAL mode" in lines[0]
          and "fail" not in err and "locked" not in err, err.strip())
    check("reader: the -wal file was kept while the reader held it", held_wal)
    rc, info, e = heaplens_json(hl, "info", db)
    if check("reader: info reads the file", rc == 0 and info is not None, e.strip()):
        counters = info["counters"]
        check("reader: the run is complete", info["run"]["status"] == "complete", json.dumps(info["run"]))
        check("reader: nothing lost", counters.get("allocs_dropped") == 0
              and counters.get("gcs_dropped") == 0 and info["run"].get("loss") is None,
              json.dumps(counters))
        check("reader: every allocation stored", stored_allocations(db) == counters.get("allocs_seen"),
              f"{stored_allocations(db)} stored, {counters.get('allocs_seen')} seen")
        check("reader: the writer's own figures are stored", "writer_finish_ns" in counters,
              json.dumps(counters))
    check("reader: the first read, the reader gone, made it one file again",
          not os.path.exists(db + "-wal"))
    rc, gcs, e = heaplens_json(hl, "gcs", db)
    check("reader: gcs reads the file", rc == 0 and gcs is not None, e.strip())
    check_gcs_whole("reader", db, line)


def long_tmpdir(hl, dll, workdir):
    """A TMPDIR whose session sockets would not fit a unix socket's 107 bytes (a deep work
    directory): record keeps its sockets short (in /tmp/heaplens-UID) and records the program
    whole, and removes its directory after."""
    tmp = os.path.join(workdir, "long-tmpdir-" + "x" * max(1, 120 - len(workdir)))
    os.makedirs(tmp, exist_ok=True)
    db = os.path.join(workdir, "long.db")
    remove_db(db)
    r = subprocess.run([hl, "record", "--force", "-o", db, "--", "dotnet", dll, "200", "--threads", "1"],
                       capture_output=True, text=True, env=dict(os.environ, TMPDIR=tmp))
    check("long TMPDIR: record runs", r.returncode == 0 and "AllocBench:" in r.stdout,
          r.stderr.strip()[-500:])
    rc, info, e = heaplens_json(hl, "info", db)
    check("long TMPDIR: the recording is complete, nothing lost",
          rc == 0 and info is not None and info["run"]["status"] == "complete"
          and info["counters"].get("allocs_dropped") == 0 and info["counters"].get("allocs_seen", 0) > 0,
          e.strip() + json.dumps(info and info["run"]))
    check("long TMPDIR: record leaves nothing in it", not os.listdir(tmp), repr(os.listdir(tmp)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--dll", required=True, help="AllocBench.dll")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--iterations", type=int, default=80000,
                    help="AllocBench iterations: the program must outlive the injected fault")
    ap.add_argument("--only", help="run this case alone (a function's name, e.g. reader_holds)")
    ap.add_argument("--deadline", type=int, default=840,
                    help="seconds after which the test prints where it is stuck and exits")
    a = ap.parse_args()
    faulthandler.dump_traceback_later(a.deadline, exit=True)  # a hang says where, then fails
    os.makedirs(a.workdir, exist_ok=True)
    short_tmp = tempfile.mkdtemp(prefix="hl-faults-")  # in /tmp (or a short TMPDIR): sockets fit
    try:
        if a.only:
            globals()[a.only](a.heaplens, a.dll, a.workdir, a.iterations)
            return checks.summary()
        long_tmpdir(a.heaplens, a.dll, a.workdir)
        stale_sessions(a.heaplens, a.workdir, short_tmp)
        writer_killed(a.heaplens, a.dll, a.workdir, a.iterations)
        writer_paused(a.heaplens, a.dll, a.workdir, a.iterations)
        writer_stalled(a.heaplens, a.dll, a.workdir, a.iterations)
        writer_given_up(a.heaplens, a.dll, a.workdir, a.iterations)
        recorder_killed(a.heaplens, a.dll, a.workdir, a.iterations, short_tmp)
        writer_disk_full(a.heaplens, a.dll, a.workdir, a.iterations)
        reader_holds(a.heaplens, a.dll, a.workdir, a.iterations)
    finally:
        shutil.rmtree(short_tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
