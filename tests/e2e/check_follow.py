#!/usr/bin/env python3
"""Sampled mode follows its objects by weak handles (collector/follow.h): the differential check.

Records the program twice in sampled mode with HEAPLENS_STATS=1:

1. HEAPLENS_FOLLOW_CHECK=1: every GC takes the runtime's survivor ranges too, and the collector
   compares each followed object's fate by its handle (GetObjectIDFromHandle at
   GarbageCollectionFinished: its new address, or 0 when it died) with the ranges' (covered:
   the range's new address; not covered: dead in a condemned generation, in place in another).
   Every answer must agree, there must be answers, and dead handles must be destroyed.
2. Default: the GCs that condemn no object a snapshot named go without ranges (handle_gcs > 0
   when --expect-handle-gcs), every snapshot's self-check is 0 missing / 0 extra, and `gcs
   --json` gives those GCs' moved bytes as unknown (null) and their survived bytes (the
   runtime's promoted bytes) as known.

Exit 0 when every check holds, 1 with one line per failure.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys


def run(cmd, env=None, timeout=600):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def follow_stats(stderr):
    m = re.search(r"^heaplens: follow: (.*)$", stderr, re.M)
    if not m:
        return None
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", m.group(1))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--dotnet", help="dotnet host (omit for a self-contained program)")
    ap.add_argument("--dll", required=True, help="the program (a .dll with --dotnet)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--program-args", default="")
    ap.add_argument("--stacks", default="on", choices=["on", "off"])
    ap.add_argument("--expect-handle-gcs", action="store_true",
                    help="some GC must have been followed by the handles alone")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    program = ([a.dotnet] if a.dotnet else []) + [a.dll] + shlex.split(a.program_args)
    failures = []

    for name, extra in (("check", {"HEAPLENS_FOLLOW_CHECK": "1"}), ("default", {})):
        db = os.path.join(a.workdir, f"follow-{name}.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPLENS_")}
        env.update({"HEAPLENS_STATS": "1"}, **extra)
        rc, out, err = run([a.heaplens, "record", "-q", "-o", db, "--mode", "sampled",
                            "--stacks", a.stacks, "--"] + program, env=env)
        with open(os.path.join(a.workdir, f"follow-{name}.log"), "w") as f:
            f.write(out + err)
        if rc != 0:
            failures.append(f"{name}: heaplens record exited with {rc}: {err.strip()[-300:]}")
            continue
        s = follow_stats(err)
        if s is None:
            failures.append(f"{name}: no 'heaplens: follow:' line: handles were not used")
            continue
        print(f"{name}: " + " ".join(f"{k}={v:g}" for k, v in s.items()))
        if s["fallback"] or s["create_failures"]:
            failures.append(f"{name}: handles fell back to ranges ({s['create_failures']:g} failures)")
        if s["handles"] == 0:
            failures.append(f"{name}: no object was followed by a handle")
        if s["destroyed"] != s["died"]:
            failures.append(f"{name}: {s['died']:g} handles died, {s['destroyed']:g} destroyed")
        if name == "check":
            if s["check_disagree"] != 0:
                failures.append(f"check: {s['check_disagree']:g} handles disagree with the "
                                f"ranges ({s['check_agree']:g} agree)")
            if s["check_agree"] == 0:
                failures.append("check: no handle was compared with the ranges")
            if s["died"] == 0:
                failures.append("check: no followed object died: the check saw no death")
            if s["check_compacting_disagree"] != 0:
                failures.append(f"check: the runtime's compaction bit disagreed with the ranges "
                                f"at {s['check_compacting_disagree']:g} GCs")
            ranges, promoted = s["check_survived_bytes"], s["check_promoted_bytes"]
            if ranges and abs(promoted - ranges) > ranges * 0.01:
                failures.append(f"check: promoted bytes {promoted:g} vs the ranges' {ranges:g}")
            continue
        if a.expect_handle_gcs and s["handle_gcs"] == 0:
            failures.append("default: every GC took the runtime's ranges")
        rc, out, err = run([a.heaplens, "snapshots", db, "--json"])
        if rc != 0:
            failures.append(f"default: heaplens snapshots: {err.strip()}")
        else:
            snaps = json.loads(out).get("rows", [])
            if not snaps:
                failures.append("default: no snapshot")
            for sn in snaps:
                if sn.get("model_missing") != 0 or sn.get("model_extra") != 0:
                    failures.append(f"default: snapshot {sn.get('snapshot')}: missing "
                                    f"{sn.get('model_missing')}, extra {sn.get('model_extra')}")
        rc, out, err = run([a.heaplens, "gcs", db, "--json"])
        if rc != 0:
            failures.append(f"default: heaplens gcs: {err.strip()}")
        else:
            gcs = json.loads(out).get("rows", [])
            unknown = [g["gc"] for g in gcs if g.get("moved_bytes") is None]
            survived = [g["gc"] for g in gcs if g.get("survived_bytes") is None]
            print(f"default: {len(gcs)} GCs, moved bytes unknown at {len(unknown)}, survived "
                  f"bytes unknown at {len(survived)}")
            if len(unknown) != s["handle_gcs"]:
                failures.append(f"default: {s['handle_gcs']:g} GCs without ranges, but "
                                f"{len(unknown)} with moved bytes unknown")
            if survived:
                failures.append(f"default: GCs {survived} without survived bytes (GCHeapStats "
                                f"should give them)")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
