/* test_type_names.c — type and method names longer than their buffer (collector/type_names.h),
 * from a fake ICorProfilerInfo and metadata: a generic type whose ten type arguments have names
 * of 500 characters is a name of about 5 KiB. Two such types that differ only in their last
 * argument share their first 4,095 bytes; each name is cut, marked HL_NAME_CUT_MARK with the
 * whole name's hash, so that the two never share a name, and stays valid UTF-8 when the cut falls
 * inside a character. A name that fits is as it was. Names once shortened before any cut
 * (arguments nested deeper than 8, more than 32 arguments, metadata names past 512 characters)
 * keep two types apart; a method's own arguments past the 32nd are kept as a type's are. */
#include <glib.h>
#include <string.h>

#include "collector/type_names.h"
#include "tests/unit/common/check.h"

/* Classes: 0x100 and 0x101 are Big<A1, ..., A9, A10 or B10> (module 0x50, typedef 0x02000000 |
 * class); 1..9 and 10, 11 their arguments; 0x200 is Small<A1>. */
#define BIG_ARGS 10
/* Names shortened before any cut, each pair once one name: 0x300 and 0x310 are Wrap<...> nested
 * WRAP_DEPTH deep around Ns.LeafA or Ns.LeafB (0x30c, 0x31c); 0x400 and 0x401 are Many<...> of
 * MANY_ARGS arguments (classes 1..39, then 0x7e "Ns.A40" or 0x7f "Ns.B40"); 0x500 and 0x501
 * have metadata names of 700 characters that differ in the last. */
#define WRAP_DEPTH 12
#define MANY_ARGS 40
static const WCHAR *arg_char = NULL; /* one character repeated in the arguments' names */

static HRESULT fake_is_array(ICorProfilerInfo *i, ClassID c, uint32_t *t, ClassID *e, ULONG *r) {
    (void)i, (void)c, (void)t, (void)e, (void)r;
    return S_FALSE;
}
static HRESULT fake_class_info(ICorProfilerInfo *i, ClassID c, ModuleID *module, mdTypeDef *td,
                               ClassID *parent, uint32_t n, uint32_t *total, ClassID *args) {
    (void)i;
    *module = 0x50;
    *td = 0x02000000 | (mdTypeDef)c;
    if (parent)
        *parent = 0;
    if (c >= 0x300 && c < 0x400) { /* Wrap<Wrap<... 12 deep ...<LeafA or LeafB>>> */
        *total = (c & 0xf) < WRAP_DEPTH ? 1 : 0;
        if (*total && n && args)
            args[0] = c + 1;
        return S_OK;
    }
    if (c == 0x400 || c == 0x401) { /* Many<A1, ..., A39, A40 or B40>: more than 32 */
        *total = MANY_ARGS;
        for (uint32_t k = 0; k < *total && k < n && args; k++)
            args[k] = k + 1 < MANY_ARGS ? k + 1 : c == 0x401 ? 0x7f : 0x7e;
        return S_OK;
    }
    *total = c == 0x100 || c == 0x101 ? BIG_ARGS : c == 0x200 ? 1 : 0;
    for (uint32_t k = 0; k < *total && k < n && args; k++)
        args[k] = k + 1 < BIG_ARGS ? k + 1 : c == 0x101 ? 11 : 10;
    return S_OK;
}
static ULONG fake_release(IUnknown *u) {
    (void)u;
    return 0;
}
static clr_method md_vtbl[MDI_GetNestedClassProps + 1];
static clr_object md_obj = {.vtbl = md_vtbl};
static HRESULT fake_metadata(ICorProfilerInfo *i, ModuleID m, DWORD flags, const GUID *iid,
                             IUnknown **out) {
    (void)i, (void)m, (void)flags, (void)iid;
    *out = (IUnknown *)&md_obj;
    return S_OK;
}
/* "Big`10", "Small`1"; an argument: "Ns.A<k>" (k = 10: "Ns.B10" for class 11) padded to 500
 * characters with arg_char (ASCII 'x', or a 3-byte character). */
