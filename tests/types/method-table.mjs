// The method table of docs/sdk.md, made from the package's declarations of `AuthManager`, which
// come from three places: wasm-bindgen's class in bindings.d.ts (its comments are the Rust doc
// comments), the interface api.d.ts merges into it (the entry module's methods), and, where
// api.d.ts declares one, its own class that extends the generated one (generic in the app's types:
// its signatures are the ones an app sees, its JSDoc where it has one). Every documented member
// gets a row; one without a comment anywhere fails. So what an editor shows on hover and what the
// docs say are one text.
//   node method-table.mjs --check BINDINGS.d.ts API.d.ts DOC.md   fails (exit 1) while DOC differs
//   node method-table.mjs --write BINDINGS.d.ts API.d.ts DOC.md   writes the table into DOC
import { readFileSync, writeFileSync } from "node:fs";

const BEGIN = "<!-- Written by `make types` from the declarations (the Rust doc comments, pkg-template/api.d.ts): edit those, not this table. -->";
const END = "<!-- End of the table `make types` writes. -->";
// wasm-bindgen's own members of every class, documented by nobody.
const UNDOCUMENTED = new Set(["free", "[Symbol.dispose]"]);

const [mode, bindingsPath, apiPath, docPath] = process.argv.slice(2);
if (!["--check", "--write"].includes(mode) || !docPath) {
  console.error("usage: node method-table.mjs --check|--write BINDINGS.d.ts API.d.ts DOC.md");
  process.exit(2);
}
const fail = (why) => { console.error(`method-table.mjs: ${why}`); process.exit(1); };

/** The index just past the bracket that closes the one at `open` (comments and strings skipped;
 *  `=>` closes nothing), or -1. */
function closing(s, open) {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (s.startsWith("/*", i)) { i = s.indexOf("*/", i + 2) + 1; if (i <= 0) break; continue; }
    if (s.startsWith("//", i)) { i = s.indexOf("\n", i); if (i < 0) break; continue; }
    if (c === '"' || c === "'" || c === "`") { i = s.indexOf(c, i + 1); if (i < 0) break; continue; }
    if ("([{<".includes(c)) depth++;
    else if (")]}".includes(c) || (c === ">" && s[i - 1] !== "=")) { if (--depth === 0) return i + 1; }
  }
  return -1;
}

/** The text of the block whose first line `head` matches (the line ends with its `{`), or null. */
function body(text, head) {
  const m = text.match(head);
  if (!m) return null;
  const open = m.index + m[0].length - 1;
  return text.slice(open + 1, closing(text, open) - 1);
}

/** Splits `s` at the commas outside brackets. */
function splitTop(s) {
  const parts = [];
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if ("([{<".includes(s[i])) i = closing(s, i) - 1;
    else if (s[i] === ",") { parts.push(s.slice(start, i)); start = i + 1; }
  }
  parts.push(s.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

/** The members of a class or interface body, each {name, static, params, returns, doc}. */
function members(text, file) {
  const out = [];
  let doc = null;
  for (let i = 0; i < text.length;) {
    if (/\s/.test(text[i])) { i++; continue; }
    if (text.startsWith("/**", i)) {
      const end = text.indexOf("*/", i);
      doc = text.slice(i + 3, end).split("\n").map((l) => l.replace(/^\s*\*?\s?/, "").trim()).filter(Boolean).join(" ");
      i = end + 2;
      continue;
    }
    if (text.startsWith("//", i)) { i = text.indexOf("\n", i) + 1 || text.length; continue; }
    // A declaration: up to its `;` outside brackets.
    let end = i;
    while (end < text.length && text[end] !== ";") {
      end = "([{<".includes(text[end]) ? closing(text, end) : end + 1;
      if (end < 0) fail(`${file}: a bracket is not closed after \`${text.slice(i, i + 60)}\``);
    }
    const decl = text.slice(i, end).replace(/\s+/g, " ").trim();
    i = end + 1;
    const m = decl.match(/^(static )?(readonly )?(\[[^\]]+\]|\w+)(\??)(<)?/);
    if (!m) fail(`${file}: cannot read the declaration \`${decl}\``);
    const [head, isStatic, , name, , generic] = m;
    let at = head.length - (generic ? 1 : 0);
    if (generic) at = closing(decl, at);
    let params = null;
    if (decl[at] === "(") {
      const close = closing(decl, at);
      params = splitTop(decl.slice(at + 1, close - 1)).map((p) => p.match(/^(?:\.\.\.)?(\w+)(\??)/).slice(1).join(""));
      at = close;
    }
    const rest = decl.slice(at).trim();
    out.push({ name, static: Boolean(isStatic), params, returns: rest.startsWith(":") ? rest.slice(1).trim() : "AuthManager", doc });
    doc = null;
  }
  return out;
}

