// XunitCheckpoints — memory assertions between checkpoints in a test run:
//
//   heaplens record -o tests.db --children=testhost -- dotnet test XunitCheckpoints.dll
//   heaplens check tests.<pid>.db --max-allocated Widget=100@cache-start..cache-end \
//                                 --max-live Widget=100@cache-end
//
// The test writes checkpoints from an EventSource named "HeapLens" (event 1, Checkpoint(name));
// heaplens records the test host (the process that runs the tests) with --children=testhost.
// Each checkpoint comes right after a blocking GC.Collect(), so the heap at the checkpoint and
// the allocations between two are exactly the program's.
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using Xunit;

namespace HeapLens.Examples.Xunit
{
    [EventSource(Name = "HeapLens")]
    internal sealed class HeapLensEvents : EventSource
    {
        internal static readonly HeapLensEvents Log = new HeapLensEvents();

        [Event(1)]
        public void Checkpoint(string name) => WriteEvent(1, name);

        internal static void Mark(string name)
        {
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
            Log.Checkpoint(name);
        }
    }

    public sealed class Widget
    {
        public int Id;
        public Widget(int id) { Id = id; }
    }

    public sealed class CacheTests
    {
        private static readonly List<Widget> s_cache = new List<Widget>();

        [Fact]
        public void CacheHoldsAHundredWidgets()
        {
            HeapLensEvents.Mark("cache-start");
            for (int i = 0; i < 100; i++) s_cache.Add(new Widget(i));
            HeapLensEvents.Mark("cache-end");
            Assert.Equal(100, s_cache.Count);
        }
    }
}
