// The Operations console: the rolling-database rollout, driven through
// RollingDbAdmin. Reads need sys_admin (the crons list and a run's progress too); flags, starting
// crons and invalidation accept key_manager too.
import { $, cells, el, emptyRow, explain, keyed, noteRow, setText, text, time } from "./dom.js";
import { createPoller } from "./poller.js";

/** The cards the console fills, each refreshed only while some of it is on screen. */
const CARDS = ["fleet-card", "crons-card", "tenant-card", "audit-card", "cluster-card", "clock-card"];

function inView(node) {
  const r = node.getBoundingClientRect();
  return r.width > 0 && r.bottom > 0 && r.top < innerHeight;
}

/**
 * A control whose action is in flight, or that may not act now, is marked `aria-disabled` rather
 * than `disabled`: a disabled control loses the keyboard focus, and the operator's place with it.
 * The console body's click guard (below) keeps it from acting.
 */
function busy(node, on) {
  if ((node.getAttribute("aria-disabled") === "true") !== on) node.setAttribute("aria-disabled", String(on));
}

export function createConsole(auth, admin) {
  let tenant = "acme";
  let running = false; // a run this page started and is watching
  let hasClock = false;
  let refreshFailed = false;
  let said = ""; // what the last round answered: the same again means nothing changed
  let roles = null; // the roles `denied` was learnt with
  const denied = new Set(); // what this operator's role may not read: not asked again
  const stale = new Set(); // cards left out of a round because they were off screen
  const pending = new Set(); // ids of the flag switches whose change is in flight

  const poller = createPoller(round);
  /** After the operator's own action: at once, and back to the quickest pace. */
  const refresh = () => poller.now();

  function fail(message) {
    $("console-error").textContent = message ?? "";
  }

  const canOperate = () => auth.getCurrentRoles().some((r) => r === "sys_admin" || r === "key_manager");

  const isSysAdmin = () => auth.getCurrentRoles().includes("sys_admin");

  function markPending(ids, on) {
    for (const id of ids) {
      if (on) pending.add(id);
      else pending.delete(id);
      const node = document.getElementById(id);
      if (node) busy(node, on);
    }
  }

  async function setFlag(id, change, force = false) {
    fail("");
    const ids = Object.keys(change).map((flag) => `flag-${id}-${flag}`);
    markPending(ids, true);
    const r = await admin.setFlags(id, change, { force });
    markPending(ids, false);
    $("preflight").hidden = true;
    if (!r.success) {
      fail(`Flags of ${id} unchanged: ${explain(r)}`);
      // Refused: show again what is missing, now.
      const flag = Object.keys(change).find((k) => change[k]);
      if (r.status === 409 && flag) await showPreflight(id, flag);
    }
    refresh();
  }

  function button(label, kind, id, onClick) {
    const b = el("button", label, kind);
    b.type = "button";
    b.id = id;
    b.addEventListener("click", onClick);
    return b;
  }

  /** The rollout's prerequisites for switching `flag` on, as a checklist; switching happens here. */
  async function showPreflight(id, flag) {
    const panel = $("preflight");
    const r = await admin.preflight(id);
    if (!r.success) {
      fail(`The prerequisites of ${flag} for ${id} could not be read: ${explain(r)}`);
      return;
    }
    const { ready, checks } = r.data[flag];
    const items = checks.map((c) => {
      const li = el("li", "", c.ok ? "ok" : "missing");
      li.append(el("strong", `${c.ok ? "✓" : "✗"} ${c.check.replaceAll("_", " ")}`), el("span", ` ${c.detail}`), el("small", `Runbook: ${c.runbookStep}`));
      return li;
    });
    const list = el("ul", "", "checklist");
    list.append(...items);
    const actions = [button("Cancel", "secondary", "preflight-cancel", () => { panel.hidden = true; refresh(); })];
    if (ready) {
      actions.unshift(button(`Switch ${flag} on`, "", "preflight-confirm", () => setFlag(id, { [flag]: true })));
    } else if (isSysAdmin()) {
      actions.unshift(button(`Force ${flag} on anyway (audited with the checks it overrides)`, "danger", "preflight-force", () => setFlag(id, { [flag]: true }, true)));
    }
    const heading = ready ? `Every prerequisite of ${flag} for ${id} is met.` : `${flag} for ${id}: the runbook's prerequisites are not met, so the server refuses it.`;
    const note = !ready && !isSysAdmin() ? [el("p", "Only sys_admin may force a flag past its prerequisites.", "hint")] : [];
    panel.replaceChildren(el("p", heading), list, ...note, el("div", "", "actions"));
    panel.lastChild.append(...actions);
    panel.className = ready ? "card preflight ready" : "card preflight blocked";
    panel.hidden = false;
  }

  function toggle(id, flag) {
    const box = el("input");
    box.type = "checkbox";
    box.id = `flag-${id}-${flag}`;
    box.setAttribute("aria-label", `${flag} for ${id}`);
    box.addEventListener("change", () => {
      // Off is the rollback direction: no prerequisite. On goes through the checklist first.
      if (!box.checked) return setFlag(id, { [flag]: false });
      box.checked = false;
      showPreflight(id, flag);
    });
    return box;
  }

  /** A switch brought up to the server's state, unless its own change is still in flight. */
  function setToggle(box, on, disabled) {
    if (!pending.has(box.id)) box.checked = on;
    if (box.disabled !== disabled) box.disabled = disabled;
    busy(box, pending.has(box.id));
  }

  /** A fleet row: the tenant, its two flag switches, then three cells of text. */
  function flagRow(item) {
    if (item.note !== undefined) return noteRow(6);
    const tr = emptyRow(6);
    tr.cells[0].append(el("span"));
    tr.cells[1].append(toggle(item.id, "rollingDb"));
    tr.cells[2].append(toggle(item.id, "rollingDbDrop"));
    return tr;
  }

  function updateFlagRow(tr, item) {
    if (item.note !== undefined) return text(tr.cells[0], item.note);
    const name = tr.cells[0].firstChild;
    text(name, item.name);
    let badge = name.querySelector(".attention-badge");
    if (item.attention && !badge) name.append((badge = el("strong", " ⚠ roll back now", "attention-badge")));
    if (!item.attention && badge) badge.remove();
    if (badge) badge.title = [...item.attention.alarms.map((a) => a.detail), item.attention.instruction].join("\n");
    setToggle(tr.cells[1].firstChild, item.rollingDb, false);
    setToggle(tr.cells[2].firstChild, item.rollingDbDrop, !item.rollingDb);
    cells(tr, item.facts, 3);
    tr.classList.toggle("attention", Boolean(item.attention));
  }

  function renderFlags(items) {
    keyed($("fleet").tBodies[0], items, (i) => i.key ?? i.id, flagRow, updateFlagRow);
  }

  function renderFleet(view) {
    renderFlags(view.tenants.map((t) => ({
      id: t.companyId,
      name: `${t.name} (${t.companyId})`,
      rollingDb: t.rollingDb,
      rollingDbDrop: t.rollingDbDrop,
      attention: t.attention,
      facts: [t.coreExists ? "exists" : "—", t.dayDatabases, t.devices.length
        ? t.devices.map((d) => `${d.sdkVersion ?? "?"}${d.beforeCutover ? " ⚠ too old" : ""}`).join(", ")
        : "no devices yet"],
    })));
    const alarms = view.tenants.filter((t) => t.attention);
    const banner = $("attention");
    banner.hidden = !alarms.length;
    const lines = alarms.flatMap((t) => [
      [`⚠ ${t.name} (${t.companyId}) needs attention: ${t.attention.instruction}`],
      ...t.attention.alarms.map((a) => [`${a.kind}: ${a.detail}`, "hint"]),
    ]);
    // An alert region is read out whenever it is rewritten: only when what it says changed.
    const words = JSON.stringify(lines);
    if (banner.dataset.said !== words) {
      banner.dataset.said = words;
      banner.replaceChildren(...lines.map(([line, cls]) => el("p", line, cls)));
    }
    const select = $("tenant");
    if (!select.options.length) {
      for (const t of view.tenants) select.append(new Option(`${t.name} (${t.companyId})`, t.companyId));
      select.value = tenant;
    }
  }

  /** key_manager's fleet: the one tenant typed in, its flags read from the preflight it may read. */
  function renderTenantFlags(pre) {
    if (!pre.success) return renderFlags([{ key: "note", note: `${tenant}: ${explain(pre)}` }]);
    const { rollingDb, rollingDbDrop } = pre.data;
    renderFlags([{ id: tenant, name: tenant, rollingDb: rollingDb.on, rollingDbDrop: rollingDbDrop.on, facts: ["sys_admin only", "sys_admin only", "sys_admin only"] }]);
  }

  function cronRow(c) {
    const tr = emptyRow(5);
    tr.cells[0].append(el("span", c.name, "cron-name"));
    tr.cells[4].append(button("Run now", "secondary", `run-${c.name}`, () => runCron(c.name)));
    return tr;
  }

  function renderCrons(view) {
    keyed($("crons").tBodies[0], view.crons, (c) => c.name, cronRow, (tr, c) => {
      tr.cells[0].firstChild.title = c.description ?? "";
      cells(tr, c.schedule === null ? ["sys_admin reads the schedule", "—", "—"]
        : [`${c.schedule} UTC${c.scheduled ? "" : " (off)"}`, c.lastResult ? `${c.lastResult}, ${time(c.lastRunAt)}` : "never", time(c.nextRunAt)], 1);
      const b = tr.cells[4].firstChild;
      text(b, c.running ? "running…" : "Run now");
      busy(b, running || c.running === true); // null: a key_manager is not told the state
    });
  }

  async function runCron(name) {
    if (running) return;
    fail("");
    running = true;
    for (const b of $("crons").querySelectorAll("button")) busy(b, true);
    const started = await admin.runCron(name);
    if (!started.success) {
      running = false;
      fail(`${name} did not start: ${explain(started)}`);
      return refresh();
    }
    $("run").hidden = false;
    const id = started.data.runId;
    const log = $("run-log");
    if (log.dataset.run !== id) {
      log.dataset.run = id;
      log.replaceChildren();
    }
    let run;
    do {
      const r = await admin.cronRun(id);
      if (r.code === "forbidden") {
        setText("run-status", `${name}: started as ${id}; following its progress needs sys_admin (crons:read)`);
        break;
      }
      if (!r.success) { fail(`Progress unavailable: ${explain(r)}`); break; }
      run = r.data;
      const { done, total } = run.progress;
      const pct = run.status === "running" ? (total ? Math.round((100 * done) / total) : 0) : 100;
      $("run-bar").style.width = `${pct}%`;
      $("run-bar").parentElement.setAttribute("aria-valuenow", String(pct));
      $("run-bar").className = run.status;
      setText("run-status", `${name}: ${run.status}, ${done} of ${total} step(s)`);
      // A run's log only grows: new lines are appended, the ones read stay where they are.
      for (let i = log.children.length; i < run.log.length; i++) log.append(el("li", run.log[i]));
      if (run.status === "running") await new Promise((r) => setTimeout(r, 250));
    } while (run.status === "running");
    running = false;
    refresh();
  }

  function seqBox() {
    const box = el("div", null, "seq-row");
    const track = el("div", null, "seq-track");
    track.append(el("div", null, "seq-docs"));
    box.append(el("span", "", "seq-label"), track);
    return box;
  }

  function updateSeq(box, [label, db]) {
    text(box.firstChild, db.exists ? `${label}: ${db.docCount} docs, update_seq ${db.updateSeq}` : `${label}: does not exist`);
    box.lastChild.hidden = !db.exists;
    if (db.exists) box.lastChild.firstChild.style.width = `${(100 * db.docCount) / Math.max(db.updateSeq, db.docCount, 1)}%`;
  }

  function renderTenant(topo, recon, candidates) {
    setText("t-routing", topo.database === "core" ? "CORE (rolling database)" : "the legacy database");
    setText("t-invalidation", topo.invalidation ? `${time(topo.invalidation.invalidatedAt)} (${topo.invalidation.reason}, to ${topo.invalidation.routing})` : "never");
    setText("t-diff", recon ? `${recon.diff}${recon.diff === 0 ? " ✓ reconciled" : " ✗ archive incomplete"}` : "needs sys_admin");
    setText("t-conflicts", topo.openConflicts);
    keyed($("t-seq"), [["CORE", topo.core], ["legacy", topo.legacy]], ([label]) => label, seqBox, updateSeq);
    const days = topo.days.length ? topo.days : [{ name: "none" }];
    keyed($("t-days"), days, (d) => d.name, () => el("span"), (box, d) => {
      if (d.name === "none") {
        box.className = "hint";
        return text(box, "none: the rotate has not run for this tenant");
      }
      text(box, `${d.date.slice(4, 6)}-${d.date.slice(6)}`);
      box.className = `day ${d.status}`;
      box.title = `${d.name}: ${d.status}${d.held ? ", held until released" : ""}`;
    });
    const mark = (b) => (b ? "✓" : "✗");
    let rows = (candidates?.candidates ?? []).map((c) => ({
      key: c.name,
      cells: [c.name, mark(c.drained), mark(c.archived), mark(c.reconciled), mark(c.backedUp), c.ageDays < 0 ? "tomorrow" : `${c.ageDays} d`,
        c.held ? "held (restored)" : c.eligible ? "eligible" : "kept"],
    }));
    // A restored day is held until sys_admin releases it (audited as day.release).
    keyed($("t-held"), (candidates?.candidates ?? []).filter((c) => c.held), (c) => c.name, (c) => {
      const b = el("button", `Release ${c.name}`);
      b.type = "button";
      b.addEventListener("click", () => release(c.name));
      return b;
    }, (b) => {
      busy(b, !isSysAdmin());
      b.title = isSysAdmin() ? "back to the drop's usual locks" : "sys_admin only";
    });
    if (!candidates) rows = [{ key: "note", note: "The cleanup candidates need sys_admin." }];
    else if (!rows.length) rows = [{ key: "note", note: "No day database yet: the rotate creates them, and they become candidates once past." }];
    renderRows($("t-candidates"), rows, 7);
  }

  /** Text rows keyed by `key`; a row with a `note` spans the table. */
  function renderRows(table, rows, columns) {
    keyed(table.tBodies[0], rows, (r) => r.key, (r) => (r.note === undefined ? emptyRow(columns) : noteRow(columns)),
      (tr, r) => (r.note === undefined ? cells(tr, r.cells) : text(tr.cells[0], r.note)));
  }

  function renderAudit(page) {
    const rows = page.entries.map((e) => {
      const d = e.detail ?? {};
      const what = d.cron ?? (d.after ? `rollingDb ${d.after.rollingDb}, rollingDbDrop ${d.after.rollingDbDrop}` : d.username ?? d.reason ?? d.routing ?? "");
      return { key: e.id, cells: [time(e.at), e.actor, e.action, what, e.ip ?? "—"] };
    });
    renderRows($("audit"), rows.length ? rows : [{ key: "note", note: "nothing recorded for this tenant yet" }], 5);
  }

  function renderCluster(view) {
    setText("cluster-summary", `${view.openDbs} of ${view.maxDbsOpen} handles open (ROLLING_DB_MAX_OPEN), ${view.inUseDbs} in use; ${view.existingDbs} databases exist`);
    renderRows($("cluster"), view.databases.map((d) => ({
      key: d.name,
      cells: [d.name, d.kind, d.docCount, d.updateSeq, d.status, d.inUse ? "in use" : d.open ? "open" : "closed"],
    })), 6);
  }

  async function readClock() {
    const r = await fetch("/__mock/clock").then((x) => x.json()).catch(() => null);
    if (r) setText("clock-now", `Server time: ${new Date(r.now).toUTCString()}`);
  }

  /**
   * One refresh: what is on screen and this role may read, in one round of requests. Answers
   * whether anything changed since the last round (the poller slows down while nothing does).
   */
  async function round() {
    const open = auth.checkIfLoggedIn() && canOperate();
    $("console-locked").hidden = open;
    $("console-body").hidden = !open;
    if (!open) return false;
    const who = auth.getCurrentRoles().join(" ");
    // Re-warm is sys_admin's alone; key_manager sees it, marked as not for them.
    busy($("rewarm"), !isSysAdmin());
    $("rewarm").title = isSysAdmin() ? "" : "sys_admin only";
    if (who !== roles) {
      roles = who;
      denied.clear();
    }
    $("audit-card").hidden = denied.has("audit");
    $("cluster-card").hidden = denied.has("cluster");
    const shown = new Map(CARDS.map((id) => [id, inView($(id))]));
    for (const [id, on] of shown) (on ? stale.delete(id) : stale.add(id));
    const ask = (section, card, call) => (denied.has(section) || !shown.get(card) ? null : call());
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
    if (hasClock && shown.get("clock-card")) readClock();
    sections.forEach((s, i) => { if (answers[i]?.code === "forbidden") denied.add(s); });
    let [fleet, crons, cluster, topo, recon, cand, audit, keysFlags] = answers;
    // Learnt this round that the fleet is sys_admin's: the flags key_manager may see, now.
    if (fleet?.code === "forbidden") keysFlags = await admin.preflight(tenant);
    setText("console-updated", `Updated ${new Date().toISOString().slice(11, 19)} UTC`);
    $("keys-tenant").hidden = !denied.has("fleet");
    $("audit-card").hidden = denied.has("audit");
    $("cluster-card").hidden = denied.has("cluster");
    if (fleet) $("tenant").hidden = !fleet.success;
    if (audit?.success) renderAudit(audit.data);
    if (fleet?.success) renderFleet(fleet.data);
    if (keysFlags) renderTenantFlags(keysFlags);
    // An error stays until the operator's next action: the periodic refresh never hides it.
    const broken = [fleet, crons].find((a) => a && !a.success && a.code !== "forbidden");
    if (broken) {
      fail(`The console could not be refreshed: ${explain(broken)}`);
      refreshFailed = true;
    } else if (refreshFailed) {
      // The refresh's own complaint goes when the server answers again; an action's stays.
      fail("");
      refreshFailed = false;
    }
    // key_manager (crons:run without crons:read) is answered the names with their state null.
    if (crons?.success) renderCrons(crons.data);
    if (cluster?.success) renderCluster(cluster.data);
    if (topo?.success) renderTenant(topo.data, recon?.success ? recon.data : null, cand?.success ? cand.data : null);
    const now = JSON.stringify([tenant, answers, keysFlags]);
    const changed = now !== said;
    said = now;
    return changed;
  }

  // A card scrolled into view that a round left out is refreshed at once.
  const watch = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting && stale.has(e.target.id))) refresh();
  });
  for (const id of CARDS) watch.observe($(id));
  // What may not act now does not: one guard for every control marked aria-disabled.
  $("console-body").addEventListener("click", (e) => {
    if (e.target.closest?.('[aria-disabled="true"]')) {
      e.preventDefault();
      e.stopImmediatePropagation();
    }
  }, true);

  $("tenant").addEventListener("change", (e) => { tenant = e.target.value; refresh(); });
  $("tenant-id").addEventListener("change", (e) => { tenant = e.target.value.trim() || "acme"; refresh(); });
  $("invalidate").addEventListener("click", async () => {
    fail("");
    const r = await admin.invalidateClients(tenant);
    if (!r.success) fail(`Not invalidated: ${explain(r)}`);
    refresh();
  });

  /**
   * A guided action: its steps listed under the tenant card with a confirm button (`id`); the
   * click runs `act(confirm, items)`, which marks the steps done and says how it ended.
   */
  function guided(id, label, steps, act) {
    const list = $("rollback-steps");
    list.hidden = false;
    const confirm = el("button", label, "danger");
    confirm.type = "button";
    confirm.id = id;
    list.replaceChildren(...steps.map((s) => el("li", s)), el("li", "", "confirm"));
    list.lastChild.append(confirm);
    confirm.addEventListener("click", async () => {
      fail("");
      confirm.disabled = true;
      await act(confirm, list.querySelectorAll("li"));
    });
  }

  $("rollback").addEventListener("click", () => {
    guided("rollback-confirm", `Confirm: roll ${tenant} back to the legacy database`, [
      "Turn rollingDb off (rollingDbDrop goes off with it): dropping stops.",
      "Invalidate the tenant's clients: each device destroys its local database at its next handshake.",
      "Devices re-bootstrap from the legacy database; invalidate_daily returns. CORE edits made meanwhile are not copied back.",
    ], async (confirm, items) => {
      const flags = await admin.setFlags(tenant, { rollingDb: false });
      if (!flags.success) return fail(`Rollback stopped at step 1: ${explain(flags)}`);
      items[0].classList.add("done");
      const inv = await admin.invalidateClients(tenant);
      if (!inv.success) return fail(`Rollback stopped at step 2: ${explain(inv)}`);
      items[1].classList.add("done");
      const topo = await admin.topology(tenant);
      if (topo.success && topo.data.database === "legacy") items[2].classList.add("done");
      confirm.textContent = `${tenant} rolled back: devices route to the legacy database`;
      refresh();
    });
  });

  // Re-warm: not wrapped by RollingDbAdmin (the package's size budget), so the page calls the
  // route itself with the session's token, as any app may.
  async function rewarm(invalidate, confirm) {
    const query = confirm === undefined ? "" : `?confirm=${confirm}`;
    const res = await fetch(`/admin/rolling-db/tenants/${encodeURIComponent(tenant)}/rewarm${query}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await auth.getToken()}`, "Content-Type": "application/json" },
      body: JSON.stringify({ invalidate }),
    });
    const body = await res.json().catch(() => ({}));
    return res.ok ? { success: true, data: body } : { success: false, status: res.status, code: body.error, error: body.message, checks: body.checks };
  }
  async function release(db) {
    const res = await fetch(`/admin/rolling-db/tenants/${encodeURIComponent(tenant)}/days/${encodeURIComponent(db)}/release`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await auth.getToken()}` },
    });
    const body = await res.json().catch(() => ({}));
    fail(res.ok ? "" : `Not released: ${explain({ success: false, status: res.status, code: body.error, error: body.message })}`);
    refresh();
  }

  $("rewarm").addEventListener("click", () => {
    guided("rewarm-confirm", `Confirm: drop ${tenant}'s CORE and invalidate its clients`, [
      "Drop CORE (sys_admin only, audited): the next rotate warms it again from the legacy catalogue, with fresh revisions.",
      "Invalidate the tenant's clients: devices use the legacy catalogue until that rotate cuts them over again.",
    ], async (confirm, items) => {
      const done = (r, button, steps) => {
        for (const step of steps) step.classList.add("done");
        button.textContent = `${r.data.dropped} dropped (snapshot ${r.data.snapshot.snapshotId}, ${r.data.snapshot.docCount} docs): the next rotate recreates it`;
        refresh();
      };
      const r = await rewarm(true);
      if (r.success) return done(r, confirm, items);
      if (r.code !== "core_edited") return fail(`Not re-warmed: ${explain(r)}`);
      // CORE holds documents written since its warm: the operator sees them and confirms.
      guided("rewarm-edited", `Confirm: re-warm and leave ${r.checks.count} edited document(s) to the snapshot`, [r.error], async (again, steps) => {
        const forced = await rewarm(true, r.checks.count);
        if (!forced.success) return fail(`Not re-warmed: ${explain(forced)}`);
        done(forced, again, steps);
      });
    });
  });

  for (const b of document.querySelectorAll("#clock-card button")) {
    b.addEventListener("click", async () => {
      await fetch("/__mock/clock", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ advanceDays: Number(b.dataset.days) }) });
      await auth.getToken();
      refresh();
    });
  }
  fetch("/__mock/clock").then((r) => { hasClock = r.ok; $("clock-card").hidden = !r.ok; if (r.ok) readClock(); }).catch(() => {});

  return { refresh };
}
