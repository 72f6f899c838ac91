// A small app on session-broker, written from the README and docs/sdk.md: a login form, the user
// and their roles, the user's own record from the backend, device registration, an action only
// some roles may run, a sign-out hook and logout.
import init, { AuthManager, RollingDbAdmin, isSessionBrokerError, type JwtClaims, type UserAnswer } from "session-broker";
import { explain } from "./errors.ts";

await init();
// Served by the backend itself (the mock server's `--www`), the page's origin is the backend;
// under `npm run dev`, VITE_API_URL names it.
const auth = new AuthManager({ baseUrl: import.meta.env.VITE_API_URL || location.origin });

const $ = (id: string) => document.getElementById(id)!;
const show = (id: string, text: string) => ($(id).textContent = text);

function log(line: string) {
  const item = document.createElement("li");
  item.textContent = line;
  $("events").append(item);
}

// Everything on screen follows the session: this is the one place that draws it.
async function render(user: JwtClaims | null) {
  show("status", user ? `Signed in to ${user.companyId}` : "Signed out");
  $("login-form").hidden = user !== null;
  $("session").hidden = user === null;
  if (!user) return;
  show("user", String(user.userId));
  show("company", String(user.companyId));
  show("roles", (user.roles ?? []).join(", ") || "none");
  // hasPermission refreshes an expired token first, so its answer is about the current roles.
  const mayRotate = await auth.hasPermission("crons:run");
  ($("rotate") as HTMLButtonElement).disabled = !mayRotate;
  show("rotate-out", mayRotate ? "" : "Your roles may not run the rotate.");
}

auth.registerOnLogin((user) => {
  log(`signed in as ${user.userId}`);
  void render(user);
});
// Runs before the SDK clears the tokens: the app drops what it showed of the user.
auth.registerOnSignOut(({ reason, otherTab }) => {
  log(`signed out (${reason}${otherTab ? ", in another tab" : ""})`);
  for (const id of ["me-out", "device-out", "rotate-out"]) show(id, "");
  void render(null);
});
void render(auth.getCurrentUser());

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const username = ($("username") as HTMLInputElement).value;
  const password = ($("password") as HTMLInputElement).value;
  show("login-error", "");
  const r = await auth.login({ username, password });
  if (!r.success) show("login-error", `${explain(r.code, r.error)} (${r.code})`);
});

$("me").addEventListener("click", async () => {
  const r = await auth.getMyUser();
  show("me-out", r.success ? meLine(r.data) : `${explain(r.code, r.error)} (${r.code})`);
});

function meLine({ user }: UserAnswer): string {
  return `${user.username}, of ${user.companies.join(", ")}`;
}

$("device").addEventListener("click", async () => {
  const r = await auth.registerDevice();
  show("device-out", r.success ? `Registered as ${r.deviceId}` : `${explain(r.code, r.error)} (${r.code})`);
});

$("rotate").addEventListener("click", async () => {
  try {
    auth.requirePermission("crons:run");
  } catch (e) {
    show("rotate-out", isSessionBrokerError(e) ? `${explain(e.code, e.message)} (${e.code})` : String(e));
    return;
  }
  const r = await new RollingDbAdmin(auth).runRotate();
  show("rotate-out", r.success ? `Rotate ${r.data.runId}: ${r.data.status}` : `${explain(r.code, r.error)} (${r.code})`);
});

$("logout").addEventListener("click", () => auth.logout());
