// MidLife — a program shaped like a service, whose objects live a little, with its own ground
// truth.
//
//   dotnet MidLife.dll [truth.json] [--rounds N] [--threads T] [--window W] [--events E]
//                      [--checkpoints K] [--exit-code N] [--pauses]
//
// T worker threads ("worker-1".."worker-T", default 4) each run N rounds (default 400,000: about
// 21M allocations in all). A round allocates 8 Requests (dead a few rounds later), an Order with
// an OrderLine[] of 1-3 OrderLines (kept in a sliding window of the last W orders, default
// 60,000: one to a few GCs), an OrderEvent (a window of the last E, default 8,000) and, every 50th
// round, a CacheEntry holding the order: a cache that grows and never shrinks. GCs happen on their
// own (workstation or server GC, background GC off).
//
// K times (default 4, the last after the final round) the workers stop at a barrier and main takes
// two checkpoints (examples/README.md, "MidLife"):
//  - a blocking compacting gen2 GC: what is alive is exactly what the program holds, counted
//    per type and GC.GetGeneration value;
//  - then each worker runs 64 more rounds (far below a gen0 budget) and a blocking gen0 GC:
//    alive are the objects held (gen1: made in the burst; gen2: older) plus those dropped in the
//    burst that were made before the gen2 GC (dead but in gen2, which a gen0 GC does not
//    condemn). Written only when no other GC ran in between (else left out, and counted).
// With --pauses a sampler thread prints each GC's pause as examples/Workload does
// ("MidLife: pause gc=12 gen=0 us=345"), for the benchmark (bench/record/run.py --case midlife).
// Checkpoints allocate nothing of ours; the workers allocate only in [NoInlining] methods that
// leave their objects in the worker's arrays, so no stale stack slot keeps a dropped one alive.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime;
using System.Runtime.CompilerServices;
using System.Text.Json;
using System.Threading;
using HeapLens.Examples.MidLife;
using static HeapLensShared.HeapLensSupport;

namespace MidLife
{
    internal static class T
    {
        public const int Request = 0, Order = 1, Lines = 2, Line = 3, Event = 4, Cache = 5,
            OrderWindow = 6, EventWindow = 7, Sink = 8, Count = 9;

        public static readonly Type[] Types =
        {
            typeof(Request), typeof(Order), typeof(OrderLine[]), typeof(OrderLine), typeof(OrderEvent),
            typeof(CacheEntry), typeof(Order[]), typeof(OrderEvent[]), typeof(Request[]),
        };
    }

    /// <summary>One worker's state (outside the example namespace: not one of its types).</summary>
    internal sealed class Worker
    {
        public const int SinkSlots = 16, RequestsPerRound = 8, CacheEvery = 50;
        public readonly string Name;
        public readonly Order?[] Orders;
        public readonly OrderEvent?[] Events;
        public readonly Request?[] Sink = new Request?[SinkSlots];
        public CacheEntry? Cache;
        public long Round;
        public long OldBefore;                 // rounds before the last gen2 checkpoint
        public readonly long[] Allocated = new long[T.Count];
        // Dropped in a burst, made before OldBefore: per type and generation when dropped.
        public readonly long[,] DeadOld = new long[T.Count, 4];
        public Thread? Thread;

        public Worker(string name, int window, int events)
        {
            Name = name;
            Orders = new Order?[window];
            Events = new OrderEvent?[events];
        }

        /// <summary>Rounds [Round, end). Allocates; leaves its objects only in the arrays.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        public void Run(long end, bool burst)
        {
            for (long r = Round; r < end; r++)
            {
                for (int k = 0; k < RequestsPerRound; k++)
                {
                    int slot = (int)((r * RequestsPerRound + k) % SinkSlots);
                    Drop(Sink[slot], burst);
                    Sink[slot] = new Request { Id = r, Time = r * 7 + k, Kind = k };
                }
                Allocated[T.Request] += RequestsPerRound;
                int n = 1 + (int)(r % 3);
                var lines = new OrderLine[n];
                for (int i = 0; i < n; i++)
                    lines[i] = new OrderLine { Product = (int)(r % 1000) + i, Quantity = i + 1, Price = r };
                var order = new Order { Round = r, Customer = (int)(r % 977), Lines = lines };
                Allocated[T.Lines]++;
                Allocated[T.Line] += n;
                Allocated[T.Order]++;
                int w = (int)(r % Orders.Length);
                Drop(Orders[w], burst);
                Orders[w] = order;
                int e = (int)(r % Events.Length);
                Drop(Events[e], burst);
                Events[e] = new OrderEvent { Round = r, OrderId = r, Kind = (int)(r & 3) };
                Allocated[T.Event]++;
                if (r % CacheEvery == 0)
                {
                    order.Cached = true;
                    Cache = new CacheEntry { Key = r, Order = order, Next = Cache };
                    Allocated[T.Cache]++;
                }
            }
            Round = end;
        }

