/* test_collections.c — the collections the snapshots' heap walk reads (collections.h): which type
 * names are collections (not their nested types, not arrays of them, nested type arguments
 * included, names of long type arguments whole and cut), the class table against a naive list (3,000 classes added, looked up, and classes
 * never added not found; a full table refuses and counts), and the count and capacity read from
 * fake objects laid out as the runtime lays them out (a List with capacity 1,000 holding 10, a
 * Dictionary whose freed entries do not count, a null storage array). */
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "collector/collections.h"
#include "collector/type_names.h"
#include "tests/unit/common/check.h"

static void names(void) {
    const char *count = NULL, *free_count = NULL, *storage = NULL;
    CHECK(hl_collections_fields("System.Collections.Generic.List<System.Int32>", &count,
                                &free_count, &storage));
    CHECK_STR(count, "_size");
    CHECK(free_count == NULL);
    CHECK_STR(storage, "_items");
    CHECK(hl_collections_fields("System.Collections.Generic.Dictionary<System.String, "
                                "System.Collections.Generic.List<App.Session>>",
                                &count, &free_count, &storage));
    CHECK_STR(count, "_count");
    CHECK_STR(free_count, "_freeCount");
    CHECK_STR(storage, "_buckets");
    CHECK(hl_collections_fields("System.Collections.Generic.HashSet<App.Key>", &count, &free_count,
                                &storage));
    CHECK(hl_collections_fields("System.Collections.Generic.Queue<System.Int32>", &count,
                                &free_count, &storage));
    CHECK_STR(storage, "_array");
    CHECK(hl_collections_fields("System.Collections.Generic.Stack<System.Int32>", &count,
                                &free_count, &storage));
    CHECK(!hl_collections_fields("System.Collections.Generic.List<System.Int32>+Enumerator",
                                 &count, &free_count, &storage));
    CHECK(!hl_collections_fields("System.Collections.Generic.List<System.Int32>[]", &count,
                                 &free_count, &storage));
    CHECK(!hl_collections_fields("System.Collections.Generic.Dictionary<System.Int32, "
                                 "System.Int32>+Entry[]",
                                 &count, &free_count, &storage));
    CHECK(!hl_collections_fields("System.Collections.Generic.LinkedList<System.Int32>", &count,
                                 &free_count, &storage));
    CHECK(!hl_collections_fields("App.List<System.Int32>", &count, &free_count, &storage));
    CHECK(!hl_collections_fields("System.Collections.Generic.ListX<System.Int32>", &count,
                                 &free_count, &storage));
    /* A generic collection whose type arguments' names are long: recognised whole (over 256
     * bytes) and cut as type_names.h cuts a name (the mark inside the type arguments); not when
     * the cut comes after them (a nested type's name), nor a name cut without the mark. */
    GString *arg = g_string_new("App.");
    while (arg->len < 600)
        g_string_append(arg, "VeryLongTypeName");
    g_autofree char *whole = g_strdup_printf("System.Collections.Generic.Dictionary<%s, "
                                             "System.Collections.Generic.List<%s>>", arg->str,
                                             arg->str);
    CHECK(hl_collections_fields(whole, &count, &free_count, &storage));
    CHECK_STR(count, "_count");
    g_autofree char *cut = g_strdup_printf("System.Collections.Generic.List<%.*s" HL_NAME_CUT_MARK
                                           "0123456789abcdef)", 200, arg->str);
    CHECK(hl_collections_fields(cut, &count, &free_count, &storage));
    CHECK_STR(storage, "_items");
    g_autofree char *nested_cut = g_strdup_printf("System.Collections.Generic.List<%s>+Enu"
                                                  HL_NAME_CUT_MARK "0123456789abcdef)", arg->str);
    CHECK(!hl_collections_fields(nested_cut, &count, &free_count, &storage));
    g_autofree char *unmarked = g_strdup_printf("System.Collections.Generic.List<%.*s", 200,
                                                arg->str);
    CHECK(!hl_collections_fields(unmarked, &count, &free_count, &storage));
    g_string_free(arg, TRUE);
}

