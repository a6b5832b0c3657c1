/* main.c — `heaplens`: one executable, subcommands dispatched through a table (git.c style). */
#include "cli/commands.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct query_command {
    const char *name;
    int (*handler)(int argc, char **argv);
    const char *summary; /* one line, for `heaplens --help` */
    const char *usage;   /* for `heaplens COMMAND --help` */
} query_command;

#define HELP_OPTION "  -h, --help           show this help\n"
#define JSON_OPTION "  --json               print JSON instead of a table\n"

static const query_command commands[] = {
    {
        .name = "record",
        .handler = cmd_record,
        .summary = "run a program with the collector and store what it allocates and what each GC "
                   "does",
        .usage = "usage: heaplens record [-o FILE] [--mode full|sampled] [--stacks on|off]\n"
                 "                       [--census on|off] [--snapshot POLICY] [--no-strings]\n"
                 "                       [--handles]\n"
                 "                       [--children[=PATTERN]] [--count PATTERN]... [--force]\n"
                 "                       [-q] [--json]\n"
                 "                       [--] PROGRAM [ARGS...]\n"
                 "\n"
                 "Runs PROGRAM with the heaplens collector loaded and stores what it allocates\n"
                 "and what each GC does in a heaplens database (one SQLite file). Exits with\n"
                 "PROGRAM's exit status (128+N when a signal N ended it). While it runs,\n"
                 "'heaplens snapshot PID' takes a heap snapshot on demand.\n"
                 "\n"
                 "options:\n"
                 "  -o, --output FILE    the database to write (default:\n"
                 "                       heaplens-PROGRAM-YYYYMMDD-HHMMSS.db)\n"
                 "  --mode MODE          full (default): every allocation counted, by type and\n"
                 "                       thread (the program runs 1.6x slower, up to 3-4x on\n"
                 "                       allocation-heavy code: README, 'Costs'); sampled: no\n"
                 "                       per-allocation callback; allocations counted per\n"
                 "                       type by a census of gen0, GCs, snapshots and leaks\n"
                 "                       exact; the objects of the allocation samples of\n"
                 "                       --stacks on are followed through every GC, so\n"
                 "                       survivors between snapshots and figures per thread\n"
                 "                       are ESTIMATED from them (every command says so)\n"
                 "  --snapshot POLICY    when to take a heap snapshot (repeat to combine):\n"
                 "                       induced (default: every GC.Collect), gen2 (every full\n"
                 "                       GC), every:N (every Nth GC), none; triggers:\n"
                 "                       gen2-growth:PCT (gen2 after a full GC grew by PCT %\n"
                 "                       since the last snapshot), heap:SIZE (the heap after a\n"
                 "                       GC reached SIZE: bytes, K, M, G), limit:PCT (... PCT %\n"
                 "                       of the memory limit: DOTNET_GCHeapHardLimit, else the\n"
                 "                       cgroup's, else physical memory), pause:MS (after a GC\n"
                 "                       that paused longer), every:Ns (every N seconds); each\n"
                 "                       snapshot stores its trigger and reason (snapshots);\n"
                 "                       induced, gen2, every:N skip a GC's snapshot while\n"
                 "                       the collector holds 4 or more snapshots, 64 MiB or\n"
                 "                       more, not yet applied (counted and said:\n"
                 "                       snapshots_skipped_queued; heaplens gcs shows which)\n"
                 "  --max-snapshots N    at most N snapshots taken by --snapshot policies\n"
                 "                       (1 to 1,000,000; heaplens snapshot PID is not counted)\n"
                 "  --snapshot-interval S  at least S seconds between two snapshots of the\n"
                 "                       triggers gen2-growth, heap, limit, pause (default 10;\n"
                 "                       0: none; at most 31,622,400, a year); one due sooner\n"
                 "                       waits for a later GC\n"
                 "  --no-strings         snapshots keep each string's length and a hash of its\n"
                 "                       contents, not its first 64 characters (privacy)\n"
                 "  --stacks on|off      allocation samples with call stacks (default on): the\n"
                 "                       runtime samples one allocation per 100 KiB on average\n"
                 "                       (.NET 10; older runtimes: GCAllocationTick, biased)\n"
                 "                       and heaplens walks its stack (tables alloc_samples,\n"
                 "                       stacks, frames)\n"
                 "  --census on|off      sampled mode: the census of gen0 at every GC (default\n"
                 "                       on), which counts small-object allocations per type\n"
                 "                       exactly by reading gen0 once per GC (0.02-0.06 of a\n"
                 "                       service's CPU per request: README, 'Costs');\n"
                 "                       off: they are ESTIMATED from the samples, as every\n"
                 "                       command, the report and the summary say. Refused in\n"
                 "                       full mode (every allocation counted there).\n"
                 "                       Sets HEAPLENS_CENSUS for the program\n"
                 "  --handles            full mode: also record every GC handle's lifetime\n"
                 "                       (table handles) and the counts of allocations the\n"
                 "                       runtime does not report (delegates, boxes). Costs the\n"
                 "                       runtime's GC monitoring at every GC: a walk of gen0\n"
                 "                       at each GC start and of every root and handle at its\n"
                 "                       end (gen0 pauses several times longer). Without it\n"
                 "                       handles are known from the roots of each snapshot\n"
                 "  --children[=PATTERN] record .NET descendants of PROGRAM too, each into its\n"
                 "                       own database beside FILE named from FILE's stem and\n"
                 "                       its pid (app.db -> app.12345.db); with PATTERN only\n"
                 "                       those whose command line (arguments joined by spaces)\n"
                 "                       contains PATTERN (a plain substring, no wildcards):\n"
                 "                       --children=testhost -- dotnet test. A descendant still\n"
                 "                       running 5 s after PROGRAM exited stops being recorded\n"
                 "                       (status truncated). Without it descendants are never\n"
                 "                       recorded\n"
                 "  --count PATTERN      count exactly how often each allocating instruction\n"
                 "                       (newobj of a class, newarr, box of a value type) of\n"
                 "                       the methods named Namespace.Type.Method that match\n"
                 "                       PATTERN (* matches any text, dots too) runs: the\n"
                 "                       methods are recompiled (ReJIT) with a counter before\n"
                 "                       each, in every module as it loads. Repeatable.\n"
                 "                       'heaplens allocations FILE --by site' shows them. Not\n"
                 "                       counted: allocations in methods not matched, in the\n"
                 "                       runtime's native code, in dynamic methods; which\n"
                 "                       generic instantiation allocated at a shared site\n"
                 "  --force              replace FILE if it exists (and the descendants' files),\n"
                 "                       never one still being recorded; kept if the new one\n"
                 "                       cannot be created (an old FILE a killed heaplens left\n"
                 "                       as .FILE.heaplens-replaced-PID is put back first)\n"
                 "  -q, --quiet          no summary at the end\n"
                 "  --json               print the summary as JSON, on one line: the last of\n"
                 "                       standard output, which the program shares (a line of\n"
                 "                       its own: after a newline if the program's output may\n"
                 "                       not end with one)\n" HELP_OPTION,
    },
    {
        .name = "attach",
        .handler = cmd_attach,
        .summary = "attach to a running .NET process, record it for a while, and detach",
        .usage = "usage: heaplens attach PID [-o FILE] [--duration SECONDS] [--snapshot POLICY]...\n"
                 "                       [--max-snapshots N] [--snapshot-interval S]\n"
                 "                       [--no-strings] [--stacks on|off] [--census on|off]\n"
                 "                       [--timeout SECONDS] [--count PATTERN]...\n"
                 "                       [--force] [-q] [--json]\n"
                 "\n"
                 "Loads the heaplens collector into the running .NET process PID (through its\n"
                 "diagnostic socket; .NET 5 or later, same user) and stores what each GC does\n"
                 "in a heaplens database, as 'heaplens record' does (run.mode 'attach'). A heap\n"
                 "snapshot is taken right after attaching (every live object gets its id), one\n"
                 "when the session ends, one on 'heaplens snapshot PID', and by POLICY. The\n"
                 "session ends after SECONDS, at Ctrl-C, or when the process exits; then the\n"
                 "collector detaches and the process runs on unchanged (the detach waits at\n"
                 "most 10 s for the last snapshot behind the program's own GCs, 60 s for its\n"
                 "own GC: a program whose GCs come faster than the collector applies them\n"
                 "ends without it, and the recording says why). Ctrl-C again during the\n"
                 "detach: at once, without the last snapshot unless it is already taken (the\n"
                 "recording is finished whole; a signal sent twice at once, as coreutils'\n"
                 "timeout does, counts once).\n"
                 "Allocations are counted per type by a census of gen0 at each GC (exact),\n"
                 "per thread and stack estimated from samples; the samples' objects are\n"
                 "followed through every GC and snapshots name the rest, so survivors between\n"
                 "snapshots are estimated (as in 'record --mode sampled').\n"
                 "\n"
                 "options:\n"
                 "  -o, --output FILE    the database to write (default:\n"
                 "                       heaplens-NAME-PID-YYYYMMDD-HHMMSS.db)\n"
                 "  --duration SECONDS   end the session after this long (1 to 2,678,400, 31\n"
                 "                       days; default: Ctrl-C)\n"
                 "  --snapshot POLICY    when to take a heap snapshot besides the first and\n"
                 "                       last (repeat to combine): induced (default: every\n"
                 "                       GC.Collect), gen2, every:N, none, and the triggers\n"
                 "                       gen2-growth:PCT, heap:SIZE, limit:PCT, pause:MS,\n"
                 "                       every:Ns (as 'heaplens record --help' says)\n"
                 "  --max-snapshots N    at most N snapshots taken by --snapshot policies\n"
                 "                       (1 to 1,000,000)\n"
                 "  --snapshot-interval S  at least S seconds between two snapshots of the\n"
                 "                       triggers gen2-growth, heap, limit, pause (default 10;\n"
                 "                       0: none; at most 31,622,400, a year)\n"
                 "  --no-strings         snapshots keep each string's length and a hash of its\n"
                 "                       contents, not its first 64 characters (privacy)\n"
                 "  --stacks on|off      allocation samples with their call stacks (default\n"
                 "                       on); off: none, nothing per thread or stack, and on\n"
                 "                       .NET 8/9 the cheaper way of following objects (weak\n"
                 "                       handles instead of the runtime's survivor walk)\n"
                 "  --census on|off      the census of gen0 at every GC (default on: exact\n"
                 "                       allocation counts per type, for reading gen0 once\n"
                 "                       per GC); off: allocations per type ESTIMATED from the\n"
                 "                       samples, as every command says. Without the option\n"
                 "                       the process's own HEAPLENS_CENSUS decides\n"
                 "  --timeout SECONDS    how long the runtime may wait for a background GC to\n"
                 "                       end before it gives the attach up (1 to 3,600;\n"
                 "                       default 10)\n"
                 "  --count PATTERN      count exactly how often each allocating instruction of\n"
                 "                       the methods matching PATTERN (Namespace.Type.Method, *\n"
                 "                       wildcards) runs, as 'record --count' does: the methods\n"
                 "                       are recompiled (ReJIT) when the attach completes and\n"
                 "                       restored at the end; calls already running are not\n"
                 "                       counted. Repeatable. The runtime then keeps the\n"
                 "                       collector loaded (dormant, its memory given back)\n"
                 "                       until the process exits; a later 'heaplens attach'\n"
                 "                       reaches it over its own socket\n"
                 "  --force              replace FILE if it exists, never one still being\n"
                 "                       recorded; kept if the new one cannot be created or the\n"
                 "                       attach fails (an old FILE a killed heaplens left as\n"
                 "                       .FILE.heaplens-replaced-PID is put back first)\n"
                 "  -q, --quiet          no messages and no summary\n"
                 "  --json               print the summary as JSON\n" HELP_OPTION,
    },
    {
        .name = "snapshot",
        .handler = cmd_snapshot,
        .summary = "take a heap snapshot of a running, recorded program now",
        .usage = "usage: heaplens snapshot PID [--timeout SECONDS] [--json]\n"
                 "\n"
                 "Asks the program with process id PID, running under 'heaplens record', for a\n"
                 "heap snapshot now: the collector forces a full GC from its own thread and the\n"
                 "command returns once the snapshot is stored in the recording (its number, GC,\n"
                 "objects and time), or says that it was taken but lost, and why (exit 1).\n"
                 "\n"
                 "options:\n"
                 "  --timeout SECONDS    give up waiting after this long (1 to 86,400; default:\n"
                 "                       after 120 s without a sign of the snapshot; one still\n"
                 "                       arriving or being written is waited for)\n" JSON_OPTION
                     HELP_OPTION,
    },
    {
        .name = "snapshots",
        .handler = cmd_snapshots,
        .summary = "list the heap snapshots: size, roots, handles and the model's self-check",
        .usage = "usage: heaplens snapshots FILE [--json]\n"
                 "\n"
                 "One row per heap snapshot: the GC it was taken at, what triggered it, objects,\n"
                 "references, roots, handle roots and bytes, frozen objects pulled in by\n"
                 "references, and the self-check: 'missing' objects the model holds that the\n"
                 "runtime's walk lacks, 'extra' walked objects the model never saw allocated,\n"
                 "'unreported' walked objects the runtime allocated without reporting them\n"
                 "(delegates and boxes on .NET 10: not a model error); 'walk (ms)' the time\n"
                 "the runtime took to walk the heap; a trigger's reason below the table.\n"
                 "Then the checkpoints the program wrote (EventSource 'HeapLens'), with the\n"
                 "number of GCs finished when each was written.\n"
                 "\n"
                 "options:\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "info",
        .handler = cmd_info,
        .summary = "show a recording: the run, its counters and totals",
        .usage = "usage: heaplens info FILE [--json]\n"
                 "\n"
                 "Shows the recorded run (command, runtime, mode, status, times), the accuracy\n"
                 "counters and totals: GCs per generation, objects, types, threads, file size.\n"
                 "\n"
                 "options:\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "gcs",
        .handler = cmd_gcs,
        .summary = "list the GCs: generation, reason, pause, sizes before and after",
        .usage = "usage: heaplens gcs FILE [--json]\n"
                 "\n"
                 "One row per GC, in the order the runtime ran them: ordinal, condemned\n"
                 "generation, reason, induced, compacting, pause, bytes in use per generation\n"
                 "(gen0, gen1, gen2, loh, poh) before -> after, and bytes that survived; in\n"
                 "sampled and attach recordings 'census (ms)', the time the census of gen0\n"
                 "added to the pause. When some GC went without a snapshot due at it,\n"
                 "'snapshot' says which and why: 'skipped (held)', a --snapshot policy's, not\n"
                 "taken while the collector held 4 or more snapshots of 64 MiB or more;\n"
                 "'skipped (detach)', an attach session's detach past its bound built none.\n"
                 "--json gives it per GC as snapshot_skipped: \"held\", \"detach\" or null\n"
                 "(none skipped, or a recording before schema 9).\n"
                 "\n"
                 "options:\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "allocations",
        .handler = cmd_allocations,
        .summary = "count and bytes allocated per type, most bytes first",
        .usage = "usage: heaplens allocations FILE [--json] [--top K] [--thread TID|NAME]\n"
                 "                       [--by type|site] [--between FROM..TO]\n"
                 "\n"
                 "Objects allocated during the run, per type: count and bytes, most bytes first.\n"
                 "In a sampled or attach recording a row marked ~ (JSON \"estimated\": true)\n"
                 "includes allocations estimated from the samples: after the last GC, in a GC\n"
                 "interval no census counted, or any row of one thread. The JSON head's\n"
                 "\"estimated\" is true when some figure it gives (the total, a row) is one.\n"
                 "With --by site, the counted sites of a recording made with --count: how many\n"
                 "times each allocating IL instruction of the matched methods ran, exactly, most\n"
                 "first (method, IL offset, kind, type), and the matched methods that were not\n"
                 "rewritten, with the reason.\n"
                 "\n"
                 "options:\n" JSON_OPTION
                 "  --top K              show only the K types (or sites) first in the order\n"
                 "  --thread TID|NAME    only allocations of this thread (OS thread id or\n"
                 "                       managed thread name); not with --by site\n"
                 "  --by type|site       per type (default) or per counted site\n"
                 "  --between FROM..TO   only allocations between two checkpoints the program\n"
                 "                       wrote (EventSource 'HeapLens', Checkpoint(name)), per GC\n"
                 "                       interval: made after the last GC before FROM began and\n"
                 "                       before the last GC before TO began (exact when the\n"
                 "                       program calls GC.Collect() before each checkpoint)\n"
                 HELP_OPTION,
    },
    {
        .name = "survivors",
        .handler = cmd_survivors,
        .summary = "objects alive after a GC, by generation and type",
        .usage = "usage: heaplens survivors FILE [--gc N] [--top K] [--by age] [--json]\n"
                 "\n"
                 "Objects alive right after GC N, grouped by generation (gen0, gen1, gen2, loh,\n"
                 "poh, nongc) and type: count and bytes, by generation, then most bytes first.\n"
                 "With --by age, the object-age histogram: grouped by how many GCs they have\n"
                 "survived (1: allocated since the GC before), then generation and type.\n"
                 "\n"
                 "options:\n"
                 "  --gc N               the GC (ordinal from 1; default: the last one)\n"
                 "  --top K              only the K groups with the most bytes\n"
                 "  --by age             group by age in GCs first (default: by generation)\n"
                 JSON_OPTION HELP_OPTION,
    },
    {
        .name = "stacks",
        .handler = cmd_stacks,
        .summary = "who allocates: the heaviest allocation call stacks, and by method",
        .usage = "usage: heaplens stacks FILE [--type NAME] [--top K] [--depth N]\n"
                 "                      [--by allocated|survived|mid-life|method] [--method NAME]\n"
                 "                      [--gc N | --interval A..B] [--sort bytes|count] [--json]\n"
                 "                      [--speedscope OUT]\n"
                 "\n"
                 "The allocation sites -- a call stack and the type allocated there -- with the\n"
                 "most bytes, innermost frame (the allocating method) first. Recursion is folded:\n"
                 "a block of frames repeated back to back is shown once with its repeats (x3),\n"
                 "and stacks that differ only in those repeats are one site. The sampled\n"
                 "allocations say where; each type's sites are scaled to its allocations as\n"
                 "'heaplens allocations' gives them (its exact count in full mode), so that the\n"
                 "sites add up to the total of 'heaplens info' (types never sampled and\n"
                 "allocations the runtime did not report are sites of their own).\n"
                 "\n"
                 "options:\n"
                 "  --type NAME          only this type: its full name, or the name without\n"
                 "                       namespaces (List<Item>)\n"
                 "  --top K              show the K heaviest sites or methods (default 10)\n"
                 "  --depth N            show N frames of each site (default 12 in text, every\n"
                 "                       frame in JSON)\n"
                 "  --by survived        only sampled objects that were promoted to gen2\n"
                 "  --by mid-life        only those promoted to gen2 that then died there\n"
                 "  --by method          the methods: inclusive (allocated in the method and what\n"
                 "                       it calls, recursion once) and exclusive (in the method)\n"
                 "  --method NAME        one method's callers and callees with their shares (its\n"
                 "                       full name or its end: Type.Method)\n"
                 "  --gc N               only allocations made before GC N (after GC N-1);\n"
                 "                       the last GC + 1: those made after the last GC\n"
                 "  --interval A..B      only allocations made before GCs A to B\n"
                 "  --sort bytes|count   rank by bytes (default) or allocations\n"
                 "  --speedscope OUT     write every site (or the top K) as a speedscope file,\n"
                 "                       https://www.speedscope.app: a profile weighted by bytes,\n"
                 "                       one by allocations\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "retention",
        .handler = cmd_retention,
        .summary = "what keeps the most memory alive in a heap snapshot: retained sizes",
        .usage = "usage: heaplens retention FILE [--snapshot S] [--top K] [--by object|type]\n"
                 "                          [--json] [--progress]\n"
                 "\n"
                 "The dominator tree of a heap snapshot (every GC root under one virtual root):\n"
                 "an object retains what only it keeps alive, itself included. Shows the top K\n"
                 "retainers with their type, retained bytes, retained object count and shallow\n"
                 "size; a collection's type is followed by its element type ('System.Object[] of\n"
                 "App.Session'). --by type: what all instances of a type retain together, each\n"
                 "object counted once. The first run on a snapshot stores the retained sizes in\n"
                 "FILE (tables retention, retention_types); later runs read them back.\n"
                 "\n"
                 "options:\n"
                 "  --snapshot S         the snapshot (default: the last one)\n"
                 "  --top K              show the K largest (default 20)\n"
                 "  --by object|type     rank objects (default) or types\n"
                 "  --progress           report progress and step times on stderr (default: only\n"
                 "                       when stderr is a terminal)\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "roots",
        .handler = cmd_roots,
        .summary = "why an object is alive: the shortest path from a GC root to it",
        .usage = "usage: heaplens roots FILE (--object ID | --type NAME) [--snapshot S] [--all]\n"
                 "                      [--limit N] [--json] [--progress]\n"
                 "\n"
                 "The shortest path of references from a GC root to an object of a heap\n"
                 "snapshot, each hop with its object id, size and type, and the root with its\n"
                 "kind (stack, handle, finalizer, other) and flags: a static by its name (a\n"
                 "thread static with its thread), a stack root with its frame's method and,\n"
                 "where the recording found it, its thread (the one thread whose stack held\n"
                 "the object in the snapshot's GC; record only). --type NAME picks the\n"
                 "instance of that type that retains the most: its full name, or the name\n"
                 "without namespaces (Dictionary<Int32, Customer>+Entry[]). Weak roots keep\n"
                 "nothing alive and are not used.\n"
                 "\n"
                 "options:\n"
                 "  --object ID          the object (its id, as other commands show it)\n"
                 "  --type NAME          the instance of type NAME with the largest retained size\n"
                 "  --snapshot S         the snapshot (default: the last one)\n"
                 "  --all                one shortest path from each rooted object that reaches\n"
                 "                       it, nearest first\n"
                 "  --limit N            with --all, at most N paths (1 to 1,000,000; default\n"
                 "                       10)\n"
                 "  --progress           report progress on stderr\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "leaks",
        .handler = cmd_leaks,
        .summary = "leak suspects: types that keep growing across snapshots, what holds them",
        .usage = "usage: heaplens leaks FILE [--with FILE2...] [--top K] [--all] [--json]\n"
                 "                      [--progress]\n"
                 "\n"
                 "Ranks leak suspects: types whose live objects and bytes keep growing from heap\n"
                 "snapshot to heap snapshot (those taken after full GCs), most suspect first --\n"
                 "by how much more their instances retain at the end. For each: the growth,\n"
                 "objects per snapshot, the object holding most instances (found through the\n"
                 "dominator tree, past arrays and collections) and the shortest path from a GC\n"
                 "root through it. A type that grows and then stays flat (a cache that warmed\n"
                 "up) or goes up and down (churn) is not a suspect.\n"
                 "\n"
                 "With --with, across files: the last snapshot of FILE, FILE2, ... in that order\n"
                 "(heap dumps of one process taken one after another and imported with\n"
                 "'heaplens import', or recordings), counted per type name. A .gcdump has no\n"
                 "object identity, so nothing is followed from file to file: no retained sizes,\n"
                 "holders or paths (run 'heaplens retention' or 'roots' on the last file).\n"
                 "\n"
                 "options:\n"
                 "  --with FILE2...      compare FILE with these files, by type (each file\n"
                 "                       once: one given twice, by any name, is refused)\n"
                 "  --top K              show at most K types (default 10)\n"
                 "  --all                also show types that grew but are not suspects\n"
                 "  --progress           report progress on stderr\n" JSON_OPTION HELP_OPTION,
    },
    {
        .name = "diff",
        .handler = cmd_diff,
        .summary = "what changed between two heap snapshots, per type: new, dead, survived",
        .usage = "usage: heaplens diff FILE [@A @B] [--from S1] [--to S2] [--between A..B]\n"
                 "                     [--to-file FILE2] [--top K] [--all] [--json]\n"
                 "\n"
                 "Compares two heap snapshots by object identity, per type: objects new in S2,\n"
                 "dead since S1 and survived, with their bytes; the types that grew most first.\n"
                 "With --to-file, S2 comes from another recording of the same program: an object\n"
                 "survives when the same allocation number has the same type in both (exact for\n"
                 "a program that allocates the same way on every run).\n"
                 "\n"
                 "A snapshot is its number or @CHECKPOINT: the snapshot taken at the GC a\n"
                 "checkpoint of the program follows (a GC.Collect() right before the checkpoint\n"
                 "takes one). 'diff FILE @A @B' and '--between A..B' compare two checkpoints.\n"
                 "\n"
                 "options:\n"
                 "  --from S1            the earlier snapshot (default: the one before S2; with\n"
                 "                       --to-file, the last snapshot of FILE)\n"
                 "  --to S2              the later snapshot (default: the last one)\n"
                 "  --between A..B       from checkpoint A to checkpoint B (--from @A --to @B)\n"
                 "  --to-file FILE2      read S2 from this recording (not FILE itself)\n"
                 "  --top K              show at most K types\n"
                 "  --all                also show types that did not change\n" JSON_OPTION
                     HELP_OPTION,
    },
    {
        .name = "import",
        .handler = cmd_import,
        .summary = "a .gcdump (dotnet-gcdump, dotnet-monitor, PerfView) as a heaplens database",
        .usage = "usage: heaplens import FILE.gcdump [-o DB] [--json]\n"
                 "\n"
                 "Reads a .gcdump (the heap graph dotnet-gcdump, dotnet-monitor and PerfView\n"
                 "write) into a new heaplens database with one snapshot: every object with its\n"
                 "type, size and references, and the roots by kind (local variables, handles:\n"
                 "strong, pinning; finalizer; static variables and others as 'other').\n"
                 "snapshots, retention, roots, leaks, diff and report work on it. A .gcdump has\n"
                 "no object identity (ids are its node numbers + 1: diff and leaks across\n"
                 "imported files compare by type), no generations (stored as 2), no field\n"
                 "names or values, and no allocations. Types keep their names, without the size\n"
                 "buckets dotnet-gcdump appends (' (Bytes > 10K)'). The file's own metadata is in\n"
                 "the table imports.\n"
                 "\n"
                 "options:\n"
                 "  -o, --output DB      the database to write (default: FILE with .db for\n"
                 "                       .gcdump); never overwritten\n"
                 "  --json               print what was imported as JSON on stdout (without it,\n"
                 "                       one line on stderr)\n" HELP_OPTION,
    },
    {
        .name = "export",
        .handler = cmd_export,
        .summary = "a heap snapshot as a .gcdump for dotnet-gcdump report, PerfView, Visual Studio",
        .usage = "usage: heaplens export FILE [--snapshot S] --gcdump OUT [--json]\n"
                 "\n"
                 "Writes heap snapshot S (default: the last) as a .gcdump: every object with its\n"
                 "type and size, its references, and the strong roots by kind, as dotnet-gcdump\n"
                 "lays them out. Objects' addresses are their heaplens ids (a snapshot keeps\n"
                 "none); sizes above 2 GiB - 1 are cut to it (the format's limit).\n"
                 "\n"
                 "options:\n"
                 "  --snapshot S         the snapshot to write (default: the last one)\n"
                 "  --gcdump OUT         the .gcdump to write ('-': standard output)\n"
                 "  --json               print what was written as JSON on stdout (without it,\n"
                 "                       one line on stderr)\n" HELP_OPTION,
    },
    {
        .name = "check",
        .handler = cmd_check,
        .summary = "memory assertions for CI: exit 1 with a line per assertion that fails",
        .usage = "usage: heaplens check FILE ASSERTION... [--json]\n"
                 "\n"
                 "Checks memory assertions on a recording (or an imported .gcdump). Exits 0 when\n"
                 "all hold; 1 with one line per failed assertion: what was expected, what was\n"
                 "found, and the query that shows it. Each option may be given several times.\n"
                 "TYPE is a full type name or one without its namespaces (as roots --type);\n"
                 "a type the recording never saw has 0 objects, and an assertion that holds\n"
                 "for it gets a line 'NOTE ... no type of that name (misspelt?)'.\n"
                 "An assertion the recording cannot decide never holds: it gets a line\n"
                 "'UNDECIDED ASSERTION: why, and how to record what it needs', the others are\n"
                 "still decided, and check exits 1. So --no-leaks needs two heap snapshots,\n"
                 "--max-retained one; --max-live a GC (before its checkpoint, with @NAME), and\n"
                 "in a sampled recording a snapshot at the GC it asks about (between snapshots\n"
                 "only the sampled objects are followed). On a recording that lost data or did\n"
                 "not end complete (its note: \"counts are lower bounds\") an assertion that\n"
                 "holds is undecided (--sql aside); one that fails is decided.\n"
                 "\n"
                 "assertions:\n"
                 "  --max-live TYPE=N[@NAME]  at most N objects of TYPE in the last snapshot\n"
                 "                          (without snapshots: alive after the last GC); with\n"
                 "                          @NAME, alive after the last GC finished before the\n"
                 "                          program wrote checkpoint NAME\n"
                 "  --max-allocated TYPE=N[@FROM..TO]  at most N allocations of TYPE in the\n"
                 "                          whole run, or between checkpoints FROM and TO as\n"
                 "                          'allocations --between' counts them; undecided\n"
                 "                          when estimates could decide it (--census off, or\n"
                 "                          allocations after the last GC in sampled mode)\n"
                 "  --max-retained TYPE=BYTES  TYPE retains at most BYTES in the last snapshot\n"
                 "                          (K, M, G: KiB, MiB, GiB; stores retained sizes as\n"
                 "                          'retention' does)\n"
                 "  --no-leaks              'leaks' flags no suspect type\n"
                 "  --sql \"SELECT ...\"      the query returns no row (its first rows are shown)\n"
                 JSON_OPTION HELP_OPTION,
    },
    {
        .name = "inspect",
        .handler = cmd_inspect,
        .summary = "automatic inspections of a heap snapshot: duplicate strings, empty and "
                   "under-filled collections, sparse arrays, event handlers, finalizable "
                   "objects, pinning, LOH free space",
        .usage = "usage: heaplens inspect FILE [--snapshot S] [--min-duplicates N]\n"
                 "                        [--max-fill P] [--min-subscribers N] [--json]\n"
                 "                        [--progress]\n"
                 "\n"
                 "Looks for common waste in one heap snapshot without a question asked, and\n"
                 "ranks the findings by the bytes each wastes or holds: strings whose value at\n"
                 "least N String objects hold (all but one copy wasted); List, Dictionary,\n"
                 "HashSet, Queue, Stack and ConcurrentDictionary objects holding nothing, per\n"
                 "type; collections holding at most P of their capacity by their own Count, per\n"
                 "type (the unused storage wasted); reference arrays with at most P of their\n"
                 "elements set, per type (the nulls wasted); multicast delegates (events) with\n"
                 "at least N handlers, with the static or field that holds them and the\n"
                 "handlers' target types; objects of classes with a finalizer, per type, and\n"
                 "how many wait for their finalizer; objects finalized and reachable again (in\n"
                 "the finalizer queue at an earlier snapshot); objects pinned in gen0 or gen1;\n"
                 "the large-object heap's free space between live objects. Needs a recording\n"
                 "of this heaplens for all of them: an older one gets fewer (store/SCHEMA.md).\n"
                 "The findings of a snapshot and options are computed once and stored in the\n"
                 "recording (table inspections): the next inspect or report reads them.\n"
                 "\n"
                 "options:\n"
                 "  --snapshot S         the snapshot to inspect (default: the last one)\n"
                 "  --min-duplicates N   copies of one string value that make a finding\n"
                 "                       (default 10, Eclipse MAT's)\n"
                 "  --max-fill P         the fill (0 to 1) at or under which an array is sparse\n"
                 "                       and a collection under-filled (default 0.21)\n"
                 "  --min-subscribers N  handlers that make an event a finding (default 100)\n"
                 "  --progress           report progress and step times on stderr (default: only\n"
                 "                       when stderr is a terminal)\n"
                     JSON_OPTION HELP_OPTION,
    },
    {
        .name = "report",
        .handler = cmd_report,
        .summary = "the per-GC report: one self-contained HTML page with plots, or JSON",
        .usage = "usage: heaplens report FILE [-o OUT] [--json] [--progress]\n"
                 "\n"
                 "One self-contained HTML page that opens in any browser without network access:\n"
                 "the run summary, plots of heap size, survivors and pauses per GC and of the top\n"
                 "types by live bytes, and a table of every GC that sorts and filters in the page.\n"
                 "With heap snapshots: the top retainers of the last snapshot and the leak\n"
                 "suspects (as 'heaplens retention' and 'heaplens leaks' show them; retained\n"
                 "sizes are computed and stored first if needed). With --json, the same content\n"
                 "as JSON.\n"
                 "\n"
                 "options:\n"
                 "  -o, --output OUT     write to OUT (default: stdout, if it is not a terminal\n"
                 "                       or with --json)\n"
                 "  --json               the same content as JSON instead of the page\n"
                 "  --progress           report progress of the snapshot analysis on stderr\n"
                 HELP_OPTION,
    },
};

