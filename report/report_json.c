/* report_json.c — the report document (report.h, README.md "report"), streamed: one top-level
 * field per line and one GC per line, so that 10,000 GCs are never held as JSON in memory. */
#include "report/report.h"

#include "query/query.h"

#include <string.h>

typedef struct report_out {
    FILE *out;
    gboolean html_safe;
} report_out;

/* json_dump_callback sink: writes to out, "<" as \u003c when html_safe. A "<" can only occur
 * inside a JSON string, where the escape means the same character. */
static int report_out_write(const char *buffer, size_t size, void *p)
{
    report_out *o = p;
    if (!o->html_safe) {
        fwrite(buffer, 1, size, o->out);
        return 0;
    }
    const char *start = buffer;
    const char *end = buffer + size;
    for (const char *c = buffer; c < end; c++) {
        if (*c != '<')
            continue;
        fwrite(start, 1, (size_t)(c - start), o->out);
        fputs("\\u003c", o->out);
        start = c + 1;
    }
    fwrite(start, 1, (size_t)(end - start), o->out);
    return 0;
}

/* Writes `value` compactly and releases it (steals the reference). */
static void out_json(report_out *o, json_t *value)
{
    json_dump_callback(value, report_out_write, o, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(value);
}

/* Writes literal JSON text of this file (keys, punctuation: never a "<"). */
static void out_raw(report_out *o, const char *text)
{
    fputs(text, o->out);
}

static const char *const live_gen_names[REPORT_LIVE_GENS] = {"gen0", "gen1", "gen2",
                                                             "loh",  "poh",  "nongc"};

/* A GC as `heaplens gcs --json` writes it (with a census: census_ns and census_objects), plus
 * survival_rate, pinned_objects and what was allocated in its interval (estimates when the
 * document's allocations.estimated is true, except in the intervals the census counted). */
static json_t *report_gc_json(const report_gc *gc, gboolean census)
{
    json_t *row = query_gc_json(gc);
    if (census) {
        json_object_set_new(row, "census_ns", query_json_value(gc->census_ns));
        json_object_set_new(row, "census_objects", query_json_value(gc->census_objects));
    }
    double rate = report_gc_survival_rate(gc);
    json_object_set_new(row, "survival_rate", rate >= 0 ? json_real(rate) : json_null());
    json_object_set_new(row, "pinned_objects", query_json_value(gc->pinned_objects));
    json_object_set_new(row, "allocated_count", json_integer(gc->allocated_count));
    json_object_set_new(row, "allocated_bytes", json_integer(gc->allocated_bytes));
    return row;
}

static json_t *report_totals_json(const report_totals *t)
{
    return json_pack("{s:I, s:{s:I, s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "gcs", (json_int_t)t->gcs,
                     "gcs_by_generation", "gen0", (json_int_t)t->gcs_by_generation[0],
                     "gen1", (json_int_t)t->gcs_by_generation[1],
                     "gen2", (json_int_t)t->gcs_by_generation[2],
                     "gcs_induced", (json_int_t)t->gcs_induced,
                     "gcs_compacting", (json_int_t)t->gcs_compacting,
                     "gcs_incomplete", (json_int_t)t->gcs_incomplete,
                     "pause_ns", (json_int_t)t->pause_ns,
                     "pause_ns_max", (json_int_t)t->pause_ns_max,
                     "allocations", (json_int_t)t->allocations,
                     "allocation_bytes", (json_int_t)t->allocation_bytes,
                     "objects_alive_at_end", (json_int_t)t->objects_alive_at_end,
                     "types", (json_int_t)t->types,
                     "allocation_types", (json_int_t)t->allocation_types,
                     "threads", (json_int_t)t->threads);
}

static json_t *series_json(const int64_t *values, guint n)
{
    json_t *array = json_array();
    for (guint i = 0; i < n; i++)
        json_array_append_new(array, json_integer(values[i]));
    return array;
}

json_t *report_definitions_new(void)
{
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
        "pause", "Runtime suspended to resumed when known, else GC start to GC end.",
        "heap_size",
        "Bytes in use per generation right before and right after the GC, from the runtime's "
        "generation bounds (they include objects heaplens did not track).",
        "promoted",
        "Bytes of the condemned generations that survived the GC (gcs.survived_bytes: its "
        "moved and surviving ranges; in a sampled recording, at a GC followed by handles "
        "alone, the runtime's promoted bytes).",
        "survival_rate",
        "Promoted bytes / bytes in use before the GC in the condemned generations: gen0 up to "
        "the GC's generation, plus LOH and POH for a gen2 GC. Empty when those sizes are unknown "
        "or zero.",
        "survivors",
        "Bytes of tracked objects alive right after the GC, by the generation they are in "
        "(object_generations). In a sampled recording (run.flags samples-followed) ESTIMATES "
        "between snapshots: each sampled object followed stands for its sample's weight.",
        "top_types",
        "The types with the most live bytes right after any one GC (their peak), and their live "
        "bytes after every GC. In a sampled recording (run.flags samples-followed) ESTIMATES "
        "between snapshots, as the survivors.",
        "pinned_objects",
        "GC roots with the pinning flag at the end of the GC (pinned handles and pinned locals; "
        "gcs.pinned_roots); \xe2\x80\x94 (null in JSON) when the recording does not say.",
        "allocated",
        "Objects and bytes allocated in the GC's interval: after the previous GC began, before "
        "this one began. Exact in a full recording (every allocation counted), and in a sampled "
        "or attach recording in every interval the census of gen0 counted (small objects by the "
        "census, large and pinned ones by the runtime's callback); elsewhere (the first GC "
        "after an attach, recordings without a census) small objects are ESTIMATES "
        "from the allocation samples, and so is what was allocated after the last GC.",
        "census",
        "Sampled and attach recordings: the time the census of gen0 added to the GC's pause "
        "(counting gen0's objects per type at the GC's start, remembering the survivors it left "
        "in gen0 at its end; gcs.census_ns); empty when the interval was not counted.",
        "snapshot_skipped",
        "A snapshot was due at this GC and not built (gcs.snapshot_skipped): \"held\", a "
        "--snapshot policy's, because the collector still held 4 or more snapshots of 64 MiB "
        "or more not yet applied (counter snapshots_skipped_queued); \"detach\", an attach "
        "session's detach was past its bound (counter snapshots_skipped). The GC itself and "
        "its counts are whole.");
}

