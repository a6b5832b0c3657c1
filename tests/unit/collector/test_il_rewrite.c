/* test_il_rewrite.c — the IL rewriter (il_rewrite.h) on hand-built method bodies, one per trap:
 * a tiny header, a fat one with locals and InitLocals, small and fat exception clauses (a try
 * that starts on a site, a filter), a short branch that must widen and one that need not, a loop
 * back to a site, a switch whose cases land on sites, a value type's constructor and a box of a
 * reference type (no site), a box the JIT may fold (flagged), a box of a generic parameter
 * (flagged), a site after a prefix (left alone), maxstack at its limit, the counters callback
 * failing, and malformed bodies (a branch into an instruction, an unknown opcode, a truncated
 * code, a clause off an instruction boundary). Each rewrite is also checked by il_verify. */
#include <stdlib.h>
#include <string.h>

#include "collector/il_rewrite.h"
#include "tests/unit/collector/il_verify.h"
#include "tests/unit/common/check.h"

#define INC_TOKEN 0x0A000042u
#define COUNTERS 0x7f0000001000ull

/* Tokens the fake resolver knows. */
#define CTOR_CLASS 0x06000001u  /* a reference type's constructor */
#define CTOR_STRUCT 0x0A000002u /* a value type's */
#define TYPE_INT 0x01000003u    /* System.Int32 (a value type) */
#define TYPE_STRING 0x01000004u /* a reference type */
#define TYPE_T 0x1B000005u      /* a generic parameter (TypeSpec !!0) */

static int resolve_calls, counters_calls;
static hl_il_alloc resolve(void *ctx, hl_il_site_kind kind, uint32_t token) {
    (void)ctx, (void)kind;
    resolve_calls++;
    switch (token) {
    case CTOR_STRUCT:
    case TYPE_STRING:
        return HL_IL_ALLOC_NO;
    case TYPE_T:
        return HL_IL_ALLOC_MAYBE;
    default:
        return HL_IL_ALLOC_YES;
    }
}
static uint64_t counters_ok(void *ctx, const hl_il_site *sites, size_t n) {
    (void)ctx, (void)sites, (void)n;
    counters_calls++;
    return COUNTERS;
}
static uint64_t counters_fail(void *ctx, const hl_il_site *sites, size_t n) {
    (void)ctx, (void)sites, (void)n;
    return 0;
}

/* A body under construction. */
typedef struct body {
    uint8_t b[4096];
    size_t n;
} body;
static void put8(body *b, uint8_t v) { b->b[b->n++] = v; }
static void put16(body *b, uint16_t v) { put8(b, (uint8_t)v), put8(b, (uint8_t)(v >> 8)); }
static void put32(body *b, uint32_t v) { put16(b, (uint16_t)v), put16(b, (uint16_t)(v >> 16)); }
static void op_tok(body *b, uint8_t op, uint32_t tok) { put8(b, op), put32(b, tok); }
static void pad_nops(body *b, size_t n) {
    while (n--)
        put8(b, 0x00);
}

static void tiny(body *out, const body *code) {
    out->n = 0;
    put8(out, (uint8_t)(code->n << 2 | 2));
    memcpy(out->b + out->n, code->b, code->n);
    out->n += code->n;
}
/* A fat body: flags (0x10 InitLocals), maxstack, local sig; `eh` (already a whole section, or
 * empty) appended 4-byte aligned with MoreSects set. */
static void fat(body *out, const body *code, uint16_t flags, uint16_t max_stack, uint32_t locals,
                const body *eh) {
    out->n = 0;
    put16(out, (uint16_t)(0x3003 | flags | (eh && eh->n ? 0x8 : 0)));
    put16(out, max_stack);
    put32(out, (uint32_t)code->n);
    put32(out, locals);
    memcpy(out->b + out->n, code->b, code->n);
    out->n += code->n;
    if (eh && eh->n) {
        while (out->n % 4)
            put8(out, 0xCC);
        memcpy(out->b + out->n, eh->b, eh->n);
        out->n += eh->n;
    }
}
static void small_clause(body *eh, uint16_t flags, uint16_t try_off, uint8_t try_len,
                         uint16_t h_off, uint8_t h_len, uint32_t tok) {
    put16(eh, flags), put16(eh, try_off), put8(eh, try_len), put16(eh, h_off), put8(eh, h_len);
    put32(eh, tok);
}

