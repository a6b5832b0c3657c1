/* il_rewrite.c — counters before allocating IL instructions (il_rewrite.h).
 *
 * Four steps: decode (every instruction's offset, length, opcode; every branch target and
 * clause boundary must be an instruction start or the end of the code), choose the sites, lay
 * out the new code (probe lengths plus widened branches, repeated until stable), emit (header,
 * code with re-aimed branches, one fat EH section with mapped clauses). The new offset of an
 * original instruction is where its probe starts, if it has one: `starts[i]` below. */
#include "collector/il_rewrite.h"

#include <string.h>

#include "collector/mem.h"

/* Operand shapes of the one-byte opcodes (ECMA-335 III, opcode.def): bytes after the opcode, or
 * one of the codes below. */
enum { OP_BAD = 0xF0, OP_SWITCH, OP_BR1, OP_BR4 };

static const uint8_t one_byte_operand[256] = {
    [0x0E] = 1, [0x0F] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, /* *arg.s, *loc.s */
    [0x1F] = 1,                                                             /* ldc.i4.s */
    [0x20] = 4, [0x21] = 8, [0x22] = 4, [0x23] = 8,                         /* ldc.i4/i8/r4/r8 */
    [0x24] = OP_BAD,
    [0x27] = 4, [0x28] = 4, [0x29] = 4, /* jmp, call, calli */
    [0x2B] = OP_BR1, [0x2C] = OP_BR1, [0x2D] = OP_BR1, [0x2E] = OP_BR1, [0x2F] = OP_BR1,
    [0x30] = OP_BR1, [0x31] = OP_BR1, [0x32] = OP_BR1, [0x33] = OP_BR1, [0x34] = OP_BR1,
    [0x35] = OP_BR1, [0x36] = OP_BR1, [0x37] = OP_BR1,
    [0x38] = OP_BR4, [0x39] = OP_BR4, [0x3A] = OP_BR4, [0x3B] = OP_BR4, [0x3C] = OP_BR4,
    [0x3D] = OP_BR4, [0x3E] = OP_BR4, [0x3F] = OP_BR4, [0x40] = OP_BR4, [0x41] = OP_BR4,
    [0x42] = OP_BR4, [0x43] = OP_BR4, [0x44] = OP_BR4,
    [0x45] = OP_SWITCH,
    [0x6F] = 4, [0x70] = 4, [0x71] = 4, [0x72] = 4, [0x73] = 4, [0x74] = 4, [0x75] = 4,
    [0x77] = OP_BAD, [0x78] = OP_BAD,
    [0x79] = 4,
    [0x7B] = 4, [0x7C] = 4, [0x7D] = 4, [0x7E] = 4, [0x7F] = 4, [0x80] = 4, [0x81] = 4,
    [0x8C] = 4, [0x8D] = 4, [0x8F] = 4,
    [0xA3] = 4, [0xA4] = 4, [0xA5] = 4,
    [0xA6] = OP_BAD, [0xA7] = OP_BAD, [0xA8] = OP_BAD, [0xA9] = OP_BAD, [0xAA] = OP_BAD,
    [0xAB] = OP_BAD, [0xAC] = OP_BAD, [0xAD] = OP_BAD, [0xAE] = OP_BAD, [0xAF] = OP_BAD,
    [0xB0] = OP_BAD, [0xB1] = OP_BAD, [0xB2] = OP_BAD,
    [0xBB] = OP_BAD, [0xBC] = OP_BAD, [0xBD] = OP_BAD, [0xBE] = OP_BAD, [0xBF] = OP_BAD,
    [0xC0] = OP_BAD, [0xC1] = OP_BAD,
    [0xC2] = 4, [0xC4] = OP_BAD, [0xC5] = OP_BAD, [0xC6] = 4,
    [0xC7] = OP_BAD, [0xC8] = OP_BAD, [0xC9] = OP_BAD, [0xCA] = OP_BAD, [0xCB] = OP_BAD,
    [0xCC] = OP_BAD, [0xCD] = OP_BAD, [0xCE] = OP_BAD, [0xCF] = OP_BAD,
    [0xD0] = 4,
    [0xDD] = OP_BR4, [0xDE] = OP_BR1,
    /* 0xE1..0xFF below: unused, 0xFE the two-byte prefix */
};

