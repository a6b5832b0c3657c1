/* gcdump_import.c — a gcdump_graph into a new heaplens database.
 *
 * The graph is told to the store as a record stream (wire/hl_wire.h), as a collector would tell
 * a heap walk: one GC whose survivors are the objects, one snapshot of them with their
 * references and roots. The store's own writer (store.h) writes every table, so an imported
 * file is a recording like any other and every command reads it; nothing here knows the SQL of
 * the snapshot tables. A thread writes the stream into a socket pair while the writer reads it.
 *
 *   main thread                            producer thread
 *   types, roots' kinds, counts  ─────▶    RUN_START, TYPE*, GC_START, GC_SURVIVORS*,
 *   store_writer_ingest_fd  ◀── stream ──  SNAPSHOT_START, OBJECTS*, REFS*, ROOTS*, SNAPSHOT_END,
 *   store_writer_finish                    GC_END, RUN_END
 *   the imports row, the first read
 */
#include "gcdump/gcdump.h"
#include "store/store.h"
#include "wire/hl_wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMPORT_BATCH 65536 /* items per record: 2 MiB at most, far below HL_REC_MAX_PAYLOAD */

/* What kind of root the objects under a pseudo-node are, by the names dotnet-gcdump and
 * PerfView give them (DotNetHeapDumpGraphReader); a node not named here is of its parent's
 * kind ("[static var X]" under "[static vars]"). */
static const struct {
    const char *name;
    uint8_t kind, flags;
} import_root_names[] = {
    {"[local vars]", HL_ROOT_STACK, 0},
    {"[finalizer Handles]", HL_ROOT_FINALIZER, 0},
    {"[strong Handles]", HL_ROOT_HANDLE, 0},
    {"[pinning Handles]", HL_ROOT_HANDLE, HL_ROOT_PINNING},
    {"[COM/WinRT Objects]", HL_ROOT_HANDLE, HL_ROOT_REFCOUNTED},
    {"[other Handles]", HL_ROOT_OTHER, 0},
    {"[other roots]", HL_ROOT_OTHER, 0},
    {"[static vars]", HL_ROOT_OTHER, 0},
    {"[thread static vars]", HL_ROOT_OTHER, 0},
    {"[Dependent Handles]", HL_ROOT_OTHER, 0},
};

typedef struct import_ctx {
    const gcdump_graph *g;
    const char *command, *runtime, *producer;
    uint64_t start_unix_ns;
    uint32_t *type_of;     /* gcdump type -> heaplens type id (1, 2, ...) */
    char **type_names;     /* heaplens type id -> name */
    uint32_t n_types;      /* heaplens types + 1 */
    gboolean *type_used;   /* per heaplens type: some object has it (only those are told) */
    uint8_t *root_kind;    /* per node: for pseudo-nodes, the kind of their roots */
    uint8_t *root_flags;
    gcdump_import_summary sum;
    int fd;
    gboolean broken;       /* the writer stopped reading */
    GByteArray *rec;
} import_ctx;

static void import_send(import_ctx *c, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0 && !c->broken) {
        ssize_t k = send(c->fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            c->broken = TRUE; /* the writer failed: its error is the one reported */
            return;
        }
        b += k;
        n -= (size_t)k;
    }
}

static void import_rec_begin(import_ctx *c)
{
    g_byte_array_set_size(c->rec, sizeof(hl_rec_header));
}

static void import_rec_add(import_ctx *c, const void *p, size_t n)
{
    g_byte_array_append(c->rec, p, (guint)n);
}

static void import_rec_str(import_ctx *c, const char *s)
{
    uint32_t len = s ? (uint32_t)strlen(s) : 0;
    import_rec_add(c, &len, sizeof len);
    import_rec_add(c, s ? s : "", len);
}

static void import_rec_send(import_ctx *c, uint16_t type)
{
    hl_rec_header h = {.type = type, .size = c->rec->len - (uint32_t)sizeof(hl_rec_header)};
    memcpy(c->rec->data, &h, sizeof h);
    import_send(c, c->rec->data, c->rec->len);
}

/* A batch record: its head (gc or snapshot, count) then the items, sent every IMPORT_BATCH
 * items; a buffer of its own (the references and the roots are gathered in one pass). */
typedef struct import_batch {
    import_ctx *c;
    uint16_t type;
    uint32_t key, count;
    GByteArray *buf;
} import_batch;

