/*
 * hearth canvas: the browser side of docs/canvas.md. Plain ES2020, no build
 * step, no framework. Runs under the plugin's CSP: no inline scripts, no
 * style attributes (CSSOM `el.style.x` only), no eval.
 *
 * DOM contract (tests/browser/canvas.test.mjs relies on it; keep it stable):
 *
 *   [data-testid="conn"]          connection; text "connected", "reconnecting…"
 *                                 or "offline"; data-state "connected",
 *                                 "reconnecting" or "offline". "connected"
 *                                 means the socket is open and `hello` arrived;
 *                                 data-hellos counts the hellos this page got
 *   [data-testid="agent"]         text and data-state "idle" or "busy";
 *                                 data-connected "true"/"false" (Status.connected)
 *   [data-testid="model"]         the model name, "—" when unknown
 *   [data-testid="working"]       the other agents and workers running a turn
 *                                 (Status.working), comma-separated; hidden
 *                                 when none
 *   [data-testid="messages"]      the chat list (role=log, aria-live=polite):
 *                                 stored messages and confirmation cards sorted
 *                                 by at_ms (then key), then streaming bubbles,
 *                                 then own messages not stored yet
 *   [data-testid="message"]       a stored message; data-key, data-role
 *                                 ("user"/"agent"), data-id (Message.id, when set)
 *   [data-testid="text"]          inside a message or pending message: its text
 *                                 (agent messages: the server's sanitized html)
 *   [data-testid="attachment"]    an attachment (a link; a thumbnail for images)
 *                                 inside a message or pending message; audio
 *                                 gets a player beside it
 *   [data-testid="transcript"]    what a voice message says, once the host
 *                                 transcribed it (from the history)
 *   [data-testid="pending"]       an own message the server has not echoed yet;
 *                                 data-id (the client id), data-state "sending",
 *                                 "sent" (acked, echo not seen yet) or "failed"
 *   [data-testid="streaming"]     the reply being generated; data-turn; its
 *                                 textContent is exactly the streamed text
 *   [data-testid="tool-output"]   the live output of a tool call still running in
 *                                 a turn (a <details>, open until the owner closes
 *                                 it): data-call, data-turn, data-tool, data-state
 *                                 "running", "ok", "error" or "cancelled"; inside,
 *                                 [data-testid="output"] holds the text so far (its
 *                                 end, skipped bytes marked); shown after the stored
 *                                 messages, gone when the turn's reply arrives
 *   [data-testid="confirmation"]  a confirmation card; data-id, data-state
 *                                 ("pending"/"approved"/"denied"/"expired"/
 *                                 "withdrawn": expired because the owner stopped
 *                                 the turn, or whoever asked went away);
 *                                 [data-testid="approve"] and [data-testid="deny"]
 *                                 buttons exist only while pending, with
 *                                 [data-testid="always"] (approve, and allow this
 *                                 exact call from now on); inside:
 *                                 [data-testid="tool"], "command" (when set),
 *                                 "cwd" and "mode" (when set),
 *                                 "args" (pretty JSON), "reason", "fingerprint",
 *                                 "countdown" (while pending), "outcome" (after).
 *                                 A card whose tool is "group plan" shows the
 *                                 plan instead of the command: [data-testid=
 *                                 "plan"] with "plan-group", "plan-summary" and
 *                                 one "plan-deliverable" (data-id) a line; the
 *                                 args JSON in a closed <details>; no "always";
 *                                 while pending a [data-testid="deny-reason"]
 *                                 text box (named "Why send it back? …") whose
 *                                 text Deny sends as the frame's `reason`
 *   [data-testid="composer"]      the textarea
 *   [data-testid="send"]          the send button (disabled while uploading)
 *   [data-testid="stop"]          sends /stop; shown only while the agent is busy
 *   [data-testid="attach"]        the file input (multiple)
 *   [data-testid="record"]        the record button; data-state "idle" or
 *                                 "recording"; a stopped recording becomes a chip
 *   [data-testid="chip"]          an attachment in the composer; data-state
 *                                 "uploading", "ready" or "failed"
 *   [data-testid="upcoming"]      the scheduler's next jobs, soonest first (the
 *                                 list's section is hidden when there are none)
 *   [data-testid="job"]           one of them; data-id, data-kind ("reminder"/
 *                                 "task"); inside: [data-testid="when"] (its next
 *                                 run in the owner's zone) and "text"
 *   [data-testid="tab-canvas"]    the side pane's tabs (role=tab "Canvas" and
 *   [data-testid="tab-groups"]    "Groups"), shown once a group is known; the
 *                                 open tab is kept per browser tab
 *   [data-testid="groups"]        the groups panel (role=tabpanel "Groups")
 *   [data-testid="group-pick"]    a group to show: a button, data-name,
 *                                 aria-pressed, named "NAME: STATUS"
 *   [data-testid="group"]         the shown group (role=article, named by the
 *                                 group): data-name, data-status; inside:
 *                                 "group-name", "group-status", "mission",
 *                                 "plan-summary", "plan-errors", "summary" (its
 *                                 section hidden until the leader's summary);
 *                                 "members": [data-testid="member"] (data-name,
 *                                 data-state, data-leader; named "NAME[, leader]:
 *                                 STATE[, PROGRESS]") with "name", "leader",
 *                                 "state", "progress"; "deliverables":
 *                                 [data-testid="deliverable"] (data-id,
 *                                 data-status; named "ID TITLE, ASSIGNEE: STATUS
 *                                 [, after IDS]") with "id", "title", "assignee",
 *                                 "status", "after"; "comms" (role=log "Comms
 *                                 log", oldest first): [data-testid="post"]
 *                                 (data-kind, data-who: "hearth" for its own)
 *                                 with "text". Updated in place, node by node
 *   [data-testid="live"]          the live view of the agent's browser tab,
 *                                 hidden until a view was shown; data-state
 *                                 "live" or "closed" (the browser stopped),
 *                                 data-seq the newest frame's number;
 *                                 inside: "live-state", "live-title",
 *                                 "live-url", [data-testid="live-frame"] (the
 *                                 newest frame, an <img> with data-seq; a
 *                                 click, the wheel and keys on it go to the
 *                                 page), "live-address" and "live-go" (open an
 *                                 address in a new tab), "live-back"
 *   [data-testid="canvas"]        the canvas pane's element list, oldest first
 *   [data-testid="element"]       a canvas element; data-id, data-type (the
 *                                 element's type as sent, also when unsupported);
 *                                 code elements have a [data-testid="copy"] button
 */
"use strict";

(() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const PING_MS = 15000;
  const DEAD_MS = 45000;
  const CONNECT_TIMEOUT_MS = 10000;
  const BACKOFF_START_MS = 250;
  const BACKOFF_CAP_MS = 5000;
  const LOGIN_CHECK_AFTER = 3;
  const OFFLINE_AFTER = 5;
  const PENDING_STORE = "hearth.canvas.pending";
  const PANE_STORE = "hearth.canvas.pane";
  const MAX_REASON_CHARS = 2000;
  const MAX_OUTPUT_CHARS = 64 * 1024;
  const VIDEO_EXT = /\.(mp4|m4v|webm|ogv|ogg|mov)$/i;

  function h(tag, attrs, ...children) {
    return build(document.createElement(tag), attrs, children);
  }

  function s(tag, attrs, ...children) {
    return build(document.createElementNS(SVG_NS, tag), attrs, children);
  }

  function build(el, attrs, children) {
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") el.setAttribute("class", v);
        else if (k === "text") el.textContent = v;
        else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
        else el.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : String(c));
    }
    return el;
  }

  const ui = {};

  const state = {
    messages: new Map(),
    confirmations: new Map(),
    elements: [],
    streaming: new Map(),
    outputs: new Map(),
    answered: new Set(),
    pending: loadPending(),
    answers: new Map(),
    reasons: new Map(),
    groups: new Map(),
    pane: loadPane(),
    status: { agent: "idle", model: null, working: [], connected: true },
    chips: [],
  };

  const conn = {
    ws: null,
    opened: false,
    ready: false,
    attempts: 0,
    failures: 0,
    retryTimer: null,
    openTimer: null,
    lastFrame: 0,
    hellos: 0,
  };

  const collator = new Intl.Collator("en", { numeric: true });
  const timeFmt = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  const dateTimeFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

  /* ---------- ids, urls, formatting ---------- */

  function newId() {
    if (window.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  function safeUrl(u, image) {
    if (typeof u !== "string" || !u) return null;
    if (image && /^data:image\/(png|jpeg|gif|webp)[;,]/i.test(u)) return u;
    if (u.startsWith("/") && !u.startsWith("//")) return u;
    let p;
    try {
      p = new URL(u, location.href);
    } catch {
      return null;
    }
    return p.protocol === "http:" || p.protocol === "https:" ? p.href : null;
  }

  function isSameOrigin(u) {
    try {
      return new URL(u, location.href).origin === location.origin;
    } catch {
      return false;
    }
  }

  function hostOf(u) {
    try {
      return new URL(u, location.href).host;
    } catch {
      return "";
    }
  }

  function fmtSize(n) {
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return "";
    if (n < 1024) return `${n} B`;
    const units = ["KB", "MB", "GB"];
    let v = n / 1024;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
  }

  function fmtTime(ms) {
    const d = new Date(ms);
    return Number.isNaN(d.getTime()) ? "" : timeFmt.format(d);
  }

  function fmtFull(ms) {
    const d = new Date(ms);
    return Number.isNaN(d.getTime()) ? "" : dateTimeFmt.format(d);
  }

  function fmtCountdown(ms) {
    if (ms <= 0) return "time is up";
    const t = Math.ceil(ms / 1000);
    const m = Math.floor(t / 60);
    const sec = String(t % 60).padStart(2, "0");
    return `expires in ${m}:${sec}`;
  }

  function cellText(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function num(v) {
    if (typeof v === "number") return v;
    if (typeof v === "string" && v.trim() !== "") return Number(v);
    return NaN;
  }

  function sameJson(a, b) {
    return a === b || JSON.stringify(a) === JSON.stringify(b);
  }

  /* ---------- toasts ---------- */

  function toast(text, kind) {
    const t = h("div", { class: `toast ${kind || "error"}`, role: kind === "info" ? "status" : "alert", text });
    ui.toasts.append(t);
    setTimeout(() => t.remove(), 6000);
  }

  /* ---------- pending sends (kept per tab across reloads) ---------- */

  function loadPending() {
    try {
      const v = JSON.parse(sessionStorage.getItem(PENDING_STORE) || "[]");
      return Array.isArray(v) ? v.filter((p) => p && typeof p.id === "string") : [];
    } catch {
      return [];
    }
  }

  function savePending() {
    try {
      if (state.pending.length) sessionStorage.setItem(PENDING_STORE, JSON.stringify(state.pending));
      else sessionStorage.removeItem(PENDING_STORE);
    } catch {
      /* storage full or disabled: the pending list still lives in memory */
    }
  }

  /* The side pane's open tab and chosen group, kept per tab across reloads. */
  function loadPane() {
    try {
      const v = JSON.parse(sessionStorage.getItem(PANE_STORE) || "{}");
      return { tab: v && v.tab === "groups" ? "groups" : "canvas", group: v && typeof v.group === "string" ? v.group : null };
    } catch {
      return { tab: "canvas", group: null };
    }
  }

  function savePane() {
    try {
      sessionStorage.setItem(PANE_STORE, JSON.stringify(state.pane));
    } catch {
      /* storage full or disabled: the choice lasts until the reload */
    }
  }

  function storedIds() {
    const ids = new Set();
    for (const m of state.messages.values()) if (m.role === "user" && m.id) ids.add(m.id);
    return ids;
  }

  /* ---------- the socket ---------- */

  function wsUrl() {
    return (location.protocol === "https:" ? "wss" : "ws") + "://" + location.host + "/ws";
  }

  function connect() {
    clearTimeout(conn.retryTimer);
    conn.retryTimer = null;
    if (conn.ws) return;
    let ws;
    try {
      ws = new WebSocket(wsUrl());
    } catch {
      lost(null, 1006);
      return;
    }
    conn.ws = ws;
    conn.opened = false;
    conn.ready = false;
    renderConn();
    conn.openTimer = setTimeout(() => {
      if (conn.ws === ws && !conn.opened) lost(ws, 1006);
    }, CONNECT_TIMEOUT_MS);
    ws.addEventListener("open", () => {
      if (conn.ws !== ws) return;
      conn.opened = true;
      conn.lastFrame = Date.now();
      clearTimeout(conn.openTimer);
    });
    ws.addEventListener("message", (ev) => {
      if (conn.ws !== ws) return;
      conn.lastFrame = Date.now();
      onFrame(ev.data);
    });
    ws.addEventListener("close", (ev) => {
      if (conn.ws === ws) lost(ws, ev.code);
    });
  }

  function lost(ws, code) {
    clearTimeout(conn.openTimer);
    const wasReady = conn.ready;
    conn.ws = null;
    conn.opened = false;
    conn.ready = false;
    if (ws) {
      try {
        ws.close();
      } catch {
        /* already closed */
      }
    }
    if (code === 4401) {
      goLogin();
      return;
    }
    conn.failures = wasReady ? 0 : conn.failures + 1;
    if (conn.failures >= LOGIN_CHECK_AFTER) checkSession();
    const base = Math.min(BACKOFF_CAP_MS, BACKOFF_START_MS * 2 ** conn.attempts);
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    conn.attempts = Math.min(conn.attempts + 1, 16);
    conn.retryTimer = setTimeout(connect, delay);
    renderConn();
  }

  function reconnectNow() {
    if (conn.ws) return;
    conn.attempts = 0;
    connect();
  }

  async function checkSession() {
    try {
      const res = await fetch("/", { redirect: "manual", cache: "no-store", credentials: "same-origin" });
      if (res.type === "opaqueredirect" || res.status === 401) goLogin();
    } catch {
      /* the server is down: keep retrying */
    }
  }

  function goLogin() {
    clearTimeout(conn.retryTimer);
    location.assign("/login");
  }

  function sendFrame(frame) {
    if (!conn.ws || !conn.ready || conn.ws.readyState !== WebSocket.OPEN) return false;
    conn.ws.send(JSON.stringify(frame));
    return true;
  }

  setInterval(() => {
    if (conn.ws && conn.ready) sendFrame({ type: "ping" });
  }, PING_MS);

  setInterval(() => {
    if (conn.ws && conn.opened && Date.now() - conn.lastFrame > DEAD_MS) lost(conn.ws, 1006);
  }, 5000);

  window.addEventListener("online", reconnectNow);
  window.addEventListener("offline", renderConn);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") reconnectNow();
  });

  /* ---------- frames ---------- */

  function onFrame(data) {
    if (typeof data !== "string") return;
    let f;
    try {
      f = JSON.parse(data);
    } catch {
      return;
    }
    if (!f || typeof f !== "object") return;
    switch (f.type) {
      case "hello":
        onHello(f);
        break;
      case "ack":
        onAck(f.id);
        break;
      case "message":
        onMessage(f.message);
        break;
      case "delta":
        onDelta(f.turn, f.text);
        break;
      case "tool_output":
        onToolOutput(f);
        break;
      case "delta_reset":
        state.answered.delete(f.turn);
        if (state.streaming.has(f.turn)) state.streaming.set(f.turn, "");
        scheduleChat();
        break;
      case "status":
        onStatus(f);
        break;
      case "canvas":
        onCanvas(f);
        break;
      case "confirmation":
        onConfirmation(f.confirmation);
        break;
      case "schedule":
        renderUpcoming(f.jobs);
        break;
      case "group":
        onGroup(f.group);
        break;
      case "view":
        onView(f);
        break;
      case "error":
        onError(f);
        break;
      default:
        break;
    }
  }

  function onHello(f) {
    state.messages = new Map();
    for (const m of Array.isArray(f.history) ? f.history : []) {
      if (m && m.key !== undefined) state.messages.set(String(m.key), m);
    }
    state.confirmations = new Map();
    for (const c of Array.isArray(f.confirmations) ? f.confirmations : []) {
      if (c && c.id !== undefined) state.confirmations.set(String(c.id), c);
    }
    for (const id of state.answers.keys()) {
      const c = state.confirmations.get(id);
      if (!c || c.state !== "pending") state.answers.delete(id);
    }
    state.elements = (Array.isArray(f.canvas) ? f.canvas : []).filter((e) => e && e.id !== undefined);
    state.streaming.clear();
    state.outputs = new Map();
    state.answered = new Set();
    for (const m of state.messages.values()) if (m.role === "agent" && m.id) state.answered.add(m.id);
    for (const s of Array.isArray(f.streaming) ? f.streaming : []) {
      if (s && typeof s.turn === "string" && typeof s.text === "string" && !state.answered.has(s.turn)) {
        state.streaming.set(s.turn, s.text);
      }
    }
    for (const o of Array.isArray(f.tool_output) ? f.tool_output : []) if (o) onToolOutput(o);
    state.status = { agent: "idle", model: null, working: [], connected: true };
    onStatus(f.status || {});
    renderUpcoming(f.schedule);
    if (f.view) onView(f.view);
    state.groups = new Map();
    for (const g of Array.isArray(f.groups) ? f.groups : []) if (g && typeof g.name === "string") state.groups.set(g.name, g);

    conn.ready = true;
    conn.hellos++;
    ui.conn.dataset.hellos = String(conn.hellos);
    conn.failures = 0;
    conn.attempts = 0;
    renderConn();

    const stored = storedIds();
    state.pending = state.pending.filter((p) => !stored.has(p.id) && p.state !== "sent");
    for (const p of state.pending) if (p.state === "sending") transmit(p);
    savePending();
    for (const [id, a] of state.answers) sendFrame({ type: "confirm", id, ...a });

    stickChat = true;
    renderChat();
    renderCanvas(null);
    renderGroups();
  }

  function onAck(id) {
    const p = state.pending.find((x) => x.id === id);
    if (!p) return;
    p.state = "sent";
    savePending();
    scheduleChat();
  }

  function onMessage(m) {
    if (!m || m.key === undefined) return;
    state.messages.set(String(m.key), m);
    if (m.role === "user" && m.id) {
      const before = state.pending.length;
      state.pending = state.pending.filter((p) => p.id !== m.id);
      if (state.pending.length !== before) savePending();
    }
    if (m.role === "agent" && m.id) {
      state.streaming.delete(m.id);
      state.answered.add(m.id);
      for (const [key, o] of state.outputs) if (o.turn === m.id) state.outputs.delete(key);
    }
    scheduleChat();
  }

  function skipMarker(bytes) {
    return `\n[… ${bytes} bytes not shown …]\n`;
  }

  function onToolOutput(f) {
    if (typeof f.turn !== "string" || typeof f.call !== "string" || state.answered.has(f.turn)) return;
    const key = `${f.turn}\u0000${f.call}`;
    let o = state.outputs.get(key);
    if (!o) {
      o = { turn: f.turn, call: f.call, tool: String(f.tool || "tool"), command: typeof f.command === "string" ? f.command : null, text: "", ended: null };
      state.outputs.set(key, o);
    }
    const skipped = Number(f.skipped) || 0;
    if (skipped > 0) o.text += skipMarker(skipped);
    if (typeof f.text === "string") o.text += f.text;
    if (o.text.length > MAX_OUTPUT_CHARS) o.text = o.text.slice(o.text.length - MAX_OUTPUT_CHARS);
    if (typeof f.ended === "string") o.ended = f.ended;
    scheduleChat();
  }

  function onDelta(turn, text) {
    if (typeof turn !== "string" || typeof text !== "string" || state.answered.has(turn)) return;
    state.streaming.set(turn, (state.streaming.get(turn) || "") + text);
    scheduleChat();
  }

  function onStatus(f) {
    if (f.agent === "idle" || f.agent === "busy") state.status.agent = f.agent;
    if ("model" in f) state.status.model = typeof f.model === "string" && f.model ? f.model : null;
    if (typeof f.connected === "boolean") state.status.connected = f.connected;
    if (Array.isArray(f.working)) state.status.working = f.working.filter((w) => typeof w === "string");
    if (state.status.agent === "idle" && (state.streaming.size || state.outputs.size)) {
      state.streaming.clear();
      state.outputs.clear();
      scheduleChat();
    }
    renderStatus();
  }

  function onCanvas(f) {
    if (f.op === "show" && f.element && f.element.id !== undefined) {
      const i = state.elements.findIndex((e) => e.id === f.element.id);
      if (i >= 0) state.elements[i] = f.element;
      else state.elements.push(f.element);
      renderCanvas(f.element.id);
      if (!ui.canvasPanel.hidden) return;
      ui.tabCanvas.classList.add("fresh");
    } else if (f.op === "remove") {
      state.elements = state.elements.filter((e) => e.id !== f.id);
      renderCanvas(null);
    } else if (f.op === "clear") {
      state.elements = [];
      renderCanvas(null);
    }
  }

  function onConfirmation(c) {
    if (!c || c.id === undefined) return;
    const id = String(c.id);
    const known = state.confirmations.get(id);
    state.confirmations.set(id, known ? { ...known, ...c } : c);
    if (c.state !== "pending") {
      state.answers.delete(id);
      state.reasons.delete(id);
    }
    scheduleChat();
  }

  function onGroup(g) {
    if (!g || typeof g.name !== "string") return;
    // A renamed group comes under its new name, with the same id.
    for (const [name, old] of state.groups) if (old.id && old.id === g.id && name !== g.name) state.groups.delete(name);
    state.groups.set(g.name, g);
    renderGroups();
  }

  function onError(f) {
    const msg = typeof f.message === "string" ? f.message : "refused";
    const p = f.id ? state.pending.find((x) => x.id === f.id) : null;
    if (p) {
      p.state = "failed";
      p.error = msg;
      savePending();
      scheduleChat();
      return;
    }
    if (f.id && state.answers.has(String(f.id))) {
      state.answers.delete(String(f.id));
      scheduleChat();
      toast(`The answer was refused: ${msg}`);
      return;
    }
    if (!f.id && state.answers.size) {
      state.answers.clear();
      scheduleChat();
    }
    toast(msg);
  }

  /* ---------- sending ---------- */

  function transmit(p) {
    const frame = { type: "send", id: p.id, text: p.text };
    if (p.attachments && p.attachments.length) frame.attachments = p.attachments.map((a) => a.id);
    sendFrame(frame);
  }

  function uploading() {
    return state.chips.some((c) => c.state === "uploading");
  }

  function submit() {
    if (uploading()) {
      toast("Wait for the uploads to finish.", "info");
      return;
    }
    const text = ui.composer.value.replace(/\s+$/, "").replace(/^\s*\n/, "");
    const attachments = state.chips.filter((c) => c.state === "ready").map((c) => c.attachment);
    if (!text && !attachments.length) return;
    const p = { id: newId(), text, attachments, at_ms: Date.now(), state: "sending" };
    state.pending.push(p);
    savePending();
    ui.composer.value = "";
    state.chips = [];
    autoGrow();
    renderChips();
    transmit(p);
    stickChat = true;
    scheduleChat();
  }

  function stopTurn() {
    const p = { id: newId(), text: "/stop", attachments: [], at_ms: Date.now(), state: "sending" };
    state.pending.push(p);
    savePending();
    transmit(p);
    stickChat = true;
    scheduleChat();
  }

  /* `reason` goes only with a denial: a group's plan goes back to its leader with it. */
  function answer(id, approve, always, reason) {
    const a = { approve, always: Boolean(always) };
    const why = !approve && typeof reason === "string" ? reason.trim().slice(0, MAX_REASON_CHARS) : "";
    if (why) a.reason = why;
    state.answers.set(id, a);
    sendFrame({ type: "confirm", id, ...a });
    scheduleChat();
  }

  function retryPending(id) {
    const p = state.pending.find((x) => x.id === id);
    if (!p) return;
    p.state = "sending";
    delete p.error;
    savePending();
    transmit(p);
    scheduleChat();
  }

  function discardPending(id) {
    state.pending = state.pending.filter((x) => x.id !== id);
    savePending();
    scheduleChat();
  }

  /* ---------- uploads ---------- */

  async function upload(file, voice) {
    const chip = { key: newId(), name: file.name || "file", size: file.size, state: "uploading", attachment: null };
    state.chips.push(chip);
    renderChips();
    try {
      const res = await fetch("/upload?name=" + encodeURIComponent(chip.name) + (voice ? "&voice=1" : ""), {
        method: "POST",
        body: file,
        headers: { "content-type": file.type || "application/octet-stream" },
        credentials: "same-origin",
      });
      if (res.status === 401) {
        goLogin();
        return;
      }
      if (!res.ok) {
        let why = res.status === 413 ? "too large" : `upload failed (${res.status})`;
        try {
          const body = await res.json();
          if (body && typeof body.error === "string" && body.error) why = body.error;
        } catch {
          /* not JSON: keep the status */
        }
        throw new Error(why);
      }
      const a = await res.json();
      if (!a || typeof a.id !== "string") throw new Error("bad answer from the server");
      chip.attachment = a;
      chip.state = "ready";
    } catch (e) {
      chip.state = "failed";
      chip.error = e instanceof Error ? e.message : String(e);
    }
    renderChips();
  }

  function addFiles(files) {
    for (const f of Array.from(files || [])) upload(f, false);
  }

  /* ---------- voice recording ---------- */

  // A recording becomes an upload like any file, flagged as a voice
  // message; the host transcribes it when the message is sent.
  const recording = { media: null, chunks: [] };
  const RECORD_TYPES = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm", "audio/mp4"];

  function canRecord() {
    return Boolean(window.isSecureContext && navigator.mediaDevices && navigator.mediaDevices.getUserMedia && window.MediaRecorder);
  }

  async function toggleRecording() {
    if (recording.media) {
      recording.media.stop();
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (e) {
      toast(`Cannot record: ${e && e.message ? e.message : e}`);
      return;
    }
    const type = RECORD_TYPES.find((t) => MediaRecorder.isTypeSupported(t)) || "";
    let media;
    try {
      media = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    } catch (e) {
      stream.getTracks().forEach((t) => t.stop());
      toast(`Cannot record: ${e && e.message ? e.message : e}`);
      return;
    }
    recording.media = media;
    recording.chunks = [];
    media.addEventListener("dataavailable", (e) => {
      if (e.data && e.data.size) recording.chunks.push(e.data);
    });
    media.addEventListener("stop", () => {
      stream.getTracks().forEach((t) => t.stop());
      const mime = (media.mimeType || type || "audio/webm").split(";")[0];
      const blob = new Blob(recording.chunks, { type: mime });
      recording.media = null;
      recording.chunks = [];
      renderRecording();
      if (!blob.size) {
        toast("Nothing was recorded.", "info");
        return;
      }
      const ext = mime.includes("ogg") ? "ogg" : mime.includes("mp4") ? "m4a" : "webm";
      const stamp = new Date().toISOString().replace(/[^0-9]/g, "").slice(0, 14);
      upload(new File([blob], `voice-${stamp}.${ext}`, { type: mime }), true);
    });
    media.start();
    renderRecording();
  }

  function renderRecording() {
    const on = Boolean(recording.media);
    ui.record.dataset.state = on ? "recording" : "idle";
    ui.record.setAttribute("aria-pressed", String(on));
    ui.record.title = on ? "Stop recording" : canRecord() ? "Record a voice message" : "Recording needs the canvas over https or on localhost";
    ui.record.disabled = !on && !canRecord();
  }

  function renderChips() {
    ui.chips.replaceChildren(
      ...state.chips.map((c) => {
        const label =
          c.state === "uploading" ? "uploading…" : c.state === "failed" ? c.error || "failed" : fmtSize(c.size);
        return h(
          "span",
          { class: `chip ${c.state}`, "data-testid": "chip", "data-state": c.state },
          h("span", { class: "chip-name", text: c.name }),
          h("span", { class: "chip-meta", title: label, text: label }),
          h("button", {
            type: "button",
            class: "chip-remove",
            "aria-label": `Remove ${c.name}`,
            text: "×",
            onclick: () => {
              state.chips = state.chips.filter((x) => x !== c);
              renderChips();
            },
          }),
        );
      }),
    );
    ui.chips.hidden = state.chips.length === 0;
    ui.send.disabled = uploading();
  }

  /* ---------- status bar ---------- */

  function renderConn() {
    let key;
    let text;
    if (conn.ready) {
      key = "connected";
      text = "connected";
    } else if (navigator.onLine === false || conn.failures >= OFFLINE_AFTER) {
      key = "offline";
      text = "offline";
    } else {
      key = "reconnecting";
      text = "reconnecting…";
    }
    ui.conn.dataset.state = key;
    if (ui.conn.textContent !== text) ui.conn.textContent = text;
    ui.conn.title = conn.ready ? "Live connection to the daemon" : "Retrying automatically";
    document.body.classList.toggle("disconnected", !conn.ready);
  }

  function renderStatus() {
    const st = state.status;
    ui.agent.textContent = st.agent;
    ui.agent.dataset.state = st.agent;
    ui.agent.dataset.connected = String(st.connected);
    ui.agentDown.hidden = st.connected !== false;
    ui.model.textContent = st.model || "—";
    ui.stop.hidden = st.agent !== "busy";
    const working = st.working.join(", ");
    ui.workingItem.hidden = working === "";
    if (ui.working.textContent !== working) ui.working.textContent = working;
    ui.model.title = st.model ? `Model: ${st.model}` : "Model unknown";
  }

  /* ---------- the live view ---------- */

  const VIEW_KEYS = new Set([
    "Enter", "Tab", "Escape", "Backspace", "Delete", "ArrowUp", "ArrowDown",
    "ArrowLeft", "ArrowRight", "PageUp", "PageDown", "Home", "End",
  ]);
  const live = { source: null, wanted: 0, loading: false };

  function onView(f) {
    if (!f || typeof f.source !== "string") return;
    live.source = f.source;
    ui.live.hidden = false;
    ui.live.dataset.state = f.closed ? "closed" : "live";
    ui.liveState.textContent = f.closed ? "stopped" : "live";
    ui.liveTitle.textContent = f.closed ? "" : String(f.title || "");
    ui.liveUrl.textContent = f.closed ? "" : String(f.url || "");
    ui.liveFrame.hidden = Boolean(f.closed);
    if (!f.closed && Number.isFinite(f.seq)) {
      ui.live.dataset.seq = String(f.seq);
      loadFrame(f.seq);
    }
  }

  /* One image request at a time, always for the newest frame: a fast page
     never queues images on a slow connection. */
  function loadFrame(seq) {
    live.wanted = Math.max(live.wanted, seq);
    if (live.loading) return;
    live.loading = true;
    const asked = live.wanted;
    ui.liveFrame.onload = ui.liveFrame.onerror = () => {
      live.loading = false;
      ui.liveFrame.dataset.seq = String(asked);
      if (live.wanted > asked) loadFrame(live.wanted);
    };
    ui.liveFrame.src = `/view/frame?seq=${asked}`;
  }

  function viewInput(input) {
    if (!live.source) return;
    sendFrame({ type: "view", source: live.source, input });
  }

  function framePoint(e) {
    const r = ui.liveFrame.getBoundingClientRect();
    if (!r.width || !r.height) return null;
    const clamp = (v) => Math.min(1, Math.max(0, v));
    return { x: clamp((e.clientX - r.left) / r.width), y: clamp((e.clientY - r.top) / r.height) };
  }

  function initLive() {
    ui.live = document.querySelector('[data-testid="live"]');
    ui.liveState = document.querySelector('[data-testid="live-state"]');
    ui.liveTitle = document.querySelector('[data-testid="live-title"]');
    ui.liveUrl = document.querySelector('[data-testid="live-url"]');
    ui.liveFrame = document.querySelector('[data-testid="live-frame"]');
    ui.liveAddress = document.querySelector('[data-testid="live-address"]');
    ui.liveFrame.addEventListener("click", (e) => {
      const p = framePoint(e);
      if (p) viewInput({ kind: "click", x: p.x, y: p.y });
      ui.liveFrame.focus({ preventScroll: true });
    });
    ui.liveFrame.addEventListener("wheel", (e) => {
      const p = framePoint(e);
      if (!p) return;
      e.preventDefault();
      viewInput({ kind: "scroll", x: p.x, y: p.y, dy: e.deltaY });
    }, { passive: false });
    ui.liveFrame.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
      if (e.key.length === 1) viewInput({ kind: "text", text: e.key });
      else if (VIEW_KEYS.has(e.key)) viewInput({ kind: "key", key: e.key });
      else return;
      e.preventDefault();
    });
    ui.liveFrame.addEventListener("paste", (e) => {
      const text = e.clipboardData ? e.clipboardData.getData("text") : "";
      if (text) {
        e.preventDefault();
        viewInput({ kind: "text", text: text.slice(0, 1000) });
      }
    });
    document.getElementById("live-open").addEventListener("submit", (e) => {
      e.preventDefault();
      const url = ui.liveAddress.value.trim();
      if (url) viewInput({ kind: "open", url });
    });
    document.getElementById("live-back").addEventListener("click", () => viewInput({ kind: "back" }));
  }

  function renderUpcoming(jobs) {
    const list = (Array.isArray(jobs) ? jobs : []).filter((j) => j && j.id !== undefined);
    ui.upcoming.hidden = list.length === 0;
    ui.jobs.replaceChildren(
      ...list.map((j) =>
        h(
          "li",
          { class: "job", "data-testid": "job", "data-id": String(j.id), "data-kind": String(j.kind || "") },
          h("span", { class: "job-when", "data-testid": "when", text: String(j.next_run || "") }),
          h("span", { class: "job-text", "data-testid": "text", text: String(j.text || "") }),
          h("span", { class: "job-meta", text: `${j.kind === "task" ? "task" : "reminder"} · ${String(j.schedule || "")}` })
        )
      )
    );
  }

  function renderApprovals() {
    const waiting = [...state.confirmations.values()].filter((c) => c.state === "pending");
    ui.approvals.hidden = waiting.length === 0;
    ui.approvals.textContent = waiting.length === 1 ? "1 approval waiting" : `${waiting.length} approvals waiting`;
    document.title = waiting.length ? `(${waiting.length}) hearth` : "hearth";
  }

  /* ---------- chat ---------- */

  let stickChat = true;
  let chatScheduled = false;
  let gen = 0;
  const cache = {
    messages: new Map(),
    confirmations: new Map(),
    streaming: new Map(),
    outputs: new Map(),
    pending: new Map(),
  };

  function scheduleChat() {
    if (chatScheduled) return;
    chatScheduled = true;
    queueMicrotask(() => {
      chatScheduled = false;
      renderChat();
    });
  }

  function cached(map, id, src, make, same) {
    let e = map.get(id);
    if (!e || (e.src !== src && !(same || sameJson)(e.src, src))) {
      e = { node: make(src), src };
      map.set(id, e);
    } else {
      e.src = src;
    }
    e.gen = gen;
    return e;
  }

  function prune(map) {
    for (const [k, e] of map) if (e.gen !== gen) map.delete(k);
  }

  function reconcile(parent, want) {
    let cur = parent.firstChild;
    for (const n of want) {
      if (n === cur) cur = cur.nextSibling;
      else parent.insertBefore(n, cur);
    }
    while (cur) {
      const next = cur.nextSibling;
      cur.remove();
      cur = next;
    }
  }

  function renderChat() {
    const list = ui.messages;
    const atBottom = stickChat || list.scrollHeight - list.scrollTop - list.clientHeight < 48;
    stickChat = false;
    gen++;

    const items = [];
    for (const [key, m] of state.messages) {
      items.push({ at: Number(m.at_ms) || 0, rank: 0, key, node: cached(cache.messages, key, m, messageNode).node });
    }
    for (const [id, c] of state.confirmations) {
      const src = { c, answering: state.answers.has(id) };
      const e = cached(cache.confirmations, id, src, confirmationNode, (a, b) => a.answering === b.answering && sameJson(a.c, b.c));
      items.push({ at: Number(c.at_ms) || 0, rank: 1, key: id, node: e.node });
    }
    items.sort((a, b) => a.at - b.at || a.rank - b.rank || collator.compare(a.key, b.key));
    const want = items.map((i) => i.node);

    for (const [key, o] of state.outputs) {
      const e = cached(cache.outputs, key, o, outputNode, () => true);
      updateOutput(e.node, o);
      want.push(e.node);
    }

    for (const [turn, text] of state.streaming) {
      const node = cached(cache.streaming, turn, turn, streamingNode, (a, b) => a === b).node;
      if (node.textContent !== text) node.hearthText.textContent = text;
      want.push(node);
    }

    const stored = storedIds();
    for (const p of state.pending) {
      if (stored.has(p.id)) continue;
      const src = { p, sig: `${p.state}|${p.error || ""}` };
      want.push(cached(cache.pending, p.id, src, pendingNode, (a, b) => a.sig === b.sig).node);
    }

    for (const map of Object.values(cache)) prune(map);
    reconcile(list, want);
    if (atBottom) list.scrollTop = list.scrollHeight;
    renderApprovals();
    tickCountdowns();
  }

  function attachmentsNode(list) {
    if (!Array.isArray(list) || !list.length) return null;
    return h(
      "ul",
      { class: "attachments" },
      list.map((a) => {
        if (!a || typeof a !== "object") return null;
        const name = typeof a.name === "string" ? a.name : "attachment";
        const url = safeUrl(a.url, false);
        const isImage = typeof a.mime === "string" && a.mime.startsWith("image/") && url;
        const isAudio = typeof a.mime === "string" && a.mime.startsWith("audio/") && url;
        const transcript = typeof a.transcript === "string" ? a.transcript : null;
        const inner = [
          isImage ? h("img", { class: "thumb", src: url, alt: name, loading: "lazy" }) : h("span", { class: "file-icon", "aria-hidden": "true" }),
          h("span", { class: "att-name", text: name }),
          h("span", { class: "att-size", text: fmtSize(a.size) }),
        ];
        return h(
          "li",
          isAudio || transcript !== null ? { class: "audio" } : null,
          url
            ? h("a", { class: `attachment${isImage ? " image" : ""}`, "data-testid": "attachment", href: url, target: "_blank", rel: "noopener" }, inner)
            : h("span", { class: "attachment", "data-testid": "attachment" }, inner),
          isAudio ? h("audio", { controls: true, preload: "none", src: url, "aria-label": `Play ${name}` }) : null,
          transcript !== null
            ? h("p", { class: "transcript", "data-testid": "transcript", text: transcript ? `“${transcript}”` : "(no words recognised)" })
            : null,
        );
      }),
    );
  }

  function fixLinks(root) {
    for (const a of root.querySelectorAll("a[href]")) {
      if (!isSameOrigin(a.getAttribute("href"))) {
        a.target = "_blank";
        a.rel = "noopener noreferrer";
      }
    }
  }

  function messageNode(m) {
    const role = m.role === "user" ? "user" : "agent";
    const body = h("div", { class: "body", "data-testid": "text" });
    if (role === "agent" && typeof m.html === "string") {
      body.classList.add("rich");
      body.innerHTML = m.html;
      fixLinks(body);
    } else {
      body.classList.add("plain");
      body.textContent = typeof m.text === "string" ? m.text : "";
    }
    const at = Number(m.at_ms);
    return h(
      "article",
      { class: `msg ${role}`, "data-testid": "message", "data-role": role, "data-key": m.key, "data-id": m.id || null },
      h("div", { class: "bubble" }, body, attachmentsNode(m.attachments)),
      h("div", { class: "meta" }, h("span", { class: "who", text: role === "user" ? "you" : "agent" }), at ? h("time", { datetime: new Date(at).toISOString(), title: fmtFull(at), text: fmtTime(at) }) : null),
    );
  }

  function streamingNode(turn) {
    const text = h("span", { class: "stream-text" });
    const node = h(
      "article",
      { class: "msg agent streaming", "data-testid": "streaming", "data-turn": turn, "aria-hidden": "true" },
      h("div", { class: "bubble" }, h("div", { class: "body plain typing" }, text)),
      h("div", { class: "meta writing" }),
    );
    node.hearthText = text;
    return node;
  }

  function outputNode(o) {
    const pre = h("pre", { class: "output", "data-testid": "output" });
    const status = h("span", { class: "output-state" });
    const node = h(
      "details",
      { class: "tool-output", "data-testid": "tool-output", "data-call": o.call, "data-turn": o.turn, "data-tool": o.tool, open: true },
      h("summary", null, h("code", { class: "tool", text: o.tool }), o.command ? h("code", { class: "output-command", title: o.command, text: o.command }) : null, status),
      pre,
    );
    node.hearthParts = { pre, status, shown: null };
    return node;
  }

  const OUTPUT_STATE = { running: "running…", ok: "done", error: "failed", cancelled: "stopped" };

  function updateOutput(node, o) {
    const parts = node.hearthParts;
    const st = o.ended && o.ended in OUTPUT_STATE ? o.ended : "running";
    if (node.dataset.state !== st) {
      node.dataset.state = st;
      parts.status.textContent = OUTPUT_STATE[st];
    }
    if (parts.shown !== o.text) {
      const pre = parts.pre;
      const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
      pre.textContent = o.text;
      parts.shown = o.text;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }
  }

  function pendingNode(src) {
    const p = src.p;
    const meta =
      p.state === "failed"
        ? [
            h("span", { class: "failed-text", text: `not sent: ${p.error || "refused"}` }),
            h("button", { type: "button", class: "link-btn", text: "Retry", onclick: () => retryPending(p.id) }),
            h("button", { type: "button", class: "link-btn", text: "Discard", onclick: () => discardPending(p.id) }),
          ]
        : h("span", { class: "sending", text: p.state === "sent" ? "sent" : "sending…" });
    return h(
      "article",
      { class: `msg user pending ${p.state}`, "data-testid": "pending", "data-id": p.id, "data-state": p.state },
      h("div", { class: "bubble" }, h("div", { class: "body plain", "data-testid": "text", text: p.text }), attachmentsNode(p.attachments)),
      h("div", { class: "meta" }, meta),
    );
  }

  const OUTCOME = {
    approved: "Approved",
    denied: "Denied",
    expired: "Expired",
    withdrawn: "Withdrawn",
  };

  /* An expired request taken back before anyone answered (protocol: decided_by "stop" or "withdrawn"). */
  function cardState(c) {
    const st = ["pending", "approved", "denied", "expired"].includes(c.state) ? c.state : "pending";
    return st === "expired" && (c.decided_by === "stop" || c.decided_by === "withdrawn") ? "withdrawn" : st;
  }

  function cardOutcome(c, st) {
    if (st === "withdrawn") return c.decided_by === "stop" ? "Withdrawn: the turn was stopped; not run" : "Withdrawn: not run";
    const by = c.decided_by === "timeout" ? ": nobody answered in time" : c.decided_by ? ` by ${c.decided_by}` : "";
    return `${OUTCOME[st]}${by}`;
  }

  const GROUP_PLAN = "group plan";

  function confirmationNode(src) {
    const c = src.c;
    const id = String(c.id);
    const st = cardState(c);
    const tool = typeof c.tool === "string" ? c.tool : "tool";
    let argsText;
    try {
      argsText = JSON.stringify(c.args === undefined ? {} : c.args, null, 2);
    } catch {
      argsText = String(c.args);
    }
    const countdown = h("span", { class: "countdown", "data-testid": "countdown" });
    const parts = [
      h(
        "header",
        { class: "card-head" },
        h("span", { class: "card-kind", text: st === "pending" ? "Approval needed" : OUTCOME[st] }),
        h("code", { class: "tool", "data-testid": "tool", text: tool }),
      ),
    ];
    const plan = tool === GROUP_PLAN && c.args && typeof c.args === "object" ? c.args : null;
    if (plan) {
      parts.push(planNode(plan), h("details", { class: "raw-args" }, h("summary", { text: "Arguments" }), h("pre", { class: "args", "data-testid": "args" }, h("code", { text: argsText }))));
    } else {
      if (typeof c.command === "string") {
        parts.push(h("div", { class: "field-label", text: "Command" }), h("pre", { class: "command", "data-testid": "command" }, h("code", { text: c.command })));
      }
      parts.push(h("div", { class: "field-label", text: "Arguments" }), h("pre", { class: "args", "data-testid": "args" }, h("code", { text: argsText })));
    }
    if (c.reason) parts.push(h("p", { class: "reason", "data-testid": "reason", text: String(c.reason) }));
    const facts = h("dl", { class: "facts" });
    if (typeof c.cwd === "string") facts.append(h("dt", { text: "Directory" }), h("dd", null, h("code", { "data-testid": "cwd", text: c.cwd })));
    if (typeof c.mode === "string") facts.append(h("dt", { text: "Mode" }), h("dd", { "data-testid": "mode", text: c.mode }));
    const print = String(c.fingerprint || "—");
    facts.append(h("dt", { text: "Fingerprint" }), h("dd", null, h("code", { "data-testid": "fingerprint", title: print, text: print.length > 16 ? `${print.slice(0, 16)}…` : print })));
    if (st === "pending") facts.append(h("dt", { text: "Time" }), h("dd", null, countdown));
    parts.push(facts);
    if (st === "pending" && plan) {
      parts.push(planActions(id, src.answering));
    } else if (st === "pending") {
      const busy = src.answering;
      parts.push(
        h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "btn approve", "data-testid": "approve", disabled: busy, text: "Approve", onclick: () => answer(id, true) }),
          h("button", { type: "button", class: "btn deny", "data-testid": "deny", disabled: busy, text: "Deny", onclick: () => answer(id, false) }),
          h("button", { type: "button", class: "btn always", "data-testid": "always", disabled: busy, text: "Always allow", title: "Approve, and run this exact call without asking from now on (revoke with `hearth approvals revoke`)", onclick: () => answer(id, true, true) }),
          busy ? h("span", { class: "answering", text: "sending…" }) : null,
        ),
      );
    } else {
      parts.push(h("p", { class: `outcome ${st}`, "data-testid": "outcome", text: cardOutcome(c, st) }));
    }
    const node = h("article", { class: `card confirm ${st}`, "data-testid": "confirmation", "data-id": id, "data-state": st, role: "group", "aria-label": `${st === "pending" ? "Approval needed" : OUTCOME[st]}: ${tool}` }, parts);
    node.hearthCountdown = st === "pending" ? { el: countdown, at: Number(c.expires_at_ms) } : null;
    return node;
  }

  /* A group's plan, from its card's args: {group, mission, summary, deliverables}. Text from agents: textContent only. */
  function planNode(p) {
    const list = Array.isArray(p.deliverables) ? p.deliverables.filter((d) => d && typeof d === "object") : [];
    return h(
      "div",
      { class: "plan", "data-testid": "plan" },
      h("div", { class: "field-label", text: "Group" }),
      h("p", { class: "plan-group", "data-testid": "plan-group", text: cellText(p.group) }),
      p.mission ? [h("div", { class: "field-label", text: "Mission" }), h("p", { class: "plan-mission", text: cellText(p.mission) })] : null,
      h("div", { class: "field-label", text: "Summary" }),
      h("p", { class: "plan-summary", "data-testid": "plan-summary", text: cellText(p.summary) }),
      h("div", { class: "field-label", text: `Deliverables (${list.length})` }),
      h(
        "ol",
        { class: "plan-list", "aria-label": "Planned deliverables" },
        list.map((d) => {
          const deps = Array.isArray(d.depends_on) ? d.depends_on.map(cellText) : [];
          return h(
            "li",
            { class: "plan-item", "data-testid": "plan-deliverable", "data-id": cellText(d.id) },
            h("code", { class: "d-id", text: cellText(d.id) }),
            " ",
            h("span", { class: "d-title", text: cellText(d.title) }),
            " ",
            h("span", { class: "d-assignee", text: `— ${cellText(d.assignee)}` }),
            deps.length ? [" ", h("span", { class: "d-after", text: `(after ${deps.join(", ")})` })] : null,
          );
        }),
      ),
    );
  }

  /* Approve, or deny with an optional reason that goes back to the group's leader. */
  function planActions(id, busy) {
    const input = h("input", {
      type: "text",
      class: "reason-input",
      "data-testid": "deny-reason",
      maxlength: String(MAX_REASON_CHARS),
      placeholder: "e.g. split the backend in two",
      disabled: busy,
    });
    input.value = state.reasons.get(id) || "";
    input.addEventListener("input", () => state.reasons.set(id, input.value));
    const deny = () => answer(id, false, false, input.value);
    input.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.isComposing) return;
      e.preventDefault();
      deny();
    });
    return h(
      "div",
      { class: "plan-actions" },
      h("label", { class: "reason-label" }, h("span", { text: "Why send it back? (optional, goes to the leader)" }), input),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "btn approve", "data-testid": "approve", disabled: busy, text: "Approve", title: "Start carrying out the plan", onclick: () => answer(id, true) }),
        h("button", { type: "button", class: "btn deny", "data-testid": "deny", disabled: busy, text: "Deny", title: "Send the plan back to the leader, with the reason, to plan again", onclick: deny }),
        busy ? h("span", { class: "answering", text: "sending…" }) : null,
      ),
    );
  }

  function tickCountdowns() {
    const now = Date.now();
    for (const e of cache.confirmations.values()) {
      const cd = e.node.hearthCountdown;
      if (!cd) continue;
      const text = Number.isFinite(cd.at) ? fmtCountdown(cd.at - now) : "";
      if (cd.el.textContent !== text) cd.el.textContent = text;
    }
  }

  setInterval(tickCountdowns, 1000);

  /* ---------- canvas pane ---------- */

  const elementCache = new Map();
  const wideLayout = window.matchMedia("(min-width: 901px)");

  function renderCanvas(shownId) {
    gen++;
    const want = state.elements.map((el) => cached(elementCache, String(el.id), el, elementNode).node);
    prune(elementCache);
    reconcile(ui.elements, want);
    ui.canvasCount.textContent = state.elements.length ? String(state.elements.length) : "";
    if (shownId !== null && shownId !== undefined && wideLayout.matches) {
      const e = elementCache.get(String(shownId));
      if (e) e.node.scrollIntoView({ block: "nearest" });
    }
  }

  function elementNode(el) {
    const type = typeof el.type === "string" ? el.type : "unknown";
    const data = el.data && typeof el.data === "object" ? el.data : {};
    let body;
    try {
      const r = RENDER[type];
      body = r ? r(data, el) : unsupported(`Unsupported element type “${type}”.`, data);
    } catch (e) {
      body = unsupported(`This ${type} element could not be shown.`, data);
    }
    return h(
      "section",
      { class: `element el-${type.replace(/[^a-z0-9_-]/gi, "")}`, "data-testid": "element", "data-type": type, "data-id": String(el.id), "aria-label": el.title || type },
      h("header", { class: "el-head" }, h("h2", { class: "el-title", text: typeof el.title === "string" && el.title ? el.title : "" }), h("span", { class: "el-type", text: type })),
      h("div", { class: "el-body" }, body),
    );
  }

  function unsupported(text, data) {
    let json;
    try {
      json = JSON.stringify(data, null, 2) || "";
    } catch {
      json = "";
    }
    return h(
      "div",
      { class: "unsupported" },
      h("p", { text }),
      json && json !== "{}" ? h("details", null, h("summary", { text: "data" }), h("pre", { text: json.slice(0, 4000) })) : null,
    );
  }

  function linkCard(url, title, description) {
    return h(
      "a",
      { class: "link-card", href: url, target: isSameOrigin(url) ? null : "_blank", rel: "noopener noreferrer" },
      h("span", { class: "link-title", text: title || hostOf(url) || url }),
      description ? h("span", { class: "link-desc", text: description }) : null,
      h("span", { class: "link-host", text: hostOf(url) }),
    );
  }

  const RENDER = {
    markdown(d, el) {
      const div = h("div", { class: "rich md" });
      if (typeof el.html === "string") {
        div.innerHTML = el.html;
        fixLinks(div);
      } else {
        div.classList.add("plain");
        div.textContent = typeof d.markdown === "string" ? d.markdown : "";
      }
      return div;
    },

    table(d) {
      const rows = Array.isArray(d.rows) ? d.rows : [];
      let cols = Array.isArray(d.columns) ? d.columns.map(cellText) : [];
      if (!cols.length && rows.length && rows[0] && typeof rows[0] === "object" && !Array.isArray(rows[0])) cols = Object.keys(rows[0]);
      const cells = rows.map((r) => (Array.isArray(r) ? r : r && typeof r === "object" ? cols.map((c) => r[c]) : [r]));
      const width = Math.max(cols.length, ...cells.map((r) => r.length), 0);
      const numeric = (i) => cells.length > 0 && cells.every((r) => typeof r[i] === "number" || r[i] === null || r[i] === undefined) && cells.some((r) => typeof r[i] === "number");
      const head = cols.length
        ? h("thead", null, h("tr", null, Array.from({ length: width }, (_, i) => h("th", { scope: "col", class: numeric(i) ? "num" : null, text: cols[i] || "" }))))
        : null;
      const body = h(
        "tbody",
        null,
        cells.map((r) =>
          h(
            "tr",
            null,
            Array.from({ length: width }, (_, i) => {
              const v = r[i];
              return h("td", { class: typeof v === "number" ? "num" : null, text: cellText(v) });
            }),
          ),
        ),
      );
      return h("div", { class: "table-wrap" }, h("table", null, head, body), rows.length ? null : h("p", { class: "muted", text: "No rows." }));
    },

    chart(d, el) {
      return chart(d, el);
    },

    image(d) {
      const url = safeUrl(d.url, true);
      if (!url) return unsupported("The image URL is not allowed.", d);
      const alt = typeof d.alt === "string" ? d.alt : "";
      const img = h("img", { src: url, alt, decoding: "async" });
      const fig = h("figure", { class: "image" }, h("a", { href: url.startsWith("data:") ? null : url, target: "_blank", rel: "noopener" }, img), d.caption ? h("figcaption", { text: String(d.caption) }) : null);
      img.addEventListener("error", () => fig.classList.add("broken"));
      return fig;
    },

    code(d) {
      const code = typeof d.code === "string" ? d.code : cellText(d.code);
      const lang = typeof d.language === "string" && d.language ? d.language : "text";
      const btn = h("button", { type: "button", class: "copy", "data-testid": "copy", text: "Copy" });
      btn.addEventListener("click", () => copyText(code, btn));
      return h(
        "div",
        { class: "code" },
        h("div", { class: "code-head" }, h("span", { class: "lang", text: lang }), btn),
        h("pre", null, h("code", { class: `language-${lang.replace(/[^a-z0-9_+-]/gi, "")}`, text: code })),
      );
    },

    checklist(d) {
      const items = Array.isArray(d.items) ? d.items : [];
      const done = items.filter((i) => i && i.done === true).length;
      return h(
        "div",
        { class: "checklist" },
        h(
          "ul",
          null,
          items.map((it) => {
            const text = it && typeof it === "object" ? cellText(it.text) : cellText(it);
            const checked = !!(it && it.done === true);
            return h("li", { class: checked ? "done" : null }, h("label", null, h("input", { type: "checkbox", disabled: true, checked }), h("span", { text })));
          }),
        ),
        h("p", { class: "muted", text: `${done} of ${items.length} done` }),
      );
    },

    link(d) {
      const url = safeUrl(d.url, false);
      if (!url) return unsupported("The link URL is not allowed.", d);
      return linkCard(url, typeof d.title === "string" ? d.title : "", typeof d.description === "string" ? d.description : "");
    },

    video(d) {
      const url = safeUrl(d.url, false);
      if (!url) return unsupported("The video URL is not allowed.", d);
      const title = typeof d.title === "string" ? d.title : "";
      let playable = false;
      try {
        const p = new URL(url, location.href);
        const own = p.origin === location.origin && p.pathname.startsWith("/files/");
        playable = own || (p.protocol === "https:" && VIDEO_EXT.test(p.pathname));
      } catch {
        playable = false;
      }
      if (!playable) return linkCard(url, title || "Video", "");
      return h(
        "figure",
        { class: "video" },
        h("video", { src: url, controls: true, preload: "metadata", playsinline: true }, h("a", { href: url, text: "Download the video" })),
        title ? h("figcaption", { text: title }) : null,
      );
    },

    progress(d) {
      const max = Number.isFinite(num(d.max)) && num(d.max) > 0 ? num(d.max) : 100;
      const value = num(d.value);
      const known = Number.isFinite(value);
      const clamped = known ? Math.min(Math.max(value, 0), max) : 0;
      const label = typeof d.label === "string" ? d.label : "";
      const pct = known ? `${Math.round((clamped / max) * 100)}%` : "";
      const bar = h("progress", { max: String(max), "aria-label": label || "progress" });
      if (known) bar.value = clamped;
      return h("div", { class: "progress" }, h("div", { class: "progress-head" }, h("span", { class: "progress-label", text: label }), h("span", { class: "progress-pct", text: pct })), bar);
    },
  };

  async function copyText(text, btn) {
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch {
      const ta = h("textarea", { class: "offscreen", readonly: true });
      ta.value = text;
      document.body.append(ta);
      ta.select();
      try {
        ok = document.execCommand("copy");
      } catch {
        ok = false;
      }
      ta.remove();
    }
    btn.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => {
      btn.textContent = "Copy";
    }, 1500);
  }

  /* ---------- charts (SVG) ---------- */

  function niceTicks(lo, hi, count) {
    const raw = (hi - lo) / Math.max(1, count - 1);
    const e = Math.floor(Math.log10(raw));
    const f = raw / 10 ** e;
    const nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    const step = nf * 10 ** e;
    const start = Math.floor(lo / step) * step;
    const end = Math.ceil(hi / step) * step;
    const decimals = Math.max(0, -Math.floor(Math.log10(step)) + (nf === 2.5 ? 1 : 0));
    const ticks = [];
    for (let v = start; v <= end + step / 2; v += step) ticks.push(Number(v.toFixed(decimals)));
    return { ticks, decimals };
  }

  function chart(d, el) {
    const wrap = h("div", { class: "chart" });
    let drawn = 0;
    const draw = (width) => {
      const w = Math.max(280, Math.round(width));
      if (Math.abs(w - drawn) < 8) return;
      drawn = w;
      wrap.replaceChildren(...drawChart(d, el, w));
    };
    draw(640);
    if (typeof ResizeObserver === "function") {
      new ResizeObserver((entries) => {
        const w = entries[entries.length - 1].contentRect.width;
        if (w > 0) draw(w);
      }).observe(wrap);
    }
    return wrap;
  }

  function drawChart(d, el, W) {
    const kind = d.kind === "bar" ? "bar" : "line";
    const series = (Array.isArray(d.series) ? d.series : []).map((sr, i) => ({
      name: sr && typeof sr.name === "string" && sr.name ? sr.name : `series ${i + 1}`,
      values: sr && Array.isArray(sr.values) ? sr.values.map(num) : [],
    }));
    const labels = Array.isArray(d.labels) ? d.labels.map(cellText) : [];
    const n = Math.max(labels.length, ...series.map((sr) => sr.values.length), 0);
    const finite = series.flatMap((sr) => sr.values).filter(Number.isFinite);
    if (!n || !finite.length) return [h("div", { class: "chart-empty muted", text: "No data to chart." })];

    let lo = Math.min(...finite);
    let hi = Math.max(...finite);
    if (kind === "bar") {
      lo = Math.min(lo, 0);
      hi = Math.max(hi, 0);
    }
    if (lo === hi) {
      const pad = Math.abs(lo) > 0 ? Math.abs(lo) / 2 : 1;
      lo -= pad;
      hi += pad;
    }
    const { ticks, decimals } = niceTicks(lo, hi, 5);
    lo = ticks[0];
    hi = ticks[ticks.length - 1];
    const fmt = new Intl.NumberFormat(undefined, {
      maximumFractionDigits: decimals,
      notation: Math.max(Math.abs(lo), Math.abs(hi)) >= 1e6 ? "compact" : "standard",
    });

    const H = Math.round(Math.min(320, Math.max(200, W * 0.48)));
    const L = Math.max(36, 10 + 7 * Math.max(...ticks.map((t) => fmt.format(t).length)));
    const R = 16;
    const T = 14;
    const B = 40;
    const pw = W - L - R;
    const ph = H - T - B;
    const y = (v) => T + (ph * (hi - v)) / (hi - lo);
    const band = pw / n;
    const x = kind === "bar" ? (i) => L + band * (i + 0.5) : (i) => L + (n === 1 ? pw / 2 : (i * pw) / (n - 1));
    const label = (i) => (labels[i] !== undefined && labels[i] !== "" ? labels[i] : String(i + 1));

    const title = typeof el.title === "string" && el.title ? el.title : `${kind} chart`;
    const svg = s("svg", { class: `chart-svg ${kind}`, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${title}: ${series.map((sr) => sr.name).join(", ")}` }, s("title", { text: title }));

    const grid = s("g", { class: "grid" });
    for (const t of ticks) {
      const ty = y(t);
      grid.append(
        s("line", { x1: L, x2: W - R, y1: ty, y2: ty, class: t === 0 ? "zero" : null }),
        s("text", { x: L - 8, y: ty, class: "tick y", "text-anchor": "end", "dominant-baseline": "middle", text: fmt.format(t) }),
      );
    }
    svg.append(grid);

    const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(pw / 56))));
    const xl = s("g", { class: "x-labels" });
    for (let i = 0; i < n; i += every) {
      const full = label(i);
      const short = full.length > 10 ? `${full.slice(0, 9)}…` : full;
      xl.append(s("text", { x: x(i), y: H - B + 18, class: "tick x", "text-anchor": "middle", text: short }, full !== short ? s("title", { text: full }) : null));
    }
    svg.append(xl, s("line", { class: "axis", x1: L, x2: W - R, y1: T + ph, y2: T + ph }), s("line", { class: "axis", x1: L, x2: L, y1: T, y2: T + ph }));

    const plot = s("g", { class: "plot" });
    if (kind === "bar") {
      const group = band * 0.78;
      const bw = group / Math.max(1, series.length);
      const y0 = y(Math.min(Math.max(0, lo), hi));
      series.forEach((sr, si) => {
        for (let i = 0; i < n; i++) {
          const v = sr.values[i];
          if (!Number.isFinite(v)) continue;
          const top = Math.min(y(v), y0);
          const height = Math.max(1, Math.abs(y(v) - y0));
          plot.append(
            s("rect", { class: `bar s${si % 6}`, x: x(i) - group / 2 + si * bw + 1, y: top, width: Math.max(1, bw - 2), height, rx: 2 }, s("title", { text: `${label(i)} · ${sr.name}: ${fmt.format(v)}` })),
          );
        }
      });
    } else {
      series.forEach((sr, si) => {
        let dpath = "";
        let open = false;
        for (let i = 0; i < n; i++) {
          const v = sr.values[i];
          if (!Number.isFinite(v)) {
            open = false;
            continue;
          }
          dpath += `${open ? "L" : "M"}${x(i).toFixed(1)} ${y(v).toFixed(1)} `;
          open = true;
        }
        plot.append(s("path", { class: `line s${si % 6}`, d: dpath.trim(), fill: "none" }));
        if (n <= 60) {
          for (let i = 0; i < n; i++) {
            const v = sr.values[i];
            if (!Number.isFinite(v)) continue;
            plot.append(s("circle", { class: `dot s${si % 6}`, cx: x(i), cy: y(v), r: 3 }, s("title", { text: `${label(i)} · ${sr.name}: ${fmt.format(v)}` })));
          }
        }
      });
    }
    svg.append(plot);

    const legend =
      series.length > 1
        ? h(
            "ul",
            { class: "legend" },
            series.map((sr, si) => h("li", null, h("span", { class: `swatch s${si % 6}`, "aria-hidden": "true" }), h("span", { text: sr.name }))),
          )
        : null;
    return legend ? [svg, legend] : [svg];
  }

  /* ---------- groups ---------- */

  // The side pane shows the canvas or, once a group is known, the agent
  // groups (tabs). A group's view is built once and updated in place on
  // every `group` frame: members, deliverables and comms entries keep
  // their nodes, keyed, so a live change is a change of text and
  // attributes, not a new page. Everything from the agents goes in as text.

  const GROUP_STATUS = {
    idle: "idle",
    planning: "planning",
    "awaiting-approval": "waiting for approval",
    executing: "executing",
    complete: "complete",
    failed: "failed",
    archived: "archived",
  };
  const DELIVERABLE_MARK = { planned: "○", pending: "·", running: "▶", complete: "✓", failed: "✗", blocked: "⊘" };
  const groupPicks = new Map();
  const shown = { name: null, parts: null, members: new Map(), deliverables: new Map(), posts: new Map() };

  function setText(el, text) {
    if (el.textContent !== text) el.textContent = text;
  }

  function setData(el, key, value) {
    if (el.dataset[key] !== value) el.dataset[key] = value;
  }

  function setLabel(el, label) {
    if (el.getAttribute("aria-label") !== label) el.setAttribute("aria-label", label);
  }

  function groupsTab() {
    return state.groups.size > 0 && state.pane.tab === "groups";
  }

  function selectTab(tab, focus) {
    state.pane.tab = tab;
    savePane();
    renderTabs();
    if (tab === "canvas") ui.tabCanvas.classList.remove("fresh");
    if (focus) (tab === "groups" ? ui.tabGroups : ui.tabCanvas).focus();
  }

  function selectGroup(name) {
    state.pane.group = name;
    savePane();
    renderGroups();
  }

  function renderTabs() {
    const groups = groupsTab();
    ui.paneTabs.hidden = state.groups.size === 0;
    for (const [tab, on] of [[ui.tabCanvas, !groups], [ui.tabGroups, groups]]) {
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
    }
    ui.canvasPanel.hidden = groups;
    ui.groupsPanel.hidden = !groups;
  }

  function renderGroups() {
    const names = [...state.groups.keys()].sort(collator.compare);
    if (!state.groups.has(state.pane.group)) {
      const open = names.find((n) => state.groups.get(n).status !== "archived");
      state.pane.group = open || names[0] || null;
    }
    setText(ui.groupsCount, names.length ? String(names.length) : "");
    renderTabs();
    for (const name of groupPicks.keys()) if (!state.groups.has(name)) groupPicks.delete(name);
    reconcile(ui.groupList, names.map(groupPick));
    renderGroup(state.pane.group === null ? null : state.groups.get(state.pane.group));
  }

  function groupPick(name) {
    let e = groupPicks.get(name);
    if (!e) {
      const status = h("span", { class: "group-status" });
      const btn = h("button", { type: "button", class: "group-pick", "data-testid": "group-pick", "data-name": name, onclick: () => selectGroup(name) }, h("span", { class: "group-pick-name", text: name }), status);
      e = { li: h("li", null, btn), btn, status };
      groupPicks.set(name, e);
    }
    const st = String(state.groups.get(name).status || "");
    setText(e.status, GROUP_STATUS[st] || st);
    setData(e.status, "status", st);
    e.btn.setAttribute("aria-pressed", String(name === state.pane.group));
    setLabel(e.btn, `${name}: ${GROUP_STATUS[st] || st}`);
    return e.li;
  }

  function groupSkeleton() {
    const p = {
      title: h("h2", { class: "group-title", id: "group-title", "data-testid": "group-name" }),
      status: h("span", { class: "group-status badge", "data-testid": "group-status" }),
      mission: h("p", { class: "group-mission", "data-testid": "mission" }),
      planSummary: h("p", { class: "group-plan", "data-testid": "plan-summary" }),
      errors: h("ul", { class: "group-errors", "data-testid": "plan-errors", "aria-label": "Problems with the plan" }),
      summaryText: h("p", { class: "group-summary-text", "data-testid": "summary" }),
      members: h("ul", { class: "members", "data-testid": "members", "aria-labelledby": "group-members-head" }),
      deliverables: h("ol", { class: "deliverables", "data-testid": "deliverables", "aria-labelledby": "group-deliverables-head" }),
      posts: h("ol", { class: "comms", "data-testid": "comms", role: "log", "aria-labelledby": "group-comms-head", "aria-live": "polite", tabindex: "0" }),
      empty: h("p", { class: "muted comms-empty", text: "Nothing posted yet." }),
    };
    p.missionBlock = h("section", { class: "group-block", "aria-label": "Mission" }, h("div", { class: "field-label", text: "Mission" }), p.mission);
    p.planBlock = h("section", { class: "group-block", "aria-label": "Plan" }, h("div", { class: "field-label", text: "Plan" }), p.planSummary, p.errors);
    p.summaryBlock = h("section", { class: "group-block group-summary", "aria-label": "Summary" }, h("div", { class: "field-label", text: "Summary" }), p.summaryText);
    p.root = h(
      "article",
      { class: "group", "data-testid": "group", "aria-labelledby": "group-title" },
      h("header", { class: "group-head" }, p.title, p.status),
      p.missionBlock,
      p.planBlock,
      p.summaryBlock,
      h("h3", { class: "group-sub", id: "group-members-head", text: "Members" }),
      p.members,
      h("h3", { class: "group-sub", id: "group-deliverables-head", text: "Deliverables" }),
      p.deliverables,
      h("h3", { class: "group-sub", id: "group-comms-head", text: "Comms log" }),
      p.posts,
      p.empty,
    );
    return p;
  }

  function renderGroup(g) {
    if (!g) {
      ui.groupDetail.replaceChildren();
      shown.name = null;
      return;
    }
    if (shown.name !== g.name || !shown.parts) {
      shown.name = g.name;
      shown.parts = groupSkeleton();
      shown.members = new Map();
      shown.deliverables = new Map();
      shown.posts = new Map();
      ui.groupDetail.replaceChildren(shown.parts.root);
    }
    const p = shown.parts;
    const st = String(g.status || "");
    setData(p.root, "name", g.name);
    setData(p.root, "status", st);
    setText(p.title, g.name);
    setText(p.status, GROUP_STATUS[st] || st);
    setData(p.status, "status", st);
    setText(p.mission, typeof g.mission === "string" && g.mission ? g.mission : "No mission yet.");
    const errors = Array.isArray(g.plan_errors) ? g.plan_errors.map(cellText) : [];
    p.planBlock.hidden = !g.plan_summary && !errors.length;
    setText(p.planSummary, cellText(g.plan_summary));
    if (p.errors.hearthErrors !== errors.join("\n")) {
      p.errors.hearthErrors = errors.join("\n");
      p.errors.replaceChildren(...errors.map((e) => h("li", { text: e })));
    }
    p.summaryBlock.hidden = !g.summary;
    setText(p.summaryText, cellText(g.summary));

    const members = Array.isArray(g.members) ? g.members.filter((m) => m && typeof m.name === "string") : [];
    reconcile(p.members, keyed(shown.members, members, (m) => m.name, memberNode, updateMember));
    const deliverables = Array.isArray(g.deliverables) ? g.deliverables.filter((d) => d && typeof d.id === "string") : [];
    reconcile(p.deliverables, keyed(shown.deliverables, deliverables, (d) => d.id, deliverableNode, updateDeliverable));

    const log = p.posts;
    const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 32;
    const posts = Array.isArray(g.posts) ? g.posts.filter((x) => x && typeof x === "object") : [];
    const seen = new Map();
    const postKey = (x) => {
      const base = [x.at_ms, x.who, x.kind, x.deliverable, x.content].map(cellText).join("\u0000");
      const n = (seen.get(base) || 0) + 1;
      seen.set(base, n);
      return `${base}\u0000${n}`;
    };
    reconcile(log, keyed(shown.posts, posts, postKey, postNode, () => {}));
    p.empty.hidden = posts.length > 0;
    if (atEnd) log.scrollTop = log.scrollHeight;
  }

  /* The nodes for `items` in order, each kept in `cache` under `key(item)`, made once and updated on every call. */
  function keyed(cache, items, key, make, update) {
    const keep = new Set();
    const nodes = items.map((item) => {
      const k = key(item);
      keep.add(k);
      let node = cache.get(k);
      if (!node) {
        node = make(item);
        cache.set(k, node);
      }
      update(node, item);
      return node;
    });
    for (const k of cache.keys()) if (!keep.has(k)) cache.delete(k);
    return nodes;
  }

  function memberNode() {
    const parts = {
      name: h("span", { class: "member-name", "data-testid": "name" }),
      lead: h("span", { class: "badge leader", "data-testid": "leader", text: "★ leader" }),
      state: h("span", { class: "badge state", "data-testid": "state" }),
      role: h("span", { class: "member-role" }),
      progress: h("p", { class: "member-progress", "data-testid": "progress" }),
    };
    const li = h("li", { class: "member", "data-testid": "member" }, h("div", { class: "member-head" }, parts.name, parts.lead, parts.role, parts.state), parts.progress);
    li.hearthParts = parts;
    return li;
  }

  function updateMember(li, m) {
    const p = li.hearthParts;
    const st = cellText(m.state);
    const progress = cellText(m.progress);
    setData(li, "name", m.name);
    setData(li, "state", st);
    setData(li, "leader", String(m.leader === true));
    setText(p.name, m.name);
    p.lead.hidden = m.leader !== true;
    setText(p.role, m.role ? cellText(m.role) : "");
    setText(p.state, st);
    setData(p.state, "state", st);
    setText(p.progress, progress);
    p.progress.hidden = !progress;
    setLabel(li, `${m.name}${m.leader === true ? ", leader" : ""}: ${st}${progress ? `, ${progress}` : ""}`);
  }

  function deliverableNode() {
    const parts = {
      mark: h("span", { class: "d-mark", "aria-hidden": "true" }),
      id: h("code", { class: "d-id", "data-testid": "id" }),
      title: h("span", { class: "d-title", "data-testid": "title" }),
      assignee: h("span", { class: "d-assignee", "data-testid": "assignee" }),
      status: h("span", { class: "badge d-status", "data-testid": "status" }),
      after: h("span", { class: "d-after", "data-testid": "after" }),
    };
    const li = h(
      "li",
      { class: "deliverable", "data-testid": "deliverable" },
      h("div", { class: "d-head" }, parts.mark, parts.id, parts.title, parts.status),
      h("div", { class: "d-meta" }, parts.assignee, parts.after),
    );
    li.hearthParts = parts;
    return li;
  }

  function updateDeliverable(li, d) {
    const p = li.hearthParts;
    const st = cellText(d.status);
    const deps = Array.isArray(d.depends_on) ? d.depends_on.map(cellText) : [];
    const after = deps.length ? `after ${deps.join(", ")}` : "";
    setData(li, "id", d.id);
    setData(li, "status", st);
    setText(p.mark, DELIVERABLE_MARK[st] || "·");
    setText(p.id, d.id);
    setText(p.title, cellText(d.title));
    setText(p.assignee, cellText(d.assignee));
    setText(p.status, st);
    setText(p.after, after);
    p.after.hidden = !after;
    setLabel(li, `${d.id} ${cellText(d.title)}, ${cellText(d.assignee)}: ${st}${after ? `, ${after}` : ""}`);
  }

  function postNode(x) {
    const at = Number(x.at_ms);
    const who = x.who ? cellText(x.who) : "hearth";
    const kind = cellText(x.kind);
    return h(
      "li",
      { class: `post kind-${kind.replace(/[^a-z-]/gi, "")}`, "data-testid": "post", "data-kind": kind, "data-who": who },
      h(
        "div",
        { class: "post-head" },
        at ? h("time", { datetime: new Date(at).toISOString(), title: fmtFull(at), text: fmtTime(at) }) : null,
        h("span", { class: "post-who", text: who }),
        h("span", { class: "badge post-kind", text: kind }),
        x.deliverable ? h("code", { class: "d-id", text: cellText(x.deliverable) }) : null,
      ),
      h("p", { class: "post-text", "data-testid": "text", text: cellText(x.content) }),
    );
  }

  function onTabKey(e) {
    const order = [ui.tabCanvas, ui.tabGroups];
    const i = order.indexOf(document.activeElement);
    if (i < 0) return;
    let next = null;
    if (e.key === "ArrowRight" || e.key === "ArrowDown") next = order[(i + 1) % order.length];
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp") next = order[(i + order.length - 1) % order.length];
    else if (e.key === "Home") next = order[0];
    else if (e.key === "End") next = order[order.length - 1];
    if (!next) return;
    e.preventDefault();
    selectTab(next === ui.tabGroups ? "groups" : "canvas", true);
  }

  /* ---------- composer ---------- */

  function autoGrow() {
    const ta = ui.composer;
    const list = ui.messages;
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 48;
    ta.style.height = "auto";
    ta.style.height = `${Math.min(ta.scrollHeight, 240)}px`;
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function init() {
    ui.conn = document.querySelector('[data-testid="conn"]');
    ui.agent = document.querySelector('[data-testid="agent"]');
    ui.agentDown = document.getElementById("agent-down");
    ui.model = document.querySelector('[data-testid="model"]');
    ui.working = document.querySelector('[data-testid="working"]');
    ui.workingItem = document.getElementById("working-item");
    ui.approvals = document.getElementById("approvals");
    ui.messages = document.querySelector('[data-testid="messages"]');
    ui.elements = document.querySelector('[data-testid="canvas"]');
    ui.canvasCount = document.getElementById("canvas-count");
    ui.upcoming = document.getElementById("upcoming");
    ui.jobs = document.querySelector('[data-testid="upcoming"]');
    ui.form = document.getElementById("composer-form");
    ui.composer = document.querySelector('[data-testid="composer"]');
    ui.send = document.querySelector('[data-testid="send"]');
    ui.stop = document.querySelector('[data-testid="stop"]');
    ui.attach = document.querySelector('[data-testid="attach"]');
    ui.record = document.querySelector('[data-testid="record"]');
    ui.chips = document.getElementById("chips");
    ui.toasts = document.getElementById("toasts");
    ui.paneTabs = document.getElementById("pane-tabs");
    ui.tabCanvas = document.getElementById("tab-canvas");
    ui.tabGroups = document.getElementById("tab-groups");
    ui.groupsCount = document.getElementById("groups-count");
    ui.canvasPanel = document.getElementById("canvas-panel");
    ui.groupsPanel = document.getElementById("groups-panel");
    ui.groupList = document.querySelector('[data-testid="group-list"]');
    ui.groupDetail = document.querySelector('[data-testid="group-detail"]');
    initLive();

    ui.form.addEventListener("submit", (e) => {
      e.preventDefault();
      submit();
    });
    ui.composer.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229) return;
      e.preventDefault();
      submit();
    });
    ui.composer.addEventListener("input", autoGrow);
    ui.stop.addEventListener("click", stopTurn);
    ui.attach.addEventListener("change", () => {
      addFiles(ui.attach.files);
      ui.attach.value = "";
    });
    ui.record.addEventListener("click", toggleRecording);
    renderRecording();
    ui.composer.addEventListener("paste", (e) => {
      const files = e.clipboardData ? Array.from(e.clipboardData.files || []) : [];
      if (files.length) {
        e.preventDefault();
        addFiles(files);
      }
    });
    const chat = document.querySelector(".chat");
    chat.addEventListener("dragover", (e) => {
      if (e.dataTransfer && Array.from(e.dataTransfer.types).includes("Files")) {
        e.preventDefault();
        chat.classList.add("dropping");
      }
    });
    chat.addEventListener("dragleave", (e) => {
      if (!chat.contains(e.relatedTarget)) chat.classList.remove("dropping");
    });
    chat.addEventListener("drop", (e) => {
      chat.classList.remove("dropping");
      if (e.dataTransfer && e.dataTransfer.files.length) {
        e.preventDefault();
        addFiles(e.dataTransfer.files);
      }
    });
    ui.approvals.addEventListener("click", () => {
      const card = ui.messages.querySelector('[data-testid="confirmation"][data-state="pending"]');
      if (card) {
        card.scrollIntoView({ block: "center", behavior: "smooth" });
        const b = card.querySelector('[data-testid="approve"]');
        if (b) b.focus({ preventScroll: true });
      }
    });

    renderConn();
    renderStatus();
    renderChips();
    renderChat();
    renderCanvas(null);
    ui.tabCanvas.addEventListener("click", () => selectTab("canvas", false));
    ui.tabGroups.addEventListener("click", () => selectTab("groups", false));
    ui.paneTabs.addEventListener("keydown", onTabKey);
    renderGroups();
    connect();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
