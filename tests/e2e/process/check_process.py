#!/usr/bin/env python3
"""heaplens record among real processes (examples/ProcessLife), see README.md.

  signals   Ctrl-C on a terminal (a pty), SIGINT to the process group, and SIGINT, SIGTERM,
            SIGHUP, SIGQUIT to `heaplens record` alone: the program does not ignore SIGINT or
            SIGQUIT, it ends, heaplens exits with 128+N, the database is finished and sound.

  children  a recorded program starts a .NET child: the child has no libheaplens.so mapped and
            holds no more sockets than without heaplens, the parent's recording is complete;
            a script's first .NET process records, its child does not;
            `dotnet build` of a small project under heaplens: afterwards no process of that
            build (MSBuild nodes, the compiler server) has libheaplens.so mapped.

  names     the heaplens names of a Dictionary<int, Customer>+Entry[] and a boxed
            List<int>+Enumerator are the ones the program computes by reflection (C#/ClrMD form);
            `roots --type` finds them by their names without namespaces.

Synchronises on lines the program prints and on process exit, with deadlines; never sleeps.
"""
import argparse
import fcntl
import os
import pty
import re
import resource
import select
import signal
import sqlite3
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2elib  # noqa: E402

DEADLINE_S = 60  # to start and get ready
END_S = 20       # to end after the signal


def read_until(fd, pattern, deadline):
    """Reads fd until `pattern` (a regex) matches what was read; returns (match, text)."""
    text = ""
    while True:
        m = re.search(pattern, text)
        if m:
            return m, text
        left = deadline - time.monotonic()
        if left <= 0:
            return None, text
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # a pty whose other side is closed
            chunk = b""
        if not chunk:
            return re.search(pattern, text), text
        text += chunk.decode(errors="replace")


def sig_ignored(pid):
    """The set of signals ignored by pid (/proc/PID/status SigIgn)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                mask = int(line.split()[1], 16)
                return {n for n in range(1, 65) if mask & (1 << (n - 1))}
    return set()


def wait_exit(proc, deadline):
    try:
        return proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None


def pid_gone(pid, deadline):
    """Polls /proc until pid is gone (or a zombie); True if it went before the deadline."""
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        select.select([], [], [], 0.05)  # a poll interval, not a synchronisation
    return False


def gc_committed(db, deadline):
    """Polls the database being written until the writer has committed a GC: what a signal
    may lose after that is only what the collector had not sent yet."""
    while time.monotonic() < deadline:
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
            n = con.execute("SELECT count(*) FROM gcs").fetchone()[0]
            con.close()
            if n >= 1:
                return True
        except sqlite3.Error:
            pass
        select.select([], [], [], 0.05)  # a poll interval, not a synchronisation
    return False


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def check_database(c, name, db, signum):
    """The writer finished: not 'recording', the program's status stored, the file sound."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        status, exit_status = con.execute("SELECT status, exit_status FROM run").fetchone()
        gcs = con.execute("SELECT count(*) FROM gcs").fetchone()[0]
        incomplete = con.execute("SELECT count(*) FROM gcs WHERE incomplete").fetchone()[0]
        con.close()
    except sqlite3.Error as e:
        c.ok(f"{name}: database readable", False, str(e))
        return
    c.eq(f"{name}: integrity_check", "ok", integrity)
    c.ok(f"{name}: the writer finished the run", status in ("complete", "truncated"), status)
    c.eq(f"{name}: run.exit_status", 128 + signum, exit_status)
    c.ok(f"{name}: the program's induced GC is recorded whole", gcs >= 1 and incomplete == 0,
         f"{gcs} GCs, {incomplete} incomplete")
    for wal in (db + "-wal", db + "-journal"):
        c.ok(f"{name}: no {os.path.basename(wal)} left", not os.path.exists(wal))


def record_cmd(a, db):
    e2elib.remove_stale(db, db + "-wal", db + "-shm", db + "-journal")
    return [a.heaplens, "record", "-o", db, "--", a.dotnet, a.dll, "wait"]


