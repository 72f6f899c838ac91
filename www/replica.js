// The Session pane's offline data, kept as an app keeps it (docs/sdk.md: "Replication with
// PouchDB"): PouchDB replicas of the databases each `ready` names, replicated through the
// server's document proxy with auth.docdbFetch, tracked so the SDK destroys them at the next
// user's login or an invalidation. PouchDB comes from /vendor/ (make build vendors the pinned
// npm package); it is the page's dependency, not the SDK's.
import { $, el, result, setText } from "./dom.js";

export function createReplicaPane(auth, sync, log) {
  const PouchDB = globalThis.PouchDB;
  if (!PouchDB) {
    setText("replica-state", "PouchDB is not loaded (serve /vendor/: make demo does)");
    return { render() {} };
  }
  setText("pouchdb-version", PouchDB.version);
  let running = [], catalogue = null, orders = null, target = null;
  const remote = (db) => new PouchDB(`${location.origin}/docdb/${db}`, { fetch: auth.docdbFetch("Remote") });
  const stopAll = () => { running.forEach((r) => r.cancel()); running = []; };

  async function render() {
    setText("replica-name", catalogue?.name);
    setText("orders-target", target);
    $("write-order").disabled = !orders;
    const rows = catalogue ? (await catalogue.allDocs().catch(() => ({ rows: [] }))).rows : [];
    setText("replica-count", catalogue ? `${rows.length} document(s)` : "—");
    $("replica-docs").tBodies[0].replaceChildren(...rows.map((r) => {
      const tr = document.createElement("tr");
      tr.append(el("td", r.id), el("td", r.value.rev, "value"));
      return tr;
    }));
  }

  function forget(db) {
    if (catalogue === db) catalogue = null;
    if (orders === db) { orders = null; target = null; }
    render();
  }

  // Before the SDK destroys the tracked replicas.
  sync.on("invalidate-local", () => { stopAll(); log("PouchDB: replications stopped; the SDK destroys the replicas"); });
  // One place that (re)starts both replications, with the databases `ready` names.
  sync.on("ready", ({ staticDb, dynamicDb }) => {
    stopAll();
    catalogue = new PouchDB(staticDb);
    orders = new PouchDB(`orders-${dynamicDb}`);
    target = dynamicDb;
    for (const db of [catalogue, orders]) {
      auth.trackLocalDatabase(db);
      // A handle whose database the SDK destroyed refuses every call: drop it.
      db.on("destroyed", () => { log(`PouchDB: replica ${db.name} destroyed`); forget(db); });
    }
    const pull = catalogue.replicate.from(remote(staticDb), { live: true, retry: true });
    const push = orders.replicate.to(remote(dynamicDb), { live: true, retry: true });
    pull.on("paused", (e) => { if (!e) setText("replica-state", `up to date with ${staticDb}`); render(); });
    pull.on("active", () => setText("replica-state", `replicating from ${staticDb}`));
    push.on("change", (info) => {
      for (const doc of info.docs) log(`PouchDB: ${doc._id} pushed to ${dynamicDb}`);
      result("order-result", true, `Pushed to ${dynamicDb}: the console's document counts show it arrive.`);
    });
    for (const [what, r] of [["pull", pull], ["push", push]]) {
      r.on("error", (e) => { setText("replica-state", `${what} stopped: ${e.status} ${e.name}`); log(`PouchDB: ${what} stopped (${e.status} ${e.name})`); });
    }
    running = [pull, push];
    render();
  });

  $("write-order").addEventListener("click", async () => {
    if (!orders) return;
    const id = `order-${new Date().toISOString().replace(/[^0-9]/g, "").slice(0, 17)}`;
    try {
      await orders.put({ _id: id, type: "order", totalCents: 1250, createdAt: Date.now() });
      result("order-result", true, `Wrote ${id} into ${orders.name}; replicating…`);
    } catch (e) {
      result("order-result", false, `Not written: ${e.message}`);
    }
  });

  return { render };
}
