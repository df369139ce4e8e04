/*
 * cri-log: a container's log writer in the CRI format, as containerd-shim and conmon write /var/log/pods/.../N.log.
 *
 * Usage: cri-log LOGFILE   with the container's stdout pipe on fd 3 and its stderr pipe on fd 4;
 *        cri-log -t [-i] LOGFILE   with a `tty: true` container's pty master on fd 3 (its output is stdout, written
 *        as it comes so an attached terminal sees a prompt at once) and with -i the container's stdin FIFO on fd 4,
 *        relayed to the terminal (at its end an EOF character: stdinOnce).
 * Each line becomes `<RFC3339Nano UTC> stdout|stderr F <line>`; a line longer than 16 KiB is cut into `P` (partial)
 * lines; at end of file the unfinished rest of a stream is written as an `F` line. The time is when the line's end was
 * read. Runs in its own session beside the container's shim and exits once both pipes are closed (every process of
 * the container is gone), so the output of a container that outlives the kubelet is still recorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE (16 * 1024)

struct stream {
    int fd;
    const char *name;
    char buf[MAX_LINE];
    size_t len;
};

static int out_fd;

static void write_all(const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(out_fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return; /* the log file is gone (Pod removed): drop the output, keep draining the pipes */
        }
        p += w;
        n -= (size_t)w;
    }
}

static void stamp(char *out, size_t size) {
    struct timespec ts;
    struct tm tm;
    char frac[16];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(frac, sizeof frac, "%09ld", ts.tv_nsec);
    int end = 9;
    while (end > 0 && frac[end - 1] == '0') end--; /* Go's RFC3339Nano drops trailing zeros */
    frac[end] = 0;
    size_t n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, size - n, "%s%sZ", end ? "." : "", frac);
}

static void emit(struct stream *s, const char *data, size_t n, char tag) {
    char head[96];
    char ts[48];
    stamp(ts, sizeof ts);
    int h = snprintf(head, sizeof head, "%s %s %c ", ts, s->name, tag);
    /* one write per line where it fits, so lines of the two streams never interleave mid-line */
    char line[sizeof head + MAX_LINE + 1];
    memcpy(line, head, (size_t)h);
    memcpy(line + h, data, n);
    line[h + n] = '\n';
    write_all(line, (size_t)h + n + 1);
}

static void feed(struct stream *s, const char *data, size_t n) {
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (s->len + take > MAX_LINE) { /* too long for one line: a partial line, the rest follows */
            size_t room = MAX_LINE - s->len;
            memcpy(s->buf + s->len, data, room);
            emit(s, s->buf, MAX_LINE, 'P');
            s->len = 0;
            data += room;
            n -= room;
            continue;
        }
        memcpy(s->buf + s->len, data, take);
        s->len += take;
        if (!nl) {
            if (s->len == MAX_LINE) {
                emit(s, s->buf, MAX_LINE, 'P');
                s->len = 0;
            }
            return;
        }
        emit(s, s->buf, s->len, 'F');
        s->len = 0;
        data += take + 1;
        n -= take + 1;
    }
}

static void flush_partial(struct stream *s) {
    if (s->len) emit(s, s->buf, s->len, 'P');
    s->len = 0;
}

static void write_to(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

int main(int argc, char **argv) {
    int tty = 0, input = 0, i = 1;
    for (; i < argc - 1; i++) {
        if (strcmp(argv[i], "-t") == 0) tty = 1;
        else if (strcmp(argv[i], "-i") == 0) input = 1;
        else break;
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: cri-log LOGFILE (stdout pipe on fd 3, stderr pipe on fd 4)\n"
                        "       cri-log -t [-i] LOGFILE (pty master on fd 3, with -i its input from fd 4)\n");
        return 2;
    }
    setsid(); /* its own session: a signal to the container's process group leaves the output to be drained */
    out_fd = open(argv[i], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (out_fd < 0) {
        perror(argv[i]);
        return 1;
    }
    static struct stream streams[2] = {{3, "stdout", {0}, 0}, {4, "stderr", {0}, 0}};
    struct pollfd fds[2] = {{3, POLLIN, 0}, {4, POLLIN, 0}};
    if (tty && !input) fds[1].fd = -1;
    static char chunk[64 * 1024];
    while (fds[0].fd >= 0 || (!tty && fds[1].fd >= 0)) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t r = read(fds[k].fd, chunk, sizeof chunk);
            if (r < 0 && errno == EINTR) continue;
            if (tty && k == 1) { /* terminal input: relay to the pty; at its end an EOF character (stdinOnce) */
                if (r <= 0) {
                    write_to(3, "\x04", 1);
                    fds[1].fd = -1;
                } else {
                    write_to(3, chunk, (size_t)r);
                }
                continue;
            }
            if (r <= 0) { /* EOF, or EIO from a pty master once every terminal user is gone */
                if (streams[k].len) emit(&streams[k], streams[k].buf, streams[k].len, 'F');
                streams[k].len = 0;
                close(fds[k].fd);
                fds[k].fd = -1;
                continue;
            }
            feed(&streams[k], chunk, (size_t)r);
            if (tty) flush_partial(&streams[k]); /* a prompt without its newline must reach attach now */
        }
    }
    return 0;
}
