/* test_il_corpus.c — the differential test of the IL rewriter: every method body of real
 * assemblies (the runtime's own: System.Private.CoreLib, System.Linq, System.Collections and
 * every other managed DLL of the shared framework next to `dotnet`) is rewritten and checked by
 * il_verify (decodes; every original instruction in order; probes exactly at the sites; branch
 * targets and exception clauses map). The bodies are read by a small reader of our own over the
 * PE file and the metadata tables (ECMA-335 II.24-25): the MethodDef table's RVAs.
 *
 * The resolver is a fake (the rewriter's correctness does not depend on which instructions are
 * sites): constructors whose token is odd are value types', boxes of a TypeSpec are generic.
 *
 * Usage: test_il_corpus DOTNET   (the dotnet executable; its shared/Microsoft.NETCore.App/<v>/)
 *        test_il_corpus FILE.dll... */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/il_rewrite.h"
#include "tests/unit/collector/il_verify.h"
#include "tests/unit/common/check.h"

#define INC_TOKEN 0x0A00FFFFu

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

typedef struct pe {
    const uint8_t *data;
    size_t size;
    const uint8_t *sections;
    uint16_t n_sections;
} pe;

/* The file offset of an RVA and how many bytes of its section follow, or 0. */
static size_t pe_offset(const pe *f, uint32_t rva, size_t *avail) {
    for (uint16_t k = 0; k < f->n_sections; k++) {
        const uint8_t *s = f->sections + 40 * k;
        uint32_t va = rd32(s + 12), vsize = rd32(s + 8), raw_size = rd32(s + 16), raw = rd32(s + 20);
        uint32_t span = raw_size < vsize || !vsize ? raw_size : vsize;
        if (rva >= va && rva < va + span && (size_t)raw + (rva - va) < f->size) {
            size_t off = (size_t)raw + (rva - va);
            *avail = (size_t)raw + raw_size <= f->size ? raw + raw_size - off : f->size - off;
            return off;
        }
    }
    return 0;
}

typedef struct corpus_stats {
    size_t methods, rewritten, sites, newobj, newarr, box, may_elide, generic, widened_bodies,
        clauses, errors;
} corpus_stats;

static hl_il_alloc fake_resolve(void *ctx, hl_il_site_kind kind, uint32_t token) {
    (void)ctx;
    if (kind == HL_IL_SITE_NEWOBJ)
        return token & 1 ? HL_IL_ALLOC_NO : HL_IL_ALLOC_YES;
    return token >> 24 == 0x1B ? HL_IL_ALLOC_MAYBE : HL_IL_ALLOC_YES;
}
static uint64_t fake_counters(void *ctx, const hl_il_site *sites, size_t n) {
    (void)ctx, (void)sites, (void)n;
    return 0x00007f1234560000ull;
}

static void check_method(const char *file, uint32_t token, const uint8_t *body, size_t avail,
                         corpus_stats *st) {
    hl_il_rewrite_params p = {.body = body, .body_size = avail, .increment_token = INC_TOKEN,
                              .resolve = fake_resolve, .counters = fake_counters};
    hl_il_rewrite_result r;
    st->methods++;
    int rc = hl_il_rewrite(&p, &r);
    if (rc != HL_IL_OK) {
        fprintf(stderr, "%s: method 0x%08x: rewrite failed (%d)\n", file, token, rc);
        failures++;
        return;
    }
    if (r.n_sites) {
        uint32_t where;
        const char *err = il_verify(body, avail, &r, INC_TOKEN, &where);
        if (err) {
            fprintf(stderr, "%s: method 0x%08x: %s (IL_%04x)\n", file, token, err, where);
            failures++;
        }
        hl_il_body ob;
        if (hl_il_body_parse(body, avail, &ob) == HL_IL_OK) {
            st->clauses += ob.n_clauses;
            if (r.body_size != 12 + ob.code_size + r.n_sites * HL_IL_PROBE_SIZE &&
                !ob.n_clauses)
                st->widened_bodies++;
            hl_il_body_release(&ob);
        }
        st->rewritten++;
        st->sites += r.n_sites;
        for (size_t k = 0; k < r.n_sites; k++) {
            st->newobj += r.sites[k].kind == HL_IL_SITE_NEWOBJ;
            st->newarr += r.sites[k].kind == HL_IL_SITE_NEWARR;
            st->box += r.sites[k].kind == HL_IL_SITE_BOX;
            st->may_elide += (r.sites[k].flags & HL_IL_SITE_MAY_ELIDE) != 0;
            st->generic += (r.sites[k].flags & HL_IL_SITE_GENERIC) != 0;
        }
    }
    hl_il_rewrite_result_release(&r);
}

