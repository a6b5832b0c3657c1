// LeakDemo — a real leak, a steady cache, a cache that warms up and churn, with a heap snapshot
// after every iteration, and the ground truth a leak hunter must find in them.
//
//   dotnet LeakDemo.dll [truth.json] [--iterations N] [--sessions K]
//
// The ground-truth path is argv[1] or, if absent, the environment variable HEAPLENS_GROUND_TRUTH.
// `heaplens record` takes a snapshot at every induced GC by default, so each checkpoint (one
// blocking, compacting GC.Collect) is one snapshot. The format of the JSON is described in
// examples/README.md.
//
// Checkpoints: "setup" (the caches filled, the probe built, nothing leaked yet), then one per
// iteration ("iteration-1" ...). Each iteration, in a [NoInlining] method so that no stack slot of
// Main keeps anything alive:
//   leak      opens K LeakedSessions (each with a SessionData and a byte[1000]) in the static
//             SessionRegistry; none is ever closed;
//   steady    replaces 50 of the SteadyCache's 100 entries with new CacheEntry objects;
//   warm-up   adds 100 WarmupEntry objects in iterations 1..3, none after (the cache is full);
//   churn     allocates 20,000 ChurnItems that die at once, and keeps a window of fresh ones
//             whose size goes up and down (300, 120, 260, 80, 220, 150, ...);
//   probe     untouched: a small graph of known shape whose retained sizes are checked exactly.
// Everything is counted by the program as it happens (it knows which objects it drops), so the
// checkpoints give, per type of ours, the live count and, against the previous checkpoint, the
// objects new, dead and survived by identity. Checkpoints allocate nothing; if the collection
// counts show another GC between the induced one and the end of the checkpoint, it is redone.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime;
using System.Runtime.CompilerServices;
using System.Text.Json;
using HeapLens.Examples.Leaks;
using static HeapLensShared.HeapLensSupport;

namespace LeakDemo
{
    internal static class Program
    {
        // ---- parameters ----
        private const int CacheCapacity = 100;
        private const int CacheReplaced = 50;      // entries replaced per iteration
        private const int CacheValueLength = 200;  // byte[200] per entry
        private const int WarmupPerIteration = 100;
        private const int WarmupIterations = 3;    // then the warm-up cache is full
        private const int ChurnGarbage = 20000;
        private static readonly int[] s_window = { 300, 120, 260, 80, 220, 150, 270, 60, 240, 100 };
        private const int SessionBufferLength = 1000;
        private const int ProbeNodes = 8;
        private static int ProbePayloadLength(int i) => 100 + i;
        private const int ProbeSharedLength = 50;
        private static readonly int[] s_probeSharedBy = { 0, 1 };

        // ---- example types (index into the tables below) ----
        private const int TRegistry = 0, TSession = 1, TData = 2, TCache = 3, TCacheEntry = 4,
            TWarmup = 5, TWarmupEntry = 6, TChurn = 7, TWindow = 8, TProbe = 9, TProbeNode = 10,
            TProbeShared = 11, TypeCount = 12;

        private static readonly Type[] s_types =
        {
            typeof(SessionRegistry), typeof(LeakedSession), typeof(SessionData), typeof(SteadyCache),
            typeof(CacheEntry), typeof(WarmupCache), typeof(WarmupEntry), typeof(ChurnItem),
            typeof(ChurnWindow), typeof(RetentionProbe), typeof(ProbeNode), typeof(ProbeShared),
        };

        // ---- the program's state: statics only ----
        private static SessionRegistry? s_registry;
        private static SteadyCache? s_cache;
        private static WarmupCache? s_warmup;
        private static ChurnWindow? s_churn;
        private static RetentionProbe? s_probe;
        private static int s_sessions = 200; // per iteration, --sessions
        private static int s_nextSession;
        private static readonly ChurnItem?[] s_sink = new ChurnItem?[16];

