// The fleet card: each tenant's two flag switches with the facts beside them, the attention
// banner, the preflight checklist a switch goes through before it turns a flag on, and the
// acknowledgement of a tenant's device losses. What a tenant's operators must do is the server's
// word (its `attention.steps`), shown as it says it: the badge its steps' headlines, the banner
// its instruction.
import { $, cells, el, emptyRow, explain, keyed, noteRow, text, time } from "../dom.js";
import { busy, button } from "./controls.js";
import { adminGet, adminPost } from "./routes.js";

export function createFleet(ctx) {
  const pending = new Set(); // ids of the flag switches whose change is in flight

  function markPending(ids, on) {
    for (const id of ids) {
      if (on) pending.add(id);
      else pending.delete(id);
      const node = document.getElementById(id);
      if (node) busy(node, on);
    }
  }

  async function setFlag(id, change, force = false) {
    ctx.fail("");
    const ids = Object.keys(change).map((flag) => `flag-${id}-${flag}`);
    markPending(ids, true);
    const r = await ctx.admin.setFlags(id, change, { force });
    markPending(ids, false);
    $("preflight").hidden = true;
    if (!r.success) {
      ctx.fail(`Flags of ${id} unchanged: ${explain(r)}`);
      // Refused: show again what is missing, now.
      const flag = Object.keys(change).find((k) => change[k]);
      if (r.status === 409 && flag) await showPreflight(id, flag);
    }
    ctx.refresh();
  }

  /** The prerequisites for switching `flag` on, as a checklist; switching happens here. */
  async function showPreflight(id, flag) {
    const panel = $("preflight");
    const r = await ctx.admin.preflight(id);
    if (!r.success) {
      ctx.fail(`The prerequisites of ${flag} for ${id} could not be read: ${explain(r)}`);
      return;
    }
    const { ready, checks } = r.data[flag];
    const items = checks.map((c) => {
      const li = el("li", "", c.ok ? "ok" : "missing");
      li.append(el("strong", `${c.ok ? "✓" : "✗"} ${c.check.replaceAll("_", " ")}`), el("span", ` ${c.detail}`), el("small", `Runbook step (docs/operations.md): ${c.runbookStep}`));
      return li;
    });
    const list = el("ul", "", "checklist");
    list.append(...items);
    const actions = [button("Cancel", "secondary", "preflight-cancel", () => { panel.hidden = true; ctx.refresh(); })];
    if (ready) {
      actions.unshift(button(`Switch ${flag} on`, "", "preflight-confirm", () => setFlag(id, { [flag]: true })));
    } else if (ctx.may.force) {
      actions.unshift(button(`Force ${flag} on anyway (audited with the checks it overrides)`, "danger", "preflight-force", () => setFlag(id, { [flag]: true }, true)));
    }
    const heading = ready ? `Every prerequisite of ${flag} for ${id} is met.` : `${flag} for ${id}: its prerequisites are not met, so the server refuses it.`;
    const note = !ready && !ctx.may.force ? [el("p", "Only sys_admin may force a flag past its prerequisites.", "hint")] : [];
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

  /**
   * The reports the acknowledgement will answer, listed as the server has them now; confirming
   * sends exactly their ids, so a report arriving after this list stays open.
   */
  async function showLosses(id) {
    const panel = $("ack-panel");
    ctx.fail("");
    const r = await adminGet(ctx.auth, `tenants/${encodeURIComponent(id)}/losses`);
    if (!r.success) {
      ctx.fail(`The device losses of ${id} could not be read: ${explain(r)}`);
      return;
    }
    const reports = r.data.reports;
    const list = el("ul", "", "checklist");
    list.id = "ack-reports";
    list.append(...reports.map((rep) => {
      const where = Object.entries(rep.lost).map(([db, n]) => `${db}: ${n}`).join(", ");
      return el("li", `device ${rep.deviceId} lost ${rep.documents} document(s) (${rep.reason}; ${where}), reported ${time(rep.reportedAt)}`);
    }));
    const heading = reports.length
      ? `${id}: acknowledge that these ${reports.length} device loss report(s) are recovered (the store re-entered the orders).`
      : `${id}: no device loss report is open.`;
    const actions = el("div", "", "actions");
    actions.append(button("Cancel", "secondary", "ack-cancel", () => { panel.hidden = true; ctx.refresh(); }));
    if (reports.length) {
      const ids = reports.map((rep) => rep.reportId);
      actions.prepend(button(`Acknowledge these ${ids.length} report(s)`, "", "ack-confirm", (e) => acknowledge(id, ids, e.currentTarget)));
    }
    const said = el("p", "", "result");
    said.id = "ack-result";
    panel.replaceChildren(el("p", heading), list, said, actions);
    panel.className = "card preflight ready";
    panel.hidden = false;
  }

  async function acknowledge(id, reportIds, control) {
    busy(control, true);
    const r = await adminPost(ctx.auth, `tenants/${encodeURIComponent(id)}/losses/acknowledge`, { reportIds });
    const said = $("ack-result");
    if (r.success) {
      said.className = "result ok";
      said.textContent = `Acknowledged ${r.data.acknowledged.length} report(s) of ${id}; ${r.data.open} still open.`;
      control.remove();
    } else {
      busy(control, false);
      said.className = "result bad";
      said.textContent = `Not acknowledged: ${explain(r)}`;
    }
    ctx.refresh();
  }

  /** A fleet row: the tenant (with its badge and losses' acknowledgement), its two flag switches, then three cells of text. */
  function flagRow(item) {
    if (item.note !== undefined) return noteRow(6);
    const tr = emptyRow(6);
    const ack = button("Acknowledge losses…", "secondary", `ack-losses-${item.id}`, () => showLosses(item.id));
    ack.setAttribute("aria-label", `Acknowledge losses… of ${item.id}`);
    ack.hidden = true;
    tr.cells[0].append(el("span"), " ", ack);
    tr.cells[1].append(toggle(item.id, "rollingDb"));
    tr.cells[2].append(toggle(item.id, "rollingDbDrop"));
    return tr;
  }

  /** Documents a tenant's devices destroyed unpushed, all reasons together. */
  function lostTotal(t) {
    return Object.values(t.deviceLosses ?? {}).reduce((sum, n) => sum + n, 0);
  }

  function lossesText(byReason) {
    return Object.entries(byReason).filter(([, n]) => n).map(([reason, n]) => `${n} by ${reason}`).join(", ");
  }

  /** The server's steps for the tenant, in its words: the badge says what the banner says first. */
  function attentionBadge(steps) {
    return ` ⚠ ${steps.map((s) => s.headline).join("; ")}`;
  }

  function updateFlagRow(tr, item) {
    if (item.note !== undefined) return text(tr.cells[0], item.note);
    const name = tr.cells[0].firstChild;
    text(name, item.name);
    let badge = name.querySelector(".attention-badge");
    if (item.attention && !badge) name.append((badge = el("strong", "", "attention-badge")));
    if (!item.attention && badge) badge.remove();
    if (badge) text(badge, attentionBadge(item.attention.steps));
    if (badge) badge.title = [...item.attention.alarms.map((a) => a.detail), item.attention.instruction].join("\n");
    // Acknowledging answers a loss only where the server asks for its recovery: never on a
    // tenant it tells to roll back (the rollback answers it there).
    const ack = tr.cells[0].lastChild;
    const recover = Boolean(item.attention?.steps.some((s) => s.step === "recover-orders"));
    if (ack.hidden === recover) ack.hidden = !recover;
    busy(ack, !ctx.may.losses);
    ack.title = ctx.may.losses ? "lists the open reports first" : "needs rollingDb:losses";
    setToggle(tr.cells[1].firstChild, item.rollingDb, false);
    setToggle(tr.cells[2].firstChild, item.rollingDbDrop, !item.rollingDb);
    cells(tr, item.facts, 3);
    tr.classList.toggle("attention", Boolean(item.attention));
  }

  function renderFlags(items) {
    keyed($("fleet").tBodies[0], items, (i) => i.key ?? i.id, flagRow, updateFlagRow);
  }

  /** sys_admin's fleet: every tenant (a `TenantsView`). */
  function render(view) {
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
    const alarms = view.tenants.filter((t) => t.attention || lostTotal(t));
    const banner = $("attention");
    banner.hidden = !alarms.length;
    const lines = alarms.flatMap((t) => [
      ...(t.attention ? [[`⚠ ${t.name} (${t.companyId}) needs attention: ${t.attention.instruction}`]] : []),
      ...(t.attention?.alarms ?? []).map((a) => [`${a.kind}: ${a.detail}`, "hint"]),
      // What its devices destroyed unpushed, ever, by reason: kept after the alarms clear.
      ...(lostTotal(t) ? [[`${t.name} (${t.companyId}) devices lost ${lossesText(t.deviceLosses)}`, "hint"]] : []),
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
      select.value = ctx.tenant;
    }
  }

  /** key_manager's fleet: the one tenant typed in, its flags read from the preflight it may read. */
  function renderTenantFlags(pre) {
    const tenant = ctx.tenant;
    if (!pre.success) return renderFlags([{ key: "note", note: `${tenant}: ${explain(pre)}` }]);
    const { rollingDb, rollingDbDrop } = pre.data;
    renderFlags([{ id: tenant, name: tenant, rollingDb: rollingDb.on, rollingDbDrop: rollingDbDrop.on, facts: ["sys_admin only", "sys_admin only", "sys_admin only"] }]);
  }

  return { render, renderTenantFlags };
}
