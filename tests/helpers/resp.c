/*
 * resp.c - one command, one reply, over a fresh loopback connection (see
 * resp.h).
 */
#include "helpers/resp.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define RESP_ARGS_MAX 32

struct rd {
	int fd;
	char buf[4096];
	size_t pos, len;
};

static int rd_byte(struct rd *r)
{
	ssize_t n;

	if (r->pos == r->len) {
		n = read(r->fd, r->buf, sizeof(r->buf));
		if (n <= 0)
			return -1;
		r->pos = 0;
		r->len = (size_t)n;
	}
	return (unsigned char)r->buf[r->pos++];
}

/* One "\r\n"-terminated line into @line (without its CRLF). */
static int rd_line(struct rd *r, char *line, size_t cap)
{
	size_t n = 0;
	int c;

	while ((c = rd_byte(r)) >= 0) {
		if (c == '\n') {
			if (n && line[n - 1] == '\r')
				n--;
			line[n] = '\0';
			return 0;
		}
		if (n + 1 < cap)
			line[n++] = (char)c;
	}
	return -1;
}

struct out {
	char *p;
	size_t cap, len;
};

static void put(struct out *o, const char *s, size_t n)
{
	while (n-- && o->len + 1 < o->cap)
		o->p[o->len++] = *s++;
	o->p[o->len] = '\0';
}

/* One reply (nested arrays up to a depth bound) in flat form. */
static int rd_reply(struct rd *r, struct out *o, int depth)
{
	char line[512];
	long long n, i;
	int c;

	if (depth > 8 || rd_line(r, line, sizeof(line)) != 0 || !line[0])
		return -1;
	n = strtoll(line + 1, NULL, 10);
	switch (line[0]) {
	case '+':
	case '-':
	case ':':
		put(o, line, strlen(line));
		put(o, "\n", 1);
		return 0;
	case '$':
		if (n < 0) {
			put(o, "(nil)\n", 6);
			return 0;
		}
		for (i = 0; i < n + 2; i++) { /* the bytes and their CRLF */
			if ((c = rd_byte(r)) < 0)
				return -1;
			if (i < n) {
				char ch = (char)c;
				put(o, &ch, 1);
			}
		}
		put(o, "\n", 1);
		return 0;
	case '*':
		put(o, line, strlen(line));
		put(o, "\n", 1);
		for (i = 0; i < n; i++)
			if (rd_reply(r, o, depth + 1) != 0)
				return -1;
		return 0;
	}
	return -1;
}

static int dial(int port)
{
	struct timeval tv = { .tv_sec = 1 };
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* SO_SNDTIMEO bounds connect() too on Linux. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int resp_command(int port, int argc, const char *const *argv, char *out,
		 size_t cap)
{
	size_t len[RESP_ARGS_MAX];
	int i;

	if (argc > RESP_ARGS_MAX)
		return -1;
	for (i = 0; i < argc; i++)
		len[i] = strlen(argv[i]);
	return resp_commandv(port, argc, argv, len, out, cap);
}

int resp_commandv(int port, int argc, const char *const *argv,
		  const size_t *argvlen, char *out, size_t cap)
{
	struct out o = { out, cap, 0 };
	struct rd *r;
	char head[32];
	int i, rc = -1;

	if (cap)
		out[0] = '\0';
	r = calloc(1, sizeof(*r));
	if (!r || (r->fd = dial(port)) < 0) {
		free(r);
		return -1;
	}
	snprintf(head, sizeof(head), "*%d\r\n", argc);
	if (send_all(r->fd, head, strlen(head)) != 0)
		goto done;
	for (i = 0; i < argc; i++) {
		snprintf(head, sizeof(head), "$%zu\r\n", argvlen[i]);
		if (send_all(r->fd, head, strlen(head)) != 0 ||
		    send_all(r->fd, argv[i], argvlen[i]) != 0 ||
		    send_all(r->fd, "\r\n", 2) != 0)
			goto done;
	}
	rc = rd_reply(r, &o, 0);
done:
	close(r->fd);
	free(r);
	return rc;
}

int resp_simple(int port, const char *cmd, char *out, size_t cap)
{
	const char *argv[RESP_ARGS_MAX];
	char copy[512], *save = NULL, *w;
	int argc = 0;

	snprintf(copy, sizeof(copy), "%s", cmd);
	for (w = strtok_r(copy, " ", &save); w && argc < RESP_ARGS_MAX;
	     w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	return resp_command(port, argc, argv, out, cap);
}
