#!/usr/bin/env python3
"""Recording benchmark: whole recordings of real programs, plain / empty profiler / recorded.

    bench/record/run.py --heaplens build/bin/heaplens
                        [--case workload|csc|heap|stacks|service|midlife|census|split|all]
                        [--requests N] [--warmup N] [--service-rounds N]
                        [--service-configs plain,...]
                        [--pin both|client|none] [--no-pin]
                        [--other-heaplens PATH] [--jit-summary]
                        [--runs 3] [--mode full|sampled] [--orders N] [--files N] [--nodes N] [--gen0 K] [--gen0-settled]
                        [--rounds N] [--compare HEAPLENS] [--iterations N] [--eventpipe-sampler] [--record-option=OPT ...] [--workdir DIR] [--keep]

Cases (the programs are built or generated into the work directory first):
  workload  examples/Workload: 4 threads, about 24M allocations of varied shapes, GCs on their
            own; its pause sampler gives every mode's pauses per GC the same way.
  csc       the SDK's C# compiler (sdk/*/Roslyn/bincore/csc.dll) compiling 50 generated files.
  heap      examples/SnapshotBench with a 10M-object tree, then `heaplens snapshot PID` once
            the writer has stored the GCs of the building: request → snapshot stored; then a
            GC.Collect() and --gen0 K gen0 GCs with the tree in gen2: their pauses (the
            runtime's figure) and the GC thread's CPU time in them (the pause's own work);
            --gen0-settled starts those once the writer has stored every GC so far.
  stacks    (issue 11; not in `all`) Workload in seven configurations, interleaved: plain, empty
            profiler (full flags), full --stacks off, full --stacks on, empty profiler (sampled
            flags), sampled (stacks on), and sampled with no writer (capture.py: the stream goes
            to a socket that drops it, so the program pays only the in-process part). Prints
            full+stacks / full and sampled / plain, sampled / empty, sampled without its writer /
            plain (wall, the program's own loop time, CPU), the samples taken and the database
            bytes per sample (pages of frames, stacks, stack_frames, alloc_samples, sampling /
            samples). --eventpipe-sampler adds full --stacks on with the runtime's
            AllocationSampled events instead of the collector's own sampler
            (HEAPLENS_FULL_SAMPLER=eventpipe: the cost before this change) and with the walk
            skipped (HEAPLENS_STACK_WALK=off: the walk's share), and sampled --stacks off.

  service   (issue 17; not in `all`) examples/WebApi (ASP.NET Core) under local load: plain, the
            empty profiler with sampled mode's flags and session (the runtime's floor), sampled,
            full (--service-configs: also the floor's parts, one flag or session part at a time,
            and heaplens' parts on it). Interleaved rounds (bench/README.md, "Measuring a
            service"): one server per config, all running at once, each warmed up alone with
            --warmup requests (default 100,000: until tiered compilation is done); then
            --service-rounds rounds (default 10), each sending a burst of --requests (default
            10,000) from bench/record/httpload.c (4 keep-alive connections; build/bin/httpload)
            to every server in turn, the order reversed every other round; --runs instances of
            the whole set, started afresh. --pin: none (the default, --no-pin: server GC with 2
            heaps, as WebApi asks), both (the server's tree on CPU 0, the client on CPU 1; the
            runtime then runs workstation GC), client (the client alone on CPU 1). Prints
            requests/s and CPU per request of the server's tree (median [min-max] of the
            bursts) and, per config, each round's own ratio to
            plain's burst of the same round: the median, a 95% interval of that median (a
            bootstrap drawing instances, then rounds) and the rounds' min-max. --other-heaplens
            PATH runs each recorded config (not the empty profiler's) with that build too, as
            another server in the same rounds ("(other)": main's build against a branch's);
            --jit-summary prints the methods the JIT compiled per tier by the end of the
            warm-up and during the rounds (DOTNET_JitDisasmSummary=1, DOTNET_JitStdOutFile).

  midlife   (issue 17; not in `all`) examples/MidLife: 4 threads, about 21M allocations (--rounds
            per thread, default 400,000), objects that live a few GCs, a growing cache; plain,
            empty profiler (full flags), full, sampled, interleaved. Prints for full mode
            recorded/plain and recorded/empty (wall and CPU), allocations lost, the time program
            threads waited for the collector (thread_waits, thread_wait_ns), the collector's and
            the writer's CPU per surviving object (HEAPLENS_STATS' cpu_ms; writer_run_cpu_ns +
            writer_finish_cpu_ns; survivors: objects rows), database bytes per survivor, the exit
            wait, gen0/gen1 pause p50/p99 against plain (the program's --pauses sampler); and
            sampled/plain. The CPU of the collector thread, the writer and the program's threads
            (the rest of the command). --compare HEAPLENS adds full mode of another build
            (full-base) to every round, and each round's full/empty and full-base/empty.

  census    (issue 20; not in `all`) sampled mode with the census of gen0 (exact counts per
            type) against the program alone and against sampled mode without the census
            (HEAPLENS_CENSUS=off), on a tight allocation loop (AllocBench --iterations, 4
            threads) and MidLife (--rounds): wall and CPU ratios, the census's own time per gen0
            GC (gcs.census_ns p50/p99) and the gen0 pause p50/p99 in each config, with what the
            census adds (AllocBench's from the PauseHook, MidLife's from its --pauses).
            --compare HEAPLENS adds sampled mode of another build (sampled-base) to every
            round: its census and pause figures, and sampled-base/plain.

  split     (issues 17 and 20; not in `all`) where sampled mode's cost goes: each part switched
            off one at a time, on Workload, MidLife and AllocBench (--split-programs; also
            `startup`: ProcessLife probe, a program that does almost nothing, for the fixed
            costs), interleaved:
              plain                     the program alone
              plain, background GC off  DOTNET_gcConcurrent=0: what MONITOR_GC at Initialize costs
                                        by turning background GC off
              empty                     the empty profiler with the sampled flags (the runtime's
                                        cost of the flags and of the EventPipe session)
              empty, no ranges          ... without the survivor ranges (HEAPLENS_RANGES=off: the
                                        runtime's walk of every GC's survivors for the
                                        GCHeapSurvivalAndMovement keyword), as sampled mode's
                                        session is when it follows by handles
              empty, no session         the empty profiler without any EventPipe session
                                        (HEAPLENS_SESSION=off): the flags, heaplens' and the
                                        writer's processes
              empty, samples            the empty profiler with sampled mode's session: no
                                        ranges, the samples' keyword (HEAPLENS_EMPTY_SAMPLES=1):
                                        the runtime's floor under sampled mode
              sampled, no stacks/census heaplens' own machinery: the GC callbacks, the collector
                                        thread, the writer (--stacks off, HEAPLENS_CENSUS=off)
              sampled, no walk/census   + the runtime's AllocationSampled (HEAPLENS_STACK_WALK=off;
                                        every sample kept: HEAPLENS_SAMPLE_BUDGET=0)
              sampled, no census        + our stack walk per sample
              sampled, no budget        + the census of gen0
              sampled                   + the sample budget (samples beyond it left out)
            CPU (user + system of the whole command) and wall medians, each configuration's CPU
            over plain and over the one before it, and the collector thread's and the writer's
            CPU (HEAPLENS_STATS cpu_ms; writer_run_cpu_ns + writer_finish_cpu_ns).

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
  peak RSS        of the program (plain: wait4's ru_maxrss; recorded: the collector's
                  program_peak_rss_bytes) and of the writer (writer_peak_rss_bytes)
  GC pause        p50/p99 of gen0 and gen1 pauses per mode (the runtime's own pause figure,
                  GC.GetGCMemoryInfo, polled every millisecond: Workload's --pauses sampler; for
                  csc and heap bench/record/PauseHook, a startup hook), recorded − empty, and
                  recorded/plain
--mode sampled records with `heaplens record --mode sampled` (no ObjectAllocated for small
objects) and runs the empty profiler with the sampled mode's flags and session too (the samples'
keyword, no survivor ranges: HEAPLENS_EMPTY_SAMPLES=1, HEAPLENS_RANGES=off), so recorded/empty
is heaplens' own cost and empty/plain the runtime's: MONITOR_GC at startup, the LOH/POH
callbacks, the EventPipe session and AllocationSampled.
Every mode's CPU time (user + system, from wait4: the command and every descendant it waited
for, in microseconds) is printed next to the wall time: on
a shared machine it is the steadier figure.
Not a test: the numbers depend on the machine; run it on a quiet one.
"""
import argparse
import glob
import os
import random
import re
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
MODES = ["plain", "empty", "recorded"]
# The empty profiler standing for sampled mode: the same flags and the same EventPipe session
# (the samples' keyword, no survivor ranges, which sampled mode takes only at the GCs that need
# them), callbacks that return at once: the runtime's own price of sampled mode.
EMPTY_SAMPLED_ENV = {"HEAPLENS_EMPTY": "1", "HEAPLENS_RANGES": "off",
                     "HEAPLENS_EMPTY_SAMPLES": "1"}


