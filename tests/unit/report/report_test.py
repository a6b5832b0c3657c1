#!/usr/bin/env python3
"""report_test.py -- `heaplens report` without a browser.

Builds recordings with report_fixture (through the real writer) and checks:
  - a 3-GC recording against numbers worked out by hand;
  - a simulated 60-GC recording against naive SQL, GC by GC (survivors per generation from the
    live_objects view, live bytes per type, survival rates), and every GC row against
    `heaplens gcs --json`;
  - the HTML page embeds exactly the --json document and loads nothing from outside;
  - output files, the accuracy note, a recording without GCs, and one-line errors.

Usage: report_test.py --heaplens PATH --fixture PATH --workdir DIR
"""
import argparse
import json
import os
import pty
import re
import select
import shutil
import sqlite3
import stat
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print('FAIL', what)
    return cond


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


class Env:
    def __init__(self, heaplens, fixture, workdir):
        self.heaplens, self.fixture, self.workdir = heaplens, fixture, workdir

    def path(self, name):
        return os.path.join(self.workdir, name)

    def fixture_db(self, name, *args, tail=()):
        db = self.path(name)
        if os.path.exists(db):
            os.unlink(db)
        r = run([self.fixture] + list(args) + [db] + list(tail))
        if r.returncode != 0:
            sys.exit('report_fixture %s failed: %s' % (' '.join(args), r.stderr))
        return db

    def report_json(self, db):
        r = run([self.heaplens, 'report', db, '--json'])
        if not check(r.returncode == 0, 'report --json %s: exit %d: %s' % (db, r.returncode, r.stderr)):
            return None
        return json.loads(r.stdout)

    def gcs_json(self, db):
        r = run([self.heaplens, 'gcs', db, '--json'])
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)['rows']


GCS_KEYS = ['gc', 'generation', 'reason', 'induced', 'compacting', 'pause_ns', 'start_ns', 'end_ns',
            'survived_bytes', 'moved_bytes', 'objects_live', 'incomplete', 'size_before', 'size_after']
LIVE_GENS = ['gen0', 'gen1', 'gen2', 'loh', 'poh', 'nongc']


def check_rows_match_gcs(env, db, doc, label):
    rows = env.gcs_json(db)
    check(len(doc['gcs']) == len(rows), '%s: %d GC rows, heaplens gcs has %d' % (label, len(doc['gcs']), len(rows)))
    for mine, theirs in zip(doc['gcs'], rows):
        for k in GCS_KEYS:
            check(mine[k] == theirs[k], '%s: GC %s %s: report %r, gcs %r' % (label, theirs['gc'], k, mine[k], theirs[k]))


def expected_rate(g):
    gens = {0: ['gen0'], 1: ['gen0', 'gen1'], 2: ['gen0', 'gen1', 'gen2', 'loh', 'poh']}[g['generation']]
    before = sum(g['size_before'][k] for k in gens)
    return g['survived_bytes'] / before if before else None


def test_small(env):
    db = env.fixture_db('small.db', 'small')
    doc = env.report_json(db)
    if doc is None:
        return
    check_rows_match_gcs(env, db, doc, 'small')
    check([g['gc'] for g in doc['gcs']] == [1, 2, 3], 'small: GC ordinals')
    rates = [g['survival_rate'] for g in doc['gcs']]
    check(rates == [140 / 240, 200 / 300, 200 / 300200], 'small: survival rates %r' % rates)
    con = sqlite3.connect(db)
    pinned = [r[0] for r in con.execute('SELECT pinned_roots FROM gcs ORDER BY gc')]
    con.close()
    check([g['pinned_objects'] for g in doc['gcs']] == pinned,
          'small: pinned objects = gcs.pinned_roots %r' % pinned)
    sv = doc['plots']['survivors']['series']
    want = {'gen0': [0, 0, 0], 'gen1': [140, 100, 0], 'gen2': [0, 100, 200], 'loh': [100000, 100000, 0],
            'poh': [0, 0, 0], 'nongc': [0, 0, 0]}
    check(sv == want, 'small: survivors %r' % sv)
    types = [(t['type'], t['peak_bytes'], t['last_bytes'], t['bytes']) for t in doc['plots']['top_types']['types']]
    check(types == [('System.Byte[]', 100000, 0, [100000, 100000, 0]), ('App.Node', 200, 200, [100, 200, 200]),
                    ('System.String', 40, 0, [40, 0, 0])], 'small: top types %r' % types)
    t = doc['totals']
    check(t['gcs'] == 3 and t['gcs_by_generation'] == {'gen0': 1, 'gen1': 1, 'gen2': 1}, 'small: GC counts %r' % t)
    check(t['gcs_induced'] == 2 and t['gcs_compacting'] == 2 and t['gcs_incomplete'] == 0, 'small: flags %r' % t)
    check(t['pause_ns'] == sum(g['pause_ns'] for g in doc['gcs']), 'small: total pause')
    check(t['allocations'] == 7 and t['allocation_bytes'] == 300400 and t['objects_alive_at_end'] == 2, 'small: objects %r' % t)
    # not "objects": info --json's objects are the objects tracked (the survivors here), not these
    check('objects' not in t and 'object_bytes' not in t, 'small: totals named apart from info %r' % t)
    check(doc['report']['format'] == 2, 'small: report format %r' % doc['report'])
    run_ = doc['run']
    check(run_['command'] == 'dotnet Small.dll --report' and run_['mode'] == 'full' and run_['status'] == 'complete',
          'small: run %r' % run_)
    check(run_['duration_ns'] == 1000000000, 'small: duration %r' % run_['duration_ns'])
    check(doc['note'] is None, 'small: no accuracy note')
    check(doc['snapshots'] is None and doc['leak_suspects'] is None and doc['retainers'] is None,
          'small: no snapshot sections')
    check(doc['plots']['gc'] == [1, 2, 3], 'small: plots.gc')
    for key in ['survival_rate', 'promoted', 'survivors', 'pinned_objects', 'top_types']:
        check(key in doc['definitions'], 'small: definition of %s' % key)


