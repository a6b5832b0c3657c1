/* snapshot.c — GC handles, roots and heap snapshots, on the collector thread.
 *
 * Runs after the model applied the GC, so every address below is a post-GC address and
 * hm_model_lookup turns it into a stable id.
 *
 * A snapshot is built from what the GC callbacks copied: the runtime's walk of every live object
 * (ObjectReferences; on .NET 10 it includes frozen objects) and the roots (RootReferences2).
 * Frozen (NonGC heap) objects are marked frozen, and those the walk left out are added when the
 * graph references them. The self-check compares the walk
 * with the model: objects the model holds that the walk lacks (model_missing) and walked objects
 * the model never saw (they get ids of their own and are sent as DISCOVERED): model_extra, or
 * model_unreported for delegates and boxes, which .NET 10 allocates without ObjectAllocated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/mem.h"
#include "collector/collector_internal.h"
#include "collector/gen_lookup.h"

/* ---- handles ---------------------------------------------------------------------------- */

void hl_handles_created(collector *c, uint64_t handle, uint64_t target_addr) {
    uint64_t object = 0;
    if (target_addr)
        hm_model_lookup(c->model, target_addr, &object, NULL);
    if (!hl_u64map_put(&c->handles, handle, HL_HANDLE_UNKNOWN))
        c->model_failures++;
    hl_handle_created r = {.handle_id = handle, .object_id = object, .after_gc = c->gcs_applied};
    hl_outbox_put(&c->out, HL_REC_HANDLE_CREATED, &r, sizeof r, NULL, 0, NULL, 0);
}

void hl_handles_destroyed(collector *c, uint64_t handle) {
    hl_u64map_remove(&c->handles, handle);
    hl_handle_destroyed r = {.handle_id = handle, .after_gc = c->gcs_applied};
    hl_outbox_put(&c->out, HL_REC_HANDLE_DESTROYED, &r, sizeof r, NULL, 0, NULL, 0);
}

/* The runtime does not say a handle's kind; the flags of its root do. */
static uint32_t handle_kind_from_flags(uint32_t flags) {
    if (flags & HL_ROOT_PINNING)
        return HL_HANDLE_PINNED;
    if (flags & HL_ROOT_REFCOUNTED)
        return HL_HANDLE_REFCOUNTED;
    if (flags & HL_ROOT_WEAK)
        return HL_HANDLE_WEAK;
    return HL_HANDLE_STRONG;
}

void hl_roots_apply(collector *c, const hl_gc_capture *g, hl_gc_end *end) {
    id_vec kinds = {.elem = sizeof(hl_handle_kind)};
    for (size_t i = 0; i < g->n_roots; i++) {
        const hl_root *r = &g->roots[i];
        end->roots++;
        if (r->flags & HL_ROOT_PINNING)
            end->pinned_roots++;
        if (r->kind != HL_ROOT_HANDLE || !r->root_id)
            continue;
        uint64_t *known = hl_u64map_get(&c->handles, r->root_id);
        if (known && *known != HL_HANDLE_UNKNOWN)
            continue;
        hl_handle_kind k = {.handle_id = r->root_id, .kind = handle_kind_from_flags(r->flags)};
        if (!hl_u64map_put(&c->handles, r->root_id, k.kind) || !hl_vec_push(&kinds, &k))
            c->model_failures++;
    }
    hl_gc_handle_kinds head = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_GC_HANDLE_KINDS, &head, sizeof head, &head.count, kinds.p,
                             kinds.n, sizeof(hl_handle_kind));
    hl_vec_release(&kinds);
}

/* ---- snapshots ---------------------------------------------------------------------------- */

