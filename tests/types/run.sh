#!/usr/bin/env bash
# The package's types as a TypeScript user meets them: the packed tarball installed into a fresh
# project, every code block of README.md, docs/ and the package README plus a realistic app (app.ts),
# compiled with `tsc --strict`, then the blocks again under the tsconfig.json of Vite's own
# TypeScript template, where a developer pastes them (TypeScript and create-vite pinned by `make
# setup`), and the method table of docs/sdk.md against the package's declarations it is made from
# (`make types` writes it). Prints a `test result:` line for each part.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tsc="$root/target/npm-tools/node_modules/.bin/tsc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root/pkg" && npm pack --silent --pack-destination "$work" >/dev/null)
cd "$work"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund ./session-broker-*.tgz
cp "$root"/tests/types/{app.ts,globals.d.ts,tsconfig.json,tsconfig.pouchdb.json} .
# The typos the types must catch (each `@ts-expect-error` fails the compile if its error goes away).
cp "$root/tests/types/typos.ts" .
# PouchDB's types (pinned by make setup), for the replication example of docs/sdk.md.
cp -r "$root"/target/npm-tools/node_modules/@types node_modules/
# Vite's own TypeScript template (create-vite, pinned by make setup): its tsconfig.json, which
# tsconfig.vite.json extends, and the Vite whose declarations its `types` names.
template="$root/target/create-vite/node_modules/create-vite"
cp "$root/tests/types/tsconfig.vite.json" .
cp "$template/template-vanilla-ts/tsconfig.json" tsconfig.vite-template.json
ln -s "$root/target/npm-tools/node_modules/vite" node_modules/vite
blocks=$(node "$root/tests/types/extract.mjs" . "$root/README.md" "$root"/docs/*.md "$root/pkg-template/README.md")
echo "tsc $("$tsc" --version): app.ts, typos.ts and $blocks documentation block(s) against the packed tarball"
# Server-side rendering: importing the package (or its types-only entry) in Node touches no window.
node --input-type=module -e 'await import("session-broker"); await import("session-broker/types"); await import("session-broker/codes");'
# Two passes: everything with the package's declarations checked (skipLibCheck off), then the
# blocks that use PouchDB, whose @types packages do not pass TypeScript 5.9's library check
# (the package's own declarations were checked by the first pass).
if "$tsc" -p . && "$tsc" -p tsconfig.pouchdb.json; then
  echo "test result: ok. $((blocks + 2)) passed; 0 failed"
else
  echo "test result: FAILED. 0 passed; $((blocks + 2)) failed"
  exit 1
fi
# Every block again, as pasted into a Vite app (whose template skips the library check), then the
# method table.
echo "the blocks under the vanilla-ts tsconfig.json of create-vite $(node -p "require('$template/package.json').version")"
if "$tsc" -p tsconfig.vite.json \
  && node "$root/tests/types/method-table.mjs" --check "$root/pkg/bindings.d.ts" "$root/pkg/api.d.ts" "$root/docs/sdk.md"; then
  echo "test result: ok. 2 passed; 0 failed"
else
  echo "test result: FAILED. 0 passed; 2 failed"
  exit 1
fi
