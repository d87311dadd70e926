#!/usr/bin/python3
"""kazoo as a peer process for zkr's interop tests (the lock commands of CuratorTool.java, and
kazoo's Queue, read-write lock, Semaphore, Counter, Party, ShallowParty, Election and leases).

Run by zkr-testing's `peers::KazooTool`; usable by hand too:

    /usr/bin/python3 kazoo_tool.py lock 127.0.0.1:2181 /locks/a 3 100

Output: one line per event on stdout, flushed at once. <t_us> is time.monotonic_ns() // 1000
(CLOCK_MONOTONIC, the clock of Java's System.nanoTime() on Linux, so comparable between
processes on one machine). Commands:

    lock CONNECT PATH ROUNDS HOLD_MS   ACQUIRED <r> <t_us>, RELEASING <r> <t_us> per round; DONE
    hold CONNECT PATH [KIND]           HELD <own lock node>; on stdin `release` or EOF: RELEASED.
                                       KIND: lock (the default), read (ReadLock), write (WriteLock)
    try CONNECT PATH TIMEOUT_MS [KIND] ACQUIRED | NOT_ACQUIRED
    semaphore-hold CONNECT PATH ID MAX Semaphore(PATH, ID, MAX).acquire(): HELD; on stdin `release`
                                       or EOF: RELEASED
    semaphore-try CONNECT PATH ID MAX TIMEOUT_MS
                                       ACQUIRED (then released) | NOT_ACQUIRED
    semaphore-holders CONNECT PATH MAX HOLDERS <lease_holders(), sorted, comma-separated>
    counter CONNECT PATH FORMAT DELTA N
                                       Counter += DELTA, N times; FORMAT int, float or curator
                                       (support_curator=True): RESULT value=<counter.value>
    party CONNECT PATH ID deep|shallow Party/ShallowParty.join(): JOINED; per stdin line `members`:
                                       MEMBERS <sorted, comma-separated>; `leave` or EOF: LEFT
    elect CONNECT PATH ID              Election.run(): LEADING when it leads; on stdin `resign` or
                                       EOF the function returns: RESIGNED
    contenders CONNECT PATH            CONTENDERS <Election.contenders(), in order, comma-separated>
    lease CONNECT PATH SECONDS ID      NonBlockingLease(PATH, timedelta(seconds=SECONDS), ID):
                                       OBTAINED | NOT_OBTAINED (SECONDS may be negative)
    multi-lease CONNECT COUNT PATH SECONDS ID
                                       MultiNonBlockingLease: OBTAINED | NOT_OBTAINED
    queue-put CONNECT PATH PREFIX N    kazoo's Queue.put of N items `<PREFIX>-<i>` (UTF-8, the default
                                       priority 100): RESULT count=N
    queue-get CONNECT PATH N           Queue.get until N items came (polling an empty queue every
                                       20 ms): ITEM <value> per item; RESULT count=N
    locking-put CONNECT PATH PRIORITY VALUE...
                                       LockingQueue.put of each VALUE (UTF-8) at PRIORITY:
                                       RESULT count=<values>
    locking-get CONNECT PATH N TIMEOUT_MS
                                       LockingQueue.get(TIMEOUT) then consume(), up to N times:
                                       ITEM <value> per item (NONE when a get timed out, then
                                       stops); RESULT count=<consumed>
    locking-hold CONNECT PATH TIMEOUT_MS
                                       LockingQueue.get(TIMEOUT): ITEM <value> | NONE; then on stdin
                                       `consume`: CONSUMED True|False; `release` or EOF:
                                       RELEASED True|False
    barrier CONNECT PATH create|remove|wait TIMEOUT_MS
                                       Barrier.create(): CREATED; remove(): REMOVED True|False;
                                       wait(TIMEOUT): CLEARED | NOT_CLEARED
    double-barrier CONNECT PATH N ID   DoubleBarrier(PATH, N, ID).enter(): ENTERED | NOT_ENTERED
                                       (kazoo swallows its errors); on stdin `leave` or EOF:
                                       leave(): LEFT
    checker-worker mutex CONNECT LOCK_PATH COUNTER_PATH ACQUIRE_MS SEED
                                       a worker of zkr's mutual-exclusion checker on kazoo's Lock,
                                       with the protocol of CuratorTool's (CheckerCommands.java):
                                       times in nanoseconds of CLOCK_MONOTONIC
    checker-worker counter CONNECT PATH
                                       a worker of zkr's counter checker on kazoo's Counter, with
                                       zkr-id-worker's lines (kazoo_checker.py)

Exit status: 0 success, 1 error (message on stderr), 2 bad arguments, 3 the parent process went
away. Session timeout: kazoo's default (10 s), or $ZKR_PEER_SESSION_MS.
"""