static void import_batch_flush(import_batch *b)
{
    if (b->count > 0) {
        hl_rec_header h = {.type = b->type, .size = b->buf->len - (uint32_t)sizeof h};
        memcpy(b->buf->data, &h, sizeof h);
        memcpy(b->buf->data + sizeof h + 4, &b->count, 4);
        import_send(b->c, b->buf->data, b->buf->len);
        b->count = 0;
    }
}

static void import_batch_add(import_batch *b, const void *item, size_t n)
{
    if (b->count == 0) {
        const uint32_t head[4] = {0, 0, b->key, 0}; /* record header, then gc/snapshot, count */
        if (!b->buf)
            b->buf = g_byte_array_new();
        g_byte_array_set_size(b->buf, 0);
        g_byte_array_append(b->buf, (const guint8 *)head, sizeof head);
    }
    g_byte_array_append(b->buf, item, (guint)n);
    if (++b->count == IMPORT_BATCH)
        import_batch_flush(b);
}

/* Sends what is left and frees the buffer. */
static void import_batch_end(import_batch *b)
{
    import_batch_flush(b);
    if (b->buf)
        g_byte_array_free(b->buf, TRUE);
    b->buf = NULL;
}

static gpointer import_produce(gpointer data)
{
    import_ctx *c = data;
    const gcdump_graph *g = c->g;
    hl_stream_header sh = {.version = HL_STREAM_VERSION};
    memcpy(sh.magic, HL_STREAM_MAGIC, sizeof sh.magic);
    import_send(c, &sh, sizeof sh);

    hl_run_start rs = {.pid = (uint32_t)MAX(g->meta.process_id, 0), .mode = HL_MODE_IMPORT,
                       .start_unix_ns = c->start_unix_ns, .pointer_size = g->meta.is64bit ? 8 : 4};
    import_rec_begin(c);
    import_rec_add(c, &rs, sizeof rs);
    import_rec_str(c, c->command);
    import_rec_str(c, c->runtime);
    import_rec_str(c, c->producer);
    import_rec_send(c, HL_REC_RUN_START);

    for (uint32_t t = 1; t < c->n_types; t++) {
        if (!c->type_used[t])
            continue;
        hl_type ht = {.type_id = t,
                      .flags = g_str_has_suffix(c->type_names[t], "]") &&
                                       !g_str_has_prefix(c->type_names[t], "[")
                                   ? HL_TYPE_FLAG_ARRAY
                                   : 0};
        import_rec_begin(c);
        import_rec_add(c, &ht, sizeof ht);
        import_rec_str(c, c->type_names[t]);
        import_rec_send(c, HL_REC_TYPE);
    }

    hl_gc_start gs = {.gc = 1, .generation = 2, .reason = 1, .condemned_mask = 0x1f,
                      .first_id_after = (uint64_t)g->n_nodes + 1,
                      .gc_reason = HL_GC_REASON_INDUCED, .flags = HL_GC_START_REASON_KNOWN};
    import_rec_begin(c);
    import_rec_add(c, &gs, sizeof gs);
    import_rec_send(c, HL_REC_GC_START);

    /* The objects, as the GC's survivors: id = node index + 1, ascending. A .gcdump does not
     * say an object's generation (dotnet-gcdump writes no segments): 2, as after the full GC
     * that took it; the snapshot's own generation column stays unknown. */
    import_batch b = {.c = c, .type = HL_REC_GC_SURVIVORS, .key = 1};
    for (uint32_t i = 0; i < g->n_nodes && !c->broken; i++) {
        if (!gcdump_graph_is_object(g, i))
            continue;
        hl_survivor v = {.id = (uint64_t)i + 1, .size = g->node_size[i],
                         .type_id = c->type_of[g->node_type[i]], .heap = HL_GEN_NONE,
                         .generation = HL_GEN_2};
        import_batch_add(&b, &v, sizeof v);
    }
    import_batch_end(&b);

    hl_snapshot_start ss = {.snapshot = 1, .gc = 1, .trigger = HL_SNAPSHOT_IMPORTED};
    import_rec_begin(c);
    import_rec_add(c, &ss, sizeof ss);
    import_rec_send(c, HL_REC_SNAPSHOT_START);
    b = (import_batch){.c = c, .type = HL_REC_SNAPSHOT_OBJECTS, .key = 1};
    for (uint32_t i = 0; i < g->n_nodes && !c->broken; i++) {
        if (!gcdump_graph_is_object(g, i))
            continue;
        hl_snapshot_object o = {.id = (uint64_t)i + 1, .generation = HL_GEN_NONE};
        import_batch_add(&b, &o, sizeof o);
    }
    import_batch_end(&b);
    b = (import_batch){.c = c, .type = HL_REC_SNAPSHOT_REFS, .key = 1};
    import_batch r = {.c = c, .type = HL_REC_SNAPSHOT_ROOTS, .key = 1};
    for (uint32_t i = 0; i < g->n_nodes && !c->broken; i++) {
        gboolean object = gcdump_graph_is_object(g, i);
        for (uint64_t k = g->first_child[i]; k < g->first_child[i + 1]; k++) {
            uint32_t to = g->children[k];
            if (!gcdump_graph_is_object(g, to))
                continue;
            if (object) {
                hl_snapshot_ref ref = {.from = (uint64_t)i + 1, .to = (uint64_t)to + 1};
                import_batch_add(&b, &ref, sizeof ref);
            } else {
                hl_snapshot_root root = {.object_id = (uint64_t)to + 1,
                                         .kind = c->root_kind[i], .flags = c->root_flags[i]};
                import_batch_add(&r, &root, sizeof root);
            }
        }
    }
    import_batch_end(&b);
    import_batch_end(&r);
    hl_snapshot_end se = {.snapshot = 1, .gc = 1, .objects = c->sum.objects, .refs = c->sum.refs,
                          .roots = c->sum.roots, .bytes = c->sum.bytes,
                          .unresolved = c->sum.unresolved};
    import_rec_begin(c);
    import_rec_add(c, &se, sizeof se);
    import_rec_send(c, HL_REC_SNAPSHOT_END);

    hl_gc_end ge = {.gc = 1, .survived_bytes = c->sum.bytes, .objects_live = c->sum.objects,
                    .roots = c->sum.roots};
    import_rec_begin(c);
    import_rec_add(c, &ge, sizeof ge);
    import_rec_send(c, HL_REC_GC_END);
    hl_run_end re = {.end_unix_ns = c->start_unix_ns, .gcs = 1};
    import_rec_begin(c);
    import_rec_add(c, &re, sizeof re);
    import_rec_send(c, HL_REC_RUN_END);
    shutdown(c->fd, SHUT_WR);
    return NULL;
}