static int rewrite(const body *in, hl_il_rewrite_result *r, hl_il_counters_fn counters) {
    hl_il_rewrite_params p = {.body = in->b, .body_size = in->n, .increment_token = INC_TOKEN,
                              .resolve = resolve, .counters = counters};
    return hl_il_rewrite(&p, r);
}

/* Rewrites, checks HL_IL_OK, the number of sites and il_verify. */
static void rewrite_ok(const body *in, hl_il_rewrite_result *r, size_t n_sites, int line) {
    int rc = rewrite(in, r, counters_ok);
    if (rc != HL_IL_OK || r->n_sites != n_sites) {
        fprintf(stderr, "line %d: rc %d, %zu sites, expected %zu\n", line, rc, r->n_sites, n_sites);
        failures++;
        return;
    }
    if (n_sites) {
        uint32_t where;
        const char *err = il_verify(in->b, in->n, r, INC_TOKEN, &where);
        if (err) {
            fprintf(stderr, "line %d: il_verify: %s (IL_%04x)\n", line, err, where);
            failures++;
        }
    }
}

static void test_tiny(void) {
    body c = {0}, in;
    op_tok(&c, 0x73, CTOR_CLASS); /* newobj */
    put8(&c, 0x26);               /* pop */
    put8(&c, 0x2A);               /* ret */
    tiny(&in, &c);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 1, __LINE__);
    hl_il_body nb;
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    CHECK_INT(nb.fat, 1);
    CHECK_INT(nb.max_stack, 9); /* tiny means 8 */
    CHECK_INT(nb.local_sig, 0);
    CHECK_INT(nb.code_size, HL_IL_PROBE_SIZE + 7);
    CHECK_INT(nb.n_clauses, 0);
    hl_il_body_release(&nb);
    CHECK_INT(r.sites[0].il_offset, 0);
    CHECK_INT(r.sites[0].kind, HL_IL_SITE_NEWOBJ);
    CHECK_INT(r.sites[0].token, CTOR_CLASS);
    CHECK_INT(r.sites[0].flags, 0);
    CHECK(r.counters == COUNTERS);
    hl_il_rewrite_result_release(&r);
    hl_il_rewrite_result_release(NULL);
}

/* Not sites: a value type's constructor, a box of a reference type; no site means no body. */
static void test_no_sites(void) {
    body c = {0}, in;
    op_tok(&c, 0x73, CTOR_STRUCT);
    put8(&c, 0x26);
    put8(&c, 0x14);                /* ldnull */
    op_tok(&c, 0x8C, TYPE_STRING); /* box string: nothing */
    put8(&c, 0x26);
    put8(&c, 0x2A);
    tiny(&in, &c);
    hl_il_rewrite_result r;
    counters_calls = 0;
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_OK);
    CHECK(r.body == NULL);
    CHECK_INT(r.n_sites, 0);
    CHECK_INT(counters_calls, 0);
    hl_il_rewrite_result_release(&r);
}

