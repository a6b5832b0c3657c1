/* Sample encoding in thread chunks (whole samples, PAD at a chunk's end), frame and stack
 * interning, and EventPipe payload parsing: pure logic, no runtime. */
#undef NDEBUG /* the checks are asserts: keep them in release builds */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collector/eventpipe.h"
#include "collector/frames.h"
#include "collector/thread_buffers.h"
#include "collector/type_names.h"

static hl_alloc_event seen[8192];
static size_t n_seen;
/* Takes every slot as it is (no limit applies: the drains below have none). */
static size_t collect(void *ctx, const hl_alloc_event *ev, size_t n, uint64_t limit, uint64_t *id,
                      uint32_t os_tid) {
    (void)ctx, (void)limit, (void)id, (void)os_tid;
    for (size_t i = 0; i < n; i++)
        seen[n_seen++] = ev[i];
    return n;
}

static void test_encode_and_push(void) {
    uintptr_t frames[100];
    for (int i = 0; i < 100; i++)
        frames[i] = 0x7f0000001000ull + (uintptr_t)i;
    hl_alloc_event ev[HL_SAMPLE_MAX_EVENTS];
    uint32_t n = hl_sample_encode(ev, 7, 0x1234, 0x5678, 1, 40, 99, 16, 100, frames);
    assert(n == 4 + HL_SAMPLE_MAX_FRAMES / 2 && n == HL_SAMPLE_MAX_EVENTS);
    assert(HL_EV_KIND(&ev[0]) == HL_EV_SAMPLE && ev[0].a == 7 && hl_ev_slots(&ev[0]) == n);
    assert(HL_SAMPLE_HEAD_FRAMES(&ev[0]) == HL_SAMPLE_MAX_FRAMES && HL_SAMPLE_HEAD_HEAP(&ev[0]) == 1);
    assert(HL_SAMPLE_HEAD_WEIGHT(&ev[0]) == 16);
    assert(ev[1].a == 0x1234 && (ev[1].b & HL_EV_LOW60) == 0x5678);
    assert(ev[2].a == 40 && (uint32_t)ev[2].b == 100 && ev[3].a == 99);
    for (uint32_t i = 1; i < n; i++)
        assert(HL_EV_KIND(&ev[i]) == HL_EV_CONT);
    assert(ev[4].a == frames[0] && (ev[4].b & HL_EV_LOW60) == frames[1]);
    assert(ev[n - 1].a == frames[94] && (ev[n - 1].b & HL_EV_LOW60) == frames[95]);
    /* An odd number of frames: the last slot's second one is empty. */
    n = hl_sample_encode(ev, 8, 0x1234, 0x5678, 0, 40, 0, 1, 3, frames);
    assert(n == 6 && hl_ev_slots(&ev[0]) == 6 && (ev[5].b & HL_EV_LOW60) == 0);

    /* A chunk nearly full: the sample goes whole into the next one, the gap is PAD. */
    hl_tbufs r;
    assert(hl_tbufs_init(&r, 1 << 20) == 0);
    hl_tbuf *b = hl_tbufs_current(&r);
    atomic_uint_fast64_t next_id = 1, epoch = 0;
    uint32_t allocs = HL_TBUF_CHUNK_EVENTS - 5 - (HL_TBUF_CHUNK_EVENTS - 5 + HL_ID_BLOCK) / (HL_ID_BLOCK + 1);
    for (uint32_t i = 0; i < allocs; i++)
        assert(hl_tbuf_push_alloc(b, &next_id, &epoch, 0x1000 + i * 32, 0x2000, 24));
    assert(b->tail_fill == HL_TBUF_CHUNK_EVENTS - 5); /* the allocations and their MARKs */
    n = hl_sample_encode(ev, HL_TBUF_CHUNK_EVENTS, 1, 2, 0, 24, 0, 1, 30, frames);
    assert(n == 19 && hl_tbuf_push_n(b, ev, n));
    n_seen = 0;
    hl_tbufs_drain(&r, UINT64_MAX, collect, NULL);
    size_t pads = 0, heads = 0;
    for (size_t i = 0; i < n_seen; i++) {
        pads += HL_EV_KIND(&seen[i]) == HL_EV_PAD;
        heads += HL_EV_KIND(&seen[i]) == HL_EV_SAMPLE;
    }
    assert(pads == 5 && heads == 1 && n_seen == HL_TBUF_CHUNK_EVENTS - 5 + 5 + 19);
    hl_tbufs_release(&r);
}

