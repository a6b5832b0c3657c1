// Inspections — known structures a heap snapshot must explain, and the ground truth to check it:
// which static and which fields hold a leak, which element of an array holds what.
//
//   dotnet Inspections.dll truth.json [grow|steady|attach]
//
// The ground-truth path is argv[1] or, if absent, the environment variable HEAPLENS_GROUND_TRUTH.
// `heaplens record` takes a snapshot at every induced GC by default: each checkpoint (one
// blocking GC.Collect) is one snapshot.
//
// Built first, then kept unchanged (Program.s_holder, a Holder):
//   Copies        5,000 references to copies of one string value built at run time (no literal:
//                 5,000 distinct String objects of equal contents);
//   EmptyLists    2,000 empty List<int>;
//   EmptyDicts    300 empty Dictionary<int, int>;
//   Sparse        10 Node?[100] arrays, 90% null: element i holds a Node when i % 10 == 0;
//   Finalizables  50 objects with a finalizer, kept alive;
//   UnderFilled   a List<int> of capacity 1,000 holding 10, and a Dictionary<int, int> made for
//                 1,000 entries holding 10;
// a static event (Ticker.Tick) with 1,000 Subscriber handlers; 20 Resurrected objects dropped
// at once, whose finalizers put them back in a static list (after the first checkpoint they
// are finalized and reachable again); and 3 threads named inspect-worker-N, each with its own
// value of the thread static PerThread.t_payload (a Payload whose Tag is "payload-N") and an
// object of its own type HeldByWorkerN held only in a local variable, alive until the
// checkpoints are done.
// Then, `grow` (the default): 4 iterations each open 100 Sessions (with a byte[200] each) in the
// static SessionRegistry.Instance (an auto-property: its field is "<Instance>k__BackingField"),
// whose List<Session> field `_sessions` never forgets them, each followed by a checkpoint;
// `steady`: 3 checkpoints with nothing changed in between (the registry holds 100 sessions);
// `attach`: started without heaplens, it opens 100 sessions, prints "ready PID" and waits for a
// line on stdin ("stop"), while `heaplens attach` records it (the workers and PerThread exist
// before the attach).
// The truth file says the counts, the names of the statics and fields heaplens must find, and
// per checkpoint the GC it ran at.
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text.Json;
using System.Threading;
using static HeapLensShared.HeapLensSupport;

namespace HeapLens.Examples.Inspections
{
    internal sealed class Session
    {
        public readonly int Id;
        public readonly byte[] Payload = new byte[200];
        public Session(int id) => Id = id;
    }

    internal sealed class SessionRegistry
    {
        public static SessionRegistry Instance { get; } = new SessionRegistry();
        private readonly List<Session> _sessions = new List<Session>();
        public void Open(Session s) => _sessions.Add(s);
        public int Count => _sessions.Count;
    }

    internal sealed class Node
    {
        public int Value;
    }

    internal sealed class Finalizable
    {
        public int Value;
        ~Finalizable() => Value = 0;
    }

    internal sealed class Resurrected
    {
        public static readonly List<Resurrected> Back = new List<Resurrected>();
        public int Value;
        ~Resurrected()
        {
            lock (Back)
                Back.Add(this);
        }
    }

    internal sealed class Payload
    {
        public string Tag = "";
    }

    // What each worker holds only in a local variable of its own frame: a stack root whose
    // thread is the worker (one type per worker, so `roots --type` finds one object).
    internal sealed class HeldByWorker0 { public int Value; }
    internal sealed class HeldByWorker1 { public int Value; }
    internal sealed class HeldByWorker2 { public int Value; }

    internal static class PerThread
    {
        [ThreadStatic] private static Payload? t_payload;

        // Methods of its own (JIT-compiled: the collector names the statics of classes whose
        // code ran), not inlined, so that no caller's frame holds the payload.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Set(string tag) => t_payload = new Payload { Tag = tag };

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string? Tag() => t_payload?.Tag;
    }

    internal sealed class Subscriber
    {
        public int Calls;
        public void OnTick(object? sender, EventArgs e) => Calls++;
    }

    internal static class Ticker
    {
        public static event EventHandler? Tick;
        public static int Count => Tick?.GetInvocationList().Length ?? 0;
    }

    internal sealed class Holder
    {
        public string[] Copies = Array.Empty<string>();
        public List<int>[] EmptyLists = Array.Empty<List<int>>();
        public Dictionary<int, int>[] EmptyDicts = Array.Empty<Dictionary<int, int>>();
        public Node?[][] Sparse = Array.Empty<Node?[]>();
        public Finalizable[] Finalizables = Array.Empty<Finalizable>();
        public List<int> UnderFilledList = new List<int>();
        public Dictionary<int, int> UnderFilledDict = new Dictionary<int, int>();
    }

