#!/usr/bin/env python3
"""Runs a program under the collector with no writer: the stream goes to a socket that only
saves its bytes (or drops them).

    bench/record/capture.py --collector build/bin/libheaplens.so [--mode sampled|full]
                            [--stacks on|off] [--out STREAM] -- PROGRAM [ARGS...]

Two uses:
  - the in-process cost alone: what the program pays for the collector, its EventPipe session and
    discovery, without the writer's CPU competing for the same cores (bench/record/run.py
    --case stacks, config "sampled, no writer");
  - a real program's stream for `bench_store replay STREAM`, which times the writer on it alone.

The collector is set up as `heaplens record` sets it up (CORECLR_* and HEAPLENS_* variables, no
snapshots); the sink accepts one connection and reads until the collector closes it. Exits
with the program's status.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading

PROFILER_CLSID = "{A3E1B5C2-6D4F-4E8A-9B17-2C5D8E0F4A61}"


def sink(server, out_path, received):
    conn, _ = server.accept()
    with conn, open(out_path, "wb") as out:
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            received[0] += len(chunk)
            out.write(chunk)


def run(collector, program, mode="sampled", stacks="on", out_path=os.devnull, env=None,
        stdout=None):
    """Runs `program` with the collector; returns (exit status, bytes received, stdout text)."""
    with tempfile.TemporaryDirectory(prefix="heaplens-capture.") as d:
        path = os.path.join(d, "socket")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        received = [0]
        t = threading.Thread(target=sink, args=(server, out_path, received), daemon=True)
        t.start()
        e = dict(os.environ if env is None else env)
        e.update({"CORECLR_ENABLE_PROFILING": "1", "CORECLR_PROFILER": PROFILER_CLSID,
                  "CORECLR_PROFILER_PATH": os.path.abspath(collector), "HEAPLENS_SOCKET": path,
                  "HEAPLENS_MODE": mode, "HEAPLENS_SNAPSHOT": "none", "HEAPLENS_STACKS": stacks})
        e.pop("CORECLR_PROFILER_PATH_64", None)
        # HEAPLENS_PID names the process that records: the shell's pid is the program's after exec.
        p = subprocess.run(["sh", "-c", 'HEAPLENS_PID=$$ exec "$@"', "sh"] + list(program),
                           env=e, stdout=stdout, stderr=subprocess.STDOUT, text=True)
        t.join(timeout=30)  # the collector closes the socket at the program's exit
        server.close()
        if t.is_alive():
            sys.exit("capture.py: the collector never connected or never closed its stream")
        return p.returncode, received[0], p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--collector", required=True, help="path of libheaplens.so")
    ap.add_argument("--mode", default="sampled", choices=["sampled", "full"])
    ap.add_argument("--stacks", default="on", choices=["on", "off"])
    ap.add_argument("--out", default=os.devnull, help="where the stream's bytes go")
    ap.add_argument("program", nargs="+")
    a = ap.parse_args()
    if not os.path.exists(a.collector):
        sys.exit(f"capture.py: {a.collector} does not exist")
    rc, n, _ = run(a.collector, a.program, a.mode, a.stacks, a.out)
    print(f"capture.py: {n:,} bytes of stream" + ("" if a.out == os.devnull else f" in {a.out}"),
          file=sys.stderr)
    sys.exit(rc)


if __name__ == "__main__":
    main()
