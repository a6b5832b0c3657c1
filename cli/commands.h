/* commands.h — the `heaplens` subcommands.
 *
 * Every handler is called by main.c with argv[0] = the command name and the command's arguments
 * after it, and returns the process exit status: 0 on success, 1 on a user error (after printing
 * one line "heaplens: ..." on stderr). The table in main.c lists each with a one-line summary and
 * its usage text.
 */
#ifndef HEAPLENS_COMMANDS_H
#define HEAPLENS_COMMANDS_H

#include <glib.h>
#include <stdio.h>

int cmd_record(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_snapshots(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_gcs(int argc, char **argv);
int cmd_allocations(int argc, char **argv);
int cmd_survivors(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_retention(int argc, char **argv);
int cmd_roots(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_check(int argc, char **argv);

/* Prints the usage text of command `name` from the table to `out`. FALSE if there is no such
 * command. A handler that sees --help calls this and returns 0. */
gboolean query_command_help(const char *name, FILE *out);

#endif /* HEAPLENS_COMMANDS_H */
