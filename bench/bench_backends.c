/*
 * bench_backends.c - what leaving the host costs: the same public calls on
 * each backend, in one run.
 *
 * Targets (lib/targets.h): shmkv on a fresh shared-memory store; shmkv on
 * redis://127.0.0.1:PORT (TCP loopback), on redis+unix:// (the same
 * server's unix socket) and on redis+cluster:// (a 3-master cluster on
 * loopback, tests/helpers/redis_cluster.h); and, as baselines, bare hiredis
 * on the same server over TCP and over the socket, and on the cluster
 * straight to the master of each key: the protocol's round trip without
 * shmkv's layer. Every server is the bench's own, stopped by pid.
 *
 * Operations: GET of a present key (16-byte value), SET of a 16-byte
 * value, INCR, the safe lock cycle (shmkv_lock_try_acquire +
 * shmkv_lock_release on a free lock), the pattern lock cycle
 * (shmkv_pattern_acquire without waiting + shmkv_pattern_release); bare
 * hiredis runs GET, SET, INCR and the minimal Redis lock (SET NX PX +
 * EVALSHA compare-and-delete). Keys, counters and locks are cycled over
 * a few dozen names, so a cluster's operations spread over its masters.
 *
 * Each operation is timed alone (TSC, as bench_core) into a histogram; a
 * figure is the median over --runs runs, taken in interleaved rounds, of
 * each run's p50 and p99. One process, one connection per target: a
 * round trip's latency, not a server's throughput. The bench and its
 * servers run on one CPU unless --pin 0 (see pin_here). A target that cannot
 * be set up, or an operation that fails or answers wrong (each reply is
 * checked, after its timing), is reported "n/a" with the reason: never a
 * figure of operations that failed.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/redis_cluster.h"
#include "lib/kv.h"
#include "lib/targets.h"

enum tgt {
	T_SHM,
	T_TCP,
	T_UNIX,
	T_CLUSTER,
	T_RAW_TCP,
	T_RAW_UNIX,
	T_RAW_CLUSTER,
	T_N
};
static const char *const tgt_name[T_N] = {
	"shm",	       "redis:// TCP", "redis+unix://",	  "redis+cluster://",
	"hiredis TCP", "hiredis unix", "hiredis cluster",
};
static const char *const tgt_tag[T_N] = {
	"shm",	       "redis_tcp",    "redis_unix",	  "redis_cluster",
	"hiredis_tcp", "hiredis_unix", "hiredis_cluster",
};
/* The bare baseline of each shmkv remote target. */
static const enum tgt raw_of[T_N] = {
	[T_TCP] = T_RAW_TCP, [T_UNIX] = T_RAW_UNIX, [T_CLUSTER] = T_RAW_CLUSTER
};

#define WHY_MAX 200
#define SLICES	8 /* see measure() */

struct cell {
	enum tgt t;
	enum target_op op;
	uint64_t pos, ops;
	struct bench_lat *lat; /* per run */
	char why[WHY_MAX];     /* "" while its figures are real */
};

static struct {
	struct target tg[T_N];
	char why[T_N][WHY_MAX]; /* the target's setup failure */
	shmkv_t *kv[T_N];
	char uri[T_N][512];
	char store[64];
	char sock[64];
	char version[32]; /* redis-server's */
	struct bench_redis redis;
	struct redis_cluster cluster;
	int cluster_up;
	int cpu; /* pinned to it with the servers, or -1 */
	struct bench_timer timer;
	struct cell cells[T_N * OP_N];
	unsigned ncells;
} B;

/* Operations per timed run: a round trip is ~100x a shared-memory call. */
static uint64_t ops_for(enum tgt t, int quick)
{
	if (t == T_SHM)
		return quick ? 1024 : 20000;
	return quick ? 128 : 4000; /* multiples of SLICES */
}

static void set_why(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_why(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_MAX, fmt, ap);
	va_end(ap);
}

/*
 * Setup.
 */
static void setup_shm(void)
{
	struct shmkv_config cfg;
	int err;

	shmkv_config_init(&cfg);
	err = bench_store_create("backends", &cfg, &B.kv[T_SHM], B.store);
	if (err) {
		set_why(B.why[T_SHM], "shmkv_create: %s", shmkv_strerror(err));
		return;
	}
	snprintf(B.uri[T_SHM], sizeof(B.uri[T_SHM]), "%s", B.store);
	if (target_shmkv(&B.tg[T_SHM], tgt_name[T_SHM], tgt_tag[T_SHM], T_SHM,
			 B.kv[T_SHM]))
		set_why(B.why[T_SHM], "%s", B.tg[T_SHM].why);
}

