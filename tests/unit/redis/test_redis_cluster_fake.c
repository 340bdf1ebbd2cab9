/*
 * test_redis_cluster_fake.c - redis_cluster.c's bounds, on a fake cluster
 * node: a RESP server in a thread of the test that says it owns every
 * slot (CLUSTER SLOTS) and answers each data command as the test wants:
 * MOVED or ASK to itself (a redirection loop no real cluster makes on
 * demand), a malformed MOVED, TRYAGAIN, CLUSTERDOWN, a MOVED to a node
 * that is not there, or a dropped connection with the command in flight.
 * It counts what it is sent, so a test sees how often a command went out.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "redis.h"
#include "shmkv.h"

enum fake_mode {
	FAKE_OK,	  /* ":1" */
	FAKE_MOVED_SELF,  /* MOVED <slot> to itself */
	FAKE_ASK_SELF,	  /* ASK <slot> to itself */
	FAKE_MOVED_BAD,	  /* "MOVED nonsense" */
	FAKE_TRYAGAIN,	  /* always */
	FAKE_TRYAGAIN_1,  /* once, then ":1" */
	FAKE_CLUSTERDOWN, /* always */
	FAKE_MOVED_DEAD,  /* MOVED to a port nobody listens on */
	FAKE_DROP,	  /* close the connection, no reply */
};

static struct {
	int port, dead_port;
	/* Seq-cst words of the test's own, shared with the server threads
	 * (the test reads a count after the reply that followed it). */
	atomic_int mode;   /* enum fake_mode */
	atomic_int data;   /* data commands received */
	atomic_int slots;  /* CLUSTER SLOTS received */
	atomic_int asking; /* ASKING received */
	atomic_int plain;  /* 1: a server without cluster support */
} fake;

/* Reads one RESP array of bulk strings: its first two words (command and
 * key, upper-cased command) into @w0, @w1. Return: 0, or -1 at EOF. */
static int read_command(FILE *in, char *w0, char *w1, size_t cap)
{
	char line[128], *dst;
	long n, i, len, j;
	int c;

	if (!fgets(line, sizeof(line), in) || line[0] != '*')
		return -1;
	n = atol(line + 1);
	w0[0] = w1[0] = '\0';
	for (i = 0; i < n; i++) {
		if (!fgets(line, sizeof(line), in) || line[0] != '$')
			return -1;
		len = atol(line + 1);
		dst = i == 0 ? w0 : i == 1 ? w1 : NULL;
		for (j = 0; j < len + 2; j++) {
			if ((c = fgetc(in)) == EOF)
				return -1;
			if (dst && j < len && (size_t)j + 1 < cap) {
				dst[j] = (char)(i == 0 && c >= 'a' && c <= 'z'
							? c - 32
							: c);
				dst[j + 1] = '\0';
			}
		}
	}
	return 0;
}

/* (No cr_assert here: this runs in the server's threads. A short send
 * shows as the client's error, which the test asserts on.) */
static void say(int fd, const char *s)
{
	if (send(fd, s, strlen(s), MSG_NOSIGNAL) < 0)
		shutdown(fd, SHUT_RDWR);
}

/* The reply to a data command on @key, or NULL: drop the connection. */
static const char *answer(const char *key, char *buf, size_t cap)
{
	unsigned slot = shmkv__redis_key_slot(key, strlen(key));
	int n = atomic_fetch_add(&fake.data, 1) + 1;

	switch (atomic_load(&fake.mode)) {
	case FAKE_MOVED_SELF:
		snprintf(buf, cap, "-MOVED %u 127.0.0.1:%d\r\n", slot,
			 fake.port);
		return buf;
	case FAKE_ASK_SELF:
		snprintf(buf, cap, "-ASK %u 127.0.0.1:%d\r\n", slot, fake.port);
		return buf;
	case FAKE_MOVED_BAD:
		return "-MOVED nonsense\r\n";
	case FAKE_TRYAGAIN_1:
		if (n > 1)
			return ":1\r\n";
		/* fall through */
	case FAKE_TRYAGAIN:
		return "-TRYAGAIN Multiple keys request during rehashing of "
		       "slot\r\n";
	case FAKE_CLUSTERDOWN:
		return "-CLUSTERDOWN The cluster is down\r\n";
	case FAKE_MOVED_DEAD:
		snprintf(buf, cap, "-MOVED %u 127.0.0.1:%d\r\n", slot,
			 fake.dead_port);
		return buf;
	case FAKE_DROP:
		return NULL;
	}
	return ":1\r\n";
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	FILE *in = fdopen(dup(fd), "r");
	char w0[64], w1[256], buf[512];
	const char *rep;

	while (in && read_command(in, w0, w1, sizeof(w1)) == 0) {
		if (!strcmp(w0, "PING")) {
			say(fd, "+PONG\r\n");
		} else if (!strcmp(w0, "ASKING")) {
			atomic_fetch_add(&fake.asking, 1);
			say(fd, "+OK\r\n");
		} else if (!strcmp(w0, "CLUSTER")) {
			atomic_fetch_add(&fake.slots, 1);
			if (atomic_load(&fake.plain)) {
				say(fd, "-ERR This instance has cluster "
					"support disabled\r\n");
				continue;
			}
			snprintf(buf, sizeof(buf),
				 "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n"
				 "$9\r\n127.0.0.1\r\n:%d\r\n$4\r\nfake\r\n",
				 fake.port);
			say(fd, buf);
		} else if ((rep = answer(w1, buf, sizeof(buf))) != NULL) {
			say(fd, rep);
		} else {
			break; /* the command in flight is never answered */
		}
	}
	if (in)
		fclose(in);
	close(fd);
	return NULL;
}