/* Every MethodDef with a body. Returns -1 when the file is not a managed assembly. */
static int pe_methods(const char *file, const uint8_t *d, size_t size, corpus_stats *st) {
    if (size < 0x40 || d[0] != 'M' || d[1] != 'Z')
        return -1;
    uint32_t pe_at = rd32(d + 0x3C);
    if ((uint64_t)pe_at + 24 > size || memcmp(d + pe_at, "PE\0\0", 4) != 0)
        return -1;
    const uint8_t *coff = d + pe_at + 4, *opt = coff + 20;
    uint16_t opt_size = rd16(coff + 16), magic = rd16(opt);
    const uint8_t *dirs = opt + (magic == 0x20B ? 112 : 96);
    pe f = {d, size, opt + opt_size, rd16(coff + 2)};
    if ((size_t)(f.sections - d) + 40 * (size_t)f.n_sections > size ||
        (size_t)(dirs + 15 * 8 - d) > size)
        return -1;
    size_t avail, cli = pe_offset(&f, rd32(dirs + 14 * 8), &avail);
    if (!cli || !rd32(dirs + 14 * 8) || avail < 16)
        return -1;
    size_t md = pe_offset(&f, rd32(d + cli + 8), &avail);
    if (!md || avail < 16 || rd32(d + md) != 0x424A5342)
        return -1;
    uint32_t vlen = rd32(d + md + 12);
    const uint8_t *sh = d + md + 16 + vlen;
    uint16_t n_streams = rd16(sh + 2);
    sh += 4;
    const uint8_t *tables = NULL;
    for (uint16_t k = 0; k < n_streams; k++) {
        const char *name = (const char *)sh + 8;
        if (strcmp(name, "#~") == 0 || strcmp(name, "#-") == 0)
            tables = d + md + rd32(sh);
        sh += 8 + ((strlen(name) + 4) & ~(size_t)3);
    }
    if (!tables)
        return -1;
    uint8_t heaps = tables[6];
    uint64_t valid = (uint64_t)rd32(tables + 8) | (uint64_t)rd32(tables + 12) << 32;
    uint32_t rows[64] = {0};
    const uint8_t *p = tables + 24;
    for (int t = 0; t < 64; t++)
        if (valid >> t & 1)
            rows[t] = rd32(p), p += 4;
    if (heaps & 0x40)
        p += 4; /* extra data (uncompressed #- streams) */
    size_t str = heaps & 1 ? 4 : 2, guid = heaps & 2 ? 4 : 2, blob = heaps & 4 ? 4 : 2;
#define IDX(t) (rows[t] < 0x10000 ? 2u : 4u)
#define CODED2(a, b, c, e) (rows[a] < 0x4000 && rows[b] < 0x4000 && rows[c] < 0x4000 && \
                                    rows[e] < 0x4000 ? 2u : 4u)
    size_t row_size[7] = {
        2 + str + 3 * guid,                                          /* Module */
        CODED2(0x00, 0x1A, 0x23, 0x01) + 2 * str,                   /* TypeRef */
        4 + 2 * str + CODED2(0x02, 0x01, 0x1B, 0x1B) + IDX(4) + IDX(6), /* TypeDef */
        IDX(4),                                                      /* FieldPtr */
        2 + str + blob,                                              /* Field */
        IDX(6),                                                      /* MethodPtr */
        4 + 2 + 2 + str + blob + IDX(8),                             /* MethodDef */
    };
    for (int t = 0; t < 6; t++)
        p += row_size[t] * rows[t];
    for (uint32_t m = 0; m < rows[6]; m++, p += row_size[6]) {
        if ((size_t)(p - d) + row_size[6] > size)
            return -1;
        uint32_t rva = rd32(p);
        if (!rva)
            continue; /* abstract, extern, runtime-implemented */
        size_t body = pe_offset(&f, rva, &avail);
        if (!body)
            continue;
        check_method(file, 0x06000001 + m, d + body, avail, st);
    }
    return 0;
}

