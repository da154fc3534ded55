// The agent's pages in a real Chromium, run by tests/canvas_browser.rs
// after it has made, through manage_pages, a private page `shop` whose
// script fetches its named query and lists the rows, and a public page
// `open/board` whose script tries the canvas's WebSocket, `/files` and its
// own query, writing each outcome into the page. Environment:
//
//   HEARTH_CANVAS_LOGIN  the login URL, with ?token=...
//   HEARTH_CANVAS_BASE   the origin, e.g. http://127.0.0.1:38123
//   HEARTH_ARTIFACTS     a directory for screenshots
//   CHROMIUM             the browser binary (default /usr/bin/chromium)
//
// Exit code 0 is a pass; a failure goes to stderr with `pages-failure.png`.

import path from "node:path";
import { ARTIFACTS, BASE, LOGIN, launch, run } from "./harness.mjs";

const TIMEOUT_MS = 20_000;
const log = (...args) => console.error("[pages.test]", ...args);


function assert(ok, what) {
  if (!ok) throw new Error(`assertion failed: ${what}`);
}

/** Waits until the element `#id` no longer says "pending", and returns its text. */
async function outcome(page, id) {
  const locator = page.locator(`#${id}`);
  await page.waitForFunction((id) => document.getElementById(id)?.textContent !== "pending", id);
  return (await locator.textContent()).trim();
}

let browser;
let page;

async function main() {
  browser = await launch();
  const context = await browser.newContext();
  context.setDefaultTimeout(TIMEOUT_MS);
  context.setDefaultNavigationTimeout(TIMEOUT_MS);
  page = await context.newPage();
  page.on("console", (m) => log("console:", m.text()));

  // A private page without a session: 401.
  const refused = await page.goto(`${BASE}/pages/shop`);
  assert(refused.status() === 401, `a private page without a session answers 401 (got ${refused.status()})`);

  // With the session, its script fetches its named query and shows the rows.
  await page.goto(LOGIN);
  await page.goto(`${BASE}/pages/shop`);
  const state = await outcome(page, "state");
  assert(state === "loaded 2", `the private page loaded its query (got ${JSON.stringify(state)})`);
  const rows = await page.locator("#rows li").allTextContents();
  assert(JSON.stringify(rows) === JSON.stringify(["eggs: 12", "milk: 2"]), `the rows from agent_data.db are on the page (got ${JSON.stringify(rows)})`);
  const privateWs = await outcome(page, "ws");
  assert(privateWs.startsWith("failed"), `a private page cannot open the canvas WebSocket (got ${JSON.stringify(privateWs)})`);
  await page.screenshot({ path: path.join(ARTIFACTS, "page-private.png") });

  // A public page, even in the owner's browser, reaches its own query only.
  await page.goto(`${BASE}/pages/open/board`);
  const ws = await outcome(page, "ws");
  assert(ws.startsWith("failed"), `a public page cannot open the canvas WebSocket (got ${JSON.stringify(ws)})`);
  const files = await outcome(page, "files");
  assert(files.startsWith("failed"), `a public page cannot read /files (got ${JSON.stringify(files)})`);
  const query = await outcome(page, "query");
  assert(query === "rows 3", `a public page reads its own query (got ${JSON.stringify(query)})`);
  const cookie = await outcome(page, "cookie");
  assert(!cookie.includes("hearth_session"), `a public page cannot see the session cookie (got ${JSON.stringify(cookie)})`);
  await page.screenshot({ path: path.join(ARTIFACTS, "page-public.png") });
}

run(main, () => ({ browser, page }), "pages-failure.png", log);
