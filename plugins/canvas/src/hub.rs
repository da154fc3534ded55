//! The canvas's shared state: connected browsers, the elements on the
//! pane, the agent's status, and the way to the host.
//!
//! Every change becomes one JSON frame, serialized once and handed to all
//! connected browsers through a broadcast channel; a browser that falls
//! behind gets the whole state again (`hello`) instead of a gap. The
//! transcript and the confirmations are not kept here: they live in the
//! host's store, read through `channel.history` when a browser connects,
//! so a restart loses nothing. The agent groups' last views are kept
//! here (the host sends each group again when it starts).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::ws::Utf8Bytes;
use hearth_sdk::protocol::{
    ChannelEvent, ChannelHistory, ConfirmationAnswer, ConfirmationRecord, ConfirmationState,
    GroupView, HistoryMessage, InboundMessage, OWNER_SENDER, OutboundMessage, PageAnswer,
    PageRequest, Submission, UpcomingJob, ViewInputRequest, service,
};
use hearth_sdk::{Host, SubmitError};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::elements::Element;
use crate::live::Live;
use crate::markdown;
use crate::outputs::Outputs;
use crate::uploads::Uploads;

/// The canvas's one chat: every browser of the owner shares it.
pub const CHAT: &str = "canvas";
/// The channel's name.
pub const CHANNEL: &str = "canvas";
/// Frames a browser may fall behind before it is sent the whole state.
const BACKLOG: usize = 1024;
/// The most elements on the pane; the oldest go first.
const MAX_ELEMENTS: usize = 200;
/// Messages sent in `hello`.
const HISTORY: u32 = 200;
/// Confirmations remembered for their `decided` frames.
const RECENT_CONFIRMATIONS: usize = 100;

/// State shared by the plugin's entry points and its server.
pub struct Hub {
    host: Host,
    frames: broadcast::Sender<Utf8Bytes>,
    elements: Mutex<Vec<Element>>,
    status: Mutex<(bool, Option<String>, Vec<String>)>,
    /// The scheduler's next jobs, as last heard.
    schedule: Mutex<Vec<UpcomingJob>>,
    /// Each agent group as last heard, by id (a renamed group replaces
    /// its old view).
    groups: Mutex<BTreeMap<i64, GroupView>>,
    confirmations: Mutex<VecDeque<ConfirmationRecord>>,
    /// The text streamed so far of each reply being generated. Deltas are
    /// broadcast while this lock is held, so a browser that subscribes
    /// under it gets each piece exactly once: in its snapshot or as a frame.
    streaming: Mutex<HashMap<String, String>>,
    /// The live output of the tool calls of running turns, for browsers
    /// that connect while a call runs; broadcast under this lock, as
    /// deltas are.
    outputs: Mutex<Outputs>,
    next_element: AtomicU64,
    /// Files the owner uploads.
    pub uploads: Uploads,
    /// The newest frame of a live view (the browser's current tab).
    pub live: Live,
}

impl Hub {
    /// A hub talking to `host`; the pane starts as the store left it.
    pub fn new(host: Host, uploads: Uploads) -> Hub {
        let (frames, _) = broadcast::channel(BACKLOG);
        let elements = host
            .call(service::KV_GET, &json!({ "key": "elements" }))
            .ok()
            .and_then(|answer| serde_json::from_value(answer["value"].clone()).ok())
            .unwrap_or_default();
        Hub {
            host,
            frames,
            elements: Mutex::new(elements),
            status: Mutex::new((false, None, Vec::new())),
            schedule: Mutex::new(Vec::new()),
            groups: Mutex::new(BTreeMap::new()),
            confirmations: Mutex::new(VecDeque::new()),
            streaming: Mutex::new(HashMap::new()),
            outputs: Mutex::new(Outputs::default()),
            next_element: AtomicU64::new(1),
            uploads,
            live: Live::default(),
        }
    }

    /// A receiver of every frame from now on, the replies streamed so far
    /// (`[{turn, text}]`) and the live tool output so far, taken together.
    pub fn subscribe(&self) -> (broadcast::Receiver<Utf8Bytes>, Value, Value) {
        let streaming = lock(&self.streaming);
        let outputs = lock(&self.outputs);
        let snapshot = streaming
            .iter()
            .map(|(turn, text)| json!({ "turn": turn, "text": text }))
            .collect();
        (
            self.frames.subscribe(),
            Value::Array(snapshot),
            outputs.snapshot(),
        )
    }

    /// How many browsers are connected.
    pub fn clients(&self) -> usize {
        self.frames.receiver_count()
    }

