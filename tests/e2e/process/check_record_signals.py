#!/usr/bin/env python3
"""A signal to `heaplens record` once its program has ended, while its writer stores the rest
(examples/GcLoop, which exits 0 at "stop"). Before: the forwarding handlers were restored as the
program ended, so a Ctrl-C then ended heaplens alone (exit 130, no summary) while its writer
finished the file. Now it is said and ends nothing: heaplens waits for its writer, prints its
summary and exits with the program's status, 0.

The writer is held (SIGSTOP) so that heaplens is surely waiting for it when the signal comes.
It is held only once it has stored every GC of the paused program, so that what the collector
sends at the program's exit fits in the socket: held earlier, the collector's exit waited for it
to its 10 s bound and gave the rest up (loss, status truncated: seen in CI under load).
Synchronised on the program's own GC count, the recording's rows and /proc (heaplens blocked in
wait4 on the writer's pid, then the signal no longer pending), never on sleeps."""
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402

SYS_WAIT4 = {"x86_64": 61, "aarch64": 260}.get(os.uname().machine)


def waits_for(pid, child):
    """Whether process `pid` is blocked in wait4 on `child` (/proc/PID/syscall)."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            words = f.read().split()
    except OSError:
        return False
    return len(words) > 1 and words[0] == str(SYS_WAIT4) and int(words[1], 16) == child


def until(cond, seconds):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def main():
    ap = e2elib.arguments(__doc__.splitlines()[0])
    a, checks, log = e2elib.begin(ap)
    if SYS_WAIT4 is None:
        print(f"skipped: no wait4 number for {os.uname().machine}")
        return 0
    db = os.path.join(a.workdir, "record_signal.db")
    e2elib.remove_db(db)
    rec = subprocess.Popen([a.heaplens, "record", "-o", db, "--snapshot", "none", "--"] +
                           e2elib.program(a.dotnet, a.dll) + ["30000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, bufsize=1, start_new_session=True)
    writer = None
    try:
        prog = e2elib.gcloop_ready(checks, rec)
        if prog is None:
            return checks.summary()
        with open(f"/proc/{rec.pid}/task/{rec.pid}/children") as f:
            others = [int(k) for k in f.read().split() if int(k) != prog]
        if not checks.ok("heaplens record has its writer process", len(others) == 1,
                         repr(others)):
            return checks.summary()
        rec.stdin.write("pause\n")
        rec.stdin.flush()
        paused = rec.stdout.readline().split()
        if not checks.ok("the program pauses its GCs", len(paused) == 2 and paused[0] == "paused",
                         f"got {paused!r}"):
            return checks.summary()
        if not checks.ok("the writer stores every GC of the program",
                         until(lambda: e2elib.count_rows(db, "gcs") >= int(paused[1]), 120),
                         f"{e2elib.count_rows(db, 'gcs')} of {paused[1]} GCs stored"):
            return checks.summary()
        writer = others[0]
        os.kill(writer, signal.SIGSTOP)  # the writer busy: heaplens will wait for it
        rec.stdin.write("stop\n")
        rec.stdin.flush()
        if not checks.ok("heaplens waits for its writer once the program has ended",
                         until(lambda: waits_for(rec.pid, writer), 120)):
            return checks.summary()
        os.killpg(rec.pid, signal.SIGINT)  # Ctrl-C on a terminal: the whole process group
        checks.ok("the SIGINT is taken while the writer is held",
                  until(lambda: not e2elib.signal_pending(rec.pid, signal.SIGINT), 30))
        os.kill(writer, signal.SIGCONT)
        writer = None
        out, err = rec.communicate(timeout=120)
    finally:
        if writer is not None:
            os.kill(writer, signal.SIGCONT)
        e2elib.kill_if_running(rec)
    with open(log, "a") as f:
        f.write(f"heaplens record: exit {rec.returncode}\n{out}\n{err}\n")
    print(f"heaplens record: exit {rec.returncode}")
    checks.eq("heaplens record exits with the program's status (0), not by the signal", 0,
              rec.returncode)
    checks.ok("the program's lines passed through", "stopped" in out, out[-300:])
    checks.ok("the signal is said", "the program has ended; its recording is being finished"
              in err, err[-600:])
    checks.ok("the summary line is said", "heaplens: recorded " in err, err[-600:])
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    status, exit_status = con.execute("SELECT status, exit_status FROM run").fetchone()
    con.close()
    checks.eq("the recording is complete", "complete", status)
    checks.eq("run.exit_status is the program's", 0, exit_status)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
