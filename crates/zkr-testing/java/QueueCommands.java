// CuratorTool's queue commands (Curator 5.4 `DistributedQueue`, `DistributedPriorityQueue`,
// `DistributedDelayQueue`, `DistributedIdQueue` and `SimpleDistributedQueue`; items are UTF-8 strings, `<PREFIX>-<i>` for i in 0..N):
//
//   queue-put CONNECT PATH PREFIX N            DistributedQueue.put of N items, in order:
//                                              RESULT count=N
//   queue-put-multi CONNECT PATH PREFIX N      one DistributedQueue.putMulti of N items: RESULT count=N
//   priority-put CONNECT PATH PREFIX N         DistributedPriorityQueue.put of N items, item i with
//                                              priority N-1-i (so the last is taken first): RESULT count=N
//   delay-put CONNECT PATH PREFIX N DELAY_MS   DistributedDelayQueue.put of N items, item i due DELAY_MS
//                                              * (N - i) ms from now (so the last is due first): RESULT count=N
//   id-put CONNECT PATH PREFIX N               DistributedIdQueue.put of N items, item i with the id
//                                              `id/<i>|x` (Curator makes it `id_<i>_x`): RESULT count=N
//   queue-consume CONNECT PATH N               a DistributedQueue consumer: ITEM <value> per item, in
//                                              the order consumed; after N: RESULT count=N
//   queue-consume-locked CONNECT PATH LOCKPATH N   the same with lockPath(LOCKPATH)
//   priority-consume CONNECT PATH N            a DistributedPriorityQueue consumer: ITEM <value> ...;
//                                              RESULT count=N
//   simple-offer CONNECT PATH PREFIX N         SimpleDistributedQueue.offer of N items: RESULT count=N
//   simple-take CONNECT PATH N                 N SimpleDistributedQueue.take calls: ITEM <value> each;
//                                              RESULT count=N
//   queue-bench CONNECT PATH N                 DistributedQueue: N puts timed, then a consumer takes
//                                              the N items, timed: RESULT put_per_s= take_per_s=
//   queue-bench-depth CONNECT PATH TAKES       a DistributedQueue consumer on a queue filled beforehand:
//                                              RESULT start_ms=<until its first item> take_ms=<mean
//                                              time per item over the next TAKES>; STATE <state> <t_us>
//                                              on every connection state change (see WideCommands.java)
//   queue-load CONNECT PATH CONSUMERS N        CONSUMERS DistributedQueue consumers, each on a session of
//                                              its own, on a queue of N items filled beforehand:
//                                              CONNECTED once every session is up; a stdin line `go`
//                                              starts the consumers: DRAINED consumed=N millis=<from the
//                                              go to the N-th item>; closes all at stdin EOF

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;

final class QueueCommands {
    static final String USAGE = " | queue-put CONNECT PATH PREFIX N | queue-put-multi CONNECT PATH PREFIX N"
            + " | priority-put CONNECT PATH PREFIX N | queue-consume CONNECT PATH N"
            + " | queue-consume-locked CONNECT PATH LOCKPATH N | priority-consume CONNECT PATH N"
            + " | simple-offer CONNECT PATH PREFIX N | simple-take CONNECT PATH N | queue-bench CONNECT PATH N"
            + " | queue-bench-depth CONNECT PATH TAKES | delay-put CONNECT PATH PREFIX N DELAY_MS"
            + " | id-put CONNECT PATH PREFIX N | queue-load CONNECT PATH CONSUMERS N";

    private QueueCommands() {}

