/*
 * lin_model.c - the register model lincheck.c searches with, the bytes of
 * the values the tests write, and messages.
 *
 * The model is a Redis string key with the commands of enum lin_cmd: SET,
 * GET, DEL, SETNX, GETSET, GETDEL, DELIFEQ and INCR (which counts a missing
 * key as 0 and replies an error, changing nothing, on a non-integer).
 */
#include "lincheck.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Values and the model.
 */

struct lin_val lin_nil(void)
{
	return (struct lin_val){ .n = 0, .kind = LIN_NIL };
}

struct lin_val lin_int(int64_t n)
{
	return (struct lin_val){ .n = n, .kind = LIN_INT };
}

struct lin_val lin_str(int64_t id)
{
	return (struct lin_val){ .n = id, .kind = LIN_STR };
}

static struct lin_val val_of(enum lin_kind kind, int64_t n)
{
	return (struct lin_val){ .n = n, .kind = kind };
}

/* Only INT and STR carry a payload; BAD matches nothing, itself included. */
bool lin_val_eq(struct lin_val a, struct lin_val b)
{
	if (a.kind != b.kind || a.kind == LIN_BAD)
		return false;
	return (a.kind != LIN_INT && a.kind != LIN_STR) || a.n == b.n;
}

static bool reply_is_int(const struct lin_op *op, int64_t n)
{
	return lin_val_eq(op->out, lin_int(n));
}

/* INCR: a missing key counts as 0; a string or an overflow is an error
 * reply that changes nothing. */
static int step_incr(const struct lin_op *op, struct lin_val *st)
{
	if (st->kind == LIN_NIL) {
		if (!reply_is_int(op, 1))
			return 0;
		*st = lin_int(1);
		return 1;
	}
	if (st->kind != LIN_INT || st->n == INT64_MAX)
		return op->out.kind == LIN_ERR;
	if (!reply_is_int(op, st->n + 1))
		return 0;
	st->n++;
	return 1;
}

/* The commands that reply with an integer flag. */
static int step_flag(const struct lin_op *op, struct lin_val *st)
{
	bool present = st->kind != LIN_NIL;
	bool hit;

	switch (op->cmd) {
	case LIN_DEL:
		hit = present;
		break;
	case LIN_SETNX:
		hit = !present;
		break;
	default: /* LIN_DELIFEQ */
		hit = present && lin_val_eq(*st, op->arg);
		break;
	}
	if (!reply_is_int(op, hit))
		return 0;
	if (hit)
		*st = op->cmd == LIN_SETNX ? op->arg : lin_nil();
	return 1;
}

int lin_step(const struct lin_op *op, struct lin_val *st)
{
	switch (op->cmd) {
	case LIN_SET:
		if (op->out.kind != LIN_OK)
			return 0;
		*st = op->arg;
		return 1;
	case LIN_GET:
		return lin_val_eq(op->out, *st);
	case LIN_GETSET:
	case LIN_GETDEL:
		if (!lin_val_eq(op->out, *st))
			return 0;
		*st = op->cmd == LIN_GETSET ? op->arg : lin_nil();
		return 1;
	case LIN_DEL:
	case LIN_SETNX:
	case LIN_DELIFEQ:
		return step_flag(op, st);
	case LIN_INCR:
		return step_incr(op, st);
	default:
		return 0;
	}
}

/*
 * Value bytes: integers in decimal; strings "s<id>:" padded with letters to
 * 6..22 bytes past the prefix, so always more than 8 bytes and never an
 * integer: the store keeps them in a value block.
 */
static size_t str_len(int64_t id, size_t prefix)
{
	return prefix + 6 + (size_t)(id % 17);
}

static char str_pad(int64_t id, size_t i)
{
	return (char)('a' + (int)((id + (int64_t)i) % 26));
}

