/* profiler.c — the COM face of libheaplens.so: DllGetClassObject, the class factory, the
 * callback object and the callbacks heaplens implements. Every other callback is a generated
 * stub that returns S_OK.
 *
 * Callbacks only translate: copy arguments into a thread chunk or the GC capture and return.
 * HRESULTs stop here; everything below uses plain ints.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/attach_config.h"
#include "collector/census.h"
#include "collector/collector.h"
#include "collector/forcers.h"
#include "collector/mem.h"
#include "collector/rejit.h"
#include "collector/resident.h"
#include "wire/hl_wire.h"

#define EXPORT __attribute__((visibility("default")))

static hl_profiler the_profiler; /* the one mutable global: the runtime holds one profiler */

/* ---- IUnknown ----------------------------------------------------------------------------- */

static HRESULT profiler_query_interface(hl_profiler *self, const GUID *iid, void **out) {
    if (!out)
        return E_INVALIDARG;
    bool ok = guid_equal(iid, &IID_IUnknown);
    for (int v = 1; v <= 11 && !ok; v++)
        ok = guid_equal(iid, &IID_ICorProfilerCallback[v]);
    *out = ok ? self : NULL;
    return ok ? S_OK : E_NOINTERFACE;
}
/* The object is static and lives as long as the process: reference counts are not needed. */
static ULONG profiler_add_ref(hl_profiler *self) { (void)self; return 2; }
static ULONG profiler_release(hl_profiler *self) { (void)self; return 1; }

/* ---- allocation --------------------------------------------------------------------------- */

/* The object's size. GetObjectSize2 is a call into the runtime for every allocation; the
 * object, just allocated on this thread, is whole, and its size is its method table's base size
 * plus, for arrays and strings, length times component size (census.c's layout, the runtime's
 * own Object::GetSize). A thread checks each method table once against GetObjectSize2 (as the
 * census does: a layout this code does not know, or a ClassID that is not the object's method
 * table, keeps the runtime's answer) and then reads it itself. */
static uint64_t object_size(hl_profiler *p, hl_tbuf *ring, ObjectID object, ClassID class_id) {
    uint64_t mt = *(const uintptr_t *)object & ~(uintptr_t)7;
    uint64_t *sized = ring ? &ring->sized[(mt >> 3) & (HL_TBUF_SIZED - 1)] : NULL;
    if (sized && *sized == mt && mt == class_id)
        return hl_census_object_size((const void *)(uintptr_t)object);
    SIZE_T size = 0;
    info_get_object_size2(p->info, object, &size);
    if (sized && mt == class_id && size == hl_census_object_size((const void *)(uintptr_t)object))
        *sized = mt;
    return size;
}

static HRESULT on_object_allocated(hl_profiler *p, ObjectID object, ClassID class_id) {
    if (!p->active)
        return S_OK;
    hl_tbuf *ring = hl_tbufs_current(&p->rings);
    uint64_t size = object_size(p, ring, object, class_id);
    /* A sample (with its stack) goes before its object. The own sampler's usual answer, no
     * sample yet (the thread's bytes to its next sampling point only count down), is taken here
     * without the call (eventpipe.c own_sample does the rest). */
    if (p->stacks) {
        if (ring && p->sampling.own_sampler && ring->sampler.left > size)
            ring->sampler.left -= size;
        else
            hl_eventpipe_on_object_allocated(p, ring, object, class_id, size);
    }
    if (!ring) {
        hl_tbufs_count_overflow_allocation(&p->rings); /* seen and dropped */
        return S_OK;
    }
    hl_tbuf_count_allocation(ring);
    hl_tbuf_push_alloc(ring, &p->next_id, &p->id_epoch, object, class_id, size);
    /* Sampled mode hears only LOH and POH allocations here: each is followed by its handle. */
    if (p->followed.on)
        hl_follow_add(&p->followed, p->info, object);
    return S_OK;
}

/* Handle events take a sequence number from the allocation counter, so the collector applies
 * them in order with allocations and GCs (the target's address belongs to that moment). */
static void handle_event(hl_profiler *p, unsigned kind, GCHandleID handle, ObjectID target) {
    hl_tbuf *ring = hl_tbufs_current(&p->rings);
    if (!ring)
        return;
    uint64_t seq = atomic_fetch_add_explicit(&p->next_id, 1, memory_order_relaxed);
    hl_tbuf_push_handle(ring, kind, seq, handle, target);
}

/* With the heap walk on demand the runtime reports handles only while MONITOR_GC is on, at
 * some GCs: a partial record would be wrong, so none is kept; handles are known from the roots
 * of the GCs that walk (as in attach mode). `record --handles` keeps MONITOR_GC on. */
static HRESULT on_handle_created(hl_profiler *p, GCHandleID handle, ObjectID initial) {
    if (p->active && p->handles)
        handle_event(p, HL_EV_HANDLE_CREATED, handle, initial);
    return S_OK;
}

static HRESULT on_handle_destroyed(hl_profiler *p, GCHandleID handle) {
    if (p->active && p->handles)
        handle_event(p, HL_EV_HANDLE_DESTROYED, handle, 0);
    return S_OK;
}

/* ---- GC ----------------------------------------------------------------------------------- */

static HRESULT on_runtime_suspend_started(hl_profiler *p, uint32_t reason) {
    if (p->active && (reason == COR_PRF_SUSPEND_FOR_GC || reason == COR_PRF_SUSPEND_FOR_GC_PREP))
        atomic_store_explicit(&p->suspend_ns, hl_now_ns(), memory_order_relaxed);
    return S_OK;
}

/* Which GCs take a snapshot (HEAPLENS_SNAPSHOT, set by `heaplens record --snapshot`;
 * snapshot_policy.h). Decided here, at the GC's start on its GC thread: what was asked for (a
 * `heaplens snapshot PID`, or a trigger the collector thread evaluated), then induced, gen2 and
 * every:N, these within --max-snapshots and while the walks the collector holds are under
 * their bound (`skipped` otherwise: hl_snapshot_policy_at_gc). */
