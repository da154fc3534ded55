// What the browser tests share: their environment, launching Debian's
// Chromium, the run wrapper that turns a thrown error into exit code 1
// with a failure screenshot, the STEP/OK handshake with the Rust side, and
// the assertions and waits.
//
//   HEARTH_CANVAS_LOGIN  the login URL, with ?token=...
//   HEARTH_CANVAS_BASE   the origin, e.g. http://127.0.0.1:38123
//   HEARTH_ARTIFACTS     a directory for screenshots
//   CHROMIUM             the browser binary (default /usr/bin/chromium)

import path from "node:path";
import readline from "node:readline";
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

/**
 * The script's side of the handshake: `step(name)` prints `STEP name` and
 * waits up to `answerTimeoutMs` for the Rust side's `OK` (or `FAIL why`).
 */
export function stepper(log, answerTimeoutMs) {
  const lines = readline.createInterface({ input: process.stdin, terminal: false })[Symbol.asyncIterator]();
  return async function step(name) {
    log(`step ${name}`);
    process.stdout.write(`STEP ${name}\n`);
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from the harness to STEP ${name}`)), answerTimeoutMs);
    });
    const { value, done } = await Promise.race([lines.next(), timeout]).finally(() => clearTimeout(timer));
    if (done) throw new Error(`stdin closed while waiting for the answer to STEP ${name}`);
    const line = value.trim();
    if (line === "OK") return;
    if (line.startsWith("FAIL")) throw new Error(`the harness failed STEP ${name}: ${line.slice(4).trim()}`);
    throw new Error(`unexpected answer to STEP ${name}: ${JSON.stringify(line)}`);
  };
}

/** Throws `assertion failed: what` unless `cond`. */
export function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}

/** Throws unless `actual` and `expected` are the same as JSON. */
export function assertEq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`assertion failed: ${what}: expected ${e}, got ${a}`);
}

/** `waitUntil(page, what, fn, arg)` and `waitVisible(locator, what)`, each giving up after `timeoutMs` with a message naming `what`. */
export function waiters(timeoutMs) {
  return {
    async waitUntil(page, what, fn, arg) {
      try {
        return await page.waitForFunction(fn, arg, { timeout: timeoutMs, polling: 50 });
      } catch (e) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${e.message.split("\n")[0]}`);
      }
    },
    async waitVisible(locator, what) {
      try {
        await locator.first().waitFor({ state: "visible", timeout: timeoutMs });
      } catch (e) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${e.message.split("\n")[0]}`);
      }
    },
  };
}
