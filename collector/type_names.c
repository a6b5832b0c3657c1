/* type_names.c — see type_names.h. Recipe: IsArrayClass for arrays; otherwise GetClassIDInfo2
 * (module, typedef token, type arguments) -> IMetaDataImport::GetTypeDefProps for the name and
 * GetNestedClassProps for enclosing types. */
#include "collector/mem.h"
#include "collector/type_names.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/hl_wire.h"

#define MAX_DEPTH 8    /* generic arguments nested deeper than this are shown as "..." */
#define MAX_HIDDEN_DEPTH 32 /* ... and hashed (name_buf.hidden) this much deeper still */
#define MAX_ARGS 32    /* type arguments asked for on the stack; more from the heap */
#define NAME_UNITS 512 /* a metadata name's UTF-16 units read on the stack (a type's longer one again
                        * from the heap: put_typedef; a method's or a field's is cut there) */

/* FNV-1a, 64 bits: the whole name's hash in a cut name's mark (name_buf_mark_cut). */
#define NAME_HASH_SEED 0xcbf29ce484222325ull
#define NAME_HASH_PRIME 0x100000001b3ull

typedef struct name_buf {
    char *p;
    size_t size, len;
    bool full; /* something was cut: nothing more is added (a later "," or ">" would not say so) */
    bool shortened; /* something was left out ("..." for arguments nested too deep): marked as
                     * cut, so that the hash of all of it keeps two such names apart */
    int hidden;     /* > 0: inside what "..." stands for: hashed, not written */
    uint64_t hash; /* of every byte offered, kept or cut: the whole name's (NAME_HASH_SEED first) */
} name_buf;

/* Adds all of s or, when it does not fit, as much of it as fits and nothing after. Each piece
 * is ASCII or one whole UTF-8 character (put_utf16_name), so a character is never cut in two
 * (a name stays valid UTF-8; its first bytes alone were a name no reader could decode). Every
 * byte goes into the hash, also those that no longer fit. */
static void put(name_buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        b->hash = (b->hash ^ (unsigned char)s[i]) * NAME_HASH_PRIME;
    if (b->hidden > 0)
        return;
    bool character = n > 1 && ((unsigned char)s[0] & 0x80);
    if (b->full || (character && b->len + n + 1 > b->size)) {
        b->full = true;
        return;
    }
    size_t i = 0;
    for (; i < n && b->len + 1 < b->size; i++)
        b->p[b->len++] = s[i];
    b->full = i < n;
    b->p[b->len] = 0;
}
static void puts_(name_buf *b, const char *s) { put(b, s, strlen(s)); }

/* A name that did not fit ends in HL_NAME_CUT_MARK and its whole name's hash, in place of its
 * last bytes (cut before a whole UTF-8 character): visibly cut, and two names that share the
 * bytes that fit (types, or methods, whose names differ only past 4 KiB) still differ, the same
 * way in every recording (a hash of the name, not of the runtime's ids: `leaks --with` and `diff
 * --to-file` match types by name across files). A buffer too small for the mark is left cut. */
static void name_buf_mark_cut(name_buf *b) {
    char mark[64];
    int m = snprintf(mark, sizeof mark, HL_NAME_CUT_MARK "%016llx)", (unsigned long long)b->hash);
    if ((!b->full && !b->shortened) || m <= 0 || (size_t)m + 1 > b->size)
        return;
    size_t keep = b->len + (size_t)m + 1 <= b->size ? b->len : b->size - (size_t)m - 1;
    while (keep > 0 && ((unsigned char)b->p[keep] & 0xC0) == 0x80)
        keep--; /* not inside a character: back to its first byte */
    memcpy(b->p + keep, mark, (size_t)m + 1);
    b->len = keep + (size_t)m;
}

