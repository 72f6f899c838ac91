// The Operations console: the rolling-database rollout of the runbook, driven through
// RollingDbAdmin. Reads need sys_admin; flags, crons and invalidation accept key_manager too.
import { $, el, explain, row, setText, time } from "./dom.js";

/** `[major, minor, patch]` of a version, or null when unreadable. */
function versionParts(version) {
  const parts = String(version ?? "").replace(/^v/, "").split(/[-+]/)[0].split(".").slice(0, 3).map(Number);
  return parts.some(Number.isNaN) ? null : [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0];
}

/** Whether a device's SDK predates the cutover version the server announces. */
function beforeCutover(version, cutover) {
  const [v, c] = [versionParts(version), versionParts(cutover)];
  if (!v || !c) return false;
  for (let i = 0; i < 3; i++) if (v[i] !== c[i]) return v[i] < c[i];
  return false;
}

export function createConsole(auth, admin) {
  let tenant = "acme";
  let running = false;
  let hasClock = false;
  let refreshFailed = false;

  function fail(message) {
    $("console-error").textContent = message ?? "";
  }

  const canOperate = () => auth.getCurrentRoles().some((r) => r === "sys_admin" || r === "key_manager");

  const isSysAdmin = () => auth.getCurrentRoles().includes("sys_admin");

  async function setFlag(id, change, force = false) {
    fail("");
    const r = await admin.setFlags(id, change, { force });
    $("preflight").hidden = true;
    if (!r.success) {
      fail(`Flags of ${id} unchanged: ${explain(r)}`);
      // Refused: show again what is missing, now.
      const flag = Object.keys(change).find((k) => change[k]);
      if (r.status === 409 && flag) await showPreflight(id, flag);
    }
    refresh();
  }

  function button(text, kind, id, onClick) {
    const b = el("button", text, kind);
    b.type = "button";
    b.id = id;
    b.addEventListener("click", onClick);
    return b;
  }

  /** The runbook's prerequisites for switching `flag` on, as a checklist; switching happens here. */
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

  function toggle(id, flag, value, disabled) {
    const box = el("input");
    box.type = "checkbox";
    box.checked = value;
    box.disabled = disabled;
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

  function renderFleet(view) {
    const body = $("fleet").tBodies[0];
    body.replaceChildren();
    for (const t of view.tenants) {
      const sdks = t.devices.length
        ? t.devices.map((d) => `${d.sdkVersion ?? "?"}${beforeCutover(d.sdkVersion, view.cutoverSdkVersion) ? " ⚠ too old" : ""}`).join(", ")
        : "no devices yet";
      const name = el("span", `${t.name} (${t.companyId})`);
      if (t.attention) {
        const badge = el("strong", " ⚠ roll back now", "attention-badge");
        badge.title = [...t.attention.alarms.map((a) => a.detail), t.attention.instruction].join("\n");
        name.append(badge);
      }
      const tr = row(name, toggle(t.companyId, "rollingDb", t.rollingDb, false),
        toggle(t.companyId, "rollingDbDrop", t.rollingDbDrop, !t.rollingDb), t.coreExists ? "exists" : "—", t.dayDatabases, sdks);
      if (t.attention) tr.classList.add("attention");
      body.append(tr);
    }
    const alarms = view.tenants.filter((t) => t.attention);
    const banner = $("attention");
    banner.hidden = !alarms.length;
    banner.replaceChildren(...alarms.flatMap((t) => [
      el("p", `⚠ ${t.name} (${t.companyId}) needs attention: ${t.attention.instruction}`),
      ...t.attention.alarms.map((a) => el("p", `${a.kind}: ${a.detail}`, "hint")),
    ]));
    const select = $("tenant");
    if (!select.options.length) {
      for (const t of view.tenants) select.append(new Option(`${t.name} (${t.companyId})`, t.companyId));
      select.value = tenant;
    }
  }

  /** key_manager's fleet: the one tenant typed in, its flags read from the preflight it may read. */
  async function renderTenantFlags() {
    const body = $("fleet").tBodies[0];
    const pre = await admin.preflight(tenant);
    body.replaceChildren();
    if (!pre.success) {
      body.append(row(tenant, explain(pre), "", "", "", ""));
      return;
    }
    const { rollingDb, rollingDbDrop } = pre.data;
    body.append(row(tenant, toggle(tenant, "rollingDb", rollingDb.on, false), toggle(tenant, "rollingDbDrop", rollingDbDrop.on, !rollingDb.on),
      "sys_admin only", "sys_admin only", "sys_admin only"));
  }

  function renderCrons(view) {
    const body = $("crons").tBodies[0];
    body.replaceChildren();
    for (const c of view.crons) {
      const b = el("button", c.running ? "running…" : "Run now", "secondary");
      b.type = "button";
      b.id = `run-${c.name}`;
      b.disabled = running || c.running;
      b.addEventListener("click", () => runCron(c.name));
      const label = el("span", c.name, "cron-name");
      label.title = c.description ?? "";
      body.append(row(label, `${c.schedule} UTC${c.scheduled ? "" : " (off)"}`, c.lastResult ? `${c.lastResult}, ${time(c.lastRunAt)}` : "never", time(c.nextRunAt), b));
    }
  }

  async function runCron(name) {
    fail("");
    running = true;
    const started = await admin.runCron(name);
    if (!started.success) {
      running = false;
      fail(`${name} did not start: ${explain(started)}`);
      return refresh();
    }
    $("run").hidden = false;
    const id = started.data.runId;
    let run;
    do {
      const r = await admin.cronRun(id);
      if (!r.success) { fail(`Progress unavailable: ${explain(r)}`); break; }
      run = r.data;
      const { done, total } = run.progress;
      const pct = total ? Math.round((100 * done) / total) : 0;
      $("run-bar").style.width = `${run.status === "running" ? pct : 100}%`;
      $("run-bar").parentElement.setAttribute("aria-valuenow", String(run.status === "running" ? pct : 100));
      $("run-bar").className = run.status;
      setText("run-status", `${name}: ${run.status}, ${done} of ${total} step(s)`);
      $("run-log").replaceChildren(...run.log.map((line) => el("li", line)));
      if (run.status === "running") await new Promise((r) => setTimeout(r, 250));
    } while (run.status === "running");
    running = false;
    refresh();
  }

  function seqBar(label, db) {
    const box = el("div", null, "seq-row");
    if (!db.exists) {
      box.append(el("span", `${label}: does not exist`, "seq-label"));
      return box;
    }
    box.append(el("span", `${label}: ${db.docCount} docs, update_seq ${db.updateSeq}`, "seq-label"));
    const track = el("div", null, "seq-track");
    const max = Math.max(db.updateSeq, db.docCount, 1);
    const docs = el("div", null, "seq-docs");
    docs.style.width = `${(100 * db.docCount) / max}%`;
    track.append(docs);
    box.append(track);
    return box;
  }

  function renderTenant(topo, recon, candidates) {
    setText("t-routing", topo.database === "core" ? "CORE (rolling database)" : "the legacy database");
    setText("t-invalidation", topo.invalidation ? `${time(topo.invalidation.invalidatedAt)} (${topo.invalidation.reason}, to ${topo.invalidation.routing})` : "never");
    setText("t-diff", recon ? `${recon.diff}${recon.diff === 0 ? " ✓ reconciled" : " ✗ archive incomplete"}` : "needs sys_admin");
    setText("t-conflicts", topo.openConflicts);
    $("t-seq").replaceChildren(seqBar("CORE", topo.core), seqBar("legacy", topo.legacy));
    const days = $("t-days");
    days.replaceChildren();
    for (const d of topo.days) {
      const box = el("span", `${d.date.slice(4, 6)}-${d.date.slice(6)}`, `day ${d.status}`);
      box.title = `${d.name}: ${d.status}`;
      days.append(box);
    }
    if (!topo.days.length) days.append(el("span", "none: the rotate has not run for this tenant", "hint"));
    const body = $("t-candidates").tBodies[0];
    body.replaceChildren();
    const mark = (b) => (b ? "✓" : "✗");
    for (const c of candidates?.candidates ?? []) {
      body.append(row(c.name, mark(c.drained), mark(c.archived), mark(c.reconciled), c.ageDays < 0 ? "tomorrow" : `${c.ageDays} d`, c.eligible ? "eligible" : "kept"));
    }
    if (!candidates) body.append(row("The cleanup candidates need sys_admin.", "", "", "", "", ""));
    else if (!candidates.candidates.length) body.append(row("No day database yet: the rotate creates them, and they become candidates once past.", "", "", "", "", ""));
  }

  function renderAudit(page) {
    const body = $("audit").tBodies[0];
    body.replaceChildren();
    for (const e of page.entries) {
      const d = e.detail ?? {};
      const what = d.cron ?? (d.after ? `rollingDb ${d.after.rollingDb}, rollingDbDrop ${d.after.rollingDbDrop}` : d.username ?? d.reason ?? d.routing ?? "");
      body.append(row(time(e.at), e.actor, e.action, what, e.ip ?? "—"));
    }
    if (!page.entries.length) body.append(row("nothing recorded for this tenant yet", "", "", "", ""));
  }

  function renderCluster(view) {
    setText("cluster-summary", `${view.openDbs} of ${view.maxDbsOpen} handles open (ROLLING_DB_MAX_OPEN), ${view.inUseDbs} in use; ${view.existingDbs} databases exist`);
    const body = $("cluster").tBodies[0];
    body.replaceChildren();
    for (const d of view.databases) body.append(row(d.name, d.kind, d.docCount, d.updateSeq, d.status, d.inUse ? "in use" : d.open ? "open" : "closed"));
  }

  async function refreshClock() {
    if (!hasClock) return;
    const r = await fetch("/__mock/clock").then((x) => x.json()).catch(() => null);
    if (r) setText("clock-now", `Server time: ${new Date(r.now).toUTCString()}`);
  }

  async function refresh() {
    const open = auth.checkIfLoggedIn() && canOperate();
    $("console-locked").hidden = open;
    $("console-body").hidden = !open;
    if (!open) return;
    // An error stays until the operator's next action: the periodic refresh never hides it.
    const [fleet, crons, cluster, topo, recon, cand, audit] = await Promise.all([
      admin.tenants(), admin.crons(), admin.cluster(), admin.topology(tenant), admin.reconciliation(tenant), admin.cleanupCandidates(tenant),
      admin.auditLog({ companyId: tenant, limit: 8 }),
    ]);
    $("audit-card").hidden = !audit.success;
    if (audit.success) renderAudit(audit.data);
    $("keys-tenant").hidden = fleet.success || fleet.code !== "forbidden";
    // What needs sys_admin is said once (the tenant-id hint), not shown as empty tables.
    $("tenant").hidden = !fleet.success;
    $("cluster-card").hidden = !cluster.success;
    if (fleet.success) renderFleet(fleet.data);
    else if (fleet.code === "forbidden") await renderTenantFlags();
    if (!fleet.success && fleet.code !== "forbidden") {
      fail(`The console could not be refreshed: ${explain(fleet)}`);
      refreshFailed = true;
    } else if (refreshFailed) {
      // The refresh's own complaint goes when the server answers again; an action's stays.
      fail("");
      refreshFailed = false;
    }
    if (crons.success) renderCrons(crons.data);
    if (cluster.success) renderCluster(cluster.data);
    if (topo.success) renderTenant(topo.data, recon.success ? recon.data : null, cand.success ? cand.data : null);
    refreshClock();
  }

  $("tenant").addEventListener("change", (e) => { tenant = e.target.value; refresh(); });
  $("tenant-id").addEventListener("change", (e) => { tenant = e.target.value.trim() || "acme"; refresh(); });
  $("invalidate").addEventListener("click", async () => {
    fail("");
    const r = await admin.invalidateClients(tenant);
    if (!r.success) fail(`Not invalidated: ${explain(r)}`);
    refresh();
  });

  $("rollback").addEventListener("click", () => {
    const steps = $("rollback-steps");
    steps.hidden = false;
    const confirm = el("button", `Confirm: roll ${tenant} back to the legacy database`, "danger");
    confirm.type = "button";
    confirm.id = "rollback-confirm";
    steps.replaceChildren(el("li", "Turn rollingDb off (rollingDbDrop goes off with it): dropping stops."),
      el("li", "Invalidate the tenant's clients: each device destroys its local database at its next handshake."),
      el("li", "Devices re-bootstrap from the legacy database; invalidate_daily returns. CORE edits made meanwhile are not copied back."),
      el("li", "", "confirm"));
    steps.lastChild.append(confirm);
    confirm.addEventListener("click", async () => {
      fail("");
      confirm.disabled = true;
      const items = steps.querySelectorAll("li");
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

  for (const b of document.querySelectorAll("#clock-card button")) {
    b.addEventListener("click", async () => {
      await fetch("/__mock/clock", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ advanceDays: Number(b.dataset.days) }) });
      await auth.getToken();
      refresh();
    });
  }
  fetch("/__mock/clock").then((r) => { hasClock = r.ok; $("clock-card").hidden = !r.ok; refreshClock(); }).catch(() => {});

  return { refresh };
}
