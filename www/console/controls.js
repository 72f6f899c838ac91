// Controls the console's cards share: buttons, the busy mark, and whether a card is on screen.
import { el } from "../dom.js";

/**
 * A control whose action is in flight, or that may not act now, is marked `aria-disabled` rather
 * than `disabled`: a disabled control loses the keyboard focus, and the operator's place with it.
 * The console body's click guard (index.js) keeps it from acting.
 */
export function busy(node, on) {
  if ((node.getAttribute("aria-disabled") === "true") !== on) node.setAttribute("aria-disabled", String(on));
}

export function button(label, kind, id, onClick) {
  const b = el("button", label, kind);
  b.type = "button";
  if (id) b.id = id;
  b.addEventListener("click", onClick);
  return b;
}

export function inView(node) {
  const r = node.getBoundingClientRect();
  return r.width > 0 && r.bottom > 0 && r.top < innerHeight;
}
