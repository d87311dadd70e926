// Helpers shared by CuratorTool's commands (CuratorTool.java, CacheCommands.java,
// DiscoveryCommands.java): output, connections, argument parsing, latency percentiles and the
// parent watch. Package-private; compiled together with the others.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

final class Peer {
    private Peer() {}

    static final int DEFAULT_SESSION_MS = 60_000;
    static final int CONNECTION_MS = 15_000;
    static final long WARMUP_NANOS = 1_000_000_000L;

    static final String SESSION_ENV = "ZKR_PEER_SESSION_MS";

    static final List<CuratorFramework> CLIENTS = new CopyOnWriteArrayList<>();
    static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    /** Bad command-line arguments (exit status 2). */
    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /** A growable array of latencies in nanoseconds. */
    static final class Latencies {
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

    /** Reads stdin until a `release` line or EOF. */
    static void waitForRelease() throws IOException {
        String line;
        while ((line = STDIN.readLine()) != null) {
            if (line.trim().equals("release")) {
                return;
            }
        }
    }

    static String result(Latencies latencies, double seconds) {
        long[] sorted = Arrays.copyOf(latencies.values, latencies.size);
        Arrays.sort(sorted);
        return String.format(Locale.ROOT, "RESULT ops=%d seconds=%.3f p50_us=%d p99_us=%d",
                sorted.length, seconds, percentile(sorted, 0.50) / 1000, percentile(sorted, 0.99) / 1000);
    }

    /** Nearest-rank percentile of a sorted array (0 when empty). */
    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
    }

    static CuratorFramework connect(String connect) throws Exception {
        return connect(connect, new ExponentialBackoffRetry(1000, 3));
    }

    /** A started client of `connect` whose operations retry under `retry`. */
    static CuratorFramework connect(String connect, org.apache.curator.RetryPolicy retry) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs())
                .connectionTimeoutMs(CONNECTION_MS)
                .retryPolicy(retry)
                .build();
        CLIENTS.add(client);
        client.start();
        if (!client.blockUntilConnected(CONNECTION_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("could not connect to " + connect + " within " + CONNECTION_MS + " ms");
        }
        return client;
    }

    static int sessionMs() throws UsageException {
        String value = System.getenv(SESSION_ENV);
        if (value == null || value.trim().isEmpty()) {
            return DEFAULT_SESSION_MS;
        }
        return positiveInt(value.trim(), SESSION_ENV);
    }

    static void closeClients() {
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
    static void watchParent() {
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

    static void out(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    static long micros() {
        return System.nanoTime() / 1000L;
    }

    static long toNanos(double seconds) {
        return (long) (seconds * 1e9);
    }

    /** VmHWM (peak resident set size) from /proc/self/status, in kB; -1 when unavailable. */
    static long peakRssKb() {
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

    static void rethrow(AtomicReference<Throwable> failure) throws Exception {
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

    static void arity(String[] args, int n) throws UsageException {
        if (args.length != n) {
            throw new UsageException("`" + args[0] + "` takes " + (n - 1) + " arguments, got " + (args.length - 1));
        }
    }

    static int nonNegativeInt(String value, String name) throws UsageException {
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

    static int positiveInt(String value, String name) throws UsageException {
        int v = nonNegativeInt(value, name);
        if (v == 0) {
            throw new UsageException(name + " must be positive, not 0");
        }
        return v;
    }

    static double seconds(String value) throws UsageException {
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

    /** Reads stdin until EOF (the parent closed it). */
    static void waitForEof() throws IOException {
        while (STDIN.readLine() != null) {
            // Runs until stdin closes.
        }
    }
}