    /** UTF-8 strings, as zkr's `Utf8` codec. */
    static final QueueSerializer<String> UTF8 = new QueueSerializer<String>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "queue-put":
            case "queue-put-multi":
            case "priority-put":
            case "simple-offer":
                Peer.arity(args, 5);
                put(args[0], args[1], args[2], args[3], Peer.nonNegativeInt(args[4], "N"));
                return true;
            case "queue-consume":
            case "priority-consume":
                Peer.arity(args, 4);
                consume(args[0], args[1], args[2], null, Peer.nonNegativeInt(args[3], "N"));
                return true;
            case "queue-consume-locked":
                Peer.arity(args, 5);
                consume(args[0], args[1], args[2], args[3], Peer.nonNegativeInt(args[4], "N"));
                return true;
            case "simple-take":
                Peer.arity(args, 4);
                simpleTake(args[1], args[2], Peer.nonNegativeInt(args[3], "N"));
                return true;
            case "queue-bench":
                Peer.arity(args, 4);
                bench(args[1], args[2], Peer.positiveInt(args[3], "N"));
                return true;
            case "delay-put":
                Peer.arity(args, 6);
                delayPut(args[1], args[2], args[3], Peer.nonNegativeInt(args[4], "N"),
                        Peer.nonNegativeInt(args[5], "DELAY_MS"));
                return true;
            case "id-put":
                Peer.arity(args, 5);
                idPut(args[1], args[2], args[3], Peer.nonNegativeInt(args[4], "N"));
                return true;
            case "queue-bench-depth":
                Peer.arity(args, 4);
                benchDepth(args[1], args[2], Peer.positiveInt(args[3], "TAKES"));
                return true;
            case "queue-load":
                Peer.arity(args, 5);
                load(args[1], args[2], Peer.positiveInt(args[3], "CONSUMERS"), Peer.positiveInt(args[4], "N"));
                return true;
            default:
                return false;
        }
    }

    private static QueueBuilder<String> builder(CuratorFramework client, QueueConsumer<String> consumer, String path) {
        return QueueBuilder.builder(client, consumer, UTF8, path).putInBackground(false);
    }

    private static void put(String command, String connect, String path, String prefix, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        if (command.equals("simple-offer")) {
            SimpleDistributedQueue queue = new SimpleDistributedQueue(client, path);
            for (int i = 0; i < n; i++) {
                queue.offer((prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
            }
        } else if (command.equals("priority-put")) {
            DistributedPriorityQueue<String> queue = builder(client, null, path).buildPriorityQueue(0);
            queue.start();
            for (int i = 0; i < n; i++) {
                queue.put(prefix + "-" + i, n - 1 - i);
            }
            queue.close();
        } else {
            DistributedQueue<String> queue = builder(client, null, path).buildQueue();
            queue.start();
            if (command.equals("queue-put-multi")) {
                List<String> items = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    items.add(prefix + "-" + i);
                }
                queue.putMulti(multi(items));
            } else {
                for (int i = 0; i < n; i++) {
                    queue.put(prefix + "-" + i);
                }
            }
            queue.close();
        }
        Peer.out("RESULT count=" + n);
    }

    private static MultiItem<String> multi(List<String> items) {
        final java.util.Iterator<String> it = items.iterator();
        return () -> it.hasNext() ? it.next() : null;
    }

    /** A consumer that prints each item and counts down. */
    private static QueueConsumer<String> printing(CountDownLatch latch) {
        return new QueueConsumer<String>() {
            @Override
            public void consumeMessage(String message) {
                Peer.out("ITEM " + message);
                latch.countDown();
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {}
        };
    }

    private static void consume(String command, String connect, String path, String lockPath, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        CountDownLatch latch = new CountDownLatch(n);
        QueueBuilder<String> builder = builder(client, printing(latch), path);
        if (lockPath != null) {
            builder = builder.lockPath(lockPath);
        }
        java.io.Closeable queue;
        if (command.equals("priority-consume")) {
            DistributedPriorityQueue<String> priority = builder.buildPriorityQueue(0);
            priority.start();
            queue = priority;
        } else {
            DistributedQueue<String> plain = builder.buildQueue();
            plain.start();
            queue = plain;
        }
        latch.await();
        queue.close();
        Peer.out("RESULT count=" + n);
    }

    private static void simpleTake(String connect, String path, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        SimpleDistributedQueue queue = new SimpleDistributedQueue(client, path);
        for (int i = 0; i < n; i++) {
            Peer.out("ITEM " + new String(queue.take(), StandardCharsets.UTF_8));
        }
        Peer.out("RESULT count=" + n);
    }

    private static void bench(String connect, String path, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        DistributedQueue<String> producer = builder(client, null, path).buildQueue();
        producer.start();
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            producer.put("item-" + i);
        }
        double putSeconds = (System.nanoTime() - start) / 1e9;
        producer.close();
        CountDownLatch latch = new CountDownLatch(n);
        QueueConsumer<String> counting = new QueueConsumer<String>() {
            @Override
            public void consumeMessage(String message) {
                latch.countDown();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        start = System.nanoTime();
        DistributedQueue<String> consumer = builder(client, counting, path).buildQueue();
        consumer.start();
        if (!latch.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("items not consumed in time");
        }
        double takeSeconds = (System.nanoTime() - start) / 1e9;
        consumer.close();
        Peer.out(String.format(Locale.ROOT, "RESULT put_per_s=%.1f take_per_s=%.1f", n / putSeconds, n / takeSeconds));
    }

    private static void benchDepth(String connect, String path, int takes) throws Exception {
        CuratorFramework client = WideCommands.connectReporting(connect);
        CountDownLatch first = new CountDownLatch(1);
        CountDownLatch rest = new CountDownLatch(takes + 1);
        long[] firstAt = new long[1];
        QueueConsumer<String> counting = new QueueConsumer<String>() {
            @Override
            public void consumeMessage(String message) {
                if (first.getCount() == 1) {
                    firstAt[0] = System.nanoTime();
                    first.countDown();
                }
                rest.countDown();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        long start = System.nanoTime();
        DistributedQueue<String> consumer = builder(client, counting, path).buildQueue();
        consumer.start();
        if (!rest.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("items not consumed in time");
        }
        long end = System.nanoTime();
        consumer.close();
        Peer.out(String.format(Locale.ROOT, "RESULT start_ms=%.1f take_ms=%.3f",
                (firstAt[0] - start) / 1e6, (end - firstAt[0]) / 1e6 / takes));
    }

    /** `queue-load`: see the header. */
    private static void load(String connect, String path, int consumers, int n) throws Exception {
        CountDownLatch drained = new CountDownLatch(n);
        QueueConsumer<String> counting = new QueueConsumer<String>() {
            @Override
            public void consumeMessage(String message) {
                drained.countDown();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            clients.add(Peer.connect(connect));
        }
        Peer.out("CONNECTED");
        String go = Peer.STDIN.readLine();
        if (!"go".equals(go)) {
            throw new IllegalStateException("expected `go` on stdin, got " + go);
        }
        long start = System.nanoTime();
        List<DistributedQueue<String>> queues = new ArrayList<>();
        for (CuratorFramework client : clients) {
            DistributedQueue<String> queue = builder(client, counting, path).buildQueue();
            queue.start();
            queues.add(queue);
        }
        if (!drained.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("items not consumed in time: " + drained.getCount() + " left");
        }
        long end = System.nanoTime();
        Peer.out(String.format(Locale.ROOT, "DRAINED consumed=%d millis=%.1f", n, (end - start) / 1e6));
        Peer.waitForEof();
        for (DistributedQueue<String> queue : queues) {
            queue.close();
        }
    }

    private static void delayPut(String connect, String path, String prefix, int n, int delayMs) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        DistributedDelayQueue<String> queue = builder(client, null, path).buildDelayQueue();
        queue.start();
        long now = System.currentTimeMillis();
        for (int i = 0; i < n; i++) {
            queue.put(prefix + "-" + i, now + (long) delayMs * (n - i));
        }
        queue.close();
        Peer.out("RESULT count=" + n);
    }

    private static void idPut(String connect, String path, String prefix, int n) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        DistributedIdQueue<String> queue = builder(client, null, path).buildIdQueue();
        queue.start();
        for (int i = 0; i < n; i++) {
            queue.put(prefix + "-" + i, "id/" + i + "|x");
        }
        queue.close();
        Peer.out("RESULT count=" + n);
    }
}
