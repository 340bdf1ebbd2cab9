"""test_pool_kill - a pool of worker processes keeps lock-protected counters
exact while the test SIGKILLs workers, holders among them, and starts
replacements.

The workers (pool_kill_worker.py, whose docstring gives the journal's
format) are unrelated interpreters started with subprocess, or, in the
second variant, processes of multiprocessing's default start method. Each
increments the counter of one of two safe locks per section, reporting
every step in a shared journal file. Kills come two ways:
- at random moments, to random workers (waiting for a lock, holding one,
  between sections, starting up);
- on purpose inside a section: the test asks for a pause (key
  ``pause.<lock>``), the holder that picks the request up parks before
  or after its SET and says so (``paused.<lock>``), and is killed there.

Afterwards the test takes each lock once itself (its journal line is the
last grant), and checks, per lock, with the C lifecycle soak's reasoning
(tests/helpers/lifecycle.h; here the fencing token stored beside the
counter tells whose write the next holder read):
- fencing tokens strictly increase in the order grants were made (the
  journal's order of G lines, written under the lock); tokens that never
  reached the journal are grants to processes killed before they wrote,
  no more of them than kills;
- every grant read exactly what the previous landed write left: the
  previous holder's value if it finished its SET, and if it was killed
  between SET and report, either its value (it landed) or the one before;
  two holders at once would both have read the same value, and the chain
  breaks;
- so the counter is exact: its final value == the acknowledged increments
  + the unacknowledged ones that landed, and those are at most the holders
  killed in their section;
- a grant after a holder that died holding has owner_died True (every
  deliberate kill is checked by name: the next grant took over from it),
  one after a clean release has it False;
- the store checks clean (shmkv_check), and every worker not killed
  exited 0.
"""
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time

import shmkv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pool_kill_worker as pkw  # noqa: E402  (found next to this file)

WORKERS = 4
SECONDS = 5.0       # kill phase per variant
PAUSE_WAIT = 10.0   # a pause request is picked up within this (a bound)
EXIT_WAIT = 20.0    # workers end within this after "stop" (a bound)
WORKER_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "pool_kill_worker.py")


def _module_path():
    """The directory to put on PYTHONPATH for `import shmkv` to find ours."""
    locs = getattr(shmkv.__spec__, "submodule_search_locations", None)
    if locs:
        return os.path.dirname(list(locs)[0])
    return os.path.dirname(shmkv.__file__)


class SubprocessWorker:
    """`/usr/bin/python3 pool_kill_worker.py`: an unrelated interpreter."""

    def __init__(self, name, journal, seed):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [_module_path()] + [p for p in [env.get("PYTHONPATH")] if p])
        self.p = subprocess.Popen(
            [sys.executable, WORKER_PY, name, journal, str(seed)], env=env)
        self.pid = self.p.pid
        self.born = time.monotonic()

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


def _mp_entry(name, journal, seed):
    sys.exit(pkw.work(name, journal, seed))


class MpWorker:
    """A process of multiprocessing's default start method."""

    def __init__(self, name, journal, seed):
        self.p = multiprocessing.Process(target=_mp_entry,
                                         args=(name, journal, seed))
        self.p.start()
        self.pid = self.p.pid
        self.born = time.monotonic()

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout):
        self.p.join(timeout)
        return self.p.exitcode


class Journal:
    """The lines of the journal, by lock."""

    def __init__(self, path):
        self.grants = {lk: [] for lk in pkw.LOCKS}  # in file order
        self.acked, self.releasing, self.released = set(), set(), set()
        with open(path) as f:
            for line in f:
                w = line.split()
                assert len(w) >= 3 and w[0] in ("G", "A", "u", "U") and \
                    w[1] in pkw.LOCKS, \
                    f"malformed journal line {line!r}"
                key = (w[1], int(w[2]))
                if w[0] == "G":
                    self.grants[w[1]].append(dict(
                        tok=int(w[2]), od=w[3] == "1", read=(int(w[4]),
                        int(w[5])), pid=int(w[6])))
                else:
                    {"A": self.acked, "u": self.releasing,
                     "U": self.released}[w[0]].add(key)


