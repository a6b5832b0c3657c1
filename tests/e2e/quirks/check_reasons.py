#!/usr/bin/env python3
"""End-to-end GC reasons: record `RuntimeQuirks reasons` and compare each GC's reason with what
the program caused (examples/README.md, RuntimeQuirks).

    check_reasons.py --heaplens build/bin/heaplens --dll build/examples/RuntimeQuirks/RuntimeQuirks.dll \
        --workdir /tmp/r [--mode full|sampled]

The program reads GC.CollectionCount(0) before and after a GC.Collect(), a loop of small objects
that runs until a GC comes, and a loop of 1 MiB arrays (nothing small) that runs until a GC
comes. Checks: the GCs after each are in the recording with the runtime's own reason, as
`heaplens gcs --json` and `heaplens report --json` show it — Induced (induced true), AllocSmall,
AllocLarge (induced false) —; no GC's reason is unknown. Python 3 standard library only.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2elib import arguments, begin, heaplens_json, record_facts  # noqa: E402

WANT = {"induced": ("Induced", True), "alloc_small": ("AllocSmall", False),
        "alloc_large": ("AllocLarge", False)}


def main():
    ap = arguments(timeout=300)
    ap.add_argument("--mode", default="full")
    a, checks, log = begin(ap)
    db_path = os.path.join(a.workdir, "reasons.db")
    truth_path = os.path.join(a.workdir, "reasons.json")
    t = record_facts(checks, a, db_path, truth_path, [], log, record_options=["--mode", a.mode],
                     args_before_truth=["reasons"])
    if t is None:
        return checks.summary()
    for source, args in (("gcs", ["gcs", db_path]), ("report", ["report", db_path])):
        doc = heaplens_json(checks, a.heaplens, args, log)
        if doc is None:
            continue
        rows = doc["rows"] if source == "gcs" else doc["gcs"]
        gcs = {r["gc"]: r for r in rows}
        unknown = sorted(g for g, r in gcs.items() if r["reason"] == "unknown")
        checks.eq(f"{source}: GCs whose reason is unknown", [], unknown)
        for key, (reason, induced) in WANT.items():
            before, after = t[key]
            caused = list(range(before + 1, after + 1))
            checks.ok(f"{source}: {key} caused a GC", caused, f"counts {before} -> {after}")
            for g in caused:
                r = gcs.get(g)
                if not checks.ok(f"{source}: GC {g} ({key}) recorded", r is not None,
                                 f"{len(gcs)} GCs"):
                    continue
                checks.eq(f"{source}: GC {g} ({key}) reason", reason, r["reason"])
                checks.eq(f"{source}: GC {g} ({key}) induced", induced, bool(r["induced"]))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
