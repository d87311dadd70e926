#!/usr/bin/env python3
"""`cargo test --workspace`, with the long fault checkers beside the rest.

cargo holds its lock on the target directory while its test binaries run, one after another,
so two `cargo test` runs cannot overlap. This builds every test binary once (`cargo test
--workspace --no-run`), then runs them directly, as cargo would (in their package's directory),
in two lanes at once. The checkers' lane runs the fault checkers, which spend most of their
time waiting for sessions to expire and servers to come back. The tests lane runs the model
checker's binaries (CPU only, beside the checkers' waiting), then the binaries that kill
servers of a 3-server ensemble (never beside the model checker: a leader election starved of
CPU took past half a session timeout, and the session was reported lost). Every other binary
is taken by whichever lane is free first; the doc tests end the tests lane. Each binary's
output is printed whole when it ends, so the lanes never interleave; the run fails if any
binary or the doc tests failed, naming them at the end. `--also COMMAND` runs a command in a
lane of its own beside them (`make test` runs the compatibility run there: its servers are
other releases, its test binaries the ones just built); once the command is done, its lane
takes binaries from the shared ones too (without it, the 2 cores were 84% busy over the run:
two lanes of mostly waiting binaries after the compatibility run).

    scripts/run-tests.py [--also COMMAND]...
    scripts/run-tests.py --list     # the test binaries (scripts/compat.sh runs some of them)
"""

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# The binaries of the checkers' lane, longest first (their share of the suite: about 260 s of
# 570 s on the 2-core machine in `make test` at 0da6133).
CHECKERS = ["checker", "checker_ids", "checker_config"]

# The binaries that run a 3-server ensemble and kill or stop its servers.
ENSEMBLES = ["cache_faults", "connection", "cversion_repro", "ensemble", "leader", "lock_mutex", "lock_rw",
             "failover", "status", "testing"]

# The model checker's package (its binaries: about 390 s of CPU in `make test`).
MODELS = os.path.join("crates", "zkr-model")

# The CLI is built with its Kerberos client (a build feature: it links the system's GSSAPI
# library, which the tests need anyway), so that `--sasl gssapi` is tested through the shell
# (crates/zkr-cli/tests/kerberos.rs). The libraries' SASL GSSAPI is on already: the tests crate
# enables it, so this adds no build of its own.
FEATURES = ["--features", "zkr-cli/kerberos"]

# The JVMs that the tests start (servers and Curator peers, zkr-testing's JVM_OPTIONS_ENV) with
# the JIT's first tier only: they live seconds, and the test run is bound by the 2 cores, most of
# whose time goes to JVMs. Measured alone: a server's start took 0.57-0.70 CPU s against
# 0.71-1.03, the `crud` binary 5.1-5.2 against 5.9-6.4, `lock_interop` (Curator peers)
# 5.6-6.0 against 7.4-8.9. An explicit ZKR_JVM_OPTIONS (even empty) is kept.
JVM_OPTIONS = ("ZKR_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")

# Where each binary's output is kept while it runs: cargo's target directory.
LOGS = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
print_lock = threading.Lock()
failed = []


