/* frames.c — see frames.h. */
#include "collector/mem.h"
#include "collector/frames.h"

#include <stdlib.h>
#include <string.h>

#include "wire/hl_wire.h"

static uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h | 1; /* u64map keys are never 0 */
}

void hl_frames_init(hl_frames *f) {
    memset(f, 0, sizeof *f);
    hl_u64map_init(&f->by_ip);
    hl_u64map_init(&f->by_function);
    hl_u64map_init(&f->by_name);
    hl_u64map_init(&f->by_stack);
    f->name_at.elem = sizeof(uint64_t);
    f->frame_info.elem = sizeof(hl_method);
    f->stack_at.elem = sizeof(uint64_t);
    f->stack_ids.elem = sizeof(uint32_t);
    f->pending_frames.elem = sizeof(uint32_t);
    f->pending_stacks.elem = sizeof(uint32_t);
    /* index 0 unused in the per-id vectors */
    uint64_t zero = 0;
    hl_method none = {0};
    hl_vec_push(&f->name_at, &zero);
    hl_vec_push(&f->frame_info, &none);
    hl_vec_push(&f->stack_at, &zero);
}

void hl_frames_release(hl_frames *f) {
    hl_u64map_release(&f->by_ip);
    hl_u64map_release(&f->by_function);
    hl_u64map_release(&f->by_name);
    hl_u64map_release(&f->by_stack);
    hl_vec_release(&f->name_at);
    hl_vec_release(&f->frame_info);
    hl_vec_release(&f->stack_at);
    hl_vec_release(&f->stack_ids);
    hl_vec_release(&f->pending_frames);
    hl_vec_release(&f->pending_stacks);
    hl_mem_free(f->names);
    memset(f, 0, sizeof *f);
}

const char *hl_frames_name(const hl_frames *f, uint32_t id) {
    if (id == 0 || id > f->n_frames)
        return NULL;
    return f->names + ((const uint64_t *)f->name_at.p)[id];
}

const hl_method *hl_frames_method(const hl_frames *f, uint32_t id) {
    if (id == 0 || id > f->n_frames)
        return NULL;
    return (const hl_method *)f->frame_info.p + id;
}

uint32_t hl_frames_intern_name(hl_frames *f, const char *name, uint32_t flags,
                               uint64_t function_id) {
    size_t len = strlen(name);
    uint64_t h = hash_bytes(name, len);
    uint64_t *known = hl_u64map_get(&f->by_name, h);
    if (known && strcmp(hl_frames_name(f, (uint32_t)*known), name) == 0)
        return (uint32_t)*known;
    /* A hash collision (different name) gets its own frame, not in the map: correct, rare. */
    if (!hl_mem_reserve((void **)&f->names, &f->names_cap, f->names_len + len + 1, 1, 65536)) {
        f->failures++;
        return 0;
    }
    uint32_t id = f->n_frames + 1;
    uint64_t at = f->names_len;
    hl_method m = {.frame_id = id, .flags = flags, .function_id = function_id};
    if (!hl_vec_push(&f->name_at, &at)) {
        f->failures++;
        return 0;
    }
    if (!hl_vec_push(&f->frame_info, &m)) {
        f->name_at.n--;
        f->failures++;
        return 0;
    }
    memcpy(f->names + at, name, len + 1);
    f->names_len += len + 1;
    f->n_frames = id;
    if (!known && !hl_u64map_put(&f->by_name, h, id))
        f->failures++; /* found again by a new frame of the same name next time: harmless */
    if (!hl_vec_push(&f->pending_frames, &id))
        f->failures++;
    return id;
}

/* stack_at: offset into stack_ids << 16 | depth (depth <= 65535). */
const uint32_t *hl_frames_stack(const hl_frames *f, uint32_t id, uint32_t *depth) {
    if (id == 0 || id > f->n_stacks)
        return NULL;
    uint64_t at = ((const uint64_t *)f->stack_at.p)[id];
    *depth = (uint32_t)(at & 0xffff);
    return (const uint32_t *)f->stack_ids.p + (at >> 16);
}

uint32_t hl_frames_intern_stack(hl_frames *f, const uint32_t *frame_ids, uint32_t depth) {
    if (depth == 0 || depth > 0xffff)
        return 0;
    uint64_t h = hash_bytes(frame_ids, depth * sizeof *frame_ids);
    uint64_t *known = hl_u64map_get(&f->by_stack, h);
    if (known) {
        uint32_t d = 0;
        const uint32_t *ids = hl_frames_stack(f, (uint32_t)*known, &d);
        if (d == depth && memcmp(ids, frame_ids, depth * sizeof *frame_ids) == 0)
            return (uint32_t)*known;
    }
    uint64_t at = (uint64_t)f->stack_ids.n << 16 | depth;
    for (uint32_t i = 0; i < depth; i++) {
        if (!hl_vec_push(&f->stack_ids, &frame_ids[i])) {
            f->stack_ids.n = at >> 16;
            f->failures++;
            return 0;
        }
    }
    if (!hl_vec_push(&f->stack_at, &at)) {
        f->stack_ids.n = at >> 16;
        f->failures++;
        return 0;
    }
    uint32_t id = ++f->n_stacks;
    if (!known && !hl_u64map_put(&f->by_stack, h, id))
        f->failures++;
    if (!hl_vec_push(&f->pending_stacks, &id))
        f->failures++;
    return id;
}

uint32_t hl_frames_of_ip(hl_frames *f, hl_type_names *names, uintptr_t ip) {
    if (!ip)
        return hl_frames_intern_name(f, "[unknown]", HL_METHOD_FLAG_UNKNOWN, 0);
    uint64_t *known = hl_u64map_get(&f->by_ip, ip);
    if (known)
        return (uint32_t)*known;
    FunctionID function = 0;
    uint32_t id;
    HRESULT hr = info_get_function_from_ip(names->info, ip, &function);
    if (HR_FAILED(hr) || !function) {
        f->unresolved++;
        id = hl_frames_intern_name(f, HR_FAILED(hr) ? "[native]" : "[unknown]",
                                   HR_FAILED(hr) ? HL_METHOD_FLAG_NATIVE : HL_METHOD_FLAG_UNKNOWN,
                                   0);
    } else {
        uint64_t *by_function = hl_u64map_get(&f->by_function, function);
        if (by_function) {
            id = (uint32_t)*by_function;
        } else {
            char name[1024];
            bool named = hl_method_name(names, function, name, sizeof name);
            id = hl_frames_intern_name(f, named ? name : "[unknown]",
                                       named ? 0 : HL_METHOD_FLAG_UNKNOWN, function);
            if (id && !hl_u64map_put(&f->by_function, function, id))
                f->failures++;
        }
    }
    if (id && !hl_u64map_put(&f->by_ip, ip, id))
        f->failures++;
    return id;
}