        // ---- bookkeeping per type, since the previous checkpoint ----
        private static readonly int[] s_allocated = new int[TypeCount];
        private static readonly int[] s_alive = new int[TypeCount];      // now
        private static readonly int[] s_aliveAtCp = new int[TypeCount];  // at the previous checkpoint
        private static readonly int[] s_born = new int[TypeCount];       // since it, still alive
        private static readonly int[] s_died = new int[TypeCount];       // of those alive at it

        // ---- checkpoints (preallocated: taking one allocates nothing) ----
        private const int MaxCheckpoints = 64;
        private static readonly string[] s_cpLabel = new string[MaxCheckpoints];
        private static readonly int[] s_cpGc = new int[MaxCheckpoints];
        private static readonly int[,] s_cpCounts = new int[MaxCheckpoints, 3];
        private static readonly int[] s_cpRedo = new int[MaxCheckpoints];
        private static readonly long[] s_cpMicros = new long[MaxCheckpoints];
        private static readonly int[,] s_cpAlive = new int[MaxCheckpoints, TypeCount];
        private static readonly int[,] s_cpNew = new int[MaxCheckpoints, TypeCount];
        private static readonly int[,] s_cpDead = new int[MaxCheckpoints, TypeCount];
        private static readonly int[,] s_cpSurvived = new int[MaxCheckpoints, TypeCount];
        private static int s_cpCount;
        private static int s_gcsInducedByUs;

        private static int Main(string[] args)
        {
            string? truthPath = null;
            int iterations = 6;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--iterations" && i + 1 < args.Length) iterations = int.Parse(args[++i], CultureInfo.InvariantCulture);
                else if (args[i] == "--sessions" && i + 1 < args.Length) s_sessions = int.Parse(args[++i], CultureInfo.InvariantCulture);
                else if (args[i] == "--help" || args[i] == "-h")
                {
                    Console.WriteLine("usage: dotnet LeakDemo.dll [truth.json] [--iterations N] [--sessions K]");
                    return 0;
                }
                else if (truthPath == null && !args[i].StartsWith("--", StringComparison.Ordinal)) truthPath = args[i];
                else { Console.Error.WriteLine($"LeakDemo: unexpected argument '{args[i]}'"); return 2; }
            }
            if (iterations < 2 || iterations > MaxCheckpoints - 1 || s_sessions < 1)
            {
                Console.Error.WriteLine("LeakDemo: --iterations must be 2..63 and --sessions at least 1");
                return 2;
            }
            truthPath ??= Environment.GetEnvironmentVariable("HEAPLENS_GROUND_TRUTH");
            if (string.IsNullOrEmpty(truthPath)) truthPath = null;

            var clock = Stopwatch.StartNew();
            Setup();
            Checkpoint("setup");
            for (int it = 1; it <= iterations; it++)
            {
                Iterate(it);
                Checkpoint("iteration-" + it.ToString(CultureInfo.InvariantCulture));
            }
            long elapsedMs = clock.ElapsedMilliseconds;
            int gcsTotal = GC.CollectionCount(0);
            Console.WriteLine($"LeakDemo: iterations={iterations} sessions={s_registry!.Count} cache={s_cache!.Count} " +
                              $"warmup={s_warmup!.Count} window={s_churn!.Recent.Length} gcs={gcsTotal} elapsed_ms={elapsedMs}");
            if (truthPath != null)
            {
                WriteTruth(truthPath, iterations, gcsTotal, elapsedMs);
                Console.WriteLine($"ground truth written to {truthPath}");
            }
            return 0;
        }

        private static void Born(int t, int n = 1)
        {
            s_allocated[t] += n;
            s_alive[t] += n;
            s_born[t] += n;
        }

