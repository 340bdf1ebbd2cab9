"""A Store opened before fork() works in the child (the C library takes
care of a child using an inherited handle), with os.fork and with
multiprocessing's 'fork' start method; a Lock's grant stays the parent's."""

import multiprocessing
import os

import pytest

import shmkv

ROUNDS = 300

# Set in the parent before the pool forks; the workers inherit it.
_inherited = None


def _locked_increments(n):
    """n read-modify-write increments (GET, then SET: not atomic on their
    own) under the safe lock, through the inherited handle."""
    st = _inherited
    for _ in range(n):
        with st.lock("counter", lease_ms=10000) as g:
            v = int(st.get("counter") or 0)
            st.set("counter", v + 1)
            st.set("last-token", g.token)
    return os.getpid()


def _wait_ok(pid):
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_os_fork_child_uses_the_inherited_handle(store):
    store.set("parent", "here")
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                assert store.get("parent") == b"here"
                for _ in range(ROUNDS):
                    store.incr("n")
                with store.lock("l") as g:
                    store.set("child-%d" % os.getpid(), g.token)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    for _ in range(ROUNDS):
        store.incr("n")
    for pid in pids:
        _wait_ok(pid)
    assert store.get_int("n") == 4 * ROUNDS
    assert all(store.get("child-%d" % p) is not None for p in pids)
    assert store.check() == []


def test_multiprocessing_fork_pool_counts_exactly(store):
    global _inherited
    _inherited = store
    ctx = multiprocessing.get_context("fork")
    try:
        with ctx.Pool(4) as pool:
            pids = pool.map(_locked_increments, [ROUNDS // 3] * 8)
    finally:
        _inherited = None
    assert len(set(pids)) >= 1
    assert store.get_int("counter") == 8 * (ROUNDS // 3)
    # one grant per section, tokens strictly increasing: the last is the count
    assert store.get_int("last-token") == 8 * (ROUNDS // 3)
    assert store.check() == []


def test_a_fork_child_does_not_own_the_parents_grant(store):
    lk = store.lock("x", lease_ms=10000)
    g = lk.acquire()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            assert not g.held()
            try:
                lk.release()
            except shmkv.NotLockHolder:
                code = 0
        finally:
            os._exit(code)
    _wait_ok(pid)
    assert g.held()
    g.release()


def test_a_store_opened_in_the_child_after_fork(name):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with shmkv.Store.open_or_create(name, slots=64) as st:
                st.set("from-child", 1)
            code = 0
        finally:
            os._exit(code)
    _wait_ok(pid)
    with shmkv.Store.open(name) as st:
        assert st.get("from-child") == b"1"
