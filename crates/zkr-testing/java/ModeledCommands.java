// CuratorTool's typed-model commands (curator-x-async's ModeledFramework with Jackson), compiled
// only against a Curator release from Maven Central (Debian packages no curator-x-async).
// TEMPLATE is a ZPath with ids (`/app/people/{id}`); the model is a person {name, age}, written
// by JacksonModelSerializer, with createParentsIfNeeded and setDataIfExists:
//
//   modeled-set CONNECT TEMPLATE ID NAME AGE    resolved(ID).set(person): SET <path>
//   modeled-read CONNECT TEMPLATE ID            resolved(ID).versioned().read():
//                                               MODEL name=<name> age=<age> version=<v> | NONE
//   modeled-update CONNECT TEMPLATE ID NAME AGE VERSION
//                                               resolved(ID).versioned().update(Versioned.from(person,
//                                               VERSION)): UPDATED version=<v> | BAD_VERSION
//   modeled-cached CONNECT TEMPLATE             cached(), started: per cache event
//                                               EVENT <NODE_ADDED|NODE_UPDATED|NODE_REMOVED> <node name>
//                                               name=<name> age=<age> version=<v>; INITIALIZED once loaded;
//                                               until stdin EOF

import java.util.EnumSet;
import java.util.concurrent.ExecutionException;

import org.apache.curator.x.async.AsyncCuratorFramework;
import org.apache.curator.x.async.api.CreateOption;
import org.apache.curator.x.async.modeled.JacksonModelSerializer;
import org.apache.curator.x.async.modeled.ModelSpec;
import org.apache.curator.x.async.modeled.ModeledFramework;
import org.apache.curator.x.async.modeled.ZPath;
import org.apache.curator.x.async.modeled.cached.CachedModeledFramework;
import org.apache.curator.x.async.modeled.cached.ModeledCacheListener;
import org.apache.curator.x.async.modeled.versioned.Versioned;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

final class ModeledCommands {
    static final String USAGE = " | modeled-set CONNECT TEMPLATE ID NAME AGE | modeled-read CONNECT TEMPLATE ID"
            + " | modeled-update CONNECT TEMPLATE ID NAME AGE VERSION | modeled-cached CONNECT TEMPLATE";

    private ModeledCommands() {}

    /** The model: Jackson reads and writes its public fields. */
    public static final class Person {
        public String name;
        public int age;

        public Person() {}

        Person(String name, int age) {
            this.name = name;
            this.age = age;
        }

        String describe(Stat stat) {
            return "name=" + name + " age=" + age + " version=" + stat.getVersion();
        }
    }

    /** Runs `args` if it is one of this file's commands; false if it is not. Called by name. */
    public static boolean run(String[] args) throws Exception {
        switch (args[0]) {
            case "modeled-set": {
                Peer.arity(args, 6);
                String path = modeled(args[1], args[2], args[3])
                        .set(new Person(args[4], Peer.nonNegativeInt(args[5], "AGE"))).toCompletableFuture().get();
                Peer.out("SET " + path);
                return true;
            }
            case "modeled-read":
                Peer.arity(args, 4);
                read(modeled(args[1], args[2], args[3]));
                return true;
            case "modeled-update":
                Peer.arity(args, 7);
                update(modeled(args[1], args[2], args[3]),
                        new Person(args[4], Peer.nonNegativeInt(args[5], "AGE")),
                        Peer.nonNegativeInt(args[6], "VERSION"));
                return true;
            case "modeled-cached":
                Peer.arity(args, 3);
                cached(modeled(args[1], args[2], null));
                return true;
            default:
                return false;
        }
    }

    /** The framework of TEMPLATE, resolved with `id` unless it is null. */
    private static ModeledFramework<Person> modeled(String connect, String template, String id) throws Exception {
        ModelSpec<Person> spec = ModelSpec.builder(ZPath.parseWithIds(template), JacksonModelSerializer.build(Person.class))
                .withCreateOptions(EnumSet.of(CreateOption.createParentsIfNeeded, CreateOption.setDataIfExists))
                .build();
        return ModeledFramework.wrap(AsyncCuratorFramework.wrap(Peer.connect(connect)), id == null ? spec : spec.resolved(id));
    }

    private static void read(ModeledFramework<Person> node) throws Exception {
        Stat stat = new Stat();
        try {
            Versioned<Person> read = node.versioned().read(stat).toCompletableFuture().get();
            Peer.out("MODEL " + read.model().describe(stat));
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof KeeperException.NoNodeException)) {
                throw e;
            }
            Peer.out("NONE");
        }
    }

    private static void update(ModeledFramework<Person> node, Person person, int version) throws Exception {
        try {
            Stat stat = node.versioned().update(Versioned.from(person, version)).toCompletableFuture().get();
            Peer.out("UPDATED version=" + stat.getVersion());
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof KeeperException.BadVersionException)) {
                throw e;
            }
            Peer.out("BAD_VERSION");
        }
    }

    private static void cached(ModeledFramework<Person> modeled) throws Exception {
        CachedModeledFramework<Person> cached = modeled.cached();
        cached.listenable().addListener(new ModeledCacheListener<Person>() {
            @Override
            public void accept(Type type, ZPath path, Stat stat, Person model) {
                Peer.out("EVENT " + type + " " + path.nodeName() + " " + model.describe(stat));
            }

            @Override
            public void initialized() {
                Peer.out("INITIALIZED");
            }
        });
        cached.start();
        Peer.waitForEof();
        cached.close();
    }
}
