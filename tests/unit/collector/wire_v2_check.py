#!/usr/bin/env python3
"""wire_v2_check.py — a stand-in writer for testing the collector by hand on a real program.

Listens on a unix socket, takes one collector connection, decodes the wire v2 stream
(wire/hl_wire.h) and checks what the collector promises:
  - sum of ALLOC_COUNTS counts (without the flagged unreported ones) + allocs_dropped ==
    allocs_seen (RUN_END counters);
  - per interval: sum of `survived` == GC_SURVIVORS entries, survivors in ascending id order
    inside the interval's id range, every (type, thread, heap) key once per interval;
  - GCs 1, 2, 3 ... each closed by its GC_END; TYPE records before the ids they name;
  - the stream ends with RUN_END.
Prints one summary line (and the peak RSS of the profiled process, sampled from /proc).

  wire_v2_check.py SOCKET [--slow-ms N] [--stall-after-bytes N]
Run the program with CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={A3E1B5C2-...},
CORECLR_PROFILER_PATH=build/bin/libheaplens.so, HEAPLENS_SOCKET=SOCKET.
--slow-ms sleeps N ms after every MiB read (a slow writer); --stall-after-bytes stops reading
after N bytes, keeping the socket open (a stalled writer: the collector gives it up after 10 s).
"""
import os
import socket
import struct
import sys
import threading
import time

REC = {1: "RUN_START", 2: "TYPE", 3: "THREAD", 5: "GC_START", 7: "GC_DEATHS", 8: "GC_PROMOTIONS",
       9: "GC_END", 10: "RUN_END", 11: "HANDLE_CREATED", 12: "HANDLE_DESTROYED",
       13: "GC_HANDLE_KINDS", 14: "DISCOVERED", 15: "SNAPSHOT_START", 16: "SNAPSHOT_OBJECTS",
       17: "SNAPSHOT_REFS", 18: "SNAPSHOT_ROOTS", 19: "SNAPSHOT_END", 20: "ALLOC_COUNTS",
       21: "GC_SURVIVORS"}
COUNTERS = ["allocs_seen", "allocs_dropped", "allocs_dropped_buffer", "allocs_dropped_writer",
            "gc_events_dropped", "records_dropped", "bytes_dropped", "model_anomalies",
            "threads_overflowed", "gcs_dropped", "snapshots_dropped", "writer_lost",
            "thread_waits", "thread_wait_ns"]  # the last two: stream version 3


def main():
    path = sys.argv[1]
    slow_ms = 0
    stall_after = None
    args = sys.argv[2:]
    for i, a in enumerate(args):
        if a == "--slow-ms":
            slow_ms = int(args[i + 1])
        if a == "--stall-after-bytes":
            stall_after = int(args[i + 1])
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    conn, _ = srv.accept()
    buf = bytearray()
    total = 0
    t0 = time.time()
    while True:
        if stall_after is not None and total >= stall_after:
            time.sleep(30)  # hold the socket open without reading
            break
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
        total += len(chunk)
        if slow_ms:
            time.sleep(slow_ms / 1000.0)
    elapsed = time.time() - t0
    check(bytes(buf), elapsed)


