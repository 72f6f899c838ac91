// Generated from the Rust types by `make types`; do not edit by hand.
/** What a database of the cluster holds. */
export type DatabaseKind = "core" | "legacy" | "day" | "archive";

/** A day database's place in its lifecycle. */
export type DayStatus = "PREWARMED" | "ACTIVE" | "DRAINED" | "ARCHIVED" | "DROPPED";

/**
 * Why a tenant needs attention: what calls for an immediate rollback, for a rotate, or (once
 * rolled back) for a restore.
 */
export type AlarmKind = "destructive-reset" | "reconciliation-regressed" | "day-database-missing" | "archived-day-lost" | "device-data-lost";

/** An alarm raised on a tenant: roll back now, or (`day-database-missing`) run the rotate. */
export type RollbackAlarm = {
  /** What was seen. */
  kind: AlarmKind;
  /** The device or day database it is about. */
  subject: string;
  /** What was seen, in a sentence. */
  detail: string;
  /** When (server clock, ms since the epoch). */
  raisedAt: number;
};

/**
 * A step the server tells a tenant's operators to take: one name for the views, the console
 * and the alert rules (each alert carries the step it asks for as its `step` label).
 */
export type OperatorStep = "roll-back" | "restore-day" | "run-rotate" | "recover-orders";

/** One step of what a tenant's operators are told to do. */
export type AttentionStep = {
  /** Which step. */
  step: OperatorStep;
  /** The step in a few words (the console's badge); `text` begins with them. */
  headline: string;
  /** The step in full, with where the runbook says more. */
  text: string;
};

/** A tenant needing attention: its alarms and what to do. */
export type Attention = {
  /** The alarms raised and not cleared, oldest first. */
  alarms: Array<RollbackAlarm>;
  /** What to do: the steps' texts, in their order. */
  instruction: string;
  /** The same, step by step, most urgent first. */
  steps: Array<AttentionStep>;
};

/** A tenant's attention, with the tenant it is about (the cluster view lists every tenant's). */
export type TenantAttention = {
  /** The tenant. */
  companyId: string;
  /** The alarms raised and not cleared, oldest first. */
  alarms: Array<RollbackAlarm>;
  /** What to do: the steps' texts, in their order. */
  instruction: string;
  /** The same, step by step, most urgent first. */
  steps: Array<AttentionStep>;
};

/** One database of the cluster. */
export type ClusterDatabase = {
  /** The database's name. */
  name: string;
  /** What it holds. */
  kind: DatabaseKind;
  /** Its tenant. */
  companyId: string;
  /** Its documents. */
  docCount: number;
  /** Its update sequence. */
  updateSeq: number;
  /** A day database's DayStatus; "open" for the others. */
  status: string;
  /** Its handle is open (counts towards maxDbsOpen). */
  open: boolean;
  /** Its handle is in use (the prewarm keeps it open). */
  inUse: boolean;
};

/**
 * `GET /admin/rolling-db/cluster`: the cluster's handles against their bound, every database,
 * and the tenants needing attention.
 */
export type ClusterView = {
  /** The bound on open handles (`ROLLING_DB_MAX_OPEN`). */
  maxDbsOpen: number;
  /** Open handles (what maxDbsOpen bounds). */
  openDbs: number;
  /** Open handles in use. */
  inUseDbs: number;
  /** Every database, open or not. */
  existingDbs: number;
  /** Every database, by name. */
  databases: Array<ClusterDatabase>;
  /** The tenants with raised alarms. */
  attention: Array<TenantAttention>;
};

/** A registered device, as the tenants view lists it. */
export type TenantDevice = {
  /** The device's id. */
  deviceId: string;
  /** A readable SDK version older than the cutover switch (the server's rule, one definition). */
  beforeCutover: boolean;
  /** The SDK version it last reported. */
  sdkVersion: string | null;
  /** When it was last seen (ms since the epoch). */
  lastSeenAt: number | null;
};

