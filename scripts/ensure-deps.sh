#!/usr/bin/env bash
# Makes sure the non-Rust pieces the tests, benchmarks and demo need are installed:
# Maven (`maven`: zkr-testing resolves the ZooKeeper server releases 3.5 to 3.9 and Curator 5.9
# from Maven Central with it, on first use, into ~/.m2), Debian's ZooKeeper 3.8.0 (`zookeeper`,
# one of the releases tested), a headless JRE, a headless JDK (`javac`, which builds
# zkr-testing's Curator peer), Apache Curator 5.4 jars (`libcurator-recipes-java`, and
# `libcurator-discovery-java` for curator-x-discovery), kazoo (`python3-kazoo`), and for the
# Kerberos tests an MIT KDC (`krb5-kdc`, `krb5-admin-server`, `krb5-user`: the test starts its
# own realm) and what the GSSAPI bindings build with (`libkrb5-dev`, `libclang-dev`,
# `pkg-config`), and Prometheus's `promtool` (`prometheus`), which checks the alert rules in
# docs/monitoring/ and the dashboard's queries, and Debian's headless Chromium with its
# WebDriver (`chromium`, `chromium-driver`, and a font, `fonts-dejavu-core`), which the
# `zkr ui` test drives. Installs
# them with apt-get when running as root; otherwise prints the exact command and fails.
#
# `scripts/ensure-deps.sh demo` (what `make demo` runs) checks only what the demo needs: Maven
# and a headless JRE, with which zkr-testing fetches and runs the default ZooKeeper release.
# `--list` after the profile prints the packages it checks, one a line, and installs nothing.
set -euo pipefail

profile=${1:-all}
case "$profile" in
  all|demo) ;;
  *) echo "usage: $0 [all|demo] [--list]" >&2; exit 2 ;;
esac

packages=(maven zookeeper iproute2 nftables default-jre-headless default-jdk-headless libcurator-recipes-java libcurator-discovery-java python3-kazoo krb5-kdc krb5-admin-server krb5-user libkrb5-dev libclang-dev pkg-config prometheus chromium chromium-driver fonts-dejavu-core)
if [ "$profile" = demo ]; then
  packages=(maven default-jre-headless)
fi
if [ "${2:-}" = --list ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
missing=()
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v java >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ] || missing+=(default-jre-headless)
if [ "$profile" = all ]; then
  [ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
  # The checkers' partitions: each server in a network namespace, cut off with nftables.
  [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
  [ -x /usr/sbin/nft ] || [ -x /sbin/nft ] || missing+=(nftables)
  command -v javac >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] || missing+=(default-jdk-headless)
  [ -f /usr/share/java/curator-recipes.jar ] || missing+=(libcurator-recipes-java)
  [ -f /usr/share/java/curator-x-discovery.jar ] || missing+=(libcurator-discovery-java)
  /usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || missing+=(python3-kazoo)
  [ -x /usr/sbin/krb5kdc ] || missing+=(krb5-kdc)
  [ -x /usr/sbin/kadmin.local ] || missing+=(krb5-admin-server)
  command -v kinit >/dev/null 2>&1 || missing+=(krb5-user)
  [ -f /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
  compgen -G '/usr/lib/llvm-*/lib/libclang.so' >/dev/null || missing+=(libclang-dev)
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  [ -d /usr/share/fonts/truetype/dejavu ] || missing+=(fonts-dejavu-core)
fi

if [ -n "${ZOOKEEPER_CLASSPATH:-}" ]; then
  # A user-provided server: do not insist on Debian's.
  missing=("${missing[@]/zookeeper}")
fi
want=()
for p in "${missing[@]}"; do [ -n "$p" ] && want+=("$p"); done
[ ${#want[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${packages[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "zkr needs: ${want[*]}. Install them with:" >&2
  echo "  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "zkr needs: ${want[*]} (Debian packages ${packages[*]}); no apt-get on this machine." >&2
  echo "Set ZOOKEEPER_CLASSPATH to a ZooKeeper 3.8 server class path and put java on PATH." >&2
  exit 1
fi
echo "installing ${want[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${want[@]}" >/dev/null
