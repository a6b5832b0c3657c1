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

  descendants  `record --children[=PATTERN]` (ProcessLife twins: a parent starting two .NET
            children at once): with --children three databases, each complete, with its
            process's pid and command line, the children's named FILE-stem.PID.db and listed in
            the summary; with --children=beta only that child; without the option only the
            parent; the children not recorded are said in the summary and stored
            (unrecorded_processes); HEAPLENS_EMPTY=1 left in the environment is said; `heaplens snapshot PID` of a recorded child (with "progress" lines on its
            control socket); `dotnet build` with
            --children=PATTERN (the compiler run, then the compiler server that outlives the
            build) finishes and writes the databases its summary lists.

  names     the heaplens names of a Dictionary<int, Customer>+Entry[] and a boxed
            List<int>+Enumerator are the ones the program computes by reflection (C#/ClrMD form);
            `roots --type` finds them by their names without namespaces.

Synchronises on lines the program prints and on process exit, with deadlines; never sleeps.
"""
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
        except (FileNotFoundError, ProcessLookupError):  # reaped before or while reading
            return True
        select.select([], [], [], 0.05)  # a poll interval, not a synchronisation
    return False


def gc_committed(db, deadline):
    """Polls the database being written until the writer has committed a GC: what a signal
    may lose after that is only what the collector had not sent yet."""
    while time.monotonic() < deadline:
        if e2elib.count_rows(db, "gcs", busy_timeout=1) >= 1:
            return True
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
    e2elib.remove_db(db)
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


def failfast_case(c, a):
    """Environment.FailFast right after a GC.Collect(): the runtime aborts the process without
    Shutdown, but fires its FailFast event first, on the failing thread, and the collector ends
    the session there (collector/README.md, "Environment.FailFast"). The recording is complete:
    that GC and the program's Customers in it, the exit status SIGABRT's."""
    name, n = "failfast", 28000
    db = os.path.join(a.workdir, f"{name}.db")
    e2elib.remove_db(db)
    proc = subprocess.run([a.heaplens, "record", "-o", db, "--", a.dotnet, a.dll, "failfast",
                           str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=END_S + DEADLINE_S, preexec_fn=no_core)
    m = re.search(r"failfast gcs=(\d+) customers=(\d+)", proc.stdout)
    if not c.ok(f"{name}: the program reached its FailFast", m is not None, proc.stdout[-300:]):
        return
    c.eq(f"{name}: heaplens record exit status (SIGABRT)", 128 + signal.SIGABRT, proc.returncode)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        status, loss, exit_status = con.execute("SELECT status, loss, exit_status FROM run").fetchone()
        gcs = con.execute("SELECT count(*) FROM gcs WHERE NOT incomplete").fetchone()[0]
        customers = con.execute(
            "SELECT coalesce(sum(a.count), 0) FROM alloc_counts a JOIN types t ON t.id = a.type_id"
            " WHERE t.name = 'HeapLens.Examples.Process.Customer'").fetchone()[0]
        con.close()
    except sqlite3.Error as e:
        c.ok(f"{name}: database readable", False, str(e))
        return
    c.eq(f"{name}: run.status and loss", ("complete", None), (status, loss))
    c.eq(f"{name}: run.exit_status", 128 + signal.SIGABRT, exit_status)
    c.eq(f"{name}: the GCs before the FailFast, whole", int(m.group(1)), gcs)
    c.eq(f"{name}: the Customers allocated before it", n, customers)


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
    e2elib.remove_db(db)
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
    e2elib.remove_db(db)
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
    e2elib.remove_db(db)
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

SUMMARY_RE = re.compile(r"^heaplens: recorded .* -> (\S+) \([^)]*\), pid (\d+): (.*)$", re.M)


def run_row(db):
    """(pid, command, status, exit_status, loss, gcs) of a database, or the error text."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        row = con.execute("SELECT pid, command, status, exit_status, loss FROM run").fetchone()
        gcs = con.execute("SELECT count(*) FROM gcs").fetchone()[0]
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
        return row + (gcs, integrity)
    except sqlite3.Error as e:
        return str(e)


def stale_family(workdir, stem):
    """Removes STEM.db and every STEM.*.db (and their -wal, -shm, -journal) in workdir."""
    for f in os.listdir(workdir):
        if f == stem + ".db" or re.fullmatch(re.escape(stem) + r"(\.\d+)?\.db(-wal|-shm|-journal)?", f):
            os.unlink(os.path.join(workdir, f))


def family(workdir, stem):
    """The databases STEM.db and STEM.PID.db in workdir: {name: pid or None}."""
    found = {}
    for f in os.listdir(workdir):
        m = re.fullmatch(re.escape(stem) + r"(?:\.(\d+))?\.db", f)
        if m:
            found[f] = int(m.group(1)) if m.group(1) else None
    return found


def twins_case(c, a, name, option, recorded_labels):
    """`ProcessLife twins` under `record [option]`: the parent and the children whose labels
    are in recorded_labels have their databases, nothing else."""
    stem = f"twins-{name}"
    stale_family(a.workdir, stem)
    db = os.path.join(a.workdir, stem + ".db")
    log = os.path.join(a.workdir, "heaplens.log")
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db] + option +
                              ["--", a.dotnet, a.dll, "twins"], log=log, timeout=DEADLINE_S)
    c.eq(f"{name}: heaplens record exit status", 0, rc)
    parent = re.search(r"^parent pid (\d+)$", out, re.M)
    probes = {m.group(1): (int(m.group(2)), m.group(3), m.group(4)) for m in re.finditer(
        r"^probe (\w+) pid (\d+) collector: (\S+) exit (\d+)$", out, re.M)}
    if not c.ok(f"{name}: the parent and both children answered",
                parent is not None and sorted(probes) == ["alpha", "beta"], out + err):
        return
    for label, (pid, collector, code) in sorted(probes.items()):
        c.eq(f"{name}: {label} exited 0", "0", code)
        c.eq(f"{name}: {label} has the collector mapped", label in recorded_labels,
             collector != "none")
    expected = {stem + ".db": None}
    for label in recorded_labels:
        expected[f"{stem}.{probes[label][0]}.db"] = probes[label][0]
    c.eq(f"{name}: the databases written", sorted(expected), sorted(family(a.workdir, stem)))
    listed = {os.path.basename(m.group(1)): (int(m.group(2)), m.group(3))
              for m in SUMMARY_RE.finditer(err)}
    if option:
        c.eq(f"{name}: the summary lists every database", sorted(expected), sorted(listed))
    # The children that were not recorded (declined) are said in the summary and stored in the
    # program's database, with their pids and command lines; --children is suggested.
    unrecorded = sorted(probes[l][0] for l in ("alpha", "beta") if l not in recorded_labels)
    said = re.search(r"^heaplens: (\d+) \.NET process(?:es)? started under the program ran and "
                     r"(?:was|were) not recorded: (.*); record (?:it|them) too with --children", err, re.M)
    c.eq(f"{name}: the summary says which .NET children ran unrecorded", unrecorded,
         sorted(int(p) for p in re.findall(r"pid (\d+) \(", said.group(2))) if said else [])
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        stored = con.execute("SELECT pid, command FROM unrecorded_processes ORDER BY pid").fetchall()
        con.close()
    except sqlite3.Error as e:
        stored = str(e)
    c.eq(f"{name}: the database stores them", [(p, f"dotnet {a.dll} probe {l}") for p, l in
                                               sorted((probes[l][0], l) for l in ("alpha", "beta")
                                                      if l not in recorded_labels)], stored)
    prefix = f"{a.dotnet} {a.dll}"  # the children are started as "dotnet" (ProcessStartInfo)
    for f, pid in sorted(expected.items()):
        row = run_row(os.path.join(a.workdir, f))
        if not c.ok(f"{name}: {f} readable", isinstance(row, tuple), row):
            continue
        run_pid, command, status, exit_status, loss, gcs, integrity = row
        label = next((l for l in recorded_labels if probes[l][0] == pid), None)
        want_pid = pid if pid is not None else int(parent.group(1))
        want_command = f"dotnet {a.dll} probe {label}" if label else f"{prefix} twins"
        c.eq(f"{name}: {f} run.pid", want_pid, run_pid)
        c.eq(f"{name}: {f} run.command", want_command, command)
        c.eq(f"{name}: {f} complete, nothing lost", ("complete", None, "ok"), (status, loss, integrity))
        c.eq(f"{name}: {f} run.exit_status (known for the program only)",
             0 if pid is None else None, exit_status)
        c.ok(f"{name}: {f} holds the induced GC", gcs >= 1, gcs)
        if option:
            c.eq(f"{name}: {f} in the summary with pid and command", (want_pid, want_command),
                 listed.get(f))


