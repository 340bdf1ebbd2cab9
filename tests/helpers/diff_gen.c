/*
 * diff_gen.c - the random command stream of tests/programs/diff_redis.c (see
 * diff_gen.h). Every choice is drawn from one splitmix64 stream, in a
 * fixed order, so a seed replays the same commands.
 */
#include "helpers/clock.h"
#include "helpers/diff_gen.h"
#include "helpers/rng.h"
#include "shmkv_exec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Keys: few, so commands keep meeting each other's values. */
static const struct {
	const char *p;
	size_t len;
} keys[DG_NKEYS] = {
	{ "a", 1 },	  { "b", 1 },	   { "", 0 },	 { "k\0z", 3 },
	{ "counter", 7 }, { "lock:1", 6 }, { "x y", 3 }, { "KEY", 3 },
};

/* What the stream may use. */
static struct {
	char skip[256];
	size_t value_max;
} opt;

/*
 * Random numbers: one stream (helpers/rng.h), so one seed gives one stream
 * everywhere.
 */
static uint64_t rng_state;

static uint64_t below(uint64_t n)
{
	return rng_below(&rng_state, n);
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
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

/*
 * Commands: argument vectors that own their bytes.
 */

void dg_cmd_add(struct dg_cmd *c, const void *p, size_t len)
{
	char *s;

	if (c->argc == DG_MAX_ARGS)
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

void dg_cmd_adds(struct dg_cmd *c, const char *s)
{
	dg_cmd_add(c, s, strlen(s));
}

static void cmd_addi(struct dg_cmd *c, int64_t v)
{
	char buf[32];

	dg_cmd_add(c, buf, (size_t)snprintf(buf, sizeof(buf), "%" PRId64, v));
}

/* Adds @s in random letter case: Redis ignores case in names and options. */
static void cmd_addc(struct dg_cmd *c, const char *s)
{
	char buf[32];
	size_t i, n = strlen(s);

	for (i = 0; i < n && i < sizeof(buf); i++)
		buf[i] = chance(50) ? (char)(s[i] ^ 0x20) : s[i];
	if (!chance(30))
		memcpy(buf, s, n); /* mostly as written */
	dg_cmd_add(c, buf, n);
}

void dg_cmd_free(struct dg_cmd *c)
{
	while (c->argc > 0)
		free(c->argv[--c->argc]);
}

void dg_print_bytes(FILE *f, const char *p, size_t len)
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

void dg_cmd_print(FILE *f, const struct dg_cmd *c)
{
	int i;

	for (i = 0; i < c->argc; i++) {
		fputc(i ? ' ' : '\t', f);
		dg_print_bytes(f, c->argv[i], c->len[i]);
	}
	fputc('\n', f);
}

/*
 * Generators of arguments.
 */

static void gen_key(struct dg_cmd *c)
{
	int k = (int)below(DG_NKEYS);

	dg_cmd_add(c, keys[k].p, keys[k].len);
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

static void gen_int(struct dg_cmd *c)
{
	unsigned r = (unsigned)below(100);

	if (r < 55)
		cmd_addi(c, between(-1000, 1000));
	else if (r < 80)
		cmd_addi(c, edge_int());
	else
		dg_cmd_adds(c, odd_ints[below(sizeof(odd_ints) /
					      sizeof(odd_ints[0]))]);
}

static void gen_blob(struct dg_cmd *c, size_t len, int binary)
{
	char *buf = malloc(len + 1);
	size_t i;

	if (!buf)
		exit(1);
	for (i = 0; i < len; i++)
		buf[i] = binary ? (char)below(256) : (char)('a' + i % 26);
	if (binary && len > 2)
		buf[below(len)] = '\0'; /* at least one NUL */
	dg_cmd_add(c, buf, len);
	free(buf);
}

/* Values generated lately, so DELIFEQ sometimes names the right one. */
static struct {
	char *p;
	size_t len;
} recent[4];
static unsigned recent_next;

static void remember_value(const struct dg_cmd *c)
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

static void gen_value(struct dg_cmd *c)
{
	unsigned r = (unsigned)below(100);
	int argc = c->argc;

	if (recent_next > 0 && r < 15) {
		unsigned i = (unsigned)below(recent_next < 4 ? recent_next : 4);

		dg_cmd_add(c, recent[i].p, recent[i].len);
		return;
	}
	r = (unsigned)below(100);

	if (r < 8)
		dg_cmd_adds(c, "");
	else if (r < 50)
		gen_int(c);
	else if (r < 62)
		dg_cmd_adds(c, chance(50) ? "hello" : "owner-42");
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

static void gen_time(struct dg_cmd *c, enum time_kind kind)
{
	unsigned r = (unsigned)below(100);

	if (r < 75)
		cmd_addi(c, good_time(kind));
	else if (r < 85)
		cmd_addi(c, past_time(kind));
	else if (r < 95)
		cmd_addi(c, edge_time());
	else
		dg_cmd_adds(c, odd_ints[below(sizeof(odd_ints) /
					      sizeof(odd_ints[0]))]);
}

/*
 * Generators of commands.
 */

static void gen_expiry_opt(struct dg_cmd *c)
{
	static const char *const names[] = { "EX", "PX", "EXAT", "PXAT" };
	unsigned k = (unsigned)below(4);

	cmd_addc(c, names[k]);
	/* An expiry without its time, rarely, and only last. */
	if (chance(2))
		return;
	gen_time(c, (enum time_kind)k);
}

static void gen_set_opt(struct dg_cmd *c)
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
		dg_cmd_adds(c, bogus[below(5)]);
	else if (chance(50))
		dg_cmd_add(c, "nx\0junk",
			   7); /* Redis reads options as C strings */
	else
		dg_cmd_add(c, "GET\0", 4);
}

/* Mostly zero or one option, sometimes a pile of them. */
static int n_opts(void)
{
	unsigned r = (unsigned)below(100);

	return r < 40 ? 0 : r < 75 ? 1 : r < 90 ? 2 : (int)between(3, 4);
}

static void gen_set(struct dg_cmd *c)
{
	int i, n = n_opts();

	cmd_addc(c, "SET");
	gen_key(c);
	gen_value(c);
	for (i = 0; i < n; i++)
		gen_set_opt(c);
}

static void gen_getex(struct dg_cmd *c)
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
			dg_cmd_adds(c, bogus[below(4)]);
	}
}

static void gen_expire(struct dg_cmd *c)
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
			dg_cmd_adds(c, chance(50) ? "foo" : "nx\r\n");
	}
}