import datetime
import logging
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

import kazoo_checker  # the checker workers, beside this file

CONNECTION_TIMEOUT_S = 15.0
SESSION_ENV = "ZKR_PEER_SESSION_MS"
USAGE = ("usage: kazoo_tool.py lock CONNECT PATH ROUNDS HOLD_MS | hold CONNECT PATH [KIND]"
         " | try CONNECT PATH TIMEOUT_MS [KIND]"
         " | partition CONNECT PATH ITEM[,ITEM...] IDENTIFIER TIME_BOUNDARY_MS"
         " | queue-put CONNECT PATH PREFIX N | queue-get CONNECT PATH N"
         " | semaphore-hold CONNECT PATH ID MAX | semaphore-try CONNECT PATH ID MAX TIMEOUT_MS"
         " | semaphore-holders CONNECT PATH MAX | counter CONNECT PATH FORMAT DELTA N"
         " | party CONNECT PATH ID deep|shallow | elect CONNECT PATH ID | contenders CONNECT PATH"
         " | lease CONNECT PATH SECONDS ID | multi-lease CONNECT COUNT PATH SECONDS ID"
         " | locking-put CONNECT PATH PRIORITY VALUE... | locking-get CONNECT PATH N TIMEOUT_MS"
         " | locking-hold CONNECT PATH TIMEOUT_MS | barrier CONNECT PATH create|remove|wait TIMEOUT_MS"
         " | double-barrier CONNECT PATH N ID"
         " | checker-worker mutex CONNECT LOCK_PATH COUNTER_PATH ACQUIRE_MS SEED"
         " | checker-worker counter CONNECT PATH")
LOCK_KINDS = ("lock", "read", "write")

_clients = []


class UsageError(Exception):
    """Bad command-line arguments (exit status 2)."""


_out_lock = threading.Lock()


def out(line):
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def micros():
    return time.monotonic_ns() // 1000


def non_negative_int(value, name):
    try:
        v = int(value)
    except ValueError:
        v = -1
    if v < 0:
        raise UsageError("%s must be a non-negative integer, not `%s`" % (name, value))
    return v


def connect(hosts):
    kwargs = {}
    session = os.environ.get(SESSION_ENV, "").strip()
    if session:
        ms = non_negative_int(session, SESSION_ENV)
        if ms == 0:
            raise UsageError("%s must be positive" % SESSION_ENV)
        kwargs["timeout"] = ms / 1000.0
    client = KazooClient(hosts=hosts, **kwargs)
    _clients.append(client)
    client.start(timeout=CONNECTION_TIMEOUT_S)
    return client


def identifier():
    return "kazoo-%d" % os.getpid()


def close_clients():
    while _clients:
        client = _clients.pop()
        try:
            client.stop()
            client.close()
        except Exception:  # best effort: the process is exiting
            pass


def watch_parent():
    """Exits (status 3) when the process that started us goes away."""
    parent = os.getppid()
    if parent <= 1:
        return

    def run():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                sys.stderr.write("kazoo_tool: parent process %d went away; exiting\n" % parent)
                sys.stderr.flush()
                closer = threading.Thread(target=close_clients, daemon=True)
                closer.start()
                closer.join(2.0)
                os._exit(3)

    threading.Thread(target=run, name="parent-watch", daemon=True).start()


def cmd_lock(hosts, path, rounds, hold_ms):
    client = connect(hosts)
    lock = client.Lock(path, identifier())
    for r in range(rounds):
        lock.acquire()
        out("ACQUIRED %d %d" % (r, micros()))
        time.sleep(hold_ms / 1000.0)
        out("RELEASING %d %d" % (r, micros()))
        lock.release()
    out("DONE")


