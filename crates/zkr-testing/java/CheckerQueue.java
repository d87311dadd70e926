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
// handle of the session the item was taken on, and says `same`, when that session holds a lock
// node at the start and is still there for the create; else through the client, on its new
// session, and says `replaced`: the items Curator may complete twice.

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
                    .builder(client, new Consumer(client, locks, done, workMs), QueueCommands.UTF8, queue)
                    .lockPath(locks)
                    .buildQueue();
            consumer.start();
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    private static final class Consumer implements QueueConsumer<String> {
        private final CuratorFramework client;
        private final String locks;
        private final String done;
        private final int workMs;

        Consumer(CuratorFramework client, String locks, String done, int workMs) {
            this.client = client;
            this.locks = locks;
            this.done = done;
            this.workMs = workMs;
        }

        @Override
        public void consumeMessage(String value) throws Exception {
            // The session the item was taken on, by its own handle: a record made through it
            // is made on that session or not at all.
            ZooKeeper taken = client.getZookeeperClient().getZooKeeper();
            boolean held = holdsALock(taken.getSessionId());
            Peer.out("TAKEN " + value);
            Thread.sleep(workMs);
            String name = done + "/" + value + "-curator-%s-" + UUID.randomUUID().toString().replace("-", "");
            String same = String.format(name, "same");
            if (!(held && recordOn(taken, same)) && client.checkExists().forPath(same) == null) {
                // That session is gone (or held no lock): Curator's consumer finishes the item
                // all the same, on its client's new session (CURATOR-605).
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

        /** Is some lock node under LOCKS owned by `session` (one of its consumers' items)? */
        private boolean holdsALock(long session) {
            try {
                for (String name : client.getChildren().forPath(locks)) {
                    Stat stat = client.checkExists().forPath(locks + "/" + name);
                    if (stat != null && stat.getEphemeralOwner() == session) {
                        return true;
                    }
                }
            } catch (Exception e) {
                // Not known to hold one: the record says `replaced`.
                System.err.println("listing the locks: " + e);
            }
            return false;
        }
    }
}
