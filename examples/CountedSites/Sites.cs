// The counted sites: one method per kind of site and per IL trap the rewriter must get right.
// Each method counts its own allocations per (method, type) in Truth, named as heaplens names
// them (Namespace.Type.Method; System.Int32[] for newarr int; the generic parameter as !!0).
using System;
using System.Collections.Generic;
using HeapLens.Examples.CountedTruth;

namespace HeapLens.Examples.CountedTruth
{
    // Outside the counted namespace: its own allocations are not the sites'.
    public static class Truth
    {
        public static readonly Dictionary<string, long> Counts = new Dictionary<string, long>();
        public static void Add(string method, string type, long n = 1)
        {
            string key = method + "|" + type;
            Counts.TryGetValue(key, out long v);
            Counts[key] = v + n;
        }
    }
}

namespace HeapLens.Examples.Counted
{
    public sealed class Node
    {
        public readonly int Value;
        public Node(int value) { Value = value; }
    }

    public sealed class Holder<T>
    {
        public readonly T Item;
        public Holder(T item) { Item = item; }
    }

    public struct Pair
    {
        public int A, B;
        public Pair(int a, int b) { A = a; B = b; }
    }

    public static class Sites
    {
        public static object? Sink;
        public static long Check;
        const string P = "HeapLens.Examples.Counted.Sites.";

        // newobj in a loop (the loop's branch lands on the site's probe); newobj of a struct
        // (not a site: no allocation).
        public static void Loop(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var node = new Node(i);
                Sink = node;
                Pair p = new Pair(i, node.Value);
                Check += p.A + p.B;
            }
            Truth.Add(P + "Loop", "HeapLens.Examples.Counted.Node", n);
        }

        public static void Arrays(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var a = new int[i % 7 + 1];
                a[0] = i;
                Sink = a;
                Check += a.Length;
            }
            Truth.Add(P + "Arrays", "System.Int32[]", n);
        }

        public static void Boxes(int n)
        {
            for (int i = 0; i < n; i++)
            {
                object o = i;
                Sink = o;
                Check += (int)o;
            }
            Truth.Add(P + "Boxes", "System.Int32", n);
        }

        // Sites inside try, catch and finally, and a throw (newobj of the exception).
        public static void TryCatchFinally(int n)
        {
            for (int i = 0; i < n; i++)
            {
                try
                {
                    Sink = new Node(i);
                    Truth.Add(P + "TryCatchFinally", "HeapLens.Examples.Counted.Node");
                    if (i % 3 == 0)
                    {
                        Truth.Add(P + "TryCatchFinally", "System.InvalidOperationException");
                        throw new InvalidOperationException("counted");
                    }
                }
                catch (InvalidOperationException)
                {
                    Sink = new string[1];
                    Truth.Add(P + "TryCatchFinally", "System.String[]");
                }
                finally
                {
                    Sink = new byte[2];
                    Truth.Add(P + "TryCatchFinally", "System.Byte[]");
                }
            }
        }

        // A switch whose cases start with sites.
        public static void Switch(int n)
        {
            for (int i = 0; i < n; i++)
            {
                switch (i % 5)
                {
                    case 0:
                        Sink = new Node(i);
                        Truth.Add(P + "Switch", "HeapLens.Examples.Counted.Node");
                        break;
                    case 1:
                        Sink = new long[3];
                        Truth.Add(P + "Switch", "System.Int64[]");
                        break;
                    case 2:
                        Sink = (object)(long)i;
                        Truth.Add(P + "Switch", "System.Int64");
                        break;
                    case 3:
                        Sink = new Holder<int>(i);
                        Truth.Add(P + "Switch", "HeapLens.Examples.Counted.Holder<System.Int32>");
                        break;
                    default:
                        Check++;
                        break;
                }
            }
        }

        // A generic method: shared code for reference types, its own for int. The box of T is
        // one site counted at every execution (it allocates only when T is a value type).
        public static void Generic<T>(T item, int n)
        {
            for (int i = 0; i < n; i++)
            {
                Sink = new Holder<T>(item);
                object o = item!;
                Sink = o;
            }
            Truth.Add(P + "Generic", "HeapLens.Examples.Counted.Holder<!!0>", n);
            Truth.Add(P + "Generic", "!!0", n);
        }

        // Long blocks: a short branch over a block that grows past 127 bytes once a probe is in
        // it must be widened (test_il_corpus reports the widened bodies of this assembly).
        public static void Long(int n)
        {
            long a = 1, b = 2, c = 3;
            for (int i = 0; i < n; i++)
            {
                if ((i & 1) == 0)
                {
                    a += i * 3; b ^= a; c += b * 7; a -= c >> 2; b += a * 5; c ^= i;
                    a += i * 3; b ^= a; c += b * 7; a -= c >> 2; b += a * 5; c ^= i;
                    Sink = new Node(i);
                    Truth.Add(P + "Long", "HeapLens.Examples.Counted.Node");
                }
                if ((i & 2) == 0)
                {
                    a += i * 3; b ^= a; c += b * 7; a -= c >> 2; b += a * 5; c ^= i;
                    a += i * 3; b ^= a; c += b * 7;
                    Sink = new Node(-i);
                    Truth.Add(P + "Long", "HeapLens.Examples.Counted.Node");
                }
                if ((i & 4) == 0)
                {
                    a += i * 3; b ^= a; c += b * 7; a -= c >> 2; b += a * 5; c ^= i;
                    a += i * 3; b ^= a; c += b * 7; a -= c >> 2; b += a * 5;
                    Sink = new int[1];
                    Truth.Add(P + "Long", "System.Int32[]");
                }
                if ((i & 8) == 0)
                {
                    a += i * 3; b ^= a; c += b * 7; a -= c >> 2; b += a * 5; c ^= i;
                    a += i * 3; b ^= a;
                    Sink = new int[2];
                    Truth.Add(P + "Long", "System.Int32[]");
                }
            }
            Check += a + b + c;
        }

        public static void RunAll(int n)
        {
            Loop(n);
            Arrays(n);
            Boxes(n);
            TryCatchFinally(n);
            Switch(n);
            Generic<int>(7, n);
            Generic<string>("x", n);
            Long(n);
        }
    }
}
