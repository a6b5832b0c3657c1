// SnapshotGraphs — builds object graphs of known shape and writes what every heap snapshot of
// them must contain.
//
//   dotnet SnapshotGraphs.dll [truth.json] [--wait-for-snapshot [--go-file PATH]
//                             [--ready-file PATH] [--wait-timeout SECONDS]]
//
// The ground-truth path is argv[1] or, if absent, the environment variable HEAPLENS_GROUND_TRUTH.
// `heaplens record` takes a snapshot at every induced GC by default, so each checkpoint below (one
// GC.Collect) is one snapshot. The graphs use the types of namespace HeapLens.Examples.Graphs
// (Types.cs); the format of the JSON is described in examples/README.md.
//
// Checkpoints (each a blocking GC.Collect):
//   start                 gen2              nothing of ours yet
//   built                 gen2, compacting  every graph built and reachable
//   dropped               gen2              the cycle, a weak-only target, a freed handle's target
//                                           are collected; the dropped Finalizable survives as a
//                                           finalizer root (it is queued by this GC)
//   gen0-keeps-dead-gen2  gen0              orphans and the finalized object, unreachable but in
//                                           gen2, are not condemned: still in the heap walk
//   final                 gen2, sweeping    ... and now collected
// With --wait-for-snapshot the program then prints "SnapshotGraphs: ready pid=PID go=PATH" (also
// written to --ready-file), waits until PATH exists (or the timeout: exit status 3) and reports
// the GCs that happened meanwhile ("SnapshotGraphs: GC #N while waiting"): `heaplens snapshot PID`
// forces one, whose expected content is written as "on_demand".
//
// Rules followed so that the expected content is exact and the same on every run:
//  - graphs are built and dropped in [NoInlining] methods that leave references only in static
//    fields (and one local of Main: the POH array that is a stack root), so no stale stack slot
//    keeps a dropped object alive;
//  - nothing of ours is allocated by any other thread, and nothing runs concurrently but the
//    finalizer, which allocates nothing and is waited for;
//  - after each GC the program measures GC.GetGeneration of every object it still holds and
//    predicts, for what it dropped, whether that GC condemned it (then it died there) or not (then
//    the heap walk still reports it, in the generation measured before the drop);
//  - checkpoints allocate nothing; if the collection counts show another GC between the induced
//    one and the end of the measurement, the checkpoint is redone (and the redo reported).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text.Json;
using System.Threading;
using HeapLens.Examples.Graphs;
using static HeapLensShared.HeapLensSupport;

namespace SnapshotGraphs
{
    /// <summary>Objects the program dropped whose death depends on the next GC's generation.</summary>
    internal sealed class Ghost
    {
        public int Type;
        public int Count;
        public int Generation;   // GC.GetGeneration bucket (2 for LOH/POH); -1: not known yet
        public bool Finalizable; // survives its first condemning GC on the finalization queue
    }

    internal static class Program
    {
        // ---- the graphs' parameters ----
        private const int NodeCount = 1000;
        private static int DataLength(int i) => 16 + i;  // node i holds byte[16 + i]
        private const int CycleLength = 7;
        private const int OrphanCount = 50;
        private const int PohLocalLength = 1000;          // int[1000]: 4,024 bytes
        private const int PohHandledLength = 2000;        // int[2000]: 8,024 bytes
        private const int LargeItems = 6000;              // LargeItem[6000]: 96,024 bytes (LOH)
        private const int LeafSlots = 12000;              // Leaf[12000]: 96,024 bytes (LOH)
        private const int Leaves = 3;                     // non-null slots of the Leaf[]
        private const string GraphName = "heaplens-snapshot-graph"; // a literal: frozen string

        // ---- example types (index into the tables below) ----
        private const int TNode = 0, TNodeArray = 1, TList = 2, TCycle = 3, TStrong = 4, TFreed = 5,
            TPinned = 6, TWeak = 7, TWeakOnly = 8, TFinalizable = 9, TPayload = 10, TPohHolder = 11,
            TLohHolder = 12, TLargeItems = 13, TLeaf = 14, TLeafArray = 15, TOrphan = 16,
            TGraphInfo = 17, TTwin = 18, TTwinTarget = 19, TypeCount = 20;

        private static readonly Type[] s_types =
        {
            typeof(Node), typeof(Node[]), typeof(List<Node>), typeof(CycleNode), typeof(StrongTarget),
            typeof(FreedTarget), typeof(PinnedTarget), typeof(WeakTarget), typeof(WeakOnlyTarget),
            typeof(Finalizable), typeof(FinalizerPayload), typeof(PohHolder), typeof(LohHolder),
            typeof(LargeItem[]), typeof(Leaf), typeof(Leaf[]), typeof(Orphan), typeof(GraphInfo),
            typeof(Twin), typeof(TwinTarget),
        };

        private static readonly int[] s_allocated = new int[TypeCount];

        private static string HeapOf(int t) => t == TLargeItems || t == TLeafArray ? "loh" : "soh";

