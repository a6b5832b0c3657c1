#!/usr/bin/env python3
"""heaplens attach end to end (examples/AttachTarget, started WITHOUT heaplens).

sessions: the target leaks LeakedRecord steadily and churns on two threads; four `heaplens
  attach` sessions in a row, ended by Ctrl-C, SIGTERM, --duration and SIGUSR1. The first two are checked
  for: 3 snapshots (first right after attaching, `heaplens snapshot PID` after the target leaked
  1,000 more records on command, last at the end after 1,000 more), model_missing and
  model_extra 0 in every snapshot, run.mode 'attach', LeakedRecord ranked first by `heaplens
  leaks`, its count in the last snapshot between the counts the program logged before and
  after the session; the --duration one for its own end and 2 exact snapshots, the SIGUSR1 one
  for its detach (as at Ctrl-C) and 2 exact snapshots. After each
  detach the program keeps answering and the collector holds 0 bytes (its own count, on the
  program's stderr with HEAPLENS_STATS=1); at "stop" it verifies its own data and exits 0.
refusals: no such pid, a non-.NET process, a process already under `heaplens record`, a
  diagnostic socket planted by another user, a bad HEAPLENS_* setting in the process's
  environment.
--server-gc runs the target with DOTNET_gcServer=1 (and checks the runtime says so).

The program is driven through its stdin/stdout lines: no sleeping as synchronisation."""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402


