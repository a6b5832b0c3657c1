/* il_rewrite.h — a method's IL body with a counter before each allocating instruction.
 *
 * Pure: no runtime calls, no globals. The input is a method body exactly as the runtime's
 * GetILFunctionBody returns it (ECMA-335 II.25.4: a tiny or fat header, the code, then for a fat
 * header with MoreSects the exception sections, small or fat); the output is a new body the
 * runtime accepts from SetILFunctionBody (always a fat header and one fat EH section), and the
 * list of the sites it counts.
 *
 * A site is a `newobj` whose constructor belongs to a reference type, a `newarr`, or a `box` of
 * a value type (the resolver says which; `box` of a generic parameter is counted and flagged,
 * since it allocates only for a value-type instantiation). Before each site the probe
 *
 *     ldc.i8 <address of the site's counter>; conv.i; call int64 Interlocked::Increment(int64&); pop
 *
 * is inserted (16 bytes, stack-neutral, one more stack slot: maxstack + 1). Site i's counter is
 * at `counters + i * HL_IL_COUNTER_STRIDE` (one cache line each), the base coming from the
 * caller's `counters` callback once the sites are known.
 *
 * Everything that pointed at an instruction points at it again: branch and `switch` targets,
 * exception clause boundaries and filters. A target that was a site lands on its probe (so a
 * loop that jumps back to a `newobj` counts every iteration). Short branches (`br.s`, `leave.s`,
 * ...) whose distance no longer fits a signed byte become long ones; the layout is repeated
 * until no branch needs widening (widening only grows, so this ends). A site right after a
 * prefix (`tail.`, `volatile.`, ...) is not instrumented: the prefix must stay next to its
 * instruction (valid IL never puts one before an allocating instruction).
 *
 * Which thread: any; the functions keep no state between calls. Memory comes from hl_mem_*. */
#ifndef HEAPLENS_COLLECTOR_IL_REWRITE_H
#define HEAPLENS_COLLECTOR_IL_REWRITE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes between two sites' counters: each counter on a cache line of its own. */
#define HL_IL_COUNTER_STRIDE 64
/* Bytes of one probe. */
#define HL_IL_PROBE_SIZE 16

typedef enum hl_il_site_kind {
    HL_IL_SITE_NEWOBJ = 1, /* token: the constructor (MethodDef, MemberRef or MethodSpec) */
    HL_IL_SITE_NEWARR = 2, /* token: the element type */
    HL_IL_SITE_BOX = 3,    /* token: the boxed type */
} hl_il_site_kind;

/* What the resolver says of a site's type. */
typedef enum hl_il_alloc {
    HL_IL_ALLOC_NO = 0,    /* a value type's constructor, `box` of a reference type: not a site */
    HL_IL_ALLOC_YES = 1,   /* allocates every time it runs */
    HL_IL_ALLOC_MAYBE = 2, /* a generic parameter: allocates only for some instantiations */
} hl_il_alloc;

/* Site flags: why a counted site may count fewer objects than the runtime allocates, or more
 * than it allocates on the heap. */
enum {
    /* `box` followed by unbox.any, isinst, brtrue/brfalse or ldnull+ceq/cgt.un: the JIT may fold
     * the pair and allocate nothing (the probe still counts the execution). */
    HL_IL_SITE_MAY_ELIDE = 1u << 0,
    /* the resolver said HL_IL_ALLOC_MAYBE: a generic parameter (allocates only for value-type
     * instantiations), or a type it could not place as value or reference. */
    HL_IL_SITE_GENERIC = 1u << 1,
};

typedef struct hl_il_site {
    uint32_t il_offset; /* of the allocating instruction in the original body */
    uint32_t token;     /* its operand (see hl_il_site_kind) */
    uint8_t kind;       /* hl_il_site_kind */
    uint8_t flags;      /* HL_IL_SITE_* */
} hl_il_site;

/* Says whether a `newobj` (of the constructor `token`) or a `box` (of the type `token`)
 * allocates. Never called for `newarr`. */
typedef hl_il_alloc (*hl_il_resolve_fn)(void *ctx, hl_il_site_kind kind, uint32_t token);

