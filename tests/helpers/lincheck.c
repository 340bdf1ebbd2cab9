/*
 * lincheck.c - Wing & Gong linearizability search with Lowe's memoisation,
 * per key, for a register with shmkv's string-command semantics.
 *
 * One key's history becomes a doubly linked list of call and return
 * entries in time order. The search walks the list: at a call entry it
 * tries to linearize that operation next (the model accepts its reply from
 * the current state); if the resulting configuration (set of operations
 * linearized, state) is new, it lifts the operation's two entries out of
 * the list, pushes it, and starts again from the head. Reaching a return
 * entry means that operation's deadline passed with it unlinearized: the
 * search pops the last choice, puts its entries back, and tries the next
 * call after it. An empty list is a linearization; popping an empty stack
 * means there is none. This is Porcupine's checkSingle.
 *
 * The memo (a hash set of configurations) makes the search visit each
 * configuration at most once. A process has one operation pending at a
 * time, so at most P operations of a key are open at any instant: a
 * configuration is nearly fixed by how far along the history the search
 * got, give or take which of the few open operations it placed, and the
 * memo stays near one configuration per operation for the histories the
 * tests record (bitsets of n bits each: memory grows as n^2 / 8 bytes).
 */
#include "lincheck.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The memo: a hash set of (bitset of linearized ops, state). Bitsets live
 * in one arena; the table holds their index, so growing either is a
 * realloc.
 */

struct memo_ent {
	uint64_t hash;
	struct lin_val st;
	size_t at; /* bitset index + 1; 0: empty */
};

struct memo {
	size_t words; /* uint64_t per bitset */
	size_t n, cap, max;
	struct memo_ent *tab;
	uint64_t *arena;
};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t state_hash(struct lin_val st)
{
	return mix64(((uint64_t)st.kind << 56) ^ (uint64_t)st.n ^ 0x5bd1e995u);
}

static int memo_grow(struct memo *m)
{
	size_t cap = m->cap ? 2 * m->cap : 1024;
	struct memo_ent *tab = calloc(cap, sizeof(*tab));
	uint64_t *arena = realloc(m->arena, cap / 2 * m->words * 8);

	if (!tab || !arena) {
		free(tab);
		m->arena = arena ? arena : m->arena;
		return -ENOMEM;
	}
	m->arena = arena;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j = m->tab[i].hash & (cap - 1);

		if (!m->tab[i].at)
			continue;
		while (tab[j].at)
			j = (j + 1) & (cap - 1);
		tab[j] = m->tab[i];
	}
	free(m->tab);
	m->tab = tab;
	m->cap = cap;
	return 0;
}

/* Adds (@bits, @st) whose hash is @hash. Return: 1 added, 0 already there,
 * -ENOSPC the memo holds its maximum, -ENOMEM. */
static int memo_add(struct memo *m, const uint64_t *bits, uint64_t hash,
		    struct lin_val st)
{
	size_t j;

	/* At most half full: probe runs stay short. */
	if (2 * (m->n + 1) > m->cap && memo_grow(m))
		return -ENOMEM;
	for (j = hash & (m->cap - 1); m->tab[j].at; j = (j + 1) & (m->cap - 1))
		if (m->tab[j].hash == hash && lin_val_eq(m->tab[j].st, st) &&
		    !memcmp(m->arena + (m->tab[j].at - 1) * m->words, bits,
			    m->words * 8))
			return 0;
	if (m->n >= m->max)
		return -ENOSPC;
	memcpy(m->arena + m->n * m->words, bits, m->words * 8);
	m->tab[j] = (struct memo_ent){ hash, st, ++m->n };
	return 1;
}

/*
 * One key's search.
 */

struct node {
	struct node *prev, *next;
	struct node *match; /* a call's return entry */
	uint64_t t;
	uint32_t op; /* index in the key's op list */
	bool call;
};

struct frame {
	struct node *call;
	struct lin_val st; /* the state before the call was linearized */
};

struct key_search {
	const struct lin_op *ops; /* the caller's array */
	const uint32_t *idx;	  /* the key's ops: indices into @ops */
	size_t m;
	struct node head;
	struct node *nodes; /* 2m, in time order */
	struct frame *stack;
	size_t sp;
	uint64_t *bits, *zobrist, hash;
	struct lin_val st;
	struct memo memo;
	uint64_t steps;
	size_t best, stuck; /* deepest linearization, and where it stopped */
};