/** One tenant of the fleet: its flags, its cluster, its devices, its alarms. */
export type TenantSummary = {
  /** The tenant. */
  companyId: string;
  /** Its display name. */
  name: string;
  /** The `rollingDb` flag. */
  rollingDb: boolean;
  /** The `rollingDbDrop` flag. */
  rollingDbDrop: boolean;
  /** When the flags last changed (ms since the epoch). */
  updatedAt: number | null;
  /** Who changed them. */
  updatedBy: string | null;
  /** Its CORE exists. */
  coreExists: boolean;
  /** How many day databases the cluster holds for the tenant. */
  dayDatabases: number;
  /** Its registered devices. */
  devices: Array<TenantDevice>;
  /** Rollback alarms raised and not yet cleared by a rollback, or null. */
  attention: Attention | null;
  /** Documents its devices destroyed without pushing them, ever, by reason (their reports). */
  deviceLosses: Record<string, number>;
};

/** `GET /admin/rolling-db/tenants`: every tenant of the fleet. */
export type TenantsView = {
  /** The tenants, by id. */
  tenants: Array<TenantSummary>;
  /** The first SDK version with the catalogue cutover switch. */
  cutoverSdkVersion: string;
};

/** Where a cron run is. */
export type RunStatus = "running" | "succeeded" | "failed";

/** One cron, as `GET /admin/crons` lists it. */
export type CronInfo = {
  /** Its name (`rolling-db-rotate`, …). */
  name: string;
  /** What it does, in a line. */
  description: string;
  /**
   * Its schedule. This and the rest of the state are null for a caller who may only start
   * crons (key_manager).
   */
  schedule: string | null;
  /** Whether this server runs it on its schedule. */
  scheduled: boolean | null;
  /** Whether a run holds its lease now. */
  running: boolean | null;
  /** That run. */
  runId: string | null;
  /** When its last finished run started (ms since the epoch). */
  lastRunAt: number | null;
  /** How that run ended. */
  lastResult: RunStatus | null;
  /** When it runs next, if scheduled (ms since the epoch). */
  nextRunAt: number | null;
};

/** `GET /admin/crons`. */
export type CronsView = {
  /** Every cron. */
  crons: Array<CronInfo>;
};

/** `POST /admin/crons/{name}/run` (202): the run started, or the one already going. */
export type CronRunStarted = {
  /** The run to follow. */
  runId: string;
  /** `running`. */
  status: RunStatus;
  /** The run was already going: this request joined it. */
  alreadyRunning: boolean;
};

/** A run's progress: tenants done of all. */
export type Progress = {
  /** Tenants done. */
  done: number;
  /** Tenants in all. */
  total: number;
};

/** `GET /admin/crons/runs/{runId}`: a run with a page of its log. */
export type CronRun = {
  /** The run. */
  runId: string;
  /** Its cron. */
  cron: string;
  /** Where it is. */
  status: RunStatus;
  /** When it started (ms since the epoch). */
  startedAt: number;
  /** When it ended. */
  finishedAt: number | null;
  /** Tenants done of all. */
  progress: Progress;
  /** The page of its log asked for (`?logFrom=&logLimit=`; all of it by default). */
  log: Array<string>;
  /** How many lines the whole log has. */
  logTotal: number;
};

/** What `GET /health` says of the server: up. */
export type HealthState = "ok";

/** `GET /health`. */
export type HealthStatus = {
  /** `ok`. */
  status: HealthState;
  /** True only on the two-flag company_feature_flags schema. */
  db: boolean;
  /**
   * Present, saying why, when this server does not see its store's snapshots (its
   * `BACKUP_DIR` is not the one the store's other servers share): it then takes no backup and
   * drops nothing.
   */
  backups?: string;
};

/**
 * `POST /admin/invalidate-clients/{id}`: the tenant's devices re-bootstrap at their next
 * handshake.
 */
export type InvalidationResult = {
  /** The tenant. */
  companyId: string;
  /** The invalidation's time (ms since the epoch): what devices report as `lastInvalidation`. */
  invalidatedAt: number;
};

