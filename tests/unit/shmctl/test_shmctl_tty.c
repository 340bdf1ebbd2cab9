/*
 * test_shmctl_tty.c - shmctl on a terminal: the prompt (with history when
 * built with libedit), destroy's confirmation, and watch, which must give
 * the terminal its modes back; and watch's plain frames off a terminal.
 * The terminal is tmux, with a private server per test; without tmux the
 * tests are skipped.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(shmctl_tty, .init = tu_setup, .fini = ctl_teardown);

/*
 * On a terminal: tmux with a private server per test.
 */

struct tmux {
	char sock[48];
};

static void tmux_cmd(const struct tmux *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tmux_cmd(const struct tmux *t, const char *fmt, ...)
{
	char cmd[2048];
	int n = snprintf(cmd, sizeof(cmd), "tmux -L %s -f /dev/null ", t->sock);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Runs the shell command @cmd in a new 120x40 terminal. */
static void tmux_start(struct tmux *t, const char *cmd)
{
	if (system("command -v tmux >/dev/null 2>&1") != 0)
		cr_skip_test("tmux is not installed");
	snprintf(t->sock, sizeof(t->sock), "shmctl-test-%d", (int)getpid());
	tmux_cmd(t, "new-session -d -s main -x 120 -y 40 '%s'", cmd);
}

static char *tmux_screen(const struct tmux *t)
{
	static char buf[16384];
	char cmd[128];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "tmux -L %s capture-pane -p -J -t main",
		 t->sock);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

/* Waits for @text on the screen: the program runs at its own pace on a
 * loaded machine, so poll (up to 20 s) instead of sleeping a fixed time. */
static void tmux_wait(const struct tmux *t, const char *text)
{
	for (int i = 0; i < 400; i++) {
		if (strstr(tmux_screen(t), text) != NULL)
			return;
		tu_sleep_ms(50);
	}
	cr_assert_fail("\"%s\" never appeared on:\n%s", text, tmux_screen(t));
}

static void tmux_stop(const struct tmux *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "tmux -L %s kill-server 2>/dev/null",
		 t->sock);
	if (system(cmd) != 0)
		return; /* already gone */
}

static bool built_with_libedit(void)
{
	struct run r = RUN("--version");

	return strstr(r.out, "line editing: libedit") != NULL;
}

Test(shmctl_tty, prompt_runs_commands_until_quit)
{
	char cmd[2048], prompt[TU_NAME_CAP + 4];
	struct tmux t;

	snprintf(cmd, sizeof(cmd),
		 "SHMCTL_HISTFILE= %s %s; echo EXIT=$?; sleep 60", shmctl_bin(),
		 tu_name + 1);
	tmux_start(&t, cmd);
	/* without its blank: tmux may trim the cursor row */
	snprintf(prompt, sizeof(prompt), "%s>", tu_name);
	tmux_wait(&t, prompt);
	tmux_cmd(&t, "send-keys -t main 'set greeting \"hello world\"' Enter");
	tmux_wait(&t, "\nOK\n");
	tmux_cmd(&t, "send-keys -t main 'get greeting' Enter");
	tmux_wait(&t, "\n\"hello world\"\n");
	tmux_cmd(&t, "send-keys -t main quit Enter");
	tmux_wait(&t, "EXIT=0");
	tmux_stop(&t);
	tu_assert_get_str(tu_kv, "greeting", "hello world");
}

Test(shmctl_tty, prompt_recalls_history_with_the_up_arrow)
{
	char cmd[2048], hist[64];
	struct tmux t;
	FILE *f;

	if (!built_with_libedit())
		cr_skip_test("shmctl built without libedit: no line editing");
	ctl_temp_path(hist, sizeof(hist));
	snprintf(cmd, sizeof(cmd),
		 "SHMCTL_HISTFILE=%s %s %s; echo EXIT=$?; sleep 60", hist,
		 shmctl_bin(), tu_name);
	tmux_start(&t, cmd);
	tmux_wait(&t, ">");
	tmux_cmd(&t, "send-keys -t main 'incr counter' Enter");
	tmux_wait(&t, "(integer) 1");
	tmux_cmd(&t, "send-keys -t main Up Enter");
	tmux_wait(&t, "(integer) 2");
	tmux_cmd(&t, "send-keys -t main C-d");
	tmux_wait(&t, "EXIT=0");
	tmux_stop(&t);
	f = fopen(hist, "r");
	cr_assert_not_null(f, "no history file");
	fclose(f);
	unlink(hist);
}

/* Tab completes the store's verbs too, which run on this store; on a
 * terminal replies take the quoted form (redis-cli's rule), and the
 * data form on one does as well. */
Test(shmctl_tty, tab_completes_a_verb_and_replies_are_quoted_on_a_terminal)
{
	char cmd[2048];
	struct tmux t;

	if (!built_with_libedit())
		cr_skip_test("shmctl built without libedit: no completion");
	SET("k", "v");
	snprintf(cmd, sizeof(cmd),
		 "SHMCTL_HISTFILE= %s %s; %s %s get k; echo EXIT=$?; sleep 60",
		 shmctl_bin(), tu_name, shmctl_bin(), tu_name);
	tmux_start(&t, cmd);
	tmux_wait(&t, ">");
	tmux_cmd(&t, "send-keys -t main dbsi Tab Enter");
	tmux_wait(&t, "(integer) 1");
	tmux_cmd(&t, "send-keys -t main quit Enter");
	tmux_wait(&t, "EXIT=0");
	assert_has(tmux_screen(&t), "\n\"v\"\nEXIT=0");
	tmux_stop(&t);
}

Test(shmctl_tty, destroy_asks_for_confirmation_on_a_terminal)
{
	char cmd[2048];
	struct tmux t;

	snprintf(cmd, sizeof(cmd),
		 "%s destroy %s; echo EXIT=$?; %s destroy %s; echo EXIT=$?; "
		 "sleep 60",
		 shmctl_bin(), tu_name, shmctl_bin(), tu_name);
	tmux_start(&t, cmd);
	tmux_wait(&t, "[y/N]");
	tmux_cmd(&t, "send-keys -t main n Enter");
	tmux_wait(&t, "EXIT=1");
	cr_assert(ctl_shm_exists(tu_name), "destroyed despite n");
	tmux_cmd(&t, "send-keys -t main y Enter");
	tmux_wait(&t, "EXIT=0");
	tmux_stop(&t);
	cr_assert(!ctl_shm_exists(tu_name), "not destroyed despite y");
}

/* The stty flags written to @path, once the shell has written them. */
static char *read_modes(const char *path)
{
	static char buf[8192];

	for (int i = 0; i < 400; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		if (strstr(buf, "icanon\n"))
			return buf;
		tu_sleep_ms(50);
	}
	cr_assert_fail("no stty output in %s", path);
	return NULL;
}

/* watch until @key ends it; the terminal's modes must be back after. */
static void watch_and_quit(const char *key)
{
	char cmd[2048], stty[64], *modes;
	struct tmux t;

	SET("a", "1");
	SET("b", "2");
	ctl_temp_path(stty, sizeof(stty));
	snprintf(cmd, sizeof(cmd),
		 "%s watch %s; echo EXIT=$?; stty -a | tr \" ;\" \"\\n\\n\" > "
		 "%s; sleep 60",
		 shmctl_bin(), tu_name, stty);
	tmux_start(&t, cmd);
	tmux_wait(&t, "2 live (");
	assert_has(tmux_screen(&t), "CLASS");
	SET("c", "3");
	tmux_wait(&t, "3 live (+");
	tmux_cmd(&t, "send-keys -t main %s", key);
	tmux_wait(&t, "EXIT=0");
	modes = read_modes(stty);
	tmux_stop(&t);
	unlink(stty);
	assert_has(modes, "\nicanon\n");
	assert_has(modes, "\necho\n");
	assert_lacks(modes, "-icanon");
	assert_lacks(modes, "-echo\n");
}

Test(shmctl_tty, watch_draws_the_store_and_quits_on_q_restoring_the_terminal)
{
	watch_and_quit("q");
}

Test(shmctl_tty, watch_quits_on_ctrl_c_restoring_the_terminal)
{
	watch_and_quit("C-c");
}

Test(shmctl_tty, watch_prints_plain_frames_when_not_on_a_terminal)
{
	struct run r;
	const char *p;
	int frames = 0;

	SET("a", "1");
	r = RUN("watch", "--count", "2", "--interval", "0.1", tu_name);
	assert_code(r, 0);
	for (p = r.out; (p = strstr(p, "1 live (")) != NULL; p++)
		frames++;
	cr_assert_eq(frames, 2, "%s", r.out);
	assert_lacks(r.out, "\033");
}
