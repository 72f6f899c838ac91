#!/usr/bin/env bash
# Tests .ci/release-check in a temporary repository holding this Cargo.toml and the built pkg/:
# a tag on master with agreeing versions passes; a tag on another branch, a tag whose version
# differs, a malformed tag, and a package missing a file or holding an extra one each fail,
# naming why.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
check="$root/.ci/release-check"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
expect() { # expect pass|fail "<what>" TAG [words the failure must contain]
  local want=$1 what=$2 tag=$3 words=${4:-} out rc=0
  out=$("$check" "$tag" "$work" 2>&1) || rc=$?
  if { [ "$want" = pass ] && [ $rc -eq 0 ]; } || { [ "$want" = fail ] && [ $rc -ne 0 ] && [[ $out == *"$words"* ]]; }; then
    passed=$((passed + 1)); echo "ok $what"
  else
    failed=$((failed + 1)); echo "FAIL $what (exit $rc): $out"
  fi
}
version=$(awk -F'"' '/^version = / { print $2; exit }' "$root/Cargo.toml")
cd "$work"
git init -q -b master
git config user.email release@test && git config user.name release-test
cp "$root/Cargo.toml" . && cp -r "$root/pkg" pkg && git add Cargo.toml && git commit -qm base
git tag "v$version"
git checkout -q -b feature && echo change >> Cargo.toml && git commit -qam feature && git tag "v$version-feature" && git tag v0.0.1
git checkout -q master

expect pass "a tag on master with agreeing versions" "v$version"
expect fail "a malformed tag" "release-$version" "does not match"
expect fail "a tag on another branch" "v0.0.1" "is not on master"
git tag -f "v9.9.9" master >/dev/null
expect fail "a version the crate does not have" "v9.9.9" "Cargo.toml's version"
mv pkg/types.js pkg/types.js.away
expect fail "a package missing a file users need" "v$version" "npm publish would ship"
mv pkg/types.js.away pkg/types.js
node -e 'const f = "pkg/package.json"; const p = require("./" + f); p.files.push("Cargo.toml"); require("fs").writeFileSync(f, JSON.stringify(p))'
cp Cargo.toml pkg/
expect fail "a package with a file users do not need" "v$version" "npm publish would ship"

echo "test result: $([ $failed -eq 0 ] && echo ok || echo FAILED). $passed passed; $failed failed"
[ $failed -eq 0 ]