/** One document type of a day database against its rows in the relational store. */
export type TypeCheck = {
  /** `order` or `sale`. */
  type: string;
  /** The day's documents of the type. */
  dayCount: number;
  /** Their rows. */
  rowCount: number;
  /** SHA-256 (hex) of the day's sorted `id@rev`. */
  dayChecksum: string;
  /** The same of the rows. */
  rowChecksum: string;
  /** How many entries differ. */
  diff: number;
};

/** The legacy database's archived part: its closed orders and its sales older than a day. */
export type LegacyArchive = {
  /** The legacy database. */
  db: string;
  /** The legacy documents that belong in the archive. */
  documents: number;
  /** How many of them the archive or the relational store lacks or holds at another revision. */
  diff: number;
};

/** One past day database against its archive. */
export type ReconciliationDay = {
  /** The day database. */
  name: string;
  /** Its day, `yyyymmdd`. */
  date: string;
  /** Where it is in its lifecycle. */
  status: DayStatus;
  /** Its documents. */
  docCount: number;
  /** Copied into the archive. */
  archived: boolean;
  /** Documents differing from the archive; null until the day is archived. */
  diff: number | null;
  /** Its orders and sales against the relational store, once archived. */
  relational: Array<TypeCheck> | null;
};

/** `GET /admin/rolling-db/tenants/{id}/reconciliation`. */
export type Reconciliation = {
  /** The tenant. */
  companyId: string;
  /** The days' differing documents in all (0: reconciled). */
  diff: number;
  /** Its past day databases, oldest first. */
  days: Array<ReconciliationDay>;
  /** The legacy database's archived part, apart from `diff`; null without a legacy database. */
  legacy: LegacyArchive | null;
};

/** A day database and the locks of its drop. */
export type CleanupCandidate = {
  /** The day database. */
  name: string;
  /** Its day, `yyyymmdd`. */
  date: string;
  /** No open order left, nothing writes it. */
  drained: boolean;
  /** Copied into the archive and the relational store. */
  archived: boolean;
  /** Matching its archive now. */
  reconciled: boolean;
  /** A verified snapshot taken after the database's last write (`rolling-db-backup`). */
  backedUp: boolean;
  /** Held back by an operator (a restored day): never eligible until released. */
  held: boolean;
  /** Days since its day. */
  ageDays: number;
  /** Every lock open and past the TTL: the drop evaluation may drop it. */
  eligible: boolean;
};

/** `GET /admin/rolling-db/tenants/{id}/cleanup-candidates`. */
export type CleanupCandidates = {
  /** The tenant. */
  companyId: string;
  /** Its day databases still in the cluster. */
  candidates: Array<CleanupCandidate>;
};

/** Which catalogue a device reads: the rolling database's CORE, or the legacy one. */
export type Routing = "core" | "legacy";

/** Where the device routes: `core` only for a rolling tenant and an SDK with the cutover switch. */
export type Ready = {
  /** The tenant. */
  companyId: string;
  /** Which catalogue to read. */
  database: Routing;
  /** The static (catalogue) database to bootstrap. */
  staticDb: string;
  /** The dynamic (today's) database. */
  dynamicDb: string;
  /** The tenant's latest invalidation, if any. */
  invalidatedAt: number | null;
};

/** Destroy the local databases, then remember `invalidatedAt` as obeyed. */
export type InvalidateLocal = {
  /** The tenant invalidated. */
  companyId: string;
  /** The invalidation's time (ms since the epoch): the device remembers it as obeyed. */
  invalidatedAt: number;
  /** Why: `rolling-db-cutover`, `operator`, `invalidate_daily` or `rewarm` (the `REASON_*` constants). */
  reason: string;
};

/** One of a tenant's databases in its topology: absent, or its counts and indexes. */
export type DatabaseSummary = {
  /** The database. */
  name: string;
  /** Whether the cluster holds it. */
  exists: boolean;
  /** Its documents, when it exists. */
  docCount?: number;
  /** Its update sequence, when it exists. */
  updateSeq?: number;
  /** Its indexes, when it exists. */
  indexes?: Array<string>;
};