static void table(void) {
    static hl_collections t;
    hl_collections_init(&t);
    CHECK(hl_collections_find(&t, 0x1000) == NULL);
    enum { N = 3000 };
    static ClassID added[N];
    for (int i = 0; i < N; i++) {
        added[i] = 0x7f0000000000ull + (ClassID)i * 0x48; /* method tables, 8-byte aligned */
        hl_collection_layout l = {.count_off = (uint32_t)i, .free_off = 0, .storage_off = 8};
        CHECK(hl_collections_add(&t, added[i], l));
    }
    CHECK_INT(t.n, N);
    for (int i = 0; i < N; i++) {
        const hl_collection_layout *l = hl_collections_find(&t, added[i]);
        CHECK(l != NULL && l->count_off == (uint32_t)i);
    }
    for (int i = 0; i < N; i++)
        CHECK(hl_collections_find(&t, added[i] + 8) == NULL);
    /* added again: the same entry */
    CHECK(hl_collections_add(&t, added[5], (hl_collection_layout){.count_off = 99}));
    CHECK_INT(hl_collections_find(&t, added[5])->count_off, 5);
    CHECK_INT(t.n, N);
    /* full at three quarters: refused, counted, the others still found */
    int refused = 0;
    for (int i = 0; i < HL_COLLECTIONS_TABLE; i++)
        refused += !hl_collections_add(&t, 0x600000000000ull + (ClassID)i * 8,
                                       (hl_collection_layout){.count_off = 1});
    CHECK_INT(t.n, HL_COLLECTIONS_TABLE / 4 * 3);
    CHECK_INT(refused, HL_COLLECTIONS_TABLE - (HL_COLLECTIONS_TABLE / 4 * 3 - N));
    CHECK_INT(t.refused, refused);
    CHECK(hl_collections_find(&t, added[N - 1]) != NULL);
}

/* A fake object: word 0 the method table, then its fields at their offsets. */
static void reading(void) {
    uint64_t items[4 + 125] = {0}; /* an Int32[1000]: method table, length, elements */
    uint32_t length = 1000;
    memcpy((uint8_t *)items + 8, &length, sizeof length);
    uint64_t list[4] = {0x1234, (uint64_t)(uintptr_t)items, 0, 0}; /* _items at 8 */
    int32_t size = 10;
    memcpy((uint8_t *)list + 16, &size, sizeof size); /* _size at 16 */
    hl_collection_layout l = {.count_off = 16, .free_off = 0, .storage_off = 8};
    uint32_t count = 0, capacity = 0;
    hl_collection_read(&l, (ObjectID)(uintptr_t)list, &count, &capacity);
    CHECK_INT(count, 10);
    CHECK_INT(capacity, 1000);

    /* a Dictionary: _buckets at 8, _count at 48, _freeCount at 56; 7 added, 3 removed */
    uint64_t buckets[4] = {0};
    length = 17;
    memcpy((uint8_t *)buckets + 8, &length, sizeof length);
    uint64_t dict[8] = {0x5678, (uint64_t)(uintptr_t)buckets};
    int32_t n = 7, freed = 3;
    memcpy((uint8_t *)dict + 48, &n, sizeof n);
    memcpy((uint8_t *)dict + 56, &freed, sizeof freed);
    hl_collection_layout d = {.count_off = 48, .free_off = 56, .storage_off = 8};
    hl_collection_read(&d, (ObjectID)(uintptr_t)dict, &count, &capacity);
    CHECK_INT(count, 4);
    CHECK_INT(capacity, 17);

    /* never filled: no storage */
    dict[1] = 0;
    n = 0, freed = 0;
    memcpy((uint8_t *)dict + 48, &n, sizeof n);
    memcpy((uint8_t *)dict + 56, &freed, sizeof freed);
    hl_collection_read(&d, (ObjectID)(uintptr_t)dict, &count, &capacity);
    CHECK_INT(count, 0);
    CHECK_INT(capacity, 0);
}

int main(void) {
    names();
    table();
    reading();
    return failures ? 1 : 0;
}