/* Fat header: locals and InitLocals kept, maxstack + 1; three kinds of site in IL order. */
static void test_fat_kinds(void) {
    body c = {0}, in;
    put8(&c, 0x16);                /* ldc.i4.0 */
    op_tok(&c, 0x8D, TYPE_INT);    /* newarr int (IL_0001) */
    put8(&c, 0x26);
    put8(&c, 0x16);
    op_tok(&c, 0x8C, TYPE_INT);    /* box int (IL_0008) */
    put8(&c, 0x26);
    put8(&c, 0x16);
    op_tok(&c, 0x8C, TYPE_T);      /* box !!0 (IL_000f) */
    put8(&c, 0x26);
    put8(&c, 0x16);
    op_tok(&c, 0x8C, TYPE_INT);    /* box int (IL_0016) ... */
    op_tok(&c, 0xA5, TYPE_INT);    /* ... unbox.any int: may fold */
    put8(&c, 0x26);
    put8(&c, 0x16);
    op_tok(&c, 0x8C, TYPE_INT);    /* box int (IL_0022) ... */
    put8(&c, 0x14);                /* ... ldnull; cgt.un: may fold */
    put8(&c, 0xFE), put8(&c, 0x03);
    put8(&c, 0x26);
    put8(&c, 0x2A);
    fat(&in, &c, 0x10, 5, 0x11000007, NULL);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 5, __LINE__);
    if (r.n_sites == 5) {
        CHECK_INT(r.sites[0].kind, HL_IL_SITE_NEWARR);
        CHECK_INT(r.sites[0].il_offset, 1);
        CHECK_INT(r.sites[1].kind, HL_IL_SITE_BOX);
        CHECK_INT(r.sites[1].flags, 0);
        CHECK_INT(r.sites[2].flags, HL_IL_SITE_GENERIC);
        CHECK_INT(r.sites[2].il_offset, 0x0f);
        CHECK_INT(r.sites[3].flags, HL_IL_SITE_MAY_ELIDE);
        CHECK_INT(r.sites[4].flags, HL_IL_SITE_MAY_ELIDE);
        CHECK_INT(r.sites[4].il_offset, 0x22);
    }
    hl_il_body nb;
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    CHECK_INT(nb.max_stack, 6);
    CHECK_INT(nb.local_sig, 0x11000007);
    CHECK_INT(nb.fat_flags & 0x10, 0x10);
    hl_il_body_release(&nb);
    hl_il_rewrite_result_release(&r);
}

/* A small EH section: try { newobj } catch { newobj } finally-less, the try starting on the
 * site (its probe inside the try), the catch handler starting on a site, and a filter clause
 * whose filter starts on a site. */
static void test_small_clauses(void) {
    body c = {0}, in, eh = {0};
    op_tok(&c, 0x73, CTOR_CLASS); /* IL_0000 try start: newobj */
    put8(&c, 0x26);               /* IL_0005 pop */
    put8(&c, 0xDE), put8(&c, 8);  /* IL_0006 leave.s IL_0010 */
    op_tok(&c, 0x73, CTOR_CLASS); /* IL_0008 catch handler: newobj */
    put8(&c, 0x26);               /* IL_000d pop (the exception) */
    put8(&c, 0xDE), put8(&c, 0);  /* IL_000e leave.s IL_0010 */
    put8(&c, 0x2A);               /* IL_0010 ret */
    /* a filter over the same try: filter at IL_0011, handler IL_001a */
    op_tok(&c, 0x8D, TYPE_INT); /* IL_0011 filter: newarr (stack: exception, then the array) */
    put8(&c, 0x26);             /* IL_0016 */
    put8(&c, 0x26);             /* IL_0017 */
    put8(&c, 0x17);             /* IL_0018 ldc.i4.1 */
    put8(&c, 0xFE), put8(&c, 0x11); /* IL_0019 endfilter */
    put8(&c, 0x26);                 /* IL_001b handler: pop */
    put8(&c, 0xDE), put8(&c, 0xF1); /* IL_001c leave.s IL_000f? no: back to IL_0010 (-14) */
    c.b[c.n - 1] = (uint8_t)(int8_t)(0x10 - 0x1e);
    put8(&eh, 0x01), put8(&eh, 4 + 2 * 12), put16(&eh, 0); /* small EH table */
    small_clause(&eh, 0, 0x00, 0x08, 0x08, 0x08, 0x01000010);
    small_clause(&eh, 1, 0x00, 0x08, 0x1b, 0x03, 0x11);
    fat(&in, &c, 0, 2, 0, &eh);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 3, __LINE__);
    hl_il_body nb;
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    CHECK_INT(nb.n_clauses, 2);
    if (nb.n_clauses == 2) {
        CHECK_INT(nb.clauses[0].try_offset, 0); /* the probe is inside the try */
        CHECK_INT(nb.clauses[0].try_length, 8 + HL_IL_PROBE_SIZE);
        CHECK_INT(nb.clauses[0].handler_offset, 8 + HL_IL_PROBE_SIZE); /* at its probe */
        CHECK_INT(nb.clauses[0].handler_length, 8 + HL_IL_PROBE_SIZE);
        CHECK_INT(nb.clauses[0].class_token_or_filter, 0x01000010);
        CHECK_INT(nb.clauses[1].class_token_or_filter, 0x11 + 2 * HL_IL_PROBE_SIZE);
        CHECK_INT(nb.clauses[1].handler_offset, 0x1b + 3 * HL_IL_PROBE_SIZE);
    }
    hl_il_body_release(&nb);
    hl_il_rewrite_result_release(&r);
}