/* UTF-16 to UTF-8, dropping the generic arity suffix ("List`1" -> "List"). */
static void put_utf16_name(name_buf *b, const WCHAR *w, size_t n) {
    for (size_t i = 0; i < n && w[i]; i++) {
        uint32_t c = w[i];
        if (c == '`') {
            while (i + 1 < n && w[i + 1] >= '0' && w[i + 1] <= '9')
                i++;
            continue;
        }
        if (c >= 0xD800 && c < 0xDC00 && i + 1 < n && w[i + 1] >= 0xDC00 && w[i + 1] < 0xE000)
            c = 0x10000 + ((c - 0xD800) << 10) + (w[++i] - 0xDC00);
        char u[4];
        size_t k;
        if (c < 0x80) {
            u[0] = (char)c, k = 1;
        } else if (c < 0x800) {
            u[0] = (char)(0xC0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3F)), k = 2;
        } else if (c < 0x10000) {
            u[0] = (char)(0xE0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
            u[2] = (char)(0x80 | (c & 0x3F)), k = 3;
        } else {
            u[0] = (char)(0xF0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
            u[2] = (char)(0x80 | ((c >> 6) & 0x3F)), u[3] = (char)(0x80 | (c & 0x3F)), k = 4;
        }
        put(b, u, k);
    }
}

void hl_type_names_init(hl_type_names *t, ICorProfilerInfo *info) {
    memset(t, 0, sizeof *t);
    t->info = info;
}

void hl_type_names_release(hl_type_names *t) {
    for (size_t i = 0; i < t->n_modules; i++)
        if (t->modules[i].mdi)
            clr_release(t->modules[i].mdi);
    hl_mem_free(t->modules);
    memset(t, 0, sizeof *t);
}

static IMetaDataImport *module_metadata(hl_type_names *t, ModuleID module) {
    for (size_t i = 0; i < t->n_modules; i++)
        if (t->modules[i].module == module)
            return t->modules[i].mdi;
    IUnknown *mdi = NULL;
    if (HR_FAILED(info_get_module_metadata(t->info, module, ofRead, &IID_IMetaDataImport, &mdi)))
        mdi = NULL;
    if (t->n_modules == t->cap_modules) {
        size_t cap = t->cap_modules ? t->cap_modules * 2 : 32;
        void *grown = hl_mem_realloc(t->modules, cap * sizeof *t->modules);
        if (!grown)
            return mdi; /* not cached; leaks one reference, harmless */
        t->modules = grown;
        t->cap_modules = cap;
    }
    t->modules[t->n_modules].module = module;
    t->modules[t->n_modules].mdi = mdi;
    t->n_modules++;
    return mdi;
}

/* The arity suffix of a metadata name ("Dictionary`2" -> 2; 0 without one). */
static uint32_t utf16_name_arity(const WCHAR *w, size_t n) {
    uint32_t arity = 0;
    for (size_t i = 0; i < n && w[i]; i++) {
        if (w[i] != '`')
            continue;
        arity = 0;
        for (i++; i < n && w[i] >= '0' && w[i] <= '9'; i++)
            arity = arity * 10 + (uint32_t)(w[i] - '0');
        i--;
    }
    return arity;
}

static bool put_class(hl_type_names *t, name_buf *b, ClassID c, int depth, uint32_t *flags);

/* Reads the type arguments of a class or a method `id` again (GetClassIDInfo2 or
 * GetFunctionInfo2): `capacity` of them into `args`, how many there are in *n. */
typedef HRESULT (*type_args_read_fn)(hl_type_names *t, uintptr_t id, uint32_t capacity,
                                     uint32_t *n, ClassID *args);

static HRESULT class_args_read(hl_type_names *t, uintptr_t id, uint32_t capacity, uint32_t *n,
                               ClassID *args) {
    ModuleID module = 0;
    mdTypeDef td = 0;
    ClassID parent = 0;
    return info_get_class_id_info2(t->info, (ClassID)id, &module, &td, &parent, capacity, n, args);
}

static HRESULT method_args_read(hl_type_names *t, uintptr_t id, uint32_t capacity, uint32_t *n,
                                ClassID *args) {
    ClassID cls = 0;
    ModuleID module = 0;
    mdToken token = 0;
    return info_get_function_info2(t->info, (FunctionID)id, &cls, &module, &token, capacity, n,
                                   args);
}

/* The type arguments to name, when the first call read at most MAX_ARGS into `stack_args` and
 * said there are *n_args: more than that are read again, all of them, into *heap (freed by the
 * caller), so that two names that differ past the 32nd stay two. Without the memory (or when
 * the second read disagrees) the first MAX_ARGS, and the name is marked as cut (its mark says
 * something was left out). */
static const ClassID *type_args_all(hl_type_names *t, name_buf *b, type_args_read_fn read,
                                    uintptr_t id, const ClassID *stack_args, uint32_t *n_args,
                                    ClassID **heap) {
    uint32_t n_all = *n_args, n_read = 0;
    *heap = NULL;
    if (n_all <= MAX_ARGS)
        return stack_args;
    if ((*heap = hl_mem_malloc((size_t)n_all * sizeof **heap)) &&
        !HR_FAILED(read(t, id, n_all, &n_read, *heap)) && n_read == n_all)
        return *heap;
    *n_args = MAX_ARGS;
    b->shortened = true;
    return stack_args;
}

static void put_type_args(hl_type_names *t, name_buf *b, const ClassID *args, uint32_t n,
                          int depth, uint32_t *flags) {
    puts_(b, "<");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            puts_(b, ", ");
        if (!put_class(t, b, args[i], depth + 1, flags))
            puts_(b, "?");
    }
    puts_(b, ">");
}

