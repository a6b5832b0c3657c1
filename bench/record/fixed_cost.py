#!/usr/bin/env python3
"""The fixed cost per run of `heaplens record`: a program that does almost nothing, recorded by
one or more builds, interleaved (bench/README.md, "Sampled mode's base cost").

    bench/record/fixed_cost.py --dll HELLO.dll --hl new=build/bin/heaplens --hl main=OLD/heaplens
                               [--runs 21] [--configs plain,true,empty,sampled]

HELLO.dll: a hello-world built with the SDK (`dotnet new console`, `dotnet build -c Release`).
Configurations: plain (`dotnet HELLO.dll`), true (`heaplens record -q -- /bin/true`: the
recorder and the writer alone), empty (the empty profiler with sampled mode's session,
HEAPLENS_EMPTY_SAMPLES=1), sampled (`heaplens record -q --snapshot none --mode sampled`);
each recorded one by every build. CPU is user + system of the whole command from wait4 (as
run.py's `timed`); medians and quartiles.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

EMPTY_SAMPLED = {"HEAPLENS_EMPTY": "1", "HEAPLENS_RANGES": "off", "HEAPLENS_EMPTY_SAMPLES": "1"}


def command(config, heaplens, dll, out):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(out + suffix):
            os.unlink(out + suffix)
    env = dict(os.environ)
    record = [heaplens, "record", "-q", "--snapshot", "none", "--mode", "sampled", "-o", out, "--"]
    if config == "plain":
        return ["dotnet", dll], env
    if config == "true":
        return record + ["/bin/true"], env
    if config == "empty":
        env.update(EMPTY_SAMPLED)
    return record + ["dotnet", dll], env


def timed(cmd, env):
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"fixed_cost: {' '.join(cmd)} failed: {err.decode(errors='replace')[-500:]}")
    return (ru.ru_utime + ru.ru_stime) * 1000, (time.monotonic() - start) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dll", required=True, help="a hello-world's dll")
    ap.add_argument("--hl", action="append", required=True, help="NAME=PATH of a heaplens build")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--configs", default="plain,true,empty,sampled")
    a = ap.parse_args()
    builds = [x.split("=", 1) for x in a.hl]
    rows = []
    for config in a.configs.split(","):
        if config not in ("plain", "true", "empty", "sampled"):
            sys.exit(f"fixed_cost: unknown configuration {config}")
        rows += [(config, None, None)] if config == "plain" else \
            [(f"{config}@{name}", config, path) for name, path in builds]
    out = os.path.join(tempfile.mkdtemp(prefix="heaplens-fixed-"), "run.db")
    results = {label: [] for label, _, _ in rows}
    loads = [os.getloadavg()[0]]
    for i in range(a.runs):  # interleaved, the order reversed every other round
        for label, config, path in (rows if i % 2 == 0 else rows[::-1]):
            results[label].append(timed(*command(config or "plain", path, a.dll, out)))
        loads.append(os.getloadavg()[0])
    print(f"{a.runs} interleaved runs each, load average {min(loads):.1f}-{max(loads):.1f}")
    for label, _, _ in rows:
        cpu = [r[0] for r in results[label]]
        q = statistics.quantiles(cpu, n=4)
        wall = statistics.median(r[1] for r in results[label])
        print(f"{label:18s} CPU {statistics.median(cpu):6.1f} ms [{q[0]:.1f}-{q[2]:.1f}]  "
              f"wall {wall:6.1f} ms")


if __name__ == "__main__":
    main()
