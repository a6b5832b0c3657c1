/* report_html.c — the self-contained report page: report_page/report.html with its
 * placeholders filled in. No network access, no external file: the CSS, the JS and the data
 * are all inside the page, and the JS draws the plots as inline SVG. */
#include "report/report.h"

#include <string.h>

/* The page's title: "heaplens report — FILE", escaped for HTML. */
static void title_write(const report_data *data, FILE *out)
{
    g_autofree char *base = g_path_get_basename(data->file);
    g_autofree char *escaped = g_markup_escape_text(base, -1);
    fprintf(out, "heaplens report \xe2\x80\x94 %s", escaped);
}

/* The placeholders of report.html, each "{{name}}" on its own. */
typedef struct report_slot {
    const char *name;
    void (*write)(const report_data *data, FILE *out);
} report_slot;

static void css_write(const report_data *data, FILE *out)
{
    (void)data;
    fputs(report_page_css, out);
}

static void js_write(const report_data *data, FILE *out)
{
    (void)data;
    fputs(report_page_js, out);
}

static void data_write(const report_data *data, FILE *out)
{
    report_json_write(data, out, TRUE);
}

static void generator_write(const report_data *data, FILE *out)
{
    (void)data;
    fprintf(out, "heaplens %s", HEAPLENS_VERSION);
}

static const report_slot report_slots[] = {
    {"title", title_write},
    {"generator", generator_write},
    {"css", css_write},
    {"js", js_write},
    {"data", data_write},
};

void report_html_write(const report_data *data, FILE *out)
{
    const char *text = report_page_template;
    for (;;) {
        const char *open = strstr(text, "{{");
        if (!open) {
            fputs(text, out);
            return;
        }
        fwrite(text, 1, (size_t)(open - text), out);
        const char *close = strstr(open + 2, "}}");
        const report_slot *slot = NULL;
        size_t name_len = close ? (size_t)(close - open - 2) : 0;
        for (size_t i = 0; close && i < G_N_ELEMENTS(report_slots); i++) {
            const char *name = report_slots[i].name;
            if (strlen(name) == name_len && strncmp(open + 2, name, name_len) == 0)
                slot = &report_slots[i];
        }
        if (!slot) { /* not a placeholder: copy as is */
            fputs("{{", out);
            text = open + 2;
            continue;
        }
        slot->write(data, out);
        text = close + 2;
    }
}