/* A fat EH section in, with a finally whose end is the code's end. */
static void test_fat_clauses(void) {
    body c = {0}, in, eh = {0};
    put8(&c, 0x00);                /* IL_0000 nop: try start */
    op_tok(&c, 0x8D, TYPE_INT);    /* IL_0001 newarr (stack: needs a length; shape only) */
    put8(&c, 0x26);                /* IL_0006 */
    put8(&c, 0xDE), put8(&c, 7);   /* IL_0007 leave.s IL_0010 */
    op_tok(&c, 0x73, CTOR_CLASS);  /* IL_0009 finally: newobj */
    put8(&c, 0x26);                /* IL_000e */
    put8(&c, 0xDC);                /* IL_000f endfinally */
    put8(&c, 0x2A);                /* IL_0010 ret */
    put32(&eh, 0x41u | (4 + 24) << 8);
    put32(&eh, 2), put32(&eh, 0), put32(&eh, 9), put32(&eh, 9), put32(&eh, 7), put32(&eh, 0);
    fat(&in, &c, 0, 1, 0, &eh);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 2, __LINE__);
    hl_il_body nb;
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    if (nb.n_clauses == 1) {
        CHECK_INT(nb.clauses[0].flags, 2);
        CHECK_INT(nb.clauses[0].try_length, 9 + HL_IL_PROBE_SIZE);
        CHECK_INT(nb.clauses[0].handler_offset, 9 + HL_IL_PROBE_SIZE);
        CHECK_INT(nb.clauses[0].handler_length, 7 + HL_IL_PROBE_SIZE);
    }
    hl_il_body_release(&nb);
    hl_il_rewrite_result_release(&r);
}

/* br.s backwards over a site: 100 bytes of nops fit a byte before, not after 2 probes... one
 * probe: 5 + 100 + 16 > 127. A br.s that jumps over nothing keeps its form. A loop back to the
 * site lands on the probe. */
