"""Names the library takes as C strings (store names, lock names, policy
names) are refused with ValueError when they hold a NUL: cut there,
"job\\0one", "job\\0two" and "job" would all be the lock "job"."""

import pytest

import shmkv


def test_a_lock_name_with_a_nul_is_refused(store):
    for bad in ("job\0one", "job\0two", "\0", "job\0"):
        with pytest.raises(ValueError, match="NUL"):
            store.lock(bad)
    with store.lock("job", timeout=0):  # the name they would have been
        pass


def test_a_pattern_lock_name_with_a_nul_is_refused(store):
    for bad in ("job\0one", "job\0"):
        with pytest.raises(ValueError, match="NUL"):
            store.pattern_lock(bad)


def test_locks_whose_names_differ_after_a_nul_are_never_one_lock(store):
    with store.lock("job", timeout=0):
        with pytest.raises(ValueError):
            store.lock("job\0two", timeout=0).acquire(blocking=False)


def test_a_store_name_with_a_nul_is_refused(name):
    for make in (shmkv.Store.create, shmkv.Store.open,
                 shmkv.Store.open_or_create, shmkv.Store.remove):
        with pytest.raises(ValueError, match="NUL"):
            make(name + "\0x")


def test_a_policy_name_with_a_nul_is_refused(store, name):
    with pytest.raises(shmkv.InvalidArgument):
        store.set_evict_policy("allkeys-lru\0x")
    store.set_evict_policy("allkeys-lru")
    with pytest.raises(shmkv.InvalidArgument):
        shmkv.Store.create(name, evict_policy="allkeys-lru\0x")
