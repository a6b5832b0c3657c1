// AllocPatterns — allocates in known patterns and writes its own ground truth.
//
//   dotnet AllocPatterns.dll [truth.json] [--exit-code N] [--scale N]
//
// --scale N multiplies the workers' WorkItem counts (default 1). With 1 the run normally has
// no GC but the checkpoints' induced ones; with 20 or more the workers also trigger ordinary
// GCs while they allocate concurrently (the checkpoints stay exact either way).
//
// The ground-truth path is argv[1] or, if absent, the environment variable HEAPLENS_GROUND_TRUTH.
// Every object of an example type (namespace HeapLens.Examples, see Types.cs) is tracked by a weak
// GCHandle. Right after each induced GC the program counts, per type and per GC.GetGeneration
// value, the tracked objects the runtime still has: a weak handle is cleared only when the GC
// really collected the object, so unreachable objects of uncondemned generations are still
// counted. That is exactly what heaplens reports as "alive after GC n". The format of the JSON is
// described in examples/README.md.
//
// Rules followed so that the counts are exact and the same on every run:
//  - all allocations happen in [NoInlining] phase methods that leave references only in static
//    fields, so no stale stack slot of Main keeps a "dropped" object alive;
//  - every example object escapes (it is passed to GCHandle.Alloc and, when kept or churned,
//    stored in an array slot), so .NET 10's escape analysis cannot put it on the stack;
//  - checkpoints run with no other managed thread of ours alive and allocate nothing; the
//    collection counts are read before the GC, after it and after the scan: if any other GC
//    happened the checkpoint is redone (and the redo is reported).
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text.Json;
using System.Threading;
using HeapLens.Examples;
using static HeapLensShared.HeapLensSupport;

namespace AllocPatterns
{
    /// <summary>Per-type bookkeeping: one weak handle per allocated object.</summary>
    internal static class Tracked
    {
        public const int WorkItemT = 0, InnerT = 1, PairT = 2, CellsT = 3, LargeT = 4, PinnedT = 5,
            TargetT = 6, Count = 7;

        public static readonly Type[] Types =
        {
            typeof(WorkItem), typeof(Outer.Inner), typeof(Pair<WorkItem, int>), typeof(Cell[,]),
            typeof(LargeItem[]), typeof(PinnedItem[]), typeof(PinnedTarget),
        };

        /// <summary>Where the runtime puts the objects: small-object heap, LOH or POH.</summary>
        public static readonly string[] Heaps = { "soh", "soh", "soh", "soh", "loh", "poh", "soh" };

        public static readonly GCHandle[][] Handles = new GCHandle[Count][];

        /// <summary>Objects allocated (= handles in use) per type.</summary>
        public static readonly int[] Allocated = new int[Count];

        public static void Reserve(int type, int capacity) => Handles[type] = new GCHandle[capacity];

        /// <summary>Main thread only.</summary>
        public static void Add(int type, object o)
        {
            Handles[type][Allocated[type]++] = GCHandle.Alloc(o, GCHandleType.Weak);
        }
    }

    internal sealed class WorkerArgs
    {
        public int Index;      // 1..4
        public int Count;      // WorkItems to allocate
        public int HandleBase; // first slot in Tracked.Handles[WorkItemT]
    }

    internal static class Program
    {
        // ---- the pattern's parameters (counts below are exact consequences of these) ----
        private const int Workers = 4;
        private static int s_scale = 1;
        private static int WorkerCount(int k) => (2000 + 1000 * k) * s_scale; // worker-1: 3000 ... worker-4: 6000
        private const int KeepEvery = 10;        // i % 10 == 0: kept until late (survivors)
        private const int MidAt = 5;             // i % 10 == 5: kept until phase B, then dropped
        private const int SinkSlots = 16;        // the rest: churn, overwritten in a 16-slot sink
        private const int Inners = 2000;         // even ones kept
        private const int Pairs = 500;           // all kept, First = a worker-3 survivor
        private const int CellArrays = 6;        // Cell[8, 8]; 3 kept
        private const int LargeArrays = 3;       // LargeItem[10000] (160,024 bytes): 2 kept
        private const int LargeLength = 10000;
        private const int PinnedArrays = 4;      // GC.AllocateArray<PinnedItem>(512, pinned: true): 3 kept
        private const int PinnedLength = 512;
        private const int Targets = 3;           // #0 pinned by a GCHandle only, #1 kept, #2 dropped
        private const int TailItems = 100;       // WorkItems allocated by "main" after the last GC