def make_lock(client, path, kind):
    if kind == "read":
        return client.ReadLock(path, identifier())
    if kind == "write":
        return client.WriteLock(path, identifier())
    return client.Lock(path, identifier())


def wait_for_stdin(word):
    """Returns on a stdin line `word`, or at EOF."""
    for line in sys.stdin:
        if line.strip() == word:
            return


def cmd_hold(hosts, path, kind="lock"):
    client = connect(hosts)
    lock = make_lock(client, path, kind)
    lock.acquire()
    out("HELD %s/%s" % (lock.path, lock.node))
    for line in sys.stdin:
        if line.strip() == "release":
            break
    lock.release()
    out("RELEASED")


def cmd_try(hosts, path, timeout_ms, kind="lock"):
    client = connect(hosts)
    lock = make_lock(client, path, kind)
    try:
        acquired = lock.acquire(timeout=timeout_ms / 1000.0)
    except LockTimeout:
        acquired = False
    if acquired:
        out("ACQUIRED")
        lock.release()
    else:
        out("NOT_ACQUIRED")


def cmd_partition(hosts, path, items, ident, boundary_ms):
    """A SetPartitioner member: ACQUIRED <items, comma-separated> on every acquisition,
    RELEASE when asked to let go (then it releases and allocates again); until stdin EOF."""
    client = connect(hosts)
    done = threading.Event()

    def stdin_eof():
        for _ in sys.stdin:
            pass
        done.set()

    threading.Thread(target=stdin_eof, name="stdin-eof", daemon=True).start()
    partitioner = client.SetPartitioner(path, set=items.split(","), identifier=ident,
                                        time_boundary=boundary_ms / 1000.0)
    while not done.is_set():
        if partitioner.failed:
            raise RuntimeError("the partitioner failed")
        elif partitioner.release:
            out("RELEASE")
            partitioner.release_set()
        elif partitioner.acquired:
            out("ACQUIRED %s" % ",".join(sorted(partitioner)))
            while partitioner.acquired and not done.is_set():
                time.sleep(0.02)
        elif partitioner.allocating:
            partitioner.wait_for_acquire(timeout=0.2)
    partitioner.finish()


def cmd_queue_put(hosts, path, prefix, n):
    queue = connect(hosts).Queue(path)
    for i in range(n):
        queue.put(("%s-%d" % (prefix, i)).encode("utf-8"))
    out("RESULT count=%d" % n)


def cmd_queue_get(hosts, path, n):
    queue = connect(hosts).Queue(path)
    got = 0
    while got < n:
        data = queue.get()
        if data is None:
            time.sleep(0.02)
            continue
        out("ITEM %s" % data.decode("utf-8"))
        got += 1
    out("RESULT count=%d" % n)


def cmd_locking_put(hosts, path, priority, values):
    queue = connect(hosts).LockingQueue(path)
    for value in values:
        queue.put(value.encode("utf-8"), priority=priority)
    out("RESULT count=%d" % len(values))


def cmd_locking_get(hosts, path, n, timeout_ms):
    queue = connect(hosts).LockingQueue(path)
    consumed = 0
    while consumed < n:
        data = queue.get(timeout_ms / 1000.0)
        if data is None:
            out("NONE")
            break
        out("ITEM %s" % data.decode("utf-8"))
        if not queue.consume():
            raise RuntimeError("consume() found the lock gone")
        consumed += 1
    out("RESULT count=%d" % consumed)


def cmd_locking_hold(hosts, path, timeout_ms):
    queue = connect(hosts).LockingQueue(path)
    data = queue.get(timeout_ms / 1000.0)
    if data is None:
        out("NONE")
        return
    out("ITEM %s" % data.decode("utf-8"))
    for line in sys.stdin:
        word = line.strip()
        if word == "consume":
            out("CONSUMED %s" % queue.consume())
            return
        if word == "release":
            break
    out("RELEASED %s" % queue.release())


def cmd_barrier(hosts, path, action, timeout_ms):
    barrier = connect(hosts).Barrier(path)
    if action == "create":
        barrier.create()
        out("CREATED")
    elif action == "remove":
        out("REMOVED %s" % barrier.remove())
    elif action == "wait":
        out("CLEARED" if barrier.wait(timeout_ms / 1000.0) else "NOT_CLEARED")
    else:
        raise UsageError("the barrier action is create, remove or wait, not `%s`" % action)


