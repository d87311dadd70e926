# The two commands of the README. Both install what is missing (see scripts/ensure-deps.sh).
.PHONY: demo test deps examples

deps:
	@scripts/ensure-deps.sh

demo: deps
	cargo run --release --quiet -p zkr-cli --bin zkr -- demo

# The workspace clippy and test runs build zkr-recipes (and its prometheus example) with the
# metrics feature, which the tests crate enables; the line after it adds it to zkr-connection's
# optional features, and the one after that lints both crates without any.
test: deps
	cargo fmt --all --check
	python3 scripts/check-rust-version.py
	@# `cargo install zkr-cli` must not build test-only crates (its embedded server needs neither).
	@! cargo tree -p zkr-cli -e normal --prefix none | grep -E '^(rcgen|ring) ' || { echo "zkr-cli depends on rcgen/ring"; exit 1; }
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p zkr-connection --features tls,backon,metrics -- -D warnings
	cargo clippy -p zkr-connection -p zkr-recipes -- -D warnings
	cargo test --workspace
	cargo test -p zkr-connection --features backon --lib backon
	cargo test -p zkr-connection --features backon --doc backon
	cargo publish --workspace --dry-run --no-verify --allow-dirty
	$(MAKE) --no-print-directory examples

# Every recipe's example, run against its own embedded ZooKeeper.
examples:
	cargo run --quiet -p zkr-recipes --example mutex
	cargo run --quiet -p zkr-recipes --example config
	cargo run --quiet -p zkr-recipes --example ids