        // ---- object graph roots (statics only) ----
        private static readonly object?[]?[] s_keep = new object?[Workers + 1][];
        private static readonly object?[]?[] s_mid = new object?[Workers + 1][];
        private static readonly object?[]?[] s_sinks = new object?[Workers + 1][];
        private static object?[]? s_inners;
        private static object?[]? s_pairs;
        private static object?[]? s_cells;
        private static object?[]? s_sinkB;
        private static object?[]? s_large;
        private static object?[]? s_pinned;
        private static object? s_keptTarget;
        private static GCHandle s_pinHandle;
        private static object?[]? s_tail;

        // ---- checkpoints (preallocated: taking one allocates nothing) ----
        private const int MaxCheckpoints = 16;
        private static readonly string[] s_cpLabel = new string[MaxCheckpoints];
        private static readonly int[] s_cpRequested = new int[MaxCheckpoints];
        private static readonly int[] s_cpCompacting = new int[MaxCheckpoints]; // -1 GC decides, 0/1 asked
        private static readonly int[] s_cpGeneration = new int[MaxCheckpoints]; // from the counts
        private static readonly int[] s_cpRedo = new int[MaxCheckpoints];
        private static readonly int[,] s_cpCounts = new int[MaxCheckpoints, 3];
        private static readonly int[,,] s_cpAlive = new int[MaxCheckpoints, Tracked.Count, 4]; // gen 0,1,2,other
        private static readonly long[] s_cpMicros = new long[MaxCheckpoints];
        private static int s_cpCount;
        private static int s_gcsInducedByUs;

        private static int Main(string[] args)
        {
            string? truthPath = null;
            int exitCode = 0;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--exit-code" && i + 1 < args.Length) exitCode = int.Parse(args[++i]);
                else if (args[i] == "--scale" && i + 1 < args.Length) s_scale = Math.Max(1, int.Parse(args[++i]));
                else if (args[i] == "--help" || args[i] == "-h")
                {
                    Console.WriteLine("usage: dotnet AllocPatterns.dll [truth.json] [--exit-code N] [--scale N]");
                    return 0;
                }
                else if (truthPath == null) truthPath = args[i];
                else { Console.Error.WriteLine($"AllocPatterns: unexpected argument '{args[i]}'"); return 2; }
            }
            truthPath ??= Environment.GetEnvironmentVariable("HEAPLENS_GROUND_TRUTH");
            if (string.IsNullOrEmpty(truthPath)) truthPath = null;

            Thread.CurrentThread.Name = "main";
            var clock = Stopwatch.StartNew();
            Setup();

            Checkpoint("start", 2, -1);           // nothing of ours exists yet
            PhaseA_Workers();
            Checkpoint("after-workers", 0, -1);   // churn dies; survivors and mid items -> gen1
            PhaseB_MainThread();
            Checkpoint("gen0-with-dead-gen1", 0, -1); // dropped mid items (gen1) are NOT collected
            Checkpoint("gen1", 1, -1);            // now they are; gen1 survivors -> gen2
            PhaseC_LargeAndPinned();
            Checkpoint("gen0-with-dead-gen2-loh-poh", 0, -1); // dropped gen2/LOH/POH objects stay
            Checkpoint("gen2-compacting", 2, 1);  // ... and die here
            PhaseD_Release();
            Checkpoint("gen2-sweeping", 2, 0);    // non-compacting full GC
            PhaseE_Tail();                        // allocated after the last GC

            long elapsedMs = clock.ElapsedMilliseconds;
            int gcsTotal = GC.CollectionCount(0);
            PrintSummary(elapsedMs, gcsTotal);
            if (truthPath != null)
            {
                WriteTruth(truthPath, exitCode, gcsTotal, elapsedMs);
                Console.WriteLine($"ground truth written to {truthPath}");
            }
            return exitCode;
        }

        private static void Setup()
        {
            int workItems = TailItems;
            for (int k = 1; k <= Workers; k++) workItems += WorkerCount(k);
            Tracked.Reserve(Tracked.WorkItemT, workItems);
            Tracked.Reserve(Tracked.InnerT, Inners);
            Tracked.Reserve(Tracked.PairT, Pairs);
            Tracked.Reserve(Tracked.CellsT, CellArrays);
            Tracked.Reserve(Tracked.LargeT, LargeArrays);
            Tracked.Reserve(Tracked.PinnedT, PinnedArrays);
            Tracked.Reserve(Tracked.TargetT, Targets);
            // Make sure everything the checkpoint path needs is compiled and initialized before
            // the first real checkpoint (class constructors, GC.GetGeneration, ...).
            Scan(MaxCheckpoints - 1);
        }