    internal static class Program
    {
        private const int CopyCount = 5000, EmptyListCount = 2000, EmptyDictCount = 300;
        private const int SparseArrays = 10, SparseLength = 100, SparseEvery = 10;
        private const int FinalizableCount = 50, SubscriberCount = 1000;
        private const int SessionsPerIteration = 100, Iterations = 4, SteadyCheckpoints = 3;
        private const int UnderFilledCapacity = 1000, UnderFilledCount = 10, ResurrectedCount = 20;
        private const int Workers = 3;

        private static Holder? s_holder;
        private static readonly int[] s_workerTids = new int[Workers];

        /// <summary>The OS thread id (what heaplens stores as a thread's id).</summary>
        [DllImport("libc", EntryPoint = "gettid")]
        private static extern int GetTid();

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void Build()
        {
            var h = new Holder();
            // One value, built at run time: not an interned literal.
            string value = string.Concat("duplicate-", (CopyCount * 7).ToString(), "-value");
            h.Copies = new string[CopyCount];
            for (int i = 0; i < CopyCount; i++)
                h.Copies[i] = new string(value.AsSpan());
            h.EmptyLists = new List<int>[EmptyListCount];
            for (int i = 0; i < EmptyListCount; i++)
                h.EmptyLists[i] = new List<int>();
            h.EmptyDicts = new Dictionary<int, int>[EmptyDictCount];
            for (int i = 0; i < EmptyDictCount; i++)
                h.EmptyDicts[i] = new Dictionary<int, int>();
            h.Sparse = new Node?[SparseArrays][];
            for (int a = 0; a < SparseArrays; a++)
            {
                h.Sparse[a] = new Node?[SparseLength];
                for (int i = 0; i < SparseLength; i += SparseEvery)
                    h.Sparse[a][i] = new Node { Value = i };
            }
            h.Finalizables = new Finalizable[FinalizableCount];
            for (int i = 0; i < FinalizableCount; i++)
                h.Finalizables[i] = new Finalizable { Value = i };
            for (int i = 0; i < SubscriberCount; i++)
                Ticker.Tick += new Subscriber().OnTick;
            h.UnderFilledList = new List<int>(UnderFilledCapacity);
            h.UnderFilledDict = new Dictionary<int, int>(UnderFilledCapacity);
            for (int i = 0; i < UnderFilledCount; i++)
            {
                h.UnderFilledList.Add(i);
                h.UnderFilledDict.Add(i, i);
            }
            s_holder = h;
        }

        /// <summary>Objects nobody holds: the next GC queues them for their finalizers, which
        /// make them reachable again.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void DropResurrected()
        {
            for (int i = 0; i < ResurrectedCount; i++)
                new Resurrected { Value = i };
        }

