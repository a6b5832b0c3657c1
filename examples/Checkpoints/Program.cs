// Checkpoints — a program that marks moments for heaplens without any package: an EventSource
// named "HeapLens" with Checkpoint(string name) (event 1), written after a blocking GC.Collect()
// so that each checkpoint's state is exactly that GC's (query/README.md, checkpoints).
//
//   dotnet Checkpoints.dll [truth.json] [--wait]
//
// The ground-truth path is argv[1] or, if absent, HEAPLENS_GROUND_TRUTH. With --wait the program
// first prints "ready PID" and waits for a line on stdin (time to attach heaplens to it). Phases:
//   start    nothing of ours allocated
//   filled   1000 Orders kept in a static list, 5000 Scratch objects dropped at once
//   drained  600 Orders dropped, 2000 Scratch dropped, 250 more Orders kept (650 alive)
// The truth lists each checkpoint (name, gc = GC.CollectionCount(0) when written, the OS thread
// that wrote it) with the Orders alive then, and for each pair of consecutive checkpoints the
// Orders and Scratch objects allocated between them. Only this program makes those types.
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.IO;
using System.Runtime.CompilerServices;
using static HeapLensShared.HeapLensSupport;

namespace HeapLens.Examples.Checkpoints
{
    /// <summary>What heaplens listens to: the provider name and event 1 are the contract; the
    /// class may live anywhere in the program.</summary>
    [EventSource(Name = "HeapLens")]
    internal sealed class HeapLensEvents : EventSource
    {
        internal static readonly HeapLensEvents Log = new HeapLensEvents();

        [Event(1)]
        public void Checkpoint(string name) => WriteEvent(1, name);
    }

    internal sealed class Order
    {
        public int Id;
        public Order(int id) { Id = id; }
    }

    internal sealed class Scratch
    {
        public long A;
    }

    internal static class Program
    {
        private static readonly List<Order> s_orders = new List<Order>(4096);
        private static object? s_sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Keep(int n)
        {
            for (int i = 0; i < n; i++) s_orders.Add(new Order(s_orders.Count));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Churn(int n)
        {
            for (int i = 0; i < n; i++) s_sink = new Scratch { A = i };
            s_sink = null;
        }

        private static string OsThread()
        {
            // /proc/thread-self -> "PID/task/TID"
            string? target = new FileInfo("/proc/thread-self").LinkTarget;
            return target == null ? "0" : Path.GetFileName(target);
        }

        private static int Main(string[] args)
        {
            string? truthPath = args.Length > 0 && args[0] != "--wait" ? args[0]
                : Environment.GetEnvironmentVariable("HEAPLENS_GROUND_TRUTH");
            if (Array.IndexOf(args, "--wait") >= 0)
            {
                Console.WriteLine($"ready {Environment.ProcessId}");
                Console.Out.Flush();
                Console.ReadLine();
            }
            var checkpoints = new List<(string name, int gc, string thread, int orders)>();
            var between = new List<(string from, string to, int orders, int scratch)>();

            void Mark(string name)
            {
                GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
                GC.WaitForPendingFinalizers();
                GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
                int gc = GC.CollectionCount(0);
                HeapLensEvents.Log.Checkpoint(name);
                checkpoints.Add((name, gc, OsThread(), s_orders.Count));
            }

            Mark("start");
            Keep(1000);
            Churn(5000);
            Mark("filled");
            between.Add(("start", "filled", 1000, 5000));
            s_orders.RemoveRange(0, 600);
            Churn(2000);
            Keep(250);
            Mark("drained");
            between.Add(("filled", "drained", 250, 2000));

            if (truthPath != null)
            {
                using var truth = new TruthFile(truthPath, "Checkpoints");
                var j = truth.Json;
                j.WriteString("order_type", HeapLensName(typeof(Order)));
                j.WriteString("scratch_type", HeapLensName(typeof(Scratch)));
                j.WriteBoolean("provider_enabled", HeapLensEvents.Log.IsEnabled());
                j.WriteStartArray("checkpoints");
                foreach (var c in checkpoints)
                {
                    j.WriteStartObject();
                    j.WriteString("name", c.name);
                    j.WriteNumber("gc", c.gc);
                    j.WriteNumber("thread", long.Parse(c.thread));
                    j.WriteNumber("orders_alive", c.orders);
                    j.WriteEndObject();
                }
                j.WriteEndArray();
                j.WriteStartArray("between");
                foreach (var b in between)
                {
                    j.WriteStartObject();
                    j.WriteString("from", b.from);
                    j.WriteString("to", b.to);
                    j.WriteNumber("orders_allocated", b.orders);
                    j.WriteNumber("scratch_allocated", b.scratch);
                    j.WriteEndObject();
                }
                j.WriteEndArray();
                j.WriteEndObject();
            }
            Console.WriteLine($"Checkpoints: {checkpoints.Count} checkpoints, {s_orders.Count} orders alive");
            GC.KeepAlive(s_orders);
            return 0;
        }
    }
}