def check(data, elapsed):
    errors = []
    if data[:8] != b"HEAPLENS":
        print("FAIL: no stream header")
        sys.exit(1)
    version, = struct.unpack_from("<I", data, 8)
    off = 16
    types = set()
    gc_open = None
    last_gc = 0
    counts_total = 0
    intervals = {}  # gc -> [count, survived]
    survivors = {}  # gc -> entries
    keys_seen = {}
    first_id_after = {0: 1}
    last_surv_id = {}
    run_end = None
    n_rec = {}
    pid = None
    last_counters = None
    survivor_ranges_bad = 0
    snap_missing = snap_extra = 0
    while off + 8 <= len(data):
        typ, _, size = struct.unpack_from("<HHI", data, off)
        if off + 8 + size > len(data):
            errors.append("truncated record at end")
            break
        p = data[off + 8: off + 8 + size]
        off += 8 + size
        n_rec[REC.get(typ, typ)] = n_rec.get(REC.get(typ, typ), 0) + 1
        if typ == 1:
            pid, = struct.unpack_from("<I", p, 0)
        elif typ == 2:
            tid, = struct.unpack_from("<I", p, 0)
            types.add(tid)
        elif typ == 5:
            gc, = struct.unpack_from("<I", p, 0)
            fia, = struct.unpack_from("<Q", p, 32)
            if gc != last_gc + 1:
                errors.append("GC %d after %d" % (gc, last_gc))
            if gc_open is not None:
                errors.append("GC %d starts inside GC %d" % (gc, gc_open))
            gc_open = gc
            first_id_after[gc] = fia
        elif typ == 9:
            gc, = struct.unpack_from("<I", p, 0)
            if gc != gc_open:
                errors.append("GC_END %d without its start" % gc)
            gc_open = None
            last_gc = gc
            n = 14 if version >= 3 else 12  # GC_END's counters start at byte 112
            last_counters = struct.unpack_from(f"<{n}Q", p, 112)
        elif typ == 20:
            gc, n = struct.unpack_from("<II", p, 0)
            iv = intervals.setdefault(gc, [0, 0])
            for k in range(n):
                t, tid, heap, flags, cnt, byt, surv, survb = struct.unpack_from("<IIIIQQQQ", p, 8 + 48 * k)
                if t not in types:
                    errors.append("type %d used before its TYPE" % t)
                key = (gc, t, tid, heap)
                if key in keys_seen:
                    errors.append("key %r twice" % (key,))
                keys_seen[key] = 1
                iv[0] += cnt
                iv[1] += surv
                if not flags & 1:  # unreported allocations are not in allocs_seen
                    counts_total += cnt
        elif typ == 21:
            gc, n = struct.unpack_from("<II", p, 0)
            survivors[gc] = survivors.get(gc, 0) + n
            lo = first_id_after.get(gc - 1, None)
            hi = first_id_after.get(gc, None)
            for k in range(n):
                sid, size_, t, tid, heap, gen = struct.unpack_from("<QQIIBB", p, 8 + 32 * k)
                if sid <= last_surv_id.get(gc, 0):
                    errors.append("survivors not ascending in GC %d" % gc)
                last_surv_id[gc] = sid
                if lo is not None and hi is not None and not (lo <= sid < hi):
                    survivor_ranges_bad += 1
                    if survivor_ranges_bad < 4:
                        errors.append("GC %d survivor %d not in [%d, %d)" % (gc, sid, lo, hi))
                if t not in types:
                    errors.append("type %d used before its TYPE" % t)
        elif typ == 19:
            missing, extra = struct.unpack_from("<QQ", p, 40)
            snap_missing += missing
            snap_extra += extra
        elif typ == 10:
            run_end = struct.unpack_from("<QQIIQ", p, 0)
            last_counters = struct.unpack_from(f"<{14 if version >= 3 else 12}Q", p, 32)
    if survivor_ranges_bad:
        errors.append("%d survivors outside their interval" % survivor_ranges_bad)
    for gc, (cnt, surv) in intervals.items():
        if survivors.get(gc, 0) != surv:
            errors.append("GC %d: survived %d, survivor entries %d" % (gc, surv, survivors.get(gc, 0)))
    if run_end is None:
        errors.append("no RUN_END")
    k = dict(zip(COUNTERS, last_counters)) if last_counters else {}
    if k:
        if counts_total + k["allocs_dropped"] != k["allocs_seen"]:
            errors.append("counts %d + dropped %d != seen %d" % (counts_total, k["allocs_dropped"], k["allocs_seen"]))
        if k["allocs_dropped"] != k["allocs_dropped_buffer"] + k["allocs_dropped_writer"]:
            errors.append("allocs_dropped is not the sum of its reasons")
    exit_wait_ms = (run_end[1] - run_end[4]) / 1e6 if run_end else -1
    print("%s: version=%d bytes=%d read_s=%.2f gcs=%d counted=%d survivors=%d exit_wait_ms=%.1f snapshot_missing/extra=%d/%d records=%s counters=%s"
          % ("ok" if not errors else "FAIL", version, len(data), elapsed, last_gc, counts_total,
             sum(survivors.values()), exit_wait_ms, snap_missing, snap_extra, n_rec, k))
    for e in errors[:20]:
        print("  " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