def cmd_double_barrier(hosts, path, n, ident):
    barrier = connect(hosts).DoubleBarrier(path, n, ident)
    barrier.enter()
    out("ENTERED" if barrier.participating else "NOT_ENTERED")
    wait_for_stdin("leave")
    barrier.leave()
    out("LEFT")


def cmd_semaphore_hold(hosts, path, ident, max_leases):
    semaphore = connect(hosts).Semaphore(path, ident, max_leases=max_leases)
    semaphore.acquire()
    out("HELD")
    wait_for_stdin("release")
    semaphore.release()
    out("RELEASED")


def cmd_semaphore_try(hosts, path, ident, max_leases, timeout_ms):
    semaphore = connect(hosts).Semaphore(path, ident, max_leases=max_leases)
    try:
        acquired = semaphore.acquire(timeout=timeout_ms / 1000.0)
    except LockTimeout:
        acquired = False
    if acquired:
        out("ACQUIRED")
        semaphore.release()
    else:
        out("NOT_ACQUIRED")


def cmd_semaphore_holders(hosts, path, max_leases):
    semaphore = connect(hosts).Semaphore(path, "observer", max_leases=max_leases)
    out("HOLDERS %s" % ",".join(sorted(semaphore.lease_holders())))


def cmd_counter(hosts, path, fmt, delta, n):
    client = connect(hosts)
    if fmt == "float":
        counter = client.Counter(path, default=0.0)
        delta = float(delta)
    elif fmt in ("int", "curator"):
        counter = client.Counter(path, default=0, support_curator=(fmt == "curator"))
        delta = int(delta)
    else:
        raise UsageError("FORMAT is int, float or curator, not `%s`" % fmt)
    for _ in range(n):
        counter += delta
    out("RESULT value=%r" % (counter.value,))


def cmd_party(hosts, path, ident, kind):
    client = connect(hosts)
    if kind not in ("deep", "shallow"):
        raise UsageError("the party kind is deep or shallow, not `%s`" % kind)
    party = (client.ShallowParty if kind == "shallow" else client.Party)(path, ident)
    party.join()
    out("JOINED")
    for line in sys.stdin:
        word = line.strip()
        if word == "members":
            out("MEMBERS %s" % ",".join(sorted(party)))
        elif word == "leave":
            break
    party.leave()
    out("LEFT")


def cmd_elect(hosts, path, ident):
    election = connect(hosts).Election(path, ident)

    def lead():
        out("LEADING")
        wait_for_stdin("resign")

    election.run(lead)
    out("RESIGNED")


def cmd_contenders(hosts, path):
    election = connect(hosts).Election(path, "observer")
    out("CONTENDERS %s" % ",".join(election.contenders()))


def cmd_lease(hosts, path, seconds, ident):
    lease = connect(hosts).NonBlockingLease(path, datetime.timedelta(seconds=seconds), identifier=ident)
    out("OBTAINED" if lease else "NOT_OBTAINED")


def cmd_multi_lease(hosts, count, path, seconds, ident):
    lease = connect(hosts).MultiNonBlockingLease(count, path, datetime.timedelta(seconds=seconds),
                                                 identifier=ident)
    out("OBTAINED" if lease else "NOT_OBTAINED")


def number(value, name):
    try:
        return float(value)
    except ValueError:
        raise UsageError("%s must be a number, not `%s`" % (name, value))


def lock_kind(args, at):
    kind = args[at] if len(args) > at else "lock"
    if kind not in LOCK_KINDS:
        raise UsageError("KIND is lock, read or write, not `%s`" % kind)
    return kind


