// A PouchDB (Node) replication through a CouchDB-protocol URL, as an app runs one: the headers
// given are set on every request by PouchDB's `fetch` option. Prints one JSON line.
//   node replicate.cjs pull <url> <headers-json> <dir>          -> {docs: {id: rev}, read, ms}
//   node replicate.cjs push <url> <headers-json> <dir> <count>  -> {docs: {id: rev}, written, ms}
// `ms` is the replication's own time (Node's start-up and the local writes before a push excluded).
const PouchDB = require("pouchdb");

async function main() {
  const [mode, url, headersJson, dir, count] = process.argv.slice(2);
  const headers = JSON.parse(headersJson || "{}");
  const remote = new PouchDB(url, {
    skip_setup: true,
    fetch: (u, opts) => {
      for (const [k, v] of Object.entries(headers)) opts.headers.set(k, v);
      return PouchDB.fetch(u, opts);
    },
  });
  const local = new PouchDB(`${dir}/local`);
  let result;
  let started;
  if (mode === "pull") {
    started = performance.now();
    result = await local.replicate.from(remote);
  } else {
    const docs = Array.from({ length: Number(count) }, (_, i) => ({ _id: `order-${String(i).padStart(5, "0")}`, type: "order", amountCents: 100 + i }));
    for (let i = 0; i < docs.length; i += 1000) await local.bulkDocs(docs.slice(i, i + 1000));
    started = performance.now();
    result = await local.replicate.to(remote);
  }
  const ms = performance.now() - started;
  const all = await local.allDocs();
  const docs = Object.fromEntries(all.rows.map((r) => [r.id, r.value.rev]));
  console.log(JSON.stringify({ ok: result.ok, read: result.docs_read, written: result.docs_written, errors: result.errors.length, ms, docs }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
