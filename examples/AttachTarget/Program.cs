// AttachTarget: a long-running program for `heaplens attach` tests. It is started without
// heaplens, leaks one known type steadily (LeakedRecord, kept in a static list), churns
// short-lived garbage on two threads, and answers commands on stdin, one per line:
//   count  -> "count N"   LeakedRecord objects held right now
//   leak K -> "count N"   leaks K more records now (a known growth between two snapshots)
//   gc     -> "gc N"      after GC.Collect(): GC.CollectionCount(0)
//   mark   -> "mark N L C" GC.Collect() while no LeakedRecord is being allocated, then the
//                         checkpoint C ("mark1", "mark2", ...: EventSource HeapLens, event 1,
//                         store/SCHEMA.md `checkpoints`) still under the lock: N =
//                         GC.CollectionCount(0) after it, L = LeakedRecords allocated before it
//                         (two marks: exactly L2 - L1 allocated between checkpoints C1 and C2;
//                         N is only indicative: another thread's allocation may start a GC
//                         between GC.Collect() and the count, and the checkpoint's GC is read
//                         by the recording itself)
//   gcmode -> "gcmode server|workstation"   which GC the runtime runs (DOTNET_gcServer=1)
//   big    -> "big N"     allocates a large-object-heap array of N bytes, held until the next
//                         mark, which lets it die: an object a session follows whatever its
//                         samples, in no snapshot (the list's own arrays reach the large-object
//                         heap only when it happens to grow)
//   stop   -> stops the threads, checks every record it kept, prints "verified N" and exits 0
//                         (exit 1 with "corrupt ..." if any record is not what it wrote)
// At start it prints "ready PID". Optional argument: records leaked per second (default 2000).
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.Runtime;
using System.Threading;

namespace AttachTarget
{
    public sealed class LeakedRecord
    {
        public readonly long Index;
        public readonly long Check;
        public LeakedRecord(long index) { Index = index; Check = index * 7919 + 13; }
    }

    // heaplens' checkpoints (collector/README.md, "Checkpoints"): a moment marked in the
    // recording with the GC that had finished then, read by the collector on this thread.
    [EventSource(Name = "HeapLens")]
    internal sealed class HeapLensEvents : EventSource
    {
        internal static readonly HeapLensEvents Log = new HeapLensEvents();

        [Event(1)]
        public void Checkpoint(string name) => WriteEvent(1, name);
    }

    public static class Program
    {
        static readonly List<LeakedRecord> Kept = new List<LeakedRecord>();
        static byte[]? big;
        static volatile bool stopping;
        static long churned;

        static long leakIndex;
        static int marks;

        static void LeakNow(long n)
        {
            for (long i = 0; i < n; i++)
            {
                lock (Kept) Kept.Add(new LeakedRecord(leakIndex++));
            }
        }

        static void Leak(int perSecond)
        {
            long index = 0;
            var started = DateTime.UtcNow;
            while (!stopping)
            {
                // Paced by the clock, not by sleeping a fixed time: the rate holds under load.
                long due = (long)((DateTime.UtcNow - started).TotalSeconds * perSecond);
                while (index < due && !stopping)
                {
                    lock (Kept) Kept.Add(new LeakedRecord(leakIndex++));
                    index++;
                }
                Thread.Sleep(5);
            }
        }

        static void Churn(int seed)
        {
            var random = new Random(seed);
            long local = 0;
            while (!stopping)
            {
                for (int i = 0; i < 2000; i++)
                {
                    var s = new string('x', random.Next(1, 64));
                    var a = new int[random.Next(1, 32)];
                    a[0] = s.Length;
                    local += a[0];
                }
                Interlocked.Add(ref churned, 2000);
                Thread.Sleep(1);
            }
            GC.KeepAlive(local);
        }

        public static int Main(string[] args)
        {
            int perSecond = args.Length > 0 ? int.Parse(args[0]) : 2000;
            // Made before any session: a session enables the provider of a source that exists.
            GC.KeepAlive(HeapLensEvents.Log);
            var threads = new[]
            {
                new Thread(() => Leak(perSecond)) { Name = "leak", IsBackground = true },
                new Thread(() => Churn(1)) { Name = "churn-1", IsBackground = true },
                new Thread(() => Churn(2)) { Name = "churn-2", IsBackground = true },
            };
            foreach (var t in threads) t.Start();
            Console.Out.WriteLine($"ready {Environment.ProcessId}");
            Console.Out.Flush();
            string? line;
            while ((line = Console.In.ReadLine()) != null)
            {
                line = line.Trim();
                if (line == "count")
                {
                    int n;
                    lock (Kept) n = Kept.Count;
                    Console.Out.WriteLine($"count {n}");
                }
                else if (line.StartsWith("leak "))
                {
                    LeakNow(long.Parse(line.Substring(5)));
                    int n;
                    lock (Kept) n = Kept.Count;
                    Console.Out.WriteLine($"count {n}");
                }
                else if (line == "gc")
                {
                    GC.Collect();
                    Console.Out.WriteLine($"gc {GC.CollectionCount(0)}");
                }
                else if (line == "mark")
                {
                    // Every LeakedRecord is allocated under this lock: none is between the GC
                    // and the checkpoint, nor between the checkpoint and the count (a GC the
                    // churn threads start in between counts none either).
                    lock (Kept)
                    {
                        big = null;
                        GC.Collect();
                        string name = $"mark{++marks}";
                        HeapLensEvents.Log.Checkpoint(name);
                        Console.Out.WriteLine($"mark {GC.CollectionCount(0)} {leakIndex} {name}");
                    }
                }
                else if (line == "big")
                {
                    big = new byte[100_000];
                    Console.Out.WriteLine($"big {big.Length}");
                }
                else if (line == "gcmode")
                {
                    Console.Out.WriteLine($"gcmode {(GCSettings.IsServerGC ? "server" : "workstation")}");
                }
                else if (line == "stop")
                {
                    break;
                }
                Console.Out.Flush();
            }
            stopping = true;
            foreach (var t in threads) t.Join();
            lock (Kept)
            {
                for (int i = 0; i < Kept.Count; i++)
                {
                    var r = Kept[i];
                    if (r.Index != i || r.Check != r.Index * 7919 + 13)
                    {
                        Console.Out.WriteLine($"corrupt {i}");
                        return 1;
                    }
                }
                Console.Out.WriteLine($"verified {Kept.Count} churned {Interlocked.Read(ref churned)}");
            }
            return 0;
        }
    }
}