/* Porcupine's order: by time, and a call before a return at the same time,
 * so that equal times count as concurrent (the permissive reading). */
static int entry_cmp(const void *a, const void *b)
{
	const struct node *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (int)y->call - (int)x->call;
}

/* Links the sorted entries and each call to its return; @aux: m words. */
static void link_nodes(struct key_search *s, size_t *aux)
{
	struct node *prev = &s->head;

	s->head = (struct node){ 0 };
	for (size_t i = 0; i < 2 * s->m; i++) {
		struct node *e = &s->nodes[i];

		e->prev = prev;
		prev->next = e;
		e->next = NULL;
		prev = e;
		if (e->call)
			aux[e->op] = i;
		else
			s->nodes[aux[e->op]].match = e;
	}
}

/*
 * Sorts the entries, counting the operations that overlap another: op i
 * overlaps if another is open at its call, or another's call comes before
 * its return. @aux: m words. Bit 0 says overlap; the rest count calls.
 */
static size_t sort_entries(struct key_search *s, size_t *aux)
{
	size_t open = 0, calls = 0, overlapping = 0;

	for (size_t i = 0; i < s->m; i++) {
		const struct lin_op *op = &s->ops[s->idx[i]];

		s->nodes[2 * i] = (struct node){ .t = op->call,
						 .op = i,
						 .call = true };
		s->nodes[2 * i + 1] = (struct node){ .t = op->ret, .op = i };
	}
	qsort(s->nodes, 2 * s->m, sizeof(*s->nodes), entry_cmp);
	for (size_t i = 0; i < 2 * s->m; i++) {
		const struct node *e = &s->nodes[i];

		if (e->call) {
			aux[e->op] = calls++ << 1 | (open > 0);
			open++;
			continue;
		}
		open--;
		overlapping += (aux[e->op] & 1) ||
			       calls > (aux[e->op] >> 1) + 1;
	}
	return overlapping;
}