static void test_interning(void) {
    hl_frames f;
    hl_frames_init(&f);
    uint32_t a = hl_frames_intern_name(&f, "Ns.T.A", 0, 1);
    uint32_t b = hl_frames_intern_name(&f, "Ns.T.B", 0, 2);
    assert(a == 1 && b == 2 && hl_frames_intern_name(&f, "Ns.T.A", 0, 3) == a);
    assert(strcmp(hl_frames_name(&f, b), "Ns.T.B") == 0 && f.pending_frames.n == 2);
    uint32_t s1[] = {a, b}, s2[] = {b, a};
    uint32_t x = hl_frames_intern_stack(&f, s1, 2), y = hl_frames_intern_stack(&f, s2, 2);
    assert(x == 1 && y == 2 && hl_frames_intern_stack(&f, s1, 2) == x);
    uint32_t depth = 0;
    const uint32_t *ids = hl_frames_stack(&f, y, &depth);
    assert(depth == 2 && ids[0] == b && ids[1] == a && f.pending_stacks.n == 2);
    assert(hl_frames_intern_stack(&f, s1, 0) == 0);
    hl_frames_release(&f);
}

static void put_utf16(uint8_t *p, const char *s) {
    for (; *s; s++, p += 2)
        p[0] = (uint8_t)*s, p[1] = 0;
    p[0] = p[1] = 0;
}

static void test_parse(void) {
    uint8_t d[128] = {0};
    uint32_t kind = 1;
    uint64_t type = 0x7f00deadbeef, addr = 0x7e0000001000, size = 85000, offset = 17;
    memcpy(d, &kind, 4);
    memcpy(d + 6, &type, 8);
    put_utf16(d + 14, "Foo");
    memcpy(d + 22, &addr, 8);
    memcpy(d + 30, &size, 8);
    memcpy(d + 38, &offset, 8);
    hl_sample_payload s;
    assert(hl_parse_allocation_sampled(d, 46, 0, &s));
    assert(s.kind == 1 && s.class_id == type && s.address == addr && s.size == size &&
           s.amount == offset);
    assert(!hl_parse_allocation_sampled(d, 45, 0, &s) && !hl_parse_allocation_sampled(d, 46, 1, &s));
    /* GCAllocationTick v4 */
    memset(d, 0, sizeof d);
    uint64_t amount = 102500;
    uint32_t heap_index = 0;
    memcpy(d + 4, &kind, 4);
    memcpy(d + 10, &amount, 8);
    memcpy(d + 18, &type, 8);
    put_utf16(d + 26, "Foo");
    memcpy(d + 34, &heap_index, 4);
    memcpy(d + 38, &addr, 8);
    memcpy(d + 46, &size, 8);
    assert(hl_parse_allocation_tick(d, 54, 4, &s));
    assert(s.kind == 1 && s.amount == amount && s.class_id == type && s.address == addr &&
           s.size == size);
    assert(hl_parse_allocation_tick(d, 46, 3, &s) && s.size == 0 && s.address == addr);
    assert(!hl_parse_allocation_tick(d, 53, 4, &s));
}

