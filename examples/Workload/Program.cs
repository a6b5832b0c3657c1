// Workload — a realistic multi-threaded program for heaplens' benchmarks and completeness tests.
//
//   dotnet Workload.dll [--threads T] [--orders N] [--pauses]
//
// T worker threads (default 4, named "worker-1" ... "worker-T") each handle N orders (default
// 250,000). Handling an order allocates the shapes a service allocates: a parsed request line
// (string, Split array, substrings), an Order with a List<OrderLine> that grows, boxed values, a
// Dictionary of attributes, a formatted receipt (StringBuilder, interpolated strings), LINQ-free
// enumeration, and every 2,000th order a 100 KB byte[] (large-object heap). Most of it dies at
// once. One order in 16 goes into a shared cache of 50,000 orders that evicts its oldest, so
// survivors live for a while, are promoted to gen1 and gen2 and die there. GCs happen on their
// own (no GC.Collect): about 24M allocations at the defaults.
//
// Ground truth, printed at the end on one line:
//   Workload: threads=T orders=N elapsed_ms=... gcs=g0/g1/g2 collector=loaded|none
// and one line per worker with the exact number of its own objects it allocated:
//   Workload: worker=worker-1 Order=... OrderLine=... Receipt=...
// With --pauses a sampler thread polls GC.GetGCMemoryInfo and prints, per GC it caught, its index,
// generation and pause in microseconds ("Workload: pause gc=12 gen=0 us=345"), the same way with
// or without a profiler, so that benchmarks can compare pauses.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Threading;
using static HeapLensShared.HeapLensSupport;

namespace HeapLens.Examples.Workload
{
    public sealed class OrderLine
    {
        public string Sku = "";
        public int Quantity;
        public decimal Price;
    }

    public sealed class Order
    {
        public long Id;
        public string Customer = "";
        public List<OrderLine> Lines = new List<OrderLine>();
        public Dictionary<string, object> Attributes = new Dictionary<string, object>();
        public byte[]? Attachment;
    }

    public sealed class Receipt
    {
        public long OrderId;
        public string Text = "";
        public decimal Total;
    }

    internal sealed class Counts
    {
        public long Orders, Lines, Receipts;
    }

    internal static class Program
    {
        private const int CacheSize = 50_000;
        private const int CacheEvery = 16;
        private const int LargeEvery = 2_000;

        private static readonly Order?[] s_cache = new Order?[CacheSize];
        private static long s_cacheNext;

        private static int Main(string[] args)
        {
            int threads = 4, orders = 250_000;
            bool pauses = false;
            for (int i = 0; i < args.Length; i++)
            {
                switch (args[i])
                {
                    case "--threads" when i + 1 < args.Length: threads = Math.Clamp(int.Parse(args[++i]), 1, 64); break;
                    case "--orders" when i + 1 < args.Length: orders = Math.Max(1, int.Parse(args[++i])); break;
                    case "--pauses": pauses = true; break;
                    case "--help": case "-h":
                        Console.WriteLine("usage: dotnet Workload.dll [--threads T] [--orders N] [--pauses]");
                        return 0;
                    default:
                        Console.Error.WriteLine($"Workload: unknown argument '{args[i]}' (see --help)");
                        return 2;
                }
            }

            var sampler = pauses ? new PauseSampler("Workload") : null;
            int g0 = GC.CollectionCount(0), g1 = GC.CollectionCount(1), g2 = GC.CollectionCount(2);
            var counts = new Counts[threads];
            var workers = new Thread[threads];
            var clock = Stopwatch.StartNew();
            for (int t = 0; t < threads; t++)
            {
                counts[t] = new Counts();
                int seed = t;
                Counts mine = counts[t];
                workers[t] = new Thread(() => Work(seed, orders, mine)) { Name = "worker-" + (t + 1) };
                workers[t].Start();
            }
            foreach (var w in workers) w.Join();
            double ms = clock.Elapsed.TotalMilliseconds;
            sampler?.Stop();

            for (int t = 0; t < threads; t++)
                Console.WriteLine($"Workload: worker=worker-{t + 1} Order={counts[t].Orders} OrderLine={counts[t].Lines} Receipt={counts[t].Receipts}");
            Console.WriteLine(
                $"Workload: threads={threads} orders={orders} elapsed_ms={ms.ToString("F1", CultureInfo.InvariantCulture)} " +
                $"gcs={GC.CollectionCount(0) - g0}/{GC.CollectionCount(1) - g1}/{GC.CollectionCount(2) - g2} " +
                $"collection_count0={GC.CollectionCount(0)} " +
                $"collector={(LoadedCollector() != null ? "loaded" : "none")}");
            return 0;
        }

        private static void Work(int seed, int orders, Counts counts)
        {
            var rng = new Random(seed * 7919 + 1);
            var receipt = new StringBuilder(256);
            for (int i = 0; i < orders; i++)
            {
                // A request line as it would arrive, then parsed.
                string request = $"order;{seed}-{i};customer-{rng.Next(10_000)};{1 + rng.Next(6)}";
                string[] fields = request.Split(';');
                var order = new Order { Id = ((long)seed << 40) | (uint)i, Customer = fields[2] };
                counts.Orders++;
                int lines = int.Parse(fields[3], CultureInfo.InvariantCulture);
                for (int l = 0; l < lines; l++)
                {
                    order.Lines.Add(new OrderLine
                    {
                        Sku = "SKU-" + rng.Next(100_000).ToString(CultureInfo.InvariantCulture),
                        Quantity = 1 + rng.Next(5),
                        Price = rng.Next(100, 10_000) / 100m,
                    });
                    counts.Lines++;
                }
                order.Attributes["channel"] = (i & 1) == 0 ? "web" : "store";
                order.Attributes["priority"] = rng.Next(3);          // boxed int
                order.Attributes["received"] = DateTime.UnixEpoch.AddSeconds(i); // boxed struct
                if (i % LargeEvery == 0)
                    order.Attachment = new byte[100_000];              // large-object heap

                decimal total = 0;
                receipt.Clear();
                foreach (var line in order.Lines)
                {
                    total += line.Price * line.Quantity;
                    receipt.Append(line.Sku).Append(" x").Append(line.Quantity).Append('\n');
                }
                var r = new Receipt { OrderId = order.Id, Total = total, Text = receipt.ToString() };
                counts.Receipts++;
                if (r.Text.Length == 0) throw new InvalidOperationException("empty receipt");

                if (i % CacheEvery == 0)
                {
                    long slot = Interlocked.Increment(ref s_cacheNext) % CacheSize;
                    Volatile.Write(ref s_cache[slot], order); // evicts the oldest: it dies in gen1 or gen2
                }
            }
        }
    }
}
