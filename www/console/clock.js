// The mock server's clock card (shown only when the server has the mock routes): its time, and
// buttons that move it on by days, so a day's crons can be walked through in minutes.
import { $, setText } from "../dom.js";

export function createClock(ctx) {
  let present = false;

  async function read() {
    const r = await fetch("/__mock/clock").then((x) => x.json()).catch(() => null);
    if (r) setText("clock-now", `Server time: ${new Date(r.now).toUTCString()}`);
  }

  for (const b of document.querySelectorAll("#clock-card button")) {
    b.addEventListener("click", async () => {
      await fetch("/__mock/clock", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ advanceDays: Number(b.dataset.days) }) });
      await ctx.auth.getToken();
      ctx.refresh();
    });
  }
  fetch("/__mock/clock").then((r) => { present = r.ok; $("clock-card").hidden = !r.ok; if (r.ok) read(); }).catch(() => {});

  /** Reads the time again, when the server has a mock clock. */
  return { refresh: () => (present ? read() : undefined) };
}
