#!/usr/bin/env python3
"""End-to-end test of snapshot triggers: examples/SnapshotTriggers causes each trigger on command.

    check_triggers.py --heaplens build/bin/heaplens --dotnet dotnet \
        --dll build/examples/SnapshotTriggers/SnapshotTriggers.dll --workdir /tmp/triggers

The program runs under `heaplens record --snapshot POLICY` and does what this script tells it on
stdin (hold memory, build a long list, a full or a gen0 GC), answering with its own GC count.
After each phase the script waits until the recording holds that GC (the collector decides a
trigger when it applies the GC, before the writer can store it), then makes one more gen0 GC and
waits for it too: a snapshot asked for at the phase is taken by then. Nothing waits on time but
every:Ns, whose snapshots are waited for. For each trigger:

  gen2-growth:50   +10% of gen2 at a full GC does not fire, +200% does, naming that GC and the
                   snapshot-less start ("since GC n"); with --snapshot-interval 3600 a second
                   growth right after does not fire;
  heap:48M         below does not fire, crossing fires once, staying above does not fire again,
                   falling below and crossing again fires again;
  limit:50         under DOTNET_GCHeapHardLimit=0x8000000 (128 MiB): 64 MiB fires, naming the
                   hard limit, below does not; with --max-snapshots 1 a second crossing does not;
  pause:20         every GC whose pause (as `heaplens gcs` stores it) is longer is named by one
                   snapshot taken at a later GC, and no other: the full GC of a 4M-object list
                   (tens of ms at least) fires; the small gen0 GCs only if the machine
                   stretched their pause past 20 ms;
  every:2s         two snapshots come while the program waits on stdin;
  control          all five at once with thresholds the same phases never reach: no snapshot;
  attach           heap:48M through `heaplens attach` on the program started without heaplens.

Each snapshot's trigger and reason are checked in the table, in `snapshots --json` and in
`snapshots` (text). Python 3 standard library only; prints every mismatch and a final line
"N passed, M failed"; exits 1 if anything failed.
"""
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, heaplens_json, program, remove_db, run  # noqa: E402

WAIT_S = 300  # the longest wait for a GC or a snapshot to be stored (a loaded machine)


