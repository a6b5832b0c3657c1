#!/usr/bin/env python3
"""The collector's memory on a small program: its outbox is 16 MiB unless told otherwise.

Every byte the collector sends passes through its outbox, and on a program whose objects live a
little (MidLife) the writer lags the collector's bursts at each GC's end, so the outbox fills to
its size and each of its pages is faulted in once a run: 64 MiB took MidLife's collector 13k
page faults, ~40 ms of system time and 43 MiB of RSS more than 16 MiB (bench/README.md, "The
collector's system time per survivor"). A small program records MidLife (a few thousand rounds)
in full mode with HEAPLENS_STATS=1, twice:

1. default settings: the collector's counted heap at its peak (`collector_heap_peak_bytes`:
   the outbox's mapping counts whole, touched or not) stays under --bound MiB (40: the outbox's
   16 and the model's few; 64 MiB of outbox alone would not fit);
2. HEAPLENS_BUFFER_MB=64: the peak takes the 64 MiB (the setting still sizes the outbox).

Both recordings are complete and lose nothing."""
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402


def heap_peak(checks, a, name, log, extra_env):
    db = os.path.join(a.workdir, f"{name}.db")
    e2elib.remove_db(db)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPLENS_")}
    env.update({"HEAPLENS_STATS": "1"}, **extra_env)
    rc, _, err = e2elib.run([a.heaplens, "record", "-q", "--mode", "full", "--snapshot", "none",
                             "-o", db, "--"] + e2elib.program(a.dotnet, a.dll) +
                            ["--rounds", str(a.rounds), "--checkpoints", "1"], log=log, env=env)
    checks.eq(f"{name}: heaplens record exits 0", 0, rc)
    m = re.search(r"\bcollector_heap_peak_bytes=(\d+)", err)
    checks.ok(f"{name}: the collector says its heap's peak (collector_heap_peak_bytes=)",
              m is not None, err[-600:])
    if os.path.exists(db):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        status, loss = con.execute("SELECT status, loss FROM run").fetchone()
        con.close()
        checks.eq(f"{name}: the recording is complete", "complete", status)
        checks.ok(f"{name}: nothing lost", not loss, repr(loss))
    else:
        checks.ok(f"{name}: heaplens wrote its recording", False, db)
    peak = int(m.group(1)) if m else None
    print(f"{name}: collector_heap_peak_bytes={peak}")
    return peak


def main():
    ap = e2elib.arguments(__doc__.splitlines()[0], dll_help="MidLife.dll")
    ap.add_argument("--rounds", type=int, default=1000, help="MidLife's rounds per thread")
    ap.add_argument("--bound", type=int, default=40,
                    help="MiB the collector's heap may reach on this small run by default")
    a, checks, log = e2elib.begin(ap)
    peak = heap_peak(checks, a, "default", log, {})
    checks.ok(f"default: the collector's heap stays under {a.bound} MiB (a 16 MiB outbox)",
              peak is not None and peak < a.bound << 20,
              f"{(peak or 0) / 2**20:.1f} MiB")
    peak64 = heap_peak(checks, a, "buffer64", log, {"HEAPLENS_BUFFER_MB": "64"})
    checks.ok("HEAPLENS_BUFFER_MB=64: the collector's heap holds the 64 MiB outbox",
              peak64 is not None and peak64 >= 64 << 20, f"{(peak64 or 0) / 2**20:.1f} MiB")
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