/* The same for 0xFE xx (xx <= 0x1E). */
static const uint8_t two_byte_operand[0x1F] = {
    [0x06] = 4, [0x07] = 4, [0x08] = OP_BAD,                         /* ldftn, ldvirtftn */
    [0x09] = 2, [0x0A] = 2, [0x0B] = 2, [0x0C] = 2, [0x0D] = 2, [0x0E] = 2, /* arg, loc */
    [0x10] = OP_BAD, [0x12] = 1, [0x15] = 4, [0x16] = 4,             /* unaligned., initobj,
                                                                        constrained. */
    [0x19] = 1, [0x1B] = OP_BAD, [0x1C] = 4,                         /* no., sizeof */
};

enum {
    OPC_NEWOBJ = 0x73, OPC_NEWARR = 0x8D, OPC_BOX = 0x8C, OPC_LDC_I8 = 0x21, OPC_CONV_I = 0xD3,
    OPC_CALL = 0x28, OPC_POP = 0x26, OPC_SWITCH = 0x45, OPC_LEAVE = 0xDD, OPC_LEAVE_S = 0xDE,
};

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

static uint8_t operand_shape(uint16_t opcode) {
    if (opcode >= 0xFE00)
        return (opcode & 0xFF) < sizeof two_byte_operand ? two_byte_operand[opcode & 0xFF] : OP_BAD;
    if (opcode >= 0xE1)
        return OP_BAD;
    return one_byte_operand[opcode];
}

uint32_t hl_il_instr_decode(const uint8_t *code, uint32_t size, uint32_t at, uint16_t *opcode) {
    if (at >= size)
        return 0;
    uint32_t head = 1;
    uint16_t op = code[at];
    if (op == 0xFE) {
        if (at + 1 >= size)
            return 0;
        op = (uint16_t)(0xFE00 | code[at + 1]);
        head = 2;
    }
    uint8_t shape = operand_shape(op);
    uint64_t len;
    switch (shape) {
    case OP_BAD:
        return 0;
    case OP_SWITCH:
        if ((uint64_t)at + 5 > size)
            return 0;
        len = 5 + 4 * (uint64_t)rd32(code + at + 1);
        break;
    case OP_BR1:
        len = head + 1;
        break;
    case OP_BR4:
        len = head + 4;
        break;
    default:
        len = head + shape;
    }
    if ((uint64_t)at + len > size)
        return 0;
    *opcode = op;
    return (uint32_t)len;
}

uint32_t hl_il_instr_targets(const uint8_t *code, uint32_t at, uint16_t opcode, uint32_t len,
                             uint32_t *targets, uint32_t max) {
    uint8_t shape = operand_shape(opcode);
    uint32_t next = at + len, n = 0;
    if (shape == OP_BR1) {
        if (max)
            targets[0] = next + (uint32_t)(int32_t)(int8_t)code[at + 1];
        return 1;
    }
    if (shape == OP_BR4) {
        if (max)
            targets[0] = next + rd32(code + at + 1);
        return 1;
    }
    if (shape == OP_SWITCH) {
        n = rd32(code + at + 1);
        for (uint32_t k = 0; k < n && k < max; k++)
            targets[k] = next + rd32(code + at + 5 + 4 * k);
        return n;
    }
    return 0;
}

void hl_il_body_release(hl_il_body *b) {
    if (b) {
        hl_mem_free(b->clauses);
        memset(b, 0, sizeof *b);
    }
}