/* Takes a linearized call and its return out of the list. */
static void lift(struct node *e)
{
	struct node *r = e->match;

	e->prev->next = e->next;
	e->next->prev = e->prev; /* a call always has its return after it */
	r->prev->next = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

/* Undoes lift(): valid because lifts are undone in reverse order. */
static void unlift(struct node *e)
{
	struct node *r = e->match;

	r->prev->next = r;
	if (r->next)
		r->next->prev = r;
	e->prev->next = e;
	e->next->prev = e;
}

static void bit_flip(uint64_t *bits, uint32_t i)
{
	bits[i / 64] ^= 1ull << (i % 64);
}

/* Records a new deepest linearization, and the first op whose return
 * comes before it is linearized: the one no longer prefix got past. */
static void note_depth(struct key_search *s)
{
	const struct node *e = s->head.next;

	s->best = s->sp;
	while (e && e->call)
		e = e->next;
	if (e)
		s->stuck = s->idx[e->op];
}

/*
 * Tries to linearize the call at @e next. Return: 1 done (lifted and
 * pushed); 0 the model refuses it or the configuration was explored
 * already; -ENOSPC (memo bound) or -ENOMEM.
 */
static int try_call(struct key_search *s, struct node *e)
{
	struct lin_val next = s->st;
	uint32_t i = e->op;
	uint64_t hash = s->hash ^ s->zobrist[i];
	int rc;

	if (!lin_step(&s->ops[s->idx[i]], &next))
		return 0;
	bit_flip(s->bits, i);
	rc = memo_add(&s->memo, s->bits, hash ^ state_hash(next), next);
	if (rc <= 0) {
		bit_flip(s->bits, i);
		return rc;
	}
	s->hash = hash;
	s->stack[s->sp++] = (struct frame){ e, s->st };
	s->st = next;
	lift(e);
	return 1;
}

/* Undoes the last choice; returns the entry to try after it. */
static struct node *backtrack(struct key_search *s)
{
	struct frame f = s->stack[--s->sp];

	bit_flip(s->bits, f.call->op);
	s->hash ^= s->zobrist[f.call->op];
	s->st = f.st;
	unlift(f.call);
	return f.call->next;
}

static enum lin_verdict search(struct key_search *s,
			       const struct lin_limits *lim, int *err)
{
	struct node *e = s->head.next;
	int rc;

	note_depth(s);
	while (s->head.next) {
		if (++s->steps > lim->steps_max)
			return LIN_UNKNOWN;
		if (!e->call) {
			/* @e's op had to be linearized by now and was not. */
			if (s->sp == 0)
				return LIN_NOT_LINEARIZABLE;
			e = backtrack(s);
			continue;
		}
		rc = try_call(s, e);
		if (rc < 0) {
			*err = rc == -ENOMEM ? rc : 0;
			return LIN_UNKNOWN;
		}
		if (rc == 0) {
			e = e->next;
			continue;
		}
		if (s->sp > s->best)
			note_depth(s);
		e = s->head.next;
	}
	return LIN_LINEARIZABLE;
}

static void search_free(struct key_search *s)
{
	free(s->nodes);
	free(s->stack);
	free(s->bits);
	free(s->zobrist);
	free(s->memo.tab);
	free(s->memo.arena);
}

static int search_init(struct key_search *s, const struct lin_limits *lim,
		       unsigned key, size_t *overlapping)
{
	size_t words = (s->m + 63) / 64;
	size_t *aux = calloc(s->m, sizeof(*aux));

	s->nodes = calloc(2 * s->m, sizeof(*s->nodes));
	s->stack = calloc(s->m, sizeof(*s->stack));
	s->bits = calloc(words, sizeof(*s->bits));
	s->zobrist = calloc(s->m, sizeof(*s->zobrist));
	s->memo = (struct memo){ .words = words, .max = lim->memo_max };
	if (!aux || !s->nodes || !s->stack || !s->bits || !s->zobrist) {
		free(aux);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->m; i++)
		s->zobrist[i] = mix64(((uint64_t)key << 32) + i + 1);
	*overlapping = sort_entries(s, aux);
	link_nodes(s, aux);
	free(aux);
	s->st = lin_nil(); /* every key starts missing */
	return 0;
}

/* Checks the @m ops of one key (indices @idx) and adds to @rep. */
static int check_key(const struct lin_op *ops, const uint32_t *idx, size_t m,
		     unsigned key, const struct lin_limits *lim,
		     struct lin_report *rep)
{
	struct key_search s = { .ops = ops, .idx = idx, .m = m };
	enum lin_verdict v;
	size_t overlapping = 0;
	int err = search_init(&s, lim, key, &overlapping);

	if (err) {
		search_free(&s);
		return err;
	}
	v = search(&s, lim, &err);
	rep->ops += m;
	rep->histories++;
	rep->overlapping += overlapping;
	rep->steps += s.steps;
	rep->memo += s.memo.n;
	if (v > rep->verdict || rep->histories == 1) {
		rep->verdict = v;
		rep->key = key;
		rep->stuck = s.stuck;
		rep->depth = s.best;
	}
	search_free(&s);
	return err;
}

static int validate(const struct lin_op *ops, size_t n)
{
	if (n > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (ops[i].cmd < LIN_SET || ops[i].cmd >= LIN_CMD_END ||
		    ops[i].ret < ops[i].call)
			return -EINVAL;
	return 0;
}

int lin_check(const struct lin_op *ops, size_t n, const struct lin_limits *lim,
	      struct lin_report *rep)
{
	static const struct lin_limits defaults = { LIN_STEPS_DEFAULT,
						    LIN_MEMO_DEFAULT };
	size_t start[257] = { 0 }, fill[256];
	uint32_t *idx;
	int rc = 0;

	if (!rep || (!ops && n) || validate(ops, n))
		return -EINVAL;
	memset(rep, 0, sizeof(*rep));
	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	/* Counting sort by key, keeping each key's ops in log order. */
	for (size_t i = 0; i < n; i++)
		start[ops[i].key + 1]++;
	for (unsigned k = 0; k < 256; k++) {
		start[k + 1] += start[k];
		fill[k] = start[k];
	}
	for (size_t i = 0; i < n; i++)
		idx[fill[ops[i].key]++] = (uint32_t)i;
	for (unsigned k = 0; k < 256 && !rc; k++)
		if (start[k + 1] > start[k])
			rc = check_key(ops, idx + start[k],
				       start[k + 1] - start[k], k,
				       lim ? lim : &defaults, rep);
	free(idx);
	return rc;
}
