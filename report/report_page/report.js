/* report.js — draws the heaplens report from the document embedded in the page
 * (script#heaplens-data, the same JSON as `heaplens report --json`). Plain DOM and inline SVG;
 * no framework, no network.
 *
 * Large runs: the GC table holds one page of rows in the DOM at a time (100 by default; 50 to
 * 1,000 or all on request) while sorting and filtering run over every GC; the plots draw at
 * most four points per pixel column and series (the first, lowest, highest and last value of
 * the GCs in that column: M4), which looks the same as drawing every GC.
 *
 * The table's state lives in the URL fragment, so a view can be shared and tests can drive it:
 *   report.html#sort=pause&dir=desc&gen=2&induced=yes&q=gc%3E100&rows=all&page=2
 */
(function () {
  'use strict';

  var D = JSON.parse(document.getElementById('heaplens-data').textContent);
  var GCS = D.gcs;
  var N = GCS.length;
  var SIZE_GENS = ['gen0', 'gen1', 'gen2', 'loh', 'poh'];
  var LIVE_GENS = SIZE_GENS.concat(['nongc']);
  var GEN_LABEL = { gen0: 'gen0', gen1: 'gen1', gen2: 'gen2', loh: 'LOH', poh: 'POH', nongc: 'NonGC' };
  var DEF = D.definitions || {};
  /* Sampled and attach recordings: allocation figures are estimates, marked with EST
   * ("\u2248", "est.") wherever they are shown. With the census of gen0 (CENSUS) they are
   * exact in every interval it counted (gcs[].census_objects set); only the others (the tail
   * after the last GC, the first GC after an attach) are marked, row by row. */
  var ALLOC = D.allocations || {};
  var CENSUS = !!ALLOC.census;
  /* Some GC went without a snapshot due at it (gcs.snapshot_skipped): its column is shown. */
  var SKIPS = GCS.some(function (r) { return r.snapshot_skipped != null; });
  function skippedText(s) { return s == null ? '' : s === 'held' ? 'skipped (held)' : s === 'detach' ? 'skipped (detach)' : String(s); }
  var EST = !!ALLOC.estimated && !CENSUS;
  var APPROX = EST ? '\u2248 ' : '';
  /* Samples followed: the objects rows are the followed ones only, not every survivor. */
  var FOLLOWED = !!(D.plots && D.plots.survivors && D.plots.survivors.estimated);
  function rowApprox(r) { return EST || (CENSUS && !isNum(r.census_objects)) ? '\u2248 ' : ''; }

  function $(id) { return document.getElementById(id); }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function isNum(v) { return typeof v === 'number' && isFinite(v); }

  /* ---- formatting: the same text as `heaplens gcs` (query/query_output.c) ---------------- */

  var UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  /* "512 B", "1.5 KiB": one decimal from KiB up, rounded half to even like printf's %.1f. */
  function fmtSize(b) {
    if (!isNum(b)) return '\u2014';
    var sign = b < 0 ? '-' : '';
    var m = Math.abs(b);
    if (m < 1024) return sign + m + ' B';
    var v = m / 1024, u = 0;
    while (v >= 1023.95 && u + 1 < UNITS.length) { v /= 1024; u++; }
    var d = Math.pow(1024, u + 1);
    var q = Math.floor(m * 10 / d), r = m * 10 - q * d;
    if (2 * r > d || (2 * r === d && q % 2 === 1)) q++;
    return sign + Math.floor(q / 10) + '.' + (q % 10) + ' ' + UNITS[u];
  }
  /* Nanoseconds as milliseconds with three decimals: "0.412". */
  function fmtMs(ns) {
    if (!isNum(ns)) return '\u2014';
    var sign = ns < 0 ? '-' : '';
    var us = Math.floor((Math.abs(ns) + 500) / 1000);
    var frac = String(us % 1000);
    return sign + Math.floor(us / 1000) + '.' + '000'.slice(frac.length) + frac;
  }
  function fmtCount(n) {
    if (!isNum(n)) return '\u2014';
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function fmtRate(r) { return isNum(r) ? (r * 100).toFixed(1) + '%' : '\u2014'; }
  function fmtDuration(ns) {
    if (!isNum(ns)) return '\u2014';
    var s = ns / 1e9;
    if (s < 1) return (ns / 1e6).toFixed(1) + ' ms';
    if (s < 60) return s.toFixed(2) + ' s';
    var m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + Math.round(s - m * 60) + ' s';
    return Math.floor(m / 60) + ' h ' + (m % 60) + ' min';
  }
  function genName(g) { return !isNum(g) ? '\u2014' : g >= 0 && g < LIVE_GENS.length ? LIVE_GENS[g] : 'gen' + g; }

  /* ---- header, note, summary ------------------------------------------------------------- */

  function renderHeader() {
    var run = D.run || {};
    var file = (D.report && D.report.file) || '';
    $('file').textContent = file.split('/').pop() || file;
    $('file').title = file;
    $('command').textContent = run.command || '(command not recorded)';
    var status = run.status || 'unknown';
    var pill = $('status');
    pill.textContent = status;
    if (status !== 'complete') pill.classList.add('warn');
    var meta = [];
    if (run.start_time) meta.push('started ' + run.start_time.replace('T', ' ').replace('Z', ' UTC'));
    if (run.runtime_version) meta.push('.NET ' + run.runtime_version);
    if (run.pid != null) meta.push('pid ' + run.pid);
    if (run.exit_status != null) meta.push('exit status ' + run.exit_status);
    if (run.producer) meta.push('recorded by ' + run.producer);
    $('run-meta').innerHTML = meta.map(function (m) { return '<span>' + esc(m) + '</span>'; }).join('');
    if (D.note) {
      $('note').textContent = D.note.replace(/^note: /, 'Note: ');
      $('note').hidden = false;
    }
    if (ALLOC.note) {
      $('estimates-note').textContent = 'Note: ' + ALLOC.note + '.' +
        (EST || CENSUS ? ' Figures marked \u2248 or est. are estimates.' : '');
      $('estimates-note').hidden = false;
    }
    $('foot').textContent = 'Generated by ' + ((D.report && D.report.producer) || 'heaplens') +
      ' from ' + file + '. Self-contained: this page loads nothing from the network.';
  }

  var DROP_COUNTERS = [
    ['allocs_dropped', 'allocations dropped'],
    ['gc_events_dropped', 'GC events dropped'],
    ['records_dropped', 'records dropped'],
    ['threads_overflowed', 'threads not tracked'],
    ['gcs_discarded_incomplete', 'incomplete GCs discarded']
  ];

  function stat(label, value, sub, cls) {
    return '<div class="card stat' + (cls ? ' ' + cls : '') + '"><div class="label">' + esc(label) +
      '</div><div class="value">' + value + '</div><div class="sub">' + sub + '</div></div>';
  }

  function renderSummary() {
    var run = D.run || {}, t = D.totals || {}, c = D.counters || {};
    var byGen = t.gcs_by_generation || {};
    var html = '';
    html += stat('Run', esc(run.mode || '\u2014') + '<small>mode</small>',
      esc(run.runtime_version ? '.NET ' + run.runtime_version : 'runtime unknown') + '<br>' +
      esc('status ' + (run.status || 'unknown')));
    var last = N ? GCS[N - 1].end_ns : null;
    if (isNum(run.duration_ns))
      html += stat('Duration', esc(fmtDuration(run.duration_ns)),
        run.end_time ? 'until ' + esc(run.end_time.replace('T', ' ').replace('Z', ' UTC').slice(11)) : '');
    else if (isNum(last) && isNum(run.start_mono_ns))
      html += stat('Duration', '\u2265 ' + esc(fmtDuration(last - run.start_mono_ns)),
        'to the end of the last GC<br>(the run\u2019s end was not recorded)');
    else
      html += stat('Duration', '\u2014', 'the end of the run was not recorded');
    html += stat('GCs', esc(fmtCount(t.gcs)),
      ['gen0', 'gen1', 'gen2'].map(function (g) {
        return '<span class="item s-' + g + '"><i class="dot"></i>' + g + ' ' + esc(fmtCount(byGen[g] || 0)) + '</span>';
      }).join(' ') + '<br><span class="item">' + esc(fmtCount(t.gcs_induced)) + ' induced \u00b7</span>' +
      '<span class="item">' + esc(fmtCount(t.gcs_compacting)) + ' compacting</span>');
    var pauseTotal = t.pause_ns >= 1e9 ? (t.pause_ns / 1e9).toFixed(2) + '<small>s</small>' :
      esc(fmtMs(t.pause_ns)) + '<small>ms</small>';
    html += stat('GC pauses', pauseTotal,
      'longest ' + esc(fmtMs(t.pause_ns_max)) + ' ms<br>mean ' +
      esc(t.gcs ? fmtMs(Math.round(t.pause_ns / t.gcs)) : '\u2014') + ' ms');
    var tail = ALLOC.after_last_gc || {};
    html += stat(EST ? 'Allocated (est.)' : 'Allocated', esc(APPROX + fmtCount(t.allocations)) + '<small>objects</small>',
      esc(APPROX + fmtSize(t.allocation_bytes)) + ' \u00b7 ' + esc(fmtCount(t.allocation_types)) + ' types<br>' +
      (CENSUS && tail.count ? 'exact up to the last GC, \u2248 ' + esc(fmtCount(tail.count)) + ' after it (est.)<br>' : '') +
      esc(fmtCount(t.objects_alive_at_end)) + (FOLLOWED ? ' followed objects alive at the end' : ' alive at the end'));
    var issues = [];
    DROP_COUNTERS.forEach(function (d) {
      if (c[d[0]]) issues.push(fmtCount(c[d[0]]) + ' ' + d[1]);
    });
    if (t.gcs_incomplete) issues.push(fmtCount(t.gcs_incomplete) + ' incomplete GCs');
    if (run.status && run.status !== 'complete') issues.push('recording ' + run.status);
    if (issues.length)
      html += stat('Accuracy', esc(issues.length) + '<small>issue' + (issues.length > 1 ? 's' : '') + '</small>',
        issues.map(esc).join('<br>'), 'warn');
    else
      html += stat('Accuracy', 'exact', 'nothing dropped<br>no incomplete GC', 'ok');
    /* Full mode: threads wait for the collector instead of dropping; the time is its cost. */
    if (c.thread_waits)
      html += stat('Threads waited', esc(fmtDuration(c.thread_wait_ns || 0)),
        esc(fmtCount(c.thread_waits)) + ' waits for room in the<br>collector\u2019s buffers (nothing lost)');
    $('summary').innerHTML = html;
  }

  /* ---- plots ---------------------------------------------------------------------------- */

  var X = (D.plots && D.plots.gc) || GCS.map(function (g) { return g.gc; });

  /* Nice ticks from 0 to max: steps of 1, 2, 2.5 or 5 times a power of ten, about `count`. */
  function niceStep(span, count) {
    var raw = span / count;
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
  }
  function trimNum(v) { return String(+v.toFixed(2)); }
  /* Size ticks in one binary unit, e.g. 0, 2 MiB, 4 MiB: returns {max, ticks, label}. */
  function sizeScale(max) {
    var unit = 0, names = ['B'].concat(UNITS);
    while (max >= 1024 * Math.pow(1024, unit) && unit + 1 < names.length) unit++;
    var div = Math.pow(1024, unit);
    var step = niceStep(Math.max(max, 1) / div, 4);
    var top = Math.ceil(max / div / step) * step || step;
    var ticks = [];
    for (var v = 0; v <= top + step / 2; v += step) ticks.push(v * div);
    return { max: top * div, ticks: ticks, label: function (b) { return b === 0 ? '0' : trimNum(b / div) + ' ' + names[unit]; } };
  }
  function msScale(maxNs) {
    var max = maxNs / 1e6;
    var step = niceStep(max > 0 ? max : 1, 4);
    var top = Math.ceil(max / step) * step || step;
    var ticks = [];
    for (var v = 0; v <= top + step / 2; v += step) ticks.push(v * 1e6);
    return { max: top * 1e6, ticks: ticks, label: function (ns) { return ns === 0 ? '0' : trimNum(ns / 1e6) + ' ms'; } };
  }
  function xTicks(x0, x1) {
    var step = Math.max(1, niceStep(Math.max(x1 - x0, 1), 6));
    var ticks = [];
    for (var v = Math.ceil(x0 / step) * step; v <= x1; v += step) ticks.push(v);
    return ticks;
  }

  /* The points of one series to draw: every point when there are few, else M4 per pixel column.
   * Returns [[px, py], ...] with null entries where the line breaks (unknown values). */
  function seriesPoints(vals, sx, sy, plotW) {
    var out = [];
    var i, n = vals.length;
    if (n <= plotW * 2) {
      for (i = 0; i < n; i++) out.push(isNum(vals[i]) ? [sx(X[i]), sy(vals[i])] : null);
      return out;
    }
    var col = null, first = -1, last = -1, lo = -1, hi = -1;
    function flush() {
      if (first < 0) return;
      [first, lo, hi, last].sort(function (a, b) { return a - b; }).forEach(function (j, k, a) {
        if (k === 0 || j !== a[k - 1]) out.push([sx(X[j]), sy(vals[j])]);
      });
      first = -1;
    }
    for (i = 0; i < n; i++) {
      if (!isNum(vals[i])) { flush(); col = null; out.push(null); continue; }
      var c = Math.floor(sx(X[i]));
      if (c !== col) { flush(); col = c; first = lo = hi = i; }
      if (vals[i] < vals[lo]) lo = i;
      if (vals[i] > vals[hi]) hi = i;
      last = i;
    }
    flush();
    return out;
  }
  function pathOf(points) {
    var d = '', pen = false;
    for (var i = 0; i < points.length; i++) {
      var p = points[i];
      if (!p) { pen = false; continue; }
      d += (pen ? 'L' : 'M') + p[0].toFixed(1) + ',' + p[1].toFixed(1);
      pen = true;
    }
    return d;
  }

  var charts = [];

  /* A chart: spec = {host, series: [{key, label, cls, values, dash}], scale: 'size'|'ms',
   * kind: 'line'|'bars', gcClass (bars: the series key of each GC), empty: text}. */
  function drawChart(spec) {
    var host = spec.host;
    var W = Math.max(240, Math.floor(host.clientWidth || 400)), H = spec.height || 210;
    var m = { l: 64, r: 12, t: 10, b: 26 };
    var pw = W - m.l - m.r, ph = H - m.t - m.b;
    var drawable = spec.series.filter(nonZero);
    var shown = drawable.filter(function (s) { return !spec.hidden[s.key]; });
    if (!N || !shown.length) {
      var why = !N ? 'no GC was recorded' : drawable.length ? 'every series is hidden: click the legend to show one' :
        spec.empty || 'nothing to show';
      host.innerHTML = '<div class="empty">' + esc(why) + '</div>';
      return;
    }
    var max = 0;
    shown.forEach(function (s) { s.values.forEach(function (v) { if (isNum(v) && v > max) max = v; }); });
    var ys = spec.scale === 'ms' ? msScale(max) : sizeScale(max);
    var x0 = X[0], x1 = X[N - 1];
    var sparse = pw / Math.max(x1 - x0 + 1, 1) >= 6;
    if (sparse || x0 === x1) { x0 -= 0.5; x1 += 0.5; }
    var sx = function (v) { return m.l + (v - x0) / (x1 - x0) * pw; };
    var sy = function (v) { return m.t + ph - v / ys.max * ph; };
    var s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="' + esc(spec.title || '') + '">';
    s += '<g class="grid">';
    ys.ticks.forEach(function (t) { s += '<line x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + sy(t).toFixed(1) + '" y2="' + sy(t).toFixed(1) + '"/>'; });
    s += '</g><g class="axis">';
    ys.ticks.forEach(function (t) { s += '<text x="' + (m.l - 8) + '" y="' + sy(t).toFixed(1) + '" dy="0.32em" text-anchor="end">' + esc(ys.label(t)) + '</text>'; });
    xTicks(Math.ceil(x0), Math.floor(x1)).forEach(function (t) {
      s += '<text x="' + sx(t).toFixed(1) + '" y="' + (H - 8) + '" text-anchor="middle">' + esc(fmtCount(t)) + '</text>';
    });
    s += '<text x="' + (m.l - 8) + '" y="' + (H - 8) + '" text-anchor="end">GC</text>';
    s += '<line x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + (m.t + ph) + '" y2="' + (m.t + ph) + '"/></g>';
    if (spec.kind === 'bars') {
      var bw = Math.max(1, Math.min(18, pw / Math.max(x1 - x0, 1) * 0.6));
      shown.forEach(function (se) {
        var tallest = {}, d = '';
        se.values.forEach(function (v, i) {
          if (!isNum(v)) return;
          var c = Math.round(sx(X[i]));
          if (!(c in tallest) || v > tallest[c]) tallest[c] = v;
        });
        Object.keys(tallest).forEach(function (c) { d += 'M' + c + ',' + (m.t + ph) + 'V' + sy(tallest[c]).toFixed(1); });
        s += '<path class="bar ' + se.cls + '" data-series="' + esc(se.key) + '" stroke-width="' + bw.toFixed(1) + '" d="' + d + '"/>';
      });
    } else {
      shown.forEach(function (se) {
        var pts = seriesPoints(se.values, sx, sy, pw);
        s += '<path class="line ' + se.cls + (se.dash ? ' dash' : '') + '" data-series="' + esc(se.key) + '" d="' + pathOf(pts) + '"/>';
        if (N <= 60 && !se.dash)
          pts.forEach(function (p) { if (p) s += '<circle class="mark ' + se.cls + '" r="2.5" cx="' + p[0].toFixed(1) + '" cy="' + p[1].toFixed(1) + '"/>'; });
      });
    }
    /* The timeline's marks: each checkpoint the program wrote, between the GC it followed and
     * the next (a dashed line, its name on top), and each snapshot at its GC (a triangle). */
    s += '<g class="marks">';
    (D.checkpoints || []).forEach(function (c) {
      var x = Math.min(Math.max(c.gc + 0.5, x0), x1), px = sx(x).toFixed(1);
      s += '<g class="checkpoint"><title>' + esc('checkpoint ' + c.name + ' (after GC ' + c.gc + ')') +
        '</title><line x1="' + px + '" x2="' + px + '" y1="' + m.t + '" y2="' + (m.t + ph) + '"/>' +
        '<text x="' + px + '" y="' + (m.t + 9) + '"' +
        (sx(x) > W - m.r - 60 ? ' dx="-3" text-anchor="end"' : ' dx="3"') + '>' + esc(c.name) + '</text></g>';
    });
    (D.snapshot_list || []).forEach(function (n) {
      if (n.gc < x0 || n.gc > x1) return;
      var px = sx(n.gc), py = m.t + ph;
      s += '<path class="snapmark" d="M' + (px - 4).toFixed(1) + ',' + (py + 7) + 'L' + px.toFixed(1) + ',' +
        py + 'L' + (px + 4).toFixed(1) + ',' + (py + 7) + 'Z"><title>' +
        esc('snapshot ' + n.snapshot + ' at GC ' + n.gc + ' (' + (n.trigger || '?') + ')' +
            (n.reason ? ': ' + n.reason : '')) + '</title></path>';
    });
    s += '</g>';
    s += '<line class="cursor" y1="' + m.t + '" y2="' + (m.t + ph) + '" x1="0" x2="0" visibility="hidden"/>';
    s += '<rect class="hit" x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph + '"/></svg>';
    host.innerHTML = s;
    var svg = host.firstChild, cursor = svg.querySelector('.cursor'), hit = svg.querySelector('.hit');
    function nearest(ev) {
      var r = svg.getBoundingClientRect();
      var v = x0 + (ev.clientX - r.left - m.l) / pw * (x1 - x0);
      var lo = 0, hi = N - 1;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (X[mid] < v) lo = mid + 1; else hi = mid; }
      if (lo > 0 && Math.abs(X[lo - 1] - v) <= Math.abs(X[lo] - v)) lo--;
      return lo;
    }
    hit.addEventListener('mousemove', function (ev) {
      var i = nearest(ev), g = GCS[i], x = sx(X[i]).toFixed(1);
      cursor.setAttribute('x1', x);
      cursor.setAttribute('x2', x);
      cursor.setAttribute('visibility', 'visible');
      var fmt = spec.scale === 'ms' ? function (v) { return fmtMs(v) + ' ms'; } : fmtSize;
      var rows = (spec.kind === 'bars' ? [{ label: 'pause', cls: 's-' + genName(g.generation), values: [g.pause_ns], one: true }] : shown)
        .map(function (se) {
          return '<div class="row ' + se.cls + '"><span><i class="dot"></i>' + esc(se.label) + '</span><b>' + esc(fmt(se.one ? se.values[0] : se.values[i])) + '</b></div>';
        }).join('');
      showTip(ev, '<div class="head">GC ' + esc(fmtCount(g.gc)) + ' \u00b7 ' + esc(genName(g.generation)) +
        (g.induced ? ' \u00b7 induced' : '') + '</div>' + rows);
    });
    hit.addEventListener('mouseleave', function () {
      cursor.setAttribute('visibility', 'hidden');
      hideTip();
    });
    hit.addEventListener('click', function (ev) { showGc(GCS[nearest(ev)].gc); });
  }

  function nonZero(s) { return s.values.some(function (v) { return isNum(v) && v !== 0; }); }

  function legendHtml(series) {
    return series.map(function (s) {
      var empty = !nonZero(s);
      return '<span class="key ' + s.cls + (empty ? ' off' : '') + '" data-key="' + esc(s.key) + '" title="' +
        (empty ? 'always 0: not drawn' : 'click to hide or show') + '"><i class="sw"></i>' + esc(s.label) + '</span>';
    }).join('');
  }

  /* Draws a plot into figure `id`; clicking an element with data-key in it (a legend key, a row
   * of the type list) hides or shows that series, and the axes rescale to what is shown. */
  function plot(id, spec) {
    var fig = $(id);
    spec.host = fig.querySelector('.chart');
    spec.hidden = {};
    if (spec.legend !== false) fig.querySelector('.legend').innerHTML = legendHtml(spec.series);
    if (spec.caption) fig.querySelector('figcaption h2').title = spec.caption;
    fig.addEventListener('click', function (ev) {
      var el = ev.target.closest('[data-key]');
      if (!el || el.classList.contains('off')) return;
      var key = el.getAttribute('data-key');
      spec.hidden[key] = !spec.hidden[key];
      el.classList.toggle('hidden', spec.hidden[key]);
      drawChart(spec);
    });
    charts.push(spec);
    drawChart(spec);
  }

  function renderPlots() {
    var heap = SIZE_GENS.map(function (g) {
      return { key: g, label: GEN_LABEL[g], cls: 's-' + g, values: GCS.map(function (r) { return r.size_after ? r.size_after[g] : null; }) };
    });
    heap.push({
      key: 'total', label: 'total', cls: 's-total', dash: true,
      values: GCS.map(function (r) {
        var sum = 0, any = false;
        SIZE_GENS.forEach(function (g) { if (r.size_after && isNum(r.size_after[g])) { sum += r.size_after[g]; any = true; } });
        return any ? sum : null;
      })
    });
    plot('plot-heap', { title: 'heap size after each GC', series: heap, scale: 'size', caption: DEF.heap_size });

    /* A sampled recording that follows its samples: survivors (and so the top types by live
     * bytes) between snapshots are the followed samples' estimates; the titles say so. */
    var SURV_EST = !!(D.plots && D.plots.survivors && D.plots.survivors.estimated);
    var TYPES_EST = !!(D.plots && D.plots.top_types && D.plots.top_types.estimated);
    $('plot-survivors').querySelector('h2').textContent = (SURV_EST ? '\u2248 ' : '') +
      'Survivors per generation' + (SURV_EST ? ' (estimated between snapshots)' : '');
    $('plot-types').querySelector('h2').textContent = (TYPES_EST ? '\u2248 ' : '') +
      'Top types by live bytes' + (TYPES_EST ? ' (estimated between snapshots)' : '');
    var sv = (D.plots && D.plots.survivors && D.plots.survivors.series) || {};
    plot('plot-survivors', {
      title: 'survivors per generation', scale: 'size', caption: DEF.survivors,
      empty: 'no tracked object survived a GC',
      series: LIVE_GENS.filter(function (g) { return g !== 'nongc' || (sv[g] || []).some(function (v) { return v; }); })
        .map(function (g) { return { key: g, label: GEN_LABEL[g], cls: 's-' + g, values: sv[g] || [] }; })
    });

    plot('plot-pauses', {
      title: 'GC pauses', scale: 'ms', kind: 'bars', caption: DEF.pause,
      series: ['gen0', 'gen1', 'gen2'].map(function (g, k) {
        return { key: g, label: g, cls: 's-' + g, values: GCS.map(function (r) { return r.generation === k ? r.pause_ns : null; }) };
      })
    });

    var alloc = $('plot-allocated'), top = ALLOC.top_types || [];
    alloc.querySelector('h2').textContent = APPROX + 'Allocated per GC interval' + (EST ? ' (estimated)' : '');
    alloc.querySelector('.type-list').innerHTML = top.length ?
      '<thead><tr><th>' + esc(EST ? 'top allocating types (est.)' : CENSUS ? 'top allocating types (exact up to the last GC)' : 'top allocating types') + '</th><th>' +
      esc(APPROX) + 'bytes</th><th>' + esc(APPROX) + 'objects</th></tr></thead><tbody>' +
      top.map(function (t) {
        /* with the census, a row that holds an estimated part (after the last GC) is marked */
        var a = APPROX || (t.estimated_count > 0 ? '\u2248 ' : '');
        return '<tr><td class="name" title="' + esc(t.type) + '">' + esc(t.type) + '</td><td>' + esc(a + fmtSize(t.bytes)) +
          '</td><td>' + esc(a + fmtCount(t.count)) + '</td></tr>';
      }).join('') + '</tbody>' : '';
    plot('plot-allocated', {
      title: (EST ? 'estimated ' : '') + 'bytes allocated per GC interval', scale: 'size', caption: DEF.allocated,
      empty: 'no allocation was recorded',
      series: [{ key: 'allocated', label: EST ? 'allocated (est.)' : 'allocated', cls: 's-total', values: GCS.map(function (r) { return r.allocated_bytes; }) }]
    });

    var types = (D.plots && D.plots.top_types && D.plots.top_types.types) || [];
    var ts = types.map(function (t, k) { return { key: 'type' + k, label: t.type, cls: 's-t' + k, values: t.bytes }; });
    var fig = $('plot-types');
    fig.querySelector('.legend').textContent = types.length ? 'ranked by peak live bytes after any GC' : '';
    fig.querySelector('.type-list').innerHTML = types.length ?
      '<thead><tr><th>type</th><th>peak</th><th>after last GC</th></tr></thead><tbody>' +
      types.map(function (t, k) {
        return '<tr class="s-t' + k + '" data-key="type' + k + '"><td class="name" title="' + esc(t.type) + '"><i class="sw"></i>' + esc(t.type) +
          '</td><td>' + esc(fmtSize(t.peak_bytes)) + '</td><td>' + esc(fmtSize(t.last_bytes)) + '</td></tr>';
      }).join('') + '</tbody>' : '';
    plot('plot-types', { title: 'top types by live bytes', series: ts, scale: 'size', legend: false, caption: DEF.top_types, height: 250, empty: 'no tracked object survived a GC' });
  }

  var tip = $('tip');
  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + w > window.innerWidth - 8) x = ev.clientX - w - 14;
    if (y + h > window.innerHeight - 8) y = ev.clientY - h - 14;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.hidden = true; }

  /* ---- snapshots, definitions --------------------------------------------------------------- */

  /* "…SessionRegistry" for long dotted names: the path stays on one line. */
  function shortType(t) {
    var s = String(t), lt = s.indexOf('<'), head = lt < 0 ? s : s.slice(0, lt);
    var dot = head.lastIndexOf('.');
    return dot < 0 ? s : '\u2026' + s.slice(dot + 1);
  }
  function rootText(roots) {
    if (!roots || !roots.length) return 'root';
    var r = roots[0], flags = (r.flags || []).slice();
    if (r.kind === 'static') {
      var dot = String(r.static).lastIndexOf('.');
      return 'static ' + (dot < 0 ? r.static : shortType(r.static.slice(0, dot)).replace('\u2026', '') +
        r.static.slice(dot)) + (r.thread ? ' (thread ' + (r.thread.name || 'unnamed') + ', ' +
        r.thread.os_tid + ')' : '');
    }
    if (r.handle) flags.unshift(r.handle);
    if (r.method) flags.unshift(r.method); /* a stack root: its frame's method */
    return r.kind + (flags.length ? ' (' + flags.join(', ') + ')' : '') +
      (roots.length > 1 ? ' +' + (roots.length - 1) : '');
  }
  function pathHtml(row) {
    if (!row.path) return '<span class="nil">\u2014</span>';
    /* a run of the same hop (a linked list's .Next, thousands of times) once, with its count,
     * as `heaplens leaks` writes it */
    var hops = [], prev = null, run = 0, first = null;
    function flush() {
      if (!run) return;
      hops.push('<span title="' + esc(first.type + ' #' + first.object + ', ' + fmtSize(first.size) +
        (run > 1 ? ' and ' + fmtCount(run - 1) + ' more' : '')) + '">' + esc(prev) +
        (run > 1 ? ' (' + fmtCount(run) + ' times)' : '') + '</span>');
    }
    row.path.forEach(function (h) {
      /* the field (or element) holding the next hop, as code reads it */
      var label = h.field != null ? '.' + h.field : h.index != null ? '[' + h.index + ']' : ' #' + h.object;
      var text = shortType(h.type) + label;
      if (run && text === prev) { run++; return; }
      flush();
      prev = text; run = 1; first = h;
    });
    flush();
    return esc(rootText(row.roots)) + ' \u2192 ' + hops.join(' \u2192 ');
  }
  /* One inspection finding in words, as `heaplens inspect` writes it. */
  function findingText(f) {
    switch (f.kind) {
      case 'duplicate-strings':
        return fmtCount(f.count) + ' strings ' + (f.value == null ? '(' + f.length + ' characters, not kept)' :
          JSON.stringify(f.value)) + ' (' + fmtSize(f.wasted) + ' wasted' + (f.origin === 'event-metadata' ?
          '; the runtime\'s event metadata, built because heaplens\' EventPipe session enabled its events' : '') + ')';
      case 'empty-collections': return fmtCount(f.count) + ' empty ' + f.type;
      case 'sparse': return fmtCount(f.count) + ' ' + f.type + ' filled ' + Math.round(100 * f.fill) + '% (' +
        fmtSize(f.wasted) + ' wasted)';
      case 'event-handlers': return fmtCount(f.subscribers) + ' handlers on ' + f.owner + (f.field ? '.' + f.field : '');
      case 'under-filled': return fmtCount(f.count) + ' ' + f.type + ' filled ' + (100 * f.fill).toFixed(1) +
        '% (' + fmtCount(f.elements) + ' of ' + fmtCount(f.capacity) + '; ' + fmtSize(f.wasted) + ' wasted)';
      case 'finalizable': return fmtCount(f.count) + ' ' + f.type + ' with a finalizer' +
        (f.queued ? ' (' + fmtCount(f.queued) + ' waiting for the finalizer)' : '');
      case 'finalized-reachable': return fmtCount(f.count) + ' ' + f.type + ' finalized and reachable again';
      case 'pinned': return fmtCount(f.count) + ' ' + f.type + ' pinned in gen' + f.generation;
      case 'loh-free': return 'large-object heap: ' + fmtSize(f.free) + ' free between ' + fmtSize(f.live) + ' of live objects';
      default: return f.kind;
    }
  }
  function holderText(row) {
    if (row.holder == null) return 'nothing but GC roots and collections';
    if (row.holders === 1)
      return row.holder + ' #' + row.holder_object + ' (retains ' + fmtSize(row.holder_retained_bytes) +
        '; holds ' + fmtCount(row.held) + ' of ' + fmtCount(row.instances) + ')';
    return fmtCount(row.holders) + ' ' + row.holder + ' objects (hold ' + fmtCount(row.held) + ' of ' +
      fmtCount(row.instances) + ')';
  }
  function signed(v, f) { return (v >= 0 ? '+' : '-') + f(Math.abs(v)); }

  /* Every snapshot with what took it (and a trigger's reason), and the program's checkpoints:
   * the marks of the plots, listed. */
  function marksHtml() {
    var list = D.snapshot_list || [], cps = D.checkpoints || [], html = '';
    if (list.length) {
      html += '<h3>Snapshots</h3><div class="table-wrap"><table class="list" id="snapshot-table"><thead><tr>' +
        '<th>snapshot</th><th>GC</th><th class="l">trigger</th><th class="l">reason</th></tr></thead><tbody>' +
        list.map(function (n) {
          return '<tr><td>' + esc(n.snapshot) + '</td><td>' + esc(n.gc) + '</td><td class="l">' +
            esc(n.trigger || '\u2014') + '</td><td class="l wrap">' + esc(n.reason || '') + '</td></tr>';
        }).join('') + '</tbody></table></div>';
    }
    if (cps.length) {
      html += '<h3>Checkpoints</h3><p>Marked on the plots between the GC each follows and the next. ' +
        'Compare two with <code>heaplens diff FILE @A @B</code>.</p><div class="table-wrap">' +
        '<table class="list" id="checkpoint-table"><thead><tr><th class="l">checkpoint</th><th>after GC</th>' +
        '<th>at</th><th>thread</th></tr></thead><tbody>' +
        cps.map(function (c) {
          return '<tr><td class="l">' + esc(c.name) + '</td><td>' + esc(c.gc) + '</td><td>' +
            esc(fmtDuration(c.since_start_ns)) + '</td><td>' + esc(c.thread) + '</td></tr>';
        }).join('') + '</tbody></table></div>';
    }
    return html;
  }

  function renderSnapshots() {
    var el = $('snapshots');
    var S = D.snapshots;
    if (S == null) {
      el.innerHTML = '<h2>Leak suspects and retainers</h2><p>No snapshots in this recording. ' +
        'Leak suspects and the top retainers of the last snapshot appear here for recordings with heap snapshots.</p>' +
        marksHtml();
      return;
    }
    var last = S.last, html = '<h2>Leak suspects and retainers</h2><p>' + esc(fmtCount(S.count)) +
      ' heap snapshot' + (S.count === 1 ? '' : 's') + '; the last, snapshot ' + esc(last.snapshot) +
      ' at GC ' + esc(last.gc) + ', holds ' + esc(fmtCount(last.objects)) + ' objects and ' +
      esc(fmtCount(last.references)) + ' references.</p>' + marksHtml();

    var L = D.leak_suspects;
    html += '<h3>Leak suspects</h3>';
    if (!L) {
      html += '<p>Growth needs two snapshots or more.</p>';
    } else {
      var flagged = L.rows.filter(function (r) { return r.flagged; });
      var over = 'over ' + L.snapshots.length + ' snapshots' + (L.full_gcs_only ? ' after full GCs' : '');
      if (!flagged.length) {
        html += '<p>No type kept growing ' + esc(over) + '.</p>';
      } else {
        // L.flagged: every suspect (the rows hold the first 10 of them)
        var all = L.flagged === undefined ? flagged.length : L.flagged;
        html += '<p>' + esc(fmtCount(all)) + ' type' + (all === 1 ? '' : 's') + ' kept growing ' +
          esc(over) + ' (snapshots ' + esc(L.snapshots[0]) + ' to ' + esc(L.snapshots[L.snapshots.length - 1]) +
          '), most suspect first' + (all > flagged.length ? ': the first ' + esc(fmtCount(flagged.length)) +
          ' (heaplens leaks FILE --top ' + esc(all) + ' lists every one)' : '') + '.</p><div class="table-wrap"><table class="list" id="leak-table"><thead><tr>' +
          '<th>rank</th><th>+objects</th><th>+bytes</th><th>+retained</th><th class="l">type</th>' +
          '<th class="l">held by</th><th class="l">path from a root</th></tr></thead><tbody>' +
          flagged.map(function (r, i) {
            return '<tr data-type="' + esc(r.type) + '"><td>' + (i + 1) + '</td><td>' +
              esc(signed(r.growth_count, fmtCount)) + '</td><td>' + esc(signed(r.growth_bytes, fmtSize)) +
              '</td><td>' + esc(signed(r.growth_retained_bytes, fmtSize)) + '</td><td class="l">' + esc(r.type) +
              '</td><td class="l wrap">' + esc(holderText(r)) + '</td><td class="l wrap">' + pathHtml(r) +
              '</td></tr>';
          }).join('') + '</tbody></table></div>';
      }
    }

    var R = D.retainers;
    html += '<h3>Top retainers of snapshot ' + esc(R.snapshot) + '</h3>';
    if (!R.rows.length) {
      html += '<p>No object is reachable from a root.</p>';
    } else {
      html += '<div class="table-wrap"><table class="list" id="retainer-table"><thead><tr>' +
        '<th>retained</th><th>objects</th><th>shallow</th><th>object</th><th class="l">type</th>' +
        '</tr></thead><tbody>' + R.rows.map(function (r) {
          var type = r.type + (r.element_type && r.type.indexOf(r.element_type) < 0 ? ' of ' + r.element_type : '');
          return '<tr data-object="' + esc(r.object) + '"><td>' + esc(fmtSize(r.retained_bytes)) + '</td><td>' +
            esc(fmtCount(r.retained_count)) + '</td><td>' + esc(fmtSize(r.shallow_bytes)) + '</td><td>' +
            esc(r.object) + '</td><td class="l">' + esc(type) + '</td></tr>';
        }).join('') + '</tbody></table></div>';
    }
    var I = D.inspections;
    if (I) {
      html += '<h3>Inspections of snapshot ' + esc(I.snapshot) + '</h3>';
      if (!I.findings.length) {
        html += '<p>Nothing found: no duplicate strings, empty collections, sparse arrays, crowded events, young pinned objects or LOH free space.</p>';
      } else {
        html += '<div class="table-wrap"><table class="list" id="inspection-table"><thead><tr>' +
          '<th>bytes</th><th class="l">finding</th><th class="l">what</th></tr></thead><tbody>' +
          I.findings.map(function (f) {
            return '<tr><td>' + esc(fmtSize(f.rank_bytes)) + '</td><td class="l">' + esc(f.kind) +
              '</td><td class="l wrap">' + esc(findingText(f)) + '</td></tr>';
          }).join('') + '</tbody></table></div>';
      }
    }
    el.innerHTML = html;
  }

  /* ---- allocation stacks: the flame graph and the top sites ------------------------------- */

  /* The flame graph draws D.allocation_stacks.flame (outermost frame at the top, the type
   * allocated as the leaf; a frame's width is its share of the estimated bytes). A click zooms
   * into a frame (its ancestors stay above it, full width; a click on one zooms out); the search
   * box marks every frame whose name contains the text and says how much of the bytes they hold. */
  var A = D.allocation_stacks;
  var flame = { root: null, zoom: null, q: '', items: [] };
  var FLAME_ROW = 18;

  function flameLink(n, parent, depth) {
    n.parent = parent;
    n.depth = depth;
    n.children.forEach(function (c) { flameLink(c, n, depth + 1); });
  }
  function flameHash(s) {
    var h = 0;
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return Math.abs(h);
  }
  function flameColor(n) {
    var h = flameHash(n.name);
    if (n.type) return 'hsl(' + (200 + h % 30) + ',62%,' + (62 + h % 10) + '%)';
    if (n.name.charAt(0) === '[') return 'hsl(220,8%,' + (70 + h % 8) + '%)';
    return 'hsl(' + (h % 50) + ',' + (72 + h % 20) + '%,' + (58 + (h >> 3) % 12) + '%)';
  }
  /* "App.Program.Main" → "Program.Main" when the whole name does not fit. */
  function flameShort(name) {
    var lt = name.indexOf('<'), head = lt < 0 ? name : name.slice(0, lt);
    var parts = head.split('.');
    return parts.length > 2 ? parts.slice(-2).join('.') + name.slice(head.length) : name;
  }
  function flameLabel(name, w) {
    var fit = Math.floor((w - 8) / 6.6);
    if (fit < 3) return '';
    if (name.length <= fit) return name;
    var s = flameShort(name);
    return s.length <= fit ? s : s.slice(0, fit - 1) + '\u2026';
  }
  function flameMatches(n) { return flame.q !== '' && n.name.toLowerCase().indexOf(flame.q) >= 0; }
  function flameTitle(n) {
    var total = flame.root.bytes || 1;
    return n.name + (n.type ? ' (type allocated)' : '') + '\n' + fmtSize(n.bytes) + ' (' +
      (100 * n.bytes / total).toFixed(1) + '%), ' + fmtCount(n.count) + ' allocations (estimated)';
  }
  function drawFlame() {
    var box = $('flame-chart');
    if (!box || !flame.root) return;
    var W = Math.max(320, box.clientWidth || 1200), zoom = flame.zoom || flame.root, items = [];
    var chain = [];
    for (var p = zoom.parent; p; p = p.parent) chain.unshift(p);
    chain.forEach(function (a, i) { items.push({ n: a, x: 0, w: W, d: i }); });
    (function place(n, x, w, d) {
      if (w < 0.5) return;
      items.push({ n: n, x: x, w: w, d: d });
      var cx = x;
      n.children.forEach(function (c) {
        var cw = n.bytes > 0 ? w * c.bytes / n.bytes : 0;
        place(c, cx, cw, d + 1);
        cx += cw;
      });
    })(zoom, 0, W, chain.length);
    var depth = 0;
    items.forEach(function (it) { depth = Math.max(depth, it.d); });
    var H = (depth + 1) * FLAME_ROW;
    flame.items = items;
    box.innerHTML = '<svg class="flame" id="flame-svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H +
      '" role="img" aria-label="allocation flame graph">' + items.map(function (it, i) {
        var cls = 'frame' + (it.n.type ? ' type' : '') + (it.d < chain.length ? ' ancestor' : '') +
          (flameMatches(it.n) ? ' match' : '');
        return '<g class="' + cls + '" data-i="' + i + '" data-name="' + esc(it.n.name) + '" transform="translate(' +
          it.x.toFixed(1) + ',' + (it.d * FLAME_ROW) + ')"><rect width="' + Math.max(0.5, it.w - 1).toFixed(1) +
          '" height="' + (FLAME_ROW - 1) + '" rx="2" fill="' + flameColor(it.n) + '"/><text x="4" y="12.5">' +
          esc(flameLabel(it.n.name, it.w)) + '</text><title>' + esc(flameTitle(it.n)) + '</title></g>';
      }).join('') + '</svg>';
    $('flame-reset').disabled = zoom === flame.root;
  }
  /* Marks the frames that match the search, and says what share of the bytes they hold (a frame
   * under a matching frame is not counted twice). */
  function flameSearch(q) {
    if (!flame.root) return;
    flame.q = q.trim().toLowerCase();
    var frames = 0, bytes = 0;
    (function walk(n, counted) {
      var m = flameMatches(n);
      if (m) frames++;
      if (m && !counted) bytes += n.bytes;
      n.children.forEach(function (c) { walk(c, counted || m); });
    })(flame.root, false);
    Array.prototype.forEach.call(document.querySelectorAll('#flame-svg g.frame'), function (g) {
      g.classList.toggle('match', flameMatches(flame.items[+g.dataset.i].n));
    });
    $('flame-match').textContent = flame.q === '' ? '' : frames === 0 ? 'No frame matches.' :
      fmtCount(frames) + ' matching frame' + (frames === 1 ? '' : 's') + ', ' + fmtSize(bytes) + ' (' +
      (100 * bytes / (flame.root.bytes || 1)).toFixed(1) + '% of the bytes)';
  }
  function siteStack(r) { return r.frames.join(' \u2190 '); }
  function renderStacks() {
    var el = $('stacks'), sites = $('sites');
    if (!A) {
      el.innerHTML = '<h2>Allocation flame graph</h2><p id="no-stacks">No allocation stacks in this recording ' +
        '(recorded with --stacks off).</p>';
      sites.hidden = true;
      return;
    }
    var est = 'Estimated from sampled allocations: ' + A.text + '.';
    el.innerHTML = '<div class="card-head"><h2>Allocation flame graph <span class="count">' + esc(fmtSize(A.total.bytes)) +
      ', ' + esc(fmtCount(A.total.count)) + ' allocations</span></h2><div class="tools">' +
      '<input id="flame-q" type="search" spellcheck="false" autocomplete="off" placeholder="search frames" ' +
      'title="Marks every frame whose name contains the text (case-insensitive)">' +
      '<button type="button" id="flame-reset" title="show every stack again">reset zoom</button></div></div>' +
      '<p class="muted small" id="flame-note">' + esc(est) + ' Outermost frame at the top, the type allocated at the ' +
      'bottom; width = estimated bytes. Click a frame to zoom in.</p><div id="flame-chart"></div>' +
      '<p class="muted small" id="flame-match"></p>';
    flame.root = A.flame;
    flameLink(flame.root, null, 0);
    drawFlame();
    $('flame-chart').addEventListener('click', function (ev) {
      var g = ev.target.closest && ev.target.closest('g.frame');
      if (!g) return;
      var n = flame.items[+g.dataset.i].n;
      flame.zoom = n === flame.root ? null : n;
      drawFlame();
    });
    $('flame-reset').addEventListener('click', function () { flame.zoom = null; drawFlame(); });
    var typing = null;
    $('flame-q').addEventListener('input', function () {
      clearTimeout(typing);
      typing = setTimeout(function () { flameSearch($('flame-q').value); }, 80);
    });

    var rows = A.top_sites;
    sites.innerHTML = '<h2>Top allocation sites</h2><p class="muted small">The ' + rows.length + ' heaviest of ' +
      esc(fmtCount(A.total.sites)) + ' sites (a stack and the type allocated there), as <code>heaplens stacks</code> ' +
      'lists them; estimated.</p><div class="table-wrap"><table class="list" id="site-table"><thead><tr>' +
      '<th>rank</th><th>bytes</th><th>share</th><th>allocations</th><th>samples</th><th class="l">type</th>' +
      '<th class="l">stack, innermost frame first</th></tr></thead><tbody>' + rows.map(function (r, i) {
        return '<tr data-type="' + esc(r.type) + '"><td>' + (i + 1) + '</td><td data-v="' + r.bytes + '">' +
          esc(fmtSize(r.bytes)) + '</td><td>' + (100 * r.bytes / (A.total.bytes || 1)).toFixed(1) + '%</td><td data-v="' +
          r.count + '">' + esc(fmtCount(r.count)) + '</td><td>' + esc(fmtCount(r.samples)) + '</td><td class="l">' +
          esc(r.type) + '</td><td class="l wrap stack">' + esc(siteStack(r)) + '</td></tr>';
      }).join('') + '</tbody></table></div>';
  }

  /* Counted sites (record/attach --count): exact counts per allocating instruction. */
  function renderCounted() {
    var C = D.counted_sites, el = $('counted');
    if (!C) return;
    el.hidden = false;
    el.innerHTML = '<h2>Counted allocation sites</h2><p class="muted small">' + esc(fmtCount(C.sites)) +
      ' sites in ' + esc(fmtCount(C.methods)) + ' methods matched by --count, the ' + C.rows.length +
      ' most counted; exact: every execution of the allocating instruction while counting was on ' +
      '(<code>heaplens allocations FILE --by site</code>). Not counted: ' + esc(C.not_counted) +
      '.</p><div class="table-wrap"><table class="list" id="counted-table"><thead><tr><th>count</th>' +
      '<th class="l">method</th><th class="l">IL</th><th class="l">kind</th><th class="l">type</th></tr></thead><tbody>' +
      C.rows.map(function (r) {
        var il = r.il_offset.toString(16);
        return '<tr><td data-v="' + r.count + '">' + esc(fmtCount(r.count)) + (r.exact ? '' : ' *') +
          '</td><td class="l">' + esc(r.method) + '</td><td class="l">IL_' + ('0000' + il).slice(-Math.max(4, il.length)) +
          '</td><td class="l">' + esc(r.kind) + '</td><td class="l">' + esc(r.type) + '</td></tr>';
      }).join('') + '</tbody></table></div>' +
      (C.rows.some(function (r) { return !r.exact; }) ?
        '<p class="muted small">* the JIT may fold this box away, or the site may allocate nothing (a generic ' +
        'parameter): the count is of executions.</p>' : '');
  }

  function renderAbout() {
    var items = [
      ['Pause', DEF.pause], ['Heap size', DEF.heap_size], ['Promoted', DEF.promoted],
      ['Survival rate', DEF.survival_rate], ['Survivors', DEF.survivors], ['Top types', DEF.top_types],
      ['Pinned', DEF.pinned_objects], ['Allocated', DEF.allocated],
      ['Large runs', 'The table keeps one page of rows (100 by default) in the page; sorting and filtering ' +
        'run over all ' + fmtCount(N) + ' GCs. When a plot has more GCs than pixels, each pixel column ' +
        'draws the first, lowest, highest and last value of its GCs (M4), which looks the same as every ' +
        'GC drawn; pause bars show the longest pause per column.']
    ];
    $('about').innerHTML = '<h2>Definitions</h2><dl>' + items.filter(function (d) { return d[1]; }).map(function (d) {
      return '<dt>' + esc(d[0]) + '</dt><dd>' + esc(d[1]) + '</dd>';
    }).join('') + '</dl>';
  }

  /* ---- the GC table ------------------------------------------------------------------------ */

  function sizeCol(g) {
    return {
      k: g, label: GEN_LABEL[g], cls: 'size', num: true, group: true,
      v: function (r) { return r.size_after ? r.size_after[g] : null; },
      cell: function (r) {
        var a = r.size_after ? r.size_after[g] : null, b = r.size_before ? r.size_before[g] : null;
        return '<td class="size" data-k="' + g + '" data-v="' + (isNum(a) ? a : '') + '" data-before="' + (isNum(b) ? b : '') +
          '"><span class="a">' + fmtSize(a) + '</span><span class="b">' + fmtSize(b) + '</span></td>';
      }
    };
  }
  function flagCell(k, v) {
    return '<td class="c ' + (v == null ? 'nil' : v ? 'yes' : 'no') + '" data-k="' + k + '" data-v="' + (v == null ? '' : v ? 1 : 0) + '">' +
      (v == null ? '\u2014' : v ? 'yes' : 'no') + '</td>';
  }
  function numCell(k, v, text) {
    return '<td class="' + (isNum(v) ? '' : 'nil') + '" data-k="' + k + '" data-v="' + (isNum(v) ? v : '') + '">' + esc(text) + '</td>';
  }

  var COLS = [
    { k: 'gc', label: 'GC', v: function (r) { return r.gc; }, cell: function (r) { return numCell('gc', r.gc, fmtCount(r.gc)); } },
    {
      k: 'gen', label: 'gen', cls: 'c', v: function (r) { return r.generation; },
      cell: function (r) {
        var n = genName(r.generation);
        return '<td class="c" data-k="gen" data-v="' + (isNum(r.generation) ? r.generation : '') + '"><span class="gen s-' + n + '">' + esc(n) + '</span></td>';
      }
    },
    {
      k: 'reason', label: 'reason', cls: 'l', v: function (r) { return r.reason; },
      cell: function (r) { return '<td class="l" data-k="reason" data-v="' + esc(r.reason == null ? '' : r.reason) + '">' + esc(r.reason == null ? '\u2014' : r.reason) + '</td>'; }
    },
    { k: 'induced', label: 'induced', cls: 'c', v: function (r) { return r.induced == null ? null : +r.induced; }, cell: function (r) { return flagCell('induced', r.induced); } },
    { k: 'compacting', label: 'compacting', cls: 'c', v: function (r) { return r.compacting == null ? null : +r.compacting; }, cell: function (r) { return flagCell('compacting', r.compacting); } },
    { k: 'pause', label: 'pause (ms)', tip: DEF.pause, v: function (r) { return r.pause_ns; }, cell: function (r) { return numCell('pause', r.pause_ns, fmtMs(r.pause_ns)); } }
  ].concat(CENSUS ? [
    { k: 'census', label: 'census (ms)', tip: DEF.census, v: function (r) { return r.census_ns; }, cell: function (r) { return numCell('census', r.census_ns, fmtMs(r.census_ns)); } }
  ] : []).concat(SKIPS ? [
    { k: 'snapshot', label: 'snapshot', cls: 'l', tip: DEF.snapshot_skipped, v: function (r) { return r.snapshot_skipped == null ? '' : r.snapshot_skipped; }, cell: function (r) { return '<td class="l" data-k="snapshot" data-v="' + esc(r.snapshot_skipped == null ? '' : r.snapshot_skipped) + '">' + esc(skippedText(r.snapshot_skipped)) + '</td>'; } }
  ] : []).concat(SIZE_GENS.map(sizeCol)).concat([
    {
      k: 'allocated', label: EST ? '\u2248 allocated (est.)' : 'allocated', tip: DEF.allocated, v: function (r) { return r.allocated_bytes; },
      cell: function (r) { return numCell('allocated', r.allocated_bytes, rowApprox(r) + fmtSize(r.allocated_bytes)); }
    },
    { k: 'promoted', label: 'promoted', tip: DEF.promoted, v: function (r) { return r.survived_bytes; }, cell: function (r) { return numCell('promoted', r.survived_bytes, fmtSize(r.survived_bytes)); } },
    { k: 'survival', label: 'survival', tip: DEF.survival_rate, v: function (r) { return r.survival_rate; }, cell: function (r) { return numCell('survival', r.survival_rate, fmtRate(r.survival_rate)); } },
    { k: 'pinned', label: 'pinned', tip: DEF.pinned_objects, v: function (r) { return r.pinned_objects; }, cell: function (r) { return numCell('pinned', r.pinned_objects, fmtCount(r.pinned_objects)); } }
  ]);
  var COL = {};
  COLS.forEach(function (c) { COL[c.k] = c; });

  var state = { sort: 'gc', dir: 'asc', gen: '', induced: '', q: '', rows: '100', page: 1 };
  var view = [];   /* indexes into GCS after filtering and sorting */

  function readHash() {
    var h = location.hash.replace(/^#/, '');
    h.split('&').forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf('='), k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i));
      var v = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, ' '));
      if (k === 'sort' && COL[v]) state.sort = v;
      else if (k === 'dir') state.dir = v === 'desc' ? 'desc' : 'asc';
      else if (k === 'gen') state.gen = /^[0-2]$/.test(v) ? v : '';
      else if (k === 'induced') state.induced = v === 'yes' || v === 'no' ? v : '';
      else if (k === 'q') state.q = v;
      else if (k === 'rows') state.rows = v === 'all' || /^\d+$/.test(v) && +v > 0 ? v : '100';
      else if (k === 'page') state.page = Math.max(1, parseInt(v, 10) || 1);
    });
  }
  function writeHash() {
    var parts = [];
    var defaults = { sort: 'gc', dir: 'asc', gen: '', induced: '', q: '', rows: '100', page: 1 };
    Object.keys(defaults).forEach(function (k) {
      if (String(state[k]) !== String(defaults[k])) parts.push(k + '=' + encodeURIComponent(state[k]));
    });
    var hash = parts.length ? '#' + parts.join('&') : ' ';
    try { history.replaceState(null, '', hash === ' ' ? location.pathname + location.search : hash); } catch (e) { /* file:// in some browsers */ }
  }

  /* Text filter: words match the reason and flags; "key op value" compares a column. */
  var SIZE_UNITS = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1048576, mb: 1048576, mib: 1048576, g: 1073741824, gb: 1073741824, gib: 1073741824 };
  var FILTER_KEYS = { gc: 'gc', gen: 'gen', generation: 'gen', pause: 'pause', promoted: 'promoted', survived: 'promoted', survival: 'survival', pinned: 'pinned', allocated: 'allocated', gen0: 'gen0', gen1: 'gen1', gen2: 'gen2', loh: 'loh', poh: 'poh' };
  function compileFilter(q) {
    var tests = [];
    q.trim().toLowerCase().split(/\s+/).forEach(function (tok) {
      if (!tok) return;
      var m = /^([a-z0-9]+)(<=|>=|=|<|>)([0-9.]+)([a-z%]*)$/.exec(tok);
      if (m && FILTER_KEYS[m[1]]) {
        var col = COL[FILTER_KEYS[m[1]]], op = m[2], x = parseFloat(m[3]), unit = m[4];
        if (col.k === 'pause') x *= 1e6;
        else if (col.k === 'survival') x /= 100;
        else if (col.cls === 'size' || col.k === 'promoted' || col.k === 'allocated') x *= SIZE_UNITS[unit] || 1;
        tests.push(function (r) {
          var v = col.v(r);
          if (!isNum(v)) return false;
          return op === '<' ? v < x : op === '<=' ? v <= x : op === '>' ? v > x : op === '>=' ? v >= x : v === x;
        });
      } else {
        tests.push(function (r, text) { return text.indexOf(tok) >= 0; });
      }
    });
    return tests;
  }
  var TEXT = GCS.map(function (r) {
    return ('gc' + r.gc + ' ' + genName(r.generation) + ' ' + (r.reason || '') + ' ' + (r.induced ? 'induced' : '') + ' ' +
      (r.compacting ? 'compacting' : 'sweeping') + (r.incomplete ? ' incomplete' : '') +
      (r.snapshot_skipped != null ? ' ' + skippedText(r.snapshot_skipped) : '')).toLowerCase();
  });

  function computeView() {
    var tests = compileFilter(state.q);
    var gen = state.gen === '' ? null : +state.gen;
    var ind = state.induced;
    view = [];
    for (var i = 0; i < N; i++) {
      var r = GCS[i];
      if (gen !== null && r.generation !== gen) continue;
      if (ind === 'yes' && !r.induced) continue;
      if (ind === 'no' && r.induced) continue;
      var ok = true;
      for (var t = 0; t < tests.length && ok; t++) ok = tests[t](r, TEXT[i]);
      if (ok) view.push(i);
    }
    var col = COL[state.sort], sign = state.dir === 'desc' ? -1 : 1;
    if (col.k !== 'gc' || sign < 0) {
      var key = GCS.map(col.v);
      view.sort(function (a, b) {
        var x = key[a], y = key[b];
        var xn = x == null, yn = y == null;
        if (xn || yn) return xn && yn ? a - b : xn ? 1 : -1;  /* unknown values last */
        if (x < y) return -sign;
        if (x > y) return sign;
        return a - b;
      });
    }
  }

  function pageSize() { return state.rows === 'all' ? Math.max(view.length, 1) : +state.rows; }
  function pages() { return Math.max(1, Math.ceil(view.length / pageSize())); }

  function renderHead() {
    var top = '', sub = '';
    COLS.forEach(function (c, i) {
      if (!c.group) {
        top += headCell(c, '', ' rowspan="2"');
        return;
      }
      if (!COLS[i - 1].group)
        top += '<th class="group" colspan="' + SIZE_GENS.length + '" title="' + esc(DEF.heap_size || '') +
          '"><span>heap size after the GC (before)</span></th>';
      sub += headCell(c, 'sub', '');
    });
    $('gc-table').tHead.innerHTML = '<tr>' + top + '</tr><tr>' + sub + '</tr>';
  }
  function headCell(c, cls, attrs) {
    var sorted = state.sort === c.k;
    var dir = state.dir === 'asc';
    var classes = [cls, c.cls === 'l' || c.cls === 'c' ? c.cls : '', sorted ? 'sorted' : ''].filter(Boolean).join(' ');
    return '<th' + (classes ? ' class="' + classes + '"' : '') + attrs + ' data-k="' + c.k + '"' +
      (c.tip ? ' title="' + esc(c.tip) + '"' : '') +
      ' aria-sort="' + (sorted ? (dir ? 'ascending' : 'descending') : 'none') + '">' +
      esc(c.label) + ' <span class="arrow">' + (sorted ? (dir ? '\u25b2' : '\u25bc') : '') + '</span></th>';
  }

  var highlight = null;
  function renderBody() {
    var size = pageSize(), total = pages();
    if (state.page > total) state.page = total;
    var start = (state.page - 1) * size, end = Math.min(view.length, start + size);
    var html = [];
    for (var i = start; i < end; i++) {
      var r = GCS[view[i]];
      var cls = (r.incomplete ? 'incomplete' : '') + (r.gc === highlight ? ' hl' : '');
      var row = '<tr data-gc="' + r.gc + '"' + (cls.trim() ? ' class="' + cls.trim() + '"' : '') + '>';
      for (var c = 0; c < COLS.length; c++) row += COLS[c].cell(r);
      html.push(row + '</tr>');
    }
    if (!html.length)
      html.push('<tr class="empty"><td colspan="' + COLS.length + '">' + (N ? 'No GC matches the filter.' : 'No GC was recorded.') + '</td></tr>');
    $('gc-table').tBodies[0].innerHTML = html.join('');
    $('gc-count').textContent = view.length === N ? fmtCount(N) : fmtCount(view.length) + ' of ' + fmtCount(N);
    $('pg-info').textContent = view.length ? 'rows ' + fmtCount(start + 1) + '\u2013' + fmtCount(end) + ' of ' + fmtCount(view.length) : '';
    $('pg-page').textContent = 'page ' + fmtCount(state.page) + ' of ' + fmtCount(total);
    $('pg-first').disabled = $('pg-prev').disabled = state.page <= 1;
    $('pg-next').disabled = $('pg-last').disabled = state.page >= total;
  }
  function syncControls() {
    Array.prototype.forEach.call($('f-gen').children, function (b) { b.classList.toggle('on', b.dataset.v === state.gen); });
    Array.prototype.forEach.call($('f-induced').children, function (b) { b.classList.toggle('on', b.dataset.v === state.induced); });
    if ($('f-text').value !== state.q) $('f-text').value = state.q;
    var sel = $('pg-size');
    if (!Array.prototype.some.call(sel.options, function (o) { return o.value === state.rows; })) {
      var o = document.createElement('option');
      o.value = o.textContent = state.rows;
      sel.appendChild(o);
    }
    sel.value = state.rows;
  }
  function update(resetPage) {
    if (resetPage) state.page = 1;
    computeView();
    renderHead();
    renderBody();
    syncControls();
    writeHash();
  }

  /* Shows GC `gc` in the table: clears the filters if they hide it, turns to its page. */
  function showGc(gc) {
    var idx = -1;
    for (var i = 0; i < view.length; i++) if (GCS[view[i]].gc === gc) { idx = i; break; }
    if (idx < 0) {
      state.gen = state.induced = state.q = '';
      computeView();
      for (i = 0; i < view.length; i++) if (GCS[view[i]].gc === gc) { idx = i; break; }
    }
    highlight = gc;
    state.page = Math.floor(Math.max(idx, 0) / pageSize()) + 1;
    update(false);
    var tr = document.querySelector('#gc-table tr[data-gc="' + gc + '"]');
    if (tr) tr.scrollIntoView({ block: 'center', behavior: 'smooth' });
  }

  function bindTable() {
    if (N > 2000) {
      var all = $('pg-size').querySelector('option[value=all]');
      all.textContent = 'all (' + fmtCount(N) + ': slow)';
    }
    $('gc-table').tHead.addEventListener('click', function (ev) {
      var th = ev.target.closest('th[data-k]');
      if (!th) return;
      var k = th.dataset.k;
      if (state.sort === k) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
      else { state.sort = k; state.dir = k === 'gc' || k === 'reason' ? 'asc' : 'desc'; }
      update(true);
    });
    $('f-gen').addEventListener('click', function (ev) {
      if (ev.target.dataset.v === undefined) return;
      state.gen = ev.target.dataset.v;
      update(true);
    });
    $('f-induced').addEventListener('click', function (ev) {
      if (ev.target.dataset.v === undefined) return;
      state.induced = ev.target.dataset.v;
      update(true);
    });
    var typing = null;
    $('f-text').addEventListener('input', function () {
      clearTimeout(typing);
      typing = setTimeout(function () { state.q = $('f-text').value; update(true); }, 120);
    });
    $('pg-size').addEventListener('change', function () { state.rows = $('pg-size').value; update(true); });
    $('pg-first').addEventListener('click', function () { state.page = 1; update(false); });
    $('pg-prev').addEventListener('click', function () { state.page--; update(false); });
    $('pg-next').addEventListener('click', function () { state.page++; update(false); });
    $('pg-last').addEventListener('click', function () { state.page = pages(); update(false); });
    window.addEventListener('hashchange', function () { readHash(); update(false); });
  }

  /* ---- start ------------------------------------------------------------------------------ */

  renderHeader();
  renderSummary();
  renderPlots();
  renderSnapshots();
  renderStacks();
  renderCounted();
  renderAbout();
  readHash();
  bindTable();
  update(false);

  var resizing = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { charts.forEach(drawChart); drawFlame(); flameSearch(flame.q); }, 150);
  });
  /* For tests and the curious: when the page was ready, in ms since navigation started. */
  document.body.setAttribute('data-ready-ms', Math.round(performance.now()));
})();
