/* eventpipe_parse.c — the payloads of the runtime's allocation events and GC survivor range
 * events, and the sampling distance (see eventpipe.h). Pure: unit-tested without a runtime. */
#include <math.h>
#include <string.h>

#include "collector/eventpipe.h"

static uint64_t read_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint32_t read_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Offset just past the UTF-16 NUL-terminated string at `off`, or 0 if it runs past `size`. */
static uint32_t skip_utf16z(const uint8_t *data, uint32_t size, uint32_t off) {
    for (; off + 2 <= size; off += 2)
        if (data[off] == 0 && data[off + 1] == 0)
            return off + 2;
    return 0;
}

/* AllocationSampled v0: AllocationKind u32, ClrInstanceID u16, TypeID ptr, TypeName UTF-16z,
 * Address ptr, ObjectSize u64, SampledByteOffset u64 (packed, little endian). */
bool hl_parse_allocation_sampled(const uint8_t *data, uint32_t size, uint32_t version,
                                 hl_sample_payload *out) {
    if (version != 0 || !data || size < 14)
        return false;
    uint32_t off = skip_utf16z(data, size, 14);
    if (!off || size - off < 24)
        return false;
    *out = (hl_sample_payload){.kind = read_u32(data), .class_id = read_u64(data + 6),
                               .address = read_u64(data + off), .size = read_u64(data + off + 8),
                               .amount = read_u64(data + off + 16)};
    return true;
}

/* GCAllocationTick: v2 AllocationAmount u32, AllocationKind u32, ClrInstanceID u16,
 * AllocationAmount64 u64, TypeID ptr, TypeName UTF-16z, HeapIndex u32; v3 adds Address ptr;
 * v4 adds ObjectSize u64. */
bool hl_parse_allocation_tick(const uint8_t *data, uint32_t size, uint32_t version,
                              hl_sample_payload *out) {
    if (version < 2 || !data || size < 26)
        return false;
    uint32_t off = skip_utf16z(data, size, 26);
    if (!off || size - off < 4)
        return false;
    *out = (hl_sample_payload){.kind = read_u32(data + 4), .amount = read_u64(data + 10),
                               .class_id = read_u64(data + 18)};
    off += 4; /* HeapIndex */
    if (version >= 3) {
        if (size - off < 8)
            return false;
        out->address = read_u64(data + off);
        off += 8;
    }
    if (version >= 4) {
        if (size - off < 8)
            return false;
        out->size = read_u64(data + off);
    }
    return true;
}


/* GCBulkMovedObjectRanges (22) / GCBulkSurvivingObjectRanges (21), v0: Index u32, Count u32,
 * ClrInstanceID u16, then Count values (packed): moved {OldRangeBase ptr, NewRangeBase ptr,
 * RangeLength u64}, surviving {RangeBase ptr, RangeLength u64}. */
bool hl_parse_ranges(const uint8_t *data, uint32_t size, uint32_t event_id, hl_ranges_payload *out) {
    if (!data || size < 10 || (event_id != HL_EVENT_GC_BULK_MOVED_RANGES &&
                               event_id != HL_EVENT_GC_BULK_SURVIVING_RANGES))
        return false;
    uint32_t stride = event_id == HL_EVENT_GC_BULK_MOVED_RANGES ? 24 : 16;
    uint32_t count = read_u32(data + 4);
    if (count > (size - 10) / stride)
        return false;
    *out = (hl_ranges_payload){.moved = stride == 24, .count = count, .values = data + 10};
    return true;
}

void hl_ranges_at(const hl_ranges_payload *r, uint32_t i, uint64_t *old_start, uint64_t *new_start,
                  uint64_t *length) {
    const uint8_t *v = r->values + (size_t)i * (r->moved ? 24 : 16);
    *old_start = read_u64(v);
    *new_start = r->moved ? read_u64(v + 8) : *old_start;
    *length = read_u64(v + (r->moved ? 16 : 8));
}