/* GCBulkMovedObjectRanges / GCBulkSurvivingObjectRanges: header, packed values, bounds. */
static void test_parse_ranges(void) {
    uint8_t d[10 + 2 * 24];
    memset(d, 0, sizeof d);
    uint32_t count = 2;
    memcpy(d + 4, &count, 4);
    uint64_t v[6] = {0x1000, 0x2000, 48, 0x3000, 0x3000, 24};
    memcpy(d + 10, v, sizeof v);
    hl_ranges_payload r;
    assert(hl_parse_ranges(d, sizeof d, HL_EVENT_GC_BULK_MOVED_RANGES, &r) && r.moved && r.count == 2);
    uint64_t o, n, len;
    hl_ranges_at(&r, 1, &o, &n, &len);
    assert(o == 0x3000 && n == 0x3000 && len == 24);
    assert(!hl_parse_ranges(d, sizeof d - 1, HL_EVENT_GC_BULK_MOVED_RANGES, &r));
    assert(!hl_parse_ranges(d, sizeof d, 23, &r));
    /* surviving: {start, length}: three fit in the same bytes */
    count = 3;
    memcpy(d + 4, &count, 4);
    assert(hl_parse_ranges(d, sizeof d, HL_EVENT_GC_BULK_SURVIVING_RANGES, &r) && !r.moved);
    hl_ranges_at(&r, 0, &o, &n, &len);
    assert(o == 0x1000 && n == 0x1000 && len == 0x2000);
}

/* GCStart v0..v2: count and reason; any other size (EventPipe's own event 1, ProcessInfo, a
 * command line, reaches the same callback) is not a GCStart. */
static void test_parse_gc_start(void) {
    uint8_t d[26];
    memset(d, 0, sizeof d);
    uint32_t count = 7, depth = 2, reason = 4, type = 0;
    memcpy(d, &count, 4);
    memcpy(d + 4, &depth, 4);
    memcpy(d + 8, &reason, 4);
    memcpy(d + 12, &type, 4);
    uint32_t c = 0, r = 0;
    assert(hl_parse_gc_start(d, 26, 2, &c, &r) && c == 7 && r == 4);
    assert(hl_parse_gc_start(d, 18, 1, &c, &r) && c == 7 && r == 4);
    memcpy(d + 4, &reason, 4); /* v0: Count, Reason */
    c = r = 0;
    assert(hl_parse_gc_start(d, 8, 0, &c, &r) && c == 7 && r == 4);
    assert(!hl_parse_gc_start(d, 25, 2, &c, &r));
    assert(!hl_parse_gc_start(d, 26, 1, &c, &r));
    assert(!hl_parse_gc_start(d, 26, 3, &c, &r));
    assert(!hl_parse_gc_start(NULL, 26, 2, &c, &r));
}

/* GCHeapStats v1/v2: TotalPromotedSize of generations 0..3 (and 4 in v2) at their offsets;
 * other sizes refused. GCGlobalHeapHistory: GlobalMechanisms at 24. */
static void test_parse_gc_stats(void) {
    uint8_t d[110] = {0};
    for (uint64_t g = 0; g < 4; g++) {
        uint64_t size = 1000 + g, promoted = 100 + g;
        memcpy(d + 16 * g, &size, 8);
        memcpy(d + 16 * g + 8, &promoted, 8);
    }
    uint64_t poh = 104;
    memcpy(d + 102, &poh, 8);
    uint64_t p[5] = {0};
    assert(hl_parse_gc_heap_stats(d, 110, 2, p));
    assert(p[0] == 100 && p[1] == 101 && p[2] == 102 && p[3] == 103 && p[4] == 104);
    assert(hl_parse_gc_heap_stats(d, 94, 1, p) && p[3] == 103 && p[4] == 0);
    assert(!hl_parse_gc_heap_stats(d, 94, 2, p));
    assert(!hl_parse_gc_heap_stats(d, 110, 0, p));
    assert(!hl_parse_gc_heap_stats(NULL, 110, 2, p));
    uint8_t h[44] = {0};
    uint32_t mech = HL_GC_MECHANISM_COMPACTION | 0x4, got = 0;
    memcpy(h + 24, &mech, 4);
    assert(hl_parse_gc_global_history(h, 38, 2, &got) && got == mech);
    assert(!hl_parse_gc_global_history(h, 20, 2, &got));
    assert(!hl_parse_gc_global_history(h, 38, 1, &got));
}

/* Checkpoint(string name): UTF-16 to UTF-8, cut at a character, refused unterminated. */
static size_t utf16z(uint8_t *out, const uint16_t *units, size_t n) {
    for (size_t i = 0; i < n; i++)
        out[2 * i] = (uint8_t)units[i], out[2 * i + 1] = (uint8_t)(units[i] >> 8);
    out[2 * n] = out[2 * n + 1] = 0;
    return 2 * n + 2;
}

