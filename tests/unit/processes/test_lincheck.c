/*
 * test_lincheck.c - the linearizability checker, on histories written by
 * hand and on random small histories decided by brute force, so that it is
 * known to be right independently of the store (test_linearizability.c
 * then runs it on the store's histories).
 *
 * Times are small integers: an operation [a, b] was invoked at a and
 * returned at b. Op x precedes op y only if x.ret < y.call.
 */
#include <stdbool.h>
#include <stdio.h>

#include "helpers/lincheck.h"
#include "helpers/rng.h"
#include "helpers/testutil.h"

#define HIST_MAX 32

struct hist {
	struct lin_op ops[HIST_MAX];
	size_t n;
};

static const struct lin_val OK = { .kind = LIN_OK };
static const struct lin_val ERR = { .kind = LIN_ERR };

static void add(struct hist *h, unsigned key, uint64_t call, uint64_t ret,
		enum lin_cmd cmd, struct lin_val arg, struct lin_val out)
{
	struct lin_op *op = &h->ops[h->n];

	cr_assert_lt(h->n, HIST_MAX, "history too long for the test");
	memset(op, 0, sizeof(*op));
	op->call = call;
	op->ret = ret;
	op->cmd = (uint8_t)cmd;
	op->key = (uint8_t)key;
	op->proc = (uint8_t)h->n;
	op->seq = (uint32_t)h->n;
	op->arg = arg;
	op->out = out;
	h->n++;
}

static struct lin_report check(const struct hist *h)
{
	struct lin_report rep;

	tu_assert_ok(lin_check(h->ops, h->n, NULL, &rep));
	cr_assert_eq(rep.ops, h->n, "checked %zu ops of %zu", rep.ops, h->n);
	return rep;
}

#define assert_verdict(h, want)                                                \
	do {                                                                   \
		struct lin_report r_ = check(h);                               \
		cr_assert_eq(r_.verdict, (want), "verdict %d, expected %d",    \
			     (int)r_.verdict, (int)(want));                    \
	} while (0)

#define assert_linearizable(h)	   assert_verdict(h, LIN_LINEARIZABLE)
#define assert_not_linearizable(h) assert_verdict(h, LIN_NOT_LINEARIZABLE)

TestSuite(lincheck, .fini = tu_teardown);

Test(lincheck, accepts_an_empty_history)
{
	struct hist h = { .n = 0 };
	struct lin_report rep = check(&h);

	cr_assert_eq(rep.verdict, LIN_LINEARIZABLE);
	cr_assert_eq(rep.histories, 0);
}

Test(lincheck, accepts_a_sequential_run_of_every_command)
{
	struct hist h = { .n = 0 };
	uint64_t t = 0;

#define SEQ(cmd, arg, out) add(&h, 0, t, t + 1, cmd, arg, out), t += 2
	SEQ(LIN_GET, lin_nil(), lin_nil());
	SEQ(LIN_INCR, lin_nil(), lin_int(1));
	SEQ(LIN_SETNX, lin_str(7), lin_int(0));
	SEQ(LIN_GETSET, lin_str(7), lin_int(1));
	SEQ(LIN_INCR, lin_nil(), ERR);
	SEQ(LIN_DELIFEQ, lin_str(8), lin_int(0));
	SEQ(LIN_DELIFEQ, lin_str(7), lin_int(1));
	SEQ(LIN_SETNX, lin_int(41), lin_int(1));
	SEQ(LIN_INCR, lin_nil(), lin_int(42));
	SEQ(LIN_GETDEL, lin_nil(), lin_int(42));
	SEQ(LIN_DEL, lin_nil(), lin_int(0));
	SEQ(LIN_SET, lin_str(9), OK);
	SEQ(LIN_DEL, lin_nil(), lin_int(1));
	SEQ(LIN_GETDEL, lin_nil(), lin_nil());
#undef SEQ
	assert_linearizable(&h);
}

Test(lincheck, rejects_a_read_of_a_value_never_written)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_int(1), OK);
	add(&h, 0, 2, 3, LIN_GET, lin_nil(), lin_int(2));
	assert_not_linearizable(&h);
}

