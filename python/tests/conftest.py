"""Shared fixtures of the shmkv module's tests.

The module under test is the one `make python` built into $BUILD/python
(BUILD defaults to build/), unless SHMKV_TEST_INSTALLED=1 says to use
whatever `import shmkv` finds (an installed one). Every store is named
uniquely per test (pid + counter) and removed afterwards.
"""

import itertools
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))

if os.environ.get("SHMKV_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(BUILD, "python"))

import shmkv  # noqa: E402

_counter = itertools.count()


def unique_name(tag="t"):
    """A store name no other test (or test run) uses: pid + counter."""
    return "/shmkv-py-%s-%d-%d" % (tag, os.getpid(), next(_counter))


def remove_quietly(name):
    try:
        shmkv.Store.remove(name)
    except shmkv.NoSuchStore:
        pass


@pytest.fixture
def name():
    """A fresh store name, removed after the test if it was created."""
    n = unique_name()
    yield n
    remove_quietly(n)


@pytest.fixture
def store(name):
    """A small fresh store (1024 slots, key_max 64, value_max 4096)."""
    st = shmkv.Store.create(name, slots=1024, value_max=4096)
    yield st
    st.close()