/** What a drop left behind, checked: the rollout's checks after a drop, as answers. */
export type AfterDrop = {
  /** The dropped day database. */
  name: string;
  /** The engine no longer holds it. */
  goneFromEngine: boolean;
  /** The engine's replication documents that still name it as source or target. */
  replicationsNamingIt: Array<string>;
  /** None does. */
  replicatorClean: boolean;
  /** Its orders in the relational store. */
  relationalOrders: number;
  /** Its sales in the relational store. */
  relationalSales: number;
};

/** One of a tenant's day databases in its topology. */
export type DayDatabase = {
  /** The day database. */
  name: string;
  /** Its day, `yyyymmdd`. */
  date: string;
  /** Where it is in its lifecycle. */
  status: DayStatus;
  /** Held back from the drop (a restored day) until an operator releases it. */
  held: boolean;
  /** For a dropped day: what the drop left, checked. */
  afterDrop?: AfterDrop;
};

/** The day databases a tenant's devices see, kept in CORE (`_local/day-manifest`) by the rotate. */
export type DayManifest = {
  /** Today's day database. */
  today: string;
  /** Tomorrow's, prewarmed. */
  tomorrow: string;
  /** Every day database still in the cluster, oldest first. */
  days: Array<string>;
  /** When the rotate wrote it (ms since the epoch). */
  updatedAt: number;
};

/** A tenant's last invalidation: what devices meet at their next handshake. */
export type TenantInvalidation = {
  /** When (ms since the epoch). */
  invalidatedAt: number;
  /** Why (`cutover`, `rollback`, `daily`, an operator's). */
  reason: string;
  /** The catalogue devices read after it. */
  routing: Routing;
};

/** `GET /admin/rolling-db/tenants/{id}/topology`: where a tenant's devices read and write. */
export type Topology = {
  /** The tenant. */
  companyId: string;
  /** The catalogue its devices read now. */
  database: Routing;
  /** Its CORE. */
  core: DatabaseSummary;
  /** Its legacy database. */
  legacy: DatabaseSummary;
  /** Its archive. */
  archive: DatabaseSummary;
  /** Its day databases, oldest first (dropped ones included). */
  days: Array<DayDatabase>;
  /**
   * The manifest CORE holds; null without CORE, before the first rotate, or when what CORE
   * holds does not read as one (the next rotate writes it again).
   */
  manifest: DayManifest | null;
  /** Its last invalidation, if any. */
  invalidation: TenantInvalidation | null;
  /** Conflicts waiting for a review. */
  openConflicts: number;
};

/** One of the rollout's prerequisites for a flag, checked by the server. */
export type PreflightCheck = {
  /** Its name (`schema`, `headroom`, `sdk_adoption`, …). */
  check: string;
  /** It passes. */
  ok: boolean;
  /** What was found, in a sentence. */
  detail: string;
  /** The rollout step it comes from. */
  runbookStep: string;
  /** The error code a refusal carries when this check fails. */
  code: string;
};

/** One flag's prerequisites. */
export type FlagPreflight = {
  /** The flag is on now. */
  on: boolean;
  /** Every check passes: the flag may be switched on without force. */
  ready: boolean;
  /** Each check. */
  checks: Array<PreflightCheck>;
};

/** `GET /admin/rolling-db/tenants/{id}/preflight`: both flags' prerequisites. */
export type Preflight = {
  /** The tenant. */
  companyId: string;
  /** `rollingDb`'s. */
  rollingDb: FlagPreflight;
  /** `rollingDbDrop`'s. */
  rollingDbDrop: FlagPreflight;
};

/** `PATCH /admin/rolling-db/flags/{id}`: the flags to change, each optional (absent: unchanged). */
export type FlagChanges = {
  /** The `rollingDb` flag. */
  rollingDb?: boolean;
  /** The `rollingDbDrop` flag (on only with `rollingDb`). */
  rollingDbDrop?: boolean;
};