Test(lincheck, rejects_a_stale_read_after_a_completed_write)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_int(1), OK);
	add(&h, 0, 2, 3, LIN_SET, lin_int(2), OK);
	add(&h, 0, 4, 5, LIN_GET, lin_nil(), lin_int(1));
	assert_not_linearizable(&h);
}

Test(lincheck, accepts_the_old_value_from_a_read_that_overlaps_the_write)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_int(1), OK);
	add(&h, 0, 2, 6, LIN_SET, lin_int(2), OK);
	add(&h, 0, 4, 5, LIN_GET, lin_nil(), lin_int(1));
	assert_linearizable(&h);
}

Test(lincheck, rejects_a_read_that_goes_back_in_time)
{
	struct hist h = { .n = 0 };

	/* The second GET starts after the first saw 2, and sees 1. */
	add(&h, 0, 0, 1, LIN_SET, lin_int(1), OK);
	add(&h, 0, 2, 10, LIN_SET, lin_int(2), OK);
	add(&h, 0, 3, 4, LIN_GET, lin_nil(), lin_int(2));
	add(&h, 0, 5, 6, LIN_GET, lin_nil(), lin_int(1));
	assert_not_linearizable(&h);
}

Test(lincheck, backtracks_when_the_first_order_it_tries_fails)
{
	struct hist h = { .n = 0 };

	/* Trying SET 1 first leaves 2, which the GET did not see: only
	 * SET 2, SET 1, GET works. */
	add(&h, 0, 0, 10, LIN_SET, lin_int(1), OK);
	add(&h, 0, 0, 10, LIN_SET, lin_int(2), OK);
	add(&h, 0, 11, 12, LIN_GET, lin_nil(), lin_int(1));
	assert_linearizable(&h);
}

Test(lincheck, rejects_two_setnx_winners_with_no_delete_between)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 10, LIN_SETNX, lin_str(1), lin_int(1));
	add(&h, 0, 0, 10, LIN_SETNX, lin_str(2), lin_int(1));
	assert_not_linearizable(&h);
}

Test(lincheck, accepts_two_setnx_winners_when_a_delete_overlaps_both)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 10, LIN_SETNX, lin_str(1), lin_int(1));
	add(&h, 0, 0, 10, LIN_SETNX, lin_str(2), lin_int(1));
	add(&h, 0, 5, 6, LIN_DEL, lin_nil(), lin_int(1));
	assert_linearizable(&h);
}

Test(lincheck, rejects_two_getsets_that_return_the_same_old_value)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_int(5), OK);
	add(&h, 0, 2, 10, LIN_GETSET, lin_int(6), lin_int(5));
	add(&h, 0, 2, 10, LIN_GETSET, lin_int(7), lin_int(5));
	assert_not_linearizable(&h);
}

Test(lincheck, accepts_chained_getsets_in_either_order)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 10, LIN_GETSET, lin_int(6), lin_int(7));
	add(&h, 0, 0, 10, LIN_GETSET, lin_int(7), lin_nil());
	add(&h, 0, 11, 12, LIN_GET, lin_nil(), lin_int(6));
	assert_linearizable(&h);
}

Test(lincheck, rejects_incr_that_treats_a_string_as_an_integer)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_str(3), OK);
	add(&h, 0, 2, 3, LIN_INCR, lin_nil(), lin_int(1));
	assert_not_linearizable(&h);
}

Test(lincheck, rejects_an_incr_error_that_changed_the_value)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_str(3), OK);
	add(&h, 0, 2, 3, LIN_INCR, lin_nil(), ERR);
	add(&h, 0, 4, 5, LIN_GET, lin_nil(), lin_nil());
	assert_not_linearizable(&h);
}

Test(lincheck, rejects_an_incr_error_on_an_integer)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_int(3), OK);
	add(&h, 0, 2, 3, LIN_INCR, lin_nil(), ERR);
	assert_not_linearizable(&h);
}

Test(lincheck, rejects_delifeq_that_deletes_another_value)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_str(3), OK);
	add(&h, 0, 2, 3, LIN_DELIFEQ, lin_str(4), lin_int(1));
	assert_not_linearizable(&h);
}