static void report_plots_write(report_out *o, const report_data *data)
{
    guint n = data->gcs->len;
    json_t *gcs = json_array();
    for (guint i = 0; i < n; i++)
        json_array_append_new(gcs, json_integer(g_array_index(data->gcs, report_gc, i).gc));

    out_raw(o, "\"plots\":{\n\"gc\":");
    out_json(o, gcs);
    out_raw(o, ",\n\"heap_size\":{\"unit\":\"bytes\",\"from\":\"gcs[].size_after\"},\n");
    out_raw(o, "\"pauses\":{\"unit\":\"ns\",\"from\":\"gcs[].pause_ns\"},\n");
    out_raw(o, "\"allocated\":");
    out_json(o, json_pack("{s:s, s:s, s:b}", "unit", "bytes", "from", "gcs[].allocated_bytes",
                          "estimated", data->allocations_estimated && !data->census));
    out_raw(o, ",\n");
    fprintf(o->out, "\"survivors\":{\"unit\":\"bytes\",\"estimated\":%s,\"series\":{",
            data->survivors_estimated ? "true" : "false");
    for (int g = 0; g < REPORT_LIVE_GENS; g++) {
        fprintf(o->out, "%s\n\"%s\":", g ? "," : "", live_gen_names[g]);
        out_json(o, series_json(data->survivors[g], n));
    }
    fprintf(o->out, "}},\n\"top_types\":{\"unit\":\"bytes\",\"rank\":\"peak live bytes\","
            "\"estimated\":%s,\"types\":[", data->survivors_estimated ? "true" : "false");
    for (guint t = 0; t < data->top_types->len; t++) {
        const report_type *type = g_ptr_array_index(data->top_types, t);
        out_raw(o, t ? ",\n" : "\n");
        out_json(o, json_pack("{s:I, s:o, s:I, s:I, s:o}", "type_id", (json_int_t)type->type_id,
                              "type", query_json_string(type->name), "peak_bytes",
                              (json_int_t)type->peak_bytes, "last_bytes",
                              (json_int_t)type->last_bytes, "bytes",
                              series_json(type->bytes, n)));
    }
    out_raw(o, "]}\n}");
}

void report_json_write(const report_data *data, FILE *out, gboolean html_safe)
{
    report_out o = {out, html_safe};
    char version[64];
    g_snprintf(version, sizeof version, "heaplens %s", HEAPLENS_VERSION);

    out_raw(&o, "{\"report\":");
    out_json(&o, json_pack("{s:i, s:s, s:o}", "format", 2, "producer", version, "file",
                           query_json_string(data->file)));
    out_raw(&o, ",\n\"run\":");
    out_json(&o, json_incref(data->run));
    out_raw(&o, ",\n\"counters\":");
    out_json(&o, json_incref(data->counters));
    out_raw(&o, ",\n\"totals\":");
    out_json(&o, report_totals_json(&data->totals));
    out_raw(&o, ",\n\"note\":");
    out_json(&o, query_json_string(data->note));
    out_raw(&o, ",\n\"definitions\":");
    out_json(&o, report_definitions_new());

    out_raw(&o, ",\n\"gcs\":[");
    for (guint i = 0; i < data->gcs->len; i++) {
        out_raw(&o, i ? ",\n" : "\n");
        out_json(&o, report_gc_json(&g_array_index(data->gcs, report_gc, i), data->census));
    }
    out_raw(&o, data->gcs->len ? "\n],\n" : "],\n");

    report_plots_write(&o, data);

    out_raw(&o, ",\n\"snapshots\":");
    out_json(&o, data->snapshots < 0 ? json_null()
                                     : json_pack("{s:I, s:O}", "count", (json_int_t)data->snapshots,
                                                 "last", data->last_snapshot));
    out_raw(&o, ",\n\"snapshot_list\":");
    out_json(&o, json_incref(data->snapshot_list));
    out_raw(&o, ",\n\"checkpoints\":");
    out_json(&o, json_incref(data->checkpoints));
    out_raw(&o, ",\n\"leak_suspects\":");
    out_json(&o, data->leak_suspects ? json_incref(data->leak_suspects) : json_null());
    out_raw(&o, ",\n\"retainers\":");
    out_json(&o, data->retainers ? json_incref(data->retainers) : json_null());
    out_raw(&o, ",\n\"inspections\":");
    out_json(&o, data->inspections ? json_incref(data->inspections) : json_null());
    out_raw(&o, ",\n\"allocations\":");
    out_json(&o, json_incref(data->allocations));
    out_raw(&o, ",\n\"allocation_stacks\":");
    out_json(&o, data->allocation_stacks ? json_incref(data->allocation_stacks) : json_null());
    out_raw(&o, ",\n\"counted_sites\":");
    out_json(&o, data->counted_sites ? json_incref(data->counted_sites) : json_null());
    out_raw(&o, "}\n");
}