typedef struct hl_snapshot {
    collector *c;
    const hl_gc_capture *g;
    id_vec objects;    /* hl_snapshot_object; the first walk_objects are the walk, in order */
    id_vec refs;       /* hl_snapshot_ref */
    id_vec ref_fields; /* uint32 per ref: the field holding it (HL_REC_SNAPSHOT_REF_FIELDS) */
    id_vec statics;    /* hl_snapshot_static: references that are static fields */
    id_vec strings;    /* hl_snapshot_string: the strings' values */
    id_vec collections; /* hl_snapshot_collection: the known collections' counts */
    id_vec roots;      /* hl_snapshot_root */
    id_vec root_threads; /* hl_snapshot_root_thread: stack roots' threads, once per object */
    id_vec discovered; /* hl_discovered */
    uint64_t known;    /* walked objects the model holds in a GC generation (self-check) */
    id_vec found;      /* hm_found: sampled mode's unknown walked objects (tag: objects index) */
    hl_u64map frozen;  /* frozen objects already listed */
    hl_u64map gen0;    /* following: address -> id of unknown objects left in gen0 (not followed) */
    hl_snapshot_end end;
} snapshot;

static void push(snapshot *s, id_vec *v, const void *elem) {
    if (!hl_vec_push(v, elem))
        s->c->model_failures++;
}

/* Pass 1: every walked object gets its id (or a new one: it was unknown to the model). */
static void walk_objects(snapshot *s) {
    collector *c = s->c;
    const hl_gc_capture *g = s->g;
    hl_gen_lookup after; /* the generation of an object the model does not know */
    /* The first snapshot of an attach session names the heap it found (collector/README.md,
     * "Attach and detach"): its unknown objects are neither unreported nor extra. */
    bool found_heap = c->p->attach && c->snapshots == 0;
    if (!hl_gen_lookup_init(&after, g->after, g->n_after))
        c->model_failures++; /* such objects would read as frozen */
    for (size_t off = 0; off < g->walk_len;) {
        hl_walk_object w;
        memcpy(&w, g->walk + off, sizeof w);
        off += hl_walk_object_bytes(w.n_refs);
        hl_statics_note_class(c, w.class_id);
        uint64_t id = 0;
        uint32_t gen = HL_GEN_NONE;
        hl_snapshot_object o = {0};
        if (hm_model_lookup(c->model, w.object, &id, &gen) && gen != HM_GEN_UNKNOWN) {
            o = (hl_snapshot_object){.id = id, .generation = gen};
            s->known += gen != HM_GEN_NONGC;
            if (gen == HM_GEN_NONGC) {
                /* .NET 10's walk reports frozen objects too: list them once, flagged, and keep
                 * resolve() from adding them a second time. */
                o.flags = HL_SNAP_OBJ_FROZEN;
                hl_u64map_put(&s->frozen, id, 1);
                s->end.frozen++;
            }
        } else {
            gen = hl_gen_lookup_find(&after, w.object);
            /* Outside every GC range: a frozen (NonGC) object, which .NET 10 walks too. */
            bool frozen = gen == HL_GEN_NONE;
            if (frozen)
                gen = HL_GEN_NONGC;
            if (c->p->follow && gen == HL_GEN_0) {
                /* Still in gen0 after the GC: a pinned object and its neighbours, which stay
                 * there from GC to GC (a thread blocked in a read keeps its buffer pinned).
                 * Followed, they would take the runtime's ranges at every GC (nothing but the
                 * ranges follows what a snapshot named): named for this snapshot only (dead to
                 * the records at the next GC: apply_gc), and again by the next one. */
                id = HL_DISCOVERED_ID_BASE + ++c->discovered;
                if (!hl_u64map_put(&s->gen0, w.object, id) || !hl_vec_push(&c->unfollowed, &id))
                    c->model_failures++;
            } else if (c->p->follow) {
                /* Named in address order once the walk is read (follow_found), in the
                 * generation it has now: it is followed from here on like the others. */
                id = 0;
                hm_found f = {.addr = w.object, .tag = s->objects.n, .generation = gen};
                push(s, &s->found, &f);
            } else {
                id = HL_DISCOVERED_ID_BASE + ++c->discovered;
                if (hm_model_add(c->model, w.object, id) != HM_OK)
                    c->model_failures++;
            }
            uint32_t type_id = hl_collector_type_id(c, w.class_id);
            /* Delegates and boxes unknown to the model come from runtime paths that do not
             * report allocations (hl_wire.h, HL_DISCOVERED_UNREPORTED): no model error.
             * Without ObjectAllocated (sampled mode, attach), objects in heaps that no GC has
             * condemned since they were allocated — new frozen objects, POH objects before a
             * gen2 GC — are found only by a walk: not a model error either (discovery.h). */
            bool unreported = !found_heap &&
                              ((hl_collector_type_traits(c, type_id) &
                                (TYPE_TRAIT_DELEGATE | TYPE_TRAIT_VALUE_TYPE)) ||
                               ((c->p->gcs.discover || c->p->follow) &&
                                (frozen || gen == HL_GEN_POH)));
            hl_discovered d = {.id = id, .size = w.size, .type_id = type_id, .generation = gen,
                               .flags = unreported ? HL_DISCOVERED_UNREPORTED : 0};
            push(s, &s->discovered, &d);
            o = (hl_snapshot_object){.id = id, .generation = gen,
                                     .flags = HL_SNAP_OBJ_DISCOVERED |
                                              (frozen ? HL_SNAP_OBJ_FROZEN : 0) |
                                              (unreported ? HL_SNAP_OBJ_UNREPORTED : 0)};
            if (frozen) {
                if (id) /* else follow_found lists it */
                    hl_u64map_put(&s->frozen, id, 1);
                s->end.frozen++;
            }
            if (unreported) {
                s->end.model_unreported++;
                hl_collector_type_size(c, type_id, w.size);
            } else if (found_heap) {
                /* nothing of the heap found at the attach was expected */
            } else if (!c->p->follow || gen == HL_GEN_LOH) {
                /* Sampled mode expects only its followed objects: a small object unknown here
                 * was allocated since the last snapshot and not sampled (collector/README.md,
                 * "Sampled mode follows its samples"). Every LOH allocation is reported. */
                s->end.model_extra++;
            }
        }
        push(s, &s->objects, &o);
        s->end.bytes += w.size;
    }
    hl_gen_lookup_release(&after);
}