/* Appends the clauses of the EH sections that start at body[at]. */
static int parse_sections(const uint8_t *body, size_t size, size_t at, hl_il_body *out) {
    for (;;) {
        at = (at + 3) & ~(size_t)3;
        if (at + 4 > size)
            return HL_IL_E_MALFORMED;
        uint8_t kind = body[at];
        int fat = (kind & 0x40) != 0;
        size_t data = fat ? (rd32(body + at) >> 8) : body[at + 1];
        size_t clause_size = fat ? 24 : 12;
        if (data < 4 || at + data > size)
            return HL_IL_E_MALFORMED;
        if (kind & 0x01) { /* an EH table */
            size_t n = (data - 4) / clause_size;
            hl_il_clause *c = hl_mem_realloc(out->clauses, (out->n_clauses + n + 1) * sizeof *c);
            if (!c)
                return HL_IL_E_NOMEM;
            out->clauses = c;
            for (size_t k = 0; k < n; k++) {
                const uint8_t *p = body + at + 4 + k * clause_size;
                hl_il_clause *cl = &out->clauses[out->n_clauses++];
                if (fat)
                    *cl = (hl_il_clause){rd32(p), rd32(p + 4), rd32(p + 8), rd32(p + 12),
                                         rd32(p + 16), rd32(p + 20)};
                else
                    *cl = (hl_il_clause){rd16(p), rd16(p + 2), p[4], rd16(p + 5), p[7],
                                         rd32(p + 8)};
            }
        }
        if (!(kind & 0x80))
            return HL_IL_OK;
        at += data;
    }
}

int hl_il_body_parse(const uint8_t *body, size_t size, hl_il_body *out) {
    memset(out, 0, sizeof *out);
    if (!body || size < 1)
        return HL_IL_E_MALFORMED;
    if ((body[0] & 3) == 2) { /* tiny: size << 2 | 2 */
        out->code = body + 1;
        out->code_size = body[0] >> 2;
        out->max_stack = 8;
        return 1 + (size_t)out->code_size <= size ? HL_IL_OK : HL_IL_E_MALFORMED;
    }
    if ((body[0] & 3) != 3 || size < 12)
        return HL_IL_E_MALFORMED;
    uint16_t flags_size = rd16(body);
    size_t header = (size_t)(flags_size >> 12) * 4;
    if (header < 12 || header > size)
        return HL_IL_E_MALFORMED;
    out->fat = 1;
    out->fat_flags = flags_size & 0xFFF;
    out->max_stack = rd16(body + 2);
    out->code_size = rd32(body + 4);
    out->local_sig = rd32(body + 8);
    out->code = body + header;
    if (out->code_size > size - header)
        return HL_IL_E_MALFORMED;
    if (out->fat_flags & 0x08) { /* MoreSects */
        int rc = parse_sections(body, size, header + out->code_size, out);
        if (rc != HL_IL_OK) {
            hl_il_body_release(out);
            return rc;
        }
    }
    return HL_IL_OK;
}

/* One decoded instruction. */
typedef struct instr {
    uint32_t at, len;
    uint16_t opcode;
    uint8_t shape;
    uint8_t wide; /* a short branch emitted long */
    int32_t site; /* index into the sites, or -1 */
} instr;

typedef struct rewrite {
    hl_il_body b;
    instr *ins;
    uint32_t n_ins;
    uint32_t *index; /* original offset -> instruction index; n_ins for the end; UINT32_MAX else */
    uint32_t *starts; /* instruction index -> new offset (its probe's, if any); [n_ins] the end */
    hl_il_site *sites;
    size_t n_sites;
} rewrite;

static int is_prefix(uint16_t op) {
    return op == 0xFE12 || op == 0xFE13 || op == 0xFE14 || op == 0xFE16 || op == 0xFE19 ||
           op == 0xFE1E;
}

/* The index of the instruction at original offset `off`, or UINT32_MAX when it is none. */
static uint32_t index_of(const rewrite *r, uint64_t off) {
    return off <= r->b.code_size ? r->index[off] : UINT32_MAX;
}