        // An object the worker lets go of. In a burst (after a gen2 checkpoint), one made before
        // that GC survived it (gen1 or gen2) and stays in the heap through the next gen0 GC:
        // counted in the generation it has now (no GC runs in a burst: the checkpoint checks).
        private void Dead(int type, object o)
        {
            int g = GC.GetGeneration(o);
            DeadOld[type, g >= 0 && g <= 2 ? g : 3]++;
        }

        private void Drop(Request? q, bool burst)
        {
            if (burst && q != null && q.Id < OldBefore) Dead(T.Request, q);
        }

        private void Drop(Order? o, bool burst)
        {
            if (!burst || o == null || o.Round >= OldBefore || o.Cached) return;
            Dead(T.Order, o);
            Dead(T.Lines, o.Lines!);
            foreach (OrderLine l in o.Lines!) Dead(T.Line, l);
        }

        private void Drop(OrderEvent? ev, bool burst)
        {
            if (burst && ev != null && ev.Round < OldBefore) Dead(T.Event, ev);
        }
    }

    internal static class Program
    {
        private const int BurstRounds = 64;
        private static Worker[] s_workers = Array.Empty<Worker>();
        private static Barrier? s_barrier;
        private static long s_rounds = 400_000;
        private static int s_checkpoints = 4;
        private static readonly long[] s_mainAllocated = new long[T.Count];

        // Checkpoints: label, GC, generation run, counts, alive[type, bucket 0/1/2/other].
        private sealed class Checkpoint
        {
            public string Label = "";
            public int Gc, Requested, Generation;
            public readonly int[] Counts = new int[3];
            public readonly long[,] Alive = new long[T.Count, 4];
            public long Micros;
        }
        private static readonly Checkpoint?[] s_cps = new Checkpoint?[64];
        private static int s_cpCount, s_gcsInduced, s_skipped;

        private static int Main(string[] args)
        {
            string? truthPath = null;
            int exitCode = 0, threads = 4, window = 60_000, events = 8_000;
            bool pauses = false;
            try
            {
                for (int i = 0; i < args.Length; i++)
                {
                    string a = args[i];
                    bool value = i + 1 < args.Length;
                    if (a == "--rounds" && value) s_rounds = Math.Max(1, long.Parse(args[++i]));
                    else if (a == "--threads" && value) threads = Math.Clamp(int.Parse(args[++i]), 1, 64);
                    else if (a == "--window" && value) window = Math.Max(1, int.Parse(args[++i]));
                    else if (a == "--events" && value) events = Math.Max(1, int.Parse(args[++i]));
                    else if (a == "--checkpoints" && value) s_checkpoints = Math.Clamp(int.Parse(args[++i]), 1, 30);
                    else if (a == "--exit-code" && value) exitCode = int.Parse(args[++i]);
                    else if (a == "--pauses") pauses = true;
                    else if (a == "--help" || a == "-h")
                    {
                        Console.WriteLine("usage: dotnet MidLife.dll [truth.json] [--rounds N] [--threads T] " +
                                          "[--window W] [--events E] [--checkpoints K] [--exit-code N] [--pauses]");
                        return 0;
                    }
                    else if (truthPath == null && !a.StartsWith("--")) truthPath = a;
                    else { Console.Error.WriteLine($"MidLife: unexpected argument '{a}'"); return 2; }
                }
            }
            catch (FormatException)
            {
                Console.Error.WriteLine("MidLife: a number was expected after an option");
                return 2;
            }
            truthPath ??= Environment.GetEnvironmentVariable("HEAPLENS_GROUND_TRUTH");
            if (string.IsNullOrEmpty(truthPath)) truthPath = null;

            Thread.CurrentThread.Name = "main";
            var sampler = pauses ? new PauseSampler("MidLife") : null;
            var clock = Stopwatch.StartNew();
            s_workers = new Worker[threads];
            for (int k = 0; k < threads; k++)
                s_workers[k] = new Worker("worker-" + (k + 1), window, events);
            s_mainAllocated[T.OrderWindow] = threads;
            s_mainAllocated[T.EventWindow] = threads;
            s_mainAllocated[T.Sink] = threads;
            s_barrier = new Barrier(threads + 1);
            foreach (Worker w in s_workers)
            {
                w.Thread = new Thread(WorkerMain) { Name = w.Name };
                w.Thread.Start(w);
            }
            for (int cp = 0; cp < s_checkpoints; cp++)
            {
                s_barrier.SignalAndWait(); // the workers reached the segment's end
                TakeGen2();
                s_barrier.SignalAndWait(); // they run the burst
                s_barrier.SignalAndWait(); // ... and stop again
                TakeGen0AfterBurst();
                s_barrier.SignalAndWait(); // on to the next segment
            }
            foreach (Worker w in s_workers) w.Thread!.Join();
            long elapsedMs = clock.ElapsedMilliseconds;
            sampler?.Stop();
            int gcsTotal = GC.CollectionCount(0);
            PrintSummary(elapsedMs, gcsTotal);
            if (truthPath != null)
            {
                WriteTruth(truthPath, exitCode, gcsTotal, elapsedMs);
                Console.WriteLine($"ground truth written to {truthPath}");
            }
            return exitCode;
        }