/* Types by heaplens name (size buckets merged), the kind of root under each pseudo-node (a walk
 * from the root through pseudo-nodes), and what the snapshot will count. */
static void import_prepare(import_ctx *c)
{
    const gcdump_graph *g = c->g;
    GHashTable *by_name = g_hash_table_new(g_str_hash, g_str_equal);
    GPtrArray *names = g_ptr_array_new();
    g_ptr_array_add(names, NULL);
    c->type_of = g_new0(uint32_t, MAX(g->n_types, 1));
    for (uint32_t t = 0; t < g->n_types; t++) {
        char *base = gcdump_type_name_base(g->types[t].name);
        gpointer id = g_hash_table_lookup(by_name, base);
        if (id) {
            g_free(base);
            c->type_of[t] = GPOINTER_TO_UINT(id);
        } else {
            c->type_of[t] = names->len;
            g_hash_table_insert(by_name, base, GUINT_TO_POINTER(names->len));
            g_ptr_array_add(names, base);
        }
    }
    c->n_types = names->len;
    c->type_names = (char **)g_ptr_array_free(names, FALSE);
    g_hash_table_destroy(by_name);

    /* Types no object has are not told (the pseudo-nodes' "[local vars]"). */
    gboolean *used = c->type_used = g_new0(gboolean, c->n_types);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        gboolean object = gcdump_graph_is_object(g, i);
        if (object) {
            c->sum.objects++;
            c->sum.bytes += g->node_size[i];
            used[c->type_of[g->node_type[i]]] = TRUE;
        }
        for (uint64_t k = g->first_child[i]; k < g->first_child[i + 1]; k++) {
            gboolean to_object = gcdump_graph_is_object(g, g->children[k]);
            if (object && to_object)
                c->sum.refs++;
            else if (!object && to_object)
                c->sum.roots++;
            else if (object)
                c->sum.unresolved++;
        }
    }
    for (uint32_t t = 1; t < c->n_types; t++)
        c->sum.types += used[t];
    c->sum.sampled = g->meta.n_count_multipliers > 0 || g->meta.average_count_multiplier > 1.0f;
}

