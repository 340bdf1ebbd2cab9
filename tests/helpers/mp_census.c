/*
 * mp_census.c - looking at a whole store (see mp_census.h).
 */
#include "helpers/mp_census.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (!mp_is_int48(buf, v.len) || ttl != -1)
		c->strings++;
	if (ok && !ok(buf, v.len))
		c->bad_values++;
	return 0;
}

int mp_census_take(shmkv_t *kv, uint64_t slots, struct census *c,
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
	rc = shmkv_stats(kv, &c->st);
	c->need_block = c->st.block_values;
	return rc;
}

/* Checks a census; @expect_live < 0 means "any". Return: 0, or -1 and a
 * reason in @why. */
int mp_census_check(const struct census *c, long expect_live, char *why,
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
	else if (st->inline_values + st->block_values != c->strings)
		snprintf(why, cap,
			 "%zu string values, stats count %llu inline and %llu "
			 "in blocks",
			 c->strings, (unsigned long long)st->inline_values,
			 (unsigned long long)st->block_values);
	else if (mp_blocks_used(st) != c->need_block)
		snprintf(why, cap,
			 "%llu value blocks used, %zu live keys need one",
			 (unsigned long long)mp_blocks_used(st), c->need_block);
	else if (c->bad_values)
		snprintf(why, cap, "%zu values were never written",
			 c->bad_values);
	else
		return 0;
	return -1;
}

/* Takes and checks a census, asserting both steps. */
void mp_assert_census(shmkv_t *kv, uint64_t slots, long expect_live,
		      value_ok_fn ok, const char *when)
{
	struct census c;
	char why[256];
	int rc = mp_census_take(kv, slots, &c, ok);

	cr_assert_eq(rc, 0, "%s: census failed: %s", when, tu_rcname(rc));
	rc = mp_census_check(&c, expect_live, why, sizeof(why));
	free(c.keys.k);
	cr_assert_eq(rc, 0, "%s: %s", when, why);
}
