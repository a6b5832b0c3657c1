// SnapshotBench — a heap of about one million live objects, for heaplens' snapshot benchmark.
//
//   dotnet SnapshotBench.dll [--nodes N] [--gen0 K] [--wait-before-collect FILE] [--wait-before-gen0 FILE]
//
// Builds a complete binary tree of N BenchNode objects (default 1,048,575 = 2^20 - 1: every
// inner node references two children), then:
//   1. K gen0 GCs (default 10), caused by short-lived byte[16000] garbage (few allocations per
//      GC, so recording them costs little): no snapshot under heaplens'
//      default policy, so heaplens cuts the runtime's heap walk at its first object;
//   2. one GC.Collect() (blocking gen2): the snapshot GC under `heaplens record`;
//   3. K more gen0 GCs, now with the whole tree in gen2.
// It measures its own pause per GC from GC.GetTotalPauseDuration() deltas (a gen0 figure only
// when exactly one GC happened and neither CollectionCount(1) nor (2) moved) and, because the
// runtime's pause clock stops before some profiler callbacks (the heap walk of a snapshot runs
// after it), also the wall time of the GC as this thread saw it: of GC.Collect(), and of the
// allocation that triggered each gen0 GC; and that allocation's CPU time on this thread
// (CLOCK_THREAD_CPUTIME_ID: workstation GC collects on the thread that triggered it, so this is
// the GC's own work, our callbacks on its thread included, without the time it waited for a
// core that other threads held). Prints one line of key=value pairs, e.g.
//   SnapshotBench: nodes=1048575 build_ms=... gen0_before_pause_us=[...] gen0_after_pause_us=[...]
//   gen0_after_wall_us=[...] gen0_after_cpu_us=[...] gen0_pause_median_us=... gen0_wall_median_us=...
//   gen0_cpu_median_us=... (after the
//   snapshot GC: the tree is in gen2) collect_pause_us=... collect_wall_us=... build_gcs=...
//   gcs=.../.../... pid=... collector=loaded
// bench/snapshot/run.sh parses it (collector=loaded|none: is the heaplens library mapped in).
// With --wait-before-collect FILE the program prints "SnapshotBench: collect-ready gcs=N pid=P" before
// step 2 and waits until FILE exists (at most 10 minutes): the benchmark lets heaplens' writer
// catch up first, so that the snapshot's time from GC start to commit is not its backlog.
// With --wait-before-gen0 FILE it prints "SnapshotBench: gen0-ready gcs=N pid=P" after step 2 and
// waits for FILE the same way: the gen0 pauses of step 3 are then measured without heaplens'
// threads still storing the GC of step 2 beside them (their work competes for the cores and the
// caches, not the pause's own).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using static HeapLensShared.HeapLensSupport;

namespace HeapLens.Bench
{
    public sealed class BenchNode
    {
        public BenchNode? Left;
        public BenchNode? Right;
        public long Value;
    }

    internal static class Program
    {
        private static BenchNode? s_root;
        private static readonly byte[]?[] s_sink = new byte[]?[16];
        private const int ChurnBytes = 16000; // short-lived garbage: few allocations per GC (cheap to record)

        private static int Main(string[] args)
        {
            int nodes = (1 << 20) - 1, gen0 = 10;
            string? waitFile = null, gen0File = null;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--nodes" && i + 1 < args.Length) nodes = Math.Max(1, int.Parse(args[++i], CultureInfo.InvariantCulture));
                else if (args[i] == "--gen0" && i + 1 < args.Length) gen0 = Math.Max(1, int.Parse(args[++i], CultureInfo.InvariantCulture));
                else if (args[i] == "--wait-before-collect" && i + 1 < args.Length) waitFile = args[++i];
                else if (args[i] == "--wait-before-gen0" && i + 1 < args.Length) gen0File = args[++i];
                else if (args[i] == "--help" || args[i] == "-h")
                {
                    Console.WriteLine("usage: dotnet SnapshotBench.dll [--nodes N] [--gen0 K] [--wait-before-collect FILE] [--wait-before-gen0 FILE]");
                    return 0;
                }
                else { Console.Error.WriteLine($"SnapshotBench: unexpected argument '{args[i]}'"); return 2; }
            }

            var clock = Stopwatch.StartNew();
            s_root = Build(nodes);
            double buildMs = clock.Elapsed.TotalMilliseconds;
            int g0 = GC.CollectionCount(0), g1 = GC.CollectionCount(1), g2 = GC.CollectionCount(2);

            var before = Gen0Pauses(gen0);
            if (waitFile != null) WaitFor(waitFile, "collect-ready");
            long pause0 = GC.GetTotalPauseDuration().Ticks;
            int c0 = GC.CollectionCount(0);
            long t0 = Stopwatch.GetTimestamp();
            GC.Collect(); // the snapshot GC
            double collectWallUs = Stopwatch.GetElapsedTime(t0).TotalMicroseconds;
            double collectPauseUs = (GC.GetTotalPauseDuration().Ticks - pause0) / 10.0;
            bool collectAlone = GC.CollectionCount(0) == c0 + 1;
            if (gen0File != null) WaitFor(gen0File, "gen0-ready");
            var after = Gen0Pauses(gen0);

