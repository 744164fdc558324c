// A view's lifetime: what it runs (timers, streams) stops when the page leaves it,
// and an answer that arrives after that is dropped (``gone()``).

import { $, h } from "./dom.js";

const stops = [];
let generation = 0;

export function onLeave(fn) {
  stops.push(fn);
}

export function leaveView() {
  generation += 1;
  for (const stop of stops.splice(0)) {
    try {
      stop();
    } catch {
      /* already stopped */
    }
  }
}

/** For the view being built: a function that says whether it has been left since. */
export function lifetime() {
  const mine = generation;
  return () => mine !== generation;
}

export function crumbs(...items) {
  const nav = $("crumbs");
  nav.replaceChildren();
  items.forEach((item, i) => {
    if (i) nav.append(h("span", { cls: "sep" }, "/"));
    nav.append(item.href ? h("a", { href: item.href }, item.text) : h("span", {}, item.text));
  });
}