/** A tenant's flags as recorded (`PATCH /admin/rolling-db/flags/{id}` answers them in `FlagsChanged`). */
export type FlagRecord = {
  /** The tenant. */
  companyId: string;
  /** The `rollingDb` flag. */
  rollingDb: boolean;
  /** The `rollingDbDrop` flag. */
  rollingDbDrop: boolean;
  /** When they last changed (ms since the epoch); null for a tenant never flagged. */
  updatedAt: number | null;
  /** Who changed them. */
  updatedBy: string | null;
};

/**
 * Documents written in CORE since its warm that the legacy catalogue lacks (a document edited
 * past its first revision whose body legacy does not hold, or one legacy's STATIC documents do
 * not have): what a rollback leaves behind in CORE and a re-warm throws away.
 */
export type CoreWrites = {
  /** How many (0 without CORE). */
  count: number;
  /** The first few of their ids, in id order. */
  ids: Array<string>;
};

/** `PATCH /admin/rolling-db/flags/{id}`: the flags as recorded, and what the change left behind. */
export type FlagsChanged = {
  /**
   * When this change turned `rollingDb` off (the rollback): CORE's documents written since its
   * warm that the legacy catalogue lacks, which the devices no longer see; null otherwise.
   */
  coreWrittenSinceWarm: CoreWrites | null;
  /** The tenant. */
  companyId: string;
  /** The `rollingDb` flag. */
  rollingDb: boolean;
  /** The `rollingDbDrop` flag. */
  rollingDbDrop: boolean;
  /** When they last changed (ms since the epoch); null for a tenant never flagged. */
  updatedAt: number | null;
  /** Who changed them. */
  updatedBy: string | null;
};

/** `GET /admin/rolling-db/tenants/{id}/core-writes`: what a rollback would leave behind in CORE now. */
export type TenantCoreWrites = {
  /** The tenant. */
  companyId: string;
  /** Its `rollingDb` flag now. */
  rollingDb: boolean;
  /** CORE's documents written since its warm that the legacy catalogue lacks. */
  coreWrittenSinceWarm: CoreWrites;
};

/** The `{ok: true}` body of routes that answer nothing else. */
export type OkBody = {
  /** Always `true` on success. */
  ok: boolean;
};

/** `POST /auth/status`'s answer: the status recorded, and on which device (`null`: none registered yet). */
export type StatusRecorded = {
  /** Always `true` on success. */
  ok: boolean;
  /** The device the status was recorded on. */
  deviceId: string | null;
  /** The status recorded. */
  isOnline: boolean;
};

/** What destroyed the device's data. */
export type LossReason = "invalidation" | "login" | "company-change" | "logout" | "push-refused";

/** Body of `POST /devices/losses`. */
export type LossReport = {
  /** The report's id, made by the device when the loss happened: 8 to 64 of `[A-Za-z0-9_-]`. */
  id: string;
  /** The device that lost the data. */
  deviceId: string;
  /** The tenant whose data it was. */
  companyId: string;
  /** What destroyed it. */
  reason: LossReason;
  /**
   * Documents destroyed unpushed, by local database: 1 to 32 of them, each count from 1 to
   * 100,000, at most 1,000,000 in all.
   */
  lost: Record<string, number>;
};

/** Answer of `POST /devices/losses`: `recorded` false when that id was recorded before. */
export type LossRecorded = {
  /** Whether this request recorded the report (false: it was already). */
  recorded: boolean;
};

/** One loss report as the server keeps it (`GET /admin/rolling-db/tenants/{id}/losses`). */
export type StoredLoss = {
  /** The report's id, as the device made it. */
  reportId: string;
  /** The device that lost the data. */
  deviceId: string;
  /** What destroyed it. */
  reason: LossReason;
  /** The documents lost, in all. */
  documents: number;
  /** The documents lost, by local database. */
  lost: Record<string, number>;
  /** When the server recorded it (ms since the epoch, server clock). */
  reportedAt: number;
};

