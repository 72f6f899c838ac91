// session-broker's read cache, in front of localStorage: the synchronous reads (and getToken()
// or hasPermission() on a valid token) answer from here without entering the wasm module. A call
// reads the stored access token (and, when its answer depends on the expiry, the stored
// expiresAt: CONTRACT §3 defines expiry by that key) and compares them with the text the cached
// snapshot was made from. The module computes the snapshot (its rules stay in Rust) only when
// that text changed, when it wrote storage or changed phase here (sbReadsChanged), or when
// another tab wrote (a `storage` event). `make build` installs it on AuthManager
// (pkg-template/finish.mjs).

let epoch = 0;

/** Called by the module: storage was written here, or the session's phase changed. */
export function sbReadsChanged() {
  epoch++;
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
