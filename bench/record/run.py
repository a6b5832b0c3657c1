#!/usr/bin/env python3
"""Recording benchmark: whole recordings of real programs, plain / empty profiler / recorded.

    bench/record/run.py --heaplens build/bin/heaplens [--case workload|csc|heap|all] [--runs 3]
                        [--orders N] [--files N] [--nodes N] [--workdir DIR] [--keep]

Cases (the programs are built or generated into the work directory first):
  workload  examples/Workload: 4 threads, about 24M allocations of varied shapes, GCs on their
            own; its pause sampler gives every mode's pauses per GC the same way.
  csc       the SDK's C# compiler (sdk/*/Roslyn/bincore/csc.dll) compiling 50 generated files.
  heap      examples/SnapshotBench with a 10M-object tree, then `heaplens snapshot PID` once
            the writer has stored the GCs of the building: request → snapshot stored.

Each mode runs --runs times, interleaved; medians are printed. Figures, per case:
  wall            whole command, ms; ratios recorded/plain and recorded/empty (the empty
                  profiler: the collector loaded with the same runtime flags, callbacks doing
                  nothing, HEAPLENS_EMPTY=1: the runtime's own cost of those flags); and
                  until the program's end: the command's wall less writer_finish_ns
  lost            allocations and GCs lost (counters allocs_dropped, gcs_dropped), and status
  db bytes        database size / allocations (workload, csc); snapshot tables / snapshot
                  objects (heap)
  finish          the program's exit wait for the collector (collector_exit_wait_ns) and the
                  writer's finishing time after the run's end (writer_finish_ns)
  writer CPU      the writer's CPU time (user + system) while the program ran, per object stored
                  (writer_run_cpu_ns / objects rows), and after RUN_END (writer_finish_cpu_ns):
                  the steady figure when other processes share the machine
  peak RSS        of the program (plain: /usr/bin/time; recorded: the collector's
                  program_peak_rss_bytes) and of the writer (writer_peak_rss_bytes)
  GC pause        workload: p50/p99 of gen0 and gen1 pauses (the program's own sampler) per mode,
                  and recorded − empty
Not a test: the numbers depend on the machine; run it on a quiet one.
"""
import argparse
import glob
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
MODES = ["plain", "empty", "recorded"]


def die(msg):
    print(f"run.py: {msg}", file=sys.stderr)
    sys.exit(1)


