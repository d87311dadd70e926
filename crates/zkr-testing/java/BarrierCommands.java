// CuratorTool's barrier and revocation commands: Curator 5.4's DistributedBarrier,
// DistributedDoubleBarrier, and InterProcessMutex.makeRevocable with Revoker.attemptRevoke.
//
//   barrier-wait CONNECT PATH TIMEOUT_MS
//                      WAITING, then DistributedBarrier.waitOnBarrier(TIMEOUT_MS):
//                      RESULT passed=true|false
//   double-barrier CONNECT PATH N TIMEOUT_MS
//                      a DistributedDoubleBarrier of N members: ENTERED true|false after
//                      enter(TIMEOUT_MS); when entered, a `leave` line on stdin makes it
//                      leave(TIMEOUT_MS): LEFT true|false; then (or when not entered) until stdin EOF
//   revocable-hold CONNECT PATH
//                      an InterProcessMutex made revocable: ACQUIRED <lock node path>; when asked
//                      to release: REVOKE_REQUESTED, then it releases: RELEASED; until stdin EOF
//   revoke CONNECT LOCK_NODE_PATH
//                      Revoker.attemptRevoke: RESULT revoked=true

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;

final class BarrierCommands {
    static final String USAGE = " | barrier-wait CONNECT PATH TIMEOUT_MS | double-barrier CONNECT PATH N TIMEOUT_MS"
            + " | revocable-hold CONNECT PATH | revoke CONNECT LOCK_NODE_PATH";

    private BarrierCommands() {}

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "barrier-wait":
                Peer.arity(args, 4);
                barrierWait(args[1], args[2], Peer.nonNegativeInt(args[3], "TIMEOUT_MS"));
                return true;
            case "double-barrier":
                Peer.arity(args, 5);
                doubleBarrier(args[1], args[2], Peer.positiveInt(args[3], "N"),
                        Peer.nonNegativeInt(args[4], "TIMEOUT_MS"));
                return true;
            case "revocable-hold":
                Peer.arity(args, 3);
                revocableHold(args[1], args[2]);
                return true;
            case "revoke":
                Peer.arity(args, 3);
                Revoker.attemptRevoke(Peer.connect(args[1]), args[2]);
                Peer.out("RESULT revoked=true");
                return true;
            default:
                return false;
        }
    }

    static void barrierWait(String connect, String path, int timeoutMs) throws Exception {
        DistributedBarrier barrier = new DistributedBarrier(Peer.connect(connect), path);
        Peer.out("WAITING");
        boolean passed = barrier.waitOnBarrier(timeoutMs, TimeUnit.MILLISECONDS);
        Peer.out("RESULT passed=" + passed);
    }

    static void doubleBarrier(String connect, String path, int n, int timeoutMs) throws Exception {
        DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(Peer.connect(connect), path, n);
        boolean entered = barrier.enter(timeoutMs, TimeUnit.MILLISECONDS);
        Peer.out("ENTERED " + entered);
        if (entered) {
            String line;
            while ((line = Peer.STDIN.readLine()) != null && !line.trim().equals("leave")) {
                // Waits for the test to say leave.
            }
            if (line != null) {
                Peer.out("LEFT " + barrier.leave(timeoutMs, TimeUnit.MILLISECONDS));
            }
        }
        Peer.waitForEof();
    }

    static void revocableHold(String connect, String path) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        CountDownLatch revoked = new CountDownLatch(1);
        mutex.makeRevocable(forLock -> {
            Peer.out("REVOKE_REQUESTED");
            revoked.countDown();
        });
        mutex.acquire();
        List<String> nodes = (List<String>) mutex.getParticipantNodes();
        Peer.out("ACQUIRED " + nodes.get(0));
        Thread eof = new Thread(() -> {
            try {
                Peer.waitForEof();
            } catch (Exception ignored) {
                // Exits below either way.
            }
            revoked.countDown();
        }, "stdin-eof");
        eof.setDaemon(true);
        eof.start();
        revoked.await();
        mutex.release();
        Peer.out("RELEASED");
        Peer.waitForEof();
    }
}
