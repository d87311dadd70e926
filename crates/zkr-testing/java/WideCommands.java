// CuratorTool's wide-directory commands (issue 32 item 2): Curator 5.4's caches and lock on one
// parent with very many children. Each prints `STATE <state> <t_us>` whenever its session's
// connection state changes (SUSPENDED, RECONNECTED, LOST, ...), so a caller can count the
// connection losses of a listing over the Java client's `jute.maxbuffer` (1 MiB by default;
// raise it with `-Djute.maxbuffer=BYTES`, e.g. through JAVA_TOOL_OPTIONS). They wait as long as
// it takes: the caller bounds them.
//
//   wide-cache CONNECT PATH tree|children CREATES   a cache of PATH (tree: CuratorCache; children:
//                                              PathChildrenCache with data, POST_INITIALIZED_EVENT):
//                                              INITIALIZED ms=<start() until initialized> nodes=<held>;
//                                              then CREATES nodes PATH/curator-new-<i> created one at a
//                                              time, each awaited in the cache (then deleted):
//                                              RESULT init_ms= nodes= rss_before_kb=<VmRSS before start()>
//                                              rss_kb=<VmRSS once initialized> seen_ms=<mean create-to-seen>
//   wide-lock CONNECT PATH CYCLES              InterProcessMutex on PATH: CYCLES + 1 acquire + release
//                                              cycles: RESULT first_ms=<the first cycle> mean_ms=<mean of
//                                              the others> p50_ms= max_ms=

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.PathChildrenCache;
import org.apache.curator.framework.recipes.cache.PathChildrenCacheEvent;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

final class WideCommands {
    static final String USAGE = " | wide-cache CONNECT PATH tree|children CREATES | wide-lock CONNECT PATH CYCLES";
    private static final long SEEN_TIMEOUT_S = 60;

    private WideCommands() {}

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "wide-cache":
                Peer.arity(args, 5);
                if (!args[3].equals("tree") && !args[3].equals("children")) {
                    throw new Peer.UsageException("wide-cache takes tree or children, not `" + args[3] + "`");
                }
                cache(args[1], args[2], args[3].equals("tree"), Peer.nonNegativeInt(args[4], "CREATES"));
                return true;
            case "wide-lock":
                Peer.arity(args, 4);
                lock(args[1], args[2], Peer.positiveInt(args[3], "CYCLES"));
                return true;
            default:
                return false;
        }
    }

    /** Connects and reports every connection state change as `STATE <state> <t_us>`. */
    static CuratorFramework connectReporting(String connect) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        reportStates(client);
        return client;
    }

    /** Prints `STATE <state> <t_us>` on every connection state change of `client`. */
    static void reportStates(CuratorFramework client) {
        client.getConnectionStateListenable()
                .addListener((c, state) -> Peer.out("STATE " + state + " " + Peer.micros()));
    }

    /** VmRSS (the resident set now) from /proc/self/status, in kB; -1 when unavailable. */
    static long rssKb() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.UTF_8)) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.substring(6).replace("kB", "").trim());
                }
            }
        } catch (java.io.IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    private static void cache(String connect, String path, boolean tree, int creates) throws Exception {
        CuratorFramework client = connectReporting(connect);
        CountDownLatch initialized = new CountDownLatch(1);
        ConcurrentHashMap<String, CountDownLatch> awaited = new ConcurrentHashMap<>();
        long rssBefore = rssKb();
        long start = System.nanoTime();
        java.io.Closeable closer;
        java.util.function.IntSupplier size;
        if (tree) {
            CuratorCache cache = CuratorCache.build(client, path);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forInitialized(initialized::countDown)
                    .forCreates(node -> arrived(awaited, node.getPath()))
                    .build());
            cache.start();
            closer = cache;
            size = cache::size;
        } else {
            @SuppressWarnings("deprecation")
            PathChildrenCache cache = new PathChildrenCache(client, path, true);
            cache.getListenable().addListener((c, event) -> {
                if (event.getType() == PathChildrenCacheEvent.Type.INITIALIZED) {
                    initialized.countDown();
                } else if (event.getType() == PathChildrenCacheEvent.Type.CHILD_ADDED) {
                    arrived(awaited, event.getData().getPath());
                }
            });
            cache.start(PathChildrenCache.StartMode.POST_INITIALIZED_EVENT);
            closer = cache;
            size = () -> cache.getCurrentData().size();
        }
        initialized.await();
        double initMs = (System.nanoTime() - start) / 1e6;
        long rss = rssKb();
        int nodes = size.getAsInt();
        Peer.out(String.format(Locale.ROOT, "INITIALIZED ms=%.1f nodes=%d", initMs, nodes));
        long seenNanos = 0;
        for (int i = 0; i < creates; i++) {
            String child = path + "/curator-new-" + i;
            CountDownLatch seen = new CountDownLatch(1);
            awaited.put(child, seen);
            long t0 = System.nanoTime();
            client.create().forPath(child, new byte[0]);
            if (!seen.await(SEEN_TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException(child + " not seen by the cache within " + SEEN_TIMEOUT_S + " s");
            }
            seenNanos += System.nanoTime() - t0;
            client.delete().forPath(child);
        }
        closer.close();
        Peer.out(String.format(Locale.ROOT, "RESULT init_ms=%.1f nodes=%d rss_before_kb=%d rss_kb=%d seen_ms=%.3f",
                initMs, nodes, rssBefore, rss, creates == 0 ? 0.0 : seenNanos / 1e6 / creates));
    }

    private static void arrived(ConcurrentHashMap<String, CountDownLatch> awaited, String path) {
        CountDownLatch latch = awaited.remove(path);
        if (latch != null) {
            latch.countDown();
        }
    }

    private static void lock(String connect, String path, int cycles) throws Exception {
        CuratorFramework client = connectReporting(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        long[] nanos = new long[cycles + 1];
        for (int i = 0; i <= cycles; i++) {
            long t0 = System.nanoTime();
            mutex.acquire();
            mutex.release();
            nanos[i] = System.nanoTime() - t0;
        }
        long[] rest = Arrays.copyOfRange(nanos, 1, nanos.length);
        Arrays.sort(rest);
        double mean = Arrays.stream(rest).average().orElse(0) / 1e6;
        Peer.out(String.format(Locale.ROOT, "RESULT first_ms=%.1f mean_ms=%.2f p50_ms=%.2f max_ms=%.2f",
                nanos[0] / 1e6, mean, Peer.percentile(rest, 0.50) / 1e6, rest[rest.length - 1] / 1e6));
    }
}
