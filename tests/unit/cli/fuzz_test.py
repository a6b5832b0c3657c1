#!/usr/bin/env python3
"""fuzz_test.py -- every query command over a corpus of edited recordings.

The corpus is made here, deterministically, from one recording built through the real writer
(`test_leaks fixture`: 4 GCs with heap snapshots, handles, roots, allocation samples and stacks),
as the writer leaves it ("unread": its generation history not built yet) and as its readers
leave it, summed up and its objects rows built ("read": after info and diff). For each, every
table and column the file itself lists (sqlite_master, PRAGMA table_info: the corpus follows the
schema as it changes) gets edits of one row: a negative
number, a huge one, NULL, text where a number belongs, an unknown generation; and each table
loses a row and all its rows. Every input then goes through every query command (text or --json,
alternating), each run on its own copy, and checks:

  crash     killed by a signal, an exit status other than 0 and 1, or a sanitizer's report
  hang      still running after the time limit (TIMEOUT s)
  lines     exit 1 with anything but one line "heaplens: ..." on stderr (but check's answer:
            exit 1 with its results on stdout, an assertion failed or undecided: "answered")
  changed   the input (or its -wal/-shm) changed where the command may not write: only the first
            reader of a file builds its generation history (it refuses damaged changes), and only
            retention, roots, leaks and report store retained sizes (of a sound snapshot)
  missed    an edit that no recording can hold (a negative size or count, text in a number
            column, an unknown generation, a snapshot missing objects its header counts), and
            the command exited 0 with an answer that differs from the unedited file's, without
            saying the file is damaged: damage read as data

Usage: fuzz_test.py --heaplens PATH --fixture TEST_LEAKS --workdir DIR [--jobs N] [--every K]
                    [--no-fail]
       (--every K: only every Kth input, for a slow build such as the sanitizers'; --no-fail:
       print the outcomes and exit 0, to measure another binary)
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

TIMEOUT = 30
GOOD = ('ok', 'refused', 'answered')  # the outcomes that are no failure

# Commands as a user runs them on FILE; each runs in text and in --json, alternating by input.
COMMANDS = [
    ['info'], ['gcs'], ['allocations'], ['survivors'], ['retention'],
    ['roots', '--type', 'App.Leak'], ['leaks'], ['diff'], ['stacks'], ['snapshots'],
    ['report'], ['export', '--gcdump', 'out.gcdump'], ['check', '--max-live', 'App.Leak=100'], ['stacks', '--by', 'method'],
]
# Commands that may store what they computed in the file (retained sizes); every command may
# build the generation history of an unread file.
STORING = {'retention', 'roots', 'leaks', 'report'}

# Columns that hold sizes or counts: negative is no recording's value.
NATURAL = re.compile(r'^(count|bytes|size|survived|survived_bytes|size_before|size_after|'
                     r'objects|refs|roots|handles|pinned_roots|moved_bytes|objects_live|frozen|'
                     r'samples|retained_bytes|retained_objects|shallow_bytes)$')
GENERATION = re.compile(r'^generation$')
# Tables whose every row is counted elsewhere (a header, a count): losing rows is damage.
COUNTED = {'snapshot_objects': 'snapshots.objects', 'snapshot_blocks': 'snapshots.objects',
           'snapshot_roots': 'snapshots.roots'}

NEGATIVE, HUGE, NULL, TEXT, GEN9 = '-5', '9223372036854775000', 'NULL', "'abc'", '9'


def sha(path):
    try:
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def state(path):
    return tuple(sha(path + s) for s in ('', '-wal', '-shm'))


def first_row_where(db, table):
    """A WHERE clause naming the first row of `table` (rowid, else its primary key); None when
    the table is empty."""
    cols = db.execute('SELECT name, pk FROM pragma_table_info(?) ORDER BY pk', (table,)).fetchall()
    pk = [c[0] for c in cols if c[1] > 0]
    without_rowid = db.execute("SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = ?",
                               (table,)).fetchone()[0]
    key = pk if without_rowid else ['rowid']
    quoted = ', '.join('"%s"' % k for k in key)
    row = db.execute('SELECT %s FROM "%s" ORDER BY %s LIMIT 1' % (quoted, table, quoted)).fetchone()
    if row is None:
        return None, None
    return '(%s) = (%s)' % (quoted, ', '.join('?' for _ in key)), row


def edits_of(path, half):
    """[(name, sql, params, impossible)] for the recording at `path`, from its own schema. Each
    column gets two of the four values, `half` (0 or 1) choosing which by the column's place: the
    two variants of the recording together give every column all four, in half the runs."""
    db = sqlite3.connect(path)
    out = []
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]
    for t in tables:
        where, key = first_row_where(db, t)
        if where is None:
            continue
        cols = db.execute('SELECT name, type FROM pragma_table_info(?) ORDER BY cid', (t,)).fetchall()
        for i, (c, ctype) in enumerate(cols):
            numeric = 'INT' in ctype.upper()
            kinds = [NEGATIVE, HUGE, NULL, TEXT]
            kinds = kinds[:2] if (i + half) % 2 == 0 else kinds[2:]
            if GENERATION.match(c):
                kinds.append(GEN9)
            for k in kinds:
                impossible = (k == NEGATIVE and bool(NATURAL.match(c))) or \
                             (k == TEXT and numeric) or (k in (GEN9, NEGATIVE) and bool(GENERATION.match(c)))
                out.append(('%s.%s=%s' % (t, c, k), 'UPDATE "%s" SET "%s" = %s WHERE %s' % (t, c, k, where),
                            key, impossible))
        out.append(('%s: first row deleted' % t, 'DELETE FROM "%s" WHERE %s' % (t, where), key, t in COUNTED))
        out.append(('%s: every row deleted' % t, 'DELETE FROM "%s"' % t, (), t in COUNTED))
    db.close()
    return out


def make_input(base, edit, path):
    """Copies `base` to `path` with `edit` applied; False when SQLite refuses the edit (a NOT NULL
    or unique constraint: no such file can exist)."""
    shutil.copyfile(base, path)
    name, sql, params, _ = edit
    db = sqlite3.connect(path)
    try:
        db.execute(sql, params)
        db.commit()
    except sqlite3.Error:
        db.close()
        return False
    db.close()
    return True


def normalize(text):
    # The file's size moves with an edit that is not damage.
    return re.sub(r'("?file[ _](size|bytes)"?[:\s]+)[^\n,]*', r'\1', text)


def run_one(heaplens, cmd, path, json_flag):
    args = [heaplens, cmd[0], os.path.basename(path)] + cmd[1:] + (['--json'] if json_flag else [])
    if cmd[0] == 'report' and not json_flag:
        args += ['-o', os.path.basename(path) + '.html']
    try:
        p = subprocess.run(args, cwd=os.path.dirname(path), capture_output=True, timeout=TIMEOUT)
        out, err = p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')
        # export says what it wrote (objects, bytes) on stderr, without --json: its answer
        if cmd[0] == 'export' and not json_flag:
            out = err
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        return None, '', ''


def check_answered(cmd, rc, out):
    """check's exit 1 with its results on stdout: an assertion failed or could not be decided."""
    if cmd[0] != 'check' or rc != 1:
        return False
    try:
        return 'results' in json.loads(out)
    except ValueError:
        return re.search(r'^\d+ of \d+ assertions? (failed|could not be decided)', out, re.M) is not None


