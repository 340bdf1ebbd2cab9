/*
 * shmctl_cmds.c - the tool's table of commands: finding one by name,
 * running one on its own argument vector, the per-store verbs (the tool
 * commands that also run as "shmctl NAME VERB ARGS" and at a store's
 * prompt), the default store, and "did you mean" for a mistyped name.
 *
 * Called by the entry (shmctl.c) and by the data form and the prompt
 * (shmctl_data.c, shmctl_repl.c); it calls the command files through
 * their struct ctl_cmd only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "shmctl.h"

static const struct ctl_cmd *const commands[] = {
	&ctl_cmd_ls,	   &ctl_cmd_create, &ctl_cmd_destroy, &ctl_cmd_info,
	&ctl_cmd_keys,	   &ctl_cmd_scan,   &ctl_cmd_dbsize,  &ctl_cmd_dump,
	&ctl_cmd_restore,  &ctl_cmd_check,  &ctl_cmd_recover, &ctl_cmd_sweep,
	&ctl_cmd_maintain, &ctl_cmd_watch,  &ctl_cmd_locks,   &ctl_cmd_config,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * The views and chores of one store that need nothing but its name
 * first: "shmctl orders keys 'user:*'" is "shmctl keys orders 'user:*'".
 * Not create, destroy, restore or ls: they make, remove or fill stores,
 * or list them all, and read better with the verb first.
 */
static const struct ctl_cmd *const verbs[] = {
	&ctl_cmd_info,	   &ctl_cmd_keys,  &ctl_cmd_scan,    &ctl_cmd_dbsize,
	&ctl_cmd_dump,	   &ctl_cmd_check, &ctl_cmd_recover, &ctl_cmd_sweep,
	&ctl_cmd_maintain, &ctl_cmd_watch, &ctl_cmd_locks,   &ctl_cmd_config,
};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

const struct ctl_cmd *ctl_command_at(size_t i)
{
	return i < NCOMMANDS ? commands[i] : NULL;
}

const struct ctl_cmd *ctl_command_find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

const struct ctl_cmd *ctl_verb_at(size_t i)
{
	return i < NVERBS ? verbs[i] : NULL;
}

/* Any case, as the data commands beside them: "shmctl orders INFO". */
const struct ctl_cmd *ctl_verb_find(const char *word)
{
	for (size_t i = 0; i < NVERBS; i++)
		if (strcasecmp(verbs[i]->name, word) == 0)
			return verbs[i];
	return NULL;
}

/*
 * The commands that work on a shared-memory store's segment itself
 * (make, remove, verify, repair, grow, dump, fill, watch, tune it): on a
 * store that is a Redis server they have no meaning (the server keeps
 * its own memory, expiry and persistence), and say so rather than
 * pretend. Their operand may come after options (getopt permutes): any
 * argument that is a URI counts.
 */
static const struct ctl_cmd *const shm_only[] = {
	&ctl_cmd_create, &ctl_cmd_destroy, &ctl_cmd_dump,  &ctl_cmd_restore,
	&ctl_cmd_check,	 &ctl_cmd_recover, &ctl_cmd_sweep, &ctl_cmd_maintain,
	&ctl_cmd_watch,	 &ctl_cmd_config,
};

static int refuse_on_uri(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char shown[CTL_SHOWN_CAP];
	size_t i;

	for (i = 0; i < sizeof(shm_only) / sizeof(shm_only[0]); i++)
		if (shm_only[i] == cmd)
			break;
	if (i == sizeof(shm_only) / sizeof(shm_only[0]))
		return CTL_CONTINUE;
	for (int a = 1; a < argc; a++)
		if (ctl_is_uri(argv[a])) {
			ctl_err(ctl_shown(argv[a], shown, sizeof(shown)),
				"'%s' is for shared-memory stores; this one "
				"is a Redis server, which keeps its own "
				"memory, expiry and persistence (use its own "
				"tools: redis-cli)",
				cmd->name);
			return CTL_USAGE;
		}
	return CTL_CONTINUE;
}

