/* store_internal.h — what the files of the store share; nothing here is public.
 *
 *   store_stream.c   wire bytes → validated, decoded records (store_record), one at a time
 *   store_schema.c   the database: DDL, pragmas, recognising a heaplens database
 *   store_writer.c   lifecycle, transactions, the run row; applies non-GC records
 *   store_gc.c       applies a GC's records: allocation counts, survivors, deaths, promotions
 *   store_snapshot.c applies a heap snapshot's records: buffered, sorted, written whole
 *   store_handles.c  GC handle lifetimes and kinds
 *   store_serve.c    the unix socket: accept the collector, read the program's exit status
 *   store_control.c  the control socket: on-demand snapshot requests from `heaplens snapshot`
 */
#ifndef HEAPLENS_STORE_INTERNAL_H
#define HEAPLENS_STORE_INTERNAL_H

#include "store/store.h"
#include "wire/hl_wire.h"

#include <poll.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/types.h>

/* ---- store_stream.c ---------------------------------------------------------------------- */

/* A string inside a record payload: not NUL-terminated, borrowed from the read buffer. */
typedef struct store_str {
    const char *ptr;
    uint32_t len;
} store_str;

/* One decoded record. Fixed parts are copied out (aligned); variable parts point into the read
 * buffer (unaligned: read them with the store_record_*_at helpers) and are valid only during the
 * handler call. Every count has been checked against the payload size. */
typedef struct store_record {
    uint16_t type;          /* hl_rec_type */
    uint32_t size;          /* payload bytes */
    const uint8_t *payload; /* the raw payload, `size` bytes */
    union {
        struct {
            hl_run_start h;
            store_str command, runtime_version, producer;
        } run_start;
        struct {
            hl_type h;
            store_str name;
        } type;
        struct {
            hl_thread h;
            store_str name;
        } thread;
        struct {
            hl_alloc_counts h;
            const uint8_t *items; /* h.count hl_alloc_count */
        } alloc_counts;
        struct {
            hl_gc_survivors h;
            const uint8_t *items; /* h.count hl_survivor */
        } survivors;
        struct {
            hl_gc_survivors h;
            /* h.count packed objects (hl_wire.h), not walked by the decode: the apply checks
             * them as it reads them (store_gc_survivors_packed), a held GC's when it is held
             * (store_stream_survivors_packed_check) */
            const uint8_t *items;
            const uint8_t *end; /* the payload's end: the last object's */
        } survivors_packed;
        hl_gc_start gc_start;
        struct {
            hl_gc_deaths h;
            const uint8_t *ids; /* h.count uint64_t */
        } deaths;
        struct {
            hl_gc_promotions h;
            const uint8_t *items; /* h.count hl_promotion */
        } promotions;
        struct {
            hl_discovered_head h;
            const uint8_t *items; /* h.count hl_discovered */
        } discovered;
        hl_gc_end gc_end;
        hl_run_end run_end;
        hl_final_snapshot_missed final_snapshot_missed;
        hl_forcers_left forcers_left;
        hl_handle_created handle_created;
        hl_handle_destroyed handle_destroyed;
        struct {
            hl_gc_handle_kinds h;
            const uint8_t *items; /* h.count hl_handle_kind */
        } handle_kinds;
        struct {
            hl_gc_handles_freed h;
            const uint8_t *ids; /* h.count uint64_t handle ids */
        } handles_freed;
        hl_snapshot_start snapshot_start;
        struct {
            hl_snapshot_batch h;
            const uint8_t *items; /* h.count hl_snapshot_object, _ref or _root (by type) */
        } snapshot_batch;
        hl_snapshot_end snapshot_end;
        struct {
            hl_method h;
            store_str name;
        } method;
        struct {
            hl_field h;
            store_str name;
        } field;
        struct {
            hl_static h;
            store_str name;
        } static_field;
        struct {
            hl_checkpoint h;
            store_str name;
        } checkpoint;
        struct {
            hl_snapshot_batch h;
            store_str text;
        } snapshot_reason;
        struct {
            hl_root_method h;
            store_str name;
        } root_method;
        hl_static_thread static_thread;
        struct {
            hl_stack h;
            const uint8_t *frames; /* h.depth uint32 frame ids, innermost first */
        } stack;
        struct {
            hl_alloc_samples h;
            const uint8_t *items; /* h.count hl_alloc_sample */
        } alloc_samples;
        struct {
            hl_count_site h;
            store_str text; /* 'module\nmethod\ntype' */
        } count_site;
    } u;
} store_record;

/* Writes `v` in decimal at `p` (at most STORE_U64_DIGITS bytes, no terminator); returns the
 * end. For text built a piece at a time in a buffer of known room: one GString call per piece,
 * not per number (the packed survivors are most of what the writer writes). Two digits per
 * division, and the numbers below 10,000 that most gaps, type ids and sizes are without a
 * loop (bench_store replay of MidLife's stream: writer CPU 0.429 -> 0.373 s). */
#define STORE_U64_DIGITS 20
/* Whether an exit status said for the program `exit_pid` (0: not said) is the recorded process
 * `run_pid`'s (0: RUN_START not received): a .NET descendant of a program that is not .NET
 * (`bash -c 'dotnet app.dll'`) has its own, unknown. One rule for the writer that stores it
 * (store_serve.c) and for `heaplens record` storing it after a killed writer (store_ending.c). */
static inline gboolean store_exit_is_programs(int64_t exit_pid, int64_t run_pid)
{
    return exit_pid == 0 || run_pid == 0 || exit_pid == run_pid;
}

static inline char *store_put_u64(char *p, uint64_t v)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324"
        "25262728293031323334353637383940414243444546474849"
        "50515253545556575859606162636465666768697071727374"
        "75767778798081828384858687888990919293949596979899";
    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    if (v < 100) {
        memcpy(p, pairs + 2 * v, 2);
        return p + 2;
    }
    if (v < 10000) { /* sizes and type ids mostly */
        if (v < 1000) {
            *p = (char)('0' + v / 100);
            memcpy(p + 1, pairs + 2 * (v % 100), 2);
            return p + 3;
        }
        memcpy(p, pairs + 2 * (v / 100), 2);
        memcpy(p + 2, pairs + 2 * (v % 100), 2);
        return p + 4;
    }
    /* Written backwards from its last digit, at its place: a memcpy of a variable length from
     * a buffer was a call per number (on MidLife's stream, 2% of the writer). */
    int digits = 5;
    for (uint64_t t = v / 100000; t != 0; t /= 10)
        digits++;
    char *end = p + digits, *b = end;
    while (v >= 100) {
        uint64_t q = v / 100;
        b -= 2;
        memcpy(b, pairs + 2 * (v - q * 100), 2);
        v = q;
    }
    if (v >= 10) {
        b -= 2;
        memcpy(b, pairs + 2 * v, 2);
    } else {
        *--b = (char)('0' + v);
    }
    return end;
}