static uint32_t snapshot_policy(void *ctx, uint32_t gc, uint32_t generation, uint32_t reason,
                                uint32_t snapshots_held, uint64_t walks_held_bytes,
                                bool *skipped) {
    hl_profiler *p = ctx;
    *skipped = false;
    bool induced = reason == COR_PRF_GC_REASON_INDUCED;
    uint32_t asked = atomic_exchange_explicit(&p->snapshot_requested, 0, memory_order_acquire);
    if (asked) {
        if (asked == HL_SNAPSHOT_REQUESTED) {
            /* The commands it serves: every one taken before the request was (at worst one
             * taken while this GC starts, which it then also answers). */
            p->requested_at[gc % 16].gc = gc;
            p->requested_at[gc % 16].commands = 1 + atomic_load(&p->snapshot_commands);
        }
        hl_forcers_request_taken(induced); /* the GC forced for it may still come: a spare */
        if (asked != HL_SNAPSHOT_REQUESTED) /* a trigger: the collector thread checked the cap */
            atomic_fetch_add_explicit(&p->snapshots_by_policy, 1, memory_order_relaxed);
        return asked;
    }
    if (induced && hl_forcers_spare_gc())
        return 0; /* heaplens' own GC, its request served: not the program's GC.Collect */
    hl_snapshot_gc_start g = {
        .gc = gc, .generation = generation, .induced = induced,
        .taken = atomic_load_explicit(&p->snapshots_by_policy, memory_order_relaxed),
        .snapshots_held = snapshots_held, .walks_held_bytes = walks_held_bytes};
    uint32_t t = hl_snapshot_policy_at_gc(&p->policy, &g, skipped);
    if (t)
        atomic_fetch_add_explicit(&p->snapshots_by_policy, 1, memory_order_relaxed);
    return t;
}

static HRESULT on_runtime_resume_finished(hl_profiler *p) {
    /* A dozing collector thread (an idle session) is woken to apply the GC: one eventfd write,
     * after the pause. */
    if (p->active && hl_gc_on_resumed(&p->gcs, hl_now_ns()))
        hl_collector_wake(p);
    return S_OK;
}

/* The heap walk on demand (sampled mode): COR_PRF_MONITOR_GC is on only during the GCs that
 * need the runtime's walk (ObjectReferences, RootReferences2): the first GC and any whose
 * discovery must start over, and snapshots. Turned on in GarbageCollectionStarted, before
 * the runtime decides on anything that depends on it in this GC (gcenv.ee.cpp DiagGCStart
 * checks it after the callback; DiagGCEnd's GCProfileWalkHeap at the end), and off again in
 * GarbageCollectionFinished. SetEventMask2 is callable from any thread (an asynchronous entry
 * point that takes no lock); turning MONITOR_GC on after startup is refused only while
 * concurrent GC is enabled, and it never is here (Initialize had MONITOR_GC on, which turns
 * it off for the life of the process: profilinghelper.cpp). A refusal makes the GC walk-less:
 * its capture is then marked incomplete (no discovery, no snapshot) and counted. */
static bool gc_walk_set(hl_profiler *p, bool on) {
    DWORD low = 0, high = 0;
    if (HR_FAILED(info_get_event_mask2(p->info, &low, &high)))
        return false;
    low = on ? low | COR_PRF_MONITOR_GC : low & ~(DWORD)COR_PRF_MONITOR_GC;
    if (HR_FAILED(info_set_event_mask2(p->info, low, high)))
        return false;
    p->walk_on = on;
    return true;
}

static HRESULT on_gc_started(hl_profiler *p, int generations, BOOL collected[], uint32_t reason) {
    if (!p->active)
        return S_OK;
    uint64_t suspend = atomic_exchange_explicit(&p->suspend_ns, 0, memory_order_relaxed);
    hl_gc_on_started(&p->gcs, p->info, collected, generations, reason,
                     atomic_load_explicit(&p->next_id, memory_order_relaxed), suspend,
                     snapshot_policy, p);
    /* Exact here: no thread is inside ObjectAllocated while a GC starts. Blocks of ids taken
     * before this point are not used after it (hl_tbuf_push_alloc). */
    atomic_fetch_add_explicit(&p->id_epoch, 1, memory_order_release);
    hl_gc_capture *c = p->gcs.current;
    if (c && p->mode == HL_MODE_FULL) /* read only by the unreported counts (full mode) */
        c->drops_at_start = hl_tbufs_dropped(&p->rings);
    if (p->walk_toggles && c && (c->discover_walk || c->snapshot_trigger) && !p->walk_on &&
        !gc_walk_set(p, true))
        c->incomplete = true; /* no walk: discovery starts over at the next GC */
    /* Following by handles (follow.h): the runtime's survivor ranges (MovedReferences2 and
     * SurvivingReferences2 come with MONITOR_GC) only at the GCs that condemn objects a
     * snapshot named, and at snapshots; every other GC is followed by the handles alone. */
    if (c && p->followed.on) {
        bool want = hl_follow_gc_needs_ranges(&p->followed, c->gc, c->condemned_mask,
                                              c->snapshot_trigger != 0);
        if (want && !p->walk_on && !gc_walk_set(p, true))
            c->incomplete = true; /* no ranges: the named objects cannot be followed */
        c->ranges_taken = p->walk_on; /* also the first GC's: MONITOR_GC from Initialize */
        if (c->ranges_taken)
            p->followed.ranges_gcs++;
        else
            p->followed.handle_gcs++;
    }
    return S_OK;
}

/* The runtime walks gen0 at each GC start under MONITOR_GC and reports objects per class: the
 * only trace of allocations it never reported (.NET 10 delegates and boxes). */
static HRESULT on_objects_allocated_by_class(hl_profiler *p, ULONG count, ClassID classes[],
                                             ULONG objects[]) {
    /* Only full mode sees every reported allocation, to subtract from the walk's counts, and
     * only with MONITOR_GC at every GC (`record --handles`) is the walk there at every GC. */
    if (p->active && p->handles)
        hl_gc_on_alloc_by_class(&p->gcs, count, classes, objects);
    return S_OK;
}

static HRESULT on_root_references2(hl_profiler *p, ULONG count, ObjectID roots[], uint32_t kinds[],
                                   uint32_t flags[], UINT_PTR ids[]) {
    if (p->active)
        hl_gc_on_roots(&p->gcs, count, roots, kinds, flags, ids);
    return S_OK;
}

/* With the heap walk on demand the ranges come from the EventPipe session instead (the same
 * ones: eventpipe.h), at every GC; these callbacks (walk GCs only) would count them twice. */
static HRESULT on_moved_references2(hl_profiler *p, ULONG count, ObjectID old_starts[],
                                    ObjectID new_starts[], SIZE_T lengths[]) {
    if (p->active && !p->sampling.ranges)
        hl_gc_on_ranges(&p->gcs, count, old_starts, new_starts, lengths);
    return S_OK;
}

static HRESULT on_surviving_references2(hl_profiler *p, ULONG count, ObjectID starts[],
                                        SIZE_T lengths[]) {
    if (p->active && !p->sampling.ranges)
        hl_gc_on_ranges(&p->gcs, count, starts, NULL, lengths);
    return S_OK;
}

static HRESULT on_gc_finished(hl_profiler *p) {
    if (p->active && p->followed.on) /* before the capture is published */
        hl_follow_gc_finished(&p->followed, p->info, p->gcs.current);
    if (p->active)
        hl_gc_on_finished(&p->gcs, p->info);
    if (p->walk_toggles && p->walk_on)
        gc_walk_set(p, false); /* also in empty mode: after the first GC, as when recording */
    return S_OK;
}

