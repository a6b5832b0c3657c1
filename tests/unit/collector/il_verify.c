/* il_verify.c — see il_verify.h. */
#include "tests/unit/collector/il_verify.h"

#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int is_branch_pair(uint16_t orig, uint16_t now) {
    return (orig >= 0x2B && orig <= 0x37 && now == orig + 13) || (orig == 0xDE && now == 0xDD);
}

const char *il_verify(const uint8_t *body, size_t size, const hl_il_rewrite_result *r,
                      uint32_t token, uint32_t *where) {
    hl_il_body ob, nb;
    const char *err = NULL;
    uint32_t *map = NULL, *inst = NULL; /* original offset -> new offset of probe / instruction */
    *where = 0;
    if (hl_il_body_parse(body, size, &ob) != HL_IL_OK)
        return "the original does not parse";
    if (hl_il_body_parse(r->body, r->body_size, &nb) != HL_IL_OK) {
        hl_il_body_release(&ob);
        return "the rewritten body does not parse";
    }
    if (!nb.fat || nb.max_stack != ob.max_stack + 1 || nb.local_sig != ob.local_sig ||
        (nb.fat_flags & 0x10) != (ob.fat_flags & 0x10)) {
        err = "header: maxstack, local signature or InitLocals";
        goto out;
    }
    map = calloc((size_t)ob.code_size + 1, sizeof *map);
    inst = calloc((size_t)ob.code_size + 1, sizeof *inst);
    uint32_t j = 0;
    size_t s = 0;
    for (uint32_t i = 0; i < ob.code_size;) {
        uint16_t op, nop;
        uint32_t len = hl_il_instr_decode(ob.code, ob.code_size, i, &op);
        *where = i;
        if (!len) {
            err = "the original does not decode";
            goto out;
        }
        map[i] = j;
        if (s < r->n_sites && r->sites[s].il_offset == i) {
            const uint8_t *p = nb.code + j;
            uint64_t addr = 0;
            if ((uint64_t)j + HL_IL_PROBE_SIZE > nb.code_size || p[0] != 0x21) {
                err = "no probe before a site";
                goto out;
            }
            for (int k = 0; k < 8; k++)
                addr |= (uint64_t)p[1 + k] << (8 * k);
            if (addr != r->counters + s * HL_IL_COUNTER_STRIDE || p[9] != 0xD3 || p[10] != 0x28 ||
                rd32(p + 11) != token || p[15] != 0x26) {
                err = "the probe is not ldc.i8 counter; conv.i; call Increment; pop";
                goto out;
            }
            if (op != 0x73 && op != 0x8D && op != 0x8C) {
                err = "a site that is not newobj, newarr or box";
                goto out;
            }
            j += HL_IL_PROBE_SIZE;
            s++;
        } else if (op == 0x8D && !(i > 0 && ob.code[i - 1] == 0xFE)) {
            err = "a newarr without a probe";
            goto out;
        }
        inst[i] = j;
        uint32_t nlen = hl_il_instr_decode(nb.code, nb.code_size, j, &nop);
        if (!nlen || (nop != op && !is_branch_pair(op, nop))) {
            err = "an original instruction is missing or changed";
            goto out;
        }
        uint32_t nt = hl_il_instr_targets(nb.code, j, nop, nlen, NULL, 0);
        if (nt == 0 && (nlen != len || memcmp(nb.code + j, ob.code + i, len) != 0)) {
            err = "an operand changed";
            goto out;
        }
        i += len;
        j += nlen;
    }
    map[ob.code_size] = j;
    if (j != nb.code_size || s != r->n_sites) {
        err = "the rewritten code has more than the original and the probes";
        goto out;
    }
    /* branches: walk again now that every offset is mapped */
    for (uint32_t i = 0; i < ob.code_size;) {
        uint16_t op, nop;
        uint32_t len = hl_il_instr_decode(ob.code, ob.code_size, i, &op);
        uint32_t nj = inst[i];
        uint32_t nlen = hl_il_instr_decode(nb.code, nb.code_size, nj, &nop);
        uint32_t n = hl_il_instr_targets(ob.code, i, op, len, NULL, 0);
        if (n) {
            uint32_t *ot = malloc(n * sizeof *ot), *nt = malloc(n * sizeof *nt);
            hl_il_instr_targets(ob.code, i, op, len, ot, n);
            uint32_t nn = hl_il_instr_targets(nb.code, nj, nop, nlen, nt, n);
            int bad = nn != n;
            for (uint32_t k = 0; k < n && !bad; k++)
                bad = ot[k] > ob.code_size || nt[k] != map[ot[k]];
            free(ot);
            free(nt);
            if (bad) {
                *where = i;
                err = "a branch target does not map";
                goto out;
            }
        }
        i += len;
    }
    if (nb.n_clauses != ob.n_clauses) {
        err = "the number of exception clauses changed";
        goto out;
    }
    for (size_t c = 0; c < ob.n_clauses; c++) {
        const hl_il_clause *o = &ob.clauses[c], *n = &nb.clauses[c];
        *where = o->try_offset;
        if (n->flags != o->flags || n->try_offset != map[o->try_offset] ||
            n->try_offset + n->try_length != map[o->try_offset + o->try_length] ||
            n->handler_offset != map[o->handler_offset] ||
            n->handler_offset + n->handler_length != map[o->handler_offset + o->handler_length] ||
            n->class_token_or_filter !=
                (o->flags & 1 ? map[o->class_token_or_filter] : o->class_token_or_filter)) {
            err = "an exception clause does not map";
            goto out;
        }
    }
out:
    free(map);
    free(inst);
    hl_il_body_release(&ob);
    hl_il_body_release(&nb);
    return err;
}
