/*
 * kv_redis.c - redis-server over loopback as a baseline: the server is
 * started on a free 127.0.0.1 port with persistence off and stopped by
 * pid; the commands go through hiredis, one round trip each, or pipelined
 * (all commands of a batch written, then all replies read).
 *
 * DELIFEQ is the Lua compare-and-delete every Redis lock library uses
 * (Redis 7 has no native command for it), run by EVALSHA.
 */
#include <hiredis/hiredis.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kv.h"

const char bench_redis_delifeq_lua[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

/* @sock: also listen on this unix socket (NULL: TCP only). */
static pid_t spawn(int port, const char *sock)
{
	char arg[16];
	pid_t pid;

	pid_t parent = getpid();

	snprintf(arg, sizeof(arg), "%d", port);
	pid = fork();
	if (pid == 0) {
		int null;

		/* A bench killed before it stops the server (kill -9, a
		 * failed --check step) takes the server with it, as the
		 * tests' server does (tests/helpers/redis_server.c). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(127);
		null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		if (sock)
			execlp("redis-server", "redis-server", "--port", arg,
			       "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", "--databases", "16",
			       "--unixsocket", sock, "--unixsocketperm", "700",
			       (char *)NULL);
		else
			execlp("redis-server", "redis-server", "--port", arg,
			       "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", "--databases", "16",
			       (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Up to 5 s for the server to answer PING. Return: 0 or -1. */
static int wait_ready(struct bench_redis *r)
{
	struct timespec pause = { .tv_nsec = 20000000 };

	for (int i = 0; i < 250; i++) {
		redisContext *c;
		int st;

		if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
			bench_cleanup_forget_pid(r->pid);
			r->pid = 0;
			fprintf(stderr, "# redis-server exited with %d%s\n",
				WIFEXITED(st) ? WEXITSTATUS(st) : -1,
				WIFEXITED(st) && WEXITSTATUS(st) == 127
					? " (not installed?)"
					: "");
			return -1;
		}
		c = redisConnect("127.0.0.1", r->port);
		if (c && !c->err) {
			redisReply *rep = redisCommand(c, "PING");
			int ok = rep && rep->type == REDIS_REPLY_STATUS;

			freeReplyObject(rep);
			redisFree(c);
			if (ok)
				return 0;
		} else {
			redisFree(c);
		}
		nanosleep(&pause, NULL);
	}
	fprintf(stderr, "# redis-server did not answer on port %d\n", r->port);
	return -1;
}

int bench_redis_start(struct bench_redis *r)
{
	return bench_redis_start_unix(r, NULL);
}

int bench_redis_start_unix(struct bench_redis *r, const char *sock)
{
	r->pid = 0;
	r->port = free_port();
	if (r->port < 0) {
		fprintf(stderr, "# no free loopback port for redis-server\n");
		return -1;
	}
	if (sock && bench_cleanup_file(sock) != 0)
		return -1;
	r->pid = spawn(r->port, sock);
	if (r->pid < 0) {
		r->pid = 0;
		fprintf(stderr, "# fork: %s\n", strerror(errno));
		return -1;
	}
	bench_cleanup_pid(r->pid);
	if (wait_ready(r) == 0)
		return 0;
	bench_redis_stop(r);
	return -1;
}

void bench_redis_stop(struct bench_redis *r)
{
	if (r->pid <= 0)
		return;
	kill(r->pid, SIGTERM);
	waitpid(r->pid, NULL, 0);
	bench_cleanup_forget_pid(r->pid);
	r->pid = 0;
}

/*
 * The commands.
 */
struct rconn {
	redisContext *c;
	char sha[48];
};

#define R(kv) ((struct rconn *)(kv)->impl)

/* Appends command @cmd on key @id to the output buffer. */
static int append(struct bench_kv *kv, enum bench_cmd cmd, uint32_t id,
		  const void *v, size_t n)
{
	redisContext *c = R(kv)->c;
	const char *k = bench_key(kv->keys, id);
	size_t kl = BENCH_KEY_LEN;

	switch (cmd) {
	case BCMD_GET:
		return redisAppendCommand(c, "GET %b", k, kl);
	case BCMD_SET:
		return redisAppendCommand(c, "SET %b %b", k, kl, v, n);
	case BCMD_SETNX:
		return redisAppendCommand(c, "SETNX %b %b", k, kl, v, n);
	case BCMD_GETSET:
		return redisAppendCommand(c, "GETSET %b %b", k, kl, v, n);
	case BCMD_DEL:
		return redisAppendCommand(c, "DEL %b", k, kl);
	case BCMD_DELIFEQ:
		return redisAppendCommand(c, "EVALSHA %s 1 %b %b", R(kv)->sha,
					  k, kl, v, n);
	default:
		return redisAppendCommand(c, "INCR %b", k, kl);
	}
}

/* A reply as shmkv would answer the command. */
static int answer(struct bench_kv *kv, enum bench_cmd cmd, redisReply *r)
{
	if (!r)
		return -EIO;
	if (r->type == REDIS_REPLY_ERROR)
		return -EPROTO;
	switch (cmd) {
	case BCMD_GET:
	case BCMD_GETSET:
		if (r->type == REDIS_REPLY_NIL)
			return 0;
		return bench_kv_give(kv, r->str, r->len);
	case BCMD_SET:
		return r->type == REDIS_REPLY_STATUS ? 1 : -EPROTO;
	case BCMD_INCR:
		kv->incr_result = r->integer;
		return 0;
	default:
		return r->type == REDIS_REPLY_INTEGER ? (int)r->integer
						      : -EPROTO;
	}
}

static int reply(struct bench_kv *kv, enum bench_cmd cmd)
{
	redisReply *r = NULL;
	int rc;

	if (redisGetReply(R(kv)->c, (void **)&r) != REDIS_OK)
		return -EIO;
	rc = answer(kv, cmd, r);
	freeReplyObject(r);
	return rc;
}

static int one(struct bench_kv *kv, enum bench_cmd cmd, uint32_t id,
	       const void *v, size_t n)
{
	if (append(kv, cmd, id, v, n) != REDIS_OK)
		return -EIO;
	return reply(kv, cmd);
}

BENCH_KV_FN(r_get, one, BCMD_GET)
BENCH_KV_FN(r_set, one, BCMD_SET)
BENCH_KV_FN(r_setnx, one, BCMD_SETNX)
BENCH_KV_FN(r_getset, one, BCMD_GETSET)
BENCH_KV_FN(r_del, one, BCMD_DEL)
BENCH_KV_FN(r_delifeq, one, BCMD_DELIFEQ)
BENCH_KV_FN(r_incr, one, BCMD_INCR)

static int r_batch(struct bench_kv *kv, enum bench_cmd cmd, const uint32_t *ids,
		   const void *const *vals, const size_t *vlens, unsigned n,
		   int *replies)
{
	for (unsigned i = 0; i < n; i++)
		if (append(kv, cmd, ids[i], vals[i], vlens[i]) != REDIS_OK)
			return -EIO;
	for (unsigned i = 0; i < n; i++)
		replies[i] = reply(kv, cmd);
	return 0;
}

static void r_close(struct bench_kv *kv)
{
	redisFree(R(kv)->c);
}

/* The two differ only in batch, which the workload uses when present. */
#define REDIS_FNS                                                              \
	{                                                                      \
		r_get, r_set, r_setnx, r_getset, r_del, r_delifeq, r_incr      \
	}

static const struct bench_kv_ops redis_ops = {
	.name = "redis (loopback)",
	.tag = "redis",
	.fn = REDIS_FNS,
	.close = r_close,
};

static const struct bench_kv_ops redis_pipe_ops = {
	.name = "redis pipelined",
	.tag = "redis_pipelined",
	.fn = REDIS_FNS,
	.batch = r_batch,
	.close = r_close,
};

/* SELECT @db and SCRIPT LOAD the DELIFEQ script. Return: 0 or -EPROTO. */
static int prepare(struct rconn *rc, int db)
{
	redisReply *r = redisCommand(rc->c, "SELECT %d", db);
	int ok = r && r->type == REDIS_REPLY_STATUS;

	freeReplyObject(r);
	r = ok ? redisCommand(rc->c, "SCRIPT LOAD %s", bench_redis_delifeq_lua)
	       : NULL;
	ok = r && r->type == REDIS_REPLY_STRING && r->len < sizeof(rc->sha);
	if (ok)
		memcpy(rc->sha, r->str, r->len + 1);
	freeReplyObject(r);
	return ok ? 0 : -EPROTO;
}

int bench_kv_redis(struct bench_kv *kv, int port, int db, int pipelined,
		   const char *keys, uint32_t n, uint32_t value_max)
{
	struct rconn *rc = calloc(1, sizeof(*rc));
	int err = -ENOMEM;

	bench_kv_init(kv, pipelined ? &redis_pipe_ops : &redis_ops, keys, n,
		      rc);
	if (!rc)
		return -ENOMEM;
	rc->c = redisConnect("127.0.0.1", port);
	if (!rc->c || rc->c->err)
		err = -ECONNREFUSED;
	else if ((err = prepare(rc, db)) == 0)
		err = bench_kv_out_init(kv, value_max);
	if (err)
		bench_kv_close(kv);
	return err;
}
