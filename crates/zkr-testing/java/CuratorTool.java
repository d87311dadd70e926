// Apache Curator 5.4 as a peer process for zkr's interop tests and side-by-side benchmarks.
//
// Compiled and run by zkr-testing's `peers::CuratorTool`; usable by hand too:
//
//   javac -cp /usr/share/java/curator-recipes.jar:/usr/share/java/curator-x-discovery.jar -d out *.java
//   java -cp out:/usr/share/java/curator-recipes.jar:/usr/share/java/curator-x-discovery.jar:/usr/share/java/slf4j-nop.jar \
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
//   atomic-ids CONNECT PATH N                  ID <value> per DistributedAtomicLong.increment(); DONE
//   bench-leader-failover CONNECT PATH         LEADER <epoch_us> / NOT_LEADER <epoch_us>; until stdin EOF
//   latch-participants CONNECT PATH N SESSIONS  N LeaderLatches over SESSIONS sessions (latch i on session
//                                              i mod SESSIONS): READY once all are started and one leads;
//                                              each stdin line `close-leader` closes the leader's latch:
//                                              CHANGED once another leads; until stdin EOF
//   latch-leader CONNECT PATH                  LEADER <id> from LeaderLatch.getLeader() (a latch
//                                              not started: an onlooker), or NO_LEADER
//
// More commands, one file per family (compiled together; helpers shared in Peer.java):
// CacheCommands.java (CuratorCache: config-subscribers, cache-load, cache-memory,
// cache-propagation), LockLoadCommands.java (lock-load: many waiters on a mutex or a semaphore,
// for the server's load), DiscoveryCommands.java (curator-x-discovery: discovery-register,
// discovery-list, discovery-provider, discovery-watch), BarrierCommands.java (barrier-wait,
// double-barrier, revocable-hold, revoke), CounterCommands.java (DistributedAtomicLong and
// SharedCount: atomic-long-add, shared-count-watch, shared-count-set) and QueueCommands.java
// (the queues: queue-put, queue-put-multi, priority-put, delay-put, id-put, queue-consume,
// queue-consume-locked, priority-consume, simple-offer, simple-take, queue-bench,
// queue-bench-depth) and WideCommands.java (one parent with very many children: wide-cache,
// wide-lock). Their headers list their output.
//
// Benchmarks run a 1 s warm-up that is not counted. Exit status: 0 success, 1 error (message on
// stderr), 2 bad arguments, 3 the parent process went away. Session timeout: 60 s, or
// $ZKR_PEER_SESSION_MS; connection timeout 15 s.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
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
    private static final long QUEUE_WAIT_NANOS = 300_000_000_000L;

    private CuratorTool() {}

    /** Exposes the path of this thread's own lock node (a protected getter in Curator 5.4). */
    static final class OwnedMutex extends InterProcessMutex {
        OwnedMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ownNode() {
            return getLockPath();
        }
    }

    public static void main(String[] args) {
        Peer.watchParent();
        int code;
        try {
            code = run(args);
        } catch (Peer.UsageException e) {
            System.err.println("CuratorTool: " + e.getMessage());
            System.err.println(usage());
            code = 2;
        } catch (Throwable t) {
            // The stack first, the message last: callers show the tail of stderr.
            t.printStackTrace(System.err);
            System.err.println("CuratorTool " + (args.length > 0 ? args[0] : "") + " failed: " + t);
            code = 1;
        }
        Peer.closeClients();
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
                + " | bench-ids CONNECT PATH SECONDS | bench-leader-failover CONNECT PATH"
                + " | latch-leader CONNECT PATH"
                + " | atomic-ids CONNECT PATH N" + CacheCommands.USAGE + DiscoveryCommands.USAGE
                + BarrierCommands.USAGE + CounterCommands.USAGE + QueueCommands.USAGE + WideCommands.USAGE
                + CheckerCommands.USAGE + LockLoadCommands.USAGE
                + " | modeled-set, modeled-read, modeled-update, modeled-cached (Maven releases: ModeledCommands.java)";
    }

    private static int run(String[] args) throws Exception {
        if (args.length == 0) {
            throw new Peer.UsageException("no command given");
        }
        String command = args[0];
        switch (command) {
            case "lock":
                Peer.arity(args, 5);
                lock(args[1], args[2], Peer.nonNegativeInt(args[3], "ROUNDS"), Peer.nonNegativeInt(args[4], "HOLD_MS"));
                return 0;
            case "hold":
                Peer.arity(args, 3);
                hold(args[1], args[2]);
                return 0;
            case "semaphore-hold":
                Peer.arity(args, 4);
                semaphoreHold(args[1], args[2], Peer.positiveInt(args[3], "MAX"));
                return 0;
            case "hold-rw":
                Peer.arity(args, 4);
                holdReadWrite(args[1], args[2], args[3]);
                return 0;
            case "selector-hold":
                Peer.arity(args, 3);
                selectorHold(args[1], args[2]);
                return 0;
            case "multi-hold":
                Peer.arity(args, 3);
                multiHold(args[1], args[2]);
                return 0;
            case "try":
                Peer.arity(args, 4);
                tryLock(args[1], args[2], Peer.nonNegativeInt(args[3], "TIMEOUT_MS"));
                return 0;
            case "bench-uncontended":
                Peer.arity(args, 4);
                benchUncontended(args[1], args[2], Peer.seconds(args[3]));
                return 0;
            case "bench-family":
                Peer.arity(args, 5);
                benchFamily(args[1], args[2], args[3], Peer.seconds(args[4]));
                return 0;
            case "bench-contended":
                Peer.arity(args, 5);
                benchContended(args[1], args[2], Peer.positiveInt(args[3], "SESSIONS"), Peer.seconds(args[4]));
                return 0;
            case "bench-inprocess":
                Peer.arity(args, 5);
                benchInProcess(args[1], args[2], Peer.positiveInt(args[3], "THREADS"), Peer.seconds(args[4]));
                return 0;
            case "bench-waiters":
                Peer.arity(args, 4);
                benchWaiters(args[1], args[2], Peer.positiveInt(args[3], "N"));
                return 0;
            case "bench-ids":
                Peer.arity(args, 4);
                benchIds(args[1], args[2], Peer.seconds(args[3]));
                return 0;
            case "atomic-ids":
                Peer.arity(args, 4);
                atomicIds(args[1], args[2], Peer.positiveInt(args[3], "N"));
                return 0;
            case "bench-leader-failover":
                Peer.arity(args, 3);
                benchLeaderFailover(args[1], args[2]);
                return 0;
            case "latch-participants":
                Peer.arity(args, 5);
                latchParticipants(args[1], args[2], Peer.positiveInt(args[3], "N"), Peer.positiveInt(args[4], "SESSIONS"));
                return 0;
            case "latch-leader": {
                Peer.arity(args, 3);
                Participant leader = new LeaderLatch(Peer.connect(args[1]), args[2]).getLeader();
                Peer.out(leader.isLeader() ? "LEADER " + leader.getId() : "NO_LEADER");
                return 0;
            }
            default:
                // Commands in the other files: CacheCommands.java, DiscoveryCommands.java,
                // BarrierCommands.java, CounterCommands.java, QueueCommands.java, WideCommands.java,
                // CheckerCommands.java.
                if (CacheCommands.run(args) || DiscoveryCommands.run(args) || BarrierCommands.run(args)
                        || CounterCommands.run(args) || QueueCommands.run(args) || WideCommands.run(args)
                        || CheckerCommands.run(args) || LockLoadCommands.run(args)
                        || optional("ModeledCommands", args)) {
                    return 0;
                }
                throw new Peer.UsageException("unknown command `" + command + "`");
        }
    }

    /**
     * Runs `args` with a command file compiled only against some Curator releases
     * (ModeledCommands.java: curator-x-async, from Maven Central only), found by name; false
     * when that file is not compiled in or the command is not one of its.
     */
    private static boolean optional(String className, String[] args) throws Exception {
        Class<?> commands;
        try {
            commands = Class.forName(className);
        } catch (ClassNotFoundException e) {
            return false;
        }
        try {
            return (Boolean) commands.getMethod("run", String[].class).invoke(null, (Object) args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (e.getCause() instanceof Exception) {
                throw (Exception) e.getCause();
            }
            throw e;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Commands

    private static void lock(String connect, String path, int rounds, int holdMs) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        for (int r = 0; r < rounds; r++) {
            mutex.acquire();
            Peer.out("ACQUIRED " + r + " " + Peer.micros());
            Thread.sleep(holdMs);
            Peer.out("RELEASING " + r + " " + Peer.micros());
            mutex.release();
        }
        Peer.out("DONE");
    }

    private static void semaphoreHold(String connect, String path, int max) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, max);
        org.apache.curator.framework.recipes.locks.Lease lease = semaphore.acquire();
        Peer.out("HELD");
        Peer.waitForRelease();
        semaphore.returnLease(lease);
        Peer.out("RELEASED");
    }

    private static void holdReadWrite(String connect, String path, String side) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, path);
        InterProcessMutex mutex;
        if (side.equals("read")) {
            mutex = lock.readLock();
        } else if (side.equals("write")) {
            mutex = lock.writeLock();
        } else {
            throw new Peer.UsageException("hold-rw takes read or write, not `" + side + "`");
        }
        mutex.acquire();
        Peer.out("HELD");
        Peer.waitForRelease();
        mutex.release();
        Peer.out("RELEASED");
    }

    private static void selectorHold(String connect, String path) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        CountDownLatch done = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework leaderClient) throws Exception {
                Peer.out("LEADER");
                Peer.waitForRelease();
                done.countDown();
            }
        });
        selector.start();
        done.await();
        selector.close();
        Peer.out("RELEASED");
    }

    private static void multiHold(String connect, String paths) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        InterProcessMultiLock lock = new InterProcessMultiLock(client, Arrays.asList(paths.split(",")));
        lock.acquire();
        Peer.out("HELD");
        Peer.waitForRelease();
        lock.release();
        Peer.out("RELEASED");
    }

    private static void hold(String connect, String path) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        OwnedMutex mutex = new OwnedMutex(client, path);
        mutex.acquire();
        String node = mutex.ownNode();
        if (node == null) {
            Collection<String> nodes = mutex.getParticipantNodes();
            node = nodes.isEmpty() ? "?" : nodes.iterator().next();
        }
        Peer.out("HELD " + node);
        Peer.waitForRelease();
        mutex.release();
        Peer.out("RELEASED");
    }

    private static void tryLock(String connect, String path, int timeoutMs) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        if (mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            Peer.out("ACQUIRED");
            mutex.release();
        } else {
            Peer.out("NOT_ACQUIRED");
        }
    }

    /** One acquire+release cycle of some lock. */
    @FunctionalInterface
    private interface Cycle {
        void run() throws Exception;
    }

    private static void benchUncontended(String connect, String path, double seconds) throws Exception {
        InterProcessMutex mutex = new InterProcessMutex(Peer.connect(connect), path);
        Peer.out(Peer.result(cycles(() -> {
            mutex.acquire();
            mutex.release();
        }, seconds), seconds));
    }

    private static void benchFamily(String connect, String path, String kind, double seconds)
            throws Exception {
        CuratorFramework client = Peer.connect(connect);
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
                throw new Peer.UsageException("bench-family takes read, write, semaphore or semaphore-mutex");
        }
        Peer.out(Peer.result(cycles(cycle, seconds), seconds));
    }

    /** Runs `cycle` back to back for the warm-up and then `seconds`, timing each. */
    private static Peer.Latencies cycles(Cycle cycle, double seconds) throws Exception {
        Peer.Latencies latencies = new Peer.Latencies();
        long warm = System.nanoTime() + Peer.WARMUP_NANOS;
        long end = warm + Peer.toNanos(seconds);
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
            mutexes.add(new InterProcessMutex(Peer.connect(connect), path));
        }
        Peer.out(Peer.result(acquireLoops(mutexes, seconds), seconds));
    }

    private static void benchInProcess(String connect, String path, int threads, double seconds)
            throws Exception {
        InterProcessMutex shared = new InterProcessMutex(Peer.connect(connect), path);
        List<InterProcessMutex> mutexes = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            mutexes.add(shared);
        }
        Peer.out(Peer.result(acquireLoops(mutexes, seconds), seconds));
    }

    private static void benchWaiters(String connect, String path, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
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
            Peer.rethrow(failure);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("waiters did not queue within "
                        + QUEUE_WAIT_NANOS / 1_000_000_000L + " s");
            }
            Thread.sleep(50);
        }
        Peer.out("QUEUED n=" + n + " rss_kb=" + Peer.peakRssKb());
        long t0 = System.nanoTime();
        mutex.release();
        while (!drained.await(50, TimeUnit.MILLISECONDS)) {
            Peer.rethrow(failure);
        }
        long millis = (System.nanoTime() - t0) / 1_000_000L;
        for (Thread t : threads) {
            t.join();
        }
        Peer.rethrow(failure);
        Peer.out("RESULT drained=" + n + " millis=" + millis + " rss_kb=" + Peer.peakRssKb());
    }

    private static void benchIds(String connect, String path, double seconds) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        String prefix = ZKPaths.makePath(path, "id-");
        Peer.Latencies latencies = new Peer.Latencies();
        long last = -1;
        long warm = System.nanoTime() + Peer.WARMUP_NANOS;
        long end = warm + Peer.toNanos(seconds);
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
        Peer.out(Peer.result(latencies, seconds));
    }

    private static void atomicIds(String connect, String path, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        DistributedAtomicLong counter = new DistributedAtomicLong(client, path, new ExponentialBackoffRetry(10, 29));
        for (int i = 0; i < n; i++) {
            AtomicValue<Long> value = counter.increment();
            if (!value.succeeded()) {
                throw new IllegalStateException("increment did not succeed");
            }
            Peer.out("ID " + value.postValue());
        }
        Peer.out("DONE");
    }

    private static void benchLeaderFailover(String connect, String path) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        String id = String.valueOf(ProcessHandle.current().pid());
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                Peer.out("LEADER " + epochMicros());
            }

            @Override
            public void notLeader() {
                Peer.out("NOT_LEADER " + epochMicros());
            }
        });
        latch.start();
        while (Peer.STDIN.readLine() != null) {
            // Runs until stdin is closed.
        }
        latch.close();
    }

    private static void latchParticipants(String connect, String path, int n, int sessions) throws Exception {
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            clients.add(Peer.connect(connect));
        }
        java.util.concurrent.LinkedBlockingQueue<Integer> leaders = new java.util.concurrent.LinkedBlockingQueue<>();
        List<LeaderLatch> latches = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int index = i;
            LeaderLatch latch = new LeaderLatch(clients.get(i % sessions), path, "p" + i);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    leaders.add(index);
                }

                @Override
                public void notLeader() {}
            });
            latch.start();
            latches.add(latch);
        }
        Integer leader = leaders.poll(300, TimeUnit.SECONDS);
        if (leader == null) {
            throw new IllegalStateException("no leader within 300 s");
        }
        Peer.out("READY");
        String line;
        while ((line = Peer.STDIN.readLine()) != null) {
            if (line.equals("close-leader")) {
                latches.get(leader).close();
                leader = leaders.poll(300, TimeUnit.SECONDS);
                if (leader == null) {
                    throw new IllegalStateException("no new leader within 300 s");
                }
                Peer.out("CHANGED");
            }
        }
        for (int i = 0; i < n; i++) {
            if (latches.get(i).getState() == LeaderLatch.State.STARTED) {
                latches.get(i).close();
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Helpers

    /** Microseconds since the epoch (the leader bench compares them across processes). */
    private static long epochMicros() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /**
     * Runs one thread per entry of {@code mutexes}, each looping acquire/release until the
     * measurement window (after the warm-up) ends; returns the waits in acquire().
     */
    private static Peer.Latencies acquireLoops(List<InterProcessMutex> mutexes, double seconds) throws Exception {
        int n = mutexes.size();
        Peer.Latencies[] perThread = new Peer.Latencies[n];
        long[] window = new long[2];
        CountDownLatch ready = new CountDownLatch(n);
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int index = i;
            final InterProcessMutex mutex = mutexes.get(i);
            perThread[i] = new Peer.Latencies();
            Thread t = new Thread(() -> {
                try {
                    ready.countDown();
                    go.await();
                    long warm = window[0];
                    long end = window[1];
                    Peer.Latencies mine = perThread[index];
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
        window[0] = System.nanoTime() + Peer.WARMUP_NANOS;
        window[1] = window[0] + Peer.toNanos(seconds);
        go.countDown(); // happens-before every thread's reads of `window`
        for (Thread t : threads) {
            t.join();
        }
        Peer.rethrow(failure);
        Peer.Latencies all = new Peer.Latencies();
        for (Peer.Latencies l : perThread) {
            all.addAll(l);
        }
        return all;
    }

}
