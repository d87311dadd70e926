# The two commands of the README. Both install what is missing (see scripts/ensure-deps.sh).
.PHONY: demo test deps deps-demo deny examples compat bench-instructions model-check semver soak

deps:
	@scripts/ensure-deps.sh

# The demo needs only Maven and a JRE (the embedded ZooKeeper); `make test` installs the rest.
deps-demo:
	@scripts/ensure-deps.sh demo

demo: deps-demo
	cargo run --release --quiet -p zkr-cli --bin zkr -- demo

# The workspace clippy and test runs build every optional feature (tls, backon, metrics, the
# codecs: the tests crate enables them), the prometheus example included; the clippy line after
# them lints the libraries and the CLI without any (the CLI's zkr-testing has no tls feature). The
# CLI's Kerberos client (feature `kerberos`) is in both workspace runs (scripts/run-tests.py).
test: deps
	cargo fmt --all --check
	python3 scripts/check-rust-version.py
	$(MAKE) --no-print-directory deny
	@# `cargo install zkr-cli` must not build test-only crates (its embedded server needs neither).
	@! cargo tree -p zkr-cli -e normal --prefix none | grep -E '^(rcgen|ring) ' || { echo "zkr-cli depends on rcgen/ring"; exit 1; }
	cargo clippy --workspace --all-targets --features zkr-cli/kerberos -- -D warnings
	cargo clippy -p zkr-connection -p zkr-recipes -p zkr-cli -- -D warnings
	@# What a library user builds: the two libraries alone, without features the CLI unifies in.
	cargo check --quiet -p zkr-connection -p zkr-recipes
	@# The API docs as docs.rs builds them: every intra-doc link resolves, no broken HTML.
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps --all-features -p zkr-connection -p zkr-recipes -p zkr-testing
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p zkr-cli
	@# The public API against 0.1.0's: a break fails unless the version says so.
	$(MAKE) --no-print-directory semver BASELINE=$(API_BASELINE)
	@# Every test binary, the fault checkers beside the rest and the compatibility run beside both.
	@# The examples run from the same build (`make examples` would build them again with the
	@# recipes' own features: 81 s on 2 cores).
	scripts/run-tests.py --also "$(MAKE) --no-print-directory compat" $(addprefix --example ,$(EXAMPLES))
	cargo publish --workspace --dry-run --no-verify --allow-dirty

# The dependency tree's licences, bans and sources against deny.toml; installs cargo-deny
# (from crates.io) when it is missing, as a debug build: its release profile (fat LTO, one
# codegen unit) takes minutes to build, and the check takes 3 s either way.
deny:
	@command -v cargo-deny >/dev/null 2>&1 || cargo install --locked --quiet --debug cargo-deny@0.20.2
	cargo deny check licenses bans sources

# The server releases besides the default (zkr_testing::DEFAULT_RELEASE, 3.9.5, which the
# whole suite runs on) and the Curator from Maven Central besides Debian's: the subset in
# tests/compat.list runs on each (docs/releases.md).
COMPAT_RELEASES = 3.5.10 3.6.4 3.7.2 3.8.6 debian
COMPAT_CURATOR = 5.9.0

compat:
	scripts/compat.sh --curator $(COMPAT_CURATOR) $(COMPAT_RELEASES)

# Every checker with random seeds for MINUTES minutes on each release of SOAK_RELEASES, beside
# a resident process that keeps every recipe working on one client; memory, open files,
# sockets and tasks sampled every 10 s and judged at the end (docs/reliability.md, "The soak").
# A failure prints the one command that replays its seed. Samples: target/soak/*.csv.
MINUTES = 60
SOAK_RELEASES = 3.9.5 3.5.10

soak: deps
	cargo build --quiet -p zkr-integration-tests --bins
	@status=0; for release in $(SOAK_RELEASES); do \
		echo "== soak: ZooKeeper $$release, $(MINUTES) minutes"; \
		ZKR_ZK_VERSION=$$release $${CARGO_TARGET_DIR:-target}/debug/zkr-soak --minutes $(MINUTES) || status=1; \
	done; exit $$status

# The model checker's deeper configurations (crates/zkr-model, issue 45): every interleaving of
# each recipe's steps on a model of ZooKeeper, in release, one at a time; prints each one's state
# count, depth and time (docs/reliability.md, "Model checking"). `make test` runs the smaller ones.
model-check:
	cargo test --release -p zkr-model -- --include-ignored --nocapture --test-threads 1

# The recipes' examples, each run against its own embedded ZooKeeper (`make test` runs them too).
EXAMPLES = mutex config ids

examples:
	@for example in $(EXAMPLES); do \
		echo "cargo run --quiet -p zkr-recipes --example $$example"; \
		cargo run --quiet -p zkr-recipes --example $$example || exit 1; \
	done

# Client work at the floor: instructions per operation counted by valgrind's callgrind (the
# same count run to run within a few percent, whatever else the machine does), zkr against the
# raw zookeeper-client sending the same requests; a row more than 5% above
# benches/instructions.baseline says REGRESSION. ARGS="--rows lock,queue --ops 1000" narrows
# it; ARGS=--save-baseline records the run as the new baseline. Installs valgrind when missing.
bench-instructions: deps
	@command -v valgrind >/dev/null 2>&1 || { [ "$$(id -u)" -eq 0 ] && apt-get install -y -q --no-install-recommends valgrind >/dev/null; } || { echo "install valgrind: sudo apt-get install valgrind" >&2; exit 1; }
	cargo build --release --quiet -p zkr-benches --bin zkr-instructions
	target/release/zkr-instructions $(ARGS)

# The libraries' public API against a git revision (issue 48 item 6): a breaking change fails
# unless the crates' version says so. `make test` checks against API_BASELINE, the 0.1.0
# commit; `make semver BASELINE=0a87719` lists what broke since another. cargo-semver-checks
# 0.50.0 reads the rustdoc JSON (format v57) of Rust 1.95, this toolchain; installed when
# missing, as a debug build (about 8 minutes on 2 cores). scripts/semver.sh builds the JSON.
SEMVER_CHECKS = 0.50.0
# zkr 0.1.0 (CHANGELOG, docs/releases.md).
API_BASELINE = 59ede56c30b118775978db62964c6f495fb9b53d
semver:
	@test -n "$(BASELINE)" || { echo "make semver BASELINE=<git revision>"; exit 2; }
	@cargo semver-checks --version 2>/dev/null | grep -q "$(SEMVER_CHECKS)" || cargo install --locked --quiet --debug cargo-semver-checks@$(SEMVER_CHECKS)
	scripts/semver.sh $(BASELINE)