def run(argv):
    if not argv:
        raise UsageError("no command given")
    command, args = argv[0], argv[1:]
    arity = {"lock": (4,), "hold": (2, 3), "try": (3, 4), "partition": (5,), "queue-put": (4,),
             "queue-get": (3,), "semaphore-hold": (4,), "semaphore-try": (5,), "semaphore-holders": (3,),
             "counter": (5,), "party": (4,), "elect": (3,), "contenders": (2,), "lease": (4,),
             "multi-lease": (5,), "locking-get": (4,), "locking-hold": (3,), "barrier": (4,),
             "double-barrier": (4,)}
    if command == "checker-worker":
        if len(args) == 3 and args[0] == "counter":
            return kazoo_checker.counter_worker(connect(args[1]), out, args[2])
        if len(args) != 6 or args[0] != "mutex":
            raise UsageError("`checker-worker` takes mutex CONNECT LOCK_PATH COUNTER_PATH ACQUIRE_MS SEED"
                             " or counter CONNECT PATH")
        return kazoo_checker.mutex_worker(connect(args[1]), out, identifier(), args[2], args[3],
                                          non_negative_int(args[4], "ACQUIRE_MS"),
                                          non_negative_int(args[5], "SEED"))
    if command == "locking-put":
        if len(args) < 4:
            raise UsageError("`locking-put` takes CONNECT PATH PRIORITY and at least one VALUE")
        return cmd_locking_put(args[0], args[1], non_negative_int(args[2], "PRIORITY"), args[3:])
    if command not in arity:
        raise UsageError("unknown command `%s`" % command)
    if len(args) not in arity[command]:
        raise UsageError("`%s` takes %s arguments, got %d"
                         % (command, " or ".join(map(str, arity[command])), len(args)))
    if command == "lock":
        cmd_lock(args[0], args[1], non_negative_int(args[2], "ROUNDS"), non_negative_int(args[3], "HOLD_MS"))
    elif command == "hold":
        cmd_hold(args[0], args[1], lock_kind(args, 2))
    elif command == "semaphore-hold":
        cmd_semaphore_hold(args[0], args[1], args[2], non_negative_int(args[3], "MAX"))
    elif command == "semaphore-try":
        cmd_semaphore_try(args[0], args[1], args[2], non_negative_int(args[3], "MAX"),
                          non_negative_int(args[4], "TIMEOUT_MS"))
    elif command == "semaphore-holders":
        cmd_semaphore_holders(args[0], args[1], non_negative_int(args[2], "MAX"))
    elif command == "counter":
        cmd_counter(args[0], args[1], args[2], args[3], non_negative_int(args[4], "N"))
    elif command == "party":
        cmd_party(args[0], args[1], args[2], args[3])
    elif command == "elect":
        cmd_elect(args[0], args[1], args[2])
    elif command == "contenders":
        cmd_contenders(args[0], args[1])
    elif command == "lease":
        cmd_lease(args[0], args[1], number(args[2], "SECONDS"), args[3])
    elif command == "multi-lease":
        cmd_multi_lease(args[0], non_negative_int(args[1], "COUNT"), args[2], number(args[3], "SECONDS"), args[4])
    elif command == "partition":
        cmd_partition(args[0], args[1], args[2], args[3], non_negative_int(args[4], "TIME_BOUNDARY_MS"))
    elif command == "queue-put":
        cmd_queue_put(args[0], args[1], args[2], non_negative_int(args[3], "N"))
    elif command == "queue-get":
        cmd_queue_get(args[0], args[1], non_negative_int(args[2], "N"))
    elif command == "locking-get":
        cmd_locking_get(args[0], args[1], non_negative_int(args[2], "N"), non_negative_int(args[3], "TIMEOUT_MS"))
    elif command == "locking-hold":
        cmd_locking_hold(args[0], args[1], non_negative_int(args[2], "TIMEOUT_MS"))
    elif command == "barrier":
        cmd_barrier(args[0], args[1], args[2], non_negative_int(args[3], "TIMEOUT_MS"))
    elif command == "double-barrier":
        cmd_double_barrier(args[0], args[1], non_negative_int(args[2], "N"), args[3])
    else:
        cmd_try(args[0], args[1], non_negative_int(args[2], "TIMEOUT_MS"), lock_kind(args, 3))


def main():
    logging.basicConfig(level=logging.CRITICAL)
    watch_parent()
    code = 0
    try:
        run(sys.argv[1:])
    except UsageError as e:
        sys.stderr.write("kazoo_tool: %s\n%s\n" % (e, USAGE))
        code = 2
    except Exception as e:  # every failure is reported, then exit 1
        command = sys.argv[1] if len(sys.argv) > 1 else ""
        sys.stderr.write("kazoo_tool %s failed: %s: %s\n" % (command, type(e).__name__, e))
        code = 1
    close_clients()
    sys.stdout.flush()
    sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
