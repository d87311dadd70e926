// Apache Curator 5.4 as a peer process for zkr's interop tests and side-by-side benchmarks.
//
// Compiled and run by zkr-testing's `peers::CuratorTool`; usable by hand too:
//
//   javac -cp /usr/share/java/curator-recipes.jar -d out CuratorTool.java
//   java -cp out:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorTool lock 127.0.0.1:2181 /locks/a 3 100
//
// Output: one line per event on stdout, flushed at once. `<t_us>` is System.nanoTime()/1000
// (CLOCK_MONOTONIC on Linux, so comparable between processes on one machine). Commands:
//
//   lock CONNECT PATH ROUNDS HOLD_MS           ACQUIRED <r> <t_us>, RELEASING <r> <t_us> per round; DONE
//   hold CONNECT PATH                          HELD <own lock node>; on stdin `release` or EOF: RELEASED
//   hold-rw CONNECT PATH read|write            InterProcessReadWriteLock: HELD once held; on stdin
//                                              `release` or EOF: RELEASED
//   semaphore-hold CONNECT PATH MAX            InterProcessSemaphoreV2(MAX): HELD once a lease is held;
//                                              on stdin `release` or EOF: RELEASED
//   selector-hold CONNECT PATH                 LeaderSelector: LEADER once takeLeadership runs; on stdin
//                                              `release` or EOF it returns: RELEASED
//   multi-hold CONNECT PATH[,PATH...]          InterProcessMultiLock of mutexes: HELD once all are held;
//                                              on stdin `release` or EOF: RELEASED
//   try CONNECT PATH TIMEOUT_MS                ACQUIRED | NOT_ACQUIRED
//   bench-uncontended CONNECT PATH SECONDS     RESULT ops= seconds= p50_us= p99_us= (acquire+release)
//   bench-family CONNECT PATH KIND SECONDS     RESULT ... (acquire+release of KIND: read, write (one
//                                              InterProcessReadWriteLock side), semaphore
//                                              (InterProcessSemaphoreV2, 4 leases), semaphore-mutex)
//   bench-contended CONNECT PATH SESSIONS SECONDS   RESULT ... (wait in acquire, one client per thread)
//   bench-inprocess CONNECT PATH THREADS SECONDS    RESULT ... (wait in acquire, one shared mutex)
//   bench-waiters CONNECT PATH N               QUEUED n= rss_kb=; RESULT drained= millis= rss_kb=
//   bench-ids CONNECT PATH SECONDS             RESULT ... (one EPHEMERAL_SEQUENTIAL create)
//   config-subscribers CONNECT PATH N          N sessions, each a CuratorCache on PATH (a number);
//                                              READY once all are primed, then SEEN <i> <value> <t_us>
//                                              whenever subscriber i holds a larger value; until stdin EOF
//   atomic-ids CONNECT PATH N                  ID <value> per DistributedAtomicLong.increment(); DONE
//   bench-leader-failover CONNECT PATH         LEADER <epoch_ms> / NOT_LEADER <epoch_ms>; until stdin EOF
//
// Benchmarks run a 1 s warm-up that is not counted. Exit status: 0 success, 1 error (message on
// stderr), 2 bad arguments, 3 the parent process went away. Session timeout: 60 s, or
// $ZKR_PEER_SESSION_MS; connection timeout 15 s.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;

public final class CuratorTool {
    private static final int DEFAULT_SESSION_MS = 60_000;
    private static final int CONNECTION_MS = 15_000;
    private static final long WARMUP_NANOS = 1_000_000_000L;
    private static final long QUEUE_WAIT_NANOS = 300_000_000_000L;
    private static final String SESSION_ENV = "ZKR_PEER_SESSION_MS";

    private static final List<CuratorFramework> CLIENTS = new CopyOnWriteArrayList<>();
    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    private CuratorTool() {}

    /** Bad command-line arguments (exit status 2). */
    private static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /** Exposes the path of this thread's own lock node (a protected getter in Curator 5.4). */
    private static final class OwnedMutex extends InterProcessMutex {
        OwnedMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ownNode() {
            return getLockPath();
        }
    }

    /** A growable array of latencies in nanoseconds. */
    private static final class Latencies {
        private long[] values = new long[1024];
        private int size;

        void add(long nanos) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = nanos;
        }

