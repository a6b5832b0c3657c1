/* thread_buffers.h — per-thread allocation rings between ObjectAllocated and the collector thread.
 *
 * Each managed thread that allocates claims one ring (single producer: that thread; single
 * consumer: the collector thread). Pushing is a few stores, never blocks, never allocates after
 * the first call on a thread; a full ring drops the event and counts it. A thread that exits
 * retires its ring; the collector drains it and makes it free for the next thread.
 */
#ifndef HEAPLENS_THREAD_BUFFERS_H
#define HEAPLENS_THREAD_BUFFERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define HL_TBUF_SLOTS 512          /* threads allocating at the same time */
#define HL_TBUF_EVENTS (1u << 20)  /* events per ring: 1M x 32 bytes = 32 MiB of address space, touched only as used */

/* One event from a runtime thread. Allocations and handle events share the ring (and the id
 * counter) so that the collector sees them in the same order as GCs. */
enum { HL_EV_ALLOC = 0, HL_EV_HANDLE_CREATED = 1, HL_EV_HANDLE_DESTROYED = 2 };
typedef struct hl_alloc_event {
    uint64_t id;       /* sequence number: the object id for an allocation */
    uint64_t addr;     /* ALLOC: ObjectID at allocation time; HANDLE_*: the GCHandleID */
    uint64_t class_id; /* ALLOC: ClassID; HANDLE_CREATED: the initial target's ObjectID */
    uint64_t kind_size; /* kind in the top two bits, ALLOC: the object size below */
} hl_alloc_event;
#define HL_EV_KIND(ev) ((unsigned)((ev)->kind_size >> 62))
#define HL_EV_SIZE(ev) ((ev)->kind_size & ((1ull << 62) - 1))
#define HL_EV_KIND_SIZE(kind, size) (((uint64_t)(kind) << 62) | (size))

typedef struct hl_tbuf hl_tbuf;

typedef struct hl_tbufs {
    hl_tbuf *_Atomic slots[HL_TBUF_SLOTS];
    atomic_uint_fast64_t overflowed; /* threads that found every slot taken */
} hl_tbufs;

/* Sets up the registry (no allocation). Call once, before any thread pushes. */
int hl_tbufs_init(hl_tbufs *r);
/* Frees every ring. Only when no thread can push any more (the process is exiting). */
void hl_tbufs_release(hl_tbufs *r);

/* The calling thread's ring, claimed on first use; NULL when every slot is taken (counted). */
hl_tbuf *hl_tbufs_current(hl_tbufs *r);

/* Producer side, called by the ring's own thread. Returns false (and counts a drop) when full. */
bool hl_tbuf_push(hl_tbuf *b, const hl_alloc_event *ev);

/* Consumer side (collector thread only). Calls fn for each event with id < limit, in order per
 * ring; returns the number of events consumed. Rings whose thread exited are freed for reuse
 * once empty. */
typedef void (*hl_alloc_event_fn)(void *ctx, const hl_alloc_event *ev, uint32_t os_tid);
uint64_t hl_tbufs_drain(hl_tbufs *r, uint64_t limit, hl_alloc_event_fn fn, void *ctx);

/* Sum of events dropped because a ring was full (consumer side; approximate while running). */
uint64_t hl_tbufs_dropped(hl_tbufs *r);
/* Sum of allocation events pushed or dropped: the allocations seen. */
uint64_t hl_tbufs_allocations(hl_tbufs *r);
/* Counts one allocation on the calling thread's ring (producer side). */
void hl_tbuf_count_allocation(hl_tbuf *b);

#endif /* HEAPLENS_THREAD_BUFFERS_H */
