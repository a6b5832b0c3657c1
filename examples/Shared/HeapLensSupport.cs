// HeapLensSupport.cs — helpers every example program shares (compiled into each through
// ../Directory.Build.props). Outside the HeapLens.Examples namespaces on purpose: the programs'
// ground truth lists the types of those namespaces, and this class is not one of them.
using System;
using System.IO;

namespace HeapLensShared
{
    internal static class HeapLensSupport
    {
        /// <summary>The name heaplens gives a type: namespace-qualified, nested types joined by
        /// '+', generic arguments in angle brackets separated by ", " (no arity suffix), arrays
        /// as T[] and T[,] (collector/README.md, "Type names").</summary>
        internal static string HeapLensName(Type t)
        {
            if (t.IsArray)
            {
                string e = HeapLensName(t.GetElementType()!);
                return t.IsSZArray ? e + "[]" : e + "[" + new string(',', t.GetArrayRank() - 1) + "]";
            }
            string name = t.Name;
            int tick = name.IndexOf('`');
            if (tick >= 0) name = name.Substring(0, tick);
            string prefix = t.IsNested ? HeapLensName(t.DeclaringType!) + "+"
                : string.IsNullOrEmpty(t.Namespace) ? "" : t.Namespace + ".";
            if (!t.IsGenericType) return prefix + name;
            var args = t.GetGenericArguments();
            var parts = new string[args.Length];
            for (int i = 0; i < args.Length; i++) parts[i] = HeapLensName(args[i]);
            return prefix + name + "<" + string.Join(", ", parts) + ">";
        }

        /// <summary>Path of the heaplens collector library if it is mapped into this process
        /// (read from /proc/self/maps; the collector removes its CORECLR_* variables from the
        /// environment, so they cannot tell), else null.</summary>
        internal static string? LoadedCollector()
        {
            try
            {
                foreach (string line in File.ReadLines("/proc/self/maps"))
                {
                    int slash = line.IndexOf('/');
                    if (slash >= 0 && line.IndexOf("heaplens", slash, StringComparison.Ordinal) >= 0
                        && line.EndsWith(".so", StringComparison.Ordinal))
                        return line.Substring(slash);
                }
            }
            catch (IOException) { }
            catch (UnauthorizedAccessException) { }
            return null;
        }
    }
}