static HRESULT fake_type_def_props(IMetaDataImport *m, mdTypeDef td, WCHAR *name, ULONG capacity,
                                   ULONG *length, DWORD *flags, mdToken *extends) {
    (void)m;
    uint32_t c = td & 0xffffff;
    char text[800];
    if (c == 0x100 || c == 0x101)
        snprintf(text, sizeof text, "Big`%d", BIG_ARGS);
    else if (c == 0x200)
        snprintf(text, sizeof text, "Small`1");
    else if (c >= 0x300 && c < 0x400)
        snprintf(text, sizeof text, (c & 0xf) < WRAP_DEPTH ? "Wrap`1"
                                    : c < 0x310               ? "Ns.LeafA"
                                                              : "Ns.LeafB");
    else if (c == 0x400 || c == 0x401)
        snprintf(text, sizeof text, "Many`%d", MANY_ARGS);
    else if (c == 0x7e || c == 0x7f)
        snprintf(text, sizeof text, "Ns.%c40", c == 0x7f ? 'B' : 'A');
    else if (c == 0x500 || c == 0x501)
        snprintf(text, sizeof text, "Ns.Long%0*d%c", 692, 0, c == 0x501 ? 'B' : 'A');
    else
        snprintf(text, sizeof text, "Ns.%c%u", c == 11 ? 'B' : 'A', c == 11 ? 10 : c);
    /* As the metadata does: as much as fits (with a NUL), the whole length (NUL included) in
     * *length. */
    ULONG full = 0, n = 0;
    for (; text[full]; full++)
        if (full + 1 < capacity)
            name[n++] = (WCHAR)text[full];
    for (ULONG k = 0; arg_char && c < 0x100 && full < 500; k++, full++)
        if (full + 1 < capacity)
            name[n++] = *arg_char;
    name[n] = 0;
    *length = full + 1;
    *flags = 0; /* not nested */
    *extends = 0;
    return S_OK;
}
/* One method, "Run", of the class the function id names (its low bits); functions 0x600 and
 * 0x601 are Small<Ns.A1>.Run<...> of MANY_ARGS type arguments of its own (as Many's). */
static HRESULT fake_function_info(ICorProfilerInfo *i, FunctionID f, UINT_PTR frame, ClassID *cls,
                                  ModuleID *module, mdToken *token, uint32_t n, uint32_t *total,
                                  ClassID *args) {
    (void)i, (void)frame;
    bool many = f == 0x600 || f == 0x601;
    *cls = many ? 0x200 : (ClassID)f;
    *module = 0x50;
    *token = 0x06000001;
    *total = many ? MANY_ARGS : 0;
    for (uint32_t k = 0; k < *total && k < n && args; k++)
        args[k] = k + 1 < MANY_ARGS ? k + 1 : f == 0x601 ? 0x7f : 0x7e;
    return S_OK;
}
static HRESULT fake_method_props(IMetaDataImport *m, mdToken method, mdTypeDef *cls, WCHAR *name,
                                 ULONG capacity, ULONG *length, DWORD *attr, const uint8_t **sig,
                                 ULONG *sig_size, ULONG *rva, DWORD *impl) {
    (void)m, (void)method, (void)capacity, (void)attr, (void)sig, (void)sig_size, (void)rva,
        (void)impl;
    *cls = 0;
    name[0] = 'R', name[1] = 'u', name[2] = 'n', name[3] = 0;
    *length = 4;
    return S_OK;
}

static clr_method vtbl[INFO_GetClassIDInfo2 + 1];
static clr_object info_obj = {.vtbl = vtbl};
#define INFO ((ICorProfilerInfo *)&info_obj)

/* The mark at the end: "...(cut #" and 16 hex digits, then ")". */
static bool marked(const char *name) {
    const char *m = strstr(name, HL_NAME_CUT_MARK);
    if (!m)
        return false;
    m += strlen(HL_NAME_CUT_MARK);
    for (int k = 0; k < 16; k++)
        if (!g_ascii_isxdigit(m[k]))
            return false;
    return strcmp(m + 16, ")") == 0;
}

