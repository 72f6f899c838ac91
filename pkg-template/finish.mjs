// Finishes wasm-bindgen's output in pkg/ for the package's entry module (run by `make build`, not
// shipped); mechanical renaming only, the package's own code is in pkg-template/session_broker.js:
// - the module's imports and exports carry the short names wasm-opt gave them
//   (--minify-imports-and-exports-and-modules, its map in the file named by the first argument):
//   wasm-bindgen's names end in 16-hex-digit hashes that neither side could compress (2.5 KB
//   of the module and 1.6 KB of the glue, gzip), so the glue is rewritten to match, and so is
//   the module's `.d.ts`. (Replacements go through functions: a short name may hold a `$`.)
// - the glue and its declarations become bindings.js and bindings.d.ts (the entry module and its
//   declarations take the package's names), and the snippets' directory, named with a hash of the
//   crate, becomes snippets/session-broker, where the entry module imports from.
// Each edit must apply exactly as expected: a wasm-bindgen upgrade that changes the glue fails
// the build here instead of shipping a package without them.
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";

const glue = "pkg/session_broker.js";
const fail = (why) => { console.error(`pkg-template/finish.mjs: ${why}`); process.exit(1); };

let js = readFileSync(glue, "utf8");
if (!/^export class AuthManager \{/m.test(js)) fail(`${glue} has no AuthManager class`);

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
// Exports: every `wasm.<name>`.
const exported = new Map(names.exports);
js = js.replace(/\bwasm\.([A-Za-z_$][\w$]*)/g, (all, name) => {
  if (!exported.has(name)) fail(`${glue}: wasm.${name} is not an export of the module`);
  return `wasm.${exported.get(name)}`;
});
// The glue's own wrappers of the closure trampolines bear the exports' names: renamed alike.
for (const [name, short] of exported) {
  if (name.startsWith("wasm_bindgen__convert__closures")) js = js.replace(new RegExp(`\\b${name}\\b`, "g"), () => `closure_${short}`);
}
for (const [, name] of [...names.imports.filter(([from]) => from === "./session_broker_bg.js"), ...names.exports.map(([n]) => [, n])]) {
  if (name.length > 6 && js.includes(name)) fail(`${glue}: ${name} is still named in the glue`);
}

const snippets = readdirSync("pkg/snippets").filter((name) => name.startsWith("session-broker-"));
if (snippets.length !== 1) fail(`pkg/snippets holds ${snippets.length} directories of the crate, expected one`);
const dir = `./snippets/${snippets[0]}/`;
if (!js.includes(dir)) fail(`${glue} imports nothing from ${dir}`);
rmSync("pkg/snippets/session-broker", { recursive: true, force: true });
renameSync(`pkg/snippets/${snippets[0]}`, "pkg/snippets/session-broker");
writeFileSync("pkg/bindings.js", js.replaceAll(dir, "./snippets/session-broker/"));
rmSync(glue);
renameSync("pkg/session_broker.d.ts", "pkg/bindings.d.ts");
const types = "pkg/session_broker_bg.wasm.d.ts";
writeFileSync(types, readFileSync(types, "utf8").replace(/^export const ([\w$]+):/gm, (all, name) => {
  if (!exported.has(name)) fail(`${types}: ${name} is not an export of the module`);
  return `export const ${exported.get(name)}:`;
}));
