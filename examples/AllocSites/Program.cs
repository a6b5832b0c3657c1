// AllocSites — allocates two types from known call sites and writes its own ground truth.
//
//   dotnet AllocSites.dll [truth.json] [--count N]
//
// ChainItem is allocated only in C, called through A -> B -> C (never inlined): its heaviest
// allocation stack, innermost first, is C, B, A, Program.Run, Program.Main. SplitItem is
// allocated at two sites, Major and Minor, three to one. N (default 4,000,000) of each: enough
// bytes (about 128 and 160 MB) that the runtime's allocation sampling (one sample per 100 KiB on
// average) gives over a thousand samples of each. The truth JSON:
//   {"types": {"AllocSites.ChainItem": N, "AllocSites.SplitItem": N},
//    "sites": {"AllocSites.Program.Major": 3N/4, "AllocSites.Program.Minor": N/4},
//    "sizes": {...object sizes in bytes...}}
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.CompilerServices;
using System.Text.Json;

namespace AllocSites
{
    internal sealed class ChainItem { public long A = 1, B = 2; }
    internal sealed class SplitItem { public long A = 1, B = 2, C = 3; }

    internal static class Program
    {
        // Every object escapes into this field, so no allocation is removed or put on the stack.
        private static object? sink;

        [MethodImpl(MethodImplOptions.NoInlining)] private static ChainItem C() => new ChainItem();
        [MethodImpl(MethodImplOptions.NoInlining)] private static ChainItem B() => C();
        [MethodImpl(MethodImplOptions.NoInlining)] private static ChainItem A() => B();
        [MethodImpl(MethodImplOptions.NoInlining)] private static SplitItem Major() => new SplitItem();
        [MethodImpl(MethodImplOptions.NoInlining)] private static SplitItem Minor() => new SplitItem();

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static (long major, long minor) Run(long count)
        {
            for (long i = 0; i < count; i++)
                sink = A();
            long major = 0, minor = 0;
            for (long i = 0; i < count; i++)
            {
                if (i % 4 == 3) { sink = Minor(); minor++; }
                else { sink = Major(); major++; }
            }
            return (major, minor);
        }

        private static int Main(string[] args)
        {
            string? truthPath = null;
            long count = 4_000_000;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--count" && i + 1 < args.Length) count = long.Parse(args[++i]);
                else truthPath = args[i];
            }
            var (major, minor) = Run(count);
            sink = null;
            var truth = new Dictionary<string, object>
            {
                ["types"] = new Dictionary<string, long>
                {
                    ["AllocSites.ChainItem"] = count, ["AllocSites.SplitItem"] = major + minor,
                },
                ["sites"] = new Dictionary<string, long>
                {
                    ["AllocSites.Program.Major"] = major, ["AllocSites.Program.Minor"] = minor,
                },
                ["runtime"] = Environment.Version.ToString(),
            };
            string json = JsonSerializer.Serialize(truth);
            if (truthPath != null) File.WriteAllText(truthPath, json);
            Console.WriteLine(json);
            return 0;
        }
    }
}
