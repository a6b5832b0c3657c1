/* records.c — putting records into the outbox (outbox.h): a header with a string, a header with
 * an array split into records that fit. Collector thread only. */
#include "collector/collector_internal.h"
#include "collector/mem.h"

#include <string.h>

void hl_collector_put_str(collector *c, uint16_t type, const void *head, size_t n_head,
                          const char *s) {
    uint32_t len = (uint32_t)strlen(s);
    hl_outbox_put(&c->out, type, head, n_head, &len, sizeof len, s, len);
}

void hl_collector_put_chunked(collector *c, uint16_t type, void *head, size_t head_size,
                              uint32_t *count_field, const void *elems, size_t n, size_t elem_size) {
    size_t per = CHUNK_BYTES / elem_size < CHUNK ? CHUNK_BYTES / elem_size : CHUNK;
    for (size_t off = 0; off < n; off += per) {
        size_t k = n - off < per ? n - off : per;
        *count_field = (uint32_t)k;
        hl_outbox_put(&c->out, type, head, head_size, (const char *)elems + off * elem_size,
                      k * elem_size, NULL, 0);
    }
}

void hl_collector_put_survivors(collector *c, uint32_t gc, const hl_young_packed *survivors) {
    hl_gc_survivors head = {.gc = gc};
    const hl_young_packed_record *rec = survivors->records.p;
    for (size_t r = 0; r < survivors->records.n; r++) {
        head.count = rec[r].count;
        hl_outbox_put(&c->out, HL_REC_GC_SURVIVORS_PACKED, &head, sizeof head,
                      (const uint8_t *)survivors->bytes.p + rec[r].at, rec[r].n_bytes, NULL, 0);
    }
}
