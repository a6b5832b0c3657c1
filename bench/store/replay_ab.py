#!/usr/bin/env python3
"""Two builds of the writer on one captured stream, in alternating order (bench/README.md,
"Measuring the writer").

    bench/store/replay_ab.py --stream STREAM --a main=OLD/bin/bench_store --b new=build/bin/bench_store
                             [--rounds 8] [--with-read]

Each round runs `bench_store replay STREAM 1 ingest` once with each build, A first in odd rounds
and B first in even ones, so that whatever favours a run's place in a pair (the state the run
before it left) falls on both builds alike. Prints every run, then per build the median CPU of
ingest + finish (the tool's own figure: the process's CPU from its clock, the run's setup not
counted) with its range, the median of the rounds' B/A ratios, and per place in the pair (first,
second) the median of both builds together: a difference there is an order effect, which the
alternation cancels in the per-build figures. `--with-read` adds the first read of the finished
file (`replay STREAM 1`, its CPU counted too). The load average is printed before and after.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"ingest [0-9.]+ s \(cpu ([0-9.]+) s\), finish [0-9.]+ s \(cpu ([0-9.]+) s\)")
READ = re.compile(r"first read [0-9.]+ s \(cpu ([0-9.]+) s\)")


def named(text):
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"NAME=PATH expected, not '{text}'")
    return name, path


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def replay(bench, stream, with_read):
    args = [bench, "replay", stream, "1"] + ([] if with_read else ["ingest"])
    done = subprocess.run(args, capture_output=True, text=True)
    found = LINE.search(done.stdout)
    if done.returncode != 0 or not found:
        sys.exit(f"replay_ab: {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    cpu = float(found.group(1)) + float(found.group(2))
    read = READ.search(done.stdout)
    if with_read and read:
        cpu += float(read.group(1))
    return cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stream", required=True, help="a stream captured by bench/record/capture.py")
    p.add_argument("--a", required=True, type=named, help="NAME=PATH of a bench_store")
    p.add_argument("--b", required=True, type=named, help="NAME=PATH of another bench_store")
    p.add_argument("--rounds", type=int, default=8, help="pairs to run (default 8)")
    p.add_argument("--with-read", action="store_true", help="count the first read too")
    o = p.parse_args()
    if o.rounds < 2:
        sys.exit("replay_ab: --rounds must be at least 2 (one pair in each order)")
    for name, path in (o.a, o.b):
        if not os.access(path, os.X_OK):
            sys.exit(f"replay_ab: {name}: {path} is not an executable")
    if not os.path.isfile(o.stream):
        sys.exit(f"replay_ab: {o.stream}: no such file")
    builds = [o.a, o.b]
    if builds[0][0] == builds[1][0]:
        sys.exit("replay_ab: the two builds need different names")
    cpu = {name: [] for name, _ in builds}
    place = {1: [], 2: []}
    ratios = []
    print(f"load before: {load()}")
    for r in range(1, o.rounds + 1):
        order = builds if r % 2 == 1 else builds[::-1]
        got = {}
        for i, (name, path) in enumerate(order, 1):
            got[name] = replay(path, o.stream, o.with_read)
            cpu[name].append(got[name])
            place[i].append(got[name])
        print(f"round {r}: " + ", ".join(f"{name} {got[name]:.3f} s" for name, _ in order))
        ratios.append(got[builds[1][0]] / got[builds[0][0]])
    print(f"load after: {load()}")
    for name, _ in builds:
        v = cpu[name]
        print(f"{name}: median {statistics.median(v):.3f} s CPU [{min(v):.3f}-{max(v):.3f}], "
              f"{len(v)} runs")
    print(f"{builds[1][0]} / {builds[0][0]}: median of the rounds' ratios "
          f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")
    print(f"by place in the pair: first {statistics.median(place[1]):.3f} s, second "
          f"{statistics.median(place[2]):.3f} s (both builds)")


if __name__ == "__main__":
    main()