static void *listen_loop(void *arg)
{
	int lfd = (int)(intptr_t)arg, fd;
	pthread_t t;

	while ((fd = accept(lfd, NULL, NULL)) >= 0) {
		pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
	return NULL;
}

/* A loopback listener's port (@lfd listening), or a port just closed
 * (nobody listens there) when @lfd is NULL. */
static int loopback_port(int *lfd)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	if (lfd) {
		cr_assert_eq(listen(fd, 16), 0);
		*lfd = fd;
	} else {
		close(fd);
	}
	return ntohs(a.sin_port);
}

static void fake_up(void)
{
	pthread_t t;
	int lfd;

	fake.port = loopback_port(&lfd);
	fake.dead_port = loopback_port(NULL);
	cr_assert_eq(
		pthread_create(&t, NULL, listen_loop, (void *)(intptr_t)lfd),
		0);
	pthread_detach(t);
}

TestSuite(redis_cluster_fake, .init = fake_up, .timeout = 60);

static struct shmkv_redis *open_fake(void)
{
	char uri[64];
	shmkv_t *kv = NULL;

	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d", fake.port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0, "open %s", uri);
	return shmkv__redis_of(kv);
}

/* @cmd @key through @r in @mode: the call's return; *@rep kept. */
static int run(struct shmkv_redis *r, int mode, const char *cmd,
	       const char *key, redisReply **rep)
{
	const char *argv[] = { cmd, key };
	size_t len[] = { strlen(cmd), strlen(key) };

	atomic_store(&fake.mode, mode);
	atomic_store(&fake.data, 0);
	return shmkv__redis_call(r, key, strlen(key), 2, argv, len, rep);
}

static int sent(void)
{
	return atomic_load(&fake.data);
}

Test(redis_cluster_fake, moved_to_itself_stops_after_five_redirections)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;

	cr_assert_eq(run(r, FAKE_MOVED_SELF, "GET", "k", &rep), -ELOOP);
	cr_assert_null(rep);
	cr_assert_eq(sent(), 6, "the first try and five redirections");
	/* The handle still works. */
	cr_assert_eq(run(r, FAKE_OK, "GET", "k", &rep), 0);
	cr_assert_eq(rep->integer, 1);
	freeReplyObject(rep);
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, ask_to_itself_stops_after_five_redirections)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;

	atomic_store(&fake.asking, 0);
	cr_assert_eq(run(r, FAKE_ASK_SELF, "GET", "k", &rep), -ELOOP);
	cr_assert_eq(sent(), 6);
	cr_assert_eq(atomic_load(&fake.asking), 5,
		     "ASKING before each command an ASK sent back");
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, a_malformed_redirection_is_eproto)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;

	cr_assert_eq(run(r, FAKE_MOVED_BAD, "GET", "k", &rep), -EPROTO);
	cr_assert_eq(sent(), 1);
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, tryagain_is_retried_five_times_then_returned)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;

	cr_assert_eq(run(r, FAKE_TRYAGAIN, "GET", "k", &rep), 0);
	cr_assert_eq(rep->type, REDIS_REPLY_ERROR);
	cr_assert(!strncmp(rep->str, "TRYAGAIN", 8), "%s", rep->str);
	freeReplyObject(rep);
	cr_assert_eq(sent(), 6);
	cr_assert_eq(run(r, FAKE_TRYAGAIN_1, "GET", "k", &rep), 0);
	cr_assert_eq(rep->type, REDIS_REPLY_INTEGER, "the retry's reply");
	freeReplyObject(rep);
	cr_assert_eq(sent(), 2);
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, clusterdown_rereads_the_map_between_retries)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;
	int maps = atomic_load(&fake.slots);

	cr_assert_eq(run(r, FAKE_CLUSTERDOWN, "GET", "k", &rep), 0);
	cr_assert_eq(rep->type, REDIS_REPLY_ERROR);
	cr_assert(!strncmp(rep->str, "CLUSTERDOWN", 11), "%s", rep->str);
	freeReplyObject(rep);
	cr_assert_eq(sent(), 6);
	cr_assert_eq(atomic_load(&fake.slots) - maps, 5);
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, an_unreachable_node_is_rerouted_once)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;

	/* MOVED to a dead port: the map another node gives (ours: all
	 * slots here) and one more try, which is MOVED there again. */
	cr_assert_eq(run(r, FAKE_MOVED_DEAD, "GET", "k", &rep), -ECONNREFUSED);
	cr_assert_eq(sent(), 2);
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, a_command_in_flight_when_the_link_drops_is_not_resent)
{
	struct shmkv_redis *r = open_fake();
	redisReply *rep;

	cr_assert_eq(run(r, FAKE_DROP, "INCR", "k", &rep), -ECONNRESET);
	cr_assert_null(rep);
	cr_assert_eq(sent(), 1, "an INCR sent twice would count twice");
	/* The next command connects again. */
	cr_assert_eq(run(r, FAKE_OK, "INCR", "k", &rep), 0);
	cr_assert_eq(rep->integer, 1);
	freeReplyObject(rep);
	cr_assert_eq(sent(), 1);
	shmkv_close(&r->kv);
}

Test(redis_cluster_fake, a_seed_that_is_no_cluster_node_fails_the_open)
{
	char uri[64];
	shmkv_t *kv = NULL;

	atomic_store(&fake.plain, 1);
	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d", fake.port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -EPROTO);
	cr_assert_null(kv);
}
