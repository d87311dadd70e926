// CuratorTool's checker worker: a Curator process taking part in zkr's mutual-exclusion
// checker (zkr_integration_tests::checker) beside zkr-mutex-worker processes, on the same
// lock or election, with the same line protocol (times: System.nanoTime(), CLOCK_MONOTONIC in
// nanoseconds, as the zkr workers report them):
//
//   checker-worker mutex|leader CONNECT LOCK_PATH COUNTER_PATH ACQUIRE_MS SEED
//
// (`checker-worker counter CONNECT PATH`, the counter checker's worker, is CheckerCounter.java;
// `checker-worker queue ...`, the queue checker's, CheckerQueue.java.)
//
// Until stdin closes, each turn takes Curator's InterProcessMutex at LOCK_PATH (or joins a
// LeaderLatch election there and waits to lead) for at most ACQUIRE_MS, then does the unsafe
// read-modify-write of COUNTER_PATH with a write fenced by its own lock (or latch) node: a
// multi-op of check(own node) and setData, sent once on the raw ZooKeeper handle (Curator's
// retry would send it again after a lost reply, applying it twice). Curator has no fenced
// write of its own, so this is what a careful Curator user writes. The release deletes the own
// node first by hand, on the holding session, asking again after a connection loss until
// ZooKeeper answers: NoNode or SessionExpired then says the lock had been lost (Curator's
// release() ignores a node already gone, so it cannot tell); InterProcessMutex.release() then
// clears Curator's state.
// A latch's turn ends with close() (ENDED: its term may have ended before). No acquire is
// cancelled (Java cannot drop a call the way a Rust future is dropped).
//
// Lines: SESSION <id>; ACQUIRED <invoked> <returned>; TIMEOUT; HANG; ACQUIRE_ERROR <error>;
// READ <invoked> <returned> <value>; HOLDING; WRITE <invoked> <value>; COMMIT <returned>;
// FENCED <returned> <error> (the check of the own node found it gone); ABORT <returned> <error>
// (not applied for another reason, e.g. SessionMoved); UNKNOWN <returned> <error>; RELEASED <invoked> <returned>;
// LOST <invoked> <returned>; RELEASE_ERROR <invoked> <error>; ENDED <invoked> <returned>; DONE.
// A stdin line `hold <ms>` makes the next critical section pause that long after its read.

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.ZooKeeper;

final class CheckerCommands {
    static final String USAGE = " | checker-worker mutex|leader CONNECT LOCK_PATH COUNTER_PATH ACQUIRE_MS SEED"
            + " | checker-worker counter CONNECT PATH"
            + " | checker-worker queue CONNECT QUEUE LOCKS DONE WORK_MS CONSUMERS";

    /** How much longer than its timeout an acquire may take before it counts as hung. */
    private static final long HANG_MARGIN_NANOS = 3_000_000_000L;

    private CheckerCommands() {}

    /** Runs `args` if it is this file's command; false if it is not. */
    static boolean run(String[] args) throws Exception {
        if (!args[0].equals("checker-worker")) {
            return false;
        }
        if (args.length > 1 && args[1].equals("counter")) {
            Peer.arity(args, 4);
            CheckerCounter.run(args[2], args[3]);
            return true;
        }
        if (args.length > 1 && args[1].equals("queue")) {
            Peer.arity(args, 8);
            CheckerQueue.run(args[2], args[3], args[4], args[5], Peer.positiveInt(args[6], "WORK_MS"),
                    Peer.positiveInt(args[7], "CONSUMERS"));
            return true;
        }
        Peer.arity(args, 7);
        if (!args[1].equals("mutex") && !args[1].equals("leader")) {
            throw new Peer.UsageException("the mode is mutex or leader, not " + args[1]);
        }
        long seed;
        try {
            seed = Long.parseUnsignedLong(args[6]);
        } catch (NumberFormatException e) {
            throw new Peer.UsageException("SEED must be a number, not " + args[6]);
        }
        new Worker(args[1].equals("leader"), args[2], args[3], args[4], Peer.positiveInt(args[5], "ACQUIRE_MS"), seed)
                .run();
        return true;
    }

    private static final class Worker {
        private final boolean leader;
        private final CuratorFramework client;
        private final String lockPath;
        private final String counterPath;
        private final int acquireMs;
        private final Random random;
        private final BlockingQueue<Long> holds = new LinkedBlockingQueue<>();
        private final AtomicBoolean stop = new AtomicBoolean();

        Worker(boolean leader, String connect, String lockPath, String counterPath, int acquireMs, long seed)
                throws Exception {
            this.leader = leader;
            this.client = Peer.connect(connect);
            this.lockPath = lockPath;
            this.counterPath = counterPath;
            this.acquireMs = acquireMs;
            this.random = new Random(seed);
        }

        void run() throws Exception {
            announceSessions();
            Thread commands = new Thread(this::readCommands, "checker-commands");
            commands.setDaemon(true);
            commands.start();
            CuratorTool.OwnedMutex mutex = new CuratorTool.OwnedMutex(client, lockPath);
            while (!stop.get()) {
                if (leader) {
                    leadOnce();
                } else {
                    lockOnce(mutex);
                }
            }
            Peer.out("DONE");
        }

        private void announceSessions() throws Exception {
            Peer.out("SESSION " + sessionId());
            client.getConnectionStateListenable().addListener((c, state) -> {
                if (state == ConnectionState.RECONNECTED || state == ConnectionState.CONNECTED) {
                    try {
                        Peer.out("SESSION " + sessionId());
                    } catch (Exception e) {
                        // No handle at the moment: the next state change says it.
                    }
                }
            });
        }

