/*
 * test_multiproc.c - many real processes on one store.
 *
 * Each test forks (or fork+execs) at least four processes that hammer one
 * store at the same time, then the parent checks what only holds if every
 * command was one atomic step: one SETNX winner per key, no GETSET value
 * lost or returned twice, no key in two slots, no increment lost, no slot
 * or value block leaked by processes SIGKILLed mid-command, and the demo's
 * SETNX lock losing no update.
 *
 * The 10,000,000-command churn runs only with SHMKV_LONG=1 (it shows as
 * skipped otherwise). SHMKV_SEED replays the random choices of a run;
 * SHMKV_MP_WORKER overrides the path of the mp_worker program.
 *
 * Children never assert: they report through their exit status and a
 * report slot in a MAP_SHARED|MAP_ANONYMOUS mapping, and the parent asserts
 * once every child has been reaped. Every loop is bounded by a count, so a
 * lost wake-up or a hung child fails the test instead of hanging it; no
 * assertion depends on how long anything took.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/testutil.h"

#define NPROC	4 /* processes racing in each test */
#define MAXPROC 8 /* report slots in a shared area */

/*
 * sched_yield rounds a barrier waits before it calls the other side stuck.
 * Far more than any healthy run needs on a loaded machine: it only turns a
 * lost wake-up or a hung process into a failure instead of a hang.
 */
#define SPIN_MAX 400000000ul
/* How often (in spin rounds) a waiter checks that its partners live. */
#define SPIN_CHECK 1024ul

/* Exit statuses of the forked children (0: success). */
enum child_exit {
	CHILD_OPEN = 10,  /* shmkv_open failed */
	CHILD_CMD = 11,	  /* a command returned what it must not */
	CHILD_VALUE = 12, /* a value read is not one that was written */
	CHILD_STUCK = 13, /* a barrier wait ran out of rounds */
};

/* What a failing child tells the parent, beyond its exit status. */
struct report {
	int err;       /* the offending return code */
	long step;     /* loop index where it happened */
	char what[96]; /* the command and key */
};

static int child_fail(struct report *r, int code, int err, long step,
		      const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int child_fail(struct report *r, int code, int err, long step,
		      const char *fmt, ...)
{
	va_list ap;

	r->err = err;
	r->step = step;
	va_start(ap, fmt);
	vsnprintf(r->what, sizeof(r->what), fmt, ap);
	va_end(ap);
	return code;
}

/* Zeroed memory shared with every child forked after this call. */
static void *shared_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED, "mmap %zu shared bytes: %s", len,
		      strerror(errno));
	return p;
}

/* splitmix64: a small, seedable generator, one per process. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rng_next(s) % n);
}

/* The seed of this run: SHMKV_SEED if set, else the clock. Logged so a
 * failing run can be replayed as far as scheduling allows. */
static uint64_t run_seed(void)
{
	const char *env = getenv("SHMKV_SEED");
	uint64_t seed;
	struct timespec ts;

	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
		       (uint64_t)getpid();
	}
	cr_log_info("seed %llu (set SHMKV_SEED to reuse)",
		    (unsigned long long)seed);
	return seed;
}

/*
 * Values.
 */

/* Whether @s is the canonical decimal form of a signed 48-bit integer:
 * those are the values the store keeps inline, without a value block. */
static bool is_int48(const char *s, size_t len)
{
	int64_t v = 0;
	size_t i = 0;
	bool neg = false;

	if (len == 0 || len > 16)
		return false;
	if (len == 1 && s[0] == '0')
		return true;
	if (s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i >= len || s[i] < '1' || s[i] > '9')
		return false;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	return neg ? v <= ((int64_t)1 << 47) : v < ((int64_t)1 << 47);
}

/* Whether @s is any canonical decimal int64 (what INCR may leave). */
static bool is_canonical_int(const char *s, size_t len)
{
	uint64_t v = 0;
	size_t i = 0;

	if (len == 0 || len > 20)
		return false;
	if (len == 1 && s[0] == '0')
		return true;
	if (s[0] == '-')
		i = 1;
	if (i >= len || s[i] < '1' || s[i] > '9')
		return false;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > UINT64_MAX / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return s[0] == '-' ? v <= (uint64_t)INT64_MAX + 1 : v <= INT64_MAX;
}

/* Pads @buf (holding @n bytes) with 'x' to @len bytes: > 8 bytes and not
 * an integer, so such a value always lives in a value block. */
static size_t pad_x(char *buf, int n, size_t len)
{
	size_t at = n < 0 ? 0 : (size_t)n;

	while (at < len)
		buf[at++] = 'x';
	return at;
}

/*
 * mp_worker's self-checking string values: "S<seq>:" then letters that
 * depend on seq and position, 16 + seq % 100 bytes in all. A value torn
 * between two writes, or copied from a reused block, fails the check.
 * Must match tests/mp_worker.c.
 */
static bool worker_value_ok(const char *v, size_t len)
{
	uint64_t seq = 0;
	size_t i = 1;

	if (is_canonical_int(v, len))
		return true;
	if (len < 3 || v[0] != 'S')
		return false;
	for (; i < len && v[i] >= '0' && v[i] <= '9' && i < 12; i++)
		seq = seq * 10 + (uint64_t)(v[i] - '0');
	if (i == 1 || i >= len || v[i] != ':' || seq > UINT32_MAX ||
	    len != 16 + seq % 100)
		return false;
	for (size_t j = i + 1; j < len; j++)
		if (v[j] != (char)('a' + (seq + j) % 26))
			return false;
	return true;
}

/*
 * Process teams: forked children that run a function and exit.
 */

typedef int (*child_fn)(int idx, void *arg);

struct team {
	int n;
	pid_t pid[MAXPROC];
	int status[MAXPROC];
	bool reaped[MAXPROC];
	bool killed[MAXPROC]; /* by team_finish: not the child's fault */
};

/* Forks @n children running @fn(i, @arg); they never return to Criterion:
 * _exit skips the atexit hooks that would unlink the test's store. */
static void team_start(struct team *t, int n, child_fn fn, void *arg)
{
	memset(t, 0, sizeof(*t));
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(fn(i, arg));
		cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
		t->pid[i] = pid;
		t->n++;
	}
}