/**
 * Answer of `GET /admin/rolling-db/tenants/{id}/losses`: the tenant's unresolved reports,
 * oldest first (at most `MAX_ACKNOWLEDGED`, 500; the next read lists those after them).
 */
export type TenantLosses = {
  /** The tenant. */
  companyId: string;
  /** Its reports neither a rollback nor an acknowledgement has answered, oldest first. */
  reports: Array<StoredLoss>;
};

/**
 * Body of `POST /admin/rolling-db/tenants/{id}/losses/acknowledge`: the reports the operator
 * reviewed and dealt with (1 to `MAX_ACKNOWLEDGED`, 500, ids of the tenant's reports).
 */
export type AcknowledgeLosses = {
  /** The reports' ids, as the tenant's losses listed them. */
  reportIds: Array<string>;
};

/** Answer of the acknowledgement. */
export type LossesAcknowledged = {
  /** The tenant. */
  companyId: string;
  /** The reports this call resolved (those resolved before are not repeated). */
  acknowledged: Array<string>;
  /** The tenant's reports still unresolved: the alarm stays while any is. */
  open: number;
};

/** `POST /admin/rolling-db/tenants/{id}/rewarm`'s body. */
export type RewarmRequest = {
  /**
   * Invalidate the tenant's devices with the drop (default false): needed while they are
   * routed to CORE.
   */
  invalidate?: boolean;
};

/** A verified snapshot of a database. */
export type Snapshot = {
  /** Its id, which `mock-server restore` takes. */
  snapshotId: string;
  /** The documents it holds. */
  docCount: number;
  /** The directory it was written to. */
  dir: string;
};

/** `POST /admin/rolling-db/tenants/{id}/rewarm`: CORE dropped, with the snapshot that keeps a way back. */
export type Rewarm = {
  /** The tenant. */
  companyId: string;
  /** The CORE database dropped. */
  dropped: string;
  /**
   * When the tenant's devices were invalidated (they go to the legacy catalogue until the
   * next rotate recreates CORE).
   */
  invalidatedAt: number | null;
  /** The verified snapshot of CORE taken before the drop (`mock-server restore` takes it back). */
  snapshot: Snapshot;
  /** Documents written in CORE since its warm, which the rebuild does not carry (confirmed). */
  editedSinceWarm: number;
};

/** `POST /admin/rolling-db/tenants/{id}/days/{db}/release`: the day database no longer held. */
export type DayReleased = {
  /** The tenant. */
  companyId: string;
  /** The day database released. */
  db: string;
  /** Always `false`: the drop's usual locks apply to it again. */
  held: boolean;
};

/** A registered device. */
export type Device = {
  /** The device's id (`dev_…`). */
  deviceId: string;
  /** The user it was registered by. */
  userId: string;
  /** The company it was registered in. */
  companyId: string;
  /** The SDK version it reported; `null` when it reported none. */
  sdkVersion: string | null;
  /** Its last reported status. */
  isOnline: boolean;
  /** When it was last seen (ms since the epoch). */
  lastSeenAt: number | null;
  /** The description it sent (`deviceInfo`). */
  info: Record<string, unknown>;
};

/** `GET /devices`: the caller's devices (a manager's: its company's). */
export type DeviceList = {
  devices: Array<Device>;
};

/** A device just registered through `POST /devices`. */
export type DeviceAnswer = {
  device: Device;
};

/** A company (a tenant). */
export type CompanyRecord = {
  /** Its id. */
  id: string;
  /** Its display name. */
  name: string;
  /** Its store code. */
  storeCode: string;
};

/** `GET /companies`: the companies the caller belongs to (sys_admin: all). */
export type CompanyList = {
  companies: Array<CompanyRecord>;
};

/** One company. */
export type CompanyAnswer = {
  company: CompanyRecord;
};

/** `PATCH /companies/{id}`: the new name. */
export type CompanyChanges = {
  /** A non-empty name of at most 100 characters. */
  name: string;
};