static const query_command *command_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

gboolean query_command_help(const char *name, FILE *out)
{
    const query_command *command = command_find(name);
    if (!command)
        return FALSE;
    fputs(command->usage, out);
    return TRUE;
}

static void usage_print(FILE *out)
{
    fputs("usage: heaplens [--version] [--help] COMMAND [ARGS...]\n"
          "\n"
          "Analyze the GC heap and allocations of a .NET program. `heaplens record` stores a\n"
          "run in one SQLite file; the other commands query it.\n"
          "\n"
          "commands:\n",
          out);
    size_t width = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        width = MAX(width, strlen(commands[i].name));
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-*s  %s\n", (int)width, commands[i].name, commands[i].summary);
    fputs("\n"
          "Text tables by default, --json for scripts. Exit status 0 on success, 1 on error.\n"
          "See 'heaplens COMMAND --help' for a command's options.\n",
          out);
}

static gboolean is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { /* a mistake, not a request: the usage goes with the errors */
        usage_print(stderr);
        return 1;
    }
    const char *name = argv[1];
    /* `heaplens --help COMMAND` is `heaplens help COMMAND`. */
    if (is_help(name) || strcmp(name, "help") == 0) {
        if (argc > 3) {
            fprintf(stderr, "heaplens: %s takes one COMMAND at most; see 'heaplens --help'\n",
                    name);
            return 1;
        }
        if (argc < 3) {
            usage_print(stdout);
            return 0;
        }
        if (query_command_help(argv[2], stdout))
            return 0;
        fprintf(stderr, "heaplens: '%s' is not a heaplens command; see 'heaplens --help'\n",
                argv[2]);
        return 1;
    }
    if (strcmp(name, "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "heaplens: --version takes no argument, not '%s'\n", argv[2]);
            return 1;
        }
        printf("heaplens %s\n", HEAPLENS_VERSION);
        return 0;
    }
    if (name[0] == '-') {
        fprintf(stderr, "heaplens: unknown option '%s'; see 'heaplens --help'\n", name);
        return 1;
    }
    const query_command *command = command_find(name);
    if (!command) {
        fprintf(stderr, "heaplens: '%s' is not a heaplens command; see 'heaplens --help'\n", name);
        return 1;
    }
    if (argc > 2 && is_help(argv[2])) {
        fputs(command->usage, stdout);
        return 0;
    }
    /* Past a file size limit (`ulimit -f`) a write fails with EFBIG rather than ending heaplens
     * by SIGXFSZ with a core and no word: the command then says which file could not grow
     * (SQLite's temporary files: query_db_temp_failed; an output). Not for record and attach:
     * the program record runs inherits an ignored signal, and their writer's death is said. */
    if (strcmp(name, "record") != 0 && strcmp(name, "attach") != 0)
        signal(SIGXFSZ, SIG_IGN);
    return command->handler(argc - 1, argv + 1);
}