Test(lincheck, rejects_delifeq_that_misses_its_own_value)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_int(3), OK);
	add(&h, 0, 2, 3, LIN_DELIFEQ, lin_int(3), lin_int(0));
	assert_not_linearizable(&h);
}

Test(lincheck, tells_a_string_from_an_integer_with_the_same_number)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 1, LIN_SET, lin_str(3), OK);
	add(&h, 0, 2, 3, LIN_GET, lin_nil(), lin_int(3));
	assert_not_linearizable(&h);
}

Test(lincheck, rejects_a_reply_no_one_wrote)
{
	struct hist h = { .n = 0 };
	struct lin_val bad = lin_val_parse("garbage", 7);

	cr_assert_eq(bad.kind, LIN_BAD);
	add(&h, 0, 0, 10, LIN_SET, bad, OK);
	add(&h, 0, 11, 12, LIN_GET, lin_nil(), bad);
	assert_not_linearizable(&h);
}

Test(lincheck, checks_each_key_on_its_own_and_names_the_bad_one)
{
	struct hist h = { .n = 0 };
	struct lin_report rep;

	/* Fine per key; read as one register it would not be. */
	add(&h, 0, 0, 1, LIN_SET, lin_int(1), OK);
	add(&h, 1, 2, 3, LIN_SET, lin_int(2), OK);
	add(&h, 0, 4, 5, LIN_GET, lin_nil(), lin_int(1));
	add(&h, 2, 6, 7, LIN_SET, lin_int(3), OK);
	add(&h, 2, 8, 9, LIN_GET, lin_nil(), lin_int(4));
	add(&h, 1, 10, 11, LIN_GET, lin_nil(), lin_int(2));
	rep = check(&h);
	cr_assert_eq(rep.verdict, LIN_NOT_LINEARIZABLE);
	cr_assert_eq(rep.histories, 3);
	cr_assert_eq(rep.key, 2, "blamed key %u", rep.key);
	cr_assert_eq(rep.stuck, 4, "blamed op %zu, expected the GET",
		     rep.stuck);
	h.n = 4; /* without key 2's bad read */
	assert_linearizable(&h);
}

Test(lincheck, counts_equal_times_as_concurrent)
{
	struct hist h = { .n = 0 };

	/* SET returns at 5 and the GET starts at 5: either order. */
	add(&h, 0, 0, 5, LIN_SET, lin_int(1), OK);
	add(&h, 0, 5, 6, LIN_GET, lin_nil(), lin_nil());
	assert_linearizable(&h);
	h.ops[1].call = 6;
	assert_not_linearizable(&h);
}

Test(lincheck, counts_operations_that_overlap_another)
{
	struct hist h = { .n = 0 };

	add(&h, 0, 0, 10, LIN_SET, lin_int(1), OK);
	add(&h, 0, 2, 3, LIN_GET, lin_nil(), lin_int(1));
	add(&h, 0, 11, 12, LIN_GET, lin_nil(), lin_int(1));
	add(&h, 1, 5, 6, LIN_GET, lin_nil(), lin_nil());
	cr_assert_eq(check(&h).overlapping, 2);
}

Test(lincheck, says_unknown_when_the_search_bound_is_hit)
{
	struct hist h = { .n = 0 };
	struct lin_limits lim = { .steps_max = 2, .memo_max = 1000 };
	struct lin_report rep;

	for (unsigned i = 0; i < 8; i++)
		add(&h, 0, 0, 10, LIN_SET, lin_int(i), OK);
	add(&h, 0, 11, 12, LIN_GET, lin_nil(), lin_int(0));
	tu_assert_ok(lin_check(h.ops, h.n, &lim, &rep));
	cr_assert_eq(rep.verdict, LIN_UNKNOWN);
	lim = (struct lin_limits){ .steps_max = 1000000, .memo_max = 3 };
	tu_assert_ok(lin_check(h.ops, h.n, &lim, &rep));
	cr_assert_eq(rep.verdict, LIN_UNKNOWN);
	assert_linearizable(&h);
}

