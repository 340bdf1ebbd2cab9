/*
 * diff_redis.c - differential test of shmkv_exec() against redis-server.
 *
 * Starts its own redis-server on a free loopback port, creates its own
 * store, and replays one seeded random stream of string commands against
 * both: every reply must have the same type, integer and bytes (error
 * texts included); TTL and PTTL may differ by the time between the two
 * calls. The stream leans on the edges: an empty key and one with a NUL,
 * non-canonical and boundary integers, binary and value_max-long values,
 * conflicting options, and expire times that are invalid, negative, zero,
 * overflowing or already past. Relative TTLs are at least a minute, so no
 * key expires between the two sides of one comparison; the few TTLs of
 * milliseconds are followed by a pause that lets them expire on both.
 *
 *   diff_redis [--seed S] [--ops N] [--skip CMD[,CMD...]] [--verbose]
 *
 * Exit: 0 all replies matched; 1 a mismatch or a setup failure; 2 usage;
 * 77 redis-server is not installed (a skip for automake-style runners: CI
 * must not count it as a pass). SHMKV_REDIS_SERVER names another binary.
 */
#include "shmkv.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_SKIP 77
#define MAX_ARGS  16
#define NKEYS	  8

/* Redis has no DELIFEQ: the same thing, atomically, as a script. */
static const char delifeq_lua[] =
	"if redis.call('get',KEYS[1])==ARGV[1] then "
	"return redis.call('del',KEYS[1]) else return 0 end";

/* Keys: few, so commands keep meeting each other's values. */
static const struct {
	const char *p;
	size_t len;
} keys[NKEYS] = {
	{ "a", 1 },	  { "b", 1 },	   { "", 0 },	 { "k\0z", 3 },
	{ "counter", 7 }, { "lock:1", 6 }, { "x y", 3 }, { "KEY", 3 },
};

/* Everything cleanup needs, also from a signal handler. */
static volatile pid_t redis_pid;
static char shm_path[80];   /* /dev/shm/<name>, for the signal path */
static char store_name[64]; /* "" until the store exists */
static char log_path[64];   /* redis-server's output */
static shmkv_t *kv;
static redisContext *rc_ctx;

/* What the stream may use. */
static struct {
	uint64_t seed;
	long ops;
	int verbose;
	char skip[256];
	size_t value_max;
} opt = { 0, 20000, 0, "", 0 };

/*
 * Random numbers: splitmix64, so one seed gives one stream everywhere.
 */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static int64_t between(int64_t lo, int64_t hi)
{
	return lo + (int64_t)below((uint64_t)(hi - lo) + 1);
}

