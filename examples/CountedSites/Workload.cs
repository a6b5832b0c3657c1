// The differential workload: LINQ and the generic collections of System.Private.CoreLib, each
// result checked against a plain loop. Run under `record --count 'System.Linq.*' --count
// 'System.Collections.Generic.*'`, every method of those namespaces runs rewritten with
// counters: the program must still compute the same results (exit 0).
using System;
using System.Collections.Generic;
using System.Linq;

namespace HeapLens.Examples.CountedSites
{
    public static class Workload
    {
        static int failures;

        static void Expect(string what, long want, long got)
        {
            if (want != got)
            {
                failures++;
                Console.Error.WriteLine($"CountedSites: {what}: expected {want}, got {got}");
            }
        }

        public static bool Run(int n)
        {
            var list = new List<int>();
            for (int i = 0; i < n; i++)
                list.Add((i * 7919) % 1000);
            long sum = 0, evens = 0, max = long.MinValue;
            var distinct = new bool[1000];
            int distinctCount = 0;
            foreach (int v in list)
            {
                sum += v;
                if (v % 2 == 0) evens++;
                if (v > max) max = v;
                if (!distinct[v]) { distinct[v] = true; distinctCount++; }
            }
            Expect("Sum", sum, list.Sum(v => (long)v));
            Expect("Count(even)", evens, list.Count(v => v % 2 == 0));
            Expect("Max", max, list.Max());
            Expect("Distinct", distinctCount, list.Distinct().Count());
            Expect("Where/Select/ToList", evens, list.Where(v => v % 2 == 0).Select(v => v * 2).ToList().Count);
            var groups = list.GroupBy(v => v % 10).ToDictionary(g => g.Key, g => g.Count());
            long groupTotal = 0;
            foreach (var kv in groups) groupTotal += kv.Value;
            Expect("GroupBy total", n, groupTotal);
            var sorted = list.OrderBy(v => v).ThenByDescending(v => -v).ToArray();
            long inversions = 0;
            for (int i = 1; i < sorted.Length; i++) if (sorted[i - 1] > sorted[i]) inversions++;
            Expect("OrderBy sorted", 0, inversions);
            Expect("OrderBy length", n, sorted.Length);

            var dict = new Dictionary<string, int>();
            for (int i = 0; i < n; i++) dict[(i % 500).ToString()] = i;
            Expect("Dictionary count", Math.Min(n, 500), dict.Count);
            var set = new HashSet<int>(list);
            Expect("HashSet count", distinctCount, set.Count);
            var queue = new Queue<object>();
            for (int i = 0; i < n; i++) queue.Enqueue(i);
            long qsum = 0;
            while (queue.Count > 0) qsum += (int)queue.Dequeue();
            Expect("Queue sum", (long)n * (n - 1) / 2, qsum);
            var stack = new Stack<int[]>();
            for (int i = 0; i < n; i++) stack.Push(new int[] { i });
            long ssum = 0;
            while (stack.Count > 0) ssum += stack.Pop()[0];
            Expect("Stack sum", (long)n * (n - 1) / 2, ssum);
            var sortedDict = new SortedDictionary<int, int>();
            foreach (int v in list) sortedDict[v] = v;
            Expect("SortedDictionary count", distinctCount, sortedDict.Count);
            var linked = new LinkedList<int>(list.Take(100));
            Expect("LinkedList count", Math.Min(n, 100), linked.Count);
            var zipped = list.Zip(list.Skip(1), (x, y) => (long)x * y).Aggregate(0L, (acc, v) => acc + v);
            long zipWant = 0;
            for (int i = 0; i + 1 < list.Count; i++) zipWant += (long)list[i] * list[i + 1];
            Expect("Zip/Aggregate", zipWant, zipped);
            return failures == 0;
        }
    }
}
