/*
 * shmctl_watch.c - "shmctl watch": a live view of a store, like top.
 *
 * Every interval it takes the counts info shows and redraws them with the
 * change per second of live keys, keys with a TTL, tombstones, keys
 * evicted (a count only evictions bump) and, while the table doubles, old
 * slots moved. The store keeps no operation counters (a shared counter
 * would be the one cache line every command writes), so rates are changes
 * of counts, not ops/s.
 *
 * On a terminal it draws on the alternate screen with the cursor hidden
 * and stdin in non-canonical, no-echo mode so that q quits without Enter;
 * q, Ctrl-C, SIGTERM and SIGHUP all end the loop and restore the terminal
 * exactly as it was. Otherwise it prints one plain frame per interval.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "shmctl.h"

static volatile sig_atomic_t stop_signal;

struct watch {
	shmkv_t *kv;
	const char *name;
	double interval; /* seconds */
	uint64_t frames; /* 0: until stopped */
	bool tty_in, tty_out;
	struct termios saved;
	struct ctl_info prev;
	double prev_t;
	bool have_prev;
};

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll must return */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void terminal_enter(struct watch *w)
{
	struct termios raw;

	if (w->tty_in && tcgetattr(STDIN_FILENO, &w->saved) == 0) {
		raw = w->saved;
		/* ISIG stays on: Ctrl-C still raises SIGINT. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		w->tty_in = false;
	}
	if (w->tty_out)
		fputs("\033[?1049h\033[?25l",
		      stdout); /* alt screen, no cursor */
}

static void terminal_leave(struct watch *w)
{
	if (w->tty_out) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
	}
	if (w->tty_in)
		tcsetattr(STDIN_FILENO, TCSANOW, &w->saved);
}

/* One line of a frame: on a terminal it also clears the rest of the row. */
static void line(const struct watch *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void line(const struct watch *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputs(w->tty_out ? "\033[K\n" : "\n", stdout);
}

static double rate(uint64_t now, uint64_t before, double dt)
{
	return dt > 0 ? ((double)now - (double)before) / dt : 0;
}

/* The table's size, and a progress line while it doubles: old slots
 * moved per second when the last frame saw the same growth. */
static void frame_table(const struct watch *w, const struct ctl_info *in,
			double dt)
{
	const struct shmkv_stats *st = &in->st, *p = &w->prev.st;
	char buf[160];
	bool same = w->have_prev && p->growing_from == st->growing_from &&
		    p->growths == st->growths;

	ctl_info_table_line(in, buf, sizeof(buf));
	line(w, "table    %s", buf);
	if (ctl_info_growth_line(st, buf, sizeof(buf)))
		line(w, "%sgrowing  %s, %+.1f/s%s", ctl_color(CTL_BOLD), buf,
		     same ? rate(ctl_info_moved(st), ctl_info_moved(p), dt)
			  : 0.0,
		     ctl_color(CTL_RESET));
}

static void frame_counts(const struct watch *w, const struct ctl_info *in,
			 double dt)
{
	const struct shmkv_stats *st = &in->st, *p = &w->prev.st;
	char used[32], mem[32];

	if (!w->have_prev)
		p = st;
	frame_table(w, in, dt);
	line(w,
	     "keys     %" PRIu64 " live (%+.1f/s), %" PRIu64
	     " with a TTL (%+.1f/s)",
	     st->live_keys, rate(st->live_keys, p->live_keys, dt),
	     st->volatile_keys, rate(st->volatile_keys, p->volatile_keys, dt));
	line(w,
	     "slots    %" PRIu64 " tombstones (%+.1f/s), %" PRIu64
	     " pending, %" PRIu64 " corrupt, load %.1f%%, longest probe "
	     "%" PRIu32 " of %" PRIu32,
	     st->tombstones, rate(st->tombstones, p->tombstones, dt),
	     st->pending, st->corrupt, 100 * ctl_info_load(st),
	     st->longest_probe, in->cfg.probe_limit);
	line(w,
	     "memory   %s of %s value storage used, %" PRIu32 " of %" PRIu32
	     " pages free, %" PRIu32 " at most",
	     ctl_human_bytes(ctl_info_used_bytes(st), used, sizeof(used)),
	     ctl_human_bytes((uint64_t)st->pages * st->page_size, mem,
			     sizeof(mem)),
	     st->pages_free, st->pages, st->pages_max);
	line(w, "evicted  %" PRIu64 " keys (%+.1f/s), maxmemory-policy %s",
	     st->evicted, rate(st->evicted, p->evicted, dt),
	     ctl_policy_name(st->evict_policy));
}

static void frame(struct watch *w, const struct ctl_info *in, double t)
{
	char w_[CTL_WARN_MAX][CTL_WARN_LEN], clock[16];
	int nw = ctl_info_warnings(in, w_, CTL_WARN_MAX);
	time_t wall = time(NULL);

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&wall));
	if (w->tty_out)
		fputs("\033[H", stdout);
	line(w, "%s%s%s   every %.1fs   %s   %s", ctl_color(CTL_BOLD), w->name,
	     ctl_color(CTL_RESET), w->interval,
	     w->tty_in ? "q or Ctrl-C quits" : "Ctrl-C quits", clock);
	line(w, "%s", "");
	frame_counts(w, in, w->have_prev ? t - w->prev_t : 0);
	line(w, "%s", "");
	ctl_info_classes(&in->st, "", w->tty_out ? "\033[K\n" : "\n");
	line(w, "%s", "");
	for (int i = 0; i < nw; i++)
		line(w, "%swarning: %s%s", ctl_color(CTL_YELLOW), w_[i],
		     ctl_color(CTL_RESET));
	line(w, "rates are changes of counts: shmkv keeps no operation "
		"counters");
	fputs(w->tty_out ? "\033[J" : "\n", stdout);
	fflush(stdout);
}