int ctl_run_command(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char prog[64];
	int rc = refuse_on_uri(cmd, argc, argv);

	if (rc != CTL_CONTINUE)
		return rc;

	/* getopt_long names argv[0] in its messages. */
	snprintf(prog, sizeof(prog), "shmctl %s", cmd->name);
	argv[0] = prog;
	optind = 0; /* GNU: re-initialise for the new vector */
	return cmd->run(cmd, argc, argv);
}

int ctl_run_verb(const struct ctl_cmd *verb, const char *store, int argc,
		 char **argv)
{
	char **v = malloc((size_t)(argc + 2) * sizeof(*v));
	int rc;

	if (v == NULL)
		return ctl_store_err(store, NULL, -ENOMEM);
	/* VERB STORE ARGS...: the command's own order (the store may be
	 * followed by its options: getopt_long permutes them). */
	v[0] = (char *)verb->name;
	v[1] = (char *)store;
	for (int i = 1; i < argc; i++)
		v[i + 1] = argv[i];
	v[argc + 1] = NULL;
	rc = ctl_run_command(verb, argc + 1, v);
	free(v);
	return rc;
}

const char *ctl_default_store(void)
{
	const char *env = getenv("SHMKV_STORE");

	return env != NULL && env[0] != '\0' ? env : SHMKV_DEFAULT_NAME;
}

/*
 * Suggestions: the optimal string alignment distance (Levenshtein with a
 * swap of two neighbours costing one, as git's "did you mean"), case
 * folded. Names are short (under 32 bytes): longer words are never close.
 */
#define NAME_CAP 32

static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned d[NAME_CAP + 1][NAME_CAP + 1];

	if (la > NAME_CAP || lb > NAME_CAP)
		return NAME_CAP;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			unsigned cost = (a[i - 1] | 0x20) != (b[j - 1] | 0x20);
			unsigned best = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 &&
			    (a[i - 1] | 0x20) == (b[j - 2] | 0x20) &&
			    (a[i - 2] | 0x20) == (b[j - 1] | 0x20) &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* How far a name may be from @word to be suggested: a typo or two in a
 * long word, one in a short one, none in one or two letters (every
 * two-letter word is two edits from every other). */
static unsigned tolerance(const char *word)
{
	size_t n = strlen(word);

	return n >= 5 ? 2 : n >= 3 ? 1 : 0;
}

struct suggest {
	const char *word;
	unsigned best;
	const char *names[4];
	size_t n;
};

static void consider(struct suggest *s, const char *name)
{
	unsigned d = distance(s->word, name);

	if (d == 0 || d > s->best)
		return;
	if (d < s->best)
		s->n = 0;
	s->best = d;
	for (size_t i = 0; i < s->n; i++)
		if (strcasecmp(s->names[i], name) == 0)
			return; /* a verb is also in the table */
	if (s->n < sizeof(s->names) / sizeof(s->names[0]))
		s->names[s->n++] = name;
}

bool ctl_suggest(const char *word, unsigned what, char *buf, size_t cap)
{
	struct suggest s = { .word = word, .best = tolerance(word) };
	const struct shmkv_command *c;
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; (what & CTL_SUGGEST_TOOL) && i < NCOMMANDS; i++)
		consider(&s, commands[i]->name);
	for (size_t i = 0; (what & CTL_SUGGEST_VERBS) && i < NVERBS; i++)
		consider(&s, verbs[i]->name);
	for (size_t i = 0;
	     (what & CTL_SUGGEST_DATA) && (c = shmkv_command_at(i)) != NULL;
	     i++)
		consider(&s, c->name);
	for (size_t i = 0; i < s.n && at < cap; i++)
		at += (size_t)snprintf(buf + at, cap - at, "%s'%s'",
				       i == 0	      ? ""
				       : i + 1 == s.n ? " or "
						      : ", ",
				       s.names[i]);
	return s.n > 0;
}

void ctl_hint_unknown(const char *cmd, size_t len)
{
	char near[CTL_SUGGEST_CAP];

	if (strlen(cmd) == len && shmkv_command_find(cmd, len) == NULL &&
	    ctl_suggest(cmd, CTL_SUGGEST_VERBS | CTL_SUGGEST_DATA, near,
			sizeof(near)))
		ctl_err(NULL, "did you mean %s?", near);
}
