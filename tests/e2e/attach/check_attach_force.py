#!/usr/bin/env python3
"""`heaplens attach --force -o FILE PID` over an existing recording (examples/GcLoop, three
sessions on one program). Its paths had been read, never run.

1. A first attach records FILE.
2. `attach --force -o FILE` replaces it: the new recording is complete and newer (its run
   started later), the old one is gone, nothing set aside (.FILE.heaplens-replaced-PID) is left.
3. `attach --force -o FILE` whose new database cannot be created (RLIMIT_FSIZE of one block in
   heaplens, SIGXFSZ ignored: its writer's first write fails): one line on stderr that says the
   old recording was kept, a non-zero exit, FILE and its set byte-identical, nothing left aside;
   the program was not attached (it stops and exits normally).
4. An old set a killed heaplens left aside (.FILE.heaplens-replaced-PID of a pid that has ended)
   beside a missing FILE: `attach -o FILE` puts it back (byte for byte) and refuses in one line
   as for any FILE that exists, before attaching.

Synchronised on observable conditions (the program's lines, heaplens' exit, the collector's
"heaplens: detached:" line before the next attach), never on sleeps."""
import hashlib
import os
import resource
import signal
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402

SUFFIXES = ("", "-wal", "-shm", "-journal")


def digests(db):
    """The set of `db` as {suffix: md5} of the members that exist."""
    out = {}
    for s in SUFFIXES:
        if os.path.exists(db + s):
            with open(db + s, "rb") as f:
                out[s] = hashlib.md5(f.read()).hexdigest()
    return out


def set_aside(workdir):
    return sorted(n for n in os.listdir(workdir) if ".heaplens-replaced-" in n)


def run_start(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    start, status = con.execute("SELECT start_mono_ns, status FROM run").fetchone()
    con.close()
    return start, status


def attach(a, log, pid, db, force=False, limit_file_size=False):
    cmd = [a.heaplens, "attach", str(pid), "-o", db, "--snapshot", "none",
           "--duration", "1"] + (["--force"] if force else [])

    def limited():
        # a file of one block at most: the writer's first write fails (EFBIG, not a signal)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300, preexec_fn=limited if limit_file_size else None)
    with open(log, "a") as f:
        f.write(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}{p.stderr}\n")
    return p.returncode, p.stderr


def main():
    ap = e2elib.arguments(__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=20000, help="the program's live objects")
    a, checks, log = e2elib.begin(ap)
    db = os.path.join(a.workdir, "force.db")
    e2elib.remove_db(db)
    for n in set_aside(a.workdir):
        os.remove(os.path.join(a.workdir, n))
    prog, err, err_cv = e2elib.gcloop_start(a, a.objects)

    def detached(n):
        return e2elib.collector_detached(checks, err, err_cv, n)
    try:
        pid = e2elib.gcloop_ready(checks, prog)
        if pid is None:
            return checks.summary()
        # 1: the recording to replace
        rc, text = attach(a, log, pid, db)
        if not checks.eq("1: attach -o FILE exits 0", 0, rc) or not detached(1):
            print(text[-800:])
            return checks.summary()
        old_start, _ = run_start(db)
        old = digests(db)
        # 2: --force replaces it
        rc, text = attach(a, log, pid, db, force=True)
        checks.eq("2: attach --force -o FILE exits 0", 0, rc)
        checks.ok("2: the summary line is said", "heaplens: recorded " in text, text[-600:])
        new_start, status = run_start(db)
        checks.eq("2: the new recording is complete", "complete", status)
        checks.ok("2: FILE is the new recording (its run started later)", new_start > old_start,
                  f"{new_start} <= {old_start}")
        checks.ok("2: the old recording is gone (FILE's bytes changed)",
                  digests(db).get("") != old.get(""))
        checks.eq("2: nothing set aside is left", [], set_aside(a.workdir))
        if not detached(2):
            return checks.summary()
        # 3: the new database cannot be created: the old one stays as it was
        kept = digests(db)
        rc, text = attach(a, log, pid, db, force=True, limit_file_size=True)
        lines = text.splitlines()
        checks.ok("3: a non-zero exit", rc != 0, f"exit {rc}")
        checks.ok("3: one line on stderr that says the old recording was kept",
                  len(lines) == 1 and lines[0].startswith("heaplens: ") and
                  lines[0].endswith("(the old recording was kept)"), text)
        checks.eq("3: FILE and its set are byte-identical", kept, digests(db))
        checks.eq("3: nothing set aside is left", [], set_aside(a.workdir))
        checks.eq("3: the recording still reads as the second one", (new_start, "complete"),
                  run_start(db))
        # 4: an old set a killed heaplens left aside (.FILE.heaplens-replaced-PID, PID gone),
        # FILE missing: attach -o FILE puts it back and refuses as for any FILE that exists,
        # before attaching
        other = os.path.join(a.workdir, "other.db")
        e2elib.remove_db(other)
        dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True)
        aside = os.path.join(a.workdir, f".other.db.heaplens-replaced-{dead.stdout.strip()}")
        os.rename(db, aside)  # the second recording, with a member beside it
        with open(aside + "-wal", "wb") as f:
            f.write(b"its log")
        put = digests(aside)
        rc, text = attach(a, log, pid, other)
        checks.ok("4: attach -o FILE, FILE set aside: exit 1, one line saying it was put back",
                  rc == 1 and len(text.splitlines()) == 1 and "already exists (put back from "
                  f"{aside}, where a heaplens killed while replacing it (--force) had set it "
                  "aside)" in text, text)
        checks.eq("4: FILE is the set put back, byte for byte", put, digests(other))
        checks.eq("4: nothing left aside", [], set_aside(a.workdir))
        e2elib.gcloop_stop(checks, prog)
        checks.eq("the program exits 0", 0, prog.wait(timeout=120))
        with err_cv:
            attached_lines = sum(1 for l in err if l and l.startswith("heaplens: detached:"))
        checks.eq("3, 4: the program was not attached a third time", 2, attached_lines)
    finally:
        e2elib.kill_if_running(prog)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
