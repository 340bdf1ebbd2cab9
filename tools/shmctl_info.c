/*
 * shmctl_info.c - "shmctl info": geometry, keys, slots, value storage per
 * size class and warnings, from shmkv_get_config() and one shmkv_stats()
 * pass (counts taken slot by slot, not an atomic snapshot).
 *
 * There are no operation counters: the store keeps none, because a shared
 * counter bumped by every command would be the one cache line every
 * process writes. info says so rather than showing numbers it cannot have.
 * The count of evictions is shown: only an eviction bumps it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>

#include "shmctl.h"

/* Owner of the segment file (uid and name), or false if unknown. */
static bool file_owner(const char *name, uid_t *uid, char *who, size_t cap)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
	struct passwd *pw;
	struct stat sb;

	snprintf(path, sizeof(path), SHMKV_SHM_DIR "%s", name);
	if (stat(path, &sb) != 0)
		return false;
	*uid = sb.st_uid;
	pw = getpwuid(sb.st_uid);
	snprintf(who, cap, "%s", pw ? pw->pw_name : "?");
	return true;
}

static void print_warnings(const struct ctl_info *in)
{
	char w[CTL_WARN_MAX][CTL_WARN_LEN];
	int n = ctl_info_warnings(in, w, CTL_WARN_MAX);

	if (n == 0)
		printf("  warnings  none\n");
	for (int i = 0; i < n; i++)
		printf("  %s  %s%s%s\n", i == 0 ? "warnings" : "        ",
		       ctl_color(CTL_YELLOW), w[i], ctl_color(CTL_RESET));
}

/* The table's size now and, while it doubles, how far the move is. */
static void print_table(const struct ctl_info *in)
{
	char line[160];

	ctl_info_table_line(in, line, sizeof(line));
	printf("  table     %s\n", line);
	if (ctl_info_growth_line(&in->st, line, sizeof(line)))
		printf("  growing   %s; writes move the rest, shmctl maintain "
		       "finishes it\n",
		       line);
}

static void print_human(const char *name, const struct ctl_info *in)
{
	const struct shmkv_config *cfg = &in->cfg;
	const struct shmkv_stats *st = &in->st;
	char size[32], max[32], res[32], mem[32], used[32], page[96];
	char who[64] = "?";
	uid_t uid = 0;

	file_owner(name, &uid, who, sizeof(who));
	printf("%s%s%s\n", ctl_color(CTL_BOLD), name, ctl_color(CTL_RESET));
	printf("  segment   %s in use (%" PRIu64 " bytes), max_memory %s, "
	       "%s reserved; mode %04o, owner %s (uid %u)\n",
	       ctl_human_bytes(st->memory_bytes, size, sizeof(size)),
	       st->memory_bytes,
	       ctl_human_bytes(st->max_memory, max, sizeof(max)),
	       ctl_human_bytes(st->segment_bytes, res, sizeof(res)),
	       (unsigned)cfg->mode, who, (unsigned)uid);
	if (st->tables_kept_bytes != 0)
		printf("  old tables %s not yet given back (an open handle "
		       "may still be in them; counted above)\n",
		       ctl_human_bytes(st->tables_kept_bytes, used,
				       sizeof(used)));
	ctl_info_pages_line(in, page, sizeof(page));
	printf("  mapping   %s\n", page);
	if (in->users_known) {
		char users[96];

		ctl_users_phrase(&in->users, users, sizeof(users));
		printf("  users     %s\n", users);
	}
	print_table(in);
	printf("  geometry  key_max %" PRIu32 ", value_max %" PRIu32
	       ", probe_limit %" PRIu32 "\n",
	       cfg->key_max, cfg->value_max, cfg->probe_limit);
	printf("  keys      %" PRIu64 " live, %" PRIu64 " with a TTL\n",
	       st->live_keys, st->volatile_keys);
	printf("  values    %" PRIu64 " strings in their slots, %" PRIu64
	       " in value blocks (the rest: integers in the value word)\n",
	       st->inline_values, st->block_values);
	printf("  slots     %" PRIu64 " tombstones, %" PRIu64 " expired "
	       "(not yet deleted), %" PRIu64 " pending, %" PRIu64 " corrupt\n",
	       st->tombstones, st->expired, st->pending, st->corrupt);
	printf("  load      %.1f%% (live + pending / slots), longest probe "
	       "%" PRIu32 " of %" PRIu32 "\n",
	       100 * ctl_info_load(st), st->longest_probe, cfg->probe_limit);
	printf("  memory    %s of %s value storage used\n",
	       ctl_human_bytes(ctl_info_used_bytes(st), used, sizeof(used)),
	       ctl_human_bytes((uint64_t)st->pages * st->page_size, mem,
			       sizeof(mem)));
	printf("  eviction  maxmemory-policy %s, %" PRIu64
	       " keys evicted since creation\n",
	       ctl_policy_name(st->evict_policy), st->evicted);
	printf("  pages     %" PRIu32 " of %s: %" PRIu32 " given to %" PRIu32
	       " size classes, %" PRIu32 " free (%" PRIu32 " kept for the "
	       "classes that have none, one each); grows to %" PRIu32
	       " within max_memory\n"
	       "            ROOM: the blocks a class can still hand out (its "
	       "free ones, and\n            those of the pages it may "
	       "take); a value too big for its\n            class goes to a "
	       "larger one only while the store does not evict\n\n",
	       st->pages, ctl_human_bytes(st->page_size, page, sizeof(page)),
	       st->pages - st->pages_free, st->classes, st->pages_free,
	       ctl_info_pages_kept(st), st->pages_max);
	ctl_info_classes(st, "  ", "\n");
	putchar('\n');
	print_warnings(in);
}

