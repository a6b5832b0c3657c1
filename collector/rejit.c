/* rejit.c — counted allocation sites by ReJIT (rejit.h). */
#define _GNU_SOURCE
#include "collector/rejit.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collector/clr_rejit.h"
#include "collector/collector_internal.h"
#include "collector/il_rewrite.h"
#include "collector/mem.h"
#include "collector/type_names.h"

#define NAME_MAX_BYTES 512
#define HL_REJIT_MODULE_WAIT_S 10

typedef struct rejit_module {
    ModuleID id;
    IMetaDataImport *mdi; /* NULL: no metadata (resource module) */
    char name[128];       /* file name */
    uint32_t increment;   /* MemberRef (or MethodDef in CoreLib) of Interlocked.Increment */
    bool writable;        /* dynamic and collectible modules are not rewritten */
} rejit_module;

typedef struct rejit_method {
    ModuleID module;
    mdToken token;
    size_t module_index;
    char *name;
    uint8_t *body; /* the rewritten body, handed to GetReJITParameters */
    size_t body_size;
    hl_il_site *sites;
    char **types; /* per site */
    size_t n_sites;
    uint64_t *counters; /* n_sites counters, HL_IL_COUNTER_STRIDE apart */
    uint32_t refused;   /* HL_COUNT_REFUSED_*, 0 when counted */
} rejit_method;

/* A pattern that matches nothing is reported with the names closest to it: the smallest edit
 * distance to the pattern without its '*' (a misspelt namespace, type or method shows). */
#define CLOSEST 3
typedef struct pattern_state {
    uint64_t matched;
    size_t score[CLOSEST];
    char *closest[CLOSEST];
} pattern_state;

struct hl_rejit {
    ICorProfilerInfo *info;
    int info_version;
    char **patterns;
    size_t n_patterns;
    pattern_state *pstate; /* per pattern; the rejit thread's */
    pthread_mutex_t lock; /* the queue and the arrays' growth */
    pthread_cond_t wake;
    ModuleID *queue;
    size_t n_queue, cap_queue;
    rejit_module *modules;
    size_t n_modules, cap_modules;
    rejit_method *methods;
    size_t n_methods, cap_methods;
    pthread_cond_t processed; /* signalled when a module's request is done */
    uint64_t queued_seq, done_seq; /* modules queued and processed so far */
    pthread_t thread;
    bool stop, started;
    bool begun;        /* the thread may look at the modules (hl_rejit_begin when deferred) */
    bool unsupported;  /* the runtime refused ENABLE_REJIT: nothing is counted */
    bool initial_done; /* the modules loaded before the thread began are requested */
    atomic_uint_fast64_t handed, errors;
    /* HEAPLENS_STATS: how long a module took from its scan to its request returning (the time
     * to counting active), and how long loading threads waited for it */
    uint64_t request_ns_max, request_ns_total, requests, wait_ns_max;
};

