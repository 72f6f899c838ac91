// The browser's own machinery behind the module's ports (src/web/): what is plainer, and smaller,
// said in JS than through closures from Rust. One file, so a page loads one snippet module for
// all of them. The decisions (URLs, names, what a failure means) stay in Rust.

// ---- The cross-tab refresh lock (web/lock.rs): the lock's callback must return a promise that
// settles when the guard drops. `null` when the browser has no Web Locks.
export function sbLockRequest(name, waitMs, steal) {
  const locks = globalThis.navigator && globalThis.navigator.locks;
  if (!locks || typeof locks.request !== "function") return null;
  return new Promise((granted, refused) => {
    let release;
    const held = new Promise((r) => { release = r; });
    const options = steal ? { steal: true } : { signal: AbortSignal.timeout(waitMs) };
    locks.request(name, options, () => { granted(release); return held; }).catch((e) => {
      const name = e && e.name;
      refused(name === "TimeoutError" || name === "AbortError" ? "timeout" : String(e));
    });
  });
}

// ---- HTTP (web/transport.rs): one call of `fetch`. Resolves `[status, body text]`; rejects with
// `null` on our own timeout, else with the browser's error.
export async function sbFetch(method, url, bearer, body, timeoutMs) {
  const signal = AbortSignal.timeout(timeoutMs);
  const headers = {};
  if (bearer != null) headers.Authorization = "Bearer " + bearer;
  if (body != null) headers["Content-Type"] = "application/json";
  try {
    const response = await fetch(url, { method, headers, body, signal });
    return [response.status, await response.text()];
  } catch (e) {
    throw signal.aborted ? null : e;
  }
}

// ---- The realtime socket (web/socket.rs). `recv()` resolves to a text frame (a string) or, once
// the socket closed, its close code (a number) for every later call; binary frames are not part
// of the protocol and are skipped. `send()` first waits for the socket to leave CONNECTING: a send
// into a socket that closed before it opened makes the browser log a warning (every reconnect
// attempt while the server is down), so it is refused instead.
export function sbSocket(url) {
  const ws = new WebSocket(url);
  const frames = [], waiting = [];
  let closed = null;
  const deliver = (frame) => { const w = waiting.shift(); if (w) w(frame); else frames.push(frame); };
  const settled = new Promise((done) => {
    ws.addEventListener("open", () => done(true));
    ws.addEventListener("close", (e) => {
      done(false);
      closed = e.code;
      while (waiting.length) waiting.shift()(closed);
    });
  });
  ws.addEventListener("message", (e) => { if (typeof e.data === "string") deliver(e.data); });
  return {
    recv: () => frames.length ? Promise.resolve(frames.shift())
      : closed !== null ? Promise.resolve(closed) : new Promise((w) => waiting.push(w)),
    send: (text) => settled.then((opened) => {
      if (!opened) throw "the connection closed before it opened";
      if (ws.readyState !== WebSocket.OPEN) throw "the connection closed";
      ws.send(text);
    }),
    close: () => ws.close(),
  };
}

// ---- Local databases (web/idb.rs): each IndexedDB request's events as a promise; a whole
// destroy, or the open of a write, bounded by `boundMs` (a connection that another tab, or this
// page, keeps open without closing on `versionchange` holds a deletion up for as long as it stays
// open: the caller reports the database as failed rather than waiting for it).
const idbFactory = () => {
  if (!globalThis.indexedDB) throw "IndexedDB is not available";
  return globalThis.indexedDB;
};
const idbDone = (request) => new Promise((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error || "IndexedDB request failed");
});
const bounded = (work, boundMs) => Promise.race([work, new Promise((_, reject) =>
  setTimeout(reject, boundMs, "still blocked after " + boundMs + " ms by a connection left open"))]);
const idbDelete = (name) => idbDone(idbFactory().deleteDatabase(name));

// ---- The last refresh token spent (web/lock.rs), in IndexedDB: every tab of the origin reads
// it alike at once, where a tab's view of localStorage learns other tabs' writes later. `tail`
// null reads it; resolves null when IndexedDB fails (the refresh then goes on without it).
let spentDb;
export async function sbSpent(tail) {
  try {
    spentDb ??= idbDone(Object.assign(idbFactory().open("serviceProxyToken-refresh", 1), {
      onupgradeneeded: (e) => e.target.result.createObjectStore("spent"),
    }));
    const store = (await spentDb).transaction("spent", tail == null ? "readonly" : "readwrite").objectStore("spent");
    return (await idbDone(tail == null ? store.get("token") : store.put(tail, "token"))) ?? null;
  } catch {
    spentDb = null;
    return null;
  }
}

