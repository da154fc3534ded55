// End-to-end test of the canvas web UI in a real Chromium, driven by the Rust
// test harness, which starts a fake model and the daemon with the canvas
// plugin, then runs `node tests/browser/canvas.test.mjs` from the repository
// root with:
//
//   HEARTH_CANVAS_LOGIN  the login URL, with ?token=...
//   HEARTH_CANVAS_BASE   the origin, e.g. http://127.0.0.1:38123
//   HEARTH_ARTIFACTS     a directory for screenshots and the upload fixture
//   CHROMIUM             the browser binary (default /usr/bin/chromium)
//
// Sync points: the script prints `STEP <name>` on stdout and reads one line
// from stdin: `OK` to go on, `FAIL <reason>` to fail. Stdout carries nothing
// else; logs go to stderr. Exit code 0 is a pass; on a failure the error goes
// to stderr, `failure.png` to HEARTH_ARTIFACTS, and the exit code is 1.
//
// The DOM contract the selectors rely on is documented at the top of
// plugins/canvas/ui/app.js.

import fs from "node:fs";
import path from "node:path";
import { ARTIFACTS, BASE, LOGIN, assert, assertEq, launch, run, stepper, waiters } from "./harness.mjs";

const TIMEOUT_MS = 20_000;
const STEP_ANSWER_TIMEOUT_MS = 180_000;

console.log = console.error;
const log = (...args) => console.error("[canvas.test]", ...args);
const step = stepper(log, STEP_ANSWER_TIMEOUT_MS);
const { waitUntil, waitVisible } = waiters(TIMEOUT_MS);

const EXPECTED_ELEMENTS = {
  "el-markdown": "markdown",
  "el-table": "table",
  "el-chart-line": "chart",
  "el-chart-bar": "chart",
  "el-image": "image",
  "el-code": "code",
  "el-checklist": "checklist",
  "el-link": "link",
  "el-video": "video",
  "el-progress": "progress",
};

async function waitForText(page, selector, text, what) {
  await waitUntil(
    page,
    what || `${selector} containing ${JSON.stringify(text)}`,
    ([sel, t]) => [...document.querySelectorAll(sel)].some((e) => e.textContent.includes(t)),
    [selector, text],
  );
}

async function waitForAgentMessage(page, text) {
  await waitForText(page, '[data-testid="message"][data-role="agent"] [data-testid="text"]', text, `the agent message ${JSON.stringify(text)}`);
}

async function waitConnected(page) {
  await waitUntil(page, 'conn to show "connected"', () => document.querySelector('[data-testid="conn"]')?.textContent === "connected");
}

async function messages(page) {
  return page.$$eval('[data-testid="message"]', (els) =>
    els.map((e) => ({
      key: e.dataset.key,
      role: e.dataset.role,
      text: (e.querySelector('[data-testid="text"]')?.textContent || "").trim(),
    })),
  );
}

async function confirmations(page) {
  return page.$$eval('[data-testid="confirmation"]', (els) => els.map((e) => ({ id: e.dataset.id, state: e.dataset.state })));
}

async function elementTypes(page) {
  return page.$$eval('[data-testid="element"]', (els) => els.map((e) => [e.dataset.id, e.dataset.type]));
}

async function send(page, text) {
  await page.locator('[data-testid="composer"]').fill(text);
  await page.locator('[data-testid="send"]').click({ timeout: TIMEOUT_MS });
}

// Records, from inside the page, every value the agent status and the
// streaming bubbles take, so short-lived states are not missed by polling.
async function installRecorder(page) {
  await page.evaluate(() => {
    const rec = { agent: [], streaming: [], conn: [] };
    window.hearthRecorder = rec;
    const push = (list, v) => {
      if (list[list.length - 1] !== v) list.push(v);
    };
    const look = () => {
      const agent = document.querySelector('[data-testid="agent"]');
      if (agent) push(rec.agent, agent.textContent);
      const conn = document.querySelector('[data-testid="conn"]');
      if (conn) push(rec.conn, conn.textContent);
      for (const s of document.querySelectorAll('[data-testid="streaming"]')) push(rec.streaming, s.textContent);
    };
    new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    look();
  });
}

const recorded = (page) => page.evaluate(() => window.hearthRecorder);

