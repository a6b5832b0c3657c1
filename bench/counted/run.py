#!/usr/bin/env python3
"""Counted sites benchmark (issue 23): what `--count` costs per counted allocation, how soon
counting is on, and a service's throughput while its methods are counted.

    bench/counted/run.py --heaplens build/bin/heaplens [--case loop|webapi|all] [--runs 3]
                         [--iterations N] [--requests N] [--workdir DIR]

  loop    examples/CountedSites --loop N (Sites.Loop: one `new Node` per iteration, the one
          counted site) recorded in sampled mode without stacks, with and without
          `--count HeapLens.Examples.Counted.Sites.Loop`, interleaved; the program's own figures
          (ns per iteration, wall and process CPU) give the cost per counted allocation (with -
          without). HEAPLENS_STATS=1 gives the scan-to-request time and how long the module's
          load waited for it (the time from the request to counting active, at startup).
  webapi  examples/WebApi (ASP.NET Core, server GC) started without heaplens, --requests GET
          /orders/N from 4 local client threads per phase: before, while `heaplens attach
          --count 'Program*' --count 'System.Linq.*'` counts, and after the session (the
          collector resident and dormant; the process cannot be attached again, so one attach
          per run of the script). Requests/s and app CPU per request per phase, the time
          `heaplens attach` took (the recompilation requested before it returns), and the most
          counted sites.

Medians over --runs. Not a test: on a shared machine prefer the CPU figures.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location("attach_bench",
                                               os.path.join(HERE, "..", "attach", "run.py"))
attach_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(attach_bench)
die, build_example, remove_db, stop_process = (attach_bench.die, attach_bench.build_example,
                                               attach_bench.remove_db, attach_bench.stop_process)
aspnet, webapi_phase, CLEAN_ENV = (attach_bench.aspnet, attach_bench.webapi_phase,
                                   attach_bench.CLEAN_ENV)


def ratio(x, y):
    return f"{x / y:.2f}x" if y else "n/a"


def loop_run(a, dll, counted):
    db = os.path.join(a.workdir, "loop.db")
    remove_db(db)
    cmd = [a.heaplens, "record", "-q", "--mode", "sampled", "--stacks", "off", "-o", db]
    if counted:
        cmd += ["--count", "HeapLens.Examples.Counted.Sites.Loop"]
    cmd += ["--", "dotnet", dll, "--loop", str(a.iterations)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(CLEAN_ENV, HEAPLENS_STATS="1"))
    m = re.search(r"loop \d+ ([\d.]+) ([\d.]+)", p.stdout)
    if p.returncode != 0 or not m:
        die(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-1000:]}")
    r = {"wall": float(m.group(1)), "cpu": float(m.group(2))}
    s = re.search(r"scan to request ([\d.]+) ms at most.*module loads waited ([\d.]+) ms", p.stderr)
    if counted and s:
        r["request_ms"], r["wait_ms"] = float(s.group(1)), float(s.group(2))
    return r


def case_loop(a):
    dll = build_example("CountedSites", a.workdir)
    res = {False: [], True: []}
    for i in range(a.runs):
        for counted in (False, True):
            res[counted].append(loop_run(a, dll, counted))
        print(f"  loop run {i + 1}: cpu ns/iteration without {res[False][-1]['cpu']:.2f}, "
              f"with --count {res[True][-1]['cpu']:.2f}", flush=True)
    med = {c: {k: statistics.median(r[k] for r in res[c]) for k in ("wall", "cpu")} for c in res}
    print(f"\n== loop (CountedSites --loop {a.iterations:,}, record --mode sampled --stacks off, "
          f"{a.runs} runs, load average {os.getloadavg()[0]:.1f})")
    for k, label in (("cpu", "process CPU"), ("wall", "wall")):
        print(f"{label} ns per allocation (median): without {med[False][k]:.2f}, with --count "
              f"{med[True][k]:.2f}: {med[True][k] - med[False][k]:+.2f} ns per counted "
              f"allocation ({ratio(med[True][k], med[False][k])})")
    req = [r["request_ms"] for r in res[True] if "request_ms" in r]
    wait = [r["wait_ms"] for r in res[True] if "wait_ms" in r]
    if req:
        print(f"scan to request (median) {statistics.median(req):.3f} ms; module loads waited "
              f"{statistics.median(wait):.1f} ms at most (startup: counting on before the "
              f"module's first call)")


def case_webapi(a):
    dll = build_example("WebApi", a.workdir)
    port = aspnet.free_port()
    app = subprocess.Popen(["dotnet", dll, "--urls", f"http://127.0.0.1:{port}"], env=CLEAN_ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid = None
    for line in app.stdout:
        m = re.search(r"WebApi: listening pid=(\d+)", line)
        if m:
            pid = int(m.group(1))
            break
    if pid is None:
        die("WebApi did not start")
    threading.Thread(target=lambda: [None for _ in app.stdout], daemon=True).start()
    phases = {"before": [], "counting": [], "after": []}
    db = os.path.join(a.workdir, "webapi.db")
    remove_db(db)
    try:
        webapi_phase(port, pid, min(a.requests, 500))  # the JIT and the connections warm
        for _ in range(a.runs):
            phases["before"].append(webapi_phase(port, pid, a.requests))
        t = time.monotonic()
        session = subprocess.Popen([a.heaplens, "attach", str(pid), "-o", db, "--snapshot",
                                    "none", "--count", "Program*", "--count", "System.Linq.*"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = []
        for line in session.stderr:
            err.append(line)
            if "attached to process" in line:
                break
        attach_s = time.monotonic() - t
        if not any("attached to process" in l for l in err):
            die("attach --count failed: " + "".join(err))
        for _ in range(a.runs):
            phases["counting"].append(webapi_phase(port, pid, a.requests))
        session.send_signal(signal.SIGINT)
        out, rest = session.communicate(timeout=1200)
        if session.returncode != 0:
            die(f"heaplens attach exited with {session.returncode}: {rest[-2000:]}")
        for _ in range(a.runs):
            phases["after"].append(webapi_phase(port, pid, a.requests))
    finally:
        stop_process(app, signal.SIGINT)
    print(f"\n== webapi (examples/WebApi, {a.requests:,} requests per phase from 4 client "
          f"threads, {a.runs} runs per phase, load average {os.getloadavg()[0]:.1f})")
    med = {p: {k: statistics.median(r[k] for r in phases[p]) for k in ("rps", "cpu_per_req")}
           for p in phases}
    print(f"requests/s (median): before {med['before']['rps']:.0f}, counting "
          f"{med['counting']['rps']:.0f} ({ratio(med['counting']['rps'], med['before']['rps'])}), "
          f"after {med['after']['rps']:.0f} ({ratio(med['after']['rps'], med['before']['rps'])})")
    print(f"app CPU ms per request (median): before {med['before']['cpu_per_req']:.3f}, counting "
          f"{med['counting']['cpu_per_req']:.3f} "
          f"({ratio(med['counting']['cpu_per_req'], med['before']['cpu_per_req'])}), after "
          f"{med['after']['cpu_per_req']:.3f} "
          f"({ratio(med['after']['cpu_per_req'], med['before']['cpu_per_req'])})")
    print(f"heaplens attach --count took {attach_s:.2f} s (counting on when it returned)")
    p = subprocess.run([a.heaplens, "allocations", db, "--by", "site", "--top", "8"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--case", default="all", choices=["loop", "webapi", "all"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=50_000_000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    own = a.workdir is None
    a.workdir = a.workdir or tempfile.mkdtemp(prefix="heaplens-counted-bench-")
    try:
        if a.case in ("loop", "all"):
            case_loop(a)
        if a.case in ("webapi", "all"):
            case_webapi(a)
    finally:
        if own:
            shutil.rmtree(a.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