static void test_parse_checkpoint(void) {
    uint8_t d[64];
    char name[16];
    /* "ab", e-acute, euro sign, U+1F600 (a surrogate pair), then a lone low surrogate */
    const uint16_t units[] = {'a', 'b', 0xE9, 0x20AC, 0xD83D, 0xDE00, 0xDC00};
    size_t n = utf16z(d, units, 7);
    assert(hl_parse_checkpoint(d, (uint32_t)n, name, 32 > sizeof name ? sizeof name : 32));
    assert(strcmp(name, "ab\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xEF\xBF\xBD") == 0);
    /* Room for "ab" and the e-acute only: cut before the euro sign, never inside it. */
    assert(hl_parse_checkpoint(d, (uint32_t)n, name, 6) && strcmp(name, "ab\xC3\xA9") == 0);
    /* The euro sign would fill all 7 bytes: no room for the NUL, so it is left out. */
    assert(hl_parse_checkpoint(d, (uint32_t)n, name, 7) && strcmp(name, "ab\xC3\xA9") == 0);
    n = utf16z(d, units, 0);
    assert(hl_parse_checkpoint(d, (uint32_t)n, name, sizeof name) && name[0] == 0);
    n = utf16z(d, units, 2);
    assert(!hl_parse_checkpoint(d, (uint32_t)n - 2, name, sizeof name)); /* no terminator */
    assert(!hl_parse_checkpoint(d, 3, name, sizeof name));               /* odd, unterminated */
    assert(!hl_parse_checkpoint(NULL, 4, name, sizeof name));
}

/* Metadata names (UTF-16) cut at a character: room for "ab" and the e-acute only leaves the
 * euro sign out whole, never its first bytes (they are no UTF-8), and nothing after it. */
static void test_utf16_name_cut(void) {
    const WCHAR w[] = {'a', 'b', 0xE9, 0x20AC, 'c', 0xD83D, 0xDE00, 0};
    char out[16];
    hl_utf16_name(out, sizeof out, w, 7);
    assert(strcmp(out, "ab\xC3\xA9\xE2\x82\xAC" "c\xF0\x9F\x98\x80") == 0);
    for (size_t size = 1; size <= 13; size++) {
        static const char *const want[] = {"", "a", "ab", "ab", "ab\xC3\xA9", "ab\xC3\xA9",
                                           "ab\xC3\xA9", "ab\xC3\xA9\xE2\x82\xAC",
                                           "ab\xC3\xA9\xE2\x82\xAC" "c",
                                           "ab\xC3\xA9\xE2\x82\xAC" "c",
                                           "ab\xC3\xA9\xE2\x82\xAC" "c",
                                           "ab\xC3\xA9\xE2\x82\xAC" "c",
                                           "ab\xC3\xA9\xE2\x82\xAC" "c\xF0\x9F\x98\x80"};
        hl_utf16_name(out, size, w, 7);
        assert(strcmp(out, want[size - 1]) == 0);
    }
    /* A character cut off ends the name: a later ASCII one is not added after the gap. */
    const WCHAR gap[] = {'a', 0x20AC, 'b', 0};
    hl_utf16_name(out, 4, gap, 3);
    assert(strcmp(out, "a") == 0);
}

/* The own sampler's distances (full mode): geometric, mean 102400, never 0. */
static void test_sample_distance(void) {
    uint64_t x = 0x9E3779B97F4A7C15ull, min = UINT64_MAX;
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        uint64_t d = hl_sample_distance(x * 0x2545F4914F6CDD1Dull, HL_ALLOC_SAMPLED_MEAN_BYTES);
        min = d < min ? d : min;
        sum += (double)d;
    }
    double mean = sum / n;
    assert(min >= 1);
    assert(mean > 102400 * 0.98 && mean < 102400 * 1.02);
    assert(hl_sample_distance(UINT64_MAX, 102400) == 1); /* uniform 1: the next byte */
    assert(hl_sample_distance(0, 102400) > 3000000);      /* the smallest uniform: far */
}

/* The sample budget's factor: the smallest power of two that brings a window's samples within
 * the budget for the thread's CPU time in it; 1 without a budget or samples; capped. */
