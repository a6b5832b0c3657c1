#!/usr/bin/env python3
"""report_browser_test.py -- the `heaplens report` page in a real browser (headless Chromium).

Renders the page of an example recording and checks the DOM after the page's script ran:
  - one <tr data-gc> per GC, in order, each cell's number (data-v, data-before) equal to
    `heaplens gcs --json` and each cell's text equal to `heaplens gcs` (the text table);
  - the SVG plots exist with the expected series (heap size, survivors, pauses, top types);
  - the summary, the note-free header, the "no snapshots" line;
  - sorting and filtering, driven through the URL fragment (#sort=pause&dir=desc, #gen=1, ...);
  - the allocation flame graph of a recording with samples (frames, widths, tooltips, search,
    zoom, the top sites), and the one line that replaces it without samples;
then takes a screenshot at 1280 px (report.png in the work directory). A 10,000-GC recording
checks that large runs stay usable: size, time to ready, one page of rows, the last page,
sorting over all GCs, and plots downsampled to the pixel width.

Exit 77 (skipped) when /usr/bin/chromium is missing.
Usage: report_browser_test.py --heaplens PATH --fixture PATH --workdir DIR [--big-gcs N]
"""
import argparse
import decimal
import html.parser
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse

CHROMIUM = '/usr/bin/chromium'
FAILURES = []
VOID = {'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source',
        'track', 'wbr'}


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print('FAIL', what)
    return cond


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


# ---- a small DOM from Chromium's serialized DOM ---------------------------------------------

class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return ''.join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.iter()

    def find_all(self, tag=None, **attrs):
        for n in self.iter():
            if (tag is None or n.tag == tag) and all(
                    (n.attrs.get(k.replace('_', '-')) == v if v is not True else k.replace('_', '-') in n.attrs)
                    for k, v in attrs.items()):
                yield n

    def find(self, tag=None, **attrs):
        return next(self.find_all(tag, **attrs), None)

    def has_class(self, cls):
        return cls in (self.attrs.get('class') or '').split()