const bindings = readFileSync(bindingsPath, "utf8");
const api = readFileSync(apiPath, "utf8");
const generated = body(bindings, /^export class AuthManager\b.*\{$/m);
if (generated === null) fail(`${bindingsPath} declares no class AuthManager`);
const declareModule = body(api, /^declare module "\.\/bindings\.js" \{$/m) ?? "";
const sources = [
  members(generated, bindingsPath),
  members(body(declareModule, /^\s*interface AuthManager\b.*\{$/m) ?? "", apiPath),
  members(body(api, /^export declare class AuthManager\b.*\{$/m) ?? "", apiPath),
];
// By name: the last source's signature (the class an app holds), the last comment found.
const byName = new Map();
for (const source of sources) {
  for (const m of source) {
    const key = (m.static ? "static " : "") + m.name;
    const had = byName.get(key);
    byName.set(key, { ...m, doc: m.doc ?? had?.doc ?? null });
  }
}
const declared = [...byName.values()].filter((m) => !UNDOCUMENTED.has(m.name));
const bare = declared.filter((m) => !m.doc).map((m) => m.name);
if (bare.length) fail(`AuthManager's ${bare.join(", ")}: no doc comment in any declaration; document it (a Rust doc comment, or JSDoc in api.d.ts)`);
// The constructor first, then the static members, then the methods by name.
const rank = (m) => (m.name === "constructor" ? 0 : m.static ? 1 : 2);
declared.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name, "en"));
const cell = (s) => s.replaceAll("|", "\\|");
const code = (s) => "`" + cell(s) + "`";
const rows = declared.map((m) => {
  const args = m.params ? `(${m.params.join(", ")})` : "";
  const name = m.name === "constructor" ? `new AuthManager${args}` : m.static ? `AuthManager.${m.name}` : `${m.name}${args}`;
  return `| ${code(name)} | ${code(m.returns)} | ${cell(m.doc)} |`;
});
const table = [BEGIN, "", "| method | returns | |", "|---|---|---|", ...rows, "", END].join("\n");

const doc = readFileSync(docPath, "utf8");
const from = doc.indexOf(BEGIN), to = doc.indexOf(END);
if (from < 0 || to < from) fail(`${docPath} has no generated table (its first and last lines:\n${BEGIN}\n${END})`);
const written = doc.slice(0, from) + table + doc.slice(to + END.length);
if (mode === "--write") {
  if (written !== doc) writeFileSync(docPath, written);
  console.log(`${docPath}: the method table, ${rows.length} members of AuthManager`);
} else if (written !== doc) {
  const had = doc.slice(from, to + END.length).split("\n");
  const want = table.split("\n");
  const lines = [...want.filter((l) => !had.includes(l)).map((l) => `+ ${l}`), ...had.filter((l) => !want.includes(l)).map((l) => `- ${l}`)];
  fail(`${docPath}'s method table differs from the declarations: run \`make types\`.\n${lines.join("\n")}`);
} else {
  console.log(`${docPath}: the method table matches the declarations (${rows.length} members of AuthManager)`);
}