// The PouchDB instances an app tracked, by name: destroyed through PouchDB, so every adapter
// (the `indexeddb` one keeps open handles of its own) and every open instance of that name
// learns of it (their `destroyed` event) and the next `new PouchDB(name)` opens a fresh one.
// `targets`: where the ones marked `pushTo` send the device's writes at the final push;
// `pushedUpTo`: the sequence of its last complete push from this page.
const pouches = new Map(), targets = new Map(), pushedUpTo = new Map();
/** `trackLocalDatabase(db, options)`: the name to track; throws the reason for bad arguments. */
export function sbTrack(db, options) {
  const to = options == null ? undefined : options.pushTo;
  if (typeof db == "string") {
    if (to != null) throw "pushTo needs a local PouchDB instance, not a name";
    return db;
  }
  if (db == null || typeof db.name != "string" || typeof db.destroy != "function" || /^https?$/.test(db.adapter))
    throw "a tracked database is a name or a local PouchDB (not a remote one)";
  if (to != null && to !== "dynamic" && typeof (to && to.database) != "string")
    throw 'pushTo must be "dynamic" or {database: string}';
  pouches.set(db.name, db);
  if (to != null) targets.set(db.name, to);
  return db.name;
}
/** Destroys local database `name`: a tracked PouchDB through PouchDB, then the IndexedDB
 *  databases `_pouch_<name>` (PouchDB's) and `name` (the SDK's bootstrap) if still there. */
export function sbIdbDestroy(name, boundMs) {
  const db = pouches.get(name);
  return bounded((async () => {
    if (db) await new db.constructor(name, { adapter: db.adapter }).destroy();
    await idbDelete("_pouch_" + name);
    await idbDelete(name);
    if (pouches.get(name) === db) for (const m of [pouches, targets, pushedUpTo]) m.delete(name);
  })(), boundMs);
}
// The SDK's final push (web/idb.rs): each `tracked` PouchDB marked `pushTo` is replicated to its
// database under `docdb` (the document routes' URL), with `headers` (JSON) on every request,
// given up after `boundMs` (`docdb` null, or no routed day database known: none possible, only
// counted). Resolves the JSON of `{pushed, unpushed}` (name → documents); never rejects,
// failures are logged. Unpushed counts the changes since this page's last complete push of that
// database (all of them before one), so it may count documents an app's own replication already
// sent: an overcount, never a silent loss.
export async function sbPush(tracked, docdb, dynamicDb, headers, boundMs) {
  const report = { pushed: {}, unpushed: {} };
  headers = JSON.parse(headers);
  const fetch = (input, init = {}) => {
    const sent = new Headers(init.headers);
    for (const k in headers) sent.set(k, headers[k]);
    return globalThis.fetch(input, { ...init, headers: sent, credentials: "omit" });
  };
  for (const [name, target] of targets) {
    if (!tracked.includes(name)) continue;
    const db = pouches.get(name), fail = (why) => console.error(`session-broker: the final push of "${name}" failed: ${why}`);
    const remote = docdb && (target === "dynamic" ? dynamicDb : target.database);
    try {
      if (remote) {
        report.pushed[name] = 0;
        const replication = db.replicate.to(new db.constructor(docdb + remote, { fetch }));
        try {
          const done = await bounded(replication, boundMs);
          report.pushed[name] = done.docs_written;
          if (!done.doc_write_failures) { pushedUpTo.set(name, done.last_seq); continue; }
          fail(done.doc_write_failures + " document(s) refused");
        } catch (e) {
          replication.cancel();
          fail((e && (e.message || e.reason)) || e);
        }
      }
      const left = (await db.changes({ since: pushedUpTo.get(name) || 0 })).results.filter((c) => !c.id.startsWith("_design/")).length;
      if (left) report.unpushed[name] = left;
    } catch (e) {
      fail(e);
    }
  }
  return JSON.stringify(report);
}
export async function sbIdbExists(name) {
  const list = await idbFactory().databases();
  return list.some((d) => d.name === name);
}
export async function sbIdbWrite(name, store, records, boundMs) {
  const request = idbFactory().open(name, 1);
  request.onupgradeneeded = () => {
    const db = request.result;
    if (!db.objectStoreNames.contains(store)) db.createObjectStore(store, { keyPath: "_id" });
  };
  // Only the open is bounded (it waits behind a blocked deletion), not the writing of a large
  // catalogue; an open that succeeds after the bound is closed at once, or it would hold up the
  // next destroy in turn.
  const opening = idbDone(request);
  const db = await bounded(opening, boundMs).catch((e) => {
    opening.then((late) => late.close(), () => {});
    throw e;
  });
  try {
    const tx = db.transaction(store, "readwrite");
    const objects = tx.objectStore(store);
    for (const record of records) objects.put(record);
    await new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error || "the transaction was aborted");
    });
  } finally {
    db.close();
  }
}