/* The walk's objects in order, for the side arrays the capture filled in walk order (strings,
 * collections): each entry's object is found at or after the previous entry's. */
typedef struct walk_cursor {
    size_t off, i;
} walk_cursor;

/* The id of `object`, the next of the capture's side entries; false once the walk is over. */
static bool walk_cursor_id(const snapshot *s, walk_cursor *c, uint64_t object, uint64_t *id) {
    const hl_gc_capture *g = s->g;
    const hl_snapshot_object *objects = s->objects.p;
    while (c->off < g->walk_len) {
        hl_walk_object w;
        memcpy(&w, g->walk + c->off, sizeof w);
        c->off += hl_walk_object_bytes(w.n_refs);
        size_t i = c->i++;
        if (w.object == object) {
            *id = objects[i].id;
            return true;
        }
    }
    return false;
}

/* The strings' values with their ids. */
static void walk_strings(snapshot *s) {
    const hl_gc_capture *g = s->g;
    walk_cursor c = {0};
    uint64_t id;
    for (size_t k = 0; k < g->n_strings && walk_cursor_id(s, &c, g->strings[k].object, &id); k++) {
        const hl_walk_string *v = &g->strings[k];
        hl_snapshot_string out = {.object_id = id, .hash = v->hash, .length = v->length,
                                  .n_chars = v->n_chars};
        memcpy(out.chars, v->chars, v->n_chars * sizeof(uint16_t));
        push(s, &s->strings, &out);
    }
}