/* Gives the address of `n` (> 0) counters of HL_IL_COUNTER_STRIDE bytes for the sites listed
 * (the caller may keep a copy of them), or 0 when it cannot: the rewrite then fails with
 * HL_IL_E_NOMEM. The memory must stay valid for as long as the rewritten code can run. */
typedef uint64_t (*hl_il_counters_fn)(void *ctx, const hl_il_site *sites, size_t n);

typedef struct hl_il_rewrite_params {
    const uint8_t *body; /* the method body: header, code, exception sections */
    size_t body_size;    /* bytes readable at body (may be more than the body takes) */
    uint32_t increment_token; /* MemberRef of int64 Interlocked::Increment(int64&) in the module */
    hl_il_resolve_fn resolve;
    void *resolve_ctx;
    hl_il_counters_fn counters;
    void *counters_ctx;
} hl_il_rewrite_params;

typedef struct hl_il_rewrite_result {
    uint8_t *body; /* the new method body (NULL when there is no site: nothing to change) */
    size_t body_size;
    hl_il_site *sites; /* in IL order */
    size_t n_sites;
    uint64_t counters; /* what the counters callback returned */
} hl_il_rewrite_result;

enum {
    HL_IL_OK = 0,
    HL_IL_E_MALFORMED = -1, /* the body does not decode: bad header, opcode, branch, clause */
    HL_IL_E_NOMEM = -2,     /* hl_mem_* or the counters callback failed */
    HL_IL_E_TOO_BIG = -3,   /* the new body exceeds what IL can say (maxstack, offsets) */
};

/* Rewrites p->body into *out. On HL_IL_OK, *out holds the new body and the sites (both NULL and
 * 0 when the method has no site; the counters callback is then not called); release it with
 * hl_il_rewrite_result_release. On an error *out is empty. */
int hl_il_rewrite(const hl_il_rewrite_params *p, hl_il_rewrite_result *out);

/* Frees what hl_il_rewrite gave; NULL or an empty result is fine. */
void hl_il_rewrite_result_release(hl_il_rewrite_result *r);

/* --- Decoding, shared with the tests ----------------------------------------------------- */

/* One exception clause, with offsets and lengths whatever the section's format. */
typedef struct hl_il_clause {
    uint32_t flags; /* COR_ILEXCEPTION_CLAUSE_*: 0 catch, 1 filter, 2 finally, 4 fault */
    uint32_t try_offset, try_length, handler_offset, handler_length;
    uint32_t class_token_or_filter; /* the filter's offset when flags & 1 */
} hl_il_clause;

/* A body's parts. `code` points into the body given to hl_il_body_parse; `clauses` is
 * allocated (hl_il_body_release). */
typedef struct hl_il_body {
    const uint8_t *code;
    uint32_t code_size;
    uint16_t max_stack;
    uint32_t local_sig; /* 0 for a tiny header */
    uint16_t fat_flags; /* the fat header's flags (InitLocals 0x10 kept); 0 for a tiny header */
    int fat;
    hl_il_clause *clauses;
    size_t n_clauses;
} hl_il_body;

/* Parses a method body of at most `size` bytes. Returns HL_IL_OK, HL_IL_E_MALFORMED or
 * HL_IL_E_NOMEM. */
int hl_il_body_parse(const uint8_t *body, size_t size, hl_il_body *out);
void hl_il_body_release(hl_il_body *b);

/* The instruction at code[at] (at < size): its total length (opcode, operand, a switch's table)
 * and its opcode (two-byte opcodes as 0xFE00 | second byte). 0 when it does not decode. */
uint32_t hl_il_instr_decode(const uint8_t *code, uint32_t size, uint32_t at, uint16_t *opcode);

/* The branch targets of the instruction at code[at] decoded as `opcode`, as offsets into the
 * code: up to `max` written to targets[], the count returned (0 for no branch). */
uint32_t hl_il_instr_targets(const uint8_t *code, uint32_t at, uint16_t opcode, uint32_t len,
                             uint32_t *targets, uint32_t max);

#endif /* HEAPLENS_COLLECTOR_IL_REWRITE_H */