/* Appends "Outer<A>+Inner<B>" for a typedef, namespace included on the outermost: as C#
 * reflection, ClrMD and SOS write it. A nested type of a generic type carries the type
 * arguments of every enclosing level (metadata gives them all to the innermost); each level
 * takes as many as its arity suffix says, in order, and the innermost the rest. */
static bool put_typedef(hl_type_names *t, name_buf *b, IMetaDataImport *mdi, mdTypeDef td,
                        const ClassID *args, uint32_t n_args, int depth, uint32_t *flags) {
    mdTypeDef chain[MAX_DEPTH + 1];
    size_t levels = 0;
    chain[levels++] = td;
    for (mdTypeDef cur = td; levels <= MAX_DEPTH;) {
        WCHAR w[NAME_UNITS];
        ULONG n = 0;
        DWORD td_flags = 0;
        mdToken extends = 0;
        if (HR_FAILED(mdi_get_type_def_props(mdi, cur, w, NAME_UNITS, &n, &td_flags, &extends)))
            return false;
        mdTypeDef outer = 0;
        if (!(td_flags & tdNestedMask) || HR_FAILED(mdi_get_nested_class_props(mdi, cur, &outer)) ||
            !outer)
            break;
        chain[levels++] = cur = outer;
    }
    uint32_t used = 0;
    for (size_t level = levels; level-- > 0;) { /* outermost first */
        WCHAR stack_w[NAME_UNITS], *w = stack_w, *heap_w = NULL;
        ULONG n = 0;
        DWORD td_flags = 0;
        mdToken extends = 0;
        if (HR_FAILED(mdi_get_type_def_props(mdi, chain[level], w, NAME_UNITS, &n, &td_flags,
                                             &extends)))
            return false;
        /* A longer name (n: its length with the NUL) whole, from the heap: two names that
         * differ past 512 characters stay two. */
        if (n > NAME_UNITS && (heap_w = hl_mem_malloc((size_t)n * sizeof *heap_w)) != NULL &&
            !HR_FAILED(mdi_get_type_def_props(mdi, chain[level], heap_w, n, &n, &td_flags,
                                              &extends)))
            w = heap_w;
        else
            n = n < NAME_UNITS ? n : NAME_UNITS;
        if (level + 1 < levels)
            puts_(b, "+");
        put_utf16_name(b, w, n);
        uint32_t arity = level == 0 ? n_args - used : utf16_name_arity(w, n);
        hl_mem_free(heap_w);
        if (arity > 0 && arity <= n_args - used) {
            put_type_args(t, b, args + used, arity, depth, flags);
            used += arity;
        }
    }
    return true;
}