/** A sale, with its payment reference. */
export type Sale = {
  /** Its id. */
  id: string;
  /** Its company. */
  companyId: string;
  /** Its amount, in cents. */
  amountCents: number;
  /** The payment reference recorded; `null` before one is. */
  paymentReference: string | null;
};

/** `PATCH /companies/{id}/sales/{saleId}/payment-reference`: the reference. */
export type PaymentReference = {
  /** A non-empty reference of at most 64 characters. */
  reference: string;
};

/** A sale after its payment reference changed. */
export type SaleAnswer = {
  sale: Sale;
};

/** A user, as the management routes show it (never its password). */
export type User = {
  /** Its id. */
  id: string;
  /** Its sign-in name. */
  username: string;
  /** Its active company: the one its next token carries. */
  companyId: string;
  /** Every company it belongs to. */
  companies: Array<string>;
  /** Its roles. */
  roles: Array<string>;
};

/** `GET /users`: the users the caller manages. */
export type UserList = {
  users: Array<User>;
};

/** One user. */
export type UserAnswer = {
  user: User;
};

/** `PATCH /users/{id}`: what changes, each part optional. */
export type UserChanges = {
  /** The new password: at least 8 characters. */
  password?: string;
  /** Required with `password`, except when sys_admin resets another user's. */
  currentPassword?: string;
  /** sys_admin only. A password or role change ends every session of that user. */
  roles?: Array<string>;
};

/**
 * `POST /auth/register` (sign-up) and `POST /register-user` (a manager's or sys_admin's act):
 * the new user.
 */
export type NewUserRequest = {
  /** 3 to 64 letters, digits or `. _ @ -`. */
  username: string;
  /** At least 8 characters. */
  password: string;
  /**
   * Sign-up: the new company's id (default: from the user name); creating a user: the company
   * (default: the caller's; another needs sys_admin).
   */
  companyId?: string;
  /** Sign-up: the new company's display name (default: its id). */
  companyName?: string;
  /** Creating a user: its roles (sys_admin only; default `cashier`). Refused at sign-up. */
  roles?: Array<string>;
};

/** A new company as sign-up created it. */
export type NewCompany = {
  /** Its id. */
  id: string;
  /** Its display name. */
  name: string;
};

/** What sign-up created: the user, manager of its new company. */
export type SignedUp = {
  /** The new user. */
  user: User;
  /** Its new company. */
  company: NewCompany;
};

/** One entry of the audit log. */
export type AuditEntry = {
  /** Its id, increasing: a page's last id is the next page's `before`. */
  id: number;
  /** When (ms since the epoch). */
  at: number;
  /** A user id, or `system:<cron>` for scheduled work. */
  actor: string;
  /**
   * What was done: `flags.change`, `flags.force`, `cron.run`, `clients.invalidate`, `user.create`,
   * `user.roles`, `user.password`, `user.delete`, `company.sign_up`, `core.rewarm`, `day.release`.
   */
  action: string;
  /** The address the act came from, when a person did it. */
  ip: string | null;
  /** The act's particulars (its tenant as `companyId`, and what changed). */
  detail: Record<string, unknown>;
};

/** A page of the audit log, newest first. */
export type AuditPage = {
  /** The entries. */
  entries: Array<AuditEntry>;
  /** The next page's `before`; `null` on the last page. */
  nextBefore: number | null;
};

