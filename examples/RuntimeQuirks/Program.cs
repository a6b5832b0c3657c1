// RuntimeQuirks — runtime behaviours heaplens must get right, each with its own ground truth
// (examples/README.md, "RuntimeQuirks"). Modes:
//   handles TRUTH.json            WeakReference handles the runtime frees inside a GC without
//                                 HandleDestroyed, GCHandle Alloc/Free, kept strong/pinned handles
//   unreported TRUTH.json         .NET 10 allocations without ObjectAllocated: delegate
//                                 combination, a second `event +=`, Nullable boxing
//   gcdump-target TRUTH.json N    keeps N objects alive, prints "ready PID", waits for a line on
//                                 stdin, then exits
//   collect-cost N K              N live objects, K GC.Collect(): prints the median time
//   reasons TRUTH.json            a GC.Collect(), a GC caused by small objects, one by large
//                                 arrays, with the GC counts around each
//   gcdump-client PID OUT.nettrace  a diagnostics-IPC client (no packages): starts an EventPipe
//                                 session like dotnet-gcdump, keeps the stream until the heap
//                                 dump's GC ended and the stream went quiet, stops the session
using System;
using System.Collections.Generic;
using System.IO;
using System.Net.Sockets;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using System.Threading;
using HeapLensShared;

namespace HeapLens.Examples.Quirks
{
    sealed class Target { public int Value; public Target(int v) { Value = v; } }
    sealed class Held { public long A = 1, B = 2; }
    sealed class Publisher { public event Action? Changed; public int Count() => Changed?.GetInvocationList().Length ?? 0; }

    static class Program
    {
        static int Gcs() => GC.CollectionCount(0);

        static int Collect()
        {
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
            GC.WaitForPendingFinalizers();
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
            return Gcs();
        }

        static readonly FieldInfo TaggedHandle =
            typeof(WeakReference<object>).GetField("_taggedHandle", BindingFlags.NonPublic | BindingFlags.Instance)!;
        static readonly FieldInfo TaggedHandleOld =
            typeof(WeakReference).GetField("_taggedHandle", BindingFlags.NonPublic | BindingFlags.Instance)!;

        // _taggedHandle: bit 0 = track resurrection, bit 1 = COM-aware (research: FinalizeWeakReference).
        static long HandleOf(WeakReference<object> w) => ((IntPtr)TaggedHandle.GetValue(w)!).ToInt64() & ~3L;
        static long HandleOf(WeakReference w) => ((IntPtr)TaggedHandleOld.GetValue(w)!).ToInt64() & ~3L;
        static long HandleOf(GCHandle h) => GCHandle.ToIntPtr(h).ToInt64() & ~1L; // bit 0: pinned

        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference<object>[] MakeWeak(object[] targets)
        {
            var w = new WeakReference<object>[targets.Length];
            for (int i = 0; i < w.Length; i++) w[i] = new WeakReference<object>(targets[i]);
            return w;
        }

