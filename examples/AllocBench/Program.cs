// AllocBench — allocation-heavy benchmark for heaplens' overhead measurements.
//
//   dotnet AllocBench.dll [iterations] [--threads T] [--gate FILE [--gate-at N]]
//
// T threads (default 2) each run `iterations` iterations (default 2000). One iteration allocates
// AllocsPerIteration small objects (a class, a small array, a boxed value and a small string in
// turn); most are dropped at once, one in SurviveEvery is kept in a per-thread ring of Ring slots,
// so survivors live for a while, get promoted and die later (gen0, gen1 and some gen2 GCs).
// Prints one line of key=value pairs; bench/overhead/run.sh parses elapsed_ms and collector
// (loaded / none: whether the heaplens collector library is mapped into the process).
// With --gate FILE every thread stops after N iterations (--gate-at, default half of them); once
// all have, the program prints "AllocBench: gate gcs=G pid=P" and goes on when FILE exists: a
// test injects its fault while the program is known to have work left (tests/e2e/faults).
using System;
using System.Diagnostics;
using System.Threading;
using static HeapLensShared.HeapLensSupport;

namespace HeapLens.Bench
{
    public sealed class Message
    {
        public long Id;
        public int Kind;
        public object? Payload;
    }

    internal static class Program
    {
        private const int AllocsPerIteration = 100;
        private const int SurviveEvery = 50;
        private const int Ring = 4096;
        private const int SinkSlots = 8;

        private static int s_iterations = 2000;
        private static readonly object?[][] s_rings = new object?[64][];
        private static readonly object?[][] s_sinks = new object?[64][];
        private static long[] s_allocated = new long[64];
        private static Barrier? s_start;
        private static Barrier? s_gate; // --gate: the workers and the main thread, twice
        private static int s_gateAt = -1;

        private static int Main(string[] args)
        {
            int threads = 2;
            string? gateFile = null;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--threads" && i + 1 < args.Length) threads = Math.Clamp(int.Parse(args[++i]), 1, 64);
                else if (args[i] == "--gate" && i + 1 < args.Length) gateFile = args[++i];
                else if (args[i] == "--gate-at" && i + 1 < args.Length) s_gateAt = Math.Max(0, int.Parse(args[++i]));
                else if (args[i] == "--help" || args[i] == "-h")
                {
                    Console.WriteLine("usage: dotnet AllocBench.dll [iterations] [--threads T] [--gate FILE [--gate-at N]]");
                    return 0;
                }
                else s_iterations = Math.Max(1, int.Parse(args[i]));
            }

            int g0 = GC.CollectionCount(0), g1 = GC.CollectionCount(1), g2 = GC.CollectionCount(2);
            s_start = new Barrier(threads + 1);
            if (gateFile != null)
            {
                s_gate = new Barrier(threads + 1);
                s_gateAt = s_gateAt < 0 ? s_iterations / 2 : Math.Min(s_gateAt, s_iterations - 1); // reached by every worker
            }
            var workers = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                workers[t] = new Thread(Worker) { Name = "bench-" + (t + 1) };
                workers[t].Start(t);
            }
            s_start.SignalAndWait(); // all threads ready: start the clock
            var clock = Stopwatch.StartNew();
            if (s_gate != null)
            {
                s_gate.SignalAndWait(); // every worker is at the gate
                Console.WriteLine($"AllocBench: gate gcs={GC.CollectionCount(0) - g0} pid={Environment.ProcessId}");
                while (!System.IO.File.Exists(gateFile)) Thread.Sleep(5); // the test's go
                s_gate.SignalAndWait();
            }
            foreach (var w in workers) w.Join();
            double ms = clock.Elapsed.TotalMilliseconds;

            long total = 0;
            for (int t = 0; t < threads; t++) total += s_allocated[t];
            long survivors = 0;
            for (int t = 0; t < threads; t++)
                foreach (var o in s_rings[t]!) if (o != null) survivors++;
            Console.WriteLine(
                $"AllocBench: iterations={s_iterations} threads={threads} allocations={total} " +
                $"survivors={survivors} elapsed_ms={ms:F1} allocs_per_s={total / (ms / 1000.0):F0} " +
                $"gcs={GC.CollectionCount(0) - g0}/{GC.CollectionCount(1) - g1}/{GC.CollectionCount(2) - g2} " +
                $"collector={(LoadedCollector() != null ? "loaded" : "none")}");
            return 0;
        }

        private static void Worker(object? state)
        {
            int t = (int)state!;
            var ring = new object?[Ring];
            var sink = new object?[SinkSlots];
            s_rings[t] = ring;
            s_sinks[t] = sink;
            int ringPos = 0;
            long n = 0;
            s_start!.SignalAndWait();
            for (int it = 0; it < s_iterations; it++)
            {
                if (it == s_gateAt && s_gate != null)
                {
                    s_gate.SignalAndWait(); // arrived
                    s_gate.SignalAndWait(); // released
                }
                for (int j = 0; j < AllocsPerIteration; j++, n++)
                {
                    object o;
                    switch (j & 3)
                    {
                        case 0: o = new Message { Id = n, Kind = j }; break;
                        case 1: o = new int[4 + (j & 7)]; break;
                        case 2: o = new Message { Id = n, Kind = j, Payload = (object)n }; n++; break; // + a boxed long
                        default: o = new string('x', 8 + (j & 15)); break;
                    }
                    if (n % SurviveEvery == 0)
                    {
                        ring[ringPos] = o;
                        ringPos = (ringPos + 1) & (Ring - 1);
                    }
                    else sink[j & (SinkSlots - 1)] = o; // escapes: never stack-allocated
                }
            }
            s_allocated[t] = n;
        }
    }
}