def json_of(env, *args):
    r = run([env.heaplens] + list(args) + ['--json'])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def text_of(env, *args):
    r = run([env.heaplens] + list(args))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_estimates(env):
    """Sampled and attach recordings (report_fixture sampled/attach: the "stacks" recording with
    run.mode changed and only the LOH allocations counted): every allocation figure is the exact
    LOH count plus the estimates of the small objects (tests/unit/common/hl_stack_fixture.h),
    and says so; full recordings are exact and say nothing."""
    # interval: (count, bytes) = LOH objects counted + small-object samples' est_count/est_bytes
    want_gcs = {1: (1 + 10010, 100000 + 394000), 2: (1500, 48000), 3: (1, 200000)}
    for mode in ('sampled', 'attach'):
        db = env.fixture_db('est-%s.db' % mode, mode)
        label = 'estimates (%s)' % mode
        doc = env.report_json(db)
        if doc is None:
            return
        A = doc['allocations']
        check(A['mode'] == mode and A['estimated'] is True, '%s: allocations head %r' % (label, A))
        check(A['note'].startswith('%s mode: allocation figures are ESTIMATES' % mode) and '9 allocation samples' in A['note']
              and '3 samples were lost' in A['note'], '%s: note %r' % (label, A['note']))
        check(A['sampling'] == {'source': 'AllocationSampled', 'mean_distance_bytes': 102400, 'biased': False,
                                'samples': 9, 'samples_dropped': 3}, '%s: sampling %r' % (label, A['sampling']))
        got = {g['gc']: (g['allocated_count'], g['allocated_bytes']) for g in doc['gcs']}
        check(got == want_gcs, '%s: allocated per GC %r' % (label, got))
        check(A['after_last_gc'] == {'count': 100, 'bytes': 6400}, '%s: after the last GC %r' % (label, A['after_last_gc']))
        t = doc['totals']
        check(t['allocations'] == 11612 and t['allocation_bytes'] == 748400, '%s: totals %r' % (label, t))
        # each with the part the samples estimate: every small object here (no census); the
        # two large Byte[] are counted exactly
        check(A['top_types'] == [{'type': 'System.Byte[]', 'count': 12, 'bytes': 310000, 'estimated_count': 10},
                                 {'type': 'System.String', 'count': 9500, 'bytes': 304000, 'estimated_count': 9500},
                                 {'type': 'App.Node', 'count': 2100, 'bytes': 134400, 'estimated_count': 2100}],
              '%s: top types %r' % (label, A['top_types']))
        check(doc['plots']['allocated'] == {'unit': 'bytes', 'from': 'gcs[].allocated_bytes', 'estimated': True},
              '%s: plot %r' % (label, doc['plots']['allocated']))
        check_rows_match_gcs(env, db, doc, label)

        # allocations: the same figures per type, the same head
        al = json_of(env, 'allocations', db)
        check(al['estimated'] is True and al['note'] == A['note'] and al['sampling'] == A['sampling'],
              '%s: allocations head %r' % (label, {k: al.get(k) for k in ('estimated', 'note')}))
        check([{k: r[k] for k in ('type', 'count', 'bytes', 'estimated_count')} for r in al['rows']] == A['top_types']
              and all(r['estimated'] is True for r in al['rows']), '%s: allocations rows %r' % (label, al['rows']))
        check(text_of(env, 'allocations', db).startswith(A['note'] + '\n'), '%s: allocations text note' % label)

        # info: the sampling, estimated totals, allocs_seen explained
        info = json_of(env, 'info', db)
        check({k: info['allocations'][k] for k in ('mode', 'estimated', 'note', 'sampling')}
              == {k: A[k] for k in ('mode', 'estimated', 'note', 'sampling')}
              and info['allocations']['exact_per_type'] is False,
              '%s: info allocations %r' % (label, info['allocations']))
        check(info['totals']['allocations'] == 11612 and info['totals']['allocation_bytes'] == 748400 and
              info['totals']['allocations_estimated'] is True, '%s: info totals %r' % (label, info['totals']))
        text = text_of(env, 'info', db)
        for want in ['\nsampling\n', '  source           AllocationSampled (unbiased)\n', '  samples          9\n',
                     '  samples dropped  3\n', '  mean distance    102,400 bytes (100.0 KiB)\n',
                     '  note             ' + A['note'] + '\n',
                     '  allocations      ~11,612 (~730.9 KiB)  ESTIMATED from the samples\n',
                     'allocations the runtime reported: large %sobjects only (%s mode)' % (
                         'and pinned ' if mode == 'sampled' else '', mode)]:
            check(want in text, '%s: info text has %r' % (label, want))

        # the view: the same figures per type (summed over threads), samples say which are estimates
        con = sqlite3.connect(db)
        view = [{'type': t, 'count': round(c), 'bytes': round(b)} for t, c, b in con.execute(
            'SELECT type, sum(count), sum(bytes) FROM allocations_estimated_by_type_thread'
            ' GROUP BY type ORDER BY sum(bytes) DESC')]
        samples = dict(con.execute('SELECT type, sum(samples) FROM allocations_estimated_by_type_thread GROUP BY type'))
        con.close()
        check(view == [{k: v for k, v in t.items() if k != 'estimated_count'} for t in A['top_types']],
              '%s: view allocations_estimated_by_type_thread %r' % (label, view))
        check(samples == {'App.Node': 3, 'System.String': 5, 'System.Byte[]': 1}, '%s: view samples %r' % (label, samples))

        # gcs and survivors show no allocation figure: exact in every mode, nothing to mark
        for cmd in ('gcs', 'survivors'):
            out = text_of(env, cmd, db)
            check('estimat' not in out.lower() and 'alloc' not in out.lower(), '%s: %s says nothing of allocations' % (label, cmd))

    # full: exact, unmarked
    db = env.fixture_db('est-full.db', 'stacks')
    doc = env.report_json(db)
    A = doc['allocations']
    check(A['mode'] == 'full' and A['estimated'] is False and A['note'] is None, 'full: allocations head %r' % A)
    got = {g['gc']: (g['allocated_count'], g['allocated_bytes']) for g in doc['gcs']}
    check(got == {1: (4, 100240), 2: (2, 160), 3: (1, 200000)}, 'full: allocated per GC %r' % got)
    check(doc['totals']['allocations'] == 7 and doc['totals']['allocation_bytes'] == 300400, 'full: totals')
    check(doc['plots']['allocated']['estimated'] is False, 'full: plot not estimated')
    info = json_of(env, 'info', db)
    check(info['totals']['allocations'] == 7 and info['totals']['allocations_estimated'] is False, 'full: info totals')
    text = text_of(env, 'info', db)
    check('\nsampling\n' not in text and 'ESTIMATED' not in text and '~' not in text, 'full: info text unmarked')
    check('estimated' not in json_of(env, 'allocations', db), 'full: allocations JSON has no estimate head')
    con = sqlite3.connect(db)
    exact = list(con.execute('SELECT type, thread, count, bytes FROM allocations_by_type_thread ORDER BY type, thread'))
    view = list(con.execute('SELECT type, thread, count, bytes FROM allocations_estimated_by_type_thread ORDER BY type, thread'))
    no_samples = con.execute('SELECT total(samples) FROM allocations_estimated_by_type_thread').fetchone()[0]
    con.close()
    check(view == exact and no_samples == 0, 'full: the view is the exact counts %r vs %r' % (view, exact))


