#!/usr/bin/python3
"""python_bench.py - ops/s from Python: the shmkv module beside what a
Python user would otherwise pick, in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py \
        [--quick] [--runs N] [--seconds S] [--csv PATH] [--procs 1,2]

Implementations (each a row of the CSV's "impl" column):
  shmkv        the module, a store of its own (default geometry)
  redis_tcp    redis-py to a redis-server this program starts on a free
               loopback port (and stops by its pid)
  redis_unix   redis-py to the same server over its unix socket
  manager      multiprocessing.Manager(): a dict() and a Lock() proxy
  dict         a plain dict and a threading.Lock in this process, shared
               with nobody: the interpreter's own floor (1 process only)

Operations, one hot key, 16-byte values:
  GET, SET     get / set (Manager: d.get(k) / d[k] = v)
  INCR         incr (Manager: no atomic increment; `with lock: d[k] =
               d.get(k, 0) + 1`, the correct one across processes)
  lock         a lock's acquire + release: shmkv's safe lock as users
               write it (`with st.lock(name, lease_ms=5000): pass`),
               redis-py's Lock (SET NX PX, released by a Lua
               compare-and-delete: its default), the Manager's Lock()
  SETNX+DEL    setnx + delete (Manager: setdefault + pop, each one call)

A figure is the ops/s of one timed loop of about S seconds (batches of
calls, the clock read between batches: the Python loop is part of what a
user pays, so it is part of the figure), taken in interleaved rounds
(round r runs every case once, so a noisy spell of this shared machine
spreads over all of them); the CSV keeps the median, min and max over the
rounds. --procs 2 adds the throughput of a team of 2 processes (fork; each
its own handle or connection), same loops, from one start signal: the sum
of both processes' ops/s (SETNX+DEL is left out there: a loser's SETNX
fails, which is not a cycle).

Prints a table (a header in the form of the C programs': bench/run.sh and
bench/report.sh read "# date:"), and writes the CSV:
  impl,op,procs,ops_per_s,min,max,runs,seconds,cpu_ops_per_s
where cpu_ops_per_s is the median of ops per second of the timing thread's
CPU time (in a team: each member's, averaged): beside ops_per_s it shows
how much of the wall time the process had a core (for redis and the
Manager, whose work is mostly in their server, it is not a throughput).
"""
import argparse
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import shmkv

try:
    import redis
except ImportError:  # the table says so; shmkv and Manager still run
    redis = None

IMPLS = ("shmkv", "redis_tcp", "redis_unix", "manager", "dict")
OPS = ("GET", "SET", "INCR", "lock", "SETNX+DEL")
TEAM_OPS = ("GET", "SET", "INCR", "lock")
VALUE = b"v" * 16
BATCH = 64  # calls between two readings of the clock
LEASE_MS = 5000


# --- what each implementation does for each operation ------------------
# A case is a function run(n) doing n operations, made by setup(impl) in
# the process that times it (so a team member makes its own).

def shmkv_cases(name):
    st = shmkv.Store.open(name)
    get, set_, incr = st.get, st.set, st.incr
    setnx, delete, lock = st.setnx, st.delete, st.lock

    def get_(n):
        for _ in range(n):
            get(b"bench:k")

    def set__(n):
        for _ in range(n):
            set_(b"bench:k", VALUE)

    def incr_(n):
        for _ in range(n):
            incr(b"bench:n")

    def lock_(n):
        for _ in range(n):
            with lock("bench", lease_ms=LEASE_MS):
                pass

    def setnx_del(n):
        for _ in range(n):
            setnx(b"bench:l", b"1")
            delete(b"bench:l")

    return st, {"GET": get_, "SET": set__, "INCR": incr_, "lock": lock_,
                "SETNX+DEL": setnx_del}


def redis_cases(**conn):
    r = redis.Redis(**conn)
    get, set_, incr = r.get, r.set, r.incr
    setnx, delete = r.setnx, r.delete
    rlock = r.lock("bench:lock", timeout=LEASE_MS / 1000)

    def get_(n):
        for _ in range(n):
            get(b"bench:k")

    def set__(n):
        for _ in range(n):
            set_(b"bench:k", VALUE)

    def incr_(n):
        for _ in range(n):
            incr(b"bench:n")

    def lock_(n):
        for _ in range(n):
            with rlock:
                pass

    def setnx_del(n):
        for _ in range(n):
            setnx(b"bench:l", b"1")
            delete(b"bench:l")

    return r, {"GET": get_, "SET": set__, "INCR": incr_, "lock": lock_,
               "SETNX+DEL": setnx_del}


