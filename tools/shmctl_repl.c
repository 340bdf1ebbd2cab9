/*
 * shmctl_repl.c - "shmctl NAME": the interactive prompt.
 *
 * On a terminal: prompt "/name> ", line editing and history through
 * libedit when built with SHMCTL_WITH_LIBEDIT (history in
 * $SHMCTL_HISTFILE, default ~/.shmctl_history; an empty value disables
 * it), and Tab completing the command names of the library's table, the
 * per-store verbs and the prompt's words. Lines are split as redis-cli
 * splits them ("a b", 'x', \x00) and run as data commands; help lists them
 * (help CMD: its syntax); the per-store verbs (keys, info, dbsize...) run
 * on this store, config get|set (Redis's CONFIG) and maintain on this
 * handle; quit, exit or Ctrl-D leave.
 *
 * Not on a terminal, commands are read one per line from stdin without a
 * prompt, so "shmctl NAME < script" replays a script; the exit code is
 * CTL_STORE if any command failed with a store error, else CTL_OK.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef SHMCTL_WITH_LIBEDIT
#include <editline/readline.h>
#endif

#include "shmctl.h"

#define HISTORY_MAX 1000

struct repl {
	shmkv_t *kv;
	const char *name;
	bool tty;
	bool quit;
	char prompt[SHMKV_NAME_MAX + 4];
	char *history; /* file, or NULL */
};

static char *history_file(void)
{
	const char *env = getenv("SHMCTL_HISTFILE");
	const char *home = getenv("HOME");
	char *path = NULL;

	if (env != NULL)
		return env[0] ? strdup(env) : NULL;
	if (home == NULL || home[0] == '\0')
		return NULL;
	if (asprintf(&path, "%s/.shmctl_history", home) < 0)
		return NULL;
	return path;
}

#ifdef SHMCTL_WITH_LIBEDIT
/* The prompt's own words, completed after the commands and verbs. */
static const char *const prompt_words[] = { "help", "quit", "exit", "clear" };

/* The @i-th name Tab completes: the library's commands, the per-store
 * verbs, the prompt's words; NULL past the last. */
static const char *completion_at(size_t i)
{
	const struct shmkv_command *c = shmkv_command_at(i);
	size_t nwords = sizeof(prompt_words) / sizeof(prompt_words[0]);
	size_t nverbs = 0;

	if (c != NULL)
		return c->name;
	i -= shmkv_command_count();
	while (ctl_verb_at(nverbs) != NULL)
		nverbs++;
	if (i < nverbs)
		return ctl_verb_at(i)->name;
	i -= nverbs;
	return i < nwords ? prompt_words[i] : NULL;
}

/* Completion generator: the names that start with @text. */
static char *complete_command(const char *text, int state)
{
	static size_t next;
	const char *name;
	size_t len = strlen(text);

	if (state == 0)
		next = 0;
	while ((name = completion_at(next++)) != NULL)
		if (strncasecmp(name, text, len) == 0)
			return strdup(name);
	return NULL;
}

/* Only the first word is a command; no file names anywhere. */
static char **complete(const char *text, int start, int end)
{
	(void)end;
	rl_attempted_completion_over = 1;
	return start == 0 ? rl_completion_matches(text, complete_command)
			  : NULL;
}
#endif

static void history_begin(struct repl *r)
{
#ifdef SHMCTL_WITH_LIBEDIT
	rl_attempted_completion_function = complete;
	using_history();
	stifle_history(HISTORY_MAX);
	if (r->history != NULL)
		read_history(r->history);
#else
	(void)r;
#endif
}

static void history_add(struct repl *r, const char *line)
{
#ifdef SHMCTL_WITH_LIBEDIT
	if (r->tty && line[0] != '\0') {
		add_history(line);
		if (r->history != NULL)
			write_history(r->history);
	}
#else
	(void)r, (void)line;
#endif
}

/* The next line without its newline (malloc'd), or NULL at the end. */
static char *read_line(struct repl *r, size_t *len)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

#ifdef SHMCTL_WITH_LIBEDIT
	if (r->tty) {
		line = readline(r->prompt);
		*len = line ? strlen(line) : 0;
		return line;
	}
#endif
	if (r->tty) {
		fputs(r->prompt, stdout);
		fflush(stdout);
	}
	n = getline(&line, &cap, stdin);
	if (n < 0) {
		free(line);
		return NULL;
	}
	if (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	*len = (size_t)n;
	return line;
}