/* GCStart v1/v2: Count u32, Depth u32, Reason u32, Type u32, ClrInstanceID u16 (v2 adds
 * ClientSequenceNumber u64). v0 has Count and Reason only (u32 each). */
bool hl_parse_gc_start(const uint8_t *data, uint32_t size, uint32_t version, uint32_t *count,
                       uint32_t *reason) {
    /* Exact sizes: other providers' event 1 reach the same callback (EventPipe's own
     * ProcessInfo, a command line, at the session's end). */
    static const uint32_t sizes[] = {8, 18, 26};
    if (!data || version > 2 || size != sizes[version])
        return false;
    *count = read_u32(data);
    *reason = read_u32(data + (version == 0 ? 4 : 8));
    return true;
}

/* HeapLens Checkpoint(string name), event 1: the name, UTF-16 NUL-terminated (an EventSource's
 * string argument). Converted to UTF-8; a lone surrogate becomes U+FFFD; cut at a character
 * boundary when longer than cap - 1 bytes. */
bool hl_parse_checkpoint(const uint8_t *data, uint32_t size, char *out, size_t cap) {
    if (!data || !out || cap < 5 || !skip_utf16z(data, size, 0))
        return false;
    size_t n = 0;
    for (uint32_t off = 0; off + 2 <= size; off += 2) {
        uint32_t u = (uint32_t)data[off] | (uint32_t)data[off + 1] << 8;
        if (!u)
            break;
        if (u >= 0xD800 && u < 0xDC00 && off + 4 <= size) {
            uint32_t lo = (uint32_t)data[off + 2] | (uint32_t)data[off + 3] << 8;
            if (lo >= 0xDC00 && lo < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                off += 2;
            }
        }
        if (u >= 0xD800 && u < 0xE000)
            u = 0xFFFD;
        uint8_t b[4];
        size_t k;
        if (u < 0x80) {
            b[0] = (uint8_t)u, k = 1;
        } else if (u < 0x800) {
            b[0] = (uint8_t)(0xC0 | u >> 6), b[1] = (uint8_t)(0x80 | (u & 0x3F)), k = 2;
        } else if (u < 0x10000) {
            b[0] = (uint8_t)(0xE0 | u >> 12), b[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
            b[2] = (uint8_t)(0x80 | (u & 0x3F)), k = 3;
        } else {
            b[0] = (uint8_t)(0xF0 | u >> 18), b[1] = (uint8_t)(0x80 | ((u >> 12) & 0x3F));
            b[2] = (uint8_t)(0x80 | ((u >> 6) & 0x3F)), b[3] = (uint8_t)(0x80 | (u & 0x3F)), k = 4;
        }
        if (n + k >= cap)
            break;
        memcpy(out + n, b, k);
        n += k;
    }
    out[n] = 0;
    return true;
}

/* Geometric: the number of Bernoulli(1/mean) trials up to the first success. */
uint64_t hl_sample_distance(uint64_t u, uint64_t mean) {
    /* uniform in (0, 1]: never log(0) */
    double uniform = ((double)(u >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double d = floor(log(uniform) / log1p(-1.0 / (double)mean)) + 1.0;
    return d >= 1e18 ? (uint64_t)1e18 : (uint64_t)d;
}

uint32_t hl_sample_budget_factor(uint64_t seen, uint64_t first, uint64_t elapsed_ns,
                                 uint64_t per_second) {
    if (per_second == 0 || seen == 0)
        return 1;
    if (first > seen)
        first = seen;
    /* allowed in the elapsed time, at least one (a window shorter than a sample's share). The
     * firsts, kept anyway, are not taken from it: on a thread with little CPU time they would
     * leave nothing and drive K to its cap, one sample weighing hundreds; they add at most
     * HL_SAMPLE_BUDGET_FIRSTS x HL_SAMPLE_BUDGET_TYPES a window instead. */
    double allowed = (double)per_second * ((double)elapsed_ns / 1e9);
    if (allowed < 1.0)
        allowed = 1.0;
    double drawn = (double)(seen - first);
    uint32_t k = 1;
    while (k < HL_SAMPLE_BUDGET_MAX_FACTOR && drawn / k > allowed)
        k *= 2;
    return k;
}

bool hl_budget_first(hl_budget_types *t, uint64_t class_id) {
    /* Fibonacci hashing (the product's high bits): TypeIDs are MethodTable addresses, whose
     * low bits are mostly alike */
    uint32_t h = (uint32_t)((class_id * 0x9E3779B97F4A7C15ull) >> 32);
    for (uint32_t i = 0; i < HL_SAMPLE_BUDGET_TYPES; i++) {
        uint32_t slot = (h + i) & (HL_SAMPLE_BUDGET_TYPES - 1);
        if (t->seen[slot] == 0) {
            t->class_id[slot] = class_id;
            t->seen[slot] = 1;
            return true;
        }
        if (t->class_id[slot] == class_id) {
            if (t->seen[slot] < UINT32_MAX)
                t->seen[slot]++;
            return t->seen[slot] <= HL_SAMPLE_BUDGET_FIRSTS;
        }
    }
    return false; /* full: drawn like a sample beyond its firsts */
}

uint32_t hl_walk_hist_bin(uint64_t ns) {
    if (ns < 64)
        return 0;
    uint32_t lg = 63u - (uint32_t)__builtin_clzll(ns); /* 6 or more */
    uint32_t bin = 1 + 4 * (lg - 6) + (uint32_t)((ns >> (lg - 2)) & 3);
    return bin < HL_WALK_HIST_BINS ? bin : HL_WALK_HIST_BINS - 1;
}

/* Bin b >= 1 starts at (4 + (b-1) % 4) << (4 + (b-1) / 4) ns and is a quarter of its power of
 * two wide. */
static double walk_bin_start_ns(uint32_t b) {
    return b == 0 ? 0.0 : (double)((4ull + (b - 1) % 4) << (4 + (b - 1) / 4));
}

double hl_walk_hist_median_us(const uint64_t hist[HL_WALK_HIST_BINS]) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < HL_WALK_HIST_BINS; i++)
        total += hist[i];
    if (total == 0)
        return 0.0;
    uint64_t below = 0;
    uint32_t i = 0;
    for (; i < HL_WALK_HIST_BINS - 1; i++) {
        below += hist[i];
        if (2 * below >= total)
            break;
    }
    if (i == HL_WALK_HIST_BINS - 1)
        return walk_bin_start_ns(i) / 1e3;
    return (walk_bin_start_ns(i) + walk_bin_start_ns(i + 1)) / 2e3;
}

/* GCHeapStats v1/v2: (GenerationSize, TotalPromotedSize) u64 pairs for generations 0..3,
 * FinalizationPromotedSize u64, FinalizationPromotedCount u64, PinnedObjectCount u32,
 * SinkBlockCount u32, GCHandleCount u32, ClrInstanceID u16 (94 bytes); v2 adds the pair of
 * generation 4 (POH), 110 bytes. */
bool hl_parse_gc_heap_stats(const uint8_t *data, uint32_t size, uint32_t version,
                            uint64_t promoted[5]) {
    if (!data || version < 1 || version > 2 || size != (version == 1 ? 94u : 110u))
        return false;
    for (int g = 0; g < 4; g++)
        promoted[g] = read_u64(data + 16 * g + 8);
    promoted[4] = version == 2 ? read_u64(data + 94 + 8) : 0;
    return true;
}

/* GCGlobalHeapHistory v2..v4: FinalYoungestDesired u64, NumHeaps i32, CondemnedGeneration u32,
 * Gen0ReductionCount u32, Reason u32, GlobalMechanisms u32 (at 24), ... */
bool hl_parse_gc_global_history(const uint8_t *data, uint32_t size, uint32_t version,
                                uint32_t *mechanisms) {
    if (!data || version < 2 || version > 4 || size < 28)
        return false;
    *mechanisms = read_u32(data + 24);
    return true;
}
