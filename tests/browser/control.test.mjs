// The owner in control of a running turn, in a real Chromium: a shell
// command's output shows in a live pane while the command still runs, the
// Stop button ends a running command, and a pending confirmation card
// turns "withdrawn" when the owner stops the turn.
//
// Run by tests/control_browser.rs with the environment harness.mjs
// describes. Sync points as in canvas.test.mjs: the script prints
// `STEP <name>` and reads `OK` or `FAIL <reason>`.

import path from "node:path";
import readline from "node:readline";
import { ARTIFACTS, LOGIN, launch, run } from "./harness.mjs";

const TIMEOUT_MS = 20_000;

console.log = console.error;
const log = (...args) => console.error("[control.test]", ...args);

const stdinLines = readline.createInterface({ input: process.stdin, terminal: false })[Symbol.asyncIterator]();

async function step(name) {
  log(`step ${name}`);
  process.stdout.write(`STEP ${name}\n`);
  const { value, done } = await stdinLines.next();
  if (done) throw new Error(`stdin closed while waiting for the answer to STEP ${name}`);
  const line = value.trim();
  if (line === "OK") return;
  throw new Error(`the harness answered STEP ${name}: ${line}`);
}

function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}

async function waitUntil(page, what, fn, arg) {
  try {
    return await page.waitForFunction(fn, arg, { timeout: TIMEOUT_MS, polling: 20 });
  } catch (e) {
    throw new Error(`timed out after ${TIMEOUT_MS} ms waiting for ${what}: ${e.message.split("\n")[0]}`);
  }
}

async function send(page, text) {
  await page.locator('[data-testid="composer"]').fill(text);
  await page.locator('[data-testid="send"]').click({ timeout: TIMEOUT_MS });
}

async function waitForAgentMessage(page, text) {
  await waitUntil(
    page,
    `the agent message ${JSON.stringify(text)}`,
    (t) => [...document.querySelectorAll('[data-testid="message"][data-role="agent"] [data-testid="text"]')].some((e) => e.textContent.includes(t)),
    text,
  );
}

let browser;
let page;

async function main() {
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(TIMEOUT_MS);
  page = await context.newPage();
  page.on("pageerror", (e) => log("page error:", e.message));

  await step("login");
  await page.goto(LOGIN);
  await waitUntil(page, "the connection", () => document.querySelector('[data-testid="conn"]')?.textContent === "connected");
  assert(await page.locator('[data-testid="stop"]').isHidden(), "no Stop button while the agent is idle");

  // a. Live output: the first line shows while the command still sleeps.
  await step("live");
  await send(page, "run the slow one");
  await waitUntil(
    page,
    "the first line in a running output pane",
    () => {
      const pane = document.querySelector('[data-testid="tool-output"]');
      const text = pane?.querySelector('[data-testid="output"]')?.textContent || "";
      return pane?.dataset.state === "running" && pane.dataset.tool === "shell_exec" && text.includes("first-line");
    },
  );
  {
    const pane = page.locator('[data-testid="tool-output"]');
    const text = await pane.locator('[data-testid="output"]').textContent();
    assert(!text.includes("second-line"), `the pane shows the first line before the command ends (got ${JSON.stringify(text)})`);
    assert(await pane.evaluate((d) => d.open), "the pane is open");
    assert(await page.locator('[data-testid="stop"]').isVisible(), "the Stop button shows while the agent is busy");
    await pane.screenshot({ path: path.join(ARTIFACTS, "tool-output-running.png") });
    // Collapsible: the owner can fold it while it runs.
    await pane.locator("summary").click();
    assert(!(await pane.evaluate((d) => d.open)), "the pane folds");
  }
  await step("check-live-running");
  await waitForAgentMessage(page, "Printed both.");
  await waitUntil(page, "the pane to go with the reply", () => !document.querySelector('[data-testid="tool-output"]'));

  // b. The Stop button ends a running command.
  await step("stop");
  await send(page, "wait ten minutes");
  await step("check-sleeping");
  await page.locator('[data-testid="stop"]').click({ timeout: TIMEOUT_MS });
  // The reply's markdown shows the command as code: its text has no backticks.
  await waitForAgentMessage(page, "Stopped. Cut short: shell_exec (sleep 600).");
  await step("check-stopped");
  await waitUntil(page, "the agent to be idle", () => document.querySelector('[data-testid="agent"]')?.textContent === "idle");
  assert(await page.locator('[data-testid="stop"]').isHidden(), "no Stop button once idle");

  // c. A pending confirmation is withdrawn by the stop.
  await step("withdraw");
  await send(page, "delete it");
  const pending = page.locator('[data-testid="confirmation"][data-state="pending"]');
  await pending.first().waitFor({ state: "visible", timeout: TIMEOUT_MS });
  const id = await pending.first().getAttribute("data-id");
  await page.locator('[data-testid="stop"]').click({ timeout: TIMEOUT_MS });
  const card = page.locator(`[data-testid="confirmation"][data-id="${id}"][data-state="withdrawn"]`);
  await card.waitFor({ state: "visible", timeout: TIMEOUT_MS });
  const outcome = await card.locator('[data-testid="outcome"]').textContent();
  assert(outcome.includes("Withdrawn"), `the card says it was withdrawn (got ${JSON.stringify(outcome)})`);
  assert((await card.locator('[data-testid="approve"]').count()) === 0, "a withdrawn card has no buttons");
  await waitForAgentMessage(page, "its approval request was withdrawn");
  await card.screenshot({ path: path.join(ARTIFACTS, "confirmation-withdrawn.png") });

  await step("done");
}

await run(main, () => ({ browser, page }), "control-failure.png", log);
