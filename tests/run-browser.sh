#!/usr/bin/env bash
# Runs the wasm browser suites (tests/*.rs) in headless Chrome and Firefox against a mock
# server started here on a free port; the server is stopped whatever the outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

cargo build --quiet -p mock-server
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

MOCK_TEST_CONTROLS=1 DATA_DIR="$work/data" RUST_LOG=warn \
  ./target/debug/mock-server --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
pid=$!
url=""
for _ in $(seq 1 150); do
  url=$(sed -n '1s/^listening on //p' "$work/out")
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "the mock server did not start:" >&2
  cat "$work/err" >&2
  exit 1
fi
echo "mock server for the browser tests: $url"

# The URL reaches the tests at compile time (option_env!). cargo runs each wasm test binary through
# wasm-bindgen's test runner, headless, in the browser whose driver the environment names: one
# driver a run (with both named, the runner takes Firefox for both), so Chrome, then Firefox.
export SB_TEST_URL="$url" CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
CHROMEDRIVER="$(command -v chromedriver)" cargo test --target wasm32-unknown-unknown "$@"
GECKODRIVER="$(command -v geckodriver)" cargo test --target wasm32-unknown-unknown "$@"
