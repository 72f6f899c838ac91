#!/usr/bin/env bash
# Prepares the side-by-side bench (make bench): installs the pinned peers of bench/peers/ from the
# npm registry (measuring tools only), bundles each one's typical-usage entry with esbuild
# (minified ESM, as an app ships it) and measures it gzip -9 beside ours (the packed tarball's
# glue bundled the same way, plus its wasm). Writes target/bench/sizes.json and assembles the
# bench page with @supabase/auth-js bundled for the browser in target/bench/www.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD out=$PWD/target/bench
esbuild=$root/target/npm-tools/node_modules/.bin/esbuild
[ -x "$esbuild" ] || { echo "esbuild is missing: run make setup"; exit 1; }
[ -f pkg/session_broker_bg.wasm ] || { echo "pkg/ is not built: run make build"; exit 1; }
mkdir -p "$out/peers" "$out/www" "$out/dist"

# The peers, pinned; reinstalled only when bench/peers/package.json changes.
if ! cmp -s bench/peers/package.json "$out/peers/package.json.installed"; then
  cp bench/peers/package.json "$out/peers/package.json"
  npm install --silent --no-audit --no-fund --prefix "$out/peers" >/dev/null
  cp bench/peers/package.json "$out/peers/package.json.installed"
fi
# Ours, as npm users get it: the packed tarball.
tarball=$(cd pkg && npm pack --silent --pack-destination "$out")
rm -rf "$out/peers/node_modules/session-broker" && mkdir -p "$out/peers/node_modules/session-broker"
tar xzf "$out/$tarball" -C "$out/peers/node_modules/session-broker" --strip-components=1
rm -f "$out/$tarball"

gz() { gzip -9c "$1" | wc -c; }
sizes="{"
for peer in supabase auth0 oidc session-broker; do
  cp "bench/peers/$peer.js" "$out/peers/$peer.entry.js"
  "$esbuild" "$out/peers/$peer.entry.js" --bundle --minify --format=esm --platform=browser \
    --log-level=error --outfile="$out/dist/$peer.js"
  js=$(gz "$out/dist/$peer.js") wasm=0
  [ "$peer" = session-broker ] && wasm=$(gz "$out/peers/node_modules/session-broker/session_broker_bg.wasm")
  sizes="$sizes\"$peer\": {\"js\": $js, \"wasm\": $wasm, \"total\": $((js + wasm))},"
done
versions=$(cd "$out/peers/node_modules" && for p in @supabase/auth-js @auth0/auth0-spa-js oidc-client-ts session-broker; do
  printf '"%s": "%s",' "$p" "$(node -p "require('./$p/package.json').version")"; done)
echo "${sizes%,}, \"versions\": {${versions%,}}}" > "$out/sizes.json"

# The bench page and supabase's client for it.
cp bench/page/* "$out/www/"
printf 'export { GoTrueClient, navigatorLock } from "@supabase/auth-js";\n' > "$out/peers/supabase-page.js"
"$esbuild" "$out/peers/supabase-page.js" --bundle --minify --format=esm --platform=browser \
  --log-level=error --outfile="$out/www/supabase.js"
echo "bench/peers.sh: $(cat "$out/sizes.json")"
