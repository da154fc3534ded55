// The canvas's group view in a real Chromium, driven by tests/groups_browser.rs,
// which starts the daemon with the canvas plugin, three sub-agents in group
// `crew` and a fake model playing the leader and the members. Environment
// and exit codes as in canvas.test.mjs (see harness.mjs).
//
// Sync points: `STEP <name>` on stdout, one line back on stdin (`OK` or
// `FAIL <reason>`):
//   login         nothing to do
//   mission       the test gives crew its mission; the leader plans
//   check-reason  the test checks the leader's next planning request
//                 carries the reason this script gave with its denial
//   done          the end
//
// The group view is found by role and accessible name where it has one
// (tabs, cards, the comms log, the reason box), by data-testid otherwise;
// plugins/canvas/ui/app.js documents both.

import path from "node:path";
import { ARTIFACTS, LOGIN, assert, assertEq, launch, run, stepper, waiters } from "./harness.mjs";

const TIMEOUT_MS = 30_000;
const STEP_ANSWER_TIMEOUT_MS = 120_000;
const REASON = "split the backend from the frontend first";

console.log = console.error;
const log = (...args) => console.error("[groups.test]", ...args);
const step = stepper(log, STEP_ANSWER_TIMEOUT_MS);
const { waitUntil, waitVisible } = waiters(TIMEOUT_MS);

async function waitConnected(page) {
  await waitUntil(page, 'conn to show "connected"', () => document.querySelector('[data-testid="conn"]')?.textContent === "connected");
}

const groupView = (page) => page.getByRole("tabpanel", { name: "Groups" }).getByRole("article", { name: "crew" });

/** The group view as data: status, members, deliverables, posts. */
async function snapshot(page) {
  return page.evaluate(() => {
    const g = document.querySelector('[data-testid="group"]');
    if (!g) return null;
    const text = (el, id) => el.querySelector(`[data-testid="${id}"]`)?.textContent ?? null;
    return {
      name: g.dataset.name,
      status: g.dataset.status,
      mission: text(g, "mission"),
      summary: g.querySelector('[data-testid="summary"]')?.closest("section")?.hidden ? null : text(g, "summary"),
      members: [...g.querySelectorAll('[data-testid="member"]')].map((m) => ({
        name: m.dataset.name,
        state: m.dataset.state,
        leader: m.dataset.leader === "true",
        label: m.getAttribute("aria-label"),
      })),
      deliverables: [...g.querySelectorAll('[data-testid="deliverable"]')].map((d) => ({
        id: d.dataset.id,
        status: d.dataset.status,
        title: text(d, "title"),
        assignee: text(d, "assignee"),
        after: d.querySelector('[data-testid="after"]').hidden ? "" : text(d, "after"),
      })),
      posts: [...g.querySelectorAll('[data-testid="post"]')].map((p) => ({ kind: p.dataset.kind, who: p.dataset.who, text: text(p, "text") })),
    };
  });
}

// Records, from inside the page, every status each deliverable, member and
// the group take and the comms log's length, so short states are not
// missed by polling.
async function installRecorder(page) {
  await page.evaluate(() => {
    const rec = { deliverables: {}, members: {}, group: [], posts: [] };
    window.groupRecorder = rec;
    const push = (list, v) => {
      if (list[list.length - 1] !== v) list.push(v);
    };
    const look = () => {
      for (const d of document.querySelectorAll('[data-testid="deliverable"]')) push((rec.deliverables[d.dataset.id] ||= []), d.dataset.status);
      for (const m of document.querySelectorAll('[data-testid="member"]')) push((rec.members[m.dataset.name] ||= []), m.dataset.state);
      const g = document.querySelector('[data-testid="group"]');
      if (g) push(rec.group, g.dataset.status);
      push(rec.posts, document.querySelectorAll('[data-testid="post"]').length);
    };
    new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    look();
  });
}