static void setup_servers(void)
{
	static const char no_server[] =
		"redis-server could not be started on 127.0.0.1";

	snprintf(B.sock, sizeof(B.sock), "/tmp/shmkv-bench-%d.sock",
		 (int)getpid());
	if (bench_redis_start_unix(&B.redis, B.sock) != 0) {
		set_why(B.why[T_TCP], "%s", no_server);
		set_why(B.why[T_UNIX], "%s", no_server);
		set_why(B.why[T_RAW_TCP], "%s", no_server);
		set_why(B.why[T_RAW_UNIX], "%s", no_server);
	} else {
		snprintf(B.uri[T_TCP], sizeof(B.uri[T_TCP]),
			 "redis://127.0.0.1:%d", B.redis.port);
		snprintf(B.uri[T_UNIX], sizeof(B.uri[T_UNIX]),
			 "redis+unix://%s", B.sock);
	}
	if (redis_cluster_start(&B.cluster, "shmkv-bench") != 0) {
		set_why(B.why[T_CLUSTER], "the 3-master cluster could not be "
					  "started");
		set_why(B.why[T_RAW_CLUSTER], "%s", B.why[T_CLUSTER]);
		return;
	}
	B.cluster_up = 1;
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++)
		bench_cleanup_pid(B.cluster.node[i].pid);
	snprintf(B.uri[T_CLUSTER], sizeof(B.uri[T_CLUSTER]),
		 "redis+cluster://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
		 B.cluster.node[0].port, B.cluster.node[1].port,
		 B.cluster.node[2].port);
}

/* shmkv_open of the remote target @t's URI, then its target. */
static void setup_remote(enum tgt t)
{
	int err;

	if (B.why[t][0])
		return;
	err = shmkv_open(B.uri[t], 0, &B.kv[t]);
	if (err) {
		B.kv[t] = NULL;
		set_why(B.why[t], "shmkv_open: %s", shmkv_strerror(err));
		return;
	}
	if (target_shmkv(&B.tg[t], tgt_name[t], tgt_tag[t], t, B.kv[t]))
		set_why(B.why[t], "%s", B.tg[t].why);
}

static void setup_raw(enum tgt t)
{
	int cluster = t == T_RAW_CLUSTER;
	int port = cluster ? B.cluster.node[0].port : B.redis.port;

	if (B.why[t][0])
		return;
	if (target_hiredis(&B.tg[t], tgt_name[t], tgt_tag[t], t,
			   t == T_RAW_UNIX ? B.sock : NULL, port, cluster))
		set_why(B.why[t], "%s", B.tg[t].why);
}

/* "INFO server"'s redis_version, for the table's header. */
static void read_version(void)
{
	const struct target *t = &B.tg[T_RAW_TCP];
	redisReply *r;
	const char *v;

	snprintf(B.version, sizeof(B.version), "?");
	if (B.why[T_RAW_TCP][0] || !t->node[0])
		return;
	r = redisCommand(t->node[0], "INFO server");
	if (r && r->type == REDIS_REPLY_STRING &&
	    (v = strstr(r->str, "redis_version:")))
		snprintf(B.version, sizeof(B.version), "%.*s",
			 (int)strcspn(v + 14, "\r\n"), v + 14);
	freeReplyObject(r);
}

static void setup(void)
{
	bench_timer_init(&B.timer);
	setup_shm();
	setup_servers();
	for (enum tgt t = T_TCP; t <= T_CLUSTER; t++)
		setup_remote(t);
	for (enum tgt t = T_RAW_TCP; t < T_N; t++)
		setup_raw(t);
	read_version();
}

/* Closes the handles before the servers go. */
static void teardown(void)
{
	for (enum tgt t = T_TCP; t < T_N; t++) {
		target_close(&B.tg[t]);
		shmkv_close(B.kv[t]);
		B.kv[t] = NULL;
	}
	bench_redis_stop(&B.redis);
	if (B.cluster_up) {
		for (int i = 0; i < REDIS_CLUSTER_NODES; i++)
			bench_cleanup_forget_pid(B.cluster.node[i].pid);
		redis_cluster_cleanup(&B.cluster);
		B.cluster_up = 0;
	}
	if (B.kv[T_SHM])
		bench_store_destroy(B.kv[T_SHM], B.store);
	B.kv[T_SHM] = NULL;
}