def empty_case(c, a):
    """HEAPLENS_EMPTY=1 left in the environment: the collector loads with empty callbacks and
    records nothing; the summary and `heaplens info` say so (run.flags empty-profiler)."""
    name = "empty"
    db = os.path.join(a.workdir, "empty.db")
    e2elib.remove_db(db)
    log = os.path.join(a.workdir, "heaplens.log")
    env = dict(os.environ, HEAPLENS_EMPTY="1")
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db, "--", a.dotnet, a.dll, "probe",
                               "empty"], log=log, timeout=DEADLINE_S, env=env)
    c.eq(f"{name}: heaplens record exit status", 0, rc)
    c.ok(f"{name}: the summary says the empty profiler ran", "(HEAPLENS_EMPTY=1)" in err, err)
    rc, out, err = e2elib.run([a.heaplens, "info", db], log=log, timeout=DEADLINE_S)
    c.ok(f"{name}: info says so", rc == 0 and "empty-profiler" in out and
         "(HEAPLENS_EMPTY=1)" in out, out + err)


def child_snapshot_case(c, a):
    """A script's first .NET process (probe) is the program's recording; `ProcessLife wait`, a
    later descendant matching --children=wait, records into its own database; `heaplens
    snapshot PID` of it stores a snapshot there; a second request on its control socket gets
    "progress" lines before its answer, like the program's; SIGINT ends it and then the
    script."""
    name = "child-snapshot"
    stem = "snap"
    stale_family(a.workdir, stem)
    db = os.path.join(a.workdir, stem + ".db")
    log = os.path.join(a.workdir, "heaplens.log")
    script = f'"{a.dotnet}" "{a.dll}" probe alpha && "{a.dotnet}" "{a.dll}" wait'
    deadline = time.monotonic() + DEADLINE_S
    proc = subprocess.Popen([a.heaplens, "record", "-o", db, "--children=wait", "--", "sh", "-c",
                             script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    m, out = read_until(proc.stdout.fileno(), r"\nready (\d+)\n", deadline)
    if not c.ok(f"{name}: the child is ready", m is not None, out[-300:]):
        proc.kill()
        proc.wait()
        return
    pid = int(m.group(1))
    child_db = os.path.join(a.workdir, f"{stem}.{pid}.db")
    rc, sout, serr = e2elib.run([a.heaplens, "snapshot", str(pid)], log=log, timeout=DEADLINE_S)
    c.eq(f"{name}: heaplens snapshot {pid} exit status", 0, rc)
    c.ok(f"{name}: the snapshot is stored in the child's database",
         " stored " in sout and sout.strip().endswith(f" in {os.path.realpath(child_db)}"),
         sout + serr)
    # The same request on the control socket itself, as `heaplens snapshot` sends it: the
    # child's writer reports progress like the program's ("writing" always comes, before the
    # answer), which `heaplens snapshot` reads but does not print.
    control = e2elib.session_control(pid)
    c.ok(f"{name}: the child's session names its control socket", control is not None, pid)
    progress, answer = (e2elib.control_request(control, timeout=DEADLINE_S) if control
                        else ([], ""))
    m = re.match(r"ok (\d+) \d+ ", answer)
    c.ok(f"{name}: a request on the child's control socket is answered ok", m is not None,
         answer)
    c.ok(f"{name}: progress lines before the answer, the last one 'writing' that snapshot",
         m is not None and len(progress) > 0 and
         re.fullmatch(rf"progress {m.group(1)} writing \d+", progress[-1]) is not None,
         progress)
    os.kill(pid, signal.SIGINT)
    rc = wait_exit(proc, time.monotonic() + END_S)
    err = proc.stderr.read().decode(errors="replace")
    c.eq(f"{name}: heaplens record exits with the script's status", 128 + signal.SIGINT, rc)
    c.eq(f"{name}: the databases written", sorted([f"{stem}.db", f"{stem}.{pid}.db"]),
         sorted(family(a.workdir, stem)))
    try:
        con = sqlite3.connect(f"file:{child_db}?mode=ro", uri=True)
        snaps = con.execute("SELECT count(*) FROM snapshots WHERE trigger = 'requested'"
                            ).fetchone()[0]
        run_pid, status = con.execute("SELECT pid, status FROM run").fetchone()
        con.close()
    except sqlite3.Error as e:
        snaps, run_pid, status = str(e), None, None
    c.ok(f"{name}: the child's database holds both requested snapshots", snaps == 2,
         f"{snaps} requested snapshots; {err}")
    c.eq(f"{name}: the child's database is its own and finished", (pid, "truncated"),
         (run_pid, status))


def children_build_case(c, a, name, pattern, shared):
    """`heaplens record --children=PATTERN -- dotnet build` of a tiny project finishes and writes
    the databases its summary lists, each finished, named after its process's pid. With the
    compiler server (shared) the server outlives the build: its recording ends 5 s after the
    build's (loss recording-stopped) when heaplens started it; a server already running from
    an earlier build is not a descendant and is not recorded."""
    proj = os.path.join(a.workdir, f"tiny-{name}")
    os.makedirs(proj, exist_ok=True)
    with open(os.path.join(proj, "tiny.csproj"), "w") as f:
        f.write('<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><OutputType>Exe</OutputType>'
                '<TargetFramework>net10.0</TargetFramework></PropertyGroup></Project>\n')
    with open(os.path.join(proj, "Program.cs"), "w") as f:
        f.write(f'System.Console.WriteLine("{name} {time.monotonic_ns()}");\n')  # always compiled
    with open(os.path.join(proj, "NuGet.Config"), "w") as f:  # never the network
        f.write('<configuration><packageSources><clear /></packageSources></configuration>\n')
    stem = f"build-{name}"
    stale_family(a.workdir, stem)
    db = os.path.join(a.workdir, stem + ".db")
    log = os.path.join(a.workdir, "heaplens.log")
    mark = f"HEAPLENS_TEST_BUILD={os.getpid()}.{time.monotonic_ns()}"
    env = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1")
    env[mark.split("=")[0]] = mark.split("=")[1]
    env.pop("MSBUILDDISABLENODEREUSE", None)
    env["UseSharedCompilation"] = "true" if shared else "false"
    rc, out, err = e2elib.run([a.heaplens, "record", "-o", db, f"--children={pattern}", "--",
                               a.dotnet, "build", proj, "--nologo", "-nodeReuse:true",
                               f"-p:UseSharedCompilation={'true' if shared else 'false'}"],
                              log=log, timeout=300, env=env)
    c.eq(f"{name}: heaplens record exit status", 0, rc)
    listed = {os.path.basename(m.group(1)): (int(m.group(2)), m.group(3))
              for m in SUMMARY_RE.finditer(err)}
    written = family(a.workdir, stem)
    c.eq(f"{name}: the summary lists the databases written", sorted(written), sorted(listed))
    for f, pid in sorted(written.items()):
        row = run_row(os.path.join(a.workdir, f))
        if not c.ok(f"{name}: {f} readable", isinstance(row, tuple), row):
            continue
        run_pid, command, status, _, loss, _, integrity = row
        c.eq(f"{name}: {f} integrity", "ok", integrity)
        if pid is None:
            c.eq(f"{name}: {f} (dotnet build) complete", "complete", status)
            continue
        c.eq(f"{name}: {f} named after its process", pid, run_pid)
        c.ok(f"{name}: {f} is a process matching {pattern}", pattern in (command or ""), command)
        c.ok(f"{name}: {f} finished", status in ("complete", "truncated"), status)
        if status == "truncated":
            c.eq(f"{name}: {f} was stopped as it outlived the build", "recording-stopped", loss)
    if not shared:
        c.eq(f"{name}: exactly one compiler run recorded", 1, len(written) - 1)
    left = marked_processes(mark)
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
    ap = e2elib.arguments(__doc__, dll_help="ProcessLife.dll")
    ap.add_argument("--only", choices=["signals", "children", "descendants", "names"],
                    help="run one group of checks")
    a, c, _ = e2elib.begin(ap)
    if a.only in (None, "signals"):
        failfast_case(c, a)
        terminal_case(c, a)
        signal_case(c, a, "group-sigint", signal.SIGINT, "group")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal_case(c, a, f"heaplens-{sig.name.lower()}", sig, "heaplens")
    if a.only in (None, "children"):
        children_case(c, a)
        script_case(c, a)
        dotnet_build_case(c, a)
    if a.only in (None, "descendants"):
        twins_case(c, a, "all", ["--children"], ["alpha", "beta"])
        twins_case(c, a, "pattern", ["--children=beta"], ["beta"])
        twins_case(c, a, "none", [], [])
        empty_case(c, a)
        child_snapshot_case(c, a)
        children_build_case(c, a, "compiler", "bincore/csc", shared=False)
        children_build_case(c, a, "server", "VBCSCompiler", shared=True)
    if a.only in (None, "names"):
        names_case(c, a)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
