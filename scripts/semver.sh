#!/usr/bin/env bash
# The libraries' public API against a baseline revision's (docs/releases.md, "zkr's own API
# between releases"): a change that breaks it fails unless the crates' version says so.
#
#     scripts/semver.sh REV
#
# cargo-semver-checks compares rustdoc JSON. Left to build it, it builds every dependency twice
# per crate (3 min 47 s here); this builds each side's JSON in one `cargo doc` in the workspace's
# own target folder, whose checked dependencies `make test` has built already, and keeps the
# baseline's JSON (a commit's, by one rustdoc: it cannot change) in ~/.cache/zkr/semver.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=$(git rev-parse --verify "${1:?usage: scripts/semver.sh REV}^{commit}")
crates=(zkr-connection zkr-recipes zkr-testing)
# cargo-semver-checks' own rustdoc flags (its data_generation): private and hidden items too.
export RUSTDOCFLAGS="-Z unstable-options --document-private-items --document-hidden-items --output-format=json --cap-lints=allow"
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
export CARGO_TARGET_DIR=$target
work=$target/semver
rm -rf "$work"
mkdir -p "$work/current"
# rustdoc's JSON is unstable: RUSTC_BOOTSTRAP unlocks it on stable, set for rustdoc alone (in
# cargo's environment it would change the dependencies' fingerprints and rebuild them).
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec rustdoc "$@"\n' > "$work/rustdoc"
chmod +x "$work/rustdoc"
export RUSTDOC=$work/rustdoc

# json DIR OUT: the three crates' JSON for the workspace in DIR, moved to OUT.
json() {
    (cd "$1" && cargo doc --quiet --locked --no-deps --all-features "${crates[@]/#/--package=}")
    mkdir -p "$2"
    for crate in "${crates[@]}"; do
        mv "$target/doc/${crate//-/_}.json" "$2/"
    done
}

json . "$work/current"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/zkr/semver/$rev-$(rustdoc --version | cut -d' ' -f2)
if [ ! -f "$cache/done" ]; then
    git worktree prune
    git worktree add --quiet --detach "$work/baseline" "$rev"
    trap 'git worktree remove --force "$work/baseline"' EXIT
    rm -rf "$cache"
    json "$work/baseline" "$cache"
    touch "$cache/done"
fi

status=0
for crate in "${crates[@]}"; do
    name=${crate//-/_}
    echo "== $crate against ${rev:0:10}"
    cargo semver-checks --baseline-rustdoc "$cache/$name.json" --current-rustdoc "$work/current/$name.json" || status=1
done
exit $status
