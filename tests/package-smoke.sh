#!/usr/bin/env bash
# Loads the built release package (pkg/, as published) in headless Chromium against a mock
# server started here, and fails unless every check on tests/package-smoke/index.html passed.
# The debug builds the wasm-bindgen suites use never meet wasm-opt; this does.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f pkg/session_broker_bg.wasm ] || { echo "pkg/ is not built: run make build" >&2; exit 1; }

cargo build --quiet -p mock-server
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

DATA_DIR="$work/data" RUST_LOG=warn ./target/debug/mock-server --listen 127.0.0.1:0 \
  --www tests/package-smoke --pkg pkg >"$work/out" 2>"$work/err" &
pid=$!
url=""
for _ in $(seq 1 150); do
  url=$(sed -n '1s/^listening on //p' "$work/out")
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$url" ] || { echo "the mock server did not start:" >&2; cat "$work/err" >&2; exit 1; }

dom=$(timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --virtual-time-budget=20000 --dump-dom "$url/" 2>/dev/null || true)
results=$(printf '%s\n' "$dom" | sed -n '/<pre id="out">/,/<\/pre>/p' | sed 's/<[^>]*>//g' | grep -E '^(ok|FAIL|done)' || true)
printf '%s\n' "$results"
passed=$(printf '%s\n' "$results" | grep -c '^ok' || true)
failed=$(printf '%s\n' "$results" | grep -c '^FAIL' || true)
if ! printf '%s\n' "$results" | grep -qx done; then failed=$((failed + 1)); echo "FAIL the page did not finish"; fi
echo "test result: package smoke. $passed passed; $failed failed"
[ "$failed" -eq 0 ]
