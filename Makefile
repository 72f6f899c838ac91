# session-broker: `make demo` and `make test` are the two commands; each installs what it lacks
# first (`make demo` through setup-demo, `make test` through setup, which holds setup-demo).
SHELL := /bin/bash
# Tools `cargo install`s go to CARGO_HOME's bin (~/.cargo/bin unless CARGO_HOME says otherwise).
CARGO_BIN := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin
export PATH := $(CARGO_BIN):$(PATH)

GECKODRIVER_VERSION := 0.37.1
# wasm-pack runs the browser suites (`wasm-pack test`); it uses the wasm-bindgen below, never a
# download of its own.
WASM_PACK_VERSION := 0.15.1
# cargo-nextest runs the native suites, each test in a process of its own (the machine's image
# ships it; installed when absent).
NEXTEST_VERSION := 0.9.143
# The wasm-bindgen CLI (the bindings, and wasm-bindgen-test-runner for the browser suites) must be
# exactly the crate's version (Cargo.lock): the glue it writes and the module must agree.
WASM_BINDGEN_VERSION = $(shell awk '/^name = "wasm-bindgen"$$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
# Debian's packages: the demo's (Node and npm run binaryen, esbuild and PouchDB Server; curl
# waits for the engine), and the tests' (the browsers and their drivers, Xvfb for WebKit,
# PostgreSQL and Prometheus for the server's tests, pkg-config and libssl-dev for the WebDriver
# client's TLS).
DEMO_APT_PACKAGES := nodejs npm curl
TEST_APT_PACKAGES := chromium chromium-driver firefox-esr webkit2gtk-driver xvfb postgresql prometheus pkg-config libssl-dev
# The JS tools of the tests, pinned, from the npm registry into target/npm-tools: the TypeScript
# that compiles tests/types (and PouchDB's types, for the replication example of docs/sdk.md), the
# bundlers of tests/bundlers, axe-core for the accessibility audit.
# `make build` needs esbuild alone. One npm install writes the whole list of its call (npm drops
# what an earlier --no-save install put there), so the tests' list holds the build's too.
NPM_BUILD_TOOLS := esbuild@0.28.2
NPM_TOOLS := typescript@5.9.3 vite@8.3.8 $(NPM_BUILD_TOOLS) webpack@5.112.2 webpack-cli@7.3.1 axe-core@4.14.1 \
  @types/pouchdb-browser@6.1.5
# Vite's own TypeScript template (create-vite's template-vanilla-ts, which asks for Vite ^8.3.4:
# the Vite pinned above): the docs' code blocks compile under its tsconfig.json too (tests/types).
# An install of its own, as only the template's files are read.
CREATE_VITE := create-vite@9.3.0
# The document engine of the tests (PouchDB Server: production's is Apache CouchDB 3, which
# cannot be installed here) and PouchDB for Node, pinned, from the npm registry into target/pouchdb.
POUCHDB_TOOLS := pouchdb-server@4.2.0 pouchdb@9.0.0
# Current binaryen from the npm registry (runs on the machine's Node at build time only).
BINARYEN_VERSION := 132.0.0
# What `make size` names the top contributors with (installed by `make size` alone).
TWIGGY_VERSION := 0.8.0
# One target directory for every `cargo install` (wasm-bindgen-cli, geckodriver, twiggy): a crate
# they share at the same version and features is compiled once.
TOOLS_TARGET := $(CURDIR)/target/cargo-install
# The package's recorded size (release wasm + JS glue, gzip -9, bytes): `make test` fails when it
# grows past this by more than 2% (a size is deterministic for a given toolchain). Lower it when a
# change cuts; raise it only with the reason in the commit.
SIZE_BUDGET := 88378
WASM_OPT := target/binaryen/node_modules/.bin/wasm-opt
ESBUILD := target/npm-tools/node_modules/.bin/esbuild
WASM_FEATURES := --enable-reference-types --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-multivalue --enable-sign-ext --enable-mutable-globals
DEMO_LISTEN ?= 127.0.0.1:8080
DEMO_DATA ?= target/demo-data
# The demo's document engine (PouchDB Server), its data beside the store's in DEMO_DATA/engine.
DEMO_ENGINE_PORT ?= 5985
DEMO_ENGINE := http://127.0.0.1:$(DEMO_ENGINE_PORT)

# $(call apt_missing,PACKAGES): installs those of Debian's PACKAGES that are absent (waiting up to
# 5 minutes for another apt's lock rather than failing) (nodejs and npm
# count as present when any `npm` runs, curl when any `curl` does: CI's Node comes from elsewhere).
apt_missing = missing=""; for p in $(1); do case $$p in nodejs|npm) command -v npm >/dev/null && continue;; \
  curl) command -v curl >/dev/null && continue;; esac; \
  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
  [ -z "$$missing" ] || { apt-get -o DPkg::Lock::Timeout=300 update && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y $$missing; }
