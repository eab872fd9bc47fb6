# The one gate every change passes: format, lints, every test. `gate: ok` is printed last,
# and only when all of them passed.
CARGO ?= cargo

.PHONY: gate test fmt-check clippy guide bench fuzz fmt deps sysdeps efficacy efficacy-ci efficacy-ablation dist

gate: fmt-check clippy guide test
	@echo "gate: ok"

# The real MCP clients the tests drive (crates/boxmaker/tests/mcp_clients.rs): the official
# Python SDK, pinned, in a virtualenv of the project's own (tests/py/client-venv, with
# Selenium, which drives Debian's headless Chromium against the approvals page,
# crates/boxmaker/tests/approvals.rs), and the MCP inspector's CLI, pinned in
# tests/node/package-lock.json and installed there (never globally). The real MCP servers
# crates/boxmaker/tests/downstream.rs runs inside boxes: the npm ones (server-filesystem,
# server-everything) in the same tests/node/, the PyPI ones (tests/py/requirements.txt) in
# tests/py/venv. Every virtualenv is made from the SYSTEM python (/usr/bin/python3): a box
# sees /usr, /bin and /lib but not a python under $HOME, and nothing is ever installed into
# an interpreter itself (Debian's and Ubuntu's refuse: externally-managed-environment).
# The egress tests' clients: mcp-server-fetch and requests (tests/py/requirements.txt, the
# same virtualenv) and a Node that honours NODE_USE_ENV_PROXY (tests/node-proxy/, apart from
# tests/node so the inspector keeps the system Node). The MCP conformance suite (its server
# scenarios against `boxmaker mcp --http`, its client `auth` scenarios) and oidc-provider, the OAuth tests' authorization server: tests/node-conformance/,
# with a Node of its own (both need 22 or later). Claude Code's CLI (tests/node-claude/, a
# native binary in a platform package), whose `claude mcp list` checks what `boxmaker client
# add claude-code` writes (crates/boxmaker/tests/onboard.rs).
# The system packages come first, through `make sysdeps` (tests/sysdeps.sh): installed with
# apt-get as root, or the exact command printed. `npm ci` installs exactly the lock file and
# never rewrites it; each install leaves a stamp, so a second `make deps` changes nothing.
SYSTEM_PYTHON ?= /usr/bin/python3
NPM ?= npm
APT_GET ?= apt-get
PY_VENV := tests/py/venv
CLIENT_VENV := tests/py/client-venv
sysdeps:
	@APT_GET=$(APT_GET) sh tests/sysdeps.sh

deps: sysdeps
	@[ tests/node/node_modules/.boxmaker-installed -nt tests/node/package-lock.json ] \
	  || { (cd tests/node && $(NPM) ci --no-audit --no-fund --loglevel=error) \
	       && touch tests/node/node_modules/.boxmaker-installed; }
	@[ tests/node-proxy/node_modules/.boxmaker-installed -nt tests/node-proxy/package-lock.json ] \
	  || { (cd tests/node-proxy && $(NPM) ci --no-audit --no-fund --loglevel=error) \
	       && touch tests/node-proxy/node_modules/.boxmaker-installed; }
	@[ tests/node-conformance/node_modules/.boxmaker-installed -nt tests/node-conformance/package-lock.json ] \
	  || { (cd tests/node-conformance && $(NPM) ci --no-audit --no-fund --loglevel=error) \
	       && touch tests/node-conformance/node_modules/.boxmaker-installed; }
	@[ tests/node-claude/node_modules/.boxmaker-installed -nt tests/node-claude/package-lock.json ] \
	  || { (cd tests/node-claude && $(NPM) ci --no-audit --no-fund --loglevel=error) \
	       && touch tests/node-claude/node_modules/.boxmaker-installed; }
	@$(call venv,$(CLIENT_VENV),tests/py/client-requirements.txt)
	@$(call venv,$(PY_VENV),tests/py/requirements.txt)
	@$(call venv,$(AGENTDOJO_VENV),bench/agentdojo/requirements.txt)
	@$(MDBOOK) --version 2>/dev/null | grep -qx 'mdbook v$(MDBOOK_VERSION)' \
	  || $(CARGO) install mdbook --version $(MDBOOK_VERSION) --locked --debug --quiet \
	       --no-default-features --features search --root $(MDBOOK_ROOT)
	@echo "deps: ok"

# $(call venv,DIR,REQUIREMENTS): DIR made afresh from the system python (--clear empties it
# first) and REQUIREMENTS installed, unless DIR's stamp is newer than REQUIREMENTS.
venv = [ $(1)/.installed -nt $(2) ] \
  || { $(SYSTEM_PYTHON) -m venv --clear $(1) \
       && $(1)/bin/python3 -m pip install --quiet --disable-pip-version-check -r $(2) \
       && touch $(1)/.installed; }

