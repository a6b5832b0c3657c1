#!/usr/bin/env python3
"""The exit wait is said: when the recorded program has ended but its process still waits for
the collector to hand over what it holds (seconds on a program whose objects live a little, or
on a loaded machine), `heaplens record` says so once on stderr, from the program's Shutdown,
after a second. Before: nothing was said, and a terminal looked hung.

examples/GcLoop under `record --snapshot induced`: a snapshot of its 100,000 objects at every
GC.Collect, megabytes each, more than the socket to the writer holds. The writer is held
(SIGSTOP) until the program has done two more GCs, then the program is told to stop: its exit
must wait for the writer, and the line comes after a second. Only then is the writer let go;
the recording ends complete, 0 lost, the line said once, before the summary.

-q and --json say nothing: the program is started without HEAPLENS_EXIT_NOTE_MS
(/proc/PID/environ), which the collector needs to say it. Nor do --children descendants (only
the recording's own program: ProcessLife twins with every exit said at once,
HEAPLENS_EXIT_NOTE_MS=0, says it at most once).

Synchronises on the program's lines, heaplens' stderr lines and process exit; never sleeps."""
import os
import signal
import sqlite3
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402

NOTE = ("heaplens: the program has ended; its collector is handing the rest of the recording "
        "to heaplens (the summary follows)")


def gcloop_record(a, db, options):
    e2elib.remove_db(db)
    rec = subprocess.Popen([a.heaplens, "record", "-o", db] + options + ["--"] +
                           e2elib.program(a.dotnet, a.dll) + ["100000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, bufsize=1, start_new_session=True)
    err, cv = [], threading.Condition()
    threading.Thread(target=e2elib.lines_reader, args=(rec.stderr, err, cv), daemon=True).start()
    return rec, err, cv


def ask(rec, line):
    rec.stdin.write(line + "\n")
    rec.stdin.flush()
    return rec.stdout.readline().split()


def held_writer_case(c, a):
    db = os.path.join(a.workdir, "note.db")
    rec, err, cv = gcloop_record(a, db, ["--snapshot", "induced"])
    writer = None
    try:
        prog = e2elib.gcloop_ready(c, rec)
        if prog is None:
            return
        with open(f"/proc/{rec.pid}/task/{rec.pid}/children") as f:
            others = [int(k) for k in f.read().split() if int(k) != prog]
        if not c.ok("heaplens record has its writer process", len(others) == 1, repr(others)):
            return
        writer = others[0]
        os.kill(writer, signal.SIGSTOP)
        first = ask(rec, "gcs")
        later = first
        while len(later) == 2 and len(first) == 2 and int(later[1]) < int(first[1]) + 2:
            later = ask(rec, "gcs")
        if not c.ok("the program does two GCs while the writer is held",
                    len(later) == 2 and later[0] == "gcs", f"{first!r} {later!r}"):
            return
        rec.stdin.write("stop\n")
        rec.stdin.flush()
        with cv:
            said = cv.wait_for(lambda: NOTE in err or None in err, timeout=60)
        c.ok("the exit wait is said while the writer is held", said and NOTE in err,
             "\n".join(str(x) for x in err[-10:]))
        os.kill(writer, signal.SIGCONT)
        writer = None
        rec.stdin.close()
        rec.stdout.read()
        rec.wait(timeout=300)
        with cv:
            cv.wait_for(lambda: None in err, timeout=60)
    finally:
        if writer is not None:
            os.kill(writer, signal.SIGCONT)
        e2elib.kill_if_running(rec)
    lines = [x for x in err if x is not None]
    c.eq("heaplens record exits with the program's status", 0, rec.returncode)
    c.eq("the exit wait is said once", 1, lines.count(NOTE))
    summary = [i for i, x in enumerate(lines) if x.startswith("heaplens: recorded ")]
    c.ok("said before the summary", summary and lines.index(NOTE) < summary[0] if NOTE in lines
         else False, "\n".join(lines[-10:]))
    c.ok("nothing lost while the writer was held", summary and ", 0 lost -> " in lines[summary[0]],
         "\n".join(lines[-10:]))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    status = con.execute("SELECT status FROM run").fetchone()[0]
    con.close()
    c.eq("the recording is complete", "complete", status)


def quiet_case(c, a, name, options, noted):
    """Whether the program starts with the collector told to say its exit wait."""
    db = os.path.join(a.workdir, f"note-{name}.db")
    rec, err, cv = gcloop_record(a, db, ["--snapshot", "none"] + options)
    try:
        prog = e2elib.gcloop_ready(c, rec)
        if prog is None:
            return
        with open(f"/proc/{prog}/environ", "rb") as f:
            names = [v.split(b"=", 1)[0] for v in f.read().split(b"\0")]
        c.eq(f"{name}: the program may say its exit wait", noted,
             b"HEAPLENS_EXIT_NOTE_MS" in names)
        ask(rec, "stop")
        rec.stdin.close()
        rec.stdout.read()
        rec.wait(timeout=300)
    finally:
        e2elib.kill_if_running(rec)
    c.eq(f"{name}: heaplens record exit status", 0, rec.returncode)


def main():
    ap = e2elib.arguments(__doc__.splitlines()[0])
    ap.add_argument("--twins", required=True, help="examples/ProcessLife's dll")
    a, c, log = e2elib.begin(ap)
    held_writer_case(c, a)
    quiet_case(c, a, "plain", [], True)
    quiet_case(c, a, "quiet", ["-q"], False)
    quiet_case(c, a, "json", ["--json"], False)
    db = os.path.join(a.workdir, "note-children.db")
    for f in os.listdir(a.workdir):
        if f.startswith("note-children."):
            os.unlink(os.path.join(a.workdir, f))
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db, "--children", "--"] +
                              e2elib.program(a.dotnet, a.twins) + ["twins"], log=log, timeout=120,
                              env=dict(os.environ, HEAPLENS_EXIT_NOTE_MS="0"))
    c.eq("children: heaplens record exit status", 0, rc)
    c.ok("children: a descendant never says it", err.count(NOTE) <= 1, err)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