/* The kind of the roots under each pseudo-node: by its name, else its parent's. */
static void import_kinds(import_ctx *c)
{
    const gcdump_graph *g = c->g;
    c->root_kind = g_new0(uint8_t, g->n_nodes);
    c->root_flags = g_new0(uint8_t, g->n_nodes);
    for (uint32_t i = 0; i < g->n_nodes; i++)
        c->root_kind[i] = 0xff;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (gcdump_graph_is_object(g, i))
            continue;
        for (size_t k = 0; k < G_N_ELEMENTS(import_root_names); k++)
            if (strcmp(g->types[g->node_type[i]].name, import_root_names[k].name) == 0) {
                c->root_kind[i] = import_root_names[k].kind;
                c->root_flags[i] = import_root_names[k].flags;
            }
    }
    /* Breadth first from the root: a node without a kind of its own takes its parent's. */
    uint8_t *seen = g_new0(uint8_t, g->n_nodes);
    GArray *queue = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    if (c->root_kind[g->root] == 0xff)
        c->root_kind[g->root] = HL_ROOT_OTHER;
    g_array_append_val(queue, g->root);
    seen[g->root] = 1;
    for (guint q = 0; q < queue->len; q++) {
        uint32_t p = g_array_index(queue, uint32_t, q);
        for (uint64_t k = g->first_child[p]; k < g->first_child[p + 1]; k++) {
            uint32_t to = g->children[k];
            if (seen[to] || gcdump_graph_is_object(g, to))
                continue;
            seen[to] = 1;
            if (c->root_kind[to] == 0xff) {
                c->root_kind[to] = c->root_kind[p];
                c->root_flags[to] = c->root_flags[p];
            }
            g_array_append_val(queue, to);
        }
    }
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (c->root_kind[i] == 0xff)
            c->root_kind[i] = HL_ROOT_OTHER; /* a pseudo-node the root does not reach */
    g_array_free(queue, TRUE);
    g_free(seen);
}

/* The runtime's version from the path of a module of the shared framework
 * (".../Microsoft.NETCore.App/10.0.12/System.Private.CoreLib.dll"); "" when none says. */
static char *import_runtime_version(const gcdump_graph *g)
{
    static const char marker[] = "Microsoft.NETCore.App/";
    for (uint32_t t = 0; t < g->n_types; t++) {
        const char *m = g->types[t].module ? strstr(g->types[t].module, marker) : NULL;
        if (!m)
            continue;
        m += strlen(marker);
        const char *end = strchr(m, '/');
        if (end && end > m)
            return g_strndup(m, (gsize)(end - m));
    }
    return g_strdup("");
}

/* The table `imports`: where the database came from, and what the file said of itself. */
static gboolean import_source_store(const char *db_path, const char *source, const struct stat *st,
                                    const gcdump_graph *g, const gcdump_import_summary *sum,
                                    GError **error)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL;
    gboolean ok = FALSE;
    const char *sql =
        "CREATE TABLE imports (path TEXT NOT NULL, bytes INTEGER, mtime TEXT, format TEXT NOT NULL,"
        " format_version INTEGER, creation_tool TEXT, time_collected TEXT, machine_name TEXT,"
        " process_name TEXT, process_id INTEGER, process_commit_bytes INTEGER,"
        " process_working_set_bytes INTEGER, pointer_size INTEGER, nodes INTEGER,"
        " objects INTEGER, unresolved INTEGER, sampled INTEGER NOT NULL,"
        " count_multiplier REAL, size_multiplier REAL, type_count_multipliers INTEGER)";
    g_autofree char *abs = g_canonicalize_filename(source, NULL);
    g_autoptr(GDateTime) mtime = g_date_time_new_from_unix_utc(st->st_mtime);
    g_autofree char *mtime_text = mtime ? g_date_time_format_iso8601(mtime) : NULL;
    g_autofree char *collected = NULL;
    if (g->meta.time_collected > 0) {
        /* .NET ticks: 100 ns since 0001-01-01; 621355968000000000 of them at the Unix epoch. */
        int64_t unix_s = (g->meta.time_collected - INT64_C(621355968000000000)) / 10000000;
        g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(unix_s);
        collected = t ? g_date_time_format_iso8601(t) : NULL;
    }

    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO imports VALUES (?, ?, ?, 'gcdump', ?, ?, ?, ?, ?, ?, ?, ?,"
                           " ?, ?, ?, ?, ?, ?, ?, ?)",
                           -1, &ins, NULL) != SQLITE_OK) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_STORE, "cannot write %s: %s", db_path,
                    db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    sqlite3_bind_text(ins, 1, abs, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 2, (int64_t)st->st_size);
    sqlite3_bind_text(ins, 3, mtime_text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 4, g->meta.version);
    sqlite3_bind_text(ins, 5, g->meta.creation_tool, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 6, collected, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 7, g->meta.machine_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 8, g->meta.process_name, -1, SQLITE_STATIC);
    if (g->meta.process_id > 0)
        sqlite3_bind_int64(ins, 9, g->meta.process_id);
    if (g->meta.total_process_commit > 0)
        sqlite3_bind_int64(ins, 10, g->meta.total_process_commit);
    if (g->meta.total_process_working_set > 0)
        sqlite3_bind_int64(ins, 11, g->meta.total_process_working_set);
    sqlite3_bind_int64(ins, 12, g->meta.is64bit ? 8 : 4);
    sqlite3_bind_int64(ins, 13, g->n_nodes);
    sqlite3_bind_int64(ins, 14, (int64_t)sum->objects);
    sqlite3_bind_int64(ins, 15, (int64_t)sum->unresolved);
    sqlite3_bind_int64(ins, 16, sum->sampled);
    sqlite3_bind_double(ins, 17, g->meta.average_count_multiplier);
    sqlite3_bind_double(ins, 18, g->meta.average_size_multiplier);
    sqlite3_bind_int64(ins, 19, g->meta.n_count_multipliers);
    if (sqlite3_step(ins) != SQLITE_DONE) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_STORE, "cannot write %s: %s", db_path,
                    sqlite3_errmsg(db));
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(ins);
    sqlite3_close(db);
    return ok;
}