def test_census(env):
    """A sampled recording with the census of gen0 (report_fixture census: the small objects of
    intervals 1 and 2 counted exactly per type, not those of GC 3 nor the tail): every interval
    the census counted is exact (its alloc_counts), the others are the LOH count plus the
    samples' estimates; each GC carries census_ns and census_objects as `heaplens gcs --json`
    does, and the head says which is which (census, exact_per_type)."""
    db = env.fixture_db('census.db', 'census')
    doc = env.report_json(db)
    if doc is None:
        return
    con = sqlite3.connect(db)
    counted = dict((gc, (n, ns)) for gc, n, ns in con.execute(
        'SELECT gc, census_objects, census_ns FROM gcs WHERE census_objects IS NOT NULL'))
    want = {}
    for gc, n, b in con.execute('SELECT gc, sum(count), sum(bytes) FROM alloc_counts GROUP BY gc'):
        want[gc] = (n, b)
    for gc, n, b in con.execute('SELECT gc, total(est_count), total(est_bytes) FROM alloc_samples'
                                ' WHERE heap = 0 GROUP BY gc'):
        if gc not in counted:
            c, cb = want.get(gc, (0, 0))
            want[gc] = (c + round(n), cb + round(b))
    con.close()
    check(sorted(counted) == [1, 2], 'census: the fixture counted intervals 1 and 2 %r' % counted)
    A = doc['allocations']
    check(A['census'] is True and A['exact_per_type'] is True and A['estimated'] is True
          and 'EXACT' in A['note'], 'census: allocations head %r' % A)
    got = {g['gc']: (g['allocated_count'], g['allocated_bytes']) for g in doc['gcs']}
    check(got == {gc: want[gc] for gc in (1, 2, 3)}, 'census: allocated per GC %r, want %r' % (got, want))
    check(A['after_last_gc'] == {'count': want[4][0], 'bytes': want[4][1]},
          'census: after the last GC %r' % A['after_last_gc'])
    t = doc['totals']
    check(t['allocations'] == sum(n for n, _ in want.values()) and t['allocation_bytes'] == sum(b for _, b in want.values()),
          'census: totals %r' % t)
    for g in doc['gcs']:
        n, ns = counted.get(g['gc'], (None, None))
        check(g.get('census_objects') == n and g.get('census_ns') == ns,
              'census: GC %d census %r %r' % (g['gc'], g.get('census_objects'), g.get('census_ns')))
    rows = {r['gc']: r for r in env.gcs_json(db)}
    check(all(rows[g['gc']].get('census_ns') == g['census_ns'] for g in doc['gcs']), 'census: as heaplens gcs --json')
    check(doc['plots']['allocated']['estimated'] is False, 'census: the plot is exact (rows say where not)')
    check('census' in doc['definitions'], 'census: defined')
    check_rows_match_gcs(env, db, doc, 'census')
    check('except after the last GC and in 1 GC interval it did not count (estimated)' in A['note'],
          'census: the note names the intervals not counted %r' % A['note'])
    # info: exact totals, the estimated part apart (the samples of the intervals not counted)
    est = sum(round(n) for gc, n in sqlite3.connect(db).execute(
        'SELECT gc, total(est_count) FROM alloc_samples WHERE heap = 0 AND gc NOT IN'
        ' (SELECT gc FROM gcs WHERE census_objects IS NOT NULL) GROUP BY gc'))
    info = json_of(env, 'info', db)
    T = info['totals']
    check(T['allocations'] == t['allocations'] and T['allocations_estimated'] is False and T['allocations_census'] is True
          and T['estimated_allocations'] == est, 'census: info totals %r (estimated part %d)' % (T, est))
    text = text_of(env, 'info', db)
    # the estimated part said once: in its term, not again on the total's line
    check('  allocations      %s (' % format(t['allocations'], ',') in text and
          'EXACT per type where the census counted, ESTIMATED where it did not (below)' in text and
          text.count('~%s (' % format(est, ',')) == 1 and
          '+ ~%s (' % format(est, ',') in text and 'where the census did not count' in text,
          'census: info text %r' % [l for l in text.splitlines() if 'allocations ' in l or '~' in l])
    check(text_of(env, 'allocations', db).startswith(A['note'] + '\n'), 'census: allocations text note')
    # without a census (the sampled fixture): no census fields
    doc = env.report_json(env.fixture_db('est-nocensus.db', 'sampled'))
    check(doc['allocations']['census'] is False and all('census_ns' not in g for g in doc['gcs']),
          'no census: no census fields')