/* The collections' counts with their ids. */
static void walk_collections(snapshot *s) {
    const hl_gc_capture *g = s->g;
    walk_cursor c = {0};
    uint64_t id;
    for (size_t k = 0;
         k < g->n_collections && walk_cursor_id(s, &c, g->collections[k].object, &id); k++) {
        const hl_walk_collection *v = &g->collections[k];
        hl_snapshot_collection out = {.object_id = id, .count = v->count, .capacity = v->capacity};
        push(s, &s->collections, &out);
    }
}

/* Sampled mode: the walked objects the model did not know get their ids (address order, from
 * HL_DISCOVERED_ID_BASE) and their place in the model in one merge, right after the GC was
 * applied (no young object in the model then), before the references are resolved. */
static void follow_found(snapshot *s) {
    collector *c = s->c;
    if (!s->found.n)
        return;
    hm_found *found = s->found.p;
    uint64_t next = HL_DISCOVERED_ID_BASE + c->discovered + 1;
    size_t n_new = 0;
    if (hm_model_discover(c->model, found, s->found.n, &next, &n_new) != HM_OK) {
        c->model_failures++;
        return;
    }
    c->discovered += n_new;
    hl_snapshot_object *objects = s->objects.p;
    for (size_t i = 0; i < s->found.n; i++) {
        objects[found[i].tag].id = found[i].id;
        /* Only the ranges follow these (no handle): the GCs that condemn them take them. */
        if (found[i].status == HM_FOUND_NEW)
            hl_follow_named_add(&c->p->followed, found[i].generation, 1);
    }
    /* The DISCOVERED entries were pushed in walk order, as their objects were. */
    hl_discovered *d = s->discovered.p;
    size_t k = 0;
    for (size_t i = 0; i < s->objects.n; i++) {
        if (!(objects[i].flags & HL_SNAP_OBJ_DISCOVERED))
            continue;
        if (k < s->discovered.n)
            d[k++].id = objects[i].id;
        if ((objects[i].flags & HL_SNAP_OBJ_FROZEN) && objects[i].id)
            hl_u64map_put(&s->frozen, objects[i].id, 1);
    }
}

/* The id of a referenced address; frozen objects join the snapshot the first time. */
static bool resolve(snapshot *s, uint64_t addr, uint64_t *id) {
    uint32_t gen = HL_GEN_NONE;
    if (!hm_model_lookup(s->c->model, addr, id, &gen)) {
        const uint64_t *left = s->gen0.count ? hl_u64map_get(&s->gen0, addr) : NULL;
        if (left) {
            *id = *left;
            return true;
        }
        s->end.unresolved++;
        return false;
    }
    if (gen == HM_GEN_NONGC && !hl_u64map_get(&s->frozen, *id)) {
        hl_u64map_put(&s->frozen, *id, 1);
        hl_snapshot_object o = {.id = *id, .generation = HL_GEN_NONGC, .flags = HL_SNAP_OBJ_FROZEN};
        push(s, &s->objects, &o);
        s->end.frozen++;
    }
    return true;
}

/* Pass 2: references, now that every walked object has an id. */
static void walk_refs(snapshot *s) {
    const hl_gc_capture *g = s->g;
    const hl_snapshot_object *objects = s->objects.p;
    size_t i = 0;
    for (size_t off = 0; off < g->walk_len; i++) {
        hl_walk_object w;
        memcpy(&w, g->walk + off, sizeof w);
        const uint8_t *refs = g->walk + off + sizeof w;
        const uint8_t *slots = refs + w.n_refs * sizeof(ObjectID);
        off += hl_walk_object_bytes(w.n_refs);
        uint64_t from = objects[i].id; /* objects may grow (frozen), index i stays valid */
        const hl_layout *layout = w.n_refs ? hl_fields_layout(s->c, w.class_id) : NULL;
        for (uint64_t k = 0; k < w.n_refs; k++) {
            ObjectID to_addr;
            uint32_t slot;
            memcpy(&to_addr, refs + k * sizeof to_addr, sizeof to_addr);
            memcpy(&slot, slots + k * sizeof slot, sizeof slot);
            hl_snapshot_ref r = {.from = from};
            if (to_addr && resolve(s, to_addr, &r.to)) {
                uint32_t field = hl_layout_field(layout, slot);
                push(s, &s->refs, &r);
                push(s, &s->ref_fields, &field);
                uint32_t st = slot ? hl_statics_at(&s->c->statics, w.object + slot) : 0;
                if (st) {
                    hl_snapshot_static named = {.object_id = from, .field = field, .static_id = st};
                    push(s, &s->statics, &named);
                }
            }
            objects = s->objects.p;
        }
    }
}