def _final_grants(st, journal):
    """The test's own grant of each lock, after the pool: the last one."""
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND)
    try:
        for lk in pkw.LOCKS:
            with st.lock(lk, lease_ms=pkw.LEASE_MS, timeout=10) as g:
                n, prev = pkw.parse_counter(st.get("ctr." + lk))
                os.write(fd, f"G {lk} {g.token} {int(bool(g.owner_died))} "
                             f"{n} {prev} {os.getpid()}\n".encode())
                os.write(fd, f"u {lk} {g.token}\n".encode())
            os.write(fd, f"U {lk} {g.token}\n".encode())
    finally:
        os.close(fd)


def _verify(journal, st, killed, parked):
    """The assertions of the module's docstring; returns a summary."""
    j = Journal(journal)
    summary = {}
    for lk in pkw.LOCKS:
        grants = j.grants[lk]
        assert grants, f"lock {lk}: no grant at all"
        by_tok = {}
        state, pending = (0, 0), None   # last landed write; one maybe landed
        last, gaps, landed_unacked, od_seen = 0, 0, 0, 0
        prev = None
        for g in grants:
            t = g["tok"]
            assert t > last, (f"lock {lk}: token {t} granted after {last} "
                              "(fencing tokens must strictly increase)")
            gaps += t - last - 1
            # Whoever had the grant just before died holding it, released
            # it cleanly, or (killed between "u" and "U") either.
            if t - last > 1 or (prev is not None and
                                (lk, last) not in j.releasing):
                assert g["od"], (f"lock {lk}: grant {t} after a holder that "
                                 "died holding has owner_died False")
            elif prev is not None and (lk, last) in j.released:
                assert not g["od"], (f"lock {lk}: grant {t} after a clean "
                                     "release has owner_died True")
            od_seen += g["od"]
            if pending is not None and g["read"] == pending:
                state = pending
                landed_unacked += 1
            else:
                assert g["read"] == state, (
                    f"lock {lk}: grant {t} read {g['read']}, but the last "
                    f"landed write left {state}" +
                    (f" (or {pending})" if pending else "") +
                    ": an increment was lost or two holders overlapped")
            pending = None
            if (lk, t) in j.acked:
                state = (g["read"][0] + 1, t)
            elif g["pid"] != os.getpid():
                pending = (g["read"][0] + 1, t)
                assert g["pid"] in killed, (
                    f"lock {lk}: grant {t} of live worker {g['pid']} never "
                    "reported its SET")
            by_tok[t] = g
            last, prev = t, g
        final = pkw.parse_counter(st.get("ctr." + lk))
        assert final == state and pending is None, (
            f"lock {lk}: the store holds {final}, the journal says {state}")
        acked = sum(1 for (l2, _t) in j.acked if l2 == lk)
        # The headline: exact, every increment accounted for.
        assert final[0] == acked + landed_unacked
        holders_killed = gaps + sum(
            1 for g in grants if g["pid"] in killed and
            (lk, g["tok"]) not in j.released)
        assert landed_unacked <= holders_killed
        assert gaps <= len(killed)
        # Each holder killed on purpose: taken over with owner_died, and
        # its write landed exactly when it parked after its SET.
        toks = [g["tok"] for g in grants]
        for (plk, pid, tok, where) in parked:
            if plk != lk:
                continue
            assert tok in by_tok and by_tok[tok]["pid"] == pid, (
                f"lock {lk}: parked grant {tok} of {pid} not in the journal")
            assert (lk, tok) not in j.acked and (lk, tok) not in j.releasing
            nxt = by_tok[toks[toks.index(tok) + 1]]
            assert nxt["od"], (f"lock {lk}: the grant after killed holder "
                               f"{pid} (token {tok}) has owner_died False")
            mine = by_tok[tok]["read"]
            want = (mine[0] + 1, tok) if where == "post" else mine
            assert nxt["read"] == want, (
                f"lock {lk}: holder killed {where}-SET; next read "
                f"{nxt['read']}, expected {want}")
        summary[lk] = dict(count=final[0], grants=len(grants), gaps=gaps,
                           owner_died=od_seen, landed_unacked=landed_unacked)
    return summary