def die(msg):
    print(f"run.py: {msg}", file=sys.stderr)
    sys.exit(1)


def remove_db(db):
    """The database and its SQLite side files, those that exist."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


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


def build_pause_hook(workdir):
    """bench/record/PauseHook (a startup hook that prints every GC's pause): its dll."""
    out = os.path.join(workdir, "PauseHook")
    dll = os.path.join(out, "PauseHook.dll")
    if os.path.exists(dll):
        return dll
    p = subprocess.run(["dotnet", "build", os.path.join(HERE, "PauseHook", "PauseHook.csproj"),
                        "-c", "Release", "--nologo", "-v", "quiet", "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout, file=sys.stderr)
        die("building PauseHook failed")
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
    """Runs cmd; returns (exit status, wall ms, max RSS KiB, stdout, CPU ms). CPU is user +
    system of the command and every descendant it waited for (the writer, the program), from
    wait4's rusage: microseconds, where /usr/bin/time's %U %S had 10 ms steps."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    out = []
    for line in p.stdout:
        out.append(line)
        if on_line:
            on_line(line)
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    p.returncode = rc  # reaped here, not by Popen
    p.stdout.close()
    wall = (time.monotonic() - start) * 1000
    cpu = (ru.ru_utime + ru.ru_stime) * 1000
    return rc, wall, ru.ru_maxrss, "".join(out), cpu


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
        # The objects stored, from the store's own counts: object_chunks.count while `objects`
        # is the view over the packed rows (a count(*) of the view expands every object's JSON:
        # 3-4 minutes on the 10M-object heap); the table once a command has built its rows.
        kind = c.execute("SELECT type FROM sqlite_master WHERE name = 'objects'").fetchone()
        k["survivors"] = c.execute(
            "SELECT coalesce(sum(count), 0) FROM object_chunks" if kind and kind[0] == "view"
            else "SELECT count(*) FROM objects").fetchone()[0]
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
    """The pause sampler's lines (Workload --pauses, PauseHook) → {gen: [us, ...]}."""
    by = {}
    for gen, us in re.findall(r"^(?:Workload: |MidLife: )?pause gc=\d+ gen=(\d+) us=(\d+)", out, re.M):
        by.setdefault(int(gen), []).append(float(us))
    return by


def pct(v, q):
    if not v:
        return float("nan")
    s = sorted(v)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def run_mode(a, case, mode, program, i):
    db = os.path.join(a.workdir, f"{case}-{mode}-{i}.db")
    remove_db(db)
    env = dict(os.environ)
    for k in ("HEAPLENS_EMPTY", "HEAPLENS_RANGES", "HEAPLENS_EMPTY_SAMPLES"):
        env.pop(k, None)
    if case in ("csc", "heap"):  # pauses the same way in every mode (Workload samples its own)
        env["DOTNET_STARTUP_HOOKS"] = build_pause_hook(a.workdir)
    cmd = list(program)
    if mode != "plain":
        extra = ["--snapshot", "none", "--mode", a.mode] + a.record_option
        cmd = [a.heaplens, "record", "-o", db] + extra + ["--"] + cmd
        if mode == "empty":
            env.update(EMPTY_SAMPLED_ENV if a.mode == "sampled" else {"HEAPLENS_EMPTY": "1"})
    res = {"mode": mode}
    on_line = None
    if case == "heap":
        go = os.path.join(a.workdir, "heap.go")
        if os.path.exists(go):
            os.remove(go)
        settled = os.path.join(a.workdir, "heap.gen0")
        if os.path.exists(settled):
            os.remove(settled)
        cmd += ["--wait-before-collect", go]
        if a.gen0_settled:
            cmd += ["--wait-before-gen0", settled]

        def on_line(line):
            m = re.search(r"gen0-ready gcs=(\d+)", line)
            if m:  # --gen0-settled: the gen0 GCs once the writer has stored every GC so far
                t = time.monotonic()
                while (mode == "recorded" and stored_gcs(db) < int(m.group(1))
                       and time.monotonic() - t < 1200):
                    time.sleep(0.01)
                open(settled, "w").close()
                return
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
    rc, wall, rss, out, cpu = timed(cmd, env=env, on_line=on_line)
    if rc != 0:
        print(out[-3000:], file=sys.stderr)
        die(f"{case} {mode} run {i} exited with {rc}")
    res.update(wall=wall, cpu=cpu, rss_kib=rss, out=out, db=db)
    if mode != "plain":
        res["k"] = counters_of(db)
    res["pauses"] = pauses_of(out)
    if case == "heap":  # SnapshotBench's own: every gen0 GC after the snapshot GC, the tree in gen2
        for key, field in (("gen0_after", "gen0_after_pause_us"), ("gen0_cpu", "gen0_after_cpu_us")):
            m = re.search(field + r"=\[([^\]]*)\]", out)
            res[key] = [float(x) for x in m.group(1).split(",") if x] if m else []
    if case == "workload":
        m = re.search(r"elapsed_ms=([0-9.]+)", out)
        res["program_ms"] = float(m.group(1)) if m else float("nan")
    if not a.keep and mode != "recorded":
        remove_db(db)
    return res


def fmt_ratio(x, y):
    return f"{x / y:.2f}x" if y else "nan"


def mib(b):
    return f"{b / 1048576:.0f} MiB"


def report(case, results, mode):
    med = {m: statistics.median(r["wall"] for r in results[m]) for m in MODES}
    cpu = {m: statistics.median(r["cpu"] for r in results[m]) for m in MODES}
    rec = results["recorded"][-1]
    k = rec["k"]
    name = "recorded" if mode == "full" else mode
    print(f"\n== {case} (record --mode {mode})")
    for label, v in (("wall", med), ("cpu", cpu)):
        print(f"{label} ms (median): plain {v['plain']:.0f}, empty profiler {v['empty']:.0f}, "
              f"{name} {v['recorded']:.0f}")
        print(f"  {name}/plain {fmt_ratio(v['recorded'], v['plain'])}, "
              f"{name}/empty {fmt_ratio(v['recorded'], v['empty'])}, "
              f"empty/plain {fmt_ratio(v['empty'], v['plain'])}")
    if case == "workload":  # the program's own loop time: without the writer's finishing
        prog = {m: statistics.median(r["program_ms"] for r in results[m]) for m in MODES}
        print(f"program's own elapsed ms (median): plain {prog['plain']:.0f}, empty "
              f"{prog['empty']:.0f}, {name} {prog['recorded']:.0f}; {name}/plain "
              f"{fmt_ratio(prog['recorded'], prog['plain'])}, {name}/empty "
              f"{fmt_ratio(prog['recorded'], prog['empty'])}")
    # The program's own wall: the command's less the writer's finishing after RUN_END (the
    # issue's measure; the finishing time is reported on its own below).
    until = {m: statistics.median(r["wall"] - r.get("k", {}).get("writer_finish_ns", 0) / 1e6
                                  for r in results[m]) for m in MODES}
    print(f"until the program's end (wall less the writer's finishing): empty {until['empty']:.0f}, "
          f"{name} {until['recorded']:.0f}: {name}/empty {fmt_ratio(until['recorded'], until['empty'])}, "
          f"{name}/plain {fmt_ratio(until['recorded'], until['plain'])}")
    seen = k.get("allocs_seen", 0)
    lost = max(r["k"].get("allocs_dropped", 0) for r in results["recorded"])
    gcs_lost = max(r["k"].get("gcs_dropped", 0) for r in results["recorded"])
    waits = statistics.median(r["k"].get("thread_waits", 0) for r in results["recorded"])
    wait_ms = statistics.median(r["k"].get("thread_wait_ns", 0) for r in results["recorded"]) / 1e6
    print(f"allocations: {seen:,} seen, {lost:,} lost ({100.0 * lost / seen if seen else 0:.2f}%), "
          f"GCs {k.get('gcs')} stored, {gcs_lost} lost; status {k.get('status')}; threads waited "
          f"{wait_ms:.0f} ms for the collector ({waits:,.0f} waits)")
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
    elif mode == "full":
        print(f"database: {mib(size)}, {size / seen if seen else float('nan'):.2f} bytes per allocation")
    else:  # no allocation is seen one by one: the database follows the surviving objects
        surv = k.get("survivors", 0)
        print(f"database: {mib(size)}, {size / surv if surv else float('nan'):.1f} bytes per "
              f"surviving object")
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
    if case == "heap":
        for key, what in (("gen0_after", "pause us (the runtime's)"),
                          ("gen0_cpu", "GC thread CPU us (the pause's own work)")):
            row = {m: [u for r in results[m] for u in r.get(key, [])] for m in MODES}
            print(f"gen0 {what} p50/p99 after the heap is built (the tree in gen2; SnapshotBench, "
                  "--gen0 GCs per run): " +
                  ", ".join(f"{m} {pct(row[m], 50):.0f}/{pct(row[m], 99):.0f} ({len(row[m])})"
                            for m in MODES) +
                  f"; {name}/plain p50 {fmt_ratio(pct(row['recorded'], 50), pct(row['plain'], 50))}, "
                  f"{name}/empty p50 {fmt_ratio(pct(row['recorded'], 50), pct(row['empty'], 50))}")
    if case in ("workload", "csc", "heap"):
        for gen in (0, 1):
            row = {}
            for m in MODES:
                v = [u for r in results[m] for u in r["pauses"].get(gen, [])]
                row[m] = (pct(v, 50), pct(v, 99), len(v))
            print(f"gen{gen} pause us p50/p99 (samples): " + ", ".join(
                f"{m} {row[m][0]:.0f}/{row[m][1]:.0f} ({row[m][2]})" for m in MODES) +
                f"; added vs empty: p50 {row['recorded'][0] - row['empty'][0]:+.0f}, "
                f"p99 {row['recorded'][1] - row['empty'][1]:+.0f}; {name}/plain p50 "
                f"{fmt_ratio(row['recorded'][0], row['plain'][0])}, p99 "
                f"{fmt_ratio(row['recorded'][1], row['plain'][1])}")


# The collector in sampled mode with its stream going to a socket that drops it (capture.py):
# what the program pays in-process, without the writer's CPU competing for the cores.
NO_WRITER = ["capture"]
# name -> (record arguments, None for the plain program or NO_WRITER; extra environment)
STACK_CONFIGS = {
    "plain": (None, {}),
    "empty-full": (["--mode", "full"], {"HEAPLENS_EMPTY": "1"}),
    "full": (["--mode", "full", "--stacks", "off"], {}),
    "full+stacks": (["--mode", "full", "--stacks", "on"], {}),
    "empty-sampled": (["--mode", "sampled"], EMPTY_SAMPLED_ENV),
    "sampled": (["--mode", "sampled", "--stacks", "on"], {}),
    "sampled, no writer": (NO_WRITER, {}),
}
STACK_EXTRA = {
    "full+stacks eventpipe": (["--mode", "full", "--stacks", "on"],
                              {"HEAPLENS_FULL_SAMPLER": "eventpipe"}),
    "full+stacks no walk": (["--mode", "full", "--stacks", "on"], {"HEAPLENS_STACK_WALK": "off"}),
    "sampled --stacks off": (["--mode", "sampled", "--stacks", "off"], {}),
}
SAMPLE_TABLES = ("frames", "stacks", "stack_frames", "alloc_samples", "sampling")


def sample_figures(db):
    """(samples stored, database bytes of the sample tables and their indexes)."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        n = c.execute("SELECT count(*) FROM alloc_samples").fetchone()[0]
        names = [r[0] for r in c.execute(
            "SELECT name FROM sqlite_schema WHERE tbl_name IN (%s)" %
            ",".join("?" * len(SAMPLE_TABLES)), SAMPLE_TABLES)]
        size = c.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN (%s)" %
                         ",".join("?" * len(names)), names).fetchone()[0] if names else 0
        return n, size
    finally:
        c.close()


def run_stack_config(a, name, config, program, i):
    args, extra_env = config
    db = os.path.join(a.workdir, "stacks-%s-%d.db" % (re.sub(r"[^a-z0-9]+", "-", name), i))
    remove_db(db)
    env = {k: v for k, v in os.environ.items()
           if k not in ("HEAPLENS_EMPTY", "HEAPLENS_FULL_SAMPLER", "HEAPLENS_STACK_WALK")}
    env.update(extra_env)
    cmd = list(program)
    if args is NO_WRITER:
        collector = os.path.join(os.path.dirname(os.path.abspath(a.heaplens)), "libheaplens.so")
        cmd = [sys.executable, os.path.join(HERE, "capture.py"), "--collector", collector,
               "--mode", "sampled", "--"] + cmd
    elif args is not None:
        cmd = [a.heaplens, "record", "-q", "-o", db, "--snapshot", "none"] + args + ["--"] + cmd
    rc, wall, rss, out, cpu = timed(cmd, env=env)
    if rc != 0:
        print(out[-3000:], file=sys.stderr)
        die(f"stacks {name} run {i} exited with {rc}")
    m = re.search(r"elapsed_ms=([0-9.]+)", out)
    res = {"wall": wall, "cpu": cpu, "program_ms": float(m.group(1)) if m else float("nan")}
    if args not in (None, NO_WRITER) and "HEAPLENS_EMPTY" not in extra_env:
        res["samples"], res["sample_bytes"] = sample_figures(db)
        res["db_bytes"] = os.path.getsize(db)
        res["k"] = counters_of(db)
    if not a.keep:
        remove_db(db)
    return res


def stacks_case(a, program):
    configs = dict(STACK_CONFIGS)
    if a.eventpipe_sampler:
        configs.update(STACK_EXTRA)
    results = {n: [] for n in configs}
    for i in range(a.runs):  # interleaved: slow drifts of the machine hit every config alike
        for n, config in configs.items():
            r = run_stack_config(a, n, config, program, i)
            results[n].append(r)
            print(f"  stacks {n} run {i + 1}: wall {r['wall']:.0f} ms, cpu {r['cpu']:.0f} ms, "
                  f"program {r['program_ms']:.0f} ms", flush=True)
    med = {n: {f: statistics.median(r[f] for r in results[n])
               for f in ("wall", "cpu", "program_ms")} for n in configs}
    print(f"\n== stacks (Workload, medians of {a.runs} runs; CPU = user + system of the whole "
          f"command: the steadier figure on a shared machine)")
    print("config: wall ms / program's own loop ms / cpu ms")
    for n in configs:
        print(f"  {n:24} {med[n]['wall']:7.0f} {med[n]['program_ms']:7.0f} {med[n]['cpu']:7.0f}")

    def ratio(x, y):
        return " ".join(f"{f.replace('_ms', '')} {fmt_ratio(med[x][f], med[y][f])}"
                        for f in ("wall", "program_ms", "cpu"))
    print(f"full+stacks / full:     {ratio('full+stacks', 'full')}   (issue 11 target <= 1.1x)")
    if a.eventpipe_sampler:
        print(f"  with AllocationSampled events (HEAPLENS_FULL_SAMPLER=eventpipe) / full: "
              f"{ratio('full+stacks eventpipe', 'full')}")
        print(f"  without the walk (HEAPLENS_STACK_WALK=off) / full: "
              f"{ratio('full+stacks no walk', 'full')}")
    print(f"sampled / plain:        {ratio('sampled', 'plain')}   (issue 11 target <= 1.05x wall)")
    print(f"sampled / empty (sampled flags): {ratio('sampled', 'empty-sampled')}")
    print(f"sampled without its writer / plain: {ratio('sampled, no writer', 'plain')}   (the "
          f"in-process cost; its wall and CPU include the Python sink's start, about 30 ms)")
    print(f"empty (full flags) / plain: {ratio('empty-full', 'plain')}")
    for n in configs:
        rs = [r for r in results[n] if "samples" in r]
        if not rs or not any(r["samples"] for r in rs):
            continue
        samples = statistics.median(r["samples"] for r in rs)
        per = statistics.median(r["sample_bytes"] / r["samples"] for r in rs if r["samples"])
        seen = statistics.median(r["k"].get("allocs_seen", 0) for r in rs)
        print(f"{n}: {samples:.0f} samples taken (median), {per:.0f} database bytes per sample "
              f"(sample tables and indexes), database {mib(statistics.median(r['db_bytes'] for r in rs))}"
              + (f", {seen:,.0f} allocations seen" if seen else ""))


# name -> record arguments (None: the plain program); extra environment. The first four are the
# case's default (--service-configs); the others split the runtime's floor (the empty profiler
# with sampled mode's flags and session, "empty-sampled") part by part: HEAPLENS_EMPTY_MASK_OFF
# leaves event-mask bits off (LOW:HIGH, hex), HEAPLENS_EMPTY_SESSION names the parts of the
# session enabled (collector/README.md, "Event mask").
SERVICE_CONFIGS = {
    "plain": (None, {}),
    "empty-sampled": (["--mode", "sampled"], EMPTY_SAMPLED_ENV),
    "sampled": (["--mode", "sampled"], {}),
    # sampled with HEAPLENS_STATS=1: the collector thread's CPU (cpu_ms) per request
    "sampled-stats": (["--mode", "sampled"], {"HEAPLENS_STATS": "1"}),
    "full": (["--mode", "full"], {}),
    # the empty profiler with no flag and no session: the profiler's presence alone
    "empty-none": (["--mode", "sampled"], {"HEAPLENS_EMPTY": "1", "HEAPLENS_SESSION": "off",
                                           "HEAPLENS_EMPTY_MASK_OFF": "ffffffff:ffffffff"}),
    # sampled mode's flags, no session (MONITOR_GC at Initialize: background GC off)
    "empty-flags": (["--mode", "sampled"], {"HEAPLENS_EMPTY": "1", "HEAPLENS_SESSION": "off"}),
    # ... with the session's GC keyword (Informational) alone
    "empty-gc": (["--mode", "sampled"], {"HEAPLENS_EMPTY": "1", "HEAPLENS_RANGES": "off",
                                         "HEAPLENS_EMPTY_SESSION": "gc"}),
    # ... the whole session but the samples (GC keyword, HeapLens, FailFast)
    "empty-session": (["--mode", "sampled"], {"HEAPLENS_EMPTY": "1", "HEAPLENS_RANGES": "off"}),
    # the floor less one flag each
    "floor-no-monitor-gc": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="80:0")),
    "floor-no-threads": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="200:0")),
    "floor-no-class-loads": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="2:0")),
    "floor-no-suspends": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="10000:0")),
    "floor-no-stack-snapshot": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="10000000:0")),
    "floor-no-basic-gc": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="0:10")),
    "floor-no-loh-poh": (["--mode", "sampled"], dict(EMPTY_SAMPLED_ENV, HEAPLENS_EMPTY_MASK_OFF="0:140")),
    # heaplens' own part on the floor: sampled without the census of gen0, without the stack
    # walks (the runtime's samples still come), without samples at all
    "sampled-no-census": (["--mode", "sampled"], {"HEAPLENS_CENSUS": "off"}),
    # ... the census walked by the GC thread alone (no helper thread)
    "sampled-census-alone": (["--mode", "sampled"], {"HEAPLENS_CENSUS_THREADS": "1"}),
    "sampled-no-walk": (["--mode", "sampled"], {"HEAPLENS_STACK_WALK": "off"}),
    "sampled-no-stacks": (["--mode", "sampled", "--stacks", "off"], {}),
    # plain with background GC off (what MONITOR_GC at Initialize does to the GC)
    "plain-no-bgc": (None, {"DOTNET_gcConcurrent": "0"}),
}
SERVICE_DEFAULT = "plain,empty-sampled,sampled,full"


def tree_cpu_ms(pid):
    """CPU time (user + system) of a process and its descendants, ms."""
    total = 0.0
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
        for task in os.listdir(f"/proc/{pid}/task"):
            for child in open(f"/proc/{pid}/task/{task}/children").read().split():
                total += tree_cpu_ms(int(child))
    except (OSError, ValueError, IndexError):
        pass
    return total


def stop_process(p, sig):
    """Ends a Popen with `sig`, killing it if it is still there after 60 s."""
    p.send_signal(sig)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_average():
    return float(open("/proc/loadavg").read().split()[0])


class Server:
    """One WebApi server started as configuration `name` says (its whole process tree: program,
    heaplens, writer), for the rounds of the service case: warmed up, then measured burst by
    burst. With a.pin "both" the server's tree runs on CPU 0 and the client on CPU 1 (the
    runtime, given one CPU, runs workstation GC although WebApi asks for server GC); "client":
    the client alone on CPU 1, the server on both (server GC, 2 heaps); "none": neither."""

    def __init__(self, a, label, name, dll, i, heaplens=None):
        args, extra_env = SERVICE_CONFIGS[name]
        self.a, self.label, self.port, self.requests = a, label, free_port(), 0
        tag = re.sub(r"[^a-z0-9-]+", "-", label).strip("-")
        self.db = os.path.join(a.workdir, f"service-{tag}-{i}.db")
        remove_db(self.db)
        cmd = ["dotnet", dll, "--urls", f"http://127.0.0.1:{self.port}"]
        if args is not None:
            cmd = ([heaplens or a.heaplens, "record", "-q", "-o", self.db, "--snapshot", "none"]
                   + args + ["--"] + cmd)
        self.client = [a.httpload, str(self.port)]
        if a.pin == "both":
            cmd = ["taskset", "-c", "0"] + cmd
        if a.pin in ("both", "client"):
            self.client = ["taskset", "-c", "1"] + self.client
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPLENS_")}
        env.update(extra_env)
        self.jit = os.path.join(a.workdir, f"service-{tag}-{i}.jit")
        if a.jit_summary:  # every method the JIT compiles, with its tier, into `jit`
            if os.path.exists(self.jit):
                os.remove(self.jit)  # a run of before in the same --workdir
            env.update({"DOTNET_JitStdOutFile": self.jit, "DOTNET_JitDisasmSummary": "1"})
        self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        for line in self.p.stdout:
            if "WebApi: listening" in line:
                self.gc = re.search(r"gc=(\w+)", line).group(1)
                break
        else:
            die(f"service {label}: WebApi did not start")
        self.rest = []  # the program's and the collector's later lines (HEAPLENS_STATS: cpu_ms)
        self.reader = threading.Thread(target=lambda: self.rest.extend(self.p.stdout),
                                       daemon=True)
        self.reader.start()

    def burst(self, n):
        """n requests: requests/s and CPU ms per request of the server's tree during them."""
        cpu0 = tree_cpu_ms(self.p.pid)
        c = subprocess.run(self.client + [str(n)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        cpu = tree_cpu_ms(self.p.pid) - cpu0
        if c.returncode != 0:  # the servers are stopped by service_case's `finally`
            die(f"service {self.label}: {c.stdout.strip()}")
        self.requests += n
        m = re.search(r"wall_ms=([0-9.]+)", c.stdout)
        return {"rps": n / (float(m.group(1)) / 1000), "cpu_per_req": cpu / n}

    def stop(self):
        """Ends the server: the collector thread's CPU per request over its whole life
        (HEAPLENS_STATS=1's cpu_ms; warm-up included) or None, and what went wrong or None."""
        stop_process(self.p, signal.SIGTERM)
        if self.p.returncode not in (0, 143, -signal.SIGTERM):
            return None, f"service {self.label}: exited with {self.p.returncode}"
        if not self.a.keep:
            remove_db(self.db)
        self.reader.join(10)
        stats = re.search(r"heaplens: allocs_seen=.* cpu_ms=([0-9.]+)", "".join(self.rest))
        return (float(stats.group(1)) * 1000 / self.requests
                if stats and self.requests else None), None


def bootstrap_median(groups, draws=2000):
    """95% interval of the median of the pooled values by a two-level bootstrap: the groups (a
    server instance's rounds) drawn with replacement, then each drawn group's values. Values of
    one instance are not independent (the instance's own tiering, layout, heap sizes): drawing
    instances first keeps that variation in the interval. Seeded: the same data, the same
    interval."""
    rng = random.Random(1)
    meds = []
    for _ in range(draws):
        pool = []
        for _ in groups:
            g = groups[rng.randrange(len(groups))]
            pool.extend(g[rng.randrange(len(g))] for _ in g)
        meds.append(statistics.median(pool))
    meds.sort()
    return meds[int(0.025 * draws)], meds[int(0.975 * draws) - 1]


def jit_tiers(path):
    """Methods compiled per tier so far (Tier0, Instrumented Tier1, Tier1, FullOpts, other), from
    DOTNET_JitDisasmSummary's lines
    ("  12: JIT compiled NS.Type:Method() [Tier1, IL size=.., code size=..]"). The JIT writes the
    file through stdio: up to a buffer's worth of the latest lines may be missing mid-run."""
    counts = {}
    try:
        for line in open(path, errors="replace"):
            m = re.search(r"JIT compiled .*\[([^,\]]+), IL size", line)
            if m:  # grouped: "Tier1 with Dynamic PGO" is Tier1, "Instrumented Tier0" Tier0
                tier = m.group(1)
                tier = next((g for g in ("Instrumented Tier1", "Tier1", "Tier0", "FullOpts")
                             if tier.startswith(g) or tier == "Instrumented " + g), tier)
                counts[tier] = counts.get(tier, 0) + 1
    except OSError:
        pass
    return counts


def spread(xs, fmt):
    """median [min-max]"""
    return f"{statistics.median(xs):{fmt}} [{min(xs):{fmt}}-{max(xs):{fmt}}]"


def service_case(a):
    """Interleaved rounds (bench/README.md, "Measuring a service"): every configuration's server
    runs at once, each warmed up alone; then each round sends a burst of --requests to each
    server in turn, the order reversed every other round, and each burst is compared with plain's
    burst of the same round. --runs instances of the whole set, started afresh."""
    configs = a.service_configs.split(",")
    for n in configs:
        if n not in SERVICE_CONFIGS:
            die(f"unknown service config {n} (one of {', '.join(SERVICE_CONFIGS)})")
    if configs[0] != "plain":
        die("--service-configs must start with plain (the ratios' base)")
    if a.runs < 1 or a.service_rounds < 1 or a.requests < 1 or a.warmup < 0:
        die("--runs, --service-rounds and --requests must be at least 1, --warmup at least 0")
    a.httpload = os.path.join(os.path.dirname(a.heaplens), "httpload")
    if not os.access(a.httpload, os.X_OK):
        die(f"{a.httpload} is missing (built with heaplens: cmake --build build)")
    dll = build_example("WebApi", a.workdir)
    # --other-heaplens: each recorded config also with that build (not the empty profiler's: its
    # callbacks return at once in any build)
    runs = [(n, n, None) for n in configs]
    if a.other_heaplens:
        runs = [x for n in configs for x in [(n, n, None)] + (
                [] if SERVICE_CONFIGS[n][0] is None or SERVICE_CONFIGS[n][1].get("HEAPLENS_EMPTY")
                else [(f"{n} (other)", n, a.other_heaplens)])]
    labels = [label for label, _, _ in runs]
    # res[label][instance] = that instance's bursts, round by round
    res = {label: [] for label in labels}
    coll = {label: [] for label in labels}
    tiers = {label: [] for label in labels}
    gcs = set()
    loads = [load_average()]
    t0 = time.monotonic()
    for i in range(a.runs):
        servers = []
        try:
            for label, config, heaplens in runs:
                s = Server(a, label, config, dll, i, heaplens)
                servers.append(s)
                gcs.add(s.gc)
                # The warm-up lasts until the JIT is done: WebApi's CPU per request falls by a
                # third until tiered compilation has compiled its hot methods at Tier1 (after
                # 80,000-90,000 requests with the server on one CPU: bench/README.md, "Sampled
                # mode's floor on a service"). Alone: the other servers wait idle.
                if a.warmup:
                    s.burst(a.warmup)
                if a.jit_summary:
                    s.tiers_warm = jit_tiers(s.jit)
            for s in servers:
                res[s.label].append([])
            for r in range(a.service_rounds):
                order = servers if r % 2 == 0 else servers[::-1]
                for s in order:
                    res[s.label][-1].append(s.burst(a.requests))
                base = res["plain"][-1][-1]
                last = {s.label: res[s.label][-1][-1] for s in servers[1:]}
                print(f"  service run {i + 1} round {r + 1}: plain {base['rps']:.0f} requests/s "
                      f"{base['cpu_per_req'] * 1000:.0f} µs per request; "
                      + ", ".join(f"{n} {b['rps'] / base['rps']:.3f}x "
                                  f"{b['cpu_per_req'] / base['cpu_per_req']:.3f}x"
                                  for n, b in last.items()), flush=True)
                loads.append(load_average())
            if a.jit_summary:
                for s in servers:
                    end = jit_tiers(s.jit)
                    tiers[s.label].append((s.tiers_warm, {k: v - s.tiers_warm.get(k, 0)
                                                          for k, v in end.items()
                                                          if v - s.tiers_warm.get(k, 0)}))
        finally:  # every server stopped, also when a burst failed
            errors = []
            for s in servers:
                c, error = s.stop()
                if c is not None:
                    coll[s.label].append(c)
                if error:
                    errors.append(error)
        if errors:
            die(errors[0])
    minutes = (time.monotonic() - t0) / 60
    pin = {"both": "server on CPU 0, client on CPU 1", "client": "client on CPU 1, server on both",
           "none": "not pinned"}[a.pin]
    print(f"\n== service (examples/WebApi, {'/'.join(sorted(gcs))} GC, {pin}; {a.runs} instances "
          f"of each server, each warmed up with {a.warmup:,} requests of GET /orders/50..249, then "
          f"{a.service_rounds} rounds of {a.requests:,} requests to each, interleaved (order "
          f"reversed every other round), 4 keep-alive connections of httpload; "
          f"{minutes:.1f} min, load average {min(loads):.1f}-{max(loads):.1f})")
    print("config: requests/s and CPU µs per request of the server's tree (program + heaplens + "
          "writer), median [min-max] of the bursts; ratios to plain: median of every round's own "
          "ratio (the burst against plain's of the same round), [95% bootstrap interval of that "
          "median] (min-max of the rounds)")
    if a.other_heaplens:
        print(f"(other): the same config recorded by {a.other_heaplens}")
    for n in labels:
        bursts = [b for inst in res[n] for b in inst]
        line = (f"  {n:24} {spread([b['rps'] for b in bursts], '.0f'):>18} requests/s "
                f"{spread([b['cpu_per_req'] * 1000 for b in bursts], '.0f'):>14} µs")
        if n != "plain":
            for key, what in (("rps", "requests/s"), ("cpu_per_req", "CPU per request")):
                groups = [[x[key] / y[key] for x, y in zip(inst, base)]
                          for inst, base in zip(res[n], res["plain"])]
                flat = [v for g in groups for v in g]
                lo, hi = bootstrap_median(groups)
                line += (f"\n      {what} {statistics.median(flat):.3f}x [{lo:.3f}-{hi:.3f}] "
                         f"({min(flat):.3f}-{max(flat):.3f}); per instance "
                         + " ".join(f"{statistics.median(g):.3f}" for g in groups))
        if coll[n]:
            line += (f"\n      collector thread {spread(coll[n], '.2f')} µs per request "
                     "(whole runs)")
        for warm, measured in tiers[n]:
            fmt = lambda t: ", ".join(f"{k} {v}" for k, v in sorted(t.items())) or "none"
            line += (f"\n      JIT after the warm-up: {fmt(warm)}; during the rounds: "
                     f"{fmt(measured)}")
        print(line)


# name -> record arguments (None: the plain program); extra environment. HEAPLENS_STATS makes
# the collector print its thread's CPU time (cpu_ms) at Shutdown.
MIDLIFE_CONFIGS = {
    "plain": (None, {}),
    "empty": (["--mode", "full"], {"HEAPLENS_EMPTY": "1"}),
    "full": (["--mode", "full"], {"HEAPLENS_STATS": "1"}),
    "sampled": (["--mode", "sampled"], {"HEAPLENS_STATS": "1"}),
}


def run_midlife_config(a, name, config, program, i):
    args, extra_env = config[:2]
    heaplens = config[2] if len(config) > 2 else a.heaplens
    db = os.path.join(a.workdir, f"midlife-{name}-{i}.db")
    remove_db(db)
    env = {k: v for k, v in os.environ.items() if k not in ("HEAPLENS_EMPTY", "HEAPLENS_STATS")}
    env.update(extra_env)
    cmd = list(program)
    if args is not None:
        cmd = [heaplens, "record", "-q", "-o", db, "--snapshot", "none"] + args + ["--"] + cmd
    rc, wall, rss, out, cpu = timed(cmd, env=env)
    if rc != 0:
        print(out[-3000:], file=sys.stderr)
        die(f"midlife {name} run {i} exited with {rc}")
    res = {"wall": wall, "cpu": cpu, "rss": rss, "pauses": pauses_of(out)}
    m = re.search(r"heaplens: allocs_seen=.* cpu_ms=([0-9.]+)", out)
    res["collector_cpu_ms"] = float(m.group(1)) if m else float("nan")
    if args is not None and "HEAPLENS_EMPTY" not in extra_env:
        res["k"] = counters_of(db)
        res["db_bytes"] = os.path.getsize(db)
    if not a.keep:
        remove_db(db)
    return res


def midlife_case(a):
    program = ["dotnet", build_example("MidLife", a.workdir), "--pauses", "--checkpoints", "1",
               "--rounds", str(a.rounds)]
    configs = dict(MIDLIFE_CONFIGS)
    if a.compare:  # full and sampled mode of another build, in the same rounds ("...-base")
        configs["full-base"] = MIDLIFE_CONFIGS["full"] + (a.compare,)
        configs["sampled-base"] = MIDLIFE_CONFIGS["sampled"] + (a.compare,)
    recorded = [n for n in ("full", "full-base", "sampled", "sampled-base") if n in configs]
    results = {n: [] for n in configs}
    loads = [load_average()]
    for i in range(a.runs):  # interleaved: slow drifts of the machine hit every config alike
        for n, config in configs.items():
            r = run_midlife_config(a, n, config, program, i)
            results[n].append(r)
            print(f"  midlife {n} run {i + 1}: wall {r['wall']:.0f} ms, cpu {r['cpu']:.0f} ms",
                  flush=True)
        loads.append(load_average())

    def med(n, f):
        return statistics.median(f(r) for r in results[n])
    wall = {n: med(n, lambda r: r["wall"]) for n in configs}
    cpu = {n: med(n, lambda r: r["cpu"]) for n in configs}
    print(f"\n== midlife (MidLife --rounds {a.rounds}, medians of {a.runs} interleaved runs; CPU = "
          f"user + system of the whole command; load average {min(loads):.1f}-{max(loads):.1f}"
          + (f"; full-base: {a.compare}" if a.compare else "") + ")")
    for label, v in (("wall", wall), ("cpu", cpu)):
        print(f"{label} ms: " + ", ".join(f"{n} {v[n]:.0f}" for n in configs))
        print(f"  full/plain {fmt_ratio(v['full'], v['plain'])}, full/empty "
              f"{fmt_ratio(v['full'], v['empty'])}, empty/plain {fmt_ratio(v['empty'], v['plain'])}, "
              f"sampled/plain {fmt_ratio(v['sampled'], v['plain'])}" +
              (f", full-base/empty {fmt_ratio(v['full-base'], v['empty'])}, sampled-base/plain "
               f"{fmt_ratio(v['sampled-base'], v['plain'])}" if a.compare else ""))
    if a.compare:  # each round's own ratio: the rounds share the machine's state
        for label, key in (("wall", "wall"), ("cpu", "cpu")):
            rr = [x[key] / y[key] for x, y in zip(results["full"], results["empty"])]
            br = [x[key] / y[key] for x, y in zip(results["full-base"], results["empty"])]
            print(f"  per round, full/empty {label}: " + ", ".join(f"{x:.2f}" for x in rr) +
                  "; full-base/empty: " + ", ".join(f"{x:.2f}" for x in br))
            sd = [x[key] - y[key] for x, y in zip(results["sampled"], results["sampled-base"])]
            print(f"  per round, sampled - sampled-base {label} ms: " +
                  ", ".join(f"{x:+.0f}" for x in sd))
    print("peak RSS (the largest process of the command): " +
          ", ".join(f"{n} {mib(med(n, lambda r: r['rss'] * 1024))}" for n in configs))
    for n in recorded:
        ks = [r["k"] for r in results[n]]
        seen = statistics.median(k.get("allocs_seen", 0) for k in ks)
        lost = max(k.get("allocs_dropped", 0) for k in ks)
        surv = statistics.median(k.get("survivors", 0) for k in ks)
        waits = statistics.median(k.get("thread_waits", 0) for k in ks)
        wait_ms = statistics.median(k.get("thread_wait_ns", 0) for k in ks) / 1e6
        coll = med(n, lambda r: r["collector_cpu_ms"]) * 1e6
        writer = med(n, lambda r: r["k"].get("writer_run_cpu_ns", 0) +
                     r["k"].get("writer_finish_cpu_ns", 0))
        size = med(n, lambda r: r["db_bytes"])
        exit_wait = med(n, lambda r: r["k"].get("collector_exit_wait_ns", 0)) / 1e6
        gcs_lost = max(k.get("gcs_dropped", 0) for k in ks)
        incomplete = max(k.get("gc_events_dropped", 0) for k in ks)
        # Full mode stores every object that survives a GC; sampled mode's objects rows are its
        # samples and what its snapshots named, so a cost per survivor means nothing there.
        full = n.startswith("full")
        share = (f" ({100.0 * surv / seen:.1f}% of allocations)" if n == "full" and seen
                 else "")  # sampled mode sees only LOH and POH allocations one by one
        stored = "survivors" if full else "objects stored (samples, and objects snapshots named)"
        print(f"{n}: allocations {seen:,.0f} seen, {lost:,} lost, GCs lost {gcs_lost}, GC inputs "
              f"lost {incomplete}; threads waited {wait_ms:.0f} ms ({waits:,.0f} waits); "
              f"{surv:,.0f} {stored}{share}")
        # The program's threads: the whole command but the collector thread and the writer (the
        # runtime's own threads and heaplens' parent, a few ms, included).
        prog = med(n, lambda r: r["cpu"] - r["collector_cpu_ms"] -
                   (r["k"].get("writer_run_cpu_ns", 0) + r["k"].get("writer_finish_cpu_ns", 0)) / 1e6)
        print(f"  CPU ms: collector thread {coll / 1e6:.0f}, writer {writer / 1e6:.0f}, the "
              f"program's threads (the rest of the command) {prog:.0f}")
        if full:
            print(f"  CPU per survivor: collector {coll / surv if surv else float('nan'):.0f} ns, "
                  f"writer {writer / surv if surv else float('nan'):.0f} ns, together "
                  f"{(coll + writer) / surv if surv else float('nan'):.0f} ns; database "
                  f"{mib(size)}, {size / surv if surv else float('nan'):.1f} bytes per survivor; "
                  f"exit waited {exit_wait:.0f} ms")
        else:
            print(f"  database {mib(size)}; exit waited {exit_wait:.0f} ms")
    for gen in (0, 1):
        row = {}
        for n in configs:
            v = [u for r in results[n] for u in r["pauses"].get(gen, [])]
            row[n] = (pct(v, 50), pct(v, 99), len(v))
        print(f"gen{gen} pause us p50/p99 (samples): " + ", ".join(
            f"{n} {row[n][0]:.0f}/{row[n][1]:.0f} ({row[n][2]})" for n in configs) +
            f"; full/plain p50 {fmt_ratio(row['full'][0], row['plain'][0])}, p99 "
            f"{fmt_ratio(row['full'][1], row['plain'][1])}")


CENSUS_CONFIGS = {
    "plain": None,
    "nocensus": {"HEAPLENS_CENSUS": "off"},
    "sampled": {},
}


def run_census_config(a, prog, name, env_extra, program, i):
    heaplens = a.compare if name == "sampled-base" else a.heaplens
    db = os.path.join(a.workdir, f"census-{prog}-{name}-{i}.db")
    remove_db(db)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPLENS_")}
    if prog == "allocbench":  # its pauses, the same way in every config (MidLife samples its own)
        env["DOTNET_STARTUP_HOOKS"] = build_pause_hook(a.workdir)
    cmd = list(program)
    if env_extra is not None:
        env.update(env_extra)
        cmd = [heaplens, "record", "-q", "-o", db, "--snapshot", "none", "--mode",
               "sampled"] + ["--"] + cmd
    rc, wall, rss, out, cpu = timed(cmd, env=env)
    if rc != 0:
        print(out[-3000:], file=sys.stderr)
        die(f"census {prog} {name} run {i} exited with {rc}")
    res = {"wall": wall, "cpu": cpu, "pauses": pauses_of(out), "census_us": [], "objects": 0}
    if env_extra is not None:
        con = sqlite3.connect(db)
        res["census_us"] = [ns / 1000 for (ns,) in con.execute(
            "SELECT census_ns FROM gcs WHERE generation = 0 AND census_ns IS NOT NULL")]
        res["objects"] = con.execute("SELECT coalesce(sum(census_objects), 0) FROM gcs"
                                     ).fetchone()[0]
        con.close()
    if not a.keep:
        remove_db(db)
    return res


def census_case(a):
    """Sampled mode with the census of gen0 (exact counts per type) against the program alone
    and against sampled mode without it (HEAPLENS_CENSUS=off): a tight allocation loop
    (AllocBench) and MidLife. The added gen0 pause: the census's own time per gen0 GC
    (gcs.census_ns), and the runtime's gen0 pause p50/p99 with and without it (AllocBench by
    the PauseHook, MidLife by its --pauses)."""
    programs = {
        "allocbench": ["dotnet", build_example("AllocBench", a.workdir), str(a.iterations),
                       "--threads", "4"],
        "midlife": ["dotnet", build_example("MidLife", a.workdir), "--pauses", "--checkpoints",
                    "1", "--rounds", str(a.rounds)],
    }
    configs = dict(CENSUS_CONFIGS)
    if a.compare:  # sampled mode of another build, in the same rounds
        configs["sampled-base"] = {}
    for prog, program in programs.items():
        results = {n: [] for n in configs}
        for i in range(a.runs):
            for n, env_extra in configs.items():
                r = run_census_config(a, prog, n, env_extra, program, i)
                results[n].append(r)
                print(f"  census {prog} {n} run {i + 1}: wall {r['wall']:.0f} ms, "
                      f"cpu {r['cpu']:.0f} ms", flush=True)

        def med(n, key):
            return statistics.median(r[key] for r in results[n])
        print(f"\n== census: {' '.join(program[1:])} (medians of {a.runs} interleaved runs; "
              f"CPU = user + system of the whole command)")
        for key in ("wall", "cpu"):
            v = {n: med(n, key) for n in configs}
            print(f"{key} ms: " + ", ".join(f"{n} {v[n]:.0f}" for n in configs) +
                  f"; sampled (census)/plain {fmt_ratio(v['sampled'], v['plain'])}, "
                  f"sampled/no census {fmt_ratio(v['sampled'], v['nocensus'])}, "
                  f"no census/plain {fmt_ratio(v['nocensus'], v['plain'])}" +
                  (f", sampled-base/plain {fmt_ratio(v['sampled-base'], v['plain'])}"
                   if a.compare else ""))
        for n in [c for c in ("sampled", "sampled-base") if c in configs]:
            walks = [u for r in results[n] for u in r["census_us"]]
            objects = statistics.median(r["objects"] for r in results[n])
            print(f"census per gen0 GC (gcs.census_ns), {n}: p50 {pct(walks, 50):.0f} us, p99 "
                  f"{pct(walks, 99):.0f} us ({len(walks)} GCs); {objects:,.0f} objects counted "
                  f"per run")
        if any(r["pauses"] for r in results["plain"]):
            row = {}
            for n in configs:
                v = [u for r in results[n] for u in r["pauses"].get(0, [])]
                row[n] = (pct(v, 50), pct(v, 99), len(v))
            print("gen0 pause us p50/p99 (samples): " + ", ".join(
                f"{n} {row[n][0]:.0f}/{row[n][1]:.0f} ({row[n][2]})" for n in configs) +
                f"; added by the census (sampled - no census): p50 "
                f"{row['sampled'][0] - row['nocensus'][0]:.0f} us, p99 "
                f"{row['sampled'][1] - row['nocensus'][1]:.0f} us" +
                (f"; sampled-base - no census: p50 "
                 f"{row['sampled-base'][0] - row['nocensus'][0]:.0f} us, p99 "
                 f"{row['sampled-base'][1] - row['nocensus'][1]:.0f} us" if a.compare else ""))


# name -> (record arguments, None for the program alone; extra environment). In the order the
# parts are added: each one's increment is over the configuration before it (empty over plain).
SPLIT_CONFIGS = {
    "plain": (None, {}),
    "plain, background GC off": (None, {"DOTNET_gcConcurrent": "0"}),
    "empty": ([], {"HEAPLENS_EMPTY": "1"}),
    "empty, no ranges": ([], {"HEAPLENS_EMPTY": "1", "HEAPLENS_RANGES": "off"}),
    "empty, no session": ([], {"HEAPLENS_EMPTY": "1", "HEAPLENS_SESSION": "off"}),
    "empty, samples": ([], {"HEAPLENS_EMPTY": "1", "HEAPLENS_RANGES": "off",
                            "HEAPLENS_EMPTY_SAMPLES": "1"}),
    "sampled, no stacks/census": (["--stacks", "off"], {"HEAPLENS_CENSUS": "off"}),
    "sampled, no walk/census": ([], {"HEAPLENS_CENSUS": "off", "HEAPLENS_STACK_WALK": "off",
                                     "HEAPLENS_SAMPLE_BUDGET": "0"}),
    "sampled, no census": ([], {"HEAPLENS_CENSUS": "off", "HEAPLENS_SAMPLE_BUDGET": "0"}),
    "sampled, no budget": ([], {"HEAPLENS_SAMPLE_BUDGET": "0"}),
    "sampled": ([], {}),
}
# The increment each configuration shows, and over which one.
SPLIT_STEPS = (
    ("background GC off (MONITOR_GC at Initialize)", "plain, background GC off", "plain"),
    ("the runtime: flags, EventPipe session", "empty", "plain"),
    ("... of which the survivor ranges", "empty", "empty, no ranges"),
    ("the runtime's floor: flags, heaplens' and the writer's processes", "empty, no session",
     "plain"),
    ("... + starting the EventPipe session", "empty, no ranges", "empty, no session"),
    ("... + the runtime's AllocationSampled", "empty, samples", "empty, no ranges"),
    ("heaplens on that floor (sampled / empty, samples)", "sampled", "empty, samples"),
    ("heaplens: callbacks, collector thread, writer", "sampled, no stacks/census", "empty"),
    ("the runtime's AllocationSampled", "sampled, no walk/census", "sampled, no stacks/census"),
    ("our stack walk per sample", "sampled, no census", "sampled, no walk/census"),
    ("the census of gen0", "sampled, no budget", "sampled, no census"),
    ("the sample budget (samples left out)", "sampled", "sampled, no budget"),
)


def run_split_config(a, prog, name, config, program, i):
    args, extra_env = config
    db = os.path.join(a.workdir, "split-%s-%s-%d.db" % (prog, re.sub(r"[^a-z0-9]+", "-", name), i))
    remove_db(db)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HEAPLENS_") and k != "DOTNET_gcConcurrent"}
    env.update(extra_env)
    cmd = list(program)
    if args is not None:
        env["HEAPLENS_STATS"] = "1"
        cmd = [a.heaplens, "record", "-q", "-o", db, "--snapshot", "none", "--mode",
               "sampled"] + args + ["--"] + cmd
    rc, wall, rss, out, cpu = timed(cmd, env=env)
    if rc != 0:
        print(out[-3000:], file=sys.stderr)
        die(f"split {prog} {name} run {i} exited with {rc}")
    res = {"wall": wall, "cpu": cpu, "collector": float("nan"), "writer": float("nan"),
           "kept": 0, "budgeted": 0}
    m = re.search(r"heaplens: allocs_seen=.* cpu_ms=([0-9.]+)", out)
    if m:
        res["collector"] = float(m.group(1))
    m = re.search(r"samples_taken=([0-9]+) .*samples_budgeted=([0-9]+)", out)
    if m:  # the samples kept, and those the sample budget left out
        res["kept"], res["budgeted"] = int(m.group(1)), int(m.group(2))
    if args is not None and "HEAPLENS_EMPTY" not in extra_env:
        k = counters_of(db)
        res["writer"] = (k.get("writer_run_cpu_ns", 0) + k.get("writer_finish_cpu_ns", 0)) / 1e6
    if not a.keep:
        remove_db(db)
    return res


def split_case(a):
    """Sampled mode's cost, part by part (SPLIT_CONFIGS), on each program of --split-programs."""
    programs = {
        "workload": ["dotnet", build_example("Workload", a.workdir), "--orders", str(a.orders)],
        "midlife": ["dotnet", build_example("MidLife", a.workdir), "--checkpoints", "1",
                    "--rounds", str(a.rounds)],
        "allocbench": ["dotnet", build_example("AllocBench", a.workdir), str(a.iterations),
                       "--threads", "4"],
        # A program that does almost nothing (a few allocations, one GC): the fixed costs.
        "startup": ["dotnet", build_example("ProcessLife", a.workdir), "probe", "startup"],
    }
    for prog in a.split_programs.split(","):
        if prog not in programs:
            die(f"--split-programs: {prog!r} is not one of {', '.join(programs)}")
        program = programs[prog]
        results = {n: [] for n in SPLIT_CONFIGS}
        for i in range(a.runs):  # interleaved: slow drifts of the machine hit every config alike
            for n, config in SPLIT_CONFIGS.items():
                r = run_split_config(a, prog, n, config, program, i)
                results[n].append(r)
                print(f"  split {prog} {n} run {i + 1}: wall {r['wall']:.0f} ms, cpu "
                      f"{r['cpu']:.0f} ms", flush=True)

        def med(n, key):
            return statistics.median(r[key] for r in results[n])
        print(f"\n== split: {' '.join(program[1:])} (medians of {a.runs} interleaved runs; "
              f"CPU = user + system of the whole command; load average {os.getloadavg()[0]:.1f})")
        plain = med("plain", "cpu")
        print(f"{'config':28} {'wall ms':>8} {'cpu ms':>8} {'cpu/plain':>9} {'collector':>9} "
              f"{'writer':>7} {'samples':>8} {'left out':>8}")
        for n in SPLIT_CONFIGS:
            print(f"{n:28} {med(n, 'wall'):8.0f} {med(n, 'cpu'):8.0f} "
                  f"{fmt_ratio(med(n, 'cpu'), plain):>9} {med(n, 'collector'):9.0f} "
                  f"{med(n, 'writer'):7.0f} {med(n, 'kept'):8.0f} {med(n, 'budgeted'):8.0f}")
        for label, x, y in SPLIT_STEPS:
            d = med(x, "cpu") - med(y, "cpu")
            print(f"  {label}: {d:+.0f} ms CPU, {d / plain:+.2f} of plain")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--case", default="all",
                    choices=["workload", "csc", "heap", "stacks", "service", "midlife", "census",
                             "split", "all"])
    ap.add_argument("--eventpipe-sampler", action="store_true",
                    help="stacks case: also the runtime's sampler and the walk skipped")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mode", default="full", choices=["full", "sampled"],
                    help="heaplens record --mode for the empty and recorded runs")
    ap.add_argument("--orders", type=int, default=250000, help="Workload orders per thread")
    ap.add_argument("--files", type=int, default=50, help="generated sources for csc")
    ap.add_argument("--record-option", action="append", default=[],
                    help="an extra `heaplens record` option (repeatable): --record-option=--handles")
    ap.add_argument("--nodes", type=int, default=10_000_000, help="heap case: live objects")
    ap.add_argument("--gen0", type=int, default=1,
                    help="heap case: gen0 GCs before and after the snapshot GC (their pauses)")
    ap.add_argument("--gen0-settled", action="store_true",
                    help="heap case: the gen0 GCs after the snapshot GC start once the writer has "
                         "stored every GC so far (without heaplens' threads busy beside them)")
    ap.add_argument("--requests", type=int, default=10000,
                    help="service case: requests per burst (one burst per server and round)")
    ap.add_argument("--service-rounds", type=int, default=10,
                    help="service case: rounds per instance of the servers")
    ap.add_argument("--warmup", type=int, default=100000,
                    help="service case: requests before the measured ones (until tiered "
                         "compilation is done)")
    ap.add_argument("--service-configs", default=SERVICE_DEFAULT,
                    help="service case: configurations, comma-separated, plain first (default "
                         f"{SERVICE_DEFAULT}; the others split the runtime's floor: "
                         f"{', '.join(n for n in SERVICE_CONFIGS if n not in SERVICE_DEFAULT.split(','))})")
    ap.add_argument("--other-heaplens",
                    help="service case: also record each config with this heaplens build "
                         "(another branch's, main's), interleaved: labelled '(other)'")
    ap.add_argument("--jit-summary", action="store_true",
                    help="service case: count the methods the JIT compiled per tier, after the "
                         "warm-up and during the measure (DOTNET_JitDisasmSummary=1)")
    ap.add_argument("--pin", choices=["both", "client", "none"], default="none",
                    help="service case: the server's tree on CPU 0 and the client on CPU 1 "
                         "(both: the runtime then runs workstation GC), the client alone on "
                         "CPU 1 (client: server GC), or neither (none, the default: server GC, "
                         "as WebApi asks)")
    ap.add_argument("--no-pin", dest="pin", action="store_const", const="none",
                    help="service case: --pin none")
    ap.add_argument("--rounds", type=int, default=400_000, help="midlife case: rounds per thread")
    ap.add_argument("--compare", metavar="HEAPLENS",
                    help="midlife case: also full mode with this heaplens (another build), "
                         "interleaved in the same rounds, as full-base; census case: sampled "
                         "mode with it, as sampled-base")
    ap.add_argument("--iterations", type=int, default=30000,
                    help="census case: AllocBench iterations (4 threads)")
    ap.add_argument("--split-programs", default="workload,midlife,allocbench",
                    help="split case: which programs (comma-separated: workload, midlife, allocbench, startup)")
    ap.add_argument("--workdir", help="where programs and recordings go (kept; default: a "
                    "temporary directory, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    if a.other_heaplens:
        a.other_heaplens = os.path.abspath(a.other_heaplens)
        if not os.access(a.other_heaplens, os.X_OK):
            die(f"{a.other_heaplens} is not executable")
    if (os.cpu_count() or 1) < 2 or not shutil.which("taskset"):
        a.pin = "none"
    if not os.access(a.heaplens, os.X_OK):
        die(f"{a.heaplens} is not executable")
    if not shutil.which("dotnet"):
        die("needs dotnet")
    own = a.workdir is None  # a directory the user named is theirs: never removed
    if own:
        a.workdir = tempfile.mkdtemp(prefix="heaplens-bench-record.")
    os.makedirs(a.workdir, exist_ok=True)

    cases = ["workload", "csc", "heap"] if a.case == "all" else [a.case]
    for case in cases:
        if case == "stacks":
            stacks_case(a, ["dotnet", build_example("Workload", a.workdir), "--orders",
                            str(a.orders)])
            continue
        if case == "service":
            service_case(a)
            continue
        if case == "midlife":
            midlife_case(a)
            continue
        if case == "census":
            census_case(a)
            continue
        if case == "split":
            split_case(a)
            continue
        if case == "workload":
            program = ["dotnet", build_example("Workload", a.workdir), "--pauses",
                       "--orders", str(a.orders)]
        elif case == "csc":
            program = csc_command(a.workdir, a.files)
        else:
            program = ["dotnet", build_example("SnapshotBench", a.workdir), "--nodes",
                       str(a.nodes), "--gen0", str(a.gen0)]
        results = {m: [] for m in MODES}
        for i in range(a.runs):  # interleaved: slow drifts of the machine hit every mode alike
            for m in MODES:
                r = run_mode(a, case, m, program, i)
                results[m].append(r)
                print(f"  {case} {m} run {i + 1}: {r['wall']:.0f} ms", flush=True)
        report(case, results, a.mode)
    if a.keep or not own:
        print(f"\nrecordings and programs kept in {a.workdir}")
    else:
        shutil.rmtree(a.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