def build():
    """Builds every test binary; returns (target name, target kind, package directory, executable)
    for each, and the same for each example (built by `cargo test`, run by `--example`)."""
    out = subprocess.run(
        ["cargo", "test", "--workspace", *FEATURES, "--no-run", "--message-format=json-render-diagnostics"],
        stdout=subprocess.PIPE,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(out.returncode)
    binaries, examples = [], []
    for line in out.stdout.splitlines():
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m.get("executable"):
            directory = os.path.dirname(m["manifest_path"])
            binary = (m["target"]["name"], m["target"]["kind"][0], directory, m["executable"])
            if m["profile"]["test"]:
                binaries.append(binary)
            elif binary[1] == "example":
                examples.append(binary)
    return binaries, examples


def run(label, command, cwd, env=None):
    """Runs one command to its end and prints its output whole.

    The output goes to a file, not a pipe: a server or peer process that a test started and
    that outlives it for a moment would hold a pipe open, and the lane would wait for it."""
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", dir=LOGS) as out:
        code = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
        took = time.monotonic() - started
        out.seek(0)
        with print_lock:
            print(f"     Running {label} ({took:.1f} s)", flush=True)
            shutil.copyfileobj(out, sys.stdout)
            sys.stdout.flush()
            if code != 0:
                failed.append(label)


def guarded(label, target, *args):
    """Runs `target(*args)` in a thread; a failure of the lane itself (not of a test binary)
    fails the run, naming the lane, instead of leaving its binaries unrun and unreported."""
    try:
        target(*args)
    except BaseException as e:  # noqa: BLE001 (every failure of a lane is reported)
        with print_lock:
            print(f"lane {label} failed: {e!r}", file=sys.stderr, flush=True)
            failed.append(f"lane {label}")


def run_binary(binary):
    name, kind, directory, executable = binary
    env = dict(os.environ, CARGO_MANIFEST_DIR=directory)
    relative = os.path.relpath(executable)
    run(f"{kind} {name} ({relative})", [executable], directory, env)


def lane(binaries, pool, then=None):
    """Runs `binaries`, then takes from the shared `pool` until it is empty, then `then`."""
    for binary in binaries:
        run_binary(binary)
    while True:
        try:
            binary = pool.get_nowait()
        except queue.Empty:
            break
        run_binary(binary)
    if then:
        then()


def also(command, pool):
    """Runs `command` (see `--also`), then takes from the shared `pool` until it is empty."""
    run(command, ["bash", "-c", command], None)
    lane([], pool)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--also", action="append", default=[], metavar="COMMAND",
                        help="a shell command to run in a lane of its own once the build is done (repeatable)")
    parser.add_argument("--list", action="store_true",
                        help="build, then print each test binary as: name, kind, package directory, executable (tab-separated)")
    parser.add_argument("--example", action="append", default=[], metavar="NAME",
                        help="run this example of the build too, as `cargo run --example NAME` would "
                             "(repeatable; `cargo run` with one package's features would build it again)")
    args = parser.parse_args()
    os.environ.setdefault(*JVM_OPTIONS)
    binaries, examples = build()
    unknown = set(args.example) - {e[0] for e in examples}
    if unknown:
        sys.exit(f"no such example: {', '.join(sorted(unknown))}")
    if args.list:
        for binary in binaries:
            print("\t".join(binary))
        return
    checkers = sorted((b for b in binaries if b[0] in CHECKERS and b[1] == "test"), key=lambda b: CHECKERS.index(b[0]))
    models = [b for b in binaries if b[2].endswith(MODELS) and b[1] == "test"]
    ensembles = [b for b in binaries if b[0] in ENSEMBLES and b[1] == "test" and b not in models]
    pool = queue.Queue()
    for binary in binaries:
        if binary not in checkers + models + ensembles:
            pool.put(binary)
    for example in examples:
        if example[0] in args.example:
            pool.put(example)
    doc_tests = lambda: run("doc tests (cargo test --workspace --doc)", ["cargo", "test", "--workspace", *FEATURES, "--doc"], None)
    os.makedirs(LOGS, exist_ok=True)
    lanes = [threading.Thread(target=guarded, args=("checkers", lane, checkers, pool)),
             threading.Thread(target=guarded, args=("tests", lane, models + ensembles, pool, doc_tests))]
    lanes += [threading.Thread(target=guarded, args=(command, also, command, pool)) for command in args.also]
    for t in lanes:
        t.start()
    for t in lanes:
        t.join()
    if failed:
        print("\nfailed: " + ", ".join(failed), file=sys.stderr)
        sys.exit(1)
    print(f"\nall {len(binaries)} test binaries, {len(args.example)} examples, the doc tests and "
          f"{len(args.also)} other commands passed")


if __name__ == "__main__":
    main()
