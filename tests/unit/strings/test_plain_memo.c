/*
 * test_plain_memo.c - the plain commands' memo of where this thread last
 * found a key (strings_plain.c): a command whose key is at the address
 * the last one's was goes straight to that slot if the slot still holds
 * that key, in the same incarnation. Nothing the memo keeps may make a
 * command answer for another key, another store, or a slot that moved on:
 * each case below is one the memo would get wrong if it trusted what it
 * kept, and the ones that need a slot to change between the memo's match
 * and the command's load are forced with a pause point.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/paused_child.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"

TestSuite(plain_memo, .init = tu_setup, .fini = tu_teardown);
TestSuite(pausepoint_memo, .init = tu_setup, .fini = tu_teardown);

/* One key buffer, so that every command below passes the same address. */
static const char key_a[] = "a";

static uint64_t live_keys(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st.live_keys;
}

Test(plain_memo, a_key_buffer_rewritten_with_another_key_reads_that_key)
{
	char buf[8] = "a";
	int64_t n = 0;

	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("1"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("b"), LIT("2"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, buf, "1");
	tu_assert_get_str(tu_kv, buf, "1"); /* through the memo */
	/* Same address, same length, another key: "a"'s slot is not it. */
	buf[0] = 'b';
	tu_assert_get_str(tu_kv, buf, "2");
	tu_assert_rc(shmkv_set(tu_kv, buf, 1, LIT("3"), 0, 0, NULL), 1);
	buf[0] = 'a';
	tu_assert_rc(shmkv_incr(tu_kv, buf, 1, &n), 0);
	cr_assert_eq(n, 2);
	tu_assert_get_str(tu_kv, "a", "2");
	tu_assert_get_str(tu_kv, "b", "3");
	/* Longer keys at the same address: "ab", and "a" with a NUL, whose
	 * bytes are a's and the zero that follows a's key in its slot. */
	memcpy(buf, "a", 2);
	tu_assert_get_str(tu_kv, buf, "2");
	tu_assert_rc(shmkv_get(tu_kv, buf, 2, NULL), 0);
	memcpy(buf, "ab", 3);
	tu_assert_rc(shmkv_get(tu_kv, buf, 2, NULL), 0);
}

/* Another process deletes "a" and gives its slot to another key, then
 * sets "a" again (elsewhere): this thread's memo names a slot that holds
 * another key now. */
Test(plain_memo, a_slot_given_to_another_key_meanwhile_is_looked_up_afresh)
{
	struct shmkv_slot_ref a;
	char other[32];
	pid_t pid;
	int status;

	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("1"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, key_a, "1");
	a = tu_slot_ref(tu_kv, "a");
	tu_key_homed_at(tu_kv, a.index, 0, other);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		shmkv_t *kv;
		int ok = shmkv_open(tu_name, 0, &kv) == 0 &&
			 shmkv_del(kv, LIT("a")) == 1 &&
			 shmkv_set(kv, other, strlen(other), LIT("other"), 0, 0,
				   NULL) == 1 &&
			 shmkv_set(kv, LIT("a"), LIT("2"), 0, 0, NULL) == 1;

		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_eq(tu_slot_ref(tu_kv, other).index, a.index,
		     "the other key did not take a's slot");
	tu_assert_get_str(tu_kv, key_a, "2");
	tu_assert_rc(shmkv_set(tu_kv, key_a, 1, LIT("3"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "a", "3");
	tu_assert_get_str(tu_kv, other, "other");
	cr_assert_eq(live_keys(tu_kv), 2);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* Two stores, one key buffer: each command reads its own store, whichever
 * store the thread's last command went to. */
Test(plain_memo, two_stores_through_one_key_buffer_each_read_their_own)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv2 = tu_create(NULL, name);

	tu_assert_rc(shmkv_set(tu_kv, key_a, 1, LIT("one"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(kv2, key_a, 1, NULL), 0);
	tu_assert_rc(shmkv_set(kv2, key_a, 1, LIT("two"), 0, 0, NULL), 1);
	for (int i = 0; i < 3; i++) {
		tu_assert_get_str(tu_kv, key_a, "one");
		tu_assert_get_str(kv2, key_a, "two");
	}
	/* A command the engine takes, right after the other store's. */
	tu_assert_rc(shmkv_set(tu_kv, key_a, 1, LIT("three"), SHMKV_SET_EX, 100,
			       NULL),
		     1);
	tu_assert_get_str(tu_kv, key_a, "three");
	tu_assert_get_str(kv2, key_a, "two");
	cr_assert_eq(live_keys(tu_kv), 1);
	cr_assert_eq(live_keys(kv2), 1);
	shmkv_close(kv2);
}

/* A command the fast path leaves to the engine, on a key found through
 * the memo (which does not hash the key): the engine gets the key's own
 * hash, and updates the key rather than inserting it twice. */
Test(plain_memo, a_command_the_engine_takes_after_a_memo_hit_finds_the_key)
{
	struct shmkv_value v = tu_value(16);

	tu_assert_rc(shmkv_set(tu_kv, key_a, 1, LIT("1"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, key_a, "1");
	tu_assert_rc(shmkv_set(tu_kv, key_a, 1, LIT("2"), SHMKV_SET_GET, 0, &v),
		     1);
	cr_assert_eq(v.len, 1);
	cr_assert_eq(((const char *)v.buf)[0], '1');
	tu_assert_rc(shmkv_getdel(tu_kv, key_a, 1, &v), 1);
	tu_assert_rc(shmkv_get(tu_kv, key_a, 1, NULL), 0);
	tu_assert_rc(shmkv_set(tu_kv, key_a, 1, LIT("3"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "a", "3");
	cr_assert_eq(live_keys(tu_kv), 1);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* What a child does on a fresh handle: a command on "a" to fill its memo,
 * then @second, which matches "a"'s slot through the memo and stops
 * there ("memo_matched") while the parent changes the slot. */
enum second { GET_AGAIN, SET_AGAIN };

static int memo_call(void *arg)
{
	enum second second = *(const enum second *)arg;
	char buf[16];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	shmkv_t *kv;
	int rc;

	if (shmkv_open(tu_name, 0, &kv) != 0)
		return -1000;
	if (shmkv_get(kv, key_a, 1, NULL) != 1)
		return -1001;
	if (second == GET_AGAIN) {
		rc = shmkv_get(kv, key_a, 1, &v);
		if (rc == 1)
			rc = v.len >= 1 ? 100 + buf[0] : -1002;
	} else {
		rc = shmkv_set(kv, key_a, 1, LIT("5"), 0, 0, NULL);
	}
	shmkv_close(kv);
	return rc;
}

static const enum second seconds[] = { GET_AGAIN, SET_AGAIN };

/* "a" is set; a child stops with its memo matched to a's slot; the parent
 * deletes "a" and gives the slot to another key, valued "2", then lets the
 * child go on. Return: the child's result; *@other the other key. */
static int run_while_the_slot_is_taken(enum second second, char other[32])
{
	struct shmkv_slot_ref a;
	struct tu_child c;

	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("1"), 0, 0, NULL), 1);
	a = tu_slot_ref(tu_kv, "a");
	tu_key_homed_at(tu_kv, a.index, 0, other);
	c = tu_child_start(memo_call, (void *)&seconds[second], "memo_matched",
			   1);
	tu_child_await(&c);
	tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, other, strlen(other), LIT("2"), 0, 0, NULL),
		1);
	cr_assert_eq(tu_slot_ref(tu_kv, other).index, a.index,
		     "the other key did not take a's slot");
	tu_child_let_go(&c);
	return tu_child_finish(&c);
}

Test(pausepoint_memo, a_get_whose_memo_slot_goes_to_another_key_reads_absent)
{
	char other[32];

	NEED_PAUSE_POINTS();
	/* Absent: "a" was deleted. Never the other key's "2". */
	tu_assert_rc(run_while_the_slot_is_taken(GET_AGAIN, other), 0);
}

/* The SET the memo sent to a slot that moved on: the engine inserts "a"
 * where a lookup finds it (its probe sequence, from its own hash), beside
 * the other key, once. */
Test(pausepoint_memo, a_set_whose_memo_slot_goes_to_another_key_inserts_it)
{
	char other[32];

	NEED_PAUSE_POINTS();
	tu_assert_rc(run_while_the_slot_is_taken(SET_AGAIN, other), 1);
	tu_assert_get_str(tu_kv, "a", "5");
	tu_assert_get_str(tu_kv, other, "2");
	cr_assert_eq(live_keys(tu_kv), 2);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