static bool status_ok(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Reaps child @i if it has exited (or waits for it with @flags 0). */
static void team_reap(struct team *t, int i, int flags)
{
	pid_t r;

	if (t->reaped[i])
		return;
	do {
		r = waitpid(t->pid[i], &t->status[i], flags);
	} while (r < 0 && errno == EINTR);
	if (r == t->pid[i])
		t->reaped[i] = true;
}

/* Whether a child has already died of something other than success. */
static bool team_crashed(struct team *t)
{
	for (int i = 0; i < t->n; i++) {
		team_reap(t, i, WNOHANG);
		if (t->reaped[i] && !status_ok(t->status[i]))
			return true;
	}
	return false;
}

/* Reaps every child; with @kill_first, SIGKILLs the live ones first. */
static void team_finish(struct team *t, bool kill_first)
{
	for (int i = 0; i < t->n; i++) {
		if (kill_first && !t->reaped[i]) {
			kill(t->pid[i], SIGKILL);
			t->killed[i] = true;
		}
		team_reap(t, i, 0);
	}
}

/* Asserts that every child exited 0, naming the first that did not; the
 * ones team_finish killed are left to the parent's own verdict. */
static void team_assert_ok(struct team *t, const struct report *rep)
{
	for (int i = 0; i < t->n; i++) {
		int st = t->status[i];

		cr_assert(t->reaped[i], "child %d was not reaped", i);
		if (t->killed[i])
			continue;
		cr_assert(!WIFSIGNALED(st), "child %d killed by signal %d", i,
			  WTERMSIG(st));
		cr_assert(status_ok(st),
			  "child %d exited %d at step %ld: %s -> %s", i,
			  WEXITSTATUS(st), rep[i].step, rep[i].what,
			  tu_rcname(rep[i].err));
	}
}

/* Parent side of a barrier: waits for *@c >= @target while the children
 * live. Return: 0, -ECHILD (a child failed first) or -ETIMEDOUT. */
static int parent_wait(struct team *t, atomic_uint *c, unsigned target)
{
	for (unsigned long i = 0; i < SPIN_MAX; i++) {
		if (atomic_load(c) >= target)
			return 0;
		if (i % SPIN_CHECK == SPIN_CHECK - 1 && team_crashed(t))
			return -ECHILD;
		sched_yield();
	}
	return -ETIMEDOUT;
}

/* Child side: waits for *@c >= @target while the parent lives. */
static int child_wait(atomic_uint *c, unsigned target, pid_t parent)
{
	for (unsigned long i = 0; i < SPIN_MAX; i++) {
		if (atomic_load(c) >= target)
			return 0;
		if (i % SPIN_CHECK == 0 && getppid() != parent)
			return -ECHILD;
		sched_yield();
	}
	return -ETIMEDOUT;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Children-only barrier: arrives at *@c and returns once it reaches
 * @target. It spins a little before each yield, so that the children on a
 * CPU when the last one arrives all leave within nanoseconds of each other
 * and their commands really overlap; a barrier released by the parent
 * would let them go one context switch apart.
 */
static int child_gather(atomic_uint *c, unsigned target, pid_t parent)
{
	atomic_fetch_add(c, 1);
	for (unsigned long i = 0; i < SPIN_MAX; i++) {
		if (atomic_load(c) >= target)
			return 0;
		if (i % SPIN_CHECK == 0 && getppid() != parent)
			return -ECHILD;
		if (i % 64 == 63)
			sched_yield();
		else
			cpu_relax();
	}
	return -ETIMEDOUT;
}

/*
 * Looking at the whole store.
 */

#define KEY_CAP 64

struct kl_key {
	uint32_t len;
	char b[KEY_CAP];
};

struct keylist {
	struct kl_key *k;
	size_t n, cap;
	size_t too_long; /* keys longer than KEY_CAP: not ours */
};

static int keylist_add(const void *key, size_t klen, void *arg)
{
	struct keylist *l = arg;

	if (klen > KEY_CAP) {
		l->too_long++;
		return 0;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->k = realloc(l->k, l->cap * sizeof(*l->k));
		if (!l->k)
			return -ENOMEM;
	}
	l->k[l->n].len = (uint32_t)klen;
	memcpy(l->k[l->n].b, key, klen);
	l->n++;
	return 0;
}

static int kl_cmp(const void *a, const void *b)
{
	const struct kl_key *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->b, y->b, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Every key a full scan visits; the scan is bounded by the slot count. */
static int scan_all(shmkv_t *kv, uint64_t slots, struct keylist *l)
{
	uint64_t cursor = 0, next = 0, calls = 0;
	int rc;

	memset(l, 0, sizeof(*l));
	do {
		rc = shmkv_scan(kv, cursor, 64, keylist_add, l, &next);
		if (rc)
			return rc < 0 ? rc : -EIO;
		cursor = next;
		if (++calls > slots + 2)
			return -ELOOP;
	} while (cursor != 0);
	if (l->n)
		qsort(l->k, l->n, sizeof(*l->k), kl_cmp);
	return 0;
}

static size_t keylist_dups(const struct keylist *l, size_t *first)
{
	size_t dups = 0;

	for (size_t i = 1; i < l->n; i++) {
		if (kl_cmp(&l->k[i - 1], &l->k[i]) == 0) {
			if (!dups)
				*first = i;
			dups++;
		}
	}
	return dups;
}

static uint64_t blocks_used(const struct shmkv_stats *st)
{
	uint64_t used = 0;
	uint32_t n = st->classes < 24 ? st->classes : 24;

	for (uint32_t i = 0; i < n; i++)
		used += st->cls[i].used;
	return used;
}

/*
 * A census of a quiescent store: every key the scan visits is read back,
 * and what was read is compared with what shmkv_stats counted.
 */
struct census {
	struct keylist keys;
	size_t dups, first_dup;
	size_t live;	   /* scanned keys GET finds */
	size_t need_block; /* of those: a non-int48 value or a TTL */
	size_t bad_values; /* values the validator refused */
	struct shmkv_stats st;
};

typedef bool (*value_ok_fn)(const char *v, size_t len);

/* Reads one scanned key; returns a negative errno if GET or PTTL failed. */
static int census_key(shmkv_t *kv, struct census *c, const struct kl_key *k,
		      value_ok_fn ok)
{
	char buf[SHMKV_VALUE_MAX_DEFAULT];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	int64_t ttl = 0;
	int rc = shmkv_get(kv, k->b, k->len, &v);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return 0;
	rc = shmkv_pttl(kv, k->b, k->len, &ttl);
	if (rc < 0)
		return rc;
	c->live++;
	if (!is_int48(buf, v.len) || ttl != -1)
		c->need_block++;
	if (ok && !ok(buf, v.len))
		c->bad_values++;
	return 0;
}

static int census_take(shmkv_t *kv, uint64_t slots, struct census *c,
		       value_ok_fn ok)
{
	int rc;

	memset(c, 0, sizeof(*c));
	rc = scan_all(kv, slots, &c->keys);
	if (rc)
		return rc;
	c->dups = keylist_dups(&c->keys, &c->first_dup);
	for (size_t i = 0; i < c->keys.n; i++) {
		rc = census_key(kv, c, &c->keys.k[i], ok);
		if (rc)
			return rc;
	}
	return shmkv_stats(kv, &c->st);
}

/* Checks a census; @expect_live < 0 means "any". Return: 0, or -1 and a
 * reason in @why. */
static int census_check(const struct census *c, long expect_live, char *why,
			size_t cap)
{
	const struct shmkv_stats *st = &c->st;

	if (c->dups)
		snprintf(why, cap,
			 "scan visited %zu keys twice, first \"%.*s\"", c->dups,
			 (int)c->keys.k[c->first_dup].len,
			 c->keys.k[c->first_dup].b);
	else if (c->keys.too_long)
		snprintf(why, cap, "scan visited %zu keys no test wrote",
			 c->keys.too_long);
	else if (c->live != c->keys.n)
		snprintf(why, cap, "scan visited %zu keys, GET found %zu",
			 c->keys.n, c->live);
	else if (expect_live >= 0 && c->live != (size_t)expect_live)
		snprintf(why, cap, "%zu live keys, expected %ld", c->live,
			 expect_live);
	else if (st->live_keys != c->live)
		snprintf(why, cap, "stats count %llu live keys, scan %zu",
			 (unsigned long long)st->live_keys, c->live);
	else if (st->pending || st->corrupt)
		snprintf(why, cap, "stats: %llu pending, %llu corrupt slots",
			 (unsigned long long)st->pending,
			 (unsigned long long)st->corrupt);
	else if (blocks_used(st) != c->need_block)
		snprintf(why, cap,
			 "%llu value blocks used, %zu live keys need one",
			 (unsigned long long)blocks_used(st), c->need_block);
	else if (c->bad_values)
		snprintf(why, cap, "%zu values were never written",
			 c->bad_values);
	else
		return 0;
	return -1;
}

/* Takes and checks a census, asserting both steps. */
static void assert_census(shmkv_t *kv, uint64_t slots, long expect_live,
			  value_ok_fn ok, const char *when)
{
	struct census c;
	char why[256];
	int rc = census_take(kv, slots, &c, ok);

	cr_assert_eq(rc, 0, "%s: census failed: %s", when, tu_rcname(rc));
	rc = census_check(&c, expect_live, why, sizeof(why));
	free(c.keys.k);
	cr_assert_eq(rc, 0, "%s: %s", when, why);
}

static shmkv_t *create_store(char name[TU_NAME_CAP], uint32_t slots,
			     uint64_t value_memory)
{
	struct shmkv_config cfg = tu_config(slots, 0, 0, value_memory);

	return tu_create(&cfg, name);
}

/* Opens the store in a child; never asserts. */
static int child_open(const char *name, shmkv_t **kv, struct report *rep)
{
	int rc = shmkv_open(name, 0, kv);

	return rc ? child_fail(rep, CHILD_OPEN, rc, -1, "open %s", name) : 0;
}

/* GET of @key (a string) into @buf; returns GET's result. */
static int get_str(shmkv_t *kv, const char *key, char *buf, size_t cap,
		   size_t *len)
{
	struct shmkv_value v = { buf, cap, 0 };
	int rc = shmkv_get(kv, key, strlen(key), &v);

	*len = v.len;
	return rc;
}

/*
 * SETNX races: every round, NPROC children SETNX the same keys at once and
 * exactly one may win each. Between rounds the parent checks the winner's
 * value is the one stored, then deletes the keys (or moves to fresh ones).
 */

#define RACE_ROUNDS_MAX 30000
#define RACE_KEYS_MAX	32

struct race_cfg {
	unsigned rounds, keys;
	uint32_t slots;
	bool fresh;	  /* new keys every round instead of DEL */
	bool check_round; /* census after every round */
};

struct race_area {
	struct report rep[MAXPROC];
	struct race_cfg cfg;
	char name[TU_NAME_CAP];
	pid_t parent;
	uint64_t seed;
	atomic_uint go;	     /* rounds opened by the parent */
	atomic_uint ready;   /* children at the start line, all rounds */
	atomic_uint arrived; /* child replies over all rounds */
	atomic_uint wins[RACE_ROUNDS_MAX * RACE_KEYS_MAX];
	atomic_int winner[RACE_ROUNDS_MAX * RACE_KEYS_MAX];
};

static size_t race_key(char *buf, const struct race_cfg *cfg, unsigned r,
		       unsigned k)
{
	if (cfg->fresh)
		return (size_t)sprintf(buf, "r%u-k%u", r, k);
	return (size_t)sprintf(buf, "k%u", k);
}

/* Half the values are inline integers, half need a block. */
static size_t race_value(char *buf, int idx, unsigned r, unsigned k)
{
	if ((r + k) % 2 == 0)
		return (size_t)sprintf(buf, "%u",
				       (idx + 1) * 1000000u +
					       r * RACE_KEYS_MAX + k);
	return pad_x(buf, sprintf(buf, "c%d-r%u-k%u-", idx, r, k), 40);
}

/* Even rounds: all children take the keys in one order, so they collide
 * on each key; odd rounds: each its own order, so inserts of different
 * keys compete for the same free slots. */
static int race_round(shmkv_t *kv, struct race_area *a, int idx, unsigned r,
		      uint64_t *own_rng)
{
	unsigned order[RACE_KEYS_MAX], n = a->cfg.keys;
	uint64_t shared_rng = a->seed ^ r, *rng = r % 2 ? own_rng : &shared_rng;
	char key[32], val[64];

	for (unsigned k = 0; k < n; k++)
		order[k] = k;
	for (unsigned k = n; k > 1; k--) {
		unsigned j = rng_below(rng, k), tmp = order[k - 1];

		order[k - 1] = order[j];
		order[j] = tmp;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned k = order[i], slot = r * RACE_KEYS_MAX + k;
		size_t kl = race_key(key, &a->cfg, r, k);
		size_t vl = race_value(val, idx, r, k);
		int rc = shmkv_setnx(kv, key, kl, val, vl);

		if (rc == 1) {
			atomic_fetch_add(&a->wins[slot], 1);
			atomic_store(&a->winner[slot], idx);
		} else if (rc != 0) {
			return child_fail(&a->rep[idx], CHILD_CMD, rc, r,
					  "SETNX %s", key);
		}
	}
	return 0;
}

static int race_child(int idx, void *arg)
{
	struct race_area *a = arg;
	uint64_t rng = a->seed + (uint64_t)idx * 7919;
	shmkv_t *kv = NULL;
	int rc = child_open(a->name, &kv, &a->rep[idx]);

	for (unsigned r = 0; rc == 0 && r < a->cfg.rounds; r++) {
		if (child_wait(&a->go, r + 1, a->parent) ||
		    child_gather(&a->ready, (r + 1) * NPROC, a->parent))
			return child_fail(&a->rep[idx], CHILD_STUCK, 0, r,
					  "waiting for round %u", r);
		rc = race_round(kv, a, idx, r, &rng);
		atomic_fetch_add(&a->arrived, 1);
	}
	shmkv_close(kv);
	return rc;
}

/* Parent's check of one round; returns 0 or -1 with @why filled. */
static int race_check_round(shmkv_t *kv, struct race_area *a, unsigned r,
			    char *why, size_t cap)
{
	char key[32], want[64], got[SHMKV_VALUE_MAX_DEFAULT];
	size_t wl, gl;

	for (unsigned k = 0; k < a->cfg.keys; k++) {
		unsigned slot = r * RACE_KEYS_MAX + k, wins;
		int rc;

		race_key(key, &a->cfg, r, k);
		wins = atomic_load(&a->wins[slot]);
		if (wins != 1) {
			snprintf(why, cap, "round %u key %s: %u SETNX winners",
				 r, key, wins);
			return -1;
		}
		wl = race_value(want, atomic_load(&a->winner[slot]), r, k);
		rc = get_str(kv, key, got, sizeof(got), &gl);
		if (rc != 1 || gl != wl || memcmp(got, want, wl)) {
			snprintf(why, cap,
				 "round %u key %s: GET %s \"%.*s\", winner "
				 "wrote \"%.*s\"",
				 r, key, tu_rcname(rc), (int)(rc == 1 ? gl : 0),
				 got, (int)wl, want);
			return -1;
		}
	}
	return 0;
}

/* Deletes the round's keys, each of which must exist. */
static int race_clear(shmkv_t *kv, struct race_area *a, unsigned r, char *why,
		      size_t cap)
{
	char key[32];

	for (unsigned k = 0; k < a->cfg.keys; k++) {
		size_t kl = race_key(key, &a->cfg, r, k);
		int rc = shmkv_del(kv, key, kl);

		if (rc != 1) {
			snprintf(why, cap, "round %u: DEL %s gave %s", r, key,
				 tu_rcname(rc));
			return -1;
		}
	}
	return 0;
}

/* Census after a round: the keys are there once each, or all gone. */
static int race_census(shmkv_t *kv, struct race_area *a, long live, char *why,
		       size_t cap)
{
	struct census c;
	int rc = census_take(kv, a->cfg.slots, &c, NULL);

	if (rc) {
		snprintf(why, cap, "census: %s", tu_rcname(rc));
	} else {
		rc = census_check(&c, live, why, cap);
	}
	free(c.keys.k);
	return rc;
}

static int race_parent_round(shmkv_t *kv, struct team *t, struct race_area *a,
			     unsigned r, char *why, size_t cap)
{
	atomic_store(&a->go, r + 1);
	if (parent_wait(t, &a->arrived, (r + 1) * NPROC)) {
		snprintf(why, cap, "round %u: children did not arrive", r);
		return -1;
	}
	if (race_check_round(kv, a, r, why, cap))
		return -1;
	if (a->cfg.check_round && race_census(kv, a, a->cfg.keys, why, cap))
		return -1;
	if (a->cfg.fresh)
		return 0;
	if (race_clear(kv, a, r, why, cap))
		return -1;
	return a->cfg.check_round ? race_census(kv, a, 0, why, cap) : 0;
}

static void run_race(const struct race_cfg *cfg)
{
	struct race_area *a = shared_map(sizeof(*a));
	shmkv_t *kv = create_store(a->name, cfg->slots, 0);
	struct team t;
	char why[256] = "";
	int failed = 0;

	a->cfg = *cfg;
	a->parent = getpid();
	a->seed = run_seed();
	team_start(&t, NPROC, race_child, a);
	for (unsigned r = 0; r < cfg->rounds && !failed; r++)
		failed = race_parent_round(kv, &t, a, r, why, sizeof(why));
	team_finish(&t, failed);
	team_assert_ok(&t, a->rep);
	cr_assert_eq(failed, 0, "%s", why);
	if (cfg->fresh)
		assert_census(kv, cfg->slots, (long)cfg->rounds * cfg->keys,
			      NULL, "after all rounds");
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

TestSuite(mp_setnx, .fini = tu_teardown);

Test(mp_setnx, has_exactly_one_winner_per_round_on_a_deleted_key)
{
	struct race_cfg cfg = {
		.rounds = 30000, .keys = 1, .slots = 64, .check_round = true
	};

	run_race(&cfg);
}

Test(mp_setnx, has_exactly_one_winner_per_round_on_fresh_keys)
{
	struct race_cfg cfg = {
		.rounds = 5000, .keys = 1, .slots = 16384, .fresh = true
	};

	run_race(&cfg);
}

Test(mp_setnx, has_one_winner_per_key_when_neighbouring_keys_race)
{
	/* 32 keys in 64 slots: probe runs overlap, so racing inserts of
	 * different keys contend for the same free slots. */
	struct race_cfg cfg = {
		.rounds = 1000, .keys = 32, .slots = 64, .check_round = true
	};

	run_race(&cfg);
}

/*
 * GETSET chains: NPROC children GETSET one key with values unique to
 * (child, step). Each value written, and the initial one, must come back
 * exactly once: from some GETSET, or from the final GET.
 */

#define CHAIN_STEPS 50000

enum chain_mode { CHAIN_INLINE, CHAIN_BLOCK, CHAIN_MIXED };

struct chain_area {
	struct report rep[MAXPROC];
	char name[TU_NAME_CAP];
	pid_t parent;
	enum chain_mode mode;
	atomic_uint ready;
	int64_t got[NPROC][CHAIN_STEPS]; /* value ids GETSET returned */
};

#define CHAIN_IDS ((int64_t)NPROC * CHAIN_STEPS + 1)

/* Value id 0 is the initial value; child p's step i writes p*STEPS+i+1. */
static size_t chain_value(char *buf, enum chain_mode mode, int64_t id)
{
	bool block = mode == CHAIN_BLOCK || (mode == CHAIN_MIXED && id % 2);
	int n;

	if (!block)
		return (size_t)sprintf(buf, "%lld", (long long)id);
	if (id == 0)
		n = sprintf(buf, "init-");
	else
		n = sprintf(buf, "p%lld-i%lld-",
			    (long long)(id - 1) / CHAIN_STEPS,
			    (long long)(id - 1) % CHAIN_STEPS);
	return pad_x(buf, n, 40);
}

/* The id of a value read back, or -1 if no one wrote it. */
static int64_t chain_parse(const char *v, size_t len, enum chain_mode mode)
{
	char want[64], str[64];
	long long p = -1, i = -1, id = -1;

	/* sscanf needs a terminated string; no value written is this long. */
	if (len >= sizeof(str))
		return -1;
	memcpy(str, v, len);
	str[len] = '\0';
	if (len >= 5 && !memcmp(v, "init-", 5))
		id = 0;
	else if (v[0] == 'p' && sscanf(str, "p%lld-i%lld-", &p, &i) == 2)
		id = p * CHAIN_STEPS + i + 1;
	else if (is_int48(v, len))
		id = strtoll(str, NULL, 10);
	if (id < 0 || id >= CHAIN_IDS)
		return -1;
	if (chain_value(want, mode, id) != len || memcmp(want, v, len))
		return -1;
	return id;
}

static int chain_child(int idx, void *arg)
{
	struct chain_area *a = arg;
	char val[64], old[SHMKV_VALUE_MAX_DEFAULT];
	shmkv_t *kv = NULL;
	int rc = child_open(a->name, &kv, &a->rep[idx]);

	if (rc)
		return rc;
	if (child_gather(&a->ready, NPROC, a->parent))
		return child_fail(&a->rep[idx], CHILD_STUCK, 0, 0, "start");
	for (int i = 0; i < CHAIN_STEPS; i++) {
		struct shmkv_value ov = { old, sizeof(old), 0 };
		size_t vl = chain_value(val, a->mode,
					(int64_t)idx * CHAIN_STEPS + i + 1);

		rc = shmkv_getset(kv, "chain", 5, val, vl, &ov);
		if (rc != 1)
			return child_fail(&a->rep[idx], CHILD_CMD, rc, i,
					  "GETSET chain");
		a->got[idx][i] = chain_parse(old, ov.len, a->mode);
	}
	shmkv_close(kv);
	return 0;
}

/* Counts how often each id came back; returns 0 or -1 with @why filled. */
static int chain_tally(struct chain_area *a, int64_t last, char *why,
		       size_t cap)
{
	unsigned char *seen = calloc(CHAIN_IDS, 1);
	int rc = 0;

	cr_assert_not_null(seen);
	seen[last]++;
	for (int p = 0; p < NPROC && !rc; p++) {
		for (int i = 0; i < CHAIN_STEPS && !rc; i++) {
			if (a->got[p][i] < 0) {
				snprintf(why, cap, "child %d step %d: %s", p, i,
					 "GETSET returned a value never "
					 "written");
				rc = -1;
			} else if (seen[a->got[p][i]]++) {
				snprintf(why, cap,
					 "value id %lld returned twice",
					 (long long)a->got[p][i]);
				rc = -1;
			}
		}
	}
	for (int64_t id = 0; id < CHAIN_IDS && !rc; id++) {
		if (seen[id] != 1) {
			snprintf(why, cap, "value id %lld returned %u times",
				 (long long)id, seen[id]);
			rc = -1;
		}
	}
	free(seen);
	return rc;
}

static void run_chain(enum chain_mode mode)
{
	struct chain_area *a = shared_map(sizeof(*a));
	shmkv_t *kv = create_store(a->name, 1024, 0);
	char val[64], why[256];
	size_t vl = chain_value(val, mode, 0), gl;
	struct team t;
	int64_t last;

	a->mode = mode;
	a->parent = getpid();
	tu_assert_rc(shmkv_set(kv, "chain", 5, val, vl, 0, 0, NULL), 1);
	team_start(&t, NPROC, chain_child, a);
	team_finish(&t, false);
	team_assert_ok(&t, a->rep);

	tu_assert_rc(get_str(kv, "chain", val, sizeof(val), &gl), 1);
	last = chain_parse(val, gl, mode);
	cr_assert_geq(last, 0, "final GET returned a value never written");
	cr_assert_eq(chain_tally(a, last, why, sizeof(why)), 0, "%s", why);
	assert_census(kv, 1024, 1, NULL, "after the chain");
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

TestSuite(mp_getset, .fini = tu_teardown);

Test(mp_getset, returns_every_inline_value_exactly_once)
{
	run_chain(CHAIN_INLINE);
}

Test(mp_getset, returns_every_block_value_exactly_once)
{
	run_chain(CHAIN_BLOCK);
}

Test(mp_getset, returns_every_value_once_when_inline_and_block_alternate)
{
	run_chain(CHAIN_MIXED);
}

/*
 * Same-key inserts: NPROC children walk the same 24 keys of a 64-slot
 * table in the same order, each doing its own random SET/SETNX/INCR/DEL,
 * so inserts of one new key collide while deletes free slots for reuse.
 * After each phase the parent checks no key got two slots, then empties
 * the store, which must leave no block or slot behind.
 */

#define INS_KEYS   24
#define INS_SLOTS  64
#define INS_PHASES 2000
#define INS_PASSES 4

struct ins_area {
	struct report rep[MAXPROC];
	char name[TU_NAME_CAP];
	pid_t parent;
	uint64_t seed;
	atomic_uint go, ready, arrived;
};

static size_t ins_key(char *buf, unsigned k)
{
	return (size_t)sprintf(buf, "n%02u", k);
}

/* One random command on @key; -EDOM is INCR on a string, not a fault. */
static int ins_op(shmkv_t *kv, const char *key, size_t kl, uint64_t *rng,
		  int idx)
{
	unsigned op = rng_below(rng, 100);
	char val[64];
	size_t vl;
	int64_t n;
	int rc;

	if (rng_below(rng, 2))
		vl = (size_t)sprintf(val, "%u", rng_below(rng, 100000));
	else
		vl = pad_x(val, sprintf(val, "s%d-", idx), 12 + idx);
	if (op < 30) {
		rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);
		return rc == 1 ? 0 : rc < 0 ? rc : -EPROTO;
	}
	if (op < 50) {
		rc = shmkv_setnx(kv, key, kl, val, vl);
		return rc == 0 || rc == 1 ? 0 : rc < 0 ? rc : -EPROTO;
	}
	if (op < 75) {
		rc = shmkv_incr(kv, key, kl, &n);
		return rc == 0 || rc == -EDOM ? 0 : rc < 0 ? rc : -EPROTO;
	}
	rc = shmkv_del(kv, key, kl);
	return rc == 0 || rc == 1 ? 0 : rc < 0 ? rc : -EPROTO;
}

static int ins_phase(shmkv_t *kv, struct ins_area *a, int idx, unsigned ph,
		     uint64_t *rng)
{
	/* The key order comes from the phase alone: all children meet on
	 * the same key at about the same time. */
	uint64_t order_rng = a->seed ^ ((uint64_t)ph << 32);
	char key[16];

	for (unsigned i = 0; i < INS_PASSES * INS_KEYS; i++) {
		unsigned k = rng_below(&order_rng, INS_KEYS);
		size_t kl = ins_key(key, k);
		int rc = ins_op(kv, key, kl, rng, idx);

		if (rc)
			return child_fail(&a->rep[idx], CHILD_CMD, rc, ph,
					  "command on %s", key);
	}
	return 0;
}

static int ins_child(int idx, void *arg)
{
	struct ins_area *a = arg;
	uint64_t rng = a->seed * 31 + (uint64_t)idx;
	shmkv_t *kv = NULL;
	int rc = child_open(a->name, &kv, &a->rep[idx]);

	for (unsigned ph = 0; rc == 0 && ph < INS_PHASES; ph++) {
		if (child_wait(&a->go, ph + 1, a->parent) ||
		    child_gather(&a->ready, (ph + 1) * NPROC, a->parent))
			return child_fail(&a->rep[idx], CHILD_STUCK, 0, ph,
					  "waiting for phase %u", ph);
		rc = ins_phase(kv, a, idx, ph, &rng);
		atomic_fetch_add(&a->arrived, 1);
	}
	shmkv_close(kv);
	return rc;
}

/* Every key EXISTS finds must have been visited by the scan, once. */
static int ins_check(shmkv_t *kv, unsigned ph, char *why, size_t cap)
{
	struct census c;
	char key[16], msg[200];
	size_t found = 0;
	int rc = census_take(kv, INS_SLOTS, &c, NULL);

	if (rc) {
		snprintf(why, cap, "phase %u: census: %s", ph, tu_rcname(rc));
		goto out;
	}
	rc = census_check(&c, -1, msg, sizeof(msg));
	if (rc) {
		snprintf(why, cap, "phase %u: %s", ph, msg);
		goto out;
	}
	for (unsigned k = 0; k < INS_KEYS; k++) {
		size_t kl = ins_key(key, k);

		found += shmkv_exists(kv, key, kl) == 1;
	}
	if (found != c.live) {
		snprintf(why, cap, "phase %u: %zu keys exist, scan found %zu",
			 ph, found, c.live);
		rc = -1;
	}
out:
	free(c.keys.k);
	return rc;
}

static int ins_empty(shmkv_t *kv, unsigned ph, char *why, size_t cap)
{
	char key[16], msg[200];
	struct census c;
	int rc = 0;

	for (unsigned k = 0; k < INS_KEYS && rc >= 0; k++) {
		size_t kl = ins_key(key, k);

		rc = shmkv_del(kv, key, kl);
	}
	if (rc < 0) {
		snprintf(why, cap, "phase %u: DEL %s: %s", ph, key,
			 tu_rcname(rc));
		return -1;
	}
	rc = census_take(kv, INS_SLOTS, &c, NULL);
	if (rc) {
		snprintf(why, cap, "phase %u: census: %s", ph, tu_rcname(rc));
	} else if (census_check(&c, 0, msg, sizeof(msg))) {
		snprintf(why, cap, "phase %u, emptied: %s", ph, msg);
		rc = -1;
	}
	free(c.keys.k);
	return rc;
}

TestSuite(mp_insert, .fini = tu_teardown);

Test(mp_insert, never_gives_one_key_two_slots)
{
	struct ins_area *a = shared_map(sizeof(*a));
	shmkv_t *kv = create_store(a->name, INS_SLOTS, 0);
	char why[256] = "";
	struct team t;
	int failed = 0;

	a->parent = getpid();
	a->seed = run_seed();
	team_start(&t, NPROC, ins_child, a);
	for (unsigned ph = 0; ph < INS_PHASES && !failed; ph++) {
		atomic_store(&a->go, ph + 1);
		if (parent_wait(&t, &a->arrived, (ph + 1) * NPROC)) {
			snprintf(why, sizeof(why),
				 "phase %u: children did not arrive", ph);
			failed = 1;
			break;
		}
		failed = ins_check(kv, ph, why, sizeof(why)) ||
			 ins_empty(kv, ph, why, sizeof(why));
	}
	team_finish(&t, failed);
	team_assert_ok(&t, a->rep);
	cr_assert_eq(failed, 0, "%s", why);
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

/*
 * INCR: NPROC children increment 8 neighbouring keys (created by the first
 * INCR) M times each. Every result 1..N*M must be returned exactly once
 * per key, and the final value is N*M.
 */

#define INCR_KEYS  8
#define INCR_STEPS 20000
#define INCR_TOTAL (NPROC * INCR_STEPS)

struct incr_area {
	struct report rep[MAXPROC];
	char name[TU_NAME_CAP];
	pid_t parent;
	atomic_uint ready;
	int64_t got[NPROC][INCR_KEYS][INCR_STEPS];
};

static int incr_child(int idx, void *arg)
{
	struct incr_area *a = arg;
	char key[16];
	shmkv_t *kv = NULL;
	int rc = child_open(a->name, &kv, &a->rep[idx]);

	if (rc)
		return rc;
	if (child_gather(&a->ready, NPROC, a->parent))
		return child_fail(&a->rep[idx], CHILD_STUCK, 0, 0, "start");
	for (int i = 0; i < INCR_STEPS; i++) {
		for (int k = 0; k < INCR_KEYS; k++) {
			size_t kl = (size_t)sprintf(key, "ctr%d", k);

			rc = shmkv_incr(kv, key, kl, &a->got[idx][k][i]);
			if (rc)
				return child_fail(&a->rep[idx], CHILD_CMD, rc,
						  i, "INCR %s", key);
		}
	}
	shmkv_close(kv);
	return 0;
}

/* Each result 1..TOTAL once for key @k; returns 0 or the first bad one. */
static int64_t incr_tally(const struct incr_area *a, int k)
{
	static unsigned char seen[INCR_TOTAL + 1];

	memset(seen, 0, sizeof(seen));
	for (int p = 0; p < NPROC; p++) {
		for (int i = 0; i < INCR_STEPS; i++) {
			int64_t v = a->got[p][k][i];

			if (v < 1 || v > INCR_TOTAL || seen[v]++)
				return v == 0 ? -1 : v;
		}
	}
	return 0;
}

TestSuite(mp_incr, .fini = tu_teardown);

Test(mp_incr, counts_every_increment_from_every_process)
{
	struct incr_area *a = shared_map(sizeof(*a));
	shmkv_t *kv = create_store(a->name, 64, 0);
	char key[16], val[32], want[32];
	size_t vl, want_len = (size_t)sprintf(want, "%d", INCR_TOTAL);
	struct team t;

	a->parent = getpid();
	team_start(&t, NPROC, incr_child, a);
	team_finish(&t, false);
	team_assert_ok(&t, a->rep);
	for (int k = 0; k < INCR_KEYS; k++) {
		int64_t bad = incr_tally(a, k);

		sprintf(key, "ctr%d", k);
		cr_assert_eq(bad, 0,
			     "%s: INCR result %lld twice or out of range", key,
			     (long long)bad);
		tu_assert_rc(get_str(kv, key, val, sizeof(val), &vl), 1);
		cr_assert(vl == want_len && !memcmp(val, want, vl),
			  "%s holds %.*s, expected %s", key, (int)vl, val,
			  want);
	}
	assert_census(kv, 64, INCR_KEYS, NULL, "after the increments");
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

/*
 * Churn: NPROC children SET distinct keys through a 4096-slot table and
 * DEL each one once they hold more than CHURN_LIVE, so the table stays
 * under half full while every slot is reused many times over. A table
 * that leaks deleted slots runs out (-ENOSPC) long before the end.
 */

#define CHURN_SLOTS 4096
#define CHURN_LIVE  500
#define CHURN_RING  512

struct churn_result {
	uint64_t live;	  /* keys left at the end */
	uint64_t strings; /* of those, with a block value */
};

struct churn_area {
	struct report rep[MAXPROC];
	struct churn_result res[MAXPROC];
	char name[TU_NAME_CAP];
	uint64_t ops_per_child; /* SETs + DELs */
};

/* Every third value needs a block; the others are inline integers. */
static size_t churn_value(char *buf, uint64_t seq)
{
	if (seq % 3 == 0)
		return pad_x(buf,
			     sprintf(buf, "s%llu-", (unsigned long long)seq),
			     24);
	return (size_t)sprintf(buf, "%llu", (unsigned long long)seq);
}

static size_t churn_key(char *buf, int idx, uint64_t seq)
{
	return (size_t)sprintf(buf, "c%d-%llu", idx, (unsigned long long)seq);
}

/* SETs key @seq, reading every 64th back. */
static int churn_set(shmkv_t *kv, struct report *rep, int idx, uint64_t seq)
{
	char key[32], val[32], got[64];
	size_t kl = churn_key(key, idx, seq), vl = churn_value(val, seq), gl;
	int rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);

	if (rc != 1)
		return child_fail(rep, CHILD_CMD, rc, (long)seq, "SET %s", key);
	if (seq % 64)
		return 0;
	rc = get_str(kv, key, got, sizeof(got), &gl);
	if (rc != 1 || gl != vl || memcmp(got, val, vl))
		return child_fail(rep, CHILD_VALUE, rc, (long)seq, "GET %s",
				  key);
	return 0;
}

static int churn_child(int idx, void *arg)
{
	struct churn_area *a = arg;
	uint64_t ring[CHURN_RING], head = 0, tail = 0, ops = 0, seq = 0;
	char key[32];
	shmkv_t *kv = NULL;
	int rc = child_open(a->name, &kv, &a->rep[idx]);

	while (rc == 0 && ops < a->ops_per_child) {
		rc = churn_set(kv, &a->rep[idx], idx, seq);
		ring[head++ % CHURN_RING] = seq++;
		ops++;
		if (rc || head - tail <= CHURN_LIVE)
			continue;
		rc = shmkv_del(kv, key,
			       churn_key(key, idx, ring[tail++ % CHURN_RING]));
		ops++;
		rc = rc == 1 ? 0
			     : child_fail(&a->rep[idx], CHILD_CMD, rc,
					  (long)seq, "DEL %s", key);
	}
	a->res[idx].live = head - tail;
	for (uint64_t i = tail; i < head; i++)
		a->res[idx].strings += ring[i % CHURN_RING] % 3 == 0;
	shmkv_close(kv);
	return rc;
}

static bool churn_value_ok(const char *v, size_t len)
{
	return is_int48(v, len) || (len == 24 && v[0] == 's');
}

static void run_churn(uint64_t total_ops)
{
	struct churn_area *a = shared_map(sizeof(*a));
	shmkv_t *kv = create_store(a->name, CHURN_SLOTS, 0);
	uint64_t live = 0, strings = 0;
	struct census c;
	char why[256];
	struct team t;
	int rc;

	a->ops_per_child = total_ops / NPROC;
	team_start(&t, NPROC, churn_child, a);
	team_finish(&t, false);
	team_assert_ok(&t, a->rep);
	for (int i = 0; i < NPROC; i++) {
		live += a->res[i].live;
		strings += a->res[i].strings;
	}
	rc = census_take(kv, CHURN_SLOTS, &c, churn_value_ok);
	cr_assert_eq(rc, 0, "census: %s", tu_rcname(rc));
	cr_assert_eq(census_check(&c, (long)live, why, sizeof(why)), 0, "%s",
		     why);
	cr_assert_eq(c.need_block, strings, "%zu block values, expected %llu",
		     c.need_block, (unsigned long long)strings);
	free(c.keys.k);
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

TestSuite(mp_churn, .fini = tu_teardown);

Test(mp_churn, never_runs_out_of_slots_over_a_million_set_and_del)
{
	run_churn(1000000);
}

Test(mp_churn, never_runs_out_of_slots_over_ten_million_set_and_del)
{
	const char *env = getenv("SHMKV_LONG");

	if (!env || strcmp(env, "1"))
		cr_skip_test("10M churn runs only with SHMKV_LONG=1");
	run_churn(10000000);
}

/*
 * SIGKILL: exec'd mp_worker processes run random commands on a small
 * table and are killed at random moments, mid-command as often as not,
 * then replaced. Afterwards shmkv_recover() must leave a store with every
 * key readable, no key twice, no pending slot, and exactly as many value
 * blocks in use as live keys need.
 */

#define KILL_WORKERS 4
#define KILL_SLOTS   256
#define KILL_KEYS    48
#define KILL_ROUNDS  200
/* Ample: each kill leaks at most a block or two until recovery. */
#define KILL_VALUE_MEMORY (4u << 20)
/* The worker's loop bound; it is always killed long before. */
#define KILL_WORKER_ITERS "1000000000"

/* How long a new worker may take to open the store, in 100 ms polls: a
 * guard against a hang, never reached by a healthy run. */
#define READY_POLLS 600

struct fleet {
	char path[PATH_MAX];
	const char *name;
	uint64_t rng;
	pid_t pid[KILL_WORKERS];
	unsigned spawned;
	unsigned never_ready; /* workers that did not report ready */
};

/* build/tests/mp_worker: beside this binary, or SHMKV_MP_WORKER. */
static void worker_path(char *buf, size_t cap)
{
	static const char prog[] = "/mp_worker";
	const char *env = getenv("SHMKV_MP_WORKER");
	ssize_t n;

	if (env && *env) {
		cr_assert_lt(strlen(env), cap, "SHMKV_MP_WORKER too long");
		strcpy(buf, env);
	} else {
		n = readlink("/proc/self/exe", buf, cap - sizeof(prog));
		cr_assert_gt(n, 0, "readlink /proc/self/exe: %s",
			     strerror(errno));
		cr_assert_lt((size_t)n, cap - sizeof(prog), "path too long");
		buf[n] = '\0';
		strcpy(strrchr(buf, '/'), prog);
	}
	cr_assert_eq(access(buf, X_OK), 0, "no worker program %s: %s", buf,
		     strerror(errno));
}

/* Waits until the worker has the store open (a byte on @fd) or is dead
 * (end of file). Return: whether it said ready. */
static bool worker_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	for (int i = 0; i < READY_POLLS; i++) {
		int n = poll(&p, 1, 100);

		if (n > 0)
			return read(fd, &c, 1) == 1;
		if (n < 0 && errno != EINTR)
			return false;
	}
	return false;
}

/* Starts worker @w (even: every command; odd: inserts and deletes only)
 * and returns once it runs commands, so a kill's delay is spent in them. */
static pid_t worker_spawn(struct fleet *f, int w)
{
	char seed[32], keys[16], fd[16];
	const char *mode = w % 2 ? "inserts" : "mixed";
	int fds[2];
	pid_t pid;

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	snprintf(seed, sizeof(seed), "%llu",
		 (unsigned long long)rng_next(&f->rng));
	snprintf(keys, sizeof(keys), "%d", KILL_KEYS);
	snprintf(fd, sizeof(fd), "%d", fds[1]);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		fcntl(fds[1], F_SETFD, 0);
		execl(f->path, f->path, f->name, seed, KILL_WORKER_ITERS, keys,
		      fd, mode, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", f->path, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if (pid > 0 && !worker_ready(fds[0]))
		f->never_ready++;
	close(fds[0]);
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	f->spawned++;
	return pid;
}

/* SIGKILLs and reaps a worker. Return: 0 if it died of our SIGKILL (or
 * finished cleanly), else its wait status. */
static int worker_kill(pid_t pid)
{
	int st = 0;

	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if ((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) || status_ok(st))
		return 0;
	return st ? st : -1;
}

static void describe_status(int st, char *why, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(why, cap, "a worker died of signal %d", WTERMSIG(st));
	else if (WEXITSTATUS(st) == 127)
		snprintf(why, cap, "a worker could not be exec'd");
	else
		snprintf(why, cap, "a worker exited %d (%s)", WEXITSTATUS(st),
			 "4: bad reply, 5: bad value; see its stderr");
}

static void fleet_start(struct fleet *f, const char *name, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	worker_path(f->path, sizeof(f->path));
	f->name = name;
	f->rng = seed;
	for (int w = 0; w < KILL_WORKERS; w++)
		f->pid[w] = worker_spawn(f, w);
}

/* Kills and reaps every worker; returns the first bad status or 0. */
static int fleet_stop(struct fleet *f)
{
	int bad = 0;

	for (int w = 0; w < KILL_WORKERS; w++) {
		int st = worker_kill(f->pid[w]);

		bad = bad ? bad : st;
	}
	return bad;
}

static void sleep_upto_3ms(uint64_t *rng)
{
	struct timespec ts = { 0, (long)(rng_next(rng) % 3000001) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Kills a random worker after a random 0-3 ms, @kills times, restarting
 * each; with @recover_every, runs shmkv_recover() alongside the workers
 * that often. Stops them all at the end. Asserts nothing went wrong.
 */
static void fleet_kill_loop(struct fleet *f, shmkv_t *kv, unsigned kills,
			    unsigned recover_every)
{
	char why[128] = "";
	int bad = 0, rrc = 0, stop;

	for (unsigned k = 0; k < kills && !bad && rrc >= 0 && !f->never_ready;
	     k++) {
		unsigned w = rng_below(&f->rng, KILL_WORKERS);

		sleep_upto_3ms(&f->rng);
		bad = worker_kill(f->pid[w]);
		f->pid[w] = worker_spawn(f, (int)w);
		if (recover_every && k % recover_every == recover_every - 1)
			rrc = shmkv_recover(kv, NULL);
	}
	stop = fleet_stop(f);
	bad = bad ? bad : stop;
	if (bad)
		describe_status(bad, why, sizeof(why));
	cr_assert_eq(bad, 0, "%s", why);
	cr_assert_eq(f->never_ready, 0, "a worker never opened the store");
	cr_assert_geq(rrc, 0, "shmkv_recover beside live workers: %s",
		      tu_rcname(rrc));
}

static bool kill_value_ok(const char *v, size_t len)
{
	/* The workers' values, and assert_usable's. */
	return worker_value_ok(v, len) || (len == 30 && v[0] == 'v');
}

/* Every one of the workers' keys is readable, with a value some worker
 * wrote; returns how many exist. */
static size_t assert_keys_readable(shmkv_t *kv)
{
	char key[16], val[SHMKV_VALUE_MAX_DEFAULT];
	size_t live = 0, vl;

	for (int k = 0; k < KILL_KEYS; k++) {
		int rc;

		sprintf(key, "w%03d", k);
		rc = get_str(kv, key, val, sizeof(val), &vl);
		cr_assert(rc == 0 || rc == 1, "GET %s: %s", key, tu_rcname(rc));
		cr_assert(rc == 0 || kill_value_ok(val, vl),
			  "GET %s: \"%.*s\" was never written", key, (int)vl,
			  val);
		live += rc;
	}
	return live;
}

/* A value the tests write beside the workers': odd @i need a block. */
static size_t usable_value(char *buf, int i)
{
	if (i % 2)
		return pad_x(buf, sprintf(buf, "v%d-", i), 30);
	return (size_t)sprintf(buf, "%d", i * 7);
}

/* Fresh keys can be written, read and deleted, inline and in blocks. */
static void assert_usable(shmkv_t *kv, const char *prefix, int n, bool keep)
{
	char key[32], val[64];

	for (int i = 0; i < n; i++) {
		size_t kl = (size_t)sprintf(key, "%s%d", prefix, i);
		size_t vl = usable_value(val, i);

		tu_assert_rc(shmkv_set(kv, key, kl, val, vl, 0, 0, NULL), 1);
		tu_assert_get(kv, key, kl, val, vl);
		if (!keep)
			tu_assert_rc(shmkv_del(kv, key, kl), 1);
	}
}

/* After recovery: a second pass finds nothing, and the census holds. */
static void assert_recovered(shmkv_t *kv)
{
	struct shmkv_recover_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	rc = shmkv_recover(kv, &rep);
	cr_assert_geq(rc, 0, "shmkv_recover: %s", tu_rcname(rc));
	cr_log_info("recover: %d repairs: %llu stale claims, %llu stuck "
		    "inserts, %llu collided, %llu dead slots, %llu leaked "
		    "blocks",
		    rc, (unsigned long long)rep.stale_claims,
		    (unsigned long long)rep.stuck_inserts,
		    (unsigned long long)rep.collided,
		    (unsigned long long)rep.dead_slots,
		    (unsigned long long)rep.leaked_blocks);
	assert_keys_readable(kv);
	assert_census(kv, KILL_SLOTS, -1, kill_value_ok, "after recovery");
	tu_assert_rc(shmkv_recover(kv, NULL), 0);
}

static shmkv_t *kill_store(char name[TU_NAME_CAP])
{
	return create_store(name, KILL_SLOTS, KILL_VALUE_MEMORY);
}

TestSuite(mp_kill, .fini = tu_teardown);

Test(mp_kill, leaves_a_consistent_store_after_recover)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = kill_store(name);
	struct fleet f;

	fleet_start(&f, name, run_seed());
	fleet_kill_loop(&f, kv, KILL_ROUNDS, 0);
	assert_recovered(kv);
	assert_usable(kv, "after-", 32, false);
	shmkv_close(kv);
}

Test(mp_kill, leaves_a_consistent_store_when_recover_runs_beside_workers)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = kill_store(name);
	struct fleet f;

	fleet_start(&f, name, run_seed());
	fleet_kill_loop(&f, kv, KILL_ROUNDS, 10);
	assert_recovered(kv);
	shmkv_close(kv);
}

/* Whether killed workers left something for recovery to repair: a pending
 * slot, or value blocks that no live key accounts for. */
static bool has_leftovers(shmkv_t *kv, char *what, size_t cap)
{
	struct census c;
	bool left;
	int rc = census_take(kv, KILL_SLOTS, &c, NULL);

	cr_assert_eq(rc, 0, "census before recovery: %s", tu_rcname(rc));
	left = c.st.pending || blocks_used(&c.st) != c.need_block;
	snprintf(what, cap,
		 "%llu pending slots, %llu blocks used where %zu "
		 "live keys need %zu",
		 (unsigned long long)c.st.pending,
		 (unsigned long long)blocks_used(&c.st), c.live, c.need_block);
	free(c.keys.k);
	return left;
}

#define KILL_BATCHES 5

Test(mp_kill, leaves_the_store_usable_before_recover)
{
	char name[TU_NAME_CAP], key[16], val[64], what[160];
	shmkv_t *kv = kill_store(name);
	uint64_t seed = run_seed();
	bool left = false;
	unsigned batch;
	struct fleet f;

	/* Kill until some leftover is seen (usually the first batch), so
	 * that the commands below meet a dead process's debris. */
	for (batch = 0; batch < KILL_BATCHES && !left; batch++) {
		fleet_start(&f, name, seed + batch);
		fleet_kill_loop(&f, kv, KILL_ROUNDS, 0);
		left = has_leftovers(kv, what, sizeof(what));
	}
	cr_log_info("before recover, after %u x %d kills: %s%s", batch,
		    KILL_ROUNDS, what, left ? "" : " (no leftovers seen)");
	assert_keys_readable(kv);
	/* New keys, and the killed workers' own keys, whose slots may be
	 * the ones a dead process left half-claimed. */
	assert_usable(kv, "fresh-", 48, true);
	for (int k = 0; k < KILL_KEYS; k++) {
		size_t kl = (size_t)sprintf(key, "w%03d", k);
		size_t vl = usable_value(val, k);

		tu_assert_rc(shmkv_set(kv, key, kl, val, vl, 0, 0, NULL), 1);
		tu_assert_get(kv, key, kl, val, vl);
		if (k % 2)
			tu_assert_rc(shmkv_del(kv, key, kl), 1);
		else
			tu_assert_rc(shmkv_setnx(kv, key, kl, "1", 1), 0);
	}
	assert_recovered(kv);
	shmkv_close(kv);
}

/*
 * The demo: separate processes counting under the SETNX lock pattern.
 */

#define DEMO_WORKERS 4
#define DEMO_CYCLES  3000

/* @prog (a file in the build directory) into @buf; asserts it exists.
 * The Makefile names the directory; else it is the one above ours. */
static void build_path(char *buf, size_t cap, const char *prog)
{
#ifdef SHMKV_BUILD_DIR
	int n = snprintf(buf, cap, "%s/%s", SHMKV_BUILD_DIR, prog);
#else
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int n = -1;

	if (len > 0) {
		exe[len] = '\0';
		n = snprintf(buf, cap, "%s/../%s", dirname(exe), prog);
	}
#endif
	cr_assert(n > 0 && (size_t)n < cap, "path of %s too long", prog);
	cr_assert_eq(access(buf, X_OK), 0, "no program %s: %s", buf,
		     strerror(errno));
}

/* Runs @argv to completion; returns its wait status. */
static int run_prog(char *const argv[])
{
	int st = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

TestSuite(mp_demo, .fini = tu_teardown);

Test(mp_demo, keeps_every_update_and_removes_its_store)
{
	char path[PATH_MAX], name[TU_NAME_CAP], w[16], c[16];
	char *argv[] = { path, "--name",   name, "--workers",
			 w,    "--cycles", c,	 NULL };
	shmkv_t *kv = NULL;
	int st;

	build_path(path, sizeof(path), "shmkv-demo");
	tu_make_name(name, NULL);
	snprintf(w, sizeof(w), "%d", DEMO_WORKERS);
	snprintf(c, sizeof(c), "%d", DEMO_CYCLES);
	st = run_prog(argv);
	cr_assert(status_ok(st), "shmkv-demo: wait status %#x", st);
	tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
}

/* Starts the demo's workers on @name; returns how many failed. */
static int demo_workers_run(const char *name, shmkv_t *kv)
{
	char path[PATH_MAX], c[16], n[TU_NAME_CAP];
	char *argv[] = { path, n, c, "1000", NULL };
	pid_t pid[DEMO_WORKERS];
	int failed = 0;

	build_path(path, sizeof(path), "shmkv-demo-worker");
	snprintf(n, sizeof(n), "%s", name);
	snprintf(c, sizeof(c), "%d", DEMO_CYCLES);
	fflush(NULL);
	for (int i = 0; i < DEMO_WORKERS; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			execv(path, argv);
			_exit(127);
		}
	}
	tu_assert_rc(shmkv_set(kv, "demo.start", 10, "1", 1, 0, 0, NULL), 1);
	for (int i = 0; i < DEMO_WORKERS; i++) {
		int st = 0;

		if (pid[i] < 0) {
			failed++;
			continue;
		}
		while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR)
			;
		failed += !status_ok(st);
	}
	return failed;
}

Test(mp_demo, workers_break_a_lock_a_dead_holder_left)
{
	char name[TU_NAME_CAP], lock[32], val[32], want[32];
	shmkv_t *kv = create_store(name, 1024, 0);
	size_t ll, vl,
		wl = (size_t)sprintf(want, "%d", DEMO_WORKERS * DEMO_CYCLES);

	/* The lock of a holder that died 5 s after its timeout: no worker
	 * can SETNX it, so one must break it with GETSET. */
	ll = (size_t)sprintf(lock, "%lld", (long long)(tu_now_ms() - 5000));
	tu_assert_rc(shmkv_set(kv, "lock.counter", 12, lock, ll, 0, 0, NULL),
		     1);
	cr_assert_eq(demo_workers_run(name, kv), 0, "a demo worker failed");
	tu_assert_rc(get_str(kv, "counter", val, sizeof(val), &vl), 1);
	cr_assert(vl == wl && !memcmp(val, want, wl),
		  "counter is %.*s, expected %s", (int)vl, val, want);
	tu_assert_rc(get_str(kv, "demo.breaks", val, sizeof(val), &vl), 1);
	cr_assert(vl > 0 && val[0] >= '1' && val[0] <= '9',
		  "demo.breaks is %.*s: no one broke the dead lock", (int)vl,
		  val);
	shmkv_close(kv);
}
