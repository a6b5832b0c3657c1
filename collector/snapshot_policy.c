/* snapshot_policy.c — see snapshot_policy.h. */
#include "collector/snapshot_policy.h"

#include "wire/hl_wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull

static void policy_default(hl_snapshot_policy *out) {
    memset(out, 0, sizeof *out);
    out->induced = true;
    out->min_interval_ns = HL_SNAPSHOT_MIN_INTERVAL_DEFAULT_S * NS_PER_S;
}

uint32_t hl_snapshot_policy_at_gc(const hl_snapshot_policy *p, const hl_snapshot_gc_start *g,
                                  bool *skipped) {
    *skipped = false;
    uint32_t t = 0;
    if (p->induced && g->induced)
        t = HL_SNAPSHOT_INDUCED;
    else if (p->gen2 && g->generation == 2)
        t = HL_SNAPSHOT_GEN2;
    else if (p->every_gcs && g->gc % p->every_gcs == 0)
        t = HL_SNAPSHOT_EVERY;
    if (!t || (p->max_snapshots && g->taken >= p->max_snapshots))
        return 0;
    if (!p->walks_unbounded && g->snapshots_held >= HL_SNAPSHOTS_HELD_MAX &&
        g->walks_held_bytes >= HL_SNAPSHOT_WALKS_HELD_MAX_BYTES) {
        *skipped = true;
        return 0;
    }
    return t;
}

/* A whole number from 1 to `max`, all of [s, end). */
static bool number_parse(const char *s, const char *end, uint64_t max, uint64_t *out) {
    if (s == end || *s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || v > (max - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return v >= 1;
}

/* SIZE: bytes, or a number followed by K, M or G (KiB, MiB, GiB; a trailing "iB" or "B" taken). */
static bool size_parse(const char *s, const char *end, uint64_t *out) {
    const char *d = s;
    while (d < end && *d >= '0' && *d <= '9')
        d++;
    unsigned shift = 0;
    if (d < end) {
        switch (*d) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        default: return false;
        }
        size_t rest = (size_t)(end - d - 1);
        if (!(rest == 0 || (rest == 1 && d[1] == 'B') || (rest == 2 && d[1] == 'i' && d[2] == 'B')))
            return false;
    }
    uint64_t v;
    if (!number_parse(s, d, UINT64_MAX >> 30, &v))
        return false;
    *out = v << shift;
    return true;
}

/* False, with what the item's key takes (its message) in `range`. */
static bool out_of_range(const char **range, const char *what) {
    *range = what;
    return false;
}

/* Parses one item. False when it is none; then `range` is what its key takes, when the key is one
 * and its value is not (so that `limit:200` is told 1 to 100, not the list of policies). */
static bool item_parse(const char *s, const char *end, hl_snapshot_policy *p, bool *none,
                       const char **range) {
    size_t len = (size_t)(end - s);
    const char *colon = memchr(s, ':', len);
    const char *v = colon ? colon + 1 : end;
    size_t key = colon ? (size_t)(colon - s) : len;
    uint64_t n;
#define KEY(k) (key == sizeof(k) - 1 && memcmp(s, k, key) == 0)
    if (!colon) {
        if (KEY("induced"))
            p->induced = true;
        else if (KEY("gen2"))
            p->gen2 = true;
        else if (KEY("none"))
            *none = true;
        else
            return false;
        return true;
    }
    if (KEY("every")) {
        if (end > v && end[-1] == 's') {
            if (!number_parse(v, end - 1, 366ull * 86400, &n))
                return out_of_range(range, "every:Ns takes 1 to 31,622,400 seconds (a year)");
            p->every_ns = n * NS_PER_S;
        } else {
            if (!number_parse(v, end, 1000000, &n))
                return out_of_range(range, "every:N takes 1 to 1,000,000 GCs (every:Ns seconds)");
            p->every_gcs = (uint32_t)n;
        }
    } else if (KEY("gen2-growth")) {
        if (!number_parse(v, end, 100000, &n))
            return out_of_range(range, "gen2-growth:PCT takes 1 to 100,000 (percent)");
        p->gen2_growth_pct = (uint32_t)n;
    } else if (KEY("heap")) {
        if (!size_parse(v, end, &n))
            return out_of_range(range, "heap:SIZE takes bytes, or K, M, G (512M, 2G)");
        p->heap_bytes = n;
    } else if (KEY("limit")) {
        if (!number_parse(v, end, 100, &n))
            return out_of_range(range, "limit:PCT takes 1 to 100 (percent of the memory limit)");
        p->limit_pct = (uint32_t)n;
    } else if (KEY("pause")) {
        if (!number_parse(v, end, 3600000, &n))
            return out_of_range(range, "pause:MS takes 1 to 3,600,000 (milliseconds)");
        p->pause_ns = n * NS_PER_MS;
    } else if (KEY("max-snapshots")) {
        if (!number_parse(v, end, 1000000, &n))
            return out_of_range(range, "max-snapshots:N takes 1 to 1,000,000");
        p->max_snapshots = (uint32_t)n;
    } else if (KEY("min-interval")) {
        /* 0 is allowed here: no minimum */
        if (v + 1 == end && *v == '0')
            n = 0;
        else if (!number_parse(v, end, 366ull * 86400, &n))
            return out_of_range(range, "min-interval:S takes 0 to 31,622,400 (seconds)");
        p->min_interval_ns = n * NS_PER_S;
    } else {
        return false;
    }
#undef KEY
    return true;
}

bool hl_snapshot_policy_parse(const char *text, hl_snapshot_policy *out, char *why, size_t why_len) {
    policy_default(out);
    if (!text || !*text)
        return true;
    hl_snapshot_policy p;
    memset(&p, 0, sizeof p);
    p.min_interval_ns = out->min_interval_ns;
    bool none = false, any = false;
    for (const char *s = text;;) {
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        const char *range = NULL;
        if (!item_parse(s, end, &p, &none, &range)) {
            if (why && range)
                snprintf(why, why_len, "'%.*s' is no snapshot policy: %s", (int)(end - s), s,
                         range);
            else if (why)
                snprintf(why, why_len,
                         "'%.*s' is no snapshot policy: induced, gen2, every:N (every Nth GC), "
                         "every:Ns (every N seconds), gen2-growth:PCT, heap:SIZE (K, M, G), "
                         "limit:PCT, pause:MS or none",
                         (int)(end - s), s);
            return false;
        }
        /* max-snapshots and min-interval shape the others; alone they keep the default */
        if (strncmp(s, "max-snapshots:", 14) != 0 && strncmp(s, "min-interval:", 13) != 0)
            any = true;
        if (!*end)
            break;
        s = end + 1;
    }
    if (!any)
        p.induced = true;
    if (none && (p.induced || p.gen2 || p.every_gcs || hl_snapshot_policy_triggers(&p))) {
        if (why)
            snprintf(why, why_len, "the snapshot policy none cannot be combined with others");
        return false;
    }
    *out = p;
    return true;
}

bool hl_snapshot_policy_triggers(const hl_snapshot_policy *p) {
    return p->gen2_growth_pct || p->heap_bytes || p->limit_pct || p->pause_ns || p->every_ns;
}

void hl_bytes_format(uint64_t bytes, char *buf, size_t len) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
}