def signal_case(c, a, name, signum, target):
    """Records `ProcessLife wait`, sends signum to `target` ('heaplens' or 'group') once the
    program is ready, checks the program's SigIgn, its end, heaplens' status, the database."""
    db = os.path.join(a.workdir, f"{name}.db")
    deadline = time.monotonic() + DEADLINE_S
    proc = subprocess.Popen(record_cmd(a, db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=no_core)
    m, out = read_until(proc.stdout.fileno(), r"ready (\d+)\n", deadline)
    if not c.ok(f"{name}: the program is ready", m is not None, out[-300:]):
        proc.kill()
        proc.wait()
        return
    pid = int(m.group(1))
    c.ok(f"{name}: the writer committed a GC", gc_committed(db, deadline))
    ignored = sig_ignored(pid)
    c.ok(f"{name}: the program does not ignore SIGINT or SIGQUIT",
         not ignored & {signal.SIGINT, signal.SIGQUIT}, f"SigIgn {sorted(ignored)}")
    if target == "group":
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    deadline = time.monotonic() + END_S
    c.ok(f"{name}: the program ended", pid_gone(pid, deadline))
    rc = wait_exit(proc, deadline)
    err = proc.stderr.read().decode(errors="replace")
    if rc is None:
        proc.kill()
        proc.wait()
    c.eq(f"{name}: heaplens record exit status", 128 + signum, rc)
    c.ok(f"{name}: heaplens printed its summary", "heaplens: recorded" in err, err[-300:])
    check_database(c, name, db, signum)


def terminal_case(c, a):
    """Ctrl-C typed on a terminal: heaplens runs as a session leader on a pty, like a shell's
    foreground job; ^C goes to its whole process group, the program included."""
    name = "terminal-ctrl-c"
    db = os.path.join(a.workdir, f"{name}.db")
    deadline = time.monotonic() + DEADLINE_S
    master, slave = pty.openpty()

    def become_terminal_job():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        no_core()

    proc = subprocess.Popen(record_cmd(a, db), stdin=slave, stdout=slave, stderr=slave,
                            preexec_fn=become_terminal_job)
    os.close(slave)
    m, out = read_until(master, r"ready (\d+)\r?\n", deadline)
    if not c.ok(f"{name}: the program is ready", m is not None, out[-300:]):
        proc.kill()
        proc.wait()
        os.close(master)
        return
    pid = int(m.group(1))
    c.ok(f"{name}: the writer committed a GC", gc_committed(db, deadline))
    c.ok(f"{name}: the program does not ignore SIGINT or SIGQUIT",
         not sig_ignored(pid) & {signal.SIGINT, signal.SIGQUIT})
    os.write(master, b"\x03")  # the terminal's interrupt character
    deadline = time.monotonic() + END_S
    c.ok(f"{name}: the program ended", pid_gone(pid, deadline))
    rc = wait_exit(proc, deadline)
    _, out = read_until(master, r"heaplens: recorded[^\n]*\n", deadline)
    os.close(master)
    if rc is None:
        proc.kill()
        proc.wait()
    c.eq(f"{name}: heaplens record exit status", 128 + signal.SIGINT, rc)
    check_database(c, name, db, signal.SIGINT)


def children_case(c, a):
    """ProcessLife parent: the recorded program starts `dotnet ProcessLife.dll probe`."""
    name = "child"
    db = os.path.join(a.workdir, "child.db")
    e2elib.remove_stale(db, db + "-wal", db + "-shm", db + "-journal")
    log = os.path.join(a.workdir, "heaplens.log")
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db, "--", a.dotnet, a.dll, "parent"],
                              log=log, timeout=DEADLINE_S)
    c.eq(f"{name}: heaplens record exit status", 0, rc)
    c.ok(f"{name}: the recorded program has the collector", "parent collector: /" in out, out)
    m = re.search(r"child collector: (\S+) fds: (.*) exit (\d+)", out)
    if not c.ok(f"{name}: the child answered", m is not None, out + err):
        return
    c.eq(f"{name}: the child has no libheaplens.so mapped", "none", m.group(1))
    c.eq(f"{name}: the child exited 0", "0", m.group(3))
    _, plain, _ = e2elib.run([a.dotnet, a.dll, "parent"], log=log, timeout=DEADLINE_S)
    p = re.search(r"child collector: \S+ fds: (.*) exit", plain)
    c.eq(f"{name}: the child holds as many sockets as without heaplens",
         p.group(1).count("socket:") if p else None, m.group(2).count("socket:"))
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        status, exit_status = con.execute("SELECT status, exit_status FROM run").fetchone()
        con.close()
    except sqlite3.Error as e:
        status, exit_status = str(e), None
    c.eq(f"{name}: the parent's recording is complete", ("complete", 0), (status, exit_status))


def script_case(c, a):
    """The program is a script that starts a .NET program (not with exec): that first .NET
    process records, its own .NET child does not."""
    name = "script"
    db = os.path.join(a.workdir, "script.db")
    e2elib.remove_stale(db, db + "-wal", db + "-shm", db + "-journal")
    log = os.path.join(a.workdir, "heaplens.log")
    script = f'"{a.dotnet}" "{a.dll}" parent; status=$?; exit $status'
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db, "--", "sh", "-c", script],
                              log=log, timeout=DEADLINE_S)
    c.eq(f"{name}: heaplens record exit status", 0, rc)
    c.ok(f"{name}: the script's .NET program has the collector", "parent collector: /" in out, out)
    c.ok(f"{name}: its child has not", "child collector: none" in out, out)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        status = con.execute("SELECT status FROM run").fetchone()[0]
        con.close()
    except sqlite3.Error as e:
        status = str(e)
    c.eq(f"{name}: the recording is complete", "complete", status)


def marked_processes(mark):
    """Pids of the processes whose environment holds `mark` (NAME=VALUE): the descendants of
    a command started with it, even those reparented after their parent exited."""
    mark = mark.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            pass
    return found


