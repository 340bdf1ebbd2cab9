/*
 * diff_redis.c - differential test of shmkv_exec() against redis-server.
 *
 * Starts its own redis-server on a free loopback port, creates its own
 * store, and replays one seeded random stream of string commands against
 * both: every reply must have the same type, integer and bytes (error
 * texts included); TTL and PTTL may differ by the time between the two
 * calls. The stream (tests/helpers/diff_gen.c) leans on the edges; its
 * relative TTLs are at least a minute, so no key expires between the two
 * sides of one comparison, and the few TTLs of milliseconds are followed
 * by a pause that lets them expire on both. The server is started by
 * tests/helpers/redis_server.c. First, the library's command table is
 * compared with the server's COMMAND INFO (arity, key positions, flags).
 *
 *   diff_redis [--seed S] [--ops N] [--skip CMD[,CMD...]] [--verbose]
 *              [--backend redis|cluster]
 *
 * --backend: the library's Redis backend against its shared-memory store
 * instead: the same stream runs through shmkv_exec and, for the commands
 * it can express, through the typed calls of shmkv.h (diff_typed.c; one
 * command in two, alternately, with a buffer sometimes too short, for
 * -ENOBUFS), on a shm store and on a handle of redis://127.0.0.1:<port>
 * (this program's server) or redis+cluster:// (a 3-master cluster it
 * starts, tests/helpers/redis_cluster.c: the stream's keys have no hash
 * tags, so they spread over the masters); every return, output and reply
 * must be the same.
 *
 * Exit: 0 all replies matched; 1 a mismatch or a setup failure; 2 usage;
 * 77 redis-server is not installed (a skip for automake-style runners: CI
 * must not count it as a pass). SHMKV_REDIS_SERVER names another binary.
 */
#include "helpers/args.h"
#include "helpers/diff_gen.h"
#include "helpers/diff_typed.h"
#include "helpers/redis_cluster.h"
#include "helpers/redis_server.h"
#include "helpers/rng.h"
#include "shmkv.h"
#include "shmkv_exec.h"

#include <errno.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define EXIT_SKIP 77

/* Redis has no DELIFEQ: the same thing, atomically, as a script. */
static const char delifeq_lua[] =
	"if redis.call('get',KEYS[1])==ARGV[1] then "
	"return redis.call('del',KEYS[1]) else return 0 end";

/* Everything cleanup needs, also from a signal handler. */
static struct redis_server server;
static char shm_path[80];   /* /dev/shm/<name>, for the signal path */
static char store_name[64]; /* "" until the store exists */
static shmkv_t *kv;
static redisContext *rc_ctx;
static struct redis_cluster cluster; /* --backend cluster */
static shmkv_t *rkv;		     /* --backend: the Redis handle */

/* The command line, and the store's value_max for the stream. */
static struct {
	uint64_t seed;
	long ops;
	int verbose;
	char skip[256];
	size_t value_max;
	int backend; /* 0: none (redis-server itself), 1 redis, 2 cluster */
} opt = { 0, 20000, 0, "", 0, 0 };

/*
 * redis-server: started on a free port, always reaped.
 */

static void cleanup_signal_safe(void)
{
	redis_server_cleanup(&server);
	redis_cluster_stop(&cluster);
	if (store_name[0])
		unlink(shm_path);
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
	if (rkv)
		shmkv_close(rkv);
	rkv = NULL;
	redis_cluster_cleanup(&cluster);
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

/* Whether the server behind @ctx is the one we started: if it lost the
 * race for its port, another server may be listening there. */
static int is_our_redis(redisContext *ctx, pid_t want)
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
	return pid == (long)want;
}

/* Connects, then PING must answer PONG; on success *@arg gets the
 * connection. */