static int decode(rewrite *r) {
    uint32_t size = r->b.code_size;
    r->index = hl_mem_malloc(((size_t)size + 1) * sizeof *r->index);
    r->ins = hl_mem_malloc(((size_t)size + 1) * sizeof *r->ins);
    if (!r->index || !r->ins)
        return HL_IL_E_NOMEM;
    memset(r->index, 0xFF, ((size_t)size + 1) * sizeof *r->index);
    for (uint32_t at = 0; at < size;) {
        uint16_t op;
        uint32_t len = hl_il_instr_decode(r->b.code, size, at, &op);
        if (!len)
            return HL_IL_E_MALFORMED;
        r->index[at] = r->n_ins;
        r->ins[r->n_ins++] = (instr){at, len, op, operand_shape(op), 0, -1};
        at += len;
    }
    r->index[size] = r->n_ins;
    /* every target and clause boundary must be an instruction start (or the end) */
    for (uint32_t i = 0; i < r->n_ins; i++) {
        const instr *in = &r->ins[i];
        if (in->shape != OP_BR1 && in->shape != OP_BR4 && in->shape != OP_SWITCH)
            continue;
        uint32_t n = hl_il_instr_targets(r->b.code, in->at, in->opcode, in->len, NULL, 0);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t t;
            if (in->shape == OP_SWITCH)
                t = in->at + in->len + rd32(r->b.code + in->at + 5 + 4 * k);
            else
                hl_il_instr_targets(r->b.code, in->at, in->opcode, in->len, &t, 1);
            if (index_of(r, t) == UINT32_MAX || index_of(r, t) == r->n_ins)
                return HL_IL_E_MALFORMED;
        }
    }
    for (size_t c = 0; c < r->b.n_clauses; c++) {
        const hl_il_clause *cl = &r->b.clauses[c];
        if (index_of(r, cl->try_offset) == UINT32_MAX ||
            index_of(r, (uint64_t)cl->try_offset + cl->try_length) == UINT32_MAX ||
            index_of(r, cl->handler_offset) == UINT32_MAX ||
            index_of(r, (uint64_t)cl->handler_offset + cl->handler_length) == UINT32_MAX ||
            ((cl->flags & 1) && index_of(r, cl->class_token_or_filter) == UINT32_MAX))
            return HL_IL_E_MALFORMED;
    }
    return HL_IL_OK;
}

/* A `box` the JIT may fold with what follows it: box+unbox.any, box+isinst, box+brtrue/brfalse,
 * box+ldnull+ceq/cgt.un/beq/bne.un. */
static int box_may_elide(const rewrite *r, uint32_t i) {
    if (i + 1 >= r->n_ins)
        return 0;
    uint16_t next = r->ins[i + 1].opcode;
    if (next == 0xA5 || next == 0x75 || next == 0x2C || next == 0x2D || next == 0x39 ||
        next == 0x3A)
        return 1;
    if (next == 0x14 && i + 2 < r->n_ins) {
        uint16_t after = r->ins[i + 2].opcode;
        return after == 0xFE01 || after == 0xFE03 || after == 0x2E || after == 0x33 ||
               after == 0x3B || after == 0x40;
    }
    return 0;
}

static int choose_sites(rewrite *r, const hl_il_rewrite_params *p) {
    for (uint32_t i = 0; i < r->n_ins; i++) {
        instr *in = &r->ins[i];
        hl_il_site_kind kind = in->opcode == OPC_NEWOBJ   ? HL_IL_SITE_NEWOBJ
                               : in->opcode == OPC_NEWARR ? HL_IL_SITE_NEWARR
                               : in->opcode == OPC_BOX    ? HL_IL_SITE_BOX
                                                          : 0;
        if (!kind || (i > 0 && is_prefix(r->ins[i - 1].opcode)))
            continue;
        uint32_t token = rd32(r->b.code + in->at + 1);
        hl_il_alloc a = kind == HL_IL_SITE_NEWARR ? HL_IL_ALLOC_YES
                        : p->resolve              ? p->resolve(p->resolve_ctx, kind, token)
                                                  : HL_IL_ALLOC_YES;
        if (a == HL_IL_ALLOC_NO)
            continue;
        uint8_t flags = a == HL_IL_ALLOC_MAYBE ? HL_IL_SITE_GENERIC : 0;
        if (kind == HL_IL_SITE_BOX && box_may_elide(r, i))
            flags |= HL_IL_SITE_MAY_ELIDE;
        if ((r->n_sites & (r->n_sites - 1)) == 0) { /* grow at powers of two */
            hl_il_site *s = hl_mem_realloc(r->sites, (r->n_sites ? 2 * r->n_sites : 4) * sizeof *s);
            if (!s)
                return HL_IL_E_NOMEM;
            r->sites = s;
        }
        in->site = (int32_t)r->n_sites;
        r->sites[r->n_sites++] = (hl_il_site){in->at, token, (uint8_t)kind, flags};
    }
    return HL_IL_OK;
}