size_t lin_val_format(struct lin_val v, char *buf)
{
	size_t prefix, len;

	if (v.kind == LIN_INT)
		return (size_t)snprintf(buf, LIN_VAL_BYTES_MAX, "%lld",
					(long long)v.n);
	if (v.kind != LIN_STR || v.n < 0)
		return 0;
	prefix = (size_t)snprintf(buf, LIN_VAL_BYTES_MAX,
				  "s%lld:", (long long)v.n);
	len = str_len(v.n, prefix);
	for (size_t i = prefix; i < len; i++)
		buf[i] = str_pad(v.n, i);
	return len;
}

/* Digits @buf[0..@len) as a non-negative int64; -1 if not exactly that
 * (empty, a leading zero before more digits, a non-digit, or too big). */
static int64_t parse_digits(const char *buf, size_t len)
{
	uint64_t v = 0;

	if (len == 0 || len > 19 || (len > 1 && buf[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	return v > INT64_MAX ? -1 : (int64_t)v;
}

static struct lin_val parse_str(const char *buf, size_t len)
{
	const char *colon = len > 2 ? memchr(buf, ':', len) : NULL;
	size_t prefix = colon ? (size_t)(colon - buf) + 1 : 0;
	int64_t id = colon && buf[0] == 's' ? parse_digits(buf + 1, prefix - 2)
					    : -1;

	if (id < 0 || len != str_len(id, prefix))
		return val_of(LIN_BAD, 0);
	for (size_t i = prefix; i < len; i++)
		if (buf[i] != str_pad(id, i))
			return val_of(LIN_BAD, 0);
	return lin_str(id);
}

struct lin_val lin_val_parse(const char *buf, size_t len)
{
	int64_t n;

	/* "-0" and INT64_MIN are never written; treat them as foreign. */
	if (len > 1 && buf[0] == '-') {
		n = parse_digits(buf + 1, len - 1);
		return n > 0 ? lin_int(-n) : val_of(LIN_BAD, 0);
	}
	n = parse_digits(buf, len);
	return n >= 0 ? lin_int(n) : parse_str(buf, len);
}

/*
 * Messages.
 */

const char *lin_cmd_name(unsigned cmd)
{
	static const char *const names[LIN_CMD_END] = {
		[LIN_SET] = "SET",	   [LIN_GET] = "GET",
		[LIN_DEL] = "DEL",	   [LIN_SETNX] = "SETNX",
		[LIN_GETSET] = "GETSET",   [LIN_GETDEL] = "GETDEL",
		[LIN_DELIFEQ] = "DELIFEQ", [LIN_INCR] = "INCR",
	};

	return cmd < LIN_CMD_END && names[cmd] ? names[cmd] : "?";
}

static void val_describe(struct lin_val v, char *buf, size_t cap)
{
	switch (v.kind) {
	case LIN_NIL:
		snprintf(buf, cap, "nil");
		break;
	case LIN_INT:
		snprintf(buf, cap, "%lld", (long long)v.n);
		break;
	case LIN_STR:
		snprintf(buf, cap, "s%lld", (long long)v.n);
		break;
	case LIN_OK:
		snprintf(buf, cap, "OK");
		break;
	case LIN_ERR:
		snprintf(buf, cap, "(error)");
		break;
	default:
		snprintf(buf, cap, "(bytes no one wrote)");
		break;
	}
}

void lin_op_describe(const struct lin_op *op, uint64_t base, char *buf,
		     size_t cap)
{
	char arg[48] = "", out[48];
	bool has_arg = op->cmd == LIN_SET || op->cmd == LIN_SETNX ||
		       op->cmd == LIN_GETSET || op->cmd == LIN_DELIFEQ;

	if (has_arg)
		val_describe(op->arg, arg, sizeof(arg));
	val_describe(op->out, out, sizeof(out));
	snprintf(buf, cap, "p%u#%u %s k%u%s%s -> %s @[%.3f, %.3f] us",
		 (unsigned)op->proc, (unsigned)op->seq, lin_cmd_name(op->cmd),
		 (unsigned)op->key, has_arg ? " " : "", arg, out,
		 (double)(int64_t)(op->call - base) / 1e3,
		 (double)(int64_t)(op->ret - base) / 1e3);
}
