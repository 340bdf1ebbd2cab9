"""The string commands, each option, and the encodings of keys and values."""

import datetime
import time

import pytest

import shmkv


def test_get_set_roundtrip_and_missing(store):
    assert store.get("nope") is None
    assert store.set("k", "v") is True
    assert store.get("k") == b"v"
    assert store.get(b"k") == b"v"


@pytest.mark.parametrize(
    "given, stored",
    [
        (b"raw\x00bytes", b"raw\x00bytes"),
        (bytearray(b"ba"), b"ba"),
        (memoryview(b"mv"), b"mv"),
        ("héllo", "héllo".encode()),
        (42, b"42"),
        (-7, b"-7"),
        (1.5, b"1.5"),
        (2**70, str(2**70).encode()),
        ("", b""),
    ],
)
def test_values_and_keys_are_encoded_as_redis_py_does(store, given, stored):
    store.set(given, given)
    assert store.get(stored) == stored


@pytest.mark.parametrize("bad", [None, True, False, 1j, object(), [1]])
def test_other_types_are_typeerror(store, bad):
    with pytest.raises(TypeError):
        store.set("k", bad)
    with pytest.raises(TypeError):
        store.get(bad)
    assert store.get("k") is None


def test_values_longer_than_the_stack_buffer(store):
    for n in (1023, 1024, 1025, 4096):
        v = bytes(range(256)) * (n // 256) + b"x" * (n % 256)
        store.set("big", v)
        assert store.get("big") == v
        assert store.getset("big", b"small") == v
        assert store.set("big", v, get=True) == b"small"
        assert store.getdel("big") == v
        assert store.get("big") is None


def test_set_nx_xx(store):
    assert store.set("k", "a", xx=True) is False
    assert store.get("k") is None
    assert store.set("k", "a", nx=True) is True
    assert store.set("k", "b", nx=True) is False
    assert store.get("k") == b"a"
    assert store.set("k", "c", xx=True) is True
    assert store.get("k") == b"c"
    with pytest.raises(shmkv.InvalidArgument):
        store.set("k", "d", nx=True, xx=True)
    assert store.get("k") == b"c"


def test_set_get_returns_the_old_value_as_redis_set_get(store):
    assert store.set("k", "a", get=True) is None
    assert store.set("k", "b", get=True) == b"a"
    # with NX: the value was set iff the reply is None
    assert store.set("k", "c", nx=True, get=True) == b"b"
    assert store.get("k") == b"b"
    assert store.set("k2", "x", xx=True, get=True) is None
    assert store.get("k2") is None


def test_set_expiry_options(store):
    store.set("ex", "v", ex=100)
    assert 99 <= store.ttl("ex") <= 100
    store.set("px", "v", px=50000)
    assert 49000 < store.pttl("px") <= 50000
    store.set("td", "v", ex=datetime.timedelta(seconds=30))
    assert 29 <= store.ttl("td") <= 30
    store.set("tdp", "v", px=datetime.timedelta(milliseconds=2500))
    assert 2000 < store.pttl("tdp") <= 2500
    now = int(time.time())
    store.set("exat", "v", exat=now + 100)
    assert 98 <= store.ttl("exat") <= 100
    store.set("pxat", "v", pxat=(now + 100) * 1000)
    assert 98 <= store.ttl("pxat") <= 100
    when = datetime.datetime.now() + datetime.timedelta(seconds=60)
    store.set("dt", "v", exat=when)
    assert 58 <= store.ttl("dt") <= 60
    store.set("past", "v", pxat=1000)
    assert store.get("past") is None
    # keepttl keeps it, a plain SET drops it
    store.set("ex", "w", keepttl=True)
    assert store.ttl("ex") > 0
    store.set("ex", "w")
    assert store.ttl("ex") == -1


def test_set_expiry_errors(store):
    with pytest.raises(shmkv.InvalidArgument) as e:
        store.set("k", "v", ex=0)
    assert "invalid expire time in 'set' command" in str(e.value)
    with pytest.raises(shmkv.InvalidArgument):
        store.set("k", "v", px=-5)
    with pytest.raises(shmkv.InvalidArgument) as e:
        store.set("k", "v", ex=1, px=1)
    assert "syntax error" in str(e.value)
    with pytest.raises(shmkv.InvalidArgument):
        store.set("k", "v", ex=1, keepttl=True)
    with pytest.raises(TypeError):
        store.set("k", "v", ex="10")
    assert store.get("k") is None


def test_setnx_getset_getdel(store):
    assert store.setnx("k", "a") is True
    assert store.setnx("k", "b") is False
    store.expire("k", 100)
    assert store.getset("k", "c") == b"a"
    assert store.ttl("k") == -1  # GETSET drops the TTL
    assert store.getset("new", "x") is None
    assert store.getdel("k") == b"c"
    assert store.getdel("k") is None


def test_getex(store):
    store.set("k", "v")
    assert store.getex("k") == b"v"
    assert store.ttl("k") == -1
    assert store.getex("k", ex=100) == b"v"
    assert 99 <= store.ttl("k") <= 100
    assert store.getex("k", px=5000) == b"v"
    assert 4000 < store.pttl("k") <= 5000
    assert store.getex("k", exat=int(time.time()) + 50) == b"v"
    assert 48 <= store.ttl("k") <= 50
    assert store.getex("k", pxat=int(time.time() * 1000) + 50000) == b"v"
    assert store.getex("k", persist=True) == b"v"
    assert store.ttl("k") == -1
    assert store.getex("missing", ex=5) is None
    with pytest.raises(shmkv.InvalidArgument):
        store.getex("k", ex=5, persist=True)
    with pytest.raises(shmkv.InvalidArgument) as e:
        store.getex("k", ex=0)
    assert "invalid expire time in 'getex' command" in str(e.value)


def test_delete_exists_delifeq(store):
    store.set("a", 1)
    store.set("b", 2)
    assert store.exists("a", "b", "c", "a") == 3
    assert store.delete("a", "b", "c") == 2
    assert store.delete() == 0
    assert store.exists("a") == 0
    store.set("tok", "owner-1")
    assert store.delifeq("tok", "owner-2") is False
    assert store.get("tok") == b"owner-1"
    assert store.delifeq("tok", "owner-1") is True
    assert store.get("tok") is None
    assert store.delifeq("tok", "owner-1") is False


def test_expire_family_and_ttl(store):
    assert store.ttl("missing") == -2
    assert store.pttl("missing") == -2
    assert store.expire("missing", 10) is False
    store.set("k", "v")
    assert store.ttl("k") == -1
    assert store.expire("k", 100) is True
    assert 99 <= store.ttl("k") <= 100
    assert store.pexpire("k", 200000) is True
    assert 199000 < store.pttl("k") <= 200000
    assert store.expire("k", datetime.timedelta(seconds=300)) is True
    assert 299 <= store.ttl("k") <= 300
    assert store.expireat("k", int(time.time()) + 400) is True
    assert 398 <= store.ttl("k") <= 400
    assert store.pexpireat("k", int(time.time() * 1000) + 500000) is True
    assert 498 <= store.ttl("k") <= 500
    assert store.persist("k") is True
    assert store.persist("k") is False
    assert store.ttl("k") == -1


def test_expire_conditions(store):
    store.set("k", "v")
    assert store.expire("k", 100, xx=True) is False
    assert store.expire("k", 100, nx=True) is True
    assert store.expire("k", 200, nx=True) is False
    assert store.expire("k", 50, gt=True) is False
    assert store.expire("k", 200, gt=True) is True
    assert store.expire("k", 300, lt=True) is False
    assert store.expire("k", 10, lt=True) is True
    assert 9 <= store.ttl("k") <= 10
    with pytest.raises(shmkv.InvalidArgument) as e:
        store.expire("k", 10, nx=True, xx=True)
    assert "not compatible" in str(e.value)
    with pytest.raises(shmkv.InvalidArgument):
        store.expire("k", 10, gt=True, lt=True)


def test_expire_in_the_past_deletes(store):
    store.set("k", "v")
    assert store.expire("k", -1) is True
    assert store.get("k") is None


def test_a_key_expires(store):
    store.set("k", "v", px=30)
    assert store.get("k") == b"v"
    time.sleep(0.08)
    assert store.get("k") is None
    assert store.ttl("k") == -2


def test_incr_family(store):
    assert store.incr("n") == 1
    assert store.incr("n", 10) == 11
    assert store.incrby("n", 5) == 16
    assert store.incrby("n") == 17
    assert store.decr("n") == 16
    assert store.decr("n", 6) == 10
    assert store.decrby("n", 20) == -10
    assert store.incr("n", -5) == -15
    assert store.get("n") == b"-15"
    assert store.get_int("n") == -15
    assert store.get_int("missing") is None
    store.expire("n", 100)
    store.incr("n")
    assert store.ttl("n") > 0  # INCR keeps the TTL


def test_incr_errors(store):
    store.set("s", "abc")
    with pytest.raises(shmkv.NotAnInteger) as e:
        store.incr("s")
    assert e.value.errno == 33  # EDOM
    assert str(e.value) == "[Errno 33] value is not an integer or out of range"
    with pytest.raises(shmkv.NotAnInteger):
        store.get_int("s")
    store.set("s", " 1")
    with pytest.raises(shmkv.NotAnInteger):
        store.incr("s")
    store.set("big", 2**63 - 1)
    with pytest.raises(shmkv.IntegerOverflow) as e:
        store.incr("big")
    assert "would overflow" in str(e.value)
    assert store.get("big") == str(2**63 - 1).encode()
    with pytest.raises(OverflowError):
        store.incr("big", 2**63)
    store.set("min", -(2**63))
    with pytest.raises(shmkv.IntegerOverflow):
        store.decr("min")


def test_mapping_protocol(store):
    store["k"] = "v"
    assert store["k"] == b"v"
    assert "k" in store
    assert b"k" in store
    assert "nope" not in store
    with pytest.raises(KeyError) as e:
        store["nope"]
    assert e.value.args == ("nope",)
    del store["k"]
    assert "k" not in store
    with pytest.raises(KeyError):
        del store["k"]
    assert len(store) == 0
    store[1] = 2
    assert store[b"1"] == b"2"
    assert len(store) == 1
    assert store.dbsize() == 1


def test_iteration_and_scan_iter(store):
    keys = {("user:%d" % i).encode() for i in range(300)} | {b"other", b"us\x00er"}
    for k in keys:
        store[k] = "x"
    assert set(iter(store)) == keys
    assert sorted(store) == sorted(keys)
    assert set(store.scan_iter()) == keys
    assert set(store.scan_iter(count=7)) == keys
    users = set(store.scan_iter(match="user:*"))
    assert users == {k for k in keys if k.startswith(b"user:")}
    assert set(store.scan_iter(match="user:1?")) == {b"user:%d" % i for i in range(10, 20)}
    assert set(store.scan_iter(match=b"user:[12]5")) == {b"user:15", b"user:25"}
    assert set(store.scan_iter(match="user:[^0-8]")) == {b"user:9"}
    assert set(store.scan_iter(match="o*r")) == {b"other"}
    assert set(store.scan_iter(match="*nothing*")) == set()
    with pytest.raises(shmkv.InvalidArgument):
        store.scan_iter(count=0)


def test_glob_escapes_and_classes(store):
    for k in (b"a*b", b"axb", b"a?b", b"a[b", b"a-b", b"abb"):
        store[k] = 1
    assert set(store.scan_iter(match=r"a\*b")) == {b"a*b"}
    assert set(store.scan_iter(match=r"a\?b")) == {b"a?b"}
    assert set(store.scan_iter(match="a?b")) == {b"a*b", b"axb", b"a?b", b"a[b", b"a-b", b"abb"}
    assert set(store.scan_iter(match="a[x-z]b")) == {b"axb"}
    assert set(store.scan_iter(match="a[z-x]b")) == {b"axb"}
    assert set(store.scan_iter(match=r"a[\-]b")) == {b"a-b"}
    assert set(store.scan_iter(match="a**b")) == {b"a*b", b"axb", b"a?b", b"a[b", b"a-b", b"abb"}


def test_iterating_while_writing_is_allowed(store):
    for i in range(100):
        store[i] = i
    seen = set()
    for k in store:
        seen.add(k)
        store.delete(k)
    assert seen == {str(i).encode() for i in range(100)}
    assert len(store) == 0


def test_info_config_check_recover_sweep_maintain(store):
    store.set("a", "1")
    store.set("b", "x" * 500, ex=100)
    info = store.info()
    assert info["live_keys"] == 2
    assert info["volatile_keys"] == 1
    assert info["slots"] == 1024
    # A table may only double: slots_max is slots times a power of two.
    assert info["slots_max"] >= 1024
    assert info["slots_max"] & (info["slots_max"] - 1) == 0
    assert info["evict_policy"] == "noeviction"
    assert info["memory_bytes"] > 0
    assert isinstance(info["classes"], list) and info["classes"]
    assert sum(c["used"] for c in info["classes"]) == info["block_values"]
    assert store.check() == []
    assert isinstance(store.check(leftovers=True), list)
    rep = store.recover()
    assert rep["repairs"] == 0 and set(rep) >= {"stale_claims", "leaked_blocks"}
    store.set("gone", "v", px=1)
    time.sleep(0.01)
    deleted, cursor, total = 0, 0, 0
    while True:
        d, cursor = store.sweep(cursor, 64)
        deleted += d
        total += 1
        if cursor == 0:
            break
    assert deleted == 1 and total == 1024 // 64
    assert store.maintain() is None


def test_settings_change_for_everyone(store, name):
    store.set_evict_policy("allkeys-lru")
    with shmkv.Store.open(name) as other:
        assert other.config()["evict_policy"] == "allkeys-lru"
    with pytest.raises(shmkv.InvalidArgument):
        store.set_evict_policy("bogus")
    mm = store.info()["memory_bytes"] * 4
    store.set_max_memory(mm)
    assert store.config()["max_memory"] == mm
    with pytest.raises(shmkv.InvalidArgument):
        store.set_max_memory(1)


def test_execute_command(store):
    assert store.execute_command("SET", "k", "v") == "OK"
    assert store.execute_command("get", b"k") == b"v"
    assert store.execute_command("GET", "nope") is None
    assert store.execute_command("INCR", "n") == 1
    assert store.execute_command("INCRBY", "n", 41) == 42
    assert store.execute_command("PING") == "PONG"
    assert store.execute_command("SET", "k", "w", "GET") == b"v"
    with pytest.raises(shmkv.ResponseError) as e:
        store.execute_command("INCR", "k")
    assert str(e.value.strerror) == "ERR value is not an integer or out of range"
    with pytest.raises(shmkv.ResponseError) as e:
        store.execute_command("NOSUCH")
    assert "unknown command" in e.value.strerror
    with pytest.raises(shmkv.ResponseError):
        store.execute_command("SET", "k")
    with pytest.raises(shmkv.InvalidArgument):
        store.execute_command()
