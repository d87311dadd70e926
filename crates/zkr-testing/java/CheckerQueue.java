// CuratorTool's queue checker worker: a Curator process consuming the lock-safe queue of zkr's
// queue checker (zkr_integration_tests::checker::queue) beside zkr-queue-worker processes, with
// zkr-queue-worker's lines:
//
//   checker-worker queue CONNECT QUEUE LOCKS DONE WORK_MS CONSUMERS
//
// CONSUMERS DistributedQueues with lockPath(LOCKS) on one CuratorFramework (one session, as
// zkr-queue-worker's consumers share one). Each item: `TAKEN <value>`, WORK_MS of work, a
// completion record `DONE/<value>-curator-<same|replaced>-<uuid>`, `DONE <value>`; then Curator
// deletes the item. Lines `session <id>` first and on every new session. Runs until killed.
//
// Curator's consumer cannot learn whether its lock still holds (CURATOR-605): a consumer whose
// session ended mid-item finishes the item, and Curator then deletes the item and the lock node
// at that path on the new session, whoever holds them by then. The record is made through the
// handle of the session the item was taken on, and says `same`, when that session holds this
// item's lock node at the start and is still there for the create; else through the client, on
// its new session, and says `replaced`: the items Curator may complete twice. (Holding *a* lock
// node is not enough: a consumer whose lock was created on a session that then expired reads
// the item on the client's new session, which may hold the other consumer's lock.) Curator
// deletes the item after the record, on the client's session by then: when that is no longer the
// session the item was taken on once the item is gone, the lock did not cover the delete (with
// Curator 5.9, seed 11 of the checker: a zkr consumer took and completed the item between the
// record and the delete), and a second record with the same uuid says `replaced`.

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

final class CheckerQueue {
    private CheckerQueue() {}

    static void run(String connect, String queue, String locks, String done, int workMs, int consumers)
            throws Exception {
        CuratorFramework client = Peer.connect(connect);
        CheckerCounter.announceSessions(client);
        for (int i = 0; i < consumers; i++) {
            DistributedQueue<String> consumer = QueueBuilder
                    .builder(client, new Consumer(client, queue, locks, done, workMs), QueueCommands.UTF8, queue)
                    .lockPath(locks)
                    .buildQueue();
            consumer.start();
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    private static final class Consumer implements QueueConsumer<String> {
        private final CuratorFramework client;
        private final String queue;
        private final String locks;
        private final String done;
        private final int workMs;

        Consumer(CuratorFramework client, String queue, String locks, String done, int workMs) {
            this.client = client;
            this.queue = queue;
            this.locks = locks;
            this.done = done;
            this.workMs = workMs;
        }

        @Override
        public void consumeMessage(String value) throws Exception {
            // The session the item was taken on, by its own handle: a record made through it
            // is made on that session or not at all.
            ZooKeeper taken = client.getZookeeperClient().getZooKeeper();
            String item = lockedItem(taken.getSessionId(), value);
            Peer.out("TAKEN " + value);
            Thread.sleep(workMs);
            String name = done + "/" + value + "-curator-%s-" + UUID.randomUUID().toString().replace("-", "");
            String same = String.format(name, "same");
            if (item != null && recordOn(taken, same)) {
                confirmDelete(item, taken, String.format(name, "replaced"));
            } else {
                // That session is gone (or held no lock): Curator's consumer finishes the item
                // all the same, on its client's new session (CURATOR-605). A `same` record may
                // be there all the same (its create applied, its answer lost with the session):
                // this one, with its uuid, says the session did not last.
                record(String.format(name, "replaced"));
            }
            Peer.out("DONE " + value);
        }

        /** Creates `path` on the session of `handle`; false once that session is gone. */
        private static boolean recordOn(ZooKeeper handle, String path) throws InterruptedException {
            while (true) {
                try {
                    handle.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                    return true;
                } catch (KeeperException.NodeExistsException made) {
                    return true; // a resend after a lost answer
                } catch (KeeperException.ConnectionLossException e) {
                    if (!handle.getState().isAlive()) {
                        return false; // closed: Curator replaced it
                    }
                    Thread.sleep(100); // the handle reconnects the same session
                } catch (KeeperException e) {
                    System.err.println("record " + path + " on its session: " + e);
                    return false;
                }
            }
        }

        /** Creates `path` through the client, tried until it is there: thrown, the item would be
         * put back (Curator's ErrorMode.REQUEUE) and completed again. */
        private void record(String path) throws InterruptedException {
            while (true) {
                try {
                    client.create().withMode(CreateMode.PERSISTENT).forPath(path, new byte[0]);
                    return;
                } catch (KeeperException.NodeExistsException made) {
                    return;
                } catch (Exception e) {
                    System.err.println("record " + path + ": " + e);
                    Thread.sleep(100);
                }
            }
        }

        @Override
        public void stateChanged(CuratorFramework client, ConnectionState newState) {}

        /** In the background: once `item` is gone from the queue (Curator deletes it after this
         * consumer returns), records `replaced` when the client's session is no longer `taken`. */
        private void confirmDelete(String item, ZooKeeper taken, String replaced) {
            Thread confirm = new Thread(() -> {
                try {
                    long deadline = System.nanoTime() + 60_000_000_000L;
                    while (client.checkExists().forPath(queue + "/" + item) != null) {
                        if (System.nanoTime() > deadline) {
                            System.err.println("item " + item + " still there after 60 s");
                            return;
                        }
                        Thread.sleep(20);
                    }
                    if (client.getZookeeperClient().getZooKeeper() != taken || !taken.getState().isAlive()) {
                        System.err.println("item " + item + " deleted after the session it was taken on, 0x"
                                + Long.toHexString(taken.getSessionId()) + ", was replaced");
                        record(replaced);
                    }
                } catch (Exception e) {
                    System.err.println("confirming the delete of " + item + ": " + e);
                    try {
                        record(replaced);
                    } catch (InterruptedException stop) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            confirm.setDaemon(true);
            confirm.start();
        }

        /** The item holding `value` whose lock node `session` owns, or null: the one whose data
         * is `value`'s (Curator's item format: version, one item, end). */
        private String lockedItem(long session, String value) {
            byte[] expected = itemBytes(value);
            try {
                for (String name : client.getChildren().forPath(locks)) {
                    Stat stat = client.checkExists().forPath(locks + "/" + name);
                    if (stat == null || stat.getEphemeralOwner() != session) {
                        continue;
                    }
                    try {
                        if (Arrays.equals(client.getData().forPath(queue + "/" + name), expected)) {
                            return name;
                        }
                    } catch (KeeperException.NoNodeException gone) {
                        // another consumer's item, completed meanwhile
                    }
                }
            } catch (Exception e) {
                // Not known to hold it: the record says `replaced`.
                System.err.println("listing the locks: " + e);
            }
            return null;
        }

        /** One UTF-8 item in Curator's queue item format (`ItemSerializer`, package-private). */
        private static byte[] itemBytes(String value) {
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(4 + 1 + 4 + bytes.length + 1)
                    .putInt(0x00010001).put((byte) 0x01).putInt(bytes.length).put(bytes).put((byte) 0x02)
                    .array();
        }
    }
}