class TreeBuilder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node('#document', {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(html_text):
    b = TreeBuilder()
    b.feed(html_text)
    b.close()
    return b.root


# ---- Chromium --------------------------------------------------------------------------------

def chromium(workdir, args, url):
    profile = tempfile.mkdtemp(dir=workdir, prefix='chromium-')
    cmd = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           '--user-data-dir=' + profile, '--enable-logging=stderr', '--v=0'] + args + [url]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - start
    shutil.rmtree(profile, ignore_errors=True)
    if r.returncode != 0:
        sys.exit('chromium failed (%d): %s' % (r.returncode, r.stderr[-2000:]))
    errors = [line for line in r.stderr.splitlines() if ':CONSOLE' in line and 'Uncaught' in line]
    check(not errors, 'script errors in %s: %s' % (url, errors))
    return r.stdout, elapsed


class Cdp:
    """Chromium driven through the DevTools protocol over a pipe (--remote-debugging-pipe: the
    browser reads commands on fd 3 and writes replies on fd 4, each a JSON text ended by NUL)."""

    def __init__(self, workdir, url):
        self.profile = tempfile.mkdtemp(dir=workdir, prefix='chromium-')
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
             '--disable-background-networking', '--disable-component-update', '--disable-sync',
             '--user-data-dir=' + self.profile, '--remote-debugging-pipe', '--window-size=1280,1000', url],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=child_fds)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf, self.next_id, self.session = b'', 0, None
        page = next(t for t in self.call('Target.getTargets')['targetInfos'] if t['type'] == 'page')
        self.session = self.call('Target.attachToTarget', targetId=page['targetId'], flatten=True)['sessionId']
        deadline = time.monotonic() + 60
        while not self.js("!!(document.body && document.body.hasAttribute('data-ready-ms'))"):
            if time.monotonic() > deadline:
                raise RuntimeError('the page never became ready')
            time.sleep(0.1)
        self.js("window.__errors = []; window.addEventListener('error', e => window.__errors.push(e.message))")

    def call(self, method, **params):
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params}
        if self.session and not method.startswith(('Target.', 'Browser.')):
            msg['sessionId'] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b'\0')
        while True:
            while b'\0' not in self.buf:
                chunk = os.read(self.from_chrome, 65536)
                if not chunk:
                    raise RuntimeError('chromium closed the pipe')
                self.buf += chunk
            raw, self.buf = self.buf.split(b'\0', 1)
            reply = json.loads(raw)
            if reply.get('id') == self.next_id:
                if 'error' in reply:
                    raise RuntimeError('%s: %s' % (method, reply['error']))
                return reply['result']

    def js(self, expression):
        r = self.call('Runtime.evaluate', expression=expression, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r:
            raise RuntimeError('%s: %s' % (expression[:80], r['exceptionDetails']))
        return r['result'].get('value')

    def close(self):
        try:
            self.call('Browser.close')
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


# What the page shows, read in the page: GC ordinals of the table's rows, and so on.
JS_ROWS = "Array.from(document.querySelectorAll('#gc-table tbody tr[data-gc]')).map(r => +r.dataset.gc)"
JS_SLEEP = "new Promise(r => setTimeout(r, %d))"


def test_rounding(a, heaplens, workdir):
    """Sizes and pauses on a rounding tie print in the page exactly as `heaplens gcs` prints them."""
    db = os.path.join(workdir, 'ties.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'ties', db])
    assert r.returncode == 0, r.stderr
    page = os.path.join(workdir, 'ties.html')
    assert run([heaplens, 'report', db, '-o', page]).returncode == 0
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    gcs_json = json.loads(run([heaplens, 'gcs', db, '--json']).stdout)['rows']
    text = gcs_text(heaplens, db)
    check(len(text) == 2 and text[1]['before']['gen0'] == '1.2 KiB', 'ties: heaplens gcs prints %r' % text.get(1))
    dom, _ = dump_dom(workdir, page)
    check_rows(dom, gcs_json, text, {g['gc']: g for g in doc['gcs']}, 'ties')


def test_interaction(a, heaplens, workdir):
    """Clicks, typing and hovering, as a user would (DOM events through the DevTools protocol)."""
    db = os.path.join(workdir, 'example.db')
    page = os.path.join(workdir, 'report.html')
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    gcs = doc['gcs']
    cdp = Cdp(workdir, 'file://' + urllib.parse.quote(os.path.abspath(page)))
    try:
        check(cdp.js(JS_ROWS) == [g['gc'] for g in gcs], 'click: every GC at first')
        cdp.js("document.querySelector('#gc-table th[data-k=pause]').click()")
        check(cdp.js(JS_ROWS) == sorted_gcs(doc, lambda g: g['pause_ns'], True), 'click: pause header sorts, longest first')
        check(cdp.js('location.hash') == '#sort=pause&dir=desc', 'click: the sort is in the URL: %r' % cdp.js('location.hash'))
        cdp.js("document.querySelector('#gc-table th[data-k=pause]').click()")
        check(cdp.js(JS_ROWS) == sorted_gcs(doc, lambda g: g['pause_ns'], False), 'click: again, shortest first')
        cdp.js("document.querySelector('#gc-table th[data-k=gc]').click()")
        cdp.js("document.querySelector('#f-gen button[data-v=\"1\"]').click()")
        check(cdp.js(JS_ROWS) == [g['gc'] for g in gcs if g['generation'] == 1], 'click: gen1 filter')
        cdp.js("document.querySelector('#f-gen button[data-v=\"\"]').click()")
        cdp.js("var f = document.getElementById('f-text'); f.value = 'pause>0.15 compacting';"
               "f.dispatchEvent(new Event('input'))")
        cdp.js(JS_SLEEP % 400)
        check(cdp.js(JS_ROWS) == [g['gc'] for g in gcs if g['pause_ns'] > 150000 and g['compacting']],
              'typing: "pause>0.15 compacting" filters')
        cdp.js("var f = document.getElementById('f-text'); f.value = ''; f.dispatchEvent(new Event('input'))")
        cdp.js(JS_SLEEP % 400)
        check(len(cdp.js(JS_ROWS)) == len(gcs), 'typing: clearing the filter shows every GC')

        # Hover the middle of the heap plot: a tooltip names a GC; a click shows it in the table.
        hover = cdp.js("""(() => {
            const hit = document.querySelector('#plot-heap .hit'), r = hit.getBoundingClientRect();
            const ev = {clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true};
            hit.dispatchEvent(new MouseEvent('mousemove', ev));
            const tip = document.getElementById('tip');
            const shown = !tip.hidden && tip.textContent;
            hit.dispatchEvent(new MouseEvent('click', ev));
            const row = document.querySelector('#gc-table tr.hl');
            return {tip: shown, row: row && +row.dataset.gc,
                    cursor: document.querySelector('#plot-heap .cursor').getAttribute('visibility')};
        })()""")
        m = re.match(r'GC (\d+)', hover['tip'] or '')
        check(m is not None and hover['cursor'] == 'visible', 'hover: tooltip and cursor %r' % hover)
        check(m is not None and hover['row'] == int(m.group(1)), 'click on a plot: highlights GC %r' % hover)

        # A legend key hides its series, and shows it again.
        series = "Array.from(document.querySelectorAll('#plot-heap path[data-series]')).map(p => p.dataset.series)"
        before = cdp.js(series)
        key = before[0]
        cdp.js("document.querySelector('#plot-heap .key[data-key=\"%s\"]').click()" % key)
        check(cdp.js(series) == before[1:], 'legend: clicking %s hides it' % key)
        cdp.js("document.querySelector('#plot-heap .key[data-key=\"%s\"]').click()" % key)
        check(cdp.js(series) == before, 'legend: clicking %s again shows it' % key)

        # Resizing redraws the plots to the new width.
        cdp.call('Emulation.setDeviceMetricsOverride', width=900, height=1000, deviceScaleFactor=1, mobile=False)
        cdp.js(JS_SLEEP % 500)
        w = cdp.js("+document.querySelector('#plot-heap svg').getAttribute('width')")
        check(w and w < 900, 'resize: plots redrawn at %r px' % w)
        errors = cdp.js("window.__errors")
        check(errors == [], 'no script errors: %r' % errors)
    finally:
        cdp.close()


def test_checkpoints(a, heaplens, workdir):
    """The program's checkpoints: a dashed mark on every plot after the GC each follows, named,
    and a table of them under the snapshots' section (none of these without checkpoints)."""
    db = os.path.join(workdir, 'checkpoints.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'sim', '40', '7', db])
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(db)
    con.executemany('INSERT INTO checkpoints (name, gc, time_ns, thread) VALUES (?, ?, 0, 7)',
                    [('warm', 10), ('steady', 25)])
    con.commit()
    con.close()
    page = os.path.join(workdir, 'checkpoints.html')
    r = run([heaplens, 'report', db, '-o', page])
    assert r.returncode == 0, r.stderr
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    check([(c['name'], c['gc']) for c in doc['checkpoints']] == [('warm', 10), ('steady', 25)],
          'checkpoints: report --json lists them')
    dom, _ = dump_dom(workdir, page)
    heap = dom.find(id='plot-heap')
    marks = [g for g in heap.iter() if g.tag == 'g' and g.has_class('checkpoint')] if heap else []
    check([m.find('text').text() for m in marks] == ['warm', 'steady'],
          'checkpoints: the heap plot marks them, named: %r' % [m.text() for m in marks])
    table = dom.find('table', id='checkpoint-table')
    rows = [[td.text() for td in tr.find_all('td')] for tr in table.find('tbody').find_all('tr')] if table else []
    check([r[:2] for r in rows] == [['warm', '10'], ['steady', '25']],
          'checkpoints: listed with their GC: %r' % rows)


def dump_dom(workdir, page, fragment=''):
    url = 'file://' + urllib.parse.quote(os.path.abspath(page)) + (('#' + fragment) if fragment else '')
    out, elapsed = chromium(workdir, ['--dump-dom'], url)
    return parse(out), elapsed


def table_rows(dom):
    table = dom.find('table', id='gc-table')
    body = table.find('tbody') if table else None
    return [tr for tr in body.find_all('tr')] if body else []


def cells(tr):
    return {td.attrs['data-k']: td for td in tr.find_all('td') if 'data-k' in td.attrs}


# ---- the text table of `heaplens gcs` ---------------------------------------------------------

SIZE = r'(-?[\d.]+ (?:B|KiB|MiB|GiB|TiB))'
GCS_LINE = re.compile(r'^\s*([\d,]+)\s+(\d+)\s+(\S+)\s+(yes|no)\s+(yes|no)\s+([\d.]+)\s+' +
                      r'\s+'.join([SIZE + r'\s+→\s+' + SIZE] * 5) + r'\s+' + SIZE + r'\s*$')
GENS5 = ['gen0', 'gen1', 'gen2', 'loh', 'poh']


def gcs_text(heaplens, db):
    r = run([heaplens, 'gcs', db])
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines()[1:]:
        m = GCS_LINE.match(line)
        if not m:
            continue
        g = m.groups()
        gc = int(g[0].replace(',', ''))
        rows[gc] = {'pause': g[5], 'before': dict(zip(GENS5, g[6:16:2])), 'after': dict(zip(GENS5, g[7:16:2])),
                    'survived': g[16]}
    return rows


def num(text):
    if text == '':
        return None
    v = float(text)
    return int(v) if v.is_integer() and 'e' not in text and '.' not in text else v


# ---- checks ------------------------------------------------------------------------------------

def check_rows(dom, gcs_json, text, derived, label, expect_order=None):
    """The rows of the GC table: in `expect_order` (default: every GC in order), numbers equal to
    `heaplens gcs --json` (gcs_json) and, for what only the report has (survival rate, pinned
    objects), to the report's document (derived: gc -> row); texts equal to `heaplens gcs`."""
    rows = table_rows(dom)
    want = expect_order if expect_order is not None else [g['gc'] for g in gcs_json]
    got = [int(tr.attrs['data-gc']) for tr in rows if 'data-gc' in tr.attrs]
    check(got == want, '%s: rows %s... want %s...' % (label, got[:8], want[:8]))
    by_gc = {g['gc']: dict(g, **{k: derived[g['gc']][k] for k in ('survival_rate', 'pinned_objects')})
             for g in gcs_json}
    for tr in rows:
        if 'data-gc' not in tr.attrs:
            continue
        gc = int(tr.attrs['data-gc'])
        g, c, t = by_gc[gc], cells(tr), text.get(gc)
        expect = {'gc': g['gc'], 'gen': g['generation'], 'reason': g['reason'], 'induced': int(g['induced']),
                  'compacting': int(g['compacting']), 'pause': g['pause_ns'], 'promoted': g['survived_bytes'],
                  'survival': g['survival_rate'], 'pinned': g['pinned_objects']}
        for k, v in expect.items():
            raw = c[k].attrs.get('data-v', '') if k in c else '<missing>'
            got_v = raw if k == 'reason' else num(raw)
            check(got_v == v, '%s: GC %d %s: page %r, database %r' % (label, gc, k, raw, v))
        for gen in GENS5:
            td = c.get(gen)
            if not check(td is not None, '%s: GC %d has no %s cell' % (label, gc, gen)):
                continue
            check(num(td.attrs.get('data-v', '')) == g['size_after'][gen], '%s: GC %d %s after' % (label, gc, gen))
            check(num(td.attrs.get('data-before', '')) == g['size_before'][gen], '%s: GC %d %s before' % (label, gc, gen))
            if t:
                a = td.find('span', **{'class': 'a'})
                b = td.find('span', **{'class': 'b'})
                check(a is not None and a.text() == t['after'][gen] and b is not None and b.text() == t['before'][gen],
                      '%s: GC %d %s text %r/%r, heaplens gcs %r/%r' % (label, gc, gen, a and a.text(), b and b.text(),
                                                                       t['after'][gen], t['before'][gen]))
        if t:
            check(c['pause'].text() == t['pause'], '%s: GC %d pause text %r vs %r' % (label, gc, c['pause'].text(), t['pause']))
            check(c['promoted'].text() == t['survived'], '%s: GC %d promoted text' % (label, gc))
        want_pinned = '\u2014' if g['pinned_objects'] is None else '{:,}'.format(g['pinned_objects'])
        check(c['pinned'].text() == want_pinned, '%s: GC %d pinned %r, want %r (gcs.pinned_roots)'
              % (label, gc, c['pinned'].text(), want_pinned))
        if g['survival_rate'] is not None:
            # Number.prototype.toFixed: the exact value, ties away from zero.
            pct = decimal.Decimal(g['survival_rate'] * 100).quantize(decimal.Decimal('0.1'), decimal.ROUND_HALF_UP)
            check(c['survival'].text() == '%s%%' % pct, '%s: GC %d survival text %r, want %s%%' % (
                label, gc, c['survival'].text(), pct))
    return rows


def series_of(dom, fig_id):
    fig = dom.find(id=fig_id)
    svg = fig.find('svg') if fig else None
    if svg is None:
        return None
    return {p.attrs.get('data-series') for p in svg.find_all('path') if 'data-series' in p.attrs}


def expected_plot_series(doc):
    nz = lambda vals: any(v for v in vals if v)
    heap = {g for g in GENS5 if nz([r['size_after'][g] for r in doc['gcs']])}
    if heap:
        heap.add('total')
    surv = {g for g, v in doc['plots']['survivors']['series'].items() if nz(v)}
    pauses = {'gen%d' % k for k in range(3) if any(r['generation'] == k and r['pause_ns'] for r in doc['gcs'])}
    types = {'type%d' % k for k, t in enumerate(doc['plots']['top_types']['types']) if nz(t['bytes'])}
    return {'plot-heap': heap, 'plot-survivors': surv, 'plot-pauses': pauses, 'plot-types': types}


def sorted_gcs(doc, key, desc):
    rows = [g for g in doc['gcs'] if key(g) is not None]
    nulls = [g['gc'] for g in doc['gcs'] if key(g) is None]
    rows.sort(key=lambda g: (-key(g) if desc else key(g), g['gc']))
    return [g['gc'] for g in rows] + nulls


def test_example(a, heaplens, workdir):
    db = os.path.join(workdir, 'example.db')
    if os.path.exists(db):
        os.unlink(db)
    if a.example_db:
        shutil.copy(a.example_db, db)
    else:
        r = run([a.fixture, 'sim', '40', '7', db])
        assert r.returncode == 0, r.stderr
    page = os.path.join(workdir, 'report.html')
    r = run([heaplens, 'report', db, '-o', page])
    assert r.returncode == 0, r.stderr
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    gcs_json = json.loads(run([heaplens, 'gcs', db, '--json']).stdout)['rows']
    text = gcs_text(heaplens, db)
    derived = {g['gc']: g for g in doc['gcs']}
    check(len(text) == len(gcs_json), 'example: parsed %d of %d lines of heaplens gcs' % (len(text), len(gcs_json)))

    dom, elapsed = dump_dom(workdir, page)
    print('example: %d GCs, page %.1f KiB, rendered in %.1f s' % (len(gcs_json), os.path.getsize(page) / 1024, elapsed))
    check(dom.find('body').attrs.get('data-ready-ms') is not None, 'example: the page script ran to the end')
    check_rows(dom, gcs_json, text, derived, 'example')
    for fig, want in expected_plot_series(doc).items():
        got = series_of(dom, fig)
        check(got == want, 'example: %s series %r, want %r' % (fig, got, want))
    check(dom.find(id='file').text() == 'example.db', 'example: file name in the header')
    check(dom.find(id='status').text() == doc['run']['status'], 'example: status pill')
    check(dom.find(id='command').text() == doc['run']['command'], 'example: command line')
    summary = dom.find(id='summary').text()
    t = doc['totals']
    for piece in ['%s' % t['gcs'], 'gen0 %d' % t['gcs_by_generation']['gen0'], 'gen1 %d' % t['gcs_by_generation']['gen1'],
                  'gen2 %d' % t['gcs_by_generation']['gen2'], '%d induced' % t['gcs_induced'], doc['run']['mode']]:
        check(piece in summary, 'example: summary shows %r' % piece)
    note = dom.find(id='note')
    check(note is not None and ('hidden' in note.attrs) == (doc['note'] is None), 'example: note shown iff any')
    snaps = dom.find(id='snapshots').text()
    check('No snapshots in this recording' in snaps, 'example: no-snapshots line %r' % snaps)
    no_stacks = dom.find(id='no-stacks')
    check(doc['allocation_stacks'] is None and no_stacks is not None and
          'No allocation stacks in this recording' in no_stacks.text() and dom.find('svg', id='flame-svg') is None,
          'example: one line instead of the flame graph')
    types = dom.find(id='plot-types').find('table')
    check(types is not None and len(list(types.find_all('tr', data_key=True))) == len(doc['plots']['top_types']['types']),
          'example: one legend row per top type')
    check(dom.find(id='gc-count').text() == str(len(gcs_json)), 'example: GC count in the table head')

    # Sorting and filtering, through the fragment.
    for frag, key, desc in [('sort=pause&dir=desc', lambda g: g['pause_ns'], True),
                            ('sort=gen2', lambda g: g['size_after']['gen2'], False),
                            ('sort=survival&dir=desc', lambda g: g['survival_rate'], True),
                            ('sort=reason&dir=desc', None, True)]:
        d, _ = dump_dom(workdir, page, frag)
        if key is None:  # text column: descending by reason, then by GC
            want = [g['gc'] for g in sorted(doc['gcs'], key=lambda g: g['gc'])]
            want.sort(key=lambda gc: next(x['reason'] for x in doc['gcs'] if x['gc'] == gc), reverse=True)
        else:
            want = sorted_gcs(doc, key, desc)
        check_rows(d, gcs_json, text, derived, '#' + frag, expect_order=want)
        th = d.find('th', data_k=frag.split('&')[0].split('=')[1])
        check(th is not None and th.has_class('sorted'), '#%s: its header is marked' % frag)
    for frag, pred in [('gen=1', lambda g: g['generation'] == 1),
                       ('induced=yes', lambda g: g['induced']),
                       ('induced=no&gen=0', lambda g: not g['induced'] and g['generation'] == 0),
                       ('q=pause%3E0.2', lambda g: g['pause_ns'] > 200000),
                       ('q=gen2%3E%3D50KiB%20compacting', lambda g: g['size_after']['gen2'] >= 50 * 1024 and g['compacting']),
                       ('q=induced', lambda g: g['induced'])]:
        d, _ = dump_dom(workdir, page, frag)
        want = [g['gc'] for g in doc['gcs'] if pred(g)]
        check_rows(d, gcs_json, text, derived, '#' + frag, expect_order=want)
    d, _ = dump_dom(workdir, page, 'q=no-such-thing')
    check(not [tr for tr in table_rows(d) if 'data-gc' in tr.attrs] and 'No GC matches' in d.find(id='gc-table').text(),
          '#q=no-such-thing: an empty table says so')

    shot = os.path.join(workdir, 'report.png')
    chromium(workdir, ['--screenshot=' + shot, '--window-size=1280,2000', '--hide-scrollbars'],
             'file://' + urllib.parse.quote(os.path.abspath(page)))
    check(os.path.exists(shot) and os.path.getsize(shot) > 20000, 'example: screenshot %s' % shot)
    print('example: screenshot %s' % shot)


FLAME_FRAMES = ['all', 'App.Program.Main', 'App.Program.Run', 'App.Names.Make', 'System.String',
                'App.Tree.Build', 'App.Tree.NewNode', 'App.Node', 'App.Cache.Fill', 'System.Byte[]',
                '[native]', '[no stack captured]']
JS_FRAMES = ("Array.from(document.querySelectorAll('#flame-svg g.frame')).map(g => ({name: g.dataset.name, "
             "match: g.classList.contains('match'), w: +g.querySelector('rect').getAttribute('width'), "
             "x: g.transform.baseVal.consolidate().matrix.e}))")


def test_stacks(a, heaplens, workdir):
    """The allocation flame graph and the top sites of a recording with samples whose every figure
    is known (tests/unit/common/hl_stack_fixture.h): frames, widths, tooltips, search, zoom."""
    db = os.path.join(workdir, 'stacks.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'stacks', db])
    assert r.returncode == 0, r.stderr
    # The exact counts made what the samples estimate: the sites, scaled to each type's count
    # (query/stacks.h), keep the estimates of hl_stack_fixture.h that this test spells out.
    con = sqlite3.connect(db)
    con.executescript(
        'DELETE FROM alloc_counts; INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes,'
        ' survived, survived_bytes, flags) SELECT gc, type_id, thread, heap, round(sum(est_count)),'
        ' round(sum(est_bytes)), 0, 0, 0 FROM alloc_samples GROUP BY 1, 2, 3, 4')
    con.close()
    page = os.path.join(workdir, 'stacks.html')
    r = run([heaplens, 'report', db, '-o', page])
    assert r.returncode == 0, r.stderr
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    stacks = json.loads(run([heaplens, 'stacks', db, '--json']).stdout)
    A = doc['allocation_stacks']
    check(A is not None and A['total'] == {'count': 11610, 'bytes': 448400, 'samples': 9, 'sites': 6},
          'stacks: the document holds the totals %r' % (A and A['total']))
    check(A['top_sites'] == stacks['rows'], 'stacks: the top sites are the rows of heaplens stacks --json')

    dom, _ = dump_dom(workdir, page)
    svg = dom.find('svg', id='flame-svg')
    check(svg is not None, 'stacks: the flame graph is drawn')
    frames = [g for g in svg.find_all('g') if g.has_class('frame')] if svg else []
    names = [g.attrs.get('data-name') for g in frames]
    check(sorted(set(names)) == sorted(FLAME_FRAMES), 'stacks: frames %r' % sorted(set(names)))
    titles = [g.find('title').text() for g in frames]
    for name in FLAME_FRAMES:
        check(any(t.startswith(name + '\n') or t.startswith(name + ' (type') for t in titles),
              'stacks: a <title> tooltip names %s' % name)
    labels = [t.text() for t in svg.find_all('text')] if svg else []
    for name in ['App.Program.Main', 'App.Program.Run', 'App.Names.Make', 'App.Tree.NewNode', 'System.String']:
        check(name in labels, 'stacks: %s is written in its frame (labels %r)' % (name, labels))
    main_title = next((t for t in titles if t.startswith('App.Program.Main\n')), '')
    check('416.0 KiB (95.0%), 11,010 allocations (estimated)' in main_title, 'stacks: tooltip %r' % main_title)
    sites = dom.find('table', id='site-table')
    rows = list(sites.find('tbody').find_all('tr')) if sites else []
    check([tr.attrs.get('data-type') for tr in rows] == [r['type'] for r in stacks['rows']],
          'stacks: one site row per site, heaviest first')
    check(rows and [td for td in rows[0].find_all('td') if td.has_class('stack')][0].text() ==
          'App.Names.Make \u2190 App.Program.Run \u2190 App.Program.Main', 'stacks: the stack of the first site')
    check('estimated from 9 samples, mean distance 102,400 bytes' in dom.find(id='flame-note').text(),
          'stacks: the estimate is said')

    cdp = Cdp(workdir, 'file://' + urllib.parse.quote(os.path.abspath(page)))
    try:
        cdp.call('Emulation.setDeviceMetricsOverride', width=1280, height=1000, deviceScaleFactor=1, mobile=False)
        cdp.js(JS_SLEEP % 300)
        got = cdp.js(JS_FRAMES)
        width = {f['name']: f['w'] for f in got if f['name'] in ('all', 'App.Program.Main')}
        check(abs(width['App.Program.Main'] + 1 - (width['all'] + 1) * 426000 / 448400) < 1.5,
              'widths: App.Program.Main holds 426,000 of 448,400 bytes: %r' % width)
        check(width['all'] > 1100, 'widths: the graph fills the card at 1280 px (%r)' % width['all'])
        # Search: case-insensitive, every matching frame marked, its share of the bytes said.
        cdp.js("var f = document.getElementById('flame-q'); f.value = 'names.make'; f.dispatchEvent(new Event('input'))")
        cdp.js(JS_SLEEP % 300)
        got = cdp.js(JS_FRAMES)
        check(sorted(f['name'] for f in got if f['match']) == ['App.Names.Make', 'App.Names.Make'],
              'search: both App.Names.Make frames are marked, nothing else: %r' % [f['name'] for f in got if f['match']])
        said = cdp.js("document.getElementById('flame-match').textContent")
        check(said == '2 matching frames, 281.2 KiB (64.2% of the bytes)', 'search: %r' % said)
        fill = cdp.js("getComputedStyle(document.querySelector('#flame-svg g.match rect')).fill")
        check(fill == 'rgb(224, 64, 251)', 'search: marked frames are highlighted (%r)' % fill)
        cdp.js("var f = document.getElementById('flame-q'); f.value = 'Program'; f.dispatchEvent(new Event('input'))")
        cdp.js(JS_SLEEP % 300)
        said = cdp.js("document.getElementById('flame-match').textContent")
        check(said == '2 matching frames, 416.0 KiB (95.0% of the bytes)', 'search: nested matches count once: %r' % said)
        # Zoom: a click on App.Tree.Build shows its ancestors and its subtree only, full width.
        cdp.js("document.querySelector('#flame-svg g.frame[data-name=\"App.Tree.Build\"] rect')"
               ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        got = cdp.js(JS_FRAMES)
        check([f['name'] for f in got] == ['all', 'App.Program.Main', 'App.Program.Run', 'App.Tree.Build',
                                           'App.Tree.NewNode', 'App.Node'], 'zoom: %r' % [f['name'] for f in got])
        check(len({round(f['w']) for f in got}) == 1 and all(f['x'] == 0 for f in got), 'zoom: full width')
        check([f['name'] for f in got if f['match']] == ['App.Program.Main', 'App.Program.Run'],
              'zoom: the search marks stay')
        cdp.js("document.getElementById('flame-reset').click()")
        def nodes(n):
            return 1 + sum(nodes(c) for c in n['children'])
        check(len(cdp.js(JS_FRAMES)) == nodes(A['flame']) == 16, 'zoom: reset shows every frame again')
        errors = cdp.js("window.__errors")
        check(errors == [], 'stacks: no script errors: %r' % errors)
    finally:
        cdp.close()
    shot = os.path.join(workdir, 'stacks.png')
    chromium(workdir, ['--screenshot=' + shot, '--window-size=1280,2200', '--hide-scrollbars'],
             'file://' + urllib.parse.quote(os.path.abspath(page)))
    check(os.path.exists(shot) and os.path.getsize(shot) > 20000, 'stacks: screenshot %s' % shot)
    print('stacks: screenshot %s' % shot)


def test_estimates(a, heaplens, workdir):
    """A sampled recording (report_fixture sampled): the page says at the top that allocation
    figures are estimates and marks every one of them (card, plot title, top allocating types,
    GC table column) with \u2248 / est.; a full recording (report_fixture stacks) marks none."""
    for mode in ('sampled', 'stacks'):
        est = mode == 'sampled'
        db = os.path.join(workdir, 'est-%s.db' % mode)
        if os.path.exists(db):
            os.unlink(db)
        r = run([a.fixture, mode, db])
        assert r.returncode == 0, r.stderr
        page = os.path.join(workdir, 'est-%s.html' % mode)
        r = run([heaplens, 'report', db, '-o', page])
        assert r.returncode == 0, r.stderr
        doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
        dom, _ = dump_dom(workdir, page)
        label = 'estimates (%s)' % mode
        note = dom.find(id='estimates-note')
        if est:
            check(note is not None and 'hidden' not in note.attrs and 'ESTIMATES' in note.text() and
                  '9 allocation samples' in note.text() and '3 samples were lost' in note.text(),
                  '%s: the note at the top %r' % (label, note and note.text()))
        else:
            check(note is not None and 'hidden' in note.attrs, '%s: no estimates note' % label)
        summary = dom.find(id='summary').text()
        check(('Allocated (est.)' in summary and '\u2248 11,612' in summary) if est else
              ('Allocated (est.)' not in summary and '\u2248' not in summary), '%s: card %r' % (label, summary))
        title = dom.find(id='plot-allocated').find('h2').text()
        check(title == ('\u2248 Allocated per GC interval (estimated)' if est else 'Allocated per GC interval'),
              '%s: plot title %r' % (label, title))
        svg = dom.find(id='plot-allocated').find('svg')
        check(svg is not None and svg.find('path', data_series='allocated') is not None, '%s: the plot is drawn' % label)
        top = dom.find(id='plot-allocated').find('table')
        head = top.find('thead').text() if top and top.find('thead') else ''
        check(('top allocating types (est.)' in head) == est, '%s: top types header %r' % (label, head))
        first = top.find('tbody').find('tr') if top and top.find('tbody') else None
        want_first = doc['allocations']['top_types'][0]['type']
        check(first is not None and first.find('td').text() == want_first, '%s: heaviest type %r' % (label, want_first))
        header = dom.find('table', id='gc-table').find('thead').text()
        check(('\u2248 allocated (est.)' in header) == est and 'allocated' in header, '%s: column header %r' % (label, header))
        for tr in table_rows(dom):
            c = cells(tr).get('allocated')
            g = next(x for x in doc['gcs'] if x['gc'] == int(tr.attrs['data-gc']))
            check(c is not None and num(c.attrs.get('data-v', '')) == g['allocated_bytes'] and
                  c.text().startswith('\u2248 ') == est, '%s: GC %s allocated cell %r' % (label, g['gc'], c and c.text()))
        # survivors and top types: estimates between snapshots only where samples are followed
        for fig, name in (('plot-survivors', 'Survivors per generation'), ('plot-types', 'Top types by live bytes')):
            h = dom.find(id=fig).find('h2').text()
            check(h == name, '%s: %s title %r (no sample followed)' % (label, fig, h))
        summary_all = dom.find(id='summary').text()
        check('followed objects' not in summary_all and ' alive at the end' in summary_all,
              '%s: alive at the end unmarked (no sample followed) %r' % (label, summary_all))
        page_text = dom.find('main').text()
        if not est:
            check('\u2248' not in page_text.replace('\u2248 allocated', ''), '%s: nothing marked as an estimate' % label)


def test_followed(a, heaplens, workdir):
    """A sampled recording that follows its samples (report_fixture sampled with run.flags
    samples-followed, no snapshot): the survivors and top types plots are estimates, and their
    titles say so."""
    db = os.path.join(workdir, 'followed.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'sampled', db])
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(db)
    con.execute("UPDATE run SET flags = 'samples-followed'")
    con.commit()
    con.close()
    page = os.path.join(workdir, 'followed.html')
    r = run([heaplens, 'report', db, '-o', page])
    assert r.returncode == 0, r.stderr
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    check(doc['plots']['survivors']['estimated'] is True and doc['plots']['top_types']['estimated'] is True,
          'followed: plots estimated %r' % {k: doc['plots'][k]['estimated'] for k in ('survivors', 'top_types')})
    dom, _ = dump_dom(workdir, page)
    for fig, name in (('plot-survivors', 'Survivors per generation'), ('plot-types', 'Top types by live bytes')):
        h = dom.find(id=fig).find('h2').text()
        check(h == '\u2248 %s (estimated between snapshots)' % name, 'followed: %s title %r' % (fig, h))
    summary = dom.find(id='summary').text()
    check('followed objects alive at the end' in summary, 'followed: card %r' % summary)


def test_census(a, heaplens, workdir):
    """A sampled recording with the census of gen0 (report_fixture census: intervals 1 and 2
    counted exactly, GC 3 and the tail estimated): the GC table has the census's time column
    (as `heaplens gcs` prints it), only GC 3's allocated cell is marked \u2248, the card says
    the total is exact up to the last GC, and the plot and top types are not marked estimates."""
    db = os.path.join(workdir, 'census.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'census', db])
    assert r.returncode == 0, r.stderr
    page = os.path.join(workdir, 'census.html')
    r = run([heaplens, 'report', db, '-o', page])
    assert r.returncode == 0, r.stderr
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    dom, _ = dump_dom(workdir, page)
    header = dom.find('table', id='gc-table').find('thead').text()
    check('census (ms)' in header and '\u2248 allocated' not in header, 'census: column headers %r' % header)
    for tr in table_rows(dom):
        c = cells(tr)
        g = next(x for x in doc['gcs'] if x['gc'] == int(tr.attrs['data-gc']))
        want = '\u2014' if g['census_ns'] is None else '%.3f' % (round(g['census_ns'] / 1000) / 1000)
        check(c.get('census') is not None and c['census'].text() == want,
              'census: GC %s census cell %r, want %r' % (g['gc'], c.get('census') and c['census'].text(), want))
        check(c.get('allocated') is not None and
              c['allocated'].text().startswith('\u2248 ') == (g['census_objects'] is None),
              'census: GC %s allocated cell %r' % (g['gc'], c.get('allocated') and c['allocated'].text()))
    summary = dom.find(id='summary').text()
    check('Allocated (est.)' not in summary and 'exact up to the last GC' in summary,
          'census: card %r' % summary)
    title = dom.find(id='plot-allocated').find('h2').text()
    check(title == 'Allocated per GC interval', 'census: plot title %r' % title)
    head = dom.find(id='plot-allocated').find('table').find('thead').text()
    check('(exact up to the last GC)' in head and '(est.)' not in head, 'census: top types header %r' % head)
    note = dom.find(id='estimates-note')
    check(note is not None and 'hidden' not in note.attrs and 'EXACT' in note.text(),
          'census: the note at the top %r' % (note and note.text()))


def test_waits(a, heaplens, workdir):
    """Full mode's threads waited 5 min 15 s (stop 17's stress run): the card reads it as a
    duration, not as 315445.336 ms."""
    db = os.path.join(workdir, 'waits.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'ties', db])
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(db) as con:
        con.execute("INSERT OR REPLACE INTO counters (name, value) VALUES"
                    " ('thread_waits', 854), ('thread_wait_ns', 315445336000)")
    page = os.path.join(workdir, 'waits.html')
    r = run([heaplens, 'report', db, '-o', page])
    assert r.returncode == 0, r.stderr
    dom, _ = dump_dom(workdir, page)
    summary = dom.find(id='summary').text()
    # the card's label, then its value (text() joins them)
    check('Threads waited5 min 15 s854 waits' in summary, 'waits: card %r' % summary)


def path_points(d):
    return len(re.findall(r'[ML]', d or ''))


def test_big(a, heaplens, workdir):
    n = a.big_gcs
    db = os.path.join(workdir, 'big.db')
    if os.path.exists(db):
        os.unlink(db)
    r = run([a.fixture, 'sim', str(n), '11', db])
    assert r.returncode == 0, r.stderr
    page = os.path.join(workdir, 'big.html')
    start = time.monotonic()
    r = run([heaplens, 'report', db, '-o', page])
    made = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    doc = json.loads(run([heaplens, 'report', db, '--json']).stdout)
    gcs_json = json.loads(run([heaplens, 'gcs', db, '--json']).stdout)['rows']
    text = gcs_text(heaplens, db)
    derived = {g['gc']: g for g in doc['gcs']}
    size = os.path.getsize(page)

    # Baseline: Chromium on an empty page, to tell the page's own cost from the browser's start.
    empty = os.path.join(workdir, 'empty.html')
    open(empty, 'w').write('<!DOCTYPE html><title>empty</title>')
    _, base = dump_dom(workdir, empty)
    dom, elapsed = dump_dom(workdir, page)
    ready = dom.find('body').attrs.get('data-ready-ms')
    print('big: %d GCs: report written in %.2f s, %.1f MiB; Chromium %.1f s (empty page %.1f s), '
          'page ready %s ms after navigation start' % (n, made, size / 1048576, elapsed, base, ready))
    check(ready is not None, 'big: the page script ran to the end')
    check_rows(dom, gcs_json, text, derived, 'big page 1',
               expect_order=[g['gc'] for g in gcs_json[:100]])
    check(dom.find(id='pg-info').text() == 'rows 1\u2013100 of %s' % format(n, ','), 'big: pager %r' % dom.find(id='pg-info').text())
    for fig in ['plot-heap', 'plot-survivors', 'plot-types']:
        svg = dom.find(id=fig).find('svg')
        width = float(svg.attrs['width'])
        for p in svg.find_all('path'):
            pts = path_points(p.attrs.get('d'))
            check(0 < pts <= 4 * width, 'big: %s %s has %d points for %d px (M4)' % (fig, p.attrs.get('data-series'), pts, width))
    check(not list(dom.find(id='plot-heap').find_all('circle')), 'big: no point markers')

    d, _ = dump_dom(workdir, page, 'rows=1000&page=%d' % ((n + 999) // 1000))
    last = gcs_json[((n - 1) // 1000) * 1000:]
    check_rows(d, gcs_json, text, derived, 'big last page', expect_order=[g['gc'] for g in last])
    d, _ = dump_dom(workdir, page, 'sort=pause&dir=desc')
    check_rows(d, gcs_json, text, derived, 'big sorted',
               expect_order=sorted_gcs(doc, lambda g: g['pause_ns'], True)[:100])
    d, _ = dump_dom(workdir, page, 'gen=2&rows=all')
    check_rows(d, gcs_json, text, derived, 'big gen2',
               expect_order=[g['gc'] for g in gcs_json if g['generation'] == 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--heaplens', required=True)
    ap.add_argument('--fixture', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--big-gcs', type=int, default=10000)
    ap.add_argument('--example-db', help='a recording to use as the example instead of a simulated one')
    a = ap.parse_args()
    if not os.access(CHROMIUM, os.X_OK):
        print('skipped: %s is not installed' % CHROMIUM)
        return 77
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    heaplens = os.path.abspath(a.heaplens)
    for test in (test_example, test_checkpoints, test_stacks, test_estimates, test_followed, test_census, test_waits, test_rounding, test_interaction, test_big):
        before = len(FAILURES)
        test(a, heaplens, a.workdir)
        print('%s %s' % ('ok  ' if len(FAILURES) == before else 'FAIL', test.__name__))
    if FAILURES:
        print('%d checks failed' % len(FAILURES))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
