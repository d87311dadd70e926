// CuratorTool's CuratorCache commands (Curator 5.4 `CuratorCache`, tree mode unless noted):
//
//   config-subscribers CONNECT PATH N          N sessions, each a SINGLE_NODE_CACHE on PATH (a number);
//                                              READY once all are primed, then SEEN <i> <value> <t_us>
//                                              whenever subscriber i holds a larger value; until stdin EOF
//   cache-load CONNECT PATH REPS [WARMUPS]     WARMUPS (default 3) untimed warm-up loads, then REPS loads of PATH's tree by a
//                                              new cache on one client: LOAD <rep> <micros> <nodes> each
//                                              (start() until forInitialized); RESULT median_us= nodes= reps=
//                                              cpu_us_per_load= (the JVM's CPU time over the timed loads / REPS)
//   cache-memory CONNECT PATH [no-data]        the heap a loaded cache of PATH holds (no-data: its storage
//                                              CuratorCacheStorage.dataNotCached()): used heap after
//                                              System.gc() (5 rounds) with the cache loaded minus before it
//                                              started; RESULT nodes= heap_before= heap_after= bytes_per_node=
//                                              (approximate: GC timing and heap accounting are the JVM's)
//   cache-propagation CONNECT PATH CLIENTS N   N caches of PATH over CLIENTS sessions (cache i on session
//                                              i mod CLIENTS); READY once all are initialized, then
//                                              SEEN <i> <value> <t_us> when cache i applies a create or change
//                                              of a node below PATH whose data is a number; until stdin EOF
//   group-member CONNECT PATH ID PAYLOAD       a started GroupMember (Curator's recipe, on a CuratorCache of
//                                              PATH): READY, then for each stdin line MEMBERS <id=payload,...>
//                                              (sorted by id) from getCurrentMembers(); closes it on stdin EOF
//   compressed-write CONNECT PATH VALUE        create().compressed().creatingParentsIfNeeded() of PATH with
//                                              VALUE (UTF-8), Curator's GzipCompressionProvider:
//                                              RESULT stored=<bytes stored>
//   compressed-read CONNECT PATH               getData().decompressed() of PATH: RESULT value=<UTF-8>

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.CuratorCacheStorage;
import org.apache.curator.framework.recipes.nodes.GroupMember;

final class CacheCommands {
    static final String USAGE = " | config-subscribers CONNECT PATH N | cache-load CONNECT PATH REPS [WARMUPS]"
            + " | cache-memory CONNECT PATH [no-data] | cache-propagation CONNECT PATH CLIENTS N"
            + " | group-member CONNECT PATH ID PAYLOAD | compressed-write CONNECT PATH VALUE"
            + " | compressed-read CONNECT PATH";
    private static final long INIT_TIMEOUT_S = 1800; // a million nodes take Curator 5.9 minutes
    private static final int GC_ROUNDS = 5;
    private static final int WARMUP_LOADS = 3;