        // ---- the graphs (statics only) ----
        private static List<Node>? s_nodes;
        private static CycleNode? s_cycle;
        private static WeakTarget? s_weakKeep;
        private static WeakOnlyTarget? s_weakOnlyKeep;
        private static Finalizable? s_finalizable;
        private static PohHolder? s_poh;
        private static LohHolder? s_loh;
        private static Orphan? s_orphans;
        private static GraphInfo? s_info;
        private static Twin? s_twin;

        // ---- GC handles ----
        private const int HStrong = 0, HFreed = 1, HPinned = 2, HPinnedPoh = 3, HWeak = 4,
            HWeakDead = 5, HandleCount = 6;
        private static readonly string[] s_handleRole =
            { "strong", "strong-freed", "pinned", "pinned-poh", "weak", "weak-dead" };
        private static readonly string[] s_handleKind =
            { "strong", "strong", "pinned", "pinned", "weak", "weak" };
        private static readonly GCHandle[] s_handles = new GCHandle[HandleCount];
        private static readonly long[] s_handleAddress = new long[HandleCount];
        private static readonly int[] s_handleCreatedAfter = new int[HandleCount];
        private static readonly int[] s_handleFreedAfter = { -1, -1, -1, -1, -1, -1 };
        private static readonly int[] s_handleClearedAfter = { -1, -1, -1, -1, -1, -1 };

        // ---- dropped objects not known to be collected yet ----
        private static readonly List<Ghost> s_ghosts = new List<Ghost>();

        // ---- checkpoints (preallocated: taking one allocates nothing) ----
        private const int MaxCheckpoints = 16;
        private const int OnDemandSlot = MaxCheckpoints - 1; // the snapshot taken while waiting
        private const int ScratchSlot = MaxCheckpoints - 2;  // warm-up
        private static readonly string[] s_cpLabel = new string[MaxCheckpoints];
        private static readonly int[] s_cpRequested = new int[MaxCheckpoints];
        private static readonly int[] s_cpCompacting = new int[MaxCheckpoints]; // -1 GC decides
        private static readonly int[] s_cpGeneration = new int[MaxCheckpoints]; // from the counts
        private static readonly int[] s_cpRedo = new int[MaxCheckpoints];
        private static readonly int[,] s_cpCounts = new int[MaxCheckpoints, 3];
        private static readonly long[] s_cpMicros = new long[MaxCheckpoints];
        private static readonly int[,,] s_cpIn = new int[MaxCheckpoints, TypeCount, 4]; // gen 0,1,2,other
        private static readonly int[,] s_cpDied = new int[MaxCheckpoints, TypeCount];
        private static readonly int[,] s_cpPohGen = new int[MaxCheckpoints, 2];      // -1 absent
        private static readonly bool[] s_cpPohLocalHeld = new bool[MaxCheckpoints];
        private static readonly bool[] s_cpFinalizableHeld = new bool[MaxCheckpoints];
        private static readonly bool[] s_cpFinalizerRoot = new bool[MaxCheckpoints]; // queued here
        private static readonly bool[] s_cpFreedHandle = new bool[MaxCheckpoints];   // still allocated
        private static int s_cpCount;
        private static int s_gcsInducedByUs;
        private static int s_pendingFinalizerSlot = -1;

        // ---- on-demand snapshot (--wait-for-snapshot) ----
        private static bool s_waited;
        private static int s_waitGcs;
        private static bool s_waitTimedOut;

        private static int Main(string[] args)
        {
            string? truthPath = null, goFile = null, readyFile = null;
            bool wait = false;
            int waitTimeout = 120;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--wait-for-snapshot") wait = true;
                else if (args[i] == "--go-file" && i + 1 < args.Length) goFile = args[++i];
                else if (args[i] == "--ready-file" && i + 1 < args.Length) readyFile = args[++i];
                else if (args[i] == "--wait-timeout" && i + 1 < args.Length) waitTimeout = int.Parse(args[++i], CultureInfo.InvariantCulture);
                else if (args[i] == "--help" || args[i] == "-h")
                {
                    Console.WriteLine("usage: dotnet SnapshotGraphs.dll [truth.json] [--wait-for-snapshot [--go-file PATH] " +
                                      "[--ready-file PATH] [--wait-timeout SECONDS]]");
                    return 0;
                }
                else if (truthPath == null && !args[i].StartsWith("--", StringComparison.Ordinal)) truthPath = args[i];
                else { Console.Error.WriteLine($"SnapshotGraphs: unexpected argument '{args[i]}'"); return 2; }
            }
            truthPath ??= Environment.GetEnvironmentVariable("HEAPLENS_GROUND_TRUTH");
            if (string.IsNullOrEmpty(truthPath)) truthPath = null;

            var clock = Stopwatch.StartNew();
            Setup();

            Checkpoint("start", 2, -1);                 // nothing of ours yet
            int[] pohLocal = Build();                   // a stack root of Main from here on
            Checkpoint("built", 2, 1);                  // every graph reachable
            DropFirst();
            Checkpoint("dropped", 2, -1);               // cycle, weak-only, freed target die; finalizer root
            AfterFinalizers();
            DropOrphans();
            Checkpoint("gen0-keeps-dead-gen2", 0, -1);  // dropped gen2 objects still walked
            Checkpoint("final", 2, 0);                  // ... and collected (sweeping GC)
            int exitCode = 0;
            if (wait && !WaitForSnapshot(goFile, readyFile, waitTimeout)) exitCode = 3;
            GC.KeepAlive(pohLocal);

