# The two commands of the README. Both install what is missing (see scripts/ensure-deps.sh).
.PHONY: demo test deps

deps:
	@scripts/ensure-deps.sh

demo: deps
	cargo run --release --quiet -p zkr-cli --bin zkr -- demo

test: deps
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p zkr-connection --features tls -- -D warnings
	cargo test --workspace