static int check_file(const char *path, corpus_stats *st) {
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_size == 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    int rc = pe_methods(path, m, (size_t)sb.st_size, st);
    munmap(m, (size_t)sb.st_size);
    return rc;
}

/* The newest shared/Microsoft.NETCore.App/<version> directory beside `dotnet`. */
static int framework_dir(const char *dotnet, char *out, size_t n) {
    char real[PATH_MAX];
    if (!realpath(dotnet, real))
        return -1;
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s/shared/Microsoft.NETCore.App", dirname(real));
    DIR *dir = opendir(base);
    if (!dir)
        return -1;
    char best[256] = "";
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.' && strverscmp(e->d_name, best) > 0)
            snprintf(best, sizeof best, "%s", e->d_name);
    closedir(dir);
    if (!best[0])
        return -1;
    return snprintf(out, n, "%s/%s", base, best) < (int)n ? 0 : -1;
}

int main(int argc, char **argv) {
    corpus_stats st = {0};
    size_t assemblies = 0;
    if (argc == 2 && !strstr(argv[1], ".dll")) {
        char dir[PATH_MAX];
        if (framework_dir(argv[1], dir, sizeof dir) != 0) {
            fprintf(stderr, "test_il_corpus: no shared framework beside %s\n", argv[1]);
            return 1;
        }
        const char *must[] = {"System.Private.CoreLib.dll", "System.Linq.dll",
                              "System.Collections.dll"};
        for (size_t k = 0; k < 3; k++) {
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/%s", dir, must[k]);
            if (check_file(path, &st) != 0) {
                fprintf(stderr, "test_il_corpus: %s is not a managed assembly\n", path);
                failures++;
            }
            assemblies++;
        }
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".dll") != 0 ||
                strcmp(e->d_name, must[0]) == 0 || strcmp(e->d_name, must[1]) == 0 ||
                strcmp(e->d_name, must[2]) == 0)
                continue;
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            assemblies += check_file(path, &st) == 0; /* native DLLs are skipped */
        }
        if (d)
            closedir(d);
        printf("%s: ", dir);
    } else {
        for (int k = 1; k < argc; k++)
            if (check_file(argv[k], &st) == 0)
                assemblies++;
            else
                fprintf(stderr, "%s: not a managed assembly\n", argv[k]), failures++;
    }
    printf("%zu assemblies, %zu method bodies, %zu rewritten with %zu sites (%zu newobj, %zu "
           "newarr, %zu box; %zu may be elided, %zu generic), %zu clauses, %zu bodies with "
           "widened branches\n",
           assemblies, st.methods, st.rewritten, st.sites, st.newobj, st.newarr, st.box,
           st.may_elide, st.generic, st.clauses, st.widened_bodies);
    if (argc == 2 && !strstr(argv[1], ".dll")) { /* the shared framework: a real corpus */
        CHECK(st.methods > 10000);
        CHECK(st.widened_bodies > 0);
    }
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures != 0;
}