    private CacheCommands() {}

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "config-subscribers":
                Peer.arity(args, 4);
                configSubscribers(args[1], args[2], Peer.positiveInt(args[3], "N"));
                return true;
            case "cache-load":
                if (args.length == 5) {
                    cacheLoad(args[1], args[2], Peer.positiveInt(args[3], "REPS"), Integer.parseInt(args[4]));
                } else {
                    Peer.arity(args, 4);
                    cacheLoad(args[1], args[2], Peer.positiveInt(args[3], "REPS"), WARMUP_LOADS);
                }
                return true;
            case "cache-memory":
                if (args.length == 4 && args[3].equals("no-data")) {
                    cacheMemory(args[1], args[2], false);
                } else {
                    Peer.arity(args, 3);
                    cacheMemory(args[1], args[2], true);
                }
                return true;
            case "cache-propagation":
                Peer.arity(args, 5);
                cachePropagation(args[1], args[2], Peer.positiveInt(args[3], "CLIENTS"),
                        Peer.positiveInt(args[4], "N"));
                return true;
            case "group-member":
                Peer.arity(args, 5);
                groupMember(args[1], args[2], args[3], args[4]);
                return true;
            case "compressed-write": {
                Peer.arity(args, 4);
                CuratorFramework client = Peer.connect(args[1]);
                client.create().compressed().creatingParentsIfNeeded()
                        .forPath(args[2], args[3].getBytes(StandardCharsets.UTF_8));
                Peer.out("RESULT stored=" + client.getData().forPath(args[2]).length);
                return true;
            }
            case "compressed-read": {
                Peer.arity(args, 3);
                byte[] value = Peer.connect(args[1]).getData().decompressed().forPath(args[2]);
                Peer.out("RESULT value=" + new String(value, StandardCharsets.UTF_8));
                return true;
            }
            default:
                return false;
        }
    }

    static void groupMember(String connect, String path, String id, String payload) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        GroupMember member = new GroupMember(client, path, id, payload.getBytes(StandardCharsets.UTF_8));
        member.start();
        Peer.out("READY");
        while (Peer.STDIN.readLine() != null) {
            StringBuilder line = new StringBuilder("MEMBERS ");
            String separator = "";
            for (Map.Entry<String, byte[]> entry : new TreeMap<>(member.getCurrentMembers()).entrySet()) {
                line.append(separator).append(entry.getKey()).append('=')
                        .append(new String(entry.getValue(), StandardCharsets.UTF_8));
                separator = ",";
            }
            Peer.out(line.toString());
        }
        member.close();
    }

    static void configSubscribers(String connect, String path, int n) throws Exception {
        CountDownLatch primed = new CountDownLatch(n);
        List<CuratorCache> caches = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int subscriber = i;
            final long[] held = {Long.MIN_VALUE};
            CuratorFramework client = Peer.connect(connect);
            CuratorCache cache = CuratorCache.build(client, path, CuratorCache.Options.SINGLE_NODE_CACHE);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forCreatesAndChanges((before, after) -> {
                        long t = Peer.micros();
                        long value = Long.parseLong(new String(after.getData(), StandardCharsets.UTF_8).trim());
                        synchronized (held) {
                            if (value > held[0]) {
                                held[0] = value;
                                Peer.out("SEEN " + subscriber + " " + value + " " + t);
                            }
                        }
                    })
                    .forInitialized(primed::countDown)
                    .build());
            cache.start();
            caches.add(cache);
        }
        awaitInitialized(primed);
        Peer.out("READY");
        Peer.waitForEof();
        for (CuratorCache cache : caches) {
            cache.close();
        }
    }

    private static void cacheLoad(String connect, String path, int reps, int warmups) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        for (int i = 0; i < warmups; i++) {
            loadOnce(client, path, true).close(); // warm-up: class loading and JIT, not counted
        }
        long[] micros = new long[reps];
        long cpu0 = processCpuNanos();
        for (int rep = 0; rep < reps; rep++) {
            long t0 = System.nanoTime();
            CuratorCache cache = loadOnce(client, path, true);
            micros[rep] = (System.nanoTime() - t0) / 1000L;
            int nodes = cache.size();
            cache.close();
            Peer.out("LOAD " + rep + " " + micros[rep] + " " + nodes);
        }
        long cpuPerLoad = (processCpuNanos() - cpu0) / reps / 1000L;
        CuratorCache check = loadOnce(client, path, true);
        int nodes = check.size();
        check.close();
        long[] sorted = Arrays.copyOf(micros, reps);
        Arrays.sort(sorted);
        Peer.out("RESULT median_us=" + Peer.percentile(sorted, 0.50) + " nodes=" + nodes + " reps=" + reps
                + " cpu_us_per_load=" + cpuPerLoad);
    }

    /** The JVM's CPU time (all threads, user and system), in nanoseconds. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** A started cache of `path`'s tree, once it is initialized; `data`: false for withDataNotCached. */
    private static CuratorCache loadOnce(CuratorFramework client, String path, boolean data) throws Exception {
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = data
                ? CuratorCache.build(client, path)
                : CuratorCache.builder(client, path).withStorage(CuratorCacheStorage.dataNotCached()).build();
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forInitialized(initialized::countDown)
                .build());
        cache.start();
        awaitInitialized(initialized);
        return cache;
    }

    private static void cacheMemory(String connect, String path, boolean data) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        loadOnce(client, path, data).close(); // loads the classes the measured cache will use
        long before = usedHeapAfterGc();
        CuratorCache cache = loadOnce(client, path, data);
        long after = usedHeapAfterGc();
        int nodes = cache.size(); // also keeps the cache reachable until after the measurement
        cache.close();
        long perNode = nodes == 0 ? 0 : (after - before) / nodes;
        Peer.out("RESULT nodes=" + nodes + " heap_before=" + before + " heap_after=" + after
                + " bytes_per_node=" + perNode);
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        for (int i = 0; i < GC_ROUNDS; i++) {
            System.gc();
            Thread.sleep(100); // lets finalization and concurrent phases settle; no event to await
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static void cachePropagation(String connect, String path, int clients, int n) throws Exception {
        List<CuratorFramework> sessions = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            sessions.add(Peer.connect(connect));
        }
        CountDownLatch initialized = new CountDownLatch(n);
        List<CuratorCache> caches = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int index = i;
            CuratorCache cache = CuratorCache.build(sessions.get(i % clients), path);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forCreatesAndChanges((before, after) -> seen(index, after))
                    .forInitialized(initialized::countDown)
                    .build());
            cache.start();
            caches.add(cache);
        }
        awaitInitialized(initialized);
        Peer.out("READY");
        Peer.waitForEof();
        for (CuratorCache cache : caches) {
            cache.close();
        }
    }

    private static void seen(int index, ChildData node) {
        long t = Peer.micros();
        byte[] data = node.getData();
        if (data == null || data.length == 0) {
            return;
        }
        try {
            long value = Long.parseLong(new String(data, StandardCharsets.UTF_8).trim());
            Peer.out("SEEN " + index + " " + value + " " + t);
        } catch (NumberFormatException e) {
            // Not a number: not one of the writer's values.
        }
    }

    private static void awaitInitialized(CountDownLatch latch) throws InterruptedException {
        if (!latch.await(INIT_TIMEOUT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("caches not initialized within " + INIT_TIMEOUT_S + " s");
        }
    }
}
