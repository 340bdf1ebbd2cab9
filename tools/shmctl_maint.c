/*
 * shmctl_maint.c - "shmctl check", "recover", "sweep", "maintain" and
 * "locks".
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <string.h>

#include "shmctl.h"
#include "shmkv_lock.h"

/* Slots per shmkv_sweep() call: bounded work between checks of time. */
#define SWEEP_STEP 4096

/* Parses the options of a command that takes NAME and maybe --json,
 * then opens the store. Return: CTL_CONTINUE with *@kv open, or the exit
 * code to end with. */
static int open_with_opts(const struct ctl_cmd *cmd, int argc, char **argv,
			  unsigned flags, bool *json, shmkv_t **kv,
			  char name[SHMKV_NAME_MAX + 1])
{
	static const struct option opts[] = {
		CTL_OPT_JSON,
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*json = false;
	while ((c = ctl_getopt(cmd, argc, argv, "hj", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		*json = true;
	}
	c = ctl_operands(cmd, argc - optind, 1, 1);
	if (c == CTL_OK)
		c = ctl_open(argv[optind], flags, kv, name);
	return c == CTL_OK ? CTL_CONTINUE : c;
}

struct check_out {
	bool json;
	struct ctl_json j;
};

static void on_problem(const char *problem, void *arg)
{
	struct check_out *o = arg;

	/* A dead process's leftover is no problem (the store reclaims it by
	 * itself): shown, not in red. */
	bool left = strncmp(problem, "leftover: ", 10) == 0;

	if (o->json)
		cj_cstr(&o->j, NULL, problem);
	else
		printf("%s%s%s\n", left ? "" : ctl_color(CTL_RED), problem,
		       left ? "" : ctl_color(CTL_RESET));
}

/* Begins the JSON of a listing: {"name":NAME,"@array":[ ... */
static void json_list_open(struct ctl_json *j, const char *name,
			   const char *array)
{
	cj_open(j, stdout);
	cj_cstr(j, "name", name);
	cj_arr(j, array);
}

static int run_check(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	struct check_out o;
	shmkv_t *kv;
	int n, rc = open_with_opts(cmd, argc, argv, SHMKV_OPEN_READONLY,
				   &o.json, &kv, name);

	if (rc != CTL_CONTINUE)
		return rc;
	if (o.json)
		json_list_open(&o.j, name, "problems");
	n = shmkv_check(kv, on_problem, &o);
	shmkv_close(kv);
	if (o.json) {
		cj_end(&o.j, ']');
		cj_i64(&o.j, "count", n < 0 ? 0 : n);
		cj_bool(&o.j, "clean", n == 0);
		cj_close(&o.j);
	}
	if (n < 0)
		return ctl_store_err(name, "check", n);
	if (!o.json)
		printf("%s: %d problem%s found\n", name, n, n == 1 ? "" : "s");
	return n > 0 ? CTL_CHECK : CTL_OK;
}

const struct ctl_cmd ctl_cmd_check = {
	.name = "check",
	.synopsis = "NAME [--json]",
	.summary = "verify the whole store read-only (exit 4: problems found)",
	.help = "Checks that every key is findable by probing from its home\n"
		"and present once, that every value refers to valid value\n"
		"storage that points back at it, and that nothing is\n"
		"malformed. One line per problem, then a count. What dead\n"
		"processes left (claims, half-done inserts, value storage)\n"
		"is shown in lines that start with \"leftover: \" and is no\n"
		"problem: the store reclaims it by itself (shmctl recover\n"
		"does it at once). Writers running meanwhile can cause\n"
		"transient reports: for a verdict, check a quiet store.\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"problems\":[...],\"count\":N,"
		"\"clean\":B}\n",
	.run = run_check,
};

static void recover_human(const char *name, int n,
			  const struct shmkv_recover_report *r)
{
	printf("%s: %d repair%s\n", name, n, n == 1 ? "" : "s");
	printf("  stale claims   %10" PRIu64 "  slots claimed by dead "
	       "processes, given back\n",
	       r->stale_claims);
	printf("  stuck inserts  %10" PRIu64 "  inserts left pending, "
	       "decided\n",
	       r->stuck_inserts);
	printf("  collided       %10" PRIu64 "  losing duplicate inserts, "
	       "given back\n",
	       r->collided);
	printf("  dead slots     %10" PRIu64 "  half-done deletes, finished\n",
	       r->dead_slots);
	printf("  leaked blocks  %10" PRIu64 "  value storage returned to "
	       "the pool\n",
	       r->leaked_blocks);
}

static void recover_json(const char *name, int n,
			 const struct shmkv_recover_report *r)
{
	struct ctl_json j;

	cj_open(&j, stdout);
	cj_cstr(&j, "name", name);
	cj_i64(&j, "repairs", n);
	cj_u64(&j, "stale_claims", r->stale_claims);
	cj_u64(&j, "stuck_inserts", r->stuck_inserts);
	cj_u64(&j, "collided", r->collided);
	cj_u64(&j, "dead_slots", r->dead_slots);
	cj_u64(&j, "leaked_blocks", r->leaked_blocks);
	cj_close(&j);
}

static int run_recover(const struct ctl_cmd *cmd, int argc, char **argv)
{
	struct shmkv_recover_report rep;
	char name[SHMKV_NAME_MAX + 1];
	shmkv_t *kv;
	bool json;
	int n, rc = open_with_opts(cmd, argc, argv, 0, &json, &kv, name);

	if (rc != CTL_CONTINUE)
		return rc;
	memset(&rep, 0, sizeof(rep));
	n = shmkv_recover(kv, &rep);
	shmkv_close(kv);
	if (n < 0)
		return ctl_store_err(name, "recover", n);
	if (json)
		recover_json(name, n, &rep);
	else
		recover_human(name, n, &rep);
	return CTL_OK;
}

const struct ctl_cmd ctl_cmd_recover = {
	.name = "recover",
	.synopsis = "NAME [--json]",
	.summary = "repair what processes killed mid-operation left behind",
	.help = "Gives back slots claimed by dead processes, decides inserts\n"
		"they left pending, finishes their deletes and returns value\n"
		"storage they allocated but never published. Safe while other\n"
		"processes use the store. Liveness is judged by pid, so every\n"
		"user of the store must live in this pid namespace.\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"repairs\":N,\"stale_claims\":N,"
		"...}\n",
	.run = run_recover,
};

static int run_sweep(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	uint64_t cursor = 0, total = 0;
	shmkv_t *kv;
	bool json;
	int n = 0, rc = open_with_opts(cmd, argc, argv, 0, &json, &kv, name);

	if (rc != CTL_CONTINUE)
		return rc;
	/* One full pass: the cursor comes back to 0 when it wraps. */
	do {
		n = shmkv_sweep(kv, &cursor, SWEEP_STEP);
		total += n > 0 ? (uint64_t)n : 0;
	} while (n >= 0 && cursor != 0);
	shmkv_close(kv);
	if (n < 0)
		return ctl_store_err(name, "sweep", n);
	if (json) {
		struct ctl_json j;

		cj_open(&j, stdout);
		cj_cstr(&j, "name", name);
		cj_u64(&j, "expired", total);
		cj_close(&j);
	} else {
		printf("%s: %" PRIu64 " expired key%s deleted\n", name, total,
		       total == 1 ? "" : "s");
	}
	return CTL_OK;
}

const struct ctl_cmd ctl_cmd_sweep = {
	.name = "sweep",
	.synopsis = "NAME [--json]",
	.summary = "delete every expired key now (one pass over the store)",
	.help = "Expired keys are otherwise deleted when touched. Safe while\n"
		"other processes use the store.\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"expired\":N}\n",
	.run = run_sweep,
};

/* Why a growth could not be finished, for the errors shmkv_maintain()
 * documents; NULL for the others (shmkv_strerror() says). */
static const char *maintain_why(int err)
{
	switch (err) {
	case -EROFS:
		return "opened read-only: moving keys needs write permission";
	case -ENOSPC:
		return "a key found no room in the new table (its probe "
		       "window there is full): the growth waits, every key "
		       "stays readable; delete keys, then run maintain again";
	default:
		return NULL;
	}
}

static int maintain_err(const char *name, int err)
{
	const char *why = maintain_why(err);

	if (why == NULL)
		return ctl_store_err(name, "maintain", err);
	ctl_err(name, "maintain: %s", why);
	return CTL_STORE;
}

/*
 * What a maintain did, from the counts before and after it: the table it
 * found growing (@from, 0: none), or one a writer started and someone
 * finished meanwhile (then the table it saw doubled).
 */
static uint64_t maintain_grew_from(const struct shmkv_stats *before,
				   const struct shmkv_stats *after)
{
	if (before->growing_from != 0)
		return before->growing_from;
	return after->growths > before->growths ? before->slots : 0;
}

static void maintain_print(const char *name, bool json,
			   const struct shmkv_stats *before,
			   const struct shmkv_stats *after)
{
	uint64_t from = maintain_grew_from(before, after);
	struct ctl_json j;

	if (!json) {
		if (from != 0)
			printf("%s: table grew from %" PRIu64 " to %" PRIu64
			       " slots: moved\n",
			       name, from, 2 * from);
		else
			printf("%s: no growth under way (%" PRIu64 " slots)\n",
			       name, after->slots);
		/* Writers may start the next one at once: say so. */
		if (after->growing_from != 0)
			printf("%s: another growth has started since, from "
			       "%" PRIu64 " slots\n",
			       name, after->growing_from);
		return;
	}
	cj_open(&j, stdout);
	cj_cstr(&j, "name", name);
	cj_bool(&j, "grew", from != 0);
	if (from != 0) {
		cj_u64(&j, "from", from);
		cj_u64(&j, "to", 2 * from);
	} else {
		cj_null(&j, "from");
		cj_null(&j, "to");
	}
	cj_u64(&j, "slots", after->slots);
	cj_u64(&j, "growths", after->growths);
	cj_u64(&j, "growing_from", after->growing_from);
	cj_close(&j);
}

/* Finishes @kv's growth, if one runs, and says what it did. */
static int maintain_do(shmkv_t *kv, const char *name, bool json)
{
	struct shmkv_stats before, after;
	int err = shmkv_stats(kv, &before);

	if (!err)
		err = shmkv_maintain(kv);
	if (err)
		return maintain_err(name, err);
	err = shmkv_stats(kv, &after);
	if (err)
		return ctl_store_err(name, "maintain", err);
	maintain_print(name, json, &before, &after);
	return CTL_OK;
}

int ctl_maintain_prompt(shmkv_t *kv, const char *name, int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return ctl_usage(&ctl_cmd_maintain, "takes no operand at the "
						    "prompt");
	return maintain_do(kv, name, false);
}

static int run_maintain(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	shmkv_t *kv;
	bool json;
	int rc = open_with_opts(cmd, argc, argv, 0, &json, &kv, name);

	if (rc != CTL_CONTINUE)
		return rc;
	rc = maintain_do(kv, name, json);
	shmkv_close(kv);
	return rc;
}

const struct ctl_cmd ctl_cmd_maintain = {
	.name = "maintain",
	.synopsis = "NAME [--json]",
	.summary = "finish a growth of the table under way (for idle stores)",
	.help = "The table doubles online when it fills, within max_memory:\n"
		"every write moves a bounded share of the keys to the new\n"
		"table, so a store that gets few writes can stay half-moved\n"
		"(shmctl info shows how far). maintain moves the rest and\n"
		"says what it did: \"table grew from N to 2N slots: moved\",\n"
		"or \"no growth under way\". Safe while other processes use\n"
		"the store, and as often as one likes. Needs write\n"
		"permission. Moving a key needs no value memory. Exit 3 when\n"
		"a key finds no room in the new table: the growth waits,\n"
		"every key stays readable, and maintain may be run again once\n"
		"keys are deleted.\n"
		"At a store's prompt: maintain.\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"grew\":B,\"from\":N,"
		"\"to\":N,\"slots\":N,\n"
		"               \"growths\":N,\"growing_from\":N} (from, "
		"to: null if\n"
		"               no growth was under way)\n",
	.run = run_maintain,
};

struct lock_out {
	bool json;
	struct ctl_json j;
	unsigned n;
};

static const char *lock_state(const struct shmkv_lock_info *li)
{
	if (li->held)
		return li->alive ? "held" : "held, holder dead";
	return li->alive < 0 ? "free" : "lease over";
}

static void lock_json(struct ctl_json *j, const struct shmkv_lock_info *li)
{
	cj_obj(j, NULL);
	cj_str(j, "lock", li->name, li->name_len);
	cj_cstr(j, "state", lock_state(li));
	cj_bool(j, "held", li->held);
	/* Free: nobody to judge, and no holder kept (only the token). */
	if (li->alive < 0) {
		cj_null(j, "alive");
		cj_null(j, "pid");
	} else {
		cj_bool(j, "alive", li->alive);
		cj_u64(j, "pid", li->pid);
	}
	cj_u64(j, "token", li->token);
	cj_i64(j, "held_for_ms", li->held ? li->held_for_ms : 0);
	cj_i64(j, "lease_left_ms", li->lease_left_ms);
	cj_u64(j, "waiters", li->waiters);
	cj_end(j, '}');
}

/* "1.234s" or "-" into @buf. */
static const char *secs(int64_t ms, bool show, char *buf, size_t cap)
{
	if (!show)
		return "-";
	snprintf(buf, cap, "%.3fs", (double)ms / 1000);
	return buf;
}

static int on_lock(const struct shmkv_lock_info *li, void *arg)
{
	struct lock_out *o = arg;

	if (o->json) {
		lock_json(&o->j, li);
	} else {
		char held[32], left[32], pid[16] = "-";

		if (o->n == 0)
			printf("%-24s %-17s %8s %5s %10s %10s %8s %7s\n",
			       "LOCK", "STATE", "PID", "ALIVE", "HELD FOR",
			       "LEASE LEFT", "TOKEN", "WAITERS");
		/* A free lock has no holder: "-", as for ALIVE. */
		if (li->alive >= 0)
			snprintf(pid, sizeof(pid), "%" PRIu32, li->pid);
		printf("%-24.*s %-17s %8s %5s %10s %10s %8" PRIu64 " %7" PRIu32
		       "\n",
		       (int)li->name_len, li->name, lock_state(li), pid,
		       li->alive < 0 ? "-"
		       : li->alive   ? "yes"
				     : "no",
		       secs(li->held_for_ms, li->held, held, sizeof(held)),
		       secs(li->lease_left_ms, li->alive >= 0, left,
			    sizeof(left)),
		       li->token, li->waiters);
	}
	o->n++;
	return 0;
}

static int run_locks(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	struct lock_out o = { 0 };
	shmkv_t *kv = NULL;
	int n, rc = open_with_opts(cmd, argc, argv, SHMKV_OPEN_READONLY,
				   &o.json, &kv, name);

	if (rc != CTL_CONTINUE)
		return rc;
	if (o.json)
		json_list_open(&o.j, name, "locks");
	n = shmkv_lock_list(kv, on_lock, &o);
	shmkv_close(kv);
	if (o.json) {
		cj_end(&o.j, ']');
		cj_u64(&o.j, "count", o.n);
		cj_close(&o.j);
	} else if (n == 0) {
		printf("%s: no locks\n", name);
	}
	return n < 0 ? ctl_store_err(name, "locks", n) : CTL_OK;
}

const struct ctl_cmd ctl_cmd_locks = {
	.name = "locks",
	.synopsis = "NAME [--json]",
	.summary = "list the locks: holder, alive or dead, lease, token, "
		   "waiters",
	.help = "Lists the safe locks (shmkv_lock.h): keys lock.<name>\n"
		"holding an owner record. STATE is \"held\", \"held, holder\n"
		"dead\", \"lease over\" (anyone may take it) or \"free\".\n"
		"PID and ALIVE are \"-\" for a free lock (it keeps only its\n"
		"token; null in JSON). WAITERS is 1 while a waiter may sleep\n"
		"on the lock's futex word (a killed waiter's mark clears at\n"
		"the next release), else 0. A snapshot: each\n"
		"lock is read once, with a liveness probe of its holder.\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"locks\":[{lock,state,held,"
		"alive,pid,\n"
		"               token,held_for_ms,lease_left_ms,waiters}],"
		"\"count\":N}\n",
	.run = run_locks,
};
