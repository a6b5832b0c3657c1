// The example types of LeakDemo. Only LeakDemo allocates them, and it allocates nothing else in
// this namespace (its bookkeeping lives in namespace LeakDemo), so every object of these types in
// a heap snapshot is one the program knows about.
using System.Collections.Generic;

namespace HeapLens.Examples.Leaks
{
    // ---- the leak: sessions are opened and never closed ----

    /// <summary>The holder of the leak: one instance, held by a static field. Every iteration
    /// opens sessions and nobody ever closes one, so its list only grows.</summary>
    public sealed class SessionRegistry
    {
        private readonly List<LeakedSession> _open = new List<LeakedSession>();
        public string Name;

        public SessionRegistry(string name) { Name = name; }

        public void Open(LeakedSession session) => _open.Add(session);
        public int Count => _open.Count;
    }

    /// <summary>The leaking type: one per opened session, reachable only through the registry's
    /// list.</summary>
    public sealed class LeakedSession
    {
        public SessionData Data;
        public int Id;

        public LeakedSession(SessionData data, int id) { Data = data; Id = id; }
    }

    /// <summary>What a session holds: a buffer, so a leaked session retains more than itself.</summary>
    public sealed class SessionData
    {
        public byte[] Buffer;
        public SessionData(byte[] buffer) { Buffer = buffer; }
    }

    // ---- a steady cache: bounded, entries replaced ----

    /// <summary>A bounded cache: always exactly Capacity entries after setup; every iteration
    /// replaces some of them with new ones (the old ones die).</summary>
    public sealed class SteadyCache
    {
        private readonly Dictionary<int, CacheEntry> _entries = new Dictionary<int, CacheEntry>();
        public void Put(int key, CacheEntry entry) => _entries[key] = entry;
        public int Count => _entries.Count;
    }

    public sealed class CacheEntry
    {
        public byte[] Value;
        public int Key;
        public CacheEntry(int key, byte[] value) { Key = key; Value = value; }
    }

    // ---- a cache that warms up: grows for a while, then stays full ----

    public sealed class WarmupCache
    {
        private readonly List<WarmupEntry> _entries = new List<WarmupEntry>();
        public void Add(WarmupEntry entry) => _entries.Add(entry);
        public int Count => _entries.Count;
    }

    public sealed class WarmupEntry
    {
        public long Stamp;
        public WarmupEntry(long stamp) { Stamp = stamp; }
    }

    // ---- churn: short-lived garbage, and a window of recent items of varying size ----

    public sealed class ChurnItem
    {
        public long A, B;
    }

    /// <summary>Keeps the last few items of an iteration: a different number each time, so the
    /// live count goes up and down.</summary>
    public sealed class ChurnWindow
    {
        public ChurnItem[] Recent = new ChurnItem[0];
    }

    // ---- a small graph of known shape, for exact retained sizes ----
    //
    //   RetentionProbe -> ProbeNode[8] -> ProbeNode i -> byte[100 + i]
    //                                     ProbeNode 0 and 1 -> the one ProbeShared -> byte[50]
    //
    // Dominators: the array dominates everything below it (ProbeShared too: both paths to it go
    // through the array); ProbeNode i dominates only its own byte[]; ProbeShared its byte[].

    public sealed class RetentionProbe
    {
        public ProbeNode[] Nodes;
        public RetentionProbe(ProbeNode[] nodes) { Nodes = nodes; }
    }

    public sealed class ProbeNode
    {
        public byte[] Payload;
        public ProbeShared? Shared;
        public int Index;
        public ProbeNode(byte[] payload, int index) { Payload = payload; Index = index; }
    }

    public sealed class ProbeShared
    {
        public byte[] Blob;
        public ProbeShared(byte[] blob) { Blob = blob; }
    }
}
