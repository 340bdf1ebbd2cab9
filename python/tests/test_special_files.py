"""A name in /dev/shm that is not a regular file (a FIFO anyone may make
under a store's name) is no store: Store.open, read-only or not, and
Store.remove raise NotAStore at once and leave it in place. Each call
runs in a child interpreter with a timeout, so a call that waits on the
FIFO fails the test instead of hanging it."""

import os
import subprocess
import sys

import pytest

from conftest import BUILD, unique_name

SHM = "/dev/shm"

CALL = """
import sys
sys.path.insert(0, sys.argv[1])
import shmkv
name, how = sys.argv[2], sys.argv[3]
try:
    if how == "readonly":
        shmkv.Store.open(name, readonly=True)
    elif how == "readwrite":
        shmkv.Store.open(name)
    else:
        shmkv.Store.remove(name)
except shmkv.NotAStore:
    sys.exit(0)
sys.exit(1)
"""


@pytest.fixture
def fifo_name():
    name = unique_name("fifo")
    path = SHM + name
    os.mkfifo(path, 0o666)
    yield name
    os.unlink(path)


@pytest.mark.parametrize("how", ["readonly", "readwrite", "remove"])
def test_a_fifo_is_not_a_store_and_nothing_waits_on_it(fifo_name, how):
    try:
        done = subprocess.run(
            [sys.executable, "-c", CALL, os.path.join(BUILD, "python"), fifo_name, how],
            timeout=10,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("%s of a FIFO waited on it" % how)
    assert done.returncode == 0, "%s of a FIFO did not raise NotAStore" % how
    assert os.path.exists(SHM + fifo_name), "the FIFO was removed"
