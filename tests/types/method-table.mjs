// The method table of docs/sdk.md, made from the package's declarations: every documented member
// of `AuthManager` in wasm-bindgen's bindings.d.ts (its comments are the Rust doc comments) and in
// the `AuthManager` interface that api.d.ts adds to it (the entry module's methods), with the
// JSDoc of each. So what an editor shows on hover and what the docs say are one text.
//   node method-table.mjs --check BINDINGS.d.ts API.d.ts DOC.md   fails (exit 1) while DOC differs
//   node method-table.mjs --write BINDINGS.d.ts API.d.ts DOC.md   writes the table into DOC
import { readFileSync, writeFileSync } from "node:fs";

const BEGIN = "<!-- Written by `make types` from the declarations (the Rust doc comments, pkg-template/api.d.ts): edit those, not this table. -->";
const END = "<!-- End of the table `make types` writes. -->";

const [mode, bindingsPath, apiPath, docPath] = process.argv.slice(2);
if (!["--check", "--write"].includes(mode) || !docPath) {
  console.error("usage: node method-table.mjs --check|--write BINDINGS.d.ts API.d.ts DOC.md");
  process.exit(2);
}
const fail = (why) => { console.error(`method-table.mjs: ${why}`); process.exit(1); };

/** The text of the block whose first line `head` matches (the line ends with its `{`), up to its `}`. */
function body(text, head, file) {
  const m = text.match(head);
  if (!m) fail(`${file} has no line like ${head}`);
  let depth = 0;
  for (let i = m.index + m[0].length - 1; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return text.slice(m.index + m[0].length, i);
  }
  fail(`${file}: the block of ${head} is not closed`);
}

/** Splits `s` at the commas outside brackets (`=>` is no closing bracket). */
function splitTop(s) {
  const parts = [];
  let depth = 0, start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if ("([{<".includes(c)) depth++;
    else if (")]}".includes(c) || (c === ">" && s[i - 1] !== "=")) depth--;
    else if (c === "," && depth === 0) { parts.push(s.slice(start, i)); start = i + 1; }
  }
  parts.push(s.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

/** Each member of a class or interface body that has a JSDoc comment: {name, params, returns, doc}. */
function members(text, file) {
  const out = [];
  for (const [, comment, decl] of text.matchAll(/\/\*\*([\s\S]*?)\*\/\s*\n\s*([^\n]+?);?[ \t]*\n/g)) {
    const doc = comment.split("\n").map((l) => l.replace(/^\s*\*?\s?/, "").trim()).filter(Boolean).join(" ");
    const property = decl.match(/^static readonly (\w+): (.+)$/);
    if (property) { out.push({ name: property[1], static: true, returns: property[2], doc }); continue; }
    const method = decl.match(/^(\w+)\(/);
    if (!method) fail(`${file}: cannot read the declaration \`${decl}\``);
    // The parameters: up to the parenthesis that closes the first one.
    let depth = 0, close = -1;
    for (let i = method[0].length - 1; i < decl.length && close < 0; i++) {
      if (decl[i] === "(") depth++;
      else if (decl[i] === ")" && --depth === 0) close = i;
    }
    const params = splitTop(decl.slice(method[0].length, close)).map((p) => p.match(/^(\w+)(\??)/).slice(1).join(""));
    const rest = decl.slice(close + 1).trim();
    out.push({ name: method[1], params, returns: rest.startsWith(":") ? rest.slice(1).trim() : "AuthManager", doc });
  }
  return out;
}

const bindings = readFileSync(bindingsPath, "utf8");
const api = readFileSync(apiPath, "utf8");
const declared = [
  ...members(body(bindings, /^export class AuthManager\b.*\{$/m, bindingsPath), bindingsPath),
  ...members(body(body(api, /^declare module "\.\/bindings\.js" \{$/m, apiPath), /^\s*interface AuthManager\b.*\{$/m, apiPath), apiPath),
];
const seen = new Set();
for (const m of declared) {
  if (seen.has(m.name)) fail(`AuthManager.${m.name} is declared twice`);
  seen.add(m.name);
}
// The constructor first, then the static members, then the methods by name.
const rank = (m) => (m.name === "constructor" ? 0 : m.static ? 1 : 2);
declared.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name, "en"));
const cell = (s) => s.replaceAll("|", "\\|");
const code = (s) => "`" + cell(s) + "`";
const rows = declared.map((m) => {
  const name = m.name === "constructor" ? `new AuthManager(${m.params.join(", ")})`
    : m.static ? `AuthManager.${m.name}` : `${m.name}(${m.params.join(", ")})`;
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