/*
 * Measuring.
 */
static int make_cells(unsigned runs, int quick)
{
	for (enum target_op op = 0; op < OP_N; op++)
		for (enum tgt t = 0; t < T_N; t++) {
			struct cell *c = &B.cells[B.ncells];

			/* A target that is not up still has its cells:
			 * the tables name the reason in them. */
			if (!target_has(t >= T_RAW_TCP, op))
				continue;
			B.ncells++;
			c->t = t, c->op = op, c->ops = ops_for(t, quick);
			c->pos = (uint64_t)B.ncells * 7;
			c->lat = calloc(runs, sizeof(*c->lat));
			if (!c->lat)
				return -ENOMEM;
			if (B.why[t][0])
				memcpy(c->why, B.why[t], WHY_MAX);
			else if ((op == OP_SAFE || op == OP_PATTERN) &&
				 target_locks(&B.tg[t], op))
				set_why(c->why, "%s", B.tg[t].why);
			B.tg[t].why[0] = '\0';
		}
	return 0;
}

/*
 * @ops operations of @c, each timed alone into @h when @h is not NULL
 * (a warm-up is not), each reply checked after its timing. The names
 * are visited with an odd stride, so each run cycles through all of them.
 * Return: 0, or -1 with the reason in c->why.
 */
static int run_cell(struct cell *c, uint64_t ops, struct bench_hist *h)
{
	struct target *t = &B.tg[c->t];

	for (uint64_t k = 0; k < ops; k++) {
		uint32_t i = (uint32_t)(c->pos++ * 37u);
		uint64_t t0 = bench_tick_begin(), t1;

		target_do(t, c->op, i);
		t1 = bench_tick_end();
		if (target_check(t, c->op, i)) {
			memcpy(c->why, t->why, WHY_MAX);
			t->why[0] = '\0'; /* the next operation's own */
			return -1;
		}
		if (h)
			bench_hist_add(
				h, bench_sample(t1 - t0, B.timer.overhead, 1),
				1);
	}
	return 0;
}

/* Connections made, scripts loaded, caches warm before the first round;
 * an operation that fails here is out before any figure is taken. */
static void warm_up(void)
{
	for (unsigned i = 0; i < B.ncells; i++)
		if (!B.cells[i].why[0])
			run_cell(&B.cells[i], B.cells[i].ops / 10 + 1, NULL);
}

/*
 * A run of every cell is taken in SLICES passes over all cells, each
 * pass timing 1/SLICES of every cell's operations: a loopback round trip
 * on a shared VM changes with the machine's load from one moment to the
 * next, and shmkv's figure and its bare baseline's, taken a few ms apart
 * all through the run, see the same moments.
 */
static int measure(unsigned runs)
{
	struct bench_hist *h = calloc(B.ncells, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (unsigned r = 0; r < runs; r++) {
		for (unsigned i = 0; i < B.ncells; i++)
			bench_hist_reset(&h[i]);
		for (unsigned s = 0; s < SLICES; s++)
			for (unsigned i = 0; i < B.ncells; i++) {
				struct cell *c = &B.cells[i];

				if (!c->why[0])
					run_cell(c, c->ops / SLICES, &h[i]);
			}
		for (unsigned i = 0; i < B.ncells; i++)
			if (!B.cells[i].why[0])
				bench_hist_summary(&h[i], &B.timer,
						   &B.cells[i].lat[r]);
		bench_progress(r + 1, runs);
	}
	free(h);
	return 0;
}

/*
 * Report.
 */
struct fig {
	double p50, p99, mean, p50_min, p50_max;
};

static const struct cell *find(enum tgt t, enum target_op op)
{
	for (unsigned i = 0; i < B.ncells; i++)
		if (B.cells[i].t == t && B.cells[i].op == op)
			return &B.cells[i];
	return NULL;
}

/* The figure of @t's @op, or NULL when there is none (no such cell, or
 * n/a). */
static const struct cell *fig_of(enum tgt t, enum target_op op, unsigned runs,
				 struct fig *f)
{
	const struct cell *c = find(t, op);
	double v[3][BENCH_RUNS_MAX];

	if (!c || c->why[0])
		return NULL;
	f->p50_min = f->p50_max = c->lat[0].p50;
	for (unsigned r = 0; r < runs; r++) {
		v[0][r] = c->lat[r].p50, v[1][r] = c->lat[r].p99;
		v[2][r] = c->lat[r].mean;
		f->p50_min = v[0][r] < f->p50_min ? v[0][r] : f->p50_min;
		f->p50_max = v[0][r] > f->p50_max ? v[0][r] : f->p50_max;
	}
	f->p50 = bench_median(v[0], runs);
	f->p99 = bench_median(v[1], runs);
	f->mean = bench_median(v[2], runs);
	return c;
}

static void print_main(unsigned runs)
{
	static const enum target_op ops[] = { OP_GET, OP_SET, OP_INCR, OP_SAFE,
					      OP_PATTERN };
	struct fig f, base;

	printf("\nns per operation, p50 / p99 (median of %u runs); in "
	       "brackets: p50 / shm's p50\n  %-14s",
	       runs, "operation");
	for (enum tgt t = T_SHM; t <= T_CLUSTER; t++)
		printf(" %28s", tgt_name[t]);
	printf("\n");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int have_base = fig_of(T_SHM, ops[i], runs, &base) != NULL;

		printf("  %-14s", target_op_name[ops[i]]);
		for (enum tgt t = T_SHM; t <= T_CLUSTER; t++) {
			char buf[64];

			if (!fig_of(t, ops[i], runs, &f))
				snprintf(buf, sizeof(buf), "n/a");
			else if (t == T_SHM || !have_base || base.p50 < 1)
				snprintf(buf, sizeof(buf), "%.0f / %.0f", f.p50,
					 f.p99);
			else
				snprintf(buf, sizeof(buf),
					 "%.0f / %.0f (%.0fx)", f.p50, f.p99,
					 f.p50 / base.p50);
			printf(" %28s", buf);
		}
		printf("\n");
	}
}

