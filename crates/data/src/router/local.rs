//! The local channel's listeners: `hearth chat` clients connected to the
//! control socket, by chat.

use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::mpsc;

/// Connected clients and the chat each listens to.
#[derive(Default)]
pub struct LocalHub {
    clients: Mutex<Vec<(String, mpsc::Sender<Value>)>>,
}

impl LocalHub {
    /// Registers a client for `chat`; it receives replies on `tx`.
    pub fn subscribe(&self, chat: &str, tx: mpsc::Sender<Value>) {
        self.lock().push((chat.to_owned(), tx));
    }

    /// Hands `reply` to every client of `chat`; false when none took it
    /// (the reply then stays in the outbox until a client connects).
    pub fn deliver(&self, chat: &str, reply: &Value) -> bool {
        let mut clients = self.lock();
        clients.retain(|(_, tx)| !tx.is_closed());
        let mut delivered = false;
        for (c, tx) in clients.iter() {
            if c == chat && tx.try_send(reply.clone()).is_ok() {
                delivered = true;
            }
        }
        delivered
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, mpsc::Sender<Value>)>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }
}
