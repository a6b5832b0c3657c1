/* collections.h — the own counts of the known collection classes, read during a snapshot's heap
 * walk, so that `heaplens inspect` finds empty and under-filled collections by their Count and
 * not only by their storage arrays.
 *
 * Which classes, and what is read (the field names of System.Private.CoreLib, the same on .NET 8,
 * 9 and 10):
 *   System.Collections.Generic.List<T>            count _size,                 storage _items
 *   System.Collections.Generic.Queue<T>, Stack<T> count _size,                 storage _array
 *   System.Collections.Generic.Dictionary<K,V>,   count _count - _freeCount,   storage _buckets
 *   System.Collections.Generic.HashSet<T>
 * capacity = the storage array's length (0 when it is null).
 *
 * The collector thread registers a class when it first sees it (hl_fields_note_collection: its
 * name, then the fields' offsets from GetClassLayout and metadata). The GC thread looks each
 * walked object's class up: an open-addressing table whose entry is written, then published by
 * a release store of its key, and never changed after, so it is read without a lock while the
 * collector thread may be adding another. A class the collector thread has not seen when the
 * snapshot's GC walks the heap (its first instances allocated just before) is not read in that
 * snapshot. Reading an object's words during the walk is safe: the runtime is suspended.
 */
#ifndef HEAPLENS_COLLECTOR_COLLECTIONS_H
#define HEAPLENS_COLLECTOR_COLLECTIONS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_abi.h"

#define HL_COLLECTIONS_TABLE 4096 /* collection classes at most (a power of two) */

typedef struct hl_collection_layout {
    uint32_t count_off;   /* int32 count, from the object's start (its method table pointer) */
    uint32_t free_off;    /* int32 subtracted from the count (Dictionary's _freeCount), or 0 */
    uint32_t storage_off; /* the storage array's reference */
} hl_collection_layout;

typedef struct hl_collections {
    _Atomic uint64_t keys[HL_COLLECTIONS_TABLE]; /* ClassID, 0: free */
    hl_collection_layout layouts[HL_COLLECTIONS_TABLE];
    uint32_t n;       /* classes registered (collector thread) */
    uint64_t refused; /* classes not registered: the table was full */
} hl_collections;

void hl_collections_init(hl_collections *t);

/* Whether `type_name` is one of the classes above; then the names of its count, free-count (NULL
 * when none) and storage fields. Nested types ("List<T>+Enumerator") and arrays are not. The
 * name must be whole, or cut as type_names.h cuts (HL_NAME_CUT_MARK): a name cut short of that
 * (a buffer smaller than the TYPE records' 4 KiB) is not recognised. A name cut inside its type
 * arguments is taken by its start (the fields' offsets then decide). */
bool hl_collections_fields(const char *type_name, const char **count, const char **free_count,
                           const char **storage);

/* Registers class `cls` (collector thread only). False when the table is full (counted). */
bool hl_collections_add(hl_collections *t, ClassID cls, hl_collection_layout layout);

/* The layout of `cls`, or NULL: any thread (the GC's). */
const hl_collection_layout *hl_collections_find(const hl_collections *t, ClassID cls);

/* The count and capacity of `object`, a collection of layout `l`, read from its words (x64: an
 * array's length at +8). A negative count reads as 0. The object must be whole and still. */
void hl_collection_read(const hl_collection_layout *l, ObjectID object, uint32_t *count,
                        uint32_t *capacity);

#endif /* HEAPLENS_COLLECTOR_COLLECTIONS_H */
