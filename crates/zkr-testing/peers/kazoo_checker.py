"""The checker workers of kazoo_tool.py (`checker-worker mutex|counter`): kazoo processes taking
part in zkr's checkers (zkr_integration_tests::checker) beside zkr's workers, with their line
protocols and times in nanoseconds of CLOCK_MONOTONIC (`time.monotonic_ns()`). Each takes a
started client and the tool's `out` (one line to stdout, flushed, under a lock)."""

import faulthandler
import queue
import random
import sys
import threading
import time

from kazoo.client import KazooState
from kazoo.exceptions import BadVersionError, ConnectionLoss, LockTimeout, NoNodeError, SessionExpiredError
from kazoo.retry import KazooRetry


def announce_sessions(client, out, word):
    """`<word> <session id>` now and on every (re)connection."""

    def session_line():
        ident = client.client_id
        if ident:
            out("%s %d" % (word, ident[0]))

    client.add_listener(lambda state: session_line() if state == KazooState.CONNECTED else None)
    session_line()


# An increment that takes longer than this prints every thread's stack to stderr,
# once, so that a worker without progress says where it waits.
STALL_SECONDS = 10


def say_states_and_stalls(client):
    """Each of the client's state changes to stderr (with CLOCK_MONOTONIC nanoseconds), beside
    the checker's own lines: kazoo retries a lost connection and an expired session without a
    word, and a stalled worker must say what it saw."""
    client.add_listener(lambda state: sys.stderr.write("%d kazoo state %s\n" % (time.monotonic_ns(), state)))


def until_stdin_closes(on_line=lambda line: None):
    """An event set when stdin closes; each line before it handed to `on_line`, on a thread."""
    stop = threading.Event()

    def read():
        for line in sys.stdin:
            on_line(line)
        stop.set()

    threading.Thread(target=read, name="checker-stdin", daemon=True).start()
    return stop


def mutex_worker(client, out, ident, lock_path, counter_path, acquire_ms, seed):
    """Until stdin closes: kazoo's Lock at LOCK_PATH for at most ACQUIRE_MS, then the unsafe
    read-modify-write of COUNTER_PATH with a write fenced by the own lock node (a transaction of
    check(own node) and set_data, sent once: kazoo has no fenced write of its own); the release
    deletes the own node by hand, asking again after a connection loss until ZooKeeper answers
    (NoNode or SessionExpired: LOST). kazoo's client has one session at a time: after an expiry
    the own node is gone with the old one, so the check and the delete say so on the next."""
    rng = random.Random(seed)
    holds = queue.Queue()
    announce_sessions(client, out, "SESSION")

    def take_command(line):
        if line.startswith("hold "):
            holds.put(int(line[5:].strip()))

    stop = until_stdin_closes(take_command)
    lock = client.Lock(lock_path, ident)
    while not stop.is_set():
        checker_turn(client, out, lock, counter_path, acquire_ms, rng, holds)
    out("DONE")


def checker_turn(client, out, lock, counter_path, acquire_ms, rng, holds):
    invoked = time.monotonic_ns()
    try:
        acquired = lock.acquire(timeout=acquire_ms / 1000.0)
    except LockTimeout:
        acquired = False
    except Exception as e:  # the connection or the session went: the next turn tries again
        out("ACQUIRE_ERROR %s: %s" % (type(e).__name__, e))
        time.sleep(0.05)
        return
    took_ms = (time.monotonic_ns() - invoked) // 1_000_000
    if took_ms > acquire_ms + 3000:
        out("HANG after %d ms (acquired: %s)" % (took_ms, acquired))
    elif not acquired:
        out("TIMEOUT")
    if not acquired:
        return
    own = "%s/%s" % (lock.path, lock.node)
    out("ACQUIRED %d %d" % (invoked, time.monotonic_ns()))
    out(checker_section(client, out, own, counter_path, rng, holds))
    out(checker_release(client, own))
    # kazoo's own state: the node is deleted (or was gone) already.
    lock.is_acquired = False
    lock.node = None


