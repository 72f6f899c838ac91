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

// ---- IndexedDB (web/idb.rs): each request's events as a promise. A deletion or an open that
// another tab's open connection holds up (`blocked`) is refused rather than left waiting.
const idbFactory = () => {
  if (!globalThis.indexedDB) throw "IndexedDB is not available";
  return globalThis.indexedDB;
};
const idbDone = (request) => new Promise((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error || "IndexedDB request failed");
  request.onblocked = () => reject("blocked by a connection another tab keeps open");
});
export function sbIdbDelete(name) {
  return new Promise((resolve) => resolve(idbDone(idbFactory().deleteDatabase(name))));
}
export async function sbIdbExists(name) {
  const list = await idbFactory().databases();
  return list.some((d) => d.name === name);
}
export async function sbIdbWrite(name, store, records) {
  const request = idbFactory().open(name, 1);
  request.onupgradeneeded = () => {
    const db = request.result;
    if (!db.objectStoreNames.contains(store)) db.createObjectStore(store, { keyPath: "_id" });
  };
  const db = await idbDone(request);
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