        void addAll(Latencies other) {
            for (int i = 0; i < other.size; i++) {
                add(other.values[i]);
            }
        }
    }

    public static void main(String[] args) {
        watchParent();
        int code;
        try {
            code = run(args);
        } catch (UsageException e) {
            System.err.println("CuratorTool: " + e.getMessage());
            System.err.println(usage());
            code = 2;
        } catch (Throwable t) {
            // The stack first, the message last: callers show the tail of stderr.
            t.printStackTrace(System.err);
            System.err.println("CuratorTool " + (args.length > 0 ? args[0] : "") + " failed: " + t);
            code = 1;
        }
        closeClients();
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    private static String usage() {
        return "usage: CuratorTool lock CONNECT PATH ROUNDS HOLD_MS | hold CONNECT PATH"
                + " | hold-rw CONNECT PATH read|write | semaphore-hold CONNECT PATH MAX"
                + " | selector-hold CONNECT PATH | multi-hold CONNECT PATH[,PATH...]"
                + " | try CONNECT PATH TIMEOUT_MS | bench-uncontended CONNECT PATH SECONDS"
                + " | bench-family CONNECT PATH read|write|semaphore|semaphore-mutex SECONDS"
                + " | bench-contended CONNECT PATH SESSIONS SECONDS"
                + " | bench-inprocess CONNECT PATH THREADS SECONDS | bench-waiters CONNECT PATH N"
                + " | bench-ids CONNECT PATH SECONDS | bench-leader-failover CONNECT PATH";
    }

    private static int run(String[] args) throws Exception {
        if (args.length == 0) {
            throw new UsageException("no command given");
        }
        String command = args[0];
        switch (command) {
            case "lock":
                arity(args, 5);
                lock(args[1], args[2], nonNegativeInt(args[3], "ROUNDS"), nonNegativeInt(args[4], "HOLD_MS"));
                return 0;
            case "hold":
                arity(args, 3);
                hold(args[1], args[2]);
                return 0;
            case "semaphore-hold":
                arity(args, 4);
                semaphoreHold(args[1], args[2], positiveInt(args[3], "MAX"));
                return 0;
            case "hold-rw":
                arity(args, 4);
                holdReadWrite(args[1], args[2], args[3]);
                return 0;
            case "selector-hold":
                arity(args, 3);
                selectorHold(args[1], args[2]);
                return 0;
            case "multi-hold":
                arity(args, 3);
                multiHold(args[1], args[2]);
                return 0;
            case "try":
                arity(args, 4);
                tryLock(args[1], args[2], nonNegativeInt(args[3], "TIMEOUT_MS"));
                return 0;
            case "bench-uncontended":
                arity(args, 4);
                benchUncontended(args[1], args[2], seconds(args[3]));
                return 0;
            case "bench-family":
                arity(args, 5);
                benchFamily(args[1], args[2], args[3], seconds(args[4]));
                return 0;
            case "bench-contended":
                arity(args, 5);
                benchContended(args[1], args[2], positiveInt(args[3], "SESSIONS"), seconds(args[4]));
                return 0;
            case "bench-inprocess":
                arity(args, 5);
                benchInProcess(args[1], args[2], positiveInt(args[3], "THREADS"), seconds(args[4]));
                return 0;
            case "bench-waiters":
                arity(args, 4);
                benchWaiters(args[1], args[2], positiveInt(args[3], "N"));
                return 0;
            case "bench-ids":
                arity(args, 4);
                benchIds(args[1], args[2], seconds(args[3]));
                return 0;
            case "config-subscribers":
                arity(args, 4);
                configSubscribers(args[1], args[2], positiveInt(args[3], "N"));
                return 0;
            case "atomic-ids":
                arity(args, 4);
                atomicIds(args[1], args[2], positiveInt(args[3], "N"));
                return 0;
            case "bench-leader-failover":
                arity(args, 3);
                benchLeaderFailover(args[1], args[2]);
                return 0;
            default:
                throw new UsageException("unknown command `" + command + "`");
        }
    }

    // ---------------------------------------------------------------------------------------
    // Commands

    private static void lock(String connect, String path, int rounds, int holdMs) throws Exception {
        CuratorFramework client = connect(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        for (int r = 0; r < rounds; r++) {
            mutex.acquire();
            out("ACQUIRED " + r + " " + micros());
            Thread.sleep(holdMs);
            out("RELEASING " + r + " " + micros());
            mutex.release();
        }
        out("DONE");
    }

    private static void semaphoreHold(String connect, String path, int max) throws Exception {
        CuratorFramework client = connect(connect);
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, max);
        org.apache.curator.framework.recipes.locks.Lease lease = semaphore.acquire();
        out("HELD");
        waitForRelease();
        semaphore.returnLease(lease);
        out("RELEASED");
    }

    private static void holdReadWrite(String connect, String path, String side) throws Exception {
        CuratorFramework client = connect(connect);
        InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, path);
        InterProcessMutex mutex;
        if (side.equals("read")) {
            mutex = lock.readLock();
        } else if (side.equals("write")) {
            mutex = lock.writeLock();
        } else {
            throw new UsageException("hold-rw takes read or write, not `" + side + "`");
        }
        mutex.acquire();
        out("HELD");
        waitForRelease();
        mutex.release();
        out("RELEASED");
    }

    private static void selectorHold(String connect, String path) throws Exception {
        CuratorFramework client = connect(connect);
        CountDownLatch done = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework leaderClient) throws Exception {
                out("LEADER");
                waitForRelease();
                done.countDown();
            }
        });
        selector.start();
        done.await();
        selector.close();
        out("RELEASED");
    }

    private static void multiHold(String connect, String paths) throws Exception {
        CuratorFramework client = connect(connect);
        InterProcessMultiLock lock = new InterProcessMultiLock(client, Arrays.asList(paths.split(",")));
        lock.acquire();
        out("HELD");
        waitForRelease();
        lock.release();
        out("RELEASED");
    }

    /** Reads stdin until a `release` line or EOF. */
    private static void waitForRelease() throws IOException {
        String line;
        while ((line = STDIN.readLine()) != null) {
            if (line.trim().equals("release")) {
                return;
            }
        }
    }

    private static void hold(String connect, String path) throws Exception {
        CuratorFramework client = connect(connect);
        OwnedMutex mutex = new OwnedMutex(client, path);
        mutex.acquire();
        String node = mutex.ownNode();
        if (node == null) {
            Collection<String> nodes = mutex.getParticipantNodes();
            node = nodes.isEmpty() ? "?" : nodes.iterator().next();
        }
        out("HELD " + node);
        waitForRelease();
        mutex.release();
        out("RELEASED");
    }

    private static void tryLock(String connect, String path, int timeoutMs) throws Exception {
        CuratorFramework client = connect(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        if (mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            out("ACQUIRED");
            mutex.release();
        } else {
            out("NOT_ACQUIRED");
        }
    }

    /** One acquire+release cycle of some lock. */
    @FunctionalInterface
    private interface Cycle {
        void run() throws Exception;
    }

    private static void benchUncontended(String connect, String path, double seconds) throws Exception {
        InterProcessMutex mutex = new InterProcessMutex(connect(connect), path);
        out(result(cycles(() -> {
            mutex.acquire();
            mutex.release();
        }, seconds), seconds));
    }

    private static void benchFamily(String connect, String path, String kind, double seconds)
            throws Exception {
        CuratorFramework client = connect(connect);
        Cycle cycle;
        switch (kind) {
            case "read":
            case "write": {
                InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, path);
                InterProcessMutex side = kind.equals("read") ? lock.readLock() : lock.writeLock();
                cycle = () -> {
                    side.acquire();
                    side.release();
                };
                break;
            }
            case "semaphore": {
                InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, 4);
                cycle = () -> semaphore.returnLease(semaphore.acquire());
                break;
            }
            case "semaphore-mutex": {
                InterProcessSemaphoreMutex mutex = new InterProcessSemaphoreMutex(client, path);
                cycle = () -> {
                    mutex.acquire();
                    mutex.release();
                };
                break;
            }
            default:
                throw new UsageException("bench-family takes read, write, semaphore or semaphore-mutex");
        }
        out(result(cycles(cycle, seconds), seconds));
    }

    /** Runs `cycle` back to back for the warm-up and then `seconds`, timing each. */
    private static Latencies cycles(Cycle cycle, double seconds) throws Exception {
        Latencies latencies = new Latencies();
        long warm = System.nanoTime() + WARMUP_NANOS;
        long end = warm + toNanos(seconds);
        while (true) {
            long t0 = System.nanoTime();
            if (t0 >= end) {
                break;
            }
            cycle.run();
            long t1 = System.nanoTime();
            if (t0 >= warm && t1 <= end) {
                latencies.add(t1 - t0);
            }
        }
        return latencies;
    }

    private static void benchContended(String connect, String path, int sessions, double seconds)
            throws Exception {
        List<InterProcessMutex> mutexes = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            mutexes.add(new InterProcessMutex(connect(connect), path));
        }
        out(result(acquireLoops(mutexes, seconds), seconds));
    }

    private static void benchInProcess(String connect, String path, int threads, double seconds)
            throws Exception {
        InterProcessMutex shared = new InterProcessMutex(connect(connect), path);
        List<InterProcessMutex> mutexes = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            mutexes.add(shared);
        }
        out(result(acquireLoops(mutexes, seconds), seconds));
    }

    private static void benchWaiters(String connect, String path, int n) throws Exception {
        CuratorFramework client = connect(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        mutex.acquire();
        CountDownLatch drained = new CountDownLatch(n);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(null, () -> {
                try {
                    mutex.acquire();
                    mutex.release();
                    drained.countDown();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "waiter-" + i, 256 * 1024);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        long deadline = System.nanoTime() + QUEUE_WAIT_NANOS;
        while (mutex.getParticipantNodes().size() < n + 1) {
            rethrow(failure);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("waiters did not queue within "
                        + QUEUE_WAIT_NANOS / 1_000_000_000L + " s");
            }
            Thread.sleep(50);
        }
        out("QUEUED n=" + n + " rss_kb=" + peakRssKb());
        long t0 = System.nanoTime();
        mutex.release();
        while (!drained.await(50, TimeUnit.MILLISECONDS)) {
            rethrow(failure);
        }
        long millis = (System.nanoTime() - t0) / 1_000_000L;
        for (Thread t : threads) {
            t.join();
        }
        rethrow(failure);
        out("RESULT drained=" + n + " millis=" + millis + " rss_kb=" + peakRssKb());
    }

    private static void benchIds(String connect, String path, double seconds) throws Exception {
        CuratorFramework client = connect(connect);
        String prefix = ZKPaths.makePath(path, "id-");
        Latencies latencies = new Latencies();
        long last = -1;
        long warm = System.nanoTime() + WARMUP_NANOS;
        long end = warm + toNanos(seconds);
        while (true) {
            long t0 = System.nanoTime();
            if (t0 >= end) {
                break;
            }
            String name = client.create()
                    .creatingParentContainersIfNeeded()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                    .forPath(prefix);
            long id = Long.parseLong(name.substring(name.length() - 10));
            long t1 = System.nanoTime();
            if (id <= last) {
                throw new IllegalStateException("sequence went backwards: " + last + " then " + id);
            }
            last = id;
            if (t0 >= warm && t1 <= end) {
                latencies.add(t1 - t0);
            }
        }
        out(result(latencies, seconds));
    }

    private static void configSubscribers(String connect, String path, int n) throws Exception {
        CountDownLatch primed = new CountDownLatch(n);
        List<CuratorCache> caches = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int subscriber = i;
            final long[] held = {Long.MIN_VALUE};
            CuratorFramework client = connect(connect);
            CuratorCache cache = CuratorCache.build(client, path, CuratorCache.Options.SINGLE_NODE_CACHE);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forCreatesAndChanges((before, after) -> {
                        long t = micros();
                        long value = Long.parseLong(new String(after.getData(), StandardCharsets.UTF_8).trim());
                        synchronized (held) {
                            if (value > held[0]) {
                                held[0] = value;
                                out("SEEN " + subscriber + " " + value + " " + t);
                            }
                        }
                    })
                    .forInitialized(primed::countDown)
                    .build());
            cache.start();
            caches.add(cache);
        }
        if (!primed.await(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("caches not primed within 120 s");
        }
        out("READY");
        while (STDIN.readLine() != null) {
            // Runs until stdin closes.
        }
        for (CuratorCache cache : caches) {
            cache.close();
        }
    }

    private static void atomicIds(String connect, String path, int n) throws Exception {
        CuratorFramework client = connect(connect);
        DistributedAtomicLong counter = new DistributedAtomicLong(client, path, new ExponentialBackoffRetry(10, 29));
        for (int i = 0; i < n; i++) {
            AtomicValue<Long> value = counter.increment();
            if (!value.succeeded()) {
                throw new IllegalStateException("increment did not succeed");
            }
            out("ID " + value.postValue());
        }
        out("DONE");
    }

    private static void benchLeaderFailover(String connect, String path) throws Exception {
        CuratorFramework client = connect(connect);
        String id = String.valueOf(ProcessHandle.current().pid());
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                out("LEADER " + System.currentTimeMillis());
            }

            @Override
            public void notLeader() {
                out("NOT_LEADER " + System.currentTimeMillis());
            }
        });
        latch.start();
        while (STDIN.readLine() != null) {
            // Runs until stdin is closed.
        }
        latch.close();
    }

    // ---------------------------------------------------------------------------------------
    // Helpers

    /**
     * Runs one thread per entry of {@code mutexes}, each looping acquire/release until the
     * measurement window (after the warm-up) ends; returns the waits in acquire().
     */
    private static Latencies acquireLoops(List<InterProcessMutex> mutexes, double seconds) throws Exception {
        int n = mutexes.size();
        Latencies[] perThread = new Latencies[n];
        long[] window = new long[2];
        CountDownLatch ready = new CountDownLatch(n);
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int index = i;
            final InterProcessMutex mutex = mutexes.get(i);
            perThread[i] = new Latencies();
            Thread t = new Thread(() -> {
                try {
                    ready.countDown();
                    go.await();
                    long warm = window[0];
                    long end = window[1];
                    Latencies mine = perThread[index];
                    while (failure.get() == null) {
                        long t0 = System.nanoTime();
                        if (t0 >= end) {
                            break;
                        }
                        mutex.acquire();
                        long t1 = System.nanoTime();
                        mutex.release();
                        if (t0 >= warm && t1 <= end) {
                            mine.add(t1 - t0);
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "bench-" + i);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        ready.await();
        window[0] = System.nanoTime() + WARMUP_NANOS;
        window[1] = window[0] + toNanos(seconds);
        go.countDown(); // happens-before every thread's reads of `window`
        for (Thread t : threads) {
            t.join();
        }
        rethrow(failure);
        Latencies all = new Latencies();
        for (Latencies l : perThread) {
            all.addAll(l);
        }
        return all;
    }

    private static String result(Latencies latencies, double seconds) {
        long[] sorted = Arrays.copyOf(latencies.values, latencies.size);
        Arrays.sort(sorted);
        return String.format(Locale.ROOT, "RESULT ops=%d seconds=%.3f p50_us=%d p99_us=%d",
                sorted.length, seconds, percentile(sorted, 0.50) / 1000, percentile(sorted, 0.99) / 1000);
    }

    /** Nearest-rank percentile of a sorted array (0 when empty). */
    private static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
    }

    private static CuratorFramework connect(String connect) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs())
                .connectionTimeoutMs(CONNECTION_MS)
                .retryPolicy(new ExponentialBackoffRetry(1000, 3))
                .build();
        CLIENTS.add(client);
        client.start();
        if (!client.blockUntilConnected(CONNECTION_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("could not connect to " + connect + " within " + CONNECTION_MS + " ms");
        }
        return client;
    }

    private static int sessionMs() throws UsageException {
        String value = System.getenv(SESSION_ENV);
        if (value == null || value.trim().isEmpty()) {
            return DEFAULT_SESSION_MS;
        }
        return positiveInt(value.trim(), SESSION_ENV);
    }

    private static void closeClients() {
        for (CuratorFramework client : CLIENTS) {
            try {
                client.close();
            } catch (Throwable ignored) {
                // Best effort: the process is exiting.
            }
        }
        CLIENTS.clear();
    }

    /**
     * Exits (status 3) when the process that started us goes away, so that no peer outlives a
     * test binary that was killed.
     */
    private static void watchParent() {
        final long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        if (parent <= 1) {
            return;
        }
        Thread watcher = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
                long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
                if (now != parent) {
                    System.err.println("CuratorTool: parent process " + parent + " went away; exiting");
                    closeClients();
                    Runtime.getRuntime().halt(3);
                }
            }
        }, "parent-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    private static void out(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    private static long micros() {
        return System.nanoTime() / 1000L;
    }

    private static long toNanos(double seconds) {
        return (long) (seconds * 1e9);
    }

    /** VmHWM (peak resident set size) from /proc/self/status, in kB; -1 when unavailable. */
    private static long peakRssKb() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.UTF_8)) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.substring(6).replace("kB", "").trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    private static void rethrow(AtomicReference<Throwable> failure) throws Exception {
        Throwable t = failure.get();
        if (t instanceof Exception) {
            throw (Exception) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        if (t != null) {
            throw new IllegalStateException(t);
        }
    }

    private static void arity(String[] args, int n) throws UsageException {
        if (args.length != n) {
            throw new UsageException("`" + args[0] + "` takes " + (n - 1) + " arguments, got " + (args.length - 1));
        }
    }

    private static int nonNegativeInt(String value, String name) throws UsageException {
        try {
            int v = Integer.parseInt(value);
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // Reported below.
        }
        throw new UsageException(name + " must be a non-negative integer, not `" + value + "`");
    }

    private static int positiveInt(String value, String name) throws UsageException {
        int v = nonNegativeInt(value, name);
        if (v == 0) {
            throw new UsageException(name + " must be positive, not 0");
        }
        return v;
    }

    private static double seconds(String value) throws UsageException {
        try {
            double v = Double.parseDouble(value);
            if (v > 0 && v <= 86_400) {
                return v;
            }
        } catch (NumberFormatException e) {
            // Reported below.
        }
        throw new UsageException("SECONDS must be a number in (0, 86400], not `" + value + "`");
    }
}
