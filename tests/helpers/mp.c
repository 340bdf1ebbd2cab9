/*
 * mp.c - helpers of the multi-process tests (see mp.h).
 */
#include "helpers/mp.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * sched_yield rounds a barrier waits before it calls the other side stuck.
 * Far more than any healthy run needs on a loaded machine: it only turns a
 * lost wake-up or a hung process into a failure instead of a hang.
 */
#define SPIN_MAX 400000000ul
/* How often (in spin rounds) a waiter checks that its partners live. */
#define SPIN_CHECK 1024ul

int mp_child_fail(struct report *r, int code, int err, long step,
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
void *mp_shared_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED, "mmap %zu shared bytes: %s", len,
		      strerror(errno));
	return p;
}

/* The seed of this run: SHMKV_SEED if set, else the clock. Logged so a
 * failing run can be replayed as far as scheduling allows. */
uint64_t mp_run_seed(void)
{
	uint64_t seed = rng_env_seed("SHMKV_SEED");

	cr_log_info("seed %llu (set SHMKV_SEED to reuse)",
		    (unsigned long long)seed);
	return seed;
}

/* Pads @buf (holding @n bytes) with 'x' to @len bytes: > 8 bytes and not
 * an integer, so such a value always lives in a value block. */
size_t mp_pad_x(char *buf, int n, size_t len)
{
	size_t at = n < 0 ? 0 : (size_t)n;

	while (at < len)
		buf[at++] = 'x';
	return at;
}

/*
 * Process teams: forked children that run a function and exit.
 */

/* Forks @n children running @fn(i, @arg); they never return to Criterion:
 * _exit skips the atexit hooks that would unlink the test's store. */
void mp_team_start(struct team *t, int n, child_fn fn, void *arg)
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

bool mp_status_ok(int st)
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
		if (t->reaped[i] && !mp_status_ok(t->status[i]))
			return true;
	}
	return false;
}

/* Reaps every child; with @kill_first, SIGKILLs the live ones first. */
void mp_team_finish(struct team *t, bool kill_first)
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
 * ones mp_team_finish killed are left to the parent's own verdict. */
void mp_team_assert_ok(struct team *t, const struct report *rep)
{
	for (int i = 0; i < t->n; i++) {
		int st = t->status[i];

		cr_assert(t->reaped[i], "child %d was not reaped", i);
		if (t->killed[i])
			continue;
		cr_assert(!WIFSIGNALED(st), "child %d killed by signal %d", i,
			  WTERMSIG(st));
		cr_assert(mp_status_ok(st),
			  "child %d exited %d at step %ld: %s -> %s", i,
			  WEXITSTATUS(st), rep[i].step, rep[i].what,
			  tu_rcname(rep[i].err));
	}
}

/* Parent side of a barrier: waits for *@c >= @target while the children
 * live. Return: 0, -ECHILD (a child failed first) or -ETIMEDOUT. */
int mp_parent_wait(struct team *t, atomic_uint *c, unsigned target)
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
int mp_child_wait(atomic_uint *c, unsigned target, pid_t parent)
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
int mp_child_gather(atomic_uint *c, unsigned target, pid_t parent)
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

shmkv_t *mp_create_store(char name[TU_NAME_CAP], uint32_t slots,
			 uint64_t value_memory)
{
	struct shmkv_config cfg = tu_config(slots, 0, 0, value_memory);

	return tu_create(&cfg, name);
}

/* Opens the store in a child; never asserts. */
int mp_child_open(const char *name, shmkv_t **kv, struct report *rep)
{
	int rc = shmkv_open(name, 0, kv);

	return rc ? mp_child_fail(rep, CHILD_OPEN, rc, -1, "open %s", name) : 0;
}

/* GET of @key (a string) into @buf; returns GET's result. */
int mp_get_str(shmkv_t *kv, const char *key, char *buf, size_t cap, size_t *len)
{
	struct shmkv_value v = { buf, cap, 0 };
	int rc = shmkv_get(kv, key, strlen(key), &v);

	*len = v.len;
	return rc;
}

int mp_rounds_child(struct rounds *s, unsigned n, round_fn fn, void *area,
		    int idx, uint64_t rng)
{
	shmkv_t *kv = NULL;
	int rc = mp_child_open(s->name, &kv, &s->rep[idx]);

	for (unsigned r = 0; rc == 0 && r < n; r++) {
		if (mp_child_wait(&s->go, r + 1, s->parent) ||
		    mp_child_gather(&s->ready, (r + 1) * NPROC, s->parent))
			return mp_child_fail(&s->rep[idx], CHILD_STUCK, 0, r,
					     "waiting for round %u", r);
		rc = fn(kv, area, idx, r, &rng);
		atomic_fetch_add(&s->arrived, 1);
	}
	shmkv_close(kv);
	return rc;
}

int mp_child_start(struct rounds *s, int idx, shmkv_t **kv)
{
	int rc = mp_child_open(s->name, kv, &s->rep[idx]);

	if (rc)
		return rc;
	if (mp_child_gather(&s->ready, NPROC, s->parent))
		return mp_child_fail(&s->rep[idx], CHILD_STUCK, 0, 0, "start");
	return 0;
}

int mp_rounds_open(struct rounds *s, struct team *t, unsigned r)
{
	atomic_store(&s->go, r + 1);
	return mp_parent_wait(t, &s->arrived, (r + 1) * NPROC);
}
