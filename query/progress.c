/* progress.c — progress lines on stderr (progress.h). */
#include "query/progress.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* CPU time (user + system) of the process so far. */
static int64_t cpu_us(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

struct query_progress {
    char *command;
    gboolean forced;
    gboolean tty;
    gboolean shown;      /* a line is on the terminal */
    int64_t start_us;    /* of the command */
    int64_t step_us;     /* of the current step */
    int64_t last_us;     /* last line printed */
    int64_t step_cpu_us; /* CPU time of the process when the step began */
    char *step;
};

query_progress *query_progress_new(const char *command, gboolean forced)
{
    query_progress *p = g_new0(query_progress, 1);
    p->command = g_strdup(command);
    p->forced = forced;
    p->tty = isatty(STDERR_FILENO);
    p->start_us = p->step_us = g_get_monotonic_time();
    return p;
}

static void line_clear(query_progress *p)
{
    if (p->shown && p->tty)
        fputs("\r\033[K", stderr);
    p->shown = FALSE;
}

void query_progress_update(query_progress *p, const char *step, uint64_t done, uint64_t total)
{
    if (!p || !(p->forced || p->tty))
        return;
    int64_t now = g_get_monotonic_time();
    if (!p->step || strcmp(p->step, step) != 0) {
        if (p->step)
            query_progress_step_done(p);
        g_free(p->step);
        p->step = g_strdup(step);
        p->step_us = now;
        if (p->forced)
            p->step_cpu_us = cpu_us();
    }
    if (now - p->start_us < 500000 || now - p->last_us < 100000)
        return;
    p->last_us = now;
    if (!p->tty) /* --progress into a file or pipe: step lines only */
        return;
    if (total > 0)
        fprintf(stderr, "\r\033[Kheaplens: %s: %s %d%%", p->command, step,
                (int)(done >= total ? 100 : done * 100 / total));
    else
        fprintf(stderr, "\r\033[Kheaplens: %s: %s", p->command, step);
    fflush(stderr);
    p->shown = TRUE;
}

void query_progress_step_done(query_progress *p)
{
    if (!p || !p->step)
        return;
    if (p->forced) {
        line_clear(p);
        fprintf(stderr, "heaplens: %s: %s: %.2f s (cpu %.2f s)\n", p->command, p->step,
                (double)(g_get_monotonic_time() - p->step_us) / 1e6,
                (double)(cpu_us() - p->step_cpu_us) / 1e6);
    }
    g_clear_pointer(&p->step, g_free);
}

void query_progress_done(query_progress *p)
{
    if (!p)
        return;
    query_progress_step_done(p);
    line_clear(p);
    fflush(stderr);
}

void query_progress_free(query_progress *p)
{
    if (!p)
        return;
    query_progress_done(p);
    g_free(p->command);
    g_free(p);
}

void query_progress_analysis(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
    static const struct {
        const char *phase, *step;
    } names[] = {
        {"search", "searching the graph"},
        {"predecessors", "listing predecessors"},
        {"dominators", "computing dominators"},
        {"sizes", "adding up retained sizes"},
    };
    const char *step = phase;
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        if (strcmp(names[i].phase, phase) == 0)
            step = names[i].step;
    query_progress_update(ctx, step, done, total);
}