async function decide(page, word, approve) {
  const pending = page.locator('[data-testid="confirmation"][data-state="pending"]');
  await waitVisible(pending, `a pending confirmation card for "${word}"`);
  const id = await pending.first().getAttribute("data-id");
  const card = page.locator(`[data-testid="confirmation"][data-id="${id}"]`);
  const tool = await card.locator('[data-testid="tool"]').textContent();
  assert(tool.includes("probe_exec"), `the card names the tool probe_exec (got ${JSON.stringify(tool)})`);
  const args = await card.locator('[data-testid="args"]').textContent();
  assert(args.includes(word), `the card's args contain "${word}" (got ${JSON.stringify(args)})`);
  assertEq(await card.locator('[data-testid="mode"]').textContent(), "development", "the card shows the mode");
  assertEq(await card.locator('[data-testid="always"]').count(), 1, "a pending card offers Always allow");
  await card.locator(`[data-testid="${approve ? "approve" : "deny"}"]`).click({ timeout: TIMEOUT_MS });
  const final = approve ? "approved" : "denied";
  await waitVisible(page.locator(`[data-testid="confirmation"][data-id="${id}"][data-state="${final}"]`), `the card to turn ${final}`);
  assertEq(await card.locator('[data-testid="approve"], [data-testid="deny"], [data-testid="always"]').count(), 0, "the decided card has no buttons");
  return id;
}

/* ---------- the scenario ---------- */

let browser;
let page;
const pageErrors = [];

