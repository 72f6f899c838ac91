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

export const time = (ms) => (ms ? new Date(ms).toLocaleString() : "—");

/** A failed call, in words a person can act on. */
export function explain(r) {
  if (r.status === 0) return "The server could not be reached. Is make demo still running?";
  if (r.status === 401) return "Your session has expired or was ended: log in again.";
  if (r.status === 403) return `Your role may not do this. ${r.error ?? ""}`.trim();
  if (r.status === undefined && r.error) return r.error;
  return `${r.error ?? "The server refused."} (HTTP ${r.status})`;
}
