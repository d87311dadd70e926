#!/usr/bin/env bash
# The compatibility run: the subset in tests/compat.list (every recipe family's core tests and
# its Curator and kazoo interop tests) on each ZooKeeper release given, two releases at a time,
# and, with `--curator VERSION`, the subset's Curator tests once more against that Curator from
# Maven Central (on the default release). Each run is a set of already built test binaries run
# directly (cargo would hold its lock while they run, so runs could not overlap).
#
#   scripts/compat.sh [--curator 5.9.0] 3.5.10 3.6.4 ...
#
# Writes target/compat/<run>.log per run and target/compat/table.tsv (release, binary, passed,
# failed); exits non-zero when any test failed.
set -euo pipefail
cd "$(dirname "$0")/.."

curator=""
if [ "${1:-}" = "--curator" ]; then
  curator=$2
  shift 2
fi
list=$PWD/tests/compat.list
out=$PWD/target/compat
rm -rf "$out"
mkdir -p "$out"

# Test binary name -> executable of the tests package, from one build (the workspace build of
# `make test`, so that nothing is built again with other features).
scripts/run-tests.py --list 2>/dev/null | awk -F '\t' -v dir="$PWD/tests" '$2 == "test" && $3 == dir {print $1, $4}' >"$out/binaries"

# run <name> <env assignment> <filter>: every listed test (whose name matches <filter>) of
# every binary, one binary after another, into <name>.log and the table.
run() {
  local name=$1 env=$2 filter=$3 failed=0
  for bin in $(grep -v '^#' "$list" | awk 'NF {print $1}' | sort -u); do
    local tests exe
    # The tests of the binary that match the filter and are not marked `!<this release>`.
    tests=$(awk -v b="$bin" -v skip="!$name" '$1 == b { for (i = 3; i <= NF; i++) if ($i == skip) next; print $2 }' "$list" |
      grep -E -- "$filter" || true)
    [ -n "$tests" ] || continue
    exe=$(awk -v b="$bin" '$1 == b {print $2}' "$out/binaries")
    # shellcheck disable=SC2086
    # (cargo runs test binaries in their package's directory.)
    if (cd tests && env $env "$exe" --exact $tests) >"$out/$name.$bin.log" 2>&1; then :; else
      failed=1
      # CI keeps only the printed output: each failure's own lines (the harness's `failures:`
      # section, the panic and its message), capped, so that a failure is named where it is read.
      sed -n '/^failures:$/,/^test result:/p' "$out/$name.$bin.log" | head -n 80 | sed "s/^/compat $name $bin: /" >&2
    fi
    local passed fails
    passed=$(grep -c ' \.\.\. ok$' "$out/$name.$bin.log" || true)
    fails=$(grep -c ' \.\.\. FAILED$' "$out/$name.$bin.log" || true)
    printf '%s\t%s\t%s\t%s\n' "$name" "$bin" "$passed" "$fails" >>"$out/table.tsv"
  done
  cat "$out/$name".*.log >"$out/$name.log"
  rm -f "$out/$name".*.log
  echo "compat $name: $(awk -v n="$name" '$1 == n {p += $3; f += $4} END {print p " passed, " f " failed"}' "$out/table.tsv")"
  return $failed
}
export -f run
export list out
# Each test's clients log their connection states and sessions (and zookeeper-client why it gave
# a connection up) into the harness's capture, so a failure prints what its clients saw and a
# passing test prints nothing (tests/src/lib.rs's `trace_from_env`).
export RUST_LOG="${RUST_LOG:-zkr_connection=info,zookeeper_client=info}"

jobs=()
for release in "$@"; do
  jobs+=("$release ZKR_ZK_VERSION=$release .")
done
[ -n "$curator" ] && jobs+=("curator-$curator ZKR_CURATOR_VERSION=$curator curator")

status=0
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'run "$0" "$1" "$2"' || status=$?
if [ $status -ne 0 ]; then
  echo "compat: failures; see $out/*.log" >&2
fi
exit $status