def manager_cases(d, mlock):
    get = d.get

    def get_(n):
        for _ in range(n):
            get(b"bench:k")

    def set__(n):
        for _ in range(n):
            d[b"bench:k"] = VALUE

    def incr_(n):
        for _ in range(n):
            with mlock:
                d[b"bench:n"] = d.get(b"bench:n", 0) + 1

    def lock_(n):
        for _ in range(n):
            with mlock:
                pass

    def setnx_del(n):
        for _ in range(n):
            d.setdefault(b"bench:l", b"1")
            d.pop(b"bench:l", None)

    return None, {"GET": get_, "SET": set__, "INCR": incr_, "lock": lock_,
                  "SETNX+DEL": setnx_del}


def dict_cases():
    d = {b"bench:k": VALUE}
    tlock = threading.Lock()
    get = d.get

    def get_(n):
        for _ in range(n):
            get(b"bench:k")

    def set__(n):
        for _ in range(n):
            d[b"bench:k"] = VALUE

    def incr_(n):
        for _ in range(n):
            d[b"bench:n"] = d.get(b"bench:n", 0) + 1

    def lock_(n):
        for _ in range(n):
            with tlock:
                pass

    def setnx_del(n):
        for _ in range(n):
            d.setdefault(b"bench:l", b"1")
            d.pop(b"bench:l", None)

    return None, {"GET": get_, "SET": set__, "INCR": incr_, "lock": lock_,
                  "SETNX+DEL": setnx_del}


