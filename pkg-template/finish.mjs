// Finishes the package wasm-bindgen wrote into pkg/ (run by `make build`, not shipped):
// - the error class of src/js/error_class.js is exported from the package entry, so
//   `import { SessionBrokerError, isSessionBrokerError } from "session-broker"` works;
// - the three constructors check that init() ran, so a call before it throws a
//   SessionBrokerError that says what to do;
// - the exported classes and functions keep their names (`.name`) once minified;
// - AuthManager's synchronous reads (and getToken()/hasPermission() on a valid token) go
//   through the read cache of src/js/hot_reads.js;
// - the module's imports and exports carry the short names wasm-opt gave them
//   (--minify-imports-and-exports-and-modules, its map in the file named by the first argument):
//   wasm-bindgen's names end in 16-hex-digit hashes that neither side could compress (2.5 KB
//   of the module and 1.6 KB of the glue, gzip), so the glue is rewritten to match, and so is
//   the module's `.d.ts`. (Replacements go through functions: a short name may hold a `$`.)
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

// The public bindings keep their `.name` (`make build` minifies without esbuild's --keep-names,
// which named every internal function too: 0.8 KB gzip).
js = `import { sbReady } from '${snippet}';\nimport * as sbErrors from '${snippet}';\nimport { installHotReads } from '${hotReads}';\n${js}
installHotReads(AuthManager);
for (const [name, f] of Object.entries({ AuthManager, SyncSession, RollingDbAdmin, initSync, __wbg_init,
  SessionBrokerError: sbErrors.SessionBrokerError, isSessionBrokerError: sbErrors.isSessionBrokerError })) Object.defineProperty(f, "name", { value: name });
export { SessionBrokerError, isSessionBrokerError } from '${snippet}';\n`;

// The short names. Imports: every module became "a"; the glue's first import object takes the
// short keys, and the other modules' imports (a snippet's namespace) join it.
const names = JSON.parse(readFileSync(process.argv[2], "utf8"));
const module = new WebAssembly.Module(readFileSync("pkg/session_broker_bg.wasm"));
const modules = new Set(WebAssembly.Module.imports(module).map((i) => i.module));
if (modules.size !== 1 || !modules.has("a")) fail(`the module imports from ${[...modules]}, expected only "a"`);
const returned = js.match(/ {4}return \{\n {8}__proto__: null,\n {8}"\.\/session_broker_bg\.js": import0,\n((?: {8}"[^"]+": import\d+,\n)*) {4}\};/);
if (!returned) fail(`${glue}: the import object's shape changed`);
const namespaces = Object.fromEntries([...returned[1].matchAll(/"([^"]+)": (import\d+),/g)].map((m) => [m[1], m[2]]));
js = js.replace(returned[0], "    return { __proto__: null, a: import0 };");
let joined = "";
for (const [from, name, short] of names.imports) {
  if (from === "./session_broker_bg.js") {
    const key = new RegExp(`\n {8}${name}: `, "g");
    if ((js.match(key) || []).length !== 1) fail(`${glue}: import ${name} is not one key of the import object`);
    js = js.replace(key, () => `\n        "${short}": `);
  } else if (namespaces[from]) {
    joined += `\n        "${short}": ${namespaces[from]}.${name},`;
  } else fail(`${glue}: no import object for module ${from}`);
}
js = js.replace("const import0 = {\n        __proto__: null,", (head) => head + joined);
// Exports: every `wasm.<name>` (and the constructors' `sbReady(wasm).<name>`).
const exported = new Map(names.exports);
js = js.replace(/\b(wasm|sbReady\(wasm\))\.([A-Za-z_$][\w$]*)/g, (all, on, name) => {
  if (!exported.has(name)) fail(`${glue}: wasm.${name} is not an export of the module`);
  return `${on}.${exported.get(name)}`;
});
// The glue's own wrappers of the closure trampolines bear the exports' names: renamed alike.
for (const [name, short] of exported) {
  if (name.startsWith("wasm_bindgen__convert__closures")) js = js.replace(new RegExp(`\\b${name}\\b`, "g"), () => `closure_${short}`);
}
for (const [, name] of [...names.imports.filter(([from]) => from === "./session_broker_bg.js"), ...names.exports.map(([n]) => [, n])]) {
  if (name.length > 6 && js.includes(name)) fail(`${glue}: ${name} is still named in the glue`);
}
writeFileSync(glue, js);
const types = "pkg/session_broker_bg.wasm.d.ts";
writeFileSync(types, readFileSync(types, "utf8").replace(/^export const ([\w$]+):/gm, (all, name) => {
  if (!exported.has(name)) fail(`${types}: ${name} is not an export of the module`);
  return `export const ${exported.get(name)}:`;
}));
