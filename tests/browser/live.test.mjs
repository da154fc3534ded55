// The canvas's live view of the agent's browser, in a real Chromium, driven
// by tests/browser_daemon.rs, which runs the daemon with the canvas and the
// browser plugin (its own headless Chromium) and a site on 127.0.0.1.
// Environment and exit codes as in canvas.test.mjs (see harness.mjs).
//
// Sync points: `STEP <name>` on stdout, one line back on stdin (`OK` or
// `FAIL <reason>`):
//   login      nothing to do
//   open       the test has the model open the site's login page
//   logged-in  the test checks the site got the password typed here
//   done       the end
//
// The owner logs in by hand on the view: clicks where the page shows its
// fields (each fills a third of the page) and types with the keyboard.

import path from "node:path";
import { ARTIFACTS, LOGIN, assert, launch, run, stepper, waiters } from "./harness.mjs";

const TIMEOUT_MS = 30_000;
const STEP_ANSWER_TIMEOUT_MS = 120_000;

console.log = console.error;
const log = (...args) => console.error("[live.test]", ...args);
const step = stepper(log, STEP_ANSWER_TIMEOUT_MS);
const { waitUntil, waitVisible } = waiters(TIMEOUT_MS);

let browser;
let page;

/** Waits until the view's title is `title` and its newest frame has loaded. */
async function waitShown(title) {
  await waitUntil(
    page,
    `the live view to show "${title}"`,
    (t) => {
      const live = document.querySelector('[data-testid="live"]');
      const img = document.querySelector('[data-testid="live-frame"]');
      const shown = document.querySelector('[data-testid="live-title"]')?.textContent;
      return shown === t && img && img.complete && img.naturalWidth > 0 && img.dataset.seq === live.dataset.seq;
    },
    title,
  );
}

/** Clicks the view at fractions `x`, `y` of its frame. */
async function clickAt(x, y) {
  const frame = page.getByTestId("live-frame");
  const box = await frame.boundingBox();
  assert(box && box.width > 0, "the frame has a size");
  await page.mouse.click(box.x + box.width * x, box.y + box.height * y);
}

async function main() {
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
  context.setDefaultTimeout(TIMEOUT_MS);
  page = await context.newPage();

  await step("login");
  await page.goto(LOGIN);
  await waitUntil(page, 'conn to show "connected"', () => document.querySelector('[data-testid="conn"]')?.textContent === "connected");
  assert(await page.getByTestId("live").isHidden(), "no view before the browser ran");

  await step("open");
  await waitVisible(page.getByTestId("live"), "the live view");
  await waitShown("Login");
  assert((await page.getByTestId("live").getAttribute("data-state")) === "live", "the view is live");
  assert((await page.getByTestId("live-url").textContent()).endsWith("/login"), "the view names the address");

  await clickAt(0.5, 0.15);
  await page.keyboard.type("anna");
  await clickAt(0.5, 0.5);
  await page.keyboard.type(process.env.SITE_PASSWORD);
  await clickAt(0.5, 0.85);
  await waitShown("Account");
  // The page's first frames after it loaded, for the picture.
  await page.waitForTimeout(1000);
  await page.getByTestId("live").screenshot({ path: path.join(ARTIFACTS, "live-view.png") });
  await step("logged-in");

  const site = new URL(await page.getByTestId("live-url").textContent()).origin;
  await page.getByTestId("live-address").fill(`${site}/big`);
  await page.getByTestId("live-go").click();
  await waitShown("Big");
  await clickAt(0.5, 0.5);
  await waitShown("clicked");
  await step("done");
}

run(main, () => ({ browser, page }), "live-failure.png", log);
