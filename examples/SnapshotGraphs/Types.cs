// The example types of SnapshotGraphs. Only SnapshotGraphs allocates them, and it allocates nothing
// else in this namespace (its bookkeeping lives in namespace SnapshotGraphs), so every object of
// these types in a heap snapshot is one the program knows about. Most types have exactly one
// instance, so a type name identifies one object of the graph.
using System;
using System.Runtime.InteropServices;

namespace HeapLens.Examples.Graphs
{
    /// <summary>(a) One of the nodes of the static List&lt;Node&gt;. Its only reference is to its
    /// byte[] (node i: 16 + i bytes of data).</summary>
    public sealed class Node
    {
        public byte[] Data;
        public int Index;

        public Node(byte[] data, int index)
        {
            Data = data;
            Index = index;
        }
    }

    /// <summary>(b) Member of a ring: each node references the next, the last the first.</summary>
    public sealed class CycleNode
    {
        public CycleNode? Next;
        public int Index;
    }

    // (c) Targets of GC handles. No references in them, so a Pinned handle may hold any of them.

    /// <summary>Held only by a Normal (strong) GCHandle that is never freed.</summary>
    public sealed class StrongTarget { public long Stamp; }

    /// <summary>Held only by a Normal GCHandle that the program frees: then it dies.</summary>
    public sealed class FreedTarget { public long Stamp; }

    /// <summary>Held only by a Pinned GCHandle that is never freed.</summary>
    public sealed class PinnedTarget { public long Stamp; }

    /// <summary>Held by a static field and a Weak GCHandle: lives to the end.</summary>
    public sealed class WeakTarget { public long Stamp; }

    /// <summary>Held by a static field and a Weak GCHandle; the static is cleared, the object
    /// dies and the weak handle is cleared (it is never freed).</summary>
    public sealed class WeakOnlyTarget { public long Stamp; }

    /// <summary>(d) Finalizable object. When it becomes unreachable the GC that finds it puts it
    /// on the finalization queue: it survives that GC as a finalizer root. The finalizer records
    /// what it sees (no allocation) in static fields.</summary>
    public sealed class Finalizable
    {
        public FinalizerPayload? Payload;

        public static int Finalized;          // finalizers run
        public static int SeenGeneration = -1; // GC.GetGeneration(this) in the finalizer
        public static int SeenPayloadGeneration = -1;
        public static int SeenCollectionCount = -1; // GC.CollectionCount(0) in the finalizer

        ~Finalizable()
        {
            SeenGeneration = GC.GetGeneration(this);
            SeenPayloadGeneration = Payload != null ? GC.GetGeneration(Payload) : -1;
            SeenCollectionCount = GC.CollectionCount(0);
            System.Threading.Interlocked.Increment(ref Finalized);
        }
    }

    /// <summary>Referenced only by the Finalizable: kept alive by the finalization queue too.</summary>
    public sealed class FinalizerPayload { public long Stamp; }

    /// <summary>(e) References two pinned-object-heap int[] arrays: one also held in a local
    /// variable of Main across every GC (a stack root), one also held by a Pinned GCHandle.</summary>
    public sealed class PohHolder
    {
        public int[]? Local;
        public int[]? Handled;
    }

    /// <summary>(f) References two large-object-heap arrays.</summary>
    public sealed class LohHolder
    {
        public LargeItem[]? Items;  // LargeItem[6000]: 96,024 bytes, no references
        public Leaf?[]? Leaves;     // Leaf[12000]: 96,024 bytes, 3 non-null references
    }

    /// <summary>16-byte struct; LargeItem[6000] is 96,024 bytes and goes to the LOH.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct LargeItem
    {
        public long A;
        public long B;
    }

    /// <summary>Small object referenced from a LOH array.</summary>
    public sealed class Leaf { public long Stamp; }

    /// <summary>Chain of objects dropped once they are in gen2: a gen0 GC does not collect them,
    /// so its heap walk still reports them (with their references); the next full GC does.</summary>
    public sealed class Orphan
    {
        public Orphan? Next;
        public int Index;
    }

    /// <summary>Two fields referencing the same object: two references, one target.</summary>
    public sealed class Twin
    {
        public TwinTarget? A;
        public TwinTarget? B;
    }

    /// <summary>Referenced twice by the one Twin.</summary>
    public sealed class TwinTarget { public long Stamp; }

    /// <summary>References two objects of the NonGC (frozen) heap: a string literal and a
    /// RuntimeType (typeof(Node)).</summary>
    public sealed class GraphInfo
    {
        public string Name;
        public Type NodeType;

        public GraphInfo(string name, Type nodeType)
        {
            Name = name;
            NodeType = nodeType;
        }
    }
}
