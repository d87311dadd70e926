// CuratorTool's service discovery commands: curator-x-discovery 5.4's ServiceDiscovery with
// JsonInstanceSerializer<Map>(Map.class, false) (the non-compatible mode, so `enabled` is
// written too). The payload is a JSON object; Jackson stores it with a type property,
// `"payload":{"@class":"java.util.LinkedHashMap",...}`, and reads a payload object without one
// as a map. Instances live at BASE/NAME/ID.
//
//   discovery-register CONNECT BASE NAME ID ADDRESS PORT [PAYLOAD_JSON [SSL_PORT]]
//                      registers a DYNAMIC (ephemeral) instance with uriSpec
//                      {scheme}://{address}:{port}, sslPort SSL_PORT (default PORT + 1) and the payload
//                      (default none: null); READY <the node's data as stored>; on stdin EOF
//                      unregisters: DONE
//   discovery-list CONNECT BASE NAME
//                      INSTANCE <id> <node data> per instance of queryForInstances (sorted by id);
//                      RESULT count=N
//   discovery-provider CONNECT BASE NAME N
//                      a started round-robin ServiceProvider, getInstance() N times: RESULT ids=<id,...>
//                      (the ids returned in order; null answers left out, so empty when none)
//   discovery-watch CONNECT BASE NAME
//                      a started ServiceCache: READY, then INSTANCES <sorted ids, comma-separated> (empty
//                      after the space when none) at once and after every cacheChanged; until stdin EOF
//   discovery-bench CONNECT BASE NAME COUNT PICKS
//                      a ServiceCache of NAME, timed from build() until start() returned and it
//                      holds COUNT instances; the heap used (after System.gc()) before and after;
//                      then a started round-robin ServiceProvider's getInstance(), PICKS times
//                      (or for 10 s) after as many untimed (or 5 s): RESULT load_ms= heap_before_kb=
//                      heap_kb= pick_ns= picks=<timed>

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.utils.ZKPaths;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;
import org.apache.zookeeper.KeeperException;

@SuppressWarnings({"rawtypes", "unchecked"})
final class DiscoveryCommands {
    static final String USAGE = " | discovery-register CONNECT BASE NAME ID ADDRESS PORT [PAYLOAD_JSON [SSL_PORT]]"
            + " | discovery-list CONNECT BASE NAME | discovery-provider CONNECT BASE NAME N"
            + " | discovery-watch CONNECT BASE NAME | discovery-bench CONNECT BASE NAME COUNT PICKS";
    private static final String URI_SPEC = "{scheme}://{address}:{port}";
    /** discovery-bench's picks stop after this long (half of it for the untimed ones). */
    private static final long PICK_BOUND_NS = 10_000_000_000L;

    private DiscoveryCommands() {}