        private static void WorkerMain(object? state)
        {
            var w = (Worker)state!;
            for (int cp = 0; cp < s_checkpoints; cp++)
            {
                long end = s_rounds * (cp + 1) / s_checkpoints;
                w.Run(end, burst: false);
                s_barrier!.SignalAndWait();
                s_barrier.SignalAndWait(); // main took the gen2 checkpoint
                w.Run(w.Round + BurstRounds, burst: true);
                s_barrier.SignalAndWait();
                s_barrier.SignalAndWait(); // main took the gen0 checkpoint
            }
        }

        private static int s_countsBeforeBurst;

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void TakeGen2()
        {
            var cp = new Checkpoint { Label = $"segment-{s_cpCount / 2 + 1}-gen2-compacting", Requested = 2 };
            long t0 = Stopwatch.GetTimestamp();
            for (int attempt = 0; ; attempt++)
            {
                int b0 = GC.CollectionCount(0);
                GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
                s_gcsInduced++;
                int a0 = GC.CollectionCount(0), a1 = GC.CollectionCount(1), a2 = GC.CollectionCount(2);
                Count(cp, includeDeadOld: false);
                if (a0 == b0 + 1 && GC.CollectionCount(0) == a0)
                {
                    cp.Gc = a0;
                    cp.Generation = 2;
                    cp.Counts[0] = a0; cp.Counts[1] = a1; cp.Counts[2] = a2;
                    break;
                }
                if (attempt == 10) throw new InvalidOperationException("other GCs kept interfering");
            }
            cp.Micros = (long)Stopwatch.GetElapsedTime(t0).TotalMicroseconds;
            s_cps[s_cpCount++] = cp;
            foreach (Worker w in s_workers)
            {
                w.OldBefore = w.Round;
                Array.Clear(w.DeadOld);
            }
            s_countsBeforeBurst = cp.Counts[0];
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void TakeGen0AfterBurst()
        {
            var cp = new Checkpoint { Label = $"segment-{s_cpCount / 2 + 1}-gen0", Requested = 0 };
            long t0 = Stopwatch.GetTimestamp();
            int b0 = GC.CollectionCount(0), b1 = GC.CollectionCount(1);
            GC.Collect(0, GCCollectionMode.Forced, blocking: true);
            s_gcsInduced++;
            int a0 = GC.CollectionCount(0), a1 = GC.CollectionCount(1), a2 = GC.CollectionCount(2);
            Count(cp, includeDeadOld: true);
            // Exact only if the burst ran without a GC and this one was a gen0 GC alone.
            bool exact = b0 == s_countsBeforeBurst && a0 == b0 + 1 && a1 == b1 &&
                         GC.CollectionCount(0) == a0;
            if (!exact)
            {
                s_skipped++;
                return;
            }
            cp.Gc = a0;
            cp.Generation = 0;
            cp.Counts[0] = a0; cp.Counts[1] = a1; cp.Counts[2] = a2;
            cp.Micros = (long)Stopwatch.GetElapsedTime(t0).TotalMicroseconds;
            s_cps[s_cpCount++] = cp;
        }

        private static void Add(Checkpoint cp, int type, object? o)
        {
            if (o == null) return;
            int g = GC.GetGeneration(o);
            cp.Alive[type, g >= 0 && g <= 2 ? g : 3]++;
        }

        /// <summary>Counts what the program holds, per type and generation. Allocates nothing.</summary>
        private static void Count(Checkpoint cp, bool includeDeadOld)
        {
            Array.Clear(cp.Alive);
            foreach (Worker w in s_workers)
            {
                Add(cp, T.OrderWindow, w.Orders);
                Add(cp, T.EventWindow, w.Events);
                Add(cp, T.Sink, w.Sink);
                foreach (Request? q in w.Sink) Add(cp, T.Request, q);
                foreach (OrderEvent? e in w.Events) Add(cp, T.Event, e);
                foreach (Order? o in w.Orders) AddOrder(cp, o);
                for (CacheEntry? c = w.Cache; c != null; c = c.Next)
                {
                    Add(cp, T.Cache, c);
                    Order o = c.Order!;
                    if (w.Orders[(int)(o.Round % w.Orders.Length)] != o) AddOrder(cp, o); // not counted above
                }
                if (includeDeadOld)
                    for (int t = 0; t < T.Count; t++)
                        for (int b = 0; b < 4; b++) cp.Alive[t, b] += w.DeadOld[t, b];
            }
        }

        private static void AddOrder(Checkpoint cp, Order? o)
        {
            if (o == null) return;
            Add(cp, T.Order, o);
            Add(cp, T.Lines, o.Lines);
            foreach (OrderLine l in o.Lines!) Add(cp, T.Line, l);
        }

        // ---------------------------------------------------------------- output

        private static long Allocated(int type)
        {
            long n = s_mainAllocated[type];
            foreach (Worker w in s_workers) n += w.Allocated[type];
            return n;
        }

        // The window of orders is an array of W references: on the LOH from 85,000 bytes.
        private static string Heap(int type) =>
            type == T.OrderWindow && s_workers.Length > 0 && 24L + 8L * s_workers[0].Orders.Length >= 85_000 ? "loh"
            : type == T.EventWindow && s_workers.Length > 0 && 24L + 8L * s_workers[0].Events.Length >= 85_000 ? "loh"
            : "soh";

        private static string GenName(int bucket) => bucket <= 2 ? bucket.ToString() : "other";

        private static void PrintSummary(long elapsedMs, int gcsTotal)
        {
            long total = 0;
            for (int t = 0; t < T.Count; t++) total += Allocated(t);
            Console.WriteLine($"MidLife: threads={s_workers.Length} rounds={s_rounds} allocations={total} " +
                              $"elapsed_ms={elapsedMs} gcs={GC.CollectionCount(0)}/{GC.CollectionCount(1)}/{GC.CollectionCount(2)} " +
                              $"induced={s_gcsInduced} checkpoints={s_cpCount} skipped={s_skipped} " +
                              $"collector={(LoadedCollector() != null ? "loaded" : "none")}");
        }

        private static void WriteTruth(string path, int exitCode, int gcsTotal, long elapsedMs)
        {
            using var truth = new TruthFile(path, "MidLife");
            Utf8JsonWriter j = truth.Json;
            j.WriteString("gc_latency_mode", GCSettings.LatencyMode.ToString());
            j.WriteNumber("exit_status", exitCode);
            j.WriteNumber("rounds", s_rounds);
            j.WriteString("namespace", "HeapLens.Examples.MidLife");
            j.WriteNumber("elapsed_ms", elapsedMs);
            j.WriteNumber("gcs_total", gcsTotal);
            j.WriteNumber("gcs_induced", s_gcsInduced);
            j.WriteNumber("checkpoint_redos", 0);
            j.WriteNumber("checkpoints_skipped", s_skipped);
            j.WriteStartObject("types");
            for (int t = 0; t < T.Count; t++)
            {
                j.WriteStartObject(HeapLensName(T.Types[t]));
                j.WriteNumber("allocations", Allocated(t));
                j.WriteString("heap", Heap(t));
                j.WriteEndObject();
            }
            j.WriteEndObject();
            j.WriteStartObject("threads");
            for (int k = 0; k <= s_workers.Length; k++)
            {
                long[] counts = k < s_workers.Length ? s_workers[k].Allocated : s_mainAllocated;
                j.WriteStartObject(k < s_workers.Length ? s_workers[k].Name : "main");
                for (int t = 0; t < T.Count; t++)
                    if (counts[t] != 0) j.WriteNumber(HeapLensName(T.Types[t]), counts[t]);
                j.WriteEndObject();
            }
            j.WriteEndObject();
            j.WriteStartArray("checkpoints");
            for (int i = 0; i < s_cpCount; i++)
            {
                Checkpoint cp = s_cps[i]!;
                j.WriteStartObject();
                j.WriteString("label", cp.Label);
                j.WriteNumber("gc", cp.Gc);
                j.WriteNumber("requested_generation", cp.Requested);
                j.WriteNumber("generation", cp.Generation);
                if (cp.Requested == 2) j.WriteBoolean("compacting_requested", true);
                else j.WriteNull("compacting_requested");
                j.WriteStartArray("collection_counts");
                for (int g = 0; g < 3; g++) j.WriteNumberValue(cp.Counts[g]);
                j.WriteEndArray();
                j.WriteNumber("redo", 0);
                j.WriteNumber("micros", cp.Micros);
                j.WriteStartObject("alive");
                for (int t = 0; t < T.Count; t++)
                {
                    bool any = false;
                    for (int b = 0; b < 4; b++) any |= cp.Alive[t, b] != 0;
                    if (!any) continue;
                    j.WriteStartObject(HeapLensName(T.Types[t]));
                    for (int b = 0; b < 4; b++)
                        if (cp.Alive[t, b] != 0) j.WriteNumber(GenName(b), cp.Alive[t, b]);
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
