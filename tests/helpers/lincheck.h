/*
 * lincheck.h - a linearizability checker for shmkv's string commands.
 *
 * A history is a list of operations, each with the times it was invoked
 * and returned, the command, its argument and its reply. The history is
 * linearizable if every operation can be given one instant between its
 * invoke and return times such that, run in that order, a sequential
 * register (the model below) gives every operation the reply it got.
 *
 * The search is Wing & Gong's with Lowe's memoisation, as the Porcupine
 * and Knossos checkers do it: operations are split by key (linearizability
 * is local: a history is linearizable iff each key's sub-history is), and
 * each key's search remembers every (set of operations linearized, register
 * state) it has been in, so no configuration is explored twice.
 *
 * The log format is shared with tests/programs/lin_worker.c, which records real
 * processes' histories into a memfd the test reads after they exit.
 */
#ifndef SHMKV_LINCHECK_H
#define SHMKV_LINCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The commands the model knows. */
enum lin_cmd {
	LIN_SET = 1, /* SET v: OK */
	LIN_GET,     /* GET: the value or nil */
	LIN_DEL,     /* DEL: 1 if the key existed */
	LIN_SETNX,   /* SETNX v: 1 if set, 0 if the key existed */
	LIN_GETSET,  /* GETSET v: the old value or nil */
	LIN_GETDEL,  /* GETDEL: the old value or nil, then gone */
	LIN_DELIFEQ, /* DELIFEQ v: 1 if the value was v (then gone), else 0 */
	LIN_INCR,    /* INCR: the new integer; an error on a non-integer */
	LIN_CMD_END,
};

/*
 * A value, a reply, or a register state. Strings that are canonical
 * decimal integers are LIN_INT (INCR works on them); every other string a
 * test writes is LIN_STR with an id from which its bytes are rebuilt (see
 * lin_val_format), so a value is 16 bytes however long its bytes are.
 */
enum lin_kind {
	LIN_NIL = 0, /* no value: a missing key, or a nil reply */
	LIN_INT,     /* n: an integer reply, or the string of n */
	LIN_STR,     /* n: the id of a string value */
	LIN_OK,	     /* SET's reply */
	LIN_ERR,     /* an error reply (INCR on a non-integer) */
	LIN_BAD,     /* bytes no test wrote: matches no model reply */
};

struct lin_val {
	int64_t n;
	uint32_t kind; /* enum lin_kind */
	uint32_t pad;
};

/* One operation. A worker fills it in; times are CLOCK_MONOTONIC ns. */
struct lin_op {
	uint64_t call; /* taken just before the command */
	uint64_t ret;  /* taken just after it returned */
	uint8_t cmd;   /* enum lin_cmd */
	uint8_t key;   /* which of the round's keys */
	uint8_t proc;  /* which process (for messages only) */
	uint8_t pad[5];
	uint32_t seq; /* index in its process's log */
	uint32_t pad2;
	struct lin_val arg; /* the value written or compared */
	struct lin_val out; /* the reply */
};

/*
 * A worker's log: a header and LIN_LOG_CAP operations, at slot * the
 * size of one log in a shared memfd. The worker writes ops[i], then
 * count = i + 1; the parent reads after waitpid(), which orders both.
 */
#define LIN_LOG_MAGIC 0x6c696e6c6f673031ull /* "linlog01" */
#define LIN_LOG_CAP   4096u
struct lin_log {
	uint64_t magic;
	uint32_t cap;
	uint32_t count;
	int32_t err; /* the unexpected return code that stopped it */
	uint32_t pad;
	char why[112]; /* what stopped it, for the test's message */
	struct lin_op ops[LIN_LOG_CAP];
};

/* Verdicts, best first: a check's verdict is its worst key's. */
enum lin_verdict {
	LIN_LINEARIZABLE = 0,
	LIN_UNKNOWN, /* the search hit its bound */
	LIN_NOT_LINEARIZABLE,
};

/*
 * Bounds on one key's search. Each memo entry holds one bit per operation
 * of the key, so with @memo_max entries of a key with n operations the
 * memo takes at most memo_max * (n / 8 + 24) bytes.
 */
struct lin_limits {
	uint64_t steps_max; /* list entries visited, per key */
	size_t memo_max;    /* configurations remembered, per key */
};
#define LIN_STEPS_DEFAULT 50000000ull
#define LIN_MEMO_DEFAULT  (1u << 18)

struct lin_report {
	enum lin_verdict verdict;
	size_t ops;	    /* operations checked */
	size_t histories;   /* keys with at least one operation */
	size_t overlapping; /* operations concurrent with another on its key */
	uint64_t steps;	    /* list entries visited, all keys */
	size_t memo;	    /* configurations remembered, all keys */
	/* For the worst key: which, and (if not linearizable) the op (index
	 * in the caller's array) no linearization got past, and how many
	 * ops the longest linearization found had placed. */
	unsigned key;
	size_t stuck;
	size_t depth;
};

/*
 * lin_check - whether the history @ops[0..@n) is linearizable.
 * @lim: bounds, or NULL for the defaults.
 *
 * Times need not be sorted. An operation whose return time is not after
 * another's invoke time counts as concurrent with it (so equal times, which
 * a coarse clock may give, never make the check stricter than the truth).
 * Every key starts missing.
 *
 * Return: 0 with @rep filled in; -EINVAL (NULL argument, an unknown
 * command, or a return time before its invoke time), -ENOMEM.
 */
int lin_check(const struct lin_op *ops, size_t n, const struct lin_limits *lim,
	      struct lin_report *rep);

/*
 * The model: applies @op to the register state @st if the reply @op
 * recorded is what a sequential register would give. Return: 1 and @st
 * updated, or 0 and @st untouched.
 */
int lin_step(const struct lin_op *op, struct lin_val *st);

/* Whether @a and @b are the same value or reply. A LIN_BAD value equals
 * nothing, itself included: no model state holds bytes no one wrote. */
bool lin_val_eq(struct lin_val a, struct lin_val b);

/* Value constructors. */
struct lin_val lin_nil(void);
struct lin_val lin_int(int64_t n);
struct lin_val lin_str(int64_t id);

/*
 * The bytes of a LIN_INT or LIN_STR value into @buf (at least
 * LIN_VAL_BYTES_MAX bytes); returns their length, or 0 for other kinds.
 * Strings are "s<id>:" padded with letters that depend on the id to more
 * than 8 bytes, so that the store keeps them in a value block, while the
 * integers a test writes are kept inline.
 */
#define LIN_VAL_BYTES_MAX 48
size_t lin_val_format(struct lin_val v, char *buf);

/* The value whose bytes are @buf[0..@len): LIN_INT, LIN_STR, or LIN_BAD
 * for bytes lin_val_format never gives. */
struct lin_val lin_val_parse(const char *buf, size_t len);

/* "GETSET", or "?" for an unknown command. */
const char *lin_cmd_name(unsigned cmd);
/* One line for failure messages: "p2#17 GETSET k1 s33 -> 42 @[t0, t1]",
 * times in microseconds after @base (ns). */
void lin_op_describe(const struct lin_op *op, uint64_t base, char *buf,
		     size_t cap);

#endif /* SHMKV_LINCHECK_H */