static const char *primitive_name(uint32_t elem) {
    switch (elem) {
    case ELEMENT_TYPE_BOOLEAN: return "System.Boolean";
    case ELEMENT_TYPE_CHAR: return "System.Char";
    case ELEMENT_TYPE_I1: return "System.SByte";
    case ELEMENT_TYPE_U1: return "System.Byte";
    case ELEMENT_TYPE_I2: return "System.Int16";
    case ELEMENT_TYPE_U2: return "System.UInt16";
    case ELEMENT_TYPE_I4: return "System.Int32";
    case ELEMENT_TYPE_U4: return "System.UInt32";
    case ELEMENT_TYPE_I8: return "System.Int64";
    case ELEMENT_TYPE_U8: return "System.UInt64";
    case ELEMENT_TYPE_R4: return "System.Single";
    case ELEMENT_TYPE_R8: return "System.Double";
    case ELEMENT_TYPE_STRING: return "System.String";
    case ELEMENT_TYPE_I: return "System.IntPtr";
    case ELEMENT_TYPE_U: return "System.UIntPtr";
    case ELEMENT_TYPE_OBJECT: return "System.Object";
    case ELEMENT_TYPE_PTR: return "System.Void*";
    default: return NULL;
    }
}

static bool put_array(hl_type_names *t, name_buf *b, ClassID elem_class, uint32_t elem_type,
                      ULONG rank, int depth, uint32_t *flags) {
    const char *prim = primitive_name(elem_type);
    bool ok = true;
    if (elem_class && elem_type != ELEMENT_TYPE_STRING && elem_type != ELEMENT_TYPE_OBJECT)
        ok = put_class(t, b, elem_class, depth + 1, flags);
    else if (prim)
        puts_(b, prim);
    else if (elem_class)
        ok = put_class(t, b, elem_class, depth + 1, flags);
    else
        ok = false;
    puts_(b, "[");
    for (ULONG i = 1; i < rank; i++)
        puts_(b, ",");
    puts_(b, "]");
    return ok;
}

static bool put_class_shown(hl_type_names *t, name_buf *b, ClassID c, int depth,
                            uint32_t *flags);

/* Arguments nested deeper than MAX_DEPTH are shown as "...", and what it stands for is hashed
 * (to MAX_HIDDEN_DEPTH deeper; past that, "..." alone): the name is marked as cut, so that two
 * types that differ only there keep two names. */
static bool put_class(hl_type_names *t, name_buf *b, ClassID c, int depth, uint32_t *flags) {
    if (depth <= MAX_DEPTH)
        return put_class_shown(t, b, c, depth, flags);
    if (!b->hidden) {
        puts_(b, "...");
        b->shortened = true;
    }
    if (depth <= MAX_DEPTH + MAX_HIDDEN_DEPTH) {
        b->hidden++;
        put_class_shown(t, b, c, depth, flags);
        b->hidden--;
    }
    return true;
}

static bool put_class_shown(hl_type_names *t, name_buf *b, ClassID c, int depth,
                            uint32_t *flags) {
    uint32_t elem_type = 0;
    ClassID elem_class = 0;
    ULONG rank = 0;
    if (info_is_array_class(t->info, c, &elem_type, &elem_class, &rank) == S_OK) {
        if (depth == 0)
            *flags |= HL_TYPE_FLAG_ARRAY |
                      (elem_type == ELEMENT_TYPE_VALUETYPE ? HL_TYPE_FLAG_VALUE_ELEMENTS : 0);
        return put_array(t, b, elem_class, elem_type, rank, depth, flags);
    }
    ModuleID module = 0;
    mdTypeDef td = 0;
    ClassID parent = 0, stack_args[MAX_ARGS], *heap_args = NULL;
    uint32_t n_args = 0;
    HRESULT hr =
        info_get_class_id_info2(t->info, c, &module, &td, &parent, MAX_ARGS, &n_args, stack_args);
    if (HR_FAILED(hr) || !module || !td)
        return false;
    const ClassID *args =
        type_args_all(t, b, class_args_read, (uintptr_t)c, stack_args, &n_args, &heap_args);
    IMetaDataImport *mdi = module_metadata(t, module);
    bool ok = mdi && put_typedef(t, b, mdi, td, args, n_args, depth, flags);
    hl_mem_free(heap_args);
    return ok;
}

