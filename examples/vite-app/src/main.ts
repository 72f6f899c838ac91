// A small app on session-broker, written from the README and docs/sdk.md: the page drawn from the
// auth events, a login form, the user and their roles, the user's own record from the backend,
// device registration, an action only some roles may run, a sign-out hook and logout.
import init, {
  AuthManager,
  RollingDbAdmin,
  isSessionBrokerError,
  type AuthSession,
  type ErrorCode,
  type UserAnswer,
} from "session-broker";
import { explain } from "./errors.ts";

await init();
// Served by the backend itself (the mock server's `--www`), the page's origin is the backend;
// under `npm run dev`, VITE_API_URL names it.
const auth = new AuthManager({ baseUrl: import.meta.env.VITE_API_URL || location.origin });

const $ = (id: string) => document.getElementById(id)!;
const show = (id: string, text: string) => ($(id).textContent = text);
const failure = (code: ErrorCode, message: string) => `${explain(code, message)} (${code})`;
const thrown = (e: unknown) => (isSessionBrokerError(e) ? failure(e.code, e.message) : String(e));

function log(line: string) {
  const item = document.createElement("li");
  item.textContent = line;
  $("events").append(item);
}

// Everything on screen follows the session, as the SDK tells it: the stored one first
// (INITIAL_SESSION), then each change, this tab's or another's. This is the one place that draws it.
auth.onAuthStateChange((event, session, { reason, otherTab }) => {
  log(`${event} (${reason}${otherTab ? ", in another tab" : ""})`);
  void render(session);
});

let drawing = 0;
async function render(session: AuthSession | null) {
  const turn = ++drawing;
  show("status", session ? `Signed in to ${session.user.companyId}` : "Signed out");
  $("login-form").hidden = session !== null;
  $("session").hidden = session === null;
  if (!session) return;
  const { user } = session;
  show("user", user.userId);
  show("company", user.companyId);
  show("roles", user.roles.join(", ") || "none");
  // hasPermission refreshes an expired token first, so its answer is about the current roles.
  const mayRotate = await auth.hasPermission("crons:run");
  if (turn !== drawing) return; // a later change drew the page meanwhile
  ($("rotate") as HTMLButtonElement).disabled = !mayRotate;
  show("rotate-out", mayRotate ? "" : "Your roles may not run the rotate.");
}

// The sign-out hook runs before the SDK clears the tokens (a last call with the token would go
// here): the app forgets what it showed of the user.
auth.registerOnSignOut(({ hadSession }) => {
  if (hadSession) for (const id of ["me-out", "device-out", "rotate-out"]) show(id, "");
});

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const username = ($("username") as HTMLInputElement).value;
  const password = ($("password") as HTMLInputElement).value;
  show("login-error", "");
  try {
    const r = await auth.login({ username, password });
    if (!r.success) show("login-error", failure(r.code, r.error));
  } catch (e) {
    show("login-error", thrown(e)); // an empty field: the SDK checks its arguments before sending
  }
});

// The user's own record from the backend: `auth.fetch` sends the session's token (refreshed first
// when needed), and without a session answers a 401 itself.
$("me").addEventListener("click", async () => {
  try {
    const response = await auth.fetch("/users/me");
    const body: unknown = await response.json();
    show("me-out", response.ok ? meLine(body as UserAnswer) : refusal(body as ErrorBody));
  } catch (e) {
    show("me-out", thrown(e));
  }
});

/** The server's error body. */
type ErrorBody = { error: ErrorCode; message: string };

const meLine = ({ user }: UserAnswer) => `${user.username}, of ${user.companies.join(", ")}`;
const refusal = ({ error, message }: ErrorBody) => failure(error, message);

$("device").addEventListener("click", async () => {
  const r = await auth.registerDevice();
  show("device-out", r.success ? `Registered as ${r.deviceId}` : failure(r.code, r.error));
});

$("rotate").addEventListener("click", async () => {
  try {
    auth.requirePermission("crons:run");
  } catch (e) {
    show("rotate-out", thrown(e));
    return;
  }
  const r = await new RollingDbAdmin(auth).runRotate();
  show("rotate-out", r.success ? `Rotate ${r.data.runId}: ${r.data.status}` : failure(r.code, r.error));
});

$("logout").addEventListener("click", () => auth.logout());