static int chance(int percent)
{
	return (int)below(100) < percent;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Commands: argument vectors that own their bytes.
 */
struct cmd {
	int argc;
	char *argv[MAX_ARGS];
	size_t len[MAX_ARGS];
	unsigned sleep_ms; /* pause after the command, for short TTLs */
};

static void cmd_add(struct cmd *c, const void *p, size_t len)
{
	char *s;

	if (c->argc == MAX_ARGS)
		return;
	s = malloc(len + 1);
	if (!s) {
		perror("diff_redis: malloc");
		exit(1);
	}
	memcpy(s, p, len);
	s[len] = '\0';
	c->argv[c->argc] = s;
	c->len[c->argc++] = len;
}

static void cmd_adds(struct cmd *c, const char *s)
{
	cmd_add(c, s, strlen(s));
}

static void cmd_addi(struct cmd *c, int64_t v)
{
	char buf[32];

	cmd_add(c, buf, (size_t)snprintf(buf, sizeof(buf), "%" PRId64, v));
}

/* Adds @s in random letter case: Redis ignores case in names and options. */
static void cmd_addc(struct cmd *c, const char *s)
{
	char buf[32];
	size_t i, n = strlen(s);

	for (i = 0; i < n && i < sizeof(buf); i++)
		buf[i] = chance(50) ? (char)(s[i] ^ 0x20) : s[i];
	if (!chance(30))
		memcpy(buf, s, n); /* mostly as written */
	cmd_add(c, buf, n);
}

static void cmd_free(struct cmd *c)
{
	while (c->argc > 0)
		free(c->argv[--c->argc]);
}

static void print_bytes(FILE *f, const char *p, size_t len)
{
	size_t i, shown = len > 96 ? 96 : len;

	fputc('"', f);
	for (i = 0; i < shown; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			fputc(ch, f);
		else
			fprintf(f, "\\x%02x", ch);
	}
	fputc('"', f);
	if (shown < len)
		fprintf(f, "...(%zu bytes)", len);
}

static void print_cmd(FILE *f, const struct cmd *c)
{
	int i;

	for (i = 0; i < c->argc; i++) {
		fputc(i ? ' ' : '\t', f);
		print_bytes(f, c->argv[i], c->len[i]);
	}
	fputc('\n', f);
}

/*
 * Generators of arguments.
 */

static void gen_key(struct cmd *c)
{
	int k = (int)below(NKEYS);

	cmd_add(c, keys[k].p, keys[k].len);
}

/* Strings Redis's string2ll must refuse, or accept only at the edge. */
static const char *const odd_ints[] = { "007",
					"-0",
					"+1",
					" 1",
					"1 ",
					"00",
					"0x10",
					"1e3",
					"--1",
					"-",
					"1.5",
					"abc",
					"",
					"9223372036854775808",
					"-9223372036854775809",
					"18446744073709551616",
					"99999999999999999999",
					"01",
					"-01" };

static int64_t edge_int(void)
{
	static const int64_t bases[] = { INT64_MAX,
					 INT64_MIN,
					 (int64_t)1 << 47,
					 -((int64_t)1 << 47),
					 (int64_t)1 << 48,
					 -((int64_t)1 << 48),
					 0 };
	int64_t b = bases[below(sizeof(bases) / sizeof(bases[0]))];

	if (b == INT64_MAX)
		return b - (int64_t)below(4);
	if (b == INT64_MIN)
		return b + (int64_t)below(4);
	return b + between(-2, 2);
}

static void gen_int(struct cmd *c)
{
	unsigned r = (unsigned)below(100);

	if (r < 55)
		cmd_addi(c, between(-1000, 1000));
	else if (r < 80)
		cmd_addi(c, edge_int());
	else
		cmd_adds(c, odd_ints[below(sizeof(odd_ints) /
					   sizeof(odd_ints[0]))]);
}

static void gen_blob(struct cmd *c, size_t len, int binary)
{
	char *buf = malloc(len + 1);
	size_t i;

	if (!buf)
		exit(1);
	for (i = 0; i < len; i++)
		buf[i] = binary ? (char)below(256) : (char)('a' + i % 26);
	if (binary && len > 2)
		buf[below(len)] = '\0'; /* at least one NUL */
	cmd_add(c, buf, len);
	free(buf);
}

/* Values generated lately, so DELIFEQ sometimes names the right one. */
static struct {
	char *p;
	size_t len;
} recent[4];
static unsigned recent_next;

static void remember_value(const struct cmd *c)
{
	unsigned i = recent_next++ % 4;
	size_t len = c->len[c->argc - 1];

	free(recent[i].p);
	recent[i].p = malloc(len + 1);
	if (!recent[i].p)
		exit(1);
	memcpy(recent[i].p, c->argv[c->argc - 1], len);
	recent[i].len = len;
}

static void gen_value(struct cmd *c)
{
	unsigned r = (unsigned)below(100);
	int argc = c->argc;

	if (recent_next > 0 && r < 15) {
		unsigned i = (unsigned)below(recent_next < 4 ? recent_next : 4);

		cmd_add(c, recent[i].p, recent[i].len);
		return;
	}
	r = (unsigned)below(100);

	if (r < 8)
		cmd_adds(c, "");
	else if (r < 50)
		gen_int(c);
	else if (r < 62)
		cmd_adds(c, chance(50) ? "hello" : "owner-42");
	else if (r < 78)
		gen_blob(c, (size_t)between(1, 40), 1);
	else if (r < 90)
		gen_blob(c, (size_t)between(21, (int64_t)opt.value_max), 0);
	else
		gen_blob(c, opt.value_max - (size_t)below(2), (int)below(2));
	if (c->argc > argc)
		remember_value(c);
}

enum time_kind { T_SEC, T_MSEC, T_AT_SEC, T_AT_MSEC };

static int skipped(const char *name);

/* The last absolute deadline generated, in ms: reused so that GT and LT
 * meet a deadline equal to the key's own (both must refuse it). */
static int64_t last_deadline;

/* A time that is valid and at least a minute away, in @kind's unit. */
static int64_t good_time(enum time_kind kind)
{
	int64_t secs = between(60, 36000);
	int64_t ms = between(60000, 36000000);
	int reuse = last_deadline > now_ms() + 30000 && chance(20) &&
		    !skipped("ties");

	switch (kind) {
	case T_SEC:
		return secs;
	case T_MSEC:
		return ms;
	case T_AT_SEC:
		if (!reuse)
			last_deadline = (now_ms() / 1000 + secs) * 1000;
		return last_deadline / 1000;
	default:
		if (!reuse)
			last_deadline = now_ms() + ms;
		return last_deadline;
	}
}

/* An absolute time already past (for relative kinds: a negative one). */
static int64_t past_time(enum time_kind kind)
{
	int64_t back = between(1, 100000);

	switch (kind) {
	case T_AT_SEC:
		return chance(20) ? 1 : now_ms() / 1000 - back;
	case T_AT_MSEC:
		return chance(20) ? 1 : now_ms() - back;
	default:
		return -back;
	}
}

/* Times at or beyond every overflow check Redis makes. */
static int64_t edge_time(void)
{
	static const int64_t edges[] = { 0,
					 -1,
					 INT64_MAX,
					 INT64_MIN,
					 INT64_MAX / 1000,
					 INT64_MAX / 1000 + 1,
					 INT64_MIN / 1000,
					 INT64_MIN / 1000 - 1,
					 INT64_MAX - 1000,
					 (int64_t)1 << 47,
					 (int64_t)1 << 48 };

	return edges[below(sizeof(edges) / sizeof(edges[0]))];
}

static void gen_time(struct cmd *c, enum time_kind kind)
{
	unsigned r = (unsigned)below(100);

	if (r < 75)
		cmd_addi(c, good_time(kind));
	else if (r < 85)
		cmd_addi(c, past_time(kind));
	else if (r < 95)
		cmd_addi(c, edge_time());
	else
		cmd_adds(c, odd_ints[below(sizeof(odd_ints) /
					   sizeof(odd_ints[0]))]);
}

/*
 * Generators of commands.
 */

static void gen_expiry_opt(struct cmd *c)
{
	static const char *const names[] = { "EX", "PX", "EXAT", "PXAT" };
	unsigned k = (unsigned)below(4);

	cmd_addc(c, names[k]);
	/* An expiry without its time, rarely, and only last. */
	if (chance(2))
		return;
	gen_time(c, (enum time_kind)k);
}

static void gen_set_opt(struct cmd *c)
{
	static const char *const flags[] = { "NX", "XX", "GET", "KEEPTTL" };
	static const char *const bogus[] = { "NXX", "", "PERSIST", "EXPIRE",
					     "GETT" };
	unsigned r = (unsigned)below(100);

	if (r < 50)
		cmd_addc(c, flags[below(4)]);
	else if (r < 94)
		gen_expiry_opt(c);
	else if (r < 97)
		cmd_adds(c, bogus[below(5)]);
	else if (chance(50))
		cmd_add(c, "nx\0junk",
			7); /* Redis reads options as C strings */
	else
		cmd_add(c, "GET\0", 4);
}

/* Mostly zero or one option, sometimes a pile of them. */
static int n_opts(void)
{
	unsigned r = (unsigned)below(100);

	return r < 40 ? 0 : r < 75 ? 1 : r < 90 ? 2 : (int)between(3, 4);
}

static void gen_set(struct cmd *c)
{
	int i, n = n_opts();

	cmd_addc(c, "SET");
	gen_key(c);
	gen_value(c);
	for (i = 0; i < n; i++)
		gen_set_opt(c);
}

static void gen_getex(struct cmd *c)
{
	static const char *const bogus[] = { "NX", "KEEPTTL", "GET", "" };
	int i, n = n_opts();

	cmd_addc(c, "GETEX");
	gen_key(c);
	for (i = 0; i < n && i < 3; i++) {
		if (chance(25))
			cmd_addc(c, "PERSIST");
		else if (chance(92))
			gen_expiry_opt(c);
		else
			cmd_adds(c, bogus[below(4)]);
	}
}

static void gen_expire(struct cmd *c)
{
	static const char *const names[] = { "EXPIRE", "PEXPIRE", "EXPIREAT",
					     "PEXPIREAT" };
	static const char *const flags[] = { "NX", "XX", "GT", "LT" };
	unsigned k = (unsigned)below(4);
	int i, n = chance(55) ? 0 : chance(75) ? 1 : 2;

	cmd_addc(c, names[k]);
	gen_key(c);
	gen_time(c, (enum time_kind)k);
	for (i = 0; i < n; i++) {
		if (chance(96))
			cmd_addc(c, flags[below(4)]);
		else
			cmd_adds(c, chance(50) ? "foo" : "nx\r\n");
	}
}

static void gen_keys(struct cmd *c, const char *name)
{
	int i, n = (int)between(1, 4);

	cmd_addc(c, name);
	for (i = 0; i < n; i++)
		gen_key(c);
}

static void gen_key_cmd(struct cmd *c)
{
	static const char *const names[] = { "GET",	"GETDEL", "TTL", "PTTL",
					     "PERSIST", "INCR",	  "DECR" };

	cmd_addc(c, names[below(sizeof(names) / sizeof(names[0]))]);
	gen_key(c);
}

static void gen_key_value_cmd(struct cmd *c)
{
	static const char *const names[] = { "SETNX", "GETSET", "DELIFEQ" };

	cmd_addc(c, names[below(3)]);
	gen_key(c);
	gen_value(c);
}

static void gen_incrby(struct cmd *c)
{
	cmd_addc(c, chance(50) ? "INCRBY" : "DECRBY");
	gen_key(c);
	gen_int(c);
}

/* Wrong arity, unknown commands, PING: errors must read the same. */
static void gen_misc(struct cmd *c)
{
	static const char *const names[] = {
		"GET", "SET", "TTL", "GETEX", "EXPIRE", "INCRBY", "DEL", "SETNX"
	};
	unsigned r = (unsigned)below(100);

	if (r < 30) {
		cmd_addc(c, "PING");
		if (chance(50))
			gen_value(c);
		if (chance(20))
			gen_key(c);
	} else if (r < 70) {
		/* Only short arguments: any may be taken for a key, and
     * Redis has no key_max to refuse a long one with. */
		cmd_addc(c, names[below(8)]);
		if (chance(50))
			gen_key(c);
		if (chance(40))
			gen_key(c);
		if (chance(40))
			gen_key(c);
	} else {
		cmd_adds(c, chance(50) ? "foo" : "NoSuchCommand");
		while (chance(60) && c->argc < 6)
			gen_value(c);
	}
}

/*
 * A TTL of a few milliseconds, then a pause several times longer: both
 * sides have let the key expire by the next command, whatever the
 * scheduler did in between, so lazy expiry is compared exactly.
 */
static void gen_short(struct cmd *c)
{
	unsigned r = (unsigned)below(3);

	cmd_addc(c, r == 0 ? "SET" : r == 1 ? "PEXPIRE" : "GETEX");
	gen_key(c);
	if (r == 0)
		gen_value(c);
	if (r != 1)
		cmd_addc(c, "PX");
	cmd_addi(c, between(1, 10));
	c->sleep_ms = 25;
}

static const struct {
	const char *name; /* for --skip */
	int weight;
	void (*gen)(struct cmd *c);
} generators[] = {
	{ "set", 22, gen_set },
	{ "getex", 8, gen_getex },
	{ "expire", 16, gen_expire },
	{ "key", 22, gen_key_cmd },
	{ "keyvalue", 12, gen_key_value_cmd },
	{ "incrby", 8, gen_incrby },
	{ "misc", 6, gen_misc },
	{ "del", 3, NULL },
	{ "exists", 3, NULL },
	{ "short", 1, gen_short },
};

static int skipped(const char *name)
{
	size_t n = strlen(name);
	const char *p = opt.skip;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == opt.skip || p[-1] == ',') &&
		    (p[n] == ',' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

static void gen_cmd(struct cmd *c)
{
	size_t i, n = sizeof(generators) / sizeof(generators[0]);
	int total = 0, r;

	for (i = 0; i < n; i++)
		total += skipped(generators[i].name) ? 0 : generators[i].weight;
	r = (int)below((uint64_t)total);
	for (i = 0; i < n; i++) {
		if (skipped(generators[i].name))
			continue;
		if (r < generators[i].weight)
			break;
		r -= generators[i].weight;
	}
	if (generators[i].gen)
		generators[i].gen(c);
	else
		gen_keys(c, generators[i].name[0] == 'd' ? "DEL" : "EXISTS");
}

/*
 * redis-server: started on a free port, always reaped.
 */

/* Kills the server and reaps it; async-signal-safe. */
static void stop_redis(void)
{
	pid_t pid = redis_pid;

	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		redis_pid = 0;
	}
}

static void cleanup_signal_safe(void)
{
	stop_redis();
	if (store_name[0])
		unlink(shm_path);
	if (log_path[0])
		unlink(log_path);
}

static void on_signal(int sig)
{
	cleanup_signal_safe();
	/* SA_RESETHAND restored the default: die of the same signal. */
	raise(sig);
}

static void cleanup(void)
{
	if (rc_ctx)
		redisFree(rc_ctx);
	rc_ctx = NULL;
	if (kv)
		shmkv_close(kv);
	kv = NULL;
	if (store_name[0])
		shmkv_unlink(store_name);
	store_name[0] = '\0';
	cleanup_signal_safe();
}

static void install_cleanup(void)
{
	static const int sigs[] = { SIGINT,  SIGTERM, SIGHUP, SIGQUIT,
				    SIGABRT, SIGSEGV, SIGBUS };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	atexit(cleanup);
}

static const char *find_redis_server(void)
{
	static char path[4096];
	const char *env = getenv("SHMKV_REDIS_SERVER");
	const char *p = getenv("PATH");
	size_t n;

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (p = p ? p : "/usr/bin:/bin"; *p; p += n + (p[n] == ':')) {
		n = strcspn(p, ":");
		snprintf(path, sizeof(path), "%.*s/redis-server", (int)n, p);
		if (n && access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

/* A port free right now (redis-server may still lose a race for it). */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static pid_t spawn_redis(const char *bin, int port)
{
	pid_t parent = getpid(), pid;
	char portstr[16];
	int fd;

	snprintf(portstr, sizeof(portstr), "%d", port);
	pid = fork();
	if (pid != 0)
		return pid;
	/* If this test dies without cleaning up, the server dies too (and
   * if it died before the request took hold, there is no point). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(127);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (chdir("/tmp") != 0)
		_exit(127);
	execl(bin, "redis-server", "--port", portstr, "--save", "",
	      "--appendonly", "no", "--daemonize", "no", "--bind", "127.0.0.1",
	      (char *)NULL);
	_exit(127);
}

/* Whether the server behind @ctx is the one we started: if it lost the
 * race for its port, another server may be listening there. */
static int is_our_redis(redisContext *ctx)
{
	redisReply *r = redisCommand(ctx, "INFO server");
	const char *p = NULL;
	long pid = -1;

	if (r && r->type == REDIS_REPLY_STRING)
		p = strstr(r->str, "process_id:");
	if (p)
		pid = strtol(p + strlen("process_id:"), NULL, 10);
	if (r)
		freeReplyObject(r);
	return pid == (long)redis_pid;
}

/* Polls for up to ~15 s: connects, then PING must answer PONG. */
static redisContext *wait_for_redis(int port)
{
	struct timeval tv = { 1, 0 };
	int i, status;

	for (i = 0; i < 300; i++) {
		redisContext *ctx = redisConnectWithTimeout("127.0.0.1", port,
							    tv);
		redisReply *r;

		if (ctx && !ctx->err) {
			r = redisCommand(ctx, "PING");
			if (r && r->type == REDIS_REPLY_STATUS &&
			    strcmp(r->str, "PONG") == 0 && is_our_redis(ctx)) {
				freeReplyObject(r);
				return ctx;
			}
			if (r)
				freeReplyObject(r);
		}
		if (ctx)
			redisFree(ctx);
		if (waitpid(redis_pid, &status, WNOHANG) == redis_pid) {
			redis_pid = 0; /* exited: reaped here */
			return NULL;
		}
		usleep(50000);
	}
	return NULL;
}

static int start_redis(void)
{
	const char *bin = find_redis_server();
	int attempt, port;

	if (!bin) {
		fprintf(stderr, "diff_redis: redis-server not found in PATH "
				"(install it: apt-get install redis-server, or "
				"set SHMKV_REDIS_SERVER); skipping\n");
		exit(EXIT_SKIP);
	}
	snprintf(log_path, sizeof(log_path), "/tmp/diff_redis-%d.log",
		 (int)getpid());
	for (attempt = 0; attempt < 3; attempt++) {
		port = free_port();
		if (port < 0)
			break;
		redis_pid = spawn_redis(bin, port);
		if (redis_pid < 0) {
			redis_pid = 0;
			break;
		}
		rc_ctx = wait_for_redis(port);
		if (rc_ctx)
			return 0;
		stop_redis();
	}
	fprintf(stderr, "diff_redis: could not start %s (see %s)\n", bin,
		log_path);
	log_path[0] = '\0'; /* keep the log for the post-mortem */
	return -1;
}

static int create_store(void)
{
	struct shmkv_config cfg;
	int rc;

	snprintf(store_name, sizeof(store_name), "/shmkv-diff-redis-%d",
		 (int)getpid());
	snprintf(shm_path, sizeof(shm_path), "/dev/shm%s", store_name);
	shmkv_config_init(&cfg);
	cfg.slots = 1024;
	rc = shmkv_create(store_name, &cfg, &kv);
	if (rc == 0)
		rc = shmkv_get_config(kv, &cfg);
	if (rc < 0) {
		fprintf(stderr, "diff_redis: cannot create store %s: %s\n",
			store_name, shmkv_strerror(rc));
		if (rc != -EEXIST)
			store_name[0] = '\0';
		return -1;
	}
	opt.value_max = cfg.value_max;
	return 0;
}

/*
 * Running and comparing.
 */

/* Replies seen, by enum shmkv_reply_type. */
static long seen[6];

/* One reply, from either side, in one shape. */
struct reply {
	int type; /* enum shmkv_reply_type */
	long long integer;
	const char *str;
	size_t len;
};

static int from_redis(const redisReply *r, struct reply *out)
{
	memset(out, 0, sizeof(*out));
	switch (r ? r->type : -1) {
	case REDIS_REPLY_STATUS:
		out->type = SHMKV_REPLY_STATUS;
		break;
	case REDIS_REPLY_ERROR:
		out->type = SHMKV_REPLY_ERROR;
		break;
	case REDIS_REPLY_INTEGER:
		out->type = SHMKV_REPLY_INTEGER;
		out->integer = r->integer;
		return 0;
	case REDIS_REPLY_NIL:
		out->type = SHMKV_REPLY_NIL;
		return 0;
	case REDIS_REPLY_STRING:
		out->type = SHMKV_REPLY_BULK;
		break;
	default:
		return -1;
	}
	out->str = r->str;
	out->len = r->len;
	return 0;
}

static void print_reply(FILE *f, const char *who, const struct reply *r)
{
	static const char *const names[] = { "?",	"status", "error",
					     "integer", "nil",	  "bulk" };

	fprintf(f, "  %-6s %s", who,
		names[r->type >= 1 && r->type <= 5 ? r->type : 0]);
	if (r->type == SHMKV_REPLY_INTEGER)
		fprintf(f, " %lld", r->integer);
	else if (r->str) {
		fputc(' ', f);
		print_bytes(f, r->str, r->len);
	}
	fputc('\n', f);
}

/* TTL and PTTL are read at two slightly different instants. */
static int ttl_close(const struct reply *a, const struct reply *b, int ms)
{
	long long slack = ms ? 1500 : 2;

	if (a->type != SHMKV_REPLY_INTEGER || b->type != SHMKV_REPLY_INTEGER)
		return 0;
	if (a->integer < 0 || b->integer < 0)
		return a->integer == b->integer;
	return llabs(a->integer - b->integer) <= slack;
}

static int replies_equal(const struct cmd *c, const struct reply *a,
			 const struct reply *b)
{
	if (strcasecmp(c->argv[0], "ttl") == 0 && c->argc == 2)
		return ttl_close(a, b, 0);
	if (strcasecmp(c->argv[0], "pttl") == 0 && c->argc == 2)
		return ttl_close(a, b, 1);
	if (a->type != b->type)
		return 0;
	if (a->type == SHMKV_REPLY_INTEGER)
		return a->integer == b->integer;
	if (a->type == SHMKV_REPLY_NIL)
		return 1;
	return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

static redisReply *redis_run(const struct cmd *c)
{
	const char *argv[MAX_ARGS + 2];
	size_t lens[MAX_ARGS + 2];
	int i;

	if (c->argc == 3 && strcasecmp(c->argv[0], "delifeq") == 0) {
		const char *a[] = { "EVAL", delifeq_lua, "1", c->argv[1],
				    c->argv[2] };
		size_t l[] = { 4, strlen(delifeq_lua), 1, c->len[1],
			       c->len[2] };

		return redisCommandArgv(rc_ctx, 5, a, l);
	}
	for (i = 0; i < c->argc; i++) {
		argv[i] = c->argv[i];
		lens[i] = c->len[i];
	}
	return redisCommandArgv(rc_ctx, c->argc, argv, lens);
}

/* Runs @c on both sides. Return: 0 same replies, 1 a mismatch, -1 an
 * infrastructure failure (already reported). */
static int run_both(long n, const struct cmd *c)
{
	struct shmkv_reply sr;
	struct reply a, b;
	redisReply *rr = redis_run(c);
	int rc;

	if (!rr || from_redis(rr, &a) < 0) {
		fprintf(stderr, "diff_redis: op %ld: redis failed: %s\n", n,
			rc_ctx->err ? rc_ctx->errstr : "unexpected reply");
		if (rr)
			freeReplyObject(rr);
		return -1;
	}
	rc = shmkv_exec(kv, c->argc, (const char *const *)c->argv, c->len, &sr);
	b.type = (int)sr.type;
	b.integer = sr.integer;
	b.str = sr.str;
	b.len = sr.len;
	if (opt.verbose) {
		print_cmd(stdout, c);
		print_reply(stdout, "->", &b);
	}
	seen[a.type >= 1 && a.type <= 5 ? a.type : 0]++;
	if (!replies_equal(c, &a, &b)) {
		fprintf(stderr,
			"diff_redis: MISMATCH at op %ld (seed %" PRIu64 "):\n",
			n, opt.seed);
		print_cmd(stderr, c);
		print_reply(stderr, "redis", &a);
		print_reply(stderr, "shmkv", &b);
		if (rc < 0)
			fprintf(stderr, "  shmkv_exec returned %d\n", rc);
		rc = 1;
	} else {
		rc = 0;
	}
	shmkv_reply_free(&sr);
	freeReplyObject(rr);
	return rc;
}

/* How many replies of each type were compared: a stream that never
 * reaches some reply type tests less than it seems to. */
static void print_seen(void)
{
	printf("diff_redis: replies compared: %ld status, %ld error, "
	       "%ld integer, %ld nil, %ld bulk\n",
	       seen[SHMKV_REPLY_STATUS], seen[SHMKV_REPLY_ERROR],
	       seen[SHMKV_REPLY_INTEGER], seen[SHMKV_REPLY_NIL],
	       seen[SHMKV_REPLY_BULK]);
}

/* Both keyspaces must agree at the end: every key's value and TTL. */
static int compare_keyspace(long *passed)
{
	static const char *const cmds[] = { "GET", "PTTL" };
	int k, i, rc;

	for (k = 0; k < NKEYS; k++) {
		for (i = 0; i < 2; i++) {
			struct cmd c = { 0 };

			cmd_adds(&c, cmds[i]);
			cmd_add(&c, keys[k].p, keys[k].len);
			rc = run_both(opt.ops + 1 + k * 2 + i, &c);
			cmd_free(&c);
			if (rc)
				return rc;
			(*passed)++;
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: diff_redis [--seed S] [--ops N] [--skip WHAT,...] "
	      "[--verbose]\n"
	      "  Replays a random command stream against shmkv_exec() and a\n"
	      "  private redis-server; exits 1 at the first differing reply.\n"
	      "  --skip takes generator names (set getex expire key keyvalue\n"
	      "  incrby misc del exists short) and 'ties' (no GT/LT against a\n"
	      "  deadline equal to the key's own).\n",
	      f);
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "skip", required_argument, NULL, 'x' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int ch, help = 0;

	opt.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	while ((ch = getopt_long(argc, argv, "s:n:x:vh", longopts, NULL)) !=
	       -1) {
		errno = 0;
		if (ch == 's')
			opt.seed = strtoull(optarg, &end, 0);
		else if (ch == 'n')
			opt.ops = strtol(optarg, &end, 0);
		else if (ch == 'x')
			snprintf(opt.skip, sizeof(opt.skip), "%s", optarg);
		else if (ch == 'v')
			opt.verbose = 1;
		else if (ch == 'h')
			help = 1;
		else
			return -1;
		if ((ch == 's' || ch == 'n') &&
		    (errno || *end || end == optarg))
			return -1;
	}
	if (help) {
		usage(stdout);
		exit(0);
	}
	return optind == argc && opt.ops >= 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long n, passed = 0;
	int rc = 0;

	if (parse_args(argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("diff_redis: seed %" PRIu64 ", %ld ops\n", opt.seed, opt.ops);
	rng_state = opt.seed;
	install_cleanup();
	if (start_redis() < 0 || create_store() < 0)
		return 1;
	for (n = 1; n <= opt.ops && rc == 0; n++) {
		struct cmd c = { 0 };

		gen_cmd(&c);
		rc = run_both(n, &c);
		if (c.sleep_ms)
			usleep(c.sleep_ms * 1000);
		cmd_free(&c);
		passed += rc == 0;
	}
	if (rc == 0)
		rc = compare_keyspace(&passed);
	print_seen();
	printf("diff_redis: %ld passed, %d failed (seed %" PRIu64 ")\n", passed,
	       rc != 0, opt.seed);
	return rc ? 1 : 0;
}