uint32_t hl_type_name(hl_type_names *t, ClassID class_id, char *out, size_t size) {
    name_buf b = {.p = out, .size = size, .len = 0, .hash = NAME_HASH_SEED};
    uint32_t flags = 0;
    out[0] = 0;
    if (!put_class(t, &b, class_id, 0, &flags)) {
        snprintf(out, size, "<unknown 0x%llx>", (unsigned long long)class_id);
        flags |= HL_TYPE_FLAG_UNRESOLVED;
    } else {
        name_buf_mark_cut(&b);
    }
    return flags;
}

bool hl_method_name(hl_type_names *t, FunctionID function, char *out, size_t size) {
    name_buf b = {.p = out, .size = size, .len = 0, .hash = NAME_HASH_SEED};
    uint32_t flags = 0;
    out[0] = 0;
    ClassID cls = 0, args[MAX_ARGS], *heap_args = NULL;
    ModuleID module = 0;
    mdToken token = 0;
    uint32_t n_args = 0;
    if (HR_FAILED(info_get_function_info2(t->info, function, &cls, &module, &token, MAX_ARGS,
                                          &n_args, args)) || !module || !token)
        return false;
    IMetaDataImport *mdi = module_metadata(t, module);
    if (!mdi)
        return false;
    WCHAR w[NAME_UNITS];
    ULONG n = 0;
    mdTypeDef td = 0;
    if (HR_FAILED(mdi_get_method_props(mdi, token, &td, w, NAME_UNITS, &n)))
        return false;
    /* The declaring type: its instantiation when the runtime knows it, else the definition. */
    bool typed = cls && put_class(t, &b, cls, 1, &flags);
    if (!typed) { /* what put_class wrote, and what it marked, are undone */
        b = (name_buf){.p = out, .size = size, .len = 0, .hash = NAME_HASH_SEED};
        out[0] = 0;
        if (td && !put_typedef(t, &b, mdi, td, NULL, 0, 1, &flags))
            return false;
    }
    if (b.len)
        puts_(&b, ".");
    put_utf16_name(&b, w, n < NAME_UNITS ? n : NAME_UNITS);
    if (n_args > 0) {
        const ClassID *all = type_args_all(t, &b, method_args_read, (uintptr_t)function, args,
                                           &n_args, &heap_args);
        put_type_args(t, &b, all, n_args, 1, &flags);
        hl_mem_free(heap_args);
    }
    name_buf_mark_cut(&b);
    return true;
}

bool hl_typedef_name(IMetaDataImport *mdi, mdTypeDef td, char *out, size_t size) {
    name_buf b = {.p = out, .size = size, .len = 0};
    uint32_t flags = 0;
    if (size)
        out[0] = 0;
    return size && put_typedef(NULL, &b, mdi, td, NULL, 0, 0, &flags);
}

void hl_utf16_name(char *out, size_t size, const WCHAR *w, size_t n) {
    name_buf b = {.p = out, .size = size, .len = 0};
    if (size) {
        out[0] = 0;
        put_utf16_name(&b, w, n);
    }
}

bool hl_field_name(hl_type_names *t, ModuleID module, mdToken field, char *out, size_t size) {
    name_buf b = {.p = out, .size = size, .len = 0};
    out[0] = 0;
    IMetaDataImport *mdi = module_metadata(t, module);
    WCHAR w[NAME_UNITS];
    ULONG n = 0;
    if (!mdi || HR_FAILED(mdi_get_field_props(mdi, field, w, NAME_UNITS, &n)))
        return false;
    n = n < NAME_UNITS ? n : NAME_UNITS;
    /* An auto-property's field reads as the property, as C# code names it. */
    static const char suffix[] = ">k__BackingField";
    size_t ns = sizeof suffix - 1, len = 0;
    while (len < n && w[len])
        len++;
    if (len > ns + 1 && w[0] == '<') {
        bool match = true;
        for (size_t i = 0; i < ns && match; i++)
            match = w[len - ns + i] == (WCHAR)suffix[i];
        if (match) {
            put_utf16_name(&b, w + 1, len - ns - 1);
            return true;
        }
    }
    put_utf16_name(&b, w, n);
    return true;
}

IMetaDataImport *hl_type_names_metadata(hl_type_names *t, ModuleID module) {
    return module_metadata(t, module);
}
