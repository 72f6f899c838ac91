// The tenant card: where its devices route, its last invalidation, its reconciliation, CORE's and
// the legacy database's sequences, its day databases, and the drop's cleanup candidates with a
// release for each held (restored) day.
import { $, el, explain, keyed, setText, text, time } from "../dom.js";
import { busy } from "./controls.js";
import { adminPost } from "./routes.js";
import { renderRows } from "./tables.js";

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

export function createTenant(ctx) {
  /** A held day released to the drop's usual locks (audited as day.release). */
  async function release(db) {
    const r = await adminPost(ctx.auth, `tenants/${encodeURIComponent(ctx.tenant)}/days/${encodeURIComponent(db)}/release`);
    ctx.fail(r.success ? "" : `Not released: ${explain(r)}`);
    ctx.refresh();
  }

  /** A `Topology`, with the `Reconciliation` and `CleanupCandidates` when this role may read them. */
  function render(topo, recon, candidates) {
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
    // A restored day is held until sys_admin releases it.
    keyed($("t-held"), (candidates?.candidates ?? []).filter((c) => c.held), (c) => c.name, (c) => {
      const b = el("button", `Release ${c.name}`);
      b.type = "button";
      b.addEventListener("click", () => release(c.name));
      return b;
    }, (b) => {
      busy(b, !ctx.may.release);
      b.title = ctx.may.release ? "back to the drop's usual locks" : "sys_admin only";
    });
    if (!candidates) rows = [{ key: "note", note: "The cleanup candidates need sys_admin." }];
    else if (!rows.length) rows = [{ key: "note", note: "No day database yet: the rotate creates them, and they become candidates once past." }];
    renderRows($("t-candidates"), rows, 7);
  }

  return { render };
}
