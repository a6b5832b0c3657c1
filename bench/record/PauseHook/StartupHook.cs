// PauseHook — loaded by the runtime before Main through DOTNET_STARTUP_HOOKS. A background thread
// polls GC.GetGCMemoryInfo every millisecond and prints, per GC it caught, its index, generation
// and pause ("pause gc=12 gen=0 us=345") to stderr, as examples/Workload's --pauses does: the
// runtime's own pause figure (suspension to resume), the same with or without a profiler. A GC
// that follows another within the same millisecond is missed, in every mode alike.
using System;
using System.Globalization;
using System.Threading;

internal static class StartupHook
{
    public static void Initialize()
    {
        var t = new Thread(Sample) { IsBackground = true, Name = "pause-sampler" };
        t.Start();
    }

    private static void Sample()
    {
        long last = -1;
        while (true)
        {
            GCMemoryInfo info = GC.GetGCMemoryInfo(GCKind.Any);
            if (info.Index != last && info.Index > 0)
            {
                last = info.Index;
                double us = info.PauseDurations.Length > 0 ? info.PauseDurations[0].TotalMicroseconds : 0;
                Console.Error.WriteLine($"pause gc={info.Index} gen={info.Generation} us={us.ToString("F0", CultureInfo.InvariantCulture)}");
            }
            Thread.Sleep(1);
        }
    }
}