/* shmkv's figure beside bare hiredis's on the same transport. */
static void print_layer(unsigned runs)
{
	static const enum target_op ops[] = { OP_GET, OP_SET, OP_INCR,
					      OP_SAFE };
	struct fig f, raw;

	printf("\nshmkv's layer: p50 ns, shmkv / bare hiredis on the same "
	       "server (safe lock: beside SET NX PX + EVALSHA del)\n  %-14s",
	       "operation");
	for (enum tgt t = T_TCP; t <= T_CLUSTER; t++)
		printf(" %28s", tgt_name[t]);
	printf("\n");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		enum target_op rop = ops[i] == OP_SAFE ? OP_RAWLOCK : ops[i];

		printf("  %-14s", target_op_name[ops[i]]);
		for (enum tgt t = T_TCP; t <= T_CLUSTER; t++) {
			char buf[64];

			if (!fig_of(t, ops[i], runs, &f) ||
			    !fig_of(raw_of[t], rop, runs, &raw))
				snprintf(buf, sizeof(buf), "n/a");
			else
				snprintf(buf, sizeof(buf),
					 "%.0f / %.0f (%+.0f)", f.p50, raw.p50,
					 f.p50 - raw.p50);
			printf(" %28s", buf);
		}
		printf("\n");
	}
}

/* Each target that could not be set up once, then each operation that
 * failed on a target that was. */
static void print_missing(void)
{
	int any = 0;

	for (enum tgt t = 0; t < T_N; t++)
		if (B.why[t][0] && !any++)
			printf("\nnot available:\n  %s: %s\n", tgt_name[t],
			       B.why[t]);
		else if (B.why[t][0])
			printf("  %s: %s\n", tgt_name[t], B.why[t]);
	for (unsigned i = 0; i < B.ncells; i++) {
		const struct cell *c = &B.cells[i];

		if (!c->why[0] || B.why[c->t][0])
			continue;
		if (!any++)
			printf("\nnot available:\n");
		printf("  %s, %s: %s\n", tgt_name[c->t], target_op_name[c->op],
		       c->why);
	}
}

/* @why as one CSV field: no commas, quotes or line breaks. */
static void csv_field(char *out, const char *why)
{
	size_t i;

	for (i = 0; i < WHY_MAX - 1 && why[i]; i++)
		out[i] = strchr(",\"\r\n", why[i]) ? ';' : why[i];
	out[i] = '\0';
}

