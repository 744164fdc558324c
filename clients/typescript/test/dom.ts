// A page for the hooks' tests: jsdom's window and document as globals, set before
// react-dom is first imported (it looks for a DOM when it loads). fetch stays Node's.

import { JSDOM } from "jsdom";

export const page = new JSDOM('<!doctype html><html><body><div id="root"></div></body></html>', {
  url: "http://127.0.0.1/",
});

Object.assign(globalThis, { window: page.window, document: page.window.document });
// Node 21 has a navigator of its own; Node 20 has none, and react-dom reads it
if (!("navigator" in globalThis)) Object.assign(globalThis, { navigator: page.window.navigator });
