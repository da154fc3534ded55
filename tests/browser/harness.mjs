// What the browser tests share: their environment, launching Debian's
// Chromium, and the run wrapper that turns a thrown error into exit code 1
// with a failure screenshot.
//
//   HEARTH_CANVAS_LOGIN  the login URL, with ?token=...
//   HEARTH_CANVAS_BASE   the origin, e.g. http://127.0.0.1:38123
//   HEARTH_ARTIFACTS     a directory for screenshots
//   CHROMIUM             the browser binary (default /usr/bin/chromium)

import path from "node:path";
import { chromium } from "playwright-core";

/** The value of environment variable `name`; throws when it is not set. */
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

export const LOGIN = env("HEARTH_CANVAS_LOGIN");
export const BASE = env("HEARTH_CANVAS_BASE").replace(/\/+$/, "");
export const ARTIFACTS = env("HEARTH_ARTIFACTS");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

/** Headless Chromium with the flags a sandbox-less CI container needs, and `extra` ones. */
export function launch(extra = []) {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", ...extra],
  });
}

/**
 * Runs `main`, logs "pass" or the error, takes `failure` (a file name in
 * ARTIFACTS) of the page `state()` holds when it failed, closes the
 * browser and exits 0 or 1.
 */
export async function run(main, state, failure, log) {
  let code = 0;
  try {
    await main();
    log("pass");
  } catch (e) {
    code = 1;
    console.error(e && e.stack ? e.stack : String(e));
    const { page } = state();
    if (page && !page.isClosed()) {
      await page.screenshot({ path: path.join(ARTIFACTS, failure), fullPage: true, timeout: 5000 }).catch((err) => log("no failure screenshot:", err.message));
    }
  }
  const { browser } = state();
  if (browser) await browser.close().catch(() => {});
  process.exit(code);
}
