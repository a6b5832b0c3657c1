/* replaced.c — old recordings that `--force` set aside and a killed heaplens left (replaced.h). */
#include "query/replaced.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLACED_INFIX ".heaplens-replaced-"

const char *const query_replaced_suffixes[QUERY_REPLACED_MEMBERS] = {"", "-wal", "-shm",
                                                                     "-journal"};

char *query_replaced_name(const char *path, long pid)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    g_autofree char *hidden = g_strdup_printf(".%s" REPLACED_INFIX "%ld", base, pid);
    return g_build_filename(dir, hidden, NULL);
}

/* Whether `pid` is a heaplens other than this one: a set aside by a live heaplens is being
 * replaced now (its new recording not yet created). A pid reused by another program, or ours
 * (an earlier heaplens of the same pid), owns nothing. */
static gboolean replaced_owner_alive(long pid)
{
    if (pid <= 0 || pid == (long)getpid())
        return FALSE;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
        return FALSE;
    /* killed but not yet waited for (a zombie): it will create nothing */
    g_autofree char *stat_path = g_strdup_printf("/proc/%ld/stat", pid);
    g_autofree char *stat = NULL;
    const char *state = NULL;
    if (g_file_get_contents(stat_path, &stat, NULL, NULL) && (state = strrchr(stat, ')')) &&
        (state[1] == ' ') && (state[2] == 'Z' || state[2] == 'X'))
        return FALSE;
    g_autofree char *comm_path = g_strdup_printf("/proc/%ld/comm", pid);
    g_autofree char *comm = NULL;
    if (!g_file_get_contents(comm_path, &comm, NULL, NULL))
        return TRUE; /* alive, and not known to be another program: never taken */
    g_strchomp(comm);
    return strcmp(comm, "heaplens") == 0;
}

/* The pid of `name` when it is `.BASE.heaplens-replaced-PID` for this `base`, else 0. */
static long replaced_pid_of(const char *name, const char *base)
{
    size_t base_len = strlen(base);
    if (name[0] != '.' || strncmp(name + 1, base, base_len) != 0 ||
        strncmp(name + 1 + base_len, REPLACED_INFIX, strlen(REPLACED_INFIX)) != 0)
        return 0;
    const char *digits = name + 1 + base_len + strlen(REPLACED_INFIX);
    if (!g_ascii_isdigit(digits[0]))
        return 0;
    char *end = NULL;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    return errno == 0 && *end == '\0' ? pid : 0;
}

GPtrArray *query_replaced_find(const char *path)
{
    GPtrArray *found = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    DIR *d = opendir(dir);
    if (!d)
        return found;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = replaced_pid_of(e->d_name, base);
        if (pid > 0 && !replaced_owner_alive(pid))
            g_ptr_array_add(found, g_build_filename(dir, e->d_name, NULL));
    }
    closedir(d);
    return found;
}

gboolean query_replaced_set_exists(const char *path)
{
    struct stat st;
    for (size_t i = 0; i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *member = g_strconcat(path, query_replaced_suffixes[i], NULL);
        if (lstat(member, &st) == 0)
            return TRUE;
    }
    return FALSE;
}

char *query_replaced_members(const char *aside)
{
    GString *members = g_string_new(NULL);
    struct stat st;
    for (size_t i = 1; i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *member = g_strconcat(aside, query_replaced_suffixes[i], NULL);
        if (lstat(member, &st) == 0)
            g_string_append_printf(members, "%s%s", members->len ? ", " : "",
                                   query_replaced_suffixes[i]);
    }
    return g_string_free(members, FALSE);
}

char *query_replaced_hint(const char *path)
{
    g_autoptr(GPtrArray) found = query_replaced_find(path);
    return query_replaced_hint_of(path, found);
}

char *query_replaced_hint_of(const char *path, const GPtrArray *found)
{
    if (found->len == 0)
        return NULL;
    const char *aside = g_ptr_array_index(found, 0);
    g_autofree char *members = query_replaced_members(aside);
    g_autofree char *more =
        found->len > 1 ? g_strdup_printf(" (and %u more like it)", found->len - 1) : g_strdup("");
    /* beside a FILE that exists again, renamed back it would take its place */
    g_autofree char *how =
        query_replaced_set_exists(path)
            ? g_strdup_printf("give it a name of its own%s to keep it, or remove it",
                              *members ? " (each file, with its suffix)" : "")
            : g_strdup_printf("rename it back to %s%s to keep it", path,
                              *members ? " (each file, with its suffix)" : "");
    return g_strdup_printf("%s%s%s%s is the old %s that a heaplens killed while replacing it "
                           "(--force) set aside%s: %s",
                           aside, *members ? " (with its " : "", members, *members ? ")" : "",
                           path, more, how);
}

gboolean query_replaced_rename(const char *from, const char *to, gboolean main_last,
                               size_t *failed)
{
    for (size_t n = 0; n < QUERY_REPLACED_MEMBERS; n++) {
        /* main_last: the members beside the main file first, so that a set put back appears
         * whole, never without the -wal that holds its last pages */
        size_t i = main_last ? QUERY_REPLACED_MEMBERS - 1 - n : n;
        g_autofree char *a = g_strconcat(from, query_replaced_suffixes[i], NULL);
        g_autofree char *b = g_strconcat(to, query_replaced_suffixes[i], NULL);
        if (rename(a, b) == 0 || errno == ENOENT)
            continue;
        int saved = errno;
        for (size_t m = 0; m < n; m++) {
            size_t j = main_last ? QUERY_REPLACED_MEMBERS - 1 - m : m;
            g_autofree char *back_a = g_strconcat(from, query_replaced_suffixes[j], NULL);
            g_autofree char *back_b = g_strconcat(to, query_replaced_suffixes[j], NULL);
            rename(back_b, back_a);
        }
        if (failed)
            *failed = i;
        errno = saved;
        return FALSE;
    }
    return TRUE;
}
