// The package's entry module: wasm-bindgen's generated bindings (bindings.js: the classes, their
// methods and init(), from the Rust of src/js/) and what is plainer said in JS around them:
// - `new AuthManager()` before init() throws a SessionBrokerError that says what to do (the
//   bindings' own error would be "Cannot read properties of undefined");
// - AuthManager's synchronous reads (and getToken()/hasPermission() on a valid token) answer from
//   a read cache in front of localStorage, without entering the wasm module;
// - getToken() and getSession() from one answer of the module, and the auth-state stream's
//   listeners (onAuthStateChange), told with the session storage holds;
// - docdbFetch, the replication clients' fetch, and fetch, the app's own calls with the token;
// - the exports keep their names (`.name`) once minified.
// Its imports are pkg/'s files: `make build` puts it beside the bindings (pkg-template/finish.mjs
// names them and their snippets' directory) and bundles them into one file.
import * as generated from "./bindings.js";
import { SessionBrokerError, isSessionBrokerError } from "./snippets/session-broker/src/js/error_class.js";
import { sbOnReadsChanged } from "./snippets/session-broker/src/web/browser.js";

export { SessionBrokerError, isSessionBrokerError };
export { SyncSession, RollingDbAdmin } from "./bindings.js";

// ---- init() and the constructor's guard.

let initialised;
const ready = (exports) => (initialised = exports);
const init = (module) => generated.default(module).then(ready);
const initSync = (module) => ready(generated.initSync(module));
export { init as default, initSync };

// AuthManager's only: SyncSession's and RollingDbAdmin's constructors take an AuthManager, which
// exists once init() ran (without one, the bindings' own check throws first).
function checkInitialised() {
  if (!initialised) {
    throw new SessionBrokerError("not_initialized",
      "session-broker is not initialised yet: call `await init()` (the package's default export) once before creating an AuthManager, SyncSession or RollingDbAdmin.");
  }
}

/** Whether the Rust value behind `object` was released (`free()`, `using`). wasm-bindgen's own
 *  field, not an API: read here and nowhere else. */
const freed = (object) => object.__wbg_ptr === 0;

// ---- The read cache. A call reads the stored access token (and, when its answer depends on the
// expiry, the stored expiresAt: the "Storage keys" of docs/sdk.md define expiry by that key) and
// compares them with the text the cached snapshot was made from. The module computes the
// snapshot (its rules stay in Rust) only when that text changed, when it wrote storage or changed
// phase here, or when another tab wrote (browser.js hears both and tells the listener below).

let epoch = 0;
sbOnReadsChanged(() => {
  epoch++;
  if (feeds.size) queueMicrotask(cutStaleFeeds);
});

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
    if (JSON.stringify(!freed(feed.manager) && feed.manager.getDocdbHeaders(feed.kind)) !== feed.text) {
      feed.controller.abort();
      feeds.delete(feed);
    }
  }
}

// The snapshot's slot on a manager (no description: it would only be shipped bytes).
const cached = Symbol();

/** The snapshot for the stored token, from the cache when it is still true; `expiry`: the
 *  answer depends on the stored expiresAt too. */
function reads(manager, expiry) {
  let snap = manager[cached];
  if (snap !== undefined && snap.epoch === epoch && !freed(manager)
      && snap.storage.getItem(snap.key) === snap.token
      && (!expiry || snap.storage.getItem(snap.expiresKey) === snap.expiresText)) {
    return snap;
  }
  snap = manager.__sbReads();
  // Taken after the call: a corrupt value the module just removed is part of this snapshot.
  snap.epoch = epoch;
  snap.storage = localStorage;
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
  const flat = [], deep = [];
  for (const key of Object.keys(user)) {
    const value = user[key];
    if (Array.isArray(value) && !value.some(isObject)) flat.push(key);
    else if (isObject(value)) deep.push(key);
  }
  return [flat, deep];
}

// The baseUrl's slot on a manager, ending in "/": auth.fetch resolves against it.
const base = Symbol();

/** `request` sent with `token`; without one, a local 401 with the server's error body. */
const authorized = (request, token) => token
  ? (request.headers.set("Authorization", "Bearer " + token), fetch(request))
  : new Response('{"error":"not_signed_in","message":"not signed in: nothing was sent"}', { status: 401, headers: { "Content-Type": "application/json" } });