function watch(p) {
  p.on("pageerror", (e) => {
    pageErrors.push(e.message);
    log("page error:", e.message);
  });
  p.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") log(`console.${m.type()}:`, m.text());
  });
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(TIMEOUT_MS);
  context.setDefaultNavigationTimeout(TIMEOUT_MS);
  page = await context.newPage();
  watch(page);

  // a. login
  await step("login");
  await page.goto(`${BASE}/`);
  assertEq(new URL(page.url()).pathname, "/login", "without a cookie, / lands on the login page");
  assertEq(await page.locator('form input[name="token"]').count(), 1, "the login page has a token field");
  await page.goto(LOGIN);
  assertEq(page.url(), `${BASE}/`, "after the login URL the browser is on / with no token in the URL");
  await waitConnected(page);

  // b. chat with a streamed reply
  await step("chat");
  await installRecorder(page);
  await send(page, "hello there");
  await waitForAgentMessage(page, "Hello from the fake model");
  await waitUntil(page, "the streaming bubble to go away", () => !document.querySelector('[data-testid="streaming"]'));
  await waitUntil(page, "the agent to be idle", () => document.querySelector('[data-testid="agent"]')?.textContent === "idle");
  {
    const rec = await recorded(page);
    const final = (await messages(page)).filter((m) => m.role === "agent").pop().text;
    assert(final.includes("Hello from the fake model."), `the final reply is "Hello from the fake model." (got ${JSON.stringify(final)})`);
    const streamed = rec.streaming.filter((t) => t.length > 0);
    log("streamed texts:", JSON.stringify(streamed));
    assert(streamed.length > 0, "a non-empty streaming bubble was shown");
    for (let i = 0; i < streamed.length; i++) {
      assert(final.startsWith(streamed[i]), `streamed text ${JSON.stringify(streamed[i])} is a prefix of the final reply`);
      if (i > 0) assert(streamed[i].startsWith(streamed[i - 1]), `streamed text grows: ${JSON.stringify(streamed[i - 1])} then ${JSON.stringify(streamed[i])}`);
    }
    assert(streamed.some((t) => t.length < final.length), "an intermediate streamed text shorter than the final reply was shown");
    log("agent states:", JSON.stringify(rec.agent));
    const busy = rec.agent.indexOf("busy");
    assert(busy >= 0, "the agent went busy");
    assert(rec.agent.indexOf("idle", busy) > busy, "the agent went idle after busy");
    const user = (await messages(page)).filter((m) => m.role === "user").map((m) => m.text);
    assert(user.includes("hello there"), "the user message is shown");
    assertEq(await page.locator('[data-testid="pending"]').count(), 0, "no message is left pending");
  }

  // b2. another agent at work shows in the status bar
  await step("working");
  await send(page, "ask the researcher");
  await waitUntil(page, "the researcher to show as working", () => {
    const item = document.getElementById("working-item");
    return item && !item.hidden && document.querySelector('[data-testid="working"]')?.textContent === "researcher";
  });
  await waitForAgentMessage(page, "The researcher found it.");
  await waitUntil(page, "no other agent to show as working", () => document.getElementById("working-item")?.hidden === true);

  // b3. the scheduler's next jobs show under "Upcoming"
  await waitUntil(page, "no upcoming jobs yet", () => document.getElementById("upcoming")?.hidden === true);
  await step("upcoming");
  await waitUntil(page, "the weekly job under Upcoming", () => {
    const section = document.getElementById("upcoming");
    const job = document.querySelector('[data-testid="job"]');
    return !!section && !section.hidden && !!job && job.dataset.kind === "task" &&
      job.querySelector('[data-testid="text"]')?.textContent === "weekly review" &&
      / 09:00 /.test(job.querySelector('[data-testid="when"]')?.textContent || "");
  });

  // c. every element type
  await step("elements");
  await send(page, "show me everything");
  await waitForAgentMessage(page, "Done.");
  await waitUntil(page, "10 canvas elements", () => document.querySelectorAll('[data-testid="element"]').length === 10);
  {
    const types = Object.fromEntries(await elementTypes(page));
    assertEq(Object.keys(types).length, 10, "the number of elements");
    for (const [id, type] of Object.entries(EXPECTED_ELEMENTS)) assertEq(types[id], type, `the type of ${id}`);
    const el = (id) => page.locator(`[data-testid="element"][data-id="${id}"]`);

    const md = el("el-markdown");
    assert((await md.locator("strong", { hasText: "bold" }).count()) >= 1, "markdown renders <strong>bold</strong>");
    assertEq(await md.locator("script").count(), 0, "markdown has no <script>");
    assertEq(await md.locator("[onerror]").count(), 0, "markdown has no element with onerror");

    const table = el("el-table");
    assertEq(await table.locator("tbody tr").count(), 3, "table rows");
    assertEq((await table.locator("thead th").allTextContents()).map((t) => t.trim()), ["name", "qty"], "table header");

    assert((await el("el-chart-line").locator("svg path, svg polyline").count()) >= 1, "the line chart draws a path");
    assert((await el("el-chart-bar").locator("svg rect").count()) >= 3, "the bar chart draws at least 3 bars");

    await waitUntil(
      page,
      "the image to load",
      () => {
        const img = document.querySelector('[data-testid="element"][data-id="el-image"] img');
        return !!img && img.complete && img.naturalWidth > 0;
      },
    );

    assert((await el("el-code").textContent()).includes("fn main"), "the code element shows fn main");

    const boxes = el("el-checklist").locator('input[type="checkbox"]');
    assertEq(await boxes.count(), 2, "checklist checkboxes");
    assertEq(await el("el-checklist").locator('input[type="checkbox"]:checked').count(), 1, "checked checklist items");

    assert((await el("el-link").textContent()).includes("Hearth docs"), "the link card shows its title");

    const video = el("el-video").locator("video");
    assertEq(await video.count(), 1, "the video element has a <video>");
    const src = await video.getAttribute("src");
    assert(src && src.endsWith("/files/clip.mp4"), `the video src ends with /files/clip.mp4 (got ${JSON.stringify(src)})`);

    const progress = el("el-progress").locator("progress");
    assertEq(await progress.count(), 1, "the progress element has a <progress>");
    assertEq(await progress.evaluate((p) => [p.value, p.max]), [40, 100], "progress value and max");

    for (const id of Object.keys(EXPECTED_ELEMENTS)) {
      await el(id).screenshot({ path: path.join(ARTIFACTS, `element-${id}.png`), timeout: TIMEOUT_MS });
    }
    await page.screenshot({ path: path.join(ARTIFACTS, "page-elements.png"), fullPage: true });
  }

  // d. approve
  await step("approve");
  await send(page, "run the approved thing");
  const approvedId = await decide(page, "approved", true);
  await waitForAgentMessage(page, "Ran it.");
  await step("check-approved");

  // e. deny
  await step("deny");
  await send(page, "run the denied thing");
  const deniedId = await decide(page, "denied", false);
  await waitForAgentMessage(page, "Not run.");
  await step("check-denied");

  // f. upload
  await step("upload");
  const notes = path.join(ARTIFACTS, "notes.txt");
  fs.writeFileSync(notes, "attached content 42");
  await page.locator('[data-testid="attach"]').setInputFiles(notes);
  await waitVisible(page.locator('[data-testid="chip"][data-state="ready"]', { hasText: "notes.txt" }), "the notes.txt chip to be uploaded");
  await send(page, "here is a file");
  await waitForAgentMessage(page, "Got the file.");
  await waitVisible(
    page.locator('[data-testid="message"][data-role="user"]', { hasText: "here is a file" }).locator('[data-testid="attachment"]', { hasText: "notes.txt" }),
    "the user message to show the attachment notes.txt",
  );
  await step("check-upload");

  // g. restart of the daemon: nothing lost, nothing doubled
  const before = await messages(page);
  const beforeElements = await elementTypes(page);
  const hellos = Number(await page.locator('[data-testid="conn"]').getAttribute("data-hellos"));
  log(`before the restart: ${before.length} messages, ${beforeElements.length} elements, ${hellos} hello(s)`);
  await installRecorder(page);
  await step("restart");
  await waitUntil(
    page,
    "a new connection after the restart",
    (n) => {
      const c = document.querySelector('[data-testid="conn"]');
      return c.textContent === "connected" && Number(c.dataset.hellos) > n;
    },
    hellos,
  );
  {
    log("conn states during the restart:", JSON.stringify((await recorded(page)).conn));
    const after = await messages(page);
    assertEq(after.map((m) => m.key), before.map((m) => m.key), "message keys after the restart");
    assertEq(after.map((m) => m.text), before.map((m) => m.text), "message texts after the restart");
    assertEq(await page.locator('[data-testid="pending"]').count(), 0, "no message pending after the restart");
    assertEq(await elementTypes(page), beforeElements, "canvas elements after the restart");
    assertEq(beforeElements.length, 10, "10 elements");
    const cards = Object.fromEntries((await confirmations(page)).map((c) => [c.id, c.state]));
    assertEq(cards[approvedId], "approved", "the approved card after the restart");
    assertEq(cards[deniedId], "denied", "the denied card after the restart");
  }

  // h. a reply stored while no browser is connected
  await page.close();
  await step("offline");
  page = await context.newPage();
  watch(page);
  await page.goto(`${BASE}/`);
  assertEq(page.url(), `${BASE}/`, "the session cookie still works");
  await waitConnected(page);
  await waitForAgentMessage(page, "While you were away");
  await page.screenshot({ path: path.join(ARTIFACTS, "page-final.png"), fullPage: true });

  // i. on a phone: the composer's placeholder fits, the bar stays on top,
  // and the pane's heading and first element land below it.
  await page.setViewportSize({ width: 390, height: 844 });
  const phone = await page.evaluate(() => {
    const ta = document.querySelector('[data-testid="composer"]');
    const style = getComputedStyle(ta);
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = `${style.fontSize} ${style.fontFamily}`;
    const needed = ctx.measureText(ta.placeholder).width + parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    const bar = document.querySelector(".topbar");
    const below = (el) => {
      el.scrollIntoView({ block: "start" });
      return el.getBoundingClientRect().top >= bar.getBoundingClientRect().bottom - 1;
    };
    const heading = below(document.getElementById("canvas-heading"));
    const first = below(document.querySelector('[data-testid="canvas"] > *'));
    window.scrollTo(0, document.body.scrollHeight);
    return {
      fits: needed <= ta.clientWidth,
      needed: Math.ceil(needed),
      width: ta.clientWidth,
      heading,
      first,
      barTop: bar.getBoundingClientRect().top,
      row: [...document.querySelector(".composer-row").children]
        .filter((c) => c.offsetParent !== null)
        .map((c) => `${c.className || c.tagName}:${Math.round(c.getBoundingClientRect().width)}`)
        .join(" "),
    };
  });
  log("phone:", JSON.stringify(phone));
  await page.screenshot({ path: path.join(ARTIFACTS, "page-phone.png") });
  assert(phone.fits, `the placeholder needs ${phone.needed}px, the composer has ${phone.width}px`);
  assert(phone.heading, "the canvas heading is hidden under the top bar");
  assert(phone.first, "the first canvas element is hidden under the top bar");
  assertEq(phone.barTop, 0, "the top bar stays at the top when scrolled");

  assertEq(pageErrors, [], "uncaught errors in the page");

  // j. done
  await step("done");
}

run(main, () => ({ browser, page }), "failure.png", log);