    /// The whole state, as the `hello` frame, with `streaming` and
    /// `outputs` from [`Hub::subscribe`]. Blocks on the host's store.
    pub fn hello(&self, streaming: Value, outputs: Value) -> Value {
        let history: ChannelHistory = self
            .host
            .call(
                service::CHANNEL_HISTORY,
                &json!({ "chat": CHAT, "limit": HISTORY }),
            )
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        let messages: Vec<Value> = history.messages.iter().map(history_frame).collect();
        let elements = lock(&self.elements).clone();
        json!({
            "type": "hello",
            "history": messages,
            "canvas": elements,
            "confirmations": history.confirmations.iter().map(confirmation_json).collect::<Vec<_>>(),
            "status": self.status_json(),
            "streaming": streaming,
            "tool_output": outputs,
            "schedule": lock(&self.schedule).clone(),
            "groups": lock(&self.groups).values().cloned().collect::<Vec<_>>(),
            "view": self.live.hello(),
        })
    }

    /// Asks the host for a page or a query's rows (`service` is
    /// `page.get` or `page.query`). Blocks on the host's store.
    pub fn page(&self, service: &str, request: &PageRequest) -> Result<PageAnswer, String> {
        let request = serde_json::to_value(request).map_err(|e| e.to_string())?;
        let answer = self
            .host
            .call(service, &request)
            .map_err(|e| e.to_string())?;
        serde_json::from_value(answer).map_err(|e| format!("{service} answered: {e}"))
    }

    /// Shows `element`, replacing one with the same id in place.
    pub fn show(&self, element: Element) {
        {
            let mut elements = lock(&self.elements);
            match elements.iter_mut().find(|e| e.id == element.id) {
                Some(existing) => *existing = element.clone(),
                None => {
                    elements.push(element.clone());
                    let excess = elements.len().saturating_sub(MAX_ELEMENTS);
                    elements.drain(..excess);
                }
            }
        }
        // Browsers first: the store write is not what the owner waits for.
        self.broadcast(&json!({ "type": "canvas", "op": "show", "element": element }));
        self.persist();
    }

    /// Removes the element `id`; returns whether there was one.
    pub fn remove(&self, id: &str) -> bool {
        let removed = {
            let mut elements = lock(&self.elements);
            let before = elements.len();
            elements.retain(|e| e.id != id);
            elements.len() != before
        };
        if removed {
            self.broadcast(&json!({ "type": "canvas", "op": "remove", "id": id }));
            self.persist();
        }
        removed
    }

    /// Empties the pane.
    pub fn clear(&self) {
        lock(&self.elements).clear();
        self.broadcast(&json!({ "type": "canvas", "op": "clear" }));
        self.persist();
    }

    /// A fresh element id.
    pub fn fresh_id(&self) -> String {
        format!(
            "el-{}-{}",
            self.next_element.fetch_add(1, Ordering::Relaxed),
            crate::auth::hex(&crate::auth::random::<3>())
        )
    }

    /// The agent's reply arrives: every browser shows it; those not
    /// connected get it from the history when they connect.
    pub fn deliver(&self, message: &OutboundMessage) {
        if let Some(turn) = &message.in_reply_to {
            lock(&self.streaming).remove(turn);
            lock(&self.outputs).end_turn(turn);
        }
        self.broadcast(&json!({
            "type": "message",
            "message": {
                "key": message.key,
                "role": "agent",
                "text": message.text,
                "html": markdown::to_html(&message.text),
                "at_ms": message.at_ms,
                "id": message.in_reply_to,
                "attachments": [],
            }
        }));
    }

    /// A channel event from the host.
    pub fn event(&self, event: ChannelEvent) {
        let frame = match event {
            ChannelEvent::Delta { turn, text, .. } => {
                let mut streaming = lock(&self.streaming);
                streaming.entry(turn.clone()).or_default().push_str(&text);
                self.broadcast(&json!({ "type": "delta", "turn": turn, "text": text }));
                return;
            }
            ChannelEvent::DeltaReset { turn, .. } => {
                let mut streaming = lock(&self.streaming);
                streaming.insert(turn.clone(), String::new());
                self.broadcast(&json!({ "type": "delta_reset", "turn": turn }));
                return;
            }
            ChannelEvent::Status {
                busy,
                model,
                working,
            } => {
                if !busy {
                    lock(&self.streaming).clear();
                    lock(&self.outputs).clear();
                }
                *lock(&self.status) = (busy, model, working);
                let mut frame = self.status_json();
                frame["type"] = "status".into();
                frame
            }
            ChannelEvent::Confirmation(request) => {
                let record = ConfirmationRecord {
                    request,
                    state: ConfirmationState::Pending,
                    decided_by: None,
                };
                let frame =
                    json!({ "type": "confirmation", "confirmation": confirmation_json(&record) });
                let mut recent = lock(&self.confirmations);
                recent.push_back(record);
                if recent.len() > RECENT_CONFIRMATIONS {
                    recent.pop_front();
                }
                frame
            }
            event @ ChannelEvent::ToolOutput { .. } => {
                let mut outputs = lock(&self.outputs);
                outputs.take(&event);
                let mut frame = serde_json::to_value(&event).unwrap_or(Value::Null);
                if let Some(fields) = frame.as_object_mut() {
                    fields.remove("kind");
                    fields.remove("chat");
                    fields.insert("type".into(), "tool_output".into());
                }
                self.broadcast(&frame);
                return;
            }
            ChannelEvent::View { source, frame } => match self.live.take(source, frame) {
                Some(told) => told,
                None => return,
            },
            ChannelEvent::Group(view) => {
                let frame = json!({ "type": "group", "group": view });
                lock(&self.groups).insert(view.id, view);
                frame
            }
            ChannelEvent::Schedule { jobs } => {
                let frame = json!({ "type": "schedule", "jobs": jobs });
                *lock(&self.schedule) = jobs;
                frame
            }
            ChannelEvent::ConfirmationDecided {
                id,
                state,
                decided_by,
            } => {
                let mut recent = lock(&self.confirmations);
                match recent.iter_mut().find(|r| r.request.id == id) {
                    Some(record) => {
                        record.state = state;
                        record.decided_by = Some(decided_by);
                        json!({ "type": "confirmation", "confirmation": confirmation_json(record) })
                    }
                    None => json!({
                        "type": "confirmation",
                        "confirmation": { "id": id, "state": state, "decided_by": decided_by }
                    }),
                }
            }
        };
        self.broadcast(&frame);
    }

