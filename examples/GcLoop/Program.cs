// GcLoop: a program whose own GCs come faster than an attach session can apply them. It holds
// a heap of N live objects (argument, default 300000) and calls GC.Collect(0) every 5 ms on a
// thread of its own, with a little garbage between: every GC is induced, so the default
// snapshot policy (induced) wants a heap snapshot of all N objects at every GC, faster than the
// collector applies them: it fell behind for good (the detach that never ended:
// collector/README.md, "Ending an attach session") and held a walk per GC (7.4 GiB), until the
// policies' snapshots were bounded by the walks held (64 MiB: README.md, "Snapshot triggers").
// Started without heaplens; prints "ready PID", then answers on stdin:
//   gcs  -> "gcs N"       GC.CollectionCount(0) so far (the loop still runs: it must go on
//                         after a detach)
//   pause -> "paused N"   stops the loop (no GC after it: a test can wait for the recording to
//                         hold all N), the program runs on
//   stop -> "stopped N"   stops the loop, checks the held objects, exits 0 (1 if one is wrong)
using System;
using System.Threading;

namespace GcLoop
{
    public sealed class Held
    {
        public readonly int Index;
        public Held? Next;
        public Held(int index) { Index = index; }
    }

    public static class Program
    {
        static volatile bool stopping;

        public static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0]) : 300000;
            var held = new Held[n];
            for (int i = 0; i < n; i++)
            {
                held[i] = new Held(i);
                if (i > 0)
                    held[i - 1].Next = held[i];
            }
            var loop = new Thread(() =>
            {
                long garbage = 0;
                while (!stopping)
                {
                    for (int i = 0; i < 1000; i++)
                        garbage += new byte[32].Length;
                    GC.Collect(0);
                    // A breath between GCs: without it the runtime answers an attach late
                    // (30 s and more here), and 5 ms is still far below a snapshot's time.
                    Thread.Sleep(5);
                }
                GC.KeepAlive(garbage);
            }) { Name = "gc-loop" };
            loop.Start();
            Console.Out.WriteLine($"ready {Environment.ProcessId}");
            Console.Out.Flush();
            string? line;
            while ((line = Console.In.ReadLine()) != null)
            {
                line = line.Trim();
                if (line == "gcs")
                {
                    Console.Out.WriteLine($"gcs {GC.CollectionCount(0)}");
                    Console.Out.Flush();
                }
                else if (line == "pause")
                {
                    stopping = true;
                    loop.Join();
                    Console.Out.WriteLine($"paused {GC.CollectionCount(0)}");
                    Console.Out.Flush();
                }
                else if (line == "stop")
                    break;
            }
            stopping = true;
            loop.Join();
            for (int i = 0; i < n; i++)
            {
                if (held[i].Index != i || (i + 1 < n && held[i].Next != held[i + 1]))
                {
                    Console.Out.WriteLine($"corrupt {i}");
                    return 1;
                }
            }
            Console.Out.WriteLine($"stopped {GC.CollectionCount(0)}");
            return 0;
        }
    }
}