Test(lincheck, refuses_a_malformed_history)
{
	struct hist h = { .n = 0 };
	struct lin_report rep;

	add(&h, 0, 5, 4, LIN_GET, lin_nil(), lin_nil());
	tu_assert_rc(lin_check(h.ops, h.n, NULL, &rep), -EINVAL);
	h.ops[0].ret = 6;
	h.ops[0].cmd = LIN_CMD_END;
	tu_assert_rc(lin_check(h.ops, h.n, NULL, &rep), -EINVAL);
	tu_assert_rc(lin_check(NULL, 1, NULL, &rep), -EINVAL);
	tu_assert_rc(lin_check(h.ops, h.n, NULL, NULL), -EINVAL);
}

Test(lincheck, round_trips_values_through_their_bytes)
{
	char buf[LIN_VAL_BYTES_MAX];
	static const int64_t ids[] = { 0, 1, 9, 16, 17, 123456, 1ll << 40 };

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		size_t len = lin_val_format(lin_str(ids[i]), buf);
		struct lin_val v = lin_val_parse(buf, len);

		cr_assert(len > 8 && len <= sizeof(buf), "length %zu", len);
		cr_assert(v.kind == LIN_STR && v.n == ids[i], "id %lld",
			  (long long)ids[i]);
		len = lin_val_format(lin_int(-ids[i] * 7 - 1), buf);
		v = lin_val_parse(buf, len);
		cr_assert(v.kind == LIN_INT && v.n == -ids[i] * 7 - 1);
	}
	cr_assert_eq(lin_val_parse(LIT("0")).kind, LIN_INT);
	cr_assert_eq(lin_val_parse(LIT("007")).kind, LIN_BAD);
	cr_assert_eq(lin_val_parse(LIT("-0")).kind, LIN_BAD);
	cr_assert_eq(lin_val_parse(LIT("")).kind, LIN_BAD);
	/* A torn string: right prefix, wrong padding or length. */
	size_t len = lin_val_format(lin_str(5), buf);

	buf[len - 1] ^= 1;
	cr_assert_eq(lin_val_parse(buf, len).kind, LIN_BAD);
	buf[len - 1] ^= 1;
	cr_assert_eq(lin_val_parse(buf, len - 1).kind, LIN_BAD);
	cr_assert_eq(lin_val_parse(buf, len).kind, LIN_STR);
}

/*
 * Cross-check against brute force: random histories of a few operations on
 * two keys, decided by trying every order that respects real time with a
 * second, separately written model of the commands. Half the histories
 * come from a real sequential run (linearizable by construction), half
 * have one reply changed at random (either way).
 */

#define BRUTE_HISTORIES 4000
#define BRUTE_OPS_MAX	7

static struct lin_val ref_apply(const struct lin_op *op, struct lin_val *st)
{
	struct lin_val old = *st;
	bool present = st->kind != LIN_NIL;

	switch (op->cmd) {
	case LIN_SET:
		*st = op->arg;
		return OK;
	case LIN_GET:
		return old;
	case LIN_DEL:
		*st = lin_nil();
		return lin_int(present);
	case LIN_SETNX:
		if (!present)
			*st = op->arg;
		return lin_int(!present);
	case LIN_GETSET:
		*st = op->arg;
		return old;
	case LIN_GETDEL:
		*st = lin_nil();
		return old;
	case LIN_DELIFEQ:
		if (!present || old.kind != op->arg.kind || old.n != op->arg.n)
			return lin_int(0);
		*st = lin_nil();
		return lin_int(1);
	default: /* INCR; no test value comes near overflow */
		if (present && st->kind != LIN_INT)
			return ERR;
		*st = lin_int(present ? st->n + 1 : 1);
		return *st;
	}
}

static bool same(struct lin_val a, struct lin_val b)
{
	return a.kind == b.kind && a.n == b.n;
}