def build_example(name, workdir):
    out = os.path.join(workdir, name)
    dll = os.path.join(out, name + ".dll")
    if os.path.exists(dll):
        return dll
    print(f"building {name} (Release) ...", flush=True)
    p = subprocess.run(["dotnet", "build", os.path.join(REPO, "examples", name, name + ".csproj"),
                        "-c", "Release", "--nologo", "-v", "quiet", "-o", out,
                        f"-p:HeapLensBuildRoot={workdir}/build/"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout, file=sys.stderr)
        die(f"building {name} failed")
    return dll


def dotnet_root():
    return os.path.dirname(os.path.realpath(shutil.which("dotnet")))


def csc_command(workdir, files):
    """dotnet csc.dll ... compiling `files` generated sources against the reference pack."""
    root = dotnet_root()
    cscs = sorted(glob.glob(os.path.join(root, "sdk", "*", "Roslyn", "bincore", "csc.dll")))
    refs = sorted(glob.glob(os.path.join(root, "packs", "Microsoft.NETCore.App.Ref", "*", "ref",
                                         "net*", "*.dll")))
    if not cscs or not refs:
        die(f"no csc.dll or reference assemblies under {root}")
    src = os.path.join(workdir, "csc-src")
    os.makedirs(src, exist_ok=True)
    for i in range(files):
        body = [f"using System;\nusing System.Collections.Generic;\nusing System.Linq;\n"
                f"namespace Gen{i} {{"]
        for c in range(4):
            body.append(f"  public sealed class Item{c}<T> where T : IComparable<T> {{")
            for m in range(8):
                body.append(f"""    public IEnumerable<string> Query{m}(IEnumerable<T> src, int k) {{
      var d = new Dictionary<string, List<T>>();
      foreach (var x in src.Where(v => v.CompareTo(default!) > 0).OrderBy(v => v).Take(k + {m})) {{
        var key = $"{{x}}-{{k}}-{m}";
        if (!d.TryGetValue(key, out var l)) d[key] = l = new List<T>();
        l.Add(x);
      }}
      return d.Select(p => p.Key + ":" + string.Join(",", p.Value.Select(v => v.ToString())));
    }}""")
            body.append("  }")
        body.append("}")
        with open(os.path.join(src, f"f{i}.cs"), "w") as f:
            f.write("\n".join(body))
    rsp = os.path.join(workdir, "csc.rsp")
    with open(rsp, "w") as f:
        f.write("\n".join(f'-r:"{r}"' for r in refs))
    return ["dotnet", cscs[-1], "-nologo", "-noconfig", "-t:library", "-nullable:enable",
            "-out:" + os.path.join(workdir, "csc-out.dll"), "@" + rsp] + \
        sorted(glob.glob(os.path.join(src, "*.cs")))


def timed(cmd, env=None, on_line=None):
    """Runs cmd under /usr/bin/time; returns (exit status, wall ms, max RSS KiB, stdout)."""
    fd, tfile = tempfile.mkstemp(prefix="heaplens-time.")
    os.close(fd)
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-o", tfile, "-f", "%M"] + cmd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = []
    for line in p.stdout:
        out.append(line)
        if on_line:
            on_line(line)
    rc = p.wait()
    wall = (time.monotonic() - start) * 1000
    try:
        rss = int(open(tfile).read().split()[-1])
    except (OSError, ValueError, IndexError):
        rss = 0
    os.remove(tfile)
    return rc, wall, rss, "".join(out)


def stored_gcs(db):
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
        try:
            return c.execute("SELECT count(*) FROM gcs").fetchone()[0]
        finally:
            c.close()
    except sqlite3.Error:
        return 0


def counters_of(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        k = dict(c.execute("SELECT name, value FROM counters").fetchall())
        k["status"] = c.execute("SELECT status FROM run").fetchone()[0]
        k["gcs"] = c.execute("SELECT count(*) FROM gcs").fetchone()[0]
        k["survivors"] = c.execute("SELECT count(*) FROM objects").fetchone()[0]
        try:
            k["snapshot_objects"] = c.execute("SELECT coalesce(sum(objects), 0) FROM snapshots").fetchone()[0]
            k["snapshot_bytes"] = c.execute(
                "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'snapshot%'").fetchone()[0]
        except sqlite3.Error:
            pass
        return k
    finally:
        c.close()


def pauses_of(out):
    """The program's pause sampler lines → {gen: [us, ...]}."""
    by = {}
    for gen, us in re.findall(r"Workload: pause gc=\d+ gen=(\d+) us=(\d+)", out):
        by.setdefault(int(gen), []).append(float(us))
    return by


def pct(v, q):
    if not v:
        return float("nan")
    s = sorted(v)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def run_mode(a, case, mode, program, i):
    db = os.path.join(a.workdir, f"{case}-{mode}-{i}.db")
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    env = dict(os.environ)
    env.pop("HEAPLENS_EMPTY", None)
    cmd = list(program)
    if mode != "plain":
        extra = ["--snapshot", "none"]
        cmd = [a.heaplens, "record", "-o", db] + extra + ["--"] + cmd
        if mode == "empty":
            env["HEAPLENS_EMPTY"] = "1"
    res = {"mode": mode}
    on_line = None
    if case == "heap":
        go = os.path.join(a.workdir, "heap.go")
        if os.path.exists(go):
            os.remove(go)
        cmd += ["--wait-before-collect", go]

        def on_line(line):
            m = re.search(r"collect-ready .*pid=(\d+)", line)
            if not m:
                return
            if mode == "recorded":  # request → stored, measured by the command's own return
                # First let the writer catch up with the GCs the program has had (building the
                # heap), as a user asking for a snapshot of a program that waits would see it:
                # the figure is the snapshot's, not the backlog's.
                gcs = int(re.search(r"gcs=(\d+)", line).group(1))
                t = time.monotonic()
                while stored_gcs(db) < gcs and time.monotonic() - t < 1200:
                    time.sleep(0.01)
                res["catch_up_s"] = time.monotonic() - t
                t = time.monotonic()
                p = subprocess.run([a.heaplens, "snapshot", m.group(1)], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
                res["snapshot_s"] = time.monotonic() - t
                res["snapshot_out"] = p.stdout.strip()
                res["snapshot_rc"] = p.returncode
            open(go, "w").close()
    rc, wall, rss, out = timed(cmd, env=env, on_line=on_line)
    if rc != 0:
        print(out[-3000:], file=sys.stderr)
        die(f"{case} {mode} run {i} exited with {rc}")
    res.update(wall=wall, rss_kib=rss, out=out, db=db)
    if mode != "plain":
        res["k"] = counters_of(db)
    if case == "workload":
        res["pauses"] = pauses_of(out)
    if not a.keep and mode != "recorded":
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
    return res


def fmt_ratio(x, y):
    return f"{x / y:.2f}x" if y else "nan"


def mib(b):
    return f"{b / 1048576:.0f} MiB"


def report(case, results):
    med = {m: statistics.median(r["wall"] for r in results[m]) for m in MODES}
    rec = results["recorded"][-1]
    k = rec["k"]
    print(f"\n== {case}")
    print(f"wall ms (median): plain {med['plain']:.0f}, empty profiler {med['empty']:.0f}, "
          f"recorded {med['recorded']:.0f}")
    print(f"recorded/plain {fmt_ratio(med['recorded'], med['plain'])}, "
          f"recorded/empty {fmt_ratio(med['recorded'], med['empty'])}, "
          f"empty/plain {fmt_ratio(med['empty'], med['plain'])}")
    # The program's own wall: the command's less the writer's finishing after RUN_END (the
    # issue's measure; the finishing time is reported on its own below).
    prog = {m: statistics.median(r["wall"] - r.get("k", {}).get("writer_finish_ns", 0) / 1e6
                                 for r in results[m]) for m in MODES}
    print(f"until the program's end (wall less the writer's finishing): empty {prog['empty']:.0f}, "
          f"recorded {prog['recorded']:.0f}: recorded/empty {fmt_ratio(prog['recorded'], prog['empty'])}")
    seen = k.get("allocs_seen", 0)
    lost = max(r["k"].get("allocs_dropped", 0) for r in results["recorded"])
    gcs_lost = max(r["k"].get("gcs_dropped", 0) for r in results["recorded"])
    print(f"allocations: {seen:,} seen, {lost:,} lost ({100.0 * lost / seen if seen else 0:.2f}%), "
          f"GCs {k.get('gcs')} stored, {gcs_lost} lost; status {k.get('status')}")
    size = os.path.getsize(rec["db"])
    if case == "heap":
        objs = k.get("snapshot_objects", 0)
        print(f"snapshot: {objs:,} objects, request → stored "
              f"{statistics.median(r.get('snapshot_s', float('nan')) for r in results['recorded']):.1f} s "
              f"after the writer caught up with the heap's building "
              f"({statistics.median(r.get('catch_up_s', float('nan')) for r in results['recorded']):.1f} s); "
              f"(heaplens snapshot said: {rec.get('snapshot_out', '?')!r}); "
              f"{k.get('snapshot_bytes', 0) / objs if objs else float('nan'):.1f} database bytes per "
              f"snapshot object")
    else:
        print(f"database: {mib(size)}, {size / seen if seen else float('nan'):.2f} bytes per allocation")
    print(f"finishing: program's exit waited {k.get('collector_exit_wait_ns', 0) / 1e6:.0f} ms for "
          f"the collector; writer finished {k.get('writer_finish_ns', 0) / 1e6:.0f} ms after the run's end")
    run_cpu = statistics.median(r["k"].get("writer_run_cpu_ns", 0) for r in results["recorded"])
    fin_cpu = statistics.median(r["k"].get("writer_finish_cpu_ns", 0) for r in results["recorded"])
    surv = k.get("survivors", 0)
    print(f"writer CPU (median): {run_cpu / 1e9:.2f} s while the program ran "
          f"({run_cpu / 1e3 / surv if surv else float('nan'):.2f} us per surviving object, "
          f"{surv:,} objects), {fin_cpu / 1e9:.2f} s finishing")
    plain_rss = statistics.median(r["rss_kib"] for r in results["plain"]) * 1024
    print(f"peak RSS: program plain {mib(plain_rss)}, recorded "
          f"{mib(k.get('program_peak_rss_bytes', 0))}; writer {mib(k.get('writer_peak_rss_bytes', 0))}")
    if case == "workload":
        for gen in (0, 1):
            row = {}
            for m in MODES:
                v = [u for r in results[m] for u in r["pauses"].get(gen, [])]
                row[m] = (pct(v, 50), pct(v, 99), len(v))
            print(f"gen{gen} pause us p50/p99 (samples): " + ", ".join(
                f"{m} {row[m][0]:.0f}/{row[m][1]:.0f} ({row[m][2]})" for m in MODES) +
                f"; added vs empty: p50 {row['recorded'][0] - row['empty'][0]:+.0f}, "
                f"p99 {row['recorded'][1] - row['empty'][1]:+.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--case", default="all", choices=["workload", "csc", "heap", "all"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--orders", type=int, default=250000, help="Workload orders per thread")
    ap.add_argument("--files", type=int, default=50, help="generated sources for csc")
    ap.add_argument("--nodes", type=int, default=10_000_000, help="heap case: live objects")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    if not os.access(a.heaplens, os.X_OK):
        die(f"{a.heaplens} is not executable")
    if not shutil.which("dotnet") or not os.path.exists("/usr/bin/time"):
        die("needs dotnet and /usr/bin/time (Debian package 'time')")
    if not a.workdir:
        a.workdir = tempfile.mkdtemp(prefix="heaplens-bench-record.")
    os.makedirs(a.workdir, exist_ok=True)

    cases = ["workload", "csc", "heap"] if a.case == "all" else [a.case]
    for case in cases:
        if case == "workload":
            program = ["dotnet", build_example("Workload", a.workdir), "--pauses",
                       "--orders", str(a.orders)]
        elif case == "csc":
            program = csc_command(a.workdir, a.files)
        else:
            program = ["dotnet", build_example("SnapshotBench", a.workdir), "--nodes",
                       str(a.nodes), "--gen0", "1"]
        results = {m: [] for m in MODES}
        for i in range(a.runs):  # interleaved: slow drifts of the machine hit every mode alike
            for m in MODES:
                r = run_mode(a, case, m, program, i)
                results[m].append(r)
                print(f"  {case} {m} run {i + 1}: {r['wall']:.0f} ms", flush=True)
        report(case, results)
    if a.keep:
        print(f"\nrecordings and programs kept in {a.workdir}")
    else:
        shutil.rmtree(a.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
