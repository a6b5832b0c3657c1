// Types.cs — the objects of MidLife. Only this program allocates types of the namespace
// HeapLens.Examples.MidLife; its ground truth lists every one of them.
namespace HeapLens.Examples.MidLife
{
    /// <summary>Dies young: overwritten in a 16-slot sink a few rounds later.</summary>
    public sealed class Request
    {
        public long Id;
        public long Time;
        public int Kind;
    }

    /// <summary>A line of an order: lives as long as its order.</summary>
    public sealed class OrderLine
    {
        public int Product;
        public int Quantity;
        public long Price;
    }

    /// <summary>Lives in a sliding window of orders (a few GCs), or for good once cached.</summary>
    public sealed class Order
    {
        public long Round;      // the worker's round that made it
        public int Customer;
        public bool Cached;     // a CacheEntry holds it too
        public OrderLine[]? Lines;
    }

    /// <summary>Lives in a sliding window of events (shorter than the orders').</summary>
    public sealed class OrderEvent
    {
        public long Round;
        public long OrderId;
        public int Kind;
    }

    /// <summary>The cache that grows: a chain per worker, never evicted.</summary>
    public sealed class CacheEntry
    {
        public long Key;
        public Order? Order;
        public CacheEntry? Next;
    }
}