static void gen_keys(struct dg_cmd *c, const char *name)
{
	int i, n = (int)between(1, 4);

	cmd_addc(c, name);
	for (i = 0; i < n; i++)
		gen_key(c);
}

/* Commands given only well-formed (dg_only_well_formed). */
static char well_formed_only[8][32];

void dg_only_well_formed(const char *name)
{
	for (size_t i = 0; i < 8; i++)
		if (!well_formed_only[i][0]) {
			snprintf(well_formed_only[i], 32, "%s", name);
			return;
		}
}

/* May @cmd be picked for a call of any shape (@arity 0)? */
static int pickable(const struct shmkv_command *cmd, int arity)
{
	if (arity)
		return cmd->arity == arity;
	for (size_t i = 0; i < 8; i++)
		if (!strcmp(well_formed_only[i], cmd->name))
			return 0;
	return 1;
}

/* A command of the library's table with @arity, or (0) any command for a
 * call of any shape, chosen evenly: the stream covers each command the
 * table adds without a word here. */
static const char *pick_command(int arity)
{
	const struct shmkv_command *cmd;
	size_t n = 0, k;

	for (k = 0; (cmd = shmkv_command_at(k)) != NULL; k++)
		n += pickable(cmd, arity);
	n = below(n);
	for (k = 0; (cmd = shmkv_command_at(k)) != NULL; k++)
		if (pickable(cmd, arity) && n-- == 0)
			break;
	return cmd->name;
}

/* GET, TTL, INCR...: every command of exactly a key. */
static void gen_key_cmd(struct dg_cmd *c)
{
	cmd_addc(c, pick_command(2));
	gen_key(c);
}

/* SETNX, GETSET, DELIFEQ, INCRBY...: every command of a key and a value. */
static void gen_key_value_cmd(struct dg_cmd *c)
{
	cmd_addc(c, pick_command(3));
	gen_key(c);
	gen_value(c);
}

static void gen_incrby(struct dg_cmd *c)
{
	cmd_addc(c, chance(50) ? "INCRBY" : "DECRBY");
	gen_key(c);
	gen_int(c);
}

/* Wrong arity, unknown commands, PING: errors must read the same. */
static void gen_misc(struct dg_cmd *c)
{
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
		cmd_addc(c, pick_command(0));
		if (chance(50))
			gen_key(c);
		if (chance(40))
			gen_key(c);
		if (chance(40))
			gen_key(c);
	} else {
		dg_cmd_adds(c, chance(50) ? "foo" : "NoSuchCommand");
		while (chance(60) && c->argc < 6)
			gen_value(c);
	}
}

/*
 * A TTL of a few milliseconds, then a pause several times longer: both
 * sides have let the key expire by the next command, whatever the
 * scheduler did in between, so lazy expiry is compared exactly.
 */
static void gen_short(struct dg_cmd *c)
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
	void (*gen)(struct dg_cmd *c);
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

void dg_next(struct dg_cmd *c)
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

void dg_init(uint64_t seed, size_t value_max, const char *skip)
{
	rng_state = seed;
	opt.value_max = value_max;
	snprintf(opt.skip, sizeof(opt.skip), "%s", skip ? skip : "");
}

void dg_key(int i, const char **p, size_t *len)
{
	*p = keys[i].p;
	*len = keys[i].len;
}