# $(call npm_pinned,DIR,TOOLS): installs TOOLS (name@version, from the npm registry) under DIR
# unless DIR/.pinned, the list of the last install there, names every one of them.
npm_pinned = for t in $(2); do grep -qxF "$$t" <(tr ' ' '\n' 2>/dev/null < $(1)/.pinned) || { \
  npm install --silent --no-save --no-audit --no-fund --prefix $(1) $(2) && echo "$(2)" > $(1)/.pinned || exit 1; break; }; done

.PHONY: mutants-apply demo-serve setup setup-demo setup-demo-rust setup-demo-packages setup-rust setup-packages build test test-native test-browser test-package demo types size size-check bench soak mutants clean release-check

## Installs whatever is missing; each line checks before it installs, so a second run installs
## nothing. setup-demo: what `make build` and `make demo` need; setup: that and what `make test`
## runs. Each is two chains run side by side (make -j2): the Rust tools, compiled from source (the
## long part: it keeps both cores busy), and the downloads (Debian's and the npm registry's
## packages), which mostly wait on the network and the disk.
setup-demo:
	@$(MAKE) --no-print-directory -j2 setup-demo-rust setup-demo-packages
setup:
	@$(MAKE) --no-print-directory -j2 setup-rust setup-packages

setup-demo-rust:
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	@[ -f Cargo.lock ] || cargo generate-lockfile
	@# Without --locked: the registry here lacks one of its locked transitive versions.
	@[ "$$(wasm-bindgen --version 2>/dev/null)" = "wasm-bindgen $(WASM_BINDGEN_VERSION)" ] \
	  || CARGO_TARGET_DIR=$(TOOLS_TARGET) cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --force

setup-demo-packages:
	@$(call apt_missing,$(DEMO_APT_PACKAGES))
	@$(WASM_OPT) --version 2>/dev/null | grep -q "version $(firstword $(subst ., ,$(BINARYEN_VERSION)))" \
	  || npm install --silent --no-save --no-audit --no-fund --prefix target/binaryen binaryen@$(BINARYEN_VERSION)
	@$(call npm_pinned,target/npm-tools,$(NPM_BUILD_TOOLS))
	@$(call npm_pinned,target/pouchdb,$(POUCHDB_TOOLS))

## The tests' part: the linters and geckodriver; the browsers and their drivers, PostgreSQL,
## Prometheus and the tests' JS tools.
setup-rust: setup-demo-rust
	@for c in rustfmt clippy; do rustup component list --installed | grep -q "^$$c" || rustup component add $$c; done
	@cargo nextest --version >/dev/null 2>&1 \
	  || CARGO_TARGET_DIR=$(TOOLS_TARGET) cargo install cargo-nextest --version $(NEXTEST_VERSION) --locked
	@geckodriver --version 2>/dev/null | grep -q "^geckodriver $(GECKODRIVER_VERSION)" \
	  || CARGO_TARGET_DIR=$(TOOLS_TARGET) cargo install geckodriver --version $(GECKODRIVER_VERSION) --locked \
	  || CARGO_TARGET_DIR=$(TOOLS_TARGET) cargo install geckodriver --version $(GECKODRIVER_VERSION)
	@[ "$$(wasm-pack --version 2>/dev/null)" = "wasm-pack $(WASM_PACK_VERSION)" ] \
	  || CARGO_TARGET_DIR=$(TOOLS_TARGET) cargo install wasm-pack --version $(WASM_PACK_VERSION) --locked

