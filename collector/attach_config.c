/* attach_config.c — see attach_config.h. Runs inside InitializeForAttach: no allocation. */
#include "collector/attach_config.h"

#include <string.h>

static bool copy_value(char *out, size_t size, const char *value, size_t len) {
    if (len == 0 || len >= size || memchr(value, 0, len))
        return false;
    memcpy(out, value, len);
    out[len] = 0;
    return true;
}

bool hl_attach_config_parse(const void *data, size_t size, hl_attach_config *out) {
    memset(out, 0, sizeof *out);
    const char *text = data;
    size_t magic = strlen(HL_ATTACH_CONFIG_MAGIC);
    if (!data || size > HL_ATTACH_CONFIG_MAX || size < magic + 1 ||
        memcmp(text, HL_ATTACH_CONFIG_MAGIC, magic) != 0 || text[magic] != '\n')
        return false;
    for (size_t at = magic + 1; at < size;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', size - at);
        size_t len = nl ? (size_t)(nl - line) : size - at;
        at += len + 1;
        if (len > 7 && memcmp(line, "socket=", 7) == 0) {
            if (!copy_value(out->socket_path, sizeof out->socket_path, line + 7, len - 7))
                return false;
        } else if (len == 11 && memcmp(line, "strings=off", 11) == 0) {
            out->no_strings = true;
        } else if (len == 10 && memcmp(line, "stacks=off", 10) == 0) {
            out->no_stacks = true;
        } else if (len == 10 && memcmp(line, "census=off", 10) == 0) {
            out->census = HL_CENSUS_OFF;
        } else if (len == 9 && memcmp(line, "census=on", 9) == 0) {
            out->census = HL_CENSUS_ON;
        } else if (len > 9 && memcmp(line, "snapshot=", 9) == 0) {
            if (!copy_value(out->snapshot_policy, sizeof out->snapshot_policy, line + 9, len - 9))
                return false;
        } else if (len > 6 && memcmp(line, "count=", 6) == 0) {
            if (!copy_value(out->count, sizeof out->count, line + 6, len - 6))
                return false;
        }
    }
    return out->socket_path[0] == '/';
}
