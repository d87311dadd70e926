# The kazoo side of benches/src/bin/zk-stall.rs: `python3 kazoo_stall.py CONNECT SECONDS`
# runs create + delete cycles on one kazoo session and prints any cycle over 500 ms.
import sys, time
from kazoo.client import KazooClient
cs = sys.argv[1]; secs = float(sys.argv[2])
zk = KazooClient(hosts=cs, timeout=10.0); zk.start()
zk.ensure_path("/kstall")
end = time.time() + secs; n = 0; worst = 0
while time.time() < end:
    t = time.time()
    p = zk.create("/kstall/n-", b"", ephemeral=True, sequence=True)
    zk.delete(p)
    d = time.time() - t; worst = max(worst, d); n += 1
    if d > 0.5: print("kazoo: cycle %d took %.3f s" % (n, d), flush=True)
print("kazoo: %d cycles, worst %.3f s" % (n, worst), flush=True)
zk.stop()
