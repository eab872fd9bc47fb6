# The one gate every change passes: format, lints, every test. `gate: ok` is printed last,
# and only when all of them passed.
CARGO ?= cargo

.PHONY: gate test fmt-check clippy bench fuzz fmt

gate: fmt-check clippy test
	@echo "gate: ok"

test:
	$(CARGO) test --workspace

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Benchmarks are not part of the gate; their figures live in docs/performance.md.
bench:
	$(CARGO) bench --workspace

# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). New inputs go to
# fuzz/corpus/ (ignored by git); fuzz/seeds/ holds the committed starting inputs.
FUZZ_SECONDS ?= 600
fuzz:
	mkdir -p fuzz/corpus/read_frame
	cd fuzz && $(CARGO) +nightly fuzz run read_frame corpus/read_frame seeds/read_frame -- -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1