        // ---------------------------------------------------------------- phase A: 4 workers
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void PhaseA_Workers()
        {
            var threads = new Thread[Workers];
            int handleBase = 0;
            for (int k = 1; k <= Workers; k++)
            {
                var a = new WorkerArgs { Index = k, Count = WorkerCount(k), HandleBase = handleBase };
                handleBase += a.Count;
                var t = new Thread(WorkerMain) { Name = "worker-" + k, IsBackground = false };
                threads[k - 1] = t;
                t.Start(a);
            }
            foreach (var t in threads) t.Join();
            Tracked.Allocated[Tracked.WorkItemT] = handleBase; // workers wrote disjoint slots
        }

        private static void WorkerMain(object? state)
        {
            var a = (WorkerArgs)state!;
            int n = a.Count;
            var keep = new object?[(n + KeepEvery - 1) / KeepEvery];
            var mid = new object?[(n + KeepEvery - 1) / KeepEvery];
            var sink = new object?[SinkSlots];
            s_keep[a.Index] = keep;
            s_mid[a.Index] = mid;
            s_sinks[a.Index] = sink;
            GCHandle[] handles = Tracked.Handles[Tracked.WorkItemT];
            WorkItem? previousKept = null;
            for (int i = 0; i < n; i++)
            {
                var w = new WorkItem { Id = ((long)a.Index << 32) | (uint)i, Worker = a.Index, Seq = i };
                handles[a.HandleBase + i] = GCHandle.Alloc(w, GCHandleType.Weak);
                int r = i % KeepEvery;
                if (r == 0)
                {
                    w.Next = previousKept;
                    previousKept = w;
                    keep[i / KeepEvery] = w;
                }
                else if (r == MidAt) mid[i / KeepEvery] = w;
                else sink[i % SinkSlots] = w;
            }
        }

        // ---------------------------------------------------------------- phase B: main thread
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void PhaseB_MainThread()
        {
            // The mid items (now gen1) become unreachable; so do the churn sinks.
            for (int k = 1; k <= Workers; k++) { s_mid[k] = null; s_sinks[k] = null; }

            var sink = new object?[8];
            s_sinkB = sink;
            var inners = new object?[Inners / 2];
            s_inners = inners;
            for (int i = 0; i < Inners; i++)
            {
                var o = new Outer.Inner { A = i, B = -i };
                Tracked.Add(Tracked.InnerT, o);
                if ((i & 1) == 0) inners[i / 2] = o;
                else sink[i & 7] = o;
            }

            object?[] w3 = s_keep[3]!;
            var pairs = new object?[Pairs];
            s_pairs = pairs;
            for (int i = 0; i < Pairs; i++)
            {
                var p = new Pair<WorkItem, int> { First = (WorkItem?)w3[i % w3.Length], Second = i };
                Tracked.Add(Tracked.PairT, p);
                pairs[i] = p;
            }

            var cells = new object?[CellArrays / 2];
            s_cells = cells;
            for (int i = 0; i < CellArrays; i++)
            {
                var c = new Cell[8, 8];
                c[i % 8, 0].Value = i;
                Tracked.Add(Tracked.CellsT, c);
                if ((i & 1) == 0) cells[i / 2] = c;
                else sink[i & 7] = c;
            }
        }

        // ---------------------------------------------------------------- phase C: LOH, POH, pinning
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void PhaseC_LargeAndPinned()
        {
            s_keep[2] = null; // worker-2's survivors (gen2 by now) become unreachable
            s_sinkB = null;   // dropped Inners/Cells of phase B (gen2 by now)

            var large = new object?[LargeArrays - 1];
            s_large = large;
            for (int i = 0; i < LargeArrays; i++)
            {
                var a = new LargeItem[LargeLength];
                a[0].A = i;
                Tracked.Add(Tracked.LargeT, a);
                if (i < LargeArrays - 1) large[i] = a; // the last one is dropped at once
            }

            var pinned = new object?[PinnedArrays - 1];
            s_pinned = pinned;
            for (int i = 0; i < PinnedArrays; i++)
            {
                PinnedItem[] a = GC.AllocateArray<PinnedItem>(PinnedLength, pinned: true);
                a[0].X = i;
                Tracked.Add(Tracked.PinnedT, a);
                if (i != 1) pinned[i < 1 ? i : i - 1] = a; // #1 is dropped at once
            }

            for (int i = 0; i < Targets; i++)
            {
                var t = new PinnedTarget { Stamp = i };
                Tracked.Add(Tracked.TargetT, t);
                if (i == 0) s_pinHandle = GCHandle.Alloc(t, GCHandleType.Pinned); // only the pin holds it
                else if (i == 1) s_keptTarget = t;
                // #2: unreachable right away
            }
        }

