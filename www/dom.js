// DOM helpers. Every string from the server or the SDK goes in as text, never as HTML.
import { ErrorCodes } from "/pkg/codes.js";

export const $ = (id) => document.getElementById(id);

export function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
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

/** What each code means for the person at the page (the codes the package exports); anything else shows the server's words. */
const WORDS = new Map([
  [ErrorCodes.NETWORK, "The server could not be reached. Is make demo still running?"],
  [ErrorCodes.TIMEOUT, "The server did not answer in time. Try again."],
  [ErrorCodes.INVALID_CREDENTIALS, "Wrong username or password."],
  [ErrorCodes.RATE_LIMITED, "Too many sign-in attempts from here: wait a minute and try again."],
  [ErrorCodes.ACCOUNT_THROTTLED, "Too many wrong passwords for this account: wait a few minutes, or sign in on a device you used before."],
  [ErrorCodes.SESSION_ENDED, "Your session was ended (signed out, or your password or role changed): log in again."],
  [ErrorCodes.NOT_SIGNED_IN, "Log in first."],
  [ErrorCodes.SESSION_EXPIRED, "Your session has ended: log in again."],
  [ErrorCodes.TOKEN_EXPIRED, "Your session has ended: log in again."],
  [ErrorCodes.REFRESH_TOKEN_REVOKED, "Your session was ended (signed out elsewhere or the password changed): log in again."],
  [ErrorCodes.REFRESH_TOKEN_REUSED, "Your session was ended for safety (a used refresh token came back): log in again."],
  [ErrorCodes.FORBIDDEN, "Your role may not do this."],
]);
// A code the package no longer exports would key its words under `undefined`: said at once.
if (WORDS.has(undefined)) throw new Error("dom.js names an error code the package does not export");

/** A failed call, in words a person can act on, chosen by its code. */
export function explain(r) {
  const words = WORDS.get(r.code);
  if (r.code === ErrorCodes.FORBIDDEN) return `${words} ${r.error ?? ""}`.trim();
  return words ?? r.error ?? `The server refused (HTTP ${r.status}).`;
}

/** Sets a node's text only when it differs: an unchanged cell is not touched, so nothing re-reads it. */
export function text(node, value) {
  const s = value === undefined || value === null ? "" : String(value);
  if (node.textContent !== s) node.textContent = s;
}

/**
 * Keeps `parent`'s children in step with `items`, one element per key: an element whose key is
 * still there is the same element after the update (its focus, its listeners, its pending state
 * stay), new keys get `make(item)`, gone keys are removed, and `update(node, item)` brings each
 * up to date. Nodes move only when their place changed (moving a focused node would blur it).
 */
export function keyed(parent, items, keyOf, make, update) {
  const old = new Map();
  for (const node of parent.children) old.set(node.dataset.key, node);
  let at = 0;
  for (const item of items) {
    const key = String(keyOf(item));
    let node = old.get(key);
    if (node) old.delete(key);
    else {
      node = make(item);
      node.dataset.key = key;
    }
    update(node, item);
    const here = parent.children[at] ?? null;
    if (here !== node) parent.insertBefore(node, here);
    at++;
  }
  for (const node of old.values()) node.remove();
}

/** A table row of `n` empty cells, filled by `cells(tr, values)`. */
export function emptyRow(n) {
  const tr = document.createElement("tr");
  for (let i = 0; i < n; i++) tr.append(document.createElement("td"));
  return tr;
}

/** Writes `values` as text into a row's cells from column `from` on, where the text changed. */
export function cells(tr, values, from = 0) {
  values.forEach((v, i) => text(tr.cells[from + i], v));
}

/** A one-cell row spanning the table, for "nothing here" messages; keyed like any other row. */
export function noteRow(columns) {
  const tr = document.createElement("tr");
  const td = document.createElement("td");
  td.colSpan = columns;
  td.className = "hint";
  tr.append(td);
  return tr;
}
