"""Calls on a Redis-backed store release the GIL while they wait on the
network: with the server stopped (SIGSTOP), each call below waits out the
URI's timeout, and another thread that wakes every millisecond runs
meanwhile. Were the GIL held, that thread could not take it back before
the call ends: it would run only at the call's edges, never inside."""

import os
import signal
import threading
import time

import pytest

import redis_proc
import shmkv

TIMEOUT_MS = 600
EDGE_S = 0.1  # left out at each end of a call: the switches around it


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = redis_proc.start(tmp_path_factory.mktemp("redis"))
    yield proc, port
    os.kill(proc.pid, signal.SIGCONT)
    redis_proc.stop(proc)


@pytest.fixture
def stopped(server, request):
    """A store on the server, and the server stopped: every call on it
    waits TIMEOUT_MS and fails."""
    proc, port = server
    st = shmkv.Store.open("redis://127.0.0.1:%d?timeout=%d&prefix=%s:" %
                          (port, TIMEOUT_MS, request.node.name))
    st.set("k", "v")
    os.kill(proc.pid, signal.SIGSTOP)
    yield st
    os.kill(proc.pid, signal.SIGCONT)
    st.close()


class Ticker(threading.Thread):
    """Wakes every millisecond and notes the time: each wake-up needs the
    GIL (a busy loop would also run in the switch intervals around the
    call)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.times = []
        self.running = threading.Event()
        self.stop = False

    def run(self):
        self.running.set()
        while not self.stop:
            time.sleep(0.001)
            self.times.append(time.monotonic())


def ticks_inside(call):
    """How many times another thread ran well inside @call (EDGE_S in
    from either end): none if @call held the GIL."""
    t = Ticker()
    t.start()
    t.running.wait()
    t0 = time.monotonic()
    try:
        call()
    except shmkv.Error:
        pass  # the stopped server: a timeout
    t1 = time.monotonic()
    t.stop = True
    t.join()
    assert t1 - t0 >= TIMEOUT_MS / 1000 * 0.9, "the call did not wait"
    return sum(t0 + EDGE_S < x < t1 - EDGE_S for x in t.times)


CALLS = {
    "get": lambda st: st.get("k"),
    "set": lambda st: st.set("k", "w"),
    "setnx": lambda st: st.setnx("n", "w"),
    "getset": lambda st: st.getset("k", "w"),
    "getdel": lambda st: st.getdel("k"),
    "getex": lambda st: st.getex("k", px=1000),
    "delete": lambda st: st.delete("k"),
    "exists": lambda st: st.exists("k"),
    "delifeq": lambda st: st.delifeq("k", "v"),
    "expire": lambda st: st.expire("k", 10),
    "ttl": lambda st: st.ttl("k"),
    "persist": lambda st: st.persist("k"),
    "incr": lambda st: st.incr("i"),
    "get_int": lambda st: st.get_int("i"),
    "mapping get": lambda st: st["k"],
    "mapping set": lambda st: st.__setitem__("k", "v"),
    "contains": lambda st: "k" in st,
    "execute_command": lambda st: st.execute_command("GET", "k"),
    "scan_iter": lambda st: list(st.scan_iter()),
    "len": lambda st: len(st),
    "locks": lambda st: st.locks(),
    "lock acquire": lambda st: st.lock("job").acquire(blocking=False),
    "pattern lock acquire":
        lambda st: st.pattern_lock("pjob").acquire(blocking=False),
}


@pytest.mark.parametrize("what", sorted(CALLS))
def test_a_call_waiting_on_a_stopped_server_lets_other_threads_run(
        stopped, what):
    assert ticks_inside(lambda: CALLS[what](stopped)) >= 3


def test_the_store_answers_again_once_the_server_resumes(server):
    proc, port = server
    with shmkv.Store.open("redis://127.0.0.1:%d?timeout=%d&prefix=resume:" %
                          (port, TIMEOUT_MS)) as st:
        st.set("k", "v")
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(shmkv.Error):
                st.get("k")
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert st.get("k") == b"v"


def test_close_from_another_thread_during_a_call_is_safe(server):
    proc, port = server
    st = shmkv.Store.open("redis://127.0.0.1:%d?timeout=%d&prefix=close:" %
                          (port, TIMEOUT_MS))
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        closer = threading.Timer(TIMEOUT_MS / 1000 / 3, st.close)
        closer.start()
        with pytest.raises(shmkv.Error):
            st.get("k")  # the handle stays until this call is out
        closer.join()
        assert st.closed
        with pytest.raises(shmkv.Error, match="closed"):
            st.get("k")
    finally:
        os.kill(proc.pid, signal.SIGCONT)


def test_a_scan_iterator_another_thread_is_filling_says_so(stopped):
    it = stopped.scan_iter()
    first = threading.Thread(target=lambda: pytest.raises(shmkv.Error,
                                                          next, it))
    first.start()
    time.sleep(TIMEOUT_MS / 1000 / 3)  # the first is in the call
    with pytest.raises(RuntimeError, match="another thread"):
        next(it)
    first.join()
