#!/usr/bin/env python3
"""Attach benchmark: what `heaplens attach` costs a running program, and how soon it delivers.

    bench/attach/run.py --heaplens build/bin/heaplens [--case loop|webapi|heap|all] [--runs 3]
                        [--iterations N] [--requests N] [--nodes N,N] [--heap-runs N] [--workdir DIR] [--keep]

Every program is started WITHOUT heaplens; each run measures a phase before the attach, one
while attached (after the attach's first snapshot is stored: the steady state, not the attach
itself) and one after the detach, on the same process (so every run re-attaches).

  loop    examples/AttachBench (2 threads, a 500,000-object live ring that ages into gen2):
          `work N` -> the loop's wall and process CPU time for N iterations (CPU includes the
          collector's thread when attached), and the gen0/gen1 pauses a sampler thread in the
          program caught (GC.GetGCMemoryInfo every ms, the runtime's own pause figure, the same
          way in every phase); `gen2 K` -> K blocking GC.Collect(): the runtime's pause of each
          (GCKind.FullBlocking) and GC.Collect's wall time. Attached with `--snapshot none`:
          induced GCs take no snapshot, so the figures are the cost of being attached. Then
          the same work in another process under an empty profiler (`record --mode sampled`,
          HEAPLENS_EMPTY=1: the runtime's price for monitoring GCs, heaplens doing nothing).
  webapi  examples/WebApi (ASP.NET Core minimal API, server GC) on 127.0.0.1: --requests
          GET /orders/N from 4 client threads per phase: requests/s and the app's CPU time per
          request (/proc/PID/stat utime+stime; the Python client shares the machine's cores).
  heap    examples/SnapshotBench with a tree of N nodes, waiting before its own GC.Collect:
          `heaplens attach` → the first snapshot committed to the database (polled every 10 ms),
          and that snapshot's objects, heap walk, and the pause of the GC that took it; the
          program's RSS before the attach, attached (first snapshot stored) and after the detach
          (once the collector says the runtime confirmed it: HEAPLENS_STATS=1), its peak, and
          what the collector held at most and after the detach (its own count).

Medians over --runs are printed, with the ratios attached/before and after/before. Not a test:
the numbers depend on the machine; on a shared one prefer the CPU figures.
"""
import argparse
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location("record_bench", os.path.join(HERE, "..", "record", "run.py"))
record_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record_bench)
die, build_example, pct, mib, stop_process, remove_db = (
    record_bench.die, record_bench.build_example, record_bench.pct, record_bench.mib,
    record_bench.stop_process, record_bench.remove_db)
sys.path.insert(0, os.path.join(REPO, "tests", "e2e", "attach"))
import check_attach_aspnet as aspnet  # noqa: E402  (its free_port, get and Load)

PHASES = ["before", "attached", "after"]
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("CORECLR_", "DOTNET_ENABLE_PROFIL", "HEAPLENS_"))}


def first_snapshot(db, deadline):
    """Polls the database until a snapshot row is committed: its row, or None at the deadline."""
    while time.monotonic() < deadline:
        if os.path.exists(db):
            try:
                c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
                try:
                    row = c.execute("SELECT s.snapshot, s.objects, s.walk_ns, g.pause_ns, s.gc "
                                    "FROM snapshots s JOIN gcs g USING (gc) ORDER BY snapshot "
                                    "LIMIT 1").fetchone()
                finally:
                    c.close()
                if row:
                    return row
            except sqlite3.Error:
                pass
        time.sleep(0.01)
    return None


