"""Store lifecycle: create, open, open_or_create, close, remove."""

import errno
import os
import stat

import pytest

import shmkv
from conftest import unique_name, remove_quietly


def test_create_then_open_sees_the_same_data(name):
    with shmkv.Store.create(name, slots=256) as a:
        a.set("k", "v")
        with shmkv.Store.open(name) as b:
            assert b.get("k") == b"v"
            b.set("k", "w")
        assert a.get("k") == b"w"


def test_create_takes_every_setting(name):
    st = shmkv.Store.create(
        name,
        slots=512,
        key_max=100,
        value_max=2048,
        memory=1 << 20,
        max_memory=64 << 20,
        mode=0o640,
        probe_limit=64,
        evict_policy="allkeys-lru",
    )
    cfg = st.config()
    assert cfg["slots"] == 512
    assert cfg["key_max"] == 100
    assert cfg["value_max"] == 2048
    assert cfg["probe_limit"] == 64
    assert cfg["max_memory"] == 64 << 20
    assert cfg["mode"] == 0o640
    assert cfg["evict_policy"] == "allkeys-lru"
    assert cfg["huge_pages"] is False
    assert st.key_max == 100 and st.value_max == 2048
    assert stat.S_IMODE(os.stat("/dev/shm" + name).st_mode) == 0o640
    st.close()


def test_huge_pages_is_recorded(name):
    with shmkv.Store.create(name, slots=64, huge_pages=True) as st:
        assert st.config()["huge_pages"] is True
        assert st.huge_mapped() >= 0


def test_create_refuses_an_existing_name(name):
    with shmkv.Store.create(name, slots=64):
        with pytest.raises(shmkv.StoreExists) as e:
            shmkv.Store.create(name, slots=64)
    assert e.value.errno == errno.EEXIST
    assert isinstance(e.value, FileExistsError)
    assert name in str(e.value)


def test_open_of_a_missing_store_is_nosuchstore():
    n = unique_name("missing")
    with pytest.raises(shmkv.NoSuchStore) as e:
        shmkv.Store.open(n)
    assert e.value.errno == errno.ENOENT
    assert isinstance(e.value, FileNotFoundError)
    assert e.value.strerror == "open %s: %s" % (n, shmkv.strerror(errno.ENOENT))


def test_open_or_create_creates_then_opens_keeping_the_geometry(name):
    with shmkv.Store.open_or_create(name, slots=128) as a:
        a["x"] = 1
        with shmkv.Store.open_or_create(name, slots=4096) as b:
            assert b.config()["slots"] == 128
            assert b["x"] == b"1"


def test_a_name_without_slash_is_the_same_store(name):
    with shmkv.Store.create(name.lstrip("/"), slots=64) as st:
        assert st.name == name
        st.set("a", "b")
    with shmkv.Store.open(name) as st:
        assert st.get("a") == b"b"


def test_readonly_handle_refuses_writes(store, name):
    store.set("k", "v")
    with shmkv.Store.open(name, readonly=True) as ro:
        assert ro.readonly
        assert ro.get("k") == b"v"
        with pytest.raises(shmkv.ReadOnlyStore) as e:
            ro.set("k", "w")
        assert e.value.errno == errno.EROFS
        with pytest.raises(shmkv.ReadOnlyStore):
            ro.execute_command("SET", "k", "w")
    assert store.get("k") == b"v"


def test_close_is_idempotent_and_commands_then_fail(name):
    st = shmkv.Store.create(name, slots=64)
    assert not st.closed
    st.close()
    st.close()
    assert st.closed
    with pytest.raises(shmkv.Error) as e:
        st.get("k")
    assert e.value.errno == errno.EBADF
    assert "closed" in str(e.value)
    assert "closed" in repr(st)


def test_context_manager_closes(name):
    with shmkv.Store.create(name, slots=64) as st:
        assert not st.closed
    assert st.closed


def test_remove_on_the_class_and_on_a_store():
    a, b = unique_name("rm"), unique_name("rm")
    try:
        shmkv.Store.create(a, slots=64).close()
        shmkv.Store.remove(a)
        assert not os.path.exists("/dev/shm" + a)
        with pytest.raises(shmkv.NoSuchStore):
            shmkv.Store.remove(a)
        st = shmkv.Store.create(b, slots=64)
        st.set("k", "v")
        st.remove()
        # every handle is told: no write goes on into a removed store
        with pytest.raises(shmkv.StoreRemoved) as e:
            st.get("k")
        assert e.value.errno == errno.ESTALE
        assert b in str(e.value)
        st.close()
        with pytest.raises(TypeError):
            shmkv.Store.remove()
    finally:
        remove_quietly(a)
        remove_quietly(b)


def test_bad_geometry_is_invalidargument(name):
    with pytest.raises(shmkv.InvalidArgument) as e:
        shmkv.Store.create(name, slots=1000)  # not a power of two
    assert e.value.errno == errno.EINVAL
    assert isinstance(e.value, ValueError)
    with pytest.raises(shmkv.InvalidArgument):
        shmkv.Store.create(name, slots=0)
    with pytest.raises(shmkv.InvalidArgument):
        shmkv.Store.create(name, evict_policy="sometimes")
    with pytest.raises(shmkv.InvalidArgument):
        shmkv.Store.create(name, mode=0o1777)
    assert not os.path.exists("/dev/shm" + name)


def test_a_uri_without_backend_is_unsupported():
    # redis:// has a backend now (python/tests/test_redis_backend.py);
    # memcached:// has none.
    with pytest.raises(shmkv.Unsupported) as e:
        shmkv.Store.open("memcached://localhost/0")
    assert e.value.errno == errno.EAFNOSUPPORT


def test_names_must_be_str():
    with pytest.raises(TypeError):
        shmkv.Store.open(b"/x")


def test_repr_names_the_store(store, name):
    assert repr(store) == "<shmkv.Store %r>" % name


def test_version_and_strerror():
    assert shmkv.__version__ == shmkv.library_version()
    assert shmkv.strerror(errno.ENOSPC) == shmkv.strerror(-errno.ENOSPC)
    assert shmkv.strerror(errno.ENOSPC)
