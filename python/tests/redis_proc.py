"""redis_proc - a private redis-server for a test module (not a test):
started on a free loopback port with no persistence, stopped by pid.
"""

import os
import shutil
import socket
import subprocess
import time


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port):
    # Any reply will do: with requirepass, PING answers -NOAUTH.
    try:
        with socket.create_connection(("127.0.0.1", port), 0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16)[:1] in (b"+", b"-")
    except OSError:
        return False


def start(directory, *extra):
    """(process, port) of a fresh redis-server with @extra arguments.
    Raises RuntimeError if none would start (`make deps` installs one)."""
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.access(server, os.X_OK):
        raise RuntimeError("redis-server missing: run make deps")
    for _ in range(3):  # a port another process took meanwhile: again
        port = _free_port()
        proc = subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--save",
             "", "--appendonly", "no", "--dir", str(directory), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if proc.poll() is not None or _answers(port):
                break
            time.sleep(0.01)
        if proc.poll() is None and _answers(port):
            return proc, port
        proc.kill()
        proc.wait(10)
    raise RuntimeError("redis-server would not start")


def stop(proc):
    proc.kill()
    proc.wait(10)
