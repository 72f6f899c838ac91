// session-broker's read cache, in front of localStorage: the synchronous reads (and getToken()
// or hasPermission() on a valid token) answer from here without entering the wasm module. A call
// reads the stored access token (and, when its answer depends on the expiry, the stored
// expiresAt: the "Storage keys" of docs/sdk.md define expiry by that key) and compares them with the text the cached
// snapshot was made from. The module computes the snapshot (its rules stay in Rust) only when
// that text changed, when it wrote storage or changed phase here (sbReadsChanged), or when
// another tab wrote (a `storage` event). `make build` installs it on AuthManager
// (pkg-template/finish.mjs), with `docdbFetch`, the replication clients' fetch.

let epoch = 0;

/** Called by the module: storage was written here, or the session's phase changed. */
export function sbReadsChanged() {
  epoch++;
  if (feeds.size) queueMicrotask(cutStaleFeeds);
}

// docdbFetch's requests, one AbortController for all those sent with one header set: when the
// stored set changes (a sign-out, another tab's login, a company switch), the requests still
// open with the old one (a longpoll or continuous `_changes` feed) are aborted, so the client's
// next request carries what is stored now, or is answered the local 401.
const feeds = new Set();
function feedFor(manager, kind, text) {
  for (const feed of feeds) if (feed.manager === manager && feed.kind === kind && feed.text === text) return feed;
  const feed = { manager, kind, text, controller: new AbortController() };
  feeds.add(feed);
  return feed;
}
// In a microtask: the module is not re-entered from inside its own storage write.
function cutStaleFeeds() {
  for (const feed of feeds) {
    if (JSON.stringify(feed.manager.__wbg_ptr !== 0 && feed.manager.getDocdbHeaders(feed.kind)) !== feed.text) {
      feed.controller.abort();
      feeds.delete(feed);
    }
  }
}

// Another tab's write (the module hears it too, to follow that tab).
if (typeof globalThis.addEventListener === "function") {
  globalThis.addEventListener("storage", sbReadsChanged);
}

const cached = Symbol("session-broker reads");

/** The snapshot for the stored token, from the cache when it is still true; `expiry`: the
 *  answer depends on the stored expiresAt too. */
function reads(manager, expiry) {
  let snap = manager[cached];
  if (snap !== undefined && snap.epoch === epoch && manager.__wbg_ptr !== 0
      && snap.storage.getItem(snap.key) === snap.token
      && (!expiry || snap.storage.getItem(snap.expiresKey) === snap.expiresText)) {
    return snap;
  }
  snap = manager.__sbReads();
  // Taken after the call: a corrupt value the module just removed is part of this snapshot.
  snap.epoch = epoch;
  snap.storage = globalThis.localStorage;
  snap.expiresText = snap.storage.getItem(snap.expiresKey);
  snap.allowed = new Map();
  manager[cached] = snap;
  return snap;
}

/** A valid token that getToken() answers without a refresh. */
const usable = (snap) => snap.token !== null && snap.usable && Date.now() < snap.expiredFrom;

const isObject = (value) => value !== null && typeof value === "object";

/** The user's fields that hold arrays or objects, which each caller needs copies of: arrays of
 *  plain values (roles) are sliced, anything deeper copied field by field. */
function nestedFields(user) {
  const fields = { flat: [], deep: [] };
  for (const key of Object.keys(user)) {
    const value = user[key];
    if (Array.isArray(value) && !value.some(isObject)) fields.flat.push(key);
    else if (isObject(value)) fields.deep.push(key);
  }
  return fields;
}

/** JSON-shaped data, copied: callers may change what they are given without touching the cache. */
function copy(value) {
  if (Array.isArray(value)) return value.map(copy);
  if (!isObject(value)) return value;
  const out = {};
  for (const key in value) out[key] = copy(value[key]);
  return out;
}

export function installHotReads(AuthManager) {
  const proto = AuthManager.prototype;
  const slow = { getToken: proto.getToken, hasPermission: proto.hasPermission };
  Object.assign(proto, {
    checkIfLoggedIn() {
      return reads(this).token !== null;
    },
    isTokenExpired() {
      const snap = reads(this, true);
      return snap.token === null || Date.now() >= snap.expiredFrom;
    },
    isAboutToExpire() {
      const snap = reads(this, true), now = Date.now();
      return snap.token !== null && snap.expiredFrom <= now && now < snap.expiresAt;
    },
    getCurrentUser() {
      const snap = reads(this);
      if (!isObject(snap.user)) return snap.user;
      // Worked out once per snapshot, at the first call, not for every snapshot getToken() makes.
      const { flat, deep } = (snap.userFields ??= nestedFields(snap.user));
      // A spread copies the plain claims in one step (several times faster than field by field).
      const user = { ...snap.user };
      for (const key of flat) user[key] = user[key].slice();
      for (const key of deep) user[key] = copy(user[key]);
      return user;
    },
    getCurrentRoles() {
      return reads(this).roles.slice();
    },
    getToken() {
      const snap = reads(this, true);
      // One settled promise per snapshot: it always holds the same token.
      if (usable(snap)) return (snap.answer ??= Promise.resolve(snap.token));
      // Nothing the module decides on changed since this snapshot (no write, no phase change,
      // no other tab), so it would hand this caller the same refresh as the last one: share
      // that promise until it settles instead of entering the module once per caller.
      if (snap.pending === undefined) {
        const pending = slow.getToken.call(this);
        const settled = () => { if (snap.pending === pending) snap.pending = undefined; };
        snap.pending = pending;
        pending.then(settled, settled);
      }
      return snap.pending;
    },
    // Not a read of the cache, but of the stored headers, at each request: a replication already
    // running follows a refresh, another tab's login or a sign-out from its next request (and
    // its open feed is cut when they change). The answer without a session is CouchDB's
    // `unauthorized`, on which PouchDB ends a replication.
    docdbFetch(kind) {
      this.getDocdbHeaders(kind);
      return (input, init) => {
        const headers = this.__wbg_ptr !== 0 && this.getDocdbHeaders(kind);
        if (!headers) {
          return Promise.resolve(new Response('{"error":"unauthorized","message":"not signed in: nothing was sent"}',
            { status: 401, headers: { "Content-Type": "application/json" } }));
        }
        const request = new Request(input, init);
        for (const name in headers) request.headers.set(name, headers[name]);
        const { signal } = feedFor(this, kind, JSON.stringify(headers)).controller;
        // The headers are the authority: no cookies, whatever the client asked for.
        return fetch(request, { credentials: "omit", signal: AbortSignal.any([request.signal, signal]) });
      };
    },
    hasPermission(action) {
      const snap = typeof action === "string" ? reads(this, true) : undefined;
      if (snap === undefined || !usable(snap)) return slow.hasPermission.call(this, action);
      let allowed = snap.allowed.get(action);
      if (allowed === undefined) {
        allowed = this.__sbAllows(action);
        snap.allowed.set(action, allowed);
      }
      return Promise.resolve(allowed);
    },
  });
}