            long elapsedMs = clock.ElapsedMilliseconds;
            int gcsTotal = GC.CollectionCount(0);
            PrintSummary(elapsedMs, gcsTotal);
            if (truthPath != null)
            {
                WriteTruth(truthPath, gcsTotal, elapsedMs);
                Console.WriteLine($"ground truth written to {truthPath}");
            }
            return exitCode;
        }

        private static void Setup()
        {
            // Compile and initialize everything the checkpoint path uses before the first one.
            Observe(ScratchSlot);
            ApplyGhosts(ScratchSlot, -1);
            s_ghosts.Capacity = 16;
        }

        // ---------------------------------------------------------------- building the graphs
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static int[] Build()
        {
            // (a) a static List<Node> of NodeCount nodes (backing array of exactly that length).
            var nodes = new List<Node>(NodeCount);
            s_allocated[TList]++;
            s_allocated[TNodeArray]++;
            for (int i = 0; i < NodeCount; i++)
            {
                nodes.Add(new Node(new byte[DataLength(i)], i));
                s_allocated[TNode]++;
            }
            s_nodes = nodes;

            // (b) a ring of CycleLength nodes, reachable from a static until DropFirst.
            var first = new CycleNode { Index = 0 };
            CycleNode last = first;
            for (int i = 1; i < CycleLength; i++)
            {
                var c = new CycleNode { Index = i };
                last.Next = c;
                last = c;
            }
            last.Next = first;
            s_allocated[TCycle] += CycleLength;
            s_cycle = first;

            // (c) handles and their targets.
            NewHandle(HStrong, new StrongTarget { Stamp = 1 }, GCHandleType.Normal, TStrong);
            NewHandle(HFreed, new FreedTarget { Stamp = 2 }, GCHandleType.Normal, TFreed);
            NewHandle(HPinned, new PinnedTarget { Stamp = 3 }, GCHandleType.Pinned, TPinned);
            var weak = new WeakTarget { Stamp = 4 };
            s_weakKeep = weak;
            NewHandle(HWeak, weak, GCHandleType.Weak, TWeak);
            var weakOnly = new WeakOnlyTarget { Stamp = 5 };
            s_weakOnlyKeep = weakOnly;
            NewHandle(HWeakDead, weakOnly, GCHandleType.Weak, TWeakOnly);

            // (d) a finalizable object with a payload.
            s_finalizable = new Finalizable { Payload = new FinalizerPayload { Stamp = 6 } };
            s_allocated[TFinalizable]++;
            s_allocated[TPayload]++;

            // (e) two POH arrays referenced by a holder: one also a local of Main, one also pinned
            // by a handle.
            int[] pohLocal = GC.AllocateArray<int>(PohLocalLength, pinned: true);
            int[] pohHandled = GC.AllocateArray<int>(PohHandledLength, pinned: true);
            s_poh = new PohHolder { Local = pohLocal, Handled = pohHandled };
            s_allocated[TPohHolder]++;
            NewHandle(HPinnedPoh, pohHandled, GCHandleType.Pinned, -1);

            // (f) two LOH arrays referenced by a holder, one of them referencing small objects.
            var leaves = new Leaf?[LeafSlots];
            for (int i = 0; i < Leaves; i++) leaves[i * (LeafSlots / Leaves)] = new Leaf { Stamp = i };
            s_loh = new LohHolder { Items = new LargeItem[LargeItems], Leaves = leaves };
            s_allocated[TLohHolder]++;
            s_allocated[TLargeItems]++;
            s_allocated[TLeafArray]++;
            s_allocated[TLeaf] += Leaves;

            // A chain dropped once it is in gen2 (DropOrphans).
            Orphan? head = null;
            for (int i = 0; i < OrphanCount; i++) head = new Orphan { Next = head, Index = i };
            s_allocated[TOrphan] += OrphanCount;
            s_orphans = head;

            // References to the frozen heap.
            s_info = new GraphInfo(GraphName, typeof(Node));
            s_allocated[TGraphInfo]++;

            // Two references from one object to one target.
            var twinTarget = new TwinTarget { Stamp = 7 };
            s_twin = new Twin { A = twinTarget, B = twinTarget };
            s_allocated[TTwin]++;
            s_allocated[TTwinTarget]++;

            return pohLocal;
        }

        private static void NewHandle(int h, object target, GCHandleType type, int t)
        {
            s_handles[h] = GCHandle.Alloc(target, type);
            // GCHandle.ToIntPtr sets bit 0 for pinned handles; the runtime's handle id has it clear.
            s_handleAddress[h] = (long)GCHandle.ToIntPtr(s_handles[h]) & ~1L;
            s_handleCreatedAfter[h] = GC.CollectionCount(0);
            if (t >= 0) s_allocated[t]++;
        }