def naive_survivors(db, gcs):
    con = sqlite3.connect(db)
    out = {g: [] for g in LIVE_GENS}
    per_type = {}
    for i, gc in enumerate(gcs):
        got = dict(con.execute('SELECT generation, SUM(size) FROM live_objects WHERE gc = ? GROUP BY 1', (gc,)))
        for k, g in enumerate(LIVE_GENS):
            out[g].append(got.get(k, 0))
        for name, b in con.execute('SELECT type, SUM(size) FROM live_objects WHERE gc = ? GROUP BY type', (gc,)):
            per_type.setdefault(name, [0] * len(gcs))[i] = b
    con.close()
    return out, per_type


def test_sim_differential(env):
    db = env.fixture_db('sim60.db', 'sim', '60', '3')
    doc = env.report_json(db)
    if doc is None:
        return
    check_rows_match_gcs(env, db, doc, 'sim60')
    gcs = [g['gc'] for g in doc['gcs']]
    check(len(gcs) == 60, 'sim60: 60 GCs')
    survivors, per_type = naive_survivors(db, gcs)
    for g in LIVE_GENS:
        check(doc['plots']['survivors']['series'][g] == survivors[g], 'sim60: survivors of %s differ from live_objects' % g)
    ranked = sorted(per_type.items(), key=lambda kv: -max(kv[1]))
    top = doc['plots']['top_types']['types']
    check(len(top) == min(8, len(ranked)), 'sim60: %d top types' % len(top))
    for t in top:
        check(t['bytes'] == per_type.get(t['type']), 'sim60: live bytes of %s differ from live_objects' % t['type'])
        check(t['peak_bytes'] == max(t['bytes']) and t['last_bytes'] == t['bytes'][-1], 'sim60: peak/last of %s' % t['type'])
    peaks = sorted((max(v) for v in per_type.values()), reverse=True)[:8]
    check([t['peak_bytes'] for t in top] == peaks, 'sim60: top types are the 8 largest peaks')
    for g in doc['gcs']:
        check(g['survival_rate'] == expected_rate(g), 'sim60: survival rate of GC %d' % g['gc'])
    check(doc['totals']['gcs_by_generation'] == {
        'gen%d' % k: sum(1 for g in doc['gcs'] if g['generation'] == k) for k in range(3)}, 'sim60: GCs per generation')


