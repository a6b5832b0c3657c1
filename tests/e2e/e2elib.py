"""Helpers shared by the end-to-end check scripts (check_groundtruth.py, snapshots/, leaks/,
faults/): the arguments they share and their start (the work directory, its log), a pass/fail
counter, running a command with a timeout and a log, `heaplens ... --json`,
the recording step, the loss counters, a free local port and an HTTP GET, a snapshot request on a
recording's control socket (its "progress" lines included), and the final "N passed, M failed"
line.

Python 3 standard library only."""
import argparse
import http.client
import json
import os
import re
import shlex
import socket
import sqlite3
import subprocess
import sys
import threading

GEN_NAMES = {0: "gen0", 1: "gen1", 2: "gen2", 3: "LOH", 4: "POH", 5: "NonGC"}
DROP_COUNTERS = ["allocs_dropped", "gc_events_dropped", "records_dropped", "bytes_dropped",
                 "model_anomalies", "threads_overflowed", "gcs_discarded_incomplete",
                 "allocs_dropped_buffer", "allocs_dropped_writer", "gcs_dropped",
                 "snapshots_dropped", "writer_lost"]


class Checks:
    def __init__(self, verbose, fail_prefix="FAIL  "):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose
        self.fail_prefix = fail_prefix

    def ok(self, name, condition, detail=""):
        if condition:
            self.passed += 1
            if self.verbose:
                print(f"ok    {name}")
        else:
            self.failed += 1
            print(f"{self.fail_prefix}{name}" + (f": {detail}" if detail else ""))
        return condition

    def eq(self, name, expected, actual):
        return self.ok(name, expected == actual, f"expected {expected!r}, got {actual!r}")

    def summary(self, suffix=""):
        """Prints the final "N passed, M failed" line; returns the exit status (1 if any failed)."""
        print(f"{self.passed} passed, {self.failed} failed{suffix}")
        return 1 if self.failed else 0


def run(cmd, log=None, timeout=600, env=None):
    """Runs cmd, returns (exit status, stdout, stderr); never raises for the program's failure."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           text=True, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = None
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")) + \
            f"\n[timed out after {timeout} s]"
    except OSError as e:
        rc, out, err = None, "", f"[cannot run: {e}]"
    if log:
        with open(log, "a") as f:
            f.write(f"$ {shlex.join(cmd)}\n[exit {rc}]\n--- stdout\n{out}--- stderr\n{err}\n")
    return rc, out, err


def heaplens_json(checks, heaplens, args, log):
    """Runs `heaplens <args> --json`; returns the parsed document or None (a failed check)."""
    cmd = [heaplens] + args + ["--json"]
    rc, out, err = run(cmd, log=log)
    name = "heaplens " + " ".join(args[:1] + [a for a in args[2:]]) + " --json runs"
    if not checks.ok(name, rc == 0, f"exit {rc}: {err.strip()[:500]}"):
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        checks.ok(name.replace(" runs", " is JSON"), False, f"{e}; output starts {out[:200]!r}")
        return None


def bucket(gen):
    """heaplens generation -> GC.GetGeneration bucket as the ground truth writes it."""
    if gen in (0, 1, 2):
        return str(gen)
    if gen in (3, 4):
        return "2"  # LOH and POH: GC.GetGeneration reports 2
    return "other"  # NonGC (5) reports int.MaxValue


def fmt_counts(d):
    return "{" + ", ".join(f"gen{k}: {v}" for k, v in sorted(d.items())) + "}" if d else "none"


def start_log(workdir):
    """Creates workdir and an empty heaplens.log in it; returns the log's path."""
    os.makedirs(workdir, exist_ok=True)
    log = os.path.join(workdir, "heaplens.log")
    open(log, "w").close()
    return log


def remove_stale(*paths):
    for p in paths:
        if os.path.exists(p):
            os.remove(p)