static void test_sample_budget_factor(void) {
    const uint64_t ms = 1000000;
    assert(hl_sample_budget_factor(0, 0, 100 * ms, 10000) == 1);
    assert(hl_sample_budget_factor(5000, 0, 100 * ms, 0) == 1);     /* no budget */
    assert(hl_sample_budget_factor(1000, 0, 100 * ms, 10000) == 1); /* exactly the budget */
    assert(hl_sample_budget_factor(1001, 0, 100 * ms, 10000) == 2);
    assert(hl_sample_budget_factor(3600, 0, 100 * ms, 10000) == 4); /* AllocBench's rate: 36k/s */
    assert(hl_sample_budget_factor(4001, 0, 100 * ms, 10000) == 8);
    assert(hl_sample_budget_factor(3, 0, 0, 10000) == 4);           /* no CPU time: one allowed */
    assert(hl_sample_budget_factor(UINT32_MAX, 0, 100 * ms, 1) == HL_SAMPLE_BUDGET_MAX_FACTOR);
    /* The default (5,000 per CPU second) thins Workload's threads, about 12,000 samples per
     * second of their CPU time, to one in four, and leaves a thread at 5,000 untouched. */
    assert(hl_sample_budget_factor(1200, 0, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 4);
    assert(hl_sample_budget_factor(500, 0, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 1);
    /* The window's firsts (kept, weight 1) are not drawn: K brings the others within the
     * budget. 1,200 seen, 100 of them firsts: 1,100 drawn into 500 -> K 4 (275); 1,010 with
     * 10 firsts: 1,000 -> K 2; 520 with 24: 496 -> K 1. Firsts are not taken from the budget:
     * a thread with 4 ms of CPU (20 allowed) and 24 firsts among its 50 samples still keeps
     * one in 2 of the others, not one in 32. */
    assert(hl_sample_budget_factor(1200, 100, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 4);
    assert(hl_sample_budget_factor(1010, 10, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 2);
    assert(hl_sample_budget_factor(520, 24, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 1);
    assert(hl_sample_budget_factor(50, 24, 4 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 2);
    assert(hl_sample_budget_factor(600, 600, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 1);
    assert(hl_sample_budget_factor(5, 9, 100 * ms, HL_SAMPLE_BUDGET_DEFAULT) == 1); /* clamped */
}

/* A type's first HL_SAMPLE_BUDGET_FIRSTS samples in a window are firsts, the next ones not;
 * each type counts on its own; zeroed, the table starts over; a type that finds the table full
 * is never a first. */
static void test_budget_first(void) {
    hl_budget_types t;
    memset(&t, 0, sizeof t);
    const uint64_t order = 0x7f3a12345678ull, event = 0x7f3a12345ab0ull;
    for (uint32_t i = 0; i < HL_SAMPLE_BUDGET_FIRSTS; i++) {
        assert(hl_budget_first(&t, order));
        assert(hl_budget_first(&t, event));
    }
    assert(!hl_budget_first(&t, order) && !hl_budget_first(&t, order));
    assert(!hl_budget_first(&t, event));
    assert(hl_budget_first(&t, 0)); /* TypeID 0 is a type like any other */
    memset(&t, 0, sizeof t);        /* a new window */
    assert(hl_budget_first(&t, order));
    memset(&t, 0, sizeof t);
    /* MethodTables 0x40 apart (their low bits alike): every one gets a slot of its own */
    for (uint64_t k = 0; k < HL_SAMPLE_BUDGET_TYPES; k++)
        assert(hl_budget_first(&t, 0x7f3a10000000ull + 0x40 * k));
    for (uint64_t k = 0; k < HL_SAMPLE_BUDGET_TYPES; k++) /* all found again: a second first */
        assert(hl_budget_first(&t, 0x7f3a10000000ull + 0x40 * k) == (HL_SAMPLE_BUDGET_FIRSTS > 1));
    assert(!hl_budget_first(&t, order)); /* full: drawn like the others */
    assert(!hl_budget_first(&t, order));
}

/* The budget's estimator, as budget_keep (eventpipe.c) applies it: a type's firsts kept with
 * weight 1, the others kept with probability 1/K and weight K. Over many windows the sums of
 * the kept weights per type come within a few percent of the samples seen: a common type
 * (thinned), a rare one (2 a window: all firsts, exact) and a burst (6 in one window of 4:
 * firsts and draws mixed). Weighing the firsts K, or the draws 1, fails it. */
static void test_budget_estimates(void) {
    const uint32_t k = 8, windows = 16000;
    const uint64_t common = 0x1000, rare = 0x2000, burst = 0x3000;
    double est[3] = {0, 0, 0}, truth[3] = {0, 0, 0};
    uint64_t kept = 0, samples = 0, x = 0x9E3779B97F4A7C15ull;
    for (uint32_t w = 0; w < windows; w++) {
        hl_budget_types t;
        memset(&t, 0, sizeof t);
        for (uint32_t i = 0; i < 400; i++) {
            int which = i % 200 == 7 ? 1 : (w % 4 == 0 && i >= 100 && i < 106) ? 2 : 0;
            uint64_t type = which == 0 ? common : which == 1 ? rare : burst;
            truth[which] += 1;
            samples++;
            double weight = 0;
            if (hl_budget_first(&t, type)) {
                weight = 1;
            } else {
                x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
                if (((x * 0x2545F4914F6CDD1Dull) >> 32 & (k - 1)) == 0)
                    weight = k;
            }
            if (weight > 0)
                kept++;
            est[which] += weight;
        }
    }
    for (int i = 0; i < 3; i++)
        assert(fabs(est[i] - truth[i]) <= 0.05 * truth[i]);
    assert(est[1] == truth[1]);        /* the rare type: every sample kept */
    assert(kept < samples / 4);        /* still thinned: firsts are few */
}

/* The walks' median from their bins (a quarter of a power of two each from 64 ns): the middle
 * of the median's bin, within 12.5%; the open last bin says only "at least"; no walk, 0. */
static void test_walk_hist(void) {
    uint64_t h[HL_WALK_HIST_BINS] = {0};
    assert(hl_walk_hist_median_us(h) == 0.0);
    assert(hl_walk_hist_bin(0) == 0 && hl_walk_hist_bin(63) == 0 && hl_walk_hist_bin(64) == 1);
    assert(hl_walk_hist_bin(79) == 1 && hl_walk_hist_bin(80) == 2 && hl_walk_hist_bin(127) == 4);
    assert(hl_walk_hist_bin(128) == 5 && hl_walk_hist_bin(160) == 6);
    assert(hl_walk_hist_bin(UINT64_MAX) == HL_WALK_HIST_BINS - 1);
    for (uint64_t ns = 64; ns < 3000000; ns = ns * 9 / 8) { /* bins grow with the time */
        assert(hl_walk_hist_bin(ns) <= hl_walk_hist_bin(ns * 9 / 8));
        uint64_t one[HL_WALK_HIST_BINS] = {0};
        one[hl_walk_hist_bin(ns)] = 1;
        double m = hl_walk_hist_median_us(one) * 1e3;
        assert(m >= ns * 0.875 && m <= ns * 1.125);
    }
    h[hl_walk_hist_bin(850)] = 3;        /* three walks of 0.85 us */
    h[hl_walk_hist_bin(40000000)] = 2;   /* two preempted for 40 ms: the mean would be 16 ms */
    double m = hl_walk_hist_median_us(h);
    assert(m >= 0.85 * 0.875 && m <= 0.85 * 1.125);
    h[HL_WALK_HIST_BINS - 1] = 4;        /* most in the open bin: its start, 3.1 ms */
    m = hl_walk_hist_median_us(h);
    assert(m > 3145.0 && m < 3146.0);
}

int main(void) {
    test_sample_budget_factor();
    test_budget_first();
    test_budget_estimates();
    test_walk_hist();
    test_sample_distance();
    test_encode_and_push();
    test_interning();
    test_parse();
    test_parse_ranges();
    test_parse_gc_start();
    test_parse_gc_stats();
    test_parse_checkpoint();
    test_utf16_name_cut();
    puts("ok");
    return 0;
}
