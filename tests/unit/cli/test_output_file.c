/* test_output_file.c — an output file the user names (cli/output_file.h) and the signals that
 * end heaplens while it is written: the temporary file beside it is removed, the file it
 * replaces stays as it was, and heaplens still ends by the signal (a Ctrl-C during a long
 * `report -o page.html` left page.html.tmp-XXXXXX behind). Each case runs in a child that
 * says, over a pipe, when its temporary file exists, and waits there until it is signalled. */
#include "cli/output_file.h"
#include "tests/unit/common/check.h"

#include <dirent.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Files in `dir` whose name starts with `prefix`. */
static int files_count(const char *dir, const char *prefix)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += g_str_has_prefix(e->d_name, prefix);
    if (d)
        closedir(d);
    return n;
}

/* A child writes `path` and is ended by `sig` while its temporary file exists; `ignored`: the
 * child was started with that signal ignored (it must stay so: the child lives on). */
static void signal_case(const char *dir, const char *path, int sig, gboolean ignored)
{
    int ready[2], hold[2];
    CHECK(pipe(ready) == 0 && pipe(hold) == 0);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        close(hold[1]);
        if (ignored)
            signal(sig, SIG_IGN);
        query_output_file file;
        GError *error = NULL;
        if (!query_output_file_open(&file, path, NULL, &error))
            _exit(2);
        fputs("half a page", file.out);
        fflush(file.out);
        struct sigaction now;
        sigaction(sig, NULL, &now);
        char said = ignored && now.sa_handler != SIG_IGN ? 'x' : 'r';
        if (write(ready[1], &said, 1) != 1)
            _exit(3);
        char c;
        (void)!read(hold[0], &c, 1); /* until the parent closes its end */
        query_output_file_release(&file);
        _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    char said = 0;
    CHECK(read(ready[0], &said, 1) == 1 && said == 'r');
    CHECK(files_count(dir, "page.html.tmp-") == 1);
    kill(child, sig);
    if (ignored)
        close(hold[1]); /* the signal did nothing: the child ends on its own */
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    if (ignored)
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    else
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig);
    if (!ignored)
        close(hold[1]);
    close(ready[0]);
    CHECK(files_count(dir, "page.html.tmp-") == 0);
    gchar *text = NULL;
    CHECK(g_file_get_contents(path, &text, NULL, NULL) && strcmp(text, "the old page\n") == 0);
    g_free(text);
}

int main(void)
{
    char *dir = g_dir_make_tmp("heaplens-output-file-XXXXXX", NULL);
    CHECK(dir != NULL);
    if (!dir)
        return 1;
    char *path = g_build_filename(dir, "page.html", NULL);
    CHECK(g_file_set_contents(path, "the old page\n", -1, NULL));

    static const int ending[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < G_N_ELEMENTS(ending); i++)
        signal_case(dir, path, ending[i], FALSE);
    signal_case(dir, path, SIGINT, TRUE); /* `nohup`, `&` in a script: still ignored */

    /* Written whole: renamed into place, and the signal's own disposition is back. */
    query_output_file file;
    GError *error = NULL;
    CHECK(query_output_file_open(&file, path, NULL, &error));
    fputs("the new page\n", file.out);
    CHECK(query_output_file_commit(&file, &error));
    query_output_file_release(&file);
    struct sigaction now;
    CHECK(sigaction(SIGINT, NULL, &now) == 0 && now.sa_handler == SIG_DFL);
    gchar *text = NULL;
    CHECK(g_file_get_contents(path, &text, NULL, NULL) && strcmp(text, "the new page\n") == 0);
    g_free(text);
    CHECK(files_count(dir, "page.html.tmp-") == 0);

    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