        // ---------------------------------------------------------------- dropping parts of them
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void DropFirst()
        {
            CycleNode c = s_cycle!;
            for (int i = 0; i < CycleLength; i++, c = c.Next!) AddGhost(TCycle, GC.GetGeneration(c), false);
            s_cycle = null;

            AddGhost(TWeakOnly, GC.GetGeneration(s_weakOnlyKeep!), false);
            s_weakOnlyKeep = null; // only its weak handle is left

            AddGhost(TFreed, GC.GetGeneration(s_handles[HFreed].Target!), false);
            s_handles[HFreed].Free();
            s_handleFreedAfter[HFreed] = GC.CollectionCount(0);

            Finalizable f = s_finalizable!;
            AddGhost(TFinalizable, GC.GetGeneration(f), true);
            AddGhost(TPayload, GC.GetGeneration(f.Payload!), true);
            s_finalizable = null;
        }

        /// <summary>Runs the finalizer queued by the last GC, then learns the generation the
        /// resurrected Finalizable and its payload were promoted to.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void AfterFinalizers()
        {
            GC.WaitForPendingFinalizers();
            if (Finalizable.Finalized != 1 || s_pendingFinalizerSlot < 0)
                throw new InvalidOperationException($"expected one finalizer run after a queued finalizer, got {Finalizable.Finalized}");
            foreach (Ghost g in s_ghosts)
            {
                if (!g.Finalizable || g.Generation >= 0) continue;
                g.Generation = g.Type == TFinalizable ? Finalizable.SeenGeneration : Finalizable.SeenPayloadGeneration;
                s_cpIn[s_pendingFinalizerSlot, g.Type, g.Generation] += g.Count;
                g.Finalizable = false; // finalized: an ordinary unreachable object from now on
            }
            s_pendingFinalizerSlot = -1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void DropOrphans()
        {
            for (Orphan? o = s_orphans; o != null; o = o.Next) AddGhost(TOrphan, GC.GetGeneration(o), false);
            s_orphans = null;
        }

        private static void AddGhost(int type, int generation, bool finalizable)
        {
            foreach (Ghost g in s_ghosts)
            {
                if (g.Type == type && g.Generation == generation && g.Finalizable == finalizable)
                {
                    g.Count++;
                    return;
                }
            }
            s_ghosts.Add(new Ghost { Type = type, Count = 1, Generation = generation, Finalizable = finalizable });
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
            bool dropsPending = s_ghosts.Count > 0;
            long t0 = Stopwatch.GetTimestamp();
            for (int attempt = 0; attempt < 10; attempt++)
            {
                int b0 = GC.CollectionCount(0), b1 = GC.CollectionCount(1), b2 = GC.CollectionCount(2);
                Collect(generation, compacting);
                s_gcsInducedByUs++;
                int a0 = GC.CollectionCount(0), a1 = GC.CollectionCount(1), a2 = GC.CollectionCount(2);
                int ran = a2 > b2 ? 2 : a1 > b1 ? 1 : 0;
                ApplyGhosts(cp, ran);
                Observe(cp);
                int c0 = GC.CollectionCount(0), c1 = GC.CollectionCount(1), c2 = GC.CollectionCount(2);
                if (a0 == b0 + 1 && c0 == a0 && c1 == a1 && c2 == a2)
                {
                    s_cpLabel[cp] = label;
                    s_cpRequested[cp] = generation;
                    s_cpCompacting[cp] = compacting;
                    s_cpGeneration[cp] = ran;
                    s_cpCounts[cp, 0] = a0;
                    s_cpCounts[cp, 1] = a1;
                    s_cpCounts[cp, 2] = a2;
                    s_cpMicros[cp] = (long)Stopwatch.GetElapsedTime(t0).TotalMicroseconds;
                    s_cpCount++;
                    return;
                }
                // Another GC ran. With dropped objects pending, which GC collected them is unknown:
                // give up rather than guess (never seen with this program: it allocates little).
                s_cpRedo[cp]++;
                if (dropsPending)
                    throw new InvalidOperationException($"checkpoint '{label}': another GC ran while dropped objects were pending");
            }
            throw new InvalidOperationException($"checkpoint '{label}': other GCs kept interfering");
        }

        /// <summary>Decides, for every dropped object, whether the GC that just ran (condemned
        /// generations 0..ran) collected it. Allocates nothing.</summary>
        private static void ApplyGhosts(int cp, int ran)
        {
            for (int t = 0; t < TypeCount; t++) s_cpDied[cp, t] = 0;
            s_cpFinalizerRoot[cp] = false;
            for (int i = s_ghosts.Count - 1; i >= 0; i--)
            {
                Ghost g = s_ghosts[i];
                if (g.Generation > ran) continue; // not condemned: still in the heap (Observe counts it)
                if (g.Finalizable)
                {
                    // Queued for finalization by this GC: it survives, promoted; the finalizer
                    // tells to which generation (AfterFinalizers).
                    g.Generation = -1;
                    s_cpFinalizerRoot[cp] = true;
                    s_pendingFinalizerSlot = cp;
                    continue;
                }
                s_cpDied[cp, g.Type] += g.Count;
                s_ghosts.RemoveAt(i);
            }
        }

        private static void Count(int cp, int type, object o)
        {
            int g = GC.GetGeneration(o);
            s_cpIn[cp, type, g >= 0 && g <= 2 ? g : 3]++;
        }

        /// <summary>Counts, per type and GC.GetGeneration value, the objects of ours that the heap
        /// now holds: those the program references, and dropped ones no GC condemned yet.
        /// Allocates nothing.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Observe(int cp)
        {
            for (int t = 0; t < TypeCount; t++)
                for (int b = 0; b < 4; b++) s_cpIn[cp, t, b] = 0;

            List<Node>? nodes = s_nodes;
            if (nodes != null)
            {
                Count(cp, TList, nodes);
                Count(cp, TNodeArray, nodes); // the backing array: allocated with the list, same generation
                for (int i = 0; i < nodes.Count; i++) Count(cp, TNode, nodes[i]);
            }
            CycleNode? c = s_cycle;
            for (int i = 0; c != null && i < CycleLength; i++, c = c.Next) Count(cp, TCycle, c);
            if (s_handles[HStrong].IsAllocated) Count(cp, TStrong, s_handles[HStrong].Target!);
            if (s_handles[HFreed].IsAllocated) Count(cp, TFreed, s_handles[HFreed].Target!);
            if (s_handles[HPinned].IsAllocated) Count(cp, TPinned, s_handles[HPinned].Target!);
            if (s_weakKeep != null) Count(cp, TWeak, s_weakKeep);
            if (s_weakOnlyKeep != null) Count(cp, TWeakOnly, s_weakOnlyKeep);
            for (int h = 0; h < HandleCount; h++)
                if (s_handleClearedAfter[h] < 0 && s_handles[h].IsAllocated && s_handles[h].Target == null)
                    s_handleClearedAfter[h] = GC.CollectionCount(0);
            s_cpFinalizableHeld[cp] = s_finalizable != null;
            if (s_finalizable != null)
            {
                Count(cp, TFinalizable, s_finalizable);
                Count(cp, TPayload, s_finalizable.Payload!);
            }
            s_cpPohGen[cp, 0] = s_cpPohGen[cp, 1] = -1;
            s_cpPohLocalHeld[cp] = s_poh != null;
            if (s_poh != null)
            {
                Count(cp, TPohHolder, s_poh);
                s_cpPohGen[cp, 0] = GC.GetGeneration(s_poh.Local!);
                s_cpPohGen[cp, 1] = GC.GetGeneration(s_poh.Handled!);
            }
            s_cpFreedHandle[cp] = s_handles[HFreed].IsAllocated;
            if (s_loh != null)
            {
                Count(cp, TLohHolder, s_loh);
                Count(cp, TLargeItems, s_loh.Items!);
                Count(cp, TLeafArray, s_loh.Leaves!);
                foreach (Leaf? l in s_loh.Leaves!) if (l != null) Count(cp, TLeaf, l);
            }
            for (Orphan? o = s_orphans; o != null; o = o.Next) Count(cp, TOrphan, o);
            if (s_info != null) Count(cp, TGraphInfo, s_info);
            if (s_twin != null)
            {
                Count(cp, TTwin, s_twin);
                Count(cp, TTwinTarget, s_twin.A!);
            }
            foreach (Ghost g in s_ghosts)
                if (g.Generation >= 0) s_cpIn[cp, g.Type, g.Generation] += g.Count;
        }

        // ---------------------------------------------------------------- on-demand snapshot
        /// <summary>Signals readiness, then waits for the go file, reporting every GC that happens
        /// meanwhile. Returns false on timeout.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static bool WaitForSnapshot(string? goFile, string? readyFile, int timeoutSeconds)
        {
            int pid = Environment.ProcessId;
            goFile ??= Path.Combine(Path.GetTempPath(), $"SnapshotGraphs-{pid}.go");
            goFile = Path.GetFullPath(goFile);
            int b0 = GC.CollectionCount(0), b1 = GC.CollectionCount(1), b2 = GC.CollectionCount(2);
            string ready = $"SnapshotGraphs: ready pid={pid} go={goFile} gcs={b0}";
            if (readyFile != null)
            {
                string tmp = readyFile + ".tmp";
                File.WriteAllText(tmp, ready + "\n");
                File.Move(tmp, readyFile, overwrite: true);
            }
            Console.WriteLine(ready);
            var clock = Stopwatch.StartNew();
            int seen = b0;
            bool arrived;
            while (!(arrived = File.Exists(goFile)) && clock.Elapsed.TotalSeconds < timeoutSeconds)
            {
                Thread.Sleep(10); // the program's own polling; the test never sleeps to synchronise
                int now = GC.CollectionCount(0);
                for (; seen < now; seen++) Console.WriteLine($"SnapshotGraphs: GC #{seen + 1} while waiting");
            }
            int a0 = GC.CollectionCount(0), a1 = GC.CollectionCount(1), a2 = GC.CollectionCount(2);
            for (; seen < a0; seen++) Console.WriteLine($"SnapshotGraphs: GC #{seen + 1} while waiting");
            s_waited = true;
            s_waitGcs = a0 - b0;
            s_waitTimedOut = !arrived;
            s_cpLabel[OnDemandSlot] = "on-demand";
            s_cpRequested[OnDemandSlot] = 2;
            s_cpCompacting[OnDemandSlot] = -1;
            s_cpGeneration[OnDemandSlot] = a2 > b2 ? 2 : a1 > b1 ? 1 : 0;
            s_cpCounts[OnDemandSlot, 0] = a0;
            s_cpCounts[OnDemandSlot, 1] = a1;
            s_cpCounts[OnDemandSlot, 2] = a2;
            ApplyGhosts(OnDemandSlot, s_cpGeneration[OnDemandSlot]);
            Observe(OnDemandSlot);
            if (!arrived) Console.Error.WriteLine($"SnapshotGraphs: no {goFile} after {timeoutSeconds} s");
            else Console.WriteLine($"SnapshotGraphs: go file seen, {s_waitGcs} GC(s) while waiting");
            return arrived;
        }

        // ---------------------------------------------------------------- output

        /// <summary>Size of a single-dimension array on 64-bit CoreCLR as the profiling API's
        /// GetObjectSize2 reports it (heaplens' objects.size): 24 bytes (object header, MethodTable,
        /// length) plus the elements, NOT rounded up to 8 as the allocator does (byte[17] is 41).</summary>
        private static long ArraySize(int elementSize, int length) => 24L + (long)elementSize * length;

        private static string GenName(int bucket) => bucket <= 2 ? bucket.ToString(CultureInfo.InvariantCulture) : "other";

        private static IEnumerable<int> Slots()
        {
            for (int cp = 0; cp < s_cpCount; cp++) yield return cp;
            if (s_waited) yield return OnDemandSlot;
        }

        private static void PrintSummary(long elapsedMs, int gcsTotal)
        {
            Console.WriteLine($"SnapshotGraphs: {elapsedMs} ms, {gcsTotal} GCs ({s_gcsInducedByUs} induced by checkpoints), " +
                              $"collector: {LoadedCollector() ?? "not loaded"}");
            foreach (int cp in Slots())
            {
                Console.WriteLine($"checkpoint {s_cpLabel[cp]}: GC #{s_cpCounts[cp, 0]} gen{s_cpGeneration[cp]} (requested gen{s_cpRequested[cp]})," +
                                  $" counts {s_cpCounts[cp, 0]}/{s_cpCounts[cp, 1]}/{s_cpCounts[cp, 2]}, redo {s_cpRedo[cp]}");
                for (int t = 0; t < TypeCount; t++)
                {
                    string line = "";
                    for (int b = 0; b < 4; b++)
                        if (s_cpIn[cp, t, b] != 0) line += $" gen{GenName(b)}={s_cpIn[cp, t, b]}";
                    if (s_cpDied[cp, t] != 0) line += $" died={s_cpDied[cp, t]}";
                    if (line.Length > 0) Console.WriteLine($"    {HeapLensName(s_types[t])}:{line}");
                }
                if (s_cpFinalizerRoot[cp]) Console.WriteLine($"    finalizer root: {HeapLensName(typeof(Finalizable))}");
            }
        }

        private static bool Present(int cp, int t)
        {
            for (int b = 0; b < 4; b++) if (s_cpIn[cp, t, b] != 0) return true;
            return false;
        }

        private static void WriteRoot(Utf8JsonWriter j, int kind, int flags, string? handle)
        {
            j.WriteStartObject();
            j.WriteNumber("kind", kind);
            j.WriteNumber("flags", flags);
            if (handle != null) j.WriteString("handle", handle);
            j.WriteEndObject();
        }

        /// <summary>Root expectations of one object: "exact" = the multiset of its roots,
        /// "kinds" = the set of distinct (kind, flags) of its roots (at least one root).</summary>
        private static void WriteRoots(Utf8JsonWriter j, string obj, string match, params (int kind, int flags, string? handle)[] roots)
        {
            j.WriteStartObject();
            j.WriteString("object", obj);
            j.WriteString("match", match);
            j.WriteStartArray("roots");
            foreach (var r in roots) WriteRoot(j, r.kind, r.flags, r.handle);
            j.WriteEndArray();
            j.WriteEndObject();
        }

        private const int KindStack = 1, KindFinalizer = 2, KindHandle = 3;
        private const int FlagPinning = 1, FlagWeak = 2;

        private static void WriteCheckpoint(Utf8JsonWriter j, int cp)
        {
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

            // What the snapshot holds of each example type, by GC.GetGeneration value.
            j.WriteStartObject("in_snapshot");
            for (int t = 0; t < TypeCount; t++)
            {
                if (!Present(cp, t)) continue;
                j.WriteStartObject(HeapLensName(s_types[t]));
                for (int b = 0; b < 4; b++)
                    if (s_cpIn[cp, t, b] != 0) j.WriteNumber(GenName(b), s_cpIn[cp, t, b]);
                j.WriteEndObject();
            }
            j.WriteEndObject();
            j.WriteStartObject("poh_generation"); // GC.GetGeneration of the POH arrays (absent: not allocated)
            if (s_cpPohGen[cp, 0] >= 0) j.WriteNumber("poh-local", s_cpPohGen[cp, 0]);
            if (s_cpPohGen[cp, 1] >= 0) j.WriteNumber("poh-handled", s_cpPohGen[cp, 1]);
            j.WriteEndObject();

            // Objects that died in this GC (objects.died_gc == gc), per type.
            j.WriteStartObject("died");
            for (int t = 0; t < TypeCount; t++)
                if (s_cpDied[cp, t] != 0) j.WriteNumber(HeapLensName(s_types[t]), s_cpDied[cp, t]);
            j.WriteEndObject();

            // Roots of the objects that are in this snapshot.
            j.WriteStartArray("roots");
            string N(int t) => HeapLensName(s_types[t]);
            if (Present(cp, TStrong)) WriteRoots(j, N(TStrong), "exact", (KindHandle, 0, "strong"));
            if (Present(cp, TFreed))
            {
                if (s_cpFreedHandle[cp]) WriteRoots(j, N(TFreed), "exact", (KindHandle, 0, "strong-freed"));
                else WriteRoots(j, N(TFreed), "exact");
            }
            if (Present(cp, TPinned)) WriteRoots(j, N(TPinned), "exact", (KindHandle, FlagPinning, "pinned"));
            if (Present(cp, TWeak)) WriteRoots(j, N(TWeak), "exact", (KindHandle, FlagWeak, "weak"));
            if (Present(cp, TWeakOnly)) WriteRoots(j, N(TWeakOnly), "exact", (KindHandle, FlagWeak, "weak-dead"));
            if (Present(cp, TFinalizable))
            {
                if (s_cpFinalizerRoot[cp]) WriteRoots(j, N(TFinalizable), "exact", (KindFinalizer, 0, null));
                else WriteRoots(j, N(TFinalizable), "exact");
            }
            if (s_cpPohGen[cp, 0] >= 0)
            {
                WriteRoots(j, "poh-local", "kinds", (KindStack, 0, null));
                WriteRoots(j, "poh-handled", "exact", (KindHandle, FlagPinning, "pinned-poh"));
            }
            // Reachable only through fields of other objects: no root of their own.
            foreach (int t in new[] { TNodeArray, TPayload, TLargeItems, TLeafArray, TLeaf, TNode, TCycle, TOrphan, TTwinTarget })
                if (Present(cp, t)) WriteRoots(j, N(t), "exact");
            j.WriteEndArray();
        }

        private static void WriteTruth(string path, int gcsTotal, long elapsedMs)
        {
            using var truth = new TruthFile(path, "SnapshotGraphs");
            Utf8JsonWriter j = truth.Json;
            string N(int t) => HeapLensName(s_types[t]);
            j.WriteString("gc_latency_mode", GCSettings.LatencyMode.ToString());
            j.WriteString("namespace", "HeapLens.Examples.Graphs");
            j.WriteNumber("elapsed_ms", elapsedMs);
            j.WriteStartArray("volatile"); // fields that differ between runs; everything else may not
            foreach (string v in new[] { "pid", "collector", "elapsed_ms", "checkpoints[].micros", "handles[].address",
                                         "on_demand.micros" })
                j.WriteStringValue(v);
            j.WriteEndArray();
            j.WriteNumber("gcs_total", gcsTotal);
            j.WriteNumber("gcs_induced", s_gcsInducedByUs);
            int redo = 0;
            for (int cp = 0; cp < s_cpCount; cp++) redo += s_cpRedo[cp];
            j.WriteNumber("checkpoint_redos", redo);

            j.WriteStartObject("types");
            for (int t = 0; t < TypeCount; t++)
            {
                j.WriteStartObject(N(t));
                j.WriteNumber("allocations", s_allocated[t]);
                j.WriteString("heap", HeapOf(t));
                j.WriteEndObject();
            }
            j.WriteEndObject();

            // How to find the objects that the root expectations name: a type with one instance,
            // or an array of a shared type found through the field of a holder that references it.
            j.WriteStartObject("objects");
            foreach (int t in new[] { TStrong, TFreed, TPinned, TWeak, TWeakOnly, TFinalizable, TPayload,
                                      TNodeArray, TList, TPohHolder, TLohHolder, TLargeItems, TLeafArray, TGraphInfo,
                                      TTwin, TTwinTarget })
            {
                j.WriteStartObject(N(t));
                j.WriteString("type", N(t));
                j.WriteEndObject();
            }
            foreach (var (label, length) in new[] { ("poh-local", PohLocalLength), ("poh-handled", PohHandledLength) })
            {
                j.WriteStartObject(label);
                j.WriteString("type", HeapLensName(typeof(int[])));
                j.WriteNumber("size", ArraySize(sizeof(int), length));
                j.WriteString("referenced_by", N(TPohHolder));
                j.WriteString("heap", "poh");
                j.WriteEndObject();
            }
            j.WriteEndObject();

            // The shapes, checked in every snapshot that holds them.
            j.WriteStartObject("graph");
            j.WriteStartObject("nodes");
            j.WriteString("list", N(TList));
            j.WriteString("array", N(TNodeArray));
            j.WriteString("node", N(TNode));
            j.WriteNumber("count", NodeCount);
            j.WriteString("data_type", HeapLensName(typeof(byte[])));
            j.WriteStartObject("data_sizes"); // object size -> nodes whose byte[] has that size
            var sizes = new SortedDictionary<long, int>();
            for (int i = 0; i < NodeCount; i++)
            {
                long s = ArraySize(1, DataLength(i));
                sizes[s] = sizes.TryGetValue(s, out int n) ? n + 1 : 1;
            }
            foreach (var kv in sizes) j.WriteNumber(kv.Key.ToString(CultureInfo.InvariantCulture), kv.Value);
            j.WriteEndObject();
            j.WriteEndObject();
            j.WriteStartObject("cycle");
            j.WriteString("type", N(TCycle));
            j.WriteNumber("length", CycleLength);
            j.WriteEndObject();
            j.WriteStartObject("orphans");
            j.WriteString("type", N(TOrphan));
            j.WriteNumber("count", OrphanCount);
            j.WriteEndObject();
            j.WriteStartObject("poh");
            j.WriteString("holder", N(TPohHolder));
            j.WriteStartArray("arrays");
            j.WriteStringValue("poh-local");
            j.WriteStringValue("poh-handled");
            j.WriteEndArray();
            j.WriteEndObject();
            j.WriteStartObject("loh");
            j.WriteString("holder", N(TLohHolder));
            j.WriteStartArray("arrays");
            foreach (var (t, size, refs) in new[] { (TLargeItems, ArraySize(16, LargeItems), 0), (TLeafArray, ArraySize(8, LeafSlots), Leaves) })
            {
                j.WriteStartObject();
                j.WriteString("type", N(t));
                j.WriteNumber("size", size);
                j.WriteNumber("refs", refs);
                if (refs > 0) j.WriteString("refs_to", N(TLeaf));
                j.WriteEndObject();
            }
            j.WriteEndArray();
            j.WriteEndObject();
            j.WriteStartObject("frozen");
            j.WriteString("holder", N(TGraphInfo));
            j.WriteStartArray("targets");
            j.WriteStringValue(HeapLensName(typeof(string)));
            j.WriteStringValue(HeapLensName(typeof(Node).GetType())); // System.RuntimeType
            j.WriteEndArray();
            j.WriteEndObject();
            j.WriteStartObject("twin"); // a field each: two references to the same object
            j.WriteString("holder", N(TTwin));
            j.WriteString("target", N(TTwinTarget));
            j.WriteNumber("refs", 2);
            j.WriteEndObject();
            j.WriteStartObject("finalizable");
            j.WriteString("type", N(TFinalizable));
            j.WriteString("payload", N(TPayload));
            j.WriteNumber("finalized", Finalizable.Finalized);
            j.WriteNumber("finalized_after_gc", Finalizable.SeenCollectionCount);
            j.WriteNumber("generation_when_finalized", Finalizable.SeenGeneration);
            j.WriteEndObject();
            j.WriteEndObject();

            j.WriteStartArray("handles");
            for (int h = 0; h < HandleCount; h++)
            {
                j.WriteStartObject();
                j.WriteString("role", s_handleRole[h]);
                j.WriteString("kind", s_handleKind[h]);
                j.WriteString("target", h == HPinnedPoh ? "poh-handled"
                    : N(h switch { HStrong => TStrong, HFreed => TFreed, HPinned => TPinned, HWeak => TWeak, _ => TWeakOnly }));
                j.WriteString("address", "0x" + s_handleAddress[h].ToString("x", CultureInfo.InvariantCulture));
                j.WriteNumber("created_after_gc", s_handleCreatedAfter[h]);
                if (s_handleFreedAfter[h] >= 0) j.WriteNumber("freed_after_gc", s_handleFreedAfter[h]);
                else j.WriteNull("freed_after_gc");
                if (s_handleClearedAfter[h] >= 0) j.WriteNumber("target_cleared_after_gc", s_handleClearedAfter[h]);
                else j.WriteNull("target_cleared_after_gc");
                j.WriteEndObject();
            }
            j.WriteEndArray();

            j.WriteStartArray("checkpoints");
            for (int cp = 0; cp < s_cpCount; cp++)
            {
                j.WriteStartObject();
                WriteCheckpoint(j, cp);
                j.WriteEndObject();
            }
            j.WriteEndArray();

            if (s_waited)
            {
                j.WriteStartObject("on_demand");
                j.WriteNumber("gcs_while_waiting", s_waitGcs);
                j.WriteBoolean("timed_out", s_waitTimedOut);
                WriteCheckpoint(j, OnDemandSlot);
                j.WriteEndObject();
            }
            else j.WriteNull("on_demand");
            j.WriteEndObject();
        }
    }
}
