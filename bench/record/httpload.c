/* httpload — the service benchmark's client (bench/record/run.py --case service; not a test).
 *
 *   httpload PORT REQUESTS [CONNECTIONS]
 *
 * Sends REQUESTS requests GET /orders/{50 + i % 200} (examples/WebApi) to 127.0.0.1:PORT over
 * CONNECTIONS (default 4) keep-alive HTTP/1.1 connections, one thread each, each sending its
 * next request once the answer to the last one was read whole. Prints one line:
 *
 *   httpload: requests=N ok=N non2xx=N wall_ms=X
 *
 * and exits 0 when every request was answered 2xx, 1 otherwise (one line on stderr).
 *
 * Why C: the Python client it replaces took a CPU of its own per request (a connection per
 * request, http.client), on a machine of 2 cores that the server shares with it: the server's
 * requests/s then followed the client's share of the CPUs, ±10% between identical runs. This
 * one costs a few microseconds of CPU per request and can be pinned to a CPU of its own. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { READ_BUF = 64 * 1024, MAX_CONNECTIONS = 64 };

static int g_port;
static long g_requests;
static atomic_long g_next;  /* the next request's index */
static atomic_long g_ok;    /* answered 2xx */
static atomic_long g_other; /* answered otherwise */
static atomic_int g_failed; /* a connection failed: the others stop too */
static char g_error[256];   /* the first failure, for stderr */
static pthread_mutex_t g_error_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct conn {
    int fd;
    char buf[READ_BUF];
    size_t pos, len; /* unread bytes are buf[pos, len) */
} conn;

static void fail(const char *what) {
    pthread_mutex_lock(&g_error_lock);
    if (!g_error[0])
        snprintf(g_error, sizeof g_error, "%s", what);
    pthread_mutex_unlock(&g_error_lock);
    atomic_store(&g_failed, 1);
}

/* More bytes into the buffer (compacted first): false at end of stream or on error. */
static bool conn_fill(conn *c) {
    if (c->pos > 0) {
        memmove(c->buf, c->buf + c->pos, c->len - c->pos);
        c->len -= c->pos;
        c->pos = 0;
    }
    if (c->len == sizeof c->buf)
        return false; /* a line longer than the buffer: not WebApi's answer */
    for (;;) {
        ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (n > 0) {
            c->len += (size_t)n;
            return true;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return false;
    }
}

/* The next line without its CRLF, NUL-terminated in place; NULL at end of stream. */
static char *conn_line(conn *c) {
    for (;;) {
        char *start = c->buf + c->pos;
        char *lf = memchr(start, '\n', c->len - c->pos);
        if (lf) {
            *lf = 0;
            if (lf > start && lf[-1] == '\r')
                lf[-1] = 0;
            c->pos = (size_t)(lf + 1 - c->buf);
            return start;
        }
        if (!conn_fill(c))
            return NULL;
    }
}

/* Reads and drops n bytes of body. */
static bool conn_skip(conn *c, unsigned long long n) {
    while (n > 0) {
        if (c->pos == c->len && !conn_fill(c))
            return false;
        size_t have = c->len - c->pos;
        size_t take = n < have ? (size_t)n : have;
        c->pos += take;
        n -= take;
    }
    return true;
}

/* One whole answer: its status, or -1 if the stream ended or was not HTTP/1.1 as expected. */
static int conn_answer(conn *c) {
    char *line = conn_line(c);
    int status;
    if (!line || sscanf(line, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    unsigned long long length = 0;
    bool chunked = false, have_length = false;
    while ((line = conn_line(c)) && *line) {
        if (strncasecmp(line, "Content-Length:", 15) == 0) {
            length = strtoull(line + 15, NULL, 10);
            have_length = true;
        } else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strstr(line, "chunked")) {
            chunked = true;
        }
    }
    if (!line)
        return -1;
    if (chunked) {
        for (;;) {
            char *size_line = conn_line(c);
            if (!size_line)
                return -1;
            unsigned long long size = strtoull(size_line, NULL, 16);
            if (size == 0) { /* the last chunk, then trailers up to an empty line */
                while ((line = conn_line(c)) && *line) {
                }
                return line ? status : -1;
            }
            if (!conn_skip(c, size) || !conn_line(c)) /* the chunk and its CRLF */
                return -1;
        }
    }
    if (!have_length)
        return -1; /* an answer closed by the end of the stream: not keep-alive */
    return conn_skip(c, length) ? status : -1;
}

static int conn_open(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static void *client(void *arg) {
    (void)arg;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        fail("out of memory");
        return NULL;
    }
    c->fd = conn_open();
    if (c->fd < 0) {
        fail("cannot connect");
        free(c);
        return NULL;
    }
    while (!atomic_load(&g_failed)) {
        long i = atomic_fetch_add(&g_next, 1);
        if (i >= g_requests)
            break;
        char req[128];
        int n = snprintf(req, sizeof req,
                         "GET /orders/%ld HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", 50 + i % 200,
                         g_port);
        if (!send_all(c->fd, req, (size_t)n)) {
            fail("cannot send a request");
            break;
        }
        int status = conn_answer(c);
        if (status < 0) {
            fail("a connection ended before its answer");
            break;
        }
        atomic_fetch_add(status >= 200 && status < 300 ? &g_ok : &g_other, 1);
    }
    close(c->fd);
    free(c);
    return NULL;
}

static bool parse_long(const char *text, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    long port, requests, connections = 4;
    if (argc < 3 || argc > 4 || !parse_long(argv[1], 1, 65535, &port) ||
        !parse_long(argv[2], 1, 1000000000L, &requests) ||
        (argc == 4 && !parse_long(argv[3], 1, MAX_CONNECTIONS, &connections))) {
        fprintf(stderr, "usage: httpload PORT REQUESTS [CONNECTIONS (1-%d)]\n", MAX_CONNECTIONS);
        return 1;
    }
    g_port = (int)port;
    g_requests = requests;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t threads[MAX_CONNECTIONS];
    long started = 0;
    for (; started < connections; started++)
        if (pthread_create(&threads[started], NULL, client, NULL) != 0) {
            fail("cannot start a client thread");
            break;
        }
    for (long i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    long ok = atomic_load(&g_ok), other = atomic_load(&g_other);
    printf("httpload: requests=%ld ok=%ld non2xx=%ld wall_ms=%.1f\n", ok + other, ok, other, wall_ms);
    if (atomic_load(&g_failed)) {
        fprintf(stderr, "httpload: %s\n", g_error);
        return 1;
    }
    if (ok != requests) {
        fprintf(stderr, "httpload: %ld of %ld requests answered 2xx\n", ok, requests);
        return 1;
    }
    return 0;
}
