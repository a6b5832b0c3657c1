// AttachBench: a steady allocation loop for bench/attach (what being attached costs a program).
//
//   dotnet AttachBench.dll [--live N] [--threads T]
//
// Keeps N live objects (default 500,000: a ring of small records, one replaced per iteration, so
// that they age into gen2 and die there) and answers commands on stdin, one per line:
//   work N  -> T threads run N iterations in all (each: a few short-lived strings and arrays, one
//              ring slot replaced); a sampler thread polls GC.GetGCMemoryInfo every millisecond
//              meanwhile, as examples/Workload --pauses does (the same way attached or not).
//              Prints "work iterations=N wall_ms=W cpu_ms=C gcs=G0/G1/G2 pauses=gen:us,gen:us,..."
//              (cpu_ms: the whole process's CPU time, an attached collector's thread included;
//              pauses: the GCs the sampler caught, its generation and pause).
//   gen2 K  -> K blocking GC.Collect() calls; prints "gen2 pauses_us=us,us,... wall_us=us,us,..."
//              (the runtime's pause of each, GCKind.FullBlocking, and GC.Collect's wall time)
//   stop    -> exits 0.
// At start it prints "ready PID" once the live set is built.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Threading;

namespace AttachBench
{
    public sealed class Item
    {
        public readonly long Key;
        public readonly string Label;
        public Item(long key) { Key = key; Label = "item-" + (key % 1000).ToString(CultureInfo.InvariantCulture); }
    }

    public static class Program
    {
        static Item[] ring = Array.Empty<Item>();
        static long next;

        static long Iterate(Random random, long local)
        {
            for (int k = 0; k < 8; k++)
            {
                var s = new string('x', random.Next(1, 48));
                var a = new int[random.Next(1, 24)];
                a[0] = s.Length;
                local += a[0];
            }
            long key = Interlocked.Increment(ref next);
            Volatile.Write(ref ring[(int)(key % ring.Length)], new Item(key));
            return local;
        }

        static string Work(long iterations, int threads)
        {
            var pauses = new List<(int gen, double us)>();
            bool done = false;
            long seen = GC.GetGCMemoryInfo(GCKind.Any).Index;
            var sampler = new Thread(() =>
            {
                while (!Volatile.Read(ref done))
                {
                    var info = GC.GetGCMemoryInfo(GCKind.Any);
                    if (info.Index != seen && info.Index > 0)
                    {
                        seen = info.Index;
                        pauses.Add((info.Generation, info.PauseDurations.Length > 0 ? info.PauseDurations[0].TotalMicroseconds : 0));
                    }
                    Thread.Sleep(1);
                }
            }) { IsBackground = true, Name = "pause-sampler" };
            int g0 = GC.CollectionCount(0), g1 = GC.CollectionCount(1), g2 = GC.CollectionCount(2);
            var cpu = Process.GetCurrentProcess().TotalProcessorTime;
            var clock = Stopwatch.StartNew();
            sampler.Start();
            var workers = Enumerable.Range(0, threads).Select(t => new Thread(() =>
            {
                var random = new Random(t + 1);
                long local = 0;
                for (long i = t; i < iterations; i += threads)
                    local = Iterate(random, local);
                GC.KeepAlive(local);
            }) { Name = $"work-{t}" }).ToArray();
            foreach (var w in workers) w.Start();
            foreach (var w in workers) w.Join();
            double wall = clock.Elapsed.TotalMilliseconds;
            double cpuMs = (Process.GetCurrentProcess().TotalProcessorTime - cpu).TotalMilliseconds;
            Volatile.Write(ref done, true);
            sampler.Join();
            string list = string.Join(",", pauses.Select(p => $"{p.gen}:{p.us.ToString("F0", CultureInfo.InvariantCulture)}"));
            return string.Create(CultureInfo.InvariantCulture,
                $"work iterations={iterations} wall_ms={wall:F1} cpu_ms={cpuMs:F1} " +
                $"gcs={GC.CollectionCount(0) - g0}/{GC.CollectionCount(1) - g1}/{GC.CollectionCount(2) - g2} pauses={list}");
        }

        static string Gen2(int times)
        {
            var pauses = new List<string>();
            var walls = new List<string>();
            for (int i = 0; i < times; i++)
            {
                long t = Stopwatch.GetTimestamp();
                GC.Collect();
                double wall = Stopwatch.GetElapsedTime(t).TotalMicroseconds;
                var info = GC.GetGCMemoryInfo(GCKind.FullBlocking);
                pauses.Add((info.PauseDurations.Length > 0 ? info.PauseDurations[0].TotalMicroseconds : 0).ToString("F0", CultureInfo.InvariantCulture));
                walls.Add(wall.ToString("F0", CultureInfo.InvariantCulture));
            }
            return $"gen2 pauses_us={string.Join(",", pauses)} wall_us={string.Join(",", walls)}";
        }

        public static int Main(string[] args)
        {
            int live = 500_000, threads = 2;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--live" && i + 1 < args.Length) live = Math.Max(1, int.Parse(args[++i], CultureInfo.InvariantCulture));
                else if (args[i] == "--threads" && i + 1 < args.Length) threads = Math.Max(1, int.Parse(args[++i], CultureInfo.InvariantCulture));
                else { Console.Error.WriteLine($"AttachBench: unexpected argument '{args[i]}'"); return 2; }
            }
            ring = new Item[live];
            for (int i = 0; i < live; i++) ring[i] = new Item(Interlocked.Increment(ref next));
            Console.Out.WriteLine($"ready {Environment.ProcessId}");
            Console.Out.Flush();
            string? line;
            while ((line = Console.In.ReadLine()) != null)
            {
                var words = line.Trim().Split(' ', StringSplitOptions.RemoveEmptyEntries);
                if (words.Length == 2 && words[0] == "work")
                    Console.Out.WriteLine(Work(long.Parse(words[1], CultureInfo.InvariantCulture), threads));
                else if (words.Length == 2 && words[0] == "gen2")
                    Console.Out.WriteLine(Gen2(int.Parse(words[1], CultureInfo.InvariantCulture)));
                else if (words.Length == 1 && words[0] == "stop")
                    return 0;
                else
                    Console.Out.WriteLine($"unknown '{line}'");
                Console.Out.Flush();
            }
            return 0;
        }
    }
}