        // Statics, not locals: unoptimized (tier-0) code keeps locals and temporaries alive to the
        // end of the method, and the objects must die exactly when the program drops them.
        static object[]? s_targets;
        static WeakReference<object>[]? s_weak;
        static WeakReference[]? s_weakOld; // non-generic, trackResurrection: true (long weak handles)

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long[] MakeBatch(int n)
        {
            s_targets = new object[n];
            for (int i = 0; i < n; i++) s_targets[i] = new Target(i);
            s_weak = MakeWeak(s_targets);
            var ids = new long[n];
            for (int i = 0; i < n; i++) ids[i] = HandleOf(s_weak[i]);
            return ids;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long[] MakeOldBatch(int n)
        {
            s_weakOld = new WeakReference[n];
            var ids = new long[n];
            for (int i = 0; i < n; i++)
            {
                s_weakOld[i] = new WeakReference(s_targets![i], trackResurrection: true);
                ids[i] = HandleOf(s_weakOld[i]);
            }
            return ids;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int AliveTargets()
        {
            int alive = 0;
            foreach (var w in s_weak!) if (w.TryGetTarget(out _)) alive++;
            return alive;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static List<long> AllocAndFree(int n)
        {
            var freed = new List<long>();
            for (int i = 0; i < n; i++)
            {
                var h = GCHandle.Alloc(s_targets![i], GCHandleType.Weak);
                freed.Add(HandleOf(h));
                h.Free();
            }
            return freed;
        }

        static int Handles(string truthPath)
        {
            const int n = 1000;
            var truth = new Dictionary<string, object?>();
            // Kept for the whole run: strong and pinned handles.
            var strong = new List<GCHandle>();
            var pinned = new List<GCHandle>();
            for (int i = 0; i < 10; i++) strong.Add(GCHandle.Alloc(new Held(), GCHandleType.Normal));
            for (int i = 0; i < 5; i++) pinned.Add(GCHandle.Alloc(new byte[64], GCHandleType.Pinned));
            int keptCreated = Gcs();

            // Batch 1: weak references whose targets are alive, then dead, then which die.
            int batch1Created = Gcs();
            long[] ids1 = MakeBatch(n);
            long[] idsOld = MakeOldBatch(100);
            int g1 = Collect();                       // targets alive
            // GCHandle weak handles allocated and freed between two GCs.
            List<long> freed = AllocAndFree(100);
            int freedAfter = Gcs();
            s_targets = null;
            int g2 = Collect();                       // targets dead, weak handles cleared
            int alive1 = AliveTargets();
            s_weak = null;
            s_weakOld = null;
            int beforeDeath = Gcs();
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
            int deathGc = Gcs();                      // the WeakReference objects die here
            int g4 = Collect();
            // Batch 2: new weak references; their handles reuse batch 1's addresses.
            int batch2Created = Gcs();
            long[] ids2 = MakeBatch(n);
            object[] targets2 = s_targets!;
            WeakReference<object>[] weak2 = s_weak!;
            int g5 = Collect();
            var set1 = new HashSet<long>(ids1);
            int reused = 0;
            foreach (long id in ids2) if (set1.Contains(id)) reused++;

            truth["program"] = "RuntimeQuirks";
            truth["mode"] = "handles";
            truth["runtime"] = Environment.Version.ToString();
            truth["collector"] = HeapLensSupport.LoadedCollector();
            truth["batch1_created_after_gc"] = batch1Created;
            truth["batch1_handles"] = ids1;
            truth["batch1_alive_after_targets_died"] = alive1;
            truth["batch1_old_handles"] = idsOld;
            truth["batch1_death_gc"] = deathGc;
            truth["batch1_death_gc_single"] = deathGc == beforeDeath + 1;
            truth["batch2_created_after_gc"] = batch2Created;
            truth["batch2_handles"] = ids2;
            truth["batch2_reused_addresses"] = reused;
            truth["freed_handles"] = freed;
            truth["freed_after_gc"] = freedAfter;
            truth["kept_created_after_gc"] = keptCreated;
            truth["strong_handles"] = strong.ConvertAll(HandleOf);
            truth["pinned_handles"] = pinned.ConvertAll(HandleOf);
            truth["gcs"] = new[] { g1, g2, deathGc, g4, g5 };
            truth["gcs_total"] = Gcs();
            File.WriteAllText(truthPath, JsonSerializer.Serialize(truth));
            GC.KeepAlive(weak2);
            GC.KeepAlive(targets2);
            Console.WriteLine($"handles: batch1 died in GC {deathGc}, {reused} of {n} addresses reused");
            return 0;
        }

        // ---- allocations the runtime does not report (.NET 10) --------------------------------

        static void Nop() { }
        static void Nop2() { }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static object BoxNullable(int i) { int? v = i; return v; }

        struct S<T> { public T Value; public int N; }

        // Shared (canonical) code for reference-type T: boxing S<T> goes through CastHelpers.Box.
        static class G<T> where T : class
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            public static object Box(T v, int n) { var s = new S<T> { Value = v, N = n }; return s; }
        }

        static int Unreported(string truthPath, int n)
        {
            var truth = new Dictionary<string, object?>();
            Action a = Nop, b = Nop2;
            var combined = new Action[n];
            var publishers = new Publisher[n];
            var boxes = new object[n];
            int before = Collect();
            for (int i = 0; i < n; i++) combined[i] = a + b;                  // Delegate.Combine
            for (int i = 0; i < n; i++)
            {
                var p = new Publisher();
                p.Changed += Nop;                                          // first: stores the delegate
                p.Changed += Nop2;                                         // second: combines
                publishers[i] = p;
            }
            for (int i = 0; i < n; i++) boxes[i] = BoxNullable(i);        // CastHelpers.Box_Nullable
            var shared = new object[n];
            for (int i = 0; i < n; i++) shared[i] = G<string>.Box("s", i); // CastHelpers.Box
            int after = Collect();
            int total = 0;
            foreach (var p in publishers) total += p.Count();
            truth["program"] = "RuntimeQuirks";
            truth["mode"] = "unreported";
            truth["runtime"] = Environment.Version.ToString();
            truth["runtime_major"] = Environment.Version.Major;
            truth["collector"] = HeapLensSupport.LoadedCollector();
            truth["n"] = n;
            truth["gc_before"] = before;
            truth["gc_after"] = after;
            // Alive at the snapshot after the loops: per type name, the objects these loops made.
            truth["combined_delegates"] = n;       // System.Action, made by a + b
            truth["event_delegates"] = n;          // System.Action, made by the second +=
            truth["boxed_ints"] = n;               // System.Int32, boxed from int?
            truth["shared_boxes"] = n;             // S<System.String>, boxed in shared generic code
            truth["shared_box_type"] = HeapLensSupport.HeapLensName(typeof(S<string>));
            truth["invocation_entries"] = total;
            File.WriteAllText(truthPath, JsonSerializer.Serialize(truth));
            GC.KeepAlive(combined);
            GC.KeepAlive(publishers);
            GC.KeepAlive(boxes);
            GC.KeepAlive(shared);
            Console.WriteLine($"unreported: {n} combinations, {n} events, {n} nullable boxes");
            return 0;
        }

        // ---- dotnet-gcdump's heap dump under heaplens ------------------------------------------

        sealed class Node { public Node? Next; public int V; }

        static int GcdumpTarget(string truthPath, int n)
        {
            Node? head = null;
            for (int i = 0; i < n; i++) head = new Node { Next = head, V = i };
            var truth = new Dictionary<string, object?>
            {
                ["program"] = "RuntimeQuirks", ["mode"] = "gcdump-target",
                ["runtime"] = Environment.Version.ToString(),
                ["collector"] = HeapLensSupport.LoadedCollector(), ["nodes"] = n,
                ["pid"] = Environment.ProcessId, ["gcs_before"] = Gcs(),
            };
            Console.WriteLine($"ready {Environment.ProcessId}");
            Console.Out.Flush();
            Console.In.ReadLine();
            truth["gcs_after"] = Gcs();
            File.WriteAllText(truthPath, JsonSerializer.Serialize(truth));
            GC.KeepAlive(head);
            return 0;
        }

        static object? s_sink;

        // Three GCs with known causes, each with the GC counts before and after it: GC.Collect()
        // (reason Induced), small objects until a GC comes (AllocSmall), then only large arrays
        // until a GC comes (AllocLarge: the large object heap's budget runs out; the loop
        // allocates nothing small, so gen0's budget cannot).
        static int Reasons(string truthPath)
        {
            var truth = new Dictionary<string, object?>();
            int before = Gcs();
            GC.Collect();
            truth["induced"] = new[] { before, Gcs() };
            before = Gcs();
            while (Gcs() == before)
                s_sink = new Held();
            truth["alloc_small"] = new[] { before, Gcs() };
            var large = new byte[64][];
            before = Gcs();
            for (int i = 0; Gcs() == before; i = (i + 1) & 63)
                large[i] = new byte[1 << 20];
            truth["alloc_large"] = new[] { before, Gcs() };
            s_sink = large;
            truth["collector"] = HeapLensSupport.LoadedCollector();
            File.WriteAllText(truthPath, JsonSerializer.Serialize(truth));
            return 0;
        }

        // The cost of one GC.Collect() with N live objects: median of K, in milliseconds.
        static int CollectCost(int n, int k)
        {
            Node? head = null;
            for (int i = 0; i < n; i++) head = new Node { Next = head, V = i };
            var ms = new double[k];
            for (int i = 0; i < k; i++)
            {
                long t0 = System.Diagnostics.Stopwatch.GetTimestamp();
                GC.Collect();
                ms[i] = System.Diagnostics.Stopwatch.GetElapsedTime(t0).TotalMilliseconds;
            }
            Array.Sort(ms);
            Console.WriteLine($"collect-cost nodes {n} median_ms {ms[k / 2]:F2} min_ms {ms[0]:F2}");
            GC.KeepAlive(head);
            return 0;
        }

        static byte[] IpcMessage(byte commandSet, byte commandId, byte[] payload)
        {
            var ms = new MemoryStream();
            var w = new BinaryWriter(ms);
            w.Write(Encoding.ASCII.GetBytes("DOTNET_IPC_V1\0"));   // 14-byte magic
            w.Write((ushort)(20 + payload.Length));                // size, header included
            w.Write(commandSet);
            w.Write(commandId);
            w.Write((ushort)0);                                    // reserved
            w.Write(payload);
            return ms.ToArray();
        }

        static void IpcString(BinaryWriter w, string? s)
        {
            if (s == null) { w.Write(0u); return; }
            w.Write((uint)(s.Length + 1));                          // UTF-16 characters with the NUL
            w.Write(Encoding.Unicode.GetBytes(s + "\0"));
        }

        static Socket IpcConnect(int pid)
        {
            // The name's second number is the process's start time: with PIDs reused, sockets
            // left by killed processes of the same PID are there too. The live one is the
            // newest; stale ones refuse connections.
            string[] found = Directory.GetFiles(Path.GetTempPath(), $"dotnet-diagnostic-{pid}-*-socket");
            if (found.Length == 0) throw new IOException($"no diagnostics socket for {pid}");
            Array.Sort(found, (a, b) => StartKey(b).CompareTo(StartKey(a)));
            SocketException? last = null;
            foreach (string path in found)
            {
                var s = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                try
                {
                    s.Connect(new UnixDomainSocketEndPoint(path));
                    return s;
                }
                catch (SocketException e)
                {
                    s.Dispose();
                    last = e;
                }
            }
            throw last!;
        }

        static ulong StartKey(string socketPath)
        {
            string[] parts = Path.GetFileName(socketPath).Split('-');
            return parts.Length >= 4 && ulong.TryParse(parts[3], out ulong key) ? key : 0;
        }

        static void ReceiveExactly(Socket s, byte[] buf)
        {
            for (int got = 0; got < buf.Length;)
            {
                int k = s.Receive(buf, got, buf.Length - got, SocketFlags.None);
                if (k <= 0) throw new IOException("diagnostics socket closed");
                got += k;
            }
        }

        static int GcdumpClient(int pid, string outPath)
        {
            // EventPipe CollectTracing2 (set 0x02, id 0x03) with dotnet-gcdump's provider:
            // Microsoft-Windows-DotNETRuntime, keywords GCHeapSnapshot (0x1980001), Verbose (5).
            // Enabling GCHeapCollect makes the runtime run the dump GC (induced, gen2, blocking).
            var pl = new MemoryStream();
            var bw = new BinaryWriter(pl);
            bw.Write(256u);           // circular buffer MB
            bw.Write(1u);             // format: nettrace
            bw.Write((byte)0);        // no rundown
            bw.Write(1u);             // providers
            bw.Write(0x1980001UL);
            bw.Write(5u);
            IpcString(bw, "Microsoft-Windows-DotNETRuntime");
            IpcString(bw, null);
            using var session = IpcConnect(pid);
            session.Send(IpcMessage(0x02, 0x03, pl.ToArray()));
            var header = new byte[20];
            ReceiveExactly(session, header);
            if (header[16] != 0xFF || header[17] != 0x00) throw new IOException($"CollectTracing2 refused: {header[16]:x2}/{header[17]:x2}");
            var id = new byte[8];
            ReceiveExactly(session, id);
            // Read until the stream has been quiet for 2 s (the dump is written in one burst
            // after its GC) or 60 s passed; then StopTracing and read to the end.
            var all = new MemoryStream();
            var buf = new byte[1 << 16];
            session.ReceiveTimeout = 2000;
            var deadline = DateTime.UtcNow.AddSeconds(60);
            while (DateTime.UtcNow < deadline)
            {
                int k;
                try { k = session.Receive(buf); }
                catch (SocketException) { if (all.Length > 0) break; continue; }
                if (k <= 0) break;
                all.Write(buf, 0, k);
            }
            using (var stop = IpcConnect(pid))
            {
                stop.Send(IpcMessage(0x02, 0x01, id));  // StopTracing(session id)
                var h = new byte[20];
                ReceiveExactly(stop, h);
            }
            session.ReceiveTimeout = 5000;
            try
            {
                int k;
                while ((k = session.Receive(buf)) > 0) all.Write(buf, 0, k);
            }
            catch (SocketException) { }
            File.WriteAllBytes(outPath, all.ToArray());
            Console.WriteLine($"nettrace bytes {all.Length}");
            return 0;
        }

        static int Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "";
            switch (mode)
            {
                case "handles": return Handles(args[1]);
                case "unreported": return Unreported(args[1], args.Length > 2 ? int.Parse(args[2]) : 100);
                case "gcdump-target": return GcdumpTarget(args[1], int.Parse(args[2]));
                case "gcdump-client": return GcdumpClient(int.Parse(args[1]), args[2]);
                case "collect-cost": return CollectCost(int.Parse(args[1]), int.Parse(args[2]));
                case "reasons": return Reasons(args[1]);
                default:
                    Console.Error.WriteLine("usage: RuntimeQuirks handles|unreported|gcdump-target|gcdump-client|collect-cost|reasons ...");
                    return 2;
            }
        }
    }
}