/** The pending card of the group's plan, once it shows; checks the plan on it. */
async function planCard(page, notId) {
  const card = page.getByRole("group", { name: "Approval needed: group plan" });
  await waitUntil(
    page,
    "a pending group plan card",
    (old) => [...document.querySelectorAll('[data-testid="confirmation"][data-state="pending"]')].some((c) => c.dataset.id !== old && c.querySelector('[data-testid="tool"]')?.textContent === "group plan"),
    notId || "",
  );
  const id = await card.getAttribute("data-id");
  assertEq(await card.getByTestId("plan-group").textContent(), "crew", "the card names the group");
  assertEq(await card.getByTestId("plan-summary").textContent(), "Build the thing", "the card shows the plan's summary");
  const lines = await card.getByTestId("plan-deliverable").allTextContents();
  log("plan lines:", JSON.stringify(lines));
  assertEq(lines.length, 4, "four planned deliverables");
  assert(lines[0].includes("D1") && lines[0].includes("Design") && lines[0].includes("ada") && !lines[0].includes("after"), `D1 line: ${lines[0]}`);
  assert(lines[1].includes("Backend") && lines[1].includes("bob") && lines[1].includes("after D1"), `D2 line: ${lines[1]}`);
  assert(lines[3].includes("Ship") && lines[3].includes("after D2, D3"), `D4 line: ${lines[3]}`);
  assertEq(await card.getByTestId("always").count(), 0, "a plan card offers no Always allow");
  return { id, card };
}

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
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 1500 } });
  context.setDefaultTimeout(TIMEOUT_MS);
  page = await context.newPage();
  watch(page);

  // a. the group is known from hello: the Groups tab shows, the view opens.
  await step("login");
  await page.goto(LOGIN);
  await waitConnected(page);
  const groupsTab = page.getByRole("tab", { name: /Groups/ });
  await waitVisible(groupsTab, "the Groups tab");
  assertEq(await page.getByRole("tab", { name: "Canvas" }).getAttribute("aria-selected"), "true", "the canvas is the open tab at first");
  await groupsTab.click();
  assertEq(await groupsTab.getAttribute("aria-selected"), "true", "the Groups tab is selected");
  await waitVisible(groupView(page), "the view of crew");
  {
    const picks = await page.getByTestId("group-pick").evaluateAll((els) => els.map((e) => [e.getAttribute("aria-label"), e.getAttribute("aria-pressed")]));
    assertEq(picks, [["crew: idle", "true"], ["spare: idle", "false"]], "the groups listed with their status, crew shown");
    await page.getByRole("button", { name: "spare: idle" }).click();
    await waitVisible(page.getByRole("tabpanel", { name: "Groups" }).getByRole("article", { name: "spare" }), "the view of spare");
    assertEq((await snapshot(page)).members, [], "spare has no members");
    await page.getByRole("button", { name: "crew: idle" }).click();
    await waitVisible(groupView(page), "the view of crew again");
    const g = await snapshot(page);
    assertEq(g.status, "idle", "a new group is idle");
    assertEq(g.members.map((m) => [m.name, m.leader]), [["ada", true], ["bob", false], ["cyd", false]], "members, ada leading");
    assertEq(await page.getByRole("listitem", { name: "ada, leader: idle" }).count(), 1, "the leader's accessible name");
  }

  // b. the plan card; it survives a reload while it waits.
  await step("mission");
  let first = await planCard(page);
  await waitUntil(page, "the group to wait for approval", () => document.querySelector('[data-testid="group"]')?.dataset.status === "awaiting-approval");
  {
    const g = await snapshot(page);
    assertEq(g.mission, "Build the thing", "the mission");
    assertEq(g.deliverables.map((d) => [d.id, d.status, d.assignee, d.after]), [
      ["D1", "planned", "ada", ""],
      ["D2", "planned", "bob", "after D1"],
      ["D3", "planned", "cyd", "after D1"],
      ["D4", "planned", "ada", "after D2, D3"],
    ], "the planned deliverables in the group view");
  }
  await page.reload();
  await waitConnected(page);
  first = await planCard(page);
  await installRecorder(page);

  // c. deny with a reason: the leader plans again.
  const reasonBox = first.card.getByRole("textbox", { name: /Why send it back/ });
  await reasonBox.fill(REASON);
  await first.card.getByRole("button", { name: "Deny" }).click();
  await waitVisible(page.locator(`[data-testid="confirmation"][data-id="${first.id}"][data-state="denied"]`), "the first card to turn denied");
  await step("check-reason");
  const second = await planCard(page, first.id);
  assert(second.id !== first.id, "the second plan has its own card");
  await page.evaluate(() => (window.notReloaded = true));
  const helloCount = await page.locator('[data-testid="conn"]').getAttribute("data-hellos");

  // d. approve: the mission runs, live.
  await page.evaluate(() => (window.firstDeliverable = document.querySelector('[data-testid="deliverable"][data-id="D1"]')));
  await second.card.getByRole("button", { name: "Approve" }).click();
  await waitVisible(page.locator(`[data-testid="confirmation"][data-id="${second.id}"][data-state="approved"]`), "the second card to turn approved");
  await waitUntil(page, "a deliverable to run", () => !!document.querySelector('[data-testid="deliverable"][data-status="running"]'));
  await groupView(page).screenshot({ path: path.join(ARTIFACTS, "group-view-running.png") });
  await waitUntil(page, "a member at work", () => !!document.querySelector('[data-testid="member"][data-state="working"]'));
  await waitUntil(page, "the group to complete", () => document.querySelector('[data-testid="group"]')?.dataset.status === "complete");
  const done = await snapshot(page);
  {
    const rec = await page.evaluate(() => window.groupRecorder);
    log("recorded:", JSON.stringify(rec));
    assertEq(done.summary, "SUMMARY: the mission is done.", "the leader's summary");
    assertEq(await page.getByRole("button", { name: "crew: complete" }).getAttribute("aria-pressed"), "true", "the list shows crew complete");
    assertEq(done.deliverables.map((d) => d.status), ["complete", "complete", "complete", "complete"], "every deliverable complete");
    for (const id of ["D1", "D2", "D3", "D4"]) {
      const seen = rec.deliverables[id] || [];
      const running = seen.indexOf("running");
      assert(running >= 0, `${id} was seen running: ${JSON.stringify(seen)}`);
      assert(seen.indexOf("complete", running) > running, `${id} went running → complete: ${JSON.stringify(seen)}`);
    }
    for (const name of ["ada", "bob", "cyd"]) {
      assert((rec.members[name] || []).includes("working"), `${name} was seen working: ${JSON.stringify(rec.members[name])}`);
    }
    assert(rec.group.includes("executing") && rec.group[rec.group.length - 1] === "complete", `the group went executing → complete: ${JSON.stringify(rec.group)}`);
    const counts = rec.posts;
    assert(counts.length > 4 && counts[counts.length - 1] > counts[0], `the comms log grew live: ${JSON.stringify(counts)}`);
    const log_ = page.getByRole("log", { name: "Comms log" });
    assert((await log_.getByText("on D2").count()) > 0, "bob's status report is in the comms log");
    assert(done.posts.some((p) => p.kind === "complete" && p.who === "bob" && p.text.includes("result of D2 <img")), "bob's complete post shows its markup as text");
    assertEq(await page.evaluate(() => document.querySelectorAll('[data-testid="group"] img').length), 0, "no image made from an agent's words");
    assertEq(await page.evaluate(() => window.pwned === undefined), true, "no script ran from an agent's words");
    // Updated in place: no reload, no new hello, the same node for D1.
    assertEq(await page.evaluate(() => window.notReloaded === true), true, "the page was not reloaded");
    assertEq(await page.locator('[data-testid="conn"]').getAttribute("data-hellos"), helloCount, "no new hello during the run");
    assertEq(await page.evaluate(() => window.firstDeliverable.isConnected && window.firstDeliverable.dataset.status), "complete", "D1's node was updated in place");
    assertEq(await page.getByRole("listitem", { name: /^D4 Ship, ada: complete, after D2, D3$/ }).count(), 1, "D4's accessible name");
  }
  await groupView(page).screenshot({ path: path.join(ARTIFACTS, "group-view.png") });
  await page.screenshot({ path: path.join(ARTIFACTS, "page-groups.png"), fullPage: true });

  // e. a reload shows the same (from hello), the Groups tab still open.
  await page.reload();
  await waitConnected(page);
  await waitVisible(groupView(page), "the view of crew after a reload");
  assertEq(await groupsTab.getAttribute("aria-selected"), "true", "the Groups tab is still open after a reload");
  const again = await snapshot(page);
  assertEq(again, done, "the group view after a reload");
  const cards = await page.$$eval('[data-testid="confirmation"]', (els) => els.map((e) => [e.dataset.id, e.dataset.state]));
  assertEq(cards, [[first.id, "denied"], [second.id, "approved"]], "both plan cards, decided, after a reload");

  assertEq(pageErrors, [], "uncaught errors in the page");
  await step("done");
}

run(main, () => ({ browser, page }), "groups-failure.png", log);