static bool interval_passed(const hl_trigger_state *s, const hl_snapshot_policy *p, uint64_t now) {
    return !s->last_condition_ns || now - s->last_condition_ns >= p->min_interval_ns;
}

uint32_t hl_triggers_after_gc(hl_trigger_state *s, const hl_snapshot_policy *p,
                              const hl_trigger_gc *g, uint64_t now_ns, uint32_t taken,
                              char *reason, size_t reason_len) {
    char a[32], b[32];
    uint32_t fired = 0;
    bool room = taken != UINT32_MAX && (!p->max_snapshots || taken < p->max_snapshots);
    bool may = room && interval_passed(s, p, now_ns);

    /* The heap's thresholds re-arm once a GC leaves it below them. */
    uint64_t limit_at = s->limit_bytes ? s->limit_bytes / 100 * p->limit_pct +
                                             s->limit_bytes % 100 * p->limit_pct / 100
                                       : 0;
    if (p->heap_bytes && g->heap_bytes < p->heap_bytes)
        s->heap_fired = false;
    if (p->limit_pct && limit_at && g->heap_bytes < limit_at)
        s->limit_fired = false;

    if (g->snapshot) {
        /* A snapshot shows the heap as it is now: growth counts from here. */
        s->gen2_base_known = true;
        s->gen2_base = g->gen2_bytes;
        s->gen2_base_snapshot = g->snapshot;
        s->gen2_base_gc = g->gc;
    } else if (p->gen2_growth_pct && g->generation == 2) {
        if (!s->gen2_base_known) {
            s->gen2_base_known = true;
            s->gen2_base = g->gen2_bytes;
            s->gen2_base_snapshot = 0;
            s->gen2_base_gc = g->gc;
        } else if (may && g->gen2_bytes > s->gen2_base &&
                   (g->gen2_bytes - s->gen2_base) * 100.0 >=
                       (double)s->gen2_base * p->gen2_growth_pct) {
            double pct = s->gen2_base ? (double)(g->gen2_bytes - s->gen2_base) * 100.0 /
                                            (double)s->gen2_base
                                      : 0;
            hl_bytes_format(g->gen2_bytes, a, sizeof a);
            if (s->gen2_base_snapshot)
                snprintf(reason, reason_len, "gen2 %s after GC %u, +%.0f%% since snapshot %u", a,
                         g->gc, pct, s->gen2_base_snapshot);
            else
                snprintf(reason, reason_len, "gen2 %s after GC %u, +%.0f%% since GC %u", a, g->gc,
                         pct, s->gen2_base_gc);
            fired = HL_SNAPSHOT_GEN2_GROWTH;
        }
    }
    if (!fired && may && p->heap_bytes && !s->heap_fired && g->heap_bytes >= p->heap_bytes) {
        hl_bytes_format(g->heap_bytes, a, sizeof a);
        hl_bytes_format(p->heap_bytes, b, sizeof b);
        snprintf(reason, reason_len, "heap %s after GC %u, at least %s", a, g->gc, b);
        s->heap_fired = true;
        fired = HL_SNAPSHOT_HEAP;
    }
    if (!fired && may && p->limit_pct && limit_at && !s->limit_fired && g->heap_bytes >= limit_at) {
        hl_bytes_format(g->heap_bytes, a, sizeof a);
        hl_bytes_format(s->limit_bytes, b, sizeof b);
        snprintf(reason, reason_len, "heap %s after GC %u, %.0f%% of %s (%s)", a, g->gc,
                 (double)g->heap_bytes * 100.0 / (double)s->limit_bytes, b, s->limit_source);
        s->limit_fired = true;
        fired = HL_SNAPSHOT_LIMIT;
    }
    if (!fired && may && p->pause_ns && !g->snapshot && g->pause_ns > p->pause_ns) {
        snprintf(reason, reason_len, "GC %u paused %.1f ms, longer than %llu ms", g->gc,
                 (double)g->pause_ns / 1e6, (unsigned long long)(p->pause_ns / NS_PER_MS));
        fired = HL_SNAPSHOT_PAUSE;
    }
    if (fired)
        s->last_condition_ns = now_ns;
    return fired;
}

