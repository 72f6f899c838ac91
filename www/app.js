// The demo page: plain ES modules over the built package, no bundler. Server and SDK strings are
// always rendered as text (textContent), never as HTML.
import init, { AuthManager } from "/pkg/session_broker.js";

const $ = (id) => document.getElementById(id);
const text = (el, value) => { el.textContent = value; return el; };
const node = (tag, value, cls) => { const el = document.createElement(tag); if (cls) el.className = cls; return text(el, value ?? ""); };

await init();
const auth = new AuthManager({ baseUrl: location.origin, deviceInfo: { name: "demo page" } });
window.sessionBroker = auth; // handy in the console

const ACTIONS = ["rollingDb:read", "rollingDb:flags", "crons:read", "crons:run", "clients:invalidate"];

function log(line) {
  const item = node("li", `${new Date().toLocaleTimeString()}  ${line}`);
  $("hook-log").prepend(item);
}

auth.registerOnLogin((user) => log(`onLogin ${user.userId} @ ${user.companyId}`));
auth.registerOnTokenRefresh((e) => log(`onTokenRefresh roles=${e.roles.join(",")} companyChanged=${e.companyChanged}`));
auth.registerOnSignOut((e) => log(`onSignOut reason=${e.reason}`));

function result(el, ok, message) {
  el.className = `result ${ok ? "ok" : "bad"}`;
  text(el, message);
}

function renderStorage() {
  const body = $("storage").tBodies[0];
  body.replaceChildren();
  const keys = Object.keys(localStorage).filter((k) => k.startsWith(AuthManager.tokenPrefix) || k.startsWith("X-Docdb-Headers")).sort();
  for (const key of keys) {
    const row = document.createElement("tr");
    row.append(node("td", key), node("td", localStorage.getItem(key), "value"));
    body.append(row);
  }
  if (!keys.length) {
    const row = document.createElement("tr");
    row.append(node("td", "(no keys: not signed in)"), node("td", ""));
    body.append(row);
  }
}

async function renderDatabases() {
  const list = $("databases");
  list.replaceChildren();
  const present = new Set((await indexedDB.databases?.() ?? []).map((d) => d.name));
  for (const name of auth.getTrackedLocalDatabases()) {
    list.append(node("li", `${name} ${present.has(name) ? "— in IndexedDB" : "— (deleted)"}`));
  }
  if (!list.children.length) list.append(node("li", "none tracked"));
}

function renderPermissions() {
  const box = $("permissions");
  box.replaceChildren();
  for (const action of ACTIONS) {
    let allowed = true;
    try { auth.requirePermission(action); } catch { allowed = false; }
    box.append(node("span", `${allowed ? "✓" : "✗"} ${action}`, `chip ${allowed ? "yes" : "no"}`));
  }
}

function renderToken() {
  const user = auth.getCurrentUser();
  text($("logged-in"), auth.checkIfLoggedIn() ? `yes, as ${user?.userId ?? "?"}` : "no");
  text($("company"), auth.getCurrentCompany()?.id ?? "—");
  const roles = auth.getCurrentRoles();
  text($("roles"), roles.length ? roles.join(", ") : "[]");
  const expiresAt = Number(localStorage.getItem("serviceProxyToken-expiresAt-Auth"));
  const state = $("expiry-state");
  if (!auth.checkIfLoggedIn() || !expiresAt) {
    text($("expires"), "—"); text(state, "no token"); state.className = "";
  } else {
    const seconds = Math.round((expiresAt - Date.now()) / 1000);
    text($("expires"), seconds > 0 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : "expired");
    if (auth.isTokenExpired()) { text(state, auth.isAboutToExpire() ? "about to expire (inside the 1-minute margin): getToken() refreshes" : "expired: getToken() refreshes"); state.className = "state-bad"; }
    else { text(state, "valid"); state.className = "state-ok"; }
  }
  const info = auth.getDeviceInfo();
  text($("device-id"), info.id ?? "not registered");
  text($("sdk-version"), `${info.sdkVersion} (${info.platform})`);
}

function render() {
  renderToken();
  renderStorage();
  renderPermissions();
  renderDatabases();
}

$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const username = $("user").value;
  const password = $("password").value || `${username}-pass`;
  const r = await auth.login({ username, password });
  result($("login-result"), r.success, r.success ? `Logged in as ${r.user.userId} (${r.user.companyId}).` : `Login failed (${r.status || "network"}): ${r.error}`);
  render();
});

$("google").addEventListener("click", async () => {
  const r = await auth.loginWithGoogle(`mock-google:${$("user").value}`);
  result($("login-result"), r.success, r.success ? `Google login as ${r.user.userId}.` : `Google login failed: ${r.error}`);
  render();
});

$("logout").addEventListener("click", async () => { await auth.logout(); result($("login-result"), true, "Signed out."); render(); });
$("refresh").addEventListener("click", async () => { const ok = await auth.refreshAuthentication(); log(`refreshAuthentication() → ${ok}`); render(); });
$("expire").addEventListener("click", () => {
  const token = localStorage.getItem("serviceProxyToken-Auth");
  if (token) auth.saveToken("Auth", token, 30);
  render();
});
$("get-token").addEventListener("click", async () => { const t = await auth.getToken(); log(`getToken() → ${t ? t.slice(0, 24) + "…" : "null"}`); render(); });

$("register-device").addEventListener("click", async () => {
  const r = await auth.registerDevice();
  result($("device-result"), r.success, r.success ? `Registered as ${r.deviceId}.` : `Not registered: ${r.error}`);
  render();
});
$("online").addEventListener("change", async (e) => {
  const r = await auth.updateDeviceStatus({ isOnline: e.target.checked });
  result($("device-result"), r.success, r.success ? `Status sent: ${e.target.checked ? "online" : "offline"}.` : `Status not sent: ${r.error}`);
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

render();
setInterval(renderToken, 1000);