static void test_widening(void) {
    body c = {0}, in;
    op_tok(&c, 0x73, CTOR_CLASS); /* IL_0000: newobj (the loop's head) */
    put8(&c, 0x26);               /* IL_0005 */
    pad_nops(&c, 110);            /* IL_0006 .. IL_0073 */
    put8(&c, 0x2B), put8(&c, 0);  /* IL_0074 br.s +0: stays short */
    put8(&c, 0x2B);               /* IL_0076 br.s IL_0000: -120 fits, -136 not */
    put8(&c, (uint8_t)(int8_t)-(0x76 + 2));
    put8(&c, 0x2A);
    fat(&in, &c, 0, 1, 0, NULL);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 1, __LINE__);
    hl_il_body nb;
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    uint32_t at_first = HL_IL_PROBE_SIZE + 0x74, at_loop = at_first + 2;
    CHECK_INT(nb.code[at_first], 0x2B);
    CHECK_INT(nb.code[at_loop], 0x38); /* br */
    uint32_t t;
    uint16_t op;
    uint32_t len = hl_il_instr_decode(nb.code, nb.code_size, at_loop, &op);
    CHECK_INT(len, 5);
    CHECK_INT(hl_il_instr_targets(nb.code, at_loop, op, len, &t, 1), 1);
    CHECK_INT(t, 0); /* the probe: every iteration counts */
    CHECK_INT(nb.code_size, HL_IL_PROBE_SIZE + c.n + 3);
    hl_il_body_release(&nb);
    hl_il_rewrite_result_release(&r);

    /* widening one branch pushes another over the edge: B (IL_0000) jumps to the site's probe,
     * so the probe is not inside it, but A (IL_0003) is, and A must widen over the probe: then B
     * is 128 bytes long and widens in the second layout */
    body c2 = {0};
    put8(&c2, 0x2B), put8(&c2, 125);  /* IL_0000 B: br.s IL_007f */
    put8(&c2, 0x00);                  /* IL_0002 */
    put8(&c2, 0x2B), put8(&c2, 127);  /* IL_0003 A: br.s IL_0084 */
    pad_nops(&c2, 0x7f - 5);          /* IL_0005 .. IL_007e */
    op_tok(&c2, 0x73, CTOR_CLASS);    /* IL_007f */
    put8(&c2, 0x26);                  /* IL_0084 */
    put8(&c2, 0x2A);
    fat(&in, &c2, 0, 1, 0, NULL);
    rewrite_ok(&in, &r, 1, __LINE__);
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    CHECK_INT(nb.code[0], 0x38);
    CHECK_INT(nb.code[6], 0x38);
    CHECK_INT(nb.code_size, c2.n + 6 + HL_IL_PROBE_SIZE);
    hl_il_body_release(&nb);
    hl_il_rewrite_result_release(&r);
}

/* switch: each case lands on its site's probe; the default falls through. */
static void test_switch(void) {
    body c = {0}, in;
    put8(&c, 0x02);                              /* IL_0000 ldarg.0 */
    put8(&c, 0x45), put32(&c, 3);                /* IL_0001 switch (3) */
    put32(&c, 1), put32(&c, 8), put32(&c, 15);   /* from IL_0012: IL_0013, IL_001a, IL_0021 */
    put8(&c, 0x2A);                              /* IL_0012 default: ret */
    op_tok(&c, 0x73, CTOR_CLASS), put8(&c, 0x26), put8(&c, 0x2A); /* IL_0013 */
    op_tok(&c, 0x8D, TYPE_INT), put8(&c, 0x26), put8(&c, 0x2A);   /* IL_001a */
    put8(&c, 0x14), put8(&c, 0x26), put8(&c, 0x2A);               /* IL_0021: no site */
    tiny(&in, &c);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 2, __LINE__);
    hl_il_body nb;
    CHECK_INT(hl_il_body_parse(r.body, r.body_size, &nb), HL_IL_OK);
    uint32_t t[3];
    uint16_t op;
    uint32_t len = hl_il_instr_decode(nb.code, nb.code_size, 1, &op);
    CHECK_INT(hl_il_instr_targets(nb.code, 1, op, len, t, 3), 3);
    CHECK_INT(t[0], 0x13);
    CHECK_INT(t[1], 0x1a + HL_IL_PROBE_SIZE);
    CHECK_INT(t[2], 0x21 + 2 * HL_IL_PROBE_SIZE);
    hl_il_body_release(&nb);
    hl_il_rewrite_result_release(&r);
}

/* A site right after a prefix keeps its prefix next to it: not instrumented. */
static void test_prefix(void) {
    body c = {0}, in;
    put8(&c, 0xFE), put8(&c, 0x14); /* tail. */
    op_tok(&c, 0x73, CTOR_CLASS);
    put8(&c, 0x2A);
    tiny(&in, &c);
    hl_il_rewrite_result r;
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_OK);
    CHECK_INT(r.n_sites, 0);
    hl_il_rewrite_result_release(&r);
}