    /** Runs `args` if it is one of this file's commands; false if it is not. */
    static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "discovery-register":
                if (args.length < 7 || args.length > 9) {
                    throw new Peer.UsageException("`discovery-register` takes 6 to 8 arguments, got "
                            + (args.length - 1));
                }
                register(args);
                return true;
            case "discovery-list":
                Peer.arity(args, 4);
                list(args[1], args[2], args[3]);
                return true;
            case "discovery-provider":
                Peer.arity(args, 5);
                provider(args[1], args[2], args[3], Peer.nonNegativeInt(args[4], "N"));
                return true;
            case "discovery-watch":
                Peer.arity(args, 4);
                watch(args[1], args[2], args[3]);
                return true;
            case "discovery-bench":
                Peer.arity(args, 6);
                bench(args[1], args[2], args[3], Peer.nonNegativeInt(args[4], "COUNT"),
                        Peer.nonNegativeInt(args[5], "PICKS"));
                return true;
            default:
                return false;
        }
    }

    private static ServiceDiscovery<Map> discovery(CuratorFramework client, String base) throws Exception {
        ServiceDiscovery<Map> discovery = ServiceDiscoveryBuilder.builder(Map.class)
                .client(client)
                .basePath(base)
                .serializer(new JsonInstanceSerializer<>(Map.class, false))
                .build();
        discovery.start();
        return discovery;
    }

    private static void register(String[] args) throws Exception {
        String base = args[2];
        String name = args[3];
        String id = args[4];
        int port = Peer.nonNegativeInt(args[6], "PORT");
        Map payload = args.length > 7 ? parsePayload(args[7]) : null;
        int sslPort = args.length > 8 ? Peer.nonNegativeInt(args[8], "SSL_PORT") : port + 1;
        CuratorFramework client = Peer.connect(args[1]);
        ServiceDiscovery<Map> discovery = discovery(client, base);
        ServiceInstance<Map> instance = ServiceInstance.<Map>builder()
                .name(name)
                .id(id)
                .address(args[5])
                .port(port)
                .sslPort(sslPort)
                .payload(payload)
                .uriSpec(new UriSpec(URI_SPEC))
                .serviceType(ServiceType.DYNAMIC)
                .build();
        discovery.registerService(instance);
        byte[] stored = client.getData().forPath(ZKPaths.makePath(base, name, id));
        Peer.out("READY " + new String(stored, StandardCharsets.UTF_8));
        Peer.waitForEof();
        discovery.unregisterService(instance);
        discovery.close();
        Peer.out("DONE");
    }

    private static Map parsePayload(String json) throws Peer.UsageException {
        try {
            return new ObjectMapper().readValue(json, Map.class);
        } catch (Exception e) {
            throw new Peer.UsageException("PAYLOAD_JSON must be a JSON object: " + e.getMessage());
        }
    }

    private static void list(String connect, String base, String name) throws Exception {
        CuratorFramework client = Peer.connect(connect);
        ServiceDiscovery<Map> discovery = discovery(client, base);
        List<ServiceInstance<Map>> instances = new ArrayList<>(discovery.queryForInstances(name));
        instances.sort((a, b) -> a.getId().compareTo(b.getId()));
        for (ServiceInstance<Map> instance : instances) {
            String data;
            try {
                byte[] raw = client.getData().forPath(ZKPaths.makePath(base, name, instance.getId()));
                data = new String(raw, StandardCharsets.UTF_8);
            } catch (KeeperException.NoNodeException e) {
                data = "null"; // unregistered since the query
            }
            Peer.out("INSTANCE " + instance.getId() + " " + data);
        }
        Peer.out("RESULT count=" + instances.size());
        discovery.close();
    }

    private static void provider(String connect, String base, String name, int n) throws Exception {
        ServiceDiscovery<Map> discovery = discovery(Peer.connect(connect), base);
        ServiceProvider<Map> provider = discovery.serviceProviderBuilder()
                .serviceName(name)
                .providerStrategy(new RoundRobinStrategy<>())
                .build();
        provider.start();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ServiceInstance<Map> instance = provider.getInstance();
            if (instance != null) {
                ids.add(instance.getId());
            }
        }
        Peer.out("RESULT ids=" + String.join(",", ids));
        provider.close();
        discovery.close();
    }

    private static void watch(String connect, String base, String name) throws Exception {
        ServiceDiscovery<Map> discovery = discovery(Peer.connect(connect), base);
        ServiceCache<Map> cache = discovery.serviceCacheBuilder().name(name).build();
        boolean[] ready = {false};
        cache.addListener(new ServiceCacheListener() {
            @Override
            public void cacheChanged() {
                synchronized (ready) {
                    if (ready[0]) {
                        Peer.out(instancesLine(cache.getInstances()));
                    }
                }
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState state) {
                // Connection changes are not part of the protocol.
            }
        });
        cache.start();
        synchronized (ready) {
            ready[0] = true;
            Peer.out("READY");
            Peer.out(instancesLine(cache.getInstances()));
        }
        Peer.waitForEof();
        cache.close();
        discovery.close();
    }

    private static String instancesLine(Collection<ServiceInstance<Map>> instances) {
        List<String> ids = new ArrayList<>();
        for (ServiceInstance<Map> instance : instances) {
            ids.add(instance.getId());
        }
        ids.sort(null);
        return "INSTANCES " + String.join(",", ids);
    }

    private static void bench(String connect, String base, String name, int count, int picks) throws Exception {
        ServiceDiscovery<Map> discovery = discovery(Peer.connect(connect), base);
        long heapBefore = usedHeapKb();
        long start = System.nanoTime();
        ServiceCache<Map> cache = discovery.serviceCacheBuilder().name(name).build();
        java.util.concurrent.CountDownLatch full = new java.util.concurrent.CountDownLatch(1);
        cache.addListener(new ServiceCacheListener() {
            @Override
            public void cacheChanged() {
                if (cache.getInstances().size() >= count) {
                    full.countDown();
                }
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState state) {}
        });
        cache.start();
        if (cache.getInstances().size() < count) {
            full.await();
        }
        long loadNs = System.nanoTime() - start;
        long heapAfter = usedHeapKb();
        ServiceProvider<Map> provider = discovery.serviceProviderBuilder()
                .serviceName(name)
                .providerStrategy(new RoundRobinStrategy<>())
                .build();
        provider.start();
        long seen = 0;
        long warm = System.nanoTime() + PICK_BOUND_NS / 2;
        for (int i = 0; i < picks && System.nanoTime() < warm; i++) {
            seen += provider.getInstance() == null ? 0 : 1;
        }
        long picking = System.nanoTime();
        long bound = picking + PICK_BOUND_NS;
        int timed = 0;
        for (; timed < picks && System.nanoTime() < bound; timed++) {
            seen += provider.getInstance() == null ? 0 : 1;
        }
        long pickNs = timed == 0 ? 0 : (System.nanoTime() - picking) / timed;
        Peer.out("RESULT load_ms=" + loadNs / 1_000_000 + " heap_before_kb=" + heapBefore + " heap_kb=" + heapAfter
                + " pick_ns=" + pickNs + " picks=" + timed + " picked=" + seen);
        provider.close();
        cache.close();
        discovery.close();
    }

    /** The heap in use after a full collection, in KiB. */
    private static long usedHeapKb() {
        Runtime runtime = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return (runtime.totalMemory() - runtime.freeMemory()) / 1024;
    }
}