setup-packages: setup-demo-packages
	@$(call apt_missing,$(TEST_APT_PACKAGES))
	@$(call npm_pinned,target/npm-tools,$(NPM_TOOLS))
	@$(call npm_pinned,target/create-vite,$(CREATE_VITE))

## The npm package in pkg/: wasm-bindgen's output (the module and its glue) merged with pkg-template/.
build: setup-demo
	cargo build --lib --release --target wasm32-unknown-unknown
	rm -rf pkg
	wasm-bindgen target/wasm32-unknown-unknown/release/session_broker.wasm --out-dir pkg --target web
	@# --converge: repeats -Oz until it stops shrinking the module (about 0.2 KB gzip); the
	@# producers and target-features sections are for tools, not browsers (0.2 KB).
	@# --low-memory-unused: Rust lays the stack out first (data starts at 1 MiB), so the low 1 KiB
	@# is the bottom of the stack, reached only by an overflow; binaryen then folds constant
	@# offsets into loads and stores (0.5 KB gzip). -ocimfs=25: a function with one caller is
	@# inlined only when small (by default always): measured, the module gzips 1.5 KB smaller
	@# for 2% more raw bytes, as the larger bodies stay alike enough for gzip to share.
	@# Never --ignore-implicit-traps: Rust's code does guard loads by checks binaryen cannot
	@# see through (the allocator's free list ends at an address past memory's end, read only
	@# after comparing with it); told that loads never trap, binaryen read first, and a page
	@# trapped at random frees (tests/module/allocator.mjs).
	$(WASM_OPT) -Oz -ocimfs=25 --converge --low-memory-unused --strip-producers --strip-target-features $(WASM_FEATURES) pkg/session_broker_bg.wasm -o pkg/session_broker_bg.wasm
	@cargo_version=$$(awk -F'"' '/^version = / { print $$2; exit }' Cargo.toml); \
	  template_version=$$(awk -F'"' '/"version":/ { print $$4; exit }' pkg-template/package.json); \
	  [ "$$cargo_version" = "$$template_version" ] || { echo "pkg-template/package.json is $$template_version, Cargo.toml is $$cargo_version"; exit 1; }
	@# Short import and export names (the map for the glue's rewrite in finish.mjs).
	$(WASM_OPT) $(WASM_FEATURES) --minify-imports-and-exports-and-modules pkg/session_broker_bg.wasm -o pkg/session_broker_bg.wasm > target/wasm-names.json
	node pkg-template/finish.mjs target/wasm-names.json
	@# One file: the entry module, the bindings and their two snippets (a module graph one level
	@# deep, no waterfall at start-up), minified: the docs live in the .d.ts. The exports' names
	@# (`.name`) are set by the entry module, the internal functions' are left to the minifier.
	cp pkg-template/session_broker.js pkg/
	$(ESBUILD) pkg/session_broker.js --bundle --minify --format=esm --platform=browser \
	  --banner:js='/* @ts-self-types="./session_broker.d.ts" */' --log-level=warning --allow-overwrite --outfile=pkg/session_broker.js
	rm -rf pkg/snippets pkg/bindings.js
	@# The demo's PouchDB (an app's own dependency, never in the package), from the pinned npm
	@# package: served at /vendor/ by the mock server.
	mkdir -p target/vendor
	cp target/pouchdb/node_modules/pouchdb/dist/pouchdb.min.js target/pouchdb/node_modules/pouchdb/dist/pouchdb.indexeddb.min.js target/vendor/
	cp pkg-template/package.json pkg-template/README.md pkg-template/types.js pkg-template/codes.js pkg-template/codes.d.ts \
	  pkg-template/session_broker.d.ts pkg-template/api.d.ts pkg-template/protocol.d.ts pkg/
	@# Every file the glue imports must be in the tarball npm users get.
	@packed=$$(cd pkg && npm pack --dry-run --json 2>/dev/null); \
	  for f in $$(cd pkg && find . -type f ! -name package.json | sed 's|^\./||'); do \
	    echo "$$packed" | grep -q "\"path\": \"$$f\"" || { echo "pkg/$$f is not in the npm package: add it to pkg-template/package.json files"; exit 1; }; done