/* Whether the ops not in @done can follow, given states @st per key. */
static bool brute(const struct hist *h, unsigned done, struct lin_val st[2])
{
	if (done == (1u << h->n) - 1)
		return true;
	for (size_t i = 0; i < h->n; i++) {
		const struct lin_op *op = &h->ops[i];
		struct lin_val save = st[op->key];
		bool ready = !(done >> i & 1), ok;

		/* Every op that returned before i was invoked goes first. */
		for (size_t j = 0; j < h->n && ready; j++)
			ready = (done >> j & 1) || h->ops[j].ret >= op->call;
		if (!ready || !same(ref_apply(op, &st[op->key]), op->out)) {
			st[op->key] = save;
			continue;
		}
		ok = brute(h, done | 1u << i, st);
		st[op->key] = save;
		if (ok)
			return true;
	}
	return false;
}

/* A small pool, so that values repeat and DELIFEQ sometimes hits. */
static struct lin_val random_val(uint64_t *rng)
{
	static const struct lin_val pool[] = {
		{ .kind = LIN_NIL }, { .kind = LIN_OK }, { .kind = LIN_ERR },
		{ 0, LIN_INT, 0 },   { 1, LIN_INT, 0 },	 { 2, LIN_INT, 0 },
		{ 3, LIN_INT, 0 },   { 1, LIN_STR, 0 },	 { 2, LIN_STR, 0 },
	};

	return pool[rng_next(rng) % (sizeof(pool) / sizeof(pool[0]))];
}

/* Ops at random times; replies from running them, in order of a random
 * point inside each one's interval, through the reference model. */
static void random_history(struct hist *h, uint64_t *rng)
{
	uint64_t point[BRUTE_OPS_MAX];
	struct lin_val st[2] = { lin_nil(), lin_nil() };
	unsigned order[BRUTE_OPS_MAX];

	h->n = 0;
	for (size_t n = 2 + rng_next(rng) % (BRUTE_OPS_MAX - 1); h->n < n;) {
		uint64_t call = rng_next(rng) % 20;
		uint64_t ret = call + rng_next(rng) % 8;
		struct lin_val arg = random_val(rng);

		if (arg.kind != LIN_INT && arg.kind != LIN_STR)
			arg = lin_int(1);
		/* Points in 1/8 steps, so each op's point is in its interval. */
		point[h->n] = call * 8 + rng_next(rng) % ((ret - call) * 8 + 1);
		order[h->n] = (unsigned)h->n;
		add(h, (unsigned)(rng_next(rng) & 1), call, ret,
		    (enum lin_cmd)(LIN_SET + rng_next(rng) % (LIN_CMD_END - 1)),
		    arg, lin_nil());
	}
	for (size_t i = 1; i < h->n; i++)
		for (size_t j = i;
		     j > 0 && point[order[j]] < point[order[j - 1]]; j--) {
			unsigned t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < h->n; i++) {
		struct lin_op *op = &h->ops[order[i]];

		op->out = ref_apply(op, &st[op->key]);
	}
}

Test(lincheck, agrees_with_brute_force_on_random_small_histories)
{
	uint64_t rng = 0x6c696e636865636bull;
	size_t yes = 0, no = 0;

	for (unsigned t = 0; t < BRUTE_HISTORIES; t++) {
		struct hist h;
		struct lin_val st[2] = { lin_nil(), lin_nil() };
		struct lin_report rep;
		bool expect;

		random_history(&h, &rng);
		if (t % 2)
			h.ops[rng_next(&rng) % h.n].out = random_val(&rng);
		expect = brute(&h, 0, st);
		cr_assert(t % 2 || expect,
			  "history %u: a sequential run is "
			  "not linearizable by brute force",
			  t);
		rep = check(&h);
		cr_assert_eq(rep.verdict,
			     expect ? LIN_LINEARIZABLE : LIN_NOT_LINEARIZABLE,
			     "history %u: checker %d, brute force %d", t,
			     (int)rep.verdict, expect);
		expect ? yes++ : no++;
	}
	/* Both verdicts must be common, or the test shows little. */
	cr_assert_gt(no, BRUTE_HISTORIES / 8, "%zu not linearizable", no);
	cr_assert_gt(yes, BRUTE_HISTORIES / 2, "%zu linearizable", yes);
	cr_log_info("lincheck: agreed with brute force on %zu linearizable "
		    "and %zu non-linearizable histories",
		    yes, no);
}
