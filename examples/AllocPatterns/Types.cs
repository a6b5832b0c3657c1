// The example types. Only AllocPatterns allocates them, and it allocates nothing else in this
// namespace (its own bookkeeping lives in namespace AllocPatterns), so per-type counts in a
// heaplens recording can be compared with the ground truth exactly.
using System.Runtime.InteropServices;

namespace HeapLens.Examples
{
    /// <summary>Small class allocated by the worker threads ("worker-1".."worker-4") and, at
    /// the very end, by the main thread.</summary>
    public sealed class WorkItem
    {
        public long Id;
        public int Worker;
        public int Seq;
        public WorkItem? Next; // kept items form a chain per worker
    }

    /// <summary>Holder of a nested type: heaplens names it "HeapLens.Examples.Outer+Inner".</summary>
    public static class Outer
    {
        public sealed class Inner
        {
            public int A;
            public int B;
            public object? Ref;
        }
    }

    /// <summary>Generic class; Pair&lt;WorkItem, int&gt; is named
    /// "HeapLens.Examples.Pair&lt;HeapLens.Examples.WorkItem, System.Int32&gt;".</summary>
    public sealed class Pair<TFirst, TSecond>
    {
        public TFirst? First;
        public TSecond? Second;
    }

    /// <summary>Element of a two-dimensional array: "HeapLens.Examples.Cell[,]".</summary>
    public struct Cell
    {
        public int Value;
        public short Flag;
    }

    /// <summary>16-byte struct; LargeItem[10000] is 160,024 bytes and goes to the LOH.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct LargeItem
    {
        public long A;
        public long B;
    }

    /// <summary>Blittable struct for pinned-object-heap arrays (GC.AllocateArray(n, pinned: true)).</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct PinnedItem
    {
        public int X;
        public int Y;
        public int Z;
        public int W;
    }

    /// <summary>Class without object references, so a GCHandleType.Pinned handle may pin it.</summary>
    public sealed class PinnedTarget
    {
        public long Stamp;
        public long Payload0;
        public long Payload1;
    }
}
