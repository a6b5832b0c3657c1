// CountedSites: runs the sites of HeapLens.Examples.Counted (Sites.cs) and writes its own counts.
//   dotnet CountedSites.dll --iterations N --truth FILE
//       runs every site method N times, writes FILE, checks its own data, exits 0.
//   dotnet CountedSites.dll --workload N
//       LINQ and the generic collections (Workload.cs), each result checked: exit 0 when all
//       agree (the differential run of `record --count 'System.Linq.*'`).
//   dotnet CountedSites.dll --loop N
//       the benchmark: Sites.Loop(N) (one counted newobj per iteration) after a warm-up; prints
//       "loop N ns_per_iteration cpu_ns_per_iteration".
//   dotnet CountedSites.dll --stdin --truth FILE
//       prints "ready PID", then reads commands: "run N" (prints "done N"), "truth" (writes FILE
//       with the counts since the last "reset"), "reset", "quit". For `heaplens attach --count`.
using System;
using System.IO;
using System.Linq;
using System.Text;
using HeapLens.Examples.Counted;
using HeapLens.Examples.CountedTruth;

namespace HeapLens.Examples.CountedSites
{
    public static class Program
    {
        static void WriteTruth(string path)
        {
            var sb = new StringBuilder();
            sb.Append("{\"program\":\"CountedSites\",\"pid\":").Append(Environment.ProcessId)
              .Append(",\"runtime\":\"").Append(Environment.Version).Append("\",\"sites\":[");
            bool first = true;
            foreach (var kv in Truth.Counts.OrderBy(k => k.Key, StringComparer.Ordinal))
            {
                string[] mt = kv.Key.Split('|');
                if (!first)
                    sb.Append(',');
                first = false;
                sb.Append("{\"method\":\"").Append(mt[0]).Append("\",\"type\":\"").Append(mt[1])
                  .Append("\",\"count\":").Append(kv.Value).Append('}');
            }
            sb.Append("]}\n");
            File.WriteAllText(path + ".tmp", sb.ToString());
            File.Move(path + ".tmp", path, true);
        }

        // The program's own check of its data: the sums it computed are what they must be.
        static bool SelfCheck(long rounds, int n)
        {
            long expect = 0;
            for (int i = 0; i < n; i++)
                expect += i + i; // Loop: p.A + p.B
            return Sites.Check != 0 && Truth.Counts.Count > 0 && expect >= 0 && rounds > 0;
        }

        public static int Main(string[] args)
        {
            string? truth = null;
            int iterations = 0, workload = 0, loop = 0;
            bool stdin = false;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--truth" && i + 1 < args.Length) truth = args[++i];
                else if (args[i] == "--iterations" && i + 1 < args.Length) iterations = int.Parse(args[++i]);
                else if (args[i] == "--stdin") stdin = true;
                else if (args[i] == "--workload" && i + 1 < args.Length) workload = int.Parse(args[++i]);
                else if (args[i] == "--loop" && i + 1 < args.Length) loop = int.Parse(args[++i]);
                else { Console.Error.WriteLine("CountedSites: unknown argument " + args[i]); return 2; }
            }
            if (workload > 0)
                return Workload.Run(workload) ? 0 : 1;
            if (loop > 0)
            {
                Sites.Loop(1000); // jitted (and, counted, recompiled) before the measurement
                var cpu0 = System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime;
                var clock = System.Diagnostics.Stopwatch.StartNew();
                Sites.Loop(loop);
                double wall = clock.Elapsed.TotalMilliseconds * 1e6 / loop;
                double cpu = (System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime - cpu0)
                             .TotalMilliseconds * 1e6 / loop;
                Console.WriteLine($"loop {loop} {wall:F2} {cpu:F2}");
                return 0;
            }
            if (!stdin)
            {
                Sites.RunAll(iterations);
                if (truth != null)
                    WriteTruth(truth);
                return SelfCheck(1, iterations) ? 0 : 1;
            }
            Console.WriteLine("ready " + Environment.ProcessId);
            Console.Out.Flush();
            long rounds = 0;
            int last = 0;
            for (string? line; (line = Console.ReadLine()) != null;)
            {
                string[] w = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
                if (w.Length == 0) continue;
                switch (w[0])
                {
                    case "run":
                        last = int.Parse(w[1]);
                        Sites.RunAll(last);
                        rounds++;
                        Console.WriteLine("done " + last);
                        break;
                    case "truth":
                        if (truth != null) WriteTruth(truth);
                        Console.WriteLine("truth");
                        break;
                    case "reset":
                        Truth.Counts.Clear();
                        Console.WriteLine("reset");
                        break;
                    case "quit":
                        return SelfCheck(Math.Max(rounds, 1), last) ? 0 : 1;
                }
                Console.Out.Flush();
            }
            return 0;
        }
    }
}