static int write_csv(struct bench_csv *csv, unsigned runs)
{
	char note[WHY_MAX];
	struct fig f;
	int err = 0;

	for (unsigned i = 0; i < B.ncells && !err; i++) {
		const struct cell *c = &B.cells[i];
		const char *t = tgt_tag[c->t], *op = target_op_tag[c->op];

		if (!fig_of(c->t, c->op, runs, &f)) {
			csv_field(note, c->why);
			err = bench_csv_row(csv, "%s,%s,,,,,,%u,%llu,n/a: %s",
					    t, op, runs,
					    (unsigned long long)c->ops, note);
			continue;
		}
		err = bench_csv_row(
			csv, "%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%u,%llu,ok", t, op,
			f.p50, f.p99, f.mean, f.p50_min, f.p50_max, runs,
			(unsigned long long)c->ops);
	}
	if (err) {
		bench_csv_abort(csv);
		return err;
	}
	return bench_csv_close(csv);
}

static const char csv_columns[] =
	"target,op,p50_ns,p99_ns,mean_ns,p50_min_ns,p50_max_ns,runs,"
	"ops_per_run,status";

static void print_header(const struct bench_opts *o, unsigned runs)
{
	bench_title("backends: shared memory, Redis, Redis Cluster", o->quick);
	printf("# redis-server: %s, started by the bench on loopback (no "
	       "persistence); cluster: 3 masters, no replicas\n",
	       B.version);
	for (enum tgt t = T_SHM; t <= T_CLUSTER; t++)
		printf("# store %s: %s\n", tgt_name[t],
		       B.uri[t][0] ? B.uri[t] : "-");
	printf("# method: %u runs per figure in interleaved rounds; each run "
	       "times %llu operations one by one (shm: %llu), each alone "
	       "(TSC), in %d slices interleaved with every other figure's; "
	       "one process, one connection per target\n",
	       runs, (unsigned long long)ops_for(T_TCP, o->quick),
	       (unsigned long long)ops_for(T_SHM, o->quick), SLICES);
	if (B.cpu >= 0)
		printf("# cpu: the bench and its servers pinned to CPU %d "
		       "(--pin 0: unpinned)\n",
		       B.cpu);
	else
		printf("# cpu: not pinned: bench and servers where the "
		       "scheduler puts them\n");
	printf("# names: %u keys, %u counters, %u locks of each kind, "
	       "cycled; values %u bytes; lock lease %d ms\n",
	       TARGET_KEYS, TARGET_KEYS, TARGET_LOCKS, TARGET_VLEN,
	       TARGET_LEASE_MS);
}

/*
 * Pins this process, and so the servers it forks, to the CPU it runs on.
 * A round trip between two CPUs of a VM costs two to three times more
 * when the machine is idle (the other virtual CPU halts and must be woken
 * by the host) than when other jobs keep it busy, so unpinned figures
 * follow the machine's load; on one CPU a round trip is the syscalls and
 * two context switches, whatever the load. Return: the CPU, or -1.
 */
static int pin_here(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 ? cpu : -1;
}

int main(int argc, char **argv)
{
	unsigned pin = 1;
	const struct bench_extra_opt extra[] = {
		{ "pin",
		  "1 (default): run on one CPU, the servers too; 0: where "
		  "the scheduler puts each",
		  0, 1, &pin },
	};
	struct bench_opts o;
	/* static: the exit handler reads it after main returns */
	static struct bench_csv csv;
	int err;

	bench_opts_parse(argc, argv,
			 "The same shmkv calls on shared memory, Redis over "
			 "TCP and a unix socket, and a Redis Cluster.",
			 extra, 1, &o);
	bench_begin(&o, 2, 7);
	B.cpu = pin ? pin_here() : -1;
	/* A server that goes away mid-run must fail its figures, not kill
	 * the bench (hiredis writes with write(2): a reset socket raises
	 * SIGPIPE) and leave the others' servers running. */
	signal(SIGPIPE, SIG_IGN);
	if (o.csv && (err = bench_csv_open(&csv, o.csv, csv_columns))) {
		fprintf(stderr, "bench_backends: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	bench_cleanup_csv(&csv);
	setup();
	if (make_cells(o.runs, o.quick)) {
		fprintf(stderr, "bench_backends: out of memory\n");
		teardown();
		return 1;
	}
	print_header(&o, o.runs);
	fflush(stdout);
	warm_up();
	if (measure(o.runs)) {
		fprintf(stderr, "bench_backends: out of memory\n");
		teardown();
		return 1;
	}
	print_main(o.runs);
	print_layer(o.runs);
	print_missing();
	printf("# load average at the end: %.2f\n", bench_loadavg());
	teardown();
	if (o.csv && (err = write_csv(&csv, o.runs))) {
		fprintf(stderr, "bench_backends: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