            long live = Count(s_root);
            Console.WriteLine(
                $"SnapshotBench: nodes={live} build_ms={buildMs:F1} " +
                $"gen0_before_pause_us=[{Join(before.pause)}] gen0_after_pause_us=[{Join(after.pause)}] " +
                $"gen0_after_wall_us=[{Join(after.wall)}] gen0_after_cpu_us=[{Join(after.cpu)}] " +
                $"gen0_pause_median_us={Median(after.pause):F1} gen0_wall_median_us={Median(after.wall):F1} " +
                $"gen0_cpu_median_us={Median(after.cpu):F1} " +
                $"collect_pause_us={(collectAlone ? collectPauseUs.ToString("F1", CultureInfo.InvariantCulture) : "nan")} " +
                $"collect_wall_us={collectWallUs:F1} " +
                $"build_gcs={g0}/{g1}/{g2} gcs={GC.CollectionCount(0)}/{GC.CollectionCount(1)}/{GC.CollectionCount(2)} " +
                $"pid={Environment.ProcessId} collector={(LoadedCollector() != null ? "loaded" : "none")}");
            GC.KeepAlive(s_root);
            return 0;
        }

        /// <summary>Complete binary tree of `count` nodes, built breadth-first from an array so
        /// that no recursion depth limits it; the array is dropped at the end.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static BenchNode Build(int count)
        {
            var all = new BenchNode[count];
            for (int i = 0; i < count; i++) all[i] = new BenchNode { Value = i };
            for (int i = 0; i < count; i++)
            {
                int l = 2 * i + 1, r = 2 * i + 2;
                if (l < count) all[i].Left = all[l];
                if (r < count) all[i].Right = all[r];
            }
            return all[0];
        }

        private static void WaitFor(string file, string what)
        {
            Console.WriteLine($"SnapshotBench: {what} gcs={GC.CollectionCount(0)} pid={Environment.ProcessId}");
            var waited = Stopwatch.StartNew();
            while (!File.Exists(file) && waited.Elapsed.TotalMinutes < 10) System.Threading.Thread.Sleep(5);
        }

        private static long Count(BenchNode? root)
        {
            long n = 0;
            var stack = new Stack<BenchNode>();
            if (root != null) stack.Push(root);
            while (stack.Count > 0)
            {
                BenchNode x = stack.Pop();
                n++;
                if (x.Left != null) stack.Push(x.Left);
                if (x.Right != null) stack.Push(x.Right);
            }
            return n;
        }

        /// <summary>Allocates garbage until `count` pure gen0 GCs happened. For each: its pause
        /// from GC.GetTotalPauseDuration() (the runtime's own accounting, which does not include
        /// profiler callbacks made after it stopped its clock, such as the heap walk) and the
        /// wall time of the allocation that triggered it (the whole stop as this thread saw it).
        /// Microseconds.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static (List<double> pause, List<double> wall, List<double> cpu) Gen0Pauses(int count)
        {
            var pauses = new List<double>(count);
            var walls = new List<double>(count);
            var cpus = new List<double>(count);
            int guard = 0;
            while (pauses.Count < count && guard++ < 100 * count)
            {
                int b0 = GC.CollectionCount(0), b1 = GC.CollectionCount(1), b2 = GC.CollectionCount(2);
                long p = GC.GetTotalPauseDuration().Ticks;
                long last = 0, lastCpu = 0;
                for (int i = 0; GC.CollectionCount(0) == b0; i++)
                {
                    long t = Stopwatch.GetTimestamp(), c = ThreadCpuNs();
                    s_sink[i & 15] = new byte[ChurnBytes];
                    last = Stopwatch.GetTimestamp() - t; // the last one is the one that stopped for the GC
                    lastCpu = ThreadCpuNs() - c;
                }
                if (GC.CollectionCount(0) == b0 + 1 && GC.CollectionCount(1) == b1 && GC.CollectionCount(2) == b2)
                {
                    pauses.Add((GC.GetTotalPauseDuration().Ticks - p) / 10.0);
                    walls.Add(last * 1e6 / Stopwatch.Frequency);
                    cpus.Add(lastCpu / 1e3);
                }
            }
            return (pauses, walls, cpus);
        }

        [StructLayout(LayoutKind.Sequential)]
        private struct Timespec { public long Sec; public long Nsec; }

        [DllImport("libc", EntryPoint = "clock_gettime")]
        private static extern int ClockGettime(int clock, out Timespec t);

        /// <summary>This thread's CPU time (CLOCK_THREAD_CPUTIME_ID, Linux), ns.</summary>
        private static long ThreadCpuNs() => ClockGettime(3, out var t) == 0 ? t.Sec * 1_000_000_000 + t.Nsec : 0;

        private static double Median(List<double> v)
        {
            if (v.Count == 0) return double.NaN;
            var s = new List<double>(v);
            s.Sort();
            return s.Count % 2 == 1 ? s[s.Count / 2] : (s[s.Count / 2 - 1] + s[s.Count / 2]) / 2;
        }

        private static string Join(List<double> v)
        {
            var parts = new string[v.Count];
            for (int i = 0; i < v.Count; i++) parts[i] = v[i].ToString("F1", CultureInfo.InvariantCulture);
            return string.Join(",", parts);
        }

    }
}