static int probe_redis(const struct redis_server *s, void *arg)
{
	redisContext **out = arg;
	struct timeval tv = { 1, 0 };
	redisContext *ctx = redisConnectWithTimeout("127.0.0.1", s->port, tv);
	redisReply *r;

	if (ctx && !ctx->err) {
		r = redisCommand(ctx, "PING");
		if (r && r->type == REDIS_REPLY_STATUS &&
		    strcmp(r->str, "PONG") == 0 && is_our_redis(ctx, s->pid)) {
			freeReplyObject(r);
			*out = ctx;
			return 1;
		}
		if (r)
			freeReplyObject(r);
	}
	if (ctx)
		redisFree(ctx);
	return 0;
}

static int start_redis(void)
{
	const char *bin = redis_server_find();

	if (!bin) {
		fprintf(stderr, "diff_redis: redis-server not found in PATH "
				"(install it: apt-get install redis-server, or "
				"set SHMKV_REDIS_SERVER); skipping\n");
		exit(EXIT_SKIP);
	}
	if (redis_server_start(&server, bin, "diff_redis", probe_redis,
			       &rc_ctx) == 0)
		return 0;
	fprintf(stderr, "diff_redis: could not start %s (see %s)\n", bin,
		server.log_path);
	server.log_path[0] = '\0'; /* keep the log for the post-mortem */
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
		dg_print_bytes(f, r->str, r->len);
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

static int replies_equal(const struct dg_cmd *c, const struct reply *a,
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

static redisReply *redis_run(const struct dg_cmd *c)
{
	const char *argv[DG_MAX_ARGS + 2];
	size_t lens[DG_MAX_ARGS + 2];
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
static int run_both(long n, const struct dg_cmd *c)
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
		dg_cmd_print(stdout, c);
		print_reply(stdout, "->", &b);
	}
	seen[a.type >= 1 && a.type <= 5 ? a.type : 0]++;
	if (!replies_equal(c, &a, &b)) {
		fprintf(stderr,
			"diff_redis: MISMATCH at op %ld (seed %" PRIu64 "):\n",
			n, opt.seed);
		dg_cmd_print(stderr, c);
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

/*
 * --backend: the shm store against the Redis handle.
 */

static int open_backend(void)
{
	char uri[256];
	int rc;

	if (opt.backend == 2) {
		if (redis_cluster_start(&cluster, "diff_redis") != 0) {
			fprintf(stderr, "diff_redis: could not start the "
					"3-master cluster\n");
			return -1;
		}
		snprintf(uri, sizeof(uri),
			 "redis+cluster://127.0.0.1:%d,127.0.0.1:%d",
			 cluster.node[0].port, cluster.node[1].port);
	} else {
		snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d", server.port);
	}
	rc = shmkv_open(uri, 0, &rkv);
	if (rc < 0) {
		fprintf(stderr, "diff_redis: cannot open %s: %s\n", uri,
			shmkv_strerror(rc));
		return -1;
	}
	printf("diff_redis: backend %s\n", uri);
	return 0;
}

static void from_shmkv(const struct shmkv_reply *sr, struct reply *out)
{
	out->type = (int)sr->type;
	out->integer = sr->integer;
	out->str = sr->str;
	out->len = sr->len;
}

/* @c through shmkv_exec on both handles. */
static int exec_both(long n, const struct dg_cmd *c)
{
	struct shmkv_reply sa, sb;
	struct reply a, b;
	int rc;

	shmkv_exec(kv, c->argc, (const char *const *)c->argv, c->len, &sa);
	shmkv_exec(rkv, c->argc, (const char *const *)c->argv, c->len, &sb);
	from_shmkv(&sa, &a);
	from_shmkv(&sb, &b);
	if (opt.verbose) {
		dg_cmd_print(stdout, c);
		print_reply(stdout, "->", &a);
	}
	seen[a.type >= 1 && a.type <= 5 ? a.type : 0]++;
	rc = !replies_equal(c, &a, &b);
	if (rc) {
		fprintf(stderr,
			"diff_redis: MISMATCH at op %ld (seed %" PRIu64
			", exec):\n",
			n, opt.seed);
		dg_cmd_print(stderr, c);
		print_reply(stderr, "shm", &a);
		print_reply(stderr, "redis", &b);
	}
	shmkv_reply_free(&sa);
	shmkv_reply_free(&sb);
	return rc;
}

/* Typed calls compared, by kind of return. */
static long typed_runs, typed_errors;

/* @c as its typed call on both handles, when it has one: 0 same, 1 a
 * mismatch, 2 no typed form. */
static int typed_both(long n, const struct dg_cmd *c)
{
	static struct dt_result a, b;
	/* Mostly room for any value; now and then none or 2 bytes. */
	size_t cap = n % 7 == 0 ? 2 : n % 11 == 0 ? 0 : sizeof(a.buf);

	if (!dt_run(kv, c, cap, &a))
		return 2;
	dt_run(rkv, c, cap, &b);
	typed_runs++;
	typed_errors += a.ret < 0;
	if (opt.verbose) {
		dg_cmd_print(stdout, c);
		dt_print(stdout, "typed", &a);
	}
	if (dt_equal(&a, &b))
		return 0;
	fprintf(stderr,
		"diff_redis: MISMATCH at op %ld (seed %" PRIu64
		", typed, buffer %zu):\n",
		n, opt.seed, cap);
	dg_cmd_print(stderr, c);
	dt_print(stderr, "shm", &a);
	dt_print(stderr, "redis", &b);
	return 1;
}

static int run_backend(long n, const struct dg_cmd *c)
{
	int rc = n % 2 ? typed_both(n, c) : 2;

	return rc == 2 ? exec_both(n, c) : rc;
}

/*
 * The command table (shmkv_command_at) against the server's COMMAND INFO:
 * every row's arity, first and last key and key step equal Redis's, and
 * its READONLY and WRITE flags are Redis's "readonly" and "write". A
 * command Redis does not know (DELIFEQ) is reported and skipped, and the
 * stream then calls it only well-formed (redis_run emulates it).
 */
static bool has_flag(const redisReply *flags, const char *name)
{
	for (size_t i = 0; i < flags->elements; i++)
		if (strcasecmp(flags->element[i]->str, name) == 0)
			return true;
	return false;
}

/* One row against the element COMMAND INFO gave for it. Return: 0 or 1. */
static int row_differs(const struct shmkv_command *c, const redisReply *e)
{
	long long want[4] = { c->arity, c->first_key, c->last_key,
			      c->key_step };
	static const int at[4] = { 1, 3, 4, 5 };
	static const char *const what[4] = { "arity", "first key", "last key",
					     "key step" };
	const redisReply *flags = e->element[2];
	int differs = 0;

	for (int i = 0; i < 4; i++) {
		if (e->element[at[i]]->integer == want[i])
			continue;
		fprintf(stderr, "diff_redis: %s: %s %lld, Redis says %lld\n",
			c->name, what[i], want[i], e->element[at[i]]->integer);
		differs = 1;
	}
	if (has_flag(flags, "readonly") != !!(c->flags & SHMKV_CMD_READONLY) ||
	    has_flag(flags, "write") != !!(c->flags & SHMKV_CMD_WRITE)) {
		fprintf(stderr, "diff_redis: %s: readonly/write flags differ\n",
			c->name);
		differs = 1;
	}
	return differs;
}

/* Is @e a COMMAND INFO element of the shape Redis 7 gives? */
static bool info_shaped(const redisReply *e)
{
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 6 ||
	    e->element[2]->type != REDIS_REPLY_ARRAY)
		return false;
	for (size_t i = 0; i < e->element[2]->elements; i++)
		if (e->element[2]->element[i]->type != REDIS_REPLY_STATUS)
			return false;
	return e->element[1]->type == REDIS_REPLY_INTEGER &&
	       e->element[3]->type == REDIS_REPLY_INTEGER &&
	       e->element[4]->type == REDIS_REPLY_INTEGER &&
	       e->element[5]->type == REDIS_REPLY_INTEGER;
}

static int check_command_table(void)
{
	const struct shmkv_command *c;
	int failed = 0, compared = 0;

	for (size_t i = 0; (c = shmkv_command_at(i)) != NULL; i++) {
		redisReply *r = redisCommand(rc_ctx, "COMMAND INFO %s",
					     c->name);

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1) {
			fprintf(stderr, "diff_redis: COMMAND INFO %s failed\n",
				c->name);
			failed = 1;
		} else if (r->element[0]->type == REDIS_REPLY_NIL) {
			printf("diff_redis: %s is not a Redis command: its "
			       "row is not compared\n",
			       c->name);
			dg_only_well_formed(c->name);
		} else if (!info_shaped(r->element[0])) {
			fprintf(stderr,
				"diff_redis: COMMAND INFO %s: "
				"unexpected reply\n",
				c->name);
			failed = 1;
		} else {
			failed |= row_differs(c, r->element[0]);
			compared++;
		}
		if (r)
			freeReplyObject(r);
	}
	printf("diff_redis: command table: %d rows match COMMAND INFO, %s\n",
	       compared, failed ? "some differ" : "none differs");
	return failed || compared == 0;
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
	const char *key;
	size_t klen;
	int k, i, rc;

	for (k = 0; k < DG_NKEYS; k++) {
		dg_key(k, &key, &klen);
		for (i = 0; i < 2; i++) {
			struct dg_cmd c = { 0 };

			dg_cmd_adds(&c, cmds[i]);
			dg_cmd_add(&c, key, klen);
			rc = opt.backend
				     ? exec_both(opt.ops + 1 + k * 2 + i, &c)
				     : run_both(opt.ops + 1 + k * 2 + i, &c);
			dg_cmd_free(&c);
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
	      "  deadline equal to the key's own).\n"
	      "  --backend redis|cluster: the shm store against the library's\n"
	      "  Redis backend (typed calls and shmkv_exec) on this server or\n"
	      "  on a 3-master cluster started here.\n",
	      f);
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "skip", required_argument, NULL, 'x' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "backend", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ops;
	int ch, help = 0;

	opt.seed = rng_clock_seed();
	while ((ch = getopt_long(argc, argv, "s:n:x:vhb:", longopts, NULL)) !=
	       -1) {
		if (ch == 's') {
			if (arg_seed(optarg, &opt.seed))
				return -1;
		} else if (ch == 'n') {
			if (arg_u64(optarg, LONG_MAX, &ops))
				return -1;
			opt.ops = (long)ops;
		} else if (ch == 'x')
			snprintf(opt.skip, sizeof(opt.skip), "%s", optarg);
		else if (ch == 'v')
			opt.verbose = 1;
		else if (ch == 'b' && strcmp(optarg, "redis") == 0)
			opt.backend = 1;
		else if (ch == 'b' && strcmp(optarg, "cluster") == 0)
			opt.backend = 2;
		else if (ch == 'h')
			help = 1;
		else
			return -1;
	}
	if (help) {
		usage(stdout);
		exit(0);
	}
	return optind == argc ? 0 : -1;
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
	install_cleanup();
	if (start_redis() < 0 || create_store() < 0)
		return 1;
	if (check_command_table() != 0)
		return 1;
	if (opt.backend && open_backend() < 0)
		return 1;
	dg_init(opt.seed, opt.value_max, opt.skip);
	for (n = 1; n <= opt.ops && rc == 0; n++) {
		struct dg_cmd c = { 0 };

		dg_next(&c);
		rc = opt.backend ? run_backend(n, &c) : run_both(n, &c);
		if (c.sleep_ms)
			usleep(c.sleep_ms * 1000);
		dg_cmd_free(&c);
		passed += rc == 0;
	}
	if (rc == 0)
		rc = compare_keyspace(&passed);
	print_seen();
	if (opt.backend)
		printf("diff_redis: typed calls compared: %ld (%ld of them "
		       "errors)\n",
		       typed_runs, typed_errors);
	printf("diff_redis: %ld passed, %d failed (seed %" PRIu64 ")\n", passed,
	       rc != 0, opt.seed);
	return rc ? 1 : 0;
}
