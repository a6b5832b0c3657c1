/* frames.h — call stacks of allocation samples, interned on the collector thread.
 *
 * IP -> frame: GetFunctionFromIP, then the method's name (type_names.h, hl_method_name); cached
 * per IP and per FunctionID, so the runtime is asked once per call site. Frames are unique by
 * name (overloads and call sites of one method share a frame, as in a flame graph). A stack is
 * the sequence of its frame ids, innermost first, interned by content. New frames and stacks
 * wait in `pending_*` until the caller sends them (METHOD / STACK records, before the first
 * ALLOC_SAMPLES that uses them). Collector thread only.
 */
#ifndef HEAPLENS_FRAMES_H
#define HEAPLENS_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/type_names.h"
#include "collector/u64map.h"
#include "collector/young.h"

typedef struct hl_frames {
    hl_u64map by_ip;        /* IP -> frame id */
    hl_u64map by_function;  /* FunctionID -> frame id */
    hl_u64map by_name;      /* hash of the name -> frame id (names compared on a hit) */
    id_vec name_at;         /* uint64 per frame id: offset of its name in `names` */
    id_vec frame_info;      /* hl_method per frame id (index 0 unused) */
    char *names;            /* NUL-terminated names, one after another */
    size_t names_len, names_cap;
    uint32_t n_frames;
    hl_u64map by_stack;     /* hash of the frame ids -> stack id (compared on a hit) */
    id_vec stack_at;        /* uint64 per stack id: offset << 8 | depth... see frames.c */
    id_vec stack_ids;       /* uint32 frame ids of every stack, one after another */
    uint32_t n_stacks;
    id_vec pending_frames;  /* uint32 frame ids not sent yet */
    id_vec pending_stacks;  /* uint32 stack ids not sent yet */
    uint64_t failures;      /* out of memory: a frame or stack left unnamed (0) */
    uint64_t unresolved;    /* IPs the runtime could not map to a method */
} hl_frames;

void hl_frames_init(hl_frames *f);
void hl_frames_release(hl_frames *f);

/* The frame id for `name` (created, and queued for sending, when new); 0 when out of memory. */
uint32_t hl_frames_intern_name(hl_frames *f, const char *name, uint32_t flags,
                               uint64_t function_id);
/* The name and record of frame `id` (1..n_frames). */
const char *hl_frames_name(const hl_frames *f, uint32_t id);
const struct hl_method *hl_frames_method(const hl_frames *f, uint32_t id);
/* The stack id for `depth` frame ids (innermost first; created and queued when new); 0 when out
 * of memory or depth is 0. */
uint32_t hl_frames_intern_stack(hl_frames *f, const uint32_t *frame_ids, uint32_t depth);
/* The frame ids of stack `id`, and its depth. */
const uint32_t *hl_frames_stack(const hl_frames *f, uint32_t id, uint32_t *depth);

/* The frame of an instruction pointer of a managed stack: resolved through the runtime once per
 * IP (GetFunctionFromIP, GetFunctionInfo2, metadata), '[native]' when the runtime says the IP is
 * not managed code, '[unknown]' when it cannot tell. */
uint32_t hl_frames_of_ip(hl_frames *f, hl_type_names *names, uintptr_t ip);

#endif /* HEAPLENS_FRAMES_H */
