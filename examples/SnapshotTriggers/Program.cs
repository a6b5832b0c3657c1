// SnapshotTriggers: a program that causes each of heaplens' snapshot triggers on command
// (tests/e2e/triggers). It reads one command a line from stdin and answers one line on stdout
// once it is done, so the test drives its phases; it never sleeps.
//
//   hold MB      keep MB more MiB alive, in 1,000-byte arrays (small objects: gen0, then gen2)
//   graph N      keep N more objects alive, linked in a list (a long mark for a full GC)
//   free         keep nothing any more
//   collect      a blocking full GC (GC.Collect()), then "ok gc N" (N: GC.CollectionCount(0))
//   collect2     two blocking full GCs, then "ok gc N" (N: the second's): a full GC moves gen1
//                to gen2 and gen0 to gen1, so what was held before is in gen2 after the second
//   collect0     a gen0 GC (GC.Collect(0)), then "ok gc N"
//   gcs          "ok gc N gen2 M": GC.CollectionCount(0) and (2)
//   pid          "ok pid N": the process id (to attach heaplens to it)
//   exit         ends the program
//
// The answers' GC counts are the program's own: heaplens numbers GCs as CollectionCount(0)
// counts them, so the test can tell which GC a trigger named.
using System;
using System.Collections.Generic;

sealed class Node
{
    public Node? Next;
    public long Value;
}

static class Program
{
    static readonly List<byte[]> s_held = new();
    static Node? s_graph;

    static int Main()
    {
        string? line;
        while ((line = Console.ReadLine()) != null)
        {
            string[] w = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (w.Length == 0)
                continue;
            switch (w[0])
            {
                case "hold":
                    long bytes = long.Parse(w[1]) << 20;
                    for (long b = 0; b < bytes; b += 1000)
                        s_held.Add(new byte[1000 - 24]); // 1,000 bytes with the header
                    Console.WriteLine("ok");
                    break;
                case "graph":
                    long n = long.Parse(w[1]);
                    for (long i = 0; i < n; i++)
                        s_graph = new Node { Next = s_graph, Value = i };
                    Console.WriteLine("ok");
                    break;
                case "free":
                    s_held.Clear();
                    s_held.TrimExcess();
                    s_graph = null;
                    Console.WriteLine("ok");
                    break;
                case "collect":
                    GC.Collect();
                    Console.WriteLine($"ok gc {GC.CollectionCount(0)}");
                    break;
                case "collect2":
                    GC.Collect();
                    GC.Collect();
                    Console.WriteLine($"ok gc {GC.CollectionCount(0)}");
                    break;
                case "collect0":
                    GC.Collect(0);
                    Console.WriteLine($"ok gc {GC.CollectionCount(0)}");
                    break;
                case "gcs":
                    Console.WriteLine($"ok gc {GC.CollectionCount(0)} gen2 {GC.CollectionCount(2)}");
                    break;
                case "pid":
                    Console.WriteLine($"ok pid {Environment.ProcessId}");
                    break;
                case "exit":
                    Console.WriteLine("ok");
                    return 0;
                default:
                    Console.WriteLine($"error: unknown command '{w[0]}'");
                    return 2;
            }
            Console.Out.Flush();
        }
        return 0;
    }
}