static uint32_t new_len(const instr *in) {
    uint32_t len = in->wide ? in->len + 3 : in->len;
    return in->site >= 0 ? len + HL_IL_PROBE_SIZE : len;
}

/* Lays out the new code: starts[] from the lengths, then widens every short branch whose
 * distance no longer fits, until none does. Returns the new code size, or 0 past 2^31. */
static uint64_t layout(rewrite *r) {
    for (;;) {
        uint64_t at = 0;
        for (uint32_t i = 0; i < r->n_ins; i++) {
            r->starts[i] = (uint32_t)at;
            at += new_len(&r->ins[i]);
            if (at > INT32_MAX)
                return 0;
        }
        r->starts[r->n_ins] = (uint32_t)at;
        int widened = 0;
        for (uint32_t i = 0; i < r->n_ins; i++) {
            instr *in = &r->ins[i];
            if (in->shape != OP_BR1 || in->wide)
                continue;
            uint32_t t;
            hl_il_instr_targets(r->b.code, in->at, in->opcode, in->len, &t, 1);
            int64_t next = (int64_t)r->starts[i + 1];
            int64_t delta = (int64_t)r->starts[r->index[t]] - next;
            if (delta < INT8_MIN || delta > INT8_MAX)
                in->wide = 1, widened = 1;
        }
        if (!widened)
            return at;
    }
}

/* Where original offset `off` (an instruction start or the end, checked by decode) is now. */
static uint32_t mapped(const rewrite *r, uint32_t off) { return r->starts[r->index[off]]; }

static void emit_code(const rewrite *r, uint8_t *out, uint64_t counters, uint32_t token) {
    for (uint32_t i = 0; i < r->n_ins; i++) {
        const instr *in = &r->ins[i];
        const uint8_t *src = r->b.code + in->at;
        uint8_t *o = out + r->starts[i];
        if (in->site >= 0) {
            uint64_t addr = counters + (uint64_t)in->site * HL_IL_COUNTER_STRIDE;
            *o++ = OPC_LDC_I8;
            for (int k = 0; k < 8; k++)
                *o++ = (uint8_t)(addr >> (8 * k));
            *o++ = OPC_CONV_I;
            *o++ = OPC_CALL;
            wr32(o, token);
            o += 4;
            *o++ = OPC_POP;
        }
        uint32_t end = r->starts[i + 1]; /* the next instruction's new start */
        if (in->shape == OP_BR1 || in->shape == OP_BR4) {
            uint32_t t;
            hl_il_instr_targets(r->b.code, in->at, in->opcode, in->len, &t, 1);
            int32_t delta = (int32_t)(mapped(r, t) - end);
            if (in->shape == OP_BR1 && !in->wide) {
                o[0] = src[0];
                o[1] = (uint8_t)(int8_t)delta;
            } else {
                /* short forms 0x2B..0x37 widen to 0x38..0x44, leave.s 0xDE to leave 0xDD */
                o[0] = in->shape == OP_BR4          ? src[0]
                       : in->opcode == OPC_LEAVE_S ? OPC_LEAVE
                                                   : (uint8_t)(src[0] + 13);
                wr32(o + 1, (uint32_t)delta);
            }
        } else if (in->shape == OP_SWITCH) {
            uint32_t n = rd32(src + 1);
            memcpy(o, src, 5);
            for (uint32_t k = 0; k < n; k++) {
                uint32_t t = in->at + in->len + rd32(src + 5 + 4 * k);
                wr32(o + 5 + 4 * k, mapped(r, t) - end);
            }
        } else {
            memcpy(o, src, in->len);
        }
    }
}

