// The release module's own allocator, driven through the module's exported malloc and free (the
// ones the glue passes strings with), in Node: no browser, no glue. The allocator ends its free
// list with an address past the end of memory and reads a node only after checking for that
// end; an optimiser that may assume loads never trap reads first, and the page traps ("memory
// access out of bounds") at the first free that meets the list's end. The first case is that
// free, as it happens on a page; the second a seeded mix of allocations and frees whose blocks
// must never overlap.
//   node tests/module/allocator.mjs pkg/session_broker_bg.wasm target/wasm-names.json
import { readFileSync } from "node:fs";

const [wasmPath, namesPath] = process.argv.slice(2);
const names = JSON.parse(readFileSync(namesPath, "utf8"));
const exported = (name) => {
  const found = names.exports.find(([original]) => original === name);
  if (!found) throw new Error(`${namesPath} names no export ${name}`);
  return found[1];
};
const module = new WebAssembly.Module(readFileSync(wasmPath));
const imports = {};
for (const i of WebAssembly.Module.imports(module)) {
  if (i.kind !== "function") throw new Error(`unexpected import ${i.module}.${i.name} (${i.kind})`);
  // Allocating and freeing call out to nothing: an import called here is a failure of its own.
  (imports[i.module] ??= {})[i.name] = () => { throw new Error(`import ${i.name} called`); };
}

let passed = 0, failed = 0;
function check(what, run) {
  const { exports } = new WebAssembly.Instance(module, imports); // a fresh heap for each case
  const malloc = exports[exported("__wbindgen_malloc")];
  const free = exports[exported("__wbindgen_free")];
  try {
    run(malloc, free, exports[exported("memory")]);
    passed++; console.log(`ok ${what}`);
  } catch (e) {
    failed++; console.log(`FAIL ${what}: ${e}`);
  }
}

check("freeing the block just below the free list's last node", (malloc, free) => {
  const whole = malloc(65536, 8); // exactly the page it grows: that page is all in use
  malloc(16, 8); // the next page, its rest the list's last free node, right above `whole`
  free(whole, 65536, 8);
});

check("a seeded mix of allocations and frees never hands out overlapping blocks", (malloc, free, memory) => {
  let seed = 1;
  const next = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const live = [];
  for (let i = 0; i < 20000; i++) {
    if (live.length && next(3) === 0) {
      const [ptr, size, mark] = live.splice(next(live.length), 1)[0];
      const bytes = new Uint8Array(memory.buffer, ptr, size);
      if (bytes.some((b) => b !== mark)) throw new Error(`block at ${ptr} (${size} B) was overwritten`);
      free(ptr, size, 8);
    } else {
      const size = 1 + (next(10) === 0 ? next(70000) : next(300));
      const ptr = malloc(size, 8);
      if (!ptr) throw new Error(`malloc(${size}) answered 0`);
      const mark = i % 251;
      new Uint8Array(memory.buffer, ptr, size).fill(mark);
      live.push([ptr, size, mark]);
    }
  }
});

console.log(`allocator: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
