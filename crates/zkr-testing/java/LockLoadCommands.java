// CuratorTool's lock-family commands for the server's load (issue 47 item 3): many waiters at
// once on one InterProcessMutex or InterProcessSemaphoreV2, spread over some sessions.
//
//   lock-load mutex|semaphore CONNECT PATH WAITERS SESSIONS LEASES
//                      SESSIONS clients (one InterProcessMutex, or one InterProcessSemaphoreV2 of
//                      LEASES leases, each): CONNECTED once all are up; a stdin line `go` starts
//                      WAITERS threads at once (thread i on session i mod SESSIONS), each of which
//                      acquires once and releases: DRAINED waiters=<WAITERS> millis=<from the go to
//                      the last release>; then until stdin EOF

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;

final class LockLoadCommands {
    static final String USAGE = " | lock-load mutex|semaphore CONNECT PATH WAITERS SESSIONS LEASES";

    private LockLoadCommands() {}

    /** One waiter's turn: acquire once, release. */
    interface Turn {
        void run() throws Exception;
    }

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        if (!args[0].equals("lock-load")) {
            return false;
        }
        Peer.arity(args, 7);
        String kind = args[1];
        if (!kind.equals("mutex") && !kind.equals("semaphore")) {
            throw new Peer.UsageException("lock-load takes mutex or semaphore, not `" + kind + "`");
        }
        load(kind, args[2], args[3], Peer.positiveInt(args[4], "WAITERS"), Peer.positiveInt(args[5], "SESSIONS"),
                Peer.positiveInt(args[6], "LEASES"));
        return true;
    }

    private static void load(String kind, String connect, String path, int waiters, int sessions, int leases)
            throws Exception {
        List<Turn> turns = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            CuratorFramework client = Peer.connect(connect);
            if (kind.equals("mutex")) {
                InterProcessMutex mutex = new InterProcessMutex(client, path);
                turns.add(() -> {
                    mutex.acquire();
                    mutex.release();
                });
            } else {
                InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
                turns.add(() -> semaphore.returnLease(semaphore.acquire()));
            }
        }
        Peer.out("CONNECTED");
        String go = Peer.STDIN.readLine();
        if (!"go".equals(go)) {
            throw new IllegalStateException("expected `go` on stdin, got " + go);
        }
        CountDownLatch done = new CountDownLatch(waiters);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long start = System.nanoTime();
        for (int i = 0; i < waiters; i++) {
            Turn turn = turns.get(i % sessions);
            Thread thread = new Thread(() -> {
                try {
                    turn.run();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            });
            thread.setDaemon(true);
            thread.start();
        }
        if (!done.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("waiters not done in time: " + done.getCount() + " left");
        }
        long end = System.nanoTime();
        Peer.rethrow(failure);
        Peer.out(String.format(Locale.ROOT, "DRAINED waiters=%d millis=%.1f", waiters, (end - start) / 1e6));
        Peer.waitForEof();
    }
}
