/* collections.c — see collections.h. */
#include "collector/collections.h"
#include "collector/type_names.h"

#include <string.h>

void hl_collections_init(hl_collections *t) {
    memset(t->layouts, 0, sizeof t->layouts);
    for (size_t i = 0; i < HL_COLLECTIONS_TABLE; i++)
        atomic_init(&t->keys[i], 0);
    t->n = 0;
    t->refused = 0;
}

/* A generic class of System.Collections.Generic named `name`, itself (not a nested type of it,
 * not an array of it). A name cut inside its type arguments (type_names.h: the mark comes
 * before their closing '>') cannot say what follows them: it is taken by its start, and the
 * fields decide (hl_fields_note_collection: a nested type or an array of the collection has none
 * of its count and storage fields). */
static bool generic_named(const char *type_name, const char *name) {
    static const char ns[] = "System.Collections.Generic.";
    size_t n = strlen(name);
    if (strncmp(type_name, ns, sizeof ns - 1) != 0)
        return false;
    const char *rest = type_name + sizeof ns - 1;
    if (strncmp(rest, name, n) != 0 || rest[n] != '<')
        return false;
    /* the type arguments' closing '>' ends the name */
    int depth = 0;
    for (const char *c = rest + n; *c; c++) {
        if (*c == '<')
            depth++;
        else if (*c == '>' && --depth == 0)
            return c[1] == '\0';
        else if (*c == '.' && strncmp(c, HL_NAME_CUT_MARK, sizeof HL_NAME_CUT_MARK - 1) == 0)
            return depth > 0;
    }
    return false;
}

bool hl_collections_fields(const char *type_name, const char **count, const char **free_count,
                           const char **storage) {
    if (generic_named(type_name, "List")) {
        *count = "_size", *free_count = NULL, *storage = "_items";
        return true;
    }
    if (generic_named(type_name, "Queue") || generic_named(type_name, "Stack")) {
        *count = "_size", *free_count = NULL, *storage = "_array";
        return true;
    }
    if (generic_named(type_name, "Dictionary") || generic_named(type_name, "HashSet")) {
        *count = "_count", *free_count = "_freeCount", *storage = "_buckets";
        return true;
    }
    return false;
}

static size_t slot_of(ClassID cls) {
    uint64_t h = (uint64_t)cls * 0x9E3779B97F4A7C15ull; /* method tables are 8-byte aligned */
    return (size_t)(h >> 52) & (HL_COLLECTIONS_TABLE - 1);
}

bool hl_collections_add(hl_collections *t, ClassID cls, hl_collection_layout layout) {
    if (!cls)
        return false;
    /* at most three quarters full: a lookup of an absent class ends at a free slot soon */
    if (t->n >= HL_COLLECTIONS_TABLE / 4 * 3) {
        t->refused++;
        return false;
    }
    for (size_t i = slot_of(cls);; i = (i + 1) & (HL_COLLECTIONS_TABLE - 1)) {
        uint64_t k = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
        if (k == cls)
            return true;
        if (k)
            continue;
        t->layouts[i] = layout;
        atomic_store_explicit(&t->keys[i], cls, memory_order_release); /* the layout first */
        t->n++;
        return true;
    }
}

const hl_collection_layout *hl_collections_find(const hl_collections *t, ClassID cls) {
    if (!t->n || !cls)
        return NULL;
    for (size_t i = slot_of(cls);; i = (i + 1) & (HL_COLLECTIONS_TABLE - 1)) {
        uint64_t k = atomic_load_explicit(&t->keys[i], memory_order_acquire);
        if (k == cls)
            return &t->layouts[i];
        if (!k)
            return NULL;
    }
}

void hl_collection_read(const hl_collection_layout *l, ObjectID object, uint32_t *count,
                        uint32_t *capacity) {
    const uint8_t *o = (const uint8_t *)object;
    int32_t n = 0, unused = 0;
    memcpy(&n, o + l->count_off, sizeof n);
    if (l->free_off)
        memcpy(&unused, o + l->free_off, sizeof unused);
    n -= unused;
    *count = n > 0 ? (uint32_t)n : 0;
    ObjectID storage = 0;
    memcpy(&storage, o + l->storage_off, sizeof storage);
    uint32_t length = 0;
    if (storage)
        memcpy(&length, (const uint8_t *)storage + 8, sizeof length);
    *capacity = length;
}
