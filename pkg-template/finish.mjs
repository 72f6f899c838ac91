// Finishes the package wasm-bindgen wrote into pkg/ (run by `make build`, not shipped):
// - the error class of src/js/error_class.js is exported from the package entry, so
//   `import { SessionBrokerError, isSessionBrokerError } from "session-broker"` works;
// - the three constructors check that init() ran, so a call before it throws a
//   SessionBrokerError that says what to do;
// - AuthManager's synchronous reads (and getToken()/hasPermission() on a valid token) go
//   through the read cache of src/js/hot_reads.js.
// Each edit must apply exactly as expected: a wasm-bindgen upgrade that changes the glue fails
// the build here instead of shipping a package without them.
import { readFileSync, writeFileSync } from "node:fs";

const glue = "pkg/session_broker.js";
const fail = (why) => { console.error(`pkg-template/finish.mjs: ${why}`); process.exit(1); };

let js = readFileSync(glue, "utf8");
const snippet = js.match(/from '(\.\/snippets\/[^']+\/src\/js\/error_class\.js)';/)?.[1];
if (!snippet) fail(`${glue} does not import src/js/error_class.js`);

const hotReads = js.match(/from ["'](\.\/snippets\/[^"']+\/src\/js\/hot_reads\.js)["']/)?.[1];
if (!hotReads) fail(`${glue} does not import src/js/hot_reads.js`);
if (!/^export class AuthManager \{/m.test(js)) fail(`${glue} has no AuthManager class`);

let constructors = 0;
js = js.replace(/\bwasm\.(authmanager_new|syncsession_new|rollingdbadmin_new)\(/g, (_, f) => {
  constructors++;
  return `sbReady(wasm).${f}(`;
});
if (constructors !== 3) fail(`expected the 3 constructors in ${glue}, found ${constructors}`);

js = `import { sbReady } from '${snippet}';\nimport { installHotReads } from '${hotReads}';\n${js}
installHotReads(AuthManager);
export { SessionBrokerError, isSessionBrokerError } from '${snippet}';\n`;
writeFileSync(glue, js);
