// The tenant's rollout actions: invalidating its clients, and the two guided ones, the rollback
// and the re-warm, each listing its steps and acting on a confirm.
import { $, el, explain } from "../dom.js";
import { busy } from "./controls.js";
import { adminGet, adminPost } from "./routes.js";

/**
 * A guided action: its steps listed under the tenant card with a confirm button (`id`); the
 * click runs `act(confirm, items)`, which marks the steps done and says how it ended.
 */
function guided(ctx, id, label, steps, act) {
  const list = $("rollback-steps");
  list.hidden = false;
  const confirm = el("button", label, "danger");
  confirm.type = "button";
  confirm.id = id;
  list.replaceChildren(...steps.map((s) => el("li", s)), el("li", "", "confirm"));
  list.lastChild.append(confirm);
  confirm.addEventListener("click", async () => {
    ctx.fail("");
    confirm.disabled = true;
    await act(confirm, list.querySelectorAll("li"));
  });
}

/** What CORE holds that the legacy database lacks (`{count, ids}`), in a sentence. */
function coreWrites(w) {
  if (!w.count) return "CORE holds no document written since its warm that the legacy database lacks: nothing is left behind.";
  const ids = `${w.ids.join(", ")}${w.count > w.ids.length ? ", …" : ""}`;
  return `CORE holds ${w.count} document(s) written since its warm that the legacy database lacks (${ids}): devices no longer see them; CORE keeps them, but the next rotate's catch-up overwrites those legacy also holds.`;
}

async function rollback(ctx) {
  const tenant = ctx.tenant;
  // What the rollback leaves behind, read first so the confirmation says it; a rollback is never
  // held up by a read that failed.
  const cost = await adminGet(ctx.auth, `tenants/${encodeURIComponent(tenant)}/core-writes`);
  const left = cost.success ? cost.data.coreWrittenSinceWarm : null;
  const label = left?.count
    ? `Confirm: roll ${tenant} back to the legacy database, leaving ${left.count} CORE document(s) behind`
    : `Confirm: roll ${tenant} back to the legacy database`;
  guided(ctx, "rollback-confirm", label, [
    "Turn rollingDb off (rollingDbDrop goes off with it): dropping stops.",
    "Invalidate the tenant's clients: each device destroys its local database at its next handshake.",
    "Devices re-bootstrap from the legacy database; invalidate_daily returns. CORE edits made meanwhile are not copied back.",
    left ? coreWrites(left) : `What CORE holds that the legacy database lacks could not be read: ${explain(cost)}`,
  ], async (confirm, items) => {
    const flags = await ctx.admin.setFlags(tenant, { rollingDb: false });
    if (!flags.success) return ctx.fail(`Rollback stopped at step 1: ${explain(flags)}`);
    items[0].classList.add("done");
    const inv = await ctx.admin.invalidateClients(tenant);
    if (!inv.success) return ctx.fail(`Rollback stopped at step 2: ${explain(inv)}`);
    items[1].classList.add("done");
    const topo = await ctx.admin.topology(tenant);
    if (topo.success && topo.data.database === "legacy") items[2].classList.add("done");
    // The flag change's own count: what was left behind at the moment it happened.
    const after = flags.data.coreWrittenSinceWarm;
    if (after) {
      items[3].textContent = coreWrites(after);
      items[3].classList.add("done");
    }
    confirm.textContent = `${tenant} rolled back: devices route to the legacy database${after?.count ? `; ${after.count} CORE document(s) left behind` : ""}`;
    ctx.refresh();
  });
}

async function rewarm(ctx) {
  const tenant = ctx.tenant;
  const call = (confirm) =>
    adminPost(ctx.auth, `tenants/${encodeURIComponent(tenant)}/rewarm${confirm === undefined ? "" : `?confirm=${confirm}`}`, { invalidate: true });
  const done = (r, button, steps) => {
    for (const step of steps) step.classList.add("done");
    button.textContent = `${r.data.dropped} dropped (snapshot ${r.data.snapshot.snapshotId}, ${r.data.snapshot.docCount} docs): the next rotate recreates it`;
    ctx.refresh();
  };
  guided(ctx, "rewarm-confirm", `Confirm: drop ${tenant}'s CORE and invalidate its clients`, [
    "Drop CORE (sys_admin only, audited): the next rotate warms it again from the legacy catalogue, with fresh revisions.",
    "Invalidate the tenant's clients: devices use the legacy catalogue until that rotate cuts them over again.",
  ], async (confirm, items) => {
    const r = await call();
    if (r.success) return done(r, confirm, items);
    if (r.code !== ctx.codes.CORE_EDITED) return ctx.fail(`Not re-warmed: ${explain(r)}`);
    // CORE holds documents written since its warm: the operator sees them and confirms.
    guided(ctx, "rewarm-edited", `Confirm: re-warm and leave ${r.checks.count} edited document(s) to the snapshot`, [r.error], async (again, steps) => {
      const forced = await call(r.checks.count);
      if (!forced.success) return ctx.fail(`Not re-warmed: ${explain(forced)}`);
      done(forced, again, steps);
    });
  });
}

/** Wires the tenant card's action buttons. */
export function wireActions(ctx) {
  $("invalidate").addEventListener("click", async () => {
    ctx.fail("");
    const r = await ctx.admin.invalidateClients(ctx.tenant);
    if (!r.success) ctx.fail(`Not invalidated: ${explain(r)}`);
    ctx.refresh();
  });
  $("rollback").addEventListener("click", () => rollback(ctx));
  $("rewarm").addEventListener("click", () => rewarm(ctx));
}

/** Re-warm is sys_admin's alone; key_manager sees it, marked as not for them. */
export function updateActions(ctx) {
  busy($("rewarm"), !ctx.may.rewarm);
  $("rewarm").title = ctx.may.rewarm ? "" : "sys_admin only";
}
