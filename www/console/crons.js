// The crons card: every cron with its schedule and last result, a "Run now" for each, and the
// progress of a run this page started.
import { $, cells, el, emptyRow, explain, keyed, setText, text, time } from "../dom.js";
import { busy, button } from "./controls.js";

export function createCrons(ctx) {
  let running = false; // a run this page started and is watching

  function cronRow(c) {
    const tr = emptyRow(5);
    tr.cells[0].append(el("span", c.name, "cron-name"));
    tr.cells[4].append(button("Run now", "secondary", `run-${c.name}`, () => run(c.name)));
    return tr;
  }

  /** A `CronsView`; a caller who may only start crons is answered the names with their state null. */
  function render(view) {
    keyed($("crons").tBodies[0], view.crons, (c) => c.name, cronRow, (tr, c) => {
      tr.cells[0].firstChild.title = c.description ?? "";
      cells(tr, c.schedule === null ? ["sys_admin reads the schedule", "—", "—"]
        : [`${c.schedule} UTC${c.scheduled ? "" : " (off)"}`, c.lastResult ? `${c.lastResult}, ${time(c.lastRunAt)}` : "never", time(c.nextRunAt)], 1);
      const b = tr.cells[4].firstChild;
      text(b, c.running ? "running…" : "Run now");
      busy(b, running || c.running === true); // null: the caller is not told the state
    });
  }

  /** Starts `name` and follows its progress (a read: crons:read) until it ends. */
  async function run(name) {
    if (running) return;
    ctx.fail("");
    running = true;
    for (const b of $("crons").querySelectorAll("button")) busy(b, true);
    const started = await ctx.admin.runCron(name);
    if (!started.success) {
      running = false;
      ctx.fail(`${name} did not start: ${explain(started)}`);
      return ctx.refresh();
    }
    $("run").hidden = false;
    const id = started.data.runId;
    const log = $("run-log");
    if (log.dataset.run !== id) {
      log.dataset.run = id;
      log.replaceChildren();
    }
    let progress;
    do {
      const r = await ctx.admin.cronRun(id);
      if (r.code === ctx.codes.FORBIDDEN) {
        setText("run-status", `${name}: started as ${id}; following its progress needs sys_admin (crons:read)`);
        break;
      }
      if (!r.success) { ctx.fail(`Progress unavailable: ${explain(r)}`); break; }
      progress = r.data;
      const { done, total } = progress.progress;
      const pct = progress.status === "running" ? (total ? Math.round((100 * done) / total) : 0) : 100;
      $("run-bar").style.width = `${pct}%`;
      $("run-bar").parentElement.setAttribute("aria-valuenow", String(pct));
      $("run-bar").className = progress.status;
      setText("run-status", `${name}: ${progress.status}, ${done} of ${total} step(s)`);
      // A run's log only grows: new lines are appended, the ones read stay where they are.
      for (let i = log.children.length; i < progress.log.length; i++) log.append(el("li", progress.log[i]));
      if (progress.status === "running") await new Promise((r) => setTimeout(r, 250));
    } while (progress.status === "running");
    running = false;
    ctx.refresh();
  }

  return { render };
}