/* MONITOR_GC makes the runtime walk the whole heap after every GC, one ObjectReferences call per
 * live object. A GC that takes a snapshot keeps the walk, and so does every induced gen2 GC
 * (an EventPipe heap dump shares this walk: cutting it empties the dump); at any other GC a
 * failure HRESULT stops it at its first object (documented in corprof.idl). */
static HRESULT on_object_references(hl_profiler *p, ObjectID object, ClassID class_id, ULONG count,
                                    ObjectID refs[]) {
    if (p->active && hl_gc_on_object(&p->gcs, p->info, object, class_id, count, refs))
        return S_OK;
    return E_FAIL;
}

/* ---- threads ------------------------------------------------------------------------------ */

static void name_event_push(hl_profiler *p, const hl_name_event *e) {
    while (atomic_flag_test_and_set_explicit(&p->names_lock, memory_order_acquire))
        ; /* held for one small copy; the holder never waits for anything */
    uint64_t w = atomic_load_explicit(&p->names_written, memory_order_relaxed);
    uint64_t held = w - atomic_load_explicit(&p->names_read, memory_order_acquire);
    if (held < HL_NAME_EVENTS) {
        p->names[w % HL_NAME_EVENTS] = *e;
        atomic_store_explicit(&p->names_written, w + 1, memory_order_release);
    } else {
        atomic_fetch_add(&p->names_dropped, 1);
    }
    atomic_flag_clear_explicit(&p->names_lock, memory_order_release);
    if (held + 1 >= HL_NAME_EVENTS / 2)
        hl_collector_wake(p); /* faster than the collector's idle period: drain it now */
}

/* The managed threads alive, for thread statics (thread_statics.h): kept in the callbacks
 * themselves, so that no ThreadID outlives its thread (not in the empty profiler, whose
 * callbacks return at once). */
static HRESULT on_thread_created(hl_profiler *p, ThreadID thread) {
    if (p->gcs.tls_on && !p->empty)
        hl_thread_set_add(&p->gcs.threads, thread);
    return S_OK;
}

static HRESULT on_thread_destroyed(hl_profiler *p, ThreadID thread) {
    if (p->gcs.tls_on && !p->empty)
        hl_thread_set_remove(&p->gcs.threads, thread);
    return S_OK;
}

/* Thread statics are published as their class loads, before any thread can set them. */
static HRESULT on_class_load_finished(hl_profiler *p, ClassID cls, HRESULT status) {
    if (p->gcs.tls_on && p->active && !HR_FAILED(status))
        hl_tls_class_loaded(&p->gcs.tls_fields, p->info, cls);
    return S_OK;
}

static HRESULT on_thread_assigned(hl_profiler *p, ThreadID thread, DWORD os_tid) {
    /* Thread::HasStarted calls this on the new thread itself: its stack (stack_roots.h). */
    if (p->gcs.stack_roots_on && !p->empty)
        hl_stack_ranges_note_self(&p->gcs.stacks, (uint32_t)os_tid);
    if (p->active)
        name_event_push(p, &(hl_name_event){.thread = thread, .os_tid = os_tid});
    return S_OK;
}

