#!/usr/bin/env python3
"""first_read_test.py -- the first read of a finished recording: done once, and its summary
answers exactly as the objects rows do.

On test_leaks' fixture (4 GCs, promotions, deaths, heap snapshots, samples; as the writer leaves
it), checks:

  summary   the first command (info) writes object_spans and object_totals and leaves the packed
            rows as they are (`objects` still a view over object_chunks);
  once      no later command that needs nothing more changes the file (info, gcs, allocations,
            survivors, snapshots, stacks); the snapshot commands (diff, report) read the packed
            rows in memory and build nothing; `stacks --by survived` builds the rows, once;
            survivors, retention and leaks after report change nothing;
  same      survivors (every GC, by generation and by age, text and JSON, --top), info and
            report --json answer byte for byte the same from the summary as from the objects
            rows (a copy fully built, its object_spans and object_totals dropped: the path of a
            file read first by an older heaplens); and diff, retention, leaks, inspect, roots
            and check from the packed rows read in memory as from the table.

Usage: first_read_test.py --heaplens PATH --fixture TEST_LEAKS --workdir DIR
"""
import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print('FAIL: ' + what)


def sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(heaplens, *args):
    """heaplens ARGS, the file (args[1]) given by its name in its directory: the outputs of
    two copies in two directories name it alike."""
    args = list(args)
    cwd = None
    if len(args) > 1 and os.path.isabs(args[1]):
        cwd, args[1] = os.path.dirname(args[1]), os.path.basename(args[1])
    r = subprocess.run([heaplens] + args, capture_output=True, text=True, timeout=120, cwd=cwd)
    return r.returncode, r.stdout, r.stderr


def kind(db, name):
    c = sqlite3.connect(db)
    try:
        row = c.execute('SELECT type FROM sqlite_master WHERE name = ?', (name,)).fetchone()
        return row[0] if row else None
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--heaplens', required=True)
    ap.add_argument('--fixture', required=True)
    ap.add_argument('--workdir', required=True)
    a = ap.parse_args()
    h = os.path.abspath(a.heaplens)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    r = subprocess.run([a.fixture, 'fixture', a.workdir], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('test_leaks fixture failed: %s' % r.stderr)
    unread = os.path.join(a.workdir, 'graph.db')
    # Two directories, one file name: the outputs name the file alike.
    summed = os.path.join(a.workdir, 'summed', 'app.db')
    rows = os.path.join(a.workdir, 'rows', 'app.db')
    for path in (summed, rows):
        os.makedirs(os.path.dirname(path))
        shutil.copyfile(unread, path)

    # summary: the first command sums up, the packed rows stay.
    rc, _, err = run(h, 'info', summed)
    check(rc == 0, 'info on the fixture: exit %d %s' % (rc, err))
    check(kind(summed, 'object_spans') == 'table', 'the first read writes object_spans')
    check(kind(summed, 'object_totals') == 'table', 'the first read writes object_totals')
    check(kind(summed, 'objects') == 'view', 'the first read leaves objects a view over the chunks')

    # once: nothing more is built by commands that need no more.
    before = sha(summed)
    for cmd in (['info'], ['gcs'], ['allocations'], ['survivors'], ['survivors', '--by', 'age'],
                ['snapshots'], ['stacks']):
        rc, _, err = run(h, cmd[0], summed, *cmd[1:])
        check(rc == 0, '%s: exit %d %s' % (' '.join(cmd), rc, err))
        check(sha(summed) == before, '%s after the first read changed the file' % ' '.join(cmd))

    # The rows, built whole by the first command that reads objects one by one, then the
    # summary dropped: the tools read objects and object_generations as before.
    # The snapshot commands read the packed rows in memory (store_objview.c): no build.
    rc, _, err = run(h, 'diff', summed)
    check(rc == 0, 'diff: exit %d %s' % (rc, err))
    check(kind(summed, 'objects') == 'view', 'diff builds no objects rows')
    check(sha(summed) == before, 'diff after the first read changed the file')
    rc, _, err = run(h, 'stacks', rows, '--by', 'survived')
    check(rc == 0, 'stacks --by survived: exit %d %s' % (rc, err))
    check(kind(rows, 'objects') == 'table', 'stacks --by survived builds the objects rows')
    check(kind(rows, 'object_spans') == 'table', 'the whole build writes object_spans too')
    built = sha(rows)
    rc, _, err = run(h, 'diff', rows)
    check(rc == 0 and sha(rows) == built, 'a second diff changed the file (built again?)')
    c = sqlite3.connect(rows)
    c.executescript('DROP TABLE object_spans; DROP TABLE object_totals;')
    c.close()

    # same: every answer of the summary equals the rows'.
    c = sqlite3.connect(summed)
    gcs = [g for (g,) in c.execute('SELECT gc FROM gcs ORDER BY gc')]
    c.close()
    check(len(gcs) >= 3, 'the fixture has GCs')
    asks = [['info'], ['info', '--json']]
    for g in gcs:
        for extra in ([], ['--by', 'age'], ['--json'], ['--by', 'age', '--json'], ['--top', '2']):
            asks.append(['survivors', '--gc', str(g)] + extra)
    # the snapshot commands: the packed rows read in memory answer as the table does
    for ask in (['diff'], ['diff', '--json'], ['retention'], ['retention', '--json'],
                ['retention', '--by', 'type'], ['retention', '--snapshot', '1', '--json'],
                ['leaks'], ['leaks', '--json', '--all'], ['inspect', '--json'],
                ['roots', '--object', '1'], ['check', '--no-leaks']):
        asks.append(ask)
    for ask in asks:
        got = [run(h, ask[0], path, *ask[1:]) for path in (summed, rows)]
        # info tells the file's size, which is the point of the summary
        if ask[0] == 'info':
            got = [(rc, '\n'.join(l for l in out.splitlines() if 'file size' not in l and
                                  '"file_bytes"' not in l), err) for rc, out, err in got]
        check(got[0] == got[1], '%s differs: summary %r, rows %r' % (' '.join(ask), got[0][:2],
                                                                     got[1][:2]))
    outs = []
    for path in (summed, rows):
        out = os.path.join(os.path.dirname(path), 'report.json')
        rc, _, err = run(h, 'report', path, '--json', '-o', 'report.json')
        check(rc == 0, 'report: exit %d %s' % (rc, err))
        outs.append(open(out).read() if rc == 0 else '')
    check(outs[0] == outs[1], 'report --json differs between the summary and the rows')

    # once, after the whole build and the retained sizes report stored.
    check(kind(summed, 'objects') == 'view', 'report (snapshots) builds no objects rows')
    after = sha(summed)
    for cmd in (['survivors'], ['info'], ['retention'], ['leaks'], ['diff'], ['report', '--json',
                                                                             '-o', '/dev/null']):
        rc, _, err = run(h, cmd[0], summed, *cmd[1:])
        check(rc == 0, '%s: exit %d %s' % (' '.join(cmd), rc, err))
        check(sha(summed) == after, '%s after report changed the file' % ' '.join(cmd))

    if failures:
        print('first_read: %d failures' % len(failures))
        return 1
    print('first_read: summary written once, %d answers the same as the rows\' ' % (len(asks) + 1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