/* The array p of n elements with room for one more (NULL, p as it was, without the memory). */
static void *grow(void *p, size_t *cap, size_t n, size_t elem) {
    return hl_mem_reserve(&p, cap, n + 1, elem, 16) ? p : NULL;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = hl_mem_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void ascii_to_utf16(WCHAR *out, size_t cap, const char *s) {
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = (WCHAR)(unsigned char)s[i];
    out[i] = 0;
}

/* ---- which type a token allocates ------------------------------------------------------- */

/* A typedef's base type name decides: System.ValueType or System.Enum (and not System.Enum
 * itself) is a value type. */
static hl_il_alloc typedef_alloc(IMetaDataImport *mdi, mdToken td) {
    WCHAR name[NAME_MAX_BYTES];
    ULONG n = 0;
    DWORD flags = 0;
    mdToken extends = 0;
    if (HR_FAILED(mdi_get_type_def_props(mdi, td, name, NAME_MAX_BYTES, &n, &flags, &extends)))
        return HL_IL_ALLOC_MAYBE;
    char self[NAME_MAX_BYTES], base[NAME_MAX_BYTES] = "";
    hl_utf16_name(self, sizeof self, name, n);
    if ((extends >> 24) == 0x02)
        hl_typedef_name(mdi, extends, base, sizeof base);
    else if ((extends >> 24) == 0x01) {
        mdToken scope;
        if (!HR_FAILED(mdi_get_type_ref_props(mdi, extends, &scope, name, NAME_MAX_BYTES, &n)))
            hl_utf16_name(base, sizeof base, name, n);
    }
    bool value = (strcmp(base, "System.ValueType") == 0 && strcmp(self, "System.Enum") != 0) ||
                 strcmp(base, "System.Enum") == 0;
    return value ? HL_IL_ALLOC_YES : HL_IL_ALLOC_NO;
}

/* The definition of a TypeRef in the modules opened so far (a type forwarded to CoreLib is found
 * there by name). Returns the module's import and *td, or NULL. */
static IMetaDataImport *typeref_find(hl_rejit *r, IMetaDataImport *mdi, mdToken tr, mdTypeDef *td,
                                     int depth) {
    WCHAR name[NAME_MAX_BYTES];
    ULONG n = 0;
    mdToken scope = 0;
    if (depth > 8 || HR_FAILED(mdi_get_type_ref_props(mdi, tr, &scope, name, NAME_MAX_BYTES, &n)))
        return NULL;
    if ((scope >> 24) == 0x01) { /* nested: find the enclosing type first */
        mdTypeDef outer;
        IMetaDataImport *where = typeref_find(r, mdi, scope, &outer, depth + 1);
        if (where && !HR_FAILED(mdi_find_type_def_by_name(where, name, outer, td)))
            return where;
        return NULL;
    }
    for (size_t i = 0; i < r->n_modules; i++)
        if (r->modules[i].mdi && r->modules[i].mdi != mdi &&
            mdi_find_type_def_by_name(r->modules[i].mdi, name, 0, td) == S_OK)
            return r->modules[i].mdi;
    return NULL;
}

static hl_il_alloc type_token_alloc(hl_rejit *r, IMetaDataImport *mdi, mdToken t) {
    switch (t >> 24) {
    case 0x02:
        return typedef_alloc(mdi, t);
    case 0x01: {
        mdTypeDef td;
        IMetaDataImport *where = typeref_find(r, mdi, t, &td, 0);
        return where ? typedef_alloc(where, td) : HL_IL_ALLOC_MAYBE;
    }
    case 0x1B: {
        const uint8_t *sig = NULL;
        ULONG n = 0;
        if (HR_FAILED(mdi_get_type_spec(mdi, t, &sig, &n)) || n == 0)
            return HL_IL_ALLOC_MAYBE;
        uint8_t e = sig[0];
        if (e == 0x15 && n > 1) /* GENERICINST: VALUETYPE or CLASS follows */
            e = sig[1];
        if (e == 0x13 || e == 0x1E) /* VAR, MVAR */
            return HL_IL_ALLOC_MAYBE;
        if (e == ELEMENT_TYPE_VALUETYPE || (e >= 0x02 && e <= 0x0d) || e == 0x18 || e == 0x19)
            return HL_IL_ALLOC_YES;
        return HL_IL_ALLOC_NO;
    }
    default:
        return HL_IL_ALLOC_MAYBE;
    }
}

typedef struct resolve_ctx {
    hl_rejit *r;
    IMetaDataImport *mdi;
} resolve_ctx;

static hl_il_alloc resolve(void *ctx, hl_il_site_kind kind, uint32_t token) {
    resolve_ctx *rc = ctx;
    if (kind == HL_IL_SITE_BOX)
        return type_token_alloc(rc->r, rc->mdi, token);
    mdToken parent = 0;
    if ((token >> 24) == 0x06) {
        WCHAR w[NAME_MAX_BYTES];
        ULONG n;
        if (HR_FAILED(mdi_get_method_props(rc->mdi, token, &parent, w, NAME_MAX_BYTES, &n)))
            return HL_IL_ALLOC_MAYBE;
    } else if ((token >> 24) == 0x0A) {
        if (HR_FAILED(mdi_get_member_ref_props(rc->mdi, token, &parent)))
            return HL_IL_ALLOC_MAYBE;
    } else {
        return HL_IL_ALLOC_YES;
    }
    hl_il_alloc a = type_token_alloc(rc->r, rc->mdi, parent);
    return a == HL_IL_ALLOC_YES ? HL_IL_ALLOC_NO /* a value type's constructor */
           : a == HL_IL_ALLOC_NO ? HL_IL_ALLOC_YES
                                 : HL_IL_ALLOC_MAYBE;
}

/* ---- names of allocated types ----------------------------------------------------------- */

static void type_name(hl_rejit *r, IMetaDataImport *mdi, mdToken t, char *out, size_t size);

static const char *element_name(uint8_t e) {
    static const char *const names[] = {
        [0x01] = "System.Void", [0x02] = "System.Boolean", [0x03] = "System.Char",
        [0x04] = "System.SByte", [0x05] = "System.Byte", [0x06] = "System.Int16",
        [0x07] = "System.UInt16", [0x08] = "System.Int32", [0x09] = "System.UInt32",
        [0x0a] = "System.Int64", [0x0b] = "System.UInt64", [0x0c] = "System.Single",
        [0x0d] = "System.Double", [0x0e] = "System.String", [0x18] = "System.IntPtr",
        [0x19] = "System.UIntPtr", [0x1c] = "System.Object"};
    return e < sizeof names / sizeof names[0] ? names[e] : NULL;
}

/* A compressed unsigned integer (ECMA-335 II.23.2). */
static uint32_t sig_uint(const uint8_t **p, const uint8_t *end) {
    if (*p >= end)
        return 0;
    uint8_t b = *(*p)++;
    if (!(b & 0x80))
        return b;
    if (!(b & 0x40) && *p < end)
        return (uint32_t)(b & 0x3F) << 8 | *(*p)++;
    if (*p + 3 <= end) {
        uint32_t v = (uint32_t)(b & 0x1F) << 24 | (uint32_t)(*p)[0] << 16 | (uint32_t)(*p)[1] << 8 |
                     (*p)[2];
        *p += 3;
        return v;
    }
    return 0;
}

static void put(char *out, size_t size, const char *s) {
    size_t n = strlen(out);
    snprintf(out + n, size - n, "%s", s);
}

/* A type in a signature: primitives, classes, generic instantiations, arrays, type variables. */
static void sig_type(hl_rejit *r, IMetaDataImport *mdi, const uint8_t **p, const uint8_t *end,
                     char *out, size_t size, int depth) {
    if (*p >= end || depth > 8) {
        put(out, size, "?");
        return;
    }
    uint8_t e = *(*p)++;
    const char *prim = element_name(e);
    char tmp[NAME_MAX_BYTES];
    if (prim) {
        put(out, size, prim);
    } else if (e == ELEMENT_TYPE_CLASS || e == ELEMENT_TYPE_VALUETYPE) {
        uint32_t coded = sig_uint(p, end);
        static const uint32_t tables[] = {0x02000000, 0x01000000, 0x1B000000, 0};
        tmp[0] = 0;
        type_name(r, mdi, tables[coded & 3] | (coded >> 2), tmp, sizeof tmp);
        put(out, size, tmp);
    } else if (e == 0x15) { /* GENERICINST */
        sig_type(r, mdi, p, end, out, size, depth + 1);
        uint32_t n = sig_uint(p, end);
        put(out, size, "<");
        for (uint32_t i = 0; i < n && *p < end; i++) {
            if (i)
                put(out, size, ", ");
            sig_type(r, mdi, p, end, out, size, depth + 1);
        }
        put(out, size, ">");
    } else if (e == ELEMENT_TYPE_SZARRAY) {
        sig_type(r, mdi, p, end, out, size, depth + 1);
        put(out, size, "[]");
    } else if (e == 0x13 || e == 0x1E) {
        snprintf(tmp, sizeof tmp, "%s%u", e == 0x13 ? "!" : "!!", sig_uint(p, end));
        put(out, size, tmp);
    } else {
        put(out, size, "?");
        *p = end;
    }
}

static void type_name(hl_rejit *r, IMetaDataImport *mdi, mdToken t, char *out, size_t size) {
    out[0] = 0;
    if ((t >> 24) == 0x02) {
        hl_typedef_name(mdi, t, out, size);
    } else if ((t >> 24) == 0x01) {
        mdTypeDef td;
        IMetaDataImport *where = typeref_find(r, mdi, t, &td, 0);
        if (where) {
            hl_typedef_name(where, td, out, size);
        } else {
            WCHAR w[NAME_MAX_BYTES];
            ULONG n = 0;
            mdToken scope;
            if (!HR_FAILED(mdi_get_type_ref_props(mdi, t, &scope, w, NAME_MAX_BYTES, &n)))
                hl_utf16_name(out, size, w, n);
        }
    } else if ((t >> 24) == 0x1B) {
        const uint8_t *sig = NULL;
        ULONG n = 0;
        if (!HR_FAILED(mdi_get_type_spec(mdi, t, &sig, &n)))
            sig_type(r, mdi, &sig, sig + n, out, size, 0);
    }
    if (!out[0])
        snprintf(out, size, "<token 0x%08x>", t);
}

static void site_type_name(hl_rejit *r, IMetaDataImport *mdi, const hl_il_site *s, char *out,
                           size_t size) {
    mdToken t = s->token;
    if (s->kind == HL_IL_SITE_NEWOBJ) {
        WCHAR w[NAME_MAX_BYTES];
        ULONG n;
        t = 0;
        if ((s->token >> 24) == 0x06)
            mdi_get_method_props(mdi, s->token, &t, w, NAME_MAX_BYTES, &n);
        else if ((s->token >> 24) == 0x0A)
            mdi_get_member_ref_props(mdi, s->token, &t);
    }
    type_name(r, mdi, t, out, size);
    if (s->kind == HL_IL_SITE_NEWARR)
        put(out, size, "[]");
}

/* ---- modules ------------------------------------------------------------------------------ */

/* The token of Interlocked.Increment(ref long) in the module: CoreLib's own MethodDef, else a
 * MemberRef through an AssemblyRef to System.Private.CoreLib (defined once, then applied). */
static uint32_t increment_token(hl_rejit *r, rejit_module *m) {
    static const uint8_t sig[] = {0x00, 0x01, ELEMENT_TYPE_I8, 0x10, ELEMENT_TYPE_I8};
    WCHAR w[64];
    mdTypeDef td;
    if (m->increment)
        return m->increment;
    ascii_to_utf16(w, 64, "System.Threading.Interlocked");
    if (mdi_find_type_def_by_name(m->mdi, w, 0, &td) == S_OK) {
        mdToken md;
        WCHAR name[16];
        ascii_to_utf16(name, 16, "Increment");
        if (mdi_find_method(m->mdi, td, name, sig, sizeof sig, &md) == S_OK)
            m->increment = md;
        return m->increment;
    }
    IUnknown *emit = NULL, *asm_emit = NULL;
    if (HR_FAILED(clr_query_interface(m->mdi, &IID_IMetaDataEmit, (void **)&emit)) ||
        HR_FAILED(clr_query_interface(m->mdi, &IID_IMetaDataAssemblyEmit, (void **)&asm_emit)))
        goto out;
    static const uint8_t corelib_key[] = {0x7c, 0xec, 0x85, 0xd7, 0xbe, 0xa7, 0x79, 0x8e};
    ASSEMBLYMETADATA amd = {.major = 4};
    WCHAR corelib[32], name[16];
    ascii_to_utf16(corelib, 32, "System.Private.CoreLib");
    ascii_to_utf16(name, 16, "Increment");
    mdToken ar, tr, mr;
    /* A later session finds them defined already: META_S_DUPLICATE, a success with the token */
    if (!HR_FAILED(mdae_define_assembly_ref(asm_emit, corelib_key, sizeof corelib_key, corelib,
                                            &amd, &ar)) &&
        !HR_FAILED(mde_define_type_ref_by_name(emit, ar, w, &tr)) &&
        !HR_FAILED(mde_define_member_ref(emit, tr, name, sig, sizeof sig, &mr)) &&
        (r->info_version < 7 || !HR_FAILED(info_apply_metadata(r->info, m->id))))
        m->increment = mr;
out:
    if (emit)
        clr_release(emit);
    if (asm_emit)
        clr_release(asm_emit);
    return m->increment;
}

/* The edit distance between `pattern` (its '*' left out) and `name`, or `bound` when it is at
 * least that: names much longer or shorter are not compared at all. */
static size_t edit_distance(const char *pattern, const char *name, size_t bound) {
    char p[NAME_MAX_BYTES];
    size_t np = 0, nn = strlen(name);
    for (const char *c = pattern; *c && np + 1 < sizeof p; c++)
        if (*c != '*')
            p[np++] = *c;
    if (nn >= NAME_MAX_BYTES || (np > nn ? np - nn : nn - np) >= bound)
        return bound;
    size_t row[NAME_MAX_BYTES + 1];
    for (size_t j = 0; j <= nn; j++)
        row[j] = j;
    for (size_t i = 1; i <= np; i++) {
        size_t diag = row[0], best = row[0] = i;
        for (size_t j = 1; j <= nn; j++) {
            size_t up = row[j];
            size_t v = diag + (p[i - 1] != name[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        if (best >= bound)
            return bound;
    }
    return row[nn] < bound ? row[nn] : bound;
}

/* Whether a method's name matches any pattern (each pattern counts its matches). */
static bool matches(hl_rejit *r, const char *name) {
    bool any = false;
    for (size_t i = 0; i < r->n_patterns; i++)
        if (fnmatch(r->patterns[i], name, 0) == 0) {
            r->pstate[i].matched++;
            any = true;
        }
    return any;
}

typedef struct counters_ctx {
    void *block;
} counters_ctx;

static uint64_t counters_alloc(void *ctx, const hl_il_site *sites, size_t n) {
    (void)sites;
    counters_ctx *cc = ctx;
    cc->block = hl_mem_calloc(1, (n + 1) * HL_IL_COUNTER_STRIDE);
    if (!cc->block)
        return 0;
    uintptr_t a = ((uintptr_t)cc->block + HL_IL_COUNTER_STRIDE - 1) &
                  ~(uintptr_t)(HL_IL_COUNTER_STRIDE - 1);
    return (uint64_t)a;
}

/* Rewrites one matched method into *m (its refusal reason when it cannot be counted). */
static void method_prepare(hl_rejit *r, size_t mi, mdToken md, const char *name,
                           rejit_method *m) {
    rejit_module *mod = &r->modules[mi];
    *m = (rejit_method){.module = mod->id, .token = md, .module_index = mi, .name = dup_str(name)};
    if (!mod->writable) {
        m->refused = HL_COUNT_REFUSED_MODULE;
        return;
    }
    const uint8_t *body = NULL;
    ULONG size = 0;
    if (HR_FAILED(info_get_il_function_body(r->info, mod->id, md, &body, &size)) || !body) {
        m->refused = HL_COUNT_REFUSED_NO_BODY;
        return;
    }
    uint32_t inc = increment_token(r, mod);
    if (!inc) {
        m->refused = HL_COUNT_REFUSED_MODULE;
        return;
    }
    resolve_ctx rc = {r, mod->mdi};
    counters_ctx cc = {0};
    hl_il_rewrite_params p = {.body = body, .body_size = size, .increment_token = inc,
                              .resolve = resolve, .resolve_ctx = &rc,
                              .counters = counters_alloc, .counters_ctx = &cc};
    hl_il_rewrite_result res;
    int rc_ = hl_il_rewrite(&p, &res);
    if (rc_ != HL_IL_OK) {
        hl_mem_free(cc.block);
        m->refused = rc_ == HL_IL_E_TOO_BIG ? HL_COUNT_REFUSED_TOO_BIG : HL_COUNT_REFUSED_MALFORMED;
        return;
    }
    if (res.n_sites == 0) {
        m->refused = HL_COUNT_REFUSED_NO_SITE;
        return;
    }
    m->body = res.body;
    m->body_size = res.body_size;
    m->sites = res.sites;
    m->n_sites = res.n_sites;
    m->counters = (uint64_t *)(uintptr_t)res.counters; /* cc.block is kept: never freed */
    m->types = hl_mem_calloc(res.n_sites, sizeof *m->types);
    for (size_t k = 0; m->types && k < res.n_sites; k++) {
        char t[NAME_MAX_BYTES];
        site_type_name(r, mod->mdi, &res.sites[k], t, sizeof t);
        m->types[k] = dup_str(t);
    }
}

/* Calls fn(ctx, method token, 'Namespace.Type.Method') for every method of a module. */
static void module_methods(IMetaDataImport *mdi, void (*fn)(void *, mdToken, const char *),
                           void *ctx) {
    HCORENUM types = NULL;
    mdTypeDef tds[64];
    ULONG got = 0;
    while (mdi_enum_type_defs(mdi, &types, tds, 64, &got) == S_OK && got) {
        for (ULONG t = 0; t < got; t++) {
            char type[NAME_MAX_BYTES];
            if (!hl_typedef_name(mdi, tds[t], type, sizeof type))
                continue;
            HCORENUM methods = NULL;
            mdToken mds[64];
            ULONG k = 0;
            while (mdi_enum_methods(mdi, &methods, tds[t], mds, 64, &k) == S_OK && k) {
                for (ULONG j = 0; j < k; j++) {
                    WCHAR w[NAME_MAX_BYTES];
                    ULONG wn = 0, rva = 0;
                    DWORD attr = 0, impl = 0;
                    mdTypeDef cls;
                    if (HR_FAILED(mdi_get_method_props_full(mdi, mds[j], &cls, w,
                                                            NAME_MAX_BYTES, &wn, &attr, &rva,
                                                            &impl)))
                        continue;
                    char method[NAME_MAX_BYTES], name[2 * NAME_MAX_BYTES + 2];
                    hl_utf16_name(method, sizeof method, w, wn);
                    snprintf(name, sizeof name, "%s.%s", type, method);
                    fn(ctx, mds[j], name);
                }
            }
            mdi_close_enum(mdi, methods);
        }
    }
    mdi_close_enum(mdi, types);
}

typedef struct found {
    mdToken token;
    char *name;
} found;
typedef struct scan_ctx {
    hl_rejit *r;
    found *matched;
    size_t n, cap;
} scan_ctx;

static void scan_method(void *ctx, mdToken md, const char *name) {
    scan_ctx *sc = ctx;
    if (!matches(sc->r, name))
        return;
    found *f = grow(sc->matched, &sc->cap, sc->n, sizeof *f);
    char *copy = dup_str(name);
    if (!f || !copy) {
        hl_mem_free(copy);
        if (f)
            sc->matched = f;
        return;
    }
    sc->matched = f;
    sc->matched[sc->n++] = (found){md, copy};
}

/* The closest names of the patterns that matched nothing: every module's methods again (once,
 * at the end: the scan at load time stays a match per method, so that module loads wait less). */
static void closest_method(void *ctx, mdToken md, const char *name) {
    (void)md;
    hl_rejit *r = ctx;
    for (size_t i = 0; i < r->n_patterns; i++) {
        pattern_state *ps = &r->pstate[i];
        if (ps->matched)
            continue;
        size_t worst = 0;
        for (size_t k = 1; k < CLOSEST; k++)
            if (!ps->closest[k] || (ps->closest[worst] && ps->score[k] > ps->score[worst]))
                worst = k;
        size_t bound = ps->closest[worst] ? ps->score[worst] : SIZE_MAX;
        size_t score = edit_distance(r->patterns[i], name, bound);
        if (score >= bound)
            continue;
        bool seen = false; /* overloads share a name */
        for (size_t k = 0; k < CLOSEST && !seen; k++)
            seen = ps->closest[k] && strcmp(ps->closest[k], name) == 0;
        char *copy = seen ? NULL : dup_str(name);
        if (!copy)
            continue;
        hl_mem_free(ps->closest[worst]);
        ps->closest[worst] = copy;
        ps->score[worst] = score;
    }
}

/* Opens a module, finds its matching methods, prepares them and asks for their recompilation. */
static void module_process(hl_rejit *r, ModuleID id) {
    for (size_t i = 0; i < r->n_modules; i++)
        if (r->modules[i].id == id)
            return;
    WCHAR path[1024];
    ULONG n = 0;
    DWORD flags = 0;
    if (HR_FAILED(info_get_module_info2(r->info, id, path, 1024, &n, &flags)))
        return;
    rejit_module m = {.id = id};
    char full[1024];
    hl_utf16_name(full, sizeof full, path, n < 1024 ? n : 1024);
    const char *slash = strrchr(full, '/'), *base = slash ? slash + 1 : full;
    size_t len = strnlen(base, sizeof m.name - 1);
    memcpy(m.name, base, len);
    m.name[len] = 0;
    m.writable = !(flags & (COR_PRF_MODULE_DYNAMIC | COR_PRF_MODULE_COLLECTIBLE));
    if (flags & COR_PRF_MODULE_RESOURCE ||
        HR_FAILED(info_get_module_metadata(r->info, id, ofRead | (m.writable ? ofWrite : 0),
                                           &IID_IMetaDataImport, (IUnknown **)&m.mdi)))
        m.mdi = NULL;
    pthread_mutex_lock(&r->lock);
    rejit_module *mods = grow(r->modules, &r->cap_modules, r->n_modules, sizeof *mods);
    if (mods) {
        r->modules = mods;
        mods[r->n_modules++] = m;
    }
    pthread_mutex_unlock(&r->lock);
    if (!mods || !m.mdi)
        return;
    size_t mi = r->n_modules - 1;
    size_t first = r->n_methods;
    uint64_t t0 = hl_now_ns();

    scan_ctx sc = {r, NULL, 0, 0};
    module_methods(m.mdi, scan_method, &sc);
    found *matched = sc.matched;
    size_t n_matched = sc.n;
    /* Prepared after the enumeration: defining the probe's MemberRef changes the metadata under
     * an open enumerator (measured: a crash in the next EnumTypeDefs). */
    for (size_t i = 0; i < n_matched; i++) {
        rejit_method rm;
        method_prepare(r, mi, matched[i].token, matched[i].name, &rm);
        hl_mem_free(matched[i].name);
        pthread_mutex_lock(&r->lock);
        rejit_method *ms = grow(r->methods, &r->cap_methods, r->n_methods, sizeof *ms);
        if (ms) {
            r->methods = ms;
            ms[r->n_methods++] = rm;
        } else {
            hl_mem_free(rm.name);
        }
        pthread_mutex_unlock(&r->lock);
    }
    hl_mem_free(matched);
    /* One request for the module's counted methods. */
    size_t n_req = 0;
    for (size_t i = first; i < r->n_methods; i++)
        n_req += r->methods[i].refused == 0;
    if (!n_req)
        return;
    ModuleID *ids = hl_mem_malloc(n_req * sizeof *ids);
    mdToken *tokens = hl_mem_malloc(n_req * sizeof *tokens);
    if (ids && tokens) {
        size_t k = 0;
        for (size_t i = first; i < r->n_methods; i++)
            if (r->methods[i].refused == 0)
                ids[k] = id, tokens[k++] = r->methods[i].token;
        HRESULT hr = r->info_version >= 10
                         ? info_request_rejit_with_inliners(r->info, COR_PRF_REJIT_BLOCK_INLINING,
                                                            (ULONG)n_req, ids, tokens)
                         : info_request_rejit(r->info, (ULONG)n_req, ids, tokens);
        if (HR_FAILED(hr))
            for (size_t i = first; i < r->n_methods; i++)
                if (r->methods[i].refused == 0)
                    r->methods[i].refused = HL_COUNT_REFUSED_REJIT;
        uint64_t took = hl_now_ns() - t0;
        r->request_ns_total += took;
        r->requests++;
        if (took > r->request_ns_max)
            r->request_ns_max = took;
    }
    hl_mem_free(ids);
    hl_mem_free(tokens);
}

static void *rejit_thread(void *arg) {
    hl_rejit *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->begun && !r->stop)
        pthread_cond_wait(&r->wake, &r->lock);
    pthread_mutex_unlock(&r->lock);
    /* Modules loaded before us (CoreLib at least at startup; every one after an attach): their
     * methods, and their types to resolve references. */
    IUnknown *e = NULL;
    if (info_enum_modules(r->info, &e) == S_OK && e) {
        ModuleID ids[64];
        ULONG got = 0;
        /* S_FALSE with the last, shorter batch */
        while (!HR_FAILED(module_enum_next(e, 64, ids, &got)) && got)
            for (ULONG i = 0; i < got && !r->stop; i++)
                module_process(r, ids[i]);
        clr_release(e);
    }
    pthread_mutex_lock(&r->lock);
    r->initial_done = true;
    pthread_cond_broadcast(&r->processed);
    for (;;) {
        while (!r->n_queue && !r->stop)
            pthread_cond_wait(&r->wake, &r->lock);
        if (r->stop)
            break;
        ModuleID id = r->queue[0];
        memmove(r->queue, r->queue + 1, --r->n_queue * sizeof *r->queue);
        pthread_mutex_unlock(&r->lock);
        module_process(r, id);
        pthread_mutex_lock(&r->lock);
        r->done_seq++;
        pthread_cond_broadcast(&r->processed);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

hl_rejit *hl_rejit_start(void *info, int info_version, const char *patterns, bool deferred) {
    if (!patterns || !*patterns || info_version < 4)
        return NULL;
    hl_rejit *r = hl_mem_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->info = info;
    r->info_version = info_version;
    r->begun = !deferred;
    for (const char *s = patterns; *s;) {
        size_t len = strcspn(s, ";");
        if (len) {
            char **p = hl_mem_realloc(r->patterns, (r->n_patterns + 1) * sizeof *p);
            char *pat = hl_mem_malloc(len + 1);
            if (!p || !pat) {
                hl_mem_free(pat);
                if (p)
                    r->patterns = p;
                break;
            }
            memcpy(pat, s, len);
            pat[len] = 0;
            r->patterns = p;
            r->patterns[r->n_patterns++] = pat;
        }
        s += len + (s[len] == ';');
    }
    r->pstate = hl_mem_calloc(r->n_patterns ? r->n_patterns : 1, sizeof *r->pstate);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->processed, &ca);
    pthread_condattr_destroy(&ca);
    if (!r->n_patterns || !r->pstate ||
        pthread_create(&r->thread, NULL, rejit_thread, r) != 0) {
        for (size_t i = 0; i < r->n_patterns; i++)
            hl_mem_free(r->patterns[i]);
        hl_mem_free(r->patterns);
        hl_mem_free(r->pstate);
        hl_mem_free(r);
        return NULL;
    }
    pthread_setname_np(r->thread, "heaplens-rejit");
    r->started = true;
    return r;
}

void hl_rejit_begin(hl_rejit *r) {
    if (!r || !r->started)
        return;
    pthread_mutex_lock(&r->lock);
    r->begun = true;
    pthread_cond_broadcast(&r->wake);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 30;
    while (!r->initial_done && !r->stop &&
           pthread_cond_timedwait(&r->processed, &r->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&r->lock);
}

void hl_rejit_revert(hl_rejit *r) {
    if (!r)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->n_methods; i++)
        n += r->methods[i].refused == 0;
    if (!n)
        return;
    ModuleID *ids = hl_mem_malloc(n * sizeof *ids);
    mdToken *tokens = hl_mem_malloc(n * sizeof *tokens);
    HRESULT *status = hl_mem_malloc(n * sizeof *status);
    if (ids && tokens && status) {
        size_t k = 0;
        for (size_t i = 0; i < r->n_methods; i++)
            if (r->methods[i].refused == 0)
                ids[k] = r->methods[i].module, tokens[k++] = r->methods[i].token;
        info_request_revert(r->info, (ULONG)n, ids, tokens, status);
    }
    hl_mem_free(ids);
    hl_mem_free(tokens);
    hl_mem_free(status);
}

void hl_rejit_unsupported(hl_rejit *r) {
    if (!r)
        return;
    hl_rejit_stop(r);
    r->unsupported = true;
}

void hl_rejit_stop(hl_rejit *r) {
    if (!r || !r->started)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_signal(&r->wake);
    pthread_cond_broadcast(&r->processed); /* loading threads and hl_rejit_begin stop waiting */
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    r->started = false;
}

void hl_rejit_module_loaded(hl_rejit *r, ModuleID module, bool wait) {
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    ModuleID *q = grow(r->queue, &r->cap_queue, r->n_queue, sizeof *q);
    if (q) {
        r->queue = q;
        q[r->n_queue++] = module;
        uint64_t seq = ++r->queued_seq;
        pthread_cond_signal(&r->wake);
        /* At startup the module's methods have not run yet: waiting until their recompilation
         * is requested counts them from their first call. Bounded: should the request ever
         * need this thread, the module's first calls go uncounted instead of a hang. */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        uint64_t t0 = hl_now_ns();
        until.tv_sec += HL_REJIT_MODULE_WAIT_S;
        while (wait && !r->stop && r->done_seq < seq &&
               pthread_cond_timedwait(&r->processed, &r->lock, &until) == 0)
            ;
        uint64_t waited = hl_now_ns() - t0;
        if (wait && waited > r->wait_ns_max)
            r->wait_ns_max = waited;
    }
    pthread_mutex_unlock(&r->lock);
}

HRESULT hl_rejit_parameters(hl_rejit *r, ModuleID module, mdToken method, void *fc) {
    if (!r)
        return S_OK;
    const uint8_t *body = NULL;
    size_t size = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_methods; i++)
        if (r->methods[i].module == module && r->methods[i].token == method) {
            body = r->methods[i].body;
            size = r->methods[i].body_size;
            break;
        }
    pthread_mutex_unlock(&r->lock);
    if (!body)
        return S_OK; /* not ours (an inliner rejitted with it): its own IL */
    atomic_fetch_add(&r->handed, 1);
    return function_control_set_il(fc, (ULONG)size, body);
}

void hl_rejit_error(hl_rejit *r, ModuleID module, mdToken method, HRESULT status) {
    (void)status;
    if (!r)
        return;
    atomic_fetch_add(&r->errors, 1);
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_methods; i++)
        if (r->methods[i].module == module && r->methods[i].token == method)
            r->methods[i].refused = HL_COUNT_REFUSED_REJIT;
    pthread_mutex_unlock(&r->lock);
}

void hl_rejit_send(struct collector *c, hl_rejit *r) {
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_methods; i++) {
        const rejit_method *m = &r->methods[i];
        const char *module = r->modules[m->module_index].name;
        char text[4 * NAME_MAX_BYTES];
        if (m->refused) {
            hl_count_site s = {.il_offset = m->refused, .method_token = m->token,
                               .kind = HL_COUNT_KIND_REFUSED};
            snprintf(text, sizeof text, "%s\n%s\n", module, m->name ? m->name : "?");
            hl_collector_put_str(c, HL_REC_COUNT_SITE, &s, sizeof s, text);
            continue;
        }
        for (size_t k = 0; k < m->n_sites; k++) {
            const hl_il_site *site = &m->sites[k];
            uint64_t *counter = (uint64_t *)((char *)m->counters + k * HL_IL_COUNTER_STRIDE);
            hl_count_site s = {
                .count = __atomic_load_n(counter, __ATOMIC_RELAXED),
                .il_offset = site->il_offset, .method_token = m->token, .kind = site->kind,
                .flags = (uint8_t)((site->flags & HL_IL_SITE_MAY_ELIDE ? HL_COUNT_FLAG_MAY_ELIDE
                                                                       : 0) |
                                   (site->flags & HL_IL_SITE_GENERIC ? HL_COUNT_FLAG_MAYBE : 0))};
            snprintf(text, sizeof text, "%s\n%s\n%s", module, m->name ? m->name : "?",
                     m->types && m->types[k] ? m->types[k] : "?");
            hl_collector_put_str(c, HL_REC_COUNT_SITE, &s, sizeof s, text);
        }
    }
    if (r->unsupported) { /* one refusal per pattern: nothing was scanned */
        for (size_t i = 0; i < r->n_patterns; i++) {
            char text[NAME_MAX_BYTES + 4];
            snprintf(text, sizeof text, "\n%s\n", r->patterns[i]);
            hl_count_site s = {.il_offset = HL_COUNT_REFUSED_NO_REJIT,
                               .kind = HL_COUNT_KIND_REFUSED};
            hl_collector_put_str(c, HL_REC_COUNT_SITE, &s, sizeof s, text);
        }
        pthread_mutex_unlock(&r->lock);
        return;
    }
    /* Patterns that matched nothing, with the closest names (the rejit thread has stopped:
     * the modules and the pattern states are ours now). */
    bool unmatched = false;
    for (size_t i = 0; i < r->n_patterns; i++)
        unmatched |= r->pstate[i].matched == 0;
    for (size_t m = 0; unmatched && m < r->n_modules; m++)
        if (r->modules[m].mdi)
            module_methods(r->modules[m].mdi, closest_method, r);
    for (size_t i = 0; i < r->n_patterns; i++) {
        const pattern_state *ps = &r->pstate[i];
        if (ps->matched)
            continue;
        char text[4 * NAME_MAX_BYTES];
        int n = snprintf(text, sizeof text, "\n%s\n", r->patterns[i]);
        bool used[CLOSEST] = {false};
        for (size_t round = 0; round < CLOSEST && n > 0 && (size_t)n < sizeof text; round++) {
            size_t best = CLOSEST; /* the closest not written yet */
            for (size_t k = 0; k < CLOSEST; k++)
                if (ps->closest[k] && !used[k] && (best == CLOSEST || ps->score[k] < ps->score[best]))
                    best = k;
            if (best == CLOSEST)
                break;
            used[best] = true;
            n += snprintf(text + n, sizeof text - (size_t)n, "%s%s",
                          text[n - 1] == '\n' ? "" : ", ", ps->closest[best]);
        }
        hl_count_site s = {.il_offset = HL_COUNT_REFUSED_NO_MATCH,
                           .kind = HL_COUNT_KIND_REFUSED};
        hl_collector_put_str(c, HL_REC_COUNT_SITE, &s, sizeof s, text);
    }
    const char *stats = getenv("HEAPLENS_STATS");
    if (stats && strcmp(stats, "1") == 0) {
        size_t sites = 0, counted = 0;
        for (size_t i = 0; i < r->n_methods; i++)
            if (!r->methods[i].refused)
                sites += r->methods[i].n_sites, counted++;
        fprintf(stderr,
                "heaplens: rejit: %zu sites in %zu methods, %" PRIuFAST64 " bodies handed over, "
                "%" PRIuFAST64 " errors; scan to request %.3f ms at most (%.3f ms in all, %" PRIu64
                " requests); module loads waited %.3f ms at most\n",
                sites, counted, atomic_load(&r->handed), atomic_load(&r->errors),
                r->request_ns_max / 1e6, r->request_ns_total / 1e6, r->requests,
                r->wait_ns_max / 1e6);
    }
    pthread_mutex_unlock(&r->lock);
}