# The user guide (docs/guide/, an mdBook), built into target/guide/; a page missing from
# SUMMARY.md or an include that names no file fails it. Its examples are checked by
# crates/boxmaker/tests/guide_examples.rs. mdBook comes from crates.io, pinned, installed by
# `make deps` into tests/mdbook/ (Debian 12 packages none): a debug build without the
# `serve` and `watch` features, which builds in about a minute on 2 cores and renders this
# book in well under a second.
MDBOOK_VERSION := 0.5.4
MDBOOK_ROOT := tests/mdbook
MDBOOK := $(MDBOOK_ROOT)/bin/mdbook
guide:
	@[ -x $(MDBOOK) ] || { echo "guide: no $(MDBOOK): run \`make deps\`" >&2; exit 1; }
	$(MDBOOK) build docs/guide

# The binary the project ships: the `dist` profile (fat LTO, one codegen unit; Cargo.toml),
# at target/dist/boxmaker. `cargo build --release` is the quick build for trying it.
dist:
	$(CARGO) build --profile dist -p boxmaker

# Every test binary runs, and every failure is reported (not only the first binary's).
test:
	$(CARGO) test --workspace --no-fail-fast

# AgentDojo replayed through the real `boxmaker mcp` as a hijacked agent (issue 15;
# docs/efficacy.md). `efficacy`: the four suites in full, with the release binary, figures
# in target/efficacy/. `efficacy-ci`: every benign trace and a fixed sample of pairs per
# suite, with the debug binary built the way `make test` builds it (`cargo test --no-run`:
# nothing to do after `make test`; `cargo build -p boxmaker` resolves features apart and
# compiled a second copy of 86 dependencies), failing below a suite's floor
# (bench/agentdojo/floors.json). Both need `make deps` (bench/agentdojo/venv).
AGENTDOJO_VENV := bench/agentdojo/venv
EFFICACY_SUITES := workspace slack banking travel
EFFICACY_JOBS ?= 2
EFFICACY_SAMPLE ?= 12
# The suites run side by side, EFFICACY_JOBS sessions each (bench/agentdojo/suites.sh).
EFFICACY_SUITES_SH := SUITES="$(EFFICACY_SUITES)" PYTHON=$(AGENTDOJO_VENV)/bin/python3 sh bench/agentdojo/suites.sh
EFFICACY_RUN := BOXMAKER_BIN=$(CURDIR)/target/release/boxmaker $(EFFICACY_SUITES_SH)
efficacy:
	$(CARGO) build --release -p boxmaker
	@$(EFFICACY_RUN) target/efficacy "" yes --jobs $(EFFICACY_JOBS) \
	  --person reads --also approves,absent,oracle
	@python3 bench/agentdojo/report.py $(foreach s,$(EFFICACY_SUITES),target/efficacy/$(s).json)

# What each mechanism contributes (docs/efficacy.md): the same full run with the person's
# words (intent) not handed to the gate, then provenance, then labels and clearances,
# switched off in every policy (replay.py --without).
efficacy-ablation:
	$(CARGO) build --release -p boxmaker
	@for m in intent provenance labels; do \
	  $(EFFICACY_RUN) target/efficacy -without-$$m yes --jobs $(EFFICACY_JOBS) \
	    --person reads --also approves --without $$m || exit 1; \
	done
	@python3 bench/agentdojo/report.py $(foreach m,intent provenance labels,$(foreach s,$(EFFICACY_SUITES),target/efficacy/$(s)-without-$(m).json))

efficacy-ci:
	$(CARGO) test --workspace --no-run
	@fail=0; BOXMAKER_BIN=$(CURDIR)/target/debug/boxmaker $(EFFICACY_SUITES_SH) target/efficacy-ci "" no \
	  --jobs $(EFFICACY_JOBS) --sample $(EFFICACY_SAMPLE) --check-goal || fail=1; \
	python3 bench/agentdojo/report.py $(foreach s,$(EFFICACY_SUITES),target/efficacy-ci/$(s).json); \
	[ $$fail = 0 ] && echo "efficacy-ci: ok"

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
	mkdir -p fuzz/corpus/proxy_head
	cd fuzz && $(CARGO) +nightly fuzz run proxy_head corpus/proxy_head seeds/proxy_head -- -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1
	mkdir -p fuzz/corpus/audit_line
	cd fuzz && $(CARGO) +nightly fuzz run audit_line corpus/audit_line seeds/audit_line -- -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1
