#!/usr/bin/env bash
# Builds the page of tests/bundlers/ with Vite, esbuild and webpack (pinned by `make setup` in
# target/npm-tools), each in a fresh project that installed the packed tarball, into
# target/bundlers/<name>/dist; the end-to-end test (mock-server/tests/e2e) opens each in Chromium.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/target/npm-tools/node_modules/.bin"
out="$root/target/bundlers"
rm -rf "$out" && mkdir -p "$out"
(cd "$root/pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
for name in vite esbuild webpack; do
  dir="$out/$name"
  mkdir -p "$dir"
  cp "$root/tests/bundlers/app.js" "$root/tests/bundlers/page.html" "$root/tests/bundlers/$name/"* "$dir/"
  mv "$dir/page.html" "$dir/index.html"
  (cd "$dir" && npm init -y >/dev/null && npm pkg set type=module >/dev/null \
    && npm install --silent --no-audit --no-fund "$out"/session-broker-*.tgz)
  case $name in
    vite) (cd "$dir" && "$bin/vite" build) ;;
    esbuild)
      (cd "$dir" && "$bin/esbuild" main.js --bundle --format=esm --target=es2022 --loader:.wasm=file \
        --asset-names=[name]-[hash] --outdir=dist --log-level=warning)
      cp "$dir/index.html" "$dir/dist/" ;;
    webpack)
      (cd "$dir" && "$bin/webpack" --config webpack.config.cjs --no-stats)
      cp "$dir/index.html" "$dir/dist/" ;;
  esac
  find "$dir/dist" -name "*.wasm" | grep -q . || { echo "$name emitted no .wasm into $dir/dist"; exit 1; }
  echo "$name: $(cd "$dir/dist" && find . -type f | sort | tr "\n" " ")"
done