## Every suite, each phase timed; the last line totals them ("N passed, N failed") across runners.
## The mutants are a step of their own (`make mutants`, which `.ci/run` runs after this).
test:
	@set -o pipefail; log=$$(mktemp); rc=0; took=""; \
	  for phase in setup test-native test-browser test-package; do \
	    start=$$(date +%s); $(MAKE) --no-print-directory $$phase 2>&1 | tee -a $$log || rc=1; \
	    took="$$took $$phase $$(( $$(date +%s) - start ))s,"; [ $$rc = 0 ] || break; \
	  done; echo "make test took:$${took%,}"; \
	  awk '/test result: |tests run: /{ for (i = 1; i <= NF; i++) { if ($$(i+1) ~ /^passed/) p += $$i; if ($$(i+1) ~ /^failed/) f += $$i } } \
	       END { printf "%d passed, %d failed\n", p, f }' $$log; rm -f $$log; exit $$rc

## Lints are errors here: the code as rustfmt writes it (rustfmt.toml: lines of 120 at most),
## every public item of the SDK documented (`missing_docs`, the `.d.ts` JSDoc), clippy clean on
## both targets.
test-native: mutants-apply
	cargo fmt --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings
	@# Every test in its own process (the server's recorded series are one set a process), across
	@# every binary at once: no binary waits for the one before it. Doc tests are cargo test's.
	cargo nextest run --workspace --no-fail-fast --failure-output=final
	cargo test --workspace --doc

test-browser:
	bash tests/run-browser.sh

## The built release package (what npm users get) and the demo page, driven in headless
## Chromium through chromedriver (mock-server/tests/e2e); screenshots land in target/e2e/.
test-package: build size-check
	node tests/module/allocator.mjs pkg/session_broker_bg.wasm target/wasm-names.json
	bash tests/types/run.sh
	bash tests/release/run.sh
	bash tests/bundlers/build.sh
	cargo test -p mock-server --test e2e -- --ignored --test-threads=1
	@# Every driver the harness starts carries SESSION_BROKER_E2E=<its own mark>, and hands it down.
	@left=$$(grep -lsz '^SESSION_BROKER_E2E=' /proc/[0-9]*/environ | cut -d/ -f3 | paste -sd, -); \
	  [ -z "$$left" ] || { echo "the end-to-end suite left processes running:"; ps -o pid,pgid,cmd -p "$$left"; exit 1; }

## Builds the release package, starts the document engine and the mock server with the demo
## seed (written to the engine), serves www/. The engine stops with the server.
## `make demo` times itself: set-up, build, and the whole until the page is served (printed
## before the server starts).
demo:
	@start=$$(date +%s); $(MAKE) --no-print-directory setup-demo || exit 1; set_up=$$(( $$(date +%s) - start )); \
	  $(MAKE) --no-print-directory build || exit 1; cargo build --release -p mock-server || exit 1; \
	  DEMO_TOOK="setup-demo $${set_up}s, build $$(( $$(date +%s) - start - set_up ))s" DEMO_STARTED=$$start \
	    $(MAKE) --no-print-directory demo-serve

