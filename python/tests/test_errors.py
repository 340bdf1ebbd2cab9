"""Each exception class: raised for its condition, with its errno and a
message that names the condition (and the limit where there is one)."""

import errno
import os
import struct

import pytest

import shmkv
from conftest import unique_name, remove_quietly

SHM = "/dev/shm"


def test_the_hierarchy():
    assert issubclass(shmkv.Error, OSError)
    for cls in (
        shmkv.NoSuchStore, shmkv.StoreExists, shmkv.StoreRemoved, shmkv.StoreFull,
        shmkv.OutOfMemory, shmkv.KeyTooLong, shmkv.ValueTooLong, shmkv.NotAnInteger,
        shmkv.IntegerOverflow, shmkv.CorruptStore, shmkv.WrongLayout, shmkv.NotAStore,
        shmkv.PermissionDenied, shmkv.ReadOnlyStore, shmkv.InvalidArgument,
        shmkv.Contended, shmkv.WrongNamespace, shmkv.Unsupported, shmkv.LockTimeout,
        shmkv.NotLockHolder, shmkv.LockBusy, shmkv.LockAlreadyHeld, shmkv.WrongLockKind,
        shmkv.ResponseError, shmkv.OperationNotPermitted, shmkv.BufferTooSmall,
    ):
        assert issubclass(cls, shmkv.Error), cls
    assert issubclass(shmkv.LockTimeout, TimeoutError)
    assert issubclass(shmkv.NoSuchStore, FileNotFoundError)
    assert issubclass(shmkv.PermissionDenied, PermissionError)
    assert issubclass(shmkv.InvalidArgument, ValueError)


def test_key_too_long_names_the_limit(store):
    with pytest.raises(shmkv.KeyTooLong) as e:
        store.set("k" * 70, "v")
    assert e.value.errno == errno.ENAMETOOLONG
    assert e.value.strerror == "key is 70 bytes, this store's key_max is 64"
    for call in (store.get, store.getdel, store.ttl, store.persist, store.incr):
        with pytest.raises(shmkv.KeyTooLong):
            call("é" * 40)  # 80 bytes in UTF-8
    with pytest.raises(shmkv.KeyTooLong):
        store.delete("k", "x" * 65)
    store.set("k" * 64, "fits")
    assert store.get("k" * 64) == b"fits"


def test_value_too_long_names_the_limit(store):
    with pytest.raises(shmkv.ValueTooLong) as e:
        store.set("k", b"v" * 5000)
    assert e.value.errno == errno.E2BIG
    assert e.value.strerror == "value is 5000 bytes, this store's value_max is 4096"
    with pytest.raises(shmkv.ValueTooLong):
        store.getset("k", b"v" * 4097)
    assert store.get("k") is None
    store.set("k", b"v" * 4096)


def test_store_full_when_the_probe_window_is_full(name):
    with shmkv.Store.create(name, slots=16, probe_limit=2) as st:
        # the table doubles when it fills, unless max_memory forbids it
        st.set_max_memory(st.info()["memory_bytes"])
        with pytest.raises(shmkv.StoreFull) as e:
            for i in range(100):
                st.set("key%d" % i, i)
        assert e.value.errno == errno.ENOSPC
        n = len(st)
        assert 0 < n < 100
        assert st.check() == []


def test_out_of_memory_within_max_memory(name):
    st = shmkv.Store.create(name, slots=1024, value_max=65536)
    st.set_max_memory(st.info()["memory_bytes"])
    with pytest.raises(shmkv.OutOfMemory) as e:
        for i in range(1000):
            st.set("k%d" % i, b"x" * 60000)
    assert e.value.errno == errno.ENOMEM
    assert isinstance(e.value, MemoryError)
    assert st.check() == []
    st.close()


def _make_closed_store(name):
    shmkv.Store.create(name, slots=64).close()
    return SHM + name


def _poke(path, offset, fmt, value):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, value))


def test_wrong_layout_version(name):
    path = _make_closed_store(name)
    _poke(path, 8, "<I", 0xFFFF)  # shmkv_header_shm.layout_version
    with pytest.raises(shmkv.WrongLayout) as e:
        shmkv.Store.open(name)
    assert e.value.errno == errno.EPROTONOSUPPORT
    os.unlink(path)


def test_corrupt_header(name):
    path = _make_closed_store(name)
    _poke(path, 48, "<I", 255)  # shmkv_header_shm.slot_count: not 2^n
    with pytest.raises(shmkv.CorruptStore) as e:
        shmkv.Store.open(name)
    assert e.value.errno == errno.EBADMSG
    os.unlink(path)


def test_not_a_store():
    n = unique_name("junk")
    with open(SHM + n, "wb") as f:
        f.write(b"not a shmkv store" * 1000)
    try:
        with pytest.raises(shmkv.NotAStore) as e:
            shmkv.Store.open(n)
        assert e.value.errno == errno.EPROTO
        with pytest.raises(shmkv.NotAStore):
            shmkv.Store.remove(n)
        assert os.path.exists(SHM + n)  # left alone
    finally:
        os.unlink(SHM + n)


def _as_nobody(fn):
    """Runs fn() in a child that dropped to uid/gid 65534; its result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            out = fn()
        except BaseException as ex:  # noqa: BLE001 - reported to the parent
            out = "%s %s" % (type(ex).__name__, getattr(ex, "errno", None))
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    got = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return got


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another uid")
def test_permission_denied(name):
    _make_closed_store(name)  # mode 0600, owned by root

    def try_open():
        shmkv.Store.open(name)
        return "opened"

    assert _as_nobody(try_open) == "PermissionDenied %d" % errno.EACCES


def test_permission_denied_without_root(name):
    if os.geteuid() == 0:
        # root reads every file: drop the rights in a child instead
        test_permission_denied(name)
        return
    st = shmkv.Store.create(name, slots=64, mode=0o200)
    st.close()
    with pytest.raises(shmkv.PermissionDenied) as e:
        shmkv.Store.open(name)
    assert e.value.errno == errno.EACCES


def test_errors_change_nothing(store):
    store.set("k", "v", ex=100)
    with pytest.raises(shmkv.InvalidArgument):
        store.set("k", "w", nx=True, xx=True)
    with pytest.raises(shmkv.ValueTooLong):
        store.set("k", b"w" * 5000)
    assert store.get("k") == b"v"
    assert store.ttl("k") > 0