        private long sessionId() throws Exception {
            return client.getZookeeperClient().getZooKeeper().getSessionId();
        }

        private void readCommands() {
            try {
                String line;
                while ((line = Peer.STDIN.readLine()) != null) {
                    if (line.startsWith("hold ")) {
                        holds.add(Long.parseLong(line.substring(5).trim()));
                    }
                }
            } catch (Exception e) {
                // A broken stdin is its end.
            }
            stop.set(true);
        }

        private void lockOnce(CuratorTool.OwnedMutex mutex) throws Exception {
            long invoked = System.nanoTime();
            boolean acquired;
            try {
                acquired = mutex.acquire(acquireMs, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                Peer.out("ACQUIRE_ERROR " + e);
                Thread.sleep(50);
                return;
            }
            if (!acquired || hung(invoked)) {
                if (acquired) {
                    mutex.release();
                }
                return;
            }
            Peer.out("ACQUIRED " + invoked + " " + System.nanoTime());
            // The handle of the session that holds the node: the release must not move to a
            // later session (there the node is gone, or is somebody else's).
            ZooKeeper holding = client.getZookeeperClient().getZooKeeper();
            String own = mutex.ownNode();
            Peer.out(criticalSection(holding, own));
            Peer.out(release(holding, own));
            try {
                mutex.release();
            } catch (Exception e) {
                // Curator's own state: the node is gone or goes with the session.
            }
        }

        /**
         * Deletes `own` on `holding`, asking again after a connection loss until ZooKeeper
         * answers (as zkr's release does): RELEASED once deleted, LOST when the node or its
         * session was gone. A release given up on a connection loss would claim the hold
         * lasted until then, where its session may have expired long before.
         */
        private String release(ZooKeeper holding, String own) throws InterruptedException {
            long releasing = System.nanoTime();
            long deadline = releasing + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    holding.delete(own, -1);
                    return "RELEASED " + releasing + " " + System.nanoTime();
                } catch (KeeperException.NoNodeException | KeeperException.SessionExpiredException e) {
                    return "LOST " + releasing + " " + System.nanoTime();
                } catch (KeeperException.ConnectionLossException e) {
                    if (System.nanoTime() > deadline) {
                        return "RELEASE_ERROR " + releasing + " " + e;
                    }
                    Thread.sleep(100);
                } catch (Exception e) {
                    return "RELEASE_ERROR " + releasing + " " + e;
                }
            }
        }

        private void leadOnce() throws Exception {
            LeaderLatch latch = new LeaderLatch(client, lockPath, "curator");
            long invoked = System.nanoTime();
            boolean leading;
            try {
                latch.start();
                leading = latch.await(acquireMs, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                Peer.out("ACQUIRE_ERROR " + e);
                latch.close();
                Thread.sleep(50);
                return;
            }
            if (leading && !hung(invoked)) {
                Peer.out("ACQUIRED " + invoked + " " + System.nanoTime());
                Peer.out(criticalSection(client.getZookeeperClient().getZooKeeper(), latch.getOurPath()));
                long ending = System.nanoTime();
                latch.close();
                Peer.out("ENDED " + ending + " " + System.nanoTime());
                return;
            }
            latch.close();
        }

        /** TIMEOUT or HANG when an acquire invoked at `invoked` came back late; false in time. */
        private boolean hung(long invoked) {
            long took = System.nanoTime() - invoked;
            if (took > TimeUnit.MILLISECONDS.toNanos(acquireMs) + HANG_MARGIN_NANOS) {
                Peer.out("HANG");
                return true;
            }
            return false;
        }

        /**
         * Read, pause, write value + 1 fenced by `own`, on `zk` (the holding session's handle);
         * the line that says how the write went.
         */
        private String criticalSection(ZooKeeper zk, String own) throws Exception {
            long invoked = System.nanoTime();
            long value;
            try {
                byte[] data = zk.getData(counterPath, false, null);
                String text = new String(data, StandardCharsets.UTF_8).trim();
                value = text.isEmpty() ? 0 : Long.parseLong(text);
            } catch (Exception e) {
                return "ABORT " + System.nanoTime() + " reading the counter: " + e;
            }
            Peer.out("READ " + invoked + " " + System.nanoTime() + " " + value);
            Long hold = holds.poll();
            if (hold != null) {
                Peer.out("HOLDING");
            }
            Thread.sleep(hold != null ? hold : 1 + random.nextInt(5));
            Peer.out("WRITE " + System.nanoTime() + " " + (value + 1));
            byte[] next = Long.toString(value + 1).getBytes(StandardCharsets.UTF_8);
            try {
                zk.multi(Arrays.asList(Op.check(own, -1), Op.setData(counterPath, next, -1)));
                return "COMMIT " + System.nanoTime();
            } catch (KeeperException.ConnectionLossException | KeeperException.SessionExpiredException e) {
                // No answer, or the session ended with the write in flight: it may have applied.
                return "UNKNOWN " + System.nanoTime() + " " + e;
            } catch (KeeperException.NoNodeException e) {
                // The counter is never deleted: the check of the own node failed.
                return "FENCED " + System.nanoTime() + " " + e;
            } catch (KeeperException e) {
                return "ABORT " + System.nanoTime() + " " + e;
            }
        }
    }
}