static void json_classes(struct ctl_json *j, const struct shmkv_stats *st)
{
	cj_arr(j, "classes");
	for (uint32_t c = 0; c < ctl_classes(st); c++) {
		cj_obj(j, NULL);
		cj_u64(j, "class", c);
		cj_u64(j, "block_size", st->cls[c].block_size);
		cj_u64(j, "pages", st->cls[c].pages);
		cj_u64(j, "blocks", st->cls[c].blocks);
		cj_u64(j, "used", st->cls[c].used);
		cj_u64(j, "free", st->cls[c].blocks - st->cls[c].used);
		cj_u64(j, "pages_left", ctl_info_class_pages_left(st, c));
		cj_u64(j, "room", ctl_info_class_room(st, c));
		cj_u64(j, "usable_bytes",
		       ctl_info_class_room(st, c) * st->cls[c].block_size);
		cj_end(j, '}');
	}
	cj_end(j, ']');
}

/* "growing": null, or the growth under way and how far it is. */
static void json_growth(struct ctl_json *j, const struct shmkv_stats *st)
{
	if (st->growing_from == 0) {
		cj_null(j, "growing");
		return;
	}
	cj_obj(j, "growing");
	cj_u64(j, "from", st->growing_from);
	cj_u64(j, "to", 2 * st->growing_from);
	cj_u64(j, "moved", ctl_info_moved(st));
	cj_num(j, "progress", ctl_info_progress(st));
	cj_end(j, '}');
}

static void json_counts(struct ctl_json *j, const struct ctl_info *in)
{
	const struct shmkv_stats *st = &in->st;

	cj_obj(j, "config");
	cj_u64(j, "slots", in->cfg.slots);
	cj_u64(j, "key_max", in->cfg.key_max);
	cj_u64(j, "value_max", in->cfg.value_max);
	cj_u64(j, "probe_limit", in->cfg.probe_limit);
	cj_u64(j, "value_memory", in->cfg.value_memory);
	cj_u64(j, "max_memory", in->cfg.max_memory);
	cj_bool(j, "huge_pages", in->cfg.flags & SHMKV_CONFIG_HUGE_PAGES);
	cj_cstr(j, "evict_policy", ctl_policy_name(in->cfg.evict_policy));
	cj_end(j, '}');
	if (in->huge_known)
		cj_u64(j, "huge_page_bytes", in->huge_bytes);
	cj_obj(j, "keys");
	cj_u64(j, "live", st->live_keys);
	cj_u64(j, "volatile", st->volatile_keys);
	cj_u64(j, "inline_strings", st->inline_values);
	cj_u64(j, "block_values", st->block_values);
	cj_u64(j, "evicted", st->evicted);
	cj_end(j, '}');
	cj_obj(j, "slots");
	cj_u64(j, "total", st->slots);
	cj_u64(j, "tombstones", st->tombstones);
	cj_u64(j, "expired", st->expired);
	cj_u64(j, "pending", st->pending);
	cj_u64(j, "corrupt", st->corrupt);
	cj_u64(j, "longest_probe", st->longest_probe);
	cj_num(j, "load_factor", ctl_info_load(st));
	cj_u64(j, "initial", in->cfg.slots);
	cj_u64(j, "growths", st->growths);
	cj_u64(j, "max", st->slots_max);
	json_growth(j, st);
	cj_end(j, '}');
}

