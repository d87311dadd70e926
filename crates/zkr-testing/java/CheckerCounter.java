// CuratorTool's counter checker worker: a Curator process incrementing the counter of zkr's
// counter checker (zkr_integration_tests::checker::ids) beside zkr-id-worker processes, with
// zkr-id-worker's `counter` lines (times: System.nanoTime(), CLOCK_MONOTONIC in nanoseconds):
//
//   checker-worker counter CONNECT PATH
//
// Until stdin closes (the increment in flight then ends first), one
// DistributedAtomicLong.increment() at a time (lost races retried under RetryNTimes(20, 5), as
// zkr's workers do). Lines: `session <id>` first and on every
// (re)connection; `+ <invoked>` before each increment; `<post> <invoked> <returned>` for one
// that succeeded; `unknown <invoked>` for one that threw (its last write may have applied).
//
// Curator resends a write after a connection loss (its client retry policy) and counts the
// BadVersion (or NodeExists) its resent write then gets as a lost race: a write applied before
// the loss is applied again by the next try, a value nobody is handed (docs/reliability.md;
// CURATOR-584). Each resend can hide one such write (the writes are versioned), so every resend
// of the client during an increment (of its reads too: the count cannot tell them apart) is
// declared as `maybe <invoked>`: an increment that may have been applied once, at any time
// after <invoked>. The history check then holds Curator's increments to what Curator can know,
// and zkr's to the exact rule.

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.RetryPolicy;
import org.apache.curator.RetrySleeper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

final class CheckerCounter {
    private CheckerCounter() {}

    /** The client's retry policy, counting the resends it allows. */
    private static final class CountingRetry implements RetryPolicy {
        private final RetryPolicy inner = new ExponentialBackoffRetry(200, 5);
        final AtomicLong resends = new AtomicLong();

        @Override
        public boolean allowRetry(int retryCount, long elapsedTimeMs, RetrySleeper sleeper) {
            boolean allowed = inner.allowRetry(retryCount, elapsedTimeMs, sleeper);
            if (allowed) {
                resends.incrementAndGet();
            }
            return allowed;
        }
    }

    static void run(String connect, String path) throws Exception {
        CountingRetry retry = new CountingRetry();
        CuratorFramework client = Peer.connect(connect, retry);
        announceSessions(client);
        // Set when stdin closes; the increment in flight then ends (and says how) first.
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (Peer.STDIN.readLine() != null) {
                    // Only its end matters.
                }
            } catch (Exception e) {
                // A broken stdin is its end.
            }
            stop.set(true);
        }, "checker-stdin");
        stdin.setDaemon(true);
        stdin.start();
        DistributedAtomicLong counter = new DistributedAtomicLong(client, path, new RetryNTimes(20, 5));
        while (!stop.get()) {
            long resendsBefore = retry.resends.get();
            long invoked = System.nanoTime();
            Peer.out("+ " + invoked);
            String outcome;
            try {
                AtomicValue<Long> value = counter.increment();
                outcome = value.succeeded() ? value.postValue() + " " + invoked + " " + System.nanoTime() : null;
                if (!value.succeeded()) {
                    System.err.println("error: the increment lost every race");
                }
            } catch (Exception e) {
                System.err.println("error: " + e);
                outcome = "unknown " + invoked;
            }
            long resends = retry.resends.get() - resendsBefore;
            synchronized (System.out) {
                if (outcome != null) {
                    Peer.out(outcome);
                }
                for (long i = 0; i < resends; i++) {
                    Peer.out("maybe " + invoked);
                }
            }
            Thread.sleep(2);
        }
    }

    /** `session <id>` now and on every (re)connection (the checker workers' line). */
    static void announceSessions(CuratorFramework client) throws Exception {
        Peer.out("session " + client.getZookeeperClient().getZooKeeper().getSessionId());
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.RECONNECTED || state == ConnectionState.CONNECTED) {
                try {
                    Peer.out("session " + c.getZookeeperClient().getZooKeeper().getSessionId());
                } catch (Exception e) {
                    // No handle at the moment: the next state change says it.
                }
            }
        });
    }
}
