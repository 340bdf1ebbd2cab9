"""A Redis URI's password shows nowhere: not in Store.name, repr(), nor
in any exception of create/open/open_or_create/remove, for well-formed
URIs and for ones the library refuses (a password with a raw '/', '?',
'#' or '@'). The passwords are made of the pairs QZ, XJ and KV, which
nothing else here prints."""

import signal

import pytest

import redis_proc
import shmkv

SECRET_PARTS = ("QZ", "XJ", "KV")


def assert_hidden(text):
    for part in SECRET_PARTS:
        assert part not in text, text


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = redis_proc.start(tmp_path_factory.mktemp("redis"),
                                  "--requirepass", "QZ/XJ")
    yield port
    redis_proc.stop(proc)


def test_name_and_repr_show_the_password_as_stars(server):
    uri = "redis://:QZ%%2FXJ@127.0.0.1:%d" % server
    with shmkv.Store.open(uri) as st:
        assert st.name == "redis://:***@127.0.0.1:%d" % server
        assert_hidden(repr(st))
        assert_hidden(repr(st.lock("job")))
        st.set("k", "v")
    assert_hidden(repr(st))  # closed


def test_errors_of_a_refused_password_hide_it(server):
    uri = "redis://:QZKV@127.0.0.1:%d" % server
    for make in (shmkv.Store.open, shmkv.Store.create,
                 shmkv.Store.open_or_create):
        with pytest.raises(shmkv.Error) as e:
            make(uri)
        assert_hidden(str(e.value))
        assert "***" in str(e.value)


def test_remove_errors_hide_the_password(server):
    uri = "redis://:QZ%%2FXJ@127.0.0.1:%d" % server
    with pytest.raises(shmkv.Error) as e:
        shmkv.Store.remove(uri)
    assert_hidden(str(e.value))
    with shmkv.Store.open(uri) as st:
        with pytest.raises(shmkv.Error) as e:
            st.remove()
        assert_hidden(str(e.value))


@pytest.mark.parametrize("uri", [
    "redis://:QZ/XJ@127.0.0.1:1",
    "redis://:QZ?XJ@127.0.0.1:1",
    "redis://:QZ#XJ@127.0.0.1:1",
    "redis://u:QZ@XJ@127.0.0.1:1",
    "redis://:QZXJ@127.0.0.1:1",
    "redis+unix://:QZ/XJ@/nonexistent/sock",
    "redis+cluster://:QZ,XJ@127.0.0.1:1",
    "redis://u:QZXJ",
    "rediss://:QZXJ@127.0.0.1:1",
])
def test_errors_of_a_malformed_or_unreachable_uri_hide_the_password(uri):
    for make in (shmkv.Store.open, shmkv.Store.create,
                 shmkv.Store.open_or_create, shmkv.Store.remove):
        with pytest.raises(shmkv.Error) as e:
            make(uri)
        assert_hidden(str(e.value))
        assert_hidden(repr(e.value))
