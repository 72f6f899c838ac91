// DOM helpers. Every string from the server or the SDK goes in as text, never as HTML.

export const $ = (id) => document.getElementById(id);

export function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function row(...cells) {
  const tr = document.createElement("tr");
  for (const c of cells) tr.append(c instanceof Node ? wrap(c) : el("td", c));
  return tr;
}

function wrap(node) {
  if (node.tagName === "TD") return node;
  const td = document.createElement("td");
  td.append(node);
  return td;
}

export function setText(id, value) {
  $(id).textContent = value ?? "—";
}

export function result(id, ok, message) {
  const node = $(id);
  node.className = `result ${ok ? "ok" : "bad"}`;
  node.textContent = message;
}

/** Every time on the page in one zone, named: the crons' schedules are UTC, so is everything else. */
export const time = (ms) => (ms ? `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC` : "—");

/** What each code means for the person at the page; anything else shows the server's words. */
const WORDS = {
  network: "The server could not be reached. Is make demo still running?",
  timeout: "The server did not answer in time. Try again.",
  invalid_credentials: "Wrong username or password.",
  rate_limited: "Too many sign-in attempts from here: wait a minute and try again.",
  not_signed_in: "Log in first.",
  session_expired: "Your session has ended: log in again.",
  token_expired: "Your session has ended: log in again.",
  refresh_token_revoked: "Your session was ended (signed out elsewhere or the password changed): log in again.",
  refresh_token_reused: "Your session was ended for safety (a used refresh token came back): log in again.",
  forbidden: "Your role may not do this.",
};

/** A failed call, in words a person can act on, chosen by its code. */
export function explain(r) {
  const words = WORDS[r.code];
  if (r.code === "forbidden") return `${words} ${r.error ?? ""}`.trim();
  return words ?? r.error ?? `The server refused (HTTP ${r.status}).`;
}
