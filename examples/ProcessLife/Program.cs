// ProcessLife — a program that lives among other processes, for tests/e2e/process:
//   wait          allocates known objects, one induced GC, prints "ready PID", then waits for a
//                 signal (no handler of its own: Ctrl-C ends it as it would any .NET program)
//   parent        starts `dotnet ProcessLife.dll probe` and prints the child's answer
//   probe         prints "collector: PATH" or "collector: none" (libheaplens.so mapped or not)
//   twins         starts `probe alpha` and `probe beta` at once, prints both answers
//   probe LABEL   allocates a little, one induced GC, prints "probe LABEL pid PID collector: ..."
//   failfast N    allocates N Customers it keeps, one induced GC, prints "failfast gcs=G
//                 customers=N", then Environment.FailFast right after that GC (the process
//                 aborts: no Shutdown for a profiler)
// Every line it prints is flushed at once: the test waits for lines, never sleeps.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using HeapLensShared;

namespace HeapLens.Examples.Process
{
    internal sealed class Customer
    {
        public int Id;
        public Customer(int id) { Id = id; }
    }

    internal static class Program
    {
        private static object? s_keep;

        private static int Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "wait";
            switch (mode)
            {
                case "wait": return Wait();
                case "parent": return Parent();
                case "twins": return Twins();
                case "failfast" when args.Length > 1: return FailFast(int.Parse(args[1]));
                case "probe" when args.Length > 1:
                    s_keep = new List<string> { args[1], args[1] + "!" };
                    GC.Collect();
                    Console.WriteLine("probe " + args[1] + " pid " + Environment.ProcessId
                        + " collector: " + (HeapLensSupport.LoadedCollector() ?? "none"));
                    return 0;
                case "probe":
                    Console.WriteLine("collector: " + (HeapLensSupport.LoadedCollector() ?? "none")
                        + " fds: " + OpenFiles());
                    return 0;
                default:
                    Console.Error.WriteLine("usage: ProcessLife [wait|parent|twins|probe [LABEL]]");
                    return 2;
            }
        }

        // Objects whose type names the test checks: a nested type of a generic type
        // (Dictionary<,>+Entry[]) and a boxed List<T>+Enumerator.
        private static int Wait()
        {
            var customers = new Dictionary<int, Customer>();
            for (int i = 0; i < 100; i++) customers[i] = new Customer(i);
            var list = new List<int> { 1, 2, 3 };
            object boxed = list.GetEnumerator();
            s_keep = new object[] { customers, boxed };
            GC.Collect();
            Console.WriteLine("names: " + HeapLensSupport.HeapLensName(typeof(Dictionary<int, Customer>).Assembly
                .GetType("System.Collections.Generic.Dictionary`2+Entry")!
                .MakeGenericType(typeof(int), typeof(Customer)).MakeArrayType())
                + " | " + HeapLensSupport.HeapLensName(boxed.GetType()));
            Console.WriteLine("ready " + Environment.ProcessId);
            Console.Out.Flush();
            Thread.Sleep(Timeout.Infinite);
            GC.KeepAlive(s_keep);
            return 0;
        }

        private static int FailFast(int n)
        {
            var customers = new Customer[n];
            for (int i = 0; i < n; i++) customers[i] = new Customer(i);
            s_keep = customers;
            GC.Collect();
            Console.WriteLine("failfast gcs=" + GC.CollectionCount(0) + " customers=" + n);
            Console.Out.Flush();
            Environment.FailFast("heaplens test: failing fast right after a GC");
            return 0;
        }

        // What the process holds open beyond stdin/stdout/stderr: "3=socket:[123] 4=pipe:[9]".
        private static string OpenFiles()
        {
            var parts = new List<string>();
            foreach (string fd in System.IO.Directory.GetFiles("/proc/self/fd"))
            {
                string n = System.IO.Path.GetFileName(fd);
                if (int.Parse(n, System.Globalization.CultureInfo.InvariantCulture) <= 2) continue;
                try { parts.Add(n + "=" + new System.IO.FileInfo(fd).LinkTarget); }
                catch (System.IO.IOException) { } // closed while listing (the listing itself)
            }
            return string.Join(" ", parts);
        }

        // Two .NET children running at the same time (both started before either is waited for).
        private static int Twins()
        {
            Console.WriteLine("parent pid " + Environment.ProcessId);
            var children = new List<System.Diagnostics.Process>();
            foreach (string label in new[] { "alpha", "beta" })
            {
                var psi = new ProcessStartInfo("dotnet")
                {
                    RedirectStandardOutput = true,
                    UseShellExecute = false,
                };
                psi.ArgumentList.Add(typeof(Program).Assembly.Location);
                psi.ArgumentList.Add("probe");
                psi.ArgumentList.Add(label);
                children.Add(System.Diagnostics.Process.Start(psi)!);
            }
            int failed = 0;
            foreach (var child in children)
            {
                Console.WriteLine(child.StandardOutput.ReadToEnd().Trim() + " exit " + WaitExit(child));
                failed += child.ExitCode != 0 ? 1 : 0;
                child.Dispose();
            }
            GC.Collect();
            return failed;
        }

        private static int WaitExit(System.Diagnostics.Process child)
        {
            child.WaitForExit();
            return child.ExitCode;
        }

        private static int Parent()
        {
            Console.WriteLine("parent collector: " + (HeapLensSupport.LoadedCollector() ?? "none"));
            var psi = new ProcessStartInfo("dotnet")
            {
                RedirectStandardOutput = true,
                UseShellExecute = false,
            };
            psi.ArgumentList.Add(typeof(Program).Assembly.Location);
            psi.ArgumentList.Add("probe");
            using var child = System.Diagnostics.Process.Start(psi)!;
            string answer = child.StandardOutput.ReadToEnd().Trim();
            child.WaitForExit();
            Console.WriteLine("child " + answer + " exit " + child.ExitCode);
            GC.Collect();
            return 0;
        }
    }
}
