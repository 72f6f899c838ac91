// The mock server's clock card (shown only when the server has the mock routes): its time, and
// buttons that move it on by days, so a day's crons can be walked through in minutes.
import { $, setText } from "../dom.js";

export function createClock(ctx) {
  let present = false;

  /** Reads the server's time. The first answer decides whether the card shows at all. */
  async function read(first) {
    const r = await fetch("/__mock/clock").catch(() => null);
    if (first && r) {
      present = r.ok;
      $("clock-card").hidden = !present;
    }
    const body = r?.ok ? await r.json().catch(() => null) : null;
    if (body) setText("clock-now", `Server time: ${new Date(body.now).toUTCString()}`);
  }

  for (const b of document.querySelectorAll("#clock-card button")) {
    b.addEventListener("click", async () => {
      await fetch("/__mock/clock", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ advanceDays: Number(b.dataset.days) }) });
      await ctx.auth.getToken();
      ctx.refresh();
    });
  }
  read(true);

  /** Reads the time again, when the server has a mock clock. */
  return { refresh: () => (present ? read(false) : undefined) };
}