static void walk_roots(snapshot *s) {
    const hl_gc_capture *g = s->g;
    for (size_t i = 0; i < g->n_roots; i++) {
        const hl_root *r = &g->roots[i];
        hl_snapshot_root out = {.root_id = r->root_id, .kind = r->kind, .flags = r->flags};
        if (r->object && !resolve(s, r->object, &out.object_id))
            continue;
        push(s, &s->roots, &out);
        /* The thread is the object's (one stack holds its address): listed at its first root. */
        if (g->root_threads && g->root_threads[i]) {
            hl_snapshot_root_thread t = {.object_id = out.object_id, .os_tid = g->root_threads[i]};
            const hl_snapshot_root_thread *v = s->root_threads.p;
            bool listed = false;
            for (size_t k = s->root_threads.n; k > 0 && !listed; k--)
                listed = v[k - 1].object_id == t.object_id;
            if (!listed)
                push(s, &s->root_threads, &t);
        }
    }
    const char *stats = getenv("HEAPLENS_STATS");
    if (g->root_threads && stats && strcmp(stats, "1") == 0)
        fprintf(stderr,
                "heaplens: stack roots of GC %u: threads=%u unread=%u bytes=%llu named=%llu "
                "shared=%llu pause_ms=%.3f\n",
                g->gc, g->stack_search.threads, g->stack_search.unread,
                (unsigned long long)g->stack_search.bytes,
                (unsigned long long)g->stack_search.named,
                (unsigned long long)g->stack_search.shared, g->stack_search.ns / 1e6);
}

/* The model's objects in a GC generation: frozen objects need not be walked, and the model
 * holds no young (unknown) one right after applying the GC. */
static bool count_visit(void *ctx, uint64_t addr, uint64_t id, uint32_t generation) {
    (void)addr, (void)id;
    *(uint64_t *)ctx += generation != HM_GEN_NONGC && generation != HM_GEN_UNKNOWN;
    return true;
}

static void send_batch(collector *c, uint16_t type, uint32_t snap, const id_vec *v) {
    hl_snapshot_batch head = {.snapshot = snap};
    hl_collector_put_chunked(c, type, &head, sizeof head, &head.count, v->p, v->n, v->elem);
}

struct hl_snapshot *hl_snapshot_build(collector *c, const hl_gc_capture *g) {
    if (!g->snapshot_trigger)
        return NULL;
    snapshot *s = hl_mem_calloc(1, sizeof *s);
    if (!s) {
        c->model_failures++;
        return NULL;
    }
    s->c = c;
    s->g = g;
    s->objects.elem = sizeof(hl_snapshot_object);
    s->refs.elem = sizeof(hl_snapshot_ref);
    s->ref_fields.elem = sizeof(uint32_t);
    s->statics.elem = sizeof(hl_snapshot_static);
    s->strings.elem = sizeof(hl_snapshot_string);
    s->collections.elem = sizeof(hl_snapshot_collection);
    s->roots.elem = sizeof(hl_snapshot_root);
    s->root_threads.elem = sizeof(hl_snapshot_root_thread);
    s->discovered.elem = sizeof(hl_discovered);
    s->found.elem = sizeof(hm_found);
    hl_u64map_init(&s->frozen);
    hl_u64map_init(&s->gen0);
    /* Self-check, missing: the model's objects the walk did not name. The walk names an address
     * once, and a lookup finds one object per address, so that is the model's objects less
     * those the walk found (no sort of the walk to merge with the model: a qsort of 10M
     * addresses was a fifth of the collector's time for a 10M-object snapshot). */
    uint64_t held = 0;
    hm_model_foreach(c->model, count_visit, &held);
    walk_objects(s);
    follow_found(s); /* before the strings and references: they need every id */
    hl_vec_release(&s->found);
    walk_strings(s);
    walk_collections(s);
    hl_statics_prepare(c, g); /* the classes walk_objects noted included */
    walk_refs(s);
    walk_roots(s);
    s->end.model_missing = held > s->known ? held - s->known : 0;
    hl_u64map_release(&s->frozen);
    hl_u64map_release(&s->gen0);
    return s;
}

