// The page every bundler fixture builds: init, log in, read getToken(), as an app would. Writes
// one line a check ("ok <what>" or "FAIL <what>: <why>") into #out for the end-to-end test.
import init, { AuthManager, isSessionBrokerError } from "session-broker";

export async function run(initOptions) {
  const lines = [];
  const check = (what, cond, why = "") => lines.push(`${cond ? "ok" : "FAIL"} ${what}${cond ? "" : ": " + why}`);
  try {
    await init(initOptions);
    check("init", true);
    localStorage.clear();
    const auth = new AuthManager({ baseUrl: location.origin });
    const r = await auth.login({ username: "alice", password: "alice-pass" });
    check("login", r.success, JSON.stringify(r));
    const token = await auth.getToken();
    check("getToken", typeof token === "string" && token.split(".").length === 3, String(token));
    try { new AuthManager({}); check("error class", false, "no throw"); }
    catch (e) { check("error class", isSessionBrokerError(e) && e.code === "invalid_argument", String(e)); }
  } catch (e) {
    lines.push(`FAIL threw: ${e && e.stack || e}`);
  }
  lines.push("done");
  document.getElementById("out").textContent = lines.join("\n");
}