class Env:
    """The store, the server and the manager every case uses."""

    def __init__(self):
        self.name = f"/bench-python-{os.getpid()}"
        self.store = shmkv.Store.create(self.name)
        self.store.set(b"bench:k", VALUE)
        self.tmp = tempfile.mkdtemp(prefix="shmkv-pybench-")
        self.server = None
        self.port = None
        self.sock = os.path.join(self.tmp, "redis.sock")
        if redis is not None and shutil.which("redis-server"):
            self.start_redis()
        self.manager = multiprocessing.Manager()
        self.mdict = self.manager.dict()
        self.mlock = self.manager.Lock()
        self.mdict[b"bench:k"] = VALUE

    def start_redis(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.server = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--unixsocket", self.sock, "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--dir", self.tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = redis.Redis(host="127.0.0.1", port=self.port)
        for _ in range(500):
            try:
                if r.ping() and os.path.exists(self.sock):
                    break
            except redis.exceptions.ConnectionError:
                pass
            if self.server.poll() is not None:
                break
            time.sleep(0.01)
        else:
            self.server.kill()
        if self.server.poll() is not None:
            print("# redis-server did not start: no Redis rows",
                  file=sys.stderr)
            self.server = None
            return
        r.set(b"bench:k", VALUE)
        r.close()

    def impls(self):
        return [i for i in IMPLS if self.server or not i.startswith("redis")]

    def cases(self, impl):
        """(handle to close or None, {op: run(n)}) for @impl, this process."""
        if impl == "shmkv":
            return shmkv_cases(self.name)
        if impl == "redis_tcp":
            return redis_cases(host="127.0.0.1", port=self.port)
        if impl == "redis_unix":
            return redis_cases(unix_socket_path=self.sock)
        if impl == "dict":
            return dict_cases()
        return manager_cases(self.mdict, self.mlock)

    def close(self):
        if self.server is not None:
            self.server.terminate()
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self.manager.shutdown()
        self.store.close()
        shmkv.Store.remove(self.name)
        shutil.rmtree(self.tmp, ignore_errors=True)


def timed(run, seconds):
    """Runs @run in batches for about @seconds; returns (ops per second,
    ops per second of this thread's CPU time)."""
    clock = time.perf_counter
    ops = 0
    c0 = time.thread_time()
    t0 = clock()
    end = t0 + seconds
    while True:
        run(BATCH)
        ops += BATCH
        t = clock()
        if t >= end:
            cpu = time.thread_time() - c0
            return ops / (t - t0), ops / cpu if cpu > 0 else 0.0


def team_member(env, impl, op, seconds, go, out):
    handle, cases = env.cases(impl)
    cases[op](BATCH)  # warm: connect, load scripts
    go.wait()
    out.put(timed(cases[op], seconds))
    if handle is not None:
        handle.close()


def team(env, impl, op, seconds, procs):
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    members = [ctx.Process(target=team_member,
                           args=(env, impl, op, seconds, go, out))
               for _ in range(procs)]
    for m in members:
        m.start()
    time.sleep(0.05)  # every member connected and warm
    go.set()
    rates = [out.get(timeout=60 + seconds) for _ in members]
    for m in members:
        m.join(30)
        if m.exitcode != 0:
            raise RuntimeError(f"team member {impl} {op} exited "
                               f"{m.exitcode}")
    # The team's ops/s; each member's per CPU-second, averaged.
    return (sum(w for w, _ in rates),
            sum(c for _, c in rates) / len(rates))


def machine_header(args):
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rv = "-"
    if shutil.which("redis-server"):
        rv = subprocess.run(["redis-server", "--version"],
                            capture_output=True, text=True).stdout.strip()
    print(f"# cpu: {cpu}")
    print(f"# cores: {os.cpu_count()} online")
    print(f"# kernel: {platform.system()} {platform.release()} "
          f"{platform.machine()}")
    print(f"# date: {date}, load average {load}")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mod = os.path.abspath(shmkv.__file__)
    if mod.startswith(root + os.sep):
        mod = os.path.relpath(mod, root)
    print(f"# python: {platform.python_version()} ({sys.executable}); "
          f"shmkv module {mod}")
    print(f"# redis-py: {redis.__version__ if redis else 'not installed'}; "
          f"{rv}")
    print(f"# multiprocessing start method: "
          f"{multiprocessing.get_start_method()}")
    print(f"# {args.runs} rounds of {args.seconds} s per case; procs "
          f"{','.join(map(str, args.procs))}")


def fmt(v):
    return f"{v:,.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--csv")
    ap.add_argument("--procs", default="1,2")
    args = ap.parse_args()
    args.runs = args.runs or (2 if args.quick else 5)
    args.seconds = args.seconds or (0.03 if args.quick else 0.25)
    args.procs = [int(p) for p in args.procs.split(",")]
    machine_header(args)
    sys.stdout.flush()

    env = Env()
    try:
        impls = env.impls()
        local = {i: env.cases(i) for i in impls}
        for i in impls:  # warm: connect, load Lua, first touch
            for op in OPS:
                local[i][1][op](BATCH)
        rates, cpu = {}, {}
        for r in range(args.runs):
            for procs in args.procs:
                for op in (OPS if procs == 1 else TEAM_OPS):
                    for i in impls:
                        if procs > 1 and i == "dict":
                            continue  # shared with nobody: no team
                        if procs == 1:
                            v, c = timed(local[i][1][op], args.seconds)
                        else:
                            v, c = team(env, i, op, args.seconds, procs)
                        rates.setdefault((i, op, procs), []).append(v)
                        cpu.setdefault((i, op, procs), []).append(c)
            if sys.stderr.isatty():
                print(f"\r# round {r + 1}/{args.runs} done",
                      end="\n" if r + 1 == args.runs else "",
                      file=sys.stderr)
        for h, _ in local.values():
            if h is not None:
                h.close()
    finally:
        env.close()

    rows = []
    for (i, op, procs), v in rates.items():
        rows.append((i, op, procs, statistics.median(v), min(v), max(v),
                     len(v), args.seconds,
                     statistics.median(cpu[(i, op, procs)])))
    print()
    for procs in args.procs:
        print(f"ops/s, {procs} process{'es' if procs > 1 else ''} "
              "(median [min-max]; in brackets: / redis_tcp's median)")
        cols = [i for i in impls if any((i, op, procs) in rates
                                        for op in OPS)]
        table = [["op"] + cols]
        for op in (OPS if procs == 1 else TEAM_OPS):
            base = rates.get(("redis_tcp", op, procs))
            line = [op]
            for i in cols:
                v = rates.get((i, op, procs))
                if v is None:
                    line.append("-")
                    continue
                m = statistics.median(v)
                ratio = (f" ({m / statistics.median(base):.2f}x)"
                         if base else "")
                line.append(f"{fmt(m)} [{fmt(min(v))}-{fmt(max(v))}]{ratio}")
            table.append(line)
        width = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
        for r in table:
            print(r[0].ljust(width[0]) + "".join(
                "  " + x.rjust(w) for x, w in zip(r[1:], width[1:])))
        print()
    if args.csv:
        with open(args.csv + ".tmp", "w") as f:
            f.write("impl,op,procs,ops_per_s,min,max,runs,seconds,"
                    "cpu_ops_per_s\n")
            for row in rows:
                f.write("%s,%s,%d,%.1f,%.1f,%.1f,%d,%g,%.1f\n" % row)
        os.replace(args.csv + ".tmp", args.csv)
    return 0


if __name__ == "__main__":
    # A bench killed by a signal still stops its server and store.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