        // ---------------------------------------------------------------- phase D: release
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void PhaseD_Release()
        {
            s_pinHandle.Free();
            s_large![1] = null;
            s_keep[1] = null;
            s_cells = null;
        }

        // ---------------------------------------------------------------- phase E: after the last GC
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void PhaseE_Tail()
        {
            var tail = new object?[TailItems];
            s_tail = tail;
            for (int i = 0; i < TailItems; i++)
            {
                var w = new WorkItem { Id = -1 - i, Worker = 0, Seq = i };
                Tracked.Add(Tracked.WorkItemT, w);
                tail[i] = w;
            }
        }

        // ---------------------------------------------------------------- checkpoints
        private static void Collect(int generation, int compacting)
        {
            if (compacting < 0) GC.Collect(generation, GCCollectionMode.Forced, blocking: true);
            else GC.Collect(generation, GCCollectionMode.Forced, blocking: true, compacting: compacting != 0);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Checkpoint(string label, int generation, int compacting)
        {
            int cp = s_cpCount;
            long t0 = Stopwatch.GetTimestamp();
            for (int attempt = 0; attempt < 10; attempt++)
            {
                int b0 = GC.CollectionCount(0), b1 = GC.CollectionCount(1), b2 = GC.CollectionCount(2);
                Collect(generation, compacting);
                s_gcsInducedByUs++;
                int a0 = GC.CollectionCount(0), a1 = GC.CollectionCount(1), a2 = GC.CollectionCount(2);
                Scan(cp);
                int c0 = GC.CollectionCount(0), c1 = GC.CollectionCount(1), c2 = GC.CollectionCount(2);
                if (a0 == b0 + 1 && c0 == a0 && c1 == a1 && c2 == a2)
                {
                    s_cpLabel[cp] = label;
                    s_cpRequested[cp] = generation;
                    s_cpCompacting[cp] = compacting;
                    s_cpGeneration[cp] = a2 > b2 ? 2 : a1 > b1 ? 1 : 0;
                    s_cpCounts[cp, 0] = a0;
                    s_cpCounts[cp, 1] = a1;
                    s_cpCounts[cp, 2] = a2;
                    s_cpMicros[cp] = (long)Stopwatch.GetElapsedTime(t0).TotalMicroseconds;
                    s_cpCount++;
                    return;
                }
                s_cpRedo[cp]++;
            }
            throw new InvalidOperationException($"checkpoint '{label}': other GCs kept interfering");
        }

        /// <summary>Counts the tracked objects still alive per type and GC.GetGeneration value.
        /// Allocates nothing.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Scan(int cp)
        {
            for (int t = 0; t < Tracked.Count; t++)
            {
                for (int b = 0; b < 4; b++) s_cpAlive[cp, t, b] = 0;
                GCHandle[] hs = Tracked.Handles[t];
                int n = Tracked.Allocated[t];
                for (int i = 0; i < n; i++)
                {
                    object? o = hs[i].Target;
                    if (o is null) continue;
                    int g = GC.GetGeneration(o);
                    s_cpAlive[cp, t, g >= 0 && g <= 2 ? g : 3]++;
                }
            }
        }

        // ---------------------------------------------------------------- output

        private static string GenName(int bucket) => bucket <= 2 ? bucket.ToString() : "other";

        private static void PrintSummary(long elapsedMs, int gcsTotal)
        {
            Console.WriteLine($"AllocPatterns: {elapsedMs} ms, {gcsTotal} GCs ({s_gcsInducedByUs} induced by checkpoints), " +
                              $"collector: {LoadedCollector() ?? "not loaded"}");
            Console.WriteLine("allocations:");
            for (int t = 0; t < Tracked.Count; t++)
                Console.WriteLine($"  {Tracked.Allocated[t],6}  {HeapLensName(Tracked.Types[t])} ({Tracked.Heaps[t]})");
            for (int cp = 0; cp < s_cpCount; cp++)
            {
                Console.WriteLine($"checkpoint {s_cpLabel[cp]}: GC #{s_cpCounts[cp, 0]} gen{s_cpGeneration[cp]} (requested gen{s_cpRequested[cp]})," +
                                  $" counts {s_cpCounts[cp, 0]}/{s_cpCounts[cp, 1]}/{s_cpCounts[cp, 2]}, redo {s_cpRedo[cp]}");
                for (int t = 0; t < Tracked.Count; t++)
                {
                    string line = "";
                    for (int b = 0; b < 4; b++)
                        if (s_cpAlive[cp, t, b] != 0) line += $" gen{GenName(b)}={s_cpAlive[cp, t, b]}";
                    if (line.Length > 0) Console.WriteLine($"    {HeapLensName(Tracked.Types[t])}:{line}");
                }
            }
        }

        private static void WriteTruth(string path, int exitCode, int gcsTotal, long elapsedMs)
        {
            using var truth = new TruthFile(path, "AllocPatterns");
            Utf8JsonWriter j = truth.Json;
            j.WriteString("gc_latency_mode", GCSettings.LatencyMode.ToString());
            j.WriteNumber("exit_status", exitCode);
            j.WriteNumber("scale", s_scale);
            j.WriteString("namespace", "HeapLens.Examples");
            j.WriteNumber("elapsed_ms", elapsedMs);
            j.WriteNumber("gcs_total", gcsTotal);
            j.WriteNumber("gcs_induced", s_gcsInducedByUs);
            int redo = 0;
            for (int cp = 0; cp < s_cpCount; cp++) redo += s_cpRedo[cp];
            j.WriteNumber("checkpoint_redos", redo);

            j.WriteStartObject("types");
            for (int t = 0; t < Tracked.Count; t++)
            {
                j.WriteStartObject(HeapLensName(Tracked.Types[t]));
                j.WriteNumber("allocations", Tracked.Allocated[t]);
                j.WriteString("heap", Tracked.Heaps[t]);
                j.WriteEndObject();
            }
            j.WriteEndObject();

            // WorkItem allocations per allocating thread (by thread name).
            string workItem = HeapLensName(typeof(WorkItem));
            j.WriteStartObject("threads");
            for (int k = 1; k <= Workers; k++)
            {
                j.WriteStartObject("worker-" + k);
                j.WriteNumber(workItem, WorkerCount(k));
                j.WriteEndObject();
            }
            j.WriteStartObject("main");
            j.WriteNumber(workItem, TailItems);
            j.WriteEndObject();
            j.WriteEndObject();

            // Allocations after the last GC (phase E): no GC has seen them.
            j.WriteStartObject("after_last_gc");
            j.WriteNumber(workItem, TailItems);
            j.WriteEndObject();

            j.WriteStartArray("checkpoints");
            for (int cp = 0; cp < s_cpCount; cp++)
            {
                j.WriteStartObject();
                j.WriteString("label", s_cpLabel[cp]);
                j.WriteNumber("gc", s_cpCounts[cp, 0]);
                j.WriteNumber("requested_generation", s_cpRequested[cp]);
                j.WriteNumber("generation", s_cpGeneration[cp]);
                if (s_cpCompacting[cp] >= 0) j.WriteBoolean("compacting_requested", s_cpCompacting[cp] != 0);
                else j.WriteNull("compacting_requested");
                j.WriteStartArray("collection_counts");
                for (int g = 0; g < 3; g++) j.WriteNumberValue(s_cpCounts[cp, g]);
                j.WriteEndArray();
                j.WriteNumber("redo", s_cpRedo[cp]);
                j.WriteNumber("micros", s_cpMicros[cp]);
                j.WriteStartObject("alive");
                for (int t = 0; t < Tracked.Count; t++)
                {
                    bool any = false;
                    for (int b = 0; b < 4; b++) any |= s_cpAlive[cp, t, b] != 0;
                    if (!any) continue;
                    j.WriteStartObject(HeapLensName(Tracked.Types[t]));
                    for (int b = 0; b < 4; b++)
                        if (s_cpAlive[cp, t, b] != 0) j.WriteNumber(GenName(b), s_cpAlive[cp, t, b]);
                    j.WriteEndObject();
                }
                j.WriteEndObject();
                j.WriteEndObject();
            }
            j.WriteEndArray();
            j.WriteEndObject();
        }
    }
}
