#!/usr/bin/env bash
# Runs the wasm browser suites (tests/*.rs) with wasm-pack, headless, in Chrome then Firefox,
# against a mock server started here on a free port; the server is stopped whatever the outcome.
# By hand, against a server of your own (the drivers are found on PATH; nothing is downloaded):
#   SB_TEST_URL=http://127.0.0.1:8080 wasm-pack test --headless --chrome --firefox --mode no-install
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

# The URL reaches the tests at compile time (option_env!). wasm-pack builds the test binaries and
# runs each through the wasm-bindgen-test-runner `make setup` installed beside wasm-bindgen (the
# crate's exact version: --mode no-install fails rather than download another), with Debian's
# chromedriver and the installed geckodriver found on PATH; webdriver.json holds the browsers'
# options.
export SB_TEST_URL="$url"
wasm-pack test --headless --chrome --firefox --mode no-install -- "$@"
