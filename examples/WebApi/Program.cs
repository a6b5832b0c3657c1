// WebApi — an ASP.NET Core minimal API for heaplens' tests among real processes.
//
//   dotnet WebApi.dll --urls http://127.0.0.1:PORT
//
// GET /orders/{n}: builds n orders, serialises them to JSON (short-lived garbage) and keeps one
// in 50 in a bounded cache (survivors that are promoted and later evicted).
// GET /stats: the process's own counts as JSON (GCs per generation, cached orders, requests).
// Prints "WebApi: listening pid=P gc=server|workstation" once it accepts requests; exits on
// Ctrl-C (SIGINT) or SIGTERM as any ASP.NET Core app does, printing "WebApi: stopped".
using System.Collections.Concurrent;
using System.Runtime;
using System.Text.Json;

var builder = WebApplication.CreateSlimBuilder(args);
builder.Logging.ClearProviders();
var app = builder.Build();

var cache = new ConcurrentQueue<Order>();
long requests = 0;

app.MapGet("/orders/{n:int}", (int n) =>
{
    Interlocked.Increment(ref requests);
    var orders = new List<Order>(n);
    for (int i = 0; i < Math.Clamp(n, 0, 10_000); i++)
    {
        var o = new Order(Guid.NewGuid().ToString("N"), $"customer-{i % 97}",
                          Enumerable.Range(0, 1 + i % 5).Select(k => new Line($"SKU-{k}", k + 1)).ToList());
        orders.Add(o);
        if (i % 50 == 0)
        {
            cache.Enqueue(o);
            while (cache.Count > 20_000 && cache.TryDequeue(out _)) { }
        }
    }
    return Results.Text(JsonSerializer.Serialize(orders, AppJson.Default.ListOrder), "application/json");
});

app.MapGet("/stats", () => Results.Text(JsonSerializer.Serialize(new Stats(
    GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2), cache.Count,
    Interlocked.Read(ref requests), GCSettings.IsServerGC), AppJson.Default.Stats), "application/json"));

app.Lifetime.ApplicationStarted.Register(() =>
    Console.WriteLine($"WebApi: listening pid={Environment.ProcessId} gc={(GCSettings.IsServerGC ? "server" : "workstation")}"));
app.Lifetime.ApplicationStopped.Register(() => Console.WriteLine("WebApi: stopped"));
app.Run();

public sealed record Line(string Sku, int Quantity);
public sealed record Order(string Id, string Customer, List<Line> Lines);
public sealed record Stats(int Gen0, int Gen1, int Gen2, int Cached, long Requests, bool ServerGc);

[System.Text.Json.Serialization.JsonSerializable(typeof(List<Order>))]
[System.Text.Json.Serialization.JsonSerializable(typeof(Stats))]
internal partial class AppJson : System.Text.Json.Serialization.JsonSerializerContext { }
