// CuratorTool's counter commands (Curator 5.4 `DistributedAtomicLong` and `SharedCount`):
//
//   atomic-long-add CONNECT PATH N             a DistributedAtomicLong on PATH (lost races retried under
//                                              RetryNTimes(1000, 1)): READY once connected; on a stdin line
//                                              (any) N increment() calls; RESULT post=<the last post value>
//                                              succeeded=<how many succeeded> tries=<optimistic tries in all>
//   shared-count-watch CONNECT PATH            a started SharedCount (seed 0): COUNT <n> at once and on
//                                              every countHasChanged; until stdin EOF
//   shared-count-set CONNECT PATH VALUE        a started SharedCount (seed 0), setCount(VALUE):
//                                              RESULT count=<getCount() after it>
//   bench-counter CONNECT PATH SESSIONS SECONDS
//                                              SESSIONS threads, each with its own session and
//                                              DistributedAtomicLong on PATH (RetryNTimes(1000, 1)),
//                                              increment() in a loop for a 1 s warm-up and SECONDS:
//                                              RESULT ops=<succeeded increments> seconds p50_us p99_us

import java.io.IOException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

final class CounterCommands {
    static final String USAGE = " | atomic-long-add CONNECT PATH N | shared-count-watch CONNECT PATH"
            + " | shared-count-set CONNECT PATH VALUE | bench-counter CONNECT PATH SESSIONS SECONDS";

    private CounterCommands() {}

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "atomic-long-add":
                Peer.arity(args, 4);
                atomicLongAdd(args[1], args[2], Peer.nonNegativeInt(args[3], "N"));
                return true;
            case "shared-count-watch":
                Peer.arity(args, 3);
                sharedCountWatch(args[1], args[2]);
                return true;
            case "bench-counter":
                Peer.arity(args, 5);
                benchCounter(args[1], args[2], Peer.positiveInt(args[3], "SESSIONS"), Peer.seconds(args[4]));
                return true;
            case "shared-count-set":
                Peer.arity(args, 4);
                sharedCountSet(args[1], args[2], integer(args[3], "VALUE"));
                return true;
            default:
                return false;
        }
    }

    private static int integer(String value, String name) throws Peer.UsageException {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new Peer.UsageException(name + " must be an integer, not `" + value + "`");
        }
    }

    private static void atomicLongAdd(String connect, String path, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        DistributedAtomicLong counter = new DistributedAtomicLong(client, path, new RetryNTimes(1000, 1));
        Peer.out("READY");
        if (Peer.STDIN.readLine() == null) {
            throw new IOException("stdin closed before the go line");
        }
        long post = 0;
        int succeeded = 0;
        long tries = 0;
        for (int i = 0; i < n; i++) {
            AtomicValue<Long> value = counter.increment();
            tries += value.getStats().getOptimisticTries();
            if (value.succeeded()) {
                succeeded++;
                post = value.postValue();
            }
        }
        Peer.out("RESULT post=" + post + " succeeded=" + succeeded + " tries=" + tries);
    }

    private static void sharedCountWatch(String connect, String path) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        SharedCount count = new SharedCount(client, path, 0);
        count.addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(SharedCountReader reader, int newCount) {
                Peer.out("COUNT " + newCount);
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState state) {
                // Only the counts are reported.
            }
        });
        count.start();
        Peer.out("COUNT " + count.getCount());
        Peer.waitForEof();
        count.close();
    }

    private static void sharedCountSet(String connect, String path, int value) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        SharedCount count = new SharedCount(client, path, 0);
        count.start();
        count.setCount(value);
        Peer.out("RESULT count=" + count.getCount());
        count.close();
    }

    static void benchCounter(String connect, String path, int sessions, double seconds) throws Exception {
        long warm = System.nanoTime() + Peer.WARMUP_NANOS;
        long end = warm + Peer.toNanos(seconds);
        java.util.List<Thread> threads = new java.util.ArrayList<>();
        java.util.List<Peer.Latencies> all = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        for (int i = 0; i < sessions; i++) {
            DistributedAtomicLong counter = new DistributedAtomicLong(Peer.connect(connect), path, new RetryNTimes(1000, 1));
            Thread t = new Thread(() -> {
                Peer.Latencies latencies = new Peer.Latencies();
                try {
                    while (true) {
                        long t0 = System.nanoTime();
                        if (t0 >= end) {
                            break;
                        }
                        boolean ok = counter.increment().succeeded();
                        long t1 = System.nanoTime();
                        if (ok && t0 >= warm && t1 <= end) {
                            latencies.add(t1 - t0);
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
                all.add(latencies);
            }, "counter-" + i);
            threads.add(t);
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        Peer.rethrow(failure);
        Peer.Latencies merged = new Peer.Latencies();
        for (Peer.Latencies l : all) {
            merged.addAll(l);
        }
        Peer.out(Peer.result(merged, seconds));
    }
}