static void check_cut(const WCHAR *pad) {
    arg_char = pad;
    hl_type_names names;
    hl_type_names_init(&names, INFO);
    static char a[4096], b[4096], small[4096], again[4096];
    hl_type_name(&names, 0x100, a, sizeof a);
    hl_type_name(&names, 0x101, b, sizeof b);
    CHECK(strlen(a) < sizeof a && strlen(b) < sizeof b);
    CHECK(marked(a) && marked(b));
    CHECK(strcmp(a, b) != 0); /* the same first 4,095 bytes, different types */
    CHECK(strncmp(a, "Big<Ns.A1", 9) == 0);
    CHECK(g_utf8_validate(a, -1, NULL) && g_utf8_validate(b, -1, NULL));
    /* the hash is the name's, not the call's: the same type, the same name */
    hl_type_name(&names, 0x101, again, sizeof again);
    CHECK_STR(again, b);
    /* a name that fits: unmarked, as before */
    hl_type_name(&names, 0x200, small, sizeof small);
    CHECK(strncmp(small, "Small<Ns.A1", 11) == 0 && small[strlen(small) - 1] == '>');
    CHECK(!strstr(small, HL_NAME_CUT_MARK));
    /* the mark fits any buffer it can: a name cut at 64 bytes */
    char tiny[64];
    hl_type_name(&names, 0x100, tiny, sizeof tiny);
    CHECK(marked(tiny) && strlen(tiny) < sizeof tiny && g_utf8_validate(tiny, -1, NULL));
    /* methods: the declaring types differ past 1 KiB */
    char ma[1024], mb[1024];
    CHECK(hl_method_name(&names, 0x100, ma, sizeof ma) && hl_method_name(&names, 0x101, mb,
                                                                          sizeof mb));
    CHECK(marked(ma) && marked(mb) && strcmp(ma, mb) != 0);
    CHECK(g_utf8_validate(ma, -1, NULL));
    hl_type_names_release(&names);
}

/* Names shortened before the cut (arguments nested deeper than 8, more than 32 arguments, a
 * metadata name past 512 characters): two types that differ only in what was left out are
 * still two names, the same in every call; more arguments and longer names are whole. */
static void check_shortened(void) {
    arg_char = NULL;
    hl_type_names names;
    hl_type_names_init(&names, INFO);
    static char a[4096], b[4096], again[4096];
    hl_type_name(&names, 0x300, a, sizeof a);
    hl_type_name(&names, 0x310, b, sizeof b);
    CHECK(strncmp(a, "Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<...>", 49) == 0);
    CHECK(marked(a) && marked(b) && strcmp(a, b) != 0);
    hl_type_name(&names, 0x300, again, sizeof again);
    CHECK_STR(again, a);
    hl_type_name(&names, 0x400, a, sizeof a);
    hl_type_name(&names, 0x401, b, sizeof b);
    CHECK(g_str_has_suffix(a, ", Ns.A39, Ns.A40>") && g_str_has_suffix(b, ", Ns.A39, Ns.B40>"));
    CHECK(!strstr(a, HL_NAME_CUT_MARK));
    hl_type_name(&names, 0x500, a, sizeof a);
    hl_type_name(&names, 0x501, b, sizeof b);
    CHECK(strlen(a) == 700 && strlen(b) == 700 && g_str_has_suffix(a, "0A") &&
          g_str_has_suffix(b, "0B"));
    /* a method's own type arguments past the 32nd: kept too (they were left out silently) */
    CHECK(hl_method_name(&names, 0x600, a, sizeof a) && hl_method_name(&names, 0x601, b, sizeof b));
    CHECK(g_str_has_prefix(a, "Small<Ns.A1>.Run<Ns.A1, Ns.A2, "));
    CHECK(g_str_has_suffix(a, ", Ns.A39, Ns.A40>") && g_str_has_suffix(b, ", Ns.A39, Ns.B40>"));
    CHECK(!strstr(a, HL_NAME_CUT_MARK));
    hl_type_names_release(&names);
}

int main(void) {
    vtbl[INFO_IsArrayClass] = (clr_method)fake_is_array;
    vtbl[INFO_GetClassIDInfo2] = (clr_method)fake_class_info;
    vtbl[INFO_GetModuleMetaData] = (clr_method)fake_metadata;
    vtbl[INFO_GetFunctionInfo2] = (clr_method)fake_function_info;
    md_vtbl[MDI_Release] = (clr_method)fake_release;
    md_vtbl[MDI_GetTypeDefProps] = (clr_method)fake_type_def_props;
    md_vtbl[MDI_GetMethodProps] = (clr_method)fake_method_props;
    static const WCHAR ascii = 'x', euro = 0x20AC; /* 1 byte, 3 bytes in UTF-8 */
    check_cut(&ascii);
    check_cut(&euro);
    check_shortened();
    return failures != 0;
}
