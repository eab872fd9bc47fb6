# The one gate every change passes: format, lints, every test. `gate: ok` is printed last,
# and only when all of them passed.
CARGO ?= cargo

.PHONY: gate test fmt-check clippy bench fuzz fmt deps

gate: fmt-check clippy test
	@echo "gate: ok"

# The real MCP clients the tests drive (crates/boxmaker/tests/mcp_clients.rs): the official
# Python SDK, pinned, and the MCP inspector's CLI, pinned in tests/node/package-lock.json and
# installed there (never globally). Does nothing when both are already in place.
PYTHON ?= python3
NPM ?= npm
MCP_PY_VERSION := 2.3.0
deps:
	@$(PYTHON) -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "$(MCP_PY_VERSION)")' 2>/dev/null \
	  || $(PYTHON) -m pip install --quiet --disable-pip-version-check 'mcp==$(MCP_PY_VERSION)'
	@[ tests/node/node_modules/.package-lock.json -nt tests/node/package-lock.json ] \
	  || (cd tests/node && $(NPM) install --no-audit --no-fund --loglevel=error)
	@echo "deps: ok"

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