static void import_remove(const char *db_path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree char *p = g_strconcat(db_path, suffixes[i], NULL);
        unlink(p);
    }
}

gboolean gcdump_import(const gcdump_graph *g, const char *source, const char *db_path,
                       gcdump_import_summary *summary, GError **error)
{
    import_ctx c = {.g = g, .fd = -1};
    struct stat st = {0};
    int sv[2] = {-1, -1};
    GThread *producer = NULL;
    store_writer *w = NULL;
    store_summary ss = {0};
    gboolean ok = FALSE, created = FALSE;
    g_autoptr(GError) store_error = NULL;
    g_autofree char *runtime = import_runtime_version(g);
    g_autofree char *command = NULL;

    if (stat(source, &st) != 0)
        memset(&st, 0, sizeof st);
    command = g->meta.process_name && *g->meta.process_name
                  ? g_strdup(g->meta.process_name)
                  : g_strdup_printf("(imported from %s)", source);
    c.command = command;
    c.runtime = runtime;
    c.producer = g->meta.creation_tool ? g->meta.creation_tool : "unknown";
    c.start_unix_ns =
        g->meta.time_collected > INT64_C(621355968000000000)
            ? (uint64_t)(g->meta.time_collected - INT64_C(621355968000000000)) * 100
            : (uint64_t)st.st_mtime * 1000000000u;
    c.rec = g_byte_array_new();
    import_prepare(&c);
    import_kinds(&c);

    if (!(w = store_writer_create(db_path, command, &store_error)))
        goto out;
    created = TRUE;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        g_set_error(&store_error, GCDUMP_ERROR, GCDUMP_ERROR_IO, "cannot import %s: %s", source,
                    g_strerror(errno));
        goto out;
    }
    c.fd = sv[1];
    producer = g_thread_new("gcdump-import", import_produce, &c);
    ok = store_writer_ingest_fd(w, sv[0], &store_error);
    close(sv[0]); /* a producer still sending stops (EPIPE) */
    sv[0] = -1;
    g_thread_join(producer);
    producer = NULL;
    gboolean finished = store_writer_finish(w, &ss, ok ? &store_error : NULL);
    w = NULL;
    if (!ok || !finished)
        goto fail;
    if (ss.snapshots != 1) {
        g_set_error(&store_error, GCDUMP_ERROR, GCDUMP_ERROR_STORE,
                    "cannot import %s: the store did not keep its snapshot", source);
        goto fail;
    }
    if (!import_source_store(db_path, source, &st, g, &c.sum, &store_error) ||
        !store_history_build_file(db_path, NULL, NULL, &store_error))
        goto fail;
    if (summary)
        *summary = c.sum;
    ok = TRUE;
    goto out;
fail:
    ok = FALSE;
out:
    if (w)
        store_writer_finish(w, NULL, NULL);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (!ok && created)
        import_remove(db_path);
    if (!ok && store_error) {
        if (store_error->domain == GCDUMP_ERROR)
            g_propagate_error(error, g_steal_pointer(&store_error));
        else
            g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_STORE, "%s", store_error->message);
    }
    if (c.type_names)
        for (uint32_t t = 0; t < c.n_types; t++)
            g_free(c.type_names[t]);
    g_free(c.type_names);
    g_free(c.type_of);
    g_free(c.type_used);
    g_free(c.root_kind);
    g_free(c.root_flags);
    g_byte_array_free(c.rec, TRUE);
    return ok;
}
