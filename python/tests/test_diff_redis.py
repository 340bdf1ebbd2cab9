"""The same command sequences on shmkv (through this module) and on a real
redis-server (through Debian's redis-py) give the same replies: SET with
each option, GETSET, GETDEL, GETEX, INCR family errors, EXPIRE conditions,
TTLs. redis-server is started on a unix socket in a temporary directory
and stopped by pid afterwards; `make test` installs it, so its absence is
a failure here, not a skip."""

import os
import random
import shutil
import subprocess
import time

import pytest
import redis

import shmkv

KEYS = ["k%d" % i for i in range(6)] + ["lock.x", "é"]
VALUES = ["", "v", "0", "1", "-1", "42", "007", "-0", " 1", "1.5", "abc",
          str(2**63 - 1), str(-(2**63)), "9" * 20, "x" * 300, 17, -3, 2.5]
FAR = 10**6  # seconds: no key expires by itself during a run


@pytest.fixture(scope="module")
def redis_client(tmp_path_factory):
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    assert os.access(server, os.X_OK), "redis-server missing: run make deps"
    d = tmp_path_factory.mktemp("redis")
    sock = str(d / "redis.sock")
    proc = subprocess.Popen(
        [server, "--port", "0", "--unixsocket", sock, "--save", "",
         "--appendonly", "no", "--dir", str(d)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(unix_socket_path=sock)
        for _ in range(500):
            try:
                client.ping()
                break
            except (redis.ConnectionError, FileNotFoundError):
                assert proc.poll() is None, "redis-server exited"
                time.sleep(0.01)
        else:
            pytest.fail("redis-server did not answer on %s" % sock)
        yield client
    finally:
        proc.terminate()
        proc.wait(10)


def category(msg):
    """An error text, reduced to what both servers say alike."""
    if "not an integer" in msg:
        return "not an integer"
    if "overflow" in msg:
        return "overflow"
    if "syntax" in msg or "invalid expire" in msg or "not compatible" in msg:
        return "argument"
    return msg


def outcome(call):
    """A reply or an error, in terms both clients share."""
    try:
        r = call()
    except shmkv.NotAnInteger:
        return ("error", "not an integer")
    except shmkv.IntegerOverflow:
        return ("error", "overflow")
    except shmkv.InvalidArgument:
        return ("error", "argument")
    except (shmkv.ResponseError, redis.ResponseError) as e:
        return ("error", category(e.strerror if isinstance(e, shmkv.Error) else str(e)))
    except redis.DataError:
        return ("error", "argument")
    return ("ok", r)


def same(cmd, got, want):
    """TTLs agree when both say -2/-1, or both count down within a slack
    (the two stores set them some microseconds apart)."""
    if cmd in ("ttl", "pttl") and got[0] == want[0] == "ok":
        g, w = got[1], want[1]
        if g < 0 or w < 0:
            return g == w
        return abs(g - w) <= (2 if cmd == "ttl" else 2000)
    return got == want


def random_op(rnd):
    k = rnd.choice(KEYS)
    v = rnd.choice(VALUES)
    op = rnd.randrange(16)
    if op == 0:
        opts = {}
        for flag in ("nx", "xx", "get", "keepttl"):
            if rnd.random() < 0.25:
                opts[flag] = True
        kind = rnd.choice([None, None, "ex", "px", "exat", "pxat", "bad"])
        now = int(time.time())
        if kind == "ex":
            opts["ex"] = FAR
        elif kind == "px":
            opts["px"] = FAR * 1000
        elif kind == "exat":
            opts["exat"] = rnd.choice([now + FAR, 1])  # far, or past
        elif kind == "pxat":
            opts["pxat"] = rnd.choice([(now + FAR) * 1000, 1])
        elif kind == "bad":
            opts[rnd.choice(["ex", "px"])] = rnd.choice([0, -5])
        return "set", (k, v), opts
    if op == 1:
        return "get", (k,), {}
    if op == 2:
        return "setnx", (k, v), {}
    if op == 3:
        return "getset", (k, v), {}
    if op == 4:
        return "getdel", (k,), {}
    if op == 5:
        opts = rnd.choice([{}, {"ex": FAR}, {"px": FAR * 1000}, {"persist": True},
                           {"exat": 1}, {"ex": 0}])
        return "getex", (k,), opts
    if op == 6:
        return "delete", tuple(rnd.sample(KEYS, rnd.randint(1, 3))), {}
    if op == 7:
        return "exists", tuple(rnd.choice(KEYS) for _ in range(rnd.randint(1, 3))), {}
    if op == 8:
        flags = {}
        f = rnd.choice([None, None, "nx", "xx", "gt", "lt", "nxxx"])
        if f == "nxxx":
            flags = {"nx": True, "xx": True}
        elif f:
            flags = {f: True}
        t = rnd.choice([FAR, FAR // 2, FAR * 2, -1])
        return rnd.choice(["expire", "pexpire"]), (k, t if t < 0 else t), flags
    if op == 9:
        return "ttl", (k,), {}
    if op == 10:
        return "pttl", (k,), {}
    if op == 11:
        return "persist", (k,), {}
    if op == 12:
        return "incr", (k,), {}
    if op == 13:
        return "incrby", (k, rnd.choice([1, -1, 1000, 2**62, -(2**62)])), {}
    if op == 14:
        return "decrby", (k, rnd.choice([1, 7, 2**62])), {}
    return "decr", (k,), {}


def normalise(name, args, opts, out):
    kind, r = out
    if kind == "error":
        return out
    if name == "set" and not opts.get("get"):
        return (kind, bool(r))  # redis-py gives None where NX/XX stopped it
    if name in ("setnx", "expire", "pexpire", "persist"):
        return (kind, bool(r))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_sequences_agree_with_redis(redis_client, name, seed):
    rnd = random.Random(seed)
    redis_client.flushall()
    with shmkv.Store.create(name, slots=1024, value_max=1024) as st:
        for step in range(2500):
            cmd, args, opts = random_op(rnd)
            want = outcome(lambda: getattr(redis_client, cmd)(*args, **opts))
            got = outcome(lambda: getattr(st, cmd)(*args, **opts))
            assert same(cmd, normalise(cmd, args, opts, got),
                        normalise(cmd, args, opts, want)), (
                "seed %d step %d: %s%r %r" % (seed, step, cmd, args, opts))
        # and the final contents
        keys = sorted(redis_client.keys())
        assert sorted(st) == keys
        for k in keys:
            assert st.get(k) == redis_client.get(k)
        assert st.check() == []


def raw_command(client, *args):
    """The reply as the server sent it: no redis-py response callback."""
    conn = client.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def test_execute_command_agrees_with_redis(redis_client, name):
    redis_client.flushall()
    script = [
        ("SET", "a", "1"), ("SET", "a", "2", "NX"), ("SET", "a", "3", "XX", "GET"),
        ("GET", "a"), ("INCR", "a"), ("INCRBY", "a", "-10"), ("DECR", "a"),
        ("SET", "s", "abc"), ("INCR", "s"), ("GETSET", "s", "x"), ("GETDEL", "s"),
        ("EXPIRE", "a", "1000", "NX"), ("EXPIRE", "a", "10", "GT"), ("TTL", "a"),
        ("PERSIST", "a"), ("TTL", "a"), ("TTL", "missing"), ("EXISTS", "a", "a", "b"),
        ("DEL", "a", "b"), ("SET", "k", "v", "EX", "0"), ("SET", "k", "v", "PX", "x"),
        ("SET", "k", "v", "NX", "XX"), ("GETEX", "k", "PERSIST"), ("SETNX", "k", "1"),
        ("DECRBY", "k", "1"), ("PING",), ("INCRBY", "n", str(2**63 - 1)), ("INCR", "n"),
    ]
    with shmkv.Store.create(name, slots=256) as st:
        for args in script:
            want = outcome(lambda: raw_command(redis_client, *args))
            got = outcome(lambda: st.execute_command(*args))
            if got[0] == "ok" and isinstance(got[1], str):  # status: "OK"
                got = (got[0], got[1].encode())
            assert got == want, args