/** JSON-shaped data, copied: callers may change what they are given without touching the cache. */
function copy(value) {
  if (Array.isArray(value)) return value.map(copy);
  if (!isObject(value)) return value;
  const out = {};
  for (const key in value) out[key] = copy(value[key]);
  return out;
}

/** What getToken() and getSession() are made from, one entry into the module per snapshot: while
 *  nothing the module decides on changed (no write, no phase change, no other tab), every caller
 *  shares the refresh of the first instead of entering the module once per caller. */
function outcome(manager, snap) {
  if (snap.pending === undefined) {
    const raw = manager.__sbToken();
    const settled = () => { if (snap.pending?.raw === raw) snap.pending = undefined; };
    snap.pending = { raw, token: raw.then((got) => (typeof got === "string" ? got : null)) };
    raw.then(settled, settled);
  }
  return snap.pending;
}

/** The stored session as the stream and getSession() tell it, or `null`. */
function session(manager) {
  const snap = reads(manager, true);
  return snap.token === null ? null : { accessToken: snap.token, expiresAt: snap.expiresAt, user: manager.getCurrentUser() };
}

const listeners = Symbol();
// In the order of the core's AuthEvent (src/core/session/auth_state.rs): the module tells an index.
const EVENTS = ["INITIAL_SESSION", "SIGNED_IN", "TOKEN_REFRESHED", "USER_UPDATED", "SIGNED_OUT"];
function tell(manager, event, reason, otherTab, only) {
  const detail = otherTab ? { reason, otherTab } : { reason };
  const set = manager[listeners];
  for (const entry of only ?? [...set]) {
    const told = event < 4 ? session(manager) : null, token = told && told.accessToken;
    // One unsubscribed by an earlier listener is not told, nor one told this session already (it
    // subscribed during the change: its INITIAL_SESSION had it); a listener's failure is reported
    // and the others are still told.
    if (set.has(entry) && (!event || entry.token !== token)) {
      entry.token = token;
      try { entry.listener(EVENTS[event], told, { ...detail }); } catch (e) { console.error(e); }
    }
  }
}

// ---- AuthManager: the bindings' class with the read cache in front.

// What a released manager (free(), `using`) answers for each of its methods: a SessionBrokerError
// of its own, not the bindings' "null pointer passed to rust". Its prototype once released.
const released = new Proxy({}, {
  get: (_, name) => name == "free" || name == Symbol.dispose ? () => {}
    : name in AuthManager.prototype && !(name in Object.prototype)
    ? () => { throw new SessionBrokerError("disposed", "this AuthManager was released: create another"); }
    : Object.prototype[name],
});

