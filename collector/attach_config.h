/* attach_config.h — what `heaplens attach` tells the collector through the AttachProfiler
 * message's client data (the runtime hands it to InitializeForAttach verbatim).
 *
 * A small versioned text, one key=value a line, unknown keys ignored:
 *   heaplens-attach 1
 *   socket=/tmp/heaplens-XXXXXX/collector.sock     where the writer listens (required)
 *   snapshot=induced                              the --snapshot policy (optional)
 *   count=NS.Type.*;NS.Other.M                    the --count patterns, ';'-joined (optional)
 *   strings=off                                   --no-strings (optional)
 *   stacks=off                                    --stacks off: no allocation samples (optional)
 *   census=off                                    --census off (or on): the census of gen0;
 *                                                 absent: HEAPLENS_CENSUS of the target's
 *                                                 environment decides (optional)
 * session/attach_ipc.c writes it; a text of another version is refused (the attach fails). */
#ifndef HEAPLENS_ATTACH_CONFIG_H
#define HEAPLENS_ATTACH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define HL_ATTACH_CONFIG_MAGIC "heaplens-attach 1"
/* Where a collector the runtime kept after `attach --count` listens for the same client data
 * (collector/resident.h): the target's uid and pid. */
#define HL_RESIDENT_SOCKET_FMT "/tmp/heaplens-%u/resident.%ld.sock"
#define HL_ATTACH_CONFIG_MAX 4096

/* `--census on|off` of record and attach: given, it wins over HEAPLENS_CENSUS. */
typedef enum hl_census_choice { HL_CENSUS_DEFAULT, HL_CENSUS_ON, HL_CENSUS_OFF } hl_census_choice;

typedef struct hl_attach_config {
    char socket_path[256];
    char snapshot_policy[256]; /* empty: the default (HL_SNAPSHOT_POLICY_MAX) */
    char count[2048];         /* --count patterns, ';'-joined; empty: not counting */
    bool no_strings;          /* strings=off: snapshots keep no characters of strings */
    bool no_stacks;           /* stacks=off: no allocation samples (on .NET 8/9 the objects are
                               * then followed by handles: collector/follow.h) */
    hl_census_choice census;  /* census=on|off; HL_CENSUS_DEFAULT when absent */
} hl_attach_config;

/* Parses the client data; false when it is not ours, of another version, or lacks the socket. */
bool hl_attach_config_parse(const void *data, size_t size, hl_attach_config *out);

#endif /* HEAPLENS_ATTACH_CONFIG_H */