def maps_collector(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any("libheaplens" in line for line in f)
    except OSError:
        return False


def dotnet_build_case(c, a):
    """`heaplens record -- dotnet build` of a tiny console project; the MSBuild nodes and the
    compiler server it starts stay alive (node reuse): none may have the collector mapped."""
    name = "dotnet-build"
    proj = os.path.join(a.workdir, "tiny")
    os.makedirs(proj, exist_ok=True)
    with open(os.path.join(proj, "tiny.csproj"), "w") as f:
        f.write('<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><OutputType>Exe</OutputType>'
                '<TargetFramework>net10.0</TargetFramework></PropertyGroup></Project>\n')
    with open(os.path.join(proj, "Program.cs"), "w") as f:
        f.write('System.Console.WriteLine("tiny");\n')
    with open(os.path.join(proj, "NuGet.Config"), "w") as f:  # never the network
        f.write('<configuration><packageSources><clear /></packageSources></configuration>\n')
    db = os.path.join(a.workdir, "build.db")
    e2elib.remove_stale(db, db + "-wal", db + "-shm", db + "-journal")
    log = os.path.join(a.workdir, "heaplens.log")
    mark = f"HEAPLENS_TEST_BUILD={os.getpid()}.{time.monotonic_ns()}"
    env = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1")
    env[mark.split("=")[0]] = mark.split("=")[1]
    # As on a developer's machine: MSBuild nodes and the compiler server outlive the build.
    env.pop("MSBUILDDISABLENODEREUSE", None)
    env["UseSharedCompilation"] = "true"
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db, "--", a.dotnet, "build", proj,
                               "--nologo", "-nodeReuse:true", "-p:UseSharedCompilation=true"],
                              log=log, timeout=300, env=env)
    c.eq(f"{name}: heaplens record exit status", 0, rc)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        status = con.execute("SELECT status FROM run").fetchone()[0]
        con.close()
        c.eq(f"{name}: the recording of dotnet build is complete", "complete", status)
    except sqlite3.Error as e:
        c.ok(f"{name}: database readable", False, str(e))
    left = marked_processes(mark)
    mapped = [p for p in left if maps_collector(p)]
    c.ok(f"{name}: no process of the build has libheaplens.so mapped", not mapped,
         f"{len(mapped)} of {len(left)} left: {mapped}")
    for p in left:  # the build's own MSBuild nodes and compiler server, nobody else's
        try:
            os.kill(p, signal.SIGTERM)
        except OSError:
            pass


def names_case(c, a):
    """ProcessLife wait prints the names of its nested generic types as heaplens should write
    them (examples/Shared: HeapLensName); the recording must hold exactly those."""
    name = "names"
    db = os.path.join(a.workdir, "names.db")
    log = os.path.join(a.workdir, "heaplens.log")
    deadline = time.monotonic() + DEADLINE_S
    proc = subprocess.Popen(record_cmd(a, db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    m, out = read_until(proc.stdout.fileno(), r"names: (.*) \| (.*)\nready (\d+)\n", deadline)
    if not c.ok(f"{name}: the program is ready", m is not None, out[-300:]):
        proc.kill()
        proc.wait()
        return
    c.ok(f"{name}: the writer committed a GC", gc_committed(db, deadline))
    os.kill(proc.pid, signal.SIGINT)
    wait_exit(proc, time.monotonic() + END_S)
    entries, enumerator = m.group(1), m.group(2)
    c.eq(f"{name}: reflection's name of the entries", "System.Collections.Generic.Dictionary"
         "<System.Int32, HeapLens.Examples.Process.Customer>+Entry[]", entries)
    doc = e2elib.heaplens_json(c, a.heaplens, ["allocations", db], log)
    types = {r["type"] for r in doc["rows"]} if doc else set()
    for t in (entries, enumerator):
        c.ok(f"{name}: allocations has {t}", t in types,
             ", ".join(sorted(x for x in types if "Dictionary" in x or "List" in x)))
    doc = e2elib.heaplens_json(c, a.heaplens, ["roots", db, "--type",
                                               "Dictionary<Int32, Customer>+Entry[]"], log)
    c.eq(f"{name}: roots --type without namespaces", entries, doc and doc.get("type"))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--dotnet", default="dotnet")
    ap.add_argument("--dll", required=True, help="ProcessLife.dll")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", choices=["signals", "children", "names"], help="run one group of checks")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    e2elib.start_log(a.workdir)
    c = e2elib.Checks(a.verbose)
    if a.only in (None, "signals"):
        terminal_case(c, a)
        signal_case(c, a, "group-sigint", signal.SIGINT, "group")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal_case(c, a, f"heaplens-{sig.name.lower()}", sig, "heaplens")
    if a.only in (None, "children"):
        children_case(c, a)
        script_case(c, a)
        dotnet_build_case(c, a)
    if a.only in (None, "names"):
        names_case(c, a)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