def checker_section(client, out, own, counter_path, rng, holds):
    invoked = time.monotonic_ns()
    try:
        data, _ = client.get(counter_path)
        text = data.decode("utf-8").strip()
        value = int(text) if text else 0
    except Exception as e:
        return "ABORT %d reading the counter: %s" % (time.monotonic_ns(), e)
    out("READ %d %d %d" % (invoked, time.monotonic_ns(), value))
    try:
        pause = holds.get_nowait()
        out("HOLDING")
    except queue.Empty:
        pause = 1 + rng.randrange(5)
    time.sleep(pause / 1000.0)
    out("WRITE %d %d" % (time.monotonic_ns(), value + 1))
    transaction = client.transaction()
    transaction.check(own, -1)
    transaction.set_data(counter_path, str(value + 1).encode("utf-8"))
    try:
        results = transaction.commit()
    except (ConnectionLoss, SessionExpiredError) as e:
        # No answer, or the session ended with the write in flight: it may have applied.
        return "UNKNOWN %d %s" % (time.monotonic_ns(), type(e).__name__)
    failed = [r for r in results if isinstance(r, Exception)]
    if failed and isinstance(failed[0], NoNodeError):
        # The check of the own node found it gone (the counter is never deleted): FENCED.
        return "FENCED %d %s" % (time.monotonic_ns(), type(failed[0]).__name__)
    if failed:
        # Not applied for another reason (SessionMovedError): the hold may go on.
        return "ABORT %d %s" % (time.monotonic_ns(), type(failed[0]).__name__)
    return "COMMIT %d" % time.monotonic_ns()


def checker_release(client, own):
    releasing = time.monotonic_ns()
    deadline = releasing + 60 * 1_000_000_000
    while True:
        try:
            client.delete(own)
            return "RELEASED %d %d" % (releasing, time.monotonic_ns())
        except (NoNodeError, SessionExpiredError):
            return "LOST %d %d" % (releasing, time.monotonic_ns())
        except ConnectionLoss as e:
            if time.monotonic_ns() > deadline:
                return "RELEASE_ERROR %d %s" % (releasing, type(e).__name__)
            time.sleep(0.1)
        except Exception as e:
            return "RELEASE_ERROR %d %s: %s" % (releasing, type(e).__name__, e)


def counter_worker(client, out, path):
    """Until stdin closes (the increment in flight ends first), kazoo's `Counter` at PATH
    (default 0, kazoo's text format) incremented one at a time, with `zkr-id-worker counter`'s
    lines: `session <id>`; `+ <invoked>`; `<post> <invoked> <returned>`; `unknown <invoked>`
    for one that raised. kazoo retries a change after a connection loss by reading and writing
    again (`client.retry`): a write applied before the loss is then applied twice and the value
    between is handed to no one. kazoo cannot tell, so each write of an increment that raised
    (but a lost race, `BadVersionError`) is declared as `maybe <invoked>`: an increment that
    may have been applied once, at any time after <invoked> (its write is versioned, so each
    can hide one at most)."""
    announce_sessions(client, out, "session")
    stop = until_stdin_closes()
    say_states_and_stalls(client)
    # Lost races tried again every 5 ms, as zkr's workers do (kazoo's default backs off to a
    # minute, and three zkr workers then leave it no turn); every try of the write that raised
    # (but a lost race) counted: it may have been applied.
    client.retry = KazooRetry(max_tries=-1, delay=0.005, backoff=1, max_delay=0.005)
    counter = client.Counter(path, default=0)
    raised = [0]
    write = client.set

    def counted_write(*args, **kwargs):
        try:
            return write(*args, **kwargs)
        except BadVersionError:
            raise
        except Exception as e:
            raised[0] += 1
            if raised[0] == 1:
                sys.stderr.write("%d retrying a write after %s: %s\n" % (time.monotonic_ns(), type(e).__name__, e))
            raise

    client.set = counted_write
    while not stop.is_set():
        raised[0] = 0
        invoked = time.monotonic_ns()
        out("+ %d" % invoked)
        faulthandler.dump_traceback_later(STALL_SECONDS, file=sys.stderr)
        try:
            counter += 1
            line = "%d %d %d" % (counter.post_value, invoked, time.monotonic_ns())
        except Exception as e:
            sys.stderr.write("error: %s: %s\n" % (type(e).__name__, e))
            line = "unknown %d" % invoked
        finally:
            faulthandler.cancel_dump_traceback_later()
        out("\n".join([line] + ["maybe %d" % invoked] * raised[0]))
        time.sleep(0.002)
