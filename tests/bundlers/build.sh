#!/usr/bin/env bash
# Builds the page of tests/bundlers/ with Vite, esbuild and webpack (pinned by `make setup` in
# target/npm-tools), each in a fresh project that installed the packed tarball, into
# target/bundlers/<name>/dist, and the example app (examples/vite-app) into
# target/bundlers/example/dist; the end-to-end tests (mock-server/tests/e2e) open each in Chromium.
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

# The example app as its `npm run build` builds it (`tsc && vite build`, under its own tsconfig:
# Vite's template's), with the tools its package.json pins, which must be the Makefile's.
example="$root/examples/vite-app"
dir="$out/example"
for tool in typescript vite; do
  pin=$(node -p "require('$example/package.json').devDependencies['$tool']")
  grep -qE "(^| )$tool@$pin( |\$)" "$root/Makefile" \
    || { echo "examples/vite-app/package.json pins $tool $pin, the Makefile another version"; exit 1; }
done
# Its tsconfig.json is the template's of the pinned create-vite, with `strict` and
# `noUncheckedSideEffectImports` on (the template's TypeScript has them on by default, the pinned
# one does not).
node -e '
  const fs = require("fs");
  const read = (f) => JSON.parse(fs.readFileSync(f, "utf8").replace(/\/\*[\s\S]*?\*\//g, ""));
  const sorted = (v) => v && typeof v === "object" && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v;
  const [app, template] = process.argv.slice(1).map(read);
  Object.assign(template.compilerOptions, { strict: true, noUncheckedSideEffectImports: true });
  if (JSON.stringify(sorted(app)) !== JSON.stringify(sorted(template))) {
    console.error("examples/vite-app/tsconfig.json is not the template'"'"'s of " + process.argv[2]);
    process.exit(1);
  }' "$example/tsconfig.json" "$root/target/create-vite/node_modules/create-vite/template-vanilla-ts/tsconfig.json"
mkdir -p "$dir"
cp -r "$example/index.html" "$example/tsconfig.json" "$example/vite.config.ts" "$example/src" "$dir/"
(cd "$dir" && npm init -y >/dev/null && npm pkg set type=module >/dev/null \
  && npm install --silent --no-audit --no-fund "$out"/session-broker-*.tgz)
# The tsconfig's `types: ["vite/client"]`, from the pinned Vite.
ln -s "$root/target/npm-tools/node_modules/vite" "$dir/node_modules/vite"
(cd "$dir" && "$bin/tsc" -p . && "$bin/vite" build --logLevel warn)
find "$dir/dist" -name "*.wasm" | grep -q . || { echo "the example emitted no .wasm into $dir/dist"; exit 1; }
echo "example: $(cd "$dir/dist" && find . -type f | sort | tr "\n" " ")"
