"""pool_kill_worker - one worker of test_pool_kill.py's pool (not a test).

    /usr/bin/python3 pool_kill_worker.py NAME JOURNAL SEED

or, from the multiprocessing variant, ``work(NAME, JOURNAL, SEED)``.

The worker opens the store NAME and, until the key ``stop`` exists, takes
one of the safe locks in LOCKS at random and increments that lock's
counter ``ctr.<lock>`` by a GET and a SET: two overlapping holders would
both write the same value, so the lock is what keeps the counter exact.
The counter's value is ``<n>:<token>:<pid>``: the fencing token of the
grant that wrote it travels with it, so whoever reads it next knows whose
write it was, and in particular whether a holder killed between its SET
and its report of it got its write in (the design of the C tests'
lifecycle soak, tests/helpers/lifecycle.h, with the token in place of the
intent/acked bitmaps).

Every step is reported by one line appended to JOURNAL (O_APPEND: one
write(2) per line, so lines from different processes never interleave and
a SIGKILL loses no line already written):

    G <lock> <token> <owner_died> <n read> <token read> <pid>   granted
    A <lock> <token>                                       SET of n + 1 returned
    u <lock> <token>                                       about to release
    U <lock> <token>                                       released

G and A are written while the lock is held, so for one lock the file's
order of G lines is the order grants were made. A grant killed before its
G line wrote nothing (its G precedes its SET): it shows as a missing token.

Pause requests (the test kills a holder known to hold): a holder that
finds the key ``pause.<lock>`` (taken with GETDEL, so one holder answers)
stops inside its section, before its SET ("pre") or after it but before
its A line ("post") as the request says, publishes ``paused.<lock>`` =
"<pid> <token> <pre|post>" and sleeps until it is killed.

Nothing is asserted here: a worker that meets an unexpected result prints
it and exits 3; the test asserts on exit codes and the journal.
"""
import os
import random
import sys
import time

import shmkv

LOCKS = ("a", "b")
# Long enough that no lease runs out in the test: every takeover is a
# dead-owner takeover or a clean grant, never LEASE_EXPIRED.
LEASE_MS = 60000
# Longest nap while holding a lock (widens the window a kill lands in).
HOLD_US_MAX = 300


def parse_counter(raw):
    """(n, token) of a counter value b"<n>:<token>:<pid>" (None: 0, 0)."""
    if raw is None:
        return 0, 0
    n, tok, _pid = raw.split(b":")
    return int(n), int(tok)


def work(name, journal, seed):
    """The worker's loop (see the module's docstring); returns an exit code."""
    rng = random.Random(seed)
    pid = os.getpid()
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND)

    def log(line):
        os.write(fd, (line + "\n").encode())

    st = shmkv.Store.open(name)
    while st.get("stop") is None:
        lk = rng.choice(LOCKS)
        ctr = "ctr." + lk
        grant = st.lock(lk, lease_ms=LEASE_MS).acquire()
        tok = grant.token
        n, prev = parse_counter(st.get(ctr))
        log(f"G {lk} {tok} {int(bool(grant.owner_died))} {n} {prev} {pid}")
        where = st.getdel("pause." + lk)
        if where == b"pre":
            park(st, lk, pid, tok, "pre")
        if rng.random() < 0.5:
            time.sleep(rng.randrange(HOLD_US_MAX) / 1e6)
        if not st.set(ctr, f"{n + 1}:{tok}:{pid}"):
            print(f"worker {pid}: SET {ctr} returned False", file=sys.stderr)
            return 3
        if where == b"post":
            park(st, lk, pid, tok, "post")
        log(f"A {lk} {tok}")
        log(f"u {lk} {tok}")
        grant.release()
        log(f"U {lk} {tok}")
    st.close()
    os.close(fd)
    return 0


def park(st, lk, pid, tok, where):
    """Holds lock @lk inside its section until SIGKILL comes."""
    st.set("paused." + lk, f"{pid} {tok} {where}")
    # Bounded (the test kills within milliseconds): a lost test must not
    # leave a worker behind for ever. Exit 4 tells the test it never came.
    for _ in range(600):
        time.sleep(0.1)
    os._exit(4)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: pool_kill_worker.py NAME JOURNAL SEED", file=sys.stderr)
        sys.exit(2)
    sys.exit(work(sys.argv[1], sys.argv[2], int(sys.argv[3])))