void hl_il_rewrite_result_release(hl_il_rewrite_result *r) {
    if (r) {
        hl_mem_free(r->body);
        hl_mem_free(r->sites);
        memset(r, 0, sizeof *r);
    }
}

int hl_il_rewrite(const hl_il_rewrite_params *p, hl_il_rewrite_result *out) {
    memset(out, 0, sizeof *out);
    rewrite r = {0};
    int rc = hl_il_body_parse(p->body, p->body_size, &r.b);
    if (rc != HL_IL_OK)
        return rc;
    if ((rc = decode(&r)) != HL_IL_OK || (rc = choose_sites(&r, p)) != HL_IL_OK)
        goto out;
    if (r.n_sites == 0)
        goto out; /* nothing to count: the caller keeps the original */
    if (r.b.max_stack == UINT16_MAX || (uint64_t)r.b.n_clauses * 24 + 4 >= (1u << 24)) {
        rc = HL_IL_E_TOO_BIG;
        goto out;
    }
    r.starts = hl_mem_malloc(((size_t)r.n_ins + 1) * sizeof *r.starts);
    if (!r.starts) {
        rc = HL_IL_E_NOMEM;
        goto out;
    }
    uint64_t code_size = layout(&r);
    if (!code_size) {
        rc = HL_IL_E_TOO_BIG;
        goto out;
    }
    uint64_t eh_at = (12 + code_size + 3) & ~(uint64_t)3;
    uint64_t total = r.b.n_clauses ? eh_at + 4 + 24 * (uint64_t)r.b.n_clauses : 12 + code_size;
    uint64_t counters = p->counters ? p->counters(p->counters_ctx, r.sites, r.n_sites) : 0;
    uint8_t *body = counters ? hl_mem_calloc(1, total) : NULL;
    if (!body) {
        rc = HL_IL_E_NOMEM;
        goto out;
    }
    /* fat header: flags 0x3, InitLocals kept, MoreSects when there are clauses; 3 dwords */
    uint16_t flags = (uint16_t)(0x3 | (r.b.fat_flags & 0x10) | (r.b.n_clauses ? 0x8 : 0));
    wr16(body, (uint16_t)(flags | 3u << 12));
    wr16(body + 2, (uint16_t)(r.b.max_stack + 1));
    wr32(body + 4, (uint32_t)code_size);
    wr32(body + 8, r.b.local_sig);
    emit_code(&r, body + 12, counters, p->increment_token);
    if (r.b.n_clauses) {
        uint8_t *s = body + eh_at;
        wr32(s, 0x41u | (uint32_t)(4 + 24 * r.b.n_clauses) << 8); /* EHTable | FatFormat */
        for (size_t c = 0; c < r.b.n_clauses; c++) {
            const hl_il_clause *cl = &r.b.clauses[c];
            uint8_t *o = s + 4 + 24 * c;
            uint32_t try_start = mapped(&r, cl->try_offset);
            uint32_t handler_start = mapped(&r, cl->handler_offset);
            wr32(o, cl->flags);
            wr32(o + 4, try_start);
            wr32(o + 8, mapped(&r, cl->try_offset + cl->try_length) - try_start);
            wr32(o + 12, handler_start);
            wr32(o + 16, mapped(&r, cl->handler_offset + cl->handler_length) - handler_start);
            wr32(o + 20, cl->flags & 1 ? mapped(&r, cl->class_token_or_filter)
                                       : cl->class_token_or_filter);
        }
    }
    out->body = body;
    out->body_size = (size_t)total;
    out->sites = r.sites;
    out->n_sites = r.n_sites;
    out->counters = counters;
    r.sites = NULL;
out:
    hl_mem_free(r.sites);
    hl_mem_free(r.starts);
    hl_mem_free(r.index);
    hl_mem_free(r.ins);
    hl_il_body_release(&r.b);
    return rc;
}