def embedded_json(page):
    m = re.findall(r'<script type="application/json" id="heaplens-data">(.*?)</script>', page, re.S)
    return m


def test_html(env):
    db = env.fixture_db('sim20.db', 'sim', '20', '5')
    out = env.path('sim20.html')
    r = run([env.heaplens, 'report', db, '-o', out])
    check(r.returncode == 0, 'html: exit %d: %s' % (r.returncode, r.stderr))
    check(re.fullmatch(r'heaplens: report of 20 GCs -> .*sim20\.html \(.+\)\n', r.stderr or '') is not None,
          'html: confirmation line %r' % r.stderr)
    check(r.stdout == '', 'html: nothing on stdout with -o')
    page = open(out, encoding='utf-8').read()
    blobs = embedded_json(page)
    if check(len(blobs) == 1, 'html: one embedded document, found %d' % len(blobs)):
        check(json.loads(blobs[0]) == env.report_json(db), 'html: embedded document == --json')
        check('<' not in blobs[0], 'html: "<" escaped inside the embedded document')
    check(page.startswith('<!DOCTYPE html>'), 'html: doctype')
    for bad in ['http://', 'https://', '<link', ' src=', '@import', 'url(']:
        check(bad not in page, 'html: self-contained, but found %r' % bad)
    for slot in ['{{title}}', '{{css}}', '{{js}}', '{{data}}', '{{generator}}']:
        check(slot not in page, 'html: slot %s filled' % slot)
    check('<title>heaplens report \u2014 sim20.db</title>' in page, 'html: title')
    check(not [f for f in os.listdir(env.workdir) if '.tmp-' in f], 'html: no temporary file left')

    # --json to a file, -oFILE and --output=FILE forms, stdout "-"
    for args in (['--json', '-o', env.path('a.json')], ['--json', '-o' + env.path('b.json')],
                 ['--json', '--output=' + env.path('c.json')]):
        r = run([env.heaplens, 'report', db] + args)
        check(r.returncode == 0 and r.stdout == '', 'json to file %r: %s' % (args, r.stderr))
    for name in 'abc':
        check(json.load(open(env.path(name + '.json'))) == env.report_json(db), 'json file %s.json' % name)
    r = run([env.heaplens, 'report', db, '-o', '-'])
    check(r.returncode == 0 and r.stdout.startswith('<!DOCTYPE html>'), 'html on stdout with -o -')

    # A title that needs escaping.
    odd = env.path('a<b>&c.db')
    shutil.copy(db, odd)
    r = run([env.heaplens, 'report', odd, '-o', env.path('odd.html')])
    page = open(env.path('odd.html'), encoding='utf-8').read()
    check('<title>heaplens report \u2014 a&lt;b&gt;&amp;c.db</title>' in page, 'html: title escaped')
    check(len(embedded_json(page)) == 1 and json.loads(embedded_json(page)[0])['report']['file'] == odd,
          'html: file name with "<" stays inside its script element')


