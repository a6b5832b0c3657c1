#!/usr/bin/env python3
"""Reading benchmark (issue 22): each command's first and second run on real recordings.

    bench/read/run.py --heaplens build/bin/heaplens [--case CASE|all] [--files N]
                      [--large-files N] [--rounds N] [--objects N] [--snapshots N]
                      [--recordings DIR] [--workdir DIR] [--keep]

Cases (recorded or written once into the work directory; --recordings DIR reuses the CASE.db
files found there, so that two builds are timed on the same files):
  csc      the SDK's C# compiler compiling --files generated sources (bench/record's csc case),
           recorded in full mode (no snapshot: it calls no GC.Collect).
  csc-snapshots
           the same with a heap snapshot at every gen2 GC (`--snapshot gen2`): retention,
           leaks, inspect and report on a real program's heap.
  csc-large, csc-large-sampled
           the same compiling --large-files sources (default 400: about 90M allocations), in
           full mode and in sampled mode (`record --mode sampled`: the census and followed
           samples; what a user records a large program with).
  midlife  examples/MidLife --rounds N (4 threads; default 400,000 rounds: 20.8M allocations,
           about 6M objects surviving a GC, 4 snapshots of its cache), full mode.
  midlife-sampled
           the same in sampled mode with a snapshot at every gen2 GC (`--snapshot gen2`, as
           e2e_midlife_sampled records it): survivors between snapshots are estimates.
  heap     bench_retention_db (bench/dominators): --snapshots snapshots of a synthetic heap of
           --objects objects (default 5M, 3), for retention and leaks at that scale.
  all      csc, midlife, midlife-sampled, heap (the large csc cases take minutes to record:
           name them).

On a fresh copy of each recording, in this order, each command twice: info (the first command:
it pays for the first read), gcs, allocations, survivors, stacks, snapshots, retention, leaks,
inspect, report --json; then report --json alone on another fresh copy (nothing computed before it).
Printed per command and run: wall and CPU (user + system) seconds, peak RSS, and the file's
size after it (its size before the first command on the first line). Not a test: the figures
depend on the machine; on a shared one compare CPU times, and say the load average.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench", "record"))
import run as record  # noqa: E402  (bench/record/run.py: building examples, csc, remove_db)

COMMANDS = [
    ["info"], ["gcs"], ["allocations"], ["survivors"], ["stacks"], ["snapshots"],
    ["retention"], ["leaks"], ["inspect"], ["report", "--json", "-o", "/dev/null"],
]


def die(msg):
    print(f"run.py: {msg}", file=sys.stderr)
    sys.exit(1)


def timed(cmd):
    """(exit status, wall s, cpu s, peak RSS MiB, stderr's last line) of cmd."""
    fd, tfile = tempfile.mkstemp(prefix="heaplens-time.")
    os.close(fd)
    start = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-o", tfile, "-f", "%M %U %S"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    fields = open(tfile).read().split()[-3:]
    os.remove(tfile)
    rss, cpu = int(fields[0]) / 1024, float(fields[1]) + float(fields[2])
    err = p.stderr.strip().splitlines()
    return p.returncode, wall, cpu, rss, err[-1] if err else ""


def mib(path):
    return os.path.getsize(path) / (1 << 20)


def record_db(a, name, program, options=()):
    db = os.path.join(a.recordings, name + ".db")
    if os.path.exists(db):
        return db
    print(f"recording {name} ...", flush=True)
    record.remove_db(db)
    p = subprocess.run([a.heaplens, "record", "-o", db] + list(options) + ["--"] + program,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 or not os.path.exists(db):
        die(f"recording {name} failed: {p.stderr.strip()}")
    print("  " + p.stderr.strip().splitlines()[-1], flush=True)
    return db


def heap_db(a):
    db = os.path.join(a.recordings, "heap.db")
    if os.path.exists(db):
        return db
    exe = os.path.join(os.path.dirname(a.heaplens), "bench_retention_db")
    if not os.access(exe, os.X_OK):
        die(f"{exe} missing: build first")
    print(f"writing heap.db: {a.snapshots} snapshots of {a.objects:,} objects ...", flush=True)
    p = subprocess.run([exe, db, str(a.objects), "1", str(a.snapshots)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        die("bench_retention_db failed: " + p.stdout)
    return db


def bench(a, name, pristine):
    work = os.path.join(a.workdir, name + ".work.db")
    shutil.copyfile(pristine, work)
    print(f"\n== {name}: {os.path.basename(pristine)}, {mib(work):.1f} MiB before the first command "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"{'command':<12} {'run':>3} {'wall s':>7} {'cpu s':>7} {'RSS MiB':>8} {'file MiB':>9}"
          f"  note")
    for cmd in COMMANDS:
        for run in (1, 2):
            rc, wall, cpu, rss, err = timed([a.heaplens] + cmd[:1] + [work] + cmd[1:])
            note = "" if rc == 0 else f"exit {rc}: {err[:70]}"
            print(f"{cmd[0]:<12} {run:>3} {wall:7.2f} {cpu:7.2f} {rss:8.0f} {mib(work):9.1f}"
                  f"  {note}", flush=True)
    os.remove(work)
    shutil.copyfile(pristine, work)
    rc, wall, cpu, rss, err = timed([a.heaplens, "report", work, "--json", "-o", "/dev/null"])
    note = "" if rc == 0 else f"exit {rc}: {err[:70]}"
    print(f"{'report alone':<12} {1:>3} {wall:7.2f} {cpu:7.2f} {rss:8.0f} {mib(work):9.1f}"
          f"  {note} (a fresh copy: the first read, retention and leaks in it)", flush=True)
    os.remove(work)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--case", action="append",
                    choices=["csc", "csc-snapshots", "csc-large", "csc-large-sampled", "midlife",
                             "midlife-sampled", "heap", "all"], help="repeatable")
    ap.add_argument("--files", type=int, default=50, help="csc: generated sources")
    ap.add_argument("--large-files", type=int, default=400, help="csc-large: generated sources")
    ap.add_argument("--rounds", type=int, default=400_000, help="midlife: rounds per thread")
    ap.add_argument("--objects", type=int, default=5_000_000, help="heap: objects")
    ap.add_argument("--snapshots", type=int, default=3, help="heap: snapshots")
    ap.add_argument("--recordings", help="where the recordings are (made there if missing)")
    ap.add_argument("--workdir", help="where programs and copies go (kept; default: a "
                    "temporary directory, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    if not os.access(a.heaplens, os.X_OK):
        die(f"{a.heaplens} is not executable")
    if not os.path.exists("/usr/bin/time"):
        die("needs /usr/bin/time (Debian package 'time')")
    own = a.workdir is None  # a directory the user named is theirs: never removed
    if own:
        a.workdir = tempfile.mkdtemp(prefix="heaplens-bench-read.")
    os.makedirs(a.workdir, exist_ok=True)
    a.recordings = os.path.abspath(a.recordings or a.workdir)
    os.makedirs(a.recordings, exist_ok=True)

    named = [c for c in (a.case or []) if c != "all"]
    cases = named or ["csc", "midlife", "midlife-sampled", "heap"]
    sampled = ["--mode", "sampled"]
    dbs = {}
    for case in cases:
        if case == "csc":
            dbs[case] = record_db(a, case, record.csc_command(a.workdir, a.files))
        elif case == "csc-snapshots":
            dbs[case] = record_db(a, case, record.csc_command(a.workdir, a.files),
                                  ["--snapshot", "gen2"])
        elif case.startswith("csc-large"):
            large = os.path.join(a.workdir, "large")
            os.makedirs(large, exist_ok=True)
            dbs[case] = record_db(a, case, record.csc_command(large, a.large_files),
                                  sampled if case.endswith("sampled") else [])
        elif case.startswith("midlife"):
            dbs[case] = record_db(a, case, ["dotnet", record.build_example("MidLife", a.workdir),
                                            "--rounds", str(a.rounds)],
                                  sampled + ["--snapshot", "gen2"] if case.endswith("sampled")
                                  else [])
        else:
            dbs[case] = heap_db(a)
    for case in cases:
        bench(a, case, dbs[case])
    if a.keep or not own:
        print(f"\nrecordings kept in {a.recordings}")
    else:
        shutil.rmtree(a.workdir, ignore_errors=True)
        if a.recordings != os.path.abspath(a.workdir):
            print(f"\nrecordings kept in {a.recordings}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