    /// Stores the owner's message; returns once the host has it. Blocks.
    pub fn submit(&self, id: &str, text: &str, attachment_ids: &[String]) -> Result<(), String> {
        // Stamped before the host has it: a fast reply may be broadcast
        // before our echo, and browsers order messages by this time.
        let at_ms = now_ms();
        let mut attachments = Vec::with_capacity(attachment_ids.len());
        for a in attachment_ids {
            attachments.push(self.uploads.resolve(a)?);
        }
        let message = InboundMessage {
            channel: CHANNEL.into(),
            idempotency_key: id.to_owned(),
            sender: OWNER_SENDER.into(),
            chat: Some(CHAT.into()),
            text: text.to_owned(),
            attachments: attachments.clone(),
            sender_name: None,
        };
        submit_until_taken(&self.host, &Submission::Message(message))?;
        self.broadcast(&json!({
            "type": "message",
            "message": {
                "key": format!("in-{id}"),
                "role": "user",
                "text": text,
                "at_ms": at_ms,
                "id": id,
                "attachments": attachments.iter().map(crate::uploads::public).collect::<Vec<_>>(),
            }
        }));
        Ok(())
    }

    /// Hands the owner's answer to a confirmation to the host; `always`
    /// asks for a standing grant of the exact call; `reason` says why a
    /// denial. Blocks.
    pub fn answer(
        &self,
        id: &str,
        approve: bool,
        always: bool,
        reason: Option<String>,
    ) -> Result<(), String> {
        let answer = Submission::Confirmation(ConfirmationAnswer {
            id: id.to_owned(),
            sender: OWNER_SENDER.into(),
            approve,
            always,
            reason,
        });
        submit_until_taken(&self.host, &answer)
    }

    /// Hands the owner's action on a live view to the host, which passes
    /// it to the plugin that showed the view. Blocks.
    pub fn view_input(&self, request: &ViewInputRequest) -> Result<(), String> {
        let request = serde_json::to_value(request).map_err(|e| e.to_string())?;
        self.host
            .call(service::VIEW_INPUT, &request)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Sends `frame` to every connected browser.
    pub fn broadcast(&self, frame: &Value) {
        // No receiver is not an error: the history has it for later.
        let _ = self.frames.send(Utf8Bytes::from(frame.to_string()));
    }

    fn status_json(&self) -> Value {
        let (busy, model, working) = lock(&self.status).clone();
        json!({
            "agent": if busy { "busy" } else { "idle" },
            "model": model,
            "working": working,
            "connected": true
        })
    }

    fn persist(&self) {
        let elements = lock(&self.elements).clone();
        if let Err(e) = self.host.call(
            service::KV_SET,
            &json!({ "key": "elements", "value": elements }),
        ) {
            tracing::warn!("cannot save the canvas pane: {e}");
        }
    }
}

/// Submits, waiting out `BUSY` for up to ten seconds.
fn submit_until_taken(host: &Host, submission: &Submission) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match host.submit(submission) {
            Ok(()) => return Ok(()),
            Err(SubmitError::Busy) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(format!("the daemon did not take it: {e}")),
        }
    }
}

fn history_frame(m: &HistoryMessage) -> Value {
    let mut frame = json!({
        "key": m.key,
        "role": m.role,
        "text": m.text,
        "at_ms": m.at_ms,
        "id": m.id,
        "attachments": m.attachments.iter().map(crate::uploads::public).collect::<Vec<_>>(),
    });
    if m.role == "agent" {
        frame["html"] = markdown::to_html(&m.text).into();
    }
    frame
}

fn confirmation_json(record: &ConfirmationRecord) -> Value {
    serde_json::to_value(record).unwrap_or(Value::Null)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
