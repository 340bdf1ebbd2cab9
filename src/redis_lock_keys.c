/*
 * redis_lock_keys.c - what the locks over Redis share (redis_lock.h): the
 * keys of a lock name, this process's identity, the owner record, the
 * scripts and how they are run, and the waiters' backoff.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "intconv.h"
#include "redis.h"
#include "redis_lock.h"

_Static_assert(SHMKV_REDIS_PREFIX_MAX == 128,
	       "SHMKV__RL_KEY_CAP counts on the prefix's bound");

char shmkv__redis_fake_boot_id[40];

int shmkv__rl_name_check(const char *name, size_t *len)
{
	size_t n;

	if (name == NULL)
		return -EINVAL;
	n = strnlen(name, SHMKV_LOCK_NAME_MAX + 1);
	if (n == 0)
		return -EINVAL;
	if (n > SHMKV_LOCK_NAME_MAX)
		return -ENAMETOOLONG;
	*len = n;
	return 0;
}

/* The hash tag of @key as Redis Cluster finds it: from the first '{' to
 * the first '}' after it, if non-empty; else the whole key. */
static void tag_of(const char *key, size_t len, size_t *at, size_t *n)
{
	const char *o = memchr(key, '{', len), *c;

	*at = 0;
	*n = len;
	if (o == NULL)
		return;
	c = memchr(o + 1, '}', len - (size_t)(o + 1 - key));
	if (c == NULL || c == o + 1)
		return;
	*at = (size_t)(o + 1 - key);
	*n = (size_t)(c - o - 1);
}

int shmkv__rl_keys(const struct shmkv_redis *r, const char *name, size_t len,
		   struct shmkv__rl_keys *k)
{
	char inner[SHMKV__RL_KEY_CAP];
	size_t n = 0, at, tn;
	ssize_t kl;