/* Appends `v` in decimal: JSON id arrays are much of what the writer writes, so no printf. */
static inline void store_append_u64(GString *out, uint64_t v)
{
    char buf[STORE_U64_DIGITS];
    g_string_append_len(out, buf, store_put_u64(buf, v) - buf);
}

/* Reading the writer's JSON arrays of integers (snapshot and retention blocks) without a JSON
 * library: a cursor over the text. */
typedef struct store_json_cursor {
    const char *p, *end;
} store_json_cursor;

static inline void store_json_space(store_json_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static inline gboolean store_json_char(store_json_cursor *c, char ch)
{
    store_json_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return TRUE;
    }
    return FALSE;
}

/* An integer (optionally negative) that fits an int64_t; FALSE when there is none. */
static inline gboolean store_json_int(store_json_cursor *c, int64_t *out)
{
    store_json_space(c);
    gboolean neg = c->p < c->end && *c->p == '-';
    const char *s = c->p + neg;
    uint64_t v = 0;
    const char *q = s;
    for (; q < c->end && *q >= '0' && *q <= '9'; q++) {
        if (v > ((uint64_t)INT64_MAX - 9) / 10)
            return FALSE;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    if (q == s)
        return FALSE;
    c->p = q;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return TRUE;
}

static inline gboolean store_json_null(store_json_cursor *c)
{
    store_json_space(c);
    if (c->end - c->p >= 4 && memcmp(c->p, "null", 4) == 0) {
        c->p += 4;
        return TRUE;
    }
    return FALSE;
}

/* The views over snapshot_objects (snapshot_refs, snapshot_ref_fields, snapshot_contents): in
 * the file, and as TEMP views over the virtual table (store_snapview.c). */
extern const char store_schema_snapshot_views[];
/* The references of snapshot_ref_fields with their fields: in the file, each field looked up in
 * `fields` by the reference's index (json_extract per reference: quadratic in an array's
 * length); in heaplens' TEMP copy, read pair by pair from the virtual table's hidden column
 * ref_fields (store_snapview.c): the same rows, linear. */
#define STORE_REF_FIELDS_SOURCE                                                                    \
    "(SELECT so.snapshot AS snapshot, so.object_id AS from_id, j.value AS to_id,\n"              \
    "             j.key AS k, json_extract(so.fields, '$[' || j.key || ']') AS field\n"          \
    "      FROM snapshot_objects so, json_each(so.refs) j WHERE so.refs IS NOT NULL)"
#define STORE_REF_FIELDS_SOURCE_PAIRS                                                              \
    "(SELECT so.snapshot AS snapshot, so.object_id AS from_id,\n"                                 \
    "             json_extract(j.value, '$[0]') AS to_id, j.key AS k,\n"                          \
    "             json_extract(j.value, '$[1]') AS field\n"                                       \
    "      FROM snapshot_objects so, json_each(so.ref_fields) j WHERE so.ref_fields IS NOT NULL)"

/* ---- store_vtab.c: what our TEMP virtual tables share ------------------------------------ */
/* A virtual table that knows its connection and its module's client data (objects: the rows
 * in memory). */
typedef struct store_vtab {
    sqlite3_vtab base;
    sqlite3 *db;
    void *aux;
} store_vtab;
/* xConnect's work: declares the columns (DECL, "CREATE TABLE x(...)") and makes the table. */
int store_vtab_declare(sqlite3 *db, void *aux, const char *decl, sqlite3_vtab **out);
int store_vtab_disconnect(sqlite3_vtab *vt);
/* The first usable equality constraints on column 0 and on column 1 (-1: none): the key
 * (snapshot, object_id). */
void store_vtab_key_constraints(const sqlite3_index_info *info, int *first, int *second);
/* A packed block that heaplens did not write: "the database is damaged: the KIND block of
 * object FIRST_ID has WHAT that heaplens does not write" (STORE_ERROR_DAMAGED); FALSE. */
gboolean store_block_damaged(GError **error, const char *kind, int64_t first_id,
                             const char *what);

/* A snapshot_blocks row being built (store_snapblock.c has the format): objects added in id
 * order; store_snapblock_add says when the block ends (then store_snapblock_close, write,
 * store_snapblock_reset). */
#define STORE_SNAPBLOCK_MAX 256
typedef struct store_snapblock_builder {
    GString *ids, *kinds, *refs, *fields;
    uint64_t first_id, last_id, prev_target;
    uint32_t n;
    gboolean any_refs, any_fields;
} store_snapblock_builder;
void store_snapblock_init(store_snapblock_builder *b);
void store_snapblock_release(store_snapblock_builder *b);
void store_snapblock_reset(store_snapblock_builder *b);
/* Adds an object (generation -1 or > 5: NULL; flags & 7) with its nr references (targets `to`,
 * fields `field`, HL_FIELD_UNKNOWN where unknown; `field` may be NULL). TRUE: the block ends
 * after this object. */
gboolean store_snapblock_add(store_snapblock_builder *b, uint64_t id, int generation,
                             uint32_t flags, const uint64_t *to, const uint32_t *field, size_t nr);
/* Closes the arrays; the texts are then the row's (refs, fields NULL when !any_refs, !any_fields). */
void store_snapblock_close(store_snapblock_builder *b);

/* Binds `value` to parameter `i`, or NULL when it is not `present` (an optional column). */
static inline void store_bind_optional(sqlite3_stmt *st, int i, int64_t value, gboolean present)
{
    if (present)
        sqlite3_bind_int64(st, i, value);
    else
        sqlite3_bind_null(st, i);
}

static inline hl_alloc_count store_record_alloc_count_at(const store_record *r, uint32_t i)
{
    hl_alloc_count a;
    memcpy(&a, r->u.alloc_counts.items + (size_t)i * sizeof a, sizeof a);
    return a;
}

static inline hl_survivor store_record_survivor_at(const store_record *r, uint32_t i)
{
    hl_survivor v;
    memcpy(&v, r->u.survivors.items + (size_t)i * sizeof v, sizeof v);
    return v;
}

static inline uint64_t store_record_death_at(const store_record *r, uint32_t i)
{
    uint64_t id;
    memcpy(&id, r->u.deaths.ids + (size_t)i * sizeof id, sizeof id);
    return id;
}

static inline hl_promotion store_record_promotion_at(const store_record *r, uint32_t i)
{
    hl_promotion p;
    memcpy(&p, r->u.promotions.items + (size_t)i * sizeof p, sizeof p);
    return p;
}

static inline hl_discovered store_record_discovered_at(const store_record *r, uint32_t i)
{
    hl_discovered d;
    memcpy(&d, r->u.discovered.items + (size_t)i * sizeof d, sizeof d);
    return d;
}

static inline uint64_t store_record_handle_freed_at(const store_record *r, uint32_t i)
{
    uint64_t id;
    memcpy(&id, r->u.handles_freed.ids + (size_t)i * sizeof id, sizeof id);
    return id;
}

static inline hl_alloc_sample store_record_alloc_sample_at(const store_record *r, uint32_t i)
{
    hl_alloc_sample a;
    memcpy(&a, r->u.alloc_samples.items + (size_t)i * sizeof a, sizeof a);
    return a;
}

static inline hl_handle_kind store_record_handle_kind_at(const store_record *r, uint32_t i)
{
    hl_handle_kind k;
    memcpy(&k, r->u.handle_kinds.items + (size_t)i * sizeof k, sizeof k);
    return k;
}

/* The items of SNAPSHOT_OBJECTS, _REFS and _ROOTS: copy `n` of them, from item `i`, to `out`. */
static inline void store_record_snapshot_items(const store_record *r, size_t item_size, uint32_t i,
                                               uint32_t n, void *out)
{
    memcpy(out, r->u.snapshot_batch.items + (size_t)i * item_size, (size_t)n * item_size);
}

/* Where the bytes come from. Returns the number of bytes read (> 0), 0 at end of stream, or -1
 * with `error` set. */
typedef ssize_t (*store_read_fn)(void *ctx, void *buf, size_t len, GError **error);

/* Applies one decoded record. Returning FALSE stops the stream with that error. */
typedef gboolean (*store_record_fn)(void *ctx, const store_record *rec, GError **error);

/* How a stream ended (when store_stream_run returned TRUE). */
typedef enum store_stream_end {
    STORE_STREAM_RUN_END,   /* HL_REC_RUN_END arrived; nothing after it was read */
    STORE_STREAM_EOF,       /* end of file at a record boundary, without RUN_END */
    STORE_STREAM_CUT,       /* end of file inside a record (or inside the stream header) */
} store_stream_end;

/* Counters kept by the reader. */
typedef struct store_stream_stats {
    uint64_t stream_bytes;            /* bytes read from the source */
    uint64_t records_read;            /* whole records, known or not (header excluded) */
    uint64_t records_skipped_unknown; /* records of a type this reader does not know */
    gboolean header_ok;               /* a valid stream header was read */
} store_stream_stats;

/* Reads the stream header, then every record, calling `apply` for each known record type.
 * Returns TRUE with *end set when the stream ended (RUN_END, or EOF at or inside a record).
 * Returns FALSE with STORE_ERROR_STREAM for a bad header (stats->header_ok FALSE) or a corrupt
 * record (header_ok TRUE: what came before it was applied), with the source's error, or with
 * the error `apply` returned. `stats` is updated as the stream is read. */
gboolean store_stream_run(store_read_fn read, void *read_ctx, store_record_fn apply,
                          void *apply_ctx, store_stream_end *end, store_stream_stats *stats,
                          GError **error);

/* Decodes one payload of a known type (as the stream reader does); FALSE with
 * STORE_ERROR_STREAM when it is malformed or the type unknown. */
gboolean store_stream_decode(uint16_t type, const uint8_t *payload, uint32_t size,
                             store_record *out, GError **error);

/* Walks the objects of a decoded GC_SURVIVORS_PACKED record: FALSE with STORE_ERROR_STREAM
 * ("GC_SURVIVORS_PACKED record: ...") when one is cut or out of range or bytes are left over
 * (hl_wire.h says what makes the record corrupt). The apply makes the same checks as it goes;
 * this is the pass for a record that must be known whole before anything of it is applied. */
gboolean store_stream_survivors_packed_check(const store_record *rec, GError **error);

/* The record type's name ("GC_END"), or NULL for an unknown type. */
const char *store_stream_record_name(uint16_t type);

/* Sorts `n` items of `size` bytes by the uint64 at offset `key` within each, stably (LSD radix,
 * store_snapshot.c). */
void store_radix_sort(void *items, size_t n, size_t size, size_t key);

/* Sorts `n` ids ascending: ids in at most STORE_SORT_MERGE_RUNS ascending runs (a GC's deaths
 * and promotions come so: about 6 runs per 8192 deaths on MidLife) are merged, a run pair at a
 * time, through `scratch` (room for n ids); more runs go to store_radix_sort (store_snapshot.c). */
#define STORE_SORT_MERGE_RUNS 16
void store_sort_ids(uint64_t *ids, size_t n, uint64_t *scratch);

/* ---- the packed objects, read (store_history.c) ----------------------------------------- */

/* One object of object_chunks: its objects row but died_gc, first_generation and next_gc. */
typedef struct __attribute__((packed)) store_object_row {
    uint64_t id;
    uint64_t size;
    uint32_t type_id;
    uint32_t os_tid;   /* 0: NULL */
    uint32_t first_gc;
    uint8_t heap;      /* HL_GEN_NONE: NULL */
    /* its first generation, held from first_gc on: object_chunks.generation (schema 10);
     * HL_GEN_NONE before, where generation_changes holds it */
    uint8_t first_generation;
} store_object_row;

#define STORE_OBJECT_ALIVE UINT32_MAX /* died_gc NULL */

/* The rows of the view `objects` of a file whose rows are not built: n objects ascending by id
 * (stably: a damaged file's duplicate ids stay in chunk order) and each one's died_gc. */
typedef struct store_object_rows {
    store_object_row *objects;
    uint32_t *died_gc; /* NULL until read; STORE_OBJECT_ALIVE: NULL */
    size_t n;
} store_object_rows;

/* Reads the objects from object_chunks of `db` (schema 5 or later, read-only will do) as the
 * build reads them: the same checks (STORE_ERROR_DAMAGED naming the row), 30 bytes per object
 * (and those of one GC again while sorting). died_gc stays NULL: */
gboolean store_history_objects_read(sqlite3 *db, const char *path, store_object_rows *out,
                                    GError **error);
/* ... store_history_deaths_read fills it from object_deaths (12 bytes per death while reading,
 * 4 per object kept): most statements never read died_gc. */
gboolean store_history_deaths_read(sqlite3 *db, const char *path, store_object_rows *rows,
                                   GError **error);
void store_object_rows_release(store_object_rows *rows);

/* ---- store_schema.c ----------------------------------------------------------------------- */

/* Applies the connection pragmas for writing (WAL, synchronous=OFF, cache) and creates the
 * schema, application_id and user_version in one transaction. The writer runs it only where
 * there is no image (the image's generator; the test that compares the two). */
gboolean store_schema_create(sqlite3 *db, const char *path, GError **error);
/* The file store_schema_create makes, as bytes: built with heaplens by store_schema_image_gen,
 * which runs store_schema_create on a new file and writes what it holds once its last
 * connection closed (store/CMakeLists.txt), so the two cannot differ (test schema_image).
 * `bytes` holds the runs' bytes one after the other; every other byte of the file is zero.
 * Writing it costs a third of creating the schema (SQLite's parsing and planning of every
 * CREATE, its b-trees' first pages, the WAL's frames): store/README.md. In the generator
 * itself, size 0. */
typedef struct store_image_run {
    uint32_t offset, length;
} store_image_run;
typedef struct store_image {
    uint32_t size; /* of the file; 0: none (the generator) */
    size_t n_runs;
    const store_image_run *runs;
    const unsigned char *bytes;
} store_image;
extern const store_image store_schema_image;
/* Writes store_schema_image into `fd`, an empty file the caller just created; an error
 * (STORE_ERROR_IO, "cannot create PATH: ...") when it cannot (a full disk). Never syncs. */
gboolean store_schema_image_write(int fd, const char *path, GError **error);
/* The writer's connection pragmas the file does not hold (synchronous=OFF, cache, temp store):
 * on a connection to the image's file, or inside store_schema_create. */
gboolean store_schema_connect(sqlite3 *db, const char *path, GError **error);
/* The name of the writer's VFS (store_vfs.c): the default VFS of the call's time, with the WAL's
 * frames written once per commit instead of twice per frame; registered (again, when the
 * default changed) by the call. */
const char *store_vfs_writer(void);
/* Empties object_chunks and object_deaths and turns `objects` from a view over them into the
 * table the caller fills (schema 5; inside the caller's transaction: store_history_build_file). */
gboolean store_schema_use_object_rows(sqlite3 *db, const char *path, GError **error);
/* The DDL of object_spans and object_totals (store_history.c writes them). */
extern const char store_schema_object_spans[];
/* survivors_by_generation over object_spans (store_history.c swaps it in with them). */
extern const char store_schema_spans_views[];
/* Empties generation_changes and points object_generations and object_lifetimes at
 * object_generation_rows (inside the caller's transaction: store_history_build_file). */
gboolean store_schema_use_history_rows(sqlite3 *db, const char *path, GError **error);

/* Reads one integer pragma ("PRAGMA user_version"); -1 when it cannot be read. */
int64_t store_db_pragma_int(sqlite3 *db, const char *sql);

/* Runs SQL without results; on failure sets STORE_ERROR_SQLITE "<path>: <what>: <sqlite msg>". */
gboolean store_sql_exec(sqlite3 *db, const char *path, const char *sql, GError **error);
/* Sets the error of SQLite result `rc` on `path`: STORE_ERROR_IO "<path>: <msg> (<errno
 * text>)" for a full disk or an I/O error, else STORE_ERROR_SQLITE "<path>: <msg>"; msg NULL:
 * SQLite's text for rc. */
void store_sql_set_error(sqlite3 *db, const char *path, int rc, const char *msg, GError **error);
/* Sets STORE_ERROR_SQLITE from the connection's last error. Always returns FALSE. */
gboolean store_sql_fail(sqlite3 *db, const char *path, const char *what, GError **error);

/* ---- store_ending.c ----------------------------------------------------------------------- */

/* Appends the run.loss reasons the collector's counters `c` give (SCHEMA.md, "Losses") to
 * `names` (static strings); `stalled`: a writer_lost was a stall (HL_RUN_END_FLAG_WRITER_STALLED). */
void store_loss_add(GPtrArray *names, const hl_counters *c, gboolean stalled);
/* Reads the collector's end file of process `pid` in `dir` (wire/hl_wire.h): TRUE with *end
 * when there is one, whole and well-formed; FALSE (nothing set) otherwise. */
gboolean store_ending_file_read(const char *dir, int64_t pid, hl_run_end *end);

/* ---- store_control.c ---------------------------------------------------------------------- */

/* The control socket's server (protocol in README.md). Single-threaded: the serve loop polls
 * the fds it gives and hands back what poll reported. Never blocks: accept, reads and answers
 * are non-blocking; a client that does not take its answer at once is dropped. */
typedef struct store_control store_control;
typedef struct store_snapshot_done store_snapshot_done;

#define STORE_CONTROL_CLIENTS 16                      /* clients at a time; more wait in backlog */
#define STORE_CONTROL_MAX_FDS (STORE_CONTROL_CLIENTS + 2) /* listening socket, clients, collector */

/* Serves the listening socket `listen_fd` (made O_NONBLOCK). NULL with listen_fd < 0: every
 * function below accepts a NULL control and does nothing. */
store_control *store_control_new(int listen_fd, GError **error);
/* Answers what is still open (as store_control_end would), closes the clients, frees. The
 * listening socket stays open. Accepts NULL. */
void store_control_free(store_control *c);
/* A collector is connected on `collector_fd`: requests are sent to it from now on. */
void store_control_set_collector(store_control *c, int collector_fd);
/* The stream ended: waiting clients get "error the program ended before the snapshot was
 * taken", later requests "error the recording has ended". */
void store_control_end(store_control *c);
/* Likewise when the writer stops recording (`why`, one line of words; NULL: as
 * store_control_end): waiting clients get "error <why>". */
void store_control_stop(store_control *c, const char *why);
/* Tells the collector to end the stream (HL_CMD_DETACH), as an attach session's "detach" does,
 * with no client to answer: the attach session's recorder is gone. Once only. */
void store_control_detach(store_control *c);
/* Writes the fds to poll at `fds` (room for STORE_CONTROL_MAX_FDS); returns how many. */
int store_control_poll_fds(const store_control *c, struct pollfd *fds);
/* TRUE while a client waits for an answer from the collector (a snapshot, a detach). */
gboolean store_control_waiting(const store_control *c);
/* Handles the events poll reported for the `n` fds store_control_poll_fds wrote. */
void store_control_dispatch(store_control *c, const struct pollfd *fds, int n);
/* store_snapshot_fn: a snapshot committed; a 'requested' one answers every waiting client. */
void store_control_snapshot_committed(void *ctx, const store_snapshot_done *done);
/* store_snapshot_lost_fn: a 'requested' snapshot lost answers every waiting client "lost". */
void store_control_snapshot_lost(void *ctx, uint32_t snapshot, uint32_t gc, uint32_t trigger,
                                 const char *why);
/* store_snapshot_progress_fn: a 'requested' snapshot advancing tells the waiting clients. */
void store_control_snapshot_progress(void *ctx, uint32_t snapshot, uint32_t trigger,
                                     uint64_t items, gboolean writing);

/* ---- store_writer.c / store_gc.c ---------------------------------------------------------- */

/* Prepared statements, prepared once in store_writer_create. */
typedef enum store_stmt_id {
    STORE_STMT_INSERT_TYPE,
    STORE_STMT_INSERT_FIELD,
    STORE_STMT_INSERT_STATIC,
    STORE_STMT_INSERT_ROOT_METHOD,
    STORE_STMT_SET_STATIC_THREAD,
    STORE_STMT_INSERT_SNAPSHOT_STATIC,
    STORE_STMT_INSERT_SNAPSHOT_STRING,
    STORE_STMT_INSERT_SNAPSHOT_COLLECTION,
    STORE_STMT_UPSERT_THREAD,
    STORE_STMT_INSERT_THREAD_TID,
    STORE_STMT_INSERT_CHECKPOINT,
    STORE_STMT_INSERT_ALLOC_COUNT,
    STORE_STMT_INSERT_ALLOC_COUNTS_MANY,
    STORE_STMT_INSERT_OBJECT_CHUNK,
    STORE_STMT_INSERT_GENERATION_CHANGES,
    STORE_STMT_INSERT_OBJECT_DEATHS,
    STORE_STMT_INSERT_GC,
    STORE_STMT_INSERT_GC_GENERATION,
    STORE_STMT_SET_COUNTER,
    STORE_STMT_INSERT_SNAPSHOT,
    STORE_STMT_INSERT_SNAPSHOT_OBJECT,
    STORE_STMT_INSERT_SNAPSHOT_OBJECTS_MANY,
    STORE_STMT_INSERT_SNAPSHOT_BLOCK,
    STORE_STMT_EXTEND_SNAPSHOT_BLOCK,
    STORE_STMT_SNAPSHOT_BLOCKS_OF,
    STORE_STMT_SNAPSHOT_BLOCK_GET,
    STORE_STMT_INSERT_SNAPSHOT_ROOT,
    STORE_STMT_INSERT_SNAPSHOT_ROOTS_MANY,
    STORE_STMT_INSERT_HANDLE,
    STORE_STMT_SET_HANDLE_KIND,
    STORE_STMT_HANDLE_DESTROYED,
    STORE_STMT_INSERT_FRAME,
    STORE_STMT_INSERT_STACK,
    STORE_STMT_INSERT_STACK_FRAME,
    STORE_STMT_INSERT_ALLOC_SAMPLE,
    STORE_STMT_INSERT_ALLOC_SAMPLES_MANY,
    STORE_STMT_UPSERT_SAMPLING,
    STORE_STMT_COMMIT,
    STORE_STMT_BEGIN,
    STORE_STMT_COUNT
} store_stmt_id;

/* Rows inserted when a GC ends go out STORE_BATCH_ROWS at a time through one multi-row INSERT:
 * per-statement costs dominate SQLite's per-row cost for rows this small. */
#define STORE_BATCH_ROWS 256
/* A record's alloc_counts and alloc_samples rows go out STORE_RECORD_ROWS at a time through one
 * multi-row INSERT, the rest of the record's rows one by one (store_gc_alloc_counts,
 * store_samples_alloc): the same rows in the same order (the same rowids). A record holds tens
 * of rows (a GC's counts per type, a few ms of samples); 16 rows a statement took a row from
 * 0.48 to 0.32 us in a loop of such INSERTs, 32 rows only to 0.31. */
#define STORE_RECORD_ROWS 16
/* Ids per generation_changes or object_deaths row: a few pages of JSON text, few rows per GC. */
#define STORE_CHANGE_IDS 8192
/* The open GC's deaths wait with its generation changes, in the slot after the generations. */
#define STORE_CHANGE_DEATHS (HL_GEN_NONGC + 1)
/* Objects per object_chunks row, and chunks open at once (a GC's survivors are packed per
 * (thread, heap): a thread's ids are close, so their gaps short). */
#define STORE_CHUNK_OBJECTS 8192
#define STORE_CHUNKS_OPEN 64
#define STORE_BATCH_MAX_COLUMNS 7
#define STORE_NULL INT64_MIN /* a NULL in a buffered row */

typedef struct store_row_batch {
    store_stmt_id one;  /* single-row statement, for the rest */
    store_stmt_id many; /* STORE_BATCH_ROWS-row statement */
    int columns;
    int rows; /* buffered */
    int64_t v[STORE_BATCH_ROWS * STORE_BATCH_MAX_COLUMNS];
    /* A batch may have one TEXT column: its values in v are offsets into `text` (or STORE_NULL),
     * the text of a row ends at text_end[row]. Append a row's text to `text` before
     * store_batch_add; the flush empties it. */
    int text_column; /* -1: none */
    int text_columns; /* text columns from text_column on (1, or 2: snapshot_objects' refs and
                       * fields): a row's texts follow each other in `text` in column order */
    GString *text;
    size_t text_end[STORE_BATCH_ROWS];
} store_row_batch;

/* Types whose first size in a chunk the writer remembers (a direct-mapped table by type id:
 * a type whose slot another holds has its size written each time, which the format allows). */
#define STORE_CHUNK_SIZE_SLOTS 64
#define STORE_CHUNK_NO_TYPE UINT32_MAX

/* An object_chunks row being filled: objects of the open GC with one (thread, heap, first
 * generation), ids ascending, as JSON text "[[gap,type_id,size],[gap,type_id],..." (closed
 * when written): an object of the size of its type's first object in the chunk has no size
 * (schema 11). size_types[type_id % STORE_CHUNK_SIZE_SLOTS] = the type whose first size is
 * first_sizes[] there (STORE_CHUNK_NO_TYPE: none yet), reset when the chunk starts. */
typedef struct store_object_chunk {
    uint32_t os_tid; /* 0: unknown (NULL) */
    uint32_t heap;   /* HL_GEN_NONE: unknown (NULL) */
    uint32_t generation; /* its objects' first generation (object_chunks.generation, schema 10) */
    uint32_t count;
    uint64_t last_id;
    GString *json;
    uint32_t size_types[STORE_CHUNK_SIZE_SLOTS];
    uint64_t first_sizes[STORE_CHUNK_SIZE_SLOTS];
} store_object_chunk;

/* The GC being read (between its GC_START and GC_END). */
typedef struct store_open_gc {
    gboolean open;
    hl_gc_start start;
    uint64_t discovered; /* object rows of DISCOVERED records, counted when the GC commits */
    uint64_t survivors;  /* object rows of GC_SURVIVORS records, likewise */
    uint64_t allocations, allocations_survived; /* ALLOC_COUNTS stored inside it, likewise */
    GArray *snapshots;   /* store_snapshot_done: snapshots written inside it, not yet committed */
    gboolean handles_changed; /* handle rows were written inside it (the map follows them) */
    gboolean grouped; /* applied whole from store_writer.held (its GC_END had come): no
                         transaction of its own, committed with the group (store_writer.c) */
} store_open_gc;

/* The snapshot being read (between its SNAPSHOT_START and SNAPSHOT_END). Its items wait here and
 * are written sorted, all at once, when SNAPSHOT_END arrives and they add up; a snapshot that
 * never ends costs no rows. */
typedef struct store_open_snapshot {
    gboolean open;
    hl_snapshot_start start;
    gint64 progress_us; /* when on_snapshot_progress was last called for it */
    GArray *objects; /* hl_snapshot_object */
    GArray *refs;    /* hl_snapshot_ref */
    GArray *ref_fields; /* uint32 per ref (SNAPSHOT_REF_FIELDS), in the order the refs came */
    GArray *statics; /* hl_snapshot_static */
    GArray *strings; /* hl_snapshot_string */
    GArray *collections; /* hl_snapshot_collection */
    GArray *roots;   /* hl_snapshot_root */
    GArray *root_threads; /* hl_snapshot_root_thread: stack roots' threads, by object */
    char *reason;    /* SNAPSHOT_REASON: why a trigger took it (g_malloc), or NULL */
} store_open_snapshot;

/* A snapshot written inside the open GC; announced (store_writer.on_snapshot) once it commits. */
typedef struct store_snapshot_done {
    uint32_t snapshot, gc, trigger;
    uint32_t commands; /* hl_snapshot_start.commands: 1 + the snapshot commands it serves, 0 */
    uint64_t objects;
} store_snapshot_done;

/* Called after the commit of a GC, once per snapshot that commit stored. */
typedef void (*store_snapshot_fn)(void *ctx, const store_snapshot_done *done);
/* Called when a snapshot that was started (SNAPSHOT_START) will not be stored, with why in
 * words; snapshot 0: the collector dropped a whole snapshot of GC `gc` (its snapshots_dropped
 * grew), trigger unknown (HL_SNAPSHOT_REQUESTED is passed: it may be the one asked for). */
typedef void (*store_snapshot_lost_fn)(void *ctx, uint32_t snapshot, uint32_t gc, uint32_t trigger,
                                       const char *why);
/* Called while a snapshot's records arrive (at most every STORE_SNAPSHOT_PROGRESS_US) and once
 * when its rows start being written (`writing`), with the items arrived so far. */
typedef void (*store_snapshot_progress_fn)(void *ctx, uint32_t snapshot, uint32_t trigger,
                                           uint64_t items, gboolean writing);
#define STORE_SNAPSHOT_PROGRESS_US (G_USEC_PER_SEC / 2)

/* The WAL is copied into the database file (a passive checkpoint) once it holds this many
 * frames (4 MiB of the writer's 8 KiB pages, store_schema.c), after a GC's commit and after the answers to the snapshot
 * requests that commit stored — not inside the commit, as SQLite's autocheckpoint does: a
 * 10M-object snapshot's 170 MB made its commit 1.9 s, most of it that copy. */
#define STORE_WAL_CHECKPOINT_FRAMES 512
/* Grouped commits (store_writer.c, "Grouped commits"): a GC whose records all came (its GC_END
 * among them) before the writer applied any is applied whole and joins the open transaction,
 * committed once STORE_GROUP_COMMIT_MS have passed since its first GC was applied (whether the
 * stream keeps the writer busy or not: a reader sees every GC that late at most), before any GC
 * applied as it comes, once they add up to STORE_GROUP_MAX_BYTES of records, and at the end. A
 * GC is held that way while its records add up to at most STORE_HOLD_MAX_BYTES and hold no
 * snapshot; any other is applied as it comes, in a transaction of its own. */
#define STORE_GROUP_COMMIT_MS 50
#define STORE_HOLD_MAX_BYTES (64 * 1024)
/* ... and once the group's GCs' records add up to this (what a full disk or a killed writer
 * can take with it stays small whatever the pace: a commit per 256 KiB of records costs nothing
 * next to writing them). */
#define STORE_GROUP_MAX_BYTES (256 * 1024)
/* While a group waits for its commit, a read of less than this ends the writer's reading until
 * the commit is due (store_serve.c, "reading in steps"): what comes meanwhile is read then, in
 * one wake-up, and joins the group. A larger read (full mode, a snapshot) reads on at once. */
#define STORE_READ_STEP_BYTES (64 * 1024)
/* The counters store_writer_write_counters writes (the collector's, the writer's, and three
 * written only when known): the value each row holds, so that a GC writes only those that
 * changed. */
#define STORE_COUNTERS_WRITTEN 34
/* How long the end of a recording retries leaving WAL mode while another connection (a user's
 * sqlite3 reading the recording) has the file open, and how often: then the file stays in WAL
 * mode (store_summary.wal_kept). SQLite itself does not wait there. */
#define STORE_LEAVE_WAL_WAIT_MS 2000
#define STORE_LEAVE_WAL_RETRY_MS 50
/* How long a commit of the writer waits for another connection's write lock (a user's sqlite3
 * writing to the recording, or checkpointing it with RESTART or TRUNCATE) before the writer
 * fails: without it one such statement at a commit ended the recording. Within the collector's
 * 10 s before it gives up a writer that takes nothing. */
#define STORE_WRITER_BUSY_MS 5000

/* An ALLOC_COUNTS key; each may appear once per interval. */
typedef struct store_alloc_key {
    uint32_t gc, type_id, os_tid, heap;
} store_alloc_key;
/* A set of them, open-addressed (linear probing, at most half full) with the keys in its own
 * slots: adding one allocates nothing (a g_malloc'd key each was 4.5% of the writer on WebApi).
 * A slot holds a key while its stamp is the set's: emptying the set is one increment. */
typedef struct store_alloc_slot {
    store_alloc_key key;
    uint32_t stamp;
} store_alloc_slot;
typedef struct store_alloc_keys {
    store_alloc_slot *slots;
    uint32_t capacity; /* 0 or a power of two */
    uint32_t count;
    uint32_t stamp; /* 1 or more once slots exist; a slot's 0 is never current */
} store_alloc_keys;

struct store_writer {
    sqlite3 *db;
    char *path;
    int wal_frames; /* frames in the WAL after the last commit (store_writer_wal_hook) */
    sqlite3_stmt *stmt[STORE_STMT_COUNT];
    /* The open GC's survivors and discovered objects, packed: a chunk per (thread, heap) being
     * filled, written as an object_chunks row when it holds STORE_CHUNK_OBJECTS and at GC_END.
     * chunk_last: the chunk used last (consecutive survivors mostly share one). */
    store_object_chunk chunks[STORE_CHUNKS_OPEN];
    int chunks_open, chunk_last;
    /* The open GC's generation changes (promotions; the first generations of survivors and
     * discovered objects are their chunks' since schema 10), per generation, and its deaths (slot STORE_CHANGE_DEATHS): the ids, written
     * as a generation_changes (object_deaths) row when they reach STORE_CHANGE_IDS and at
     * GC_END (sorted, as a JSON array of the first id and then each id's gap from the one
     * before, formatted in change_json). */
    uint64_t *change_ids[STORE_CHANGE_DEATHS + 1];
    uint32_t change_count[STORE_CHANGE_DEATHS + 1];
    uint64_t *change_scratch; /* STORE_CHANGE_IDS ids: store_sort_ids' merges */
    GString *change_json;
    /* HEAPLENS_SNAPSHOT_ROWS=1 (tests): each snapshot's objects also as schema 7's rows, in the
     * table snapshot_object_rows, for a differential test of the blocks against them */
    gboolean snapshot_rows;
    store_row_batch snapshot_object_rows; /* snapshot_object_rows (snapshot, object_id,
                                             generation, flags, refs TEXT, fields TEXT) */
    store_snapblock_builder snapblock;    /* the block being built */
    store_row_batch snapshot_root_rows;   /* snapshot_roots (snapshot, object_id, kind, flags, root_id) */
    GHashTable *threads_seen; /* os_tid (as pointer) → present in `threads` */
    uint32_t last_tid;        /* last os_tid found in threads_seen (0: none) */
    gboolean last_tid_valid;

    store_open_gc gc;  /* the GC being read */
    uint32_t last_gc;  /* last complete GC stored, 0 before the first */
    gboolean any_gc;
    /* Survivors come in ascending id order, GC after GC: the highest id stored (committed, and
     * in the open GC), and the first id of the interval after the last stored GC. */
    uint64_t last_survivor_committed, last_survivor;
    uint64_t interval_first_id;
    /* (interval, type, thread, heap) keys of ALLOC_COUNTS seen since the last commit: a key
     * twice in one interval breaks the collector's promise. */
    store_alloc_keys alloc_keys;
    store_open_snapshot snap;  /* the snapshot being read */
    uint32_t last_snapshot;    /* highest snapshot number stored (committed or in the open GC) */
    uint32_t last_snapshot_committed;
    /* handle_id → id of its row in `handles` while the handle lives (not destroyed). Keys and
     * values are stored in the pointers (64-bit). Follows the database: rebuilt from it when a
     * GC that changed handle rows is rolled back. */
    GHashTable *handles;

    store_snapshot_fn on_snapshot; /* may be NULL, like the two below */
    store_snapshot_lost_fn on_snapshot_lost;
    store_snapshot_progress_fn on_snapshot_progress;
    void *on_snapshot_ctx;

    hl_counters counters; /* the collector's, as of the last GC_END or RUN_END */
    gboolean have_counters;
    store_stream_stats stream;
    uint64_t gcs_discarded_incomplete;
    uint64_t writer_anomalies;
    uint64_t handles_closed_by_reuse; /* HANDLE_CREATED at a live handle's address */
    uint64_t connections_refused;
    uint64_t objects_written;     /* objects (packed): survivors and discovered objects */
    uint64_t allocations;         /* sum of ALLOC_COUNTS count stored */
    uint64_t allocations_survived;
    uint64_t gcs_written;
    uint64_t snapshots_written;   /* committed */
    uint64_t snapshots_discarded; /* started but not stored */
    /* An attach session's detach gave its last snapshot up (FINAL_SNAPSHOT_MISSED): loss
     * `final-snapshot-missed` and its counters (SCHEMA.md). */
    hl_final_snapshot_missed final_missed; /* reason 0: none came */
    /* ... and went on with ForceGC threads still in the runtime (FORCERS_LEFT): counters
     * forcegc_threads_left and forcegc_wait_ms. */
    hl_forcers_left forcers_left; /* threads 0: none came */

    /* TYPE, THREAD and RUN_START records that arrived while a GC was open, raw (hl_rec_header +
     * payload): rolling the GC back loses their rows too, so they are applied again. */
    GPtrArray *replay; /* of GBytes */

    /* Grouped commits (STORE_GROUP_COMMIT_MS): the records of the GC being held (hl_rec_header +
     * payload each, from its GC_START on) until its GC_END comes; the GCs applied since the
     * last commit, and when the first of them was (g_get_monotonic_time). */
    GByteArray *held;
    gboolean holding;
    uint32_t held_gc;
    gboolean applying_held; /* store_writer_release is applying a whole GC */
    uint32_t group_gcs;
    gint64 group_since_us;
    int group_commit_ms; /* STORE_GROUP_COMMIT_MS (a test sets it longer) */
    size_t group_bytes; /* their records' bytes */
    /* What the counters rows and run.loss hold in the transaction (valid: known; a rollback
     * forgets it): store_writer_write_counters writes only what changed. */
    uint64_t counter_value[STORE_COUNTERS_WRITTEN];
    gboolean counter_valid[STORE_COUNTERS_WRITTEN];
    char *loss_written;
    gboolean loss_valid;

    uint32_t run_flags;   /* HL_RUN_FLAG_* from RUN_START */
    gboolean complete;    /* RUN_END received */
    uint64_t run_end_received_ns; /* CLOCK_MONOTONIC of this process when RUN_END arrived */
    uint64_t run_end_cpu_ns;      /* this process's CPU time (user + system) then */
    uint64_t exit_wait_ns;        /* RUN_END end_mono_ns - shutdown_mono_ns (0: unknown) */
    gboolean have_exit_wait;
    uint64_t program_peak_rss_bytes; /* RUN_END's (0: not received, or unknown) */
    uint64_t samples_budgeted;       /* the last ALLOC_SAMPLES's (cumulative; 0: none) */
    uint64_t snapshots_skipped_queued; /* GCs stored with HL_GC_FLAG_SNAPSHOT_SKIPPED */
    uint32_t program_gcs;         /* RUN_END's GC count (the stream's, or the end file's) */
    gboolean have_program_gcs;
    int64_t run_pid;              /* RUN_START's pid (0: not received) */
    char *session_dir;            /* store_writer_set_session: where the end file may be */
    pid_t recorder;               /* ... and the recorder's pid (0: not watched) */
    gboolean recorder_killed;     /* the stop pipe ended before any line: the recorder died */
    gboolean ends_session;        /* store_writer_set_attach: the recorder's death ends the stream */
    gboolean peer_is_program;     /* serve: the collector's process is the recorder's own child,
                                   * the program itself (not a descendant that claimed it) */
    gboolean program_exited;      /* serve: the program exited ("exit N"), no signal killed it */
    gboolean collector_ended;     /* no RUN_END on the stream, but the collector's end file came */
    gboolean writer_stalled;      /* the end file says the collector gave us up for a stall */
    gboolean corrupt;     /* the stream stopped at a corrupt record */
    gboolean stopped;     /* store_writer_serve_connection ended the stream: record ended first */
    char *db_failure;     /* a write to the database failed (disk full, I/O error): what; nothing
                             more is written, finish only closes (non-NULL: failed) */
    gboolean connected;   /* a collector connected (serve) or a stream was ingested */
    gboolean no_data_forced; /* serve: the program exited before any collector connected */
    gboolean ingested;    /* store_writer_ingest* was called */
    gboolean finished;    /* store_writer_finish is running: how the stream ended is known */
};

/* Ingests one stream from any source (store_writer_ingest_fd and serve use it). */
gboolean store_writer_ingest(store_writer *w, store_read_fn read, void *read_ctx,
                             GError **error);
/* Buffers one row (batch->columns values, STORE_NULL for NULL); writes a full batch. */
gboolean store_batch_add(store_writer *w, store_row_batch *b, const int64_t *row, GError **error);
/* After a GC's commit and its answers: a passive checkpoint once the WAL holds
 * STORE_WAL_CHECKPOINT_FRAMES frames. */
void store_writer_checkpoint(store_writer *w);
/* Writes the buffered rows. */
gboolean store_batch_flush(store_writer *w, store_row_batch *b, GError **error);
/* Binds, steps and resets a prepared statement that returns no rows. */
gboolean store_writer_step(store_writer *w, store_stmt_id id, GError **error);
/* Applies one decoded record (dispatch table in store_writer.c). */
gboolean store_writer_apply(void *ctx, const store_record *rec, GError **error);
/* COMMIT, then BEGIN: what came since the last commit is stored, whole (the group too). */
gboolean store_writer_commit(store_writer *w, GError **error);
/* A GC applied whole (grouped) joins the group: committed now when it is due. */
gboolean store_writer_group_add(store_writer *w, GError **error);
/* GCs applied whole wait for their commit: how long until it is due, in microseconds (<= 0:
 * due now; -1 when none wait). The stream reader asks before it waits for more. */
gint64 store_writer_group_due_us(const store_writer *w);
gboolean store_writer_group_pending(const store_writer *w);
/* Commits the group of GCs applied whole, if any (then a checkpoint when the WAL is long). */
gboolean store_writer_group_commit(store_writer *w, GError **error);
/* The counters rows and run.loss are no longer known (after a ROLLBACK). */
void store_writer_forget_written(store_writer *w);
/* Makes sure `threads` has a row for os_tid (allocating threads get one, unnamed). */
gboolean store_writer_note_thread(store_writer *w, uint32_t os_tid, GError **error);

/* Remembers a record that arrived inside an open GC, so that a rollback of that GC can apply it
 * again (TYPE, THREAD, RUN_START and handle records: they are not part of the GC). */
void store_writer_keep_for_replay(store_writer *w, const store_record *rec);

/* GC records (store_gc.c). */
gboolean store_gc_start(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_alloc_counts(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_survivors(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_survivors_packed(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_deaths(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_promotions(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_discovered(store_writer *w, const store_record *rec, GError **error);
gboolean store_gc_end(store_writer *w, const store_record *rec, GError **error);
/* Adds `key` to `set`: TRUE when it was not there (store_alloc_keys). */
gboolean store_alloc_keys_add(store_alloc_keys *set, store_alloc_key key);
/* Empties `set` in O(1) (a new stamp); its memory stays for the next interval. */
void store_alloc_keys_clear(store_alloc_keys *set);
void store_alloc_keys_release(store_alloc_keys *set);
/* Rolls back the open GC, if any, and counts it in gcs_discarded_incomplete. */
gboolean store_gc_discard_open(store_writer *w, const char *why, GError **error);
/* Snapshot records (store_snapshot.c), applied inside the open GC. */
gboolean store_snapshot_start(store_writer *w, const store_record *rec, GError **error);
gboolean store_snapshot_items(store_writer *w, const store_record *rec, GError **error);
gboolean store_snapshot_end(store_writer *w, const store_record *rec, GError **error);
/* SNAPSHOT_REASON: kept with the open snapshot, stored in its row (snapshots.reason). */
gboolean store_snapshot_reason(store_writer *w, const store_record *rec, GError **error);
/* Forgets the open snapshot, if any, and counts it in snapshots_discarded; `why` (words) goes
 * to on_snapshot_lost. */
void store_snapshot_discard_open(store_writer *w, const char *why);
/* Tells on_snapshot_lost about the snapshots written inside the open GC, which will not be
 * committed, and counts them in snapshots_discarded. */
void store_snapshot_discard_written(store_writer *w, const char *why);
void store_snapshot_release(store_open_snapshot *s);

/* Allocation samples and stacks (store_samples.c). METHOD and STACK are kept for replay like
 * TYPE; ALLOC_SAMPLES belongs to the open GC (or the tail, after the last GC_END). */
gboolean store_samples_method(store_writer *w, const store_record *rec, GError **error);
/* store_counts.c: a COUNT_SITE record into count_sites or count_refused (created with the
 * first one: files without `--count` have neither table). */
gboolean store_counts_site(store_writer *w, const store_record *rec, GError **error);
gboolean store_samples_stack(store_writer *w, const store_record *rec, GError **error);
gboolean store_samples_alloc(store_writer *w, const store_record *rec, GError **error);
/* A sample's weight: (est_count, est_bytes) for an object of `size` bytes (pure; unit-tested).
 * AllocationSampled: w = 1 / (1 - (1 - 1/mean)^size), est_count = w, est_bytes = size * w.
 * AllocationTick: est_bytes = amount (bytes since the previous tick), est_count = amount / size
 * (biased). */
void store_sample_weight(uint32_t source, uint64_t mean_distance, uint64_t size, uint64_t amount,
                         double *est_count, double *est_bytes);

/* Handle records (store_handles.c). */
gboolean store_handle_created(store_writer *w, const store_record *rec, GError **error);
gboolean store_handle_destroyed(store_writer *w, const store_record *rec, GError **error);
gboolean store_handle_kinds(store_writer *w, const store_record *rec, GError **error);
gboolean store_handles_freed(store_writer *w, const store_record *rec, GError **error);
/* Reloads the handle map from the database (after a rollback). */
gboolean store_handles_reload(store_writer *w, GError **error);

/* Writes the collector's and the writer's counters. */
gboolean store_writer_write_counters(store_writer *w, GError **error);

#endif /* HEAPLENS_STORE_INTERNAL_H */