def query(db, sql, args=()):
    """Rows of `sql` on a database that may still be being written; [] while it cannot be read."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


class Session:
    """`heaplens record` of the program, driven line by line."""

    def __init__(self, a, name, policy, log, env=None, attach=False):
        """`attach`: the program runs without heaplens and `heaplens attach PID POLICY` records
        it from its first snapshot on (waited for)."""
        self.a, self.log = a, log
        self.db = os.path.join(a.workdir, f"{name}.db")
        remove_db(self.db)
        self.err = open(os.path.join(a.workdir, f"{name}.stderr"), "w")
        self.attach = None
        if attach:
            env = {k: v for k, v in (env or os.environ).items()
                   if not k.startswith("CORECLR_")}
            self.p = subprocess.Popen(program(a.dotnet, a.dll), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
            self.p.stdin.write("pid\n")
            self.p.stdin.flush()
            pid = self.p.stdout.readline().split()[-1]
            cmd = [a.heaplens, "attach", pid, "-o", self.db] + policy
            print("$ " + shlex.join(cmd))
            self.attach = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err, text=True)
            self.wait("the attach's first snapshot", "SELECT count(*) FROM snapshots", 1)
            return
        cmd = [a.heaplens, "record", "-o", self.db] + policy + ["--"] + program(a.dotnet, a.dll)
        print("$ " + shlex.join(cmd))
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, env=env)

    def say(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline().strip()
        print(f"  > {line}: {answer}")
        if not answer.startswith("ok"):
            raise RuntimeError(f"the program answered {answer!r} to {line!r}")
        m = re.match(r"ok gc (\d+)", answer)
        return int(m.group(1)) if m else None

    def wait(self, what, sql, want):
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            rows = query(self.db, sql)
            if rows and rows[0][0] is not None and rows[0][0] >= want:
                return True
            time.sleep(0.05)  # polling the database for the condition, not a synchronisation
        print(f"  [gave up waiting for {what} after {WAIT_S} s]")
        return False

    def settle(self, gc):
        """Waits for GC `gc` stored, then one more gen0 GC stored: a snapshot asked for after
        `gc` is in the recording by then. Returns that last GC."""
        self.wait(f"GC {gc}", "SELECT max(gc) FROM gcs", gc)
        last = self.say("collect0")
        self.wait(f"GC {last}", "SELECT max(gc) FROM gcs", last)
        return last

    def snapshots(self):
        return query(self.db, "SELECT snapshot, gc, trigger, reason FROM snapshots ORDER BY snapshot")

    def end(self, checks, name):
        self.say("exit")
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout=WAIT_S)
            if self.attach:  # the session ends with the process
                self.attach.communicate(timeout=WAIT_S)
                rc = self.attach.returncode
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = None
        self.err.close()
        checks.eq(f"{name}: heaplens {'attach' if self.attach else 'record'} exit status", 0, rc)
        return self.snapshots()


def names_gc_between(checks, what, reason, after, by):
    """The reason names the GC that crossed the threshold: one after GC `after` (settled before
    the phase) and by GC `by` (the phase's own GC). Allocating the phase's memory may start GCs
    of its own, and the first of them that finds the heap past the threshold is the one named."""
    m = re.search(r"after GC (\d+),", reason or "")
    checks.ok(f"{what} names a GC after GC {after} and by GC {by}",
              m and after < int(m.group(1)) <= by, repr(reason))


def listed(checks, a, name, db, rows, log):
    """`snapshots --json` and text show each snapshot's trigger and reason."""
    doc = heaplens_json(checks, a.heaplens, ["snapshots", db], log)
    if doc is not None:
        got = [(s["snapshot"], s["gc"], s["trigger"], s.get("reason")) for s in doc["rows"]]
        checks.eq(f"{name}: snapshots --json trigger and reason", rows, got)
    rc, out, err = run([a.heaplens, "snapshots", db], log=log)
    checks.eq(f"{name}: snapshots exit status", 0, rc)
    for r in rows:
        if r[3]:
            checks.ok(f"{name}: snapshots (text) shows the reason of snapshot {r[0]}", r[3] in out,
                      out[:2000])


def gen2_growth(checks, a, log):
    name = "gen2-growth"
    s = Session(a, name, ["--snapshot", "gen2-growth:50", "--snapshot-interval", "3600"], log)
    s.say("hold 20")
    s.say("collect2")
    s.say("hold 2")
    before = s.say("collect2")
    s.settle(before)
    checks.eq(f"{name}: +10% since the first full GC takes no snapshot", [], s.snapshots())
    s.say("hold 40")
    big = s.say("collect2")  # the 40 MiB in gen2 by GC big (the runtime may collect gen2 sooner)
    s.settle(big)
    s.say("hold 60")
    s.settle(s.say("collect2"))  # grew again, within --snapshot-interval 3600
    rows = s.end(checks, name)
    checks.eq(f"{name}: one snapshot (the growth; the second within the interval takes none)",
              1, len(rows))
    g2 = dict(query(s.db, "SELECT gc, size_after FROM gc_generations WHERE generation = 2"))
    if rows:
        snap, gc, trig, reason = rows[0]
        checks.eq(f"{name}: trigger", "gen2-growth", trig)
        m = re.match(r"gen2 [0-9.]+ MiB after GC (\d+), \+(\d+)% since GC (\d+)$", reason or "")
        if checks.ok(f"{name}: reason says gen2, the GC, the growth and the first full GC", m,
                     repr(reason)):
            named, pct, base = int(m.group(1)), int(m.group(2)), int(m.group(3))
            checks.ok(f"{name}: the GC named is one of the growth's (after GC {before}, by GC {big})",
                      before < named <= big, f"GC {named}")
            checks.ok(f"{name}: taken after GC {named}", gc > named, f"at GC {gc}")
            first_full = query(s.db, "SELECT min(gc) FROM gcs WHERE generation = 2")[0][0]
            checks.eq(f"{name}: since the first full GC", first_full, base)
            # the rule against the stored sizes: the first full GC that grew 50% fired
            grown = [g for g in sorted(g2) if g > base and g in
                     dict(query(s.db, "SELECT gc, 1 FROM gcs WHERE generation = 2")) and
                     g2[g] * 100 >= g2[base] * 150]
            checks.ok(f"{name}: the GC named is the first full GC whose stored gen2 grew 50%",
                      grown and grown[0] == named, f"grown at {grown}, named {named}")
            checks.eq(f"{name}: the growth in the reason is the stored one",
                      round((g2.get(named, 0) - g2.get(base, 0)) * 100 / max(g2.get(base, 1), 1)),
                      pct)
    listed(checks, a, name, s.db, rows, log)


def heap(checks, a, log):
    name = "heap"
    s = Session(a, name, ["--snapshot", "heap:48M", "--snapshot-interval", "0"], log)
    s.say("hold 10")
    below = s.settle(s.say("collect"))
    checks.eq(f"{name}: below 48 MiB takes no snapshot", [], s.snapshots())
    s.say("hold 50")
    first = s.say("collect")
    s.settle(first)
    s.settle(s.say("collect"))  # still above: no second
    s.say("free")
    rearmed = s.settle(s.say("collect"))  # below: re-armed
    s.say("hold 60")
    second = s.say("collect")
    s.settle(second)
    rows = s.end(checks, name)
    checks.eq(f"{name}: triggers", ["heap", "heap"], [r[2] for r in rows])
    if len(rows) == 2:
        for r, after, gc in zip(rows, (below, rearmed), (first, second)):
            names_gc_between(checks, f"{name}: snapshot {r[0]}", r[3], after, gc)
            checks.ok(f"{name}: snapshot {r[0]} names the threshold",
                      r[3] and "at least 48.0 MiB" in r[3], repr(r[3]))
    listed(checks, a, name, s.db, rows, log)


def limit(checks, a, log):
    name = "limit"
    env = dict(os.environ, DOTNET_GCHeapHardLimit="0x8000000")
    s = Session(a, name, ["--snapshot", "limit:50", "--snapshot-interval", "0",
                          "--max-snapshots", "1"], log, env=env)
    s.say("hold 10")
    below = s.settle(s.say("collect"))
    checks.eq(f"{name}: 10 MiB of 128 MiB takes no snapshot", [], s.snapshots())
    s.say("hold 60")
    first = s.say("collect")
    s.settle(first)
    s.say("free")
    s.settle(s.say("collect"))
    s.say("hold 70")
    s.settle(s.say("collect"))  # crossed again: beyond --max-snapshots 1
    rows = s.end(checks, name)
    checks.eq(f"{name}: one snapshot (--max-snapshots 1)", ["limit"], [r[2] for r in rows])
    if rows:
        names_gc_between(checks, f"{name}: the reason", rows[0][3], below, first)
        checks.ok(f"{name}: reason names the hard limit",
                  rows[0][3] and "of 128.0 MiB (DOTNET_GCHeapHardLimit)" in rows[0][3],
                  repr(rows[0][3]))
    listed(checks, a, name, s.db, rows, log)


# Far below the full GC of a 4M-object list (100-250 ms here, at least tens of ms anywhere): the
# checks hold against the pauses the recording stored, whatever the machine's speed or load.
PAUSE_MS = 20


def pause(checks, a, log):
    name = "pause"
    s = Session(a, name, ["--snapshot", f"pause:{PAUSE_MS}", "--snapshot-interval", "0"], log)
    small = [s.say("collect0") for _ in range(3)]
    s.settle(small[-1])
    s.say(f"graph {a.graph}")
    s.settle(s.say("collect0"))  # a GC of the list's building that paused longer is settled
    long_gc = s.say("collect")
    s.settle(long_gc)
    rows = s.end(checks, name)
    pauses = dict(query(s.db, "SELECT gc, pause_ns FROM gcs"))
    snap_gcs = {r[1] for r in rows}
    print("  pauses (ms): " + ", ".join(f"GC {g} {p / 1e6:.1f}" for g, p in sorted(pauses.items())))
    named = []
    for r in rows:
        checks.eq(f"{name}: snapshot {r[0]} trigger", "pause", r[2])
        m = re.match(r"GC (\d+) paused ([0-9.]+) ms, longer than %d ms" % PAUSE_MS, r[3] or "")
        if checks.ok(f"{name}: snapshot {r[0]} reason", m, repr(r[3])):
            g = int(m.group(1))
            named.append(g)
            checks.ok(f"{name}: GC {g}'s stored pause is longer than {PAUSE_MS} ms",
                      pauses.get(g, 0) > PAUSE_MS * 1e6, f"{pauses.get(g, 0) / 1e6:.1f} ms")
            checks.ok(f"{name}: snapshot {r[0]} is a GC after GC {g}", r[1] > g)
    # every GC that paused longer and took no snapshot itself is named, but one at a time: a long
    # GC that comes while an earlier one's snapshot is still pending (named at GC n, taken at GC
    # t, n < g < t) fires nothing (a loaded machine stretches consecutive gen0 pauses)
    pending = [(int(m.group(1)), r[1]) for r in rows
               for m in [re.match(r"GC (\d+) paused", r[3] or "")] if m]
    longer = sorted(g for g, p in pauses.items() if p > PAUSE_MS * 1e6 and g not in snap_gcs
                    and not any(n < g < t for n, t in pending))
    checks.eq(f"{name}: the GCs that paused longer than {PAUSE_MS} ms are the ones named", longer,
              named)
    checks.ok(f"{name}: the full GC of {a.graph:,} objects (GC {long_gc}) paused longer than "
              f"{PAUSE_MS} ms and fired", long_gc in named or long_gc in snap_gcs,
              f"{pauses.get(long_gc, 0) / 1e6:.1f} ms")
    # a small gen0 GC fires only if the machine stretched its pause past the threshold
    checks.ok(f"{name}: the small gen0 GCs fired only past {PAUSE_MS} ms",
              all(pauses.get(g, 0) > PAUSE_MS * 1e6 for g in set(small) & set(named)))
    listed(checks, a, name, s.db, rows, log)


def attached(checks, a, log):
    """heap:48M through `heaplens attach`: the attach's own first and last snapshots
    ('requested'), and the trigger's between them, when the program crossed it."""
    name = "attach"
    s = Session(a, name, ["--snapshot", "heap:48M", "--snapshot-interval", "0"], log, attach=True)
    s.say("hold 10")
    below = s.settle(s.say("collect"))
    checks.eq(f"{name}: below 48 MiB, only the attach's snapshot", ["requested"],
              [r[2] for r in s.snapshots()])
    s.say("hold 50")
    crossed = s.say("collect")
    s.settle(crossed)
    rows = s.end(checks, name)
    triggers = [r[2] for r in rows]
    checks.ok(f"{name}: the attach's first snapshot, the trigger's, then the last at the end",
              triggers[:2] == ["requested", "heap"] and triggers[2:] in ([], ["requested"]),
              str(triggers))
    heap = [r for r in rows if r[2] == "heap"]
    if heap:
        names_gc_between(checks, f"{name}: the reason", heap[0][3], below, crossed)
    listed(checks, a, name, s.db, rows, log)


def every(checks, a, log):
    name = "every"
    s = Session(a, name, ["--snapshot", "every:2s"], log)
    s.wait("two snapshots", "SELECT count(*) FROM snapshots", 2)
    rows = s.end(checks, name)
    checks.ok(f"{name}: at least two snapshots while the program waited", len(rows) >= 2,
              str(rows))
    for r in rows:
        checks.eq(f"{name}: snapshot {r[0]} trigger", "time", r[2])
        checks.ok(f"{name}: snapshot {r[0]} reason", r[3] and r[3].startswith("every 2 s: "),
                  repr(r[3]))
    listed(checks, a, name, s.db, rows, log)


def control(checks, a, log):
    name = "control"
    env = dict(os.environ, DOTNET_GCHeapHardLimit="0x8000000")
    s = Session(a, name, ["--snapshot", "gen2-growth:500", "--snapshot", "heap:4G",
                          "--snapshot", "limit:90", "--snapshot", "pause:60000",
                          "--snapshot", "every:3600s", "--snapshot-interval", "0"], log, env=env)
    s.say("hold 20")
    s.say("collect")
    s.say("hold 40")
    s.settle(s.say("collect"))
    s.say("free")
    s.settle(s.say("collect"))
    rows = s.end(checks, name)
    checks.eq(f"{name}: no trigger met, no snapshot", [], rows)


def main():
    ap = arguments(__doc__.split("\n")[0])
    ap.add_argument("--graph", type=int, default=4000000, help="objects of the long-pause list")
    ap.add_argument("--only", help="one scenario: gen2-growth, heap, limit, pause, every, control, "
                                   "attach")
    a, checks, log = begin(ap)
    scenarios = {"gen2-growth": gen2_growth, "heap": heap, "limit": limit, "pause": pause,
                 "every": every, "control": control, "attach": attached}
    for key, fn in scenarios.items():
        if a.only and key != a.only:
            continue
        print(f"== {key}")
        try:
            fn(checks, a, log)
        except (RuntimeError, BrokenPipeError, OSError) as e:
            checks.ok(f"{key}: the program ran its phases", False, str(e))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