def classify(rc, out, err, impossible, baseline, changed_ok, before, after, cmd):
    if rc is None:
        return 'hang'
    if rc < 0 or rc not in (0, 1) or 'runtime error' in err or 'Sanitizer' in err:
        return 'crash'
    if before != after and not changed_ok:
        return 'changed'
    if check_answered(cmd, rc, out):
        return 'answered'
    if rc == 1:
        lines = err.splitlines()
        return 'refused' if len(lines) == 1 and lines[0].startswith('heaplens: ') else 'lines'
    if impossible and normalize(out) != normalize(baseline) and 'damaged' not in err:
        return 'missed'
    return 'ok'


def job(heaplens, base, variant, n, edit, workdir):
    """Every command on input `n` (`edit` of `base`); returns [(outcome, command, edit name)]."""
    d = os.path.join(workdir, 'runs', '%s-%04d' % (variant, n))
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, 'input.db')
    if edit and not make_input(base, edit, src):
        shutil.rmtree(d)
        return None
    if not edit:
        shutil.copyfile(base, src)
    results = []
    for i, cmd in enumerate(COMMANDS):
        json_flag = (n + i) % 2 == 1
        path = os.path.join(d, 'rec.db')
        for s in ('', '-wal', '-shm'):
            if os.path.exists(path + s):
                os.unlink(path + s)
        shutil.copyfile(src, path)
        before = state(path)
        rc, out, err = run_one(heaplens, cmd, path, json_flag)
        after = state(path)
        results.append((rc, out, err, before, after, cmd, json_flag))
    shutil.rmtree(d)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--heaplens', required=True)
    ap.add_argument('--fixture', required=True, help='test_leaks, which writes the recording')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--every', type=int, default=1)
    ap.add_argument('--no-fail', action='store_true')
    args = ap.parse_args()
    heaplens = os.path.abspath(args.heaplens)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    r = subprocess.run([args.fixture, 'fixture', args.workdir], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('test_leaks fixture failed: %s' % r.stderr)
    unread = os.path.join(args.workdir, 'unread.db')
    os.rename(os.path.join(args.workdir, 'graph.db'), unread)
    read = os.path.join(args.workdir, 'read.db')
    shutil.copyfile(unread, read)
    # Its first reader sums up its objects (object_spans, object_totals), the first that reads
    # objects one by one (diff) builds their rows and generation history (with this binary or
    # an older one, which builds both at once): "read" is the file with everything built.
    for cmd in ('info', 'diff'):
        r = subprocess.run([heaplens, cmd, read], capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            sys.exit('heaplens %s on the fixture failed: %s' % (cmd, r.stderr))

    inputs = []
    for half, (variant, base) in enumerate((('unread', unread), ('read', read))):
        for n, edit in enumerate(edits_of(base, half)):
            if n % args.every == 0:
                inputs.append((variant, base, n + 1, edit))
    # The unedited files: the baseline answers (and they must pass too).
    baselines = {}
    for variant, base in (('unread', unread), ('read', read)):
        for parity in (0, 1):
            res = job(heaplens, base, variant + '-base', parity, None, args.workdir)
            for rc, out, err, before, after, cmd, json_flag in res:
                baselines[(variant, tuple(cmd), json_flag)] = (rc, out, err)

    counts = {}
    failures = []
    n_inputs = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(job, heaplens, base, variant, n, edit, args.workdir): (variant, edit)
                   for variant, base, n, edit in inputs}
        for f in concurrent.futures.as_completed(futures):
            variant, edit = futures[f]
            res = f.result()
            if res is None:
                continue
            n_inputs += 1
            for rc, out, err, before, after, cmd, json_flag in res:
                base_rc, base_out, _ = baselines[(variant, tuple(cmd), json_flag)]
                changed_ok = cmd[0] in STORING or variant == 'unread'
                outcome = classify(rc, out, err, edit[3], base_out if base_rc == 0 else None,
                                   changed_ok, before, after, cmd)
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome not in GOOD:
                    failures.append('%s: %s %s%s: %s' % (
                        outcome, variant, ' '.join(cmd), ' --json' if json_flag else '', edit[0]) +
                        (': ' + err.strip().replace('\n', ' | ')[:300] if err.strip() else ''))
    for (variant, name, json_flag), (rc, out, err) in sorted(baselines.items()):
        if rc != 0:
            failures.append('baseline: %s %s%s exits %s: %s' % (variant, name, ' --json' if json_flag else '',
                                                             rc, err.strip()))
    failures.sort()
    for line in failures:
        print(line)
    runs = sum(counts.values())
    print('fuzz: %d inputs (%d edits of the unread and read recording), %d runs: %s' % (
        n_inputs, len(inputs), runs, ', '.join('%s %d' % (k, counts[k]) for k in sorted(counts))))
    bad = [k for k in counts if k not in GOOD]
    return 0 if args.no_fail or (not bad and not any(f.startswith('baseline') for f in failures)) else 1


if __name__ == '__main__':
    sys.exit(main())