uint32_t hl_triggers_tick(hl_trigger_state *s, const hl_snapshot_policy *p, uint64_t now_ns,
                          uint32_t taken, uint32_t last_snapshot, char *reason, size_t reason_len) {
    if (!p->every_ns || (p->max_snapshots && taken >= p->max_snapshots))
        return 0;
    uint64_t since = s->last_time_ns ? s->last_time_ns : s->start_ns;
    if (now_ns < since || now_ns - since < p->every_ns)
        return 0;
    if (last_snapshot)
        snprintf(reason, reason_len, "every %llu s: %.1f s since the last, snapshot %u",
                 (unsigned long long)(p->every_ns / NS_PER_S), (double)(now_ns - since) / 1e9,
                 last_snapshot);
    else
        snprintf(reason, reason_len, "every %llu s: %.1f s since the start",
                 (unsigned long long)(p->every_ns / NS_PER_S), (double)(now_ns - since) / 1e9);
    s->last_time_ns = now_ns;
    return HL_SNAPSHOT_TIME;
}

/* ---- the memory limit -------------------------------------------------------------------- */

static bool file_u64(const char *path, uint64_t *out) {
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[64];
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok || line[0] < '0' || line[0] > '9')
        return false; /* "max": no limit */
    errno = 0;
    unsigned long long v = strtoull(line, NULL, 10);
    if (errno)
        return false;
    *out = v;
    return true;
}

/* The smallest limit in `file` of cgroup `path` under `mount` and its parents; 0 = none. The
 * cgroup's own directory may be the mount itself (a container's namespace shows "/"), so the
 * mount's own file counts too. */
static uint64_t cgroup_min(const char *root, const char *mount, const char *path, const char *file) {
    char dir[512], f[600];
    uint64_t best = 0, v;
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        size_t n = strlen(dir);
        while (n > 0 && dir[n - 1] == '/')
            dir[--n] = 0;
        snprintf(f, sizeof f, "%s%s%s/%s", root, mount, dir, file);
        /* v1 reports "no limit" as a page-rounded INT64_MAX */
        if (file_u64(f, &v) && v < (1ull << 62) && (!best || v < best))
            best = v;
        char *slash = strrchr(dir, '/');
        if (!slash || n == 0)
            break;
        *slash = 0;
    }
    return best;
}

uint64_t hl_memory_limit_read(const char *root, char *source, size_t source_len) {
    char path[600];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "re");
    uint64_t limit = 0;
    if (f) {
        char line[640];
        while (!limit && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2)
                continue;
            *c2 = 0;
            const char *controllers = c1 + 1, *group = c2 + 1;
            if (!*controllers && strncmp(line, "0", 1) == 0) {
                limit = cgroup_min(root, "/sys/fs/cgroup", group, "memory.max");
                if (limit)
                    snprintf(source, source_len, "cgroup memory.max");
            } else {
                /* v1: "N:memory:/path" or "N:cpu,memory:/path" */
                char list[128];
                snprintf(list, sizeof list, ",%s,", controllers);
                if (strstr(list, ",memory,")) {
                    limit = cgroup_min(root, "/sys/fs/cgroup/memory", group,
                                       "memory.limit_in_bytes");
                    if (limit)
                        snprintf(source, source_len, "cgroup memory.limit_in_bytes");
                }
            }
        }
        fclose(f);
    }
    if (!limit) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0)
            limit = (uint64_t)pages * (uint64_t)page;
        snprintf(source, source_len, "physical memory");
    }
    return limit;
}

uint64_t hl_heap_hard_limit_parse(const char *text) {
    if (!text || !*text)
        return 0;
    const char *s = text;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    if (errno || end == s || *end)
        return 0;
    return v;
}