/** What each route the SDK wraps answers, by its row of the route table. */
export interface RouteAnswers {
  REGISTER: SignedUp;
  CREATE_USER: UserAnswer;
  STATUS: StatusRecorded;
  HEALTH: HealthStatus;
  DEVICES: DeviceList;
  ADD_DEVICE: DeviceAnswer;
  DELETE_DEVICE: OkBody;
  DEVICE_LOSSES: LossRecorded;
  TENANT_LOSSES: TenantLosses;
  ACKNOWLEDGE_LOSSES: LossesAcknowledged;
  COMPANIES: CompanyList;
  COMPANY: CompanyAnswer;
  UPDATE_COMPANY: CompanyAnswer;
  DELETE_COMPANY: OkBody;
  PAYMENT_REFERENCE: SaleAnswer;
  USERS: UserList;
  ME: UserAnswer;
  UPDATE_USER: UserAnswer;
  DELETE_USER: OkBody;
  CLUSTER: ClusterView;
  TENANTS: TenantsView;
  RECONCILIATION: Reconciliation;
  CLEANUP_CANDIDATES: CleanupCandidates;
  TOPOLOGY: Topology;
  PREFLIGHT: Preflight;
  FLAGS: FlagsChanged;
  CRONS: CronsView;
  RUN_CRON: CronRunStarted;
  CRON_RUN: CronRun;
  INVALIDATE_CLIENTS: InvalidationResult;
  AUDIT: AuditPage;
}

/** What the route of row `K` answers. */
export type Answer<K extends keyof RouteAnswers> = RouteAnswers[K];

/** The body each route the SDK wraps takes, where it is typed, by its row. */
export interface RouteBodies {
  DEVICE_LOSSES: LossReport;
  ACKNOWLEDGE_LOSSES: AcknowledgeLosses;
  UPDATE_COMPANY: CompanyChanges;
  PAYMENT_REFERENCE: PaymentReference;
  UPDATE_USER: UserChanges;
  FLAGS: FlagChanges;
}

/** The body the route of row `K` takes. */
export type RequestBody<K extends keyof RouteBodies> = RouteBodies[K];

/** The server's codes, passed through as it sent them. */
export type ServerErrorCode =
  | "all_dbs_active"
  | "bad_request"
  | "cannot_delete_self"
  | "company_exists"
  | "company_not_empty"
  | "conflict"
  | "core_missing"
  | "current_password_required"
  | "device_proof_required"
  | "drop_requires_rolling_db"
  | "file_exists"
  | "forbidden"
  | "illegal_database_name"
  | "internal"
  | "invalid_body"
  | "invalid_credential"
  | "invalid_credentials"
  | "invalid_refresh_token"
  | "invalid_token"
  | "malformed_json"
  | "method_not_allowed"
  | "missing_token"
  | "no_catalogue"
  | "not_found"
  | "payload_too_large"
  | "rate_limited"
  | "refresh_token_expired"
  | "refresh_token_replayed"
  | "refresh_token_reused"
  | "refresh_token_revoked"
  | "sdk_too_old"
  | "schema_behind"
  | "no_headroom"
  | "conflicts_disabled"
  | "backups_disabled"
  | "reconciliation_not_green"
  | "session_ended"
  | "token_expired"
  | "unknown_company"
  | "unknown_cron"
  | "unknown_device"
  | "unknown_run"
  | "unknown_sale"
  | "unknown_tenant"
  | "unknown_user"
  | "unsupported_media_type"
  | "username_taken"
  | "docdb_engine_required"
  | "docdb_engine_unavailable"
  | "rewarm_needs_invalidation"
  | "store_unavailable"
  | "account_throttled"
  | "too_many_feeds"
  | "headers_too_large"
  | "core_edited";

/** The SDK's own codes, when the server gave none. */
export type SdkErrorCode =
  | "network"
  | "timeout"
  | "http_error"
  | "bad_response"
  | "unknown_code"
  | "not_signed_in"
  | "session_expired"
  | "refresh_rejected"
  | "storage_unavailable"
  | "invalid_argument"
  | "permission_denied"
  | "realtime_refused"
  | "closed"
  | "connection_failed"
  | "not_initialized"
  | "signed_out"
  | "disposed";

/** Every action the SDK knows: `hasPermission` and `requirePermission` take these and the app's own. */
export type Permission =
  | "rollingDb:read"
  | "rollingDb:flags"
  | "crons:read"
  | "crons:run"
  | "clients:invalidate"
  | "rollingDb:losses"
  | "catalog:write"
  | "rollingDb:rewarm"
  | "rollingDb:force"
  | "rollingDb:release"
  | "companies:delete"
  | "users:delete";