demo-serve:
	@mkdir -p $(DEMO_DATA)/engine; \
	  ( cd $(DEMO_DATA)/engine && exec $(CURDIR)/target/pouchdb/node_modules/.bin/pouchdb-server \
	      --host 127.0.0.1 --port $(DEMO_ENGINE_PORT) --dir . >/dev/null 2>&1 ) & engine=$$!; \
	  trap 'kill $$engine 2>/dev/null' EXIT INT TERM; \
	  for i in $$(seq 150); do curl -sf $(DEMO_ENGINE)/ >/dev/null && break; sleep 0.1; done; \
	  curl -sf $(DEMO_ENGINE)/ >/dev/null || { echo "the document engine did not start on port $(DEMO_ENGINE_PORT)"; exit 1; }; \
	  : "Its admin, the first time (config.json in its directory keeps it after)."; \
	  curl -sf -X PUT $(DEMO_ENGINE)/_config/admins/admin -d '"demo-engine"' >/dev/null || true; \
	  echo "make demo took: $$DEMO_TOOK; ready $$(( $$(date +%s) - DEMO_STARTED ))s after it began"; \
	  echo "session-broker demo: open http://$(DEMO_LISTEN)/ (Ctrl-C stops it); document engine on $(DEMO_ENGINE)"; \
	  DOCDB_URL=http://admin:demo-engine@127.0.0.1:$(DEMO_ENGINE_PORT)/ DATA_DIR=$(DEMO_DATA) MOCK_TEST_CONTROLS=1 \
	    ./target/release/mock-server --listen $(DEMO_LISTEN) --www www --pkg pkg --vendor target/vendor

## Release sizes of the SDK: the wasm module and the JS glue, raw and gzip -9, then the top
## contributors (twiggy, on the same module optimised with its function names kept).
## The package's generated TypeScript (pkg-template/protocol.d.ts, what the Rust types declare,
## and the codes module), written again, then docs/sdk.md's method table from the built package's
## declarations (the Rust doc comments, api.d.ts); `make test` fails while any of them differs.
types:
	WRITE_TYPES=1 cargo test -q -p mock-server --test typescript
	$(MAKE) --no-print-directory build
	node tests/types/method-table.mjs --write pkg/bindings.d.ts pkg/api.d.ts docs/sdk.md

size: setup build
	@twiggy --version 2>/dev/null | grep -q " $(TWIGGY_VERSION)$$" \
	  || CARGO_TARGET_DIR=$(TOOLS_TARGET) cargo install twiggy --version $(TWIGGY_VERSION) --locked
	@for f in pkg/session_broker_bg.wasm pkg/session_broker.js; do \
	  printf '%-28s raw %7d B   gzip -9 %6d B\n' "$$f" "$$(wc -c < $$f)" "$$(gzip -9c $$f | wc -c)"; done
	@printf '%-28s          gzip -9 %6d B  (the size goal: 61440 B; recorded budget %d B)\n' "wasm + glue" \
	  "$$(( $$(gzip -9c pkg/session_broker_bg.wasm | wc -c) + $$(gzip -9c pkg/session_broker.js | wc -c) ))" $(SIZE_BUDGET)
	@rm -rf target/size && wasm-bindgen target/wasm32-unknown-unknown/release/session_broker.wasm \
	  --out-dir target/size --target web --keep-debug >/dev/null
	@$(WASM_OPT) -Oz --converge -g $(WASM_FEATURES) target/size/session_broker_bg.wasm -o target/size/named.wasm
	@echo "top contributors (raw bytes of target/size/named.wasm, names kept):"
	@twiggy top -n 16 target/size/named.wasm | grep -v 'function names" subsection' | cut -c1-150

## The size guard of `make test`: the package within 2% of SIZE_BUDGET.
size-check: build
	@total=$$(( $$(gzip -9c pkg/session_broker_bg.wasm | wc -c) + $$(gzip -9c pkg/session_broker.js | wc -c) )); \
	  limit=$$(( $(SIZE_BUDGET) * 102 / 100 )); \
	  echo "package size: $$total B gzip -9 (recorded budget $(SIZE_BUDGET) B; fails above $$limit B)"; \
	  [ $$total -le $$limit ] || { echo "the package grew past its recorded budget: see make size, cut, or record the new figure in SIZE_BUDGET with the reason"; exit 1; }

## Speed and size: the release package's size, the SDK core's hot paths, the mock server's
## operations, the document proxy against its engine, and the package side by side with its
## peers in Chromium (writes bench/REPORT.md).
bench: size
	cargo bench -q -p session-broker --bench core
	cargo bench -q -p mock-server --bench server
	cargo bench -q -p mock-server --bench fleet
	cargo bench -q -p mock-server --bench docdb
	bash bench/peers.sh
	cargo bench -q -p mock-server --bench peers

