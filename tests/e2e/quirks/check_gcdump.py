#!/usr/bin/env python3
"""End-to-end: another diagnostic tool's heap dump (dotnet-gcdump's EventPipe session) under
`heaplens record --snapshot none`.

    check_gcdump.py --heaplens build/bin/heaplens --dll build/examples/RuntimeQuirks/RuntimeQuirks.dll \
        --workdir /tmp/g [--nodes 100000]

The dump GC is an induced gen2 GC whose heap walk the runtime shares between the profiler
(ObjectReferences) and EventPipe (GCBulkNode/GCBulkEdge events). heaplens must not cut that walk
even when it takes no snapshot. The script runs `RuntimeQuirks gcdump-target` (N live objects,
waits on stdin) twice — alone, then under heaplens with --snapshot none — and each time runs
`RuntimeQuirks gcdump-client PID` (a diagnostics-IPC client with gcdump's provider and keywords)
against it. Checks: the dump stream alone is above a floor (16 bytes per live object: a GCBulkNode
entry is 32); under heaplens it is at least 90% and at most 110% of the one without; heaplens'
recording is complete (status, no drops), has the dump's GC (induced, gen2), no snapshot, and
the N objects as allocations and as survivors of that GC. Python 3 standard library only.
"""
import os
import shlex
import socket
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import (DROP_COUNTERS, arguments, begin, program, remove_db, remove_stale,  # noqa: E402
                    run)


def dump_once(a, prefix, out_path, log):
    """Starts the target (under `prefix`), dumps its heap with the client; returns the dump's
    size in bytes (None if a step failed) and the target's exit status."""
    remove_stale(out_path)
    truth = out_path + ".json"
    cmd = prefix + program(a.dotnet, a.dll) + ["gcdump-target", truth, str(a.nodes)]
    print("$ " + shlex.join(cmd))
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    size = None
    try:
        line = p.stdout.readline()
        print(line.rstrip())
        if line.startswith("ready "):
            pid = line.split()[1]
            # A socket left by an earlier process of the same PID (PIDs are reused; a killed
            # runtime leaves its socket): the client must find the live one.
            stale = os.path.join(tempfile.gettempdir(), f"dotnet-diagnostic-{pid}-1-socket")
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                remove_stale(stale)
                s.bind(stale)
            try:
                rc, out, err = run(program(a.dotnet, a.dll) + ["gcdump-client", pid, out_path],
                                   log=log, timeout=120)
            finally:
                remove_stale(stale)
            sys.stdout.write(out)
            sys.stderr.write(err)
            if rc == 0 and os.path.exists(out_path):
                size = os.path.getsize(out_path)
        p.stdin.write("\n")
        p.stdin.flush()
        rest, _ = p.communicate(timeout=120)
        sys.stdout.write(rest)
    except (subprocess.TimeoutExpired, BrokenPipeError):
        p.kill()
        p.wait()
    return size, p.returncode


def main():
    ap = arguments()
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--snapshot", default="none", help="heaplens record --snapshot policy")
    a, checks, log = begin(ap)
    alone, rc = dump_once(a, [], os.path.join(a.workdir, "alone.nettrace"), log)
    checks.eq("target alone exits 0", 0, rc)
    floor = 16 * a.nodes
    checks.ok(f"heap dump without heaplens above {floor} bytes", alone is not None and
              alone >= floor, str(alone))
    db = os.path.join(a.workdir, "gcdump.db")
    remove_db(db)
    under, rc = dump_once(a, [a.heaplens, "record", "--snapshot", a.snapshot, "-o", db, "--"],
                          os.path.join(a.workdir, "under.nettrace"), log)
    checks.eq("heaplens record exits 0", 0, rc)
    print(f"dump bytes: alone {alone}, under heaplens --snapshot {a.snapshot} {under}")
    if alone and under is not None:
        checks.ok("heap dump under heaplens as complete as without (90%..110%)",
                  0.9 * alone <= under <= 1.1 * alone, f"{under} vs {alone}")
    if not os.path.exists(db):
        checks.ok("heaplens wrote its recording", False)
        return checks.summary()
    con = sqlite3.connect(db)
    status = con.execute("SELECT status FROM run").fetchone()
    checks.eq("recording complete", ("complete",), status)
    counters = dict(con.execute("SELECT name, value FROM counters"))
    for name in DROP_COUNTERS + ["writer_anomalies"]:
        if name in counters:
            checks.eq(name, 0, counters[name])
    induced = con.execute("SELECT gc FROM gcs WHERE induced = 1 AND generation = 2"
                          " ORDER BY gc").fetchall()
    checks.ok("the dump's GC is recorded (induced, gen2)", len(induced) >= 1, str(induced))
    if a.snapshot == "none" or (a.snapshot.startswith("every:") and len(induced) == 1 and
                                induced[0][0] % int(a.snapshot[6:]) != 0):
        checks.eq("no snapshot taken", 0, con.execute("SELECT count(*) FROM snapshots").fetchone()[0])
    node = "HeapLens.Examples.Quirks.Program+Node"
    allocated = con.execute("SELECT coalesce(sum(count), 0) FROM allocations_by_type WHERE type = ?",
                            (node,)).fetchone()[0]
    checks.eq("Node allocations counted", a.nodes, allocated)
    if induced:
        gc = induced[-1][0]
        alive = con.execute("SELECT count(*) FROM live_objects WHERE gc = ? AND type = ?",
                            (gc, node)).fetchone()[0]
        checks.eq(f"Nodes alive after GC {gc}", a.nodes, alive)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