def test_output_targets(env):
    """-o writes through what is not a regular file and replaces only the file a symbolic link
    points to; a write error is one line and exit 1."""
    db = env.fixture_db('targets.db', 'small')
    want = run([env.heaplens, 'report', db, '--json']).stdout
    d = env.path('targets')
    os.makedirs(d, exist_ok=True)
    # A symbolic link to a regular file: the target gets the report (its mode kept), the link stays.
    target, link = os.path.join(d, 'target.json'), os.path.join(d, 'link.json')
    open(target, 'w').write('old\n')
    os.chmod(target, 0o640)
    os.symlink('target.json', link)
    r = run([env.heaplens, 'report', db, '--json', '-o', link])
    check(r.returncode == 0, 'symlink: exit %d: %s' % (r.returncode, r.stderr))
    check(os.path.islink(link) and os.readlink(link) == 'target.json', 'symlink: the link is still a link')
    check(open(target).read() == want, 'symlink: the target holds the report')
    check(stat.S_IMODE(os.stat(target).st_mode) == 0o640, 'symlink: the target keeps its mode')
    # A link to nothing: refused, nothing created.
    os.symlink('nowhere.json', os.path.join(d, 'dangling.json'))
    r = run([env.heaplens, 'report', db, '--json', '-o', os.path.join(d, 'dangling.json')])
    check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and 'symbolic link to nothing' in r.stderr
          and not os.path.exists(os.path.join(d, 'nowhere.json')), 'dangling symlink: %r' % r.stderr)
    # A FIFO nobody reads: refused at once (never waited on), still a FIFO.
    fifo = os.path.join(d, 'pipe')
    os.mkfifo(fifo)
    r = run([env.heaplens, 'report', db, '--json', '-o', fifo], timeout=60)
    check(r.returncode == 1 and r.stderr == 'heaplens: cannot write %s: it is a FIFO that no process is '
          'reading\n' % fifo, 'fifo without a reader: exit %d, %r' % (r.returncode, r.stderr))
    # A FIFO with its reader (opened before heaplens starts, so no race): the reader gets the whole
    # report. Polling the read end waits for data or for the writer's close (Linux reports no hang-up
    # before a writer came).
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    proc = subprocess.Popen([env.heaplens, 'report', db, '--json', '-o', fifo], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    chunks = []
    while True:
        if not poller.poll(60000):
            break
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rfd)
    err = proc.communicate(timeout=60)[1]
    got = b''.join(chunks).decode()
    check(proc.returncode == 0 and got == want, 'fifo: exit %s, %d of %d bytes: %s' % (proc.returncode, len(got), len(want), err))
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), 'fifo: still a FIFO')
    # /dev/full: ENOSPC is one line and exit 1; the device is still a device.
    r = run([env.heaplens, 'report', db, '-o', '/dev/full'])
    check(r.returncode == 1 and r.stderr == 'heaplens: cannot write /dev/full: No space left on device\n',
          '/dev/full: exit %d, %r' % (r.returncode, r.stderr))
    check(stat.S_ISCHR(os.lstat('/dev/full').st_mode), '/dev/full is still a character device')
    # /dev/null, /dev/stdout and -o -: written through; /dev/stdout is our own stdout.
    r = run([env.heaplens, 'report', db, '--json', '-o', '/dev/null'])
    check(r.returncode == 0 and stat.S_ISCHR(os.lstat('/dev/null').st_mode), '/dev/null: %s' % r.stderr)
    # No size for a device (it said the last buffer's, "(2.1 KiB)" of a 310 KiB page).
    check(re.fullmatch(r'heaplens: report of [0-9,]+ GCs? -> /dev/null\n', r.stderr) is not None,
          '/dev/null: no size said: %r' % r.stderr)
    for out in ('/dev/stdout', '-'):
        r = run([env.heaplens, 'report', db, '--json', '-o', out])
        check(r.returncode == 0 and r.stdout == want, '-o %s: exit %d, %s' % (out, r.returncode, r.stderr))
    with open(os.path.join(d, 'redirected.json'), 'w') as f:
        r = subprocess.run([env.heaplens, 'report', db, '--json', '-o', '/dev/stdout'], stdout=f,
                           stderr=subprocess.PIPE, text=True)
    check(r.returncode == 0 and open(os.path.join(d, 'redirected.json')).read() == want,
          '/dev/stdout redirected to a file: %s' % r.stderr)
    check(not [f for f in os.listdir(d) if '.tmp-' in f], 'targets: no temporary file left')