class Session:
    """`heaplens attach PID` until stop(): started, then waited for until its first snapshot is
    stored."""

    def __init__(self, a, pid, db, extra=()):
        remove_db(db)
        self.db = db
        self.started = time.monotonic()
        self.p = subprocess.Popen([a.heaplens, "attach", str(pid), "-o", db, "--json"] + list(extra),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.first = first_snapshot(db, time.monotonic() + 1200)
        self.first_s = time.monotonic() - self.started
        if self.first is None:
            self.stop()
            die(f"no snapshot stored in {db}: {self.err[-2000:]}")

    def stop(self):
        # heaplens attach and its writer (waited for by it): their CPU over the whole session
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.p.send_signal(signal.SIGINT)
        self.out, self.err = self.p.communicate(timeout=1200)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu_ms = 1000.0 * (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if self.p.returncode != 0:
            die(f"heaplens attach exited with {self.p.returncode}: {self.err[-2000:]}")
        try:
            self.attach_s = float(json.loads(self.out)["attach_seconds"])
        except (ValueError, KeyError):
            self.attach_s = float("nan")
        return self


class Program:
    """A program driven by stdin/stdout lines; the first line is 'ready PID'."""

    def __init__(self, cmd, env=None):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  bufsize=1, env=env or CLEAN_ENV)
        ready = self.p.stdout.readline().split()
        if len(ready) != 2 or ready[0] != "ready":
            die(f"{cmd[-1]} did not start: {ready}")
        self.pid = int(ready[1])

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def stop(self):
        self.p.stdin.write("stop\n")
        self.p.stdin.flush()
        return self.p.wait(timeout=120)


def kv(line):
    return dict(re.findall(r"(\w+)=(\S+)", line))


def loop_phase(prog, a):
    w = kv(prog.ask(f"work {a.iterations}"))
    pauses = {}
    for item in filter(None, w.get("pauses", "").split(",")):
        gen, us = item.split(":")
        pauses.setdefault(int(gen), []).append(float(us))
    g = kv(prog.ask(f"gen2 {a.gen2}"))
    return {"wall": float(w["wall_ms"]), "cpu": float(w["cpu_ms"]), "gcs": w["gcs"],
            "pauses": pauses, "gen2": [float(x) for x in g["pauses_us"].split(",")],
            "gen2_wall": [float(x) for x in g["wall_us"].split(",")]}


def ratio(x, y):
    return f"{x / y:.2f}x" if y else "nan"


def case_loop(a):
    prog = Program(["dotnet", build_example("AttachBench", a.workdir)])
    res = {p: [] for p in PHASES}
    sessions = []
    try:
        loop_phase(prog, a)  # warm up: JIT and tiering, the live ring's first promotions
        for i in range(a.runs):
            res["before"].append(loop_phase(prog, a))
            s = Session(a, prog.pid, os.path.join(a.workdir, f"loop-{i}.db"), ["--snapshot", "none"])
            res["attached"].append(loop_phase(prog, a))
            sessions.append(s.stop())
            res["after"].append(loop_phase(prog, a))
            print(f"  loop run {i + 1}: work ms " + ", ".join(
                f"{p} {res[p][-1]['wall']:.0f}" for p in PHASES), flush=True)
    finally:
        rc = prog.stop()
    if rc != 0:
        die(f"AttachBench exited with {rc}")
    print(f"\n== loop (examples/AttachBench, {a.iterations:,} iterations per phase, 2 threads, "
          f"{a.runs} runs)")
    for key, label in (("wall", "loop wall ms"), ("cpu", "process CPU ms")):
        med = {p: statistics.median(r[key] for r in res[p]) for p in PHASES}
        print(f"{label} (median): before {med['before']:.0f}, attached {med['attached']:.0f}, after "
              f"{med['after']:.0f}; attached/before {ratio(med['attached'], med['before'])}, "
              f"after/before {ratio(med['after'], med['before'])}")
    print("GCs per phase (gen0/gen1/gen2 counts): " + ", ".join(
        f"{p} {res[p][-1]['gcs']}" for p in PHASES))
    for gen in (0, 1):
        row = {}
        for p in PHASES:
            v = [u for r in res[p] for u in r["pauses"].get(gen, [])]
            row[p] = (pct(v, 50), pct(v, 99), len(v))
        print(f"gen{gen} pause us p50/p99 (GCs caught): " + ", ".join(
            f"{p} {row[p][0]:.0f}/{row[p][1]:.0f} ({row[p][2]})" for p in PHASES) +
            f"; p50 attached/before {ratio(row['attached'][0], row['before'][0])}")
    for key, label in (("gen2", "induced gen2 pause us (runtime)"), ("gen2_wall", "GC.Collect() wall us")):
        med = {p: statistics.median(u for r in res[p] for u in r[key]) for p in PHASES}
        print(f"{label} median of {a.runs * a.gen2}: before {med['before']:.0f}, attached "
              f"{med['attached']:.0f}, after {med['after']:.0f}; attached/before "
              f"{ratio(med['attached'], med['before'])}")
    # GC.CollectionCount(0) counts every GC (a gen1 or gen2 GC collects gen0 too)
    gcs = statistics.median(int(r["gcs"].split("/")[0]) for r in res["attached"])
    heaplens_cpu = statistics.median(s.cpu_ms for s in sessions)
    print(f"heaplens attach and its writer, CPU per session (median): {heaplens_cpu:.0f} ms"
          + (f" ({heaplens_cpu / gcs:.2f} ms per GC of the attached phase's {gcs:.0f})"
             if gcs else ""))
    print(f"attach → first snapshot stored (live ring of 500,000): median "
          f"{statistics.median(s.first_s for s in sessions):.2f} s")
    # The runtime's own price for the flags: the collector loaded at startup with the sampled
    # mode's flags (those of attach, plus the POH callback) and callbacks doing nothing.
    env = dict(CLEAN_ENV, HEAPLENS_EMPTY="1")
    db = os.path.join(a.workdir, "loop-empty.db")
    remove_db(db)
    empty = Program([a.heaplens, "record", "-q", "--mode", "sampled", "--snapshot", "none", "-o",
                     db, "--", "dotnet", build_example("AttachBench", a.workdir)], env=env)
    try:
        runs = [loop_phase(empty, a) for _ in range(a.runs + 1)][1:]  # the first warms up
    finally:
        empty.stop()
    wall = statistics.median(r["wall"] for r in runs)
    cpu = statistics.median(r["cpu"] for r in runs)
    g0 = pct([u for r in runs for u in r["pauses"].get(0, [])], 50)
    before = res["before"]
    print(f"empty profiler (record --mode sampled, HEAPLENS_EMPTY=1, another process): loop wall "
          f"{wall:.0f} ms ({ratio(wall, statistics.median(r['wall'] for r in before))} before), "
          f"CPU {cpu:.0f} ms ({ratio(cpu, statistics.median(r['cpu'] for r in before))}), gen0 "
          f"pause p50 {g0:.0f} us ({ratio(g0, pct([u for r in before for u in r['pauses'].get(0, [])], 50))})")


def app_cpu_ms(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def webapi_phase(port, pid, n):
    cpu = app_cpu_ms(pid)
    t = time.monotonic()
    load = aspnet.Load(port, n)
    load.wait_for(n, 600)
    done, statuses = load.finish()
    wall = time.monotonic() - t
    bad = aspnet.non_2xx(statuses)
    if done != n or bad:
        die(f"WebApi: {done} of {n} answered, {bad} not 2xx: {statuses}")
    return {"rps": n / wall, "cpu_per_req": (app_cpu_ms(pid) - cpu) / n}


def case_webapi(a):
    dll = build_example("WebApi", a.workdir)
    port = aspnet.free_port()
    app = subprocess.Popen(["dotnet", dll, "--urls", f"http://127.0.0.1:{port}"], env=CLEAN_ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid, gc = None, None
    for line in app.stdout:
        m = re.search(r"WebApi: listening pid=(\d+) gc=(\w+)", line)
        if m:
            pid, gc = int(m.group(1)), m.group(2)
            break
    if pid is None:
        die("WebApi did not start")
    threading.Thread(target=lambda: [None for _ in app.stdout], daemon=True).start()
    res = {p: [] for p in PHASES}
    try:
        webapi_phase(port, pid, min(a.requests, 500))  # warm up the JIT and the connection paths
        for i in range(a.runs):
            res["before"].append(webapi_phase(port, pid, a.requests))
            s = Session(a, pid, os.path.join(a.workdir, f"webapi-{i}.db"), ["--snapshot", "none"])
            res["attached"].append(webapi_phase(port, pid, a.requests))
            s.stop()
            res["after"].append(webapi_phase(port, pid, a.requests))
            print(f"  webapi run {i + 1}: requests/s " + ", ".join(
                f"{p} {res[p][-1]['rps']:.0f}" for p in PHASES), flush=True)
    finally:
        stop_process(app, signal.SIGINT)
    print(f"\n== webapi (examples/WebApi, {gc} GC, {a.requests:,} requests per phase from 4 "
          f"client threads, {a.runs} runs)")
    for key, label, fmt in (("rps", "requests/s", ".0f"), ("cpu_per_req", "app CPU ms per request", ".3f")):
        med = {p: statistics.median(r[key] for r in res[p]) for p in PHASES}
        print(f"{label} (median): before {med['before']:{fmt}}, attached {med['attached']:{fmt}}, "
              f"after {med['after']:{fmt}}; attached/before {ratio(med['attached'], med['before'])}, "
              f"after/before {ratio(med['after'], med['before'])}")


def rss_bytes(pid, field="VmRSS"):
    """The process's resident set (or another /proc/PID/status field) in bytes; 0 if unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Lines:
    """A program's output lines, read on a thread, waited for by pattern with a deadline."""

    def __init__(self, stream):
        self.lines, self.cv = [], threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            with self.cv:
                self.lines.append(line)
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def wait(self, pattern, count=1, timeout=600):
        """The count-th line matching pattern (a regex match), or None at end of file or timeout."""
        def found():
            hits = [m for m in (re.search(pattern, l) for l in self.lines if l) if m]
            return hits[count - 1] if len(hits) >= count else (False if None in self.lines else None)
        with self.cv:
            self.cv.wait_for(lambda: found() is not None, timeout)
            return found() or None

    def text(self):
        with self.cv:
            return "".join(l for l in self.lines if l)


def case_heap(a, nodes):
    dll = build_example("SnapshotBench", a.workdir)
    rows = []
    for i in range(a.heap_runs):
        go = os.path.join(a.workdir, "heap.go")
        if os.path.exists(go):
            os.remove(go)
        # HEAPLENS_STATS=1: the collector says when the runtime has confirmed the detach
        # ("heaplens: detached: ..."), and how much it still holds (nothing).
        p = subprocess.Popen(["dotnet", dll, "--nodes", str(nodes), "--gen0", "1",
                              "--wait-before-collect", go], env=dict(CLEAN_ENV, HEAPLENS_STATS="1"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = Lines(p.stdout)
        ready = out.wait(r"collect-ready .*pid=(\d+)")
        if ready is None:
            die("SnapshotBench did not get ready")
        pid = int(ready.group(1))
        rss_before = rss_bytes(pid)
        db = os.path.join(a.workdir, f"heap-{nodes}-{i}.db")
        s = Session(a, pid, db, ["--snapshot", "none"])
        rss_attached = rss_bytes(pid)
        s.stop()
        detached = out.wait(r"heaplens: detached: the collector holds (\d+) heap bytes and (\d+) "
                            r"mapped \(at most (\d+)", timeout=120)
        rss_after = rss_bytes(pid)
        peak = rss_bytes(pid, "VmHWM")
        open(go, "w").close()
        if p.wait(600) != 0:
            die(f"SnapshotBench exited with {p.returncode}: {out.text()[-2000:]}")
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        k = dict(c.execute("SELECT name, value FROM counters").fetchall())
        c.close()
        _, objects, walk_ns, pause_ns, _ = s.first
        rows.append({"first_s": s.first_s, "attach_s": s.attach_s, "objects": objects,
                     "walk_ms": walk_ns / 1e6, "pause_ms": pause_ns / 1e6,
                     "prog_rss": k.get("program_peak_rss_bytes", 0),
                     "writer_rss": k.get("writer_peak_rss_bytes", 0),
                     "rss_before": rss_before, "rss_attached": rss_attached,
                     "rss_after": rss_after, "rss_peak": peak,
                     "held_after": int(detached.group(1)) + int(detached.group(2))
                     if detached else float("nan"),
                     "held_peak": int(detached.group(3)) if detached else float("nan")})
        print(f"  heap {nodes:,} run {i + 1}: attach → first snapshot stored "
              f"{s.first_s:.1f} s", flush=True)
        if not a.keep:
            remove_db(db)
    med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    print(f"\n== heap (examples/SnapshotBench, {nodes:,} nodes, {a.heap_runs} runs, medians)")
    print(f"heaplens attach → first snapshot committed: {med['first_s']:.2f} s (the attach itself "
          f"{med['attach_s']:.2f} s); snapshot {med['objects']:,.0f} objects, the forced GC's pause "
          f"{med['pause_ms']:.0f} ms, heap walk {med['walk_ms']:.0f} ms; peak RSS program "
          f"{mib(med['prog_rss'])}, writer {mib(med['writer_rss'])}")
    print(f"program RSS: before the attach {mib(med['rss_before'])}, attached (first snapshot "
          f"stored) {mib(med['rss_attached'])} ({ratio(med['rss_attached'], med['rss_before'])}), "
          f"after the detach {mib(med['rss_after'])} ({ratio(med['rss_after'], med['rss_before'])}"
          f"); peak {mib(med['rss_peak'])}; the collector held at most {mib(med['held_peak'])} and "
          f"{med['held_after']:,.0f} bytes after the detach (its own count)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--case", default="all", choices=["loop", "webapi", "heap", "all"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=2_000_000, help="loop: per phase")
    ap.add_argument("--gen2", type=int, default=3, help="loop: induced gen2 GCs per phase")
    ap.add_argument("--requests", type=int, default=2000, help="webapi: per phase")
    ap.add_argument("--nodes", default="1000000,10000000", help="heap: tree sizes, comma-separated")
    ap.add_argument("--heap-runs", type=int, default=2, help="heap: runs per tree size")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    # A shell's background job starts with SIGINT ignored, and a program inherits that: the app
    # would never see the Ctrl-C this script sends it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not os.access(a.heaplens, os.X_OK):
        die(f"{a.heaplens} is not executable")
    if not shutil.which("dotnet"):
        die("needs dotnet")
    own = a.workdir is None
    if own:
        a.workdir = tempfile.mkdtemp(prefix="heaplens-bench-attach.")
    os.makedirs(a.workdir, exist_ok=True)
    if a.case in ("loop", "all"):
        case_loop(a)
    if a.case in ("webapi", "all"):
        case_webapi(a)
    if a.case in ("heap", "all"):
        for n in (int(x) for x in a.nodes.split(",")):
            case_heap(a, n)
    if a.keep:
        print(f"\nrecordings and programs kept in {a.workdir}")
    elif own:
        shutil.rmtree(a.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
