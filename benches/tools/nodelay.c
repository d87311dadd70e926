/*
 * A diagnostic for the benchmarks, not part of zkr: preloaded, it sets TCP_NODELAY on every
 * TCP socket the process connects, which zookeeper-client 0.11.2 does not do (Java's ZooKeeper
 * client does). docs/benchmarks.md ("Over a network") uses it to show what Nagle's algorithm
 * costs pipelined requests:
 *
 *   gcc -shared -fPIC -O2 -o /tmp/nodelay.so benches/tools/nodelay.c -ldl
 *   LD_PRELOAD=/tmp/nodelay.so ZKR_BENCH_DEPLOY=ensemble ZKR_BENCH_RTT_MS=2 \
 *     cargo bench -p zkr-benches --bench lock -- --only uncontended
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real_connect)(int, const struct sockaddr *, socklen_t);
    if (!real_connect) {
        real_connect = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    }
    if (addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6)) {
        int type = 0;
        socklen_t type_len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
    }
    return real_connect(fd, addr, len);
}
