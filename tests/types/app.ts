// A realistic app against the published types: a login form, a guarded admin screen, a realtime
// status line. Compiled with tsc --strict by tests/types/run.sh; every @ts-expect-error line
// proves a union narrows (it fails the compile if the error it expects goes away).
import init, {
  AuthManager,
  RollingDbAdmin,
  SyncSession,
  SessionBrokerError,
  isSessionBrokerError,
  type Answer,
  type CallResult,
  type ClusterView,
  type CompanyAnswer,
  type ErrorCode,
  type FlagChanges,
  type FlagsChanged,
  type HealthStatus,
  type OkBody,
  type PaymentReference,
  type StatusRecorded,
  type LoginResult,
  type SignOutEvent,
} from "session-broker";
import type { AuthManagerOptions } from "session-broker/types";
import { ErrorCodes } from "session-broker/codes";

const options: AuthManagerOptions = { baseUrl: "https://api.example.com" };
void options;

await init();

const auth = new AuthManager({ baseUrl: "https://api.example.com", autoRefresh: true });
const seen: string[] = [];
// Handlers may return anything (a push returns a number).
auth.registerOnSignOut((e: SignOutEvent) => seen.push(e.reason));
auth.registerOnLogin((user) => seen.push(user.userId ?? "?"));
const off = auth.registerOnTokenRefresh(async ({ roles }) => roles.length);
off();
// The SDK's own final push: a PouchDB-like instance marked, the report read back.
const till = { name: "till", adapter: "idb", destroy: async () => ({ ok: true }) };
auth.trackLocalDatabase(till, { pushTo: "dynamic" });
auth.trackLocalDatabase(till, { pushTo: { database: "acme_orders" } });
// @ts-expect-error pushTo names the routed database or one by name
auth.trackLocalDatabase(till, { pushTo: "static" });
auth.registerOnSignOut(({ pushed, unpushed }) => (pushed?.["till"] ?? 0) + (unpushed?.["till"] ?? 0));
const report = await auth.destroyAllLocalDatabases();
const left: number = report.unpushed?.["till"] ?? 0;
void left;

function message(r: LoginResult): string {
  if (r.success) return `welcome ${r.user.userId}`;
  const code: ErrorCode = r.code;
  // @ts-expect-error a failure has no user
  r.user;
  switch (code) {
    case "invalid_credentials":
      return "Wrong username or password.";
    case "network":
      return "Offline?";
    default:
      return r.error;
  }
}
message(await auth.login({ username: "alice", password: "alice-pass" }));

const admin = new RollingDbAdmin(auth);
const flags: CallResult<FlagsChanged> = await admin.setFlags("acme", { rollingDb: true });
if (flags.success) {
  const on: boolean = flags.data.rollingDb;
  // Null unless the change was the rollback: then what CORE keeps that legacy lacks.
  const left: number = flags.data.coreWrittenSinceWarm?.count ?? 0;
  void on;
  void left;
} else {
  const status: number = flags.status;
  void status;
  // @ts-expect-error a failure carries no data
  flags.data.rollingDb;
}
const { data } = await admin.runRotate();
// @ts-expect-error data is undefined on the failure branch: narrow first
data.runId;
const run = await admin.runRotate();
if (run.success) void run.data.runId;
const pre = await admin.preflight("acme");
if (pre.success && !pre.data.rollingDb.ready) {
  for (const c of pre.data.rollingDb.checks) if (!c.ok) console.log(c.check, c.detail, c.runbookStep);
}

const sync = new SyncSession(auth);
const states: string[] = [];
sync.on("state", (s) => states.push(s));
sync.on("error", ({ code, message }) => console.warn(code, message));
try {
  await sync.connect();
} catch (e) {
  if (isSessionBrokerError(e)) {
    const code: ErrorCode = e.code;
    void code;
  }
  if (e instanceof SessionBrokerError && e.code === "realtime_refused") sync.close();
}

try {
  auth.requirePermission("crons:run");
} catch (e) {
  // @ts-expect-error unknown until narrowed
  e.code;
  if (isSessionBrokerError(e)) console.log(e.name, e.code, e.message);
}
{
  using scoped = new AuthManager({ baseUrl: "https://api.example.com" });
  void scoped.checkIfLoggedIn();
}

// Sign-up: the generated wire types, and the codes as values.
const signed = await auth.registerUser({ username: "newco", password: "long-enough", companyName: "New Co" });
if (signed.success) seen.push(signed.data.company.id, signed.data.user.username, ...signed.data.user.roles);
else if (signed.code === ErrorCodes.COMPANY_EXISTS) seen.push("pick another company id");
// @ts-expect-error a new user needs a username
void auth.registerUser({ password: "long-enough" });
const page = await new RollingDbAdmin(auth).auditLog({ companyId: "acme" });
if (page.success) for (const e of page.data.entries) seen.push(`${e.at} ${e.actor} ${e.action} ${e.ip ?? "-"}`);

// Each wrapper's declaration names its row of the route table (`Answer<"CLUSTER">`); what a user
// gets is still exactly the wire type, not a widening of it.
type Exactly<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Answered<F extends (...args: never[]) => Promise<unknown>> = Awaited<ReturnType<F>>;
const exact: [
  Exactly<Answered<RollingDbAdmin["cluster"]>, CallResult<ClusterView>>,
  Exactly<Answered<RollingDbAdmin["health"]>, CallResult<HealthStatus>>,
  Exactly<Answered<RollingDbAdmin["setFlags"]>, CallResult<FlagsChanged>>,
  Exactly<Parameters<RollingDbAdmin["setFlags"]>[1], FlagChanges>,
  Exactly<Answered<AuthManager["getCompany"]>, CallResult<CompanyAnswer>>,
  Exactly<Answered<AuthManager["deleteUser"]>, CallResult<OkBody>>,
  Exactly<Parameters<AuthManager["updatePaymentReference"]>[2], PaymentReference>,
  Exactly<Answered<AuthManager["updateDeviceStatus"]>, CallResult<StatusRecorded>>,
] = [true, true, true, true, true, true, true, true];
// @ts-expect-error a row the table does not type is no answer
type Missing = Answer<"NO_SUCH_ROW">;
void exact;