static HRESULT on_thread_name_changed(hl_profiler *p, ThreadID thread, ULONG length, WCHAR name[]) {
    if (!p->active)
        return S_OK;
    hl_name_event e = {.thread = thread, .has_name = true};
    DWORD os_tid = 0;
    if (!HR_FAILED(info_get_thread_info(p->info, thread, &os_tid)))
        e.os_tid = os_tid;
    size_t n = 0;
    for (ULONG i = 0; i < length && name && n + 1 < sizeof e.name; i++)
        e.name[n++] = name[i] < 0x80 ? (char)name[i] : '?'; /* names are ids: ASCII is enough */
    e.name[n] = 0;
    name_event_push(p, &e);
    return S_OK;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static void runtime_version(hl_profiler *p) {
    uint16_t major = 0, minor = 0, build = 0, qfe = 0;
    if (!HR_FAILED(info_get_runtime_information(p->info, &major, &minor, &build, &qfe)))
        snprintf(p->runtime_version, sizeof p->runtime_version, "%u.%u.%u", major, minor, build);
}

/* This process's command line (/proc/self/cmdline, arguments joined by spaces) into `line`;
 * its length (0 when it cannot be read). */
static size_t command_line(char *line, size_t size) {
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    ssize_t n;
    while (len < size - 1 && (n = read(fd, line + len, size - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    while (len > 0 && line[len - 1] == 0)
        len--;
    for (size_t i = 0; i < len; i++)
        if (line[i] == 0)
            line[i] = ' ';
    line[len] = 0;
    return len;
}

/* Whether this descendant is to be recorded under `heaplens record --children[=PATTERN]`
 * (HEAPLENS_CHILDREN: the pattern, empty for every descendant; unset: none is): its command
 * line (arguments joined by spaces) contains PATTERN. */
static bool children_match(const char *pattern) {
    if (!pattern)
        return false;
    if (!*pattern)
        return true;
    char line[8192];
    return command_line(line, sizeof line) > 0 && strstr(line, pattern) != NULL;
}

/* A .NET process of the session that declines leaves a mark beside the session's socket,
 * `declined.PID` holding its command line, so that `heaplens record` can say which .NET
 * processes ran unrecorded (a launcher's child did the work). One small file: no thread, no
 * socket, nothing on stderr; a failure only loses the mark. */
static void session_mark_declined(const char *dir, int dir_len) {
    char path[sizeof the_profiler.socket_path + 32];
    int n = snprintf(path, sizeof path, "%.*s/declined.%ld", dir_len, dir, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[4096];
    size_t len = command_line(line, sizeof line);
    if (len > 0 && write(fd, line, len) < 0) {
        /* the mark stays, without its command line */
    }
    close(fd);
}

/* Whether this process is one to record, and where its collector connects (`connect_to`). The
 * runtime keeps its own copy of the environment and passes it to every child (Process.Start),
 * so each .NET descendant loads the collector too. HEAPLENS_PID (set by record between fork and
 * exec) names the program heaplens started: it records, to the session's socket. When the
 * program is not a .NET process (a script that starts one), the first .NET process to get here
 * claims the recording by creating a file beside the session's socket (O_EXCL: one winner).
 * Any other process declines at Initialize — the runtime then releases and unloads the
 * profiler; no thread, no socket — unless the session records descendants (HEAPLENS_CHILDREN)
 * and it matches: then it records to children.sock beside the session's socket, into a
 * database of its own. */
static bool session_claim(const char *socket_path, char *connect_to, size_t size) {
    const char *text = getenv("HEAPLENS_PID");
    if (!text || !*text || !socket_path || !*socket_path)
        return false; /* loaded without `heaplens record` */
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    bool is_program = *end == 0 && pid == (long)getpid();
    char claim[sizeof the_profiler.socket_path + 16];
    const char *slash = strrchr(socket_path, '/');
    int n = slash ? snprintf(claim, sizeof claim, "%.*s/recorded", (int)(slash - socket_path),
                             socket_path)
                  : -1;
    bool fits = n >= 0 && (size_t)n < sizeof claim;
    int fd = fits ? open(claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    if (fd >= 0)
        close(fd);
    if (is_program || fd >= 0) {
        n = snprintf(connect_to, size, "%s", socket_path);
        return n >= 0 && (size_t)n < size;
    }
    if (!fits || !children_match(getenv("HEAPLENS_CHILDREN"))) {
        if (slash)
            session_mark_declined(socket_path, (int)(slash - socket_path));
        return false;
    }
    n = snprintf(connect_to, size, "%.*s/children.sock", (int)(slash - socket_path), socket_path);
    return n >= 0 && (size_t)n < size;
}

/* Native children started with the C library's environment (system(), posix_spawn) lose the
 * session's variables too; they go before any managed code can copy the environment. */
static void forget_session_environment(void) {
    static const char *const names[] = {"CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER",
                                        "CORECLR_PROFILER_PATH", "CORECLR_PROFILER_PATH_64",
                                        "HEAPLENS_SOCKET", "HEAPLENS_SNAPSHOT", "HEAPLENS_PID",
                                        "HEAPLENS_CHILDREN", "HEAPLENS_MODE", "HEAPLENS_STACKS",
                                        "HEAPLENS_HANDLES", "HEAPLENS_COUNT", "HEAPLENS_STRINGS",
                                        "HEAPLENS_EXIT_NOTE_MS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
}

/* HEAPLENS_POOL_MB: the thread buffers' pool, shared by every allocating thread. */
static size_t pool_bytes(void) {
    const char *mb = getenv("HEAPLENS_POOL_MB");
    long v = mb ? strtol(mb, NULL, 10) : 0;
    return (size_t)(v > 0 && v <= 65536 ? v : HL_TBUF_POOL_DEFAULT_MB) << 20;
}

/* ---- modes ------------------------------------------------------------------------------ */

/* What each recording mode asks of the runtime. The one place the event flags are chosen.
 *   full     every allocation by ObjectAllocated (ENABLE_OBJECT_ALLOCATED sends every
 *            allocation down the runtime's slow path: 2-3x on allocation-heavy code; startup
 *            only, and it forbids detaching), with the heap walk on demand (below) unless
 *            HEAPLENS_HANDLES=1 (`record --handles`) keeps MONITOR_GC at every GC for handle
 *            lifetimes and ObjectsAllocatedByClass.
 *   sampled  no ObjectAllocated for small objects: identity only for the allocation samples'
 *            objects, followed through every GC, and for what snapshots name (collector/
 *            README.md, "Sampled mode follows its samples"), and the heap walk on demand
 *            (below); LOH and POH objects still
 *            by ObjectAllocated (HIGH_MONITOR_
 *            LARGEOBJECT_ALLOCATED, HIGH_MONITOR_PINNEDOBJECT_ALLOCATED: those allocations never
 *            use an allocation context, they always take the allocator's slow path, so the
 *            callback adds no slow path; and they are condemned only by gen2 GCs, so without
 *            the callback they would stay unknown until the next one).
 *   attach   as sampled, with only flags allowed after attach (corprof.idl
 *            COR_PRF_ALLOWABLE_AFTER_ATTACH, COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH: not the POH
 *            one, so POH objects are found by snapshots), with the heap walk on demand as
 *            well (MONITOR_GC set in InitializeForAttach turns background GC off until the
 *            detach); its first snapshot names the heap it found.
 *
 * The heap walk on demand (`walk_on_demand`). COR_PRF_MONITOR_GC costs the runtime, at every
 * GC, a walk of all of gen0 for ObjectsAllocatedByClass at its start (gcenv.ee.cpp
 * DiagGCStart; the .NET 11 flag that skips it, dotnet/runtime PR #123177, is not honoured by
 * 10.0.x: measured) and a scan of every root and handle at its end (GCProfileWalkHeap):
 * gen0 pauses 4x longer than without a profiler on examples/Workload. No mode needs either
 * except at the GCs that walk the heap (full mode follows moves by the ranges), so each has
 * MONITOR_GC on only at Initialize
 * (which turns background GC off for the process, as before: the model cannot follow a
 * background GC, whose survivors the runtime never tells a profiler) and during the GCs that
 * walk (gc_walk_set). Every GC is followed with HIGH_BASIC_GC (started, finished, generation
 * bounds), and its survivor ranges come from the in-process EventPipe session's keyword
 * GCHeapSurvivalAndMovement (GCBulkMovedObjectRanges, GCBulkSurvivingObjectRanges: the same
 * ranges MONITOR_GC gives, LOH/POH survivors included; eventpipe.h). Not from
 * HIGH_MONITOR_GC_MOVED_OBJECTS: on .NET 5+ the runtime hands MovedReferences only to
 * profilers with MONITOR_GC (profilepriv.inl ProfControlBlock::MovedReference filters on
 * IsProfilerTrackingGC; measured on 10.0.12: no range reached the profiler). If the session
 * cannot start, MONITOR_GC stays on and the ranges come from the callbacks (exact, slower).
 * Handle lifetimes are not recorded in these modes (HandleCreated needs MONITOR_GC). */
typedef struct hl_mode_spec {
    uint32_t mode; /* HL_MODE_* */
    const char *name;
    DWORD low, high;
    bool discover; /* no ObjectAllocated for small objects: identity by following samples
                    * (or, with HEAPLENS_CENSUS_CHECK, by discovery after GCs) */
    bool walk_on_demand; /* MONITOR_GC only at Initialize and the GCs that walk the heap */
} hl_mode_spec;

static const hl_mode_spec hl_modes[] = {
    {HL_MODE_FULL, "full",
     COR_PRF_ENABLE_OBJECT_ALLOCATED | COR_PRF_MONITOR_OBJECT_ALLOCATED | COR_PRF_MONITOR_GC |
         COR_PRF_MONITOR_SUSPENDS | COR_PRF_MONITOR_THREADS | COR_PRF_MONITOR_CLASS_LOADS,
     COR_PRF_HIGH_BASIC_GC, false, true},
    {HL_MODE_SAMPLED, "sampled",
     COR_PRF_MONITOR_GC | COR_PRF_MONITOR_SUSPENDS | COR_PRF_MONITOR_THREADS |
         COR_PRF_MONITOR_CLASS_LOADS,
     COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED | COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED |
         COR_PRF_HIGH_BASIC_GC,
     true, true},
    {HL_MODE_ATTACH, "attach",
     COR_PRF_MONITOR_GC | COR_PRF_MONITOR_SUSPENDS | COR_PRF_MONITOR_THREADS |
         COR_PRF_MONITOR_CLASS_LOADS,
     COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED | COR_PRF_HIGH_BASIC_GC, true, true},
};

static const hl_mode_spec *mode_spec(uint32_t mode) {
    for (size_t i = 0; i < sizeof hl_modes / sizeof hl_modes[0]; i++)
        if (hl_modes[i].mode == mode)
            return &hl_modes[i];
    return NULL;
}

/* HEAPLENS_MODE (set by `heaplens record --mode`): full (default) or sampled; 0 if unknown. */
static uint32_t mode_from_env(void) {
    const char *text = getenv("HEAPLENS_MODE");
    if (!text || !*text)
        return HL_MODE_FULL;
    for (size_t i = 0; i < sizeof hl_modes / sizeof hl_modes[0]; i++)
        if (hl_modes[i].mode != HL_MODE_ATTACH && strcmp(text, hl_modes[i].name) == 0)
            return hl_modes[i].mode;
    return 0;
}

/* How a session starts: at startup under `heaplens record` (Initialize, environment) or
 * attached to a running process by `heaplens attach` (InitializeForAttach, client data). */
typedef struct session_config {
    const char *socket_path;     /* where the writer listens */
    const char *snapshot_policy; /* HEAPLENS_SNAPSHOT / snapshot= */
    uint32_t mode;               /* HL_MODE_* */
    bool empty;                  /* HEAPLENS_EMPTY=1 (benchmark of the flags alone) */
    bool handles;                /* HEAPLENS_HANDLES=1 (`record --handles`): full mode keeps
                                  * MONITOR_GC at every GC (handle lifetimes, unreported counts) */
    bool stacks;                 /* allocation samples with stacks (EventPipe session) */
    const char *count;           /* HEAPLENS_COUNT: `--count` patterns, ';'-separated (rejit.h) */
    bool no_strings;             /* snapshots keep strings' lengths and hashes, no characters
                                  * (HEAPLENS_STRINGS=off / strings=off: --no-strings) */
    hl_census_choice census;     /* attach's census=on|off; DEFAULT: HEAPLENS_CENSUS decides
                                  * (`record --census` sets it) */
} session_config;

/* The one start shared by Initialize and InitializeForAttach: the mode's event mask, the
 * buffers, the GC queue, the collector thread, the sampling session. A failure stops what it
 * started (the runtime then unloads us). */
static HRESULT session_start(hl_profiler *p, IUnknown *info_unknown, const session_config *cfg) {
    const hl_mode_spec *spec = mode_spec(cfg->mode);
    if (!spec)
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION;
    for (int v = 15; v >= 5 && !p->info; v--) {
        void *info = NULL;
        if (clr_query_interface(info_unknown, &IID_ICorProfilerInfo_by_version[v], &info) == S_OK) {
            p->info = info;
            p->info_version = v;
        }
    }
    if (!p->info)
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION; /* runtime older than .NET Core 2 */
    int n = snprintf(p->socket_path, sizeof p->socket_path, "%s", cfg->socket_path);
    if (n < 0 || (size_t)n >= sizeof p->socket_path)
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION;
    /* `heaplens` checked the text; anything else gets the default (induced) */
    hl_snapshot_policy_parse(cfg->snapshot_policy, &p->policy, NULL, 0);
    const char *walks_bound = getenv("HEAPLENS_SNAPSHOT_WALKS_BOUND");
    p->policy.walks_unbounded = walks_bound && strcmp(walks_bound, "off") == 0;
    p->empty = cfg->empty;
    p->attach = cfg->mode == HL_MODE_ATTACH;

    /* HEAPLENS_CENSUS_CHECK=1 (tests only): sampled mode with ObjectAllocated as well, so that
     * every interval has both the census's counts and the reported ones, to compare. */
    DWORD low = spec->low;
    bool census_check = cfg->mode == HL_MODE_SAMPLED && getenv("HEAPLENS_CENSUS_CHECK") &&
                        strcmp(getenv("HEAPLENS_CENSUS_CHECK"), "1") == 0;
    if (census_check)
        low |= COR_PRF_ENABLE_OBJECT_ALLOCATED | COR_PRF_MONITOR_OBJECT_ALLOCATED;
    /* Counted sites: before the mask, so that no module load is missed. */
    if (cfg->count && *cfg->count && !cfg->empty) {
        p->rejit = hl_rejit_start(p->info, p->info_version, cfg->count,
                                  cfg->mode == HL_MODE_ATTACH);
        if (p->rejit)
            low |= HL_REJIT_EVENT_FLAGS;
    }
    /* HEAPLENS_EMPTY_MASK_OFF=LOW:HIGH (hex; benchmark, empty profiler only): bits of the
     * event mask the empty profiler leaves off, here and when the session starts
     * (eventpipe.c), to measure what each flag costs the runtime (bench/README.md, "Sampled
     * mode's floor on a service"). MONITOR_GC left off keeps background GC on. */
    DWORD high = spec->high;
    const char *mask_off = getenv("HEAPLENS_EMPTY_MASK_OFF");
    unsigned long off_low = 0, off_high = 0;
    if (cfg->empty && mask_off && sscanf(mask_off, "%lx:%lx", &off_low, &off_high) == 2) {
        p->bench_mask_off_low = (uint32_t)off_low;
        p->bench_mask_off_high = (uint32_t)off_high;
        low &= ~(DWORD)off_low;
        high &= ~(DWORD)off_high;
    }
    if (HR_FAILED(info_set_event_mask2(p->info, low, high))) {
        /* A runtime that refuses ReJIT (after attach with DOTNET_ProfApi_RejitOnAttach=0, or
         * too old): the session goes on without counting, which the recording says. */
        if (!p->rejit ||
            HR_FAILED(info_set_event_mask2(p->info, low & ~(DWORD)HL_REJIT_EVENT_FLAGS,
                                           high))) {
            hl_rejit_stop(p->rejit);
            p->rejit = NULL;
            return CORPROF_E_PROFILER_CANCEL_ACTIVATION;
        }
        hl_rejit_unsupported(p->rejit);
    }
    p->mode = cfg->mode;
    /* HEAPLENS_EMPTY_SAMPLES=1 (benchmark): the empty profiler's session enables the samples'
     * keyword too, as sampled mode's does; its callbacks still return at once, so the run
     * costs what the runtime charges for AllocationSampled (the event per sample, its
     * sampling distance drawn at every allocation context) and nothing of ours. */
    const char *empty_samples = getenv("HEAPLENS_EMPTY_SAMPLES");
    p->stacks = cfg->stacks &&
                (!cfg->empty || (empty_samples && strcmp(empty_samples, "1") == 0));

    /* The runtime dlclose()s a profiler on detach; our threads must never run unmapped code,
     * and a later attach finds the same library (its state reset by hl_session_reset). */
    Dl_info self;
    if (dladdr((void *)session_start, &self) && self.dli_fname)
        dlopen(self.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD);

    atomic_init(&p->next_id, 1);
    p->start_unix_ns = hl_now_unix_ns();
    p->start_mono_ns = hl_now_ns();
    runtime_version(p);
    if (hl_tbufs_init(&p->rings, pool_bytes()) != 0)
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION;
    hl_gc_queue_init(&p->gcs);
    p->gcs.string_chars = !cfg->no_strings;
    /* Thread statics: every managed thread from its creation on, or from EnumThreads after an
     * attach (thread_statics.h). */
    p->gcs.tls_on = !cfg->empty;
    /* A stack root's thread, by the threads' stacks: each noted on the thread itself, which
     * a thread that existed before an attach never is (stack_roots.h). The thread that loads
     * the profiler is noted now (the program's main thread, created before the profiler). */
    p->gcs.stack_roots_on = !cfg->empty && cfg->mode != HL_MODE_ATTACH;
    if (p->gcs.stack_roots_on)
        hl_stack_ranges_note_self(&p->gcs.stacks, (uint32_t)syscall(SYS_gettid));
    /* Sampled and attach sessions follow only their samples (collector/README.md, "Sampled
     * mode follows its samples"): no discovery at GCs; snapshots name the rest (after an
     * attach, the first snapshot names the heap it found). Not with the census's check, whose
     * ObjectAllocated gives every object an id anyway: that one discovers (discovery.h). */
    p->follow = spec->discover && !census_check;
    p->gcs.discover = spec->discover && !p->follow;
    p->gcs.discover_full_next = p->gcs.discover;
    /* Without ObjectAllocated small objects are counted by the census of gen0 (census.h). After
     * an attach the first GC's gen0 holds objects from before it: that walk only learns. */
    const char *census = getenv("HEAPLENS_CENSUS");
    bool census_off = cfg->census == HL_CENSUS_OFF ||
                      (cfg->census == HL_CENSUS_DEFAULT && census && strcmp(census, "off") == 0);
    p->census_off = spec->discover && !cfg->empty && census_off;
    hl_census_init(&p->gcs.census, spec->discover && !cfg->empty && !census_off);
    p->gcs.census.old_valid = cfg->mode != HL_MODE_ATTACH;
    /* Before the collector thread (its RUN_START says it). Handle lifetimes and the unreported
     * counts need MONITOR_GC at every GC; without the option none are kept, even if the
     * session fails to start and MONITOR_GC stays on anyway (a partial record would mislead). */
    p->handles = cfg->mode == HL_MODE_FULL && cfg->handles;
    /* In empty mode the collector thread still reports the run (flagged), but the callbacks
     * stay inactive: the benchmark measures the runtime's cost of the flags alone. */
    if (hl_collector_start(p) != 0) {
        hl_session_reset(p);
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION;
    }
    bool walk_on_demand = spec->walk_on_demand && !p->handles;
    p->walk_on_demand = walk_on_demand;
    p->active = !p->empty;
    /* After `active`: the session may deliver events before it returns. Without it the run
     * goes on without samples and GC reasons. The heap walk on demand needs the session's
     * survivor keyword (also in empty mode: it is part of the runtime's cost); without it
     * MONITOR_GC stays. The GC keyword brings each GC's true reason (GCStart), in every mode. */
    /* Sampled and attach sessions follow their objects by weak handles where the runtime has
     * them (ICorProfilerInfo13: .NET 7+; an attached profiler may call them too: follow.h) and
     * its samples name their object inside the allocation (AllocationSampled, .NET 10+;
     * GCAllocationTick fires before the object is whole): the session then goes without the
     * survivor keyword, whose walk of every GC's survivors was most of sampled mode's price on
     * programs whose objects live a little, and the ranges come from MONITOR_GC only at the
     * GCs that need them (follow.h). Elsewhere from the survivor keyword at every GC. */
    const char *forced = getenv("HEAPLENS_SAMPLE_SOURCE");
    bool follow_handles = p->follow && walk_on_demand && !cfg->empty && p->info_version >= 13 &&
                          (!p->stacks || (atoi(p->runtime_version) >= 10 &&
                                          !(forced && strcmp(forced, "tick") == 0)));
    if (hl_follow_init(&p->followed, follow_handles, p->attach) != 0)
        follow_handles = false;
    uint64_t keywords = HL_KEYWORD_GC | (walk_on_demand && !follow_handles
                                             ? HL_KEYWORD_GC_SURVIVAL_AND_MOVEMENT
                                             : 0);
    /* HEAPLENS_RANGES=off with the empty profiler (benchmark): the session without the
     * survivor ranges, to measure what the runtime's survivor walk costs; MONITOR_GC toggles
     * as with them. Ignored when recording (the model needs the ranges). */
    const char *ranges = getenv("HEAPLENS_RANGES");
    if (cfg->empty && ranges && strcmp(ranges, "off") == 0)
        keywords &= ~HL_KEYWORD_GC_SURVIVAL_AND_MOVEMENT;
    p->sampling.ranges = walk_on_demand && !follow_handles;
    /* HEAPLENS_SESSION=off (benchmark): no EventPipe session at all, to measure what starting
     * one costs the runtime (enabling Microsoft-Windows-DotNETRuntime makes its managed
     * NativeRuntimeEventSource build every event's metadata by reflection, on the program's
     * main thread at startup). Sampled mode then has no samples, GC reasons or promoted
     * bytes; the empty profiler without a session stands for sampled mode following by
     * handles (MONITOR_GC cleared after the first GC). Ignored in full mode (its ranges). */
    const char *session_env = getenv("HEAPLENS_SESSION");
    bool no_session = cfg->mode != HL_MODE_FULL && session_env && strcmp(session_env, "off") == 0;
    bool session = !no_session && hl_eventpipe_start(p, p->mode, p->stacks, keywords) == 0;
    p->walk_on = true; /* MONITOR_GC is on until the first GC ends */
    p->walk_toggles = walk_on_demand && ((session && p->sampling.session_on) || follow_handles ||
                                         (no_session && cfg->empty));
    /* else from the profiler callbacks, MONITOR_GC kept (or, following by handles, on at the
     * GCs that need them) */
    p->sampling.ranges = p->walk_toggles && !follow_handles;
    return S_OK;
}

static HRESULT on_initialize(hl_profiler *p, IUnknown *info_unknown) {
    char connect_to[sizeof p->socket_path];
    if (!session_claim(getenv("HEAPLENS_SOCKET"), connect_to, sizeof connect_to))
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION; /* before taking any reference */
    const char *empty = getenv("HEAPLENS_EMPTY");
    const char *stacks = getenv("HEAPLENS_STACKS"); /* "off": no samples */
    const char *handles = getenv("HEAPLENS_HANDLES");
    const char *strings = getenv("HEAPLENS_STRINGS"); /* "off": --no-strings */
    session_config cfg = {.socket_path = connect_to, .snapshot_policy = getenv("HEAPLENS_SNAPSHOT"),
                          .mode = mode_from_env(), .empty = empty && strcmp(empty, "1") == 0,
                          .stacks = !(stacks && strcmp(stacks, "off") == 0),
                          .handles = handles && strcmp(handles, "1") == 0,
                          .count = getenv("HEAPLENS_COUNT"),
                          .no_strings = strings && strcmp(strings, "off") == 0};
    HRESULT hr = session_start(p, info_unknown, &cfg);
    /* Only the recording's own program (not a descendant recorded into children.sock, whose
     * stderr its launcher may read) says that its exit waits for the collector. */
    const char *note = getenv("HEAPLENS_EXIT_NOTE_MS");
    char *note_end = NULL;
    long note_ms = note && *note ? strtol(note, &note_end, 10) : -1;
    if (hr == S_OK && note_ms >= 0 && note_ms <= 3600000 && *note_end == 0 &&
        strcmp(connect_to, getenv("HEAPLENS_SOCKET")) == 0) {
        p->exit_note = true;
        p->exit_note_ms = (unsigned)note_ms;
    }
    if (hr == S_OK)
        forget_session_environment();
    return hr;
}

/* An attach's session, as `heaplens attach` set it in the client data (hl_attach_config_parse):
 * the one reading of those settings, for a first attach and for a session resumed
 * (hl_profiler_session_resume). E_INVALIDARG when the data is not an attach config. */
static HRESULT attach_session_start(hl_profiler *p, IUnknown *info_unknown, const void *data,
                                    size_t size) {
    hl_attach_config a;
    if (!hl_attach_config_parse(data, size, &a))
        return E_INVALIDARG;
    session_config cfg = {.socket_path = a.socket_path, .snapshot_policy = a.snapshot_policy,
                          .mode = HL_MODE_ATTACH, .stacks = !a.no_stacks,
                          .count = a.count[0] ? a.count : NULL, .no_strings = a.no_strings,
                          .census = a.census};
    return session_start(p, info_unknown, &cfg);
}

/* `heaplens attach`: the client data (hl_attach_config_parse) says where the writer listens.
 * A failure here makes the runtime release and unload the profiler: nothing may be left
 * running (session_start stops what it started). */
static HRESULT on_initialize_for_attach(hl_profiler *p, IUnknown *info_unknown, void *data,
                                        UINT size) {
    hl_session_reset(p); /* a previous attach left its state: start fresh */
    return attach_session_start(p, info_unknown, data, size);
}

/* A file's first line, without its newline: false if it cannot be read. */
static bool read_line(const char *path, char *out, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0)
        return false;
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
    return true;
}

/* Threads that existed before the attach: the runtime reports names only when they change
 * (ThreadNameChanged), so the name of such a thread is its OS name, which the runtime sets from
 * Thread.Name and for its own threads (".NET TP Worker"), cut to 15 bytes by Linux. A thread
 * whose OS name is the process's (never named) gets none. Each also joins the thread set of
 * thread statics, safely against a thread that ends meanwhile (hl_thread_set_enum_begin). Runs
 * once, on the attach thread. */
static void catch_up_existing_threads(hl_profiler *p) {
    IUnknown *threads = NULL;
    ThreadID *all = NULL;
    size_t n_all = 0, cap = 0;
    hl_thread_set_enum_begin(&p->gcs.threads); /* before the list is taken */
    if (p->info_version < 4 || HR_FAILED(info_enum_threads(p->info, &threads)) || !threads) {
        hl_thread_set_enum_end(&p->gcs.threads, NULL, 0);
        return;
    }
    char process_name[64] = "";
    read_line("/proc/self/comm", process_name, sizeof process_name);
    ThreadID ids[32];
    ULONG got = 0;
    while (!HR_FAILED(thread_enum_next(threads, 32, ids, &got)) && got > 0) {
        for (ULONG i = 0; i < got; i++) {
            if (hl_mem_reserve((void **)&all, &cap, n_all + 1, sizeof *all, 64))
                all[n_all++] = ids[i];
            DWORD os_tid = 0;
            if (HR_FAILED(info_get_thread_info(p->info, ids[i], &os_tid)) || os_tid == 0)
                continue;
            hl_name_event e = {.thread = ids[i], .os_tid = os_tid};
            char path[64];
            snprintf(path, sizeof path, "/proc/self/task/%u/comm", (unsigned)os_tid);
            e.has_name = read_line(path, e.name, sizeof e.name) && e.name[0] &&
                         strcmp(e.name, process_name) != 0;
            if (e.has_name)
                name_event_push(p, &e);
        }
        if (got < 32)
            break;
    }
    thread_enum_release(threads);
    if (p->gcs.tls_on)
        hl_thread_set_enum_end(&p->gcs.threads, all, n_all);
    else
        hl_thread_set_enum_end(&p->gcs.threads, NULL, 0);
    hl_mem_free(all);
}

/* The attach is complete: Info calls work now. The threads that already exist are named, and
 * the first snapshot is taken right away (a GC forced from a thread of the collector's), so every
 * live object gets its id. */
static HRESULT on_profiler_attach_complete(hl_profiler *p) {
    if (!p->active)
        return S_OK;
    hl_rejit_begin(p->rejit); /* --count: counting is on when heaplens hears of the attach */
    catch_up_existing_threads(p);
    /* The collector thread asks for it once it has noted the classes loaded before the attach
     * (their thread statics named in this first snapshot). */
    atomic_store(&p->attach_snapshot, true);
    hl_collector_wake(p);
    return S_OK;
}

HRESULT hl_profiler_session_resume(hl_profiler *p, void *info, const void *data, size_t size) {
    HRESULT hr = attach_session_start(p, info, data, size);
    if (hr == S_OK)
        on_profiler_attach_complete(p);
    return hr;
}

/* After RequestProfilerDetach: no callback is running or will run again; the runtime releases
 * and dlclose()s us next (the library stays mapped: RTLD_NODELETE). */
static HRESULT on_profiler_detach_succeeded(hl_profiler *p) {
    hl_session_reset(p);
    /* Everything the session allocated is given back (hl_mem_stats_get says 0; its large
     * blocks were mappings of their own, unmapped already). The C library keeps the free pages
     * of its arenas, the runtime's included: give them back (collector/README.md, "Memory
     * after the detach"). */
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    const char *stats = getenv("HEAPLENS_STATS");
    if (stats && strcmp(stats, "1") == 0) {
        hl_mem_stats m = hl_mem_stats_get();
        fprintf(stderr, "heaplens: detached: the collector holds %llu heap bytes and %llu mapped "
                        "(at most %llu heap bytes at once)\n", (unsigned long long)m.heap_bytes,
                (unsigned long long)m.mapped_bytes, (unsigned long long)m.heap_peak_bytes);
    }
    return S_OK;
}

void hl_profiler_failing(hl_profiler *p) {
    if (!p->active || atomic_load(&p->stopping))
        return;
    p->active = false; /* as at Shutdown: late callbacks on other threads become no-ops */
    hl_rejit_stop(p->rejit);
    /* The writer takes the backlog in well under this (it gives a stalled writer 10 s itself):
     * only a collector stuck behind the failure (a fatal error inside a GC) reaches it. */
    hl_collector_stop_within(p, 20000);
}

static HRESULT on_shutdown(hl_profiler *p) {
    p->active = false; /* late callbacks on other threads become no-ops */
    hl_rejit_stop(p->rejit); /* its counters stay: the collector sends them at the end */
    hl_resident_exit();
    hl_collector_stop(p);
    return S_OK;
}

/* Counted sites (rejit.h): module loads queue, the runtime asks for a prepared body. */
static HRESULT on_module_load_finished(hl_profiler *p, ModuleID module, HRESULT status) {
    if (p->active && !HR_FAILED(status))
        hl_rejit_module_loaded(p->rejit, module, !p->attach);
    return S_OK;
}
static HRESULT on_get_rejit_parameters(hl_profiler *p, ModuleID module, uint32_t method,
                                       void *function_control) {
    return hl_rejit_parameters(p->rejit, module, method, function_control);
}
static HRESULT on_rejit_error(hl_profiler *p, ModuleID module, uint32_t method,
                              FunctionID function, HRESULT status) {
    (void)function;
    hl_rejit_error(p->rejit, module, method, status);
    return S_OK;
}

static HRESULT on_load_as_notification_only(hl_profiler *p, BOOL *notification_only) {
    (void)p;
    if (notification_only)
        *notification_only = 0; /* heaplens is the main profiler */
    return S_OK;
}

/* ---- the vtable --------------------------------------------------------------------------- */

/* One stub per callback we do not implement: same signature, returns S_OK. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define M(name, ...) static HRESULT stub_##name(hl_profiler *self, __VA_ARGS__) { return S_OK; }
#define M0(name) static HRESULT stub_##name(hl_profiler *self) { return S_OK; }
#include "collector/clr_callback_methods.h"
#undef M
#undef M0
#pragma GCC diagnostic pop

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const ICorProfilerCallback11Vtbl profiler_vtbl = {
    .QueryInterface = profiler_query_interface,
    .AddRef = profiler_add_ref,
    .Release = profiler_release,
#define M(name, ...) .name = stub_##name,
#define M0(name) .name = stub_##name,
#include "collector/clr_callback_methods.h"
#undef M
#undef M0
    /* What heaplens implements overrides the stubs above. */
    .Initialize = on_initialize,
    .InitializeForAttach = on_initialize_for_attach,
    .ProfilerAttachComplete = on_profiler_attach_complete,
    .ProfilerDetachSucceeded = on_profiler_detach_succeeded,
    .Shutdown = on_shutdown,
    .ObjectAllocated = on_object_allocated,
    .RuntimeSuspendStarted = on_runtime_suspend_started,
    .RuntimeResumeFinished = on_runtime_resume_finished,
    .GarbageCollectionStarted = on_gc_started,
    .MovedReferences2 = on_moved_references2,
    .SurvivingReferences2 = on_surviving_references2,
    .GarbageCollectionFinished = on_gc_finished,
    .ObjectReferences = on_object_references,
    .RootReferences2 = on_root_references2,
    .ObjectsAllocatedByClass = on_objects_allocated_by_class,
    .HandleCreated = on_handle_created,
    .HandleDestroyed = on_handle_destroyed,
    .ClassLoadFinished = on_class_load_finished,
    .ThreadCreated = on_thread_created,
    .ThreadDestroyed = on_thread_destroyed,
    .ThreadAssignedToOSThread = on_thread_assigned,
    .ThreadNameChanged = on_thread_name_changed,
    .LoadAsNotificationOnly = on_load_as_notification_only,
    .EventPipeEventDelivered = hl_eventpipe_on_event,
    .ModuleLoadFinished = on_module_load_finished,
    .GetReJITParameters = on_get_rejit_parameters,
    .ReJITError = on_rejit_error,
};
#pragma GCC diagnostic pop

/* ---- class factory ------------------------------------------------------------------------ */

typedef struct class_factory class_factory;
typedef struct class_factory_vtbl {
    HRESULT (*QueryInterface)(class_factory *self, const GUID *iid, void **out);
    ULONG (*AddRef)(class_factory *self);
    ULONG (*Release)(class_factory *self);
    HRESULT (*CreateInstance)(class_factory *self, IUnknown *outer, const GUID *iid, void **out);
    HRESULT (*LockServer)(class_factory *self, BOOL lock);
} class_factory_vtbl;
struct class_factory {
    const class_factory_vtbl *vtbl;
};

static HRESULT factory_query_interface(class_factory *self, const GUID *iid, void **out) {
    bool ok = guid_equal(iid, &IID_IUnknown) || guid_equal(iid, &IID_IClassFactory);
    *out = ok ? self : NULL;
    return ok ? S_OK : E_NOINTERFACE;
}
static ULONG factory_add_ref(class_factory *self) { (void)self; return 2; }
static ULONG factory_release(class_factory *self) { (void)self; return 1; }
static HRESULT factory_lock_server(class_factory *self, BOOL lock) { (void)self, (void)lock; return S_OK; }

static HRESULT factory_create_instance(class_factory *self, IUnknown *outer, const GUID *iid,
                                       void **out) {
    (void)self;
    if (outer)
        return CLASS_E_NOAGGREGATION;
    the_profiler.vtbl = &profiler_vtbl;
    return profiler_query_interface(&the_profiler, iid, out);
}

static const class_factory_vtbl factory_vtbl = {
    .QueryInterface = factory_query_interface,
    .AddRef = factory_add_ref,
    .Release = factory_release,
    .CreateInstance = factory_create_instance,
    .LockServer = factory_lock_server,
};
static class_factory the_factory = {&factory_vtbl};

/* The runtime dlsym()s this (C linkage, default visibility) and asks it for IClassFactory. */
EXPORT HRESULT DllGetClassObject(const GUID *clsid, const GUID *iid, void **out);

EXPORT HRESULT DllGetClassObject(const GUID *clsid, const GUID *iid, void **out) {
    if (!out)
        return E_INVALIDARG;
    *out = NULL;
    if (!guid_equal(clsid, &CLSID_heaplens))
        return CLASS_E_CLASSNOTAVAILABLE;
    return factory_query_interface(&the_factory, iid, out);
}