	strcpy(inner, "lock.{");
	n = 6;
	for (size_t i = 0; i < len; i++) {
		const char *esc = name[i] == '{'   ? "%7B"
				  : name[i] == '}' ? "%7D"
				  : name[i] == '%' ? "%25"
						   : NULL;

		if (esc != NULL) {
			memcpy(inner + n, esc, 3);
			n += 3;
		} else
			inner[n++] = name[i];
	}
	inner[n++] = '}';
	kl = shmkv__redis_key(r, inner, n, k->rec, sizeof(k->rec) - 7);
	if (kl < 0)
		return (int)kl;
	k->rec_len = (size_t)kl;
	memcpy(k->ctr, k->rec, k->rec_len);
	memcpy(k->ctr + k->rec_len, ":token", 7);
	k->ctr_len = k->rec_len + 6;
	/* The counter is the record plus a suffix, so the two share a tag
	 * unless the record's is the whole key: a prefix whose first '{'
	 * is followed by '}'. A cluster refuses two slots in one script. */
	tag_of(k->rec, k->rec_len, &at, &tn);
	if (r->uri.kind == SHMKV_REDIS_CLUSTER && tn == k->rec_len)
		return -EINVAL;
	return 0;
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

ssize_t shmkv__rl_name_of(const struct shmkv_redis *r, const char *key,
			  size_t klen, bool counter, char *buf, size_t cap)
{
	size_t pl = r->uri.prefix_len, tail = counter ? 7 : 1, n = 0;

	if (klen < pl + 6 + tail + 1 || memcmp(key, r->uri.prefix, pl) != 0 ||
	    memcmp(key + pl, "lock.{", 6) != 0 ||
	    memcmp(key + klen - tail, counter ? "}:token" : "}", tail) != 0)
		return -1;
	for (size_t i = pl + 6; i < klen - tail; i++) {
		char c = key[i];

		if (c == '{' || c == '}')
			return -1; /* we never write these unescaped */
		if (c == '%') {
			int hi, lo;

			if (i + 2 >= klen - tail ||
			    (hi = unhex(key[i + 1])) < 0 ||
			    (lo = unhex(key[i + 2])) < 0)
				return -1;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (n >= cap)
			return -1;
		buf[n++] = c;
	}
	return (ssize_t)n;
}

/* The next ':'-separated field of [*p, end): its bounds; *p past it. */
static bool field(const char **p, const char *end, const char **f, size_t *n)
{
	const char *c = memchr(*p, ':', (size_t)(end - *p));

	if (c == NULL)
		return false;
	*f = *p;
	*n = (size_t)(c - *p);
	*p = c + 1;
	return true;
}

static bool num(const char *f, size_t n, uint64_t *v)
{
	int64_t x;

	if (n == 0 || !shmkv__string2ll(f, n, &x) || x < 0)
		return false;
	*v = (uint64_t)x;
	return true;
}

int shmkv__rl_rec_parse(const char *s, size_t len, struct shmkv__rl_rec *rec)
{
	const char *p = s, *end = s + len, *f;
	uint64_t ns, pid, grant;
	size_t n;

	memset(rec, 0, sizeof(*rec));
	if (!field(&p, end, &f, &n) || !num(f, n, &rec->token) ||
	    rec->token == 0 || !field(&p, end, &f, &n) || n == 0 ||
	    n >= sizeof(rec->boot))
		return -EEXIST;
	memcpy(rec->boot, f, n);
	if (!field(&p, end, &f, &n) || !num(f, n, &ns) || ns > UINT32_MAX ||
	    !field(&p, end, &f, &n) || !num(f, n, &pid) || pid > UINT32_MAX ||
	    !field(&p, end, &f, &n) || !num(f, n, &rec->start) ||
	    !field(&p, end, &f, &n) || !num(f, n, &rec->nonce) ||
	    !field(&p, end, &f, &n) || !num(f, n, &grant) ||
	    grant > INT64_MAX || (size_t)(end - p) >= sizeof(rec->host))
		return -EEXIST;
	rec->ns = (uint32_t)ns;
	rec->pid = (uint32_t)pid;
	rec->grant_ms = (int64_t)grant;
	memcpy(rec->host, p, (size_t)(end - p));
	return 0;
}

/* The identity, read once per process (and again in a fork child). */
static pthread_mutex_t self_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shmkv__rl_self self_cache;

static void read_boot_id(char *out, size_t cap)
{
	char buf[64] = { 0 };
	ssize_t n = -1;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	/* Unreadable or odd: unknown, so no holder is ever judged ours. */
	if (n <= 0 || (size_t)n >= cap || memchr(buf, ':', (size_t)n)) {
		snprintf(out, cap, "-");
		return;
	}
	memcpy(out, buf, (size_t)n);
	out[n] = '\0';
}

void shmkv__rl_self(struct shmkv__rl_self *me)
{
	struct shmkv_proc_id id;

	shmkv__proc_self(&id);
	pthread_mutex_lock(&self_mu);
	if (self_cache.pid != id.pid) {
		char *c;

		read_boot_id(self_cache.boot, sizeof(self_cache.boot));
		self_cache.ns = shmkv__pid_ns();
		if (gethostname(self_cache.host, sizeof(self_cache.host)) != 0)
			self_cache.host[0] = '\0';
		/* Informational only, and the record's last field: cut so
		 * that every record fits SHMKV__LOCK_REC_CAP (16 + 39 + 10
		 * + 10 + 20 + 20 + 13 + 48 + 7 colons = 183). */
		self_cache.host[48] = '\0';
		while ((c = strchr(self_cache.host, ':')) != NULL)
			*c = '_';
		self_cache.start = id.start;
		self_cache.pid = id.pid;
	}
	*me = self_cache;
	pthread_mutex_unlock(&self_mu);
	if (shmkv__redis_fake_boot_id[0] != '\0')
		snprintf(me->boot, sizeof(me->boot), "%s",
			 shmkv__redis_fake_boot_id);
}

uint64_t shmkv__rl_nonce(void)
{
	static uint64_t next;

	/* Full (the only RMW atomic.h has; relaxed would do): only
	 * uniqueness within the process is needed, which any RMW gives. */
	return shmkv__add_full(&next, 1); /* the new value */
}

bool shmkv__rl_holder_dead(const struct shmkv__rl_rec *h,
			   const struct shmkv__rl_self *me)
{
	/* Another host's pids say nothing here, nor another namespace's. */
	if (strcmp(me->boot, "-") == 0 || strcmp(h->boot, me->boot) != 0 ||
	    me->ns == 0 || h->ns != me->ns || h->pid == 0)
		return false;
	/* proc.c's rules: start time (pid reuse), zombies, a process whose
	 * main thread exited; never this very process. */
	return shmkv__proc_dead(h->pid, h->start);
}

int64_t shmkv__rl_backoff(unsigned round)
{
	static __thread unsigned seed;
	int64_t d = round >= 5 ? SHMKV__RL_POLL_MAX_MS : INT64_C(1) << round;

	if (seed == 0)
		seed = (unsigned)shmkv__self_tid() * 2654435761u + 1;
	seed = seed * 1103515245u + 12345u;
	/* Uniform in [d/2, d], at least 1 ms. */
	d = d / 2 + (int64_t)((seed >> 8) % (unsigned)(d - d / 2 + 1));
	return d > 0 ? d : 1;
}

int shmkv__rl_evict_check(struct shmkv_redis *r, int tolerated)
{
	int evicts;

	if (r->uri.locks_on_evicting)
		return 0;
	evicts = shmkv__redis_evicts(r);
	if (evicts < 0)
		return evicts; /* a link error: the acquire would get it too */
	return evicts <= tolerated ? 0 : -ENOTSUP;
}
