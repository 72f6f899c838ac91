// Writes each ```js / ```ts block of the given Markdown files into its own module, readme-N.ts,
// so the documentation's examples are compiled exactly as written (their free names, such as `auth`
// in a later block, are declared in globals.d.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

const [out, ...docs] = process.argv.slice(2);
let n = 0;
for (const doc of docs) {
  const text = readFileSync(doc, "utf8");
  for (const [, body] of text.matchAll(/^```(?:js|ts)\n([\s\S]*?)^```$/gm)) {
    n++;
    // A block that uses PouchDB compiles in its own pass (tsconfig.pouchdb.json): PouchDB's
    // own declarations do not pass TypeScript 5.9's library check.
    const kind = /from "pouchdb-browser"/.test(body) ? ".pouchdb" : "";
    const name = `readme-${String(n).padStart(2, "0")}${kind}.ts`;
    writeFileSync(join(out, name), `// ${basename(doc)}, block ${n}\n${body}\nexport {};\n`);
  }
}
if (n === 0) { console.error("no ```js or ```ts block found"); process.exit(1); }
console.log(n);
