/* u64map.h — a small hash map from non-zero uint64 keys to uint64 values, for the collector
 * thread (ClassID -> type id, GCHandleID -> handle kind, frozen objects already listed).
 * Open addressing with linear probing, load <= 1/2, deletion by backward shift (no tombstones).
 * Not thread-safe; no dependency but libc. */
#ifndef HEAPLENS_U64MAP_H
#define HEAPLENS_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hl_u64map {
    struct hl_u64map_slot { uint64_t key, value; } *slots; /* key 0 = empty */
    size_t cap, count;
} hl_u64map;

void hl_u64map_init(hl_u64map *m);
void hl_u64map_release(hl_u64map *m);
/* The value stored for key, or NULL. The pointer is valid until the next put/remove. */
uint64_t *hl_u64map_get(const hl_u64map *m, uint64_t key);
/* Stores key -> value (replacing); false when out of memory. key must not be 0. */
bool hl_u64map_put(hl_u64map *m, uint64_t key, uint64_t value);
/* Removes key; false when it was not there. */
bool hl_u64map_remove(hl_u64map *m, uint64_t key);
void hl_u64map_clear(hl_u64map *m);

#endif /* HEAPLENS_U64MAP_H */