        /// <summary>Threads that set their own value of a thread static, say so, and wait until
        /// `done` is set.</summary>
        private static Thread[] StartWorkers(CountdownEvent ready, ManualResetEventSlim done)
        {
            var threads = new Thread[Workers];
            for (int w = 0; w < Workers; w++)
            {
                int n = w;
                threads[w] = new Thread(() =>
                {
                    PerThread.Set(string.Concat("payload-", n.ToString()));
                    s_workerTids[n] = GetTid();
                    object local = n switch
                    {
                        0 => new HeldByWorker0 { Value = n },
                        1 => new HeldByWorker1 { Value = n },
                        _ => new HeldByWorker2 { Value = n },
                    };
                    ready.Signal();
                    done.Wait();
                    GC.KeepAlive(PerThread.Tag());
                    GC.KeepAlive(local);
                }) { Name = "inspect-worker-" + n, IsBackground = true };
                threads[w].Start();
            }
            return threads;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void OpenSessions(int first)
        {
            for (int i = 0; i < SessionsPerIteration; i++)
                SessionRegistry.Instance.Open(new Session(first + i));
        }

        /// <summary>A blocking full GC (one snapshot); returns its number. Not asked to compact:
        /// .NET 8 reports an induced compacting GC as reason "other", not induced.</summary>
        private static int Checkpoint()
        {
            GC.Collect(2, GCCollectionMode.Forced, blocking: true);
            GC.WaitForPendingFinalizers();
            return GC.CollectionCount(2);
        }

        private static int Main(string[] args)
        {
            string? truthPath = args.Length > 0 ? args[0] : Environment.GetEnvironmentVariable("HEAPLENS_GROUND_TRUTH");
            string mode = args.Length > 1 ? args[1] : "grow";
            if (truthPath == null || (mode != "grow" && mode != "steady" && mode != "attach"))
            {
                Console.Error.WriteLine("usage: Inspections truth.json [grow|steady|attach]");
                return 2;
            }
            Build();
            DropResurrected();
            using var ready = new CountdownEvent(Workers);
            using var done = new ManualResetEventSlim(false);
            Thread[] workers = StartWorkers(ready, done);
            ready.Wait();
            var gcs = new List<int>();
            var sessions = new List<int>();
            if (mode == "grow")
            {
                for (int it = 0; it < Iterations; it++)
                {
                    OpenSessions(it * SessionsPerIteration);
                    gcs.Add(Checkpoint());
                    sessions.Add(SessionRegistry.Instance.Count);
                }
            }
            else if (mode == "attach")
            {
                OpenSessions(0);
                Console.WriteLine($"ready {Environment.ProcessId}");
                Console.Out.Flush();
                Console.In.ReadLine(); // "stop", once heaplens has detached
                sessions.Add(SessionRegistry.Instance.Count);
            }
            else
            {
                OpenSessions(0);
                for (int c = 0; c < SteadyCheckpoints; c++)
                {
                    gcs.Add(Checkpoint());
                    sessions.Add(SessionRegistry.Instance.Count);
                }
            }
            done.Set();
            foreach (Thread t in workers)
                t.Join();
            using (var truth = new TruthFile(truthPath, "Inspections"))
            {
                var j = truth.Json;
                j.WriteString("mode", mode);
                j.WriteNumber("copies", CopyCount);
                j.WriteString("copy_value", s_holder!.Copies[0]);
                j.WriteNumber("empty_lists", EmptyListCount);
                j.WriteNumber("empty_dicts", EmptyDictCount);
                j.WriteNumber("sparse_arrays", SparseArrays);
                j.WriteNumber("sparse_length", SparseLength);
                j.WriteNumber("sparse_every", SparseEvery);
                j.WriteNumber("finalizables", FinalizableCount);
                j.WriteString("finalizable_type", HeapLensName(typeof(Finalizable)));
                j.WriteNumber("resurrected", Resurrected.Back.Count);
                j.WriteString("resurrected_type", HeapLensName(typeof(Resurrected)));
                j.WriteNumber("underfilled_capacity", UnderFilledCapacity);
                j.WriteNumber("underfilled_count", s_holder.UnderFilledList.Count);
                j.WriteNumber("underfilled_list_capacity", s_holder.UnderFilledList.Capacity);
                j.WriteNumber("underfilled_dict_count", s_holder.UnderFilledDict.Count);
                j.WriteNumber("underfilled_dict_capacity", s_holder.UnderFilledDict.EnsureCapacity(0));
                j.WriteString("thread_static", HeapLensName(typeof(PerThread)) + ".t_payload");
                j.WriteStartArray("workers");
                for (int w = 0; w < Workers; w++)
                {
                    j.WriteStartObject();
                    j.WriteString("name", "inspect-worker-" + w);
                    j.WriteString("tag", "payload-" + w);
                    j.WriteNumber("os_tid", s_workerTids[w]);
                    j.WriteString("held_type", "HeapLens.Examples.Inspections.HeldByWorker" + w);
                    j.WriteEndObject();
                }
                j.WriteEndArray();
                j.WriteNumber("subscribers", Ticker.Count);
                j.WriteString("holder_type", HeapLensName(typeof(Holder)));
                j.WriteString("holder_static", HeapLensName(typeof(Program)) + ".s_holder");
                j.WriteString("registry_static", HeapLensName(typeof(SessionRegistry)) + ".Instance");
                j.WriteString("event_static", HeapLensName(typeof(Ticker)) + ".Tick");
                j.WriteString("registry_type", HeapLensName(typeof(SessionRegistry)));
                j.WriteString("list_type", HeapLensName(typeof(List<Session>)));
                j.WriteString("array_type", HeapLensName(typeof(Session[])));
                j.WriteString("session_type", HeapLensName(typeof(Session)));
                j.WriteStartArray("holder_fields");
                foreach (string f in new[] { "Copies", "EmptyLists", "EmptyDicts", "Sparse", "Finalizables",
                                             "UnderFilledList", "UnderFilledDict" })
                    j.WriteStringValue(f);
                j.WriteEndArray();
                j.WriteStartArray("checkpoints");
                for (int i = 0; i < gcs.Count; i++)
                {
                    j.WriteStartObject();
                    j.WriteNumber("gc", gcs[i]);
                    j.WriteNumber("sessions", sessions[i]);
                    j.WriteEndObject();
                }
                j.WriteEndArray();
                j.WriteEndObject();
            }
            GC.KeepAlive(s_holder);
            Console.WriteLine($"Inspections: mode={mode} checkpoints={gcs.Count} sessions={SessionRegistry.Instance.Count} subscribers={Ticker.Count}");
            return 0;
        }
    }
}