static void print_json(const char *name, const struct ctl_info *in)
{
	char w[CTL_WARN_MAX][CTL_WARN_LEN], mode[8], who[64] = "?";
	int n = ctl_info_warnings(in, w, CTL_WARN_MAX);
	struct ctl_json j;
	uid_t uid = 0;

	snprintf(mode, sizeof(mode), "%04o", (unsigned)in->cfg.mode);
	file_owner(name, &uid, who, sizeof(who));
	cj_open(&j, stdout);
	cj_cstr(&j, "name", name);
	cj_u64(&j, "memory_bytes", in->st.memory_bytes);
	cj_u64(&j, "tables_kept_bytes", in->st.tables_kept_bytes);
	cj_u64(&j, "segment_bytes", in->st.segment_bytes);
	cj_cstr(&j, "mode", mode);
	cj_cstr(&j, "owner", who);
	cj_u64(&j, "uid", uid);
	if (in->users_known) {
		cj_obj(&j, "processes");
		cj_u64(&j, "open", in->users.count);
		cj_u64(&j, "unreadable", in->users.unknown);
		cj_end(&j, '}');
	}
	json_counts(&j, in);
	cj_u64(&j, "value_bytes_used", ctl_info_used_bytes(&in->st));
	cj_obj(&j, "pages");
	cj_u64(&j, "size", in->st.page_size);
	cj_u64(&j, "total", in->st.pages);
	cj_u64(&j, "free", in->st.pages_free);
	cj_u64(&j, "kept", ctl_info_pages_kept(&in->st));
	cj_u64(&j, "max", in->st.pages_max);
	cj_end(&j, '}');
	json_classes(&j, &in->st);
	cj_arr(&j, "warnings");
	for (int i = 0; i < n; i++)
		cj_cstr(&j, NULL, w[i]);
	cj_end(&j, ']');
	cj_close(&j);
}

static int run_info(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		CTL_OPT_JSON,
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	char name[SHMKV_NAME_MAX + 1];
	struct ctl_info in;
	bool json = false;
	shmkv_t *kv;
	int c, err;

	while ((c = ctl_getopt(cmd, argc, argv, "hj", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		json = true;
	}
	c = ctl_operands(cmd, argc - optind, 1, 1);
	if (c == CTL_OK && ctl_is_uri(argv[optind]))
		return ctl_redis_info(argv[optind], json);
	if (c == CTL_OK)
		c = ctl_open(argv[optind], SHMKV_OPEN_READONLY, &kv, name);
	if (c != CTL_OK)
		return c;
	err = ctl_info_take(kv, &in);
	shmkv_close(kv);
	if (!err)
		err = ctl_info_huge(name, &in);
	/* After the close: the count is of the others. */
	in.users_known = !err && ctl_store_users(name, &in.users) == 0;
	if (err)
		return ctl_store_err(name, NULL, err);
	if (json)
		print_json(name, &in);
	else
		print_human(name, &in);
	return CTL_OK;
}

const struct ctl_cmd ctl_cmd_info = {
	.name = "info",
	.synopsis = "NAME [--json]",
	.summary = "table and its growth, keys, slots, memory per class, "
		   "eviction, warnings",
	.help = "Counts come from one pass over the store while it runs, not\n"
		"an atomic snapshot. The table doubles online when it fills\n"
		"(within max_memory): its slots now and at creation, the\n"
		"times it doubled and, while it grows, the old slots moved so\n"
		"far (load is of the new table; shmctl maintain finishes the\n"
		"move). Value storage is a pool of pages, each given to a\n"
		"size class when the class first needs room.\n"
		"Eviction: the maxmemory-policy and the keys it evicted\n"
		"since the store was created.\n"
		"The table line says how far the table may still double\n"
		"(at 7/8 full) within max_memory.\n"
		"Warnings: table over 75% full (live keys and pending slots)\n"
		"with no doubling left, a size class over 90% used with no\n"
		"free page left, corrupt or pending slots, a probe run at the\n"
		"probe limit. The store\n"
		"keeps no operation counters (they would be a shared\n"
		"contention point), so none are shown.\n\n"
		"Options:\n"
		"  -j, --json   one JSON object (schema in shmctl(1))\n",
	.run = run_info,
};
