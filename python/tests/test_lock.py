"""The safe lock (st.lock) and the pattern lock (st.pattern_lock)."""

import errno
import os
import signal
import threading
import time

import pytest

import shmkv


def _child_holding(st, lockname, lease_ms=60000):
    """Forks a child that takes the lock and sleeps holding it; returns its
    pid and token once it holds it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            g = st.lock(lockname, lease_ms).acquire()
            os.write(w, b"%d\n" % g.token)
            time.sleep(60)
        finally:
            os._exit(1)
    os.close(w)
    token = int(os.read(r, 64))
    os.close(r)
    return pid, token


def test_with_gives_a_grant_with_increasing_tokens(store):
    tokens = []
    for _ in range(5):
        with store.lock("jobs", lease_ms=5000) as g:
            assert isinstance(g, shmkv.Grant)
            assert g.held()
            assert not g.owner_died and not g.lease_expired
            tokens.append(g.token)
        assert not g.held()
    assert tokens == sorted(set(tokens)) and tokens[0] >= 1
    info = [lk for lk in store.locks() if lk["name"] == "jobs"][0]
    assert info["token"] == tokens[-1] and info["held"] is False


def test_explicit_acquire_release(store):
    lk = store.lock("x", lease_ms=5000)
    assert lk.name == "x" and lk.token == 0
    g = lk.acquire()
    assert lk.held() and lk.token == g.token and g.lock is lk
    g.release()
    assert not lk.held()
    with pytest.raises(shmkv.NotLockHolder) as e:
        g.release()
    assert e.value.errno == errno.ENOLCK
    with pytest.raises(shmkv.NotLockHolder):
        lk.release()


def test_busy_lock_non_blocking_and_timeouts(store):
    a = store.lock("x", 5000)
    b = store.lock("x", 5000)
    ga = a.acquire()
    assert b.acquire(blocking=False) is None
    with pytest.raises(shmkv.LockTimeout) as e:
        b.acquire(timeout=0.05)
    assert e.value.errno == errno.ETIMEDOUT
    assert isinstance(e.value, TimeoutError)
    assert "'x'" in str(e.value)
    with pytest.raises(shmkv.LockTimeout):
        with store.lock("x", timeout=0):
            pass
    ga.release()
    gb = b.acquire(timeout=0)
    assert gb.token == ga.token + 1
    gb.release()


def test_a_lock_object_holds_once(store):
    lk = store.lock("x")
    g = lk.acquire()
    with pytest.raises(shmkv.LockAlreadyHeld) as e:
        lk.acquire(blocking=False)
    assert e.value.errno == errno.EDEADLK
    g.release()


def test_lease_expiry_and_fencing(store):
    a = store.lock("x", lease_ms=30)
    b = store.lock("x", lease_ms=5000)
    ga = a.acquire()
    time.sleep(0.06)
    assert not ga.held()
    with pytest.raises(shmkv.NotLockHolder):
        ga.extend(100)
    gb = b.acquire(timeout=5)
    assert gb.lease_expired and not gb.owner_died
    assert gb.token > ga.token
    # the expired holder may not release the new grant
    with pytest.raises(shmkv.NotLockHolder) as e:
        ga.release()
    assert e.value.errno == errno.EPERM
    assert gb.held()
    gb.release()


def test_extend(store):
    g = store.lock("x", lease_ms=50).acquire()
    g.extend(10000)
    time.sleep(0.1)
    assert g.held()
    g.extend(20, replace=True)
    time.sleep(0.06)
    assert not g.held()
    with pytest.raises(shmkv.InvalidArgument):
        store.lock("y").acquire().extend(0)


def test_a_killed_holder_is_taken_over_with_owner_died(store):
    pid, child_token = _child_holding(store, "jobs")
    lk = store.lock("jobs", 5000)
    assert lk.acquire(blocking=False) is None  # alive: busy
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    g = lk.acquire(timeout=10)
    assert g.owner_died
    assert g.token > child_token
    g.release()


def test_wrong_lock_kind(store):
    store.set("lock.plain", "not a lock")
    with pytest.raises(shmkv.WrongLockKind) as e:
        store.lock("plain").acquire(blocking=False)
    assert e.value.errno == errno.EEXIST
    with store.lock("safe"):
        pass
    with pytest.raises(shmkv.WrongLockKind):
        store.pattern_lock("safe").acquire(blocking=False)


def test_lock_names_too_long(store):
    with pytest.raises(shmkv.KeyTooLong) as e:
        store.lock("n" * 60)
    assert e.value.strerror.startswith("lock key 'lock.nnn")
    assert "is 65 bytes, this store's key_max is 64" in e.value.strerror
    with pytest.raises(shmkv.InvalidArgument):
        store.lock("")
    with pytest.raises(shmkv.InvalidArgument):
        store.lock("x", lease_ms=0)


def test_a_waiting_thread_releases_the_gil(store):
    holder = store.lock("x", 10000).acquire()
    got = []

    def waiter():
        got.append(store.lock("x", 10000).acquire(timeout=10))

    t = threading.Thread(target=waiter)
    t.start()
    # The waiter is in the C wait now or soon; this thread must keep
    # running meanwhile (with the GIL held by the waiter it could not).
    n, end = 0, time.monotonic() + 0.3
    while time.monotonic() < end:
        n += 1
    assert not got and t.is_alive()
    assert n > 1000
    holder.release()
    t.join(10)
    assert got and got[0].token == holder.token + 1
    got[0].release()


def test_a_lock_object_is_one_thread_at_a_time(store):
    holder = store.lock("x").acquire()
    shared = store.lock("x")
    err = []
    t = threading.Thread(target=lambda: err.append(shared.acquire(timeout=5)))
    t.start()
    time.sleep(0.05)
    with pytest.raises(shmkv.Error) as e:
        shared.acquire(blocking=False)
    assert e.value.errno == errno.EBUSY
    holder.release()
    t.join(10)
    err[0].release()


def test_a_signal_interrupts_a_forever_wait(store):
    holder = store.lock("x").acquire()

    class Alarm(Exception):
        pass

    def on_alarm(signum, frame):
        raise Alarm()

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(Alarm):
            store.lock("x").acquire()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    holder.release()
    with store.lock("x", timeout=0):  # the interrupted wait took nothing
        pass


def test_close_while_another_thread_waits(store, name):
    other = shmkv.Store.open(name)
    holder = store.lock("x").acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(other.lock("x").acquire(timeout=10)))
    t.start()
    time.sleep(0.05)
    other.close()  # deferred: the waiter keeps the mapping
    assert other.closed
    holder.release()
    t.join(10)
    assert got and isinstance(got[0], shmkv.Grant)
    with pytest.raises(shmkv.Error) as e:
        got[0].release()
    assert e.value.errno == errno.EBADF


def test_dropping_a_held_lock_releases_it(store):
    lk = store.lock("x")
    lk.acquire()
    del lk
    with store.lock("x", timeout=0):
        pass


def test_pattern_lock(store):
    pl = store.pattern_lock("p", timeout_ms=5000)
    assert pl.expiry is None
    before = int(time.time() * 1000)
    exp = pl.acquire()
    assert before + 5000 <= exp <= before + 5000 + 1000
    assert pl.expiry == exp
    other = store.pattern_lock("p", timeout_ms=5000, wait_ms=30)
    assert other.acquire(blocking=False) is None
    with pytest.raises(shmkv.LockTimeout):
        other.acquire()
    with pytest.raises(shmkv.LockTimeout):
        with other:
            pass
    pl.release()
    assert pl.expiry is None
    with pytest.raises(shmkv.NotLockHolder):
        pl.release()
    with store.pattern_lock("p", wait_ms=0) as held:
        assert held.expiry is not None
        assert store.get("lock.p") == str(held.expiry).encode()
    assert store.get("lock.p") is None


def test_pattern_lock_release_after_its_validity(store):
    pl = store.pattern_lock("p", timeout_ms=20)
    pl.acquire()
    time.sleep(0.05)
    with pytest.raises(shmkv.NotLockHolder) as e:
        pl.release()
    assert "'p'" in str(e.value)
    # a crashed holder's lock is waited out, then taken (the page's way)
    other = store.pattern_lock("p", timeout_ms=1000)
    assert other.acquire(wait_ms=1000) is not None
    other.release()


def test_pattern_lock_waiter_releases_the_gil(store):
    pl = store.pattern_lock("p", timeout_ms=10000)
    pl.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(store.pattern_lock("p").acquire(wait_ms=10000)))
    t.start()
    n, end = 0, time.monotonic() + 0.2
    while time.monotonic() < end:
        n += 1
    assert not got and n > 1000
    pl.release()
    t.join(10)
    assert got and got[0] is not None
