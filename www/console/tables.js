// The console's plain tables: rows of text keyed by `key`, the audit log, and the cluster.
import { $, cells, emptyRow, keyed, noteRow, setText, text, time } from "../dom.js";

/** Text rows keyed by `key`; a row with a `note` spans the table. */
export function renderRows(table, rows, columns) {
  keyed(table.tBodies[0], rows, (r) => r.key, (r) => (r.note === undefined ? emptyRow(columns) : noteRow(columns)),
    (tr, r) => (r.note === undefined ? cells(tr, r.cells) : text(tr.cells[0], r.note)));
}

/** An `AuditPage`: when, who, what, its particulars, from where. */
export function renderAudit(page) {
  const rows = page.entries.map((e) => {
    const d = e.detail;
    const what = d.cron ?? (d.after ? `rollingDb ${d.after.rollingDb}, rollingDbDrop ${d.after.rollingDbDrop}` : d.username ?? d.reason ?? d.routing ?? "");
    return { key: e.id, cells: [time(e.at), e.actor, e.action, what, e.ip ?? "—"] };
  });
  renderRows($("audit"), rows.length ? rows : [{ key: "note", note: "nothing recorded for this tenant yet" }], 5);
}

/** A `ClusterView`: the handles against their bound, then every database. */
export function renderCluster(view) {
  setText("cluster-summary", `${view.openDbs} of ${view.maxDbsOpen} handles open (ROLLING_DB_MAX_OPEN), ${view.inUseDbs} in use; ${view.existingDbs} databases exist`);
  renderRows($("cluster"), view.databases.map((d) => ({
    key: d.name,
    cells: [d.name, d.kind, d.docCount, d.updateSeq, d.status, d.inUse ? "in use" : d.open ? "open" : "closed"],
  })), 6);
}
