#!/usr/bin/env python3
"""temp_space_test.py -- a query whose sort outgrows SQLite's page cache writes SQLite's
temporary files (temp_store FILE: in SQLITE_TMPDIR, else TMPDIR, else /var/tmp, /usr/tmp, /tmp).
When they cannot grow (here RLIMIT_FSIZE 0 in the child, SIGXFSZ ignored: every write fails with
EFBIG, as on a full disk or under `ulimit -f`) the one line names that directory and the variable
that chose it and says the recording is intact, which it is (byte for byte). It was "reading
graph.db failed: disk I/O error", which blamed the recording; with SIGXFSZ at its default (a
shell's `ulimit -f`) heaplens was killed by it, with a core and no word.

Usage: temp_space_test.py --heaplens PATH --fixture TEST_LEAKS --workdir DIR"""
import hashlib
import os
import resource
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import leak_fixture  # noqa: E402
from leak_fixture import expect  # noqa: E402

# 20 MB of rows to sort: past the page cache (2 MiB), so the sorter writes its runs to a file
SORT = ("SELECT count(*) FROM (SELECT r FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
        "SELECT i + 1 FROM n WHERE i < 20000) SELECT randomblob(1000) AS r FROM n) ORDER BY r)")


def main():
    a = leak_fixture.setup()
    w = a.workdir
    tmp = os.path.join(w, "tmp")
    os.makedirs(tmp)

    def digest():
        with open(os.path.join(w, "graph.db"), "rb") as f:
            return hashlib.md5(f.read()).hexdigest()

    def run(args, env, limited=True, sigxfsz=signal.SIG_IGN):
        def no_room():
            signal.signal(signal.SIGXFSZ, sigxfsz)
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        environ = {k: v for k, v in os.environ.items() if k not in ("SQLITE_TMPDIR", "TMPDIR")}
        environ.update(env)
        p = subprocess.run([a.heaplens] + args, cwd=w, env=environ, capture_output=True,
                           text=True, timeout=300, preexec_fn=no_room if limited else None)
        return p.returncode, p.stdout, p.stderr

    # the first read sums the recording up into the file: done before, with room
    rc, _, err = run(["info", "graph.db"], {}, limited=False)
    expect("info (the first read)", rc == 0, err)
    before = digest()
    check = ["check", "graph.db", "--sql", SORT]
    # with room the query runs (its answer, a row, is a failed assertion: exit 1, no error line)
    rc, out, err = run(check, {"SQLITE_TMPDIR": tmp}, limited=False)
    expect("the sort with room", rc == 1 and err == "" and "20000" in out, f"{rc} {out!r} {err!r}")
    for variable in ("SQLITE_TMPDIR", "TMPDIR"):
        rc, out, err = run(check, {variable: tmp})
        expect(f"no room in {variable}: exit 1, one line naming it",
               rc == 1 and err == f"heaplens: cannot write SQLite's temporary files in {tmp} "
               f"({variable}): File too large; the recording graph.db is intact (point "
               "SQLITE_TMPDIR at a directory with room)\n", f"{rc} {err!r}")
    # as under a shell's `ulimit -f 0`: SIGXFSZ at its default, which ended heaplens with a core
    # and no word; the same line
    rc, out, err = run(check, {"TMPDIR": tmp}, sigxfsz=signal.SIG_DFL)
    expect("no room, SIGXFSZ at its default: exit 1, the same line",
           rc == 1 and err.startswith(f"heaplens: cannot write SQLite's temporary files in {tmp} "
                                      "(TMPDIR): File too large;"), f"{rc} {err!r}")
    expect("the recording is byte for byte what it was", digest() == before)
    expect("nothing beside it", sorted(n for n in os.listdir(w) if n.startswith("graph.db")) ==
           ["graph.db"], os.listdir(w))
    return leak_fixture.finish()


if __name__ == "__main__":
    sys.exit(main())
