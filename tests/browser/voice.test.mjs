// The canvas's record button in a real Chromium whose microphone is a fake
// device playing a WAV of real speech (espeak-ng, made by the Rust side):
// record, stop, send, see the agent's answer, then reload and see what the
// recording said (the host's transcript, from the history).
//
//   HEARTH_CANVAS_LOGIN, HEARTH_CANVAS_BASE, HEARTH_ARTIFACTS, CHROMIUM
//                        as for canvas.test.mjs (harness.mjs)
//   HEARTH_FAKE_AUDIO    the WAV the fake microphone plays
//   HEARTH_TRANSCRIPT    what the fake transcription endpoint answers
//   HEARTH_REPLY         what the fake model answers
//
// Exit code 0 is a pass; on a failure the error goes to stderr and
// `voice-failure.png` to HEARTH_ARTIFACTS.

import { LOGIN, env, launch, run } from "./harness.mjs";

const TIMEOUT_MS = 20_000;
const AUDIO = env("HEARTH_FAKE_AUDIO");
const TRANSCRIPT = env("HEARTH_TRANSCRIPT");
const REPLY = env("HEARTH_REPLY");

console.log = console.error;
const log = (...args) => console.error("[voice.test]", ...args);

let browser;
let page;

async function waitUntil(what, fn, arg) {
  try {
    return await page.waitForFunction(fn, arg, { timeout: TIMEOUT_MS, polling: 50 });
  } catch (e) {
    throw new Error(`timed out after ${TIMEOUT_MS} ms waiting for ${what}: ${e.message.split("\n")[0]}`);
  }
}

async function main() {
  browser = await launch([
    "--use-fake-device-for-media-stream",
    "--use-fake-ui-for-media-stream",
    `--use-file-for-fake-audio-capture=${AUDIO}`,
  ]);
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  context.setDefaultTimeout(TIMEOUT_MS);
  await context.grantPermissions(["microphone"]);
  page = await context.newPage();
  page.on("pageerror", (e) => log("page error:", e.message));
  await page.goto(LOGIN);
  await waitUntil("the connection", () => document.querySelector('[data-testid="conn"]')?.textContent === "connected");

  const record = page.locator('[data-testid="record"]');
  if (await record.isDisabled()) throw new Error(`the record button is disabled: ${await record.getAttribute("title")}`);
  await record.click();
  await waitUntil("recording to start", () => document.querySelector('[data-testid="record"]').dataset.state === "recording");
  await page.waitForTimeout(2500);
  await record.click();
  await waitUntil("recording to stop", () => document.querySelector('[data-testid="record"]').dataset.state === "idle");
  await waitUntil("the recording uploaded", () => document.querySelector('[data-testid="chip"]')?.dataset.state === "ready");
  const chip = await page.locator('[data-testid="chip"] .chip-name').textContent();
  if (!/^voice-\d{14}\.webm$/.test(chip)) throw new Error(`the chip names the recording: ${chip}`);
  await page.locator('[data-testid="send"]').click();
  await waitUntil(
    "the agent's answer",
    (reply) => [...document.querySelectorAll('[data-testid="message"][data-role="agent"]')].some((m) => m.textContent.includes(reply)),
    REPLY,
  );

  // A fresh page shows the history, with what the recording said.
  await page.reload();
  await waitUntil(
    "the transcript under the recording",
    (said) => [...document.querySelectorAll('[data-testid="message"][data-role="user"] [data-testid="transcript"]')].some((t) => t.textContent.includes(said)),
    TRANSCRIPT,
  );
  const players = await page.locator('[data-testid="message"][data-role="user"] audio').count();
  if (players !== 1) throw new Error(`one audio player for the recording, got ${players}`);
}

run(main, () => ({ browser, page }), "voice-failure.png", log);