void hl_snapshot_send(collector *c, struct hl_snapshot *s) {
    if (!s)
        return;
    const hl_gc_capture *g = s->g;
    uint32_t snap = ++c->snapshots;
    hl_collector_flush_types(c); /* types of discovered objects */
    hl_fields_flush(c);          /* names of the fields REF_FIELDS uses */
    hl_statics_flush(c);         /* ... and of the statics STATICS uses */
    hl_discovered_head dh = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_DISCOVERED, &dh, sizeof dh, &dh.count, s->discovered.p,
                             s->discovered.n, sizeof(hl_discovered));
    hl_snapshot_start start = {.snapshot = snap, .gc = g->gc, .trigger = g->snapshot_trigger};
    if (g->snapshot_trigger == HL_SNAPSHOT_REQUESTED && c->p->requested_at[g->gc % 16].gc == g->gc)
        start.commands = c->p->requested_at[g->gc % 16].commands;
    hl_outbox_put(&c->out, HL_REC_SNAPSHOT_START, &start, sizeof start, NULL, 0, NULL, 0);
    if (c->trigger_pending && g->snapshot_trigger == c->trigger_pending) {
        hl_snapshot_batch why = {.snapshot = snap};
        hl_collector_put_str(c, HL_REC_SNAPSHOT_REASON, &why, sizeof why, c->trigger_reason);
    }
    send_batch(c, HL_REC_SNAPSHOT_OBJECTS, snap, &s->objects);
    send_batch(c, HL_REC_SNAPSHOT_REFS, snap, &s->refs);
    send_batch(c, HL_REC_SNAPSHOT_REF_FIELDS, snap, &s->ref_fields);
    send_batch(c, HL_REC_SNAPSHOT_STATICS, snap, &s->statics);
    send_batch(c, HL_REC_SNAPSHOT_STRINGS, snap, &s->strings);
    send_batch(c, HL_REC_SNAPSHOT_COLLECTIONS, snap, &s->collections);
    send_batch(c, HL_REC_SNAPSHOT_ROOTS, snap, &s->roots);
    if (s->root_threads.n)
        send_batch(c, HL_REC_SNAPSHOT_ROOT_THREADS, snap, &s->root_threads);
    s->end.snapshot = snap;
    s->end.gc = g->gc;
    s->end.objects = s->objects.n;
    s->end.refs = s->refs.n;
    s->end.roots = s->roots.n;
    s->end.walk_ns = g->walk_last_ns - g->walk_first_ns;
    hl_outbox_put(&c->out, HL_REC_SNAPSHOT_END, &s->end, sizeof s->end, NULL, 0, NULL, 0);

    hl_vec_release(&s->objects);
    hl_vec_release(&s->refs);
    hl_vec_release(&s->ref_fields);
    hl_vec_release(&s->statics);
    hl_vec_release(&s->strings);
    hl_vec_release(&s->collections);
    hl_vec_release(&s->roots);
    hl_vec_release(&s->root_threads);
    hl_vec_release(&s->discovered);
    hl_mem_free(s);
}