def run_pool(worker_cls, seed, name, tmp_path):
    """The kill phase, then the checks. Returns a summary for the log."""
    rng = random.Random(seed)
    st = shmkv.Store.create(name)
    journal = str(tmp_path / "journal")
    open(journal, "w").close()
    pool, killed, parked, exits = [], set(), [], []
    spawned = [0]

    def spawn():
        spawned[0] += 1
        pool.append(worker_cls(name, journal, rng.randrange(1 << 30)))

    def reap(w):
        rc = w.wait(EXIT_WAIT)
        assert rc == -signal.SIGKILL, f"killed worker {w.pid} gave {rc}"
        pool.remove(w)

    try:
        for _ in range(WORKERS):
            spawn()
        kinds = [(lk, where) for lk in pkw.LOCKS for where in ("pre", "post")]
        end = time.monotonic() + SECONDS
        step = 0
        while time.monotonic() < end:
            step += 1
            time.sleep(rng.uniform(0.01, 0.06))
            if step % 3 == 0:
                # A holder on purpose, parked before or after its SET.
                lk, where = kinds[(step // 3) % len(kinds)]
                st.set("pause." + lk, where)
                t0 = time.monotonic()
                while (got := st.getdel("paused." + lk)) is None:
                    assert time.monotonic() - t0 < PAUSE_WAIT, \
                        f"no holder of {lk} took the pause request"
                    time.sleep(0.001)
                pid, tok, w_where = got.decode().split()
                assert w_where == where
                victim = [w for w in pool if w.pid == int(pid)]
                assert victim, f"paused pid {pid} is not one of ours"
                victim[0].kill()
                killed.add(victim[0].pid)
                parked.append((lk, victim[0].pid, int(tok), where))
                reap(victim[0])
            else:
                # Anyone, anywhere (but give it time to have started).
                ripe = [w for w in pool if time.monotonic() - w.born > 0.15]
                if not ripe:
                    continue
                w = rng.choice(ripe)
                time.sleep(rng.uniform(0, 0.003))
                w.kill()
                killed.add(w.pid)
                reap(w)
            spawn()
        st.set("stop", 1)
        for w in list(pool):
            rc = w.wait(EXIT_WAIT)
            exits.append(rc)
            assert rc == 0, f"worker {w.pid} exited with {rc}"
            pool.remove(w)
        _final_grants(st, journal)
        summary = _verify(journal, st, killed, parked)
        problems = st.check()
        assert problems == [], f"shmkv_check: {problems}"
        summary["kills"] = len(killed)
        summary["on_purpose"] = len(parked)
        summary["workers"] = spawned[0]
        return summary
    finally:
        for w in pool:
            try:
                w.kill()
            except ProcessLookupError:
                pass
            w.wait(EXIT_WAIT)
        st.close()  # the fixture `name` removes the store


def test_subprocess_pool_keeps_counters_exact_under_sigkill(name, tmp_path):
    s = run_pool(SubprocessWorker, 1401, name, tmp_path)
    print(f"\n# subprocess pool: {s}")
    assert s["on_purpose"] >= 8


def test_multiprocessing_pool_keeps_counters_exact_under_sigkill(name,
                                                                 tmp_path):
    s = run_pool(MpWorker, 1402, name, tmp_path)
    print(f"\n# multiprocessing ({multiprocessing.get_start_method()}) "
          f"pool: {s}")
    assert s["on_purpose"] >= 8