/* Waits until @deadline, a signal, or q. Return: true to go on. */
static bool wait_until(const struct watch *w, double deadline)
{
	for (;;) {
		double left = deadline - now_s();
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char c;

		if (stop_signal)
			return false;
		if (left <= 0)
			return true;
		if (poll(&p, w->tty_in ? 1 : 0, (int)(left * 1000) + 1) <= 0)
			continue; /* timeout, or EINTR: stop_signal says */
		while (read(STDIN_FILENO, &c, 1) == 1)
			if (c == 'q' || c == 'Q')
				return false;
	}
}

static int watch_loop(struct watch *w)
{
	struct ctl_info in;
	uint64_t n = 0;
	int err = 0;

	while (!stop_signal) {
		double t = now_s();

		err = ctl_info_take(w->kv, &in);
		if (err)
			break;
		frame(w, &in, t);
		w->prev = in, w->prev_t = t, w->have_prev = true;
		if (w->frames != 0 && ++n >= w->frames)
			break;
		if (!wait_until(w, t + w->interval))
			break;
	}
	return err;
}

/* Return: CTL_CONTINUE, or the exit code to end with. */
static int watch_opts(const struct ctl_cmd *cmd, int argc, char **argv,
		      struct watch *w)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	while ((c = ctl_getopt(cmd, argc, argv, "hi:n:", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		if (c == 'n' && ctl_parse_u64(optarg, &w->frames) != 0)
			return ctl_usage(cmd,
					 "--count '%s': expected a "
					 "number of frames",
					 optarg);
		if (c == 'i') {
			w->interval = strtod(optarg, &end);
			if (*end != '\0' || !(w->interval >= 0.1) ||
			    w->interval > 3600)
				return ctl_usage(cmd,
						 "--interval '%s': "
						 "expected seconds from "
						 "0.1 to 3600",
						 optarg);
		}
	}
	c = ctl_operands(cmd, argc - optind, 1, 1);
	return c == CTL_OK ? CTL_CONTINUE : c;
}

static int run_watch(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	struct watch w = { .interval = 1.0 };
	int rc = watch_opts(cmd, argc, argv, &w), err;

	if (rc != CTL_CONTINUE)
		return rc;
	rc = ctl_open(argv[optind], SHMKV_OPEN_READONLY, &w.kv, name);
	if (rc != CTL_OK)
		return rc;
	w.name = name;
	w.tty_in = isatty(STDIN_FILENO);
	w.tty_out = isatty(STDOUT_FILENO);
	install_signals();
	terminal_enter(&w);
	err = watch_loop(&w);
	terminal_leave(&w);
	shmkv_close(w.kv);
	return err ? ctl_store_err(name, NULL, err) : CTL_OK;
}

const struct ctl_cmd ctl_cmd_watch = {
	.name = "watch",
	.synopsis = "NAME [--interval SECONDS] [--count N]",
	.summary = "live view of keys, table growth, memory and evictions, "
		   "like top (q quits)",
	.help = "Redraws every interval: the table's slots (and, while it\n"
		"doubles, a \"growing\" line: old slots moved, their share\n"
		"and per second), live keys, keys with a TTL and tombstones\n"
		"with their change per second, pending and corrupt slots,\n"
		"load, value storage per size class, keys evicted\n"
		"(and per second) and the maxmemory-policy, warnings. The\n"
		"store keeps no operation counters, so there are no ops/s.\n"
		"q, Ctrl-C, SIGTERM or SIGHUP end it and restore the "
		"terminal.\n"
		"When stdout is not a terminal, frames are printed one after\n"
		"the other.\n\n"
		"Options:\n"
		"  -i, --interval SECONDS  time between frames (default 1)\n"
		"  -n, --count N           stop after N frames (default: "
		"never)\n",
	.run = run_watch,
};