def test_output_databases(env):
    """-o never replaces a database: another recording (finished, or still being written: an
    empty file with its -wal and -shm, as a writer leaves it before its first page), through a
    link too, nor a name SQLite would take for another database's -journal, -wal or -shm. Each is
    one line and exit 1, the database byte for byte as it was. Before, the report was renamed over
    it: a live recording's writer went on into a file nobody could reach."""
    db = env.fixture_db('outdb.db', 'small')
    d = env.path('databases')
    os.makedirs(d, exist_ok=True)
    other = os.path.join(d, 'other.db')
    shutil.copy(db, other)
    live = os.path.join(d, 'live.db')
    for name, content in ((live, b''), (live + '-wal', b'\0' * 32), (live + '-shm', b'\0' * 64)):
        open(name, 'wb').write(content)
    os.symlink('other.db', os.path.join(d, 'link.db'))
    before = {f: open(os.path.join(d, f), 'rb').read() for f in os.listdir(d)}
    why = 'it is an SQLite database \\(a recording\\?\\), which heaplens never replaces; name another file'
    cases = [(other, why), (live, why), (os.path.join(d, 'link.db'), why)]
    cases += [(other + suffix, "SQLite would take it for .*other\\.db's .* when .*other\\.db is next "
               'opened; choose another name') for suffix in ('-journal', '-wal', '-shm')]
    for target, pattern in cases:
        for args in (['-o', target], ['--json', '-o', target]):
            r = run([env.heaplens, 'report', db] + args)
            lines = r.stderr.splitlines()
            check(r.returncode == 1 and len(lines) == 1 and
                  re.fullmatch('heaplens: cannot write %s: %s' % (re.escape(target), pattern), lines[0]),
                  'database as -o %r: exit %d, %r' % (args, r.returncode, r.stderr))
    after = {f: open(os.path.join(d, f), 'rb').read() for f in os.listdir(d)}
    check(after == before, 'databases: every file as it was (%s)' % sorted(set(after) ^ set(before)))
    # A file that is not a database is still replaced.
    page = os.path.join(d, 'page.html')
    open(page, 'w').write('old\n')
    r = run([env.heaplens, 'report', db, '-o', page])
    check(r.returncode == 0 and open(page).read().startswith('<!DOCTYPE html>'), 'a page replaced: %s' % r.stderr)


def test_note_and_empty(env):
    db = env.fixture_db('trunc.db', 'sim', '12', '9', tail=['truncated'])
    r = run([env.heaplens, 'report', db, '--json'])
    doc = json.loads(r.stdout)
    check(doc['run']['status'] == 'truncated' and doc['run']['duration_ns'] is None, 'truncated: run %r' % doc['run'])
    check(doc['note'] and 'truncated' in doc['note'], 'truncated: note %r' % doc['note'])
    check(r.stderr == 'heaplens: %s\n' % doc['note'], 'truncated: note on stderr %r' % r.stderr)

    db = env.fixture_db('empty.db', 'empty')
    doc = env.report_json(db)
    if doc:
        check(doc['gcs'] == [] and doc['plots']['gc'] == [] and doc['plots']['top_types']['types'] == [],
              'empty: no GC rows and empty plots')
        check(doc['totals']['gcs'] == 0 and doc['totals']['allocations'] == 1, 'empty: totals %r' % doc['totals'])
    r = run([env.heaplens, 'report', db, '-o', env.path('empty.html')])
    check(r.returncode == 0, 'empty: html %s' % r.stderr)


def test_allocation_types(env):
    """The "Allocated" card's types are those allocated, as `allocations` and the summary line count
    them: on a csc recording it said 2,642 types (every type named, a snapshot's too) where
    `allocations` said "of 2,531 types"."""
    db = env.fixture_db('named.db', 'small')
    con = sqlite3.connect(db)
    con.execute("INSERT INTO types (id, name) VALUES (9001, 'App.OnlyNamed')")  # no allocation
    con.commit()
    con.close()
    doc = env.report_json(db)
    if doc is None:
        return
    t, al, info = doc['totals'], json_of(env, 'allocations', db), json_of(env, 'info', db)
    check(t['allocation_types'] == len(al['rows']) == info['totals']['allocation_types']
          and t['types'] == info['totals']['types'] == t['allocation_types'] + 1,
          'allocation types: report %r, allocations %d rows, info %r' % (t, len(al['rows']), info['totals']))
    # the page's card reads allocation_types
    r = run([env.heaplens, 'report', db, '-o', env.path('named.html')])
    page = open(env.path('named.html')).read() if r.returncode == 0 else ''
    check("fmtCount(t.allocation_types)) + ' types" in page, 'allocation types: the card shows allocation_types')


