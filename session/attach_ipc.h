/* attach_ipc.h — the .NET diagnostic IPC client of `heaplens attach`: find a process's
 * diagnostic socket and send it AttachProfiler (dotnet/diagnostics
 * documentation/design-docs/ipc-protocol.md; dotnet/runtime src/native/eventpipe/ds-protocol.c
 * and ds-profiler-protocol.c). Errors are one line, meant to follow "heaplens: ". */
#ifndef HEAPLENS_SESSION_ATTACH_IPC_H
#define HEAPLENS_SESSION_ATTACH_IPC_H

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

/* HRESULTs an attach may answer with (corerror.h, ds-types.h). */
#define ATTACH_E_PROFILER_ALREADY_ACTIVE 0x8013136Au
#define ATTACH_E_PROFILER_NOT_ATTACHABLE 0x80131368u
#define ATTACH_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC 0x80131379u
#define ATTACH_E_PROFILER_CANCEL_ACTIVATION 0x80131375u
#define ATTACH_E_RUNTIME_UNINITIALIZED 0x80131371u
#define ATTACH_E_IPC_UNKNOWN_COMMAND 0x80131385u
#define ATTACH_E_IPC_NOT_YET_AVAILABLE 0x8013135Bu
#define ATTACH_E_NOTSUPPORTED 0x80131515u

/* Finds `dotnet-diagnostic-NSPID-*-socket` of process `pid`: in its TMPDIR (from
 * /proc/PID/environ), then /tmp, each seen through /proc/PID/root first (a process in a
 * container: NSPID is its pid there). Fails with the refusal users need: no such process,
 * another user's process, not a .NET process. */
char *attach_ipc_find_socket(pid_t pid, GError **error);

/* The environment process `pid` started with (/proc/PID/environ), as NULL-terminated
 * "NAME=VALUE" strings (g_strfreev); NULL when it cannot be read. */
char **attach_ipc_process_environ(pid_t pid);

/* Sends AttachProfiler and waits for the answer (at most timeout_ms plus 10 s). TRUE when the
 * runtime answered: *hresult is its result (0 = attached). */
gboolean attach_ipc_attach_profiler(pid_t pid, const char *socket_path, uint32_t timeout_ms,
                                    const char *clsid, const char *profiler_path,
                                    const void *client_data, size_t client_data_size,
                                    uint32_t *hresult, GError **error);

/* One line saying why an attach answered `hresult` failed. */
char *attach_ipc_refusal(pid_t pid, uint32_t hresult, uint32_t timeout_ms);

#endif /* HEAPLENS_SESSION_ATTACH_IPC_H */
