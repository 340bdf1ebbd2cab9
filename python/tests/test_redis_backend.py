"""shmkv.Store.open("redis://...") works as on shared memory: the same
calls, the same answers, the same exceptions, on a redis-server this test
starts on a free loopback port (and stops by pid). `make test` installs
redis-server, so its absence is a failure here, not a skip."""

import pytest

import redis_proc
import shmkv


@pytest.fixture(scope="module")
def redis_uri(tmp_path_factory):
    try:
        proc, port = redis_proc.start(tmp_path_factory.mktemp("redis"))
    except RuntimeError as e:
        pytest.fail(str(e))
    try:
        yield "redis://127.0.0.1:%d" % port
    finally:
        redis_proc.stop(proc)


@pytest.fixture
def remote(redis_uri, request):
    # A prefix per test: the tests share the server, never their keys.
    st = shmkv.Store.open(redis_uri + "?prefix=" + request.node.name + ":")
    yield st
    st.close()


def test_get_set_incr_delete(remote):
    assert remote.get("k") is None
    assert remote.set("k", "v") is True
    assert remote.get("k") == b"v"
    assert remote.incr("n") == 1
    assert remote.incr("n") == 2
    assert remote.delete("k") == 1
    assert remote.get("k") is None


def test_set_options_and_ttl(remote):
    assert remote.set("k", "1", nx=True) is True
    assert remote.set("k", "2", nx=True) is False
    assert remote.set("k", "3", xx=True, px=50000) is True
    assert 0 < remote.pttl("k") <= 50000
    assert remote.get("k") == b"3"


def test_errors_are_the_shm_stores(remote):
    remote.set("s", "abc")
    with pytest.raises(shmkv.NotAnInteger):
        remote.incr("s")
    remote.set("m", str(2**63 - 1))
    with pytest.raises(shmkv.IntegerOverflow):
        remote.incr("m")


def test_prefixes_keep_stores_apart(redis_uri):
    a = shmkv.Store.open(redis_uri + "?prefix=py-a:")
    b = shmkv.Store.open(redis_uri + "?prefix=py-b:")
    try:
        a.set("k", "A")
        b.set("k", "B")
        assert a.get("k") == b"A"
        assert b.get("k") == b"B"
    finally:
        a.close()
        b.close()