        /// <summary>Objects of type t dropped now: `fromCheckpoint` of them were alive at the
        /// previous checkpoint, the rest were born since.</summary>
        private static void Dropped(int t, int n, int fromCheckpoint)
        {
            s_alive[t] -= n;
            s_died[t] += fromCheckpoint;
            s_born[t] -= n - fromCheckpoint;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Setup()
        {
            s_registry = new SessionRegistry("sessions");
            Born(TRegistry);
            s_cache = new SteadyCache();
            Born(TCache);
            for (int k = 0; k < CacheCapacity; k++)
            {
                s_cache.Put(k, new CacheEntry(k, new byte[CacheValueLength]));
                Born(TCacheEntry);
            }
            s_warmup = new WarmupCache();
            Born(TWarmup);
            s_churn = new ChurnWindow();
            Born(TWindow);
            var nodes = new ProbeNode[ProbeNodes];
            for (int i = 0; i < ProbeNodes; i++)
            {
                nodes[i] = new ProbeNode(new byte[ProbePayloadLength(i)], i);
                Born(TProbeNode);
            }
            var shared = new ProbeShared(new byte[ProbeSharedLength]);
            Born(TProbeShared);
            foreach (int i in s_probeSharedBy) nodes[i].Shared = shared;
            s_probe = new RetentionProbe(nodes);
            Born(TProbe);
            Churn(200);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Iterate(int it)
        {
            // the leak
            for (int k = 0; k < s_sessions; k++)
            {
                var data = new SessionData(new byte[SessionBufferLength]);
                s_registry!.Open(new LeakedSession(data, s_nextSession++));
            }
            Born(TSession, s_sessions);
            Born(TData, s_sessions);

            // the steady cache: keys replaced in turn, each at most once per iteration
            for (int k = 0; k < CacheReplaced; k++)
            {
                int key = ((it - 1) * CacheReplaced + k) % CacheCapacity;
                s_cache!.Put(key, new CacheEntry(key, new byte[CacheValueLength]));
            }
            Born(TCacheEntry, CacheReplaced);
            Dropped(TCacheEntry, CacheReplaced, CacheReplaced);

            // the warm-up cache
            if (it <= WarmupIterations)
            {
                for (int k = 0; k < WarmupPerIteration; k++) s_warmup!.Add(new WarmupEntry(it * 1000L + k));
                Born(TWarmupEntry, WarmupPerIteration);
            }

            Churn(s_window[(it - 1) % s_window.Length]);
        }

        /// <summary>20,000 items that die at once, then a fresh window of `keep` items replacing
        /// the previous window.</summary>
        private static void Churn(int keep)
        {
            long sum = 0;
            for (int k = 0; k < ChurnGarbage; k++)
            {
                var item = new ChurnItem { A = k, B = sum };
                s_sink[k & (s_sink.Length - 1)] = item; // escapes: a real heap allocation
                sum += item.A;
            }
            Array.Clear(s_sink);
            Born(TChurn, ChurnGarbage);
            Dropped(TChurn, ChurnGarbage, 0);
            int previous = s_churn!.Recent.Length;
            var recent = new ChurnItem[keep];
            for (int k = 0; k < keep; k++) recent[k] = new ChurnItem { A = k, B = sum };
            s_churn.Recent = recent;
            Born(TChurn, keep);
            Dropped(TChurn, previous, previous);
        }

        private static void Checkpoint(string label)
        {
            int cp = s_cpCount;
            s_cpLabel[cp] = label;
            for (;;)
            {
                long t0 = Stopwatch.GetTimestamp();
                GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
                s_gcsInducedByUs++;
                int c0 = GC.CollectionCount(0), c1 = GC.CollectionCount(1), c2 = GC.CollectionCount(2);
                s_cpMicros[cp] = (Stopwatch.GetTimestamp() - t0) * 1000000 / Stopwatch.Frequency;
                if (GC.CollectionCount(0) == c0)
                {
                    s_cpGc[cp] = c0;
                    s_cpCounts[cp, 0] = c0;
                    s_cpCounts[cp, 1] = c1;
                    s_cpCounts[cp, 2] = c2;
                    break;
                }
                s_cpRedo[cp]++;
            }
            for (int t = 0; t < TypeCount; t++)
            {
                s_cpAlive[cp, t] = s_alive[t];
                s_cpNew[cp, t] = s_born[t];
                s_cpDead[cp, t] = s_died[t];
                s_cpSurvived[cp, t] = s_aliveAtCp[t] - s_died[t];
                s_aliveAtCp[t] = s_alive[t];
                s_born[t] = 0;
                s_died[t] = 0;
            }
            s_cpCount++;
        }

        /// <summary>Size of a single-dimension array on 64-bit CoreCLR as the profiling API's
        /// GetObjectSize2 reports it (heaplens' objects.size): 24 bytes plus the elements, not
        /// rounded up.</summary>
        private static long ArraySize(int elementSize, int length) => 24L + (long)elementSize * length;

        private static void WriteTruth(string path, int iterations, int gcsTotal, long elapsedMs)
        {
            using var truth = new TruthFile(path, "LeakDemo");
            Utf8JsonWriter j = truth.Json;
            string N(int t) => HeapLensName(s_types[t]);
            j.WriteString("namespace", "HeapLens.Examples.Leaks");
            j.WriteNumber("elapsed_ms", elapsedMs);
            j.WriteNumber("iterations", iterations);
            j.WriteNumber("gcs_total", gcsTotal);
            j.WriteNumber("gcs_induced", s_gcsInducedByUs);

            j.WriteStartObject("leak");
            j.WriteString("type", N(TSession));
            j.WriteString("holder", N(TRegistry));
            j.WriteNumber("per_iteration", s_sessions);
            j.WriteString("retains", N(TData));
            j.WriteEndObject();
            j.WriteStartObject("not_leaks"); // type -> why it must not be flagged
            j.WriteString(N(TCacheEntry), "steady cache: always " + CacheCapacity + " entries, " + CacheReplaced + " replaced per iteration");
            j.WriteString(N(TWarmupEntry), "warm-up: grows in iterations 1.." + WarmupIterations + ", then stays full");
            j.WriteString(N(TChurn), "churn: garbage, and a window whose size goes up and down");
            j.WriteEndObject();

            j.WriteStartObject("types");
            for (int t = 0; t < TypeCount; t++) j.WriteNumber(N(t), s_allocated[t]);
            j.WriteEndObject();

            j.WriteStartArray("checkpoints");
            for (int cp = 0; cp < s_cpCount; cp++)
            {
                j.WriteStartObject();
                j.WriteString("label", s_cpLabel[cp]);
                j.WriteNumber("iteration", cp);
                j.WriteNumber("gc", s_cpGc[cp]);
                j.WriteStartArray("collection_counts");
                for (int g = 0; g < 3; g++) j.WriteNumberValue(s_cpCounts[cp, g]);
                j.WriteEndArray();
                j.WriteNumber("redo", s_cpRedo[cp]);
                j.WriteNumber("micros", s_cpMicros[cp]);
                foreach (var (key, table) in new[] { ("alive", s_cpAlive), ("new", s_cpNew), ("dead", s_cpDead), ("survived", s_cpSurvived) })
                {
                    if (cp == 0 && key != "alive") continue; // nothing to compare the first one with
                    j.WriteStartObject(key);
                    for (int t = 0; t < TypeCount; t++) j.WriteNumber(N(t), table[cp, t]);
                    j.WriteEndObject();
                }
                j.WriteEndObject();
            }
            j.WriteEndArray();

            j.WriteStartObject("probe");
            j.WriteString("holder", N(TProbe));
            j.WriteString("array", HeapLensName(typeof(ProbeNode[])));
            j.WriteNumber("array_size", ArraySize(8, ProbeNodes));
            j.WriteString("node", N(TProbeNode));
            j.WriteNumber("nodes", ProbeNodes);
            j.WriteString("payload_type", HeapLensName(typeof(byte[])));
            j.WriteStartArray("payload_sizes"); // node i -> size of its byte[]
            for (int i = 0; i < ProbeNodes; i++) j.WriteNumberValue(ArraySize(1, ProbePayloadLength(i)));
            j.WriteEndArray();
            j.WriteString("shared", N(TProbeShared));
            j.WriteStartArray("shared_by");
            foreach (int i in s_probeSharedBy) j.WriteNumberValue(i);
            j.WriteEndArray();
            j.WriteNumber("shared_blob_size", ArraySize(1, ProbeSharedLength));
            j.WriteEndObject();
            j.WriteEndObject();
        }
    }
}
