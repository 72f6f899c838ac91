// The browser's own machinery behind the module's ports (src/web/): what is plainer, and smaller,
// said in JS than through closures from Rust. One file, so a page loads one snippet module for
// all of them. The decisions (URLs, names, what a failure means) stay in Rust.

// ---- The cross-tab refresh lock (web/lock.rs): the lock's callback must return a promise that
// settles when the guard drops. `null` when the browser has no Web Locks.
export function sbLockRequest(name, waitMs, steal) {
  const locks = globalThis.navigator?.locks;
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

// ---- HTTP (web/transport.rs): one call of `fetch`. Resolves `[status, body text, Retry-After's
// seconds or 0]`; rejects with
// `null` on our own timeout, else with the browser's error. With `nonceUrl`, the body carries a
// proof of the device's key for `route` when one is kept (`sbProof`, within one timeout of its
// own: the two together within twice the timeout, the refresh lock's measure of one refresh);
// `keyed`: the device is known to be keyed (see sbProof).
export async function sbFetch(method, url, bearer, body, timeoutMs, nonceUrl, route, keyed) {
  const proof = nonceUrl && await sbProof(nonceUrl, route, timeoutMs, keyed);
  if (proof) body = JSON.stringify({ ...JSON.parse(body), deviceProof: proof });
  const signal = AbortSignal.timeout(timeoutMs);
  const headers = {};
  if (bearer != null) headers.Authorization = "Bearer " + bearer;
  if (body != null) headers["Content-Type"] = "application/json";
  try {
    const response = await fetch(url, { method, headers, body, signal });
    return [response.status, await response.text(), +response.headers.get("Retry-After") || 0];
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

// Tracked local databases are recorded in the ledger in localStorage (name, PouchDB adapter,
// pushTo, owner: the core keeps it), so whichever tab destroys or pushes a database opens it
// again itself, with the PouchDB constructor of an instance this page tracked or the page's
// global `PouchDB`. A fresh instance each time: another tab's deletion may have closed the
// connection behind an old one.
let Pouch;
// Null where this page cannot open it (no constructor, or not that adapter: PouchDB throws).
const openPouch = (name, adapter) => {
  const P = Pouch || globalThis.PouchDB;
  try { return P && adapter ? new P(name, { adapter }) : null; } catch { return null; }
};
/** Every key of `localStorage` (web/storage.rs), as JSON. */
export const sbStorageKeys = () => JSON.stringify(Object.keys(localStorage));
// The package's read cache (its entry module) answers from a snapshot until told it is stale:
// storage written here or a phase change (web/storage.rs), or another tab's write (a `storage`
// event). Where nothing listens (the wasm test suites), this is a no-op.
let readsListener = () => {};
export const sbReadsChanged = () => readsListener();
export const sbOnReadsChanged = (listener) => { readsListener = listener; };
// (Optional: Node, where server-side rendering imports the package, has no such listeners.)
globalThis.addEventListener?.("storage", sbReadsChanged);
/** `trackLocalDatabase(db, options)`: the JSON of `[name, adapter, pushTo]` for the ledger
 *  (`""`: none; pushTo `"dynamic"` or `"=<database>"`); throws the reason for bad arguments. */
export function sbTrack(db, options) {
  const to = options == null ? undefined : options.pushTo;
  if (typeof db == "string") {
    if (to != null) throw "pushTo needs a local PouchDB instance, not a name";
    return JSON.stringify([db, "", ""]);
  }
  if (db == null || typeof db.name != "string" || typeof db.destroy != "function" || /^https?$/.test(db.adapter))
    throw "a tracked database is a name or a local PouchDB (not a remote one)";
  if (options != null && typeof options != "object") throw "options must be {pushTo}";
  // A database's name goes into the ledger's line and the push's URL as it is.
  const database = to && to.database;
  if (to != null && to !== "dynamic" && !(typeof database == "string" && /^[a-z][a-z0-9_$()+-]*$/.test(database)))
    throw 'pushTo must be "dynamic" or {database: "<a database name>"}';
  Pouch ||= db.constructor;
  return JSON.stringify([db.name, db.adapter || "", to == null ? "" : to === "dynamic" ? to : "=" + to.database]);
}
/** Destroys local database `name`: through PouchDB when the ledger knows its adapter (every
 *  instance of that name in this page learns of it by its `destroyed` event), then the IndexedDB
 *  databases `_pouch_<name>` (PouchDB's) and `name` (the SDK's bootstrap) if still there. */
export function sbIdbDestroy(name, adapter, boundMs) {
  return bounded((async () => {
    const db = openPouch(name, adapter);
    if (db) await db.destroy();
    await idbDelete("_pouch_" + name);
    await idbDelete(name);
  })(), boundMs);
}
// What a database holds when no PouchDB can open it here: every record of PouchDB's document
// store (either adapter), an overcount, never a silent loss.
const rawCount = async (name) => {
  if (!(await sbIdbExists("_pouch_" + name))) return 0;
  const db = await idbDone(idbFactory().open("_pouch_" + name));
  try {
    const store = ["by-sequence", "docs"].find((s) => db.objectStoreNames.contains(s));
    return store ? await idbDone(db.transaction(store).objectStore(store).count()) : 0;
  } finally {
    db.close();
  }
};
// The position of a database's last complete final push, kept in the database itself (a
// `_local` document: never replicated, gone with the database, the same for every tab).
const MARK = "_local/session-broker-push";
// The SDK's final push (web/idb.rs): `sbPlan` adds a database to the next push (`url` null:
// not allowed or not possible, only counted; `headers` JSON); `sbPush` runs them, each database
// replicated to its `url` with its `headers` on every request, given up after `boundMs`. What is left is counted as the changes
// since the last complete push (all of them before one), so it may count documents an app's own
// replication already sent: an overcount, never a silent loss. Resolves the JSON of
// `{pushed, unpushed}` (name → documents); never rejects, failures are logged.
let plans = [];
export const sbPlan = (name, adapter, url, headers) => { plans.push([name, adapter, url, headers && JSON.parse(headers)]); };
export async function sbPush(boundMs) {
  const report = { pushed: {}, unpushed: {} }, these = plans;
  plans = [];
  for (const [name, adapter, url, headers] of these) {
    const fail = (why) => console.error(`session-broker: the final push of "${name}" failed: ${why}`);
    let left = null;
    try {
      const db = openPouch(name, adapter);
      if (!db) throw `no PouchDB here opens it (adapter "${adapter}"); counted`;
      const mark = await db.get(MARK).catch(() => ({ _id: MARK }));
      left = (await db.changes({ since: mark.seq || 0 })).results.filter((c) => !c.id.startsWith("_design/")).length;
      if (url) report.pushed[name] = 0;
      if (url && left) {
        const fetch = (input, init = {}) => {
          const sent = new Headers(init.headers);
          for (const k in headers) sent.set(k, headers[k]);
          return globalThis.fetch(input, { ...init, headers: sent, credentials: "omit" });
        };
        const replication = db.replicate.to(new db.constructor(url, { fetch }));
        try {
          const done = await bounded(replication, boundMs);
          report.pushed[name] = done.docs_written;
          // A replication cancelled (its database destroyed meanwhile) resolves without failures.
          if (done.doc_write_failures || done.status !== "complete") fail(`${done.status}, ${done.doc_write_failures} refused`);
          else {
            left = 0;
            await db.put({ ...mark, seq: done.last_seq }).catch(fail);
          }
        } catch (e) {
          replication.cancel();
          fail((e && (e.message || e.reason)) || e);
        }
      }
    } catch (e) {
      fail(e);
      // Never silent: what it held before the failure, or all it holds.
      left ??= await rawCount(name).catch(() => 0);
    }
    if (left) report.unpushed[name] = left;
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

// ---- The device's key (web/key.rs): an ECDSA P-256 pair made once per origin, its private half
// non-extractable, kept in IndexedDB as a CryptoKey (the page's script can sign with it, nothing
// can read it out, and it is never in localStorage). `sbKey` resolves the public half (hex of the
// raw point), the pair made on first call; `sbProof` a proof for `route` ("POST /auth") over a
// nonce fetched from `nonceUrl`: `{nonce, signature}` (hex of WebCrypto's r‖s). Null when no
// key is kept here (the request then goes without a proof: a browser holding a copy of another's
// storage learns from the server's refusal that the session is not its own). With a key, a proof
// that cannot be made (a nonce the server could not give, a signature refused, any of it past the
// timeout) fails the request as a network failure would: sent unproven, a request bound to the key
// would be refused and the session lost to a passing fault. A key store that cannot be read does
// too when the device is known to be keyed (`keyed`); otherwise it keeps no key (a browser where
// IndexedDB never opens, whose device the server holds no key for): the request goes unproven.
/** `logout()`'s options (js/auth_manager.rs): the scope's place in local, others, global; -1 for
 *  another, or for options that are not an object (`logout("global")`). */
export const sbScope = (o) => o == null ? 0 : typeof o != "object" ? -1 : o.scope == null ? 0
  : ["local", "others", "global"].indexOf(o.scope);
let keyDb;
const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const keyPair = async () => {
  keyDb ??= idbDone(Object.assign(idbFactory().open("session-broker-device-key", 1), {
    onupgradeneeded: (e) => e.target.result.createObjectStore("key"),
  }));
  return idbDone((await keyDb).transaction("key").objectStore("key").get("pair"));
};
async function sbProof(nonceUrl, route, timeoutMs, keyed) {
  const late = new Promise((_, timedOut) => setTimeout(timedOut, timeoutMs, null));
  late.catch(() => {});
  const bounded = (step) => Promise.race([step, late]);
  const pair = await bounded(keyPair()).catch((e) => {
    keyDb = null;
    if (keyed) throw e;
  });
  if (!pair) return null;
  const [status, body] = await bounded(sbFetch("POST", nonceUrl, null, "{}", timeoutMs));
  const nonce = status == 200 && JSON.parse(body).nonce;
  if (typeof nonce != "string") throw new TypeError("the device nonce route answered HTTP " + status);
  const signed = await bounded(crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey,
    new TextEncoder().encode(route + "\n" + nonce)));
  return { nonce, signature: hex(signed) };
}
export async function sbKey() {
  try {
    let pair = await keyPair();
    if (!pair) {
      pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
      // `add`: when another tab stored its pair first, that one is the device's.
      const store = (await keyDb).transaction("key", "readwrite").objectStore("key");
      pair = await idbDone(store.add(pair, "pair")).then(() => pair, keyPair);
    }
    return hex(await crypto.subtle.exportKey("raw", pair.publicKey));
  } catch {
    keyDb = null;
    return null;
  }
}