class Target:
    def __init__(self, cmd, env=None):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        # The collector's lines on the program's stderr (HEAPLENS_STATS=1), read as they come.
        self.err = []
        self.err_cv = threading.Condition()
        threading.Thread(target=self._read_err, daemon=True).start()
        ready = self.p.stdout.readline().split()
        self.pid = int(ready[1]) if len(ready) == 2 and ready[0] == "ready" else None

    def _read_err(self):
        for line in self.p.stderr:
            with self.err_cv:
                self.err.append(line.rstrip("\n"))
                self.err_cv.notify_all()
        with self.err_cv:
            self.err.append(None)  # end of file
            self.err_cv.notify_all()

    def stats_line(self, prefix, n, timeout=120):
        """The n-th line of the collector (1-based) that starts with `prefix`; None if it never
        came."""
        def found():
            lines = [l for l in self.err if l and l.startswith(prefix)]
            return lines[n - 1] if len(lines) >= n else (False if None in self.err else None)
        with self.err_cv:
            self.err_cv.wait_for(lambda: found() is not None, timeout)
            return found() or None

    def detached_line(self, n, timeout=120):
        """The n-th 'heaplens: detached:' line of the collector (1-based), once the runtime has
        called ProfilerDetachSucceeded; None if it never came."""
        return self.stats_line("heaplens: detached:", n, timeout)

    def ask(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def count(self):
        line = self.ask("count").split()
        return int(line[1]) if len(line) == 2 and line[0] == "count" else None

    def stop(self):
        line = self.ask("stop")
        rc = self.p.wait(timeout=120)
        return rc, line


def wait_for(condition, what, timeout=120):
    """Polls a condition of the outside world (a file, a database) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def session(checks, args, target, n, ending, log):
    """One attach session, ended by `ending` (a signal). Between the first snapshot (taken at
    attach) and `heaplens snapshot PID`, and again before the end, the target leaks 1,000 more
    records on command: the leak grows by a known amount between every two snapshots."""
    db = os.path.join(args.workdir, f"session{n}.db")
    e2elib.remove_db(db)
    before = target.count()
    # --snapshot none: the marks' GC.Collect() take no snapshot (the default policy would), so
    # the snapshots are exactly the three above and the leak grows by 1,000 between each two;
    # with the marks' snapshots the last two held the same records and `leaks` rightly found no
    # steady growth.
    attach = subprocess.Popen([args.heaplens, "attach", str(target.pid), "-o", db,
                               "--snapshot", "none", "--stacks", args.stacks],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = attach.stderr.readline()
    attached = re.match(r"heaplens: attached to process \d+ in ([0-9.]+) s", first)
    snap_rc = None
    marks = []  # "mark N L C": GC.CollectionCount(0), LeakedRecords before it, its checkpoint
    if attached:
        try:
            wait_for(lambda: e2elib.count_rows(db, "snapshots") >= 1 or attach.poll() is not None,
                     "the first snapshot")
            # A large object made after the session's first GC is followed in every mode, and
            # the mark's GC, where it dies, compares its handle with the runtime's ranges
            # (--follow-check); without it a session followed large objects only if the list
            # happened to grow during it (none did in any session at load 8-14 on 2 cores).
            target.ask("big")
            marks.append(target.ask("mark").split())
            target.ask("leak 1000")
            snap_rc, _, _ = e2elib.run([args.heaplens, "snapshot", str(target.pid)], log=log,
                                       timeout=120)
            target.ask("leak 1000")
            marks.append(target.ask("mark").split())
        except TimeoutError as e:
            print(f"session {n}: timed out waiting for {e}")
        if attach.poll() is None:
            attach.send_signal(ending)
    out, err = attach.communicate(timeout=600)
    err = first + err
    with open(log, "a") as f:
        f.write(f"$ heaplens attach {target.pid} (session {n}, ended by {ending.name})\n"
                f"[exit {attach.returncode}]\n{out}\n{err}\n")
    after = target.count()
    if not checks.eq(f"session {n}: heaplens attach exits 0 ({ending.name})", 0, attach.returncode):
        print(err.strip()[:800])
        return
    checks.ok(f"session {n}: attached", attached is not None, first.strip())
    checks.eq(f"session {n}: heaplens snapshot PID during the session", 0, snap_rc)
    check_recording(checks, args, target, db, n, log, 3)
    leaks = e2elib.heaplens_json(checks, args.heaplens, ["leaks", db], log)
    if leaks:
        suspects = leaks.get("rows", [])
        first_row = suspects[0] if suspects else {}
        checks.eq(f"session {n}: leaks ranks LeakedRecord first", "AttachTarget.LeakedRecord",
                  first_row.get("type"))
        per = first_row.get("counts") or []
        last = per[-1] if isinstance(per, list) and per else None
        checks.ok(f"session {n}: LeakedRecord in the last snapshot between the program's counts",
                  last is not None and before <= last <= after, f"{before} <= {last} <= {after}")
    check_census(checks, args, db, n, marks, log)
    checks.ok(f"session {n}: the program answers after the detach", after is not None)
    check_released(checks, args, target, n)


def check_census(checks, args, db, n, marks, log):
    """The census's exact counts: the LeakedRecords the program allocated between its two marks
    (L2 - L1, read under the lock every LeakedRecord is allocated under) equal the census's
    LeakedRecord counts of the GC intervals between the marks' checkpoints (store/SCHEMA.md,
    `checkpoints`: each placed after the GC that had finished when the program wrote it, read by
    the collector on the program's thread, right after the mark's GC.Collect()), every one of
    them counted by the census; `heaplens allocations --between C1..C2` says the same. Nothing
    here depends on the program's own GC numbers: a GC that the churn threads start between the
    mark's GC.Collect() and its GC.CollectionCount(0) makes that count run ahead of the mark's
    GC (a thread kept off the CPU under load; the check once found the marks by those numbers
    and then failed on a right census), and any GC inside the lock counts no LeakedRecord."""
    if not checks.ok(f"session {n}: the program's two marks",
                     len(marks) == 2 and all(len(m) == 4 and m[0] == "mark" for m in marks),
                     str(marks)):
        return
    (n1, l1, c1), (n2, l2, c2) = [(int(m[1]), int(m[2]), m[3]) for m in marks]
    want = l2 - l1
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    at = dict(con.execute("SELECT name, gc FROM checkpoints").fetchall())
    gcs = con.execute(
        "SELECT gc, generation, reason, census_objects FROM gcs ORDER BY gc").fetchall()
    per_gc = dict(con.execute(
        "SELECT a.gc, sum(a.count) FROM alloc_counts a JOIN types t ON t.id = a.type_id"
        " WHERE t.name = 'AttachTarget.LeakedRecord' AND a.flags & 2 GROUP BY a.gc").fetchall())
    snaps = [g for (g,) in con.execute("SELECT gc FROM snapshots")]
    con.close()
    # Every GC of the session against the marks, in the log: what the census stored per GC.
    with open(log, "a") as f:
        f.write(f"session {n}: marks {marks}, checkpoints {at}, snapshots at GCs {snaps}\n"
                + "".join(f"  GC {g} gen{gen} {reason} census_objects {c} LeakedRecord "
                          f"{per_gc.get(g, 0)}\n" for g, gen, reason, c in gcs))
    if not checks.ok(f"session {n}: the marks' checkpoints {c1}, {c2} are recorded",
                     c1 in at and c2 in at and at[c1] < at[c2], str(at)):
        return
    g1, g2 = at[c1], at[c2]
    if g2 - g1 != n2 - n1:
        print(f"note: session {n}: {g2 - g1} GCs between the marks' checkpoints, the program's "
              f"GC.CollectionCount(0) says {n2 - n1} ({n1}..{n2})")
    window = range(g1 + 1, g2 + 1)
    exact = {g for g, _, _, c in gcs if c is not None}
    checks.eq(f"session {n}: GCs between the marks not counted by the census", [],
              [g for g in window if g not in exact])
    checks.eq(f"session {n}: census counts the LeakedRecords allocated between the marks exactly "
              f"(GCs {g1 + 1}..{g2})", want, sum(per_gc.get(g, 0) for g in window))
    doc = e2elib.heaplens_json(checks, args.heaplens,
                               ["allocations", db, "--between", f"{c1}..{c2}"], log)
    if doc is not None:
        got = {r["type"]: r["count"] for r in doc.get("rows", [])}
        checks.eq(f"session {n}: allocations --between {c1}..{c2}: AttachTarget.LeakedRecord",
                  want, got.get("AttachTarget.LeakedRecord"))


def check_released(checks, args, target, n, handle_gcs=False):
    """After the detach the collector holds nothing: every byte it allocated (heap model, young
    arrays, GC captures, snapshots, names, outbox) given back, the pool unmapped — its own count,
    printed with HEAPLENS_STATS=1 once the runtime confirmed the detach."""
    line = target.detached_line(n)
    m = re.search(r"holds (\d+) heap bytes and (\d+) mapped \(at most (\d+)", line or "")
    checks.ok(f"session {n}: after the detach the collector holds 0 bytes (it held some)",
              m is not None and m.group(1) == "0" and m.group(2) == "0" and int(m.group(3)) > 0,
              line)
    check_follow(checks, args, target, n, handle_gcs)


FOLLOWED = []  # every session's follow figures


def check_follow(checks, args, target, n, handle_gcs):
    """The session followed its objects by weak handles (collector/follow.h: .NET 10 with
    samples, any runtime with ICorProfilerInfo13 without): none could not be made, and every
    handle it made went back to the runtime (destroyed when its object died, released at the
    detach: the process runs on, its handle table must not keep ours). With --follow-check
    (HEAPLENS_FOLLOW_CHECK=1 in the program's environment, which the collector reads) every GC
    also took the runtime's survivor ranges, and each handle's answer agreed with them; without
    it (`handle_gcs`: a session with gen0 GCs, whose named objects all left gen0) some GCs went
    without the ranges, followed by the handles alone."""
    if not args.expect_handles:
        return
    line = target.stats_line("heaplens: follow:", n)
    s = {k: int(float(v)) for k, v in re.findall(r"(\w+)=([0-9.]+)", line or "")}
    FOLLOWED.append(s)
    # Without samples (--stacks off) only large objects are followed: a session may have none.
    if not checks.ok(f"session {n}: followed by handles",
                     line is not None and (s.get("handles", 0) > 0 or args.stacks == "off"), line):
        return
    checks.eq(f"session {n}: no handle failed (fallback)", (0, 0),
              (s.get("create_failures"), s.get("fallback")))
    checks.eq(f"session {n}: every handle given back (made = destroyed + released)",
              s["handles"], s.get("destroyed", 0) + s.get("released", 0))
    if args.follow_check:
        checks.eq(f"session {n}: handles that disagree with the runtime's ranges", 0,
                  s.get("check_disagree"))
        # With samples, sampled objects die under the check; without (--stacks off) only the
        # large objects are followed, and they live (the sessions together: below).
        if args.stacks == "on":
            checks.ok(f"session {n}: handles compared with the ranges",
                      s.get("check_agree", 0) > 0 and s.get("died", 0) > 0, line)
        checks.eq(f"session {n}: the runtime's compaction bit against the ranges (GCs that "
                  f"disagree)", 0, s.get("check_compacting_disagree"))
    elif handle_gcs:
        checks.ok(f"session {n}: some GCs followed by the handles alone",
                  s.get("handle_gcs", 0) > 0, line)


def check_recording(checks, args, target, db, n, log, min_snapshots):
    info = e2elib.heaplens_json(checks, args.heaplens, ["info", db], log)
    if info:
        run = info.get("run", info)
        checks.eq(f"session {n}: run.mode", "attach", run.get("mode"))
        checks.eq(f"session {n}: run.pid", target.pid, run.get("pid"))
        checks.eq(f"session {n}: run.status", "complete", run.get("status"))
    snaps = e2elib.heaplens_json(checks, args.heaplens, ["snapshots", db], log)
    rows = snaps.get("rows") if snaps else None
    if rows is None:
        return
    checks.ok(f"session {n}: at least {min_snapshots} snapshots", len(rows) >= min_snapshots,
              f"{len(rows)}")
    for r in rows:
        checks.eq(f"session {n}: snapshot {r.get('snapshot')} model_missing", 0,
                  r.get("model_missing", r.get("missing")))
        checks.eq(f"session {n}: snapshot {r.get('snapshot')} model_extra", 0,
                  r.get("model_extra", r.get("extra")))
    # Its threads were named before the attach: their names come from the catch-up at attach.
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = {r[0] for r in conn.execute("SELECT name FROM threads WHERE name IS NOT NULL")}
    # Every GC's reason is the runtime's own (GCStart events matched by count: the runtime's
    # count runs ahead of the session's GC numbers by the GCs before the attach); the first
    # snapshot's GC is forced (Induced).
    reasons = dict(conn.execute("SELECT gc, reason FROM gcs"))
    # At a snapshot's GC the records hold exactly the objects the snapshot has (frozen ones
    # aside): objects a snapshot named but did not follow (those it found in gen0) must not
    # stay alive in them beside their new ids at the next snapshot.
    live = conn.execute(
        "SELECT s.snapshot, (SELECT count(*) FROM snapshot_contents c WHERE c.snapshot = s.snapshot"
        "   AND NOT c.frozen), (SELECT count(*) FROM live_objects l WHERE l.gc = s.gc"
        "   AND l.generation <> 5) FROM snapshots s").fetchall()
    conn.close()
    checks.eq(f"session {n}: snapshots whose GC's live objects differ from their objects", [],
              [r for r in live if r[1] != r[2]])
    checks.eq(f"session {n}: GCs whose reason is unknown", [],
              sorted(g for g, r in reasons.items() if r == "unknown"))
    checks.ok(f"session {n}: the forced GCs are Induced", "Induced" in reasons.values(),
              str(sorted(set(reasons.values()))))
    checks.ok(f"session {n}: threads named before the attach are named",
              {"leak", "churn-1", "churn-2"} <= names, str(sorted(names)))


def duration_session(checks, args, target, n, log, census=None):
    """`--duration`: the session ends by itself, with its first and last snapshots. With
    census="off" (`attach --census off`, which reaches the collector in the attach's client data)
    no census of gen0 counts anything, and the recording says its counts are estimates."""
    db = os.path.join(args.workdir, f"session{n}.db")
    e2elib.remove_db(db)
    rc, out, err = e2elib.run([args.heaplens, "attach", str(target.pid), "-o", db, "--duration",
                               str(args.duration), "--stacks", args.stacks, "--json"] +
                              (["--census", census] if census else []), log=log,
                              timeout=600)
    if not checks.eq(f"session {n}: heaplens attach --duration exits 0", 0, rc):
        print(err.strip()[:800])
        return
    summary = json.loads(out)
    checks.eq(f"session {n}: --json summary names the process", target.pid, summary.get("pid"))
    off = census == "off"
    checks.eq(f"session {n}: the summary's census_off", off, summary.get("census_off"))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    flags = (conn.execute("SELECT flags FROM run").fetchone()[0] or "").split(",")
    counted = conn.execute("SELECT count(census_objects) FROM gcs").fetchone()[0]
    conn.close()
    checks.eq(f"session {n}: run.flags census-off", off, "census-off" in flags)
    checks.ok(f"session {n}: GCs counted by the census " + ("none" if off else "some"),
              counted == 0 if off else counted > 0, f"{counted}")
    if off:
        doc = e2elib.heaplens_json(checks, args.heaplens, ["allocations", db], log)
        if doc is not None:
            checks.ok(f"session {n}: allocations --json: estimated, for --census off",
                      doc.get("census_off") is True and doc.get("exact_per_type") is False
                      and "--census off" in (doc.get("note") or ""), f"{doc.get('note')!r}")
    check_recording(checks, args, target, db, n, log, 2)
    checks.ok(f"session {n}: the program answers after the detach", target.count() is not None)
    check_released(checks, args, target, n, handle_gcs=True)


def signal_session(checks, args, target, n, ending, log):
    """A session ended by a signal other than Ctrl-C's (SIGUSR1): it detaches as at Ctrl-C, with
    its first and last snapshots (by default the signal ended heaplens alone, and the session
    went on, the collector loaded, until the process exited)."""
    db = os.path.join(args.workdir, f"session{n}.db")
    e2elib.remove_db(db)
    attach = subprocess.Popen([args.heaplens, "attach", str(target.pid), "-o", db,
                               "--snapshot", "none", "--stacks", args.stacks],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = attach.stderr.readline()
    if first.startswith("heaplens: attached to process"):
        try:
            wait_for(lambda: e2elib.count_rows(db, "snapshots") >= 1 or attach.poll() is not None,
                     "the first snapshot")
        except TimeoutError as e:
            print(f"session {n}: timed out waiting for {e}")
        if attach.poll() is None:
            attach.send_signal(ending)
    # Waited for itself, not for its pipes: a heaplens the signal killed leaves its writer
    # holding them, recording on until the process exits.
    rc = attach.wait(timeout=600)
    if not checks.eq(f"session {n}: heaplens attach exits 0 ({ending.name})", 0, rc):
        attach.stdout.close()
        attach.stderr.close()
        return
    out, err = attach.communicate(timeout=600)
    err = first + err
    with open(log, "a") as f:
        f.write(f"$ heaplens attach {target.pid} (session {n}, ended by {ending.name})\n"
                f"[exit {attach.returncode}]\n{out}\n{err}\n")
    check_recording(checks, args, target, db, n, log, 2)
    checks.ok(f"session {n}: the program answers after the detach", target.count() is not None)
    check_released(checks, args, target, n)


def refusals(checks, args, log):
    rc, out, err = e2elib.run([args.heaplens, "attach", "999999999"], log=log)
    checks.ok("refusal: no such process", rc == 1 and "no process with id" in err, err.strip())
    rc, out, err = e2elib.run([args.heaplens, "snapshot", "999999999"], log=log)
    checks.ok("snapshot: no such process", rc == 1 and err == "heaplens: no process with id 999999999\n",
              err.strip())
    sleeper = subprocess.Popen(["sleep", "600"])
    # A socket left by an earlier .NET process of the same pid (PIDs are reused; a killed
    # runtime leaves its socket), older than the sleeper: not its socket.
    stale = os.path.join(tempfile.gettempdir(), f"dotnet-diagnostic-{sleeper.pid}-1-socket")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            e2elib.remove_stale(stale)
            s.bind(stale)
        os.utime(stale, (1, 1))
        rc, out, err = e2elib.run([args.heaplens, "attach", str(sleeper.pid)], log=log)
        checks.ok("refusal: not a .NET process (a stale socket of its pid beside)",
                  rc == 1 and "is not a .NET process" in err, err.strip())
    finally:
        e2elib.remove_stale(stale)
        sleeper.kill()
        sleeper.wait()
    planted_refusals(checks, args, log)
    # A process under `heaplens record` already has a profiler.
    db = os.path.join(args.workdir, "recorded.db")
    rec = subprocess.Popen([args.heaplens, "record", "-q", "-o", db, "--"] + args.target,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    ready = rec.stdout.readline().split()
    pid = int(ready[1]) if len(ready) == 2 else 0
    rc, out, err = e2elib.run([args.heaplens, "attach", str(pid), "-o",
                               os.path.join(args.workdir, "refused.db")], log=log)
    checks.ok("refusal: a process already recorded", rc == 1 and "already has a profiler" in err,
              err.strip())
    checks.ok("refusal: leaves no database", not os.path.exists(os.path.join(args.workdir, "refused.db")))
    # The same refusal from the runtime itself, without the session file's shortcut.
    rec.stdin.write("stop\n")
    rec.stdin.flush()
    rec.wait(timeout=120)


def planted_refusals(checks, args, log):
    """A socket planted under a process's diagnostic name, listening: owned by another user it
    is refused before heaplens connects; owned by the process's user, the process's own
    HEAPLENS_* settings (which the collector would read) are checked before it is talked to."""
    for case in ("another user's socket", "a bad setting in the process's environment"):
        env = dict(os.environ)
        if case.startswith("a bad"):
            env["HEAPLENS_POOL_MB"] = "abc"
        sleeper = subprocess.Popen(["sleep", "600"], env=env)
        planted = os.path.join(tempfile.gettempdir(), f"dotnet-diagnostic-{sleeper.pid}-1-socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            e2elib.remove_stale(planted)
            listener.bind(planted)
            listener.listen(4)
            if case.startswith("another"):
                os.chown(planted, 54321, 54321)  # tests run as root
            db = os.path.join(args.workdir, "planted.db")
            rc, out, err = e2elib.run([args.heaplens, "attach", str(sleeper.pid), "-o", db],
                                      log=log, timeout=120)
            listener.setblocking(False)
            try:
                listener.accept()[0].close()
                connected = True
            except BlockingIOError:
                connected = False
            want = ("belongs to uid 54321" if case.startswith("another")
                    else "HEAPLENS_POOL_MB='abc'")
            checks.ok(f"refusal: {case}, in one line", rc == 1 and want in err and
                      err.count("\n") == 1, err.strip())
            checks.ok(f"refusal: {case}: heaplens never connected", not connected)
            checks.ok(f"refusal: {case}: leaves no database", not os.path.exists(db))
        finally:
            listener.close()
            e2elib.remove_stale(planted)
            sleeper.kill()
            sleeper.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--duration", type=int, default=1)
    ap.add_argument("--only", choices=["sessions", "refusals"])
    ap.add_argument("--server-gc", action="store_true",
                    help="run the target with server GC (DOTNET_gcServer=1)")
    ap.add_argument("--stacks", default="on", choices=["on", "off"],
                    help="heaplens attach --stacks (off: on .NET 8 the objects are followed by "
                         "handles too)")
    ap.add_argument("--expect-handles", action="store_true",
                    help="the sessions follow their objects by weak handles (.NET 10, or "
                         "--stacks off): check the collector's follow figures")
    ap.add_argument("--follow-check", action="store_true",
                    help="HEAPLENS_FOLLOW_CHECK=1 in the program's environment: every handle's "
                         "answer compared with the runtime's survivor ranges")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("target", nargs="+", help="the command that runs AttachTarget")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    log = os.path.join(args.workdir, "log.txt")
    checks = e2elib.Checks(args.verbose)
    if args.only in (None, "sessions"):
        env = dict(os.environ, HEAPLENS_STATS="1")  # the collector's count after each detach
        if args.follow_check:
            env["HEAPLENS_FOLLOW_CHECK"] = "1"
        if args.server_gc:
            env["DOTNET_gcServer"] = "1"
        target = Target(args.target, env=env)
        if checks.ok("the target starts", target.pid is not None):
            try:
                checks.eq("the target runs the GC asked for",
                          "gcmode " + ("server" if args.server_gc else "workstation"),
                          target.ask("gcmode"))
                # Not recorded yet: `heaplens snapshot` points to attach, not to record.
                rc, out, err = e2elib.run([args.heaplens, "snapshot", str(target.pid)], log=log)
                checks.ok("snapshot of a .NET process not recorded suggests attach",
                          rc == 1 and err == f"heaplens: process {target.pid} is not being recorded; "
                          f"'heaplens attach {target.pid}' records it from now on (snapshots "
                          "included)\n", err.strip())
                # Ctrl-C, then SIGTERM, then --duration: each ends a session, and the
                # library, left mapped, starts afresh at every attach.
                session(checks, args, target, 1, signal.SIGINT, log)
                session(checks, args, target, 2, signal.SIGTERM, log)
                duration_session(checks, args, target, 3, log)
                signal_session(checks, args, target, 4, signal.SIGUSR1, log)
                duration_session(checks, args, target, 5, log, census="off")
            finally:
                rc, line = target.stop()
            checks.eq("the target exits 0 after the sessions", 0, rc)
            if args.follow_check:
                checks.ok("the sessions compared handles with the ranges",
                          sum(s.get("check_agree", 0) for s in FOLLOWED) > 0, str(FOLLOWED))
            checks.ok("the target verified its own data", line.startswith("verified"), line)
    if args.only in (None, "refusals"):
        refusals(checks, args, log)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