## The rollout's generated histories at length: SOAK_CASES histories of up to 200 steps from a
## new seed (printed first; `PROPTEST_RNG_SEED=<seed> make soak` replays a run), then
## SDK_SOAK_CASES of those with the SDK's own core as the device (tests/sdk_histories.rs, about
## two seconds each), and SOAK_RACE_CASES races (operations stopped at the server's
## checkpoints), then SOAK_SIM_SEEDS runs of the simulator from that seed (it prints its steps a
## second), from the same seed.
SOAK_CASES ?= 2000
SDK_SOAK_CASES ?= 500
SOAK_RACE_CASES ?= 1000
SOAK_SIM_SEEDS ?= 3000
soak:
	@seed=$${PROPTEST_RNG_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; echo "soak seed $$seed"; \
	  HISTORY_CASES=$(SOAK_CASES) PROPTEST_RNG_SEED=$$seed cargo test -p mock-server --test rollout_histories -- --nocapture && \
	  SDK_HISTORY_CASES=$(SDK_SOAK_CASES) PROPTEST_RNG_SEED=$$seed cargo test -p mock-server --test sdk_histories -- --nocapture && \
	  RACE_CASES=$(SOAK_RACE_CASES) PROPTEST_RNG_SEED=$$seed cargo test -p mock-server --test rollout_races -- --nocapture && \
	  SIM_SEEDS=$(SOAK_SIM_SEEDS) SIM_FIRST_SEED=$$seed cargo test -p mock-server --test simulation fixed_seeds -- --nocapture

## Proof the tests find bugs: each patch in mock-server/tests/mutations brings one back, and the
## suite named for its directory must fail on every one (the tree is restored after each): the
## rollout's histories for mutations/*.patch, the SDK's histories for mutations/sdk/, the
## simulator (tests/simulation.rs) alone for mutations/sim/. A patch that no longer applies is an
## error (`make test` checks every one applies, `mutants-apply`), never a skip.
MUTANTS := $(wildcard mock-server/tests/mutations/*.patch mock-server/tests/mutations/sdk/*.patch mock-server/tests/mutations/sim/*.patch)
mutants-apply:
	@for p in $(MUTANTS); do git apply --check $$p || { echo "$$p no longer applies: write it again against the code"; exit 1; }; done; \
	  echo "$(words $(MUTANTS)) mutation patches apply"
mutants: mutants-apply
	@failed=0; caught=0; start=$$(date +%s); for p in $(MUTANTS); do \
	  case $$p in */sdk/*) t=sdk_histories f=;; */sim/*) t=simulation f="fixed_seeds mended_holes";; \
	    *) t=rollout_histories f=generated_histories_answer_as_the_model;; esac; \
	  git apply $$p || exit 1; \
	  if ! cargo test -q -p mock-server --test $$t --no-run 2>/dev/null; then r="did not build"; \
	  elif SIM_NO_SHRINK=1 cargo test -q -p mock-server --test $$t -- $$f >/dev/null 2>&1; \
	  then r=survived; else r=caught; fi; \
	  git apply -R $$p || exit 1; echo "$$(basename $$(dirname $$p))/$$(basename $$p .patch): $$r"; \
	  if [ $$r = caught ]; then caught=$$((caught + 1)); else failed=1; fi; \
	done; echo "make mutants took: $$(( $$(date +%s) - start ))s; $$caught of $(words $(MUTANTS)) mutants caught"; \
	[ $$failed = 0 ] || { echo "a mutant was not caught"; exit 1; }

clean:
	cargo clean
	rm -rf pkg $(DEMO_DATA)

## The release check of .github/workflows/release.yml: TAG on master, versions agree, the
## package holds exactly what users need. `make release-check TAG=v1.4.17`.
release-check: build
	@[ -n "$(TAG)" ] || { echo "usage: make release-check TAG=v<version>"; exit 1; }
	.ci/release-check $(TAG)