static void test_errors(void) {
    hl_il_rewrite_result r;
    body c = {0}, in;
    /* maxstack at its limit */
    op_tok(&c, 0x73, CTOR_CLASS), put8(&c, 0x26), put8(&c, 0x2A);
    fat(&in, &c, 0, 0xFFFF, 0, NULL);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_TOO_BIG);
    CHECK(r.body == NULL && r.sites == NULL);
    /* the counters callback fails */
    tiny(&in, &c);
    CHECK_INT(rewrite(&in, &r, counters_fail), HL_IL_E_NOMEM);
    CHECK(r.body == NULL && r.sites == NULL);
    /* a branch into the middle of the newobj */
    c.n = 0;
    put8(&c, 0x2B), put8(&c, 1);
    op_tok(&c, 0x73, CTOR_CLASS), put8(&c, 0x2A);
    tiny(&in, &c);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* an unknown opcode */
    c.n = 0;
    put8(&c, 0xA6), put8(&c, 0x2A);
    tiny(&in, &c);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    c.n = 0;
    put8(&c, 0xFE), put8(&c, 0x1B), put8(&c, 0x2A);
    tiny(&in, &c);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* a code that stops inside an operand */
    c.n = 0;
    put8(&c, 0x16), put8(&c, 0x73), put8(&c, 1);
    tiny(&in, &c);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* a switch whose table runs past the end */
    c.n = 0;
    put8(&c, 0x45), put32(&c, 1000), put8(&c, 0x2A);
    tiny(&in, &c);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* a body shorter than its header says */
    tiny(&in, &c);
    in.n = 3;
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* a clause that ends inside an instruction */
    body eh = {0};
    c.n = 0;
    op_tok(&c, 0x73, CTOR_CLASS), put8(&c, 0x26), put8(&c, 0xDE), put8(&c, 0), put8(&c, 0x2A);
    put8(&eh, 0x01), put8(&eh, 16), put16(&eh, 0);
    small_clause(&eh, 2, 0, 3, 7, 1, 0);
    fat(&in, &c, 0, 1, 0, &eh);
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* an EH section past the end */
    in.n -= 8;
    CHECK_INT(rewrite(&in, &r, counters_ok), HL_IL_E_MALFORMED);
    /* not a body at all */
    CHECK_INT(rewrite(&(body){.b = {0x01}, .n = 1}, &r, counters_ok), HL_IL_E_MALFORMED);
    CHECK_INT(rewrite(&(body){.n = 0}, &r, counters_ok), HL_IL_E_MALFORMED);
}

/* The verifier itself catches a wrong rewrite (a test that can fail). */
static void test_verifier_catches(void) {
    body c = {0}, in;
    put8(&c, 0x2B), put8(&c, 0); /* br.s +0 */
    op_tok(&c, 0x73, CTOR_CLASS), put8(&c, 0x26), put8(&c, 0x2A);
    tiny(&in, &c);
    hl_il_rewrite_result r;
    rewrite_ok(&in, &r, 1, __LINE__);
    uint32_t where;
    r.body[12 + 1] = 0x10; /* aim the branch past the probe */
    CHECK(il_verify(in.b, in.n, &r, INC_TOKEN, &where) != NULL);
    r.body[12 + 1] = 0;
    CHECK(il_verify(in.b, in.n, &r, INC_TOKEN, &where) == NULL);
    r.body[12 + 2 + 1] ^= 1; /* a counter address off by one */
    CHECK(il_verify(in.b, in.n, &r, INC_TOKEN, &where) != NULL);
    hl_il_rewrite_result_release(&r);
}

int main(void) {
    test_tiny();
    test_no_sites();
    test_fat_kinds();
    test_small_clauses();
    test_fat_clauses();
    test_widening();
    test_switch();
    test_prefix();
    test_errors();
    test_verifier_catches();
    CHECK(resolve_calls > 0);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures != 0;
}
