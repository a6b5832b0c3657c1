// HeapLensSupport.cs — helpers every example program shares (compiled into each through
// ../Directory.Build.props). Outside the HeapLens.Examples namespaces on purpose: the programs'
// ground truth lists the types of those namespaces, and this class is not one of them.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Runtime;
using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;
using System.Threading;

namespace HeapLensShared
{
    internal static class HeapLensSupport
    {
        /// <summary>The name heaplens gives a type, as C# reflection, ClrMD and SOS write it:
        /// namespace-qualified, nested types joined by '+', generic arguments in angle brackets
        /// separated by ", " (no arity suffix) after the type that declares them
        /// (Dictionary&lt;System.Int32, Customer&gt;+Entry), arrays as T[] and T[,]
        /// (collector/README.md, "Type names").</summary>
        internal static string HeapLensName(Type t)
        {
            if (t.IsArray)
            {
                string e = HeapLensName(t.GetElementType()!);
                return t.IsSZArray ? e + "[]" : e + "[" + new string(',', t.GetArrayRank() - 1) + "]";
            }
            if (t.IsGenericParameter) return t.Name;
            // The declaring types, outermost first. A nested type of a generic type carries all
            // the type arguments; each level takes as many as its arity suffix (`N) says.
            var chain = new List<Type>();
            for (Type? d = t; d != null; d = d.DeclaringType) chain.Insert(0, d);
            Type[] args = t.IsGenericType ? t.GetGenericArguments() : Type.EmptyTypes;
            int used = 0;
            var sb = new StringBuilder();
            if (!string.IsNullOrEmpty(chain[0].Namespace)) sb.Append(chain[0].Namespace).Append('.');
            for (int level = 0; level < chain.Count; level++)
            {
                string name = chain[level].Name;
                int arity = 0, tick = name.IndexOf('`');
                if (tick >= 0)
                {
                    arity = int.Parse(name.Substring(tick + 1), CultureInfo.InvariantCulture);
                    name = name.Substring(0, tick);
                }
                if (level > 0) sb.Append('+');
                sb.Append(name);
                if (level == chain.Count - 1) arity = args.Length - used; // the innermost: the rest
                if (arity <= 0 || used + arity > args.Length) continue;
                sb.Append('<');
                for (int i = 0; i < arity; i++)
                    sb.Append(i > 0 ? ", " : "").Append(HeapLensName(args[used + i]));
                sb.Append('>');
                used += arity;
            }
            return sb.ToString();
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

        /// <summary>A program's ground-truth file (what tests/e2e compares a recording with): its
        /// folder made, an indented JSON object (names and strings keep '+', '&lt;', '&gt;'
        /// readable) begun with what every program's truth starts with: program, format 1, runtime,
        /// pid, collector (null when it is not loaded), server_gc. The program writes the rest to
        /// Json and ends the object; Dispose flushes and closes the file.</summary>
        internal sealed class TruthFile : IDisposable
        {
            private readonly FileStream _stream;
            internal readonly Utf8JsonWriter Json;

            internal TruthFile(string path, string program)
            {
                string? dir = Path.GetDirectoryName(Path.GetFullPath(path));
                if (dir != null) Directory.CreateDirectory(dir);
                _stream = File.Create(path);
                Json = new Utf8JsonWriter(_stream, new JsonWriterOptions
                {
                    Indented = true,
                    Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
                });
                Json.WriteStartObject();
                Json.WriteString("program", program);
                Json.WriteNumber("format", 1);
                Json.WriteString("runtime", Environment.Version.ToString());
                Json.WriteNumber("pid", Environment.ProcessId);
                string? collector = LoadedCollector();
                if (collector != null) Json.WriteString("collector", collector);
                else Json.WriteNull("collector");
                Json.WriteBoolean("server_gc", GCSettings.IsServerGC);
            }

            public void Dispose()
            {
                Json.Dispose();
                _stream.Dispose();
            }
        }

        /// <summary>`--pauses`: a background thread (pause-sampler) that prints each GC it sees as
        /// "{program}: pause gc=N gen=G us=U" (the runtime's pause, in microseconds) until Stop();
        /// bench/record/run.py reads these lines.</summary>
        internal sealed class PauseSampler
        {
            private readonly string _program;
            private readonly Thread _thread;
            private volatile bool _done;

            internal PauseSampler(string program)
            {
                _program = program;
                _thread = new Thread(Run) { IsBackground = true, Name = "pause-sampler" };
                _thread.Start();
            }

            internal void Stop()
            {
                _done = true;
                _thread.Join();
            }

            private void Run()
            {
                long last = -1;
                while (!_done)
                {
                    GCMemoryInfo info = GC.GetGCMemoryInfo(GCKind.Any);
                    if (info.Index != last && info.Index > 0)
                    {
                        last = info.Index;
                        double us = info.PauseDurations.Length > 0 ? info.PauseDurations[0].TotalMicroseconds : 0;
                        Console.WriteLine($"{_program}: pause gc={info.Index} gen={info.Generation} us={us.ToString("F0", CultureInfo.InvariantCulture)}");
                    }
                    Thread.Sleep(1);
                }
            }
        }
    }
}
