// Writes each ```js / ```ts (also ```javascript, ```typescript) block of the given Markdown files
// into its own module, readme-N.ts, so the documentation's examples are compiled exactly as written;
// a block indented in a list item is taken without its indentation. A block that continues an
// earlier one (`auth` used without being made) is a fragment: its free names are declared in
// globals.d.ts. Each file's first line says where the block is in the docs, for tsc's messages.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

const [out, ...docs] = process.argv.slice(2);
let n = 0;
for (const doc of docs) {
  const text = readFileSync(doc, "utf8");
  // Script in a language this does not compile would go unchecked: refused instead.
  const other = text.match(/^ *```(jsx|tsx|mjs|cjs|mts|cts)\b/m);
  if (other) { console.error(`${relative(root, doc)}: a \`\`\`${other[1]} block; write it as js or ts`); process.exit(1); }
  const fence = /^( *)```(?:js|ts|javascript|typescript)[ \t]*\n([\s\S]*?)^\1```[ \t]*$/gm;
  for (const m of text.matchAll(fence)) {
    const [, indent, indented] = m;
    const body = indented.replace(new RegExp(`^${indent}`, "gm"), "");
    const line = text.slice(0, m.index).split("\n").length;
    n++;
    // A block that uses PouchDB compiles in its own pass (tsconfig.pouchdb.json): PouchDB's
    // own declarations do not pass TypeScript 5.9's library check.
    const kind = /from "pouchdb-browser"/.test(body) ? ".pouchdb" : "";
    // A block that opens with a comment naming a `.d.ts` file is that declaration file of the app
    // (what a bundler's loader makes of an import, say): written as one, and not made a module.
    const declaration = /^\/\/ \S+\.d\.ts\n/.test(body);
    const name = `readme-${String(n).padStart(2, "0")}${kind}${declaration ? ".d" : ""}.ts`;
    writeFileSync(join(out, name), `// ${relative(root, doc)}:${line}\n${body}${declaration ? "" : "\nexport {};\n"}`);
  }
}
if (n === 0) { console.error("no ```js or ```ts block found"); process.exit(1); }
console.log(n);
