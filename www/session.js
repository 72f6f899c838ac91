// The Session pane: what the SDK holds for this device's user, live.
import { AuthManager } from "/pkg/session_broker.js";
import { $, el, explain, result, setText } from "./dom.js";

const ACTIONS = ["rollingDb:read", "rollingDb:flags", "crons:read", "crons:run", "clients:invalidate", "catalog:write"];

export function createSessionPane(auth, sync, onChange) {
  function log(line) {
    $("hook-log").prepend(el("li", `${new Date().toISOString().slice(11, 19)} UTC  ${line}`));
  }

  auth.registerOnLogin((user) => log(`onLogin: ${user.userId} @ ${user.companyId}`));
  auth.registerOnTokenRefresh((e) => {
    log(`onTokenRefresh: roles ${e.roles.join(", ")}${e.companyChanged ? ", company changed" : ""}`);
    if (e.companyChanged) connect();
  });
  auth.registerOnSignOut((e) => log(`onSignOut: ${e.reason}`));
  sync.on("state", (s) => { setText("rt-state", s); });
  sync.on("invalidate-local", (p) => log(`invalidate-local (${p.reason}): local databases destroyed`));
  sync.on("bootstrapped", (b) => log(`bootstrapped ${b.docCount} documents from ${b.database} into ${b.db}`));
  sync.on("ready", (r) => { log(`ready: catalogue from ${r.database} (${r.staticDb})`); render(); });
  sync.on("error", (e) => log(`realtime error ${e.code}: ${e.message}`));

  async function connect() {
    try {
      await sync.connect();
    } catch (e) {
      log(`realtime not connected: ${e.message}`);
    }
    render();
  }

  function renderStorage() {
    const body = $("storage").tBodies[0];
    body.replaceChildren();
    const keys = Object.keys(localStorage).filter((k) => k.startsWith(AuthManager.tokenPrefix) || k.startsWith("X-Docdb-Headers")).sort();
    for (const key of keys) {
      const tr = document.createElement("tr");
      tr.append(el("td", key), el("td", localStorage.getItem(key), "value"));
      body.append(tr);
    }
    if (!keys.length) {
      const tr = document.createElement("tr");
      tr.append(el("td", "(no keys: not signed in)"), el("td", ""));
      body.append(tr);
    }
  }

  async function renderDatabases() {
    const list = $("databases");
    const present = new Set((await indexedDB.databases?.() ?? []).map((d) => d.name));
    list.replaceChildren();
    for (const name of auth.getTrackedLocalDatabases()) {
      list.append(el("li", `${name}${present.has(name) ? "" : " (deleted)"}`, "db"));
    }
    if (!list.children.length) list.append(el("li", "none held"));
  }

  function renderPermissions() {
    const box = $("permissions");
    box.replaceChildren();
    for (const action of ACTIONS) {
      let allowed = true;
      try { auth.requirePermission(action); } catch { allowed = false; }
      box.append(el("span", `${allowed ? "✓" : "✗"} ${action}`, `chip ${allowed ? "yes" : "no"}`));
    }
  }

  function renderToken() {
    const user = auth.getCurrentUser();
    setText("logged-in", auth.checkIfLoggedIn() ? `yes, as ${user?.userId ?? "?"}` : "no");
    setText("company", auth.getCurrentCompany()?.id ?? "—");
    const roles = auth.getCurrentRoles();
    setText("roles", roles.length ? roles.join(", ") : "[]");
    const expiresAt = Number(localStorage.getItem("serviceProxyToken-expiresAt-Auth"));
    const state = $("expiry-state");
    if (!auth.checkIfLoggedIn() || !expiresAt) {
      setText("expires", "—");
      state.textContent = "no token";
      state.className = "";
    } else {
      const seconds = Math.round((expiresAt - Date.now()) / 1000);
      setText("expires", seconds > 0 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : "expired");
      if (auth.isAboutToExpire()) { state.textContent = "about to expire: getToken() refreshes it"; state.className = "state-warn"; }
      else if (auth.isTokenExpired()) { state.textContent = "expired: getToken() refreshes it"; state.className = "state-bad"; }
      else { state.textContent = "valid"; state.className = "state-ok"; }
    }
    const info = auth.getDeviceInfo();
    setText("device-id", info.id ?? "not registered");
    setText("sdk-version", `${info.sdkVersion} (${info.platform})`);
    const routing = sync.getRouting();
    setText("rt-state", sync.getState());
    setText("rt-routing", routing ? (routing.database === "core" ? "CORE (rolling)" : "legacy database") : "—");
    setText("rt-static", routing?.staticDb);
    setText("rt-dynamic", routing?.dynamicDb);
  }

  function render() {
    // Buttons that need a session cannot be pressed without one.
    const signedIn = auth.checkIfLoggedIn();
    for (const id of ["logout", "refresh", "expire", "register-device"]) $(id).disabled = !signedIn;
    renderToken();
    renderStorage();
    renderPermissions();
    renderDatabases();
  }

  async function afterLogin(r, how) {
    result("login-result", r.success, r.success ? `${how} as ${r.user.userId} (${r.user.companyId}).` : `Login failed: ${explain(r)}`);
    if (r.success) connect();
    render();
    onChange();
  }

  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const username = $("user").value;
    const password = $("password").value || `${username}-pass`;
    afterLogin(await auth.login({ username, password }), "Logged in");
  });
  $("google").addEventListener("click", async () => {
    afterLogin(await auth.loginWithGoogle(`mock-google:${$("user").value}`), "Logged in with Google");
  });
  $("logout").addEventListener("click", async () => {
    await auth.logout();
    result("login-result", true, "Signed out.");
    render();
    onChange();
  });
  $("refresh").addEventListener("click", async () => { log(`refreshAuthentication() → ${await auth.refreshAuthentication()}`); render(); });
  $("expire").addEventListener("click", () => {
    const token = localStorage.getItem("serviceProxyToken-Auth");
    if (token) auth.saveToken("Auth", token, 30);
    render();
  });
  $("get-token").addEventListener("click", async () => {
    const t = await auth.getToken();
    log(`getToken() → ${t ? `${t.slice(0, 20)}…` : "null"}`);
    render();
  });
  $("register-device").addEventListener("click", async () => {
    const r = await auth.registerDevice();
    result("device-result", r.success, r.success ? `Registered as ${r.deviceId}.` : `Not registered: ${explain(r)}`);
    render();
  });
  $("online").addEventListener("change", async (e) => {
    const r = await auth.updateDeviceStatus({ isOnline: e.target.checked });
    result("device-result", r.success, r.success ? `Status sent: ${e.target.checked ? "online" : "offline"}.` : `Status not sent: ${explain(r)}`);
  });
  $("track-db").addEventListener("click", async () => {
    const name = $("db-name").value.trim();
    if (!name) return;
    await new Promise((resolve, reject) => {
      const req = indexedDB.open(name, 1);
      req.onupgradeneeded = () => req.result.createObjectStore("docs");
      req.onsuccess = () => { req.result.close(); resolve(); };
      req.onerror = () => reject(req.error);
    });
    auth.trackLocalDatabase(name);
    $("db-name").value = "";
    render();
  });

  return { render, renderToken, connect, log };
}
