// The Operations console: the rolling-database rollout, driven through RollingDbAdmin. Reads need
// sys_admin (the crons list and a run's progress too); flags, starting crons and invalidation
// accept key_manager too: the package's `hasPermission` answers which (permissions.js).
// This file holds the refresh round; each card is a module of its own.
import { ErrorCodes } from "/pkg/codes.js";
import { $, explain, setText } from "../dom.js";
import { createPoller } from "../poller.js";
import { updateActions, wireActions } from "./actions.js";
import { createClock } from "./clock.js";
import { inView } from "./controls.js";
import { createCrons } from "./crons.js";
import { createFleet } from "./fleet.js";
import { NOTHING, permissions } from "./permissions.js";
import { renderAudit, renderCluster } from "./tables.js";
import { createTenant } from "./tenant.js";

/** The cards the console fills, each refreshed only while some of it is on screen. */
const CARDS = ["fleet-card", "crons-card", "tenant-card", "audit-card", "cluster-card", "clock-card"];

export function createConsole(auth, admin) {
  const poller = createPoller(round);
  /** What the cards share: the session, the tenant on show, what the operator may do. */
  const ctx = {
    auth,
    admin,
    codes: ErrorCodes,
    tenant: "acme",
    may: NOTHING,
    /** Says why the operator's last action or the refresh failed; "" clears it. */
    fail: (message) => { $("console-error").textContent = message ?? ""; },
    /** After the operator's own action: at once, and back to the quickest pace. */
    refresh: () => poller.now(),
  };
  const fleet = createFleet(ctx);
  const crons = createCrons(ctx);
  const tenantCard = createTenant(ctx);
  const clock = createClock(ctx);
  let refreshFailed = false;
  let said = ""; // what the last round answered: the same again means nothing changed
  let roles = null; // the roles `denied` was learnt with
  const denied = new Set(); // what this operator's role may not read: not asked again
  const stale = new Set(); // cards left out of a round because they were off screen

  /**
   * One refresh: what is on screen and this role may read, in one round of requests. Answers
   * whether anything changed since the last round (the poller slows down while nothing does).
   */
  async function round() {
    ctx.may = auth.checkIfLoggedIn() ? await permissions(auth) : NOTHING;
    const open = ctx.may.operate;
    $("console-locked").hidden = open;
    $("console-body").hidden = !open;
    if (!open) return false;
    updateActions(ctx);
    const who = auth.getCurrentRoles().join(" ");
    if (who !== roles) {
      roles = who;
      denied.clear();
    }
    $("audit-card").hidden = denied.has("audit");
    $("cluster-card").hidden = denied.has("cluster");
    const shown = new Map(CARDS.map((id) => [id, inView($(id))]));
    for (const [id, on] of shown) (on ? stale.delete(id) : stale.add(id));
    const ask = (section, card, call) => (denied.has(section) || !shown.get(card) ? null : call());
    const tenant = ctx.tenant;
    const sections = ["fleet", "crons", "cluster", "topology", "reconciliation", "candidates", "audit", "keysFlags"];
    const answers = await Promise.all([
      ask("fleet", "fleet-card", () => admin.tenants()),
      ask("crons", "crons-card", () => admin.crons()),
      ask("cluster", "cluster-card", () => admin.cluster()),
      ask("topology", "tenant-card", () => admin.topology(tenant)),
      ask("reconciliation", "tenant-card", () => admin.reconciliation(tenant)),
      ask("candidates", "tenant-card", () => admin.cleanupCandidates(tenant)),
      ask("audit", "audit-card", () => admin.auditLog({ companyId: tenant, limit: 8 })),
      // key_manager reads its tenant's flags from the preflight it may read.
      denied.has("fleet") && shown.get("fleet-card") ? admin.preflight(tenant) : null,
    ]);
    if (shown.get("clock-card")) clock.refresh();
    const refused = (a) => a?.code === ErrorCodes.FORBIDDEN;
    sections.forEach((s, i) => { if (refused(answers[i])) denied.add(s); });
    let [fleetView, cronsView, cluster, topo, recon, cand, audit, keysFlags] = answers;
    // Learnt this round that the fleet is sys_admin's: the flags key_manager may see, now.
    if (refused(fleetView)) keysFlags = await admin.preflight(tenant);
    setText("console-updated", `Updated ${new Date().toISOString().slice(11, 19)} UTC`);
    $("keys-tenant").hidden = !denied.has("fleet");
    $("audit-card").hidden = denied.has("audit");
    $("cluster-card").hidden = denied.has("cluster");
    if (fleetView) $("tenant").hidden = !fleetView.success;
    if (audit?.success) renderAudit(audit.data);
    if (fleetView?.success) fleet.render(fleetView.data);
    if (keysFlags) fleet.renderTenantFlags(keysFlags);
    // An error stays until the operator's next action: the periodic refresh never hides it.
    const broken = [fleetView, cronsView].find((a) => a && !a.success && !refused(a));
    if (broken) {
      ctx.fail(`The console could not be refreshed: ${explain(broken)}`);
      refreshFailed = true;
    } else if (refreshFailed) {
      // The refresh's own complaint goes when the server answers again; an action's stays.
      ctx.fail("");
      refreshFailed = false;
    }
    if (cronsView?.success) crons.render(cronsView.data);
    if (cluster?.success) renderCluster(cluster.data);
    if (topo?.success) tenantCard.render(topo.data, recon?.success ? recon.data : null, cand?.success ? cand.data : null);
    const now = JSON.stringify([tenant, answers, keysFlags, ctx.may]);
    const changed = now !== said;
    said = now;
    return changed;
  }

  // A card scrolled into view that a round left out is refreshed at once.
  const watch = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting && stale.has(e.target.id))) ctx.refresh();
  });
  for (const id of CARDS) watch.observe($(id));
  // What may not act now does not: one guard for every control marked aria-disabled.
  $("console-body").addEventListener("click", (e) => {
    if (e.target.closest?.('[aria-disabled="true"]')) {
      e.preventDefault();
      e.stopImmediatePropagation();
    }
  }, true);

  $("tenant").addEventListener("change", (e) => { ctx.tenant = e.target.value; ctx.refresh(); });
  $("tenant-id").addEventListener("change", (e) => { ctx.tenant = e.target.value.trim() || "acme"; ctx.refresh(); });
  wireActions(ctx);

  return { refresh: ctx.refresh };
}
