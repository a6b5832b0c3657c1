#!/usr/bin/env python3
"""closed_stdout_test.py -- the commands that write a file (report -o, stacks --speedscope,
export --gcdump, import -o) say what they wrote on stderr, so that stdout holds only what was
asked for there: with stdout closed (`>&-`) they succeed without --json, the file whole; with
--json (the document asked for is lost) they exit 1 in one line that says the file is complete.
Before, export and import printed their line on stdout and exited 1 "Bad file descriptor" with a
complete file, and `export --gcdump -` put that line after the .gcdump's bytes.

Usage: closed_stdout_test.py --heaplens PATH --fixture TEST_LEAKS --workdir DIR"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import leak_fixture  # noqa: E402
from leak_fixture import expect  # noqa: E402


def main():
    a = leak_fixture.setup()
    hl = a.heaplens
    w = a.workdir

    def run(args, closed=False):
        """heaplens ARGS in the work directory; stdout captured, or closed with `closed`."""
        p = subprocess.run([hl] + args, cwd=w, stdin=subprocess.DEVNULL,
                           stdout=None if closed else subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=(lambda: os.close(1)) if closed else None, timeout=300)
        return (p.returncode, (p.stdout or b"").decode(errors="replace"),
                p.stderr.decode(errors="replace"))

    def content(name):
        with open(os.path.join(w, name), "rb") as f:
            return f.read()

    def remove(name):
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(os.path.join(w, name + suffix)):
                os.remove(os.path.join(w, name + suffix))

    # import's line says how long it took: not compared
    def stable(text):
        return re.sub(r"in [0-9.]+ s$", "in S s", text, flags=re.M)

    export = ["export", "graph.db", "--gcdump"]
    imp = ["import", "ref.gcdump", "-o"]
    cases = [
        # (command before OUT, OUT, its line on stderr, the document on stdout with --json)
        (["report", "graph.db", "-o"], "out.html", r"heaplens: report of 4 GCs -> out\.html \(.*\)", False),
        (["stacks", "graph.db", "--speedscope"], "out.speedscope.json",
         r"heaplens: \d+ allocation sites \(.*\) -> out\.speedscope\.json", False),
        (export, "out.gcdump", r"heaplens: snapshot 4 \(GC 4\): 37 objects \(.*\) -> out\.gcdump", True),
        (imp, "out.db", r"heaplens: imported 37 objects \(.*\) of .* from ref\.gcdump -> out\.db \(snapshot 1\) in [0-9.]+ s", True),
    ]
    rc, out, err = run(export + ["ref.gcdump"])
    expect("export (the reference)", rc == 0 and out == "", f"{rc} {out!r} {err!r}")
    for head, name, line, json_doc in cases:
        what = " ".join(head[:1] + head[2:])
        # stdout open: nothing there, the line on stderr
        remove(name)
        rc, out, err = run(head + [name])
        expect(f"{what}: stdout empty, one line on stderr",
               rc == 0 and out == "" and re.fullmatch(line + "\n", err), f"{rc} {out!r} {err!r}")
        ref_err = err
        if head[0] == "import":  # a database: compared by what heaplens reads of it
            _, ref, _ = run(["snapshots", name, "--json"])
        else:
            ref = content(name)
        # stdout closed: the same, exit 0
        remove(name)
        rc, out, err = run(head + [name], closed=True)
        expect(f"{what} >&-: exit 0, the same line", rc == 0 and stable(err) == stable(ref_err),
               f"{rc} {err!r}")
        got = run(["snapshots", name, "--json"])[1] if head[0] == "import" else content(name)
        expect(f"{what} >&-: the file whole", got == ref)
        # --json with stdout closed: the document asked for is lost
        remove(name)
        rc, out, err = run(head + [name, "--json"], closed=True)
        if json_doc:
            expect(f"{what} --json >&-: exit 1, one line",
                   rc == 1 and err == f"heaplens: {name} is complete, but writing the output "
                   "failed: Bad file descriptor\n", f"{rc} {err!r}")
            got = run(["snapshots", name, "--json"])[1] if head[0] == "import" else content(name)
            expect(f"{what} --json >&-: the file whole all the same", got == ref)
        else:  # report's JSON goes to its file; stacks --speedscope prints none
            expect(f"{what} --json >&-: exit 0", rc == 0 and err.startswith("heaplens: ") and
                   len(err.splitlines()) == 1, f"{rc} {err!r}")
    # export --gcdump -: the .gcdump alone on stdout; --json would go there too: refused
    p = subprocess.run([hl] + export + ["-"], cwd=w, capture_output=True, timeout=300)
    expect("export --gcdump -: the .gcdump's bytes alone", p.returncode == 0 and
           p.stdout == content("ref.gcdump"), f"{p.returncode} {len(p.stdout)} bytes {p.stderr!r}")
    rc, out, err = run(export + ["-", "--json"])
    expect("export --gcdump - --json: refused", rc == 1 and out == "" and err ==
           "heaplens: export: --json and --gcdump - both write to standard output; name a file "
           "for the .gcdump\n", f"{rc} {out!r} {err!r}")
    # a query's answer is its stdout: closed, it is lost, and that is a failure
    rc, out, err = run(["gcs", "graph.db"], closed=True)
    expect("gcs >&-: exit 1", rc == 1 and err == "heaplens: writing the output failed: Bad file "
           "descriptor\n", f"{rc} {err!r}")
    return leak_fixture.finish()


if __name__ == "__main__":
    sys.exit(main())