/* "help": the commands and the prompt's words; "help CMD": its syntax. */
static void repl_help(const struct ctl_args *a)
{
	if (a->argc > 1) {
		const struct shmkv_command *c = shmkv_command_find(a->argv[1],
								   a->len[1]);
		const struct ctl_cmd *verb = strlen(a->argv[1]) == a->len[1]
						     ? ctl_verb_find(a->argv[1])
						     : NULL;
		char near[CTL_SUGGEST_CAP];

		if (c != NULL)
			ctl_print_syntax(stdout, c);
		else if (verb != NULL)
			ctl_help(verb);
		else if (ctl_suggest(a->argv[1],
				     CTL_SUGGEST_VERBS | CTL_SUGGEST_DATA, near,
				     sizeof(near)))
			printf("no such command: '%s'; did you mean %s?\n",
			       a->argv[1], near);
		else
			printf("no such command: '%s'\n", a->argv[1]);
		return;
	}
	puts("Type a command as in redis-cli: get k, set k \"a value\" PX "
	     "500,\n"
	     "incr n, ttl k... Quotes: \"a b\" with \\n \\t \\xHH escapes, 'a "
	     "b'"
	     " literal.\nquit or exit (or Ctrl-D) leaves; clear clears the "
	     "screen;\nhelp CMD shows the syntax of CMD. The store's views "
	     "and chores run\nhere too, without its name (help VERB: "
	     "their options): keys [PATTERN],\nscan [CURSOR], dbsize, "
	     "info, check, locks, dump, sweep, recover, watch;\nconfig "
	     "get|set PARAMETER [VALUE] shows or changes maxmemory and\n"
	     "maxmemory-policy; maintain finishes a growth of the table "
	     "under way.\nCommands:");
	ctl_print_data_commands(stdout);
}

static bool is_word(const struct ctl_args *a, const char *w)
{
	return a->len[0] == strlen(w) && strcasecmp(a->argv[0], w) == 0;
}

/* The per-store verb the line starts with ("keys 'user:*'", "info"), or
 * NULL. config and maintain have their own, on this handle. */
static const struct ctl_cmd *prompt_verb(const struct ctl_args *a)
{
	if (strlen(a->argv[0]) != a->len[0])
		return NULL; /* a NUL byte: no verb has one */
	return ctl_verb_find(a->argv[0]);
}

static int run_data(struct repl *r, const struct ctl_args *a)
{
	int rc = ctl_exec(r->kv, r->name, a->argc, (const char *const *)a->argv,
			  a->len);

	if (rc == CTL_REPLY)
		ctl_hint_unknown(a->argv[0], a->len[0]);
	return rc;
}

/* Runs one line. Return: a CTL_* code (CTL_USAGE for a bad line). */
static int run_line(struct repl *r, const char *line, size_t len)
{
	const struct ctl_cmd *verb;
	struct ctl_args a;
	size_t at = 0;
	int rc = CTL_OK;

	if (ctl_split(line, len, &a, &at) != 0) {
		/* redis-cli's words for an unbalanced quote. */
		puts("Invalid argument(s)");
		return CTL_USAGE;
	}
	if (a.argc == 0)
		return CTL_OK;
	if (is_word(&a, "quit") || is_word(&a, "exit"))
		r->quit = true;
	else if (is_word(&a, "help"))
		repl_help(&a);
	else if (is_word(&a, "clear"))
		fputs(r->tty ? "\033[H\033[2J" : "", stdout);
	else if (is_word(&a, "config"))
		rc = ctl_config_prompt(r->kv, r->name, a.argc, a.argv);
	else if (is_word(&a, "maintain"))
		rc = ctl_maintain_prompt(r->kv, r->name, a.argc, a.argv);
	else if ((verb = prompt_verb(&a)) != NULL)
		rc = ctl_run_verb(verb, r->name, a.argc, a.argv);
	else
		rc = run_data(r, &a);
	ctl_args_free(&a);
	return rc;
}

int ctl_repl(shmkv_t *kv, const char *name)
{
	struct repl r = { .kv = kv, .name = name };
	char shown[CTL_SHOWN_CAP];
	int worst = CTL_OK;
	char *line;
	size_t len;

	r.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	snprintf(r.prompt, sizeof(r.prompt), "%s> ",
		 ctl_shown(name, shown, sizeof(shown)));
	r.history = r.tty ? history_file() : NULL;
	if (r.tty)
		history_begin(&r);
	while (!r.quit && (line = read_line(&r, &len)) != NULL) {
		history_add(&r, line);
		if (run_line(&r, line, len) == CTL_STORE)
			worst = CTL_STORE;
		free(line);
	}
	if (r.tty && !r.quit)
		putchar('\n'); /* Ctrl-D left the cursor after the prompt */
	free(r.history);
	return r.tty ? CTL_OK : worst;
}