def remove_db(db, *others):
    """Removes a recording left by an earlier run, with its -wal, -shm and -journal, and
    `others`."""
    remove_stale(db, db + "-wal", db + "-shm", db + "-journal", *others)


def arguments(description=None, dll_required=True, dll_help=None, timeout=None):
    """The arguments every script that records an example takes: --heaplens, --dotnet (default:
    dotnet from PATH), --dll, --workdir, -v, and --timeout with that default when given. The
    script adds its own, then calls begin()."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--heaplens", required=True, help="path of the heaplens executable")
    ap.add_argument("--dotnet", default="dotnet", help="dotnet host (default: dotnet from PATH)")
    ap.add_argument("--dll", required=dll_required, help=dll_help)
    ap.add_argument("--workdir", required=True, help="directory for recordings, truth and logs")
    if timeout is not None:
        ap.add_argument("--timeout", type=int, default=timeout,
                        help="seconds allowed per recording")
    ap.add_argument("-v", "--verbose", action="store_true", help="also list passed checks")
    return ap


def recording_given(ap, a):
    """Whether --db (with --truth) names a recording to check again instead of recording one;
    a usage error (exit 2) when --db comes without --truth, or neither --db nor --dll is given.
    For the scripts whose arguments() has dll_required=False and --db, --truth of their own."""
    if a.db:
        if not a.truth:
            ap.error("--db needs --truth")
        return True
    if not a.dll:
        ap.error("--dll is required (or --db and --truth)")
    return False


def begin(ap, verbose=False):
    """Parses the arguments; makes the work directory with an empty heaplens.log (start_log).
    Returns (arguments, Checks, the log's path); `verbose` lists passed checks without -v."""
    a = ap.parse_args()
    log = start_log(a.workdir)
    return a, Checks(a.verbose or verbose), log


def program(dotnet, path):
    """The command that runs an example: `dotnet X.dll` for a framework-dependent build, the
    executable itself for a self-contained one (the .NET 8 and 9 runs)."""
    return [dotnet, path] if path.endswith(".dll") else [path]


def record(a, db, truth_path, program_args, log, record_options=(), args_before_truth=(),
           timeout=None, output=None):
    """`heaplens record -o db [record_options] -- dotnet dll [args_before_truth...] truth_path
    program_args...` after removing what an earlier run left; echoes the command and its
    output. `timeout`: seconds, a.timeout when None. `output`: a list that gets the run's
    (stdout, stderr). Returns heaplens' exit status."""
    remove_db(db, truth_path)
    cmd = ([a.heaplens, "record", "-o", db] + list(record_options) + ["--"] +
           program(a.dotnet, a.dll) + list(args_before_truth) + [truth_path] +
           list(program_args))
    print("$ " + shlex.join(cmd))
    heaplens_rc, out, err = run(cmd, log=log, timeout=a.timeout if timeout is None else timeout)
    if output is not None:
        output.append((out, err))
    sys.stdout.write(out)
    sys.stderr.write(err)
    print(f"[heaplens record exited with {heaplens_rc}; log in {log}]")
    return heaplens_rc


def record_facts(checks, a, db, truth_path, program_args, log, **record_kw):
    """record() (record_kw: its options), then what every RuntimeQuirks check starts with:
    heaplens exited 0, the program wrote its facts and heaplens its recording, the collector was
    loaded. Returns the program's facts (its JSON), or None when either file is missing."""
    rc = record(a, db, truth_path, program_args, log, **record_kw)
    checks.eq("heaplens record exit status", 0, rc)
    if not os.path.exists(truth_path) or not os.path.exists(db):
        checks.ok("program wrote its facts and heaplens its recording", False)
        return None
    with open(truth_path) as f:
        t = json.load(f)
    checks.ok("collector loaded", bool(t.get("collector")), str(t.get("collector")))
    return t


def count_rows(db, table, busy_timeout=5):
    """count(*) of `table` in a database that may still be being written (opened read-only,
    waiting at most `busy_timeout` s for a lock); 0 while it cannot be read yet (no file, no
    table)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=busy_timeout)
        try:
            return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def lines_reader(stream, sink, cv):
    """Appends each line of `stream` (its newline taken off) to `sink`, then None at its end,
    notifying `cv` each time: a thread's target, so that a test waits on a process's output
    (`cv.wait_for`) without blocking on it."""
    for line in stream:
        with cv:
            sink.append(line.rstrip("\n"))
            cv.notify_all()
    with cv:
        sink.append(None)
        cv.notify_all()


def gcloop_ready(checks, proc):
    """examples/GcLoop's first line, "ready PID": its pid, or None (checked: the program
    starts)."""
    ready = proc.stdout.readline().split()
    if not checks.ok("the program starts", len(ready) == 2 and ready[0] == "ready",
                     f"got {ready!r}"):
        return None
    return int(ready[1])


def gcloop_start(a, objects, env=None):
    """Starts examples/GcLoop (a.dotnet, a.dll) holding `objects` objects, without heaplens,
    with HEAPLENS_STATS=1 (and `env`) so that its collector says "heaplens: detached: ..." once
    the runtime has unloaded it. Returns (the process, its stderr's lines, their condition:
    lines_reader's)."""
    proc = subprocess.Popen(program(a.dotnet, a.dll) + [str(objects)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1,
                            env=dict(os.environ, HEAPLENS_STATS="1", **(env or {})))
    err, cv = [], threading.Condition()
    threading.Thread(target=lines_reader, args=(proc.stderr, err, cv), daemon=True).start()
    return proc, err, cv


def collector_detached(checks, err, cv, n, timeout=120):
    """Waits for the n-th "heaplens: detached:" line among a gcloop_start program's stderr lines
    (checked): a next attach must wait for it (before it the runtime refuses a profiler)."""
    def count():
        return sum(1 for line in err if line and line.startswith("heaplens: detached:"))
    with cv:
        cv.wait_for(lambda: None in err or count() >= n, timeout=timeout)
        got = count()
    return checks.ok(f"the collector detached ({n})", got >= n,
                     "\n".join(filter(None, err))[-600:])


def gcloop_stop(checks, proc):
    """Tells examples/GcLoop to stop: it checks its held objects and says "stopped N"."""
    proc.stdin.write("stop\n")
    proc.stdin.flush()
    stopped = proc.stdout.readline().strip()
    checks.ok("the program checks its objects and stops", stopped.startswith("stopped"), stopped)


def kill_if_running(*procs):
    """A finally's cleanup: kills and reaps each process a failed check left running (None: one
    never started)."""
    for p in procs:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


def signal_pending(pid, sig):
    """Whether `sig` waits, unread, in process `pid`'s shared pending set (/proc/PID/status)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("ShdPnd:"):
                    return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return False


# Counters that must stay 0 in a recording that lost nothing (store/SCHEMA.md, "counters").
LOSS = ["allocs_dropped", "gc_events_dropped", "records_dropped", "gcs_dropped",
        "snapshots_dropped", "writer_lost", "model_anomalies", "threads_overflowed",
        "gcs_discarded_incomplete", "snapshots_discarded", "writer_anomalies"]


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path, timeout=30):
    """GET http://127.0.0.1:PORT/PATH: (status, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def session_control(pid):
    """The control socket of the recording of process `pid`, from the session file `heaplens
    record` writes (session/session.c: $XDG_RUNTIME_DIR/heaplens/PID, else /tmp/heaplens-UID/PID);
    None when there is none."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    d = (os.path.join(runtime, "heaplens") if runtime and os.path.isabs(runtime)
         else f"/tmp/heaplens-{os.getuid()}")
    try:
        with open(os.path.join(d, str(pid))) as f:
            for line in f:
                if line.startswith("control "):
                    return line[len("control "):].rstrip("\n")
    except OSError:
        pass
    return None


def control_request(control, request="snapshot", timeout=60):
    """Sends `request` on a recording's control socket (store/README.md, "Control socket
    protocol") and reads until the writer closes it: (progress lines, answer line), without
    newlines; the answer is "" when none came. `heaplens snapshot` reads the same lines but
    prints only the answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    data = b""
    try:
        s.connect(control)
        s.sendall(request.encode() + b"\n")
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    finally:
        s.close()
    lines = data.decode(errors="replace").splitlines()
    progress = [line for line in lines if line.startswith("progress ")]
    answers = [line for line in lines if not line.startswith("progress ")]
    return progress, answers[0] if answers else ""


class WebApiOutput:
    """Reads examples/WebApi's output on a thread: every line (`lines`), `listening` (an Event,
    with .pid and .gc once the app says it listens) and `stopped` (set when it says it stopped).
    join() waits for the end of its output."""

    def __init__(self, stream):
        self.lines, self.listening, self.stopped = [], threading.Event(), threading.Event()
        self._stream = stream
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self):
        for line in self._stream:
            self.lines.append(line)
            m = re.search(r"WebApi: listening pid=(\d+) gc=(\w+)", line)
            if m:
                self.listening.pid, self.listening.gc = int(m.group(1)), m.group(2)
                self.listening.set()
            if "WebApi: stopped" in line:
                self.stopped.set()

    def tail(self):
        return "".join(self.lines)[-1000:]

    def join(self, timeout):
        self._reader.join(timeout)


# The documented views over snapshot_objects (store/SCHEMA.md), each in a total order.
SNAPSHOT_VIEW_QUERIES = [
    "SELECT * FROM snapshot_objects ORDER BY snapshot, object_id",
    "SELECT * FROM snapshot_refs ORDER BY snapshot, from_id, to_id, nth",
    "SELECT * FROM snapshot_ref_fields ORDER BY snapshot, from_id, to_id, nth",
    "SELECT * FROM snapshot_contents ORDER BY snapshot, object_id",
    "SELECT * FROM snapshot_handles ORDER BY snapshot, handle_id, object_id",
]


def check_snapshot_forms(checks, db, where):
    """A recording made with HEAPLENS_SNAPSHOT_ROWS=1 holds every snapshot twice: as schema 8's
    blocks (snapshot_blocks, the file's view snapshot_objects) and as schema 7's rows (the table
    snapshot_object_rows). Every documented view answers exactly the same over each (the views
    over the rows: TEMP copies of the file's own). Returns False when the file has no rows."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        if conn.execute("SELECT count(*) FROM sqlite_master WHERE name = "
                        "'snapshot_object_rows'").fetchone()[0] != 1:
            return False
        rows.execute("CREATE TEMP VIEW snapshot_objects AS SELECT * FROM snapshot_object_rows")
        for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'view' AND name IN "
                                   "('snapshot_refs', 'snapshot_ref_fields', 'snapshot_contents')"):
            rows.execute(sql.replace("CREATE VIEW", "CREATE TEMP VIEW", 1))
        # snapshot_ref_fields looks each reference's field up in its object's array: quadratic in
        # an array's length (SCHEMA.md), over the rows as over the blocks
        longest = rows.execute("SELECT coalesce(max(json_array_length(refs)), 0) FROM "
                               "snapshot_object_rows").fetchone()[0]
        for q in SNAPSHOT_VIEW_QUERIES:
            if "snapshot_ref_fields" in q and longest > 2000:
                print(f"{where} {q}: skipped (an array of {longest} references)")
                continue
            blocks = conn.execute(q).fetchall()
            old = rows.execute(q).fetchall()
            checks.ok(f"{where} {q}: {len(blocks)} rows from the blocks, {len(old)} from the rows",
                      blocks == old)
        return True
    finally:
        conn.close()
        rows.close()