def test_total_rounding(env):
    """The report's allocation total is info's (estimates rounded per type), not the sum of its
    GC rows (rounded per GC interval): on an attach recording of WebApi the report said 11,330,750
    where info, allocations and stacks said 11,330,749. Here two samples of one type, 0.4 each over
    a whole number in two intervals: per interval they round down, per type up."""
    db = env.fixture_db('rounding.db', 'sampled')
    con = sqlite3.connect(db)
    for gc in (1, 2):
        con.execute('UPDATE alloc_samples SET est_count = est_count + 0.4 WHERE rowid ='
                    ' (SELECT min(rowid) FROM alloc_samples WHERE gc = ? AND type_id = 2)', (gc,))
    con.commit()
    con.close()
    doc = env.report_json(db)
    if doc is None:
        return
    info = json_of(env, 'info', db)['totals']
    total = json_of(env, 'allocations', db)['total']
    check(doc['totals']['allocations'] == info['allocations'] == total['count']
          and doc['totals']['allocation_bytes'] == info['allocation_bytes'] == total['bytes'],
          'rounding: report %r, info %r, allocations %r' % (doc['totals'], info, total))
    rows = sum(g['allocated_count'] for g in doc['gcs']) + doc['allocations']['after_last_gc']['count']
    check(rows == info['allocations'] - 1, 'rounding: the fixture rounds apart (%d by GC)' % rows)


def test_errors(env):
    db = env.fixture_db('err.db', 'small')
    notdb = env.path('not-a-db.txt')
    open(notdb, 'w').write('hello\n' * 10)
    os.makedirs(env.path('adir'), exist_ok=True)
    cases = [
        ([env.path('missing.db')], r'heaplens: .*missing\.db does not exist'),
        ([notdb], r'heaplens: .*not a heaplens database.*'),
        ([db, '-o', '/nonexistent-dir/r.html'], r'heaplens: cannot write /nonexistent-dir/r\.html: No such file or directory'),
        ([db, '-o', env.path('adir')], r'heaplens: cannot write .*adir: it is a directory'),
        ([db, '-o', ''], r'heaplens: report: -o needs a file name'),
        ([db, '-o', db], r'heaplens: cannot write (.*)err\.db: it is \1err\.db, which this command reads; name another file'),
        ([db, '-o', db + '-wal'], r'heaplens: cannot write (.*)err\.db-wal: it is \1err\.db-wal, which this command reads; name another file'),
        ([db, '--bogus'], r"heaplens: report: unknown option '--bogus'.*"),
        ([db, '-x'], r"heaplens: report: unknown option '-x'.*"),
        ([], r'heaplens: report: missing FILE.*'),
        ([db, db], r"heaplens: report: unexpected argument .*"),
        ([db, '-o'], r"heaplens: report: option '--output' needs a value.*"),
    ]
    for args, pattern in cases:
        r = run([env.heaplens, 'report'] + args)
        lines = r.stderr.splitlines()
        check(r.returncode == 1 and len(lines) == 1 and re.fullmatch(pattern, lines[0] if lines else ''),
              'error %r: exit %d, stderr %r' % (args, r.returncode, r.stderr))
    # Unwritable directory, as a user that cannot write there (skipped for root).
    if os.geteuid() != 0:
        ro = env.path('ro')
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, 0o555)
        r = run([env.heaplens, 'report', db, '-o', os.path.join(ro, 'r.html')])
        check(r.returncode == 1 and 'Permission denied' in r.stderr, 'unwritable dir: %r' % r.stderr)
        os.chmod(ro, 0o755)
    check(not [f for f in os.listdir(env.workdir) if '.tmp-' in f], 'errors: no temporary file left')

    # An HTML page on a terminal is refused with a hint.
    master, slave = pty.openpty()
    r = subprocess.run([env.heaplens, 'report', db], stdout=slave, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    os.close(master)
    check(r.returncode == 1 and 'needs a file' in r.stderr and len(r.stderr.splitlines()) == 1,
          'html on a terminal: %r' % r.stderr)

    r = run([env.heaplens, 'report', '--help'])
    check(r.returncode == 0 and r.stdout.startswith('usage: heaplens report'), 'report --help')
    r = run([env.heaplens, '--help'])
    check(re.search(r'^  report +the per-GC report', r.stdout, re.M) is not None, 'heaplens --help lists report')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--heaplens', required=True)
    ap.add_argument('--fixture', required=True)
    ap.add_argument('--workdir', required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    env = Env(a.heaplens, a.fixture, a.workdir)
    for test in (test_small, test_allocation_types, test_total_rounding, test_estimates, test_census, test_sim_differential, test_html, test_note_and_empty, test_errors,
                 test_output_targets, test_output_databases):
        before = len(FAILURES)
        test(env)
        print('%s %s' % ('ok  ' if len(FAILURES) == before else 'FAIL', test.__name__))
    if FAILURES:
        print('%d checks failed' % len(FAILURES))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