export class AuthManager extends generated.AuthManager {
  constructor(options) {
    checkInitialised();
    // A URL object is the URL it names.
    if (options?.baseUrl instanceof URL) options = { ...options, baseUrl: options.baseUrl.href };
    super(options);
    // Checked by the module; parsed by auth.fetch, where a URL only the module accepted rejects.
    this[base] = options.baseUrl.replace(/\/*\s*$/, "/");
  }
  free() {
    super.free();
    Object.setPrototypeOf(this, released);
  }
  checkIfLoggedIn() {
    return reads(this).token !== null;
  }
  isTokenExpired() {
    const snap = reads(this, true);
    return snap.token === null || Date.now() >= snap.expiredFrom;
  }
  isAboutToExpire() {
    const snap = reads(this, true), now = Date.now();
    return snap.token !== null && snap.expiredFrom <= now && now < snap.expiresAt;
  }
  getCurrentUser() {
    const snap = reads(this);
    if (!isObject(snap.user)) return snap.user;
    // Worked out once per snapshot, at the first call, not for every snapshot getToken() makes.
    const [flat, deep] = (snap.userFields ??= nestedFields(snap.user));
    // A spread copies the plain claims in one step (several times faster than field by field).
    const user = { ...snap.user };
    for (const key of flat) user[key] = user[key].slice();
    for (const key of deep) user[key] = copy(user[key]);
    return user;
  }
  getCurrentRoles() {
    return reads(this).roles.slice();
  }
  getToken() {
    const snap = reads(this, true);
    // One settled promise per snapshot: it always holds the same token.
    if (usable(snap)) return (snap.answer ??= Promise.resolve(snap.token));
    return outcome(this, snap).token;
  }
  // The session with a valid token, or why there is none (the module's `[code, message]`).
  async getSession() {
    const snap = reads(this, true);
    const got = usable(snap) ? snap.token : await outcome(this, snap).raw;
    // Storage is read again after the wait: a sign-out meanwhile (here or in another tab) leaves none.
    const now = typeof got === "string" ? session(this) : null;
    if (now) return { session: now, error: null };
    const [code, message] = typeof got === "string" ? ["not_signed_in", "Not signed in."] : got;
    return { session: null, error: { code, message } };
  }
  // The stream: the module tells this one listener (set at the first subscription: it holds the
  // manager), which tells the app's with the session storage holds now; INITIAL_SESSION in a
  // microtask, to each new listener.
  onAuthStateChange(listener) {
    if (typeof listener !== "function") throw new SessionBrokerError("invalid_argument", "onAuthStateChange needs a function");
    let set = this[listeners];
    if (!set) {
      set = this[listeners] = new Set();
      this.__sbListen((event, reason, otherTab) => tell(this, event, reason, otherTab));
    }
    const entry = { listener };
    set.add(entry);
    queueMicrotask(() => !freed(this) && tell(this, 0, "stored", false, [entry]));
    return () => { set.delete(entry); };
  }
  // Not a read of the cache, but of the stored headers, at each request: a replication already
  // running follows a refresh, another tab's login or a sign-out from its next request (and
  // its open feed is cut when they change). The answer without a session is CouchDB's
  // `unauthorized`, on which PouchDB ends a replication.
  docdbFetch(kind) {
    this.getDocdbHeaders(kind);
    return (input, init) => {
      const headers = !freed(this) && this.getDocdbHeaders(kind);
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
  }
  // The app's own calls to its backend, with the session's token, to baseUrl's origin only. A 401
  // refreshes once, unless another call already replaced the token this one was sent with, and
  // sends the copy made before the first send (a body is read once), only with a refresh of the
  // same session (the module's rule: same user, tenant and session): another's login meanwhile
  // never carries this request.
  async fetch(input, init) {
    let request;
    try {
      // What `Request` refuses (credentials in the URL, a malformed one), and no request at all.
      if (input == null) throw new TypeError("no URL or Request");
      request = new Request(input.url ? input : new URL(input, this[base]), init);
    } catch (e) {
      throw new SessionBrokerError("invalid_argument", "fetch: " + e.message);
    }
    const again = request.clone();
    if (new URL(request.url).origin !== new URL(this[base]).origin || request.headers.has("Authorization")) {
      throw new SessionBrokerError("invalid_argument", "fetch: baseUrl's origin only; no Authorization header");
    }
    const token = await this.getToken(), response = await authorized(request, token);
    if (response.status !== 401 || !token) return response;
    if (reads(this).token === token) await this.refreshAuthentication();
    const now = this.__sbReads(token);
    return now.replay ? authorized(again, now.token) : response;
  }
  isAuthenticated() {
    return this.getToken().then(Boolean);
  }
  // Async: the module's throws (an argument that is not a known action) become rejections.
  async hasPermission(action) {
    const snap = typeof action === "string" ? reads(this, true) : undefined;
    if (snap === undefined || !usable(snap)) return super.hasPermission(action);
    let allowed = snap.allowed.get(action);
    if (allowed === undefined) {
      allowed = this.__sbAllows(action);
      snap.allowed.set(action, allowed);
    }
    return allowed;
  }
}

// wasm-bindgen wires `[Symbol.dispose]` (`using`) to its own `free`, which would skip the override
// above: it is this class's `free`. (An engine without the symbol has no `using`; a polyfill of it
// runs before this module loads.)
if (Symbol.dispose) AuthManager.prototype[Symbol.dispose] = AuthManager.prototype.free;

// esbuild's minifier renames them; their names are part of the API (messages, `constructor.name`).
for (const [name, f] of Object.entries({ init, initSync, AuthManager, SyncSession: generated.SyncSession,
  RollingDbAdmin: generated.RollingDbAdmin, SessionBrokerError, isSessionBrokerError })) Object.defineProperty(f, "name", { value: name });
