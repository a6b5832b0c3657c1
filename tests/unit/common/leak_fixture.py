"""leak_fixture.py -- what the Python tests on the leak fixture share (query/check/check_test.py,
cli/closed_stdout_test.py): their arguments (--heaplens PATH --fixture TEST_LEAKS --workdir DIR),
a fresh work directory holding the fixture (`test_leaks fixture DIR`: 4 snapshots, App.Leak
growing 3 a snapshot under App.Holder), and the checks they count."""
import argparse
import os
import shutil
import subprocess

failures = 0


def expect(name, cond, detail=""):
    """Counts and prints a check that failed; the test goes on."""
    global failures
    if not cond:
        failures += 1
        print(f"FAIL {name}: {detail}")


def setup():
    """The parsed arguments (heaplens made absolute), the work directory made afresh with the
    fixture's recordings in it."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.heaplens = os.path.abspath(a.heaplens)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    subprocess.run([a.fixture, "fixture", a.workdir], check=True, stdout=subprocess.DEVNULL)
    return a


def finish():
    """The test's exit status, after the count of failed checks."""
    print(f"{failures} failed")
    return 1 if failures else 0
